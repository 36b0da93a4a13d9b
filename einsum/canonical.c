/*
 * canonical.c - a text equal for einsums that differ only by index names
 * and operand order.
 *
 * Output indices are named by their output position (a, b, c, ...); that
 * naming is forced. Summed indices are named in order of first appearance
 * once the operands are put in some order, and the canonical order is the
 * one whose sequence of operand tokens is lexicographically smallest. A
 * token says everything about one operand under the current naming: rank,
 * dtype, and per dimension the index name, its size and whether the
 * operand broadcasts there. The smallest sequence is found greedily with
 * ties explored (depth-first, pruning any branch whose prefix is already
 * larger than the best found), and operands that are identical copies of
 * each other, or whose not-yet-named indices are their own, are explored
 * once, since swapping them changes nothing. This keeps the common cases
 * linear; pathological ties are cut after NODE_BUDGET search nodes, in
 * which case the result is still deterministic for the same input but may
 * depend on operand order.
 *
 * Ellipsis dimensions are indices like the others, so "...i->..." with
 * ...=3 and "ai->a" with a=3 have the same canonical form.
 *
 * Form: "<operands>-><output>|<name>=<size>,...|<dtypes>-><out dtype>",
 * e.g. "acd,dc->abc|a=4096,b=35,c=35,d=35|f64,f64->f64" (a broadcast
 * dimension is marked with a quote after its name, "a'").
 */
#include "einsum/einsum.h"

#include <stdio.h>
#include <string.h>

#define TOKEN_LEN (2 + 3 * ET_MAX_RANK)
#define NODE_BUDGET 50000

typedef struct canon {
    const et_einsum *e;
    int name[ET_MAX_INDICES]; /* canonical name number, -1: not yet */
    int next_name;
    int order[ET_MAX_OPERANDS];
    bool used[ET_MAX_OPERANDS];
    int64_t tok[ET_MAX_OPERANDS][TOKEN_LEN];
    bool have_best;
    int best_order[ET_MAX_OPERANDS];
    int64_t best_tok[ET_MAX_OPERANDS][TOKEN_LEN];
    long nodes;
    int occ[ET_MAX_INDICES]; /* number of operands holding each index */
} canon;

/* Token of operand k under the current naming (new summed indices get the
 * names they would get if k came next). */
static void make_token(const canon *c, int k, int64_t tok[TOKEN_LEN])
{
    const et_operand *op = &c->e->op[k];
    int fresh[ET_MAX_INDICES];
    int next = c->next_name;
    memset(tok, 0, sizeof(int64_t) * TOKEN_LEN);
    tok[0] = op->rank;
    tok[1] = op->dtype;
    for (int r = 0; r < op->rank; r++) {
        int i = op->idx[r];
        int nm = c->name[i];
        if (nm < 0) {
            /* named on first sight inside this operand */
            nm = -1;
            for (int q = 0; q < r; q++)
                if (op->idx[q] == i)
                    nm = fresh[q];
            if (nm < 0)
                nm = next++;
        }
        fresh[r] = nm;
        tok[2 + 3 * r] = nm;
        tok[3 + 3 * r] = c->e->idx[i].size;
        tok[4 + 3 * r] = op->dim[r] != c->e->idx[i].size;
    }
}

static int tok_cmp(const int64_t *a, const int64_t *b)
{
    for (int j = 0; j < TOKEN_LEN; j++)
        if (a[j] != b[j])
            return a[j] < b[j] ? -1 : 1;
    return 0;
}

static bool same_operand(const et_operand *a, const et_operand *b)
{
    if (a->rank != b->rank || a->dtype != b->dtype)
        return false;
    for (int r = 0; r < a->rank; r++)
        if (a->idx[r] != b->idx[r] || a->dim[r] != b->dim[r])
            return false;
    return true;
}

/*
 * True if every index of operand k that has no name yet occurs in no other
 * operand. Two such operands with equal tokens can be swapped along with
 * their private indices without changing anything else, so only one of
 * them needs exploring ("a,b,c,d->" would otherwise branch factorially).
 */
static bool is_private(const canon *c, int k)
{
    const et_operand *op = &c->e->op[k];
    for (int r = 0; r < op->rank; r++)
        if (c->name[op->idx[r]] < 0 && c->occ[op->idx[r]] > 1)
            return false;
    return true;
}

/* `better`: the current prefix is already smaller than the best's. */
static void search(canon *c, int p, bool better)
{
    const et_einsum *e = c->e;
    c->nodes++;
    if (p == e->n_ops) {
        if (!c->have_best || better) {
            c->have_best = true;
            memcpy(c->best_order, c->order, sizeof(c->order));
            memcpy(c->best_tok, c->tok, sizeof(c->tok));
        }
        return;
    }
    /* tokens are recomputed rather than stored: this recursion is up to
     * ET_MAX_OPERANDS deep and must stay light on the stack */
    int64_t min_tok[TOKEN_LEN], tok[TOKEN_LEN];
    bool have_min = false;
    for (int k = 0; k < e->n_ops; k++) {
        if (c->used[k])
            continue;
        make_token(c, k, tok);
        if (!have_min || tok_cmp(tok, min_tok) < 0) {
            memcpy(min_tok, tok, sizeof(tok));
            have_min = true;
        }
    }
    if (c->have_best && !better) {
        int r = tok_cmp(min_tok, c->best_tok[p]);
        if (r > 0)
            return;
        better = r < 0;
    }
    int explored[ET_MAX_OPERANDS], n_explored = 0;
    for (int k = 0; k < e->n_ops; k++) {
        if (c->used[k])
            continue;
        make_token(c, k, tok);
        if (tok_cmp(tok, min_tok) != 0)
            continue;
        bool dup = false, priv = is_private(c, k);
        for (int q = 0; q < n_explored && !dup; q++)
            dup = same_operand(&e->op[explored[q]], &e->op[k]) ||
                  (priv && is_private(c, explored[q]));
        if (dup)
            continue;
        if (n_explored > 0 && c->nodes > NODE_BUDGET)
            break;
        explored[n_explored++] = k;

        /* name k's new indices, recurse, undo */
        int saved_next = c->next_name;
        int named[ET_MAX_RANK], n_named = 0;
        const et_operand *op = &e->op[k];
        for (int r = 0; r < op->rank; r++) {
            int i = op->idx[r];
            if (c->name[i] < 0) {
                c->name[i] = c->next_name++;
                named[n_named++] = i;
            }
        }
        c->used[k] = true;
        c->order[p] = k;
        memcpy(c->tok[p], tok, sizeof(tok));
        search(c, p + 1, better);
        c->used[k] = false;
        for (int q = 0; q < n_named; q++)
            c->name[named[q]] = -1;
        c->next_name = saved_next;
        /* a later sibling can only tie with this prefix, so it must beat
         * the best found below it from here on */
        better = false;
    }
}

static void put(char *buf, size_t cap, size_t *n, const char *s)
{
    size_t l = strlen(s);
    if (*n + l < cap) {
        memcpy(buf + *n, s, l + 1);
        *n += l;
    } else {
        *n = cap; /* truncated: stop writing */
    }
}

static void name_str(int nm, char out[16])
{
    if (nm < 26)
        snprintf(out, 16, "%c", 'a' + nm);
    else if (nm < 52)
        snprintf(out, 16, "%c", 'A' + (nm - 26));
    else
        snprintf(out, 16, "{%d}", nm);
}

void et_einsum_canonical(const et_einsum *e, char *buf, size_t cap)
{
    /* About 50 KiB, on the caller's stack: no state outlives the call. */
    canon c;
    if (!buf || cap == 0)
        return;
    buf[0] = '\0';
    memset(&c, 0, sizeof(c));
    c.e = e;
    for (int i = 0; i < e->n_idx; i++)
        c.name[i] = i < e->n_out ? i : -1;
    c.next_name = e->n_out;
    for (int k = 0; k < e->n_ops; k++)
        for (int r = 0; r < e->op[k].rank; r++) {
            bool first = true;
            for (int q = 0; q < r; q++)
                first = first && e->op[k].idx[q] != e->op[k].idx[r];
            if (first)
                c.occ[e->op[k].idx[r]]++;
        }
    search(&c, 0, false);

    /* Final naming along the best order. */
    int name[ET_MAX_INDICES];
    int next = e->n_out;
    for (int i = 0; i < e->n_idx; i++)
        name[i] = i < e->n_out ? i : -1;
    for (int p = 0; p < e->n_ops; p++) {
        const et_operand *op = &e->op[c.best_order[p]];
        for (int r = 0; r < op->rank; r++)
            if (name[op->idx[r]] < 0)
                name[op->idx[r]] = next++;
    }
    int by_name[ET_MAX_INDICES];
    for (int i = 0; i < e->n_idx; i++)
        by_name[name[i]] = i;

    size_t n = 0;
    char nb[16], num[48];
    for (int p = 0; p < e->n_ops; p++) {
        const et_operand *op = &e->op[c.best_order[p]];
        if (p > 0)
            put(buf, cap, &n, ",");
        for (int r = 0; r < op->rank; r++) {
            name_str(name[op->idx[r]], nb);
            put(buf, cap, &n, nb);
            if (op->dim[r] != e->idx[op->idx[r]].size)
                put(buf, cap, &n, "'");
        }
    }
    put(buf, cap, &n, "->");
    for (int j = 0; j < e->out.rank; j++) {
        name_str(name[e->out.idx[j]], nb);
        put(buf, cap, &n, nb);
    }
    put(buf, cap, &n, "|");
    for (int nm = 0; nm < e->n_idx; nm++) {
        name_str(nm, nb);
        snprintf(num, sizeof(num), "%s%s=%lld", nm ? "," : "", nb,
                 (long long)e->idx[by_name[nm]].size);
        put(buf, cap, &n, num);
    }
    put(buf, cap, &n, "|");
    for (int p = 0; p < e->n_ops; p++) {
        if (p > 0)
            put(buf, cap, &n, ",");
        put(buf, cap, &n, et_dtype_name(e->op[c.best_order[p]].dtype));
    }
    put(buf, cap, &n, "->");
    put(buf, cap, &n, et_dtype_name(e->out.dtype));
}
