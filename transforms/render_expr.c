/*
 * render_expr.c - the pieces the emitters build lines from: output with
 * indentation, address coefficients, sums of part indices, combinations
 * of the unrolled (UPCAST/UNROLL) parts and their names, loads, masks and
 * addresses.
 */
#include "transforms/render_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rd_put(rd_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    et_sbuf_vprintf(&o->b, fmt, ap);
    va_end(ap);
}

void rd_line(rd_out *o, const char *fmt, ...)
{
    for (int i = 0; i < o->indent; i++)
        et_sbuf_puts(&o->b, "    ");
    va_list ap;
    va_start(ap, fmt);
    et_sbuf_vprintf(&o->b, fmt, ap);
    va_end(ap);
    et_sbuf_puts(&o->b, "\n");
}

const char *rd_acc_type(et_dtype t) { return t == ET_F64 ? "double" : "float"; }

const char *rd_store_type(const ctx *c, et_dtype t)
{
    switch (t) {
    case ET_F16: return c->D->half_type;
    case ET_F32: return "float";
    default: return "double";
    }
}

/* coefficient row of operand op (-1 = output) */
const int64_t *rd_coefs(const ctx *c, int op)
{
    return c->coef[op < 0 ? c->n_ops : op];
}

bool rd_op_uses(const ctx *c, int op, int a)
{
    if (op < 0)
        return a < c->k->e.n_out;
    return et_kernel_op_uses(c->k, op, a);
}

bool rd_padded(const ctx *c, int a)
{
    return a == c->open_axis || c->k->padded[a] != c->k->e.idx[a].size;
}

bool rd_open_part(const ctx *c, int p)
{
    return c->open_axis >= 0 && p == c->k->outer[c->open_axis];
}

bool rd_part_one(const ctx *c, int p)
{
    return c->k->part[p].size == 1 && !rd_open_part(c, p);
}

void rd_part_size(const ctx *c, int p, char *buf, size_t cap)
{
    if (rd_open_part(c, p))
        snprintf(buf, cap, "%s_groups", c->k->e.idx[c->open_axis].name);
    else
        snprintf(buf, cap, "%lld", (long long)c->k->part[p].size);
}

void rd_axis_size(const ctx *c, int a, char *buf, size_t cap)
{
    if (a == c->open_axis)
        snprintf(buf, cap, "n_%s", c->k->e.idx[a].name);
    else
        snprintf(buf, cap, "%lld", (long long)c->k->e.idx[a].size);
}

void rd_sum_terms(const ctx *c, char *buf, size_t cap, int axis,
                  part_pred keep, const void *arg, const char *suffix)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int p = 0; p < c->k->n_parts; p++) {
        const et_part *pt = &c->k->part[p];
        if (pt->axis != axis || rd_part_one(c, p) || !keep(c, p, arg))
            continue;
        if (pt->stride == 1)
            et_sbuf_printf(&b, "%s%s%s", b.len ? " + " : "", pt->name,
                           suffix);
        else
            et_sbuf_printf(&b, "%s%s%s*%lld", b.len ? " + " : "", pt->name,
                           suffix, (long long)pt->stride);
    }
    if (b.len == 0)
        et_sbuf_puts(&b, "0");
}

bool rd_is_runtime(et_part_kind kd)
{
    return kd == ET_PART_GLOBAL || kd == ET_PART_REDUCE ||
           kd == ET_PART_LOCAL || kd == ET_PART_GROUP ||
           kd == ET_PART_PREFETCH || kd == ET_PART_SPLIT ||
           kd == ET_PART_LOOP;
}

bool rd_keep_runtime(const ctx *c, int p, const void *arg)
{
    (void)arg;
    return rd_is_runtime(c->k->part[p].kind);
}

int64_t rd_plist_count(const ctx *c, const plist *l)
{
    int64_t t = 1;
    for (int i = 0; i < l->n; i++)
        t *= c->k->part[l->p[i]].size;
    return t;
}

/* Value of part l->p[i] in combination number idx (first part fastest). */
static int64_t combo_val(const ctx *c, const plist *l, int64_t idx, int i)
{
    for (int j = 0; j < i; j++)
        idx /= c->k->part[l->p[j]].size;
    return idx % c->k->part[l->p[i]].size;
}

/* Value of part p in the full combination (vals indexed by part). */
void rd_combo_fill(const ctx *c, const plist *l, int64_t idx,
                   int64_t *vals)
{
    for (int i = 0; i < l->n; i++)
        vals[l->p[i]] = combo_val(c, l, idx, i);
}

/* Name base + "_v" for each part of l, values from vals. */
void rd_combo_name(const ctx *c, char *buf, size_t cap, const char *base,
                   const plist *l, const int64_t *vals)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    et_sbuf_puts(&b, base);
    (void)c;
    for (int i = 0; i < l->n; i++)
        et_sbuf_printf(&b, "_%lld", (long long)vals[l->p[i]]);
}

/* Offset of axis a contributed by const parts (values in vals). */
static int64_t axis_off(const ctx *c, int a, const plist *consts,
                        const int64_t *vals)
{
    int64_t off = 0;
    for (int i = 0; i < consts->n; i++) {
        const et_part *pt = &c->k->part[consts->p[i]];
        if (pt->axis == a)
            off += vals[consts->p[i]] * pt->stride;
    }
    return off;
}

void rd_plist_kind(const ctx *c, plist *l, et_part_kind kind, int op)
{
    l->n = 0;
    for (int p = 0; p < c->k->n_parts; p++) {
        const et_part *pt = &c->k->part[p];
        if (pt->kind == kind && (op == -2 || rd_op_uses(c, op, pt->axis)))
            l->p[l->n++] = p;
    }
}

/* UPCAST then UNROLL parts used by operand op (-2: all). */
void rd_const_parts(const ctx *c, plist *l, int op)
{
    plist u, r;
    rd_plist_kind(c, &u, ET_PART_UPCAST, op);
    rd_plist_kind(c, &r, ET_PART_UNROLL, op);
    *l = u;
    for (int i = 0; i < r.n; i++)
        l->p[l->n++] = r.p[i];
}

void rd_ptr_name(const ctx *c, int op, const plist *l, const int64_t *vals,
                 char *buf, size_t cap)
{
    const char *base = op < 0 ? "out" : "in";
    char num[16] = "";
    if (op >= 0)
        snprintf(num, sizeof num, "%d", op);
    if (c->row_mode == 2 && et_einsum_op_rowed(&c->k->e, op)) {
        int64_t row = 0;
        for (int i = 0; l && i < l->n; i++)
            if (l->p[i] == c->row_part)
                row = vals[c->row_part];
        snprintf(buf, cap, "%s%s_%lld", base, num, (long long)row);
    } else {
        snprintf(buf, cap, "%s%s", base, num);
    }
}

void rd_arg_name(const et_rendered *r, int a, char *buf, size_t cap)
{
    int k = r->arg_operand[a];
    char base[16];
    if (k < 0)
        snprintf(base, sizeof base, "out");
    else
        snprintf(base, sizeof base, "in%d", k);
    if (r->arg_row[a] >= 0)
        snprintf(buf, cap, "%s_%d", base, r->arg_row[a]);
    else
        snprintf(buf, cap, "%s", base);
}

void rd_row_select(et_sbuf *b, const char *row, const char *base,
                   int n_rows)
{
    for (int r = 0; r < n_rows - 1; r++)
        et_sbuf_printf(b, "%s == %d ? %s_%d : ", row, r, base, r);
    et_sbuf_printf(b, "%s_%d", base, n_rows - 1);
}

/* Expression converting the stored value at ptr[addr] of operand op. */
void rd_load_expr(const ctx *c, int op, const char *ptr, const char *addr,
                  char *buf, size_t cap)
{
    et_dtype t = c->k->e.op[op].dtype;
    et_dtype acc = c->k->e.acc_dtype;
    const char *cast = t == acc || (t == ET_F16 && acc == ET_F32)
                           ? ""
                           : (acc == ET_F64 ? "(double)" : "(float)");
    if (t == ET_F16) {
        c->D->half_load(buf, cap, cast, ptr, addr);
    } else {
        snprintf(buf, cap, "%s%s[%s]", cast, ptr, addr);
    }
}

static bool vec_width_ok(const ctx *c, et_dtype t, int64_t n)
{
    if (n != 2 && n != 4 && n != 8 && n != 16)
        return false;
    if (t == ET_F16)
        return false;
    return n <= (t == ET_F64 ? c->D->max_vec_f64 : c->D->max_vec_f32);
}

/*
 * A part of `consts` along which operand op (-1: output) can use vector
 * memory access: size n in {2,4,8,16} the dialect supports, address
 * coefficient 1, every other coefficient a multiple of n, no padded axis
 * and the stored dtype equal to the accumulator's. -1 if none.
 */
int rd_vector_part(const ctx *c, int op, const plist *consts)
{
    const et_kernel *k = c->k;
    et_dtype t = op < 0 ? k->e.out.dtype : k->e.op[op].dtype;
    if (t != k->e.acc_dtype)
        return -1;
    const int64_t *cf = rd_coefs(c, op);
    for (int a = 0; a < k->e.n_idx; a++)
        if (rd_op_uses(c, op, a) && rd_padded(c, a))
            return -1;
    for (int i = 0; i < consts->n; i++) {
        const et_part *vp = &k->part[consts->p[i]];
        int64_t n = vp->size;
        if (!vec_width_ok(c, t, n) || cf[vp->axis] * vp->stride != 1)
            continue;
        bool ok = true;
        for (int p = 0; p < k->n_parts && ok; p++) {
            if (p == consts->p[i])
                continue;
            const et_part *pt = &k->part[p];
            if (pt->size == 1)
                continue;
            int64_t co = cf[pt->axis] * pt->stride;
            if (co % n != 0)
                ok = false;
        }
        if (ok)
            return consts->p[i];
    }
    return -1;
}

/* The widest power of two g <= n (n a power of two) such that the
 * output's elements out_addr + off + k*g are aligned to g elements in
 * every work-item: off, and the address coefficient of every part but
 * the lanes' (vp) and the UPCAST parts (whose offsets off holds), are
 * multiples of g. The buffer's base is aligned to the device's base
 * address alignment. */
int64_t rd_out_align(const ctx *c, int vp, int64_t off, int64_t n)
{
    const et_kernel *k = c->k;
    const int64_t *cf = rd_coefs(c, -1);
    int64_t g = n;
    while (g > 1 && off % g != 0)
        g /= 2;
    for (int p = 0; p < k->n_parts && g > 1; p++) {
        const et_part *pt = &k->part[p];
        if (p == vp || pt->size < 2 || pt->kind == ET_PART_UPCAST)
            continue;
        while (g > 1 && (cf[pt->axis] * pt->stride) % g != 0)
            g /= 2;
    }
    return g;
}

/* Address base of operand op (-1 output): sum of coef * <axis>_idx. */
void rd_addr_base(const ctx *c, int op, char *buf, size_t cap)
{
    const int64_t *cf = rd_coefs(c, op);
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int a = 0; a < c->k->e.n_idx; a++) {
        if (!cf[a] || (c->k->padded[a] == 1 && a != c->open_axis))
            continue;
        if (cf[a] == 1)
            et_sbuf_printf(&b, "%s%s_idx", b.len ? " + " : "",
                           c->k->e.idx[a].name);
        else
            et_sbuf_printf(&b, "%s%s_idx*%lld", b.len ? " + " : "",
                           c->k->e.idx[a].name, (long long)cf[a]);
    }
    if (!b.len)
        et_sbuf_puts(&b, "0");
}

/* Mask of operand op for the const values: padded axes in range. */
bool rd_mask_expr(const ctx *c, int op, const plist *consts,
                  const int64_t *vals, char *buf, size_t cap)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int a = 0; a < c->k->e.n_idx; a++) {
        if (!rd_op_uses(c, op, a) || !rd_padded(c, a))
            continue;
        int64_t off = axis_off(c, a, consts, vals);
        char sz[48];
        rd_axis_size(c, a, sz, sizeof sz);
        if (off)
            et_sbuf_printf(&b, "%s%s_idx + %lld < %s", b.len ? " && " : "",
                           c->k->e.idx[a].name, (long long)off, sz);
        else
            et_sbuf_printf(&b, "%s%s_idx < %s", b.len ? " && " : "",
                           c->k->e.idx[a].name, sz);
    }
    return b.len > 0;
}

int64_t rd_addr_off(const ctx *c, int op, const plist *consts,
                    const int64_t *vals)
{
    const int64_t *cf = rd_coefs(c, op);
    int64_t off = 0;
    for (int i = 0; i < consts->n; i++) {
        const et_part *pt = &c->k->part[consts->p[i]];
        off += cf[pt->axis] * pt->stride * vals[consts->p[i]];
    }
    return off;
}

void rd_addr_str(char *buf, size_t cap, const char *base, int64_t off)
{
    if (off)
        snprintf(buf, cap, "%s + %lld", base, (long long)off);
    else
        snprintf(buf, cap, "%s", base);
}

/* l without part p. */
void rd_plist_without(const plist *l, int p, plist *out)
{
    out->n = 0;
    for (int i = 0; i < l->n; i++)
        if (l->p[i] != p)
            out->p[out->n++] = l->p[i];
}

/* ---- HOIST ------------------------------------------------------------ */

/*
 * HOIST: the product of every operand but one (`last`) is formed once per
 * combination of the unrolled parts those operands use, as h_<values>,
 * and the multiply-adds multiply it into the last operand's values. The
 * last operand is the one that uses the most unrolled combinations (the
 * highest-numbered among equals), or the given one when prefer >= 0.
 * Returns it, with the parts the product depends on in *pp (in the order
 * of rd_const_parts(c, ., -2)); -1 when the kernel does not hoist.
 */
int rd_hoist_plan(const ctx *c, int prefer, plist *pp)
{
    const et_kernel *k = c->k;
    pp->n = 0;
    if (!k->hoist || k->e.n_ops < 3)
        return -1;
    int last = prefer;
    if (last < 0) {
        int64_t most = -1;
        for (int op = 0; op < k->e.n_ops; op++) {
            plist consts;
            rd_const_parts(c, &consts, op);
            int64_t n = rd_plist_count(c, &consts);
            if (n >= most) {
                most = n;
                last = op;
            }
        }
    }
    plist all;
    rd_const_parts(c, &all, -2);
    for (int i = 0; i < all.n; i++) {
        bool used = false;
        for (int op = 0; op < k->e.n_ops && !used; op++) {
            if (op == last)
                continue;
            plist consts;
            rd_const_parts(c, &consts, op);
            for (int j = 0; j < consts.n; j++)
                used = used || consts.p[j] == all.p[i];
        }
        if (used)
            pp->p[pp->n++] = all.p[i];
    }
    return last;
}

/* The hoisted products: one line per combination of pp. */
void rd_emit_hoisted(ctx *c, int last, const plist *pp)
{
    const et_kernel *k = c->k;
    rd_line(&c->s, "// the other operands' product, once (HOIST)");
    int64_t n = rd_plist_count(c, pp);
    int64_t vals[MAXP] = {0};
    char hn[256], name[256], prod[4096];
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, pp, ci, vals);
        rd_combo_name(c, hn, sizeof hn, "h", pp, vals);
        et_sbuf pb;
        et_sbuf_fixed(&pb, prod, sizeof prod);
        bool first = true;
        for (int op = 0; op < k->e.n_ops; op++) {
            if (op == last)
                continue;
            plist consts;
            rd_const_parts(c, &consts, op);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            rd_combo_name(c, name, sizeof name, bn, &consts, vals);
            et_sbuf_printf(&pb, "%s%s", first ? "" : " * ", name);
            first = false;
        }
        rd_line(&c->s, "%s %s = %s;", c->acc, hn, prod);
    }
}
