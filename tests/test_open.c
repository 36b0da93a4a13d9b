/*
 * test_open.c - open axes and sizes never tuned: "x=*" in shape specs and
 * its rules, the canonical and structure forms, lists and ranges of sizes,
 * the opt rules on an open axis, kernels run on the suite's device (the
 * PoCL device unless `make test DEVICE=..`) at awkward sizes (1, primes)
 * with every opt kind beside the open axis, their CUDA rendering compiled
 * with NVRTC, the generic kernel, and the database's
 * answers for sizes never tuned (exact, open, fallback by distance), with
 * a final race of the open einsum deciding them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "db/db.h"
#include "einsum/einsum.h"
#include "tests/kernel_check.h"
#include "transforms/kernel.h"
#include "tune/best.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int under_valgrind(void)
{
    return getenv("ET_UNDER_VALGRIND") != NULL;
}

static void einsum_ok(const char *text, const char *shape, const char *dt,
                      et_einsum *e)
{
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_einsum_from_strings(text, shape, dt, e, &d) != ET_OK)
        fail_msg("%s with %s: %s", text, shape, d.msg);
}

/* The einsum is refused with a message containing want. */
static void einsum_bad(const char *text, const char *shape, const char *want)
{
    et_einsum e;
    et_diag d;
    memset(&d, 0, sizeof d);
    assert_int_equal(et_einsum_from_strings(text, shape, NULL, &e, &d),
                     ET_ERR_INPUT);
    if (!strstr(d.msg, want))
        fail_msg("%s with %s: '%s' lacks '%s'", text, shape, d.msg, want);
}

/* ---- the language ------------------------------------------------------ */

static void test_open_spec(void **state)
{
    (void)state;
    et_einsum e, f;
    einsum_ok("xik,kj->xij", "x=*,i=35,k=35,j=35", NULL, &e);
    assert_int_equal(et_einsum_open_axis(&e), 0);
    assert_true(e.idx[0].open);
    assert_int_equal(e.idx[0].size, ET_OPEN_DEFAULT_SIZE);
    einsum_ok("xik,kj->xij", "x=inf,i=35,k=35,j=35", NULL, &f);
    assert_int_equal(et_einsum_open_axis(&f), 0);
    /* the canonical form writes "*", whatever size it is worked at */
    char c1[ET_DB_CANON_LEN], c2[ET_DB_CANON_LEN], c3[ET_DB_CANON_LEN];
    et_einsum_canonical(&e, c1, sizeof c1);
    assert_non_null(strstr(c1, "=*"));
    et_diag d;
    assert_int_equal(et_einsum_tune_at(&f, "x=4096", &d), ET_OK);
    assert_int_equal(f.idx[0].size, 4096);
    assert_int_equal(f.out.dim[0], 4096);
    assert_int_equal(f.op[0].dim[0], 4096);
    et_einsum_canonical(&f, c2, sizeof c2);
    assert_string_equal(c1, c2);
    /* a concrete size is another einsum, the same structure */
    einsum_ok("aik,kj->aij", "a=4096,i=35,k=35,j=35", NULL, &f);
    et_einsum_canonical(&f, c3, sizeof c3);
    assert_string_not_equal(c1, c3);
    et_einsum_structure(&e, c1, sizeof c1);
    et_einsum_structure(&f, c2, sizeof c2);
    assert_string_equal(c1, c2);
    einsum_ok("aik,kj->aij", "a=7,i=3,k=2,j=9", NULL, &f);
    et_einsum_structure(&f, c2, sizeof c2);
    assert_string_equal(c1, c2);
    einsum_ok("aik,kj->aij", "a=7,i=3,k=2,j=9", "f32", &f);
    et_einsum_structure(&f, c2, sizeof c2);
    assert_string_not_equal(c1, c2);
    /* tied sizes pick operand orders by size; the structure does not */
    einsum_ok("ka,lb->ab", "k=8,l=16,a=3,b=4", NULL, &e);
    einsum_ok("ka,lb->ab", "k=16,l=8,a=3,b=4", NULL, &f);
    et_einsum_structure(&e, c1, sizeof c1);
    et_einsum_structure(&f, c2, sizeof c2);
    assert_string_equal(c1, c2);

    /* the rules */
    einsum_bad("ik,kj->ij", "i=4,k=*,j=4", "open axis 'k' is summed");
    einsum_bad("ij->ij", "i=4,j=*", "first (outermost) dimension");
    einsum_bad("xi,ix->xi", "x=*,i=4", "first (outermost) dimension");
    einsum_bad("xi,yi->xyi", "x=*,y=*,i=4", "at most one open axis");
    einsum_bad("xx->x", "x=*", "first (outermost) dimension");
    assert_int_equal(et_einsum_tune_at(&e, "k=5", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "not an open axis"));
    einsum_ok("xi->xi", "x=*,i=3", NULL, &e);
    assert_int_equal(et_einsum_tune_at(&e, "x=*", &d), ET_ERR_INPUT);
    assert_int_equal(et_einsum_tune_at(&e, "x=0", &d), ET_ERR_INPUT);
}

/* The canonical form rebuilds the einsum it came from. */
static void test_from_canonical(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64"},
        {"ij,jk->ik", "i=4,j=5,k=6", "f32,f64"},
        {"ii->i", "i=3", "f32"},
        {"ij->", "i=3,j=4", "f16"},
        {",ij->ij", "i=2,j=3", "f32"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        et_einsum e, r;
        einsum_ok(cases[c][0], cases[c][1], cases[c][2], &e);
        char c1[ET_DB_CANON_LEN], c2[ET_DB_CANON_LEN];
        et_einsum_canonical(&e, c1, sizeof c1);
        et_diag d;
        if (et_einsum_from_canonical(c1, &r, &d) != ET_OK)
            fail_msg("%s: %s", c1, d.msg);
        et_einsum_canonical(&r, c2, sizeof c2);
        assert_string_equal(c1, c2);
    }
    /* broadcasting comes through (operand shapes with a 1) */
    et_subscripts s;
    et_diag d;
    assert_int_equal(et_subscripts_parse("ij,ij->ij", &s, &d), ET_OK);
    et_operand_shapes sh = {2, {2, 2}, {{3, 4}, {1, 4}}};
    et_einsum e, r;
    assert_int_equal(et_einsum_resolve(&s, NULL, &sh, NULL, &e, &d), ET_OK);
    char c1[ET_DB_CANON_LEN], c2[ET_DB_CANON_LEN];
    et_einsum_canonical(&e, c1, sizeof c1);
    assert_non_null(strchr(c1, '\''));
    assert_int_equal(et_einsum_from_canonical(c1, &r, &d), ET_OK);
    et_einsum_canonical(&r, c2, sizeof c2);
    assert_string_equal(c1, c2);
    assert_int_equal(et_einsum_from_canonical("nonsense", &r, &d),
                     ET_ERR_INPUT);
}

static void expand_ok(const char *spec, int n, const char *line1)
{
    char *out = NULL;
    int got = 0;
    et_diag d;
    if (et_shape_spec_expand(spec, &out, &got, &d) != ET_OK)
        fail_msg("%s: %s", spec, d.msg);
    assert_int_equal(got, n);
    const char *nl = strchr(out, '\n');
    assert_non_null(nl);
    char second[256] = "";
    if (n > 1) {
        const char *nl2 = strchr(nl + 1, '\n');
        snprintf(second, sizeof second, "%.*s", (int)(nl2 - nl - 1), nl + 1);
    } else {
        snprintf(second, sizeof second, "%.*s", (int)(nl - out), out);
    }
    assert_string_equal(second, line1);
    free(out);
}

static void expand_bad(const char *spec, int pos, const char *want)
{
    char *out = NULL;
    int n = 0;
    et_diag d;
    memset(&d, 0, sizeof d);
    assert_int_equal(et_shape_spec_expand(spec, &out, &n, &d), ET_ERR_INPUT);
    assert_null(out);
    if (!strstr(d.msg, want))
        fail_msg("%s: '%s' lacks '%s'", spec, d.msg, want);
    if (pos >= 0)
        assert_int_equal(d.pos, pos);
}

static void test_expand(void **state)
{
    (void)state;
    /* the second problem of each (the only one for a single problem) */
    expand_ok("x=4096,i=8:32:8,k=i,j=i", 4, "x=4096,i=16,k=16,j=16");
    expand_ok("i=8/16/24,j=1:2", 6, "i=8,j=2");
    expand_ok("x=*,i=35", 1, "x=*,i=35");
    expand_ok("x=inf,i=4:5", 2, "x=inf,i=5");
    expand_ok("i=3,...=2x4", 1, "i=3,...=2x4");
    expand_ok("a=b,b=c,c=2/3", 2, "a=3,b=3,c=3");
    expand_bad("i=8:4", 2, "below its start");
    expand_bad("i=4,k=q", 4, "not given");
    expand_bad("i=8/x", 4, "expected a size");
    expand_bad("i=1:100000", 2, "at most");
    expand_bad("i=j,j=i", -1, "circle");
    expand_bad("x=*,k=x", 4, "open axis");
    expand_bad("ij=3", 0, "single letters");
    expand_bad("i=3,i=4", 4, "given twice");
}

/* ---- kernels ----------------------------------------------------------- */

static et_kernel *make(const char *text, const char *shape, const char *dt)
{
    et_einsum e;
    einsum_ok(text, shape, dt, &e);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    return k;
}

static et_status apply(et_kernel *k, const char *opts, char *reason,
                       size_t cap)
{
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    if (et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d) != ET_OK)
        fail_msg("opts '%s': %s", opts, d.msg);
    return et_kernel_apply_opts(k, o, n, reason, cap);
}

static void test_rules(void **state)
{
    (void)state;
    char why[512];
    et_kernel *k = make("xik,kj->xij", "x=*,i=5,k=6,j=7", "f64");
    assert_int_equal(apply(k, "PADTO(x,8)", why, sizeof why),
                     ET_ERR_REFUSED);
    assert_non_null(strstr(why, "x is an open axis"));
    assert_int_equal(apply(k, "LOCAL(x,0)", why, sizeof why),
                     ET_ERR_REFUSED);
    assert_non_null(strstr(why, "no fixed size"));
    /* amounts need not divide: the launch rounds up */
    assert_int_equal(apply(k, "LOCAL(x,7) UPCAST(x,3)", why, sizeof why),
                     ET_OK);
    assert_int_equal(et_kernel_open_step(k), 21);
    assert_int_equal(et_kernel_set_open_size(k, 1, NULL), ET_OK);
    et_launch l;
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &l), ET_OK);
    assert_int_equal(l.n_scalars, 1);
    assert_int_equal(l.scalar[0], 1);
    assert_int_equal(l.global[2], 7); /* one group of 7 along x */
    assert_int_equal(et_kernel_set_open_size(k, 43, NULL), ET_OK);
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &l), ET_OK);
    assert_int_equal(l.global[2], 21); /* ceil(43 / 21) = 3 groups */
    assert_int_equal(l.scalar[0], 43);
    /* the source does not depend on the size it is worked at, and its
     * index arithmetic is 64-bit */
    et_rendered r1, r2;
    assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r1),
                     ET_OK);
    assert_int_equal(et_kernel_set_open_size(k, 100000, NULL), ET_OK);
    assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r2),
                     ET_OK);
    assert_string_equal(r1.source, r2.source);
    assert_string_equal(r1.name, r2.name);
    assert_non_null(strstr(r1.source, ", long n_x)"));
    assert_non_null(strstr(r1.source, "long x_idx"));
    assert_null(strstr(r1.source, "int x_idx"));
    assert_non_null(strstr(r1.source, "< n_x) out["));
    et_rendered_free(&r1);
    et_rendered_free(&r2);
    /* SPLIT zeroes bytes that grow with the open axis */
    et_kernel_free(k);
    k = make("xij->xi", "x=*,i=3,j=8", "f32");
    assert_int_equal(apply(k, "SPLIT(j,2)", why, sizeof why), ET_OK);
    assert_int_equal(et_kernel_set_open_size(k, 10, NULL), ET_OK);
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &l), ET_OK);
    assert_int_equal(l.zero_bytes, 10 * 3 * 4);
    et_kernel_free(k);
}

typedef struct ocase {
    const char *einsum, *shape, *dtype, *opts;
} ocase;

/* Every opt kind beside an open axis, and the open axis where decoding
 * its group count needs a division (SPLIT in its dimension, SWAP to the
 * middle of a flattened dimension). */
static const ocase open_cases[] = {
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64", ""},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64", "LOCAL(x,4)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64", "UPCAST(x,3)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64",
     "LOCAL(x,2) UPCAST(x,2) LOCAL(j,7) UPCAST(i,5)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64", "GROUP(k,3) LOCAL(x,2)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64", "PREFETCH(0,k,3) LOCAL(x,4)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f64",
     "PREFETCH(1,k,2) LOCAL(x,2) UPCAST(x,2) GROUPTOP(k,3)"},
    {"xik,kj->xij", "x=*,i=5,k=6,j=7", "f32", "SPLIT(k,2) LOCAL(x,3)"},
    {"xij->xi", "x=*,i=3,j=50", "f32", "GROUPTOP(j,10) LOCAL(x,3)"},
    {"xij->xi", "x=*,i=3,j=50", "f32", "SPLIT(j,5) UPCAST(x,2)"},
    {"xij->xi", "x=*,i=3,j=50", "f32", "UNROLL(j,5) UPCAST(x,4)"},
    {"xi,i->x", "x=*,i=33", "f32", "LOCAL(x,8) GROUP(i,3)"},
    {"xi,i->x", "x=*,i=33", "f32", "NOLOCALS UPCAST(x,2)"},
    {"x,x->x", "x=*", "f64", "UPCAST(x,4) LOCAL(x,2)"},
    {"xab,b->xab", "x=*,a=3,b=5", "f32", "SWAP(x,b) LOCAL(x,4)"},
    {"xabc->xabc", "x=*,a=2,b=3,c=2", "f32", "SWAP(x,a) LOCAL(x,2)"},
    {"xab->xa", "x=*,a=2,b=9", "f32", "SPLIT(b,3) LOCAL(x,2) UPCAST(x,2)"},
};

/* Awkward sizes: 1, primes that are no multiple of any step. */
static const int64_t sizes[] = {1, 13, 37, 101};

/* A concrete einsum at x=1 whose axis x is then opened (how a database
 * answer for an open entry is built for such a problem) renders the very
 * kernel the open einsum renders: at size 1 no dimension broadcasts, so
 * every operand keeps its x stride. */
static void test_opened_at_one(void **state)
{
    (void)state;
    static const struct {
        const char *einsum, *shape, *opts;
    } cs[] = {
        {"xik,kj->xij", "i=16,k=16,j=16", "UPCAST(j,0) UPCAST(i,8) LOCAL(x,16)"},
        {"xre,rij,xej->xei", "r=3,i=5,j=5,e=4", "LOCAL(x,4) UPCAST(i,5)"},
        {"xii->xi", "i=7", "UPCAST(x,2)"},
        {"xij->x", "i=6,j=5", "LOCAL(x,8)"},
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        char one[128], open[128];
        snprintf(one, sizeof one, "x=1,%s", cs[c].shape);
        snprintf(open, sizeof open, "x=*,%s", cs[c].shape);
        et_einsum e1, eo;
        einsum_ok(cs[c].einsum, one, "f64", &e1);
        einsum_ok(cs[c].einsum, open, "f64", &eo);
        assert_int_equal(et_einsum_set_size(&eo, 0, 256, NULL), ET_OK);
        e1.idx[0].open = true;
        /* sizes set from 1 keep every dimension of the axis */
        et_einsum e2 = e1;
        assert_int_equal(et_einsum_set_size(&e2, 0, 37, NULL), ET_OK);
        for (int k = 0; k < e2.n_ops; k++)
            for (int r = 0; r < e2.op[k].rank; r++)
                if (e2.op[k].idx[r] == 0)
                    assert_int_equal(e2.op[k].dim[r], 37);
        et_rendered r1, ro;
        et_kernel *k1 = NULL, *ko = NULL;
        assert_int_equal(et_kernel_init(&e1, NULL, &k1), ET_OK);
        assert_int_equal(et_kernel_init(&eo, NULL, &ko), ET_OK);
        char why[512];
        if (apply(k1, cs[c].opts, why, sizeof why) != ET_OK ||
            apply(ko, cs[c].opts, why, sizeof why) != ET_OK)
            fail_msg("%s '%s': %s", cs[c].einsum, cs[c].opts, why);
        assert_int_equal(et_kernel_render(k1, ET_BACKEND_OPENCL, NULL, &r1),
                         ET_OK);
        assert_int_equal(et_kernel_render(ko, ET_BACKEND_OPENCL, NULL, &ro),
                         ET_OK);
        if (strcmp(r1.source, ro.source) != 0)
            fail_msg("%s '%s': opened at x=1, the source differs from the "
                     "open einsum's:\n%s\n----\n%s", cs[c].einsum,
                     cs[c].opts, r1.source, ro.source);
        et_rendered_free(&r1);
        et_rendered_free(&ro);
        et_kernel_free(k1);
        et_kernel_free(ko);
    }
}

static void test_device(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    size_t n = sizeof open_cases / sizeof open_cases[0];
    for (size_t c = 0; c < n; c++) {
        if (under_valgrind() && c % 4 != 1)
            continue;
        const ocase *oc = &open_cases[c];
        et_kernel *k = make(oc->einsum, oc->shape, oc->dtype);
        k->target = dev->info.target;
        char why[512];
        if (apply(k, oc->opts, why, sizeof why) != ET_OK)
            fail_msg("%s '%s': %s", oc->einsum, oc->opts, why);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            assert_int_equal(et_kernel_set_open_size(k, sizes[s], NULL),
                             ET_OK);
            char msg[4096];
            et_status st = kc_check_kernel(dev, k, (unsigned)(c + 1), msg,
                                           sizeof msg);
            if (st != ET_OK)
                fail_msg("%s '%s' at x=%lld: %s", oc->einsum, oc->opts,
                         (long long)sizes[s], msg);
        }
        et_kernel_free(k);
    }
}

static void test_cuda_compiles(void **state)
{
    (void)state;
    size_t n = sizeof open_cases / sizeof open_cases[0];
    for (size_t c = 0; c < n; c++) {
        if (under_valgrind() && c % 4 != 1)
            continue;
        const ocase *oc = &open_cases[c];
        et_kernel *k = make(oc->einsum, oc->shape, oc->dtype);
        char why[512];
        if (apply(k, oc->opts, why, sizeof why) != ET_OK)
            fail_msg("%s '%s': %s", oc->einsum, oc->opts, why);
        et_rendered r;
        assert_int_equal(et_kernel_render(k, ET_BACKEND_CUDA, NULL, &r),
                         ET_OK);
        /* every group decoded from blockIdx.x, the size 64-bit */
        assert_non_null(strstr(r.source, "long long n_x)"));
        assert_null(strstr(r.source, "blockIdx.y"));
        et_rendered_free(&r);
        char msg[16384];
        et_status st = kc_cuda_compile(k, msg, sizeof msg);
        et_kernel_free(k);
        if (st == ET_ERR_UNSUPPORTED)
            skip();
        if (st != ET_OK)
            fail_msg("%s '%s': %s", oc->einsum, oc->opts, msg);
    }
}

/* ---- answers for sizes never tuned -------------------------------------- */

static et_device_info fake_device(void)
{
    et_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "fake-device");
    snprintf(info.driver_version, sizeof info.driver_version, "1.0");
    snprintf(info.spec, sizeof info.spec, "opencl:0");
    info.target = et_target_generic(ET_BACKEND_OPENCL);
    return info;
}

/* Records an ok trial of opts for einsum e with median t. */
static void record(et_db *db, const et_device_info *info, const et_einsum *e,
                   const char *opts, double t)
{
    et_error err = {{0}};
    int64_t eid = 0, did = 0;
    assert_int_equal(et_db_einsum_id(db, e, &eid, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, info, &did, &err), ET_OK);
    et_db_trial tr;
    assert_int_equal(et_db_trial_init(&tr, eid, e, did, opts, "src", NULL,
                                      &err),
                     ET_OK);
    tr.outcome = ET_OUTCOME_OK;
    tr.median_s = t;
    tr.low_s = tr.high_s = t;
    tr.runs = 5;
    tr.verify_trials = 3;
    assert_int_equal(et_db_trial_record(db, &tr, NULL, &err), ET_OK);
}

static void test_fallback(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "/tmp/et_test_open_%ld.db", (long)getpid());
    unlink(path);
    et_db *db = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(path, &db, &err), ET_OK);
    et_device_info info = fake_device();
    et_einsum t512, t1000, ask, askr;
    einsum_ok("xik,kj->xij", "x=512,i=8,k=8,j=8", NULL, &t512);
    einsum_ok("xik,kj->xij", "x=1000,i=8,k=8,j=8", NULL, &t1000);
    einsum_ok("xik,kj->xij", "x=1024,i=8,k=8,j=8", NULL, &ask);
    record(db, &info, &t512, "UPCAST(x,4)", 1e-3);
    /* nearer, but its opts do not apply at x=1024 (5 does not divide) */
    record(db, &info, &t1000, "UPCAST(x,5)", 1e-4);

    et_best *b = malloc(sizeof *b);
    bool found = false;
    assert_int_equal(et_best_find(db, &ask, &info, true, b, &found, &err),
                     ET_OK);
    assert_false(found); /* --exact */
    assert_int_equal(et_best_find(db, &ask, &info, false, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_int_equal(b->source, ET_BEST_FALLBACK);
    assert_string_equal(b->opts, "UPCAST(x,4)");
    assert_string_equal(b->tuned_at, "x=512");
    assert_string_equal(b->applied_at, "x=1024");
    assert_true(fabs(b->distance - 1.0) < 1e-12);
    assert_int_equal(b->open_axis, -1);
    /* a renamed asker gets the opts in its names */
    einsum_ok("bik,kj->bij", "b=2048,i=8,k=8,j=8", NULL, &askr);
    assert_int_equal(et_best_find(db, &askr, &info, false, b, &found, &err),
                     ET_OK);
    assert_true(found);
    /* x=1000 is nearer to 2048, but UPCAST(x,5) does not divide it */
    assert_string_equal(b->opts, "UPCAST(b,4)");
    assert_string_equal(b->tuned_at, "b=512");
    assert_string_equal(b->applied_at, "b=2048");
    assert_true(fabs(b->distance - 2.0) < 1e-12);

    /* an open-axis entry covers any size before the fallback */
    et_einsum open;
    einsum_ok("xik,kj->xij", "x=*,i=8,k=8,j=8", NULL, &open);
    assert_int_equal(et_einsum_tune_at(&open, "x=64", NULL), ET_OK);
    record(db, &info, &open, "UPCAST(x,3)", 5e-3);
    assert_int_equal(et_best_find(db, &ask, &info, true, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_int_equal(b->source, ET_BEST_OPEN);
    assert_int_equal(b->open_axis, 0);
    assert_true(b->e.idx[0].open);
    assert_int_equal(b->e.idx[0].size, 1024);
    assert_string_equal(b->opts, "UPCAST(x,3)");
    assert_string_equal(b->tuned_at, "x=64");
    assert_string_equal(b->applied_at, "x=1024");
    /* the open einsum asked for itself: exact */
    assert_int_equal(et_best_find(db, &open, &info, true, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_int_equal(b->source, ET_BEST_EXACT);
    /* an exact entry first */
    record(db, &info, &ask, "UPCAST(x,2)", 2e-3);
    assert_int_equal(et_best_find(db, &ask, &info, false, b, &found, &err),
                     ET_OK);
    assert_int_equal(b->source, ET_BEST_EXACT);
    assert_string_equal(b->opts, "UPCAST(x,2)");
    /* another structure has nothing */
    et_einsum other;
    einsum_ok("xik,kj->xij", "x=1024,i=8,k=8,j=8", "f32", &other);
    assert_int_equal(et_best_find(db, &other, &info, false, b, &found,
                                  &err),
                     ET_OK);
    assert_false(found);
    free(b);
    et_db_close(db);
    unlink(path);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* Records a final race of einsum e that chose `chosen` over `other`. */
static void record_race(et_db *db, const et_device_info *info,
                        const et_einsum *e, const char *chosen,
                        const char *other)
{
    et_error err = {{0}};
    et_db_race *r = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(et_db_einsum_id(db, e, &r->einsum_id, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, info, &r->device_id, &err), ET_OK);
    snprintf(r->einsum_text, sizeof r->einsum_text, "%s", e->text);
    r->rounds = 2;
    r->conf = 0.95;
    snprintf(r->verdict, sizeof r->verdict, "tied");
    snprintf(r->chosen_opts, sizeof r->chosen_opts, "%s", chosen);
    snprintf(r->runner_up_opts, sizeof r->runner_up_opts, "%s", other);
    r->faster_pct = r->faster_lo = r->faster_hi = NAN;
    r->speedup = r->speedup_lo = r->speedup_hi = 1;
    r->load_1m = NAN;
    static const double times[4] = {2e-3, 1.9e-3, 2.1e-3, 1.8e-3};
    r->n = 2;
    for (int i = 0; i < 2; i++) {
        snprintf(r->e[i].opts, sizeof r->e[i].opts, "%s", i ? other : chosen);
        r->e[i].chosen = i == 0;
        r->e[i].tied = true;
        r->e[i].median_s = times[i];
        r->e[i].times = times + i;
        r->e[i].stride = 2;
    }
    assert_int_equal(et_db_race_record(db, r, NULL, &err), ET_OK);
    free(r);
}

/* A final race recorded for an open einsum (as tune records it: under the
 * open einsum's row, run at the tune-at size) decides its best for every
 * size the open entry covers, not only for the open einsum itself. */
static void test_open_race(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "/tmp/et_test_open_race_%ld.db",
             (long)getpid());
    unlink(path);
    et_db *db = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(path, &db, &err), ET_OK);
    et_device_info info = fake_device();
    et_einsum open;
    einsum_ok("xik,kj->xij", "x=*,i=8,k=8,j=8", NULL, &open);
    assert_int_equal(et_einsum_tune_at(&open, "x=64", NULL), ET_OK);
    /* the smaller median alone would pick UPCAST(x,4) */
    record(db, &info, &open, "UPCAST(x,4)", 1e-3);
    record(db, &info, &open, "UPCAST(x,2)", 2e-3);
    et_best *b = malloc(sizeof *b);
    bool found = false;
    static const char *const asked[] = {"x=1,i=8,k=8,j=8", "x=7,i=8,k=8,j=8",
                                        "x=4096,i=8,k=8,j=8"};
    et_einsum ask;
    einsum_ok("xik,kj->xij", asked[1], NULL, &ask);
    assert_int_equal(et_best_find(db, &ask, &info, true, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_string_equal(b->opts, "UPCAST(x,4)");
    /* the race chose UPCAST(x,2): it wins at every size, and for the open
     * einsum asked as such */
    record_race(db, &info, &open, "UPCAST(x,2)", "UPCAST(x,4)");
    for (size_t i = 0; i < sizeof asked / sizeof *asked; i++) {
        einsum_ok("xik,kj->xij", asked[i], NULL, &ask);
        assert_int_equal(et_best_find(db, &ask, &info, true, b, &found,
                                      &err),
                         ET_OK);
        assert_true(found);
        assert_int_equal(b->source, ET_BEST_OPEN);
        assert_string_equal(b->opts, "UPCAST(x,2)");
        assert_string_equal(b->tuned_at, "x=64");
        assert_true(fabs(b->trial.median_s - 2e-3) < 1e-15);
    }
    assert_int_equal(et_best_find(db, &open, &info, true, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_int_equal(b->source, ET_BEST_EXACT);
    assert_string_equal(b->opts, "UPCAST(x,2)");
    /* a renamed asker maps the race's choice onto its names */
    einsum_ok("bik,kj->bij", "b=100,i=8,k=8,j=8", NULL, &ask);
    assert_int_equal(et_best_find(db, &ask, &info, true, b, &found, &err),
                     ET_OK);
    assert_true(found);
    assert_string_equal(b->opts, "UPCAST(b,2)");
    /* a race of the concrete x=7 einsum is its own: it does not change the
     * open entry's answer for other sizes */
    et_einsum x7;
    einsum_ok("xik,kj->xij", "x=7,i=8,k=8,j=8", NULL, &x7);
    record(db, &info, &x7, "UPCAST(x,7)", 3e-3);
    record(db, &info, &x7, "LOCAL(x,7)", 1e-3);
    record_race(db, &info, &x7, "UPCAST(x,7)", "LOCAL(x,7)");
    assert_int_equal(et_best_find(db, &x7, &info, true, b, &found, &err),
                     ET_OK);
    assert_int_equal(b->source, ET_BEST_EXACT);
    assert_string_equal(b->opts, "UPCAST(x,7)");
    einsum_ok("xik,kj->xij", asked[0], NULL, &ask);
    assert_int_equal(et_best_find(db, &ask, &info, true, b, &found, &err),
                     ET_OK);
    assert_int_equal(b->source, ET_BEST_OPEN);
    assert_string_equal(b->opts, "UPCAST(x,2)");
    free(b);
    et_db_close(db);
    unlink(path);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_spec),
        cmocka_unit_test(test_from_canonical),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_opened_at_one),
        cmocka_unit_test(test_device),
        cmocka_unit_test(test_cuda_compiles),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_open_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
