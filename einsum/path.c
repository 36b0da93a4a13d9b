/*
 * path.c - the op count of the cheapest way to evaluate an einsum.
 *
 * The loop nest that eintune generates multiplies all m operands at every
 * point of the iteration space I, so it performs |I|*((m-1)+s) operations
 * (s = 1 when an index is summed). A product of three or more operands can
 * be evaluated with fewer: contract two operands at a time into
 * intermediates, as NumPy's einsum_path and opt_einsum do, and products
 * that do not depend on an inner index are not formed again for each of
 * its values. The op count of an einsum is the smaller of the two
 * (docs/roofline.md), so measured and roofline GOps/s count the work the
 * problem needs, not the work one way of writing it does.
 *
 * Cost of one pairwise contraction of A and B into C (opt_einsum's
 * convention): the product of the sizes of every index of A or B, times 2
 * when an index of A or B is summed away in C (a multiply and an add) and
 * times 1 otherwise (a multiply). A single operand with an index that no
 * other operand nor the output holds is first summed over it: one add per
 * element. The cheapest order is found exactly over all subsets of
 * operands (dynamic programming, 3^m steps) for up to PATH_EXACT_MAX
 * operands, and greedily (cheapest pair first) beyond.
 *
 * Counts are accumulated in long double and clamped to INT64_MAX; every
 * function here is reentrant (no state outlives a call).
 */
#include "einsum/einsum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Subsets of operands are bit masks; index sets are bit sets over the
 * einsum's indices. */
#define PATH_EXACT_MAX 10
#define IDX_WORDS ((ET_MAX_INDICES + 63) / 64)

typedef struct idxset {
    uint64_t w[IDX_WORDS];
} idxset;

static void set_add(idxset *s, int i)
{
    s->w[i / 64] |= (uint64_t)1 << (i % 64);
}

static int set_has(const idxset *s, int i)
{
    return (s->w[i / 64] >> (i % 64)) & 1;
}

static idxset set_or(idxset a, idxset b)
{
    for (int k = 0; k < IDX_WORDS; k++)
        a.w[k] |= b.w[k];
    return a;
}

static idxset set_and(idxset a, idxset b)
{
    for (int k = 0; k < IDX_WORDS; k++)
        a.w[k] &= b.w[k];
    return a;
}

static int set_eq(const idxset *a, const idxset *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static long double set_size(const et_einsum *e, const idxset *s)
{
    long double n = 1;
    for (int i = 0; i < e->n_idx; i++)
        if (set_has(s, i))
            n *= (long double)e->idx[i].size;
    return n;
}

typedef struct path_ctx {
    const et_einsum *e;
    idxset op[ET_MAX_OPERANDS]; /* each operand's index set */
    idxset out;                 /* the output's */
} path_ctx;

/* The indices an intermediate holding the operands of `mask` keeps: those
 * it has that the output or an operand outside the mask still needs. */
static idxset kept(const path_ctx *c, uint32_t mask, const idxset *has)
{
    idxset need = c->out;
    for (int k = 0; k < c->e->n_ops; k++)
        if (!(mask & (1u << k)))
            need = set_or(need, c->op[k]);
    return set_and(*has, need);
}

/* Cost of contracting two intermediates with index sets a and b into one
 * that keeps `keep`. */
static long double pair_cost(const et_einsum *e, const idxset *a,
                             const idxset *b, const idxset *keep)
{
    idxset u = set_or(*a, *b);
    return set_size(e, &u) * (set_eq(&u, keep) ? 1 : 2);
}

/* Cost of summing operand k over the indices only it holds (0 if none). */
static long double single_cost(const path_ctx *c, int k, idxset *keep)
{
    *keep = kept(c, 1u << k, &c->op[k]);
    if (set_eq(keep, &c->op[k]))
        return 0;
    return set_size(c->e, &c->op[k]);
}

static long double exact(const path_ctx *c)
{
    int m = c->e->n_ops;
    uint32_t full = (1u << m) - 1;
    long double *cost = malloc(sizeof(long double) << m);
    idxset *has = malloc(sizeof(idxset) << m);
    if (!cost || !has) {
        free(cost);
        free(has);
        return -1;
    }
    for (uint32_t s = 1; s <= full; s++) {
        if (!(s & (s - 1))) { /* one operand */
            int k = __builtin_ctz(s);
            cost[s] = single_cost(c, k, &has[s]);
            continue;
        }
        idxset all = {{0}};
        for (int k = 0; k < m; k++)
            if (s & (1u << k))
                all = set_or(all, c->op[k]);
        has[s] = kept(c, s, &all);
        long double best = -1;
        /* every split into a and s^a with a holding s's lowest operand, so
         * each unordered pair is seen once */
        uint32_t low = s & -s;
        for (uint32_t a = (s - 1) & s; a; a = (a - 1) & s) {
            if (!(a & low))
                continue;
            uint32_t b = s ^ a;
            long double v = cost[a] + cost[b] +
                            pair_cost(c->e, &has[a], &has[b], &has[s]);
            if (best < 0 || v < best)
                best = v;
        }
        cost[s] = best;
    }
    long double r = cost[full];
    free(cost);
    free(has);
    return r;
}

/* Greedy order for many operands: contract, among the pairs that share an
 * index, the one whose result is smallest against its inputs (result
 * elements minus both inputs' elements, as opt_einsum's greedy order
 * does); pairs that share none (outer products) only when no other pair
 * is left, smallest first. */
static long double greedy(const path_ctx *c)
{
    int m = c->e->n_ops;
    uint32_t grp[ET_MAX_OPERANDS]; /* operands merged into each slot */
    idxset has[ET_MAX_OPERANDS];
    long double total = 0;
    for (int k = 0; k < m; k++) {
        grp[k] = (uint32_t)1 << k;
        total += single_cost(c, k, &has[k]);
    }
    int n = m;
    while (n > 1) {
        int bi = -1, bj = -1, bshare = 0;
        long double bkey = 0;
        idxset bkeep = {{0}};
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                idxset both = set_and(has[i], has[j]);
                idxset none = {{0}};
                int share = !set_eq(&both, &none);
                idxset u = set_or(has[i], has[j]);
                idxset keep = kept(c, grp[i] | grp[j], &u);
                long double key = share ? set_size(c->e, &keep) -
                                              set_size(c->e, &has[i]) -
                                              set_size(c->e, &has[j])
                                        : set_size(c->e, &keep);
                if (bi < 0 || share > bshare ||
                    (share == bshare && key < bkey)) {
                    bi = i;
                    bj = j;
                    bshare = share;
                    bkey = key;
                    bkeep = keep;
                }
            }
        total += pair_cost(c->e, &has[bi], &has[bj], &bkeep);
        grp[bi] |= grp[bj];
        has[bi] = bkeep;
        grp[bj] = grp[n - 1];
        has[bj] = has[n - 1];
        n--;
    }
    return total;
}

static int64_t clamp_ops(long double v)
{
    if (v < 0)
        return 0;
    if (v >= (long double)INT64_MAX)
        return INT64_MAX;
    return (int64_t)v;
}

int64_t et_einsum_ops_direct(const et_einsum *e)
{
    long double per = (long double)e->n_ops - 1 + (e->n_idx > e->n_out);
    if (per < 0)
        per = 0;
    return clamp_ops((long double)et_einsum_iter_size(e) * per);
}

int64_t et_einsum_ops_path(const et_einsum *e)
{
    if (e->n_ops < 1)
        return 0;
    path_ctx c;
    memset(&c, 0, sizeof c);
    c.e = e;
    for (int k = 0; k < e->n_ops; k++)
        for (int r = 0; r < e->op[k].rank; r++)
            set_add(&c.op[k], e->op[k].idx[r]);
    for (int r = 0; r < e->out.rank; r++)
        set_add(&c.out, e->out.idx[r]);
    long double v = e->n_ops <= PATH_EXACT_MAX ? exact(&c) : -1;
    if (v < 0) /* too many operands, or no memory for the table */
        v = greedy(&c);
    return clamp_ops(v);
}

void et_einsum_ops(const et_einsum *e, int64_t ops[ET_DTYPE_COUNT])
{
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        ops[t] = 0;
    int64_t direct = et_einsum_ops_direct(e);
    int64_t path = et_einsum_ops_path(e);
    ops[e->acc_dtype] = path < direct ? path : direct;
}
