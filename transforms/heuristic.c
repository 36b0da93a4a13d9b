/*
 * heuristic.c - the opts a kernel's structure suggests before any search:
 * a register block along the innermost output axes, FACTOR, and STAGE with
 * a loop over the batch axis; on a CPU a reduction's form and work-groups
 * of blocks, on CUDA a thread block (the rules are in heuristic.h).
 */
#include "transforms/heuristic.h"
#include "transforms/kernel_impl.h"

#include <stdlib.h>
#include <string.h>

/* Without vectors (the generic profile: a preferred width of 1): the
 * accumulator bytes a register block may take; on CUDA, a thread's. */
#define BLOCK_BYTES 1024
#define BLOCK_BYTES_CUDA 256
/* A CPU work-group's blocks of the batch axis at most (suggest); of
 * loops over it, where the block has no room for it. */
#define CPU_GROUP 8
#define LOOP_GROUP 4
/* The vectors along the vector axis of a CPU's wider block (see
 * et_kernel_heuristics). */
#define WIDE_VECTORS 4
/* Registers a block leaves free for the compiler's own temporaries. */
#define SPARE_REGS 4

/* The largest divisor of s in [2, lim]; 1 when there is none. */
static int64_t divisor_up_to(int64_t s, int64_t lim)
{
    for (int64_t d = lim < s ? lim : s; d >= 2; d--)
        if (s % d == 0)
            return d;
    return 1;
}

/* Vector registers n values of a row take, as the renderer splits them:
 * whole vectors of w lanes, the rest in power-of-two pieces. */
static int64_t row_regs(int64_t n, int64_t w)
{
    int64_t r = n / w;
    for (int64_t t = n % w; t; t &= t - 1)
        r++;
    return r;
}

/* An output axis a block may take: not open, not a batched kernel's row
 * axis. */
static bool block_axis(const et_einsum *e, int a)
{
    return !e->idx[a].open && !(e->n_rows && a == e->row_axis);
}

/* Applies o to k when the rules accept it; true when applied. */
static bool try_opt(et_kernel *k, et_opt_kind kind, const char *axis,
                    int64_t amt)
{
    et_opt o = et_opt_make(kind, axis ? axis : "", amt);
    return et_kernel_apply_opt(k, &o, NULL, 0) == ET_OK;
}

/* The suggestion: the opts k has beyond its first n0. */
static void take(const et_kernel *k, int n0, et_heuristic *h)
{
    h->n_opts = 0;
    for (int i = n0; i < k->n_opts && h->n_opts < ET_HEURISTIC_MAX_OPTS; i++)
        h->opt[h->n_opts++] = k->opts[i];
}

/*
 * The register model of k's target for its accumulator dtype: with
 * vectors of w lanes (preferred width > 1), *regs vector registers for
 * the accumulators, one row of the vector operand and a broadcast (32 for
 * 64-byte vectors, 16 for narrower ones, SPARE_REGS left free); without,
 * w = 1 and *regs the values the accumulators may take.
 */
static int64_t registers(const et_kernel *k, int64_t *regs)
{
    et_dtype dt = k->e.acc_dtype;
    int64_t size = (int64_t)et_dtype_size(dt);
    int64_t w = k->target.preferred_vector_width[dt];
    if (w > 16)
        w = 16;
    if (w >= 2 && (w & (w - 1)) == 0) {
        *regs = (w * size >= 64 ? 32 : 16) - SPARE_REGS;
        return w;
    }
    *regs = (k->target.backend == ET_BACKEND_CUDA ? BLOCK_BYTES_CUDA
                                                  : BLOCK_BYTES) / size;
    return 1;
}

/* Sets of accumulators a block of vector registers keeps live: two
 * where the kernel takes FACTOR (the partial sums over the inner summed
 * axis and the totals, both a block's worth), else one. The DG operator
 * `xre,rij,xej->xei` f64 on AVX-512 with FACTOR: i and e in the block,
 * 0.99 ms; with x by 2 as well (48 vector registers of accumulators),
 * 1.60 ms (medians of 5 alternating runs). */
static int64_t acc_sets(const et_kernel *k, int64_t w)
{
    if (w < 2)
        return 1;
    et_kernel *f = et_kernel_clone(k);
    bool factor = f && try_opt(f, ET_OPT_FACTOR, NULL, 0);
    et_kernel_free(f);
    return factor ? 2 : 1;
}

/* UPCAST of axis `name` by the largest divisor of s up to lim the rules
 * accept (the product of UPCAST amounts is bounded); 1 when none. */
static int64_t upcast_divisor(et_kernel *k, const char *name, int64_t s,
                              int64_t lim)
{
    for (int64_t d = divisor_up_to(s, lim); d >= 2;
         d = divisor_up_to(s, d - 1))
        if (try_opt(k, ET_OPT_UPCAST, name, d))
            return d;
    return 1;
}

/*
 * The register block: whole or divided UPCASTs of the global axes but the
 * batch axis, innermost first; with_batch: then the batch axis in what is
 * left. The first axis upcast holds the vectors: it is padded to a
 * multiple of the vector width when that adds at most an eighth and the
 * whole axis then fits. With FACTOR each row counts twice (acc_sets). False when with_batch and the
 * batch axis got no UPCAST; *left: the rows the block still had room for
 * (before the batch axis).
 */
static bool register_block(et_kernel *k, int batch, bool with_batch,
                           bool rows_first, bool wide, int64_t *left)
{
    const et_einsum *e = &k->e;
    int64_t regs;
    int64_t w = registers(k, &regs);
    int64_t sets = acc_sets(k, w);
    /* rows: how many more values (w = 1) or rows of vectors the block
     * may still take; row: registers of one row, 0 before the first */
    int64_t rows = regs, row = w == 1 ? 1 : 0, taken = 1;
    for (int p = 0; p < k->n_parts; p++)
        if (k->part[p].kind == ET_PART_UPCAST && k->part[p].size > 0) {
            if (row == 0) {
                row = row_regs(k->part[p].size, w);
                rows = (regs - row - 1) / (row * sets);
            } else {
                rows /= k->part[p].size;
                taken *= k->part[p].size;
            }
        }
    /* innermost first; a batched kernel's row axis (index 0) right after
     * the first, so that each work-item computes every row and a shared
     * operand's value serves them all */
    int order[ET_MAX_INDICES], n_order = 0;
    bool out_rows = et_einsum_op_rowed(e, -1);
    for (int a = e->n_out - 1; a >= 0; a--) {
        if (out_rows && a == 0)
            continue;
        order[n_order++] = a;
        if (out_rows && rows_first && n_order == 1)
            order[n_order++] = 0;
    }
    for (int oi = 0; oi < n_order && rows >= 2; oi++) {
        int a = order[oi];
        if (a == batch || e->idx[a].open)
            continue;
        const et_part *outer = &k->part[k->outer[a]];
        if (outer->kind != ET_PART_GLOBAL || outer->size < 2)
            continue;
        int64_t s = outer->size;
        const char *name = e->idx[a].name;
        if (row == 0) {
            /* the vector axis: whole (padded) when a row, its operand row
             * and a broadcast fit, else its largest divisor that does */
            int64_t padded = (s + w - 1) / w * w;
            bool pad = padded != s && 8 * (padded - s) <= padded &&
                       (sets + 1) * row_regs(padded, w) + 1 <= regs;
            int64_t n = 0;
            if (pad && try_opt(k, ET_OPT_PADTO, name, w)) {
                if (try_opt(k, ET_OPT_UPCAST, name, 0))
                    n = padded;
            } else if ((sets + 1) * row_regs(s, w) + 1 <= regs &&
                       try_opt(k, ET_OPT_UPCAST, name, 0)) {
                n = s;
            }
            /* wide: as many vectors v (up to WIDE_VECTORS) as leave
             * room for at least v rows */
            int64_t cap = 16;
            for (int64_t v = WIDE_VECTORS; wide && w > 1 && v >= 2; v--)
                if ((regs - v - 1) / (v * sets) >= v) {
                    cap = v * w;
                    break;
                }
            for (int64_t d = s < cap ? s : cap; n == 0 && d >= 2; d--)
                if (s % d == 0 && (sets + 1) * row_regs(d, w) + 1 <= regs &&
                    try_opt(k, ET_OPT_UPCAST, name, d))
                    n = d;
            if (n == 0)
                continue;
            row = row_regs(n, w);
            rows = (regs - row - 1) / (row * sets);
            continue;
        }
        if (s <= rows && try_opt(k, ET_OPT_UPCAST, name, 0)) {
            rows /= s;
            taken *= s;
            continue;
        }
        int64_t d = upcast_divisor(k, name, s, rows < 16 ? rows : 16);
        rows /= d;
        taken *= d;
    }
    *left = rows;
    if (!with_batch)
        return true;
    /* with 16 vector registers (AVX2) the batch axis' rows may take the
     * spare ones too: case 1 of the bench (`xik,kj->xij`, x=4096,
     * 35^3) f64 on a Zen 3 EPYC, j by 7 (3 registers a row): x by 4,
     * all 16 registers, 6.2 to 9.4 ms, against x by 2 in the 12, 13.0
     * to 13.6 ms (eintune run --time, separate runs). Not a reduction
     * of one operand, whose rows only add strided streams (case 4a
     * `xij->xi` f64: i by 16, 10.8 ms; with x by 2, 15.6 ms) */
    if (w >= 2 && regs + SPARE_REGS == 16 && row > 0 && e->n_ops >= 2)
        rows = (16 - row - 1) / (row * sets) / taken;
    /* an open batch axis too, by the divisor its tune-at size would get:
     * the open kernel then starts where the concrete one does (case 1
     * f64 with x open on a Zen 3 EPYC: the 30 s tune kept `UPCAST(j,7)
     * UPCAST(x,3)` without this seed, 10.86 ms against 7.97 ms for the
     * concrete `UPCAST(j,7) UPCAST(x,4) UNROLL(k,5)`) */
    if (batch < 0 || rows < 2)
        return false;
    const et_part *outer = &k->part[k->outer[batch]];
    return outer->kind == ET_PART_GLOBAL &&
           upcast_divisor(k, e->idx[batch].name, outer->size,
                          rows < 16 ? rows : 16) >= 2;
}

/* The suggestions of one register block (with or without the batch axis
 * in it): the block and FACTOR, then with STAGE and the loop; on a CPU,
 * where the block has no room left for the batch axis, that loop in a
 * work-group of neighbouring blocks too. */
static int suggest(const et_kernel *k, int batch, bool with_batch,
                   bool rows_first, bool wide, et_heuristic *out)
{
    const et_einsum *e = &k->e;
    et_kernel *w = et_kernel_clone(k);
    if (!w)
        return 0;
    int n = 0;
    int64_t room = 0;
    if (!register_block(w, batch, with_batch, rows_first, wide, &room)) {
        et_kernel_free(w);
        return 0;
    }
    try_opt(w, ET_OPT_FACTOR, NULL, 0);
    take(w, k->n_opts, &out[n]);
    bool blocked = out[n].n_opts > 0;
    if (blocked)
        n++;
    /* a CPU's block with the batch axis in it, the other output axes that
     * the block left unsplit iterated in each work-item (LOOP whole):
     * fewer, longer work-items, the vector operand's rows still in the
     * L1 from one value to the next (case 1 f64, x=4096 and 35^3, the
     * Zen 4 EPYC: `LOOP(i,0)` after the block 1.055x as fast, paired
     * medians of 30 alternating turns) */
    if (with_batch && blocked && k->target.backend != ET_BACKEND_CUDA) {
        et_kernel *l = et_kernel_clone(w);
        bool looped = false;
        for (int a = 0; l && a < e->n_out; a++) {
            const et_part *outer = &l->part[l->outer[a]];
            if (a != batch && block_axis(e, a) &&
                outer->kind == ET_PART_GLOBAL && outer->size >= 2 &&
                outer->size == e->idx[a].size)
                looped = try_opt(l, ET_OPT_LOOP, e->idx[a].name, 0) ||
                         looped;
        }
        if (looped)
            take(l, k->n_opts, &out[n++]);
        et_kernel_free(l);
    }
    /* a CPU's work-group (not CUDA, whose blocks are suggest_cuda_block's):
     * the block with the batch axis in it, and neighbouring blocks of the
     * batch axis side by side in one work-group, LOCAL by the largest
     * power of two up to CPU_GROUP that divides what the block leaves */
    if (with_batch && k->target.backend != ET_BACKEND_CUDA) {
        et_kernel *g = et_kernel_clone(w);
        int64_t left = g ? g->part[g->outer[batch]].size : 0;
        int64_t d = CPU_GROUP;
        while (d >= 2 && left % d != 0)
            d /= 2;
        if (g && d >= 2 && g->part[g->outer[batch]].kind == ET_PART_GLOBAL &&
            try_opt(g, ET_OPT_LOCAL, e->idx[batch].name, d)) {
            take(g, k->n_opts, &out[n]);
            n++;
        }
        et_kernel_free(g);
    }
    /* the loop: the largest divisor up to 64 of what the block leaves of
     * the batch axis */
    int64_t n_loop = batch >= 0 ? divisor_up_to(
                                      w->part[w->outer[batch]].size, 64)
                                : 1;
    if (n_loop >= 2 && try_opt(w, ET_OPT_STAGE, NULL, 0) &&
        try_opt(w, ET_OPT_LOOP, e->idx[batch].name, n_loop)) {
        take(w, k->n_opts, &out[n]);
        n++;
        /* no room for the batch axis in the block: neighbouring loops
         * in a work-group instead (the DG operator f64 on AVX-512, i and
         * e in the block, FACTOR STAGE LOOP(x,64): 1.18 ms alone, 0.86
         * to 0.96 with LOCAL(x,8), 0.78 to 0.87 with LOCAL(x,4), medians
         * of 4-5 alternating runs in three sets) */
        int64_t rest = w->part[w->outer[batch]].size, d = LOOP_GROUP;
        while (d >= 2 && rest % d != 0)
            d /= 2;
        if (!with_batch && room < 2 &&
            k->target.backend != ET_BACKEND_CUDA && d >= 2 &&
            w->part[w->outer[batch]].kind == ET_PART_GLOBAL &&
            try_opt(w, ET_OPT_LOCAL, e->idx[batch].name, d)) {
            take(w, k->n_opts, &out[n]);
            n++;
        }
    }
    et_kernel_free(w);
    return n;
}

/*
 * A GPU's thread block (CUDA), for a kernel whose innermost output axis
 * is the innermost (contiguous) dimension of every large input that has
 * it, so that a warp's neighbours along it load and store neighbouring
 * elements: LOCAL on the
 * output axes, innermost first, the first whole when it has at most 64
 * values, else by its largest divisor up to 32 (a warp), the next ones
 * whole when they fit what is left of CUDA_BLOCK threads, else by their
 * largest divisor that does, until the block has CUDA_BLOCK_MIN threads.
 * Then a register tile: what is left of the first two of those axes
 * upcast by its largest divisor up to 4; when neither has a part left,
 * the outermost output axis by up to 4 (f64) or 8 (f32); FACTOR when
 * the kernel accepts it. The second
 * suggestion adds a shared-memory tile per chunk of the largest summed
 * axis: PREFETCH of every operand that has it, in chunks of its largest
 * divisor up to 16 (the rules refuse a tile past the shared memory).
 * Nothing when the block stays under a warp.
 */
#define CUDA_BLOCK 256
#define CUDA_BLOCK_MIN 128
#define CUDA_CHUNK 16

/* Do a warp's neighbours along axis a read neighbouring elements: is a
 * the innermost dimension of every input that has it, but of small ones
 * (an eighth of the largest input's elements at most, read from the
 * caches)? */
static bool coalesced_along(const et_einsum *e, int a)
{
    int64_t most = 0;
    for (int op = 0; op < e->n_ops; op++)
        if (et_einsum_operand_elems(e, op) > most)
            most = et_einsum_operand_elems(e, op);
    for (int op = 0; op < e->n_ops; op++) {
        const et_operand *o = &e->op[op];
        for (int q = 0; q + 1 < o->rank; q++)
            if (o->idx[q] == a && et_einsum_operand_elems(e, op) > most / 8)
                return false;
    }
    return true;
}

/* UPCAST of axis a's global part by its largest divisor up to cap. */
static bool upcast_up_to(et_kernel *w, int a, int64_t cap)
{
    const et_part *outer = &w->part[w->outer[a]];
    if (outer->kind != ET_PART_GLOBAL || outer->size < 2)
        return false;
    int64_t d = divisor_up_to(outer->size, cap);
    return d >= 2 && try_opt(w, ET_OPT_UPCAST, w->e.idx[a].name, d);
}

static int suggest_cuda_block(const et_kernel *k, et_heuristic *out)
{
    const et_einsum *e = &k->e;
    int inner = -1;
    for (int a = e->n_out - 1; a >= 0 && inner < 0; a--)
        if (block_axis(e, a))
            inner = a;
    if (inner < 0 || !coalesced_along(e, inner))
        return 0;
    et_kernel *w = et_kernel_clone(k);
    if (!w)
        return 0;
    int64_t threads = 1;
    int blocked[2], n_blocked = 0;
    for (int a = inner; a >= 0 && threads < CUDA_BLOCK_MIN; a--) {
        const et_part *outer = &w->part[w->outer[a]];
        if (!block_axis(e, a) || outer->kind != ET_PART_GLOBAL ||
            outer->size < 2)
            continue;
        int64_t room = threads == 1 ? 64 : CUDA_BLOCK / threads;
        int64_t d = outer->size <= room
                        ? outer->size
                        : divisor_up_to(outer->size,
                                        threads == 1 ? 32 : room);
        if (d >= 2 && try_opt(w, ET_OPT_LOCAL, e->idx[a].name, d)) {
            threads *= d;
            if (n_blocked < 2)
                blocked[n_blocked++] = a;
        }
    }
    int n = 0;
    if (threads >= 32) {
        bool tile = false;
        for (int b = 0; b < n_blocked; b++)
            tile = upcast_up_to(w, blocked[b], 4) || tile;
        int64_t cap = et_dtype_size(e->acc_dtype) >= 8 ? 4 : 8;
        for (int a = 0; a < e->n_out && !tile; a++)
            tile = block_axis(e, a) && upcast_up_to(w, a, cap);
        try_opt(w, ET_OPT_FACTOR, NULL, 0);
        take(w, k->n_opts, &out[n++]);
        /* the largest summed axis, tiled in chunks */
        int r = -1;
        for (int a = e->n_out; a < e->n_idx; a++)
            if (!(e->n_rows && a == e->row_axis) &&
                (r < 0 || e->idx[a].size > e->idx[r].size))
                r = a;
        int64_t c = r >= 0 ? divisor_up_to(e->idx[r].size, CUDA_CHUNK) : 1;
        bool tiled = false;
        for (int op = 0; op < e->n_ops && c >= 2; op++) {
            bool has = false;
            for (int q = 0; q < e->op[op].rank; q++)
                has = has || e->op[op].idx[q] == r;
            if (!has)
                continue;
            et_opt o = et_opt_make(ET_OPT_PREFETCH, e->idx[r].name, c);
            o.operand = op;
            tiled = et_kernel_apply_opt(w, &o, NULL, 0) == ET_OK || tiled;
        }
        if (tiled)
            take(w, k->n_opts, &out[n++]);
    }
    et_kernel_free(w);
    return n;
}

/*
 * A CPU's reduction (not CUDA): when the innermost output axis is strided
 * in a large input (or there is no output axis) and the largest input's
 * innermost dimension is a summed axis, the register block along the
 * output axes would load with a stride; a work-item instead runs along
 * the contiguous summed axis, UNROLL by its largest divisor up to
 * CPU_UNROLL, and upcasts the batch axis (else the outermost output axis)
 * by its largest divisor up to CPU_ROWS; without output axes, SPLIT of
 * the largest other summed axis by its largest divisor up to CPU_SPLIT
 * spreads the sum over work-groups.
 */
#define CPU_UNROLL 8
#define CPU_ROWS 4
#define CPU_SPLIT 64

static int suggest_cpu_reduction(const et_kernel *k, int batch,
                                 et_heuristic *out)
{
    const et_einsum *e = &k->e;
    int inner = -1;
    for (int a = e->n_out - 1; a >= 0 && inner < 0; a--)
        if (block_axis(e, a))
            inner = a;
    if (inner >= 0 && coalesced_along(e, inner))
        return 0;
    int big = -1;
    for (int op = 0; op < e->n_ops; op++)
        if (e->op[op].rank > 0 &&
            (big < 0 || et_einsum_operand_elems(e, op) >
                            et_einsum_operand_elems(e, big)))
            big = op;
    if (big < 0)
        return 0;
    int r = e->op[big].idx[e->op[big].rank - 1];
    if (r < e->n_out || (e->n_rows && r == e->row_axis))
        return 0;
    et_kernel *w = et_kernel_clone(k);
    if (!w)
        return 0;
    int64_t d = divisor_up_to(e->idx[r].size, CPU_UNROLL);
    bool any = d >= 2 && try_opt(w, ET_OPT_UNROLL, e->idx[r].name, d);
    if (inner >= 0) {
        int a = batch >= 0 ? batch : -1;
        for (int b = 0; b < e->n_out && a < 0; b++)
            if (block_axis(e, b))
                a = b;
        any = (a >= 0 && upcast_up_to(w, a, CPU_ROWS)) || any;
    } else {
        int s = -1;
        for (int b = e->n_out; b < e->n_idx; b++)
            if (b != r && !(e->n_rows && b == e->row_axis) &&
                (s < 0 || e->idx[b].size > e->idx[s].size))
                s = b;
        int64_t n = s >= 0 ? divisor_up_to(e->idx[s].size, CPU_SPLIT) : 1;
        any = (n >= 2 && try_opt(w, ET_OPT_SPLIT, e->idx[s].name, n)) || any;
    }
    int n = 0;
    if (any) {
        take(w, k->n_opts, out);
        n = out->n_opts > 0;
    }
    et_kernel_free(w);
    return n;
}

/*
 * A CPU's panel (with vectors; not CUDA): a contraction of two operands
 * over one summed axis s, after the register block blk (vectors along v,
 * rows along r). LOCAL(r, the largest power of two up to CPU_PANEL_ROWS
 * dividing what the block leaves of r, CPU_PANEL_MIN_ROWS at least) puts
 * that many blocks of rows in a work-group, and PREFETCH of the operand
 * that has v and s but not r copies a chunk of s, the largest divisor of
 * s that fits CPU_PANEL_BYTES and leaves two chunks at least: the
 * work-items of a group run one after
 * the other on a core, each reading the chunk from L1 as a packed panel,
 * where the operand's own rows, a power-of-two stride apart, would share
 * a few cache sets. Case 2 f64 on an Intel AVX-512 host (PoCL):
 * UPCAST(j,16) UPCAST(i,8) LOCAL(i,16) PREFETCH(1,k,128) 20.5-24 ms
 * against 36-40 ms for the best blocks without it.
 */
#define CPU_PANEL_ROWS 16
#define CPU_PANEL_MIN_ROWS 4
#define CPU_PANEL_BYTES 16384
#define CPU_PANEL_MIN_CHUNK 8

static int suggest_cpu_panel(const et_kernel *k, const et_heuristic *blk,
                             et_heuristic *out)
{
    const et_einsum *e = &k->e;
    int s = e->n_out;
    if (e->n_ops != 2 || e->n_idx != s + 1 || e->n_rows)
        return 0;
    et_kernel *w = et_kernel_clone(k);
    if (!w)
        return 0;
    int n = 0;
    if (et_kernel_apply_opts(w, blk->opt, blk->n_opts, NULL, 0) != ET_OK)
        goto done;
    /* the block's first UPCAST is the vector axis', the next on another
     * axis the rows' */
    int v = -1, r = -1;
    for (int i = 0; i < blk->n_opts && r < 0; i++) {
        if (blk->opt[i].kind != ET_OPT_UPCAST)
            continue;
        int a = et_einsum_index_find(e, blk->opt[i].axis.name);
        if (a < 0 || a >= s)
            continue;
        if (v < 0)
            v = a;
        else if (a != v)
            r = a;
    }
    if (r < 0)
        goto done;
    int b = -1;
    for (int op = 0; op < e->n_ops; op++)
        if (et_kernel_op_uses(k, op, s) && et_kernel_op_uses(k, op, v) &&
            !et_kernel_op_uses(k, op, r))
            b = op;
    if (b < 0)
        goto done;
    int64_t width = 1;
    for (int p = 0; p < w->n_parts; p++)
        if (w->part[p].kind == ET_PART_UPCAST && w->part[p].axis == v)
            width *= w->part[p].size;
    int64_t rows = CPU_PANEL_ROWS, left = w->part[w->outer[r]].size;
    while (rows >= 2 && left % rows != 0)
        rows /= 2;
    int64_t per_k = width * (int64_t)et_dtype_size(e->acc_dtype);
    int64_t lim = CPU_PANEL_BYTES / per_k;
    if (lim > e->idx[s].size / 2)
        lim = e->idx[s].size / 2;
    int64_t chunk = divisor_up_to(e->idx[s].size, lim);
    if (rows < CPU_PANEL_MIN_ROWS || chunk < CPU_PANEL_MIN_CHUNK ||
        w->part[w->outer[r]].kind != ET_PART_GLOBAL ||
        !try_opt(w, ET_OPT_LOCAL, e->idx[r].name, rows))
        goto done;
    et_opt pf = et_opt_make(ET_OPT_PREFETCH, e->idx[s].name, chunk);
    pf.operand = b;
    if (et_kernel_apply_opt(w, &pf, NULL, 0) != ET_OK)
        goto done;
    take(w, k->n_opts, out);
    n = out->n_opts > 0;
done:
    et_kernel_free(w);
    return n;
}

/* Every rule's suggestions, in order, into out (room for ALL_MAX: each
 * rule writes a bounded number, the sum of those bounds is below it). */
#define ALL_MAX 32
static int heuristics_all(const et_kernel *k, et_heuristic *out)
{
    const et_einsum *e = &k->e;
    if (e->n_out == 0)
        return k->target.backend == ET_BACKEND_CUDA
                   ? 0
                   : suggest_cpu_reduction(k, -1, out);
    /* the batch axis: the outermost, when no other global axis is larger
     * (after a batched kernel's row axis) */
    bool out_rows = et_einsum_op_rowed(e, -1);
    int first = out_rows ? 1 : 0;
    int batch = e->n_out - first >= 2 ? first : -1;
    for (int a = first + 1; a < e->n_out && batch >= 0; a++)
        if (e->idx[a].size > e->idx[first].size)
            batch = -1;
    int n = 0;
    if (k->target.backend == ET_BACKEND_CUDA)
        n += suggest_cuda_block(k, out);
    else
        n += suggest_cpu_reduction(k, batch, out);
    /* the block with the batch axis in it first: where it has room it
     * reuses each load over more outputs (case 1 f64, x=4096 and 35^3 on
     * AVX-512: 4.18 ms, the search's best, against 6.73 ms for the block
     * without it), and a tune then reaches it with its first seed, not
     * its third */
    n += suggest(k, batch, true, false, false, out + n);
    int n0 = n, wide_at = -1;
    n += suggest(k, batch, false, false, false, out + n);
    /* a CPU's wider block, when the vector axis is not whole: up to
     * WIDE_VECTORS vectors along it and fewer rows, fewer loads per FMA
     * than one vector by many rows (case 2 f32 on an Intel AVX-512 host:
     * UPCAST(j,16) UPCAST(i,16) 18.3 ms, j by 64 and x by 4 13.7 ms) */
    if (k->target.backend != ET_BACKEND_CUDA && n > n0) {
        et_heuristic wd[4]; /* suggest's block, loops */
        char a[1024], b[1024];
        int ups = 0;
        if (suggest(k, batch, false, false, true, wd) > 0)
            for (int i = 0; i < wd[0].n_opts; i++)
                ups += wd[0].opt[i].kind == ET_OPT_UPCAST;
        /* a block of vectors by rows: both axes upcast */
        if (ups >= 2) {
            et_opts_format(wd[0].opt, wd[0].n_opts, a, sizeof a);
            et_opts_format(out[n0].opt, out[n0].n_opts, b, sizeof b);
            if (strcmp(a, b) != 0) {
                wide_at = n;
                out[n++] = wd[0];
            }
        }
    }
    /* the panel after the block, or after the wide block where the block
     * makes none: with 16 vector registers (AVX2) the block of 4 f64
     * vectors has no room for rows (case 2 f64 on a Zen 3 EPYC,
     * pthread-haswell: UPCAST(j,8) UPCAST(i,4) 44-48 ms, with LOCAL(i,16)
     * PREFETCH(1,k,256) 33-34 ms, medians of 3 alternating runs) */
    if (k->target.backend != ET_BACKEND_CUDA && n > n0 &&
        k->target.preferred_vector_width[e->acc_dtype] > 1) {
        int panels = suggest_cpu_panel(k, &out[n0], out + n);
        if (panels == 0 && wide_at >= 0)
            panels = suggest_cpu_panel(k, &out[wide_at], out + n);
        n += panels;
    }
    if (!out_rows)
        return n;
    /* a batched kernel: the same with every row in each work-item (rows
     * summed: every work-item has every row already) */
    n += suggest(k, batch, true, true, false, out + n);
    return n + suggest(k, batch, false, true, false, out + n);
}

int et_kernel_heuristics(const et_kernel *k, et_heuristic *out)
{
    et_heuristic *all = malloc(ALL_MAX * sizeof *all);
    if (!all)
        return 0;
    int n_all = heuristics_all(k, all), n = 0;
    /* the distinct ones, the first ET_HEURISTIC_MAX */
    for (int i = 0; i < n_all && n < ET_HEURISTIC_MAX; i++) {
        char a[1024], b[1024];
        et_opts_format(all[i].opt, all[i].n_opts, a, sizeof a);
        bool seen = all[i].n_opts == 0;
        for (int j = 0; j < n && !seen; j++) {
            et_opts_format(out[j].opt, out[j].n_opts, b, sizeof b);
            seen = strcmp(a, b) == 0;
        }
        if (!seen)
            out[n++] = all[i];
    }
    free(all);
    return n;
}
