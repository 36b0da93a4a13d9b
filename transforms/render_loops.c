/*
 * render_loops.c - the body of a rendered kernel up to the stores: the
 * work-group and work-item positions decoded into parts, the axes' base
 * indices, the reduce loops and, in the innermost one, the operands' loads
 * and the scalar multiply-adds.
 */
#include "transforms/render_impl.h"

#include <stdio.h>
#include <string.h>

/* Parts of kind `kind` of the axes in launch dimension d, innermost first
 * (launch order, then smaller stride first). d = -1: every dimension. For
 * ET_PART_GLOBAL the SPLIT parts follow in their dimension, slowest. */
static void dim_parts(const ctx *c, plist *l, int d, et_part_kind kind)
{
    const et_kernel *k = c->k;
    l->n = 0;
    for (int j = 0; j < k->e.n_out; j++) {
        int a = k->order[j];
        if (d >= 0 && et_kernel_axis_dim(k, a) != d)
            continue;
        int start = l->n;
        for (int p = 0; p < k->n_parts; p++)
            if (k->part[p].axis == a && k->part[p].kind == kind)
                l->p[l->n++] = p;
        /* insertion sort by stride */
        for (int i = start + 1; i < l->n; i++)
            for (int m = i;
                 m > start &&
                 k->part[l->p[m]].stride < k->part[l->p[m - 1]].stride;
                 m--) {
                int t = l->p[m];
                l->p[m] = l->p[m - 1];
                l->p[m - 1] = t;
            }
    }
    if (kind == ET_PART_GLOBAL && (d < 0 || d == et_kernel_split_dim(k)))
        for (int p = 0; p < k->n_parts; p++)
            if (k->part[p].kind == ET_PART_SPLIT)
                l->p[l->n++] = p;
}

/* A running product of part sizes as C text: numbers folded into one
 * constant, the open axis' group count by name. */
typedef struct gprod {
    int64_t num;
    bool open;
} gprod;

static void prod_str(const ctx *c, const gprod *d, char *buf, size_t cap)
{
    if (!d->open) {
        snprintf(buf, cap, "%lld", (long long)d->num);
        return;
    }
    const char *x = c->k->e.idx[c->open_axis].name;
    if (d->num == 1)
        snprintf(buf, cap, "%s_groups", x);
    else
        snprintf(buf, cap, "(%s_groups*%lld)", x, (long long)d->num);
}

static void prod_mul(const ctx *c, gprod *d, int p)
{
    if (rd_open_part(c, p))
        d->open = true;
    else
        d->num *= c->k->part[p].size;
}

/* Decodes `var` (already declared) into the parts of l, first fastest. */
static void decode(ctx *c, const char *var, const plist *l)
{
    gprod div = {1, false};
    for (int i = 0; i < l->n; i++) {
        int p = l->p[i];
        const et_part *pt = &c->k->part[p];
        bool last = i == l->n - 1;
        if (rd_part_one(c, p))
            continue; /* always 0; sums skip size-1 parts */
        char sz[64], dv[96];
        rd_part_size(c, p, sz, sizeof sz);
        prod_str(c, &div, dv, sizeof dv);
        bool one = !div.open && div.num == 1;
        if (one && last)
            rd_line(&c->s, "%s %s = %s;", c->itype, pt->name, var);
        else if (one)
            rd_line(&c->s, "%s %s = %s %% %s;", c->itype, pt->name, var, sz);
        else if (last)
            rd_line(&c->s, "%s %s = %s / %s;", c->itype, pt->name, var, dv);
        else
            rd_line(&c->s, "%s %s = %s / %s %% %s;", c->itype, pt->name, var,
                    dv, sz);
        prod_mul(c, &div, p);
    }
}

/* The number of work-groups along launch dimension d (-1: all) as C text,
 * for the rounded-up grid's check. */
static void groups_str(ctx *c, int d, char *buf, size_t cap)
{
    plist l;
    dim_parts(c, &l, d, ET_PART_GLOBAL);
    gprod n = {1, false};
    for (int i = 0; i < l.n; i++)
        prod_mul(c, &n, l.p[i]);
    prod_str(c, &n, buf, cap);
}

/* Whether the kernel waits at barriers: a tile copied by several
 * work-items (PREFETCH, STAGE), or GROUP's lanes combined.
 *
 * PoCL gives every innermost loop that all work-items run the same number
 * of times a barrier of its own in such a kernel, which turns the loop over
 * the work-items inside out: each step of a reduce loop then stores every
 * work-item's accumulators to memory and loads them back. A bound that
 * depends on the local id (lid_zero, always 0) keeps the loop whole. */
static bool has_barriers(const ctx *c)
{
    const et_kernel *k = c->k;
    if (c->wg > 1 && (k->prefetch_axis >= 0 || k->stage))
        return true;
    return k->group_part >= 0 && k->part[k->group_part].size > 1;
}

void rd_emit_ids(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int ndim = c->launch.ndim;
    if (c->open_axis >= 0) {
        const char *x = k->e.idx[c->open_axis].name;
        int64_t T = et_kernel_open_step(k);
        rd_line(s, "// work-groups along the open axis %s: its size rounded "
                   "up to steps of %lld", x, (long long)T);
        if (T == 1)
            rd_line(s, "%s %s_groups = n_%s;", c->itype, x, x);
        else
            rd_line(s, "%s %s_groups = (n_%s + %lld) / %lld;", c->itype, x, x,
                    (long long)(T - 1), (long long)T);
    }
    rd_line(s, "// position of this work-group");
    if (c->flat) {
        plist l;
        dim_parts(c, &l, -1, ET_PART_GLOBAL);
        /* dim_parts(-1) lists launch order, which is dims 0,1,2 order */
        rd_line(s, "%s gidx = (%s)%s;", c->itype, c->itype,
                k->nolocals ? c->D->global_id[0] : c->D->group_id[0]);
        if (k->nolocals) {
            char ng[128];
            groups_str(c, -1, ng, sizeof ng);
            rd_line(s, "if (gidx >= %s) return; /* rounded-up grid */", ng);
        }
        decode(c, "gidx", &l);
    } else {
        for (int d = 0; d < ndim; d++) {
            plist l;
            dim_parts(c, &l, d, ET_PART_GLOBAL);
            if (l.n == 0)
                continue;
            bool all_one = true;
            for (int i = 0; i < l.n; i++)
                all_one = all_one && rd_part_one(c, l.p[i]);
            if (all_one && !k->nolocals) {
                decode(c, "0", &l);
                continue;
            }
            char var[16];
            snprintf(var, sizeof var, "gidx%d", d);
            rd_line(s, "%s %s = (%s)%s;", c->itype, var, c->itype,
                    k->nolocals ? c->D->global_id[d] : c->D->group_id[d]);
            if (k->nolocals && c->D->rounded_grid) {
                char ng[128];
                groups_str(c, d, ng, sizeof ng);
                rd_line(s, "if (%s >= %s) return; /* rounded-up grid */", var,
                        ng);
            }
            decode(c, var, &l);
        }
    }
    if (c->wg > 1) {
        rd_line(s, "// position inside the work-group");
        for (int d = 0; d < ndim; d++) {
            if (c->L[d] == 1)
                continue;
            plist l;
            dim_parts(c, &l, d, ET_PART_LOCAL);
            if (d == 0 && k->group_part >= 0) {
                memmove(l.p + 1, l.p, sizeof(int) * (size_t)l.n);
                l.p[0] = k->group_part;
                l.n++;
            }
            char var[16];
            snprintf(var, sizeof var, "lidx%d", d);
            rd_line(s, "%s %s = (%s)%s;", c->itype, var, c->itype,
                    c->D->local_id[d]);
            decode(c, var, &l);
        }
        if (k->group_part >= 0 || k->prefetch_axis >= 0 || k->stage) {
            char expr[256];
            et_sbuf e;
            et_sbuf_fixed(&e, expr, sizeof expr);
            int64_t mul = 1;
            for (int d = 0; d < ndim; d++) {
                if (c->L[d] > 1) {
                    if (mul == 1)
                        et_sbuf_printf(&e, "%slidx%d", e.len ? " + " : "", d);
                    else
                        et_sbuf_printf(&e, "%slidx%d*%lld",
                                       e.len ? " + " : "", d, (long long)mul);
                }
                mul *= c->L[d];
            }
            rd_line(s, "%s lid_flat = %s;", c->itype, e.len ? expr : "0");
            if (c->D->varying_inner_bound && has_barriers(c)) {
                rd_line(s, "// 0 in every work-item (ids are below 2^30), "
                           "added to the innermost");
                rd_line(s, "// loop's bound: a loop the same in every "
                           "work-item would get a barrier");
                rd_line(s, "%s lid_zero = lid_flat >> 30;", c->itype);
                c->varying_bound = true;
            }
        }
    } else if (k->group_part >= 0 || k->prefetch_axis >= 0 || k->stage) {
        rd_line(s, "%s lid_flat = 0;", c->itype);
    }
}

/* Declares `<axis>_idx` for every axis of the given role: the runtime
 * part of its index. With FACTOR, reduce indices but the innermost one's
 * are declared before its loop (only = -1, skip = the factor axis) and
 * that one inside it (only = the factor axis). */
static void emit_bases(ctx *c, bool global, int only, int skip)
{
    const et_kernel *k = c->k;
    int from = global ? 0 : k->e.n_out, to = global ? k->e.n_out : k->e.n_idx;
    for (int a = from; a < to; a++) {
        if ((only >= 0 && a != only) || a == skip)
            continue;
        /* a reduce index read only through local copies is not needed */
        bool needed = global;
        for (int op = 0; op < k->e.n_ops && !needed; op++)
            needed = et_kernel_op_uses(k, op, a) &&
                     !et_kernel_op_local(k, op);
        if (!needed)
            continue;
        char sum[512];
        rd_sum_terms(c, sum, sizeof sum, a, rd_keep_runtime, NULL, "");
        rd_line(&c->s, "%s %s_idx = %s;", c->itype, k->e.idx[a].name, sum);
    }
}

void rd_emit_axis_bases(ctx *c, bool global)
{
    emit_bases(c, global, -1, -1);
}

bool rd_phase_op(const ctx *c, int op)
{
    if (c->phase == 0)
        return true;
    bool inner = rd_op_uses(c, op, c->factor_axis);
    return c->phase == 1 ? inner : !inner;
}

void rd_factor_tparts(const ctx *c, plist *t)
{
    const et_kernel *k = c->k;
    rd_plist_kind(c, t, ET_PART_UPCAST, -2);
    plist r;
    rd_plist_kind(c, &r, ET_PART_UNROLL, -2);
    for (int i = 0; i < r.n; i++) {
        int a = k->part[r.p[i]].axis;
        bool used = false;
        for (int op = 0; op < k->e.n_ops && !used; op++)
            used = !rd_op_uses(c, op, c->factor_axis) && rd_op_uses(c, op, a);
        if (a != c->factor_axis && used)
            t->p[t->n++] = r.p[i];
    }
}

/* Loads of one operand in the innermost body. */
static void emit_loads(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist consts;
    rd_const_parts(c, &consts, op);
    int64_t ncombo = rd_plist_count(c, &consts);
    int64_t vals[MAXP] = {0};
    char name[256], addr[600], expr[768], mask[512], base[512];
    if (rd_direct_vec(c, op)) {
        rd_emit_direct_vec_loads(c, op);
        return;
    }
    if (et_kernel_op_local(k, op)) {
        int64_t ts[MAXP];
        rd_tile_strides(c, op, ts);
        rd_emit_tile_pos(c, op, ts);
        for (int64_t ci = 0; ci < ncombo; ci++) {
            rd_combo_fill(c, &consts, ci, vals);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            rd_combo_name(c, name, sizeof name, bn, &consts, vals);
            int64_t off = 0;
            for (int i = 0; i < consts.n; i++)
                off += ts[consts.p[i]] * vals[consts.p[i]];
            snprintf(base, sizeof base, "in%d_t", op);
            rd_addr_str(addr, sizeof addr, base, off);
            rd_line(s, "%s %s = tile_in%d[%s];", c->acc, name, op, addr);
        }
        return;
    }
    rd_addr_base(c, op, base, sizeof base);
    rd_line(s, "%s in%d_addr = %s;", c->itype, op, base);
    snprintf(base, sizeof base, "in%d_addr", op);
    int vp = rd_vector_part(c, op, &consts);
    if (vp >= 0) {
        /* one vector per combination of the other parts */
        plist rest = {0};
        int vi = -1;
        for (int i = 0; i < consts.n; i++) {
            if (consts.p[i] == vp)
                vi = i;
            else
                rest.p[rest.n++] = consts.p[i];
        }
        (void)vi;
        int64_t n = k->part[vp].size;
        int64_t nrest = rd_plist_count(c, &rest);
        for (int64_t ri = 0; ri < nrest; ri++) {
            memset(vals, 0, sizeof vals);
            rd_combo_fill(c, &rest, ri, vals);
            vals[vp] = 0;
            char vn[256], bn[16];
            snprintf(bn, sizeof bn, "a%d_v", op);
            rd_combo_name(c, vn, sizeof vn, bn, &rest, vals);
            rd_addr_str(addr, sizeof addr, base,
                        rd_addr_off(c, op, &consts, vals));
            char ptr[32];
            rd_ptr_name(c, op, &consts, vals, ptr, sizeof ptr);
            c->D->vector_load(s, c->acc, n, vn, ptr, addr);
            for (int64_t v = 0; v < n; v++) {
                vals[vp] = v;
                snprintf(bn, sizeof bn, "a%d", op);
                rd_combo_name(c, name, sizeof name, bn, &consts, vals);
                rd_line(s, "%s %s = %s.%s;", c->acc, name, vn, c->D->comp[v]);
            }
        }
        return;
    }
    for (int64_t ci = 0; ci < ncombo; ci++) {
        rd_combo_fill(c, &consts, ci, vals);
        char bn[16];
        snprintf(bn, sizeof bn, "a%d", op);
        rd_combo_name(c, name, sizeof name, bn, &consts, vals);
        rd_addr_str(addr, sizeof addr, base, rd_addr_off(c, op, &consts, vals));
        char ptr[32];
        rd_ptr_name(c, op, &consts, vals, ptr, sizeof ptr);
        rd_load_expr(c, op, ptr, addr, expr, sizeof expr);
        if (rd_mask_expr(c, op, &consts, vals, mask, sizeof mask))
            rd_line(s, "%s %s = (%s) ? %s : %s;", c->acc, name, mask, expr,
                    c->zero);
        else
            rd_line(s, "%s %s = %s;", c->acc, name, expr);
    }
}

/* FACTOR, scalar: phase 1 adds the inner operands' product into the
 * partial sums t_<values>, phase 2 multiplies the outer operands into
 * them and adds the result to the accumulators. */
static void emit_factor_scalar(ctx *c)
{
    const et_kernel *k = c->k;
    plist all, ups, tp;
    rd_const_parts(c, &all, -2);
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    rd_factor_tparts(c, &tp);
    const plist *over = c->phase == 1 ? &all : &tp;
    int64_t n = rd_plist_count(c, over);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, over, ci, vals);
        char tn[256], accn[256], prod[4096], v[256];
        rd_combo_name(c, tn, sizeof tn, "t", &tp, vals);
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        et_sbuf pb;
        et_sbuf_fixed(&pb, prod, sizeof prod);
        int last = -1;
        for (int op = 0; op < k->e.n_ops; op++)
            if (rd_phase_op(c, op))
                last = op;
        for (int op = 0; op < k->e.n_ops; op++) {
            if (!rd_phase_op(c, op) || (op == last && c->phase == 1))
                continue;
            plist consts;
            rd_const_parts(c, &consts, op);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            rd_combo_name(c, v, sizeof v, bn, &consts, vals);
            et_sbuf_printf(&pb, "%s%s", pb.len ? " * " : "", v);
        }
        if (c->phase == 2) {
            rd_line(&c->s, "%s = %s(%s, %s, %s);", accn, c->fma, prod, tn,
                    accn);
            continue;
        }
        plist lc;
        rd_const_parts(c, &lc, last);
        char bn[16];
        snprintf(bn, sizeof bn, "a%d", last);
        rd_combo_name(c, v, sizeof v, bn, &lc, vals);
        if (pb.len == 0)
            rd_line(&c->s, "%s += %s;", tn, v);
        else
            rd_line(&c->s, "%s = %s(%s, %s, %s);", tn, c->fma, prod, v, tn);
    }
}

/* The multiply-adds of the innermost body, one per combination. */
void rd_emit_fmas_scalar(ctx *c)
{
    const et_kernel *k = c->k;
    if (c->phase) {
        emit_factor_scalar(c);
        return;
    }
    plist all, ups, hp;
    rd_const_parts(c, &all, -2);
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int last = rd_hoist_plan(c, -1, &hp);
    if (last >= 0)
        rd_emit_hoisted(c, last, &hp);
    int64_t n = rd_plist_count(c, &all);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &all, ci, vals);
        char accn[256];
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        char v[ET_MAX_OPERANDS][256];
        for (int op = 0; op < k->e.n_ops; op++) {
            plist consts;
            rd_const_parts(c, &consts, op);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            rd_combo_name(c, v[op], sizeof v[op], bn, &consts, vals);
        }
        if (k->e.n_ops == 1) {
            rd_line(&c->s, "%s += %s;", accn, v[0]);
            continue;
        }
        if (last >= 0) {
            char hn[256];
            rd_combo_name(c, hn, sizeof hn, "h", &hp, vals);
            rd_line(&c->s, "%s = %s(%s, %s, %s);", accn, c->fma, hn,
                    v[last], accn);
            continue;
        }
        char prod[4096];
        et_sbuf pb;
        et_sbuf_fixed(&pb, prod, sizeof prod);
        for (int op = 0; op < k->e.n_ops - 1; op++)
            et_sbuf_printf(&pb, "%s%s", op ? " * " : "", v[op]);
        rd_line(&c->s, "%s = %s(%s, %s, %s);", accn, c->fma, prod,
                v[k->e.n_ops - 1], accn);
    }
}

/* The innermost body: indices, loads, multiply-adds (with FACTOR, of the
 * operands that use the inner loop's index, into the partial sums). */
static void emit_body(ctx *c)
{
    const et_kernel *k = c->k;
    if (k->e.n_idx > k->e.n_out) {
        rd_line(&c->s, "// reduce indices");
        emit_bases(c, false, c->factor_axis, -1);
    }
    c->phase = c->factor_axis >= 0 ? 1 : 0;
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!rd_phase_op(c, op))
            continue;
        rd_line(&c->s, "// operand %d", op);
        emit_loads(c, op);
    }
    rd_emit_fmas(c);
    c->phase = 0;
}

/* FACTOR, before the inner loop: the other reduce indices and the partial
 * sums, zeroed. */
static void emit_factor_open(ctx *c)
{
    rd_line(&c->s, "// partial sums over %s (FACTOR)",
            c->k->e.idx[c->factor_axis].name);
    emit_bases(c, false, -1, c->factor_axis);
    if (c->vmode) {
        rd_emit_vfactor_decls(c);
        return;
    }
    plist tp;
    rd_factor_tparts(c, &tp);
    int64_t n = rd_plist_count(c, &tp);
    int64_t vals[MAXP] = {0};
    char tn[256];
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &tp, ci, vals);
        rd_combo_name(c, tn, sizeof tn, "t", &tp, vals);
        rd_line(&c->s, "%s %s = %s;", c->acc, tn, c->zero);
    }
}

/* FACTOR, after the inner loop: the operands that do not use its index,
 * loaded once, times the partial sums into the accumulators. */
static void emit_factor_close(ctx *c)
{
    const et_kernel *k = c->k;
    rd_line(&c->s, "// the operands without %s, once per partial sum "
                   "(FACTOR)",
            k->e.idx[c->factor_axis].name);
    c->phase = 2;
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!rd_phase_op(c, op))
            continue;
        rd_line(&c->s, "// operand %d", op);
        emit_loads(c, op);
    }
    rd_emit_fmas(c);
    c->phase = 0;
}

static void open_loop(ctx *c, const et_part *pt, bool innermost)
{
    rd_line(&c->s, "for (%s %s = 0; %s < %lld%s; %s++) {", c->itype,
            pt->name, pt->name, (long long)pt->size,
            innermost && c->varying_bound ? " + lid_zero" : "", pt->name);
    c->s.indent++;
    /* rows summed, the row axis a loop: this row's pointers */
    if (c->row_mode == 3 && pt == &c->k->part[c->k->outer[c->k->e.row_axis]])
        rd_emit_row_pointers(c, pt->name);
}

static void close_block(ctx *c)
{
    c->s.indent--;
    rd_line(&c->s, "}");
}

/* STAGE: the staged inputs' copies, before any reduce loop; the barrier
 * is left out for a work-group of one work-item (see rd_emit_loops). */
void rd_emit_stage(ctx *c)
{
    const et_kernel *k = c->k;
    bool any = false;
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!et_kernel_staged(k, op))
            continue;
        rd_emit_prefetch_copy(c, op);
        any = true;
    }
    if (any && c->wg > 1)
        rd_line(&c->s, "%s", c->D->barrier);
}

void rd_emit_loops(ctx *c)
{
    const et_kernel *k = c->k;
    int depth = 0, fa = c->factor_axis, last = -1;
    for (int a = k->e.n_out; a < k->e.n_idx; a++)
        if (a != k->prefetch_axis && a != fa)
            last = a;
    bool inner_here = k->prefetch_axis < 0 && fa < 0;
    for (int a = k->e.n_out; a < k->e.n_idx; a++) {
        if (a == k->prefetch_axis || a == fa)
            continue;
        open_loop(c, &k->part[k->outer[a]], inner_here && a == last);
        depth++;
    }
    if (fa >= 0)
        emit_factor_open(c);
    if (fa >= 0 && fa != k->prefetch_axis)
        open_loop(c, &k->part[k->outer[fa]], k->prefetch_axis < 0);
    if (k->prefetch_axis >= 0) {
        open_loop(c, &k->part[k->outer[k->prefetch_axis]], false);
        for (int op = 0; op < k->e.n_ops; op++)
            if (k->prefetch_op[op])
                rd_emit_prefetch_copy(c, op);
        /* A work-group of one work-item copies its own tile: no other
         * work-item to wait for. The barriers are left out there, and must
         * be: PoCL 3.1's compiler aborts ("exit != NULL" in
         * ParallelRegion.cc) on some such kernels with barriers in loops. */
        if (c->wg > 1)
            rd_line(&c->s, "%s", c->D->barrier);
        open_loop(c, &k->part[k->prefetch_part], true);
        emit_body(c);
        close_block(c);
        if (c->wg > 1)
            rd_line(&c->s, "%s", c->D->barrier);
        close_block(c);
    } else {
        emit_body(c);
    }
    if (fa >= 0 && fa != k->prefetch_axis)
        close_block(c);
    if (fa >= 0)
        emit_factor_close(c);
    for (int i = 0; i < depth; i++)
        close_block(c);
}
