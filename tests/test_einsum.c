/*
 * test_einsum.c - the einsum front end: parser, sizes, dtypes, counts,
 * canonical form, matcher.
 *
 * Most cases are table-driven from tests/data/einsum_cases.txt (its header
 * says the format); the C tests below cover what a table cannot say
 * conveniently: struct fields, limits, match maps, bounded search, and a
 * small random hammering of the parser. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "einsum/einsum.h"

#define CASES_FILE "tests/data/einsum_cases.txt"
#define MAX_FIELDS 10
#define MAX_LINE 4096

typedef struct test_case {
    int line;
    int nf;
    char *f[MAX_FIELDS];
} test_case;

static test_case *g_cases;
static int g_n_cases;

/* ---- case file ---------------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
                     s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        s++;
    }
    return s;
}

static int load_cases(void **state)
{
    (void)state;
    FILE *f = fopen(CASES_FILE, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (run from the repository root)\n",
                CASES_FILE);
        return -1;
    }
    char buf[MAX_LINE];
    int cap = 0, line = 0;
    while (fgets(buf, sizeof(buf), f)) {
        line++;
        char *p = trim(buf);
        if (*p == '\0' || *p == '#')
            continue;
        if (g_n_cases == cap) {
            cap = cap ? 2 * cap : 256;
            g_cases = realloc(g_cases, (size_t)cap * sizeof(*g_cases));
        }
        test_case *c = &g_cases[g_n_cases++];
        memset(c, 0, sizeof(*c));
        c->line = line;
        char *save = strdup(p), *q = save;
        for (;;) {
            char *bar = strchr(q, '|');
            if (bar)
                *bar = '\0';
            if (c->nf < MAX_FIELDS)
                c->f[c->nf++] = trim(q);
            if (!bar)
                break;
            q = bar + 1;
        }
    }
    fclose(f);
    return 0;
}

static int free_cases(void **state)
{
    (void)state;
    for (int i = 0; i < g_n_cases; i++)
        free(g_cases[i].f[0]);
    free(g_cases);
    return 0;
}

/* "(2,3),(3,)" -> shapes. */
static int parse_shapes(const char *s, et_operand_shapes *sh)
{
    memset(sh, 0, sizeof(*sh));
    const char *p = s;
    while (*p) {
        if (*p != '(')
            return -1;
        p++;
        int k = sh->n_ops++;
        while (*p && *p != ')') {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p)
                return -1;
            sh->dim[k][sh->rank[k]++] = v;
            p = end;
            if (*p == ',')
                p++;
        }
        if (*p != ')')
            return -1;
        p++;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* Resolves einsum text with SIZES and DTYPES fields. */
static et_status resolve(const char *text, const char *sizes,
                         const char *dtypes, et_einsum *e, et_diag *d)
{
    static et_subscripts s;
    static et_shape_spec sp;
    static et_operand_shapes sh;
    et_dtype dt[ET_MAX_OPERANDS];
    memset(d, 0, sizeof(*d));
    d->pos = -2;
    et_status st = et_subscripts_parse(text, &s, d);
    if (st != ET_OK)
        return st;
    st = et_dtype_spec_parse(strcmp(dtypes, "-") ? dtypes : NULL, s.n_ops,
                             dt, d);
    if (st != ET_OK)
        return st;
    if (sizes[0] == '(') {
        if (parse_shapes(sizes, &sh) != 0)
            fail_msg("bad shapes field '%s'", sizes);
        return et_einsum_resolve(&s, NULL, &sh, dt, e, d);
    }
    st = et_shape_spec_parse(strcmp(sizes, "-") ? sizes : NULL, &sp, d);
    if (st != ET_OK)
        return st;
    st = et_einsum_resolve(&s, &sp, NULL, dt, e, d);

    /* the convenience entry must agree */
    static et_einsum e2;
    et_diag d2;
    et_status st2 = et_einsum_from_strings(
        text, strcmp(sizes, "-") ? sizes : NULL,
        strcmp(dtypes, "-") ? dtypes : NULL, &e2, &d2);
    if (st2 != st || (st == ET_OK && memcmp(e, &e2, sizeof(e2)) != 0) ||
        (st != ET_OK && d2.pos != d->pos))
        fail_msg("et_einsum_from_strings disagrees on '%s'", text);
    return st;
}

static int count_fail;

static void case_fail(const test_case *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void case_fail(const test_case *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: %s '%s': ", CASES_FILE, c->line, c->f[0],
            c->nf > 1 ? c->f[1] : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    count_fail++;
}

static int need_fields(const test_case *c, int n)
{
    if (c->nf != n) {
        case_fail(c, "expected %d fields, got %d", n, c->nf);
        return 0;
    }
    return 1;
}

/* "3x2" or "" -> dims, rank. */
static int parse_dims(const char *s, int64_t *dims)
{
    int r = 0;
    while (*s) {
        char *end;
        dims[r++] = strtoll(s, &end, 10);
        s = end;
        if (*s == 'x')
            s++;
        else if (*s)
            return -1;
    }
    return r;
}

static void check_ok(const test_case *c)
{
    if (c->nf != 7 && !need_fields(c, 6))
        return;
    static et_einsum e;
    et_diag d;
    et_status st = resolve(c->f[1], c->f[2], c->f[3], &e, &d);
    if (st != ET_OK) {
        case_fail(c, "refused: %s (pos %d)", d.msg, d.pos);
        return;
    }
    if (strcmp(e.text, c->f[4]) != 0)
        case_fail(c, "normalized '%s', expected '%s'", e.text, c->f[4]);

    /* index table */
    char got[2048] = "", one[64];
    for (int i = 0; i < e.n_idx; i++) {
        snprintf(one, sizeof(one), "%s%s=%lld:%s", i ? " " : "",
                 e.idx[i].name, (long long)e.idx[i].size,
                 et_role_name(e.idx[i].role));
        strcat(got, one);
    }
    const char *want = strcmp(c->f[5], "-") ? c->f[5] : "";
    if (strcmp(got, want) != 0)
        case_fail(c, "indices '%s', expected '%s'", got, want);

    /* structural invariants of the layout */
    for (int i = 0; i < e.n_idx; i++)
        if ((i < e.n_out) != (e.idx[i].role != ET_ROLE_SUMMED))
            case_fail(c, "index %d: role and position disagree", i);
    for (int j = 0; j < e.out.rank; j++)
        if (e.out.idx[j] != j || e.out.dim[j] != e.idx[j].size)
            case_fail(c, "output dim %d wrong", j);
    for (int k = 0; k < e.n_ops; k++)
        for (int r = 0; r < e.op[k].rank; r++) {
            int64_t dim = e.op[k].dim[r], size = e.idx[e.op[k].idx[r]].size;
            if (dim != size && dim != 1)
                case_fail(c, "operand %d dim %d: %lld vs size %lld", k, r,
                          (long long)dim, (long long)size);
        }

    /* checks */
    char *checks = strdup(c->nf > 6 ? c->f[6] : "-");
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(&e, ops);
    for (char *tok = strtok(checks, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            if (strcmp(tok, "-") != 0)
                case_fail(c, "bad check '%s'", tok);
            continue;
        }
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        long long v = strtoll(val, NULL, 10);
        if (!strcmp(key, "ops")) {
            if (ops[e.acc_dtype] != v)
                case_fail(c, "ops %lld, expected %lld",
                          (long long)ops[e.acc_dtype], v);
            for (int t = 0; t < ET_DTYPE_COUNT; t++)
                if (t != (int)e.acc_dtype && ops[t] != 0)
                    case_fail(c, "ops booked to %s", et_dtype_name(t));
        } else if (!strcmp(key, "direct")) {
            if (et_einsum_ops_direct(&e) != v)
                case_fail(c, "direct ops %lld, expected %lld",
                          (long long)et_einsum_ops_direct(&e), v);
        } else if (!strcmp(key, "bytes")) {
            if (et_einsum_bytes(&e) != v)
                case_fail(c, "bytes %lld, expected %lld",
                          (long long)et_einsum_bytes(&e), v);
        } else if (!strcmp(key, "iter")) {
            if (et_einsum_iter_size(&e) != v)
                case_fail(c, "iter %lld, expected %lld",
                          (long long)et_einsum_iter_size(&e), v);
        } else if (!strcmp(key, "acc") || !strcmp(key, "out")) {
            et_dtype t = !strcmp(key, "acc") ? e.acc_dtype : e.out.dtype;
            if (strcmp(et_dtype_name(t), val) != 0)
                case_fail(c, "%s dtype %s, expected %s", key,
                          et_dtype_name(t), val);
        } else if (!strncmp(key, "elems", 5)) {
            int k = atoi(key + 5);
            if (k < -1 || k >= e.n_ops ||
                et_einsum_operand_elems(&e, k) != v)
                case_fail(c, "%s: %lld, expected %lld", key,
                          k >= -1 && k < e.n_ops
                              ? (long long)et_einsum_operand_elems(&e, k)
                              : -1LL,
                          v);
        } else if (!strncmp(key, "dims", 4)) {
            int k = atoi(key + 4);
            int64_t dims[ET_MAX_RANK];
            int r = parse_dims(val, dims);
            if (k < 0 || k >= e.n_ops || r != e.op[k].rank) {
                case_fail(c, "%s: rank differs", key);
                continue;
            }
            for (int q = 0; q < r; q++)
                if (dims[q] != e.op[k].dim[q])
                    case_fail(c, "%s: dim %d is %lld", key, q,
                              (long long)e.op[k].dim[q]);
        } else if (!strncmp(key, "idx", 3)) {
            int k = atoi(key + 3), r = 0;
            if (k < 0 || k >= e.n_ops) {
                case_fail(c, "%s: no such operand", key);
                continue;
            }
            for (const char *p = val; *p;) {
                char *end;
                long x = strtol(p, &end, 10);
                if (r >= e.op[k].rank || e.op[k].idx[r] != x)
                    case_fail(c, "%s: dim %d differs", key, r);
                r++;
                p = *end == ',' ? end + 1 : end;
                if (end == p && *p)
                    break;
            }
            if (r != e.op[k].rank)
                case_fail(c, "%s: rank %d, expected %d", key, e.op[k].rank,
                          r);
        } else {
            case_fail(c, "unknown check '%s'", key);
        }
    }
    free(checks);
}

static void check_err(const test_case *c)
{
    if (!need_fields(c, 6))
        return;
    static et_einsum e;
    et_diag d;
    et_status st = resolve(c->f[1], c->f[2], c->f[3], &e, &d);
    int pos = atoi(c->f[4]);
    if (st != ET_ERR_INPUT) {
        case_fail(c, "status %s, expected bad input", et_status_str(st));
        return;
    }
    if (d.pos != pos)
        case_fail(c, "caret at %d, expected %d (%s)", d.pos, pos, d.msg);
    if (!strstr(d.msg, c->f[5]))
        case_fail(c, "message '%s' lacks '%s'", d.msg, c->f[5]);
    if (pos >= 0 && (size_t)pos > strlen(c->f[1]))
        case_fail(c, "caret beyond the text");
}

static void check_specerr(const test_case *c)
{
    if (!need_fields(c, 4))
        return;
    et_shape_spec sp;
    et_diag d = {0};
    et_status st = et_shape_spec_parse(c->f[1], &sp, &d);
    if (st != ET_ERR_INPUT) {
        case_fail(c, "accepted");
        return;
    }
    if (d.pos != atoi(c->f[2]))
        case_fail(c, "caret at %d, expected %s (%s)", d.pos, c->f[2], d.msg);
    if (!strstr(d.msg, c->f[3]))
        case_fail(c, "message '%s' lacks '%s'", d.msg, c->f[3]);
}

static void check_dterr(const test_case *c)
{
    if (!need_fields(c, 5))
        return;
    et_dtype dt[ET_MAX_OPERANDS];
    et_diag d = {0};
    et_status st = et_dtype_spec_parse(c->f[1], atoi(c->f[2]), dt, &d);
    if (st != ET_ERR_INPUT) {
        case_fail(c, "accepted");
        return;
    }
    if (d.pos != atoi(c->f[3]))
        case_fail(c, "caret at %d, expected %s (%s)", d.pos, c->f[3], d.msg);
    if (!strstr(d.msg, c->f[4]))
        case_fail(c, "message '%s' lacks '%s'", d.msg, c->f[4]);
}

static void check_canon(const test_case *c, int want_same)
{
    if (!need_fields(c, 7))
        return;
    static et_einsum a, b;
    et_diag d;
    if (resolve(c->f[1], c->f[2], c->f[3], &a, &d) != ET_OK ||
        resolve(c->f[4], c->f[5], c->f[6], &b, &d) != ET_OK) {
        case_fail(c, "refused: %s", d.msg);
        return;
    }
    char ca[4096], cb[4096], ca2[4096];
    et_einsum_canonical(&a, ca, sizeof(ca));
    et_einsum_canonical(&b, cb, sizeof(cb));
    et_einsum_canonical(&a, ca2, sizeof(ca2));
    if (strcmp(ca, ca2) != 0)
        case_fail(c, "not deterministic");
    if ((strcmp(ca, cb) == 0) != want_same)
        case_fail(c, "canonical forms '%s' and '%s' should %s", ca, cb,
                  want_same ? "be equal" : "differ");
}

static void check_match(const test_case *c, int want_match)
{
    if (!need_fields(c, want_match ? 5 : 6))
        return;
    static et_einsum u;
    static et_subscripts p;
    et_diag d;
    if (resolve(c->f[2], c->f[3], "-", &u, &d) != ET_OK) {
        case_fail(c, "einsum refused: %s", d.msg);
        return;
    }
    if (et_subscripts_parse(c->f[1], &p, &d) != ET_OK) {
        case_fail(c, "pattern refused: %s", d.msg);
        return;
    }
    static et_match m[64];
    int n = -1;
    memset(&d, 0, sizeof(d));
    et_status st = et_einsum_match(&p, &u, m, 64, &n, &d);
    if (!want_match) {
        if (st != ET_ERR_INPUT || n != 0)
            case_fail(c, "matched %d times", n);
        if (d.pos != atoi(c->f[4]))
            case_fail(c, "caret at %d, expected %s (%s)", d.pos, c->f[4],
                      d.msg);
        if (!strstr(d.msg, c->f[5]))
            case_fail(c, "message '%s' lacks '%s'", d.msg, c->f[5]);
        return;
    }
    if (st != ET_OK) {
        case_fail(c, "no match: %s", d.msg);
        return;
    }
    if (n != atoi(c->f[4]))
        case_fail(c, "%d matches, expected %s", n, c->f[4]);
    /* every reported match must really map the pattern onto the einsum */
    static et_einsum pe;
    et_einsum_pattern(&p, &pe, &d);
    for (int q = 0; q < n && q < 64; q++) {
        for (int j = 0; j < pe.n_ops; j++) {
            const et_operand *a = &pe.op[j], *b = &u.op[m[q].op_map[j]];
            if (a->rank != b->rank) {
                case_fail(c, "match %d: operand %d rank", q, j);
                continue;
            }
            for (int r = 0; r < a->rank; r++)
                if (m[q].idx_map[a->idx[r]] != b->idx[r])
                    case_fail(c, "match %d: operand %d dim %d", q, j, r);
        }
        for (int j = 0; j < pe.n_out; j++)
            if (m[q].idx_map[j] != j)
                case_fail(c, "match %d: output %d", q, j);
        for (int r = 0; r < q; r++)
            if (!memcmp(&m[r], &m[q], sizeof(m[q])))
                case_fail(c, "match %d repeats match %d", q, r);
    }
}

/* Runs every case of one kind; fails the cmocka test if any fails. */
static void run_kind(const char *kind)
{
    int seen = 0;
    count_fail = 0;
    for (int i = 0; i < g_n_cases; i++) {
        const test_case *c = &g_cases[i];
        if (strcmp(c->f[0], kind) != 0)
            continue;
        seen++;
        if (!strcmp(kind, "ok"))
            check_ok(c);
        else if (!strcmp(kind, "err"))
            check_err(c);
        else if (!strcmp(kind, "specerr"))
            check_specerr(c);
        else if (!strcmp(kind, "dterr"))
            check_dterr(c);
        else if (!strcmp(kind, "same"))
            check_canon(c, 1);
        else if (!strcmp(kind, "differ"))
            check_canon(c, 0);
        else if (!strcmp(kind, "match"))
            check_match(c, 1);
        else if (!strcmp(kind, "nomatch"))
            check_match(c, 0);
    }
    fprintf(stderr, "  %d '%s' cases, %d failed checks\n", seen, kind,
            count_fail);
    assert_true(seen > 0);
    assert_int_equal(count_fail, 0);
}

static void test_cases_known_kinds(void **state)
{
    (void)state;
    static const char *const kinds[] = {"ok",   "err",    "specerr",
                                        "dterr", "same",  "differ",
                                        "match", "nomatch"};
    for (int i = 0; i < g_n_cases; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
            known |= !strcmp(g_cases[i].f[0], kinds[k]);
        if (!known)
            fail_msg("%s:%d: unknown kind '%s'", CASES_FILE,
                     g_cases[i].line, g_cases[i].f[0]);
    }
    assert_true(g_n_cases > 150);
}

static void test_cases_ok(void **state) { (void)state; run_kind("ok"); }
static void test_cases_err(void **state) { (void)state; run_kind("err"); }
static void test_cases_specerr(void **state)
{
    (void)state;
    run_kind("specerr");
}
static void test_cases_dterr(void **state)
{
    (void)state;
    run_kind("dterr");
}
static void test_cases_same(void **state) { (void)state; run_kind("same"); }
static void test_cases_differ(void **state)
{
    (void)state;
    run_kind("differ");
}
static void test_cases_match(void **state)
{
    (void)state;
    run_kind("match");
}
static void test_cases_nomatch(void **state)
{
    (void)state;
    run_kind("nomatch");
}

/* ---- C-only tests --------------------------------------------------------- */

static void test_subscripts_fields(void **state)
{
    (void)state;
    static et_subscripts s;
    et_diag d;
    assert_int_equal(et_subscripts_parse(" a...b , c->", &s, &d), ET_OK);
    assert_int_equal(s.n_ops, 2);
    assert_int_equal(s.op[0].n, 2);
    assert_int_equal(s.op[0].letter[0], 'a');
    assert_int_equal(s.op[0].pos[0], 1);
    assert_int_equal(s.op[0].ell_at, 1);
    assert_int_equal(s.op[0].ell_pos, 2);
    assert_int_equal(s.op[0].pos[1], 5);
    assert_int_equal(s.op[1].start, 8);
    assert_int_equal(s.op[1].ell_at, -1);
    assert_true(s.explicit_out);
    assert_int_equal(s.arrow_pos, 10);
    assert_int_equal(s.out.n, 0);

    /* implicit output: letters once, ASCII order, ellipsis first */
    assert_int_equal(et_subscripts_parse("zb...,Ab,c", &s, &d), ET_OK);
    assert_false(s.explicit_out);
    assert_int_equal(s.arrow_pos, -1);
    assert_int_equal(s.out.n, 3);
    assert_memory_equal(s.out.letter, "Acz", 3);
    assert_int_equal(s.out.ell_at, 0);
    assert_int_equal(s.out.pos[0], 6); /* where 'A' stands in the inputs */
}

static void test_text_limits(void **state)
{
    (void)state;
    static et_subscripts s;
    static char text[ET_MAX_TEXT + 16];
    et_diag d;
    /* the longest accepted text: ET_MAX_TEXT-1 characters */
    memset(text, ' ', ET_MAX_TEXT - 1);
    text[0] = 'i';
    text[ET_MAX_TEXT - 1] = '\0';
    assert_int_equal(et_subscripts_parse(text, &s, &d), ET_OK);
    text[ET_MAX_TEXT - 1] = ' ';
    text[ET_MAX_TEXT] = '\0';
    assert_int_equal(et_subscripts_parse(text, &s, &d), ET_ERR_INPUT);
    assert_int_equal(d.pos, ET_MAX_TEXT - 1);
    assert_non_null(strstr(d.msg, "too long"));
    assert_int_equal(et_subscripts_parse(NULL, &s, &d), ET_ERR_INPUT);

    /* a long implicit einsum whose explicit form no longer fits */
    static et_einsum e;
    char *p = text;
    for (int k = 0; k < 32; k++) {
        memcpy(p, "abcdefghijklmnopqrstuvwxyzABCDE", 31);
        p += 31;
        *p++ = k < 31 ? ',' : '\0';
    }
    assert_true(strlen(text) < ET_MAX_TEXT);
    assert_int_equal(et_einsum_from_strings(text, "a=1", NULL, &e, &d),
                     ET_ERR_INPUT);
}

static void test_resolve_arguments(void **state)
{
    (void)state;
    static et_subscripts s;
    static et_shape_spec sp;
    static et_operand_shapes sh;
    static et_einsum e;
    et_diag d;
    assert_int_equal(et_subscripts_parse("ij", &s, &d), ET_OK);
    assert_int_equal(et_einsum_resolve(&s, NULL, NULL, NULL, &e, &d),
                     ET_ERR_INPUT);
    assert_int_equal(et_einsum_resolve(&s, &sp, &sh, NULL, &e, &d),
                     ET_ERR_INPUT);
    /* dtypes NULL: all f64 */
    assert_int_equal(et_shape_spec_parse("i=2, j = 3", &sp, &d), ET_OK);
    assert_int_equal(et_einsum_resolve(&s, &sp, NULL, NULL, &e, &d), ET_OK);
    assert_int_equal(e.op[0].dtype, ET_F64);
    assert_int_equal(e.acc_dtype, ET_F64);
    /* spec fields */
    assert_int_equal(et_shape_spec_parse("x=4096,i=35,...=3x2", &sp, &d),
                     ET_OK);
    assert_int_equal(sp.n, 2);
    assert_string_equal(sp.name[1], "i");
    assert_int_equal(sp.size[0], 4096);
    assert_int_equal(sp.n_ell, 2);
    assert_int_equal(sp.ell[0], 3);
    assert_int_equal(sp.ell[1], 2);
    assert_int_equal(et_shape_spec_parse("", &sp, &d), ET_OK);
    assert_int_equal(sp.n, 0);
    assert_int_equal(sp.n_ell, -1);
    /* dtype spec: one for all */
    et_dtype dt[ET_MAX_OPERANDS];
    assert_int_equal(et_dtype_spec_parse("f16", 3, dt, &d), ET_OK);
    assert_int_equal(dt[2], ET_F16);
    assert_int_equal(et_dtype_spec_parse(" f32 , f64 ", 2, dt, &d), ET_OK);
    assert_int_equal(dt[0], ET_F32);
    assert_int_equal(dt[1], ET_F64);
}

static void test_pattern_numbering(void **state)
{
    (void)state;
    static et_subscripts s;
    static et_einsum e;
    et_diag d;
    assert_int_equal(et_subscripts_parse("xik,kj->xij", &s, &d), ET_OK);
    assert_int_equal(et_einsum_pattern(&s, &e, &d), ET_OK);
    assert_int_equal(e.n_idx, 4);
    assert_int_equal(e.n_out, 3);
    assert_int_equal(et_einsum_index_find(&e, "x"), 0);
    assert_int_equal(et_einsum_index_find(&e, "i"), 1);
    assert_int_equal(et_einsum_index_find(&e, "j"), 2);
    assert_int_equal(et_einsum_index_find(&e, "k"), 3);
    assert_int_equal(et_einsum_index_find(&e, "q"), -1);
    assert_int_equal(e.idx[3].role, ET_ROLE_SUMMED);
    assert_int_equal(e.idx[0].size, 0);
    assert_string_equal(e.text, "xik,kj->xij");
}

static void test_match_maps(void **state)
{
    (void)state;
    static et_subscripts p;
    static et_einsum u;
    et_diag d;
    et_match m[4];
    int n;
    /* operands swapped and renamed */
    assert_int_equal(et_subscripts_parse("xik,kj->xij", &p, &d), ET_OK);
    assert_int_equal(et_einsum_from_strings("nc,bmn->bmc",
                                            "b=2,m=3,n=4,c=5", NULL, &u,
                                            &d),
                     ET_OK);
    assert_int_equal(et_einsum_match(&p, &u, m, 4, &n, &d), ET_OK);
    assert_int_equal(n, 1);
    assert_int_equal(m[0].op_map[0], 1); /* pattern xik = user bmn */
    assert_int_equal(m[0].op_map[1], 0);
    /* pattern k (index 3) -> user n */
    assert_string_equal(u.idx[m[0].idx_map[3]].name, "n");
    assert_string_equal(u.idx[m[0].idx_map[0]].name, "b");

    /* symmetric: both operand orders, reported once each */
    assert_int_equal(et_subscripts_parse("ij,ij->", &p, &d), ET_OK);
    assert_int_equal(
        et_einsum_from_strings("ab,ab->", "a=2,b=3", NULL, &u, &d), ET_OK);
    assert_int_equal(et_einsum_match(&p, &u, m, 4, &n, &d), ET_OK);
    assert_int_equal(n, 2);
    assert_int_not_equal(m[0].op_map[0], m[1].op_map[0]);
    /* cap smaller than the count: the count is still total */
    assert_int_equal(et_einsum_match(&p, &u, m, 1, &n, &d), ET_OK);
    assert_int_equal(n, 2);
    assert_int_equal(et_einsum_match(&p, &u, NULL, 0, &n, &d), ET_OK);
    assert_int_equal(n, 2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Builds an einsum of 32 operands from letters so that shuffling them
 * and renaming indices must keep the canonical form. */
static void test_canonical_32_operands(void **state)
{
    (void)state;
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static et_einsum e1, e2;
    char ops[32][4], text1[512], text2[512], c1[4096], c2[4096];
    et_diag d;
    /* chain a-b, b-c, ..., output a and the last letter */
    for (int k = 0; k < 32; k++)
        snprintf(ops[k], sizeof(ops[k]), "%c%c", letters[k],
                 letters[k + 1]);
    char spec[512] = "";
    for (int k = 0; k < 33; k++) {
        char one[16];
        snprintf(one, sizeof(one), "%s%c=%d", k ? "," : "", letters[k],
                 2 + k % 3);
        strcat(spec, one);
    }
    text1[0] = '\0';
    for (int k = 0; k < 32; k++) {
        strcat(text1, k ? "," : "");
        strcat(text1, ops[k]);
    }
    strcat(text1, "->aG");
    /* reversed operand order */
    text2[0] = '\0';
    for (int k = 31; k >= 0; k--) {
        strcat(text2, k < 31 ? "," : "");
        strcat(text2, ops[k]);
    }
    strcat(text2, "->aG");
    assert_int_equal(et_einsum_from_strings(text1, spec, NULL, &e1, &d),
                     ET_OK);
    assert_int_equal(et_einsum_from_strings(text2, spec, NULL, &e2, &d),
                     ET_OK);
    double t0 = now_s();
    et_einsum_canonical(&e1, c1, sizeof(c1));
    et_einsum_canonical(&e2, c2, sizeof(c2));
    assert_string_equal(c1, c2);

    /* 32 operands with a private summed index each, all tied: bounded */
    char text3[512] = "", spec3[512] = "";
    for (int k = 0; k < 32; k++) {
        char one[16];
        snprintf(one, sizeof(one), "%s%c", k ? "," : "", letters[k]);
        strcat(text3, one);
        snprintf(one, sizeof(one), "%s%c=2", k ? "," : "", letters[k]);
        strcat(spec3, one);
    }
    strcat(text3, "->");
    assert_int_equal(et_einsum_from_strings(text3, spec3, NULL, &e1, &d),
                     ET_OK);
    et_einsum_canonical(&e1, c1, sizeof(c1));
    /* 32 identical operands */
    char text4[512] = "";
    for (int k = 0; k < 32; k++)
        strcat(text4, k ? ",ij" : "ij");
    strcat(text4, "->j");
    assert_int_equal(et_einsum_from_strings(text4, "i=2,j=3", NULL, &e1,
                                            &d),
                     ET_OK);
    et_einsum_canonical(&e1, c1, sizeof(c1));
    assert_true(now_s() - t0 < 2.0);

    /* the form itself, for one matmul */
    assert_int_equal(et_einsum_from_strings("xik,kj->xij",
                                            "x=4096,i=35,k=35,j=35", "f32",
                                            &e1, &d),
                     ET_OK);
    et_einsum_canonical(&e1, c1, sizeof(c1));
    assert_string_equal(c1, "dc,abd->abc|a=4096,b=35,c=35,d=35|"
                            "f32,f32->f32");
    /* a small buffer is filled safely */
    char small[8];
    et_einsum_canonical(&e1, small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
}

static void test_match_many_operands(void **state)
{
    (void)state;
    static et_subscripts p;
    static et_einsum u;
    char text[512] = "";
    et_diag d;
    int n;
    for (int k = 0; k < 32; k++)
        strcat(text, k ? ",a" : "a");
    strcat(text, "->a");
    assert_int_equal(et_subscripts_parse(text, &p, &d), ET_OK);
    assert_int_equal(et_einsum_from_strings(text, "a=2", NULL, &u, &d),
                     ET_OK);
    double t0 = now_s();
    assert_int_equal(et_einsum_match(&p, &u, NULL, 0, &n, &d), ET_OK);
    assert_int_equal(n, ET_MATCH_COUNT_MAX); /* 32! saturates */
    assert_true(now_s() - t0 < 5.0);
}

/* Pattern operands in a scrambled order must not make the search blow
 * up: a 32-cycle has 32 rotations, and is not two 16-cycles. */
static void cycle_text(char *out, const int *perm, int two_cycles)
{
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    out[0] = '\0';
    for (int q = 0; q < 32; q++) {
        int k = perm[q], next = k + 1;
        if (two_cycles)
            next = (k % 16 == 15) ? k - 15 : k + 1;
        else if (next == 32)
            next = 0;
        char op[4] = {letters[k], letters[next], '\0', '\0'};
        if (q)
            strcat(out, ",");
        strcat(out, op);
    }
    strcat(out, "->");
}

static void test_match_scrambled_cycles(void **state)
{
    (void)state;
    static et_subscripts p;
    static et_einsum u;
    int perm[32], ident[32];
    unsigned seed = 7;
    for (int k = 0; k < 32; k++)
        perm[k] = ident[k] = k;
    for (int k = 31; k > 0; k--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 16) % (unsigned)(k + 1));
        int t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    char ptext[256], utext[256];
    char spec[512] = "";
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for (int k = 0; k < 32; k++) {
        char one[8];
        snprintf(one, sizeof(one), "%s%c=2", k ? "," : "", letters[k]);
        strcat(spec, one);
    }
    et_diag d;
    int n;
    double t0 = now_s();
    cycle_text(ptext, perm, 0);
    assert_int_equal(et_subscripts_parse(ptext, &p, &d), ET_OK);
    cycle_text(utext, ident, 0);
    assert_int_equal(et_einsum_from_strings(utext, spec, NULL, &u, &d),
                     ET_OK);
    assert_int_equal(et_einsum_match(&p, &u, NULL, 0, &n, &d), ET_OK);
    assert_int_equal(n, 32);

    cycle_text(utext, ident, 1);
    assert_int_equal(et_einsum_from_strings(utext, spec, NULL, &u, &d),
                     ET_OK);
    assert_int_equal(et_einsum_match(&p, &u, NULL, 0, &n, &d),
                     ET_ERR_INPUT);
    assert_int_equal(n, 0);
    assert_non_null(strstr(d.msg, "has no partner"));
    assert_true(now_s() - t0 < 2.0);

    /* and the canonical forms tell them apart, shuffled or not */
    static et_einsum a, b;
    char ca[4096], cb[4096];
    cycle_text(ptext, perm, 0);
    assert_int_equal(et_einsum_from_strings(ptext, spec, NULL, &a, &d),
                     ET_OK);
    cycle_text(utext, ident, 0);
    assert_int_equal(et_einsum_from_strings(utext, spec, NULL, &b, &d),
                     ET_OK);
    et_einsum_canonical(&a, ca, sizeof(ca));
    et_einsum_canonical(&b, cb, sizeof(cb));
    assert_string_equal(ca, cb);
    cycle_text(utext, perm, 1);
    assert_int_equal(et_einsum_from_strings(utext, spec, NULL, &b, &d),
                     ET_OK);
    et_einsum_canonical(&b, cb, sizeof(cb));
    assert_string_not_equal(ca, cb);
}

/* A small seeded hammering: nothing may crash, every refusal is bad input
 * with a caret inside the text. The real fuzzer is fuzz/fuzz_einsum.c. */
static void test_random_inputs(void **state)
{
    (void)state;
    static const char alphabet[] = "iijjkkAZ.,,->-> ...Xx1";
    static const char *const specs[] = {"i=2,j=3,k=1", "i=1,j=1,k=1,A=2,Z=1",
                                        "...=2x1,i=2,j=2,k=2,A=1,Z=1,X=1,x=1",
                                        ""};
    static et_einsum e;
    static et_subscripts s;
    unsigned seed = 12345;
    int accepted = 0;
    for (int iter = 0; iter < 20000; iter++) {
        char text[40];
        seed = seed * 1103515245u + 12345u;
        int len = (int)((seed >> 16) % 24);
        for (int q = 0; q < len; q++) {
            seed = seed * 1103515245u + 12345u;
            text[q] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        text[len] = '\0';
        et_diag d = {0};
        et_status st = et_subscripts_parse(text, &s, &d);
        if (st != ET_OK) {
            assert_int_equal(st, ET_ERR_INPUT);
            assert_true(d.pos >= 0 && d.pos <= len);
        }
        for (size_t q = 0; q < sizeof(specs) / sizeof(specs[0]); q++) {
            st = et_einsum_from_strings(text, specs[q], NULL, &e, &d);
            assert_true(st == ET_OK || st == ET_ERR_INPUT);
            if (st == ET_ERR_INPUT)
                assert_true(d.pos >= -1 && d.pos <= len);
            else
                accepted++;
        }
    }
    assert_true(accepted > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_known_kinds),
        cmocka_unit_test(test_cases_ok),
        cmocka_unit_test(test_cases_err),
        cmocka_unit_test(test_cases_specerr),
        cmocka_unit_test(test_cases_dterr),
        cmocka_unit_test(test_cases_same),
        cmocka_unit_test(test_cases_differ),
        cmocka_unit_test(test_cases_match),
        cmocka_unit_test(test_cases_nomatch),
        cmocka_unit_test(test_subscripts_fields),
        cmocka_unit_test(test_text_limits),
        cmocka_unit_test(test_resolve_arguments),
        cmocka_unit_test(test_pattern_numbering),
        cmocka_unit_test(test_match_maps),
        cmocka_unit_test(test_canonical_32_operands),
        cmocka_unit_test(test_match_many_operands),
        cmocka_unit_test(test_match_scrambled_cycles),
        cmocka_unit_test(test_random_inputs),
    };
    return cmocka_run_group_tests_name("einsum", tests, load_cases,
                                       free_cases);
}
