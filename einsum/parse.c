/*
 * parse.c - einsum text, --shape specs and --dtype specs.
 *
 * Einsum grammar (EBNF). Spaces (' ' only, as NumPy) may stand between any
 * two tokens but not inside "->" or "...":
 *
 *   einsum   = operands [ "->" term ] ;
 *   operands = term { "," term } ;             (* at most ET_MAX_OPERANDS *)
 *   term     = { item } ;                      (* may be empty: a scalar *)
 *   item     = letter | ellipsis ;             (* at most one ellipsis *)
 *   letter   = "a" .. "z" | "A" .. "Z" ;
 *   ellipsis = "..." ;
 *
 * Rules checked on the text alone (NumPy refuses the same): an output
 * letter must appear in some input and only once in the output; the
 * output holds at most one ellipsis. Without "->" the output is implicit:
 * the letters that appear exactly once over all inputs (a letter repeated
 * inside one operand counts twice), sorted in ASCII order (upper case
 * first), after the ellipsis if any input has one. An ellipsis in the
 * output while no input has one is accepted and stands for zero
 * dimensions, as in NumPy.
 *
 * Shape spec grammar:
 *
 *   spec  = [ entry { "," entry } ] ;
 *   entry = letter "=" ( size | open ) | "..." "=" [ size { "x" size } ] ;
 *   size  = digit { digit } ;                  (* 1 .. INT64_MAX *)
 *   open  = "*" | "inf" ;                      (* an open axis *)
 *
 * "...=" with nothing after it gives the ellipsis zero dimensions.
 *
 * Dtype spec grammar: dtype { "," dtype }, one for all operands or one per
 * operand, each a name et_dtype_parse() knows.
 */
#include "einsum/einsum.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Fills d (if any) and returns ET_ERR_INPUT. */

static int is_letter(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Printable rendering of a byte for messages. */
static const char *show_char(int c, char buf[8])
{
    if (c > ' ' && c < 127)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", (unsigned)(unsigned char)c);
    return buf;
}

static void term_init(et_term *t, int start)
{
    memset(t, 0, sizeof(*t));
    t->ell_at = -1;
    t->ell_pos = -1;
    t->start = start;
}

/*
 * Parses one term starting at text[*i] up to ',' '-' or the end. `what`
 * names the term in messages ("operand 2", "the output").
 */
static et_status parse_term(const char *text, int *i, et_term *t,
                            const char *what, et_diag *d)
{
    char cb[8];
    for (;;) {
        int c = (unsigned char)text[*i];
        if (c == '\0' || c == ',' || c == '-' || c == '>')
            return ET_OK;
        if (c == ' ') {
            (*i)++;
            continue;
        }
        if (c == '.') {
            if (text[*i + 1] != '.' || text[*i + 2] != '.')
                return et_diag_fail(d, *i,
                            "'.' that is not part of an ellipsis '...' in "
                            "%s",
                            what);
            if (t->ell_pos >= 0)
                return et_diag_fail(d, *i, "second ellipsis '...' in %s", what);
            t->ell_at = t->n;
            t->ell_pos = *i;
            *i += 3;
            continue;
        }
        if (!is_letter(c))
            return et_diag_fail(d, *i,
                        "bad character %s in %s: subscripts are letters "
                        "a-z, A-Z",
                        show_char(c, cb), what);
        if (t->n >= ET_MAX_RANK)
            return et_diag_fail(d, *i, "too many subscripts in %s (at most %d)",
                        what, ET_MAX_RANK);
        t->letter[t->n] = (char)c;
        t->pos[t->n] = *i;
        t->n++;
        (*i)++;
    }
}

/* Letter -> 0..51 (a-z, then A-Z). */
static int letter_slot(char c)
{
    return c >= 'a' ? c - 'a' : 26 + (c - 'A');
}

/* Output implied by NumPy's implicit mode. */
static void implicit_output(et_subscripts *s)
{
    int count[52] = {0}, first_pos[52];
    bool any_ell = false;
    for (int k = 0; k < s->n_ops; k++) {
        const et_term *t = &s->op[k];
        if (t->ell_pos >= 0)
            any_ell = true;
        for (int j = 0; j < t->n; j++) {
            int l = letter_slot(t->letter[j]);
            if (count[l]++ == 0)
                first_pos[l] = t->pos[j];
        }
    }
    et_term *o = &s->out;
    term_init(o, (int)strlen(s->text));
    if (any_ell) {
        o->ell_at = 0;
        o->ell_pos = o->start;
    }
    /* ASCII order: 'A'..'Z' then 'a'..'z'. */
    for (int u = 0; u < 2; u++) {
        for (int j = 0; j < 26; j++) {
            int l = u == 0 ? 26 + j : j;
            if (count[l] != 1)
                continue;
            o->letter[o->n] = (char)(u == 0 ? 'A' + j : 'a' + j);
            o->pos[o->n] = first_pos[l];
            o->n++;
        }
    }
}

et_status et_subscripts_parse(const char *text, et_subscripts *s, et_diag *d)
{
    memset(s, 0, sizeof(*s));
    s->arrow_pos = -1;
    if (!text)
        return et_diag_fail(d, -1, "no einsum given");
    size_t len = strnlen(text, ET_MAX_TEXT);
    if (len >= ET_MAX_TEXT)
        return et_diag_fail(d, ET_MAX_TEXT - 1,
                    "einsum text too long (at most %d characters)",
                    ET_MAX_TEXT - 1);
    memcpy(s->text, text, len + 1);

    int i = 0;
    char what[32];
    for (;;) {
        if (s->n_ops >= ET_MAX_OPERANDS)
            return et_diag_fail(d, i - 1, "too many operands (at most %d)",
                        ET_MAX_OPERANDS);
        et_term *t = &s->op[s->n_ops];
        term_init(t, i);
        snprintf(what, sizeof(what), "operand %d", s->n_ops);
        et_status st = parse_term(s->text, &i, t, what, d);
        if (st != ET_OK)
            return st;
        s->n_ops++;
        if (s->text[i] == ',') {
            i++;
            continue;
        }
        break;
    }
    if (s->text[i] == '-' || s->text[i] == '>') {
        if (s->text[i] != '-' || s->text[i + 1] != '>')
            return et_diag_fail(d, i, "'%c' that is not part of an arrow '->'",
                        s->text[i]);
        s->explicit_out = true;
        s->arrow_pos = i;
        i += 2;
        term_init(&s->out, i);
        et_status st = parse_term(s->text, &i, &s->out, "the output", d);
        if (st != ET_OK)
            return st;
        if (s->text[i] == ',')
            return et_diag_fail(d, i,
                        "',' after '->': the output is a single term");
        if (s->text[i] == '-' && s->text[i + 1] == '>')
            return et_diag_fail(d, i, "second arrow '->'");
        if (s->text[i] == '-' || s->text[i] == '>')
            return et_diag_fail(d, i, "'%c' that is not part of an arrow '->'",
                        s->text[i]);
    }
    if (!s->explicit_out) {
        implicit_output(s);
        return ET_OK;
    }
    /* Output letters: each once, each from some input. */
    const et_term *o = &s->out;
    for (int j = 0; j < o->n; j++) {
        for (int q = 0; q < j; q++)
            if (o->letter[q] == o->letter[j])
                return et_diag_fail(d, o->pos[j], "output index '%c' repeated",
                            o->letter[j]);
        bool found = false;
        for (int k = 0; k < s->n_ops && !found; k++)
            found = memchr(s->op[k].letter, o->letter[j],
                           (size_t)s->op[k].n) != NULL;
        if (!found)
            return et_diag_fail(d, o->pos[j],
                        "unknown output index '%c': it appears in no "
                        "operand",
                        o->letter[j]);
    }
    return ET_OK;
}

/* ---- --shape spec --------------------------------------------------- */

static void skip_spaces(const char *p, int *i)
{
    while (p[*i] == ' ')
        (*i)++;
}

/* Parses a decimal size >= 1 at p[*i]. */
static et_status parse_size(const char *p, int *i, int64_t *out,
                            et_diag *d)
{
    int start = *i;
    if (p[*i] == '-')
        return et_diag_fail(d, *i, "size must be at least 1, not negative");
    if (p[*i] < '0' || p[*i] > '9')
        return et_diag_fail(d, *i, "expected a size (a positive integer)");
    int64_t v = 0;
    while (p[*i] >= '0' && p[*i] <= '9') {
        int digit = p[*i] - '0';
        if (v > (INT64_MAX - digit) / 10)
            return et_diag_fail(d, start, "size does not fit in 64 bits");
        v = v * 10 + digit;
        (*i)++;
    }
    if (v == 0)
        return et_diag_fail(d, start, "size must be at least 1, not 0");
    *out = v;
    return ET_OK;
}

et_status et_shape_spec_parse(const char *spec, et_shape_spec *sp,
                              et_diag *d)
{
    memset(sp, 0, sizeof(*sp));
    sp->n_ell = -1;
    if (!spec)
        return ET_OK;
    if (strnlen(spec, ET_MAX_TEXT) >= ET_MAX_TEXT)
        return et_diag_fail(d, ET_MAX_TEXT - 1,
                    "shape spec too long (at most %d characters)",
                    ET_MAX_TEXT - 1);
    int i = 0;
    skip_spaces(spec, &i);
    if (spec[i] == '\0')
        return ET_OK;
    char cb[8];
    for (;;) {
        skip_spaces(spec, &i);
        int name_pos = i;
        bool ell = false;
        if (spec[i] == '.') {
            if (spec[i + 1] != '.' || spec[i + 2] != '.')
                return et_diag_fail(d, i, "'.' that is not part of '...'");
            if (sp->n_ell >= 0)
                return et_diag_fail(d, i, "sizes for '...' given twice");
            ell = true;
            i += 3;
        } else if (is_letter((unsigned char)spec[i])) {
            if (is_letter((unsigned char)spec[i + 1]))
                return et_diag_fail(d, i,
                            "index names are single letters (or '...')");
            for (int j = 0; j < sp->n; j++)
                if (sp->name[j][0] == spec[i])
                    return et_diag_fail(d, i, "size of '%c' given twice", spec[i]);
            i++;
        } else if (spec[i] == '\0' || spec[i] == ',') {
            return et_diag_fail(d, i, "expected an index name, a letter or '...'");
        } else {
            return et_diag_fail(d, i,
                        "bad character %s: expected an index letter or "
                        "'...'",
                        show_char((unsigned char)spec[i], cb));
        }
        skip_spaces(spec, &i);
        if (spec[i] != '=')
            return et_diag_fail(d, i, "expected '=' after the index name");
        i++;
        skip_spaces(spec, &i);
        if (ell) {
            sp->n_ell = 0;
            if (spec[i] != ',' && spec[i] != '\0') {
                for (;;) {
                    if (sp->n_ell >= ET_MAX_RANK)
                        return et_diag_fail(d, i,
                                    "too many '...' dimensions (at most "
                                    "%d)",
                                    ET_MAX_RANK);
                    et_status st =
                        parse_size(spec, &i, &sp->ell[sp->n_ell], d);
                    if (st != ET_OK)
                        return st;
                    sp->n_ell++;
                    skip_spaces(spec, &i);
                    if (spec[i] != 'x' && spec[i] != 'X')
                        break;
                    i++;
                    skip_spaces(spec, &i);
                }
            }
        } else {
            if (sp->n >= ET_MAX_INDICES)
                return et_diag_fail(d, name_pos, "too many sizes");
            sp->name[sp->n][0] = spec[name_pos];
            sp->name[sp->n][1] = '\0';
            if (spec[i] == '*' ||
                (strncmp(spec + i, "inf", 3) == 0 &&
                 !is_letter((unsigned char)spec[i + 3]))) {
                sp->open[sp->n] = true;
                sp->size[sp->n] = 0;
                i += spec[i] == '*' ? 1 : 3;
                sp->n++;
            } else {
                et_status st = parse_size(spec, &i, &sp->size[sp->n], d);
                if (st != ET_OK)
                    return st;
                sp->n++;
            }
        }
        skip_spaces(spec, &i);
        if (spec[i] == '\0')
            return ET_OK;
        if (spec[i] != ',')
            return et_diag_fail(d, i, "bad character %s: expected ',' or the end",
                        show_char((unsigned char)spec[i], cb));
        i++;
    }
}

/* ---- --dtype spec ------------------------------------------------------ */

et_status et_dtype_spec_parse(const char *spec, int n_ops,
                              et_dtype dtypes[ET_MAX_OPERANDS], et_diag *d)
{
    if (n_ops < 0 || n_ops > ET_MAX_OPERANDS)
        return et_diag_fail(d, -1, "bad operand count %d", n_ops);
    if (!spec) {
        for (int k = 0; k < n_ops; k++)
            dtypes[k] = ET_F64;
        return ET_OK;
    }
    if (strnlen(spec, ET_MAX_TEXT) >= ET_MAX_TEXT)
        return et_diag_fail(d, ET_MAX_TEXT - 1, "dtype spec too long");
    et_dtype got[ET_MAX_OPERANDS];
    int n = 0, i = 0;
    for (;;) {
        skip_spaces(spec, &i);
        int start = i;
        char word[16];
        int w = 0;
        while (spec[i] != '\0' && spec[i] != ',' && spec[i] != ' ') {
            if (w < (int)sizeof(word) - 1)
                word[w] = spec[i];
            w++;
            i++;
        }
        if (w == 0)
            return et_diag_fail(d, start, "expected a dtype (f16, f32, f64)");
        if (w >= (int)sizeof(word))
            return et_diag_fail(d, start, "unknown dtype (expected f16, f32, f64)");
        word[w] = '\0';
        et_dtype t;
        if (et_dtype_parse(word, &t) != 0)
            return et_diag_fail(d, start,
                        "unknown dtype '%s' (expected f16, f32, f64)", word);
        if (n >= ET_MAX_OPERANDS)
            return et_diag_fail(d, start, "more dtypes than operands");
        got[n++] = t;
        skip_spaces(spec, &i);
        if (spec[i] == '\0')
            break;
        if (spec[i] != ',')
            return et_diag_fail(d, i, "expected ',' between dtypes");
        i++;
    }
    if (n == 1) {
        for (int k = 0; k < n_ops; k++)
            dtypes[k] = got[0];
        return ET_OK;
    }
    if (n != n_ops)
        return et_diag_fail(d, 0,
                    "%d dtypes given for %d operands (give one for all or "
                    "one per operand)",
                    n, n_ops);
    for (int k = 0; k < n_ops; k++)
        dtypes[k] = got[k];
    return ET_OK;
}
