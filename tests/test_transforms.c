/*
 * test_transforms.c - the kernel IR, the opts and their rules, the launch
 * geometry and the rendered source (no device needed), plus kernels run on
 * the suite's device (the PoCL device unless `make test DEVICE=..`) and
 * checked element by element (tests/kernel_check.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "tests/kernel_check.h"
#include "transforms/heuristic.h"
#include "transforms/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------- */

/* Under valgrind (ET_UNDER_VALGRIND, set by tests/valgrind.sh) every PoCL
 * build and every NVRTC compile costs seconds, so the device tests run a
 * subset there, with every kind of check kept: 10 of the 21 einsum cases
 * (einsum_vg: every dtype mix and every opt kind) and 6 of the 17
 * combinations (combo_vg), the broadcast case, every opt kind alone on
 * every axis with the first amount only (PADTO with 4), and NVRTC on
 * those 16 cases only. Host-only tests are unchanged. */
static int under_valgrind(void)
{
    return getenv("ET_UNDER_VALGRIND") != NULL;
}

/* As make, for the generic OpenCL profile with preferred vector widths
 * vw (f16, f32) and vw / 2 (f64); vw 0: the generic profile as is. */
static et_kernel *make_on(const char *text, const char *shape, const char *dt,
                          int vw)
{
    et_einsum e;
    et_diag d;
    et_status st = et_einsum_from_strings(text, shape, dt, &e, &d);
    if (st != ET_OK)
        fail_msg("einsum %s: %s", text, d.msg);
    /* vw -1: the generic CUDA profile */
    et_target t = et_target_generic(vw < 0 ? ET_BACKEND_CUDA
                                           : ET_BACKEND_OPENCL);
    if (vw > 0) {
        t.preferred_vector_width[ET_F16] = vw;
        t.preferred_vector_width[ET_F32] = vw;
        t.preferred_vector_width[ET_F64] = vw / 2;
    }
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, &t, &k), ET_OK);
    return k;
}

/* A kernel for the generic OpenCL profile. */
static et_kernel *make(const char *text, const char *shape, const char *dt)
{
    return make_on(text, shape, dt, 0);
}

/* Applies an opt list; returns the status, reason in buf. */
static et_status apply(et_kernel *k, const char *opts, char *reason,
                       size_t cap)
{
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    et_status st = et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d);
    if (st != ET_OK)
        fail_msg("opts '%s': %s", opts, d.msg);
    return et_kernel_apply_opts(k, o, n, reason, cap);
}

static void expect_ok(et_kernel *k, const char *opts)
{
    char reason[512];
    et_status st = apply(k, opts, reason, sizeof reason);
    if (st != ET_OK)
        fail_msg("'%s' refused: %s", opts, reason);
}

/* SPLIT(j,2) on ij->i (i=4, j=8) in dtype dt, the output made f16 when
 * f16_out, on a generic OpenCL target with or without 64-bit atomics. */
static et_status split_on(const char *dt, bool f16_out, bool atomic64,
                          char *why, size_t cap)
{
    et_einsum e;
    et_diag d;
    assert_int_equal(et_einsum_from_strings("ij->i", "i=4,j=8", dt, &e, &d),
                     ET_OK);
    if (f16_out)
        e.out.dtype = ET_F16;
    et_target t = et_target_generic(ET_BACKEND_OPENCL);
    t.has_atomic64 = atomic64;
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, &t, &k), ET_OK);
    et_opt o = et_opt_make(ET_OPT_SPLIT, "j", 2);
    et_status st = et_kernel_apply_opt(k, &o, why, cap);
    et_kernel_free(k);
    return st;
}

/* The last opt of `opts` must be refused with a reason containing want. */
static void expect_refused(const char *text, const char *shape,
                           const char *opts, const char *want)
{
    et_kernel *k = make(text, shape, "f32");
    char reason[512] = "";
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    assert_int_equal(et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d), ET_OK);
    assert_int_equal(et_kernel_apply_opts(k, o, n - 1, reason, sizeof reason),
                     ET_OK);
    et_kernel before = *k;
    et_status st = et_kernel_apply_opt(k, &o[n - 1], reason, sizeof reason);
    if (st != ET_ERR_REFUSED || !strstr(reason, want))
        fail_msg("'%s': status %d, reason '%s', wanted '%s'", opts, st,
                 reason, want);
    /* a refused opt leaves the kernel unchanged */
    assert_memory_equal(&before, k, sizeof before);
    et_kernel_free(k);
}

static char *render(et_kernel *k, et_backend_kind b, et_rendered *r)
{
    assert_int_equal(et_kernel_render(k, b, NULL, r), ET_OK);
    return r->source;
}

/* ---- opt list text form -------------------------------------------------- */

static void test_parse_roundtrip(void **state)
{
    (void)state;
    const char *text = "LOCAL(i,8)  UPCAST(j, 4) UNROLL(k,0) "
                       "PREFETCH(1,k,8) SWAP(i,j) NOLOCALS PADTO(i,32) "
                       "GROUP(2,4) GROUPTOP(k,16)";
    et_opt o[16];
    int n = 0;
    et_diag d;
    assert_int_equal(et_opts_parse(text, o, 16, &n, &d), ET_OK);
    assert_int_equal(n, 9);
    assert_int_equal(o[0].kind, ET_OPT_LOCAL);
    assert_string_equal(o[0].axis.name, "i");
    assert_int_equal(o[0].amt, 8);
    assert_int_equal(o[3].kind, ET_OPT_PREFETCH);
    assert_int_equal(o[3].operand, 1);
    assert_int_equal(o[7].axis.pos, 2);
    char buf[256];
    et_opts_format(o, n, buf, sizeof buf);
    assert_string_equal(buf, "LOCAL(i,8) UPCAST(j,4) UNROLL(k,0) "
                             "PREFETCH(1,k,8) SWAP(i,j) NOLOCALS PADTO(i,32) "
                             "GROUP(2,4) GROUPTOP(k,16)");
    /* the canonical form parses to the same opts */
    et_opt o2[16];
    int n2 = 0;
    assert_int_equal(et_opts_parse(buf, o2, 16, &n2, &d), ET_OK);
    assert_int_equal(n2, n);
    assert_memory_equal(o, o2, sizeof(et_opt) * (size_t)n);
    /* empty and NULL lists */
    assert_int_equal(et_opts_parse("   ", o, 16, &n, &d), ET_OK);
    assert_int_equal(n, 0);
    assert_int_equal(et_opts_parse(NULL, o, 16, &n, &d), ET_OK);
    assert_int_equal(n, 0);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int pos;
        const char *msg;
    } cases[] = {
        {"FOO(i,2)", 0, "unknown opt 'FOO'"},
        {"LOCAL(i,8) UPCST(j,4)", 11, "unknown opt 'UPCST'"},
        {"LOCAL i,8", 6, "expected '('"},
        {"LOCAL(i,8", 9, "expected ',' or ')'"},
        {"LOCAL(i)", 7, "takes 2 arguments"},
        {"LOCAL(i,8,2)", 10, "takes 2 arguments"},
        {"LOCAL(i,x)", 8, "expected an integer"},
        {"LOCAL(,8)", 6, "expected an axis"},
        {"PREFETCH(k,1,8)", 9, "expected an integer"},
        {"LOCAL(i,8)UPCAST(j,4)", 10, "expected a space"},
        {"NOLOCALS(1)", 9, "takes no arguments"},
        {"UPCAST(i,99999999999999999999)", 9, "too large"},
        {"8", 0, "expected an opt name"},
        {"SWAP(i,3", 8, "expected ',' or ')'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        et_opt o[8];
        int n = 0;
        et_diag d;
        et_status st = et_opts_parse(cases[i].text, o, 8, &n, &d);
        if (st != ET_ERR_INPUT || d.pos != cases[i].pos ||
            !strstr(d.msg, cases[i].msg))
            fail_msg("'%s': status %d pos %d msg '%s'; wanted pos %d '%s'",
                     cases[i].text, st, d.pos, d.msg, cases[i].pos,
                     cases[i].msg);
        assert_int_equal(d.col, d.pos + 1);
    }
    /* more opts than room */
    et_opt o[2];
    int n;
    et_diag d;
    assert_int_equal(et_opts_parse("NOLOCALS NOLOCALS NOLOCALS", o, 2, &n, &d),
                     ET_ERR_INPUT);
}

/* ---- validity rules -------------------------------------------------------- */

static void test_rules(void **state)
{
    (void)state;
    const char *mm = "ik,kj->ij", *sh = "i=64,k=64,j=64";
    expect_refused(mm, sh, "UPCAST(k,4)",
                   "UPCAST(k,4): UPCAST applies to global axes only; k is a "
                   "reduce axis");
    expect_refused(mm, sh, "LOCAL(k,4)",
                   "LOCAL(k,4): LOCAL applies to global axes only");
    expect_refused(mm, sh, "UNROLL(i,4)",
                   "UNROLL(i,4): UNROLL applies to reduce axes only; i is a "
                   "global axis");
    expect_refused(mm, sh, "GROUP(j,4)", "GROUP applies to reduce axes only");
    expect_refused(mm, sh, "GROUPTOP(i,4)",
                   "GROUPTOP applies to reduce axes only");
    expect_refused(mm, sh, "PREFETCH(0,i,4)",
                   "PREFETCH applies to reduce axes only");
    expect_refused(mm, sh, "SPLIT(i,2)",
                   "SPLIT(i,2): SPLIT applies to reduce axes only; i is a "
                   "global axis");
    expect_refused(mm, sh, "SPLIT(k,3)", "must divide the size");
    expect_refused(mm, sh, "SPLIT(k,2) GROUP(k,64)", "must divide the size");
    expect_refused(mm, sh, "HOIST",
                   "HOIST: HOIST needs three or more operands (with 2");
    expect_refused("ik,kj,j->ij", sh, "HOIST UPCAST(j,4) HOIST",
                   "HOIST already applied");
    /* FACTOR: an operand without the innermost reduce loop's index */
    expect_refused(mm, sh, "FACTOR",
                   "FACTOR: FACTOR: every operand uses k, the index of the "
                   "innermost reduce loop, so none can be factored out");
    expect_refused("ij->i", "i=4,j=4", "FACTOR",
                   "FACTOR needs two or more operands (with 1");
    expect_refused("i,j->ij", "i=4,j=4", "FACTOR",
                   "FACTOR needs a summed index");
    expect_refused("ik,kj,j->ij", sh, "FACTOR UPCAST(j,4) FACTOR",
                   "FACTOR already applied");
    expect_refused("ik,kj,j->ij", sh, "HOIST FACTOR",
                   "FACTOR: HOIST and FACTOR are refused together");
    expect_refused("ik,kj,j->ij", sh, "FACTOR HOIST",
                   "HOIST: HOIST and FACTOR are refused together");
    /* PREFETCH moves the innermost loop to its axis: in ik,kl,kl->i the
     * loop over l leaves ik outside, the loop over k leaves nothing */
    expect_refused("ik,kl,kl->i", "i=4,k=8,l=8", "FACTOR PREFETCH(1,k,4)",
                   "PREFETCH(1,k,4): FACTOR: every operand uses k");
    expect_refused("ik,kl,kl->i", "i=4,k=8,l=8", "PREFETCH(1,k,4) FACTOR",
                   "FACTOR: FACTOR: every operand uses k");
    expect_refused(mm, sh, "NTSTORE UPCAST(j,4) NTSTORE",
                   "NTSTORE: NTSTORE already applied");
    expect_refused(mm, sh, "SPLIT(k,2) NTSTORE",
                   "NTSTORE: SPLIT and NTSTORE are refused together");
    expect_refused(mm, sh, "NTSTORE SPLIT(k,2)",
                   "SPLIT(k,2): SPLIT and NTSTORE are refused together");
    /* LOOP: global axes that are not open */
    expect_refused(mm, sh, "LOOP(k,4)",
                   "LOOP(k,4): LOOP applies to global axes only; k is a "
                   "reduce axis");
    expect_refused(mm, sh, "LOOP(i,3)", "must divide the size");
    expect_refused(mm, "i=*,k=64,j=64", "LOOP(i,4)",
                   "LOOP(i,4): i is an open axis: a loop over it inside a "
                   "work-item would run past its size");
    expect_refused(mm, sh, "LOOP(i,4) PADTO(i,80)",
                   "PADTO applies to an axis not yet split");
    /* STAGE: an input every work-item of a group reads alike */
    expect_refused(mm, sh, "STAGE STAGE", "STAGE already applied");
    expect_refused(mm, sh, "NOLOCALS STAGE",
                   "STAGE: STAGE needs an explicit work-group; NOLOCALS "
                   "was applied");
    expect_refused(mm, sh, "STAGE NOLOCALS",
                   "NOLOCALS: NOLOCALS is refused with LOCAL, GROUP, "
                   "GROUPTOP, PREFETCH or STAGE");
    expect_refused(mm, sh, "GROUP(k,4) STAGE",
                   "STAGE: STAGE: no input is read alike by every work-item "
                   "of a work-group");
    expect_refused(mm, sh, "STAGE LOCAL(i,4) LOCAL(j,4)",
                   "LOCAL(j,4): STAGE: no input is read alike");
    expect_refused(mm, sh, "PREFETCH(0,k,4) LOCAL(j,4) STAGE",
                   "STAGE: STAGE: no input is read alike");
    expect_refused(mm, "i=4,k=16384,j=4", "STAGE",
                   "STAGE: local memory 131072 bytes exceeds the device "
                   "limit 49152");
    /* f16 inputs give an f32 output; an f16 output is made by hand */
    char why[256];
    assert_int_equal(split_on("f16", true, true, why, sizeof why),
                     ET_ERR_REFUSED);
    assert_non_null(strstr(why, "which f16 outputs do not have"));
    /* an f64 output needs 64-bit atomics on the target, f32 does not */
    assert_int_equal(split_on("f64", false, false, why, sizeof why),
                     ET_ERR_REFUSED);
    assert_non_null(strstr(why, "needs 64-bit atomics"));
    assert_int_equal(split_on("f32", false, false, why, sizeof why), ET_OK);
    assert_int_equal(split_on("f64", false, true, why, sizeof why), ET_OK);
    expect_refused(mm, sh, "UPCAST(i,3)", "must divide the size");
    expect_refused(mm, sh, "UPCAST(i,8) UPCAST(i,16)",
                   "must divide the size of the part it splits (i has 8");
    expect_refused(mm, sh, "UNROLL(k,5)", "PADTO first");
    expect_refused(mm, sh, "GROUP(k,4) GROUP(k,2)",
                   "at most one GROUP or GROUPTOP per kernel");
    expect_refused(mm, sh, "GROUP(k,4) GROUPTOP(k,2)",
                   "at most one GROUP or GROUPTOP");
    expect_refused(mm, sh, "LOCAL(i,4) NOLOCALS",
                   "NOLOCALS is refused with LOCAL, GROUP, GROUPTOP, "
                   "PREFETCH or STAGE");
    expect_refused(mm, sh, "GROUP(k,4) NOLOCALS", "NOLOCALS is refused");
    expect_refused(mm, sh, "PREFETCH(0,k,8) NOLOCALS", "NOLOCALS is refused");
    expect_refused(mm, sh, "NOLOCALS LOCAL(i,4)",
                   "LOCAL needs an explicit work-group; NOLOCALS");
    expect_refused(mm, sh, "NOLOCALS GROUPTOP(k,4)", "NOLOCALS was applied");
    expect_refused(mm, sh, "NOLOCALS PREFETCH(1,k,8)", "NOLOCALS was applied");
    expect_refused(mm, sh, "UPCAST(i,16) UPCAST(j,16) UNROLL(k,2)",
                   "product of UPCAST and UNROLL amounts (512) exceeds 256");
    expect_refused(mm, "i=64,k=64,j=64", "LOCAL(i,64) LOCAL(j,32)",
                   "work-group size 2048 exceeds the device limit 1024");
    expect_refused(mm, "i=2048,k=4,j=4", "LOCAL(i,2048)",
                   "exceeds the device limit 1024");
    /* dimension 2 holds at most 64 work-items in the generic profile */
    expect_refused("abc->abc", "a=128,b=2,c=2", "LOCAL(a,128)",
                   "along dimension 2 exceeds the device limit 64");
    expect_refused(mm, "i=64,k=4096,j=64", "LOCAL(i,16) PREFETCH(0,k,0)",
                   "local memory 262144 bytes exceeds the device limit "
                   "49152");
    expect_refused(mm, "i=1024,k=1024,j=64",
                   "UPCAST(j,64) LOCAL(i,256) GROUP(k,4)",
                   "exceeds the device limit");
    expect_refused(mm, sh, "PREFETCH(2,k,8)",
                   "PREFETCH operand 2 does not exist");
    expect_refused("ik,j->ij", "i=4,k=4,j=4", "PREFETCH(1,k,2)",
                   "operand 1 does not use axis k");
    expect_refused("ik,kl->i", "i=4,k=4,l=4", "PREFETCH(0,k,2) PREFETCH(1,l,2)",
                   "only one reduce axis per kernel can be prefetched");
    expect_refused(mm, sh, "PREFETCH(0,k,8) PREFETCH(1,k,4)",
                   "already chunks by 8");
    expect_refused(mm, sh, "PREFETCH(0,k,8) PREFETCH(0,k,8)",
                   "already prefetched");
    expect_refused(mm, sh, "LOCAL(i,4) PADTO(i,128)",
                   "PADTO applies to an axis not yet split; i is split");
    expect_refused(mm, sh, "PADTO(i,0)", "multiple >= 1");
    expect_refused(mm, sh, "SWAP(i,k)", "SWAP applies to two global axes");
    expect_refused(mm, sh, "SWAP(i,i)", "two different axes");
    expect_refused(mm, sh, "UPCAST(q,4)", "no axis named q");
    expect_refused(mm, sh, "UPCAST(7,4)", "no axis at position 7");
    expect_refused(mm, sh, "UPCAST(i,-2)", "amount must be >= 0");
    expect_refused(mm, sh, "NOLOCALS NOLOCALS", "already applied");
}

/* ---- names of derived axes ------------------------------------------------ */

static void expect_part(const et_kernel *k, const char *name, et_part_kind kd,
                        int64_t size, int64_t stride)
{
    int p = et_kernel_part_find(k, name);
    if (p < 0)
        fail_msg("no part %s", name);
    assert_int_equal(k->part[p].kind, kd);
    assert_int_equal(k->part[p].size, size);
    assert_int_equal(k->part[p].stride, stride);
}

static void test_names(void **state)
{
    (void)state;
    et_kernel *k = make("ik,kj->ij", "i=64,k=48,j=32", "f32");
    expect_ok(k, "LOCAL(i,8) UPCAST(i,2) UPCAST(i,2) UPCAST(1,4) UNROLL(k,2) "
                 "GROUPTOP(2,3)");
    expect_part(k, "i", ET_PART_GLOBAL, 2, 32);
    expect_part(k, "i_l", ET_PART_LOCAL, 8, 1);
    expect_part(k, "i_u", ET_PART_UPCAST, 2, 8);
    expect_part(k, "i_u2", ET_PART_UPCAST, 2, 16);
    expect_part(k, "j", ET_PART_GLOBAL, 8, 4);
    expect_part(k, "j_u", ET_PART_UPCAST, 4, 1);
    /* k: UNROLL leaves k (24, stride 2); GROUPTOP by 3: lanes take
     * contiguous chunks, index = k_g*(24/3)*2 + k*2 + k_r */
    expect_part(k, "k_r", ET_PART_UNROLL, 2, 1);
    expect_part(k, "k_g", ET_PART_GROUP, 3, 16);
    expect_part(k, "k", ET_PART_REDUCE, 8, 2);
    /* applied opts are recorded with letters */
    char buf[256];
    et_opts_format(k->opts, k->n_opts, buf, sizeof buf);
    assert_string_equal(buf, "LOCAL(i,8) UPCAST(i,2) UPCAST(i,2) UPCAST(j,4) "
                             "UNROLL(k,2) GROUPTOP(k,3)");
    et_kernel_free(k);

    k = make("ik,kj->ij", "i=64,k=48,j=18", "f32");
    expect_ok(k, "GROUP(k,4) UNROLL(k,0) PADTO(j,20) UPCAST(j,0)");
    expect_part(k, "k_g", ET_PART_GROUP, 4, 1);
    expect_part(k, "k_r", ET_PART_UNROLL, 12, 4);
    expect_part(k, "k", ET_PART_REDUCE, 1, 48);
    expect_part(k, "j_u", ET_PART_UPCAST, 20, 1);
    expect_part(k, "j", ET_PART_GLOBAL, 1, 20);
    assert_int_equal(k->padded[1], 20); /* idx: i, j, then k */
    et_kernel_free(k);

    k = make("ik,kj->ij", "i=4,k=48,j=4", "f32");
    expect_ok(k, "UNROLL(k,2) PREFETCH(0,k,3) PREFETCH(1,k,0)");
    expect_part(k, "k_p", ET_PART_PREFETCH, 3, 2);
    expect_part(k, "k", ET_PART_REDUCE, 8, 6);
    assert_true(k->prefetch_op[0] && k->prefetch_op[1]);
    et_kernel_free(k);
}

/* ---- launch geometry ------------------------------------------------------ */

static void expect_launch(et_kernel *k, et_backend_kind b, int ndim,
                          int64_t g0, int64_t g1, int64_t g2, int64_t l0,
                          int64_t l1, int64_t l2, bool has_local)
{
    et_launch l;
    assert_int_equal(et_kernel_launch(k, b, &l), ET_OK);
    assert_int_equal(l.ndim, ndim);
    assert_int_equal(l.global[0], g0);
    assert_int_equal(l.global[1], g1);
    assert_int_equal(l.global[2], g2);
    assert_int_equal(l.has_local, has_local);
    if (has_local) {
        assert_int_equal(l.local[0], l0);
        assert_int_equal(l.local[1], l1);
        assert_int_equal(l.local[2], l2);
    }
}

static void test_geometry(void **state)
{
    (void)state;
    et_kernel *k = make("ik,kj->ij", "i=64,k=35,j=32", "f32");
    expect_launch(k, ET_BACKEND_OPENCL, 2, 32, 64, 1, 1, 1, 1, true);
    expect_ok(k, "LOCAL(i,8) UPCAST(j,4)");
    /* j (innermost) is dimension 0 */
    expect_launch(k, ET_BACKEND_OPENCL, 2, 8, 64, 1, 1, 8, 1, true);
    expect_ok(k, "SWAP(i,j)");
    expect_launch(k, ET_BACKEND_OPENCL, 2, 64, 8, 1, 8, 1, 1, true);
    et_kernel_free(k);

    /* more than three global axes: the outermost flattened into dim 2 */
    k = make("abcde->abcde", "a=2,b=3,c=4,d=5,e=6", "f32");
    expect_launch(k, ET_BACKEND_OPENCL, 3, 6, 5, 24, 1, 1, 1, true);
    expect_ok(k, "LOCAL(b,3) LOCAL(e,2)");
    expect_launch(k, ET_BACKEND_OPENCL, 3, 6, 5, 24, 2, 1, 3, true);
    expect_ok(k, "SWAP(a,e)");
    /* order now a, d, c, b, e: dim 2 holds c, b, e */
    expect_launch(k, ET_BACKEND_OPENCL, 3, 2, 5, 72, 1, 1, 6, true);
    et_kernel_free(k);

    /* NOLOCALS: the runtime chooses */
    k = make("ij->ji", "i=16,j=8", "f64");
    expect_ok(k, "NOLOCALS UPCAST(i,2)");
    /* output ji: i is innermost (dim 0), upcast by 2 */
    expect_launch(k, ET_BACKEND_OPENCL, 2, 8, 8, 1, 0, 0, 0, false);
    et_kernel_free(k);

    /* GROUP lanes fold into dimension 0's work-group */
    k = make("ik,kj->ij", "i=16,k=32,j=8", "f32");
    expect_ok(k, "LOCAL(j,2) LOCAL(i,4) GROUP(k,8)");
    expect_launch(k, ET_BACKEND_OPENCL, 2, 64, 16, 1, 16, 4, 1, true);
    assert_int_equal(et_kernel_group_size(k), 64);
    assert_int_equal(et_kernel_local_bytes(k), 64 * 4);
    et_kernel_free(k);

    /* rank-0 output: one work-item, or one group of lanes */
    k = make("k,k->", "k=64", "f32");
    expect_launch(k, ET_BACKEND_OPENCL, 1, 1, 1, 1, 1, 1, 1, true);
    expect_ok(k, "GROUPTOP(k,16)");
    expect_launch(k, ET_BACKEND_CUDA, 1, 16, 1, 1, 16, 1, 1, true);
    et_kernel_free(k);

    /* SPLIT: rank-0 output, the chunks are the groups of dimension 0 and
     * the output (4 bytes) is zeroed before the launch */
    k = make("xij->", "x=64,i=5,j=7", "f32");
    expect_ok(k, "SPLIT(x,8) GROUP(j,7)");
    expect_launch(k, ET_BACKEND_OPENCL, 1, 56, 1, 1, 7, 1, 1, true);
    et_launch zl;
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &zl), ET_OK);
    assert_int_equal(zl.zero_bytes, 4);
    {
        int xs = et_kernel_part_find(k, "x_s");
        assert_true(xs >= 0);
        assert_int_equal(k->part[xs].kind, ET_PART_SPLIT);
        assert_int_equal(k->part[xs].size, 8);
        assert_int_equal(k->part[xs].stride, 8); /* contiguous chunks */
        assert_int_equal(k->part[k->outer[0]].size, 8);
        assert_int_equal(k->part[k->outer[0]].stride, 1);
    }
    et_kernel_free(k);
    /* ... and the slowest factor of the last dimension otherwise; an f64
     * output of 5*6 elements zeroes 240 bytes; no launch field without
     * SPLIT */
    k = make("xik,kj->ij", "x=4,i=5,k=6,j=6", "f64");
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &zl), ET_OK);
    assert_int_equal(zl.zero_bytes, 0);
    expect_ok(k, "SPLIT(x,2) SPLIT(k,3)");
    expect_launch(k, ET_BACKEND_OPENCL, 2, 6, 30, 1, 1, 1, 1, true);
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &zl), ET_OK);
    assert_int_equal(zl.zero_bytes, 5 * 6 * 8);
    et_kernel_free(k);
    /* CUDA: grid dims 1 and 2 are limited to 65535: flattened into dim 0 */
    k = make("ij->ij", "i=70000,j=2", "f32");
    expect_launch(k, ET_BACKEND_OPENCL, 2, 2, 70000, 1, 1, 1, 1, true);
    expect_launch(k, ET_BACKEND_CUDA, 2, 140000, 1, 1, 1, 1, 1, true);
    et_kernel_free(k);
    k = make("ij->ij", "i=140000,j=2", "f32");
    expect_ok(k, "LOCAL(i,2)");
    /* 70000 groups along dim 1: all groups move to dim 0 */
    expect_launch(k, ET_BACKEND_CUDA, 2, 140000, 2, 1, 1, 2, 1, true);
    et_rendered r;
    char *src = render(k, ET_BACKEND_CUDA, &r);
    assert_non_null(strstr(src, "gidx = (int)blockIdx.x;"));
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* ---- rendered source -------------------------------------------------------- */

static void expect_in(const char *src, const char *want)
{
    if (!strstr(src, want))
        fail_msg("'%s' not in:\n%s", want, src);
}

static void expect_not_in(const char *src, const char *want)
{
    if (strstr(src, want))
        fail_msg("'%s' unexpectedly in:\n%s", want, src);
}

static void test_source(void **state)
{
    (void)state;
    et_rendered r;
    et_kernel *k = make("ik,kj->ij", "i=64,k=32,j=32", "f32");
    expect_ok(k, "LOCAL(i,8) UPCAST(j,4) PREFETCH(1,k,8) UNROLL(k,2)");
    char *s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "// global: 8x64 local: 1x8");
    expect_in(s, "__kernel void r_");
    expect_in(s, "(__global float* restrict out, __global const float* "
                 "restrict in0, __global const float* restrict in1)");
    expect_in(s, "__local float tile_in1[");
    expect_in(s, "barrier(CLK_LOCAL_MEM_FENCE);");
    /* OpenCL: the UPCAST part contiguous in the output is one vector
     * accumulator; its lanes from the local copy with vload4 */
    expect_in(s, "float4 accv = (float4)(0.0f);");
    expect_in(s, "vload4(0, tile_in1 + in1_t);");
    expect_in(s, "accv = fma(");
    expect_in(s, "vstore4(");
    expect_not_in(s, "fast");
    expect_not_in(s, "mad(");
    assert_int_equal(r.n_args, 3);
    assert_int_equal(r.arg_operand[0], -1);
    assert_int_equal(r.arg_operand[2], 1);
    /* tile of in1: j_u (4) x k_p (8) x k_r (2) floats */
    assert_int_equal(r.local_bytes, 4 * 8 * 2 * 4);
    /* name: a valid identifier */
    assert_true(r.name[0] == 'r' && r.name[1] == '_');
    for (const char *p = r.name; *p; p++)
        assert_true((*p >= '0' && *p <= '9') || *p == '_' || *p == 'r');
    et_rendered_free(&r);
    /* the same kernel for CUDA */
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "extern \"C\" __global__ void r_");
    expect_in(s, "__shared__ float tile_in1[");
    expect_in(s, "__syncthreads();");
    expect_in(s, "fmaf(");
    expect_not_in(s, "barrier(");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* UPCAST on a contiguous axis: vload4; by 3: scalar */
    k = make("ij,j->i", "i=8,j=64", "f32");
    expect_ok(k, "UNROLL(j,4)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "vload4(0, in0 + in0_addr)");
    expect_in(s, "vload4(0, in1 + in1_addr)");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("ij->ij", "i=8,j=63", "f32");
    expect_ok(k, "UPCAST(j,3)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    /* 3 lanes: a vload2 (vloadn needs only the element's alignment) and
     * one scalar */
    expect_in(s, "float2 vec0_c0 = vload2(0, in0 + in0_addr);");
    expect_in(s, "float vec0_c2 = in0[in0_addr + 2];");
    expect_not_in(s, "vload3");
    expect_in(s, "__kernel void E_8_21_3(");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* GROUP: local array and barrier; lane 0 stores */
    k = make("ij->i", "i=8,j=64", "f64");
    expect_ok(k, "GROUP(j,16)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
    expect_in(s, "__local double red[16];");
    expect_in(s, "barrier(CLK_LOCAL_MEM_FENCE);");
    expect_in(s, "if (j_g == 0) {");
    /* no LOOP around the combine: red[] is written once, no second
     * barrier */
    expect_not_in(s, "}\n    barrier(");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* GROUP inside a LOOP: the next value writes red[] again, so every
     * lane 0 must have read it first: a barrier closes each value (on an
     * H100 the kernel without it summed other values' lanes: 2.8x the
     * reference) */
    k = make("ij->i", "i=129,j=35", "f32");
    expect_ok(k, "GROUPTOP(j,7) LOOP(i,3) LOCAL(i,0)");
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "            out[out_addr] = acc;\n"
                 "        }\n"
                 "        __syncthreads();\n"
                 "    }\n}");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* PADTO: masked loads and stores */
    k = make("ik,kj->ij", "i=7,k=5,j=3", "f32");
    expect_ok(k, "PADTO(i,8) LOCAL(i,8) PADTO(k,8) UNROLL(k,4)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "(i_idx < 7 && k_idx + 3 < 5) ? in0[in0_addr + 3] : 0.0f");
    expect_in(s, "if (i_idx < 7) out[out_addr] = acc;");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* f16 inputs: vload_half in OpenCL, a conversion in CUDA */
    k = make("ij,j->i", "i=8,j=8", "f16,f32");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "__global const half* restrict in0");
    expect_in(s, "vload_half(in0_addr, in0)");
    expect_not_in(s, "cl_khr_fp16");
    et_rendered_free(&r);
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "const unsigned short* __restrict__ in0");
    expect_in(s, "et_half_to_float(in0[in0_addr])");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* HOIST: xre*xej formed once per (r, j) and broadcast into the i
     * lanes (vector, OpenCL), or into 5 scalar accumulators (CUDA); the
     * loop nest's product of three is gone */
    k = make("xre,rij,xej->xei", "x=2,r=3,e=4,i=4,j=6", "f32");
    expect_ok(k, "UPCAST(i,0) HOIST");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "// opts: UPCAST(i,0) HOIST");
    expect_in(s, "float h = a0 * a2;");
    expect_in(s, "accv = fma((float4)(h), vec1, accv);");
    expect_not_in(s, "* vec1");
    et_rendered_free(&r);
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "float h = a0 * a2;");
    expect_in(s, "acc_3 = fmaf(h, a1_3, acc_3);");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* the operand with the most unrolled values is multiplied last: with
     * UPCAST(e) as well, one product per value of e_u */
    k = make("xre,rij,xej->xei", "x=2,r=3,e=4,i=5,j=6", "f64");
    expect_ok(k, "HOIST UPCAST(e,2) UPCAST(i,5)");
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "double h_0 = a0_0 * a2_0;");
    expect_in(s, "double h_1 = a0_1 * a2_1;");
    expect_in(s, "acc_1_4 = fma(h_1, a1_4, acc_1_4);");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* NTSTORE: one vector store where the lanes' address is aligned in
     * every work-item (i=4: x*4), vectors as wide as the alignment allows
     * where it is not (i=10: x*10, 8 lanes in four pairs), one per lane
     * where nothing is (f32, i=35: x*35); the macro defined once; masked
     * where PADTO padded; __stcs in CUDA */
    k = make("xj,ij->xi", "x=16,i=4,j=4", "f64");
    expect_ok(k, "UPCAST(i,0) NTSTORE");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "#define ET_NT_STORE(v, p) "
                 "__builtin_nontemporal_store((v), (p))");
    expect_in(s, "ET_NT_STORE((double4)(accv), "
                 "(__global double4*)(out + out_addr));");
    expect_not_in(s, "vstore");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("xj,ij->xi", "x=12,i=10,j=10", "f64");
    expect_ok(k, "UPCAST(i,0) NTSTORE");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "ET_NT_STORE((double2)(accv_c0.s01), "
                 "(__global double2*)(out + out_addr));");
    expect_in(s, "ET_NT_STORE((double2)(accv_c0.s67), "
                 "(__global double2*)(out + out_addr + 6));");
    expect_in(s, "ET_NT_STORE((double2)(accv_c8), "
                 "(__global double2*)(out + out_addr + 8));");
    expect_not_in(s, "(__global double8*)");
    et_rendered_free(&r);
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "__stcs(out + out_addr + 9, acc_9);");
    expect_not_in(s, "ET_NT_STORE");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("xj,ij->xi", "x=4,i=35,j=3", "f32");
    expect_ok(k, "UPCAST(i,0) NTSTORE");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "ET_NT_STORE(accv_c0.s0, out + out_addr);");
    expect_in(s, "ET_NT_STORE(accv_c32.s1, out + out_addr + 33);");
    expect_not_in(s, "*)(out");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* regrouped: 16 rows of 10 f32 (x by 16) are 160 consecutive
     * elements from a multiple of 160: ten 16-lane stores gathered
     * across the rows' chunks, none of 2 lanes; CUDA's widest is 4 */
    k = make("xj,ij->xi", "x=64,i=10,j=10", "f32");
    expect_ok(k, "UPCAST(i,0) UPCAST(x,16) NTSTORE");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "ET_NT_STORE((float16)(accv_0_c0.s0, accv_0_c0.s1, "
                 "accv_0_c0.s2, accv_0_c0.s3, accv_0_c0.s4, accv_0_c0.s5, "
                 "accv_0_c0.s6, accv_0_c0.s7, accv_0_c8.s0, accv_0_c8.s1, "
                 "accv_1_c0.s0, accv_1_c0.s1, accv_1_c0.s2, accv_1_c0.s3, "
                 "accv_1_c0.s4, accv_1_c0.s5), "
                 "(__global float16*)(out + out_addr));");
    expect_in(s, "accv_15_c8.s1), (__global float16*)(out + out_addr + "
                 "144));");
    expect_not_in(s, "float2*");
    expect_not_in(s, "(__global float16*)(out + out_addr + 160)");
    et_rendered_free(&r);
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_not_in(s, "float16");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* not regrouped: x not upcast, each row's 10 lanes alone */
    k = make("xj,ij->xi", "x=64,i=10,j=10", "f32");
    expect_ok(k, "UPCAST(i,0) NTSTORE");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_not_in(s, "consecutive");
    expect_in(s, "(__global float2*)(out + out_addr + 8));");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* padded lanes that hold the whole axis (PADTO then UPCAST(j,0)):
     * whole vectors, then the last chunk's 3 real lanes as 2 + 1, no
     * mask; a padded axis with a global part keeps the masks */
    k = make("xik,kj->xij", "x=8,i=3,k=5,j=35", "f64");
    expect_ok(k, "PADTO(j,8) UPCAST(j,0) UPCAST(x,2)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "vstore8(accv_0_c24, 0, out + out_addr + 24);");
    expect_in(s, "vstore2(accv_0_c32.s01, 0, out + out_addr + 32);");
    expect_in(s, "out[out_addr + 34] = accv_0_c32.s2;");
    expect_in(s, "vstore2(accv_1_c32.s01, 0, out + out_addr + 137);");
    expect_not_in(s, "if (j_idx");
    expect_not_in(s, "out_addr + 35]");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("xik,kj->xij", "x=8,i=3,k=5,j=35", "f64");
    expect_ok(k, "PADTO(j,8) UPCAST(j,8)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "if (j_idx + 7 < 35)");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("ik,kj->ij", "i=7,k=35,j=5", "f32");
    expect_ok(k, "PADTO(i,8) NTSTORE UPCAST(i,4) LOCAL(j,5)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "if (i_idx < 7) ET_NT_STORE(acc_0, out + out_addr);");
    et_rendered_free(&r);
    et_kernel_free(k);
    {
        et_rendered r1, r2;
        k = make("xj,ij->xi", "x=16,i=4,j=4", "f64");
        expect_ok(k, "UPCAST(i,0) NTSTORE");
        const char *srcs[2] = {render(k, ET_BACKEND_OPENCL, &r1), NULL};
        et_kernel_free(k);
        k = make("xj,ij->xi", "x=12,i=10,j=10", "f64");
        expect_ok(k, "UPCAST(i,0) NTSTORE");
        srcs[1] = render(k, ET_BACKEND_OPENCL, &r2);
        et_kernel_free(k);
        char *joined = et_kernel_sources_join(srcs, 2, ET_BACKEND_OPENCL);
        assert_non_null(joined);
        const char *first = strstr(joined, "#ifndef ET_NT_STORE");
        assert_non_null(first);
        assert_null(strstr(first + 1, "#ifndef ET_NT_STORE"));
        free(joined);
        et_rendered_free(&r1);
        et_rendered_free(&r2);
    }

    /* the vector along j (UNROLL, lanes summed after the loop): xre*xej
     * is a vector per chunk, formed once for both values of i_u */
    k = make("xre,rij,xej->xei", "x=2,r=3,e=4,i=4,j=8", "f64");
    expect_ok(k, "UNROLL(j,0) UPCAST(i,2) HOIST");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "double8 h = (double8)(a0) * vec2;");
    expect_in(s, "accv_0 = fma(h, vec1_0, accv_0);");
    expect_in(s, "accv_1 = fma(h, vec1_1, accv_1);");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* FACTOR: xre multiplied once per r after the loop over j, into
     * partial sums over j of rij*xej (vectors along i, OpenCL; scalars,
     * CUDA); STAGE: rij, which no LOCAL part indexes, copied once per
     * work-group with the lanes of i contiguous, so it loads as vectors */
    k = make("xre,rij,xej->xei", "x=4,r=3,e=2,i=8,j=5", "f64");
    expect_ok(k, "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOCAL(x,2)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "__local double tile_in1[120];");
    expect_in(s, "// copy the 120 elements of operand 1 the work-group "
                 "reads (STAGE)");
    expect_in(s, "tile_in1[cp] = in1[i_ci*5 + r_ci*40 + j_ci];");
    expect_in(s, "int i_u_c = cp % 8;");
    expect_in(s, "barrier(CLK_LOCAL_MEM_FENCE);\n    // output indices");
    expect_in(s, "double8 tv_0 = (double8)(0.0);");
    expect_in(s, "double8 vec1 = vload8(0, tile_in1 + in1_t);");
    expect_in(s, "tv_1 = fma(vec1, (double8)(a2_1), tv_1);");
    expect_in(s, "accv_1 = fma((double8)(a0_1), tv_1, accv_1);");
    expect_not_in(s, "in0[in0_addr] *");
    et_rendered_free(&r);
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "__shared__ double tile_in1[120];");
    expect_in(s, "        double t_7_1 = 0.0;");
    expect_in(s, "t_7_1 = fma(a1_7, a2_1, t_7_1);");
    expect_in(s, "acc_7_1 = fma(a0_1, t_7_1, acc_7_1);");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* LOOP: 64 values of x per work-item, rij copied once for them all
     * (it uses no LOOP part) */
    k = make("xre,rij,xej->xei", "x=256,r=3,e=4,i=8,j=6", "f64");
    expect_ok(k, "UPCAST(i,0) FACTOR STAGE LOOP(x,64)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "// global: 1x4x4 local: 1x1x1");
    expect_in(s, "tile_in1[cp] = in1[i_ci*6 + r_ci*48 + j_ci];\n    }\n"
                 "    // the LOOP parts: the rest once per value\n"
                 "    for (int x_o = 0; x_o < 64; x_o++) {");
    expect_in(s, "        int x_idx = x*64 + x_o;");
    expect_not_in(s, "barrier");
    et_rendered_free(&r);
    et_kernel_free(k);
    /* an UNROLL of another axis that the outer operand uses indexes the
     * partial sums: one per value of r_r */
    k = make("xre,rij,xej->xei", "x=2,r=2,e=3,i=3,j=4", "f32");
    expect_ok(k, "FACTOR UNROLL(r,2)");
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_in(s, "float t_0 = 0.0f;");
    expect_in(s, "float t_1 = 0.0f;");
    expect_in(s, "t_1 = fmaf(a1_1, a2, t_1);");
    expect_in(s, "acc = fmaf(a0_1, t_1, acc);");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* mixed dtypes accumulate in f64 */
    k = make("i,i->", "i=8", "f32,f64");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "double a0 = (double)in0[in0_addr];");
    expect_in(s, "__global double* restrict out");
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* Kernels with barriers (PREFETCH, STAGE, GROUP): the tile copies move a
 * vector at a time where the tile's contiguous part is contiguous in
 * memory, and the innermost loop's bound carries lid_zero in OpenCL. */
static void test_source_barriers(void **state)
{
    (void)state;
    et_rendered r;
    et_kernel *k = make("xik,kj->xij", "x=2,i=12,k=24,j=32", "f64");
    expect_ok(k, "UPCAST(j,16) UPCAST(i,2) LOCAL(i,3) PREFETCH(1,k,8)");
    char *s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "int lid_zero = lid_flat >> 30;");
    expect_in(s, "for (int cv = lid_flat; cv < 8; cv += 3) {");
    expect_in(s, "int cp = cv*16;");
    expect_in(s, "vstore16(vload16(0, in1 + j_ci + k_ci*32), 0, "
                 "tile_in1 + cp);");
    expect_in(s, "for (int k_p = 0; k_p < 8 + lid_zero; k_p++) {");
    /* the chunk loop holds the barriers: its bound stays */
    expect_in(s, "for (int k = 0; k < 3; k++) {");
    et_rendered_free(&r);
    /* CUDA: neither (its vector types need aligned addresses) */
    s = render(k, ET_BACKEND_CUDA, &r);
    expect_not_in(s, "lid_zero");
    expect_in(s, "tile_in1[cp] = in1[");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* padded k: the copy masks whole vectors; padded j (the contiguous
     * part): element by element */
    k = make("xik,kj->xij", "x=2,i=6,k=20,j=16", "f32");
    expect_ok(k, "PADTO(k,24) UPCAST(j,8) LOCAL(i,3) PREFETCH(1,k,6)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "vstore8((k_ci < 20) ? vload8(0, in1 + j_ci + k_ci*16) : "
                 "(float8)(0.0f), 0, tile_in1 + cp);");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("ik,kj->ij", "i=8,k=12,j=24", "f32");
    expect_ok(k, "PADTO(j,32) UPCAST(j,8) LOCAL(i,4) PREFETCH(1,k,4)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_not_in(s, "vload8(0, in1");
    expect_in(s, "tile_in1[cp] = (j_ci < 24) ? in1[");
    et_rendered_free(&r);
    et_kernel_free(k);

    /* GROUP: the reduce loop's bound; a work-group of one work-item
     * waits at no barrier: no lid_zero */
    k = make("ik,kj->ij", "i=16,k=36,j=8", "f64");
    expect_ok(k, "LOCAL(i,4) GROUP(k,4) UPCAST(j,4)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "for (int k = 0; k < 9 + lid_zero; k++) {");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("ik,kj->ij", "i=16,k=36,j=8", "f64");
    expect_ok(k, "UPCAST(j,4) PREFETCH(1,k,4)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_not_in(s, "lid_zero");
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* ---- robustness: random opt sequences never crash ------------------------- */

static void test_random_opts(void **state)
{
    (void)state;
    static const char *const einsums[][3] = {
        {"ik,kj->ij", "i=12,k=10,j=8", "f32"},
        {"xik,kj->xij", "x=3,i=5,k=7,j=4", "f64"},
        {"k,k->", "k=30", "f32"},
        {"abcd,d->abc", "a=2,b=3,c=4,d=6", "f16"},
        {"ii->", "i=9", "f32"},
    };
    static const int amts[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, -1, 64};
    srand(1234);
    int accepted = 0, refused = 0;
    for (size_t ei = 0; ei < sizeof einsums / sizeof einsums[0]; ei++) {
        for (int trial = 0; trial < 200; trial++) {
            et_kernel *k = make(einsums[ei][0], einsums[ei][1],
                                einsums[ei][2]);
            for (int step = 0; step < 6; step++) {
                et_opt o = et_opt_make((et_opt_kind)(rand() % ET_OPT_COUNT),
                                       NULL, amts[rand() % 11]);
                o.axis.pos = rand() % 6;
                o.axis2.pos = rand() % 6;
                o.operand = rand() % 3;
                char reason[256];
                if (et_kernel_apply_opt(k, &o, reason, sizeof reason) ==
                    ET_OK)
                    accepted++;
                else
                    refused++, assert_true(reason[0] != '\0');
            }
            for (int b = 0; b < ET_BACKEND_COUNT; b++) {
                et_rendered r;
                et_status st = et_kernel_render(k, (et_backend_kind)b, NULL, &r);
                assert_int_equal(st, ET_OK);
                assert_non_null(r.source);
                et_rendered_free(&r);
            }
            et_kernel *c = et_kernel_clone(k);
            assert_memory_equal(c, k, sizeof *k);
            et_kernel_free(c);
            et_kernel_free(k);
        }
    }
    assert_true(accepted > 100 && refused > 100);
}

/* ---- kernels run on the device ------------------------------------------- */

typedef struct kcase {
    const char *einsum, *shape, *dtype, *opts;
} kcase;

/* Whether case i of a list runs: always, or under valgrind when i is in
 * the list's valgrind subset vg[0..n-1]. */
static int runs(size_t i, const size_t *vg, size_t n)
{
    if (!under_valgrind())
        return 1;
    for (size_t j = 0; j < n; j++)
        if (vg[j] == i)
            return 1;
    return 0;
}

/* Typical einsums, sizes 1, 7, 35, f32/f64/f16, with and without opts. */
static const kcase einsum_cases[] = {
    {"ik,kj->ij", "i=7,k=35,j=5", "f32", ""},
    {"ik,kj->ij", "i=35,k=7,j=35", "f64", "UPCAST(j,5) UPCAST(i,7) UNROLL(k,7)"},
    {"ik,kj->ij", "i=1,k=1,j=1", "f32", "UNROLL(k,0)"},
    {"xik,kj->xij", "x=3,i=5,k=7,j=4", "f32", "LOCAL(x,3) UPCAST(j,4)"},
    {"xik,kj->xij", "x=9,i=5,k=7,j=4", "f64", "SWAP(x,j) LOCAL(i,5) UNROLL(k,7)"},
    {"ij,j->i", "i=35,j=35", "f32", "UPCAST(i,5) UNROLL(j,7)"},
    {"k,k->", "k=100", "f64", "GROUP(k,4) UNROLL(k,5)"},
    {"i,j->ij", "i=7,j=9", "f32", "LOCAL(i,7) UPCAST(j,3)"},
    {"ij->", "i=7,j=35", "f32", "GROUPTOP(j,7)"},
    {"ii->i", "i=9", "f32", "UPCAST(i,3)"},
    {"ii->", "i=9", "f64", ""},
    {"iij,j->ij", "i=5,j=4", "f32", "UPCAST(j,4)"},
    {"ij,jk,kl->il", "i=5,j=6,k=7,l=8", "f64", "UPCAST(l,4) UNROLL(k,7)"},
    {"abcde->edcba", "a=2,b=3,c=4,d=5,e=3", "f32", "LOCAL(a,2) LOCAL(b,3)"},
    {"abcd,d->abc", "a=2,b=3,c=4,d=5", "f32", "NOLOCALS"},
    {",i->i", "i=5", "f32", ""},
    {"ij,j->i", "i=35,j=35", "f16,f32", "UPCAST(i,5) UNROLL(j,7)"},
    {"ik,kj->ij", "i=8,k=35,j=8", "f16", "PADTO(k,40) UNROLL(k,8) LOCAL(i,4)"},
    {"ik,kj->ij", "i=8,k=16,j=8", "f16,f64", "PREFETCH(0,k,4) LOCAL(i,2)"},
    {"xij->", "x=64,i=5,j=7", "f32", "SPLIT(x,8) UNROLL(j,7)"},
    {"ij->i", "i=12,j=30", "f64", "SPLIT(j,5) UPCAST(i,4)"},
};

/* The einsum cases run under valgrind: f32, f64, f16, f16/f32 and f16/f64,
 * and every opt kind (LOCAL UPCAST UNROLL GROUP GROUPTOP PADTO SWAP
 * NOLOCALS PREFETCH SPLIT) among them. */
static const size_t einsum_vg[] = {0, 1, 4, 6, 8, 14, 16, 17, 18, 19};

static void run_case(et_device *dev, const kcase *c)
{
    char msg[16384];
    et_status st = kc_check(dev, c->einsum, c->shape, c->dtype, c->opts, msg,
                            sizeof msg);
    if (st != ET_OK)
        fail_msg("%s %s [%s] '%s': %s", c->einsum, c->shape, c->dtype,
                 c->opts, msg);
}

static void test_device_einsums(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    for (size_t i = 0; i < sizeof einsum_cases / sizeof einsum_cases[0]; i++)
        if (runs(i, einsum_vg, sizeof einsum_vg / sizeof einsum_vg[0]))
            run_case(dev, &einsum_cases[i]);
    /* broadcasting: operand 1 has extent 1 along i (stride 0) */
    et_einsum e;
    et_diag d;
    assert_int_equal(et_einsum_from_strings("ij,ij->ij", "i=5,j=7", "f32", &e,
                                            &d),
                     ET_OK);
    e.op[1].dim[0] = 1;
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    expect_ok(k, "UPCAST(i,5) LOCAL(j,7)");
    char msg[16384];
    if (kc_check_kernel(dev, k, 3, msg, sizeof msg) != ET_OK)
        fail_msg("broadcast: %s", msg);
    et_kernel_free(k);
}

/* Narrow chunks of several accumulators packed into one vector
 * (render_vector.c, choose_pack): each case's OpenCL source (generic
 * profile) holds the packed form `want`, and the kernel is verified on
 * the device element by element. */
typedef struct pcase {
    const char *einsum, *shape, *dtype, *opts, *want;
} pcase;

static const pcase pack_cases[] = {
    /* the DG operator: 20 = 16 + 4 lanes, the four e tails in one float16;
     * FACTOR's two phases, the staged operand repeated, operand 2's four
     * scalars each over 4 lanes, the regrouped NTSTORE */
    {"xre,rij,xej->xei", "x=8,r=3,i=20,j=20,e=4", "f32",
     "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE UNROLL(r,0) NTSTORE",
     "tv_0_0_c16_x4 = fma((float16)(vec1_0_c16, vec1_0_c16, vec1_0_c16, "
     "vec1_0_c16), ((float4)(a2_0, a2_1, a2_2, a2_3)).s0000111122223333, "
     "tv_0_0_c16_x4);"},
    /* f64: 8 + 8 + 4, pairs of tails */
    {"xre,rij,xej->xei", "x=8,r=3,i=20,j=20,e=4", "f64",
     "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOCAL(x,4)",
     "double8 accv_2_c16_x2 = (double8)(0.0);"},
    /* SPLIT: the packed lanes unpacked into scalars */
    {"xre,rij,xej->xei", "x=8,r=3,i=20,j=20,e=4", "f32",
     "UPCAST(i,0) UPCAST(e,0) SPLIT(r,3) FACTOR STAGE",
     "float acc_19_3 = accv_0_c16_x4.sf;"},
    /* an operand that uses both axes: its four tails side by side; the
     * direct stores take the packed lanes four at a time */
    {"eji,j->ei", "e=4,i=20,j=6", "f32", "UPCAST(i,0) UPCAST(e,0)",
     "vstore4(accv_0_c16_x4.s4567, 0, out + out_addr + 36);"},
    /* 1-lane tails (17 = 16 + 1) in a float4 */
    {"ji,ej->ei", "e=4,i=17,j=5", "f32", "UPCAST(i,0) UPCAST(e,0)",
     "out[out_addr + 33] = accv_0_c16_x4.s1;"},
    /* two pack groups (e = 8 by 4); the padded lanes past i's size not
     * stored (PADTO, the staged operand read without masks) */
    {"ji,ej->ei", "e=8,i=18,j=5", "f32",
     "PADTO(i,20) UPCAST(i,0) UPCAST(e,0) STAGE",
     "vstore2(accv_4_c16_x4.scd, 0, out + out_addr + 142);"},
};

static void test_vector_pack(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    char msg[16384];
    et_rendered r;
    for (size_t i = 0; i < sizeof pack_cases / sizeof pack_cases[0]; i++) {
        const pcase *c = &pack_cases[i];
        et_kernel *k = make(c->einsum, c->shape, c->dtype);
        expect_ok(k, c->opts);
        expect_in(render(k, ET_BACKEND_OPENCL, &r), c->want);
        et_rendered_free(&r);
        /* CUDA keeps scalar accumulators */
        expect_not_in(render(k, ET_BACKEND_CUDA, &r), "_x");
        et_rendered_free(&r);
        if (dev && kc_check_kernel(dev, k, (unsigned)(40 + i), msg,
                                   sizeof msg) != ET_OK)
            fail_msg("%s %s [%s] '%s': %s", c->einsum, c->shape, c->dtype,
                     c->opts, msg);
        et_kernel_free(k);
    }
    /* a device whose vectors hold 8 f32 (AVX2): the tails go by pairs */
    et_kernel *k = make_on("xre,rij,xej->xei", "x=8,r=3,i=20,j=20,e=4",
                           "f32", 8);
    expect_ok(k, "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE UNROLL(r,0)");
    const char *s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "float8 accv_2_c16_x2 = (float8)(0.0f);");
    expect_not_in(s, "float16 accv_0_c16_x4");
    et_rendered_free(&r);
    if (dev && kc_check_kernel(dev, k, 50, msg, sizeof msg) != ET_OK)
        fail_msg("8-lane packing: %s", msg);
    et_kernel_free(k);
    /* not packed: 16 rows of 10 lanes by the row would add more shuffles
     * than the multiply-adds it saves (pack_cost); HOIST */
    k = make("xj,ij->xi", "x=64,i=10,j=10", "f32");
    expect_ok(k, "UPCAST(i,0) UPCAST(x,16)");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "float2 accv_15_c8 = (float2)(0.0f);");
    expect_not_in(s, "_x");
    et_rendered_free(&r);
    et_kernel_free(k);
    k = make("xre,rij,xej->xei", "x=8,r=3,i=20,j=20,e=4", "f32");
    expect_ok(k, "UPCAST(i,0) UPCAST(e,0) HOIST");
    s = render(k, ET_BACKEND_OPENCL, &r);
    expect_in(s, "float4 accv_3_c16 = (float4)(0.0f);");
    expect_not_in(s, "_x");
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* Every opt alone, on every axis it applies to, with several amounts. */
static void test_device_each_opt(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    static const char *const axes[] = {"i", "k", "j"};
    static const int amts[] = {2, 3, 0};
    const int n_amts = under_valgrind() ? 1 : 3;
    int ran = 0, ran_kind[ET_OPT_COUNT] = {0};
    for (int kind = 0; kind < ET_OPT_COUNT; kind++) {
        for (int ai = 0; ai < 3; ai++) {
            for (int mi = 0; mi < n_amts; mi++) {
                char opts[64];
                et_opt o = et_opt_make((et_opt_kind)kind, axes[ai],
                                       amts[mi]);
                if (kind == ET_OPT_PADTO)
                    o.amt = 4 + mi;
                if (kind == ET_OPT_SWAP) {
                    if (ai != 0 || mi)
                        continue;
                    snprintf(o.axis2.name, sizeof o.axis2.name, "j");
                }
                if (et_opt_kind_is_global((et_opt_kind)kind) &&
                    (ai || mi))
                    continue;
                for (int op = 0; op < 2; op++) {
                    if (op && kind != ET_OPT_PREFETCH)
                        continue;
                    o.operand = op;
                    et_opts_format(&o, 1, opts, sizeof opts);
                    /* HOIST needs three operands, FACTOR one without
                     * k: a scaled matmul */
                    bool three =
                        kind == ET_OPT_HOIST || kind == ET_OPT_FACTOR;
                    et_kernel *k = three ? make("ik,kj,j->ij",
                                                "i=6,k=12,j=3", "f32")
                                         : make("ik,kj->ij", "i=6,k=12,j=3",
                                                "f32");
                    char reason[512];
                    if (et_kernel_apply_opt(k, &o, reason, sizeof reason) ==
                        ET_OK) {
                        char msg[16384];
                        if (kc_check_kernel(dev, k, (unsigned)ran, msg,
                                            sizeof msg) != ET_OK)
                            fail_msg("%s: %s", opts, msg);
                        ran++;
                        ran_kind[kind]++;
                    }
                    et_kernel_free(k);
                }
            }
        }
    }
    assert_true(ran >= (under_valgrind() ? ET_OPT_COUNT : 25));
    for (int kind = 0; kind < ET_OPT_COUNT; kind++)
        if (!ran_kind[kind])
            fail_msg("no %s kernel ran", et_opt_kind_name((et_opt_kind)kind));
}

/* Opts together: PADTO then splits that do not divide the true size,
 * PREFETCH with LOCAL and UNROLL, GROUP with UPCAST, f32 and f64. */
static const kcase combo_cases[] = {
    {"ik,kj->ij", "i=7,k=35,j=5", "f32",
     "PADTO(i,8) PADTO(j,4) LOCAL(i,4) UPCAST(j,4) PADTO(k,8) UNROLL(k,4)"},
    {"ik,kj->ij", "i=16,k=32,j=8", "f32",
     "LOCAL(i,4) LOCAL(j,2) PREFETCH(1,k,8) UNROLL(k,2)"},
    {"ik,kj->ij", "i=16,k=32,j=8", "f64",
     "LOCAL(i,4) UNROLL(k,2) PREFETCH(1,k,8) PREFETCH(0,k,8) UPCAST(j,2)"},
    {"ik,kj->ij", "i=7,k=35,j=5", "f32",
     "PADTO(k,40) PADTO(i,8) LOCAL(i,4) PREFETCH(0,k,4) UNROLL(k,2) "
     "GROUP(k,5)"},
    {"ik,kj->ij", "i=7,k=35,j=5", "f64",
     "PADTO(k,36) PADTO(i,8) PADTO(j,6) LOCAL(i,2) LOCAL(j,3) "
     "PREFETCH(0,k,6) PREFETCH(1,k,6) UPCAST(i,2) UPCAST(j,2) UNROLL(k,3)"},
    {"ik,kj->ij", "i=16,k=36,j=8", "f32",
     "LOCAL(i,4) GROUPTOP(k,3) UPCAST(j,2) UNROLL(k,3)"},
    {"ik,kj->ij", "i=16,k=36,j=8", "f64", "LOCAL(i,4) GROUP(k,4) UPCAST(j,4)"},
    {"ij->j", "i=37,j=32", "f32", "UPCAST(j,8) GROUPTOP(i,37)"},
    {"ij->", "i=37,j=3", "f64", "PADTO(i,40) GROUPTOP(i,8) UNROLL(j,3)"},
    {"xik,kj->xij", "x=3,i=5,k=4,j=6", "f32",
     "LOCAL(x,3) PREFETCH(1,k,2) GROUPTOP(k,2)"},
    {"abcde->", "a=2,b=3,c=4,d=5,e=3", "f32", "GROUP(a,2) UNROLL(c,4)"},
    {"ij->ji", "i=64,j=64", "f32", "UPCAST(i,4) UPCAST(j,4) LOCAL(i,4)"},
    {"xij->", "x=37,i=6,j=16", "f64",
     "PADTO(x,40) SPLIT(x,4) GROUPTOP(j,4) UNROLL(j,4) UNROLL(i,3)"},
    {"ik,kj->ij", "i=7,k=48,j=8", "f32",
     "PADTO(i,8) LOCAL(i,4) UPCAST(j,4) PREFETCH(1,k,4) SPLIT(k,3) "
     "UNROLL(k,2)"},
    {"xik,kj->xij", "x=5,i=4,k=12,j=4", "f64",
     "NOLOCALS SPLIT(k,2) SPLIT(k,3) UPCAST(j,4)"},
    {"abcde->ab", "a=2,b=3,c=4,d=5,e=6", "f32",
     "SPLIT(c,4) SPLIT(e,2) LOCAL(a,2) UNROLL(d,5)"},
    {"ik,kj->ij", "i=35,k=35,j=35", "f32",
     "PADTO(i,40) PADTO(j,36) LOCAL(i,8) UPCAST(i,5) UPCAST(j,4) "
     "LOCAL(j,3) UNROLL(k,7) SWAP(i,j)"},
    /* HOIST: the DG operator with the product of xre and xej formed once
     * per (r, j), vectorized along i (f32) and scalar (f64, 5 lanes) */
    {"xre,rij,xej->xei", "x=3,r=4,e=5,i=8,j=6", "f32",
     "UPCAST(i,0) HOIST LOCAL(e,5)"},
    {"xre,rij,xej->xei", "x=3,r=4,e=5,i=5,j=6", "f64",
     "HOIST UPCAST(i,5) UPCAST(e,5) UNROLL(j,3)"},
    {"xre,rij,xej->xei", "x=3,r=4,e=5,i=8,j=6", "f64",
     "LOCAL(i,2) HOIST GROUP(r,4) UPCAST(e,5) PREFETCH(1,j,3)"},
    /* a vector product: lanes along j (UNROLL), two values of i */
    {"xre,rij,xej->xei", "x=3,r=4,e=5,i=6,j=20", "f64",
     "UNROLL(j,0) LOCAL(x,3) UPCAST(i,2) HOIST"},
    {"xre,rij,xej->xei", "x=3,r=4,e=5,i=6,j=12", "f32",
     "HOIST UNROLL(j,4) UPCAST(i,3) UPCAST(e,5)"},
    /* FACTOR and STAGE: the DG operator as the tuner finds it best
     * (vectors along i, 8+4 lanes, rij staged with i contiguous), the
     * partial sums along the inner axis' lanes (UNROLL), with PREFETCH on
     * the inner axis, with PREFETCH moving the inner loop to r, with an
     * UNROLL of r the outer operand uses */
    {"xre,rij,xej->xei", "x=4,r=3,e=4,i=12,j=5", "f64",
     "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOCAL(x,2)"},
    {"xre,rij,xej->xei", "x=4,r=3,e=2,i=6,j=8", "f32",
     "UNROLL(j,0) UPCAST(i,2) FACTOR LOCAL(x,2)"},
    {"xre,rij,xej->xei", "x=3,r=4,e=2,i=6,j=6", "f64",
     "LOCAL(x,3) FACTOR UNROLL(r,2) UPCAST(e,2) PREFETCH(1,j,3) UPCAST(i,2)"},
    {"xre,rij,xej->xei", "x=3,r=4,e=2,i=8,j=3", "f32",
     "FACTOR PREFETCH(0,r,2) LOCAL(e,2) UPCAST(i,4) STAGE"},
    /* LOOP: the staged copy shared by the loop's values; with GROUP's
     * combine and PREFETCH's copies inside the loop; padded */
    {"xre,rij,xej->xei", "x=8,r=3,e=4,i=12,j=5", "f64",
     "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,4)"},
    {"ik,kj->ij", "i=16,k=36,j=8", "f32",
     "LOOP(i,2) LOCAL(i,4) GROUP(k,4) UPCAST(j,4) PREFETCH(1,k,3)"},
    {"ik,kj->ij", "i=7,k=35,j=5", "f64",
     "PADTO(i,8) LOOP(i,2) LOCAL(i,2) UPCAST(j,5) STAGE"},
    /* STAGE with padding and GROUP lanes on another axis than the staged
     * input's; SPLIT */
    {"ik,kj->ij", "i=7,k=35,j=5", "f32",
     "PADTO(j,8) UPCAST(j,8) LOCAL(i,7) STAGE UNROLL(k,5)"},
    {"xre,rij,xej->xei", "x=2,r=6,e=3,i=4,j=4", "f32",
     "STAGE GROUP(r,3) SPLIT(j,2) LOCAL(i,2)"},
    /* FACTOR with three operands inside the inner loop, padded */
    {"ab,bc,c,ac->a", "a=7,b=6,c=5", "f64",
     "PADTO(a,8) FACTOR UPCAST(a,4) UNROLL(c,5) UNROLL(b,2)"},
    /* four operands, padded, with SPLIT */
    {"ab,bc,c,ac->a", "a=7,b=6,c=5", "f32",
     "PADTO(a,8) HOIST UPCAST(a,4) UNROLL(c,5) SPLIT(b,2)"},
    /* NTSTORE: vector stores aligned (i=4 lanes, coefficient 4), in
     * aligned pairs (i=10: 8 lanes at x*10) and an aligned 2-lane chunk;
     * masked (PADTO); after GROUP's combine; f16 inputs into an f32
     * output */
    {"xj,ij->xi", "x=16,i=4,j=4", "f64",
     "UPCAST(i,0) UPCAST(x,4) STAGE LOOP(x,2) NTSTORE"},
    {"xj,ij->xi", "x=12,i=10,j=10", "f64", "NTSTORE UPCAST(i,0) LOOP(x,3)"},
    {"xj,ij->xi", "x=12,i=10,j=10", "f32", "UPCAST(i,0) UPCAST(x,3) NTSTORE"},
    /* padded lanes holding the whole axis: stores stop at its size */
    {"xik,kj->xij", "x=8,i=3,k=5,j=35", "f64",
     "PADTO(j,8) UPCAST(j,0) UPCAST(x,2)"},
    {"xik,kj->xij", "x=4,i=6,k=7,j=19", "f32",
     "PADTO(j,16) UPCAST(j,0) UPCAST(i,3) STAGE LOOP(x,2)"},
    /* regrouped across rows: 16 f32 lanes; 8 f64 in a work-group */
    {"xj,ij->xi", "x=32,i=10,j=10", "f32", "UPCAST(i,0) UPCAST(x,16) NTSTORE"},
    {"xj,ij->xi", "x=32,i=10,j=10", "f64",
     "UPCAST(i,0) UPCAST(x,4) LOCAL(x,2) NTSTORE"},
    {"ik,kj->ij", "i=7,k=35,j=5", "f32",
     "PADTO(i,8) NTSTORE UPCAST(i,4) LOCAL(j,5)"},
    {"ik,kj->ij", "i=16,k=36,j=8", "f64",
     "LOCAL(i,4) GROUP(k,4) UPCAST(j,4) NTSTORE"},
    {"ik,kj->ij", "i=6,k=12,j=5", "f16", "UPCAST(j,5) NTSTORE"},
    /* tile copies a vector at a time (PREFETCH, STAGE), masked where k
     * is padded; element by element where the contiguous part is */
    {"xik,kj->xij", "x=2,i=12,k=24,j=32", "f64",
     "UPCAST(j,16) UPCAST(i,2) LOCAL(i,3) PREFETCH(1,k,8)"},
    {"xik,kj->xij", "x=2,i=6,k=20,j=16", "f32",
     "PADTO(k,24) UPCAST(j,8) LOCAL(i,3) PREFETCH(1,k,6)"},
    {"ik,kj->ij", "i=8,k=12,j=24", "f32",
     "PADTO(j,32) UPCAST(j,8) LOCAL(i,4) PREFETCH(1,k,4)"},
    {"ik,kj->ij", "i=8,k=12,j=16", "f64", "UPCAST(j,8) LOCAL(i,4) STAGE"},
};

/* The combinations run under valgrind: PADTO with splits that do not
 * divide, PREFETCH with LOCAL and UNROLL, GROUP with UPCAST, GROUPTOP,
 * SPLIT with PADTO and GROUPTOP, SWAP; f32 and f64. */
static const size_t combo_vg[] = {1, 4, 6, 8, 12, 16, 18};

static void test_device_combinations(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    for (size_t i = 0; i < sizeof combo_cases / sizeof combo_cases[0]; i++)
        if (runs(i, combo_vg, sizeof combo_vg / sizeof combo_vg[0]))
            run_case(dev, &combo_cases[i]);
}

/* The CUDA rendering of the same kernels compiles with NVRTC. */
static void test_cuda_compiles(void **state)
{
    (void)state;
    const kcase *lists[] = {einsum_cases, combo_cases};
    size_t counts[] = {sizeof einsum_cases / sizeof einsum_cases[0],
                       sizeof combo_cases / sizeof combo_cases[0]};
    const size_t *vg[] = {einsum_vg, combo_vg};
    size_t n_vg[] = {sizeof einsum_vg / sizeof einsum_vg[0],
                     sizeof combo_vg / sizeof combo_vg[0]};
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < counts[l]; i++) {
            const kcase *c = &lists[l][i];
            if (!runs(i, vg[l], n_vg[l]))
                continue;
            et_kernel *k = make(c->einsum, c->shape, c->dtype);
            expect_ok(k, c->opts);
            char msg[16384];
            et_status st = kc_cuda_compile(k, msg, sizeof msg);
            et_kernel_free(k);
            if (st == ET_ERR_UNSUPPORTED)
                skip();
            if (st != ET_OK)
                fail_msg("%s '%s': %s", c->einsum, c->opts, msg);
        }
    }
}

/* The structural suggestions (transforms/heuristic.h): exactly what the
 * rules give for each structure, and every suggested kernel verified on
 * the device (when there is one) and compiled with NVRTC. */
static void test_heuristics(void **state)
{
    (void)state;
    static const struct {
        const char *einsum, *shape, *dtype;
        int vw; /* the target's preferred f32 vector width (f64: half);
                 * 0: the generic profile, no vectors */
        int n;
        const char *want[ET_HEURISTIC_MAX];
    } cases[] = {
        /* three operands: block of i and e (80 f64), FACTOR, STAGE of the
         * operand without x and a loop over x; no room for x in the
         * block: 4 such loops in a work-group */
        {"xre,rij,xej->xei", "x=1024,r=3,e=4,i=20,j=20", "f64", 0, 3,
         {"UPCAST(i,0) UPCAST(e,0) FACTOR",
          "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,64)",
          "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,64) LOCAL(x,4)"}},
        /* j whole (35), room for 3 more f64: first the block with the
         * batch axis by 2, then with i (left unsplit) iterated in each
         * work-item, then 8 of those blocks in a work-group (the largest
         * power of two up to 8 dividing the 2048 left), then the block
         * without it */
        {"xik,kj->xij", "x=4096,i=35,k=35,j=35", "f64", 0, 6,
         {"UPCAST(j,0) UPCAST(x,2)", "UPCAST(j,0) UPCAST(x,2) LOOP(i,0)",
          "UPCAST(j,0) UPCAST(x,2) LOCAL(x,8)",
          "UPCAST(j,0) UPCAST(x,2) STAGE LOOP(x,64)", "UPCAST(j,0)",
          "UPCAST(j,0) STAGE LOOP(x,64)"}},
        /* no batch axis (x is not the largest): a 16 x 16 f32 block, no
         * STAGE */
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f32", 0, 1,
         {"UPCAST(j,16) UPCAST(i,16)"}},
        /* f64: half the values; j by 16, i by 8 */
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f64", 0, 1,
         {"UPCAST(j,16) UPCAST(i,8)"}},
        /* f32: room for x by 16 after j and i; 3 left of x to loop over
         * in the block with it, no power of two of it for a work-group */
        {"xik,kj->xij", "x=48,i=4,k=8,j=4", "f32", 0, 4,
         {"UPCAST(j,0) UPCAST(i,0) UPCAST(x,16)",
          "UPCAST(j,0) UPCAST(i,0) UPCAST(x,16) STAGE LOOP(x,3)",
          "UPCAST(j,0) UPCAST(i,0)",
          "UPCAST(j,0) UPCAST(i,0) STAGE LOOP(x,48)"}},
        /* a full reduction: no global axis, no register block; on a CPU
         * each work-item runs along the contiguous j (UNROLL by 8) and
         * SPLIT spreads x over work-groups (its largest divisor up to
         * 64) */
        {"xij->", "x=64,i=8,j=8", "f32", 0, 1, {"UNROLL(j,8) SPLIT(x,64)"}},
        {"xij->", "x=128,i=16,j=64", "f32", 16, 1,
         {"UNROLL(j,8) SPLIT(x,64)"}},
        /* a batched matvec: i strided in xik, k its contiguous summed
         * axis: first along k with 4 of x in a work-item, then the
         * register blocks */
        {"xik,xk->xi", "x=4096,i=128,k=128", "f32", 16, 4,
         {"UNROLL(k,8) UPCAST(x,4)", "UPCAST(i,0) UPCAST(x,2)",
          "UPCAST(i,0) UPCAST(x,2) LOCAL(x,8)", "UPCAST(i,0)"}},
        /* a row reduction (i strided in xij), AVX2 */
        {"xij->xi", "x=512,i=256,j=256", "f64", 8, 2,
         {"UNROLL(j,8) UPCAST(x,4)", "UPCAST(i,16)"}},
        /* 64-byte vectors (AVX-512: 16 f32, 8 f64), 28 registers: j
         * padded to 40 f64 (5 registers a row), 4 rows of x; i looped */
        {"xik,kj->xij", "x=4096,i=35,k=35,j=35", "f64", 16, 6,
         {"PADTO(j,8) UPCAST(j,0) UPCAST(x,4)",
          "PADTO(j,8) UPCAST(j,0) UPCAST(x,4) LOOP(i,0)",
          "PADTO(j,8) UPCAST(j,0) UPCAST(x,4) LOCAL(x,8)",
          "PADTO(j,8) UPCAST(j,0) UPCAST(x,4) STAGE LOOP(x,64)",
          "PADTO(j,8) UPCAST(j,0)", "PADTO(j,8) UPCAST(j,0) STAGE LOOP(x,64)"}},
        /* f32: padding 35 to 48 adds more than an eighth; 4 registers a
         * row, 5 rows of i */
        {"xik,kj->xij", "x=4096,i=35,k=35,j=35", "f32", 16, 3,
         {"UPCAST(j,0) UPCAST(i,5)",
          "UPCAST(j,0) UPCAST(i,5) STAGE LOOP(x,64)",
          "UPCAST(j,0) UPCAST(i,5) STAGE LOOP(x,64) LOCAL(x,4)"}},
        /* FACTOR: two sets of accumulators, 3 registers a row each: the
         * block (i, e: 4 rows) leaves no room for x; the loops of x in
         * a work-group */
        {"xre,rij,xej->xei", "x=8192,r=3,e=4,i=20,j=20", "f64", 16, 3,
         {"UPCAST(i,0) UPCAST(e,0) FACTOR",
          "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,64)",
          "UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,64) LOCAL(x,4)"}},
        /* and the wider block: 4 vectors of j, rows of i in what is
         * left (5: i by 4); then the panel: 16 blocks of i in a
         * work-group, chunks of k of 16 KiB of j's 16 values (f32: 256,
         * f64: 128) copied to local memory */
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f32", 16, 3,
         {"UPCAST(j,16) UPCAST(i,16)", "UPCAST(j,64) UPCAST(i,4)",
          "UPCAST(j,16) UPCAST(i,16) LOCAL(i,16) PREFETCH(1,k,256)"}},
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f64", 16, 3,
         {"UPCAST(j,16) UPCAST(i,8)", "UPCAST(j,32) UPCAST(i,4)",
          "UPCAST(j,16) UPCAST(i,8) LOCAL(i,16) PREFETCH(1,k,128)"}},
        /* 32-byte vectors (AVX2: 8 f32, 4 f64), 12 registers: the wider
         * block (2 vectors, 4 rows) is the first one */
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f32", 8, 2,
         {"UPCAST(j,16) UPCAST(i,4)",
          "UPCAST(j,16) UPCAST(i,4) LOCAL(i,16) PREFETCH(1,k,256)"}},
        /* f64 on AVX2: the block of 4 vectors of j has no room for rows,
         * the wider block (2 vectors, 4 rows) makes the panel: chunks of
         * k of 16 KiB of j's 8 values (256) */
        {"xik,kj->xij", "x=8,i=512,k=512,j=512", "f64", 8, 3,
         {"UPCAST(j,16)", "UPCAST(j,8) UPCAST(i,4)",
          "UPCAST(j,8) UPCAST(i,4) LOCAL(i,16) PREFETCH(1,k,256)"}},
        /* no panel: the block (i by 12) leaves 3 of i, no power of two
         * of 4 or more blocks for a work-group */
        {"xik,kj->xij", "x=8,i=36,k=512,j=512", "f64", 16, 2,
         {"UPCAST(j,16) UPCAST(i,12)", "UPCAST(j,32) UPCAST(i,4)"}},
        /* AVX2 f64: j by 7 (3 registers a row: 4, 2, 1), 2 rows in the
         * 12 registers, none of i (35 has no divisor up to 2); the batch
         * axis may take the 4 spare ones too: x by 4 */
        {"xik,kj->xij", "x=4096,i=35,k=35,j=35", "f64", 8, 6,
         {"UPCAST(j,7) UPCAST(x,4)", "UPCAST(j,7) UPCAST(x,4) LOOP(i,0)",
          "UPCAST(j,7) UPCAST(x,4) LOCAL(x,8)",
          "UPCAST(j,7) UPCAST(x,4) STAGE LOOP(x,64)", "UPCAST(j,7)",
          "UPCAST(j,7) STAGE LOOP(x,64)"}},
        /* the same with x open (worked at 1024): the block with the
         * batch axis is suggested as for a concrete x, by the divisor
         * of the working size; LOOP over an open axis is refused, so no
         * STAGE LOOP(x,64) */
        {"xik,kj->xij", "x=*,i=35,k=35,j=35", "f64", 8, 4,
         {"UPCAST(j,7) UPCAST(x,4)", "UPCAST(j,7) UPCAST(x,4) LOOP(i,0)",
          "UPCAST(j,7) UPCAST(x,4) LOCAL(x,8)", "UPCAST(j,7)"}},
        /* and on AVX-512 */
        {"xik,kj->xij", "x=*,i=35,k=35,j=35", "f64", 16, 4,
         {"PADTO(j,8) UPCAST(j,0) UPCAST(x,4)",
          "PADTO(j,8) UPCAST(j,0) UPCAST(x,4) LOOP(i,0)",
          "PADTO(j,8) UPCAST(j,0) UPCAST(x,4) LOCAL(x,8)",
          "PADTO(j,8) UPCAST(j,0)"}},
        /* CUDA (the generic profile): first a thread block, LOCAL on the
         * output axes innermost first (j whole: 35 values; i by 7: 245
         * threads), a register tile (x by 4: nothing of j and i left to
         * tile by up to 4), then with shared-memory tiles of k; then the
         * register blocks as without vectors, no CPU work-group */
        {"xik,kj->xij", "x=4096,i=35,k=35,j=35", "f64", -1, 6,
         {"LOCAL(j,35) LOCAL(i,7) UPCAST(x,4)",
          "LOCAL(j,35) LOCAL(i,7) UPCAST(x,4) PREFETCH(0,k,7) "
          "PREFETCH(1,k,7)",
          "UPCAST(j,7) UPCAST(x,4)", "UPCAST(j,7) UPCAST(x,4) STAGE LOOP(x,64)",
          "UPCAST(j,7)", "UPCAST(j,7) STAGE LOOP(x,64)"}},
        /* j by a warp, i by 8: 256 threads, a 4 x 4 tile of each */
        {"xik,kj->xij", "x=1,i=512,k=512,j=512", "f32", -1, 3,
         {"LOCAL(j,32) LOCAL(i,8) UPCAST(j,4) UPCAST(i,4)",
          "LOCAL(j,32) LOCAL(i,8) UPCAST(j,4) UPCAST(i,4) PREFETCH(0,k,16) "
          "PREFETCH(1,k,16)",
          "UPCAST(j,16) UPCAST(i,4)"}},
        /* i, e whole and x by 2 (160 threads); the rij matrix, where i is
         * not innermost, is small */
        {"xre,rij,xej->xei", "x=8192,r=3,e=4,i=20,j=20", "f64", -1, 4,
         {"LOCAL(i,20) LOCAL(e,4) LOCAL(x,2) UPCAST(x,4) FACTOR",
          "LOCAL(i,20) LOCAL(e,4) LOCAL(x,2) UPCAST(x,4) FACTOR "
          "PREFETCH(1,j,10) PREFETCH(2,j,10)",
          "UPCAST(i,0) FACTOR", "UPCAST(i,0) FACTOR STAGE LOOP(x,64)"}},
        /* a row reduction: i strided in xij, no block */
        {"xij->xi", "x=512,i=256,j=256", "f32", -1, 2,
         {"UPCAST(i,16) UPCAST(x,4)", "UPCAST(i,16)"}},
    };
    et_device *dev = kc_device();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        et_kernel *k = make_on(cases[c].einsum, cases[c].shape,
                               cases[c].dtype, cases[c].vw);
        et_heuristic h[ET_HEURISTIC_MAX];
        int n = et_kernel_heuristics(k, h);
        if (n != cases[c].n) {
            char got[4096] = "";
            for (int i = 0; i < n; i++) {
                char text[512];
                et_opts_format(h[i].opt, h[i].n_opts, text, sizeof text);
                snprintf(got + strlen(got), sizeof got - strlen(got),
                         " '%s'", text);
            }
            fail_msg("%s %s %s (vw %d): %d suggestions, want %d:%s",
                     cases[c].einsum, cases[c].shape, cases[c].dtype,
                     cases[c].vw, n, cases[c].n, got);
        }
        for (int i = 0; i < n; i++) {
            char text[512];
            et_opts_format(h[i].opt, h[i].n_opts, text, sizeof text);
            if (strcmp(text, cases[c].want[i]) != 0)
                fail_msg("%s %s %s: suggestion %d is '%s', want '%s'",
                         cases[c].einsum, cases[c].shape, cases[c].dtype, i,
                         text, cases[c].want[i]);
            et_kernel *w = et_kernel_clone(k);
            assert_non_null(w);
            assert_int_equal(et_kernel_apply_opts(w, h[i].opt, h[i].n_opts,
                                                  NULL, 0),
                             ET_OK);
            char msg[16384];
            if (dev && !under_valgrind() &&
                kc_check_kernel(dev, w, 5, msg, sizeof msg) != ET_OK)
                fail_msg("%s '%s': %s", cases[c].einsum, text, msg);
            et_status st = kc_cuda_compile(w, msg, sizeof msg);
            if (st != ET_OK && st != ET_ERR_UNSUPPORTED)
                fail_msg("%s '%s' (CUDA): %s", cases[c].einsum, text, msg);
            et_kernel_free(w);
        }
        et_kernel_free(k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_roundtrip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_source),
        cmocka_unit_test(test_source_barriers),
        cmocka_unit_test(test_random_opts),
        cmocka_unit_test(test_device_einsums),
        cmocka_unit_test(test_vector_pack),
        cmocka_unit_test(test_device_each_opt),
        cmocka_unit_test(test_device_combinations),
        cmocka_unit_test(test_cuda_compiles),
        cmocka_unit_test(test_heuristics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
