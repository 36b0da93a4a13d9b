/*
 * rows.c - batched einsums: several rows of one subscript, each with its
 * own operands and its own output, computed by one kernel.
 *
 * A batch spec names the operands of every row: "u,Dr; u,Ds; u,Dt" (rows
 * separated by ';', names by ','). A name is one array: it stands at one
 * operand position in every row it appears in. A position where every
 * row names the same array is shared (read once for all rows); any other
 * position is rowed: each row reads its own array there. With ';'
 * between rows each row writes its own output (the output is rowed);
 * with '+' the rows are summed into one output ("u0,Dr + u1,Ds + u2,Dt",
 * a DG divergence).
 *
 * The batched einsum (et_einsum_batch) is the one subscript with a row
 * axis added, of size n_rows, the first dimension of every rowed operand,
 * named by the first capital letter from R on that the subscript does
 * not use. Rows with outputs of their own: the row axis is index 0, an
 * output index, the output's first dimension: "xj,ij->xi" with rows
 * "u,Dr; u,Ds; u,Dt" becomes "xj,Rij->Rxi", R = 3, position 1 rowed.
 * Rows summed: the row axis is a summed index: "xj,ij->xi" with rows
 * "u0,Dr + u1,Ds + u2,Dt" becomes "Rxj,Rij->xi". Every later layer works
 * on that einsum as on any other (counts, the reference on rows laid out
 * one after another, the canonical form marked "rows|" or "rows+<row
 * axis>|"); the kernel alone treats the row axis apart: it takes one
 * pointer per row of a rowed operand and of a rowed output
 * (transforms/kernel.h).
 */
#include "einsum/einsum.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' ||
           (!first && isdigit((unsigned char)c));
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

et_status et_rows_parse(const char *spec, int n_ops, et_rows *r, et_diag *d)
{
    memset(r, 0, sizeof *r);
    if (!spec)
        return et_diag_fail(d, -1, "no batch spec");
    const char *p = skip_ws(spec);
    if (!*p)
        return et_diag_fail(d, 0, "empty batch spec: give the operands of "
                                  "each row, e.g. \"u,Dr; u,Ds\"");
    for (;;) {
        if (r->n_rows == ET_MAX_ROWS)
            return et_diag_fail(d, (int)(p - spec),
                                "more than %d rows", ET_MAX_ROWS);
        int row = r->n_rows, k = 0;
        for (;;) {
            p = skip_ws(p);
            if (!name_char(*p, true))
                return et_diag_fail(d, (int)(p - spec),
                                    "expected an array name (a letter or "
                                    "'_', then letters, digits, '_')");
            if (k == n_ops)
                return et_diag_fail(d, (int)(p - spec),
                                    "row %d names more than the einsum's "
                                    "%d operand%s", row, n_ops,
                                    n_ops == 1 ? "" : "s");
            const char *s = p;
            while (name_char(*p, false))
                p++;
            if ((size_t)(p - s) >= ET_ROW_NAME_LEN)
                return et_diag_fail(d, (int)(s - spec),
                                    "array name longer than %d characters",
                                    ET_ROW_NAME_LEN - 1);
            memcpy(r->name[row][k], s, (size_t)(p - s));
            r->name[row][k][p - s] = '\0';
            r->pos[row][k] = (int)(s - spec);
            k++;
            p = skip_ws(p);
            if (*p != ',')
                break;
            p++;
        }
        if (k != n_ops)
            return et_diag_fail(d, (int)(p - spec),
                                "row %d names %d operand%s; the einsum "
                                "has %d", row, k, k == 1 ? "" : "s", n_ops);
        r->n_rows++;
        if (*p == ';' || *p == '+') {
            bool plus = *p == '+';
            if (r->n_rows > 1 && plus != r->summed)
                return et_diag_fail(d, (int)(p - spec),
                                    "'%c' after '%c': rows are separated "
                                    "by ';' (each row its own output) or "
                                    "by '+' (the rows summed into one "
                                    "output), not both",
                                    *p, plus ? ';' : '+');
            r->summed = plus;
            p = skip_ws(p + 1);
            if (!*p && !plus)
                break; /* a trailing ';' */
            if (!*p)
                return et_diag_fail(d, (int)(p - spec),
                                    "a row after '+' expected");
            continue;
        }
        if (*p)
            return et_diag_fail(d, (int)(p - spec),
                                "expected ',' between names, ';' or '+' "
                                "between rows");
        break;
    }
    r->n_ops = n_ops;
    if (r->n_rows < 2)
        return et_diag_fail(d, 0, "a batch has at least 2 rows (one row is "
                                  "the einsum itself: give no batch)");
    /* a name stands at one position */
    for (int a = 0; a < r->n_rows; a++)
        for (int k = 0; k < n_ops; k++)
            for (int b = 0; b < r->n_rows; b++)
                for (int j = 0; j < n_ops; j++)
                    if (j != k && strcmp(r->name[a][k], r->name[b][j]) == 0)
                        return et_diag_fail(
                            d, r->pos[b][j],
                            "'%s' is operand %d in row %d and operand %d "
                            "in row %d: an array stands at one position "
                            "(one shape, one dtype)",
                            r->name[a][k], k, a, j, b);
    int n_rowed = 0;
    for (int k = 0; k < n_ops; k++)
        n_rowed += et_rows_rowed(r, k);
    if (n_rowed == 0)
        return et_diag_fail(d, 0, r->summed
                                      ? "every row names the same arrays: "
                                        "the sum would be one row times "
                                        "their number"
                                      : "every row names the same arrays: "
                                        "the rows would compute the same "
                                        "output");
    return ET_OK;
}

bool et_rows_rowed(const et_rows *r, int k)
{
    for (int a = 1; a < r->n_rows; a++)
        if (strcmp(r->name[a][k], r->name[0][k]) != 0)
            return true;
    return false;
}

/* The index numbers of e shifted by one, the row axis (index 0) first in
 * the output and in the rowed operands. */
static et_status add_row_axis(const et_einsum *base, int n_rows,
                              const bool *rowed, char letter, et_einsum *e,
                              et_diag *d)
{
    if (base->n_idx + 1 > ET_MAX_INDICES)
        return et_diag_fail(d, -1, "too many indices for a batch");
    *e = *base;
    e->n_rows = n_rows;
    e->n_idx = base->n_idx + 1;
    e->n_out = base->n_out + 1;
    memset(&e->idx[0], 0, sizeof e->idx[0]);
    e->idx[0].name[0] = letter;
    e->idx[0].size = n_rows;
    for (int i = 0; i < base->n_idx; i++)
        e->idx[i + 1] = base->idx[i];
    bool all = true;
    for (int k = 0; k <= base->n_ops; k++) {
        const et_operand *b = k < base->n_ops ? &base->op[k] : &base->out;
        et_operand *o = k < base->n_ops ? &e->op[k] : &e->out;
        bool rw = k == base->n_ops || rowed[k];
        if (k < base->n_ops)
            all = all && rw;
        if (rw && b->rank + 1 > ET_MAX_RANK)
            return et_diag_fail(d, -1, "operand %d: rank too large for a "
                                       "batch", k);
        int s = rw ? 1 : 0;
        o->rank = b->rank + s;
        if (rw) {
            o->idx[0] = 0;
            o->dim[0] = n_rows;
        }
        for (int q = 0; q < b->rank; q++) {
            o->idx[q + s] = b->idx[q] + 1;
            o->dim[q + s] = b->dim[q];
        }
    }
    e->idx[0].role = all ? ET_ROLE_BATCH : ET_ROLE_FREE;
    return ET_OK;
}

/* Rows summed into one output: the subscript with the row letter in
 * front of the rowed terms only, resolved again (so the row axis takes
 * its place among the summed indices by first appearance). */
static et_status add_summed_row_axis(const et_einsum *base, int n_rows,
                                     const bool *rowed, char letter,
                                     et_einsum *e, et_diag *d)
{
    char t[ET_MAX_TEXT];
    size_t n = 0;
    et_operand_shapes *sh = calloc(1, sizeof *sh);
    et_subscripts *s = malloc(sizeof *s);
    et_dtype dt[ET_MAX_OPERANDS];
    et_status st = ET_ERR_NOMEM;
    if (!sh || !s)
        goto done;
    sh->n_ops = base->n_ops;
    for (int k = 0; k <= base->n_ops && n + ET_MAX_RANK + 4 < sizeof t;
         k++) {
        const et_operand *o = k < base->n_ops ? &base->op[k] : &base->out;
        if (k == base->n_ops)
            t[n++] = '-', t[n++] = '>';
        else if (k)
            t[n++] = ',';
        bool rw = k < base->n_ops && rowed[k];
        if (rw && o->rank + 1 > ET_MAX_RANK) {
            st = et_diag_fail(d, -1, "operand %d: rank too large for a "
                                     "batch", k);
            goto done;
        }
        if (rw) {
            t[n++] = letter;
            sh->dim[k][sh->rank[k]++] = n_rows;
        }
        for (int q = 0; q < o->rank; q++) {
            t[n++] = base->idx[o->idx[q]].name[0];
            if (k < base->n_ops)
                sh->dim[k][sh->rank[k]++] = o->dim[q];
        }
        if (k < base->n_ops)
            dt[k] = o->dtype;
    }
    t[n] = '\0';
    et_diag pd;
    memset(&pd, 0, sizeof pd);
    st = et_subscripts_parse(t, s, &pd);
    if (st == ET_OK)
        st = et_einsum_resolve(s, NULL, sh, dt, e, &pd);
    if (st != ET_OK) {
        st = et_diag_fail(d, -1, "rows summed: %s", pd.msg);
        goto done;
    }
    e->out.dtype = base->out.dtype;
    e->acc_dtype = base->acc_dtype;
    /* resolved from shapes: the open axis is open again */
    int oa = et_einsum_open_axis(base);
    if (oa >= 0) {
        int a = et_einsum_index_find(e, base->idx[oa].name);
        if (a >= 0)
            e->idx[a].open = true;
    }
    e->n_rows = n_rows;
    e->row_axis = et_einsum_index_find(e, (char[]){letter, 0});
done:
    free(sh);
    free(s);
    return st;
}

et_status et_einsum_batch(const et_einsum *base, int n_rows,
                          const bool *rowed, bool summed, et_einsum *e,
                          et_diag *d)
{
    if (base->n_rows)
        return et_diag_fail(d, -1, "the einsum is batched already");
    if (n_rows < 2 || n_rows > ET_MAX_ROWS)
        return et_diag_fail(d, -1, "a batch has 2 to %d rows", ET_MAX_ROWS);
    for (int i = 0; i < base->n_idx; i++)
        if (base->idx[i].name[0] == '_' || base->idx[i].name[1])
            return et_diag_fail(d, -1, "a batched einsum names every "
                                       "dimension with a letter (no '...')");
    int n_args = summed ? 1 : n_rows;
    for (int k = 0; k < base->n_ops; k++)
        n_args += rowed[k] ? n_rows : 1;
    if (n_args > ET_MAX_BATCH_ARGS)
        return et_diag_fail(d, -1, "%d rows of this einsum make a kernel of "
                                   "%d arrays; at most %d", n_rows, n_args,
                            ET_MAX_BATCH_ARGS);
    static const char pick[] = "RSTUVWXYZABCDEFGHIJKLMNOPQ";
    char letter = 0;
    for (const char *c = pick; *c && !letter; c++)
        if (et_einsum_index_find(base, (char[]){*c, 0}) < 0)
            letter = *c;
    if (!letter)
        return et_diag_fail(d, -1, "no capital letter is free to name the "
                                   "row axis");
    if (summed)
        return add_summed_row_axis(base, n_rows, rowed, letter, e, d);
    et_status st = add_row_axis(base, n_rows, rowed, letter, e, d);
    if (st != ET_OK)
        return st;
    /* the text: the subscript with the row letter in front of the rowed
     * terms */
    char t[ET_MAX_TEXT];
    size_t n = 0;
    for (int k = 0; k <= e->n_ops && n + ET_MAX_RANK + 4 < sizeof t; k++) {
        const et_operand *o = k < e->n_ops ? &e->op[k] : &e->out;
        if (k == e->n_ops)
            t[n++] = '-', t[n++] = '>';
        else if (k)
            t[n++] = ',';
        for (int q = 0; q < o->rank; q++)
            t[n++] = e->idx[o->idx[q]].name[0];
    }
    t[n] = '\0';
    snprintf(e->text, sizeof e->text, "%s", t);
    return ET_OK;
}

void et_einsum_unbatch(const et_einsum *e, et_einsum *base)
{
    *base = *e;
    if (!e->n_rows)
        return;
    const int ra = e->row_axis;
    base->n_rows = 0;
    base->row_axis = 0;
    base->n_idx = e->n_idx - 1;
    base->n_out = e->n_out - (ra < e->n_out ? 1 : 0);
    for (int i = ra; i < base->n_idx; i++)
        base->idx[i] = e->idx[i + 1];
    for (int k = 0; k <= e->n_ops; k++) {
        const et_operand *o = k < e->n_ops ? &e->op[k] : &e->out;
        et_operand *b = k < e->n_ops ? &base->op[k] : &base->out;
        int s = et_einsum_op_rowed(e, k < e->n_ops ? k : -1) ? 1 : 0;
        b->rank = o->rank - s;
        for (int q = 0; q < b->rank; q++) {
            int x = o->idx[q + s];
            b->idx[q] = x > ra ? x - 1 : x;
            b->dim[q] = o->dim[q + s];
        }
    }
    /* the text without the row letter */
    const char R = e->idx[ra].name[0];
    size_t n = 0;
    for (const char *c = e->text; *c && n + 1 < sizeof base->text; c++)
        if (*c != R)
            base->text[n++] = *c;
    base->text[n] = '\0';
}

et_status et_einsum_batch_spec(const et_einsum *base, const char *spec,
                               et_rows *rows, et_einsum *e, et_diag *d)
{
    et_rows *r = rows ? rows : malloc(sizeof *r);
    if (!r)
        return ET_ERR_NOMEM;
    et_input in = ET_INPUT_BATCH;
    et_status st = et_rows_parse(spec, base->n_ops, r, d);
    if (st == ET_OK) {
        bool rowed[ET_MAX_OPERANDS];
        for (int k = 0; k < base->n_ops; k++)
            rowed[k] = et_rows_rowed(r, k);
        in = ET_INPUT_EINSUM;
        st = et_einsum_batch(base, r->n_rows, rowed, r->summed, e, d);
    }
    if (st != ET_OK && d) {
        d->input = in;
        d->status = st;
    }
    if (!rows)
        free(r);
    return st;
}

void et_einsum_row_operand(const et_einsum *e, int k, et_operand *out)
{
    const et_operand *o = k < 0 ? &e->out : &e->op[k];
    *out = *o;
    if (!et_einsum_op_rowed(e, k))
        return;
    out->rank = o->rank - 1;
    for (int d = 0; d < out->rank; d++) {
        out->idx[d] = o->idx[d + 1];
        out->dim[d] = o->dim[d + 1];
    }
}

bool et_einsum_rows_summed(const et_einsum *e)
{
    return e->n_rows && e->row_axis >= e->n_out;
}

bool et_einsum_op_rowed(const et_einsum *e, int k)
{
    if (!e->n_rows)
        return false;
    const et_operand *o = k < 0 ? &e->out : &e->op[k];
    return o->rank > 0 && o->idx[0] == e->row_axis;
}

int64_t et_einsum_row_elems(const et_einsum *e, int k)
{
    int64_t n = et_einsum_operand_elems(e, k);
    return et_einsum_op_rowed(e, k) ? n / e->n_rows : n;
}
