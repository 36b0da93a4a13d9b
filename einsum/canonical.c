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
 * dimension is marked with a quote after its name, "a'"). An open axis
 * has the size "*" ("a=*"): its tokens carry -1 in place of the size, so
 * the form does not depend on the size the axis is worked at.
 *
 * A batched einsum (einsum.h) starts with "rows|" when each row has its
 * own output (its row axis is the output's first index, so always "a"),
 * "rows+<name>|" when the rows are summed into one output (the row axis
 * is the summed index <name>); rows are data along it, so their order is
 * not in the form.
 *
 * The structure form (et_einsum_structure) is the same search with every
 * size left out of the tokens and the text:
 * "acd,dc->abc|f64,f64->f64". Einsums that differ only by names, operand
 * order and sizes share it; the database finds the other sizes of an
 * einsum through it.
 */
#include "einsum/einsum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_LEN (2 + 3 * ET_MAX_RANK)
#define NODE_BUDGET 50000

typedef struct canon {
    const et_einsum *e;
    bool structure;           /* sizes left out (et_einsum_structure) */
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
        /* an open axis sorts before every size; no size at all in the
         * structure form */
        tok[3 + 3 * r] = c->structure        ? 0
                         : c->e->idx[i].open ? -1
                                             : c->e->idx[i].size;
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

static void canonical_form(const et_einsum *e, bool structure, char *buf,
                           size_t cap)
{
    /* About 50 KiB, on the caller's stack: no state outlives the call. */
    canon c;
    if (!buf || cap == 0)
        return;
    buf[0] = '\0';
    memset(&c, 0, sizeof(c));
    c.e = e;
    c.structure = structure;
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
    if (et_einsum_rows_summed(e)) {
        put(buf, cap, &n, "rows+");
        name_str(name[e->row_axis], nb);
        put(buf, cap, &n, nb);
        put(buf, cap, &n, "|");
    } else if (e->n_rows) {
        put(buf, cap, &n, "rows|");
    }
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
    for (int nm = 0; nm < e->n_idx && !structure; nm++) {
        name_str(nm, nb);
        const et_index *x = &e->idx[by_name[nm]];
        if (x->open)
            snprintf(num, sizeof(num), "%s%s=*", nm ? "," : "", nb);
        else
            snprintf(num, sizeof(num), "%s%s=%lld", nm ? "," : "", nb,
                     (long long)x->size);
        put(buf, cap, &n, num);
    }
    if (!structure)
        put(buf, cap, &n, "|");
    for (int p = 0; p < e->n_ops; p++) {
        if (p > 0)
            put(buf, cap, &n, ",");
        put(buf, cap, &n, et_dtype_name(e->op[c.best_order[p]].dtype));
    }
    put(buf, cap, &n, "->");
    put(buf, cap, &n, et_dtype_name(e->out.dtype));
}

void et_einsum_canonical(const et_einsum *e, char *buf, size_t cap)
{
    canonical_form(e, false, buf, cap);
}

void et_einsum_structure(const et_einsum *e, char *buf, size_t cap)
{
    canonical_form(e, true, buf, cap);
}

/* Next name of a canonical text at s[*i]: a letter, or "{N}" (refused:
 * such einsums are rebuilt by nobody). Returns the index number, -1. */
static int canon_name(const char *s, int *i)
{
    char c = s[*i];
    if (c >= 'a' && c <= 'z') {
        (*i)++;
        return c - 'a';
    }
    if (c >= 'A' && c <= 'Z') {
        (*i)++;
        return 26 + (c - 'A');
    }
    return -1;
}

et_status et_einsum_from_canonical(const char *form, et_einsum *e,
                                   et_diag *d)
{
    char text[ET_MAX_TEXT];
    /* a batched einsum: its row axis is the output's first index, a; or,
     * rows summed, the summed index named after "rows+" */
    bool rows = strncmp(form, "rows|", 5) == 0;
    int summed_nm = -1;
    if (rows) {
        form += 5;
    } else if (strncmp(form, "rows+", 5) == 0) {
        int j = 5;
        summed_nm = canon_name(form, &j);
        if (summed_nm < 0 || form[j] != '|')
            return et_diag_fail(d, j, "canonical rows: a row axis name "
                                      "and '|' expected");
        form += j + 1;
    }
    const char *bar1 = strchr(form, '|');
    const char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (!bar1 || !bar2 || (size_t)(bar1 - form) >= sizeof text)
        return et_diag_fail(d, -1, "not a canonical form: %.200s", form);
    /* the sizes, by name number */
    int64_t size[ET_MAX_INDICES];
    bool open[ET_MAX_INDICES], have[ET_MAX_INDICES];
    memset(have, 0, sizeof have);
    memset(open, 0, sizeof open);
    int i = (int)(bar1 - form) + 1;
    while (form + i < bar2) {
        int nm = canon_name(form, &i);
        if (nm < 0 || form[i] != '=')
            return et_diag_fail(d, i, "canonical sizes: unexpected text");
        i++;
        if (form[i] == '*') {
            open[nm] = true;
            size[nm] = ET_OPEN_DEFAULT_SIZE;
            i++;
        } else {
            char *end;
            long long v = strtoll(form + i, &end, 10);
            if (end == form + i || v < 1)
                return et_diag_fail(d, i, "canonical sizes: bad size");
            size[nm] = v;
            i = (int)(end - form);
        }
        have[nm] = true;
        if (form[i] == ',')
            i++;
    }
    /* the subscripts without the broadcast marks, and the shapes */
    et_operand_shapes sh;
    memset(&sh, 0, sizeof sh);
    size_t n = 0;
    int k = 0;
    bool out = false;
    for (i = 0; form + i < bar1;) {
        char c = form[i];
        if (c == ',' || c == '-' || c == '>') {
            if (c == ',')
                k++;
            if (c == '-')
                out = true;
            text[n++] = c;
            i++;
            continue;
        }
        int nm = canon_name(form, &i);
        if (nm < 0 || !have[nm] || k >= ET_MAX_OPERANDS)
            return et_diag_fail(d, i, "canonical text: unexpected name");
        text[n++] = c;
        if (out)
            continue;
        bool bcast = form[i] == '\'';
        if (bcast)
            i++;
        if (sh.rank[k] >= ET_MAX_RANK)
            return et_diag_fail(d, i, "canonical text: rank too large");
        sh.dim[k][sh.rank[k]++] = bcast ? 1 : size[nm];
    }
    text[n] = '\0';
    sh.n_ops = k + 1;
    /* the operands' dtypes */
    char dts[256];
    const char *arrow = strstr(bar2 + 1, "->");
    size_t dl = arrow ? (size_t)(arrow - bar2 - 1) : strlen(bar2 + 1);
    if (dl >= sizeof dts)
        return et_diag_fail(d, -1, "canonical dtypes too long");
    memcpy(dts, bar2 + 1, dl);
    dts[dl] = '\0';
    et_subscripts s;
    et_dtype dt[ET_MAX_OPERANDS];
    et_status st = et_subscripts_parse(text, &s, d);
    if (st == ET_OK)
        st = et_dtype_spec_parse(dts, s.n_ops, dt, d);
    if (st == ET_OK)
        st = et_einsum_resolve(&s, NULL, &sh, dt, e, d);
    if (st != ET_OK)
        return st;
    for (int x = 0; x < e->n_idx; x++) {
        int nm = -1, j = 0;
        nm = canon_name(e->idx[x].name, &j);
        if (nm >= 0 && open[nm])
            e->idx[x].open = true;
    }
    if (rows) {
        if (e->n_out < 1 || e->idx[0].size < 2 || e->idx[0].size > ET_MAX_ROWS)
            return et_diag_fail(d, -1, "canonical rows: the first output "
                                       "index is no row axis");
        e->n_rows = (int)e->idx[0].size;
    }
    if (summed_nm >= 0) {
        int ra = -1;
        for (int x = 0; x < e->n_idx; x++) {
            int j = 0;
            if (canon_name(e->idx[x].name, &j) == summed_nm)
                ra = x;
        }
        if (ra < e->n_out || e->idx[ra].size < 2 ||
            e->idx[ra].size > ET_MAX_ROWS)
            return et_diag_fail(d, -1, "canonical rows: the row axis is no "
                                       "summed index of 2 to %d rows",
                                ET_MAX_ROWS);
        e->n_rows = (int)e->idx[ra].size;
        e->row_axis = ra;
    }
    return ET_OK;
}
