/*
 * render_vector.c - vector accumulators (OpenCL): which part they run
 * along, their declarations, vector loads, the vector multiply-adds, and
 * after the loops their unpacking into scalar accumulators or their
 * direct vector stores; narrow chunks of several accumulators packed into
 * one vector.
 */
#include "transforms/render_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How operand op reads the lanes of candidate vector part p: 0 broadcast
 * (does not use its axis), 1 contiguous (address coefficient 1, or tile
 * stride 1 in its local copy), 2 gather. */
static int lane_access(const ctx *c, int op, int p)
{
    const et_part *pt = &c->k->part[p];
    if (!rd_op_uses(c, op, pt->axis))
        return 0;
    if (et_kernel_staged(c->k, op)) /* laid out with the lanes first */
        return et_kernel_tile_part(c->k, op, p) ? 1 : 2;
    if (c->k->prefetch_axis >= 0 && c->k->prefetch_op[op]) {
        int64_t ts[MAXP];
        rd_tile_strides(c, op, ts);
        return ts[p] == 1 ? 1 : 2;
    }
    return rd_coefs(c, op)[pt->axis] * pt->stride == 1 ? 1 : 2;
}

static void choose_pack(ctx *c);

/*
 * Picks the vector accumulators, where the dialect has them (OpenCL; CUDA
 * keeps scalars). A candidate is an UPCAST part contiguous in the output
 * (mode 1) or an UNROLL part (mode 2) of size 2 or more; its lanes go in
 * chunks of at most 64 bytes (16 floats, 8 doubles), e.g. 35 =
 * 8+8+8+8+2+1. Mode 1 is preferred when no input has to gather its lanes;
 * otherwise an UNROLL part that every input reads contiguously or
 * broadcasts (at least one contiguously); otherwise the mode 1 part with
 * the fewest gathers. Then, in mode 1, the part whose values share the
 * narrow chunks (choose_pack).
 */
void rd_choose_vector(ctx *c)
{
    const et_kernel *k = c->k;
    c->vmode = 0;
    c->vpart = -1;
    c->vn = 1;
    c->pack_part = -1;
    if (!c->D->vector_accumulators)
        return;
    int best1 = -1, best1_g = 1 << 30, best2 = -1;
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (pt->size < 2)
            continue;
        int gathers = 0, contig = 0;
        for (int op = 0; op < k->e.n_ops; op++) {
            int a = lane_access(c, op, p);
            gathers += a == 2;
            contig += a == 1;
        }
        if (pt->kind == ET_PART_UPCAST &&
            rd_coefs(c, -1)[pt->axis] * pt->stride == 1 && gathers < best1_g) {
            best1 = p;
            best1_g = gathers;
        } else if (pt->kind == ET_PART_UNROLL && gathers == 0 && contig > 0 &&
                   best2 < 0) {
            best2 = p;
        }
    }
    if (best1 >= 0 && (best1_g == 0 || best2 < 0)) {
        c->vmode = 1;
        c->vpart = best1;
    } else if (best2 >= 0) {
        c->vmode = 2;
        c->vpart = best2;
    }
    if (c->vmode)
        c->vn = k->part[c->vpart].size;
    if (c->vmode == 1)
        choose_pack(c);
}

/* The lanes of the vector part in chunks: start and width of each, the
 * widest power of two that fits first. Returns the number of chunks. */
static int vchunks(const ctx *c, int64_t *start, int64_t *width)
{
    int64_t maxw = c->k->e.acc_dtype == ET_F64 ? 8 : 16;
    int n = 0;
    for (int64_t at = 0; at < c->vn && n < MAX_CHUNKS; n++) {
        int64_t w = maxw;
        while (w > c->vn - at)
            w /= 2;
        start[n] = at;
        width[n] = w;
        at += w;
    }
    return n;
}

/* "float8" or, for one lane, "float". */
static void vtype(const ctx *c, int64_t w, char *buf, size_t cap)
{
    if (w == 1)
        snprintf(buf, cap, "%s", c->acc);
    else
        snprintf(buf, cap, "%s%lld", c->acc, (long long)w);
}

/* Name of chunk q of a vector: base, "_c<start>" when there are several. */
static void chunk_name(char *buf, size_t cap, const char *base, int nch,
                       int64_t start)
{
    if (nch > 1)
        snprintf(buf, cap, "%s_c%lld", base, (long long)start);
    else
        snprintf(buf, cap, "%s", base);
}

/*
 * Packing. A chunk narrower than a vector (the 4 lanes of 20 = 16 + 4)
 * costs a vector instruction like a full one on a CPU whose vector units
 * are as wide as the widest vector, so 16 + 4 lanes run at 62.5 % of the
 * multiply-add peak in f32. The chunks of g consecutive values of another
 * UPCAST part, the pack part, share one vector of g times the chunk's
 * width instead (value p0 + i in lanes i*w .. i*w + w-1), named for the
 * group's first value with the suffix _x<g>: accv_0_c16_x4 holds
 * accv_0_c16 .. accv_3_c16 when the pack part is the first part named.
 * An operand's lanes there are its g chunks side by side: its vector
 * repeated (it does not use the pack part), its g scalars each repeated
 * w times (a swizzle, .s0000111122223333), or its g vectors. The
 * lane-built operands cost shuffles, so a kernel is packed only where
 * pack_cost says a step gets cheaper. Not with HOIST (its products are
 * formed per chunk).
 */

/* The widest packed vector: the device's preferred vector width for the
 * accumulator's dtype (16 f32 lanes on AVX-512, 8 on AVX2), or without a
 * device the widest chunk (vchunks). */
static int64_t vmax_lanes(const ctx *c)
{
    int64_t w = c->k->e.acc_dtype == ET_F64 ? 8 : 16;
    int64_t pref = c->k->target.preferred_vector_width[c->k->e.acc_dtype];
    return pref > 1 && pref < w ? pref : w;
}

/* How many values of the pack part share a chunk of w lanes: the largest
 * power of two that divides the part's size with g * w lanes in a vector;
 * 1 without packing. */
static int64_t pack_group(const ctx *c, int64_t w)
{
    if (c->pack_part < 0)
        return 1;
    int64_t m = c->k->part[c->pack_part].size, g = 1;
    while (g * 2 * w <= vmax_lanes(c) && m % (g * 2) == 0)
        g *= 2;
    return g;
}

static bool plist_has(const plist *l, int p)
{
    for (int i = 0; i < l->n; i++)
        if (l->p[i] == p)
            return true;
    return false;
}

/* Chunk q of the vector named prefix_<values of l>: the variable that
 * holds it, its lanes, and the lane where the chunk starts in it. */
typedef struct {
    char name[300];
    int64_t width, lane0;
} vref;

static void chunk_ref(const ctx *c, vref *r, const char *prefix,
                      const plist *l, const int64_t *vals, int nch,
                      const int64_t *st, const int64_t *w, int q)
{
    int pp = c->pack_part;
    int64_t g = plist_has(l, pp) ? pack_group(c, w[q]) : 1;
    int64_t v2[MAXP];
    memcpy(v2, vals, sizeof v2);
    r->lane0 = 0;
    if (g > 1) {
        r->lane0 = vals[pp] % g * w[q];
        v2[pp] = vals[pp] - vals[pp] % g;
    }
    char base[256];
    rd_combo_name(c, base, sizeof base, prefix, l, v2);
    chunk_name(r->name, sizeof r->name, base, nch, st[q]);
    if (g > 1) {
        size_t n = strlen(r->name);
        snprintf(r->name + n, sizeof r->name - n, "_x%lld", (long long)g);
    }
    r->width = w[q] * g;
}

/* Does the combination vals of l declare or update chunk q's variable
 * (the first value of its pack group, or no packing)? */
static bool chunk_owner(const ctx *c, const plist *l, const int64_t *vals,
                        const int64_t *w, int q)
{
    int pp = c->pack_part;
    return !plist_has(l, pp) || vals[pp] % pack_group(c, w[q]) == 0;
}

static void operand_chunk(const ctx *c, int op, const int64_t *vals,
                          int nch, const int64_t *st, const int64_t *w,
                          int q, char *out, size_t cap);

/* Operand op's lanes in chunk q's variable for the pack group starting
 * at vals (operand_chunk's value without packing). */
static void operand_packed(const ctx *c, int op, const int64_t *vals,
                           int nch, const int64_t *st, const int64_t *w,
                           int q, char *out, size_t cap)
{
    const et_kernel *k = c->k;
    int pp = c->pack_part;
    int64_t g = pack_group(c, w[q]);
    if (g == 1) {
        operand_chunk(c, op, vals, nch, st, w, q, out, cap);
        return;
    }
    plist consts;
    rd_const_parts(c, &consts, op);
    char ty[32], gty[32], name[400];
    vtype(c, w[q] * g, ty, sizeof ty);
    vtype(c, g, gty, sizeof gty);
    int64_t v2[MAXP];
    memcpy(v2, vals, sizeof v2);
    et_sbuf b;
    et_sbuf_fixed(&b, out, cap);
    if (!rd_op_uses(c, op, k->part[c->vpart].axis)) {
        char bn[16];
        snprintf(bn, sizeof bn, "a%d", op);
        if (!plist_has(&consts, pp)) { /* one value for every lane */
            rd_combo_name(c, name, sizeof name, bn, &consts, vals);
            et_sbuf_printf(&b, "(%s)(%s)", ty, name);
            return;
        }
        et_sbuf_printf(&b, "%s(%s)(", w[q] > 1 ? "(" : "", w[q] > 1 ? gty : ty);
        for (int64_t i = 0; i < g; i++) {
            v2[pp] = vals[pp] + i;
            rd_combo_name(c, name, sizeof name, bn, &consts, v2);
            et_sbuf_printf(&b, "%s%s", i ? ", " : "", name);
        }
        et_sbuf_puts(&b, ")");
        if (w[q] > 1) { /* each value over its w lanes */
            static const char hex[] = "0123456789abcdef";
            et_sbuf_puts(&b, ").s");
            for (int64_t i = 0; i < g; i++)
                for (int64_t l = 0; l < w[q]; l++)
                    et_sbuf_printf(&b, "%c", hex[i]);
        }
        return;
    }
    et_sbuf_printf(&b, "(%s)(", ty);
    for (int64_t i = 0; i < g; i++) {
        v2[pp] = vals[pp] + i;
        operand_chunk(c, op, v2, nch, st, w, q, name, sizeof name);
        et_sbuf_printf(&b, "%s%s", i ? ", " : "", name);
    }
    et_sbuf_puts(&b, ")");
}

#define PACK_KEYS 1024

/*
 * One step of the innermost loop (FACTOR: its first phase) with packing
 * by c->pack_part (-1: none), as half-cycles on a CPU that issues two
 * vector multiply-adds and one shuffle a cycle: the larger of the
 * multiply-adds and twice the shuffles that build operand lanes. A
 * shuffle counts once however many multiply-adds share it (the compiler
 * forms it once): g values side by side (scalars each over w lanes, or
 * vectors) g - 1, a vector repeated 1 (none when loaded from memory: a
 * broadcast load), a vector gathered from w scalars w - 1. On PoCL
 * (Zen 5) the DG operator's packing (24 multiply-adds to 15, 3 shuffles
 * added) ran 1.45x as fast; 16 rows of 10 lanes (xj,ij->xi, UPCAST(x,16))
 * packed by the row (32 to 10, 24 shuffles added to 8) 0.8x as fast, so
 * that one is not packed.
 */
static int64_t pack_cost(ctx *c, int nch, const int64_t *st,
                         const int64_t *w)
{
    const et_kernel *k = c->k;
    int phase = c->phase;
    c->phase = c->factor_axis >= 0 ? 1 : 0;
    plist all, rest;
    rd_const_parts(c, &all, -2);
    rd_plist_without(&all, c->vpart, &rest);
    char(*keys)[512] = malloc(PACK_KEYS * sizeof *keys);
    int nkeys = 0;
    int64_t fmas = 0, shuffles = 0, vals[MAXP] = {0};
    int64_t n = rd_plist_count(c, &rest);
    bool ok = keys != NULL;
    int vaxis = k->part[c->vpart].axis;
    /* the gathered lane vectors, packed or not */
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!rd_phase_op(c, op) || !rd_op_uses(c, op, vaxis) ||
            rd_direct_vec(c, op))
            continue;
        plist consts, orest;
        rd_const_parts(c, &consts, op);
        rd_plist_without(&consts, c->vpart, &orest);
        for (int q = 0; q < nch; q++)
            shuffles += rd_plist_count(c, &orest) * (w[q] - 1);
    }
    for (int64_t ci = 0; ci < n && ok; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, &rest, ci, vals);
        for (int q = 0; q < nch && ok; q++) {
            int64_t g = pack_group(c, w[q]);
            if (g > 1 && vals[c->pack_part] % g != 0)
                continue;
            fmas++;
            for (int op = 0; op < k->e.n_ops && ok && g > 1; op++) {
                if (!rd_phase_op(c, op))
                    continue;
                plist consts;
                rd_const_parts(c, &consts, op);
                bool uv = rd_op_uses(c, op, vaxis);
                bool up = plist_has(&consts, c->pack_part);
                int64_t cost = up ? g - 1
                               : uv ? (rd_direct_vec(c, op) ? 0 : 1)
                                    : 0;
                if (cost == 0)
                    continue;
                char key[512];
                operand_packed(c, op, vals, nch, st, w, q, key, sizeof key);
                int i = 0;
                while (i < nkeys && strcmp(keys[i], key) != 0)
                    i++;
                if (i < nkeys)
                    continue;
                if (nkeys == PACK_KEYS) {
                    ok = false;
                    break;
                }
                snprintf(keys[nkeys++], sizeof keys[0], "%s", key);
                shuffles += cost;
            }
        }
    }
    free(keys);
    c->phase = phase;
    if (!ok)
        return INT64_MAX;
    return fmas > 2 * shuffles ? fmas : 2 * shuffles;
}

/* The pack part: the UPCAST part (not the vector part) whose packing
 * makes the loop's step cheapest (pack_cost), if cheaper than none;
 * none with HOIST. */
static void choose_pack(ctx *c)
{
    const et_kernel *k = c->k;
    plist hp;
    if (rd_hoist_plan(c, -1, &hp) >= 0)
        return;
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    c->pack_part = -1;
    int64_t best = pack_cost(c, nch, st, w);
    int bestp = -1;
    for (int p = 0; p < k->n_parts; p++) {
        if (p == c->vpart || k->part[p].kind != ET_PART_UPCAST ||
            k->part[p].size < 2)
            continue;
        c->pack_part = p;
        int64_t cost = pack_cost(c, nch, st, w);
        if (cost < best) {
            best = cost;
            bestp = p;
        }
    }
    c->pack_part = bestp;
}

/* UPCAST parts that name a vector accumulator. */
static void vacc_parts(const ctx *c, plist *l)
{
    plist ups;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    if (c->vmode == 1)
        rd_plist_without(&ups, c->vpart, l);
    else
        *l = ups;
}

/* The vectors prefix_<values of l>, one per chunk (or pack group),
 * zeroed. */
static void emit_zeroed(ctx *c, const char *prefix, const plist *l)
{
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t n = rd_plist_count(c, l);
    int64_t vals[MAXP] = {0};
    char ty[32];
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, l, ci, vals);
        for (int q = 0; q < nch; q++) {
            if (!chunk_owner(c, l, vals, w, q))
                continue;
            vref r;
            chunk_ref(c, &r, prefix, l, vals, nch, st, w, q);
            vtype(c, r.width, ty, sizeof ty);
            rd_line(&c->s, "%s %s = (%s)(%s);", ty, r.name, ty, c->zero);
        }
    }
}

void rd_emit_vacc_decls(ctx *c)
{
    plist l;
    vacc_parts(c, &l);
    emit_zeroed(c, "accv", &l);
}

/* With vector accumulators: does operand op load the lanes of the vector
 * part as vectors (from memory or its local copy), named
 * vec<op>_<values of its other unrolled parts>[_c<chunk start>]? */
bool rd_direct_vec(const ctx *c, int op)
{
    const et_kernel *k = c->k;
    if (!c->vmode || lane_access(c, op, c->vpart) != 1)
        return false;
    if (et_kernel_op_local(k, op))
        return true; /* the local copy holds accumulator values, no masks */
    if (k->e.op[op].dtype != k->e.acc_dtype)
        return false;
    for (int a = 0; a < k->e.n_idx; a++)
        if (rd_op_uses(c, op, a) && rd_padded(c, a))
            return false;
    return true;
}

void rd_emit_direct_vec_loads(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist consts, rest;
    rd_const_parts(c, &consts, op);
    rd_plist_without(&consts, c->vpart, &rest);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    bool tile = et_kernel_op_local(k, op);
    int64_t ts[MAXP];
    char base[512], ptr[32];
    if (tile) {
        rd_tile_strides(c, op, ts);
        rd_emit_tile_pos(c, op, ts);
        snprintf(base, sizeof base, "in%d_t", op);
        snprintf(ptr, sizeof ptr, "tile_in%d", op);
    } else {
        rd_addr_base(c, op, base, sizeof base);
        rd_line(s, "%s in%d_addr = %s;", c->itype, op, base);
        snprintf(base, sizeof base, "in%d_addr", op);
        snprintf(ptr, sizeof ptr, "in%d", op);
    }
    int64_t n = rd_plist_count(c, &rest);
    int64_t vals[MAXP] = {0};
    for (int64_t ri = 0; ri < n; ri++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, &rest, ri, vals);
        int64_t off = 0;
        if (tile)
            for (int i = 0; i < rest.n; i++)
                off += ts[rest.p[i]] * vals[rest.p[i]];
        else
            off = rd_addr_off(c, op, &rest, vals);
        if (!tile)
            rd_ptr_name(c, op, &rest, vals, ptr, sizeof ptr);
        char vb[16], vname[256], name[300], ty[32], addr[600];
        snprintf(vb, sizeof vb, "vec%d", op);
        rd_combo_name(c, vname, sizeof vname, vb, &rest, vals);
        for (int q = 0; q < nch; q++) {
            chunk_name(name, sizeof name, vname, nch, st[q]);
            vtype(c, w[q], ty, sizeof ty);
            rd_addr_str(addr, sizeof addr, base, off + st[q]);
            if (w[q] == 1)
                rd_line(s, "%s %s = %s[%s];", ty, name, ptr, addr);
            else
                rd_line(s, "%s %s = vload%lld(0, %s + %s);", ty, name,
                        (long long)w[q], ptr, addr);
        }
    }
}

/* Operand op's value in chunk q of the vector part, for the values vals of
 * the other unrolled parts: its loaded or lane-built vector chunk when it
 * uses the vector part's axis, else its scalar broadcast (as is when the
 * chunk is one lane wide). */
static void operand_chunk(const ctx *c, int op, const int64_t *vals,
                          int nch, const int64_t *st, const int64_t *w,
                          int q, char *out, size_t cap)
{
    const et_kernel *k = c->k;
    int vp = c->vpart;
    plist consts, orest;
    rd_const_parts(c, &consts, op);
    char bn[16], name[256], ty[32];
    if (rd_op_uses(c, op, k->part[vp].axis)) {
        rd_plist_without(&consts, vp, &orest);
        snprintf(bn, sizeof bn, "vec%d", op);
        rd_combo_name(c, name, sizeof name, bn, &orest, vals);
        chunk_name(out, cap, name, nch, st[q]);
        return;
    }
    snprintf(bn, sizeof bn, "a%d", op);
    rd_combo_name(c, name, sizeof name, bn, &consts, vals);
    vtype(c, w[q], ty, sizeof ty);
    if (w[q] == 1)
        snprintf(out, cap, "%s", name);
    else
        snprintf(out, cap, "(%s)(%s)", ty, name);
}

/* HOIST in a vector kernel: the product of every operand but `last`, one
 * per chunk and combination of the other unrolled parts it uses (hp
 * without the vector part), named h_<values>_c<chunk>; a vector when one
 * of its operands uses the vector part's axis. */
static void emit_hoisted_vector(ctx *c, int last, const plist *hp, int nch,
                                const int64_t *st, const int64_t *w)
{
    const et_kernel *k = c->k;
    plist hr;
    rd_plist_without(hp, c->vpart, &hr);
    rd_line(&c->s, "// the other operands' product, once (HOIST)");
    int64_t n = rd_plist_count(c, &hr);
    int64_t vals[MAXP] = {0};
    char hb[256], hn[300], ty[32], v[340], prod[4096];
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, &hr, ci, vals);
        rd_combo_name(c, hb, sizeof hb, "h", &hr, vals);
        for (int q = 0; q < nch; q++) {
            chunk_name(hn, sizeof hn, hb, nch, st[q]);
            vtype(c, w[q], ty, sizeof ty);
            et_sbuf pb;
            et_sbuf_fixed(&pb, prod, sizeof prod);
            bool first = true;
            for (int op = 0; op < k->e.n_ops; op++) {
                if (op == last)
                    continue;
                operand_chunk(c, op, vals, nch, st, w, q, v, sizeof v);
                et_sbuf_printf(&pb, "%s%s", first ? "" : " * ", v);
                first = false;
            }
            rd_line(&c->s, "%s %s = %s;", ty, hn, prod);
        }
    }
}

/* FACTOR's partial sums as vectors: tv_<values>_c<chunk>, one per
 * combination of the partial sums' parts but the vector part. */
static void vfactor_parts(const ctx *c, plist *l)
{
    plist tp;
    rd_factor_tparts(c, &tp);
    rd_plist_without(&tp, c->vpart, l);
}

void rd_emit_vfactor_decls(ctx *c)
{
    plist l;
    vfactor_parts(c, &l);
    emit_zeroed(c, "tv", &l);
}

/* FACTOR with vector accumulators: phase 1 adds the inner operands'
 * product into the partial sums (one per chunk and combination of the
 * unrolled parts but the vector part), phase 2 multiplies the outer
 * operands (vectors or broadcasts) into them and adds them to the
 * accumulators. The lanes of an UNROLL vector part stay lanes of the
 * partial sums: an outer operand does not depend on them (or is a vector
 * along them), so multiplying before the lanes are summed is the same. */
static void emit_factor_vector(ctx *c, int nch, const int64_t *st,
                               const int64_t *w)
{
    const et_kernel *k = c->k;
    plist all, rest, accl, tl;
    rd_const_parts(c, &all, -2);
    rd_plist_without(&all, c->vpart, &rest);
    vacc_parts(c, &accl);
    vfactor_parts(c, &tl);
    const plist *over = c->phase == 1 ? &rest : &tl;
    int last = -1;
    for (int op = 0; op < k->e.n_ops; op++)
        if (rd_phase_op(c, op))
            last = op;
    int64_t n = rd_plist_count(c, over);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, over, ci, vals);
        for (int q = 0; q < nch; q++) {
            if (!chunk_owner(c, &tl, vals, w, q))
                continue;
            vref tr, ar;
            chunk_ref(c, &tr, "tv", &tl, vals, nch, st, w, q);
            chunk_ref(c, &ar, "accv", &accl, vals, nch, st, w, q);
            const char *tn = tr.name, *an = ar.name;
            char v[2048], prod[8192];
            et_sbuf pb;
            et_sbuf_fixed(&pb, prod, sizeof prod);
            for (int op = 0; op < k->e.n_ops; op++) {
                if (!rd_phase_op(c, op) || (op == last && c->phase == 1))
                    continue;
                operand_packed(c, op, vals, nch, st, w, q, v, sizeof v);
                et_sbuf_printf(&pb, "%s%s", pb.len ? " * " : "", v);
            }
            if (c->phase == 2) {
                rd_line(&c->s, "%s = %s(%s, %s, %s);", an, c->fma, prod, tn,
                        an);
                continue;
            }
            operand_packed(c, last, vals, nch, st, w, q, v, sizeof v);
            if (pb.len == 0)
                rd_line(&c->s, "%s += %s;", tn, v);
            else
                rd_line(&c->s, "%s = %s(%s, %s, %s);", tn, c->fma, prod, v,
                        tn);
        }
    }
}

/* The vector multiply-adds: one per chunk and combination of the unrolled
 * parts but the vector part; an operand's lanes are vectors it loaded, or
 * built from its values, or one value broadcast. */
static void emit_fmas_vector(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int vp = c->vpart;
    plist all, rest, accl;
    rd_const_parts(c, &all, -2);
    rd_plist_without(&all, vp, &rest);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t vals[MAXP] = {0};
    char name[256], ty[32], cn[300];
    /* lane vectors of the other operands that use the vector part's axis */
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!rd_op_uses(c, op, k->part[vp].axis) || rd_direct_vec(c, op) ||
            !rd_phase_op(c, op))
            continue;
        plist consts, orest;
        rd_const_parts(c, &consts, op);
        rd_plist_without(&consts, vp, &orest);
        int64_t n = rd_plist_count(c, &orest);
        char bn[16], vb[16], vname[256];
        snprintf(bn, sizeof bn, "a%d", op);
        snprintf(vb, sizeof vb, "vec%d", op);
        for (int64_t ci = 0; ci < n; ci++) {
            memset(vals, 0, sizeof vals);
            rd_combo_fill(c, &orest, ci, vals);
            rd_combo_name(c, vname, sizeof vname, vb, &orest, vals);
            for (int q = 0; q < nch; q++) {
                char list[4096];
                et_sbuf lb;
                et_sbuf_fixed(&lb, list, sizeof list);
                for (int64_t v = st[q]; v < st[q] + w[q]; v++) {
                    vals[vp] = v;
                    rd_combo_name(c, name, sizeof name, bn, &consts, vals);
                    et_sbuf_printf(&lb, "%s%s", v > st[q] ? ", " : "", name);
                }
                vals[vp] = 0;
                chunk_name(cn, sizeof cn, vname, nch, st[q]);
                vtype(c, w[q], ty, sizeof ty);
                if (w[q] == 1)
                    rd_line(s, "%s %s = %s;", ty, cn, list);
                else
                    rd_line(s, "%s %s = (%s)(%s);", ty, cn, ty, list);
            }
        }
    }
    if (c->phase) {
        emit_factor_vector(c, nch, st, w);
        return;
    }
    /* HOIST: the operand with the most unrolled values is multiplied
     * last; the others' product is formed once per chunk and combination
     * of the parts they use: a scalar broadcast when none of them uses
     * the vector part's axis, else a vector */
    plist hp = {0}, hr = {0};
    int last = rd_hoist_plan(c, -1, &hp);
    bool hvec = false;
    for (int i = 0; i < hp.n; i++)
        hvec = hvec || hp.p[i] == vp;
    if (last >= 0 && hvec) {
        emit_hoisted_vector(c, last, &hp, nch, st, w);
        rd_plist_without(&hp, vp, &hr);
    } else if (last >= 0) {
        rd_emit_hoisted(c, last, &hp);
    }
    int64_t n = rd_plist_count(c, &rest);
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, &rest, ci, vals);
        for (int q = 0; q < nch; q++) {
            if (!chunk_owner(c, &accl, vals, w, q))
                continue;
            vref ar;
            chunk_ref(c, &ar, "accv", &accl, vals, nch, st, w, q);
            const char *accn = ar.name;
            vtype(c, w[q], ty, sizeof ty);
            char v[ET_MAX_OPERANDS][2048];
            for (int op = 0; op < k->e.n_ops; op++)
                operand_packed(c, op, vals, nch, st, w, q, v[op],
                               sizeof v[op]);
            if (k->e.n_ops == 1) {
                rd_line(s, "%s += %s;", accn, v[0]);
                continue;
            }
            if (last >= 0) {
                char hn[256], hv[340];
                if (hvec) {
                    rd_combo_name(c, hn, sizeof hn, "h", &hr, vals);
                    chunk_name(hv, sizeof hv, hn, nch, st[q]);
                } else {
                    rd_combo_name(c, hn, sizeof hn, "h", &hp, vals);
                    if (w[q] == 1)
                        snprintf(hv, sizeof hv, "%s", hn);
                    else
                        snprintf(hv, sizeof hv, "(%s)(%s)", ty, hn);
                }
                rd_line(s, "%s = %s(%s, %s, %s);", accn, c->fma, hv, v[last],
                        accn);
                continue;
            }
            char prod[8192];
            et_sbuf pb;
            et_sbuf_fixed(&pb, prod, sizeof prod);
            for (int op = 0; op < k->e.n_ops - 1; op++)
                et_sbuf_printf(&pb, "%s%s", op ? " * " : "", v[op]);
            rd_line(s, "%s = %s(%s, %s, %s);", accn, c->fma, prod,
                    v[k->e.n_ops - 1], accn);
        }
    }
}

/* Mode 2: the chunks of accumulator vector `vbase` folded into one
 * vector of the narrowest chunk's width (halving a wider sum, lo + hi,
 * before adding the next narrower chunk), declared as `out`. */
static void fold_chunks(ctx *c, const char *vbase, int nch, const int64_t *st,
                        const int64_t *w, const char *out)
{
    char cur[400], nx[400], ty[32];
    chunk_name(cur, sizeof cur, vbase, nch, st[0]);
    int64_t cw = w[0];
    int step = 0;
    for (int q = 1; q < nch; q++) {
        char cq[340];
        chunk_name(cq, sizeof cq, vbase, nch, st[q]);
        while (cw > w[q]) {
            snprintf(nx, sizeof nx, "%s_f%d", out, step++);
            vtype(c, cw / 2, ty, sizeof ty);
            rd_line(&c->s, "%s %s = %s.lo + %s.hi;", ty, nx, cur, cur);
            snprintf(cur, sizeof cur, "%s", nx);
            cw /= 2;
        }
        snprintf(nx, sizeof nx, "%s_f%d", out, step++);
        vtype(c, cw, ty, sizeof ty);
        rd_line(&c->s, "%s %s = %s + %s;", ty, nx, cur, cq);
        snprintf(cur, sizeof cur, "%s", nx);
    }
    vtype(c, cw, ty, sizeof ty);
    rd_line(&c->s, "%s %s = %s;", ty, out, cur);
}

/*
 * Mode 2: the lanes of g accumulators summed together (g a power of two,
 * each folded to width W >= g): while there are several vectors they are
 * taken in pairs, (a.even, b.even) + (a.odd, b.odd), so that each holds
 * the partial sums of twice as many accumulators in half as many lanes
 * each; the last one then sums its own pairs (v.even + v.odd) down to g
 * lanes, the g sums in order (a scalar for g = 1). A few shuffles and
 * adds per accumulator instead of a reduction tree each. The result's
 * name is left in names[0].
 */
static void reduce_group(ctx *c, char names[][64], int g, int64_t W,
                         const char *res, int gi)
{
    char ty[32], nx[64];
    int n = g, lvl = 0;
    int64_t cw = W;
    vtype(c, cw, ty, sizeof ty);
    for (; n > 1; n /= 2, lvl++) {
        for (int i = 0; i < n; i += 2) {
            snprintf(nx, sizeof nx, "%s%d_%d_%d", res, gi, lvl, i / 2);
            rd_line(&c->s, "%s %s = (%s)(%s.even, %s.even) + "
                           "(%s)(%s.odd, %s.odd);",
                    ty, nx, ty, names[i], names[i + 1], ty, names[i],
                    names[i + 1]);
            snprintf(names[i / 2], 64, "%s", nx);
        }
    }
    for (; cw > g; cw /= 2, lvl++) {
        snprintf(nx, sizeof nx, "%s%d_%d", res, gi, lvl);
        vtype(c, cw / 2, ty, sizeof ty);
        rd_line(&c->s, "%s %s = %s.even + %s.odd;", ty, nx, names[0],
                names[0]);
        snprintf(names[0], 64, "%s", nx);
    }
}

/* After the reduce loops: the scalar accumulators acc_<upcast values>
 * from the vectors (mode 1: a lane each; mode 2: each accumulator's
 * chunks folded into one vector, then the lanes of up to that many
 * accumulators summed together, see reduce_group). */
void rd_emit_vacc_unpack(ctx *c)
{
    rd_out *s = &c->s;
    plist ups, accl;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t vals[MAXP] = {0};
    char accn[256], vbase[256], vname[300];
    if (c->vmode == 2) {
        int64_t m = rd_plist_count(c, &accl);
        int64_t W = w[nch - 1];
        if (W >= 2 && m <= 256) {
            /* fold, then reduce in groups of a power of two <= W */
            char names[256][64];
            for (int64_t ci = 0; ci < m; ci++) {
                rd_combo_fill(c, &accl, ci, vals);
                rd_combo_name(c, vbase, sizeof vbase, "accv", &accl, vals);
                snprintf(names[ci], 64, "red_%lld", (long long)ci);
                fold_chunks(c, vbase, nch, st, w, names[ci]);
            }
            int gi = 0;
            for (int64_t at = 0; at < m; gi++) {
                int g = 1;
                while ((int64_t)g * 2 <= W && at + g * 2 <= m)
                    g *= 2;
                char grp[256][64];
                for (int i = 0; i < g; i++)
                    snprintf(grp[i], 64, "%s", names[at + i]);
                reduce_group(c, grp, g, W, "sum", gi);
                for (int i = 0; i < g; i++) {
                    rd_combo_fill(c, &accl, at + i, vals);
                    rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
                    if (g == 1)
                        rd_line(s, "%s %s = %s;", c->acc, accn, grp[0]);
                    else
                        rd_line(s, "%s %s = %s.%s;", c->acc, accn, grp[0],
                                c->D->comp[i]);
                }
                at += g;
            }
            return;
        }
        for (int64_t ci = 0; ci < m; ci++) {
            rd_combo_fill(c, &accl, ci, vals);
            rd_combo_name(c, vbase, sizeof vbase, "accv", &accl, vals);
            rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            char sum[4096];
            et_sbuf sb;
            et_sbuf_fixed(&sb, sum, sizeof sum);
            for (int q = 0; q < nch; q++) {
                chunk_name(vname, sizeof vname, vbase, nch, st[q]);
                char cur[340];
                snprintf(cur, sizeof cur, "%s", vname);
                for (int64_t h = w[q] / 2; h >= 2; h /= 2) {
                    char nx[340];
                    snprintf(nx, sizeof nx, "%s_h%lld", vname, (long long)h);
                    rd_line(s, "%s%lld %s = %s.lo + %s.hi;", c->acc,
                            (long long)h, nx, cur, cur);
                    snprintf(cur, sizeof cur, "%s", nx);
                }
                if (w[q] == 1)
                    et_sbuf_printf(&sb, "%s%s", q ? " + " : "", cur);
                else
                    et_sbuf_printf(&sb, "%s(%s.s0 + %s.s1)", q ? " + " : "",
                                   cur, cur);
            }
            rd_line(s, "%s %s = %s;", c->acc, accn, sum);
        }
        return;
    }
    int64_t n = rd_plist_count(c, &ups);
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &ups, ci, vals);
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        int64_t v = vals[c->vpart];
        int q = 0;
        while (q + 1 < nch && st[q + 1] <= v)
            q++;
        vref r;
        chunk_ref(c, &r, "accv", &accl, vals, nch, st, w, q);
        if (r.width == 1)
            rd_line(s, "%s %s = %s;", c->acc, accn, r.name);
        else
            rd_line(s, "%s %s = %s.%s;", c->acc, accn, r.name,
                    c->D->comp[r.lane0 + v - st[q]]);
    }
}

/* Lanes v .. v+g-1 of the chunk r refers to: its variable itself when
 * they are all of it, `.s4` (the dialect's component) for one, `.s4567`
 * for several. */
static void lanes_name(const ctx *c, char *buf, size_t cap, const vref *r,
                       int64_t v, int64_t g)
{
    static const char hex[] = "0123456789abcdef";
    v += r->lane0;
    if (g == r->width) {
        snprintf(buf, cap, "%s", r->name);
    } else if (g == 1) {
        snprintf(buf, cap, "%s.%s", r->name, c->D->comp[v]);
    } else {
        char lanes[20];
        for (int64_t l = 0; l < g; l++)
            lanes[l] = hex[v + l];
        lanes[g] = '\0';
        snprintf(buf, cap, "%s.s%s", r->name, lanes);
    }
}

/* NTSTORE of one chunk of w lanes (r) at out_addr + off: in vectors of the
 * widest width the address is aligned to in every work-item (a
 * non-temporal vector store needs it), down to one store per lane; a
 * part of the chunk is named by its lanes (`.s4567`). */
static void emit_nt_chunk(ctx *c, const vref *r, int64_t w, const char *ptr,
                          int64_t off)
{
    char addr[600], val[400], st[1200];
    int64_t g = w == 1 ? 1 : rd_out_align(c, c->vpart, off, w);
    for (int64_t v = 0; v < w; v += g) {
        rd_addr_str(addr, sizeof addr, "out_addr", off + v);
        lanes_name(c, val, sizeof val, r, v, g);
        c->D->nt_store(st, sizeof st, c->acc, g, val, ptr, addr);
        rd_line(&c->s, "%s", st);
    }
}

/* One lane of the accumulators' block: its output element (offset from
 * out_addr in the output named by ptr) and where it is held. */
typedef struct {
    int64_t off, ci, lane;
    int ptr, q;
} nt_lane;

static int nt_lane_cmp(const void *a, const void *b)
{
    const nt_lane *x = a, *y = b;
    if (x->ptr != y->ptr)
        return x->ptr < y->ptr ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

#define NT_PTRS 64

/*
 * NTSTORE of the whole block a work-item writes, regrouped: where the
 * chunks' own aligned pieces are narrower than the block allows (a row
 * of 10 f32 stored as 8 + 2 lanes at a row pitch of 40 bytes: pieces of
 * 2 lanes), and the lanes of each output fill one run of consecutive
 * elements, the run is stored in vectors of G lanes (the widest power of
 * two the run's length and start alignment allow) gathered from the
 * accumulators. On x86 a non-temporal store narrower than 16 bytes is a
 * plain store or an integer one (movnti), and lines written that way
 * are written back piecemeal: the 10-f32 rows ran 20 to 50 times slower
 * with NTSTORE than without on PoCL. False (nothing emitted) where the
 * regrouped stores would not be wider.
 */
static bool emit_nt_flat(ctx *c, const plist *accl, int nch,
                         const int64_t *st, const int64_t *w)
{
    const et_kernel *k = c->k;
    int64_t maxw = k->e.acc_dtype == ET_F64 ? c->D->max_vec_f64
                                            : c->D->max_vec_f32;
    int64_t n = rd_plist_count(c, accl), lanes = 0, narrow = maxw;
    int64_t vals[MAXP] = {0};
    for (int q = 0; q < nch; q++)
        lanes += w[q] * n;
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, accl, ci, vals);
        int64_t off = rd_addr_off(c, -1, accl, vals);
        for (int q = 0; q < nch; q++) {
            int64_t g = w[q] == 1 ? 1 : rd_out_align(c, c->vpart, off + st[q],
                                                     w[q]);
            if (g < narrow)
                narrow = g;
        }
    }
    nt_lane *l = malloc((size_t)lanes * sizeof *l);
    char(*ptrs)[32] = malloc(NT_PTRS * sizeof *ptrs);
    if (!l || !ptrs) {
        free(l);
        free(ptrs);
        return false;
    }
    int nptr = 0;
    int64_t at = 0;
    bool ok = true;
    for (int64_t ci = 0; ci < n && ok; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, accl, ci, vals);
        int64_t off = rd_addr_off(c, -1, accl, vals);
        char ptr[32];
        rd_ptr_name(c, -1, accl, vals, ptr, sizeof ptr);
        int pi = 0;
        while (pi < nptr && strcmp(ptrs[pi], ptr) != 0)
            pi++;
        if (pi == nptr) {
            if (nptr == NT_PTRS) {
                ok = false;
                break;
            }
            snprintf(ptrs[nptr++], sizeof ptrs[0], "%s", ptr);
        }
        for (int q = 0; q < nch; q++)
            for (int64_t v = 0; v < w[q]; v++)
                l[at++] = (nt_lane){off + st[q] + v, ci, v, pi, q};
    }
    if (ok)
        qsort(l, (size_t)lanes, sizeof *l, nt_lane_cmp);
    /* every output's lanes one run; its vectors at least as wide as
     * the narrowest piece and wider than it in one output at least */
    int64_t gw[NT_PTRS];
    bool wider = false;
    for (int64_t a = 0; ok && a < lanes;) {
        int64_t b = a;
        while (b < lanes && l[b].ptr == l[a].ptr) {
            ok = ok && l[b].off == l[a].off + (b - a);
            b++;
        }
        int64_t g = maxw;
        while (g > 1 && ((b - a) % g != 0 ||
                         rd_out_align(c, -1, l[a].off, g) != g))
            g /= 2;
        ok = ok && g >= narrow;
        wider = wider || g > narrow;
        gw[l[a].ptr] = g;
        a = b;
    }
    if (ok && wider) {
        rd_line(&c->s, "// the block's lanes in vectors of consecutive "
                       "elements (NTSTORE)");
        char addr[600], list[8192], stl[9000];
        for (int64_t a = 0; a < lanes;) {
            int64_t g = gw[l[a].ptr];
            et_sbuf lb;
            et_sbuf_fixed(&lb, list, sizeof list);
            for (int64_t i = a; i < a + g; i++) {
                memset(vals, 0, sizeof vals);
                rd_combo_fill(c, accl, l[i].ci, vals);
                vref r;
                chunk_ref(c, &r, "accv", accl, vals, nch, st, w, l[i].q);
                char one[400];
                lanes_name(c, one, sizeof one, &r, l[i].lane, 1);
                et_sbuf_printf(&lb, "%s%s", i > a ? ", " : "", one);
            }
            rd_addr_str(addr, sizeof addr, "out_addr", l[a].off);
            c->D->nt_store(stl, sizeof stl, c->acc, g, list, ptrs[l[a].ptr],
                           addr);
            rd_line(&c->s, "%s", stl);
            a += g;
        }
    }
    free(l);
    free(ptrs);
    return ok && wider;
}

/* The lanes of the vector part hold the whole of the padded output axis
 * a (PADTO then UPCAST(a,0)), so the lanes past its size are known when
 * rendering: the stores stop there without a mask. */
static bool lanes_cover_padded(const ctx *c, int a)
{
    const et_kernel *k = c->k;
    if (a != k->part[c->vpart].axis || a == c->open_axis || k->ntstore)
        return false;
    for (int p = 0; p < k->n_parts; p++)
        if (p != c->vpart && k->part[p].axis == a && k->part[p].size > 1)
            return false;
    return true;
}

/* Mode 1 without GROUP: stores straight from the vector accumulators
 * when the output has the accumulator's dtype and no padding but the
 * lanes' own (lanes_cover_padded). */
bool rd_vstores_direct_ok(const ctx *c)
{
    const et_kernel *k = c->k;
    if (c->vmode != 1 || k->group_part >= 0 ||
        k->e.out.dtype != k->e.acc_dtype || et_kernel_has_split(k))
        return false;
    for (int a = 0; a < k->e.n_out; a++)
        if (rd_padded(c, a) && !lanes_cover_padded(c, a))
            return false;
    return true;
}

/* The first `valid` lanes of the chunk r refers to (fewer than its own) stored at
 * out_addr + off, in vectors of the largest powers of two that fit. */
static void emit_lanes_head(ctx *c, const vref *r, int64_t valid,
                            const char *ptr, int64_t off)
{
    char addr[600], val[400];
    for (int64_t v = 0; v < valid;) {
        int64_t g = 1;
        while (g * 2 <= valid - v)
            g *= 2;
        rd_addr_str(addr, sizeof addr, "out_addr", off + v);
        lanes_name(c, val, sizeof val, r, v, g);
        if (g == 1)
            rd_line(&c->s, "%s[%s] = %s;", ptr, addr, val);
        else
            rd_line(&c->s, "vstore%lld(%s, 0, %s + %s);", (long long)g, val,
                    ptr, addr);
        v += g;
    }
}

bool rd_emit_vstores_direct(ctx *c)
{
    if (!rd_vstores_direct_ok(c))
        return false;
    rd_out *s = &c->s;
    plist ups, accl;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    char base[512], addr[600], val[400];
    rd_addr_base(c, -1, base, sizeof base);
    rd_line(s, "%s out_addr = %s;", c->itype, base);
    if (c->k->ntstore && emit_nt_flat(c, &accl, nch, st, w))
        return true;
    int va = c->k->part[c->vpart].axis;
    int64_t real = rd_padded(c, va) ? c->k->e.idx[va].size : INT64_MAX;
    int64_t n = rd_plist_count(c, &accl);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        rd_combo_fill(c, &accl, ci, vals);
        int64_t off = rd_addr_off(c, -1, &accl, vals);
        char ptr[32];
        rd_ptr_name(c, -1, &accl, vals, ptr, sizeof ptr);
        for (int q = 0; q < nch; q++) {
            vref r;
            chunk_ref(c, &r, "accv", &accl, vals, nch, st, w, q);
            rd_addr_str(addr, sizeof addr, "out_addr", off + st[q]);
            if (st[q] + w[q] > real) {
                /* the lanes past the padded axis's size are not stored */
                emit_lanes_head(c, &r, real - st[q], ptr, off + st[q]);
                continue;
            }
            lanes_name(c, val, sizeof val, &r, 0, w[q]);
            if (c->k->ntstore)
                emit_nt_chunk(c, &r, w[q], ptr, off + st[q]);
            else if (w[q] == 1)
                rd_line(s, "%s[%s] = %s;", ptr, addr, val);
            else
                rd_line(s, "vstore%lld(%s, 0, %s + %s);", (long long)w[q],
                        val, ptr, addr);
        }
    }
    return true;
}

/* The multiply-adds of the innermost body. */
void rd_emit_fmas(ctx *c)
{
    if (c->vmode)
        emit_fmas_vector(c);
    else
        rd_emit_fmas_scalar(c);
}
