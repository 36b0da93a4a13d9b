/*
 * render_prefetch.c - PREFETCH and STAGE: the layout of an operand's tile
 * in local memory, a work-item's position in it, and the cooperative copy
 * (of each chunk for PREFETCH, once before the reduce loops for STAGE; the
 * barriers around it are rd_emit_loops' and rd_emit_stage's; a work-group
 * of one work-item has none).
 */
#include "transforms/render_impl.h"

#include <stdio.h>

/* Tile strides of operand op's PREFETCH or STAGE tile, indexed by part:
 * in part order, except that a staged tile puts the vector part first
 * (its lanes contiguous, whatever the operand's layout in memory), and
 * the row loop of rows summed last (one iteration reads one row's slab
 * of the tile, not every row's elements side by side). */
int64_t rd_tile_strides(const ctx *c, int op, int64_t *ts)
{
    const et_kernel *k = c->k;
    int64_t t = 1;
    int first = -1, last = -1;
    if (c->vmode && et_kernel_staged(k, op) &&
        et_kernel_tile_part(k, op, c->vpart)) {
        first = c->vpart;
        t = k->part[first].size;
    }
    if (c->row_mode == 3)
        last = k->outer[k->e.row_axis];
    for (int p = 0; p < k->n_parts; p++) {
        ts[p] = 0;
        if (p == first) {
            ts[p] = 1;
        } else if (p != last && et_kernel_tile_part(k, op, p)) {
            ts[p] = t;
            t *= k->part[p].size;
        }
    }
    if (last >= 0 && et_kernel_tile_part(k, op, last)) {
        ts[last] = t;
        t *= k->part[last].size;
    }
    return t;
}

/* Declares in<op>_t, the position of this work-item's values in operand
 * op's PREFETCH tile (ts: the tile strides by part). */
void rd_emit_tile_pos(ctx *c, int op, const int64_t *ts)
{
    const et_kernel *k = c->k;
    char pos[512];
    et_sbuf b;
    et_sbuf_fixed(&b, pos, sizeof pos);
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (!ts[p] || !rd_is_runtime(pt->kind) || rd_part_one(c, p))
            continue;
        if (ts[p] == 1)
            et_sbuf_printf(&b, "%s%s", b.len ? " + " : "", pt->name);
        else
            et_sbuf_printf(&b, "%s%s*%lld", b.len ? " + " : "", pt->name,
                           (long long)ts[p]);
    }
    rd_line(&c->s, "%s in%d_t = %s; /* position in the local copy */",
            c->itype, op, b.len ? pos : "0");
}

/* Elements per move of operand op's tile copy (T elements): a vector
 * where the tile's contiguous part is contiguous in memory too (the
 * innermost part of an axis with address coefficient 1, not padded) and
 * its size a multiple of the vector; the operand stored as the tile's
 * dtype (no conversion) and the dialect's vectors allowed at any element.
 * The widest such vector that still gives every work-item one to move
 * (a GPU's work-items copy side by side); 1 where there is none. */
static int64_t copy_width(const ctx *c, int op, const int64_t *ts,
                          int64_t T)
{
    const et_kernel *k = c->k;
    et_dtype t = k->e.op[op].dtype;
    if (!c->D->unaligned_vectors || t != k->e.acc_dtype || t == ET_F16)
        return 1;
    int vp = -1;
    for (int p = 0; p < k->n_parts; p++)
        if (ts[p] == 1)
            vp = p;
    if (vp < 0)
        return 1;
    const et_part *pt = &k->part[vp];
    int a = pt->axis;
    if (pt->stride != 1 || rd_coefs(c, op)[a] != 1 || rd_padded(c, a) ||
        a == c->open_axis || (k->e.n_rows && a == k->e.row_axis))
        return 1;
    int64_t maxw = t == ET_F64 ? c->D->max_vec_f64 : c->D->max_vec_f32;
    for (int64_t w = 16; w > 1; w /= 2)
        if (w <= maxw && pt->size % w == 0 && T / w >= c->wg)
            return w;
    return 1;
}

/* The cooperative copy of operand op's tile for the current chunk. */
void rd_emit_prefetch_copy(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int64_t ts[MAXP];
    int64_t T = rd_tile_strides(c, op, ts);
    int64_t w = copy_width(c, op, ts, T);
    if (et_kernel_staged(k, op))
        rd_line(s, "// copy the %lld elements of operand %d the work-group "
                   "reads (STAGE)",
                (long long)T, op);
    else
        rd_line(s, "// copy the %lld elements of operand %d this chunk needs",
                (long long)T, op);
    if (w > 1) {
        rd_line(s, "for (%s cv = lid_flat; cv < %lld; cv += %lld) {",
                c->itype, (long long)(T / w), (long long)c->wg);
        s->indent++;
        rd_line(s, "%s cp = cv*%lld; /* %lld elements at a time */", c->itype,
                (long long)w, (long long)w);
    } else {
        rd_line(s, "for (%s cp = lid_flat; cp < %lld; cp += %lld) {",
                c->itype, (long long)T, (long long)c->wg);
        s->indent++;
    }
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (!ts[p])
            continue;
        if (pt->size == 1)
            rd_line(s, "%s %s_c = 0;", c->itype, pt->name);
        else if (ts[p] * pt->size == T && ts[p] == 1)
            rd_line(s, "%s %s_c = cp;", c->itype, pt->name);
        else if (ts[p] * pt->size == T)
            rd_line(s, "%s %s_c = cp / %lld;", c->itype, pt->name,
                    (long long)ts[p]);
        else if (ts[p] == 1)
            rd_line(s, "%s %s_c = cp %% %lld;", c->itype, pt->name,
                    (long long)pt->size);
        else
            rd_line(s, "%s %s_c = cp / %lld %% %lld;", c->itype, pt->name,
                    (long long)ts[p], (long long)pt->size);
    }
    const et_operand *o = &k->e.op[op];
    const int64_t *cf = rd_coefs(c, op);
    char addr[1024], mask[512];
    et_sbuf ab, mb;
    et_sbuf_fixed(&ab, addr, sizeof addr);
    et_sbuf_fixed(&mb, mask, sizeof mask);
    for (int a = 0; a < k->e.n_idx; a++) {
        bool used = false;
        for (int d = 0; d < o->rank; d++)
            used = used || o->idx[d] == a;
        if (!used)
            continue;
        /* <axis>_ci = fixed parts by name + tile parts by their _c copy */
        char sum[512];
        et_sbuf sb;
        et_sbuf_fixed(&sb, sum, sizeof sum);
        for (int p = 0; p < k->n_parts; p++) {
            const et_part *pt = &k->part[p];
            if (pt->axis != a || rd_part_one(c, p))
                continue;
            const char *suf = ts[p] ? "_c" : "";
            if (pt->stride == 1)
                et_sbuf_printf(&sb, "%s%s%s", sb.len ? " + " : "", pt->name,
                               suf);
            else
                et_sbuf_printf(&sb, "%s%s%s*%lld", sb.len ? " + " : "",
                               pt->name, suf, (long long)pt->stride);
        }
        rd_line(s, "%s %s_ci = %s;", c->itype, k->e.idx[a].name,
                sb.len ? sum : "0");
        if (cf[a] && (k->padded[a] != 1 || a == c->open_axis)) {
            if (cf[a] == 1)
                et_sbuf_printf(&ab, "%s%s_ci", ab.len ? " + " : "",
                               k->e.idx[a].name);
            else
                et_sbuf_printf(&ab, "%s%s_ci*%lld", ab.len ? " + " : "",
                               k->e.idx[a].name, (long long)cf[a]);
        }
        if (rd_padded(c, a)) {
            char sz[48];
            rd_axis_size(c, a, sz, sizeof sz);
            et_sbuf_printf(&mb, "%s%s_ci < %s", mb.len ? " && " : "",
                           k->e.idx[a].name, sz);
        }
    }
    char expr[2048];
    /* a rowed operand whose tile holds every row (the row axis UPCAST or
     * UNROLLed whole, or, rows summed, a loop a STAGE tile spans): the
     * row's pointer by the element's row */
    bool rows_in_tile = false;
    for (int p = 0; p < k->n_parts; p++)
        rows_in_tile = rows_in_tile ||
                       (ts[p] && k->e.n_rows && k->part[p].axis ==
                                                    k->e.row_axis);
    char ptr[512];
    if (rows_in_tile && et_einsum_op_rowed(&k->e, op)) {
        char row[16], base[16];
        snprintf(row, sizeof row, "%s_ci", k->e.idx[k->e.row_axis].name);
        snprintf(base, sizeof base, "in%d", op);
        et_sbuf pb;
        et_sbuf_fixed(&pb, ptr, sizeof ptr);
        et_sbuf_puts(&pb, "(");
        rd_row_select(&pb, row, base, k->e.n_rows);
        et_sbuf_puts(&pb, ")");
    } else {
        rd_ptr_name(c, op, NULL, NULL, ptr, sizeof ptr);
    }
    if (w > 1) {
        snprintf(expr, sizeof expr, "vload%lld(0, %s + %s)", (long long)w,
                 ptr, ab.len ? addr : "0");
        if (mb.len)
            rd_line(s, "vstore%lld((%s) ? %s : (%s%lld)(%s), 0, "
                       "tile_in%d + cp);",
                    (long long)w, mask, expr, c->acc, (long long)w, c->zero,
                    op);
        else
            rd_line(s, "vstore%lld(%s, 0, tile_in%d + cp);", (long long)w,
                    expr, op);
        s->indent--;
        rd_line(s, "}");
        return;
    }
    rd_load_expr(c, op, ptr, ab.len ? addr : "0", expr, sizeof expr);
    if (mb.len)
        rd_line(s, "tile_in%d[cp] = (%s) ? %s : %s;", op, mask, expr, c->zero);
    else
        rd_line(s, "tile_in%d[cp] = %s;", op, expr);
    s->indent--;
    rd_line(s, "}");
}
