/*
 * test_spaces.c - the expression language, the YAML space loader (every
 * example, every error kind with its line and column), binding with
 * renamed and reordered einsums, points -> opts. Run from the repository
 * root.
 *
 * Broken spaces are table-driven: each tests/data/spaces/bad_*.yaml starts
 * with a comment "# expect: LINE:COL: text" giving the 1-based position
 * and a part of the message the loader must report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include <cmocka.h>

#include "spaces/expr.h"
#include "spaces/space.h"

/* ---- expressions ---------------------------------------------------------- */

static int names(void *ctx, const char *nm, size_t len)
{
    (void)ctx;
    static const char *const known[] = {"a", "b", "n", "big", "zero"};
    for (int i = 0; i < 5; i++)
        if (strlen(known[i]) == len && memcmp(known[i], nm, len) == 0)
            return i;
    return -1;
}

/* a=7 b=3 n=0 big=INT64_MAX zero=0 */
static const int64_t vals[] = {7, 3, 0, INT64_MAX, 0};

static int64_t ev(const char *text)
{
    et_expr *e = NULL;
    et_diag d;
    memset(&d, 0, sizeof(d));
    et_status st = et_expr_parse(text, names, NULL, &e, &d);
    if (st != ET_OK)
        fail_msg("parse '%s': %s", text, d.msg);
    int64_t v = 0;
    char err[256];
    st = et_expr_eval(e, vals, &v, err, sizeof(err));
    if (st != ET_OK)
        fail_msg("eval '%s': %s", text, err);
    et_expr_free(e);
    return v;
}

static void test_expr_values(void **state)
{
    (void)state;
    assert_int_equal(ev("1 + 2 * 3"), 7);
    assert_int_equal(ev("(1 + 2) * 3"), 9);
    assert_int_equal(ev("a - b - 1"), 3);
    assert_int_equal(ev("a / b"), 2);
    assert_int_equal(ev("-a / b"), -2);
    assert_int_equal(ev("-a % b"), -1);
    assert_int_equal(ev("- - a"), 7);
    assert_int_equal(ev("a * -b"), -21);
    assert_int_equal(ev("a % b == 1"), 1);
    assert_int_equal(ev("a < b or b < a"), 1);
    assert_int_equal(ev("a < b and b < a"), 0);
    assert_int_equal(ev("not a < b"), 1);
    assert_int_equal(ev("not not true"), 1);
    assert_int_equal(ev("false or true and false"), 0);
    assert_int_equal(ev("true or false and false"), 1);
    assert_int_equal(ev("1 + 2 < 4"), 1);
    assert_int_equal(ev("min(a, b, 5)"), 3);
    assert_int_equal(ev("max(a, b * 4, 5)"), 12);
    assert_int_equal(ev("max(min(a, 2), 1) * 10"), 20);
    assert_int_equal(ev("a >= 7 and a <= 7 and a != 8 and a > 6"), 1);
    /* short circuit keeps a guarded division safe */
    assert_int_equal(ev("n != 0 and a % n == 0"), 0);
    assert_int_equal(ev("n == 0 or a / n > 1"), 1);
    assert_int_equal(ev("9223372036854775807"), INT64_MAX);
}

static void expect_parse_error(const char *text, int col, const char *part)
{
    et_expr *e = NULL;
    et_diag d;
    memset(&d, 0, sizeof(d));
    assert_int_equal(et_expr_parse(text, names, NULL, &e, &d), ET_ERR_INPUT);
    assert_null(e);
    if (d.col != col || !strstr(d.msg, part))
        fail_msg("'%s': got col %d '%s', want col %d '%s'", text, d.col, d.msg,
                 col, part);
}

static void test_expr_syntax_errors(void **state)
{
    (void)state;
    expect_parse_error("", 1, "found nothing");
    expect_parse_error("a +", 4, "end of the expression");
    expect_parse_error("a + * b", 5, "expected a number");
    expect_parse_error("(a + b", 7, "expected ')'");
    expect_parse_error("a b", 3, "expected an operator");
    expect_parse_error("a + c", 5, "unknown name 'c'");
    expect_parse_error("a < b < 3", 7, "do not chain");
    expect_parse_error("a = b", 3, "'=='");
    expect_parse_error("min a", 5, "'('");
    expect_parse_error("max(a b)", 7, "',' or ')'");
    expect_parse_error("12x", 3, "operator after the number");
    expect_parse_error("99999999999999999999", 1, "too large");
    expect_parse_error("a + and", 5, "found 'and'");
    expect_parse_error("a $ b", 3, "found '$'");
    /* depth and length are bounded */
    char deep[400];
    memset(deep, '(', 200);
    strcpy(deep + 200, "1");
    expect_parse_error(deep, 65, "nested too deeply");
    char *lng = malloc(3000);
    for (int i = 0; i < 1000; i++)
        memcpy(lng + 3 * i, "1+1", 3);
    lng[2999] = '\0';
    expect_parse_error(lng, 1, "longer than");
    free(lng);
    char many[1200];
    size_t p = 0;
    for (int i = 0; i < 300; i++)
        p += (size_t)sprintf(many + p, "%s1", i ? "+" : "");
    expect_parse_error(many, 512, "too long");
}

static void expect_eval_error(const char *text, const char *part)
{
    et_expr *e = NULL;
    et_diag d;
    assert_int_equal(et_expr_parse(text, names, NULL, &e, &d), ET_OK);
    int64_t v = 12345;
    char err[256] = "";
    assert_int_equal(et_expr_eval(e, vals, &v, err, sizeof(err)), ET_ERR_INPUT);
    assert_int_equal(v, 12345);
    if (!strstr(err, part))
        fail_msg("'%s': got '%s', want '%s'", text, err, part);
    et_expr_free(e);
}

static void test_expr_eval_errors(void **state)
{
    (void)state;
    expect_eval_error("a / n", "division by zero at column 3");
    expect_eval_error("a % zero", "modulo by zero at column 3");
    expect_eval_error("big + 1", "overflow in '+'");
    expect_eval_error("-big - 2", "overflow in '-'");
    expect_eval_error("big * 2", "overflow in '*'");
    expect_eval_error("(-big - 1) / -1", "overflow in division");
    expect_eval_error("-(-big - 1)", "overflow in '-'");
    expect_eval_error("min(1, a / n)", "division by zero");
}

static void test_expr_slots(void **state)
{
    (void)state;
    et_expr *e = NULL;
    et_diag d;
    assert_int_equal(et_expr_parse("b * a + a - b", names, NULL, &e, &d), ET_OK);
    const int *sl;
    assert_int_equal(et_expr_slots(e, &sl), 2);
    assert_int_equal(sl[0], 0);
    assert_int_equal(sl[1], 1);
    assert_true(et_expr_uses(e, 1));
    assert_false(et_expr_uses(e, 2));
    assert_string_equal(et_expr_text(e), "b * a + a - b");
    et_expr_free(e);
}

/* ---- loading ---------------------------------------------------------------- */

static const char *const examples[] = {
    "examples/batched_matmul.yaml", "examples/tiled_matmul.yaml",
    "examples/batched_matvec.yaml", "examples/row_reduce.yaml",
    "examples/column_reduce.yaml",  "examples/dg_operator.yaml",
    "examples/actions.yaml",        "tests/data/spaces/good_small.yaml",
    "examples/full_reduce.yaml",
};

static void test_load_examples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        et_space *s = NULL;
        et_diag d;
        et_status st = et_space_load(examples[i], &s, &d);
        if (st != ET_OK)
            fail_msg("%s: %s", examples[i], d.msg);
        assert_non_null(s);
        assert_true(s->n_steps > 0 || s->n_actions > 0);
        et_space_free(s);
    }
}

static void test_load_fields(void **state)
{
    (void)state;
    et_space *s = NULL;
    et_diag d;
    assert_int_equal(et_space_load("examples/batched_matmul.yaml", &s, &d), ET_OK);
    assert_string_equal(s->name, "batched_matmul_wg");
    assert_string_equal(s->pate.text, "xik,kj->xij");
    assert_int_equal(s->n_params, 4);
    assert_int_equal(s->param[0].kind, ET_PARAM_RANGE);
    assert_int_equal(s->param[0].pos.line, 8);
    assert_int_equal(s->param[0].pos.col, 3);
    assert_true(s->param[2].is_bool);
    assert_int_equal(s->n_constraints, 4);
    assert_int_equal(s->n_steps, 3);
    assert_int_equal(s->step[2].op, ET_OPT_PREFETCH);
    assert_int_equal(s->step[2].operand, 1);
    assert_non_null(s->step[2].when);
    assert_false(s->has_dtypes);
    et_space_free(s);

    assert_int_equal(et_space_load("examples/actions.yaml", &s, &d), ET_OK);
    assert_true(s->any_einsum);
    assert_int_equal(s->n_actions, 5);
    assert_int_equal(s->max_depth, 8);
    assert_int_equal(s->action[3].n_amt, 8);
    assert_int_equal(s->action[3].amt[7], 256);
    et_space_free(s);

    assert_int_equal(et_space_load("examples/tiled_matmul.yaml", &s, &d), ET_OK);
    assert_true(s->has_dtypes);
    assert_true(s->dtype_ok[ET_F32] && s->dtype_ok[ET_F64]);
    assert_false(s->dtype_ok[ET_F16]);
    assert_int_equal(s->param[0].kind, ET_PARAM_POW2);
    et_space_free(s);
}

static void test_load_errors(void **state)
{
    (void)state;
    const char *dir = "tests/data/spaces";
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(dp))) {
        if (strncmp(de->d_name, "bad_", 4) != 0)
            continue;
        char path[512], line[512];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        int el = 0, ec = 0, off = 0;
        if (sscanf(line, "# expect: %d:%d: %n", &el, &ec, &off) != 2 || !off)
            fail_msg("%s: first line must be '# expect: L:C: text'", path);
        char *want = line + off;
        want[strcspn(want, "\n")] = '\0';
        et_space *s = NULL;
        et_diag d;
        et_status st = et_space_load(path, &s, &d);
        if (st != ET_ERR_INPUT) {
            et_space_free(s);
            fail_msg("%s: loaded without error", path);
        }
        char prefix[600];
        snprintf(prefix, sizeof(prefix), "%s:%d:%d: ", path, el, ec);
        if (d.line != el || d.col != ec || strncmp(d.msg, prefix, strlen(prefix)) ||
            !strstr(d.msg, want))
            fail_msg("%s: got %d:%d '%s'\n  want %d:%d '%s'", path, d.line,
                     d.col, d.msg, el, ec, want);
        n++;
    }
    closedir(dp);
    assert_true(n >= 18);
}

static et_status load_str(const char *text, et_space **s, et_diag *d)
{
    return et_space_load_text(text, strlen(text), "mem.yaml", s, d);
}

static void test_load_bounds(void **state)
{
    (void)state;
    et_space *s = NULL;
    et_diag d;
    /* a file over the size cap is refused before parsing */
    size_t big = ET_SPACE_MAX_FILE + 10;
    char *text = malloc(big + 1);
    memset(text, '#', big);
    text[big] = '\0';
    assert_int_equal(et_space_load_text(text, big, "big.yaml", &s, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "larger than"));
    /* deep nesting inside the size cap: an error, no crash */
    size_t n = 100000;
    memcpy(text, "name: [", 7);
    memset(text + 7, '[', n);
    text[7 + n] = '\0';
    assert_int_equal(et_space_load_text(text, 7 + n, "deep.yaml", &s, &d), ET_ERR_INPUT);
    free(text);
    /* empty file, non-mapping root */
    assert_int_equal(load_str("", &s, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "empty file"));
    assert_int_equal(load_str("- 1\n- 2\n", &s, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "expected a mapping for the space"));
    assert_int_equal(d.line, 1);
    /* duplicate key */
    assert_int_equal(load_str("name: a\nname: b\neinsum: i->i\n", &s, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.msg, "duplicate key 'name'"));
    /* a step of zero */
    assert_int_equal(load_str("name: a\neinsum: ij->i\nparams:\n"
                              "  p: {range: [1, 8, 0]}\n"
                              "transforms:\n  - {op: LOCAL, axis: i, amt: p}\n",
                              &s, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.line, 4);
    assert_non_null(strstr(d.msg, "step"));
    /* a parameter named like an index letter or a limit */
    assert_int_equal(load_str("name: a\neinsum: ij->i\nparams:\n"
                              "  j: {range: [1, 8]}\n"
                              "transforms:\n  - {op: LOCAL, axis: i, amt: j}\n",
                              &s, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.line, 4);
    assert_int_equal(d.col, 3);
    assert_int_equal(load_str("name: a\neinsum: ij->i\nparams:\n"
                              "  compute_units: {range: [1, 8]}\n"
                              "transforms:\n  - {op: LOCAL, axis: i, amt: 2}\n",
                              &s, &d),
                     ET_ERR_INPUT);
    /* quoted expression: the column points inside the quotes */
    assert_int_equal(load_str("name: a\neinsum: ij->i\n"
                              "transforms:\n  - {op: LOCAL, axis: i, amt: \"2 +\"}\n",
                              &s, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.line, 4);
    assert_int_equal(d.col, 35);
    /* SWAP takes axes */
    assert_int_equal(load_str("name: a\neinsum: ij->ij\n"
                              "transforms:\n  - {op: SWAP, axes: [i, j]}\n"
                              "  - {op: NOLOCALS}\n",
                              &s, &d),
                     ET_OK);
    assert_int_equal(s->step[0].axis2, 1);
    et_space_free(s);
    assert_int_equal(load_str("name: a\neinsum: ij->ij\n"
                              "transforms:\n  - {op: SWAP, axis: i}\n",
                              &s, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "axes"));
}

/* ---- binding ------------------------------------------------------------------ */

static et_einsum user_einsum(const char *text, const char *shape, const char *dt)
{
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings(text, shape, dt, &e, &d) != ET_OK)
        fail_msg("einsum %s: %s", text, d.msg);
    return e;
}

static et_space *load_ok(const char *path)
{
    et_space *s = NULL;
    et_diag d;
    if (et_space_load(path, &s, &d) != ET_OK)
        fail_msg("%s: %s", path, d.msg);
    return s;
}

static et_point full_point(const et_space *s, const char *const *nm,
                           const int64_t *v, int n)
{
    et_point pt;
    memset(&pt, 0, sizeof(pt));
    for (int i = 0; i < n; i++) {
        int k = et_space_param_find(s, nm[i]);
        assert_true(k >= 0);
        pt.v[k] = v[i];
        pt.decided |= (uint64_t)1 << k;
    }
    return pt;
}

static void opts_text(const et_binding *b, const et_point *pt, char *buf,
                      size_t cap, et_point_status want)
{
    et_opt opts[ET_MAX_OPTS];
    int n = 0;
    char reason[512] = "";
    et_kernel *k = NULL;
    et_point_status ps = et_binding_point_kernel(b, pt, opts, ET_MAX_OPTS, &n,
                                                 &k, reason, sizeof(reason));
    if (ps != want)
        fail_msg("point status %s (%s), want %s", et_point_status_name(ps),
                 reason, et_point_status_name(want));
    if (ps == ET_POINT_OK) {
        et_opts_format(opts, n, buf, cap);
        et_kernel_free(k);
    } else {
        snprintf(buf, cap, "%s", reason);
    }
}

static void test_bind_renamed(void **state)
{
    (void)state;
    et_space *s = load_ok("examples/batched_matmul.yaml");
    et_einsum u = user_einsum("bmn,nc->bmc", "b=512,m=35,n=35,c=35", "f64");
    et_binding *b = NULL;
    et_diag d;
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    assert_int_equal(et_binding_n_maps(b), 1);
    /* n_wi_per_i ranges over [1, i] with i = m = 35 */
    int k = et_space_param_find(s, "n_wi_per_i");
    const int64_t *v;
    assert_int_equal(et_binding_domain(b, 0, k, &v), 35);
    assert_int_equal(v[34], 35);
    static const char *const nm[] = {"n_x_per_wg", "n_wi_per_i", "stage_b",
                                     "chunk_k"};
    int64_t vals1[] = {4, 7, 1, 5};
    et_point pt = full_point(s, nm, vals1, 4);
    char buf[512];
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_OK);
    assert_string_equal(buf, "LOCAL(b,4) LOCAL(m,7) PREFETCH(1,n,5)");
    int64_t vals2[] = {4, 7, 0, 5};
    pt = full_point(s, nm, vals2, 4);
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_OK);
    assert_string_equal(buf, "LOCAL(b,4) LOCAL(m,7)");
    /* a false constraint: invalid, with the constraint named */
    int64_t vals3[] = {4, 6, 0, 5};
    pt = full_point(s, nm, vals3, 4);
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_INVALID);
    assert_non_null(strstr(buf, "i % n_wi_per_i == 0"));
    assert_non_null(strstr(buf, "batched_matmul.yaml:14:5"));
    /* a partial point: undecided transforms and constraints wait */
    memset(&pt, 0, sizeof(pt));
    pt.v[0] = 8;
    pt.decided = 1;
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_OK);
    assert_string_equal(buf, "LOCAL(b,8)");
    char pbuf[256];
    et_point_format(b, &pt, pbuf, sizeof(pbuf));
    assert_string_equal(pbuf, "{'n_x_per_wg': 8}");
    et_binding_free(b);
    et_space_free(s);
}

static void test_bind_reordered(void **state)
{
    (void)state;
    et_space *s = load_ok("examples/batched_matmul.yaml");
    /* operands swapped: pattern operand 1 (B) is the user's operand 0 */
    et_einsum u = user_einsum("kj,xik->xij", "x=64,i=16,k=16,j=16", "f32");
    et_binding *b = NULL;
    et_diag d;
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    assert_int_equal(et_binding_map(b, 0)->op_map[1], 0);
    assert_int_equal(et_binding_map(b, 0)->op_map[0], 1);
    static const char *const nm[] = {"n_x_per_wg", "n_wi_per_i", "stage_b",
                                     "chunk_k"};
    int64_t pv[] = {2, 4, 1, 8};
    et_point pt = full_point(s, nm, pv, 4);
    char buf[512];
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_OK);
    assert_string_equal(buf, "LOCAL(x,2) LOCAL(i,4) PREFETCH(0,k,8)");
    et_binding_free(b);
    et_space_free(s);
}

/* A constraint that cannot be evaluated at any point, and constraints
 * that hold at no point, are errors of the space at bind time, with the
 * constraint's file, line and column; one valid point is enough. */
static void test_bind_constraints_never_hold(void **state)
{
    (void)state;
    static const char head[] =
        "name: cons\n"
        "einsum: \"ik,kj->ij\"\n"
        "params:\n"
        "  a: {values: [1, 2, 4]}\n"
        "constraints:\n"
        "  - i % a == 0\n";
    et_einsum u = user_einsum("ik,kj->ij", "i=8,k=6,j=4", "f32");
    et_binding *b = NULL;
    et_diag d;
    char text[1024];
    /* evaluates nowhere: a division by zero at every point */
    snprintf(text, sizeof text, "%s  - i / (a - a) > 1\n"
             "transforms:\n  - {op: LOCAL, axis: i, amt: a}\n", head);
    et_space *s = NULL;
    assert_int_equal(load_str(text, &s, &d), ET_OK);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_null(b);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    assert_string_equal(d.file, "mem.yaml");
    assert_int_equal(d.line, 7);
    assert_int_equal(d.col, 5);
    assert_non_null(strstr(d.msg, "cannot be evaluated at any point"));
    assert_non_null(strstr(d.msg, "i / (a - a) > 1"));
    et_space_free(s);
    /* evaluates, false everywhere: no valid point */
    snprintf(text, sizeof text, "%s  - a > 4\n"
             "transforms:\n  - {op: LOCAL, axis: i, amt: a}\n", head);
    assert_int_equal(load_str(text, &s, &d), ET_OK);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    assert_int_equal(d.line, 7);
    assert_non_null(strstr(d.msg, "has no valid point"));
    assert_non_null(strstr(d.msg, "a > 4"));
    et_space_free(s);
    /* one valid point (a = 4) binds */
    snprintf(text, sizeof text, "%s  - a > 2\n"
             "transforms:\n  - {op: LOCAL, axis: i, amt: a}\n", head);
    assert_int_equal(load_str(text, &s, &d), ET_OK);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    et_binding_free(b);
    et_space_free(s);
}

static void test_bind_refused_opt(void **state)
{
    (void)state;
    et_space *s = load_ok("tests/data/spaces/good_small.yaml");
    et_einsum u = user_einsum("ik,kj->ij", "i=8,k=6,j=6", "f32");
    et_binding *b = NULL;
    et_diag d;
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    static const char *const nm[] = {"li", "uj", "uk"};
    /* UPCAST(j,3) divides 6; UPCAST(j,... ) fine; LOCAL(i,8) fine */
    int64_t ok[] = {8, 3, 2};
    et_point pt = full_point(s, nm, ok, 3);
    char buf[512];
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_OK);
    /* 3 does not divide i = 8 under a renamed space: use k = 6 / uk = 4? */
    et_binding_free(b);
    u = user_einsum("ik,kj->ij", "i=8,k=6,j=4", "f32");
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    pt = full_point(s, nm, ok, 3); /* UPCAST(j,3) with j = 4 is refused */
    opts_text(b, &pt, buf, sizeof(buf), ET_POINT_REFUSED);
    assert_non_null(strstr(buf, "UPCAST"));
    et_binding_free(b);
    et_space_free(s);
}

static void test_bind_failures(void **state)
{
    (void)state;
    et_space *s = load_ok("examples/batched_matmul.yaml");
    et_binding *b = NULL;
    et_diag d;
    /* different structure: the matcher's reason is in the message */
    et_einsum u = user_einsum("ik,kj->ij", "i=4,k=4,j=4", NULL);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_null(b);
    assert_non_null(strstr(d.msg, "does not match einsum 'ik,kj->ij'"));
    u = user_einsum("xik,kj,j->xij", "x=2,i=4,k=4,j=4", NULL);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "operand count"));
    et_space_free(s);
    /* dtypes restricted */
    s = load_ok("examples/tiled_matmul.yaml");
    u = user_einsum("ab,bc->ac", "a=16,b=16,c=16", "f16");
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "allows dtypes f32, f64"));
    u = user_einsum("ab,bc->ac", "a=16,b=16,c=16", "f32");
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    et_binding_free(b);
    et_space_free(s);
    /* a domain empty for these sizes names the parameter and its place */
    et_space *e = NULL;
    const char *text = "name: a\neinsum: ij->i\nparams:\n"
                       "  p: {range: [4, j]}\n"
                       "transforms:\n  - {op: LOCAL, axis: i, amt: p}\n";
    assert_int_equal(et_space_load_text(text, strlen(text), "m.yaml", &e, &d), ET_OK);
    u = user_einsum("ab->a", "a=8,b=2", NULL);
    assert_int_equal(et_space_bind(e, &u, NULL, &b, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "m.yaml:4:14: empty range [4, 2]"));
    et_space_free(e);
}

static void test_bind_several_maps(void **state)
{
    (void)state;
    /* two summed indices of one shape: the mapping is a hidden dimension */
    const char *text = "name: a\neinsum: ijk->i\nparams:\n"
                       "  u: {values: [1, 2]}\n"
                       "transforms:\n  - {op: UNROLL, axis: j, amt: u}\n";
    et_space *s = NULL;
    et_diag d;
    assert_int_equal(et_space_load_text(text, strlen(text), "m.yaml", &s, &d), ET_OK);
    et_einsum u = user_einsum("abc->a", "a=4,b=2,c=6", NULL);
    et_binding *b = NULL;
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    /* the matcher keeps operand dims in order, so ijk->i maps j to b only */
    assert_true(et_binding_n_maps(b) >= 1);
    et_binding_free(b);
    et_space_free(s);
    /* with two operands of the same shape both orders map */
    const char *t2 = "name: a\neinsum: ij,ij->i\nparams:\n"
                     "  p: {values: [1, 2]}\n"
                     "transforms:\n  - {op: PREFETCH, operand: 0, axis: j, amt: p}\n";
    assert_int_equal(et_space_load_text(t2, strlen(t2), "m.yaml", &s, &d), ET_OK);
    u = user_einsum("ab,ab->a", "a=4,b=4", NULL);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    assert_int_equal(et_binding_n_maps(b), 2);
    et_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.decided = 1;
    pt.v[0] = 2;
    char b0[128], b1[128];
    opts_text(b, &pt, b0, sizeof(b0), ET_POINT_OK);
    pt.map = 1;
    opts_text(b, &pt, b1, sizeof(b1), ET_POINT_OK);
    assert_string_not_equal(b0, b1);
    et_binding_free(b);
    et_space_free(s);
}

static void test_bind_actions(void **state)
{
    (void)state;
    et_space *s = load_ok("examples/actions.yaml");
    et_einsum u = user_einsum("bmn,nc->bmc", "b=8,m=16,n=16,c=16", NULL);
    et_binding *b = NULL;
    et_diag d;
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    const et_opt *acts;
    int n = et_binding_actions(b, &acts);
    /* UPCAST 6 x 3 globals, UNROLL 3 x 1, LOCAL 7 x 3, GROUPTOP 8, GROUP 4 */
    assert_int_equal(n, 18 + 3 + 21 + 8 + 4);
    assert_int_equal(acts[0].kind, ET_OPT_UPCAST);
    assert_string_equal(acts[0].axis.name, "b");
    et_binding_free(b);
    /* a reduction-free einsum: the reduce actions vanish */
    u = user_einsum("ij->ji", "i=8,j=8", NULL);
    assert_int_equal(et_space_bind(s, &u, NULL, &b, &d), ET_OK);
    assert_int_equal(et_binding_actions(b, &acts), 12 + 14);
    et_binding_free(b);
    et_space_free(s);
}

static void test_bind_examples(void **state)
{
    (void)state;
    struct { const char *path, *einsum, *shape; } cases[] = {
        {"examples/batched_matmul.yaml", "bmn,nc->bmc", "b=512,m=35,n=35,c=35"},
        {"examples/tiled_matmul.yaml", "ik,kj->ij", "i=64,k=64,j=64"},
        {"examples/batched_matvec.yaml", "eij,ej->ei", "e=32,i=64,j=64"},
        {"examples/row_reduce.yaml", "ab->a", "a=64,b=256"},
        {"examples/column_reduce.yaml", "ab->b", "a=64,b=256"},
        {"examples/full_reduce.yaml", "bmn->", "b=64,m=8,n=32"},
        {"examples/dg_operator.yaml", "xre,rij,xej->xei", "x=64,r=3,e=4,i=10,j=10"},
        {"examples/actions.yaml", "xre,rij,xej->xei", "x=64,r=3,e=4,i=10,j=10"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        et_space *s = load_ok(cases[i].path);
        et_einsum u = user_einsum(cases[i].einsum, cases[i].shape, "f32");
        et_binding *b = NULL;
        et_diag d;
        if (et_space_bind(s, &u, NULL, &b, &d) != ET_OK)
            fail_msg("%s: %s", cases[i].path, d.msg);
        et_binding_free(b);
        et_space_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expr_values),
        cmocka_unit_test(test_expr_syntax_errors),
        cmocka_unit_test(test_expr_eval_errors),
        cmocka_unit_test(test_expr_slots),
        cmocka_unit_test(test_load_examples),
        cmocka_unit_test(test_load_fields),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_bounds),
        cmocka_unit_test(test_bind_renamed),
        cmocka_unit_test(test_bind_reordered),
        cmocka_unit_test(test_bind_refused_opt),
        cmocka_unit_test(test_bind_constraints_never_hold),
        cmocka_unit_test(test_bind_failures),
        cmocka_unit_test(test_bind_several_maps),
        cmocka_unit_test(test_bind_actions),
        cmocka_unit_test(test_bind_examples),
    };
    return cmocka_run_group_tests_name("spaces", tests, NULL, NULL);
}
