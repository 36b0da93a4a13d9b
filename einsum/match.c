/*
 * match.c - is the user's einsum the pattern up to index names and operand
 * order?
 *
 * The pattern is numbered as a resolved einsum would be (output indices in
 * output order first, see et_einsum_pattern()), so output index p of the
 * pattern can only be output index p of the user's einsum: the output is
 * not permuted. What remains is a bijection of operands and of summed
 * indices, found by backtracking over the pattern's operands (in an order
 * that keeps them connected, see plan_order()), each tried against every unused user operand of the same rank whose
 * subscripts agree with the index mapping built so far. Candidates are
 * pre-filtered per operand (rank, output positions, diagonal structure),
 * which also gives the "no operand matches pattern operand j" message.
 */
#include "einsum/einsum.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_NODE_BUDGET 1000000L


typedef struct matcher {
    const et_einsum *p, *u;
    bool cand[ET_MAX_OPERANDS][ET_MAX_OPERANDS]; /* [pattern op][user op] */
    int phi[ET_MAX_INDICES];                     /* pattern -> user idx */
    int inv[ET_MAX_INDICES];                     /* user -> pattern idx */
    int op_map[ET_MAX_OPERANDS];
    bool used[ET_MAX_OPERANDS];
    et_match *out;
    int cap;
    long count;
    long nodes;
    int deepest; /* the search depth where it got stuck last */
    int order[ET_MAX_OPERANDS]; /* pattern operands in search order */
} matcher;

/* Can pattern operand j be user operand k on its own? */
static bool compatible(const et_einsum *p, int j, const et_einsum *u, int k)
{
    const et_operand *a = &p->op[j], *b = &u->op[k];
    if (a->rank != b->rank)
        return false;
    for (int r = 0; r < a->rank; r++) {
        int pi = a->idx[r], ui = b->idx[r];
        if ((pi < p->n_out) != (ui < u->n_out))
            return false;
        if (pi < p->n_out && pi != ui)
            return false;
        for (int q = 0; q < r; q++)
            if ((a->idx[q] == pi) != (b->idx[q] == ui))
                return false;
    }
    return true;
}

/*
 * Search order: each next pattern operand is the one sharing the most
 * indices with those placed before it (outputs count as placed), so that
 * the index mapping prunes at once; ties go to fewer candidates. Without
 * this, unrelated operands in a row multiply the branches.
 */
static void plan_order(matcher *m)
{
    const et_einsum *p = m->p;
    bool bound[ET_MAX_INDICES] = {false}, placed[ET_MAX_OPERANDS] = {false};
    for (int i = 0; i < p->n_out; i++)
        bound[i] = true;
    for (int step = 0; step < p->n_ops; step++) {
        int best = -1, best_bound = -1, best_cand = 0;
        for (int j = 0; j < p->n_ops; j++) {
            if (placed[j])
                continue;
            int nb = 0, nc = 0;
            for (int r = 0; r < p->op[j].rank; r++)
                nb += bound[p->op[j].idx[r]];
            for (int k = 0; k < m->u->n_ops; k++)
                nc += m->cand[j][k];
            if (nb > best_bound || (nb == best_bound && nc < best_cand)) {
                best = j;
                best_bound = nb;
                best_cand = nc;
            }
        }
        placed[best] = true;
        m->order[step] = best;
        for (int r = 0; r < p->op[best].rank; r++)
            bound[p->op[best].idx[r]] = true;
    }
}

static void search(matcher *m, int depth)
{
    m->nodes++;
    if (m->count >= ET_MATCH_COUNT_MAX || m->nodes > MATCH_NODE_BUDGET)
        return;
    if (depth == m->p->n_ops) {
        if (m->count < m->cap) {
            et_match *x = &m->out[m->count];
            for (int i = 0; i < ET_MAX_INDICES; i++)
                x->idx_map[i] = i < m->p->n_idx ? m->phi[i] : -1;
            for (int q = 0; q < ET_MAX_OPERANDS; q++)
                x->op_map[q] = q < m->p->n_ops ? m->op_map[q] : -1;
        }
        m->count++;
        return;
    }
    if (depth > m->deepest)
        m->deepest = depth;
    int j = m->order[depth];
    const et_operand *a = &m->p->op[j];
    for (int k = 0; k < m->u->n_ops; k++) {
        if (m->used[k] || !m->cand[j][k])
            continue;
        const et_operand *b = &m->u->op[k];
        int set[ET_MAX_RANK], n_set = 0;
        bool ok = true;
        for (int r = 0; r < a->rank && ok; r++) {
            int pi = a->idx[r], ui = b->idx[r];
            if (m->phi[pi] < 0 && m->inv[ui] < 0) {
                m->phi[pi] = ui;
                m->inv[ui] = pi;
                set[n_set++] = pi;
            } else {
                ok = m->phi[pi] == ui && m->inv[ui] == pi;
            }
        }
        if (ok) {
            m->used[k] = true;
            m->op_map[j] = k;
            search(m, depth + 1);
            m->used[k] = false;
        }
        for (int q = 0; q < n_set; q++) {
            m->inv[m->phi[set[q]]] = -1;
            m->phi[set[q]] = -1;
        }
    }
}

/* The pattern operand's subscripts, for messages. */
static void term_str(const et_term *t, char *buf, size_t cap)
{
    size_t n = (size_t)t->n < cap - 1 ? (size_t)t->n : cap - 1;
    memcpy(buf, t->letter, n);
    buf[n] = '\0';
}

static et_status match_in(matcher *mm, et_einsum *pe,
                          const et_subscripts *pattern, const et_einsum *user,
                          et_match *out, int cap, int *n, et_diag *d)
{
    if (n)
        *n = 0;
    if (!pattern || !user)
        return et_diag_fail(d, -1, "no pattern or no einsum given");
    et_status st = et_einsum_pattern(pattern, pe, d);
    if (st != ET_OK)
        return st;
    if (pe->n_ops != user->n_ops)
        return et_diag_fail(d, -1, "operand count differs: pattern has %d, einsum has %d",
                    pe->n_ops, user->n_ops);
    if (pe->n_out != user->n_out)
        return et_diag_fail(d, pattern->out.start,
                    "output rank differs: pattern has %d output indices, "
                    "einsum has %d",
                    pe->n_out, user->n_out);
    if (pe->n_idx != user->n_idx)
        return et_diag_fail(d, -1,
                    "index count differs: pattern has %d indices, einsum "
                    "has %d",
                    pe->n_idx, user->n_idx);

    memset(mm, 0, sizeof(*mm));
    mm->p = pe;
    mm->u = user;
    mm->out = out;
    mm->cap = out ? (cap > 0 ? cap : 0) : 0;
    for (int i = 0; i < ET_MAX_INDICES; i++)
        mm->phi[i] = mm->inv[i] = -1;
    for (int i = 0; i < pe->n_out; i++)
        mm->phi[i] = mm->inv[i] = i;

    char tb[ET_MAX_RANK + 1];
    for (int j = 0; j < pe->n_ops; j++) {
        bool any = false;
        for (int k = 0; k < user->n_ops; k++) {
            mm->cand[j][k] = compatible(pe, j, user, k);
            any = any || mm->cand[j][k];
        }
        if (!any) {
            term_str(&pattern->op[j], tb, sizeof(tb));
            return et_diag_fail(d, pattern->op[j].start,
                        "no operand of the einsum matches pattern operand %d "
                        "'%s' (rank %d)",
                        j, tb, pe->op[j].rank);
        }
    }
    plan_order(mm);
    search(mm, 0);
    if (n)
        *n = mm->count > ET_MATCH_COUNT_MAX ? ET_MATCH_COUNT_MAX : (int)mm->count;
    if (mm->count > 0)
        return ET_OK;
    if (mm->nodes > MATCH_NODE_BUDGET)
        return et_diag_fail(d, -1, "matcher gave up after %ld steps", mm->nodes);
    int j = mm->order[mm->deepest];
    term_str(&pattern->op[j], tb, sizeof(tb));
    return et_diag_fail(d, pattern->op[j].start,
                "pattern operand %d '%s' has no partner in the einsum that "
                "agrees with the operands placed before it: the operands "
                "do not share indices the same way",
                j, tb);
}

/* The matcher's state and the pattern's einsum are large: they live on the
 * heap, one pair per call, so that the matcher is reentrant. */
et_status et_einsum_match(const et_subscripts *pattern, const et_einsum *user,
                          et_match *out, int cap, int *n, et_diag *d)
{
    if (n)
        *n = 0;
    matcher *mm = calloc(1, sizeof(*mm));
    et_einsum *pe = calloc(1, sizeof(*pe));
    et_status st = mm && pe ? match_in(mm, pe, pattern, user, out, cap, n, d)
                            : et_diag_fail(d, -1, "out of memory");
    free(mm);
    free(pe);
    return st;
}
