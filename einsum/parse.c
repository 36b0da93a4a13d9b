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
#include <stdlib.h>
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

/* ---- several problems in one shape spec ------------------------------- */

/*
 * Grammar (et_shape_spec_expand):
 *   spec  = entry { "," entry } ;
 *   entry = letter "=" value | "..." "=" dims ;     (dims kept as given)
 *   value = size | "*" | "inf" | list | range | letter ;
 *   list  = size "/" size { "/" size } ;
 *   range = size ":" size [ ":" size ] ;           (stop included)
 * A letter value ties the entry to that letter's values (both take the
 * same value in every problem).
 */

typedef struct mentry {
    char name;            /* 0 for "..." */
    int pos;              /* byte offset of the entry */
    char text[64];        /* a fixed value as written ("*", "3x2") */
    int n;                /* values of a varying entry, 0: fixed */
    int64_t *v;
    char ref;             /* tied to this letter, 0: not */
} mentry;

static et_status mentry_values(const char *spec, int start, int end,
                               mentry *m, et_diag *d)
{
    /* a list, a range or a single size */
    bool list = false, range = false;
    for (int i = start; i < end; i++) {
        list = list || spec[i] == '/';
        range = range || spec[i] == ':';
    }
    if (list && range)
        return et_diag_fail(d, start, "a size is a list (a/b/c) or a range "
                                      "(start:stop:step), not both");
    int64_t parts[3];
    int np = 0, i = start;
    if (range) {
        for (;;) {
            if (np == 3)
                return et_diag_fail(d, i, "a range is start:stop[:step]");
            et_status st = parse_size(spec, &i, &parts[np++], d);
            if (st != ET_OK)
                return st;
            if (i >= end)
                break;
            if (spec[i] != ':')
                return et_diag_fail(d, i, "expected ':' in a range");
            i++;
        }
        if (np < 2)
            return et_diag_fail(d, start, "a range is start:stop[:step]");
        int64_t step = np == 3 ? parts[2] : 1;
        if (parts[1] < parts[0])
            return et_diag_fail(d, start, "a range's stop (%lld) is below "
                                          "its start (%lld)",
                                (long long)parts[1], (long long)parts[0]);
        int64_t count = (parts[1] - parts[0]) / step + 1;
        if (count > ET_SHAPE_EXPAND_MAX)
            return et_diag_fail(d, start, "a range of %lld sizes (at most "
                                          "%d)",
                                (long long)count, ET_SHAPE_EXPAND_MAX);
        m->v = malloc((size_t)count * sizeof *m->v);
        if (!m->v)
            return et_diag_fail(d, -1, "out of memory");
        for (int64_t k = 0; k < count; k++)
            m->v[k] = parts[0] + k * step;
        m->n = (int)count;
        return ET_OK;
    }
    int count = 1;
    for (int k = start; k < end; k++)
        count += spec[k] == '/';
    m->v = malloc((size_t)count * sizeof *m->v);
    if (!m->v)
        return et_diag_fail(d, -1, "out of memory");
    for (;;) {
        et_status st = parse_size(spec, &i, &m->v[m->n++], d);
        if (st != ET_OK)
            return st;
        if (i >= end)
            break;
        if (spec[i] != '/')
            return et_diag_fail(d, i, "expected '/' between the sizes of "
                                      "a list");
        i++;
    }
    return ET_OK;
}

/* Parses the entry spec[start, end) into m[ne]; m[0 .. ne-1] are the
 * entries before it. */
static et_status mentry_parse(const char *spec, int start, int end,
                              mentry *m, int ne, et_diag *d)
{
    int i = start;
    while (spec[i] == ' ')
        i++;
    int e = end;
    while (e > i && spec[e - 1] == ' ')
        e--;
    if (ne > ET_MAX_INDICES)
        return et_diag_fail(d, i, "too many sizes");
    mentry *me = &m[ne];
    me->pos = i;
    const char *eq = memchr(spec + i, '=', (size_t)(e - i));
    if (!eq)
        return et_diag_fail(d, i, "expected NAME=SIZE");
    int v0 = (int)(eq - spec) + 1;
    while (spec[v0] == ' ')
        v0++;
    if (strncmp(spec + i, "...", 3) == 0) {
        me->name = 0;
    } else if (is_letter((unsigned char)spec[i]) &&
               (spec[i + 1] == '=' || spec[i + 1] == ' ')) {
        me->name = spec[i];
        for (int k = 0; k < ne; k++)
            if (m[k].name == me->name)
                return et_diag_fail(d, i, "size of '%c' given twice",
                                    me->name);
    } else {
        return et_diag_fail(d, i, "index names are single letters (or "
                                  "'...')");
    }
    if (v0 >= e && me->name)
        return et_diag_fail(d, v0, "expected a size");
    bool fixed = me->name == 0 || spec[v0] == '*' ||
                 (e - v0 == 3 && strncmp(spec + v0, "inf", 3) == 0);
    if (me->name && e - v0 == 1 && is_letter((unsigned char)spec[v0])) {
        me->ref = spec[v0];
    } else if (fixed) {
        /* v0 is past e when only spaces follow the '=' of "..." */
        int w = e > v0 ? e - v0 : 0;
        if (w >= (int)sizeof me->text)
            return et_diag_fail(d, v0, "size too long");
        memcpy(me->text, spec + v0, (size_t)w);
        me->text[w] = '\0';
    } else {
        return mentry_values(spec, v0, e, me, d);
    }
    return ET_OK;
}

/* Follows each tie to the entry with values at its root, and leaves that
 * root's letter in the tied entry's ref. */
static et_status mentry_ties(mentry *m, int ne, et_diag *d)
{
    for (int k = 0; k < ne; k++) {
        char r = m[k].ref;
        int hops = 0;
        int at = k;
        while (r) {
            int j = -1;
            for (int q = 0; q < ne; q++)
                if (m[q].name == r)
                    j = q;
            if (j < 0 || ++hops > ne)
                return et_diag_fail(d, m[k].pos,
                                    j < 0 ? "'%c' is tied to '%c', whose "
                                            "size is not given"
                                          : "'%c' is tied to '%c' in a "
                                            "circle",
                                    m[k].name, r);
            at = j;
            r = m[j].ref;
        }
        if (at == k)
            continue;
        if (m[at].text[0] && !m[at].n &&
            (m[at].text[0] == '*' || m[at].text[0] == 'i'))
            return et_diag_fail(d, m[k].pos, "'%c' is tied to an open "
                                             "axis: give it its own size",
                                m[k].name);
        m[k].ref = m[at].name; /* the root of the tie */
    }
    return ET_OK;
}

/* Writes problem c of the expansion, one line, at text + pos (cap bytes
 * in all); returns the new pos. */
static size_t mentry_write(const mentry *m, int ne, int64_t c, char *text,
                           size_t pos, size_t cap)
{
    /* the value index of each varying entry, the last one fastest */
    int idx[ET_MAX_INDICES + 1];
    int64_t rest = c;
    for (int k = ne - 1; k >= 0; k--) {
        idx[k] = 0;
        if (m[k].n > 0) {
            idx[k] = (int)(rest % m[k].n);
            rest /= m[k].n;
        }
    }
    for (int k = 0; k < ne; k++) {
        const mentry *me = &m[k];
        if (me->ref) {
            int j = 0;
            while (m[j].name != me->ref)
                j++;
            me = &m[j];
            if (me->n > 0)
                pos += (size_t)snprintf(text + pos, cap - pos, "%s%c=%lld",
                                        k ? "," : "", m[k].name,
                                        (long long)me->v[idx[j]]);
            else
                pos += (size_t)snprintf(text + pos, cap - pos, "%s%c=%s",
                                        k ? "," : "", m[k].name, me->text);
        } else if (me->n > 0) {
            pos += (size_t)snprintf(text + pos, cap - pos, "%s%c=%lld",
                                    k ? "," : "", me->name,
                                    (long long)me->v[idx[k]]);
        } else if (me->name) {
            pos += (size_t)snprintf(text + pos, cap - pos, "%s%c=%s",
                                    k ? "," : "", me->name, me->text);
        } else {
            pos += (size_t)snprintf(text + pos, cap - pos, "%s...=%s",
                                    k ? "," : "", me->text);
        }
    }
    pos += (size_t)snprintf(text + pos, cap - pos, "\n");
    return pos;
}

et_status et_shape_spec_expand(const char *spec, char **out, int *n_out,
                               et_diag *d)
{
    *out = NULL;
    *n_out = 0;
    if (!spec)
        return et_diag_fail(d, -1, "no shape spec");
    size_t len = strnlen(spec, ET_MAX_TEXT);
    if (len >= ET_MAX_TEXT)
        return et_diag_fail(d, ET_MAX_TEXT - 1, "shape spec too long");
    mentry *m = calloc(ET_MAX_INDICES + 1, sizeof *m);
    if (!m)
        return et_diag_fail(d, -1, "out of memory");
    int ne = 0;
    et_status st = ET_OK;
    char *text = NULL;
    int start = 0;
    for (;;) {
        int end = start;
        while (spec[end] && spec[end] != ',')
            end++;
        st = mentry_parse(spec, start, end, m, ne, d);
        if (st != ET_OK)
            break;
        ne++;
        if (!spec[end])
            break;
        start = end + 1;
    }
    if (st == ET_OK)
        st = mentry_ties(m, ne, d);
    int64_t total = 1;
    for (int k = 0; k < ne && st == ET_OK; k++)
        if (m[k].n > 0) {
            total *= m[k].n;
            if (total > ET_SHAPE_EXPAND_MAX)
                st = et_diag_fail(d, m[k].pos, "more than %d problems",
                                  ET_SHAPE_EXPAND_MAX);
        }
    size_t cap = (size_t)total * (len + (size_t)ne * 24 + 2) + 1;
    if (st == ET_OK && !(text = malloc(cap)))
        st = et_diag_fail(d, -1, "out of memory");
    size_t pos = 0;
    for (int64_t c = 0; c < total && st == ET_OK; c++)
        pos = mentry_write(m, ne, c, text, pos, cap);
    /* the entry that failed holds values too */
    for (int k = 0; k <= ET_MAX_INDICES; k++)
        free(m[k].v);
    free(m);
    if (st != ET_OK) {
        free(text);
        return st;
    }
    *out = text;
    *n_out = (int)total;
    return ET_OK;
}
