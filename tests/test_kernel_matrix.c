/*
 * test_kernel_matrix.c - the broad correctness matrix: many
 * einsums (matmul and its transposes, batched matmul, matvec, dot, outer
 * product, reductions, diagonals, 3 to 5 operands, ellipsis, scalars,
 * broadcasting, sizes 1, 7, 35, 129) times opts (every ordered pair of opt
 * kinds, PADTO then each splitting opt on sizes that do not divide,
 * PREFETCH with LOCAL and a chunked reduce, 20 seeded random valid opt
 * sequences of length 3 to 6 per einsum), each kernel run on the suite's
 * device (the PoCL device; `make test DEVICE=cuda:0` runs the CUDA
 * renderings on that device) in f32 and f64 and compared element by
 * element with the long-double reference (tests/kernel_check.h,
 * et_reference_eval). The CUDA renderings of the verified kernels are
 * compiled with NVRTC (skipped when libnvrtc is absent).
 *
 * Runtime: PoCL compiles every kernel (about 0.15 s of CPU each, cold
 * cache), so sizes are small and the default matrix is chosen to stay
 * near 2 minutes of CPU: the plain einsums, PADTO, PREFETCH and
 * regression cases run in f32 and f64; each ordered pair runs in one
 * dtype (f32 or f64 by the parity of the pair, so both dtypes are
 * covered), and of the pairs with FACTOR, STAGE, LOOP or NTSTORE one in
 * three runs on the device (all are applied or refused as asserted); the
 * 20 random sequences per einsum alternate f32 and f64; the
 * CUDA rendering is compiled with NVRTC for every kernel except half of
 * the random ones (a deterministic subset: sequence q with q % 4 >= 2 is
 * skipped). ET_MATRIX_FULL=1 runs the pairs and the random sequences in
 * both dtypes, the pairs on a second (3-operand) einsum too, and NVRTC on
 * every kernel. The summary line gives the counts and the time spent.
 *
 * Under valgrind (ET_UNDER_VALGRIND, tests/valgrind.sh), where PoCL's
 * LLVM compiles each kernel in seconds and NVRTC each rendering in tens
 * of seconds, every part still runs but on a subset of its kernels: the
 * plain einsums, PADTO, PREFETCH and regression cases in one dtype each
 * (f32 or f64 by the parity of the case); every ordered pair is still
 * applied and its refusal or acceptance asserted, but only one valid pair
 * in 5 is run on the device ((a * ET_OPT_COUNT + b) % 5 == 0); one random sequence
 * per einsum (q = 0, the dtype by the einsum's parity); NVRTC on the
 * regression cases only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "tests/kernel_check.h"
#include "tests/suite_device.h"
#include "transforms/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ---- counters and timing --------------------------------------------------- */

static int n_verified[ET_DTYPE_COUNT]; /* kernels verified, by dtype */
static int n_cuda;                     /* CUDA renderings compiled */
static int n_refused;                  /* refusals asserted */
static int n_failed;                   /* kernels that failed (printed) */
static double t_pocl, t_nvrtc;         /* seconds spent */
static bool nvrtc_absent;
static bool full;                      /* ET_MATRIX_FULL=1 */
static bool vg;                        /* ET_UNDER_VALGRIND: a subset */

/* Under valgrind a case c runs in one dtype, t == c % 2. */
static bool vg_skips(size_t c, int t)
{
    return vg && (size_t)t != c % 2;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char msg[65536];

/* Every failing kernel is printed (so one run shows them all); a test
 * fails at its end when any did. */
static void check_no_failures(void)
{
    int f = n_failed;
    n_failed = 0;
    if (f)
        fail_msg("%d kernel(s) failed verification (printed above)", f);
}

static void opts_text(const et_kernel *k, char *buf, size_t cap)
{
    et_opts_format(k->opts, k->n_opts, buf, cap);
}

/* Runs k on the device and, when `cuda`, compiles its CUDA rendering;
 * every failure is printed and counted (see check_no_failures). */
static void verify(et_device *dev, const et_kernel *k, unsigned seed,
                   const char *what, bool cuda)
{
    char ot[1024];
    opts_text(k, ot, sizeof ot);
    double t0 = now();
    et_status st = kc_check_kernel(dev, k, seed, msg, sizeof msg);
    t_pocl += now() - t0;
    if (st != ET_OK) {
        print_error("%s: %s [%s] '%s': %s\n", what, k->e.text,
                    et_dtype_name(k->e.op[0].dtype), ot, msg);
        n_failed++;
        return;
    }
    n_verified[k->e.acc_dtype]++;
    if (nvrtc_absent || !cuda || (vg && strcmp(what, "regression") != 0))
        return;
    t0 = now();
    st = kc_cuda_compile(k, msg, sizeof msg);
    t_nvrtc += now() - t0;
    if (st == ET_ERR_UNSUPPORTED) {
        nvrtc_absent = true;
        print_message("NVRTC absent (%s): CUDA renderings not compiled\n",
                      msg);
    } else if (st != ET_OK) {
        print_error("%s: CUDA %s '%s': %s\n", what, k->e.text, ot, msg);
        n_failed++;
    } else {
        n_cuda++;
    }
}

/* ---- building kernels ------------------------------------------------------- */

/* An einsum of the matrix. `shape` is a --shape spec, or, when it starts
 * with '@', operand shapes "2x1x3;3x4" (';' between operands, "" for a
 * scalar) so that NumPy broadcasting applies. */
typedef struct mcase {
    const char *einsum, *shape;
} mcase;

static const mcase cases[] = {
    {"ij,jk->ik", "i=7,j=35,k=6"},                 /* matmul */
    {"ji,jk->ik", "j=7,i=12,k=5"},                 /* transposed A */
    {"ij,kj->ik", "i=6,j=35,k=8"},                 /* transposed B */
    {"ij,jk->ki", "i=8,j=7,k=12"},                 /* transposed out */
    {"xik,kj->xij", "x=3,i=8,k=12,j=8"},           /* batched matmul */
    {"ij,j->i", "i=35,j=12"},                      /* matvec */
    {"i,i->", "i=129"},                            /* dot */
    {"i,j->ij", "i=7,j=129"},                      /* outer product */
    {"ijk->", "i=5,j=7,k=6"},                      /* reduce to a scalar */
    {"ij->i", "i=129,j=7"},                        /* row sums */
    {"ij->j", "i=35,j=8"},                         /* column sums */
    {"ii->i", "i=35"},                             /* diagonal */
    {"ii->", "i=129"},                             /* trace */
    {"iij,jk->ik", "i=5,j=4,k=6"},                 /* diagonal in matmul */
    {"xre,rij,xej->xei", "x=2,r=6,e=4,i=5,j=6"},   /* 3 operands */
    {"ij,jk,kl->il", "i=4,j=6,k=7,l=8"},           /* 3-chain */
    {"i,ij,jk,k->", "i=6,j=5,k=8"},                /* 4 operands to scalar */
    {"ab,bc,cd,de,ef->af", "a=3,b=4,c=5,d=2,e=4,f=6"}, /* 5-chain */
    {"...ij,jk->...ik", "...=3x2,i=4,j=6,k=5"},    /* ellipsis */
    {",ij->ij", "i=7,j=8"},                        /* scalar operand */
    {"ij,jk->ik", "i=1,j=129,k=1"},                /* size 1 */
    {"xik,kj->xij", "x=1,i=1,k=7,j=35"},           /* size 1 batch */
    {"ij,ij->ij", "@1x8;6x8"},                     /* broadcast row */
    {"...ij,...jk->...ik", "@2x1x3x4;5x4x2"},      /* broadcast batch */
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* Resolves case c in dtype dt into e (fails the test on error). */
static void resolve_case(const mcase *c, const char *dt, et_einsum *e)
{
    et_diag d;
    if (c->shape[0] != '@') {
        if (et_einsum_from_strings(c->einsum, c->shape, dt, e, &d) != ET_OK)
            fail_msg("einsum %s %s: %s", c->einsum, c->shape, d.msg);
        return;
    }
    et_subscripts s;
    if (et_subscripts_parse(c->einsum, &s, &d) != ET_OK)
        fail_msg("einsum %s: %s", c->einsum, d.msg);
    et_operand_shapes sh;
    memset(&sh, 0, sizeof sh);
    const char *p = c->shape + 1;
    while (1) {
        int r = 0;
        while (*p && *p != ';') {
            char *end;
            sh.dim[sh.n_ops][r++] = strtoll(p, &end, 10);
            p = *end == 'x' ? end + 1 : end;
        }
        sh.rank[sh.n_ops++] = r;
        if (!*p)
            break;
        p++;
    }
    et_dtype dts[ET_MAX_OPERANDS];
    if (et_dtype_spec_parse(dt, s.n_ops, dts, &d) != ET_OK)
        fail_msg("dtype %s: %s", dt, d.msg);
    if (et_einsum_resolve(&s, NULL, &sh, dts, e, &d) != ET_OK)
        fail_msg("einsum %s %s: %s", c->einsum, c->shape, d.msg);
}

static et_kernel *make_kernel(const mcase *c, const char *dt)
{
    et_einsum *e = malloc(sizeof *e);
    assert_non_null(e);
    resolve_case(c, dt, e);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(e, NULL, &k), ET_OK);
    free(e);
    return k;
}

static et_kernel *make_text(const char *text, const char *shape,
                            const char *dt)
{
    mcase c = {text, shape};
    return make_kernel(&c, dt);
}

/* Applies the opt list `opts` (text form); fails the test on refusal. */
static void apply_ok(et_kernel *k, const char *opts)
{
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    if (et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d) != ET_OK)
        fail_msg("opts '%s': %s", opts, d.msg);
    char reason[512];
    if (et_kernel_apply_opts(k, o, n, reason, sizeof reason) != ET_OK)
        fail_msg("%s '%s' refused: %s", k->e.text, opts, reason);
}

/* Applies o, which must be refused with a reason containing `rule`, and
 * leave k unchanged. */
static void expect_refused(et_kernel *k, const et_opt *o, const char *rule)
{
    char reason[512] = "";
    et_kernel *before = et_kernel_clone(k);
    assert_non_null(before);
    et_status st = et_kernel_apply_opt(k, o, reason, sizeof reason);
    char ot[1024], on[128];
    opts_text(k, ot, sizeof ot);
    et_opts_format(o, 1, on, sizeof on);
    if (st != ET_ERR_REFUSED || !strstr(reason, rule))
        fail_msg("'%s' then %s: status %s, reason '%s', wanted '%s'", ot, on,
                 et_status_str(st), reason, rule);
    assert_memory_equal(before, k, sizeof *k);
    et_kernel_free(before);
    n_refused++;
}

static const char *const dtypes[] = {"f32", "f64"};

/* ---- every einsum, untransformed, f32 and f64 -------------------------------- */

static void test_einsums_plain(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    for (size_t c = 0; c < N_CASES; c++) {
        for (int t = 0; t < 2; t++) {
            if (vg_skips(c, t))
                continue;
            et_kernel *k = make_kernel(&cases[c], dtypes[t]);
            verify(dev, k, (unsigned)(c * 2 + (size_t)t), "plain", true);
            et_kernel_free(k);
        }
    }
    check_no_failures();
}

/* ---- every ordered pair of opt kinds ------------------------------------------ */

/* The opt of kind `kind` for the pair matrix on einsum "xik,kj->xij"
 * (x=3,i=8,k=12,j=8) or "xre,rij,xej->xei" (x=3,e=8,i=8,r=12,j=4):
 * `second` for the second opt of a pair, `first` the kind before it.
 * Amounts are chosen so that every pair divides: i and j (8) split by 4
 * then 2, k (12) by 2 or 3 and then 2 or 3; PADTO pads x (3, never split
 * by the others) to 4. */
static et_opt pair_opt(bool three, et_opt_kind kind, bool second,
                       et_opt_kind first)
{
    const char *gi = three ? "e" : "i", *gj = three ? "i" : "j", *gx = "x";
    const char *rk = three ? "r" : "k";
    et_opt o = et_opt_make(kind, NULL, 0);
    switch (kind) {
    case ET_OPT_LOCAL: o = et_opt_make(kind, gi, second ? 2 : 4); break;
    case ET_OPT_UPCAST: o = et_opt_make(kind, gj, second ? 2 : 4); break;
    case ET_OPT_UNROLL: o = et_opt_make(kind, rk, 2); break;
    case ET_OPT_GROUP: o = et_opt_make(kind, rk, 3); break;
    case ET_OPT_GROUPTOP: o = et_opt_make(kind, rk, 3); break;
    case ET_OPT_PADTO: o = et_opt_make(kind, gx, 4); break;
    case ET_OPT_SWAP:
        o = et_opt_make(kind, second ? gx : gi, 0);
        snprintf(o.axis2.name, sizeof o.axis2.name, "%s", gj);
        break;
    case ET_OPT_NOLOCALS: break;
    case ET_OPT_SPLIT: o = et_opt_make(kind, rk, 2); break;
    case ET_OPT_LOOP: o = et_opt_make(kind, gx, 0); break;
    case ET_OPT_PREFETCH:
        o = et_opt_make(kind, rk, 2);
        /* a second PREFETCH stages the other operand in the same chunks */
        o.operand = second && first == ET_OPT_PREFETCH ? 1 : 0;
        break;
    default: break;
    }
    return o;
}

static bool needs_group(et_opt_kind k)
{
    return k == ET_OPT_LOCAL || k == ET_OPT_GROUP || k == ET_OPT_GROUPTOP ||
           k == ET_OPT_PREFETCH || k == ET_OPT_STAGE;
}

/* HOIST needs three operands; FACTOR an operand without the innermost
 * reduce index (xik,kj->xij has none). */
static bool three_only(int k)
{
    return k == ET_OPT_HOIST || k == ET_OPT_FACTOR;
}

/* The rule that refuses the pair (a, b), or NULL when it is valid. */
static const char *pair_rule(bool three, et_opt_kind a, et_opt_kind b)
{
    bool ga = a == ET_OPT_GROUP || a == ET_OPT_GROUPTOP;
    bool gb = b == ET_OPT_GROUP || b == ET_OPT_GROUPTOP;
    if (ga && gb)
        return "at most one GROUP or GROUPTOP per kernel";
    if (needs_group(a) && b == ET_OPT_NOLOCALS)
        return "NOLOCALS is refused with LOCAL, GROUP, GROUPTOP, PREFETCH or "
               "STAGE";
    if (a == ET_OPT_NOLOCALS && needs_group(b))
        return "needs an explicit work-group; NOLOCALS was applied";
    if (a == ET_OPT_NOLOCALS && b == ET_OPT_NOLOCALS)
        return "NOLOCALS already applied";
    if (a == ET_OPT_HOIST && b == ET_OPT_HOIST)
        return "HOIST already applied";
    if (a == ET_OPT_FACTOR && b == ET_OPT_FACTOR)
        return "FACTOR already applied";
    if ((a == ET_OPT_HOIST && b == ET_OPT_FACTOR) ||
        (a == ET_OPT_FACTOR && b == ET_OPT_HOIST))
        return "HOIST and FACTOR are refused together";
    if (a == ET_OPT_STAGE && b == ET_OPT_STAGE)
        return "STAGE already applied";
    if (a == ET_OPT_LOOP && b == ET_OPT_PADTO)
        return "PADTO applies to an axis not yet split";
    if (a == ET_OPT_NTSTORE && b == ET_OPT_NTSTORE)
        return "NTSTORE already applied";
    if ((a == ET_OPT_SPLIT && b == ET_OPT_NTSTORE) ||
        (a == ET_OPT_NTSTORE && b == ET_OPT_SPLIT))
        return "SPLIT and NTSTORE are refused together";
    /* both operands of xik,kj->xij use k: with GROUP lanes on it no input
     * is read alike by a work-group (in xre,rij,xej->xei, xej is) */
    if (!three && ((a == ET_OPT_STAGE && gb) || (ga && b == ET_OPT_STAGE)))
        return "STAGE: no input is read alike";
    return NULL;
}

/* Every ordered pair (a, b) on one einsum: refused pairs are asserted
 * refused with their rule, valid ones verified on the device - in the
 * dtype of parity a+b (f32 or f64) by default, in both with
 * ET_MATRIX_FULL. HOIST and FACTOR need three operands here: the
 * two-operand einsum leaves their pairs out, and `hoist_only` runs just
 * the pairs with one of them on the three-operand one. */
static void run_pairs(et_device *dev, bool three, bool hoist_only,
                      int *valid, int *refused)
{
    const char *text = three ? "xre,rij,xej->xei" : "xik,kj->xij";
    const char *shape = three ? "x=3,e=8,i=8,r=12,j=4" : "x=3,i=8,k=12,j=8";
    for (int a = 0; a < ET_OPT_COUNT; a++) {
        for (int b = 0; b < ET_OPT_COUNT; b++) {
            bool h = three_only(a) || three_only(b);
            if ((!three && h) || (hoist_only && !h))
                continue;
            et_opt oa = pair_opt(three, (et_opt_kind)a, false, ET_OPT_COUNT);
            et_opt ob = pair_opt(three, (et_opt_kind)b, true, (et_opt_kind)a);
            const char *rule =
                pair_rule(three, (et_opt_kind)a, (et_opt_kind)b);
            for (int t = 0; t < 2; t++) {
                if (!full && t != (a + b) % 2)
                    continue;
                et_kernel *k = make_text(text, shape, dtypes[t]);
                char reason[512];
                char on[128];
                et_opts_format(&oa, 1, on, sizeof on);
                if (et_kernel_apply_opt(k, &oa, reason, sizeof reason) !=
                    ET_OK)
                    fail_msg("%s alone refused: %s", on, reason);
                if (rule) {
                    expect_refused(k, &ob, rule);
                    (*refused)++;
                } else {
                    if (et_kernel_apply_opt(k, &ob, reason, sizeof reason) !=
                        ET_OK)
                        fail_msg("%s: pair %s %s refused: %s", text,
                                 et_opt_kind_name((et_opt_kind)a),
                                 et_opt_kind_name((et_opt_kind)b), reason);
                    /* pairs with FACTOR, STAGE, LOOP or NTSTORE: one in
                     * three on the device by default (the random sequences run
                     * many more of them); all with ET_MATRIX_FULL */
                    bool later = a >= ET_OPT_FACTOR || b >= ET_OPT_FACTOR;
                    bool run = vg ? (a * ET_OPT_COUNT + b) % 5 == 0
                                  : full || !later ||
                                        (a * ET_OPT_COUNT + b) % 3 == 0;
                    if (run)
                        verify(dev, k, (unsigned)(a * ET_OPT_COUNT + b),
                               "pair", true);
                    (*valid)++;
                }
                et_kernel_free(k);
            }
        }
    }
}

static void test_opt_pairs(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    int valid = 0, refused = 0;
    run_pairs(dev, false, false, &valid, &refused);
    run_pairs(dev, true, !full, &valid, &refused);
    /* Of the 169 ordered pairs without HOIST or FACTOR, 24 break a rule
     * on the two-operand einsum (13, then STAGE twice, with NOLOCALS
     * either way and with GROUP or GROUPTOP either way, PADTO(x) after
     * LOOP(x), NTSTORE twice and with SPLIT either way); of the 56 with
     * HOIST or FACTOR, 4 (either twice, or both). By default: the 169 on
     * the two-operand einsum and the 56 on the three-operand one, in one
     * dtype; full: all 225 on the three-operand one too (24 refused: 14,
     * STAGE twice or with NOLOCALS, PADTO after LOOP, the 3 of HOIST and
     * FACTOR, the 3 of NTSTORE), in both. */
    int want_refused = full ? 2 * 24 + 2 * 24 : 24 + 4;
    int want_valid = full ? 2 * 145 + 2 * 201 : 145 + 52;
    assert_int_equal(refused, want_refused);
    assert_int_equal(valid, want_valid);
    print_message("ordered pairs: %d valid, %d refusals asserted%s\n",
                  valid, refused,
                  vg ? " (under valgrind 1 valid pair in 5 run on the device)"
                  : full ? "; every valid pair verified on the device"
                         : "; every valid pair verified on the device "
                           "(of those with FACTOR, STAGE, LOOP or NTSTORE, "
                           "one in three)");

    /* after any split of an axis, PADTO on it is refused */
    static const char *const splits[] = {
        "LOCAL(i,4)", "UPCAST(j,4)", "UNROLL(k,2)", "GROUP(k,3)",
        "GROUPTOP(k,3)", "PREFETCH(0,k,2)", "SPLIT(k,4)"};
    static const char *const pads[] = {"PADTO(i,16)", "PADTO(j,16)",
                                       "PADTO(k,24)", "PADTO(k,24)",
                                       "PADTO(k,24)", "PADTO(k,24)",
                                       "PADTO(k,24)"};
    for (int s = 0; s < 7; s++) {
        et_kernel *k = make_text("xik,kj->xij", "x=3,i=8,k=12,j=8", "f32");
        apply_ok(k, splits[s]);
        et_opt o;
        int n;
        et_diag d;
        assert_int_equal(et_opts_parse(pads[s], &o, 1, &n, &d), ET_OK);
        expect_refused(k, &o, "PADTO applies to an axis not yet split");
        et_kernel_free(k);
    }
    check_no_failures();
}

/* ---- PADTO then each splitting opt on sizes that do not divide ------------------ */

typedef struct pcase {
    const char *einsum, *shape;
    const char *bare;   /* refused without PADTO ("PADTO first") */
    const char *opts;   /* with PADTO: runs */
} pcase;

static const pcase pad_cases[] = {
    {"ij,jk->ik", "i=7,j=35,k=5", "LOCAL(i,4)", "PADTO(i,8) LOCAL(i,4)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "UPCAST(k,4)", "PADTO(k,8) UPCAST(k,4)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "UNROLL(j,4)", "PADTO(j,36) UNROLL(j,4)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "GROUP(j,4)", "PADTO(j,4) GROUP(j,4)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "GROUPTOP(j,8)",
     "PADTO(j,8) GROUPTOP(j,8)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "PREFETCH(0,j,4)",
     "PADTO(j,4) PREFETCH(0,j,4) LOCAL(i,7)"},
    {"ij,jk->ik", "i=7,j=35,k=5", "PREFETCH(1,j,6)",
     "PADTO(j,6) PREFETCH(1,j,6) LOCAL(k,5) UNROLL(j,3)"},
    {"xik,kj->xij", "x=3,i=7,k=129,j=35", "UPCAST(j,4)",
     "PADTO(j,4) PADTO(x,2) UPCAST(j,4) LOCAL(x,2) PADTO(k,132) "
     "UNROLL(k,4)"},
    {"xik,kj->xij", "x=3,i=7,k=129,j=35", "LOCAL(i,2)",
     "PADTO(i,8) LOCAL(i,2) UPCAST(i,2) PADTO(k,130) GROUPTOP(k,13) "
     "UNROLL(k,5)"},
    {"i,i->", "i=129", "GROUP(i,16)", "PADTO(i,16) GROUP(i,16)"},
    {"i,i->", "i=129", "SPLIT(i,8)", "PADTO(i,136) SPLIT(i,8) UNROLL(i,17)"},
    {"ij->i", "i=7,j=35", "SPLIT(j,4)",
     "PADTO(j,36) PADTO(i,8) SPLIT(j,4) UPCAST(i,4) GROUP(j,3)"},
    {"i,i->", "i=129", "GROUPTOP(i,8)",
     "PADTO(i,136) GROUPTOP(i,8) UNROLL(i,17)"},
    {"ii->i", "i=35", "UPCAST(i,4)", "PADTO(i,4) UPCAST(i,4) LOCAL(i,3)"},
    {"ii->", "i=35", "UNROLL(i,8)", "PADTO(i,8) UNROLL(i,8) GROUP(i,5)"},
    {"xre,rij,xej->xei", "x=2,r=7,e=5,i=7,j=3", "LOCAL(e,2)",
     "PADTO(e,6) PADTO(r,8) LOCAL(e,2) PREFETCH(1,r,4) PREFETCH(0,r,4) "
     "UNROLL(r,2) PADTO(i,8) UPCAST(i,4)"},
    {"ij->i", "i=129,j=7", "UPCAST(i,2)",
     "PADTO(i,130) UPCAST(i,2) PADTO(j,8) GROUP(j,2) UNROLL(j,2)"},
    {"ij,jk->ik", "i=1,j=129,k=1", "LOCAL(i,2)",
     "PADTO(i,2) PADTO(k,3) LOCAL(i,2) UPCAST(k,3) PADTO(j,130) "
     "PREFETCH(0,j,10)"},
};

static void test_padto_splits(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    int ran = 0;
    for (size_t c = 0; c < sizeof pad_cases / sizeof pad_cases[0]; c++) {
        const pcase *p = &pad_cases[c];
        for (int t = 0; t < 2; t++) {
            if (vg_skips(c, t))
                continue;
            et_kernel *k = make_text(p->einsum, p->shape, dtypes[t]);
            et_opt o;
            int n;
            et_diag d;
            assert_int_equal(et_opts_parse(p->bare, &o, 1, &n, &d), ET_OK);
            expect_refused(k, &o, "PADTO first to make it divide");
            apply_ok(k, p->opts);
            verify(dev, k, (unsigned)c, "PADTO", true);
            et_kernel_free(k);
            ran++;
        }
    }
    print_message("PADTO then splits: %d kernels verified\n", ran);
    check_no_failures();
}

/* ---- PREFETCH with LOCAL and a chunked reduce ----------------------------------- */

typedef struct fcase {
    const char *einsum, *shape, *opts;
} fcase;

static const fcase prefetch_cases[] = {
    {"ij,jk->ik", "i=16,j=32,k=8",
     "LOCAL(i,4) LOCAL(k,4) PREFETCH(0,j,8) PREFETCH(1,j,8) UNROLL(j,4)"},
    {"ij,jk->ik", "i=16,j=36,k=8",
     "LOCAL(i,4) UNROLL(j,3) PREFETCH(1,j,4) UPCAST(k,4)"},
    {"ij,jk->ik", "i=16,j=36,k=8",
     "LOCAL(i,4) LOCAL(k,2) PREFETCH(0,j,6) UNROLL(j,2) GROUP(j,3)"},
    {"ij,jk->ik", "i=16,j=32,k=8",
     "LOCAL(i,2) PREFETCH(1,j,8) UNROLL(j,2) GROUPTOP(j,2) UPCAST(i,2)"},
    {"xik,kj->xij", "x=3,i=8,k=12,j=8",
     "LOCAL(x,3) LOCAL(j,2) PREFETCH(0,k,4) PREFETCH(1,k,4) UNROLL(k,3) "
     "UPCAST(i,4)"},
    {"xre,rij,xej->xei", "x=2,r=12,e=4,i=6,j=5",
     "LOCAL(e,4) LOCAL(i,3) PREFETCH(1,r,4) PREFETCH(0,r,4) UNROLL(r,3) "
     "UNROLL(j,5)"},
    {"ij,jk,kl->il", "i=4,j=6,k=8,l=8",
     "LOCAL(l,4) PREFETCH(2,k,4) PREFETCH(1,k,4) UNROLL(k,2) UNROLL(j,3)"},
    {"ij,j->i", "i=35,j=12",
     "LOCAL(i,5) PREFETCH(1,j,4) PREFETCH(0,j,4) UNROLL(j,3)"},
    {"...ij,jk->...ik", "...=3x2,i=4,j=6,k=5",
     "LOCAL(_1,2) LOCAL(i,2) PREFETCH(1,j,3) UNROLL(j,2) UPCAST(k,5)"},
};

static void test_prefetch(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    int ran = 0;
    for (size_t c = 0; c < sizeof prefetch_cases / sizeof prefetch_cases[0];
         c++) {
        const fcase *f = &prefetch_cases[c];
        for (int t = 0; t < 2; t++) {
            if (vg_skips(c, t))
                continue;
            et_kernel *k = make_text(f->einsum, f->shape, dtypes[t]);
            apply_ok(k, f->opts);
            /* the source stages the operand with barriers */
            et_rendered r;
            assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r),
                             ET_OK);
            assert_non_null(strstr(r.source, "__local"));
            assert_non_null(strstr(r.source, "barrier("));
            et_rendered_free(&r);
            verify(dev, k, (unsigned)(100 + c), "PREFETCH", true);
            et_kernel_free(k);
            ran++;
        }
    }
    print_message("PREFETCH with LOCAL and chunked reduce: %d kernels "
                  "verified\n",
                  ran);
    check_no_failures();
}

/* ---- seeded random valid opt sequences ------------------------------------------ */

static uint64_t rnd(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static int below(uint64_t *s, int n) { return (int)(rnd(s) % (uint64_t)n); }

/* A random divisor d of S with 1 <= d <= cap (1 only when nothing else);
 * sometimes 0 (the whole part) when S <= cap. */
static int64_t divisor(uint64_t *s, int64_t S, int64_t cap)
{
    int64_t ds[64];
    int n = 0;
    for (int64_t d = 2; d <= S && d <= cap && n < 64; d++)
        if (S % d == 0)
            ds[n++] = d;
    if (S <= cap && below(s, 6) == 0)
        return 0;
    if (n == 0)
        return 1;
    return ds[below(s, n)];
}

/* Draws one opt for k from the whole vocabulary; false when the drawn kind
 * has no axis it could apply to. */
static bool draw_opt(et_kernel *k, uint64_t *s, bool prefetch, et_opt *o)
{
    const et_einsum *e = &k->e;
    int n_out = e->n_out, n_red = e->n_idx - e->n_out;
    et_opt_kind kind = (et_opt_kind)below(s, ET_OPT_COUNT);
    if (prefetch)
        kind = ET_OPT_PREFETCH;
    int a = -1;
    switch (kind) {
    case ET_OPT_LOCAL:
    case ET_OPT_UPCAST:
    case ET_OPT_LOOP:
    case ET_OPT_SWAP:
        if (n_out == 0 || (kind == ET_OPT_SWAP && n_out < 2))
            return false;
        a = below(s, n_out);
        break;
    case ET_OPT_UNROLL:
    case ET_OPT_GROUP:
    case ET_OPT_GROUPTOP:
    case ET_OPT_PREFETCH:
    case ET_OPT_SPLIT:
        if (n_red == 0)
            return false;
        a = n_out + below(s, n_red);
        break;
    case ET_OPT_PADTO: a = below(s, e->n_idx); break;
    default: break;
    }
    *o = et_opt_make(kind, a >= 0 ? e->idx[a].name : NULL, 0);
    /* name the axis by position now and then */
    if (a >= 0 && below(s, 4) == 0) {
        o->axis.pos = a;
        o->axis.name[0] = '\0';
    }
    int64_t S = a >= 0 ? k->part[k->outer[a]].size : 0;
    switch (kind) {
    case ET_OPT_LOCAL: o->amt = divisor(s, S, 64); break;
    case ET_OPT_UPCAST:
    case ET_OPT_LOOP:
    case ET_OPT_UNROLL: o->amt = divisor(s, S, 8); break;
    case ET_OPT_GROUP:
    case ET_OPT_GROUPTOP:
    case ET_OPT_SPLIT: o->amt = divisor(s, S, 16); break;
    case ET_OPT_PADTO: {
        static const int ms[] = {2, 3, 4, 5, 8};
        o->amt = ms[below(s, 5)];
        break;
    }
    case ET_OPT_SWAP: {
        int b = below(s, n_out);
        snprintf(o->axis2.name, sizeof o->axis2.name, "%s", e->idx[b].name);
        break;
    }
    case ET_OPT_PREFETCH: {
        int ops[ET_MAX_OPERANDS], n = 0;
        for (int op = 0; op < e->n_ops; op++)
            for (int d = 0; d < e->op[op].rank; d++)
                if (e->op[op].idx[d] == a) {
                    ops[n++] = op;
                    break;
                }
        if (n == 0)
            return false;
        o->operand = ops[below(s, n)];
        o->amt = k->prefetch_axis == a ? k->part[k->prefetch_part].size
                                       : divisor(s, S, 16);
        break;
    }
    default: break;
    }
    return true;
}

/* Builds a random valid sequence of 3 to 6 opts on a fresh kernel of case
 * c: keeps drawing until `len` opts applied (refused draws are dropped).
 * With `prefetch`, the first opt is a PREFETCH when the einsum has a
 * reduce axis: drawn from the whole vocabulary, PREFETCH rarely survives
 * the others (it wants a chunked reduce), and a PREFETCH before any LOCAL
 * gives the work-group of one work-item PoCL's compiler once aborted on. */
static et_kernel *random_kernel(const mcase *c, const char *dt, uint64_t *s,
                                bool prefetch, int *drawn)
{
    for (int restart = 0; restart < 50; restart++) {
        et_kernel *k = make_kernel(c, dt);
        int len = 3 + below(s, 4);
        for (int tries = 0; tries < 400 && k->n_opts < len; tries++) {
            et_opt o;
            bool first = prefetch && k->n_opts == 0 && tries < 20;
            if (!draw_opt(k, s, first, &o))
                continue;
            (*drawn)++;
            char reason[512];
            et_status st = et_kernel_apply_opt(k, &o, reason, sizeof reason);
            if (st != ET_OK && st != ET_ERR_REFUSED)
                fail_msg("apply: %s", et_status_str(st));
            if (st == ET_ERR_REFUSED && !reason[0])
                fail_msg("refusal without a reason");
        }
        if (k->n_opts >= 3)
            return k;
        et_kernel_free(k);
    }
    fail_msg("%s: no valid random sequence", c->einsum);
    return NULL;
}

static void test_random_sequences(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    int ran = 0, drawn = 0, len_count[7] = {0};
    int kinds[ET_OPT_COUNT] = {0};
    for (size_t c = 0; c < N_CASES; c++) {
        uint64_t s = 0x5eed0000ull + c * 7919u;
        for (int q = 0; q < (vg ? 1 : 20); q++) {
            for (int t = 0; t < 2; t++) {
                if (vg ? vg_skips(c, t) : !full && t != q % 2)
                    continue;
                uint64_t s2 = s + (uint64_t)q * 104729u;
                /* every fourth sequence starts with a PREFETCH */
                et_kernel *k = random_kernel(&cases[c], dtypes[t], &s2,
                                             q % 4 == 3, &drawn);
                len_count[k->n_opts]++;
                for (int i = 0; i < k->n_opts; i++)
                    kinds[k->opts[i].kind]++;
                /* NVRTC for half of them (q % 4 < 2: both dtypes) */
                verify(dev, k, (unsigned)(c * 64 + (size_t)q), "random",
                       full || q % 4 < 2);
                et_kernel_free(k);
                ran++;
            }
        }
    }
    print_message("random sequences: %d kernels verified (%d opts drawn); "
                  "lengths 3:%d 4:%d 5:%d 6:%d; per kind:",
                  ran, drawn, len_count[3], len_count[4], len_count[5],
                  len_count[6]);
    for (int i = 0; i < ET_OPT_COUNT; i++)
        print_message(" %s %d", et_opt_kind_name((et_opt_kind)i), kinds[i]);
    print_message("\n");
    for (int i = 0; i < ET_OPT_COUNT; i++)
        assert_true(kinds[i] > 0);
    check_no_failures();
}

/* ---- regression cases for bugs the matrix found --------------------------------- */

/* GROUP/GROUPTOP of 1 lane: the renderer skipped the declaration of the
 * size-1 lane index but the combine step still tested it ("use of
 * undeclared identifier 'j_g'"); found by a random sequence. */
static const fcase regressions[] = {
    {"ji,jk->ik", "j=7,i=12,k=5", "GROUP(j,1)"},
    {"ji,jk->ik", "j=7,i=12,k=5", "GROUPTOP(j,1) UPCAST(k,5)"},
    {"ji,jk->ik", "j=7,i=12,k=5",
     "PREFETCH(0,j,7) PREFETCH(1,j,7) GROUPTOP(j,1) UNROLL(j,0) UNROLL(j,1)"},
    {"i,i->", "i=1", "GROUP(i,0) UNROLL(i,1)"},
    /* PREFETCH in a work-group of one work-item: its barriers made PoCL
     * 3.1's compiler abort ("exit != NULL", ParallelRegion.cc); the source
     * has none now (checked in test_regressions) */
    {"xij->", "x=24,i=3,j=6", "PREFETCH(0,i,3) UNROLL(x,4)"},
    {"abc,cd,de->abe", "a=2,b=4,c=6,d=12,e=3", "PADTO(a,3) PREFETCH(1,c,3)"},
};

static void test_regressions(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    for (size_t c = 0; c < sizeof regressions / sizeof regressions[0]; c++) {
        for (int t = 0; t < 2; t++) {
            if (vg_skips(c, t))
                continue;
            et_kernel *k = make_text(regressions[c].einsum,
                                     regressions[c].shape, dtypes[t]);
            apply_ok(k, regressions[c].opts);
            if (strstr(regressions[c].opts, "PREFETCH") &&
                !strstr(regressions[c].opts, "LOCAL") &&
                !strstr(regressions[c].opts, "GROUP")) {
                /* one work-item per work-group: staged, no barrier */
                et_rendered r;
                assert_int_equal(
                    et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r), ET_OK);
                assert_non_null(strstr(r.source, "__local"));
                assert_null(strstr(r.source, "barrier("));
                et_rendered_free(&r);
                assert_int_equal(
                    et_kernel_render(k, ET_BACKEND_CUDA, NULL, &r), ET_OK);
                assert_null(strstr(r.source, "__syncthreads"));
                et_rendered_free(&r);
            }
            verify(dev, k, (unsigned)(200 + c), "regression", true);
            et_kernel_free(k);
        }
    }
    check_no_failures();
}

/* ---- summary ------------------------------------------------------------------ */

static double t_start;

static int summary(void **state)
{
    (void)state;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    print_message("kernel matrix: %.1f s wall, %.1f s CPU in all\n",
                  now() - t_start, cpu);
    print_message("kernel matrix: %d kernels verified on %s (f32 %d, f64 "
                  "%d), %d refusals asserted, %d CUDA renderings compiled "
                  "with NVRTC%s; device build+run+check %.1f s, NVRTC %.1f "
                  "s%s\n",
                  n_verified[ET_F32] + n_verified[ET_F64],
                  td_device() ? td_device() : "PoCL", n_verified[ET_F32],
                  n_verified[ET_F64], n_refused, n_cuda,
                  nvrtc_absent ? " (libnvrtc absent)" : "", t_pocl, t_nvrtc,
                  full ? " [ET_MATRIX_FULL]" : "");
    return 0;
}

int main(void)
{
    const char *f = getenv("ET_MATRIX_FULL");
    full = f && strcmp(f, "1") == 0;
    vg = getenv("ET_UNDER_VALGRIND") != NULL;
    t_start = now();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_einsums_plain),
        cmocka_unit_test(test_opt_pairs),
        cmocka_unit_test(test_padto_splits),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_regressions),
    };
    return cmocka_run_group_tests(tests, NULL, summary);
}
