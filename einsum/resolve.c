/*
 * resolve.c - subscripts + sizes + dtypes -> et_einsum, and its counts.
 *
 * Sizes come from a --shape spec (one size per letter, "...=AxB" for the
 * ellipsis) or from operand shapes, where NumPy's broadcasting applies: a
 * dimension of extent 1 stretches to the size the other operands give its
 * index (for letters as for ellipsis dimensions, which are right-aligned),
 * while a letter repeated inside one operand (a diagonal) needs equal
 * extents there. Every product the later layers form (elements and bytes
 * of each array, the iteration space, the op count) is checked here for
 * 64-bit overflow, so the count functions below never overflow.
 *
 * Roles: an index not in the output is summed; an output index that every
 * operand carries (even as a broadcast dimension of extent 1) is batch;
 * any other output index is free.
 */
#include "einsum/einsum.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int letter_slot(char c)
{
    return c >= 'a' ? c - 'a' : 26 + (c - 'A');
}

/* The term as written without spaces, e.g. "...ij", for messages. */
static void term_str(const et_term *t, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int j = 0; j <= t->n; j++) {
        if (j == t->ell_at && n + 4 < cap) {
            memcpy(buf + n, "...", 4);
            n += 3;
        }
        if (j < t->n && n + 2 < cap) {
            buf[n++] = t->letter[j];
            buf[n] = '\0';
        }
    }
}

/* Appends src to buf (length *n, capacity cap); false if it does not fit. */
static bool append(char *buf, size_t *n, size_t cap, const char *src)
{
    size_t l = strlen(src);
    if (*n + l + 1 > cap)
        return false;
    memcpy(buf + *n, src, l + 1);
    *n += l;
    return true;
}

static bool append_term(char *buf, size_t *n, size_t cap, const et_term *t)
{
    char tb[ET_MAX_RANK + 8];
    term_str(t, tb, sizeof(tb));
    return append(buf, n, cap, tb);
}

/* Normalized explicit text: no spaces, implicit output written out. */
static et_status normalize_text(const et_subscripts *s, et_einsum *e,
                                et_diag *d)
{
    size_t n = 0;
    bool ok = true;
    e->text[0] = '\0';
    for (int k = 0; k < s->n_ops && ok; k++) {
        if (k > 0)
            ok = append(e->text, &n, sizeof(e->text), ",");
        ok = ok && append_term(e->text, &n, sizeof(e->text), &s->op[k]);
    }
    ok = ok && append(e->text, &n, sizeof(e->text), "->");
    ok = ok && append_term(e->text, &n, sizeof(e->text), &s->out);
    if (!ok)
        return et_diag_fail(d, -1,
                    "einsum too long once written in explicit form (at "
                    "most %d characters)",
                    ET_MAX_TEXT - 1);
    return ET_OK;
}

/*
 * Index numbering, operand index lists and roles. n_ell is the number of
 * ellipsis dimensions, ell_n[k] how many of them operand k carries (its
 * rightmost ones). Sizes and dims are left to the caller.
 */
static et_status build_structure(const et_subscripts *s, int n_ell,
                                 const int *ell_n, et_einsum *e,
                                 et_diag *d)
{
    memset(e, 0, sizeof(*e));
    if (n_ell < 0 || n_ell > ET_MAX_RANK)
        return et_diag_fail(d, -1, "too many '...' dimensions (%d)", n_ell);
    e->n_ops = s->n_ops;
    int by_letter[52];
    for (int l = 0; l < 52; l++)
        by_letter[l] = -1;

    const et_term *o = &s->out;
    if (n_ell > 0 && o->ell_pos < 0)
        return et_diag_fail(d, s->arrow_pos >= 0 ? s->arrow_pos : -1,
                    "the operands have %d '...' dimension%s but the output "
                    "has no '...' to receive them",
                    n_ell, n_ell == 1 ? "" : "s");
    if (o->n + (o->ell_pos >= 0 ? n_ell : 0) > ET_MAX_RANK)
        return et_diag_fail(d, o->start, "the output has rank %d, above %d",
                    o->n + n_ell, ET_MAX_RANK);

    /* Output indices, in output order. */
    int n = 0;
    for (int j = 0; j <= o->n; j++) {
        if (j == o->ell_at) {
            for (int q = 0; q < n_ell; q++) {
                char *nm = e->idx[n].name; /* "_0" .. "_31" */
                nm[0] = '_';
                if (q >= 10) {
                    nm[1] = (char)('0' + q / 10);
                    nm[2] = (char)('0' + q % 10);
                } else {
                    nm[1] = (char)('0' + q);
                }
                n++;
            }
        }
        if (j < o->n) {
            by_letter[letter_slot(o->letter[j])] = n;
            e->idx[n].name[0] = o->letter[j];
            n++;
        }
    }
    e->n_out = n;
    e->out.rank = n;
    for (int j = 0; j < n; j++)
        e->out.idx[j] = j;

    /* Summed indices in order of first appearance; operand index lists. */
    for (int k = 0; k < s->n_ops; k++) {
        const et_term *t = &s->op[k];
        et_operand *op = &e->op[k];
        int en = t->ell_pos >= 0 ? ell_n[k] : 0;
        if (t->n + en > ET_MAX_RANK)
            return et_diag_fail(d, t->start, "operand %d has rank %d, above %d", k,
                        t->n + en, ET_MAX_RANK);
        int r = 0;
        for (int j = 0; j <= t->n; j++) {
            if (j == t->ell_at) {
                /* ellipsis dims are all in the output, numbered from the
                 * output's ellipsis position */
                int base = -1;
                for (int q = 0; q < e->n_out; q++)
                    if (e->idx[q].name[0] == '_') {
                        base = q;
                        break;
                    }
                for (int q = n_ell - en; q < n_ell; q++)
                    op->idx[r++] = base + q;
            }
            if (j < t->n) {
                int l = letter_slot(t->letter[j]);
                if (by_letter[l] < 0) {
                    by_letter[l] = n;
                    e->idx[n].name[0] = t->letter[j];
                    n++;
                }
                op->idx[r++] = by_letter[l];
            }
        }
        op->rank = r;
    }
    e->n_idx = n;

    /* Roles. */
    for (int i = 0; i < n; i++) {
        if (i >= e->n_out) {
            e->idx[i].role = ET_ROLE_SUMMED;
            continue;
        }
        bool everywhere = true;
        for (int k = 0; k < e->n_ops && everywhere; k++) {
            bool has = false;
            for (int r = 0; r < e->op[k].rank && !has; r++)
                has = e->op[k].idx[r] == i;
            everywhere = has;
        }
        e->idx[i].role = everywhere ? ET_ROLE_BATCH : ET_ROLE_FREE;
    }
    return normalize_text(s, e, d);
}

/* First position of letter c in the inputs of s (for diagnostics). */
static int letter_pos(const et_subscripts *s, char c)
{
    for (int k = 0; k < s->n_ops; k++)
        for (int j = 0; j < s->op[k].n; j++)
            if (s->op[k].letter[j] == c)
                return s->op[k].pos[j];
    return -1;
}

static bool input_has_ellipsis(const et_subscripts *s)
{
    for (int k = 0; k < s->n_ops; k++)
        if (s->op[k].ell_pos >= 0)
            return true;
    return false;
}

/* The rules of open axes (einsum.h): one at most, in the output, the
 * first dimension of every array that has it, once. */
static et_status check_open(const et_subscripts *s, const et_einsum *e,
                            et_diag *d)
{
    int open = -1;
    for (int i = 0; i < e->n_idx; i++) {
        if (!e->idx[i].open)
            continue;
        char c = e->idx[i].name[0];
        if (open >= 0)
            return et_diag_fail(d, letter_pos(s, c),
                        "at most one open axis: '%s' is open already, "
                        "'%c' cannot be too",
                        e->idx[open].name, c);
        open = i;
        if (i >= e->n_out)
            return et_diag_fail(d, letter_pos(s, c),
                        "open axis '%c' is summed: only an output index "
                        "can be open (kernels do not loop over a size "
                        "they are given at launch)",
                        c);
        for (int k = -1; k < e->n_ops; k++) {
            const et_operand *op = k < 0 ? &e->out : &e->op[k];
            const et_term *t = k < 0 ? &s->out : &s->op[k];
            for (int r = 0; r < op->rank; r++) {
                if (op->idx[r] != i || r == 0)
                    continue;
                int pos = r < t->n ? t->pos[r] : t->start;
                char what[32];
                if (k < 0)
                    snprintf(what, sizeof what, "the output");
                else
                    snprintf(what, sizeof what, "operand %d", k);
                return et_diag_fail(d, pos,
                            "open axis '%c' must be the first (outermost) "
                            "dimension of every array that has it, once; "
                            "%s has it at position %d",
                            c, what, r);
            }
        }
    }
    return ET_OK;
}

static et_status resolve_spec(const et_subscripts *s, const et_shape_spec *sp,
                              et_einsum *e, et_diag *d)
{
    int n_ell = 0, ell_n[ET_MAX_OPERANDS];
    bool has_ell = input_has_ellipsis(s);
    if (has_ell) {
        if (sp->n_ell < 0) {
            for (int k = 0; k < s->n_ops; k++)
                if (s->op[k].ell_pos >= 0)
                    return et_diag_fail(d, s->op[k].ell_pos,
                                "missing sizes for '...' (give ...=AxB in "
                                "the shape spec)");
        }
        n_ell = sp->n_ell;
        if (n_ell > ET_MAX_RANK)
            return et_diag_fail(d, -1, "too many '...' dimensions (%d)", n_ell);
        for (int q = 0; q < n_ell; q++)
            if (sp->ell[q] <= 0)
                return et_diag_fail(d, -1, "'...' sizes must be at least 1");
    } else if (sp->n_ell >= 0) {
        return et_diag_fail(d, -1,
                    "sizes for '...' given but no operand of the einsum "
                    "has '...'");
    }
    for (int k = 0; k < s->n_ops; k++)
        ell_n[k] = s->op[k].ell_pos >= 0 ? n_ell : 0;
    et_status st = build_structure(s, n_ell, ell_n, e, d);
    if (st != ET_OK)
        return st;

    for (int j = 0; j < sp->n; j++) {
        char c = sp->name[j][0];
        if (sp->name[j][1] != '\0' || letter_pos(s, c) < 0)
            return et_diag_fail(d, -1,
                        "size given for '%s', which is not an index of the "
                        "einsum",
                        sp->name[j]);
    }
    for (int i = 0; i < e->n_idx; i++) {
        et_index *x = &e->idx[i];
        if (x->name[0] == '_') {
            int q = x->name[1] - '0';
            if (x->name[2])
                q = q * 10 + (x->name[2] - '0');
            x->size = sp->ell[q];
            continue;
        }
        int j = 0;
        while (j < sp->n && sp->name[j][0] != x->name[0])
            j++;
        if (j == sp->n)
            return et_diag_fail(d, letter_pos(s, x->name[0]),
                        "missing size for index '%c'", x->name[0]);
        if (sp->open[j]) {
            x->open = true;
            x->size = ET_OPEN_DEFAULT_SIZE;
            continue;
        }
        if (sp->size[j] <= 0)
            return et_diag_fail(d, letter_pos(s, x->name[0]),
                        "size of '%c' must be at least 1", x->name[0]);
        x->size = sp->size[j];
    }
    st = check_open(s, e, d);
    if (st != ET_OK)
        return st;
    for (int k = 0; k < e->n_ops; k++)
        for (int r = 0; r < e->op[k].rank; r++)
            e->op[k].dim[r] = e->idx[e->op[k].idx[r]].size;
    return ET_OK;
}

static void shape_str(const et_operand_shapes *sh, int k, char *buf,
                      size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    append(buf, &n, cap, "(");
    for (int r = 0; r < sh->rank[k]; r++) {
        char num[32];
        snprintf(num, sizeof(num), "%s%lld", r ? "," : "",
                 (long long)sh->dim[k][r]);
        if (!append(buf, &n, cap, num))
            return;
    }
    append(buf, &n, cap, sh->rank[k] == 1 ? ",)" : ")");
}

static et_status resolve_shapes(const et_subscripts *s,
                                const et_operand_shapes *sh, et_einsum *e,
                                et_diag *d)
{
    char tb[ET_MAX_RANK + 8], shb[ET_MAX_RANK * 24 + 8];
    if (sh->n_ops != s->n_ops) {
        int pos = -1;
        if (sh->n_ops >= 0 && sh->n_ops < s->n_ops)
            pos = s->op[sh->n_ops].start;
        return et_diag_fail(d, pos, "the einsum has %d operand%s but %d shape%s given",
                    s->n_ops, s->n_ops == 1 ? "" : "s", sh->n_ops,
                    sh->n_ops == 1 ? " is" : "s are");
    }
    int n_ell = 0, ell_n[ET_MAX_OPERANDS];
    for (int k = 0; k < s->n_ops; k++) {
        const et_term *t = &s->op[k];
        int rank = sh->rank[k];
        if (rank < 0 || rank > ET_MAX_RANK)
            return et_diag_fail(d, t->start, "operand %d: bad rank %d", k, rank);
        term_str(t, tb, sizeof(tb));
        shape_str(sh, k, shb, sizeof(shb));
        if (t->ell_pos < 0 && rank != t->n)
            return et_diag_fail(d, t->start,
                        "operand %d '%s' has %d subscript%s but its shape %s "
                        "has rank %d",
                        k, tb, t->n, t->n == 1 ? "" : "s", shb, rank);
        if (t->ell_pos >= 0 && rank < t->n)
            return et_diag_fail(d, t->start,
                        "operand %d '%s' has %d subscripts but its shape %s "
                        "has rank %d",
                        k, tb, t->n, shb, rank);
        for (int r = 0; r < rank; r++)
            if (sh->dim[k][r] <= 0)
                return et_diag_fail(d, t->start,
                            "operand %d has shape %s: sizes must be at "
                            "least 1",
                            k, shb);
        ell_n[k] = t->ell_pos >= 0 ? rank - t->n : 0;
        if (ell_n[k] > n_ell)
            n_ell = ell_n[k];
    }
    et_status st = build_structure(s, n_ell, ell_n, e, d);
    if (st != ET_OK)
        return st;

    /* Diagonals first: extents of a repeated letter in one operand must be
     * equal (NumPy does not broadcast them). */
    for (int k = 0; k < s->n_ops; k++) {
        const et_operand *op = &e->op[k];
        for (int r = 0; r < op->rank; r++)
            for (int q = 0; q < r; q++)
                if (op->idx[q] == op->idx[r] &&
                    sh->dim[k][q] != sh->dim[k][r]) {
                    const et_index *x = &e->idx[op->idx[r]];
                    int j = 0; /* the letter occurrence for the caret */
                    int seen = 0;
                    for (j = 0; j < s->op[k].n; j++)
                        if (s->op[k].letter[j] == x->name[0] && seen++ == 1)
                            break;
                    return et_diag_fail(d, j < s->op[k].n ? s->op[k].pos[j] : -1,
                                "inconsistent sizes for index '%s' in the "
                                "diagonal of operand %d: %lld != %lld",
                                x->name, k, (long long)sh->dim[k][q],
                                (long long)sh->dim[k][r]);
                }
    }
    /* Sizes with broadcasting of 1. */
    for (int i = 0; i < e->n_idx; i++)
        e->idx[i].size = 1;
    for (int k = 0; k < s->n_ops; k++) {
        et_operand *op = &e->op[k];
        for (int r = 0; r < op->rank; r++) {
            int64_t v = sh->dim[k][r];
            et_index *x = &e->idx[op->idx[r]];
            op->dim[r] = v;
            if (v == 1 || v == x->size)
                continue;
            if (x->size == 1) {
                x->size = v;
                continue;
            }
            /* Conflict: find the other operand's extent for the message. */
            int pos = -1;
            const et_term *t = &s->op[k];
            if (x->name[0] == '_') {
                pos = t->ell_pos;
            } else {
                for (int j = 0; j < t->n; j++)
                    if (t->letter[j] == x->name[0])
                        pos = t->pos[j];
            }
            if (x->name[0] == '_')
                return et_diag_fail(d, pos,
                            "inconsistent sizes in '...' of operand %d: "
                            "%lld does not broadcast with %lld",
                            k, (long long)v, (long long)x->size);
            return et_diag_fail(d, pos,
                        "inconsistent sizes for index '%s': %lld in operand "
                        "%d, %lld in an earlier operand",
                        x->name, (long long)v, k, (long long)x->size);
        }
    }
    return ET_OK;
}

/* Overflow checks of every product, and the dtypes. */
static et_status finish(et_einsum *e, const et_dtype *dtypes, et_diag *d)
{
    et_dtype acc = ET_F32;
    for (int k = 0; k < e->n_ops; k++) {
        et_dtype t = dtypes ? dtypes[k] : ET_F64;
        if ((unsigned)t >= ET_DTYPE_COUNT)
            return et_diag_fail(d, -1, "operand %d: bad dtype %d", k, (int)t);
        e->op[k].dtype = t;
        if (t > acc)
            acc = t;
    }
    e->acc_dtype = acc;
    e->out.dtype = acc;
    for (int j = 0; j < e->out.rank; j++)
        e->out.dim[j] = e->idx[e->out.idx[j]].size;

    int64_t iter = 1;
    for (int i = 0; i < e->n_idx; i++)
        if (__builtin_mul_overflow(iter, e->idx[i].size, &iter))
            return et_diag_fail(d, -1,
                        "the iteration space (product of all index sizes) "
                        "overflows 64 bits");
    int64_t ops = 0;
    int64_t per = (int64_t)e->n_ops - 1 + (e->n_idx > e->n_out ? 1 : 0);
    if (per < 0)
        per = 0;
    if (__builtin_mul_overflow(iter, per, &ops))
        return et_diag_fail(d, -1, "the op count overflows 64 bits");

    int64_t total = 0;
    for (int k = -1; k < e->n_ops; k++) {
        const et_operand *op = k < 0 ? &e->out : &e->op[k];
        int64_t elems = 1, bytes;
        for (int r = 0; r < op->rank; r++)
            if (__builtin_mul_overflow(elems, op->dim[r], &elems))
                goto too_big;
        if (__builtin_mul_overflow(elems, (int64_t)et_dtype_size(op->dtype),
                                   &bytes) ||
            __builtin_add_overflow(total, bytes, &total))
            goto too_big;
        continue;
    too_big:
        if (k < 0)
            return et_diag_fail(d, -1, "the output's size in bytes overflows 64 bits");
        return et_diag_fail(d, -1, "operand %d's size in bytes overflows 64 bits", k);
    }
    return ET_OK;
}

et_status et_einsum_resolve(const et_subscripts *s, const et_shape_spec *spec,
                            const et_operand_shapes *shapes,
                            const et_dtype *dtypes, et_einsum *e, et_diag *d)
{
    if (!s || !e)
        return et_diag_fail(d, -1, "no einsum given");
    if ((spec == NULL) == (shapes == NULL))
        return et_diag_fail(d, -1,
                    "give either a shape spec or operand shapes, not %s",
                    spec ? "both" : "neither");
    et_status st = spec ? resolve_spec(s, spec, e, d)
                        : resolve_shapes(s, shapes, e, d);
    if (st != ET_OK)
        return st;
    return finish(e, dtypes, d);
}

et_status et_einsum_from_strings(const char *text, const char *shape_spec,
                                 const char *dtype_spec, et_einsum *e,
                                 et_diag *d)
{
    et_subscripts s;
    et_shape_spec sp;
    et_dtype dt[ET_MAX_OPERANDS];
    et_input in = ET_INPUT_EINSUM;
    et_status st = et_subscripts_parse(text, &s, d);
    if (st == ET_OK && (in = ET_INPUT_SHAPE))
        st = et_shape_spec_parse(shape_spec, &sp, d);
    if (st == ET_OK && (in = ET_INPUT_DTYPE))
        st = et_dtype_spec_parse(dtype_spec, s.n_ops, dt, d);
    if (st == ET_OK && (in = ET_INPUT_EINSUM))
        st = et_einsum_resolve(&s, &sp, NULL, dt, e, d);
    if (st != ET_OK && d) {
        d->input = in;
        d->status = st;
    }
    return st;
}

et_status et_einsum_pattern(const et_subscripts *s, et_einsum *e, et_diag *d)
{
    if (input_has_ellipsis(s) || s->out.ell_pos >= 0) {
        int pos = s->out.ell_pos;
        for (int k = s->n_ops - 1; k >= 0; k--)
            if (s->op[k].ell_pos >= 0)
                pos = s->op[k].ell_pos;
        return et_diag_fail(d, pos,
                    "patterns with '...' are not supported: name every "
                    "dimension with a letter");
    }
    int ell_n[ET_MAX_OPERANDS] = {0};
    return build_structure(s, 0, ell_n, e, d);
}

int et_einsum_open_axis(const et_einsum *e)
{
    for (int i = 0; i < e->n_idx; i++)
        if (e->idx[i].open)
            return i;
    return -1;
}

et_status et_einsum_set_size(et_einsum *e, int a, int64_t n, et_diag *d)
{
    if (a < 0 || a >= e->n_idx)
        return et_diag_fail(d, -1, "no index %d", a);
    if (n < 1)
        return et_diag_fail(d, -1, "size of '%s' must be at least 1",
                            e->idx[a].name);
    et_einsum *t = malloc(sizeof *t);
    if (!t)
        return et_diag_fail(d, -1, "out of memory");
    *t = *e;
    /* a dimension broadcasts when its extent differs from the index's
     * size (einsum.h); at size 1 none does, so every dimension of the
     * index follows it (an extent of 1 alone would take a dimension that
     * has the index for a broadcast one, and drop its stride) */
    int64_t old = t->idx[a].size;
    t->idx[a].size = n;
    for (int k = 0; k < t->n_ops; k++)
        for (int r = 0; r < t->op[k].rank; r++)
            if (t->op[k].idx[r] == a && t->op[k].dim[r] == old)
                t->op[k].dim[r] = n;
    et_dtype dt[ET_MAX_OPERANDS];
    for (int k = 0; k < t->n_ops; k++)
        dt[k] = t->op[k].dtype;
    et_status st = finish(t, dt, d);
    if (st == ET_OK)
        *e = *t;
    free(t);
    return st;
}

et_status et_einsum_tune_at(et_einsum *e, const char *spec, et_diag *d)
{
    et_shape_spec sp;
    et_status st = et_shape_spec_parse(spec, &sp, d);
    if (st != ET_OK)
        return st;
    if (sp.n_ell >= 0)
        return et_diag_fail(d, 0, "'...' is never open: --tune-at gives "
                                  "sizes of open axes only");
    int pos = 0;
    for (int j = 0; j < sp.n; j++) {
        const char *at = strchr(spec + pos, sp.name[j][0]);
        pos = at ? (int)(at - spec) : 0;
        int a = et_einsum_index_find(e, sp.name[j]);
        if (a < 0 || !e->idx[a].open)
            return et_diag_fail(d, pos,
                        "'%s' is not an open axis of %s (--tune-at gives "
                        "sizes of open axes only)",
                        sp.name[j], e->text);
        if (sp.open[j])
            return et_diag_fail(d, pos, "--tune-at needs a size, not '*'");
        st = et_einsum_set_size(e, a, sp.size[j], d);
        if (st != ET_OK) {
            if (d)
                d->pos = pos;
            return st;
        }
    }
    return ET_OK;
}

void et_einsum_sizes_str(const et_einsum *e, bool open_star, char *buf,
                         size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = '\0';
    for (int i = 0; i < e->n_idx; i++) {
        char one[64];
        if (open_star && e->idx[i].open)
            snprintf(one, sizeof one, "%s%s=*", i ? "," : "",
                     e->idx[i].name);
        else
            snprintf(one, sizeof one, "%s%s=%lld", i ? "," : "",
                     e->idx[i].name, (long long)e->idx[i].size);
        if (!append(buf, &n, cap, one))
            return;
    }
}

int et_einsum_index_find(const et_einsum *e, const char *name)
{
    for (int i = 0; i < e->n_idx; i++)
        if (strcmp(e->idx[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- counts -------------------------------------------------------------- */

int64_t et_einsum_operand_elems(const et_einsum *e, int k)
{
    const et_operand *op = k < 0 ? &e->out : &e->op[k];
    int64_t n = 1;
    for (int r = 0; r < op->rank; r++)
        n *= op->dim[r];
    return n;
}

int64_t et_einsum_iter_size(const et_einsum *e)
{
    int64_t n = 1;
    for (int i = 0; i < e->n_idx; i++)
        n *= e->idx[i].size;
    return n;
}

int64_t et_einsum_bytes(const et_einsum *e)
{
    int64_t b = et_einsum_operand_elems(e, -1) *
                (int64_t)et_dtype_size(e->out.dtype);
    for (int k = 0; k < e->n_ops; k++)
        b += et_einsum_operand_elems(e, k) *
             (int64_t)et_dtype_size(e->op[k].dtype);
    return b;
}
