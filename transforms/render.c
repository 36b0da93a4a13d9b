/*
 * render.c - et_kernel_render: one emitter for OpenCL C 1.2 and CUDA C.
 * This file drives it (context, index type, header comments, signature,
 * local arrays, accumulators) and calls the sections the other
 * render_*.c files emit; render_impl.h is what they share, and the
 * dialect table (render_dialect.c) holds all that differs by backend.
 *
 * Shape of a rendered kernel (see kernel.h for the IR):
 *   - header comments: einsum, opts, launch geometry, arguments;
 *   - local arrays (PREFETCH tiles, the GROUP reduction buffer);
 *   - group id and local id decoded into the parts (running divisors);
 *   - STAGE: the staged inputs copied into local memory, a barrier;
 *   - LOOP: a loop per LOOP part around all that follows;
 *   - per global axis its base index `<axis>_idx` (UPCAST parts are added
 *     as constants per accumulator);
 *   - one accumulator per UPCAST combination, `acc_<values>`;
 *   - the reduce loops (plain loops outermost, then the PREFETCH chunk loop
 *     with its cooperative copy and barriers, then the `_p` loop); with
 *     FACTOR, partial sums `t_<values>` zeroed before the innermost
 *     reduce loop and multiplied into the accumulators after it by the
 *     operands that do not use its index;
 *   - in the innermost body: every operand's values loaded once per
 *     combination of the UPCAST/UNROLL parts it uses (`a<k>_<values>`),
 *     vector loads where the part is contiguous and aligned, then one FMA
 *     per (UPCAST x UNROLL) combination;
 *   - GROUP: partial sums to local memory, barrier, lane 0 combines the
 *     lanes in lane order;
 *   - stores, masked where PADTO padded a global axis or past an open
 *     axis' size (the argument n_<axis>, after the buffers).
 * PADTO and open-axis masks are ternaries on loads and an `if` around
 * stores only; no barrier is ever inside a branch and no work-item returns
 * early where there are barriers. A kernel with an open axis is rendered
 * at a size of two groups along it, so its source does not depend on the
 * size it is worked at; its index type is 64-bit throughout.
 */
#include "transforms/render_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_INT31 ((int64_t)0x7fffffff)

/* Address coefficients. A batched kernel's row axis has none: a row is a
 * pointer of its own (rd_ptr_name). */
static void compute_coefs(ctx *c)
{
    const et_einsum *e = &c->k->e;
    memset(c->coef, 0, sizeof c->coef);
    for (int op = 0; op < e->n_ops; op++) {
        const et_operand *o = &e->op[op];
        int64_t stride = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            if (e->n_rows && o->idx[d] == e->row_axis)
                continue;
            if (o->dim[d] != 1)
                c->coef[op][o->idx[d]] += stride;
            stride *= o->dim[d];
        }
    }
    int64_t stride = 1;
    int first = et_einsum_op_rowed(e, -1) ? 1 : 0;
    for (int a = e->n_out - 1; a >= first; a--) {
        c->coef[c->n_ops][a] = stride;
        stride *= e->idx[a].size;
    }
}

bool et_kernel_args(const et_einsum *e, int *n, int *operand, int *row)
{
    int m = 0;
    for (int op = -1; op < e->n_ops; op++) {
        int rows = et_einsum_op_rowed(e, op) ? e->n_rows : 1;
        for (int r = 0; r < rows; r++) {
            if (m == ET_MAX_ARGS)
                return false;
            operand[m] = op;
            row[m] = rows > 1 ? r : -1;
            m++;
        }
    }
    *n = m;
    return true;
}

/* The row mode of a batched kernel (render_impl.h's ctx). */
static void choose_row_mode(ctx *c)
{
    const et_kernel *k = c->k;
    c->row_mode = 0;
    c->row_part = -1;
    if (!k->e.n_rows)
        return;
    c->row_mode = et_einsum_rows_summed(&k->e) ? 3 : 1;
    for (int p = 0; p < k->n_parts; p++)
        if (k->part[p].axis == k->e.row_axis &&
            (k->part[p].kind == ET_PART_UPCAST ||
             k->part[p].kind == ET_PART_UNROLL)) {
            c->row_mode = 2;
            c->row_part = p;
        }
}

/* Row modes 1 and 3: the row's pointers (in<k>, out), chosen by the row
 * variable `row` (the work-item's row, or the row loop's). */
void rd_emit_row_pointers(ctx *c, const char *row)
{
    const et_kernel *k = c->k;
    rd_line(&c->s, c->row_mode == 1 ? "// this work-item's row: its arrays"
                                    : "// this row's arrays");
    for (int op = -1; op < k->e.n_ops; op++) {
        if (!et_einsum_op_rowed(&k->e, op))
            continue;
        char nm[16], decl[128];
        snprintf(nm, sizeof nm, op < 0 ? "out" : "in%d", op);
        et_dtype t = op < 0 ? k->e.out.dtype : k->e.op[op].dtype;
        snprintf(decl, sizeof decl, op < 0 ? c->D->out_ptr : c->D->in_ptr,
                 rd_store_type(c, t), nm);
        et_sbuf sel;
        char selb[1024];
        et_sbuf_fixed(&sel, selb, sizeof selb);
        rd_row_select(&sel, row, nm, k->e.n_rows);
        rd_line(&c->s, "%s = %s;", decl, selb);
    }
}

/* Largest address or size the kernel computes with, to pick the index type. */
static bool needs_long(const ctx *c)
{
    const et_kernel *k = c->k;
    for (int op = -1; op < c->n_ops; op++) {
        const int64_t *cf = rd_coefs(c, op);
        int64_t m = 0;
        for (int a = 0; a < k->e.n_idx; a++) {
            if (cf[a] && k->padded[a] > 0) {
                if (cf[a] > LIMIT_INT31 || k->padded[a] > LIMIT_INT31)
                    return true;
                m += cf[a] * k->padded[a];
                if (m > LIMIT_INT31)
                    return true;
            }
        }
    }
    for (int a = 0; a < k->e.n_idx; a++)
        if (k->padded[a] > LIMIT_INT31)
            return true;
    for (int d = 0; d < 3; d++)
        if (c->launch.global[d] > LIMIT_INT31)
            return true;
    return false;
}

/* The launch geometry line of an open kernel: per dimension the global
 * size as a function of n_<axis> (g: the geometry for one group along the
 * open axis, gn: for two, so the dimensions that grow are those that
 * differ). */
static void put_open_global(ctx *c, const et_launch *g, const et_launch *gn)
{
    const char *x = c->k->e.idx[c->open_axis].name;
    for (int d = 0; d < g->ndim; d++) {
        if (d)
            rd_put(&c->s, " x ");
        if (g->global[d] == gn->global[d])
            rd_put(&c->s, "%lld", (long long)g->global[d]);
        else
            rd_put(&c->s, "%lld*%s_groups", (long long)g->global[d], x);
    }
}

static void emit_header(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    char dts[256];
    et_sbuf db;
    et_sbuf_fixed(&db, dts, sizeof dts);
    for (int op = 0; op < k->e.n_ops; op++)
        et_sbuf_printf(&db, "%s%s", op ? "," : "",
                       et_dtype_name(k->e.op[op].dtype));
    rd_put(s, "// eintune %s kernel for %s (%s -> %s, accumulated in %s)\n",
           et_backend_name(c->b), k->e.text, dts,
           et_dtype_name(k->e.out.dtype), et_dtype_name(k->e.acc_dtype));
    char opts[1024];
    et_opts_format(k->opts, k->n_opts, opts, sizeof opts);
    rd_put(s, "// opts: %s\n", k->n_opts ? opts : "(none)");
    const et_launch *l = &c->launch;
    et_launch one, two;
    if (c->open_axis >= 0) {
        /* the source does not depend on the open axis' size: the
         * geometry is written as a function of it */
        const char *x = k->e.idx[c->open_axis].name;
        int64_t T = et_kernel_open_step(k);
        et_kernel *kk = et_kernel_clone(k);
        memset(&one, 0, sizeof one);
        two = one;
        if (kk && et_kernel_set_open_size(kk, T, NULL) == ET_OK)
            et_kernel_launch(kk, c->b, &one);
        if (kk && et_kernel_set_open_size(kk, 2 * T, NULL) == ET_OK)
            et_kernel_launch(kk, c->b, &two);
        et_kernel_free(kk);
        rd_put(s, "// open axis %s: its size is the last argument, n_%s "
                  "(64-bit), any value >= 1;\n"
                  "// %s_groups = ceil(n_%s / %lld)\n",
               x, x, x, x, (long long)T);
        l = &one;
        rd_put(s, "// global: ");
        put_open_global(c, &one, &two);
    } else {
        rd_put(s, "// global: ");
        for (int d = 0; d < l->ndim; d++)
            rd_put(s, "%s%lld", d ? "x" : "", (long long)l->global[d]);
    }
    if (l->has_local) {
        rd_put(s, " local: ");
        for (int d = 0; d < l->ndim; d++)
            rd_put(s, "%s%lld", d ? "x" : "", (long long)l->local[d]);
    } else {
        rd_put(s, " local: chosen by the runtime (NOLOCALS)");
    }
    rd_put(s, "\n");
    if (c->D->launch_note)
        rd_put(s, "%s", c->D->launch_note);
    rd_put(s, "// args: ");
    et_rendered args;
    if (et_kernel_args(&k->e, &args.n_args, args.arg_operand, args.arg_row))
        for (int a = 0; a < args.n_args; a++) {
            char nm[16];
            rd_arg_name(&args, a, nm, sizeof nm);
            rd_put(s, "%s%s", a ? ", " : "", nm);
        }
    if (c->open_axis >= 0)
        rd_put(s, ", n_%s", k->e.idx[c->open_axis].name);
    rd_put(s, "\n");
    bool f64 = k->e.acc_dtype == ET_F64 || k->e.out.dtype == ET_F64;
    for (int op = 0; op < k->e.n_ops; op++)
        f64 = f64 || k->e.op[op].dtype == ET_F64;
    if (c->D->fp64_pragma && f64)
        rd_put(s, "%s", c->D->fp64_pragma);
    if (et_kernel_has_split(k) && c->open_axis >= 0) {
        rd_put(s, "// SPLIT: work-groups add partial sums into the output: "
                  "zero its n_%s*%lld bytes before each launch\n",
               k->e.idx[c->open_axis].name,
               (long long)(c->launch.zero_bytes / k->e.idx[c->open_axis].size));
    } else if (et_kernel_has_split(k)) {
        rd_put(s, "// SPLIT: work-groups add partial sums into the output: "
                  "zero its %lld bytes before each launch\n",
               (long long)c->launch.zero_bytes);
    }
    if (et_kernel_has_split(k)) {
        const char *add = k->e.out.dtype == ET_F64 ? c->D->atomic_add_f64
                                                   : c->D->atomic_add_f32;
        if (add)
            rd_put(s, "%s", add);
    }
    bool f16 = false;
    for (int op = 0; op < k->e.n_ops; op++)
        f16 = f16 || k->e.op[op].dtype == ET_F16;
    if (c->D->half_helper && f16)
        rd_put(s, "%s", c->D->half_helper);
    if (c->D->nt_helper && k->ntstore)
        rd_put(s, "%s", c->D->nt_helper);
    rd_put(s, "\n");
}

void et_kernel_name(const et_kernel *k, char *buf, size_t cap)
{
    static const et_part_kind order[] = {
        ET_PART_GLOBAL, ET_PART_SPLIT, ET_PART_LOCAL, ET_PART_GROUP,
        ET_PART_LOOP, ET_PART_REDUCE,
        ET_PART_PREFETCH, ET_PART_UNROLL, ET_PART_UPCAST};
    size_t len = (size_t)snprintf(buf, cap, "%s",
                                  k->e.n_idx > k->e.n_out ? "r" : "E");
    int count = 0;
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
        for (int p = 0; p < k->n_parts; p++) {
            if (k->part[p].kind != order[o])
                continue;
            char num[32];
            int oa = et_einsum_open_axis(&k->e);
            if (oa >= 0 && p == k->outer[oa])
                snprintf(num, sizeof num, "_n");
            else
                snprintf(num, sizeof num, "_%lld",
                         (long long)k->part[p].size);
            if (len + strlen(num) + 1 >= cap)
                continue;
            memcpy(buf + len, num, strlen(num) + 1);
            len += strlen(num);
            count++;
        }
    if (count == 0 && len + 3 < cap)
        memcpy(buf + len, "_1", 3);
}

et_status et_kernel_render(const et_kernel *k, et_backend_kind b,
                           const et_render_opts *ro, et_rendered *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)b >= ET_BACKEND_COUNT)
        return ET_ERR_INPUT;
    et_render_opts defaults = {0};
    if (!ro)
        ro = &defaults;
    switch (ro->plant) {
    case ET_PLANT_NONE:
    default:
        break;
    }
    ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ET_ERR_NOMEM;
    et_status st = ET_OK;
    et_kernel *rk = NULL;
    c->b = b;
    c->D = &rd_dialects[b];
    c->n_ops = k->e.n_ops;
    c->open_axis = et_einsum_open_axis(&k->e);
    c->factor_axis = k->factor ? et_kernel_factor_axis(k) : -1;
    st = et_kernel_launch(k, b, &c->launch);
    if (st != ET_OK)
        goto done;
    out->launch = c->launch;
    if (c->open_axis >= 0) {
        /* rendered at a size that makes the open axis' outer part 2, so
         * that nothing in the source depends on the size it is worked at */
        rk = et_kernel_clone(k);
        if (!rk) {
            st = ET_ERR_NOMEM;
            goto done;
        }
        st = et_kernel_set_open_size(rk, 2 * et_kernel_open_step(k), NULL);
        if (st != ET_OK)
            goto done;
        k = rk;
        st = et_kernel_launch(k, b, &c->launch);
        if (st != ET_OK)
            goto done;
    }
    c->k = k;
    c->flat = et_kernel_flat_groups(k, b);
    et_kernel_local_dims(k, c->L);
    c->wg = c->L[0] * c->L[1] * c->L[2];
    compute_coefs(c);
    c->itype = c->open_axis >= 0 || needs_long(c) ? c->D->long_type : "int";
    c->acc = rd_acc_type(k->e.acc_dtype);
    c->zero = k->e.acc_dtype == ET_F64 ? "0.0" : "0.0f";
    c->fma = k->e.acc_dtype == ET_F32 ? c->D->fma_f32 : "fma";
    if (ro->name && ro->name[0])
        snprintf(out->name, sizeof out->name, "%s", ro->name);
    else
        et_kernel_name(k, out->name, sizeof out->name);
    out->local_bytes = et_kernel_local_bytes(k);
    if (!et_kernel_args(&k->e, &out->n_args, out->arg_operand,
                        out->arg_row)) {
        st = ET_ERR_UNSUPPORTED;
        goto done;
    }
    choose_row_mode(c);

    rd_out *s = &c->s;
    emit_header(c);
    rd_put(s, "%s %s(", c->D->kernel_kw, out->name);
    for (int a = 0; a < out->n_args; a++) {
        char nm[16];
        int op = out->arg_operand[a];
        rd_arg_name(out, a, nm, sizeof nm);
        if (a)
            rd_put(s, ", ");
        if (op < 0)
            rd_put(s, c->D->out_ptr, rd_store_type(c, k->e.out.dtype), nm);
        else
            rd_put(s, c->D->in_ptr, rd_store_type(c, k->e.op[op].dtype), nm);
    }
    if (c->open_axis >= 0)
        rd_put(s, ", %s n_%s", c->D->long_type,
               k->e.idx[c->open_axis].name);
    rd_put(s, ")\n{\n");
    s->indent = 1;
    for (int op = 0; op < k->e.n_ops; op++)
        if (et_kernel_op_local(k, op))
            rd_line(s, "%s %s tile_in%d[%lld];", c->D->local_kw, c->acc, op,
                    (long long)et_kernel_tile_elems(k, op));
    plist ups;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int64_t nacc = rd_plist_count(c, &ups);
    if (k->group_part >= 0)
        rd_line(s, "%s %s red[%lld];", c->D->local_kw, c->acc,
                (long long)(c->wg * nacc));
    rd_emit_ids(c);
    if (c->row_mode == 1)
        rd_emit_row_pointers(c, k->part[k->outer[0]].name);
    /* before anything else is live: PoCL keeps the values that live
     * across a barrier in per-work-item memory, not in registers */
    rd_choose_vector(c); /* before the copies: it decides their layout */
    rd_emit_stage(c);
    /* LOOP: everything from here to the stores, once per value */
    int n_loops = 0;
    for (int p = 0; p < k->n_parts; p++) {
        if (k->part[p].kind != ET_PART_LOOP)
            continue;
        if (!n_loops)
            rd_line(s, "// the LOOP parts: the rest once per value");
        rd_line(s, "for (%s %s = 0; %s < %lld; %s++) {", c->itype,
                k->part[p].name, k->part[p].name,
                (long long)k->part[p].size, k->part[p].name);
        s->indent++;
        n_loops++;
    }
    if (k->e.n_out > 0) {
        rd_line(s, "// output indices (UPCAST parts added per accumulator)");
        rd_emit_axis_bases(c, true);
    }
    int64_t vals[MAXP] = {0};
    char accn[256];
    if (c->vmode) {
        rd_emit_vacc_decls(c);
    } else {
        for (int64_t ci = 0; ci < nacc; ci++) {
            rd_combo_fill(c, &ups, ci, vals);
            rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            rd_line(s, "%s %s = %s;", c->acc, accn, c->zero);
        }
    }
    rd_emit_loops(c);
    if (c->vmode && !rd_vstores_direct_ok(c))
        rd_emit_vacc_unpack(c);
    if (k->group_part >= 0) {
        rd_emit_group_combine(c);
        /* the next LOOP value writes red[] again: every lane 0 must have
         * read its lanes' sums first (without this barrier a GPU's warps
         * race ahead; PoCL's work-group loops hide the race) */
        if (n_loops && k->part[k->group_part].size > 1)
            rd_line(s, "%s", c->D->barrier);
    } else {
        rd_emit_stores(c);
    }
    for (int i = 0; i < n_loops; i++) {
        s->indent--;
        rd_line(s, "}");
    }
    s->indent = 0;
    rd_put(s, "}\n");
    out->source = et_sbuf_take(&s->b);
    if (!out->source)
        st = ET_ERR_NOMEM;
done:
    et_sbuf_free(&c->s.b);
    et_kernel_free(rk);
    free(c);
    return st;
}

void et_rendered_free(et_rendered *r)
{
    if (!r)
        return;
    free(r->source);
    r->source = NULL;
}

char *et_kernel_sources_join(const char *const *sources, int n,
                             et_backend_kind b)
{
    if ((unsigned)b >= ET_BACKEND_COUNT)
        return NULL;
    const dialect *D = &rd_dialects[b];
    /* definitions a source may carry that a file may hold once */
    const char *once[] = {D->fp64_pragma, D->atomic_add_f64,
                          D->atomic_add_f32, D->half_helper, D->nt_helper};
    enum { N_ONCE = sizeof once / sizeof once[0] };
    bool seen[N_ONCE] = {false};
    et_sbuf out;
    et_sbuf_init(&out);
    for (int i = 0; i < n; i++) {
        const char *p = sources[i];
        while (*p) {
            int hit = -1;
            for (int w = 0; w < N_ONCE && hit < 0; w++)
                if (once[w] && strncmp(p, once[w], strlen(once[w])) == 0)
                    hit = w;
            if (hit >= 0) {
                if (!seen[hit])
                    et_sbuf_puts(&out, once[hit]);
                seen[hit] = true;
                p += strlen(once[hit]);
                continue;
            }
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
            et_sbuf_printf(&out, "%.*s", (int)len, p);
            p += len;
        }
        et_sbuf_puts(&out, "\n");
    }
    char *text = et_sbuf_take(&out);
    et_sbuf_free(&out);
    return text;
}
