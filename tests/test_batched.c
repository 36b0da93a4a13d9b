/*
 * test_batched.c - batched einsums (einsum/rows.c, docs/einsum.md): the
 * batch spec and its errors, the batched einsum's structure, counts and
 * canonical form (rows reordered and arrays renamed give the same key),
 * and its kernels: every opt kind on a batched nest, in both row modes
 * (the row axis global, or UPCAST whole), run on the suite's device and
 * compared element by element, row by row, with the long-double
 * reference; their CUDA renderings compiled with NVRTC; the row rules'
 * refusals; a kernel whose rows are passed in the wrong order caught; a
 * tuning run through the public API that verifies every output, then the
 * tuned kernel exported and run by a plain OpenCL host program, and
 * loaded into this program's own context and launched row by row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "eintune.h"
#include "einsum/einsum.h"
#include "spaces/space.h"
#include "tests/batch_check.h"
#include "tests/kernel_check.h"
#include "tests/suite_device.h"
#include "transforms/kernel.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char msg[65536];

/* ---- the spec ----------------------------------------------------------- */

static void spec_fails(const char *rows, int n_ops, int pos, const char *say)
{
    et_rows r;
    et_diag d;
    memset(&d, 0, sizeof d);
    assert_int_equal(et_rows_parse(rows, n_ops, &r, &d), ET_ERR_INPUT);
    if (!strstr(d.msg, say))
        fail_msg("'%s': message '%s' lacks '%s'", rows, d.msg, say);
    assert_int_equal(d.pos, pos);
}

static void test_spec(void **state)
{
    (void)state;
    et_rows r;
    et_diag d;
    assert_int_equal(et_rows_parse(" u , Dr ;u,Ds; u,Dt ;", 2, &r, &d), ET_OK);
    assert_int_equal(r.n_rows, 3);
    assert_string_equal(r.name[2][1], "Dt");
    assert_string_equal(r.name[0][0], "u");
    assert_false(et_rows_rowed(&r, 0));
    assert_true(et_rows_rowed(&r, 1));

    spec_fails("u,Dr; u", 2, 7, "row 1 names 1 operand");
    spec_fails("u,Dr,x; u,Ds", 2, 5, "more than the einsum's 2");
    spec_fails("u,Dr", 2, 0, "at least 2 rows");
    spec_fails("u,Dr; Dr,u", 2, 9, "an array stands at one position");
    spec_fails("u,Dr; u,Dr", 2, 0, "the same arrays");
    spec_fails("u,D-r; u,Ds", 2, 3, "expected ','");
    spec_fails("u,Dr; 9,Ds", 2, 6, "expected an array name");
    spec_fails("", 2, 0, "empty batch spec");
    /* the output and four rowed operands: 16 rows make 80 arrays, 12
     * rows 60 */
    et_einsum e4, b4;
    assert_int_equal(et_einsum_from_strings("ab,bc,cd,de->ae",
                                            "a=2,b=2,c=2,d=2,e=2", NULL, &e4,
                                            &d), ET_OK);
    bool all[4] = {true, true, true, true};
    assert_int_equal(et_einsum_batch(&e4, 16, all, false, &b4, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "at most 64"));
    assert_int_equal(et_einsum_batch(&e4, 12, all, false, &b4, &d), ET_OK);

    /* the public call: ET_INPUT_BATCH with the position, the problem
     * unchanged */
    et_problem *p = NULL;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=8,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u", &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_BATCH);
    assert_int_equal(d.pos, 7);
    assert_int_equal(et_problem_n_rows(p), 0);
    assert_string_equal(et_problem_einsum(p), "xj,ij->xi");
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds; u,Dt", &d), ET_OK);
    assert_int_equal(et_problem_n_rows(p), 3);
    assert_string_equal(et_problem_einsum(p), "xj,Rij->Rxi");
    assert_string_equal(et_problem_row_name(p, 1, 1), "Ds");
    assert_string_equal(et_problem_row_name(p, 3, 1), "");
    /* batched twice, or with '...': refused, about the einsum */
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds", &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_EINSUM);
    et_problem_free(p);
    assert_int_equal(et_problem_init("...j,ij->...i", "...=4,i=4,j=4", "f32",
                                     &p, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "'...'"));
    et_problem_free(p);
    /* an open axis stays open, after the row axis; a tune-at size set
     * after the batch applies to it */
    assert_int_equal(et_problem_init("xj,ij->xi", "x=*,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds", &d), ET_OK);
    assert_string_equal(et_problem_einsum(p), "xj,Rij->Rxi");
    assert_true(et_problem_index_open(p, 1));
    assert_false(et_problem_index_open(p, 0));
    assert_int_equal(et_problem_set_tune_at(p, "x=96", &d), ET_OK);
    assert_int_equal(et_problem_index_size(p, 1), 96);
    et_problem_free(p);
    assert_int_equal(et_problem_init("xj,ij->xi", "x=*,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u0,Dr + u1,Ds", &d), ET_OK);
    assert_string_equal(et_problem_einsum(p), "Rxj,Rij->xi");
    assert_true(et_problem_index_open(p, et_problem_index_name(p, 0)[0] ==
                                             'x' ? 0 : 1));
    et_problem_free(p);
}

/* ---- the batched einsum ------------------------------------------------ */

static void test_structure(void **state)
{
    (void)state;
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=100,i=20,j=20", "f64",
                             "u,Dr; u,Ds; u,Dt", &e, &d), ET_OK);
    assert_int_equal(e.n_rows, 3);
    assert_string_equal(e.text, "xj,Rij->Rxi");
    assert_string_equal(e.idx[0].name, "R");
    assert_int_equal(e.idx[0].size, 3);
    assert_int_equal(e.n_out, 3);
    assert_false(et_einsum_op_rowed(&e, 0));
    assert_true(et_einsum_op_rowed(&e, 1));
    assert_true(et_einsum_op_rowed(&e, -1));
    assert_int_equal(et_einsum_operand_elems(&e, 1), 3 * 400);
    assert_int_equal(et_einsum_row_elems(&e, 1), 400);
    assert_int_equal(et_einsum_row_elems(&e, 0), 100 * 20);
    assert_int_equal(et_einsum_row_elems(&e, -1), 100 * 20);
    /* the shared operand's bytes once, every row's own */
    assert_int_equal(et_einsum_bytes(&e),
                     8 * (100 * 20 + 3 * 400 + 3 * 100 * 20));
    /* a letter the einsum uses is not the row axis' */
    assert_int_equal(bc_batched("Rj,ij->Ri", "R=10,i=4,j=4", "f64", "u,A; u,B",
                             &e, &d), ET_OK);
    assert_string_equal(e.text, "Rj,Sij->SRi");
}

static void test_canonical(void **state)
{
    (void)state;
    et_einsum a, b, c, plain, back;
    et_diag d;
    char ca[512], cb[512], cc[512], cp[512], cback[512];
    assert_int_equal(bc_batched("xj,ij->xi", "x=64,i=8,j=8", "f32",
                             "u,Dr; u,Ds; u,Dt", &a, &d), ET_OK);
    /* rows reordered, arrays renamed */
    assert_int_equal(bc_batched("xj,ij->xi", "x=64,i=8,j=8", "f32",
                             "v,Dt; v,Dr; v,Ds", &b, &d), ET_OK);
    /* indices renamed, operands reordered */
    assert_int_equal(bc_batched("ab,yb->ya", "y=64,a=8,b=8", "f32",
                             "P,w; Q,w; S,w", &c, &d), ET_OK);
    et_einsum_canonical(&a, ca, sizeof ca);
    et_einsum_canonical(&b, cb, sizeof cb);
    et_einsum_canonical(&c, cc, sizeof cc);
    assert_string_equal(ca, cb);
    assert_string_equal(ca, cc);
    assert_true(strncmp(ca, "rows|", 5) == 0);
    /* the same einsum with the rows as one stacked array is another
     * problem (its kernel takes one pointer) */
    assert_int_equal(et_einsum_from_strings("xj,Rij->Rxi", "x=64,i=8,j=8,R=3",
                                            "f32", &plain, &d), ET_OK);
    et_einsum_canonical(&plain, cp, sizeof cp);
    assert_string_not_equal(ca, cp);
    assert_string_equal(ca + 5, cp);
    /* rebuilt from the form */
    assert_int_equal(et_einsum_from_canonical(ca, &back, &d), ET_OK);
    assert_int_equal(back.n_rows, 3);
    et_einsum_canonical(&back, cback, sizeof cback);
    assert_string_equal(ca, cback);
    /* the structure form keeps the rows too */
    et_einsum_structure(&a, ca, sizeof ca);
    et_einsum_structure(&plain, cp, sizeof cp);
    assert_string_not_equal(ca, cp);
}

/* A space written for one row binds to the batched einsum: its indices
 * land on the row's, past the row axis; one for another einsum does not. */
static void test_space_binds_a_row(void **state)
{
    (void)state;
    static const char text[] =
        "name: grad\n"
        "einsum: \"ab,cb->ac\"\n"
        "params:\n"
        "  t: {values: [1, 2]}\n"
        "transforms:\n"
        "  - {op: UPCAST, axis: c, amt: t, when: t > 1}\n";
    et_space *sp = NULL;
    et_diag d;
    assert_int_equal(et_space_load_text(text, sizeof text - 1, "grad.yaml",
                                        &sp, &d), ET_OK);
    et_einsum e, base;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u,Dr; u,Ds; u,Dt", &e, &d), ET_OK);
    et_binding *b = NULL;
    if (et_space_bind(sp, &e, NULL, &b, &d) != ET_OK)
        fail_msg("bind: %s", d.msg);
    /* the pattern's indices a, c (output) and b (summed) are x, i and j
     * of the row, past the row axis */
    const et_match *m = et_binding_map(b, 0);
    assert_string_equal(e.idx[m->idx_map[0]].name, "x");
    assert_string_equal(e.idx[m->idx_map[1]].name, "i");
    assert_string_equal(e.idx[m->idx_map[2]].name, "j");
    assert_int_equal(m->idx_map[0], 1);
    et_binding_free(b);
    /* the einsum of one row */
    et_einsum_unbatch(&e, &base);
    assert_int_equal(base.n_rows, 0);
    assert_string_equal(base.text, "xj,ij->xi");
    assert_int_equal(et_einsum_operand_elems(&base, 1), 64);
    et_space_free(sp);
}

/* ---- kernels ------------------------------------------------------------- */

typedef struct bcase {
    const char *einsum, *shape, *rows;
} bcase;

static const bcase bcases[] = {
    /* the gradient: u shared by the rows */
    {"xj,ij->xi", "x=37,i=8,j=12", "u,Dr; u,Ds; u,Dt"},
    /* every operand rowed (matmuls side by side) */
    {"ik,kj->ij", "i=12,k=10,j=8", "A,B; C,D"},
    /* three operands, one rowed: geometric factors per row */
    {"xr,rij,xj->xi", "x=20,r=3,i=8,j=8", "g0,D,u; g1,D,u; g2,D,u"},
    /* the gradient with an open x, at its working size (1024) */
    {"xj,ij->xi", "x=*,i=8,j=12", "u,Dr; u,Ds; u,Dt"},
};

/* Opt sequences, in the global row mode (the row axis left alone) and
 * again with UPCAST(R,0) in front (every row in one work-item). Between
 * them every opt kind but SPLIT, which a batched einsum refuses. */
static const char *const bopts[] = {
    "",
    "UPCAST(i,4)",
    "UPCAST(i,4) UNROLL(j,4)",
    "LOCAL(i,4) UPCAST(j,2)",
    "GROUP(j,4)",
    "GROUPTOP(j,2)",
    "PADTO(i,16) LOCAL(i,16)",
    "SWAP(i,R)",
    "NOLOCALS UPCAST(i,2)",
    "LOCAL(i,4) PREFETCH(0,j,4)",
    "LOCAL(i,2) PREFETCH(1,j,2) PREFETCH(0,j,2)",
    "STAGE",
    "LOCAL(i,4) STAGE UNROLL(j,2)",
    "HOIST UPCAST(i,2)",
    "FACTOR UNROLL(j,2)",
    "LOOP(i,2) STAGE",
    "UPCAST(i,8) UNROLL(j,2)", /* vector accumulators where i is 8 */
    "UPCAST(i,0) NTSTORE",
    "UPCAST(i,0) UPCAST(x,4) NTSTORE", /* one run of 4 rows per output */
};

/* NTSTORE's regrouped stores (16 f32 or 8 f64 lanes gathered across rows
 * of 10 elements): each row's output one run of consecutive elements */
static const struct {
    const char *dtype, *opts;
} nt_cases[] = {
    {"f32", "UPCAST(i,0) UPCAST(x,16) NTSTORE"},
    {"f32", "UPCAST(i,0) UPCAST(R,0) UPCAST(x,4) NTSTORE"},
    {"f64", "UPCAST(i,0) UPCAST(x,4) LOCAL(x,2) NTSTORE"},
    {"f64", "UPCAST(i,0) UPCAST(R,0) UPCAST(x,4) STAGE LOOP(x,2) NTSTORE"},
};

static void test_kernels(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    bc_tally t = {0};
    char why[1024];
    for (size_t c = 0; c < sizeof bcases / sizeof bcases[0]; c++)
        for (size_t q = 0; q < sizeof bopts / sizeof bopts[0]; q++)
            for (int mode = 0; mode < 2; mode++) {
                char opts[512];
                snprintf(opts, sizeof opts, "%s%s", mode ? "UPCAST(R,0) " : "",
                         bopts[q]);
                /* the dtype alternates, so both are covered */
                const bcase *b = &bcases[c];
                if (bc_check(dev, b->einsum, b->shape, b->rows,
                             (c + q + mode) % 2 ? "f32" : "f64", opts, 7, &t,
                             why, sizeof why) != 0)
                    fail_msg("%s", why);
            }
    for (size_t q = 0; q < sizeof nt_cases / sizeof nt_cases[0]; q++)
        if (bc_check(dev, "xj,ij->xi", "x=64,i=10,j=6", "u,Dr; u,Ds; u,Dt",
                     nt_cases[q].dtype, nt_cases[q].opts, 7, &t, why,
                     sizeof why) != 0)
            fail_msg("%s", why);
    print_message("batched kernels: %d verified, %d CUDA renderings "
                  "compiled%s\n", t.checked, t.cuda,
                  t.nvrtc_absent ? " (libnvrtc absent)" : "");
    assert_int_equal(t.failures, 0);
    /* most sequences apply to every case: a rule refusing them all would
     * leave this suite checking nothing */
    assert_true(t.checked >= 60);
}

static void refused(const char *opts, const char *say)
{
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u,Dr; u,Ds; u,Dt", &e, &d), ET_OK);
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    assert_int_equal(et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    char why[512] = "";
    assert_int_equal(et_kernel_apply_opts(k, o, n, why, sizeof why),
                     ET_ERR_REFUSED);
    if (!strstr(why, say))
        fail_msg("'%s': reason '%s' lacks '%s'", opts, why, say);
    et_kernel_free(k);
}

static void test_row_rules(void **state)
{
    (void)state;
    refused("LOCAL(R,3)", "global or UPCAST whole");
    refused("LOOP(R,3)", "global or UPCAST whole");
    refused("PADTO(R,4)", "global or UPCAST whole");
    refused("UPCAST(R,1)", "takes all its 3 rows");
    refused("UPCAST(R,3) UPCAST(R,0)", "takes all its 3 rows");
    refused("SPLIT(j,2)", "SPLIT does not apply to a batched einsum");
    /* STAGE copies a rowed operand whether a work-group reads one row
     * (the row axis global) or every row (UPCAST whole) */
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u,Dr; u,Ds; u,Dt", &e, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_opt st = et_opt_make(ET_OPT_STAGE, "", 0);
    assert_int_equal(et_kernel_apply_opt(k, &st, NULL, 0), ET_OK);
    assert_true(et_kernel_staged(k, 1));
    et_opt up = et_opt_make(ET_OPT_UPCAST, "R", 0);
    assert_int_equal(et_kernel_apply_opt(k, &up, NULL, 0), ET_OK);
    assert_true(et_kernel_staged(k, 1));
    et_kernel_free(k);

    /* launch order: i (innermost) in dimension 0, the row axis next, x
     * (32) last, so that the rows' work-groups of one block of x follow
     * one another; SWAP(R,x) puts x before R */
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_launch L;
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &L), ET_OK);
    assert_int_equal(L.ndim, 3);
    assert_int_equal(L.global[0], 8);
    assert_int_equal(L.global[1], 3);
    assert_int_equal(L.global[2], 32);
    et_opt sw = et_opt_make(ET_OPT_SWAP, "R", 0);
    snprintf(sw.axis2.name, sizeof sw.axis2.name, "x");
    assert_int_equal(et_kernel_apply_opt(k, &sw, NULL, 0), ET_OK);
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &L), ET_OK);
    assert_int_equal(L.global[1], 32);
    assert_int_equal(L.global[2], 3);
    et_kernel_free(k);
}

/* The arguments: one per row of the output and of each rowed operand;
 * rows passed in the wrong order are caught by the element check. */
static void test_args_and_wrong_rows(void **state)
{
    (void)state;
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=16,i=4,j=4", "f64",
                             "u,Dr; u,Ds; u,Dt", &e, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_opt up = et_opt_make(ET_OPT_UPCAST, "R", 0);
    assert_int_equal(et_kernel_apply_opt(k, &up, NULL, 0), ET_OK);
    et_rendered r;
    assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r), ET_OK);
    /* out_0 out_1 out_2 in0 in1_0 in1_1 in1_2 */
    assert_int_equal(r.n_args, 7);
    static const int op[] = {-1, -1, -1, 0, 1, 1, 1};
    static const int row[] = {0, 1, 2, -1, 0, 1, 2};
    for (int a = 0; a < 7; a++) {
        assert_int_equal(r.arg_operand[a], op[a]);
        assert_int_equal(r.arg_row[a], row[a]);
    }
    assert_non_null(strstr(r.source, "in1_2"));
    assert_non_null(strstr(r.source, "out_1"));
    et_device *dev = kc_device();
    if (dev) {
        /* the same arguments rendered for the suite's device */
        et_rendered_free(&r);
        assert_int_equal(et_kernel_render(k, td_backend(), NULL, &r), ET_OK);
        assert_int_equal(r.n_args, 7);
        assert_int_equal(kc_check_rendered(dev, k, &r, 3, msg, sizeof msg),
                         ET_OK);
        /* the host's rows 0 and 1 of Dr/Ds passed the other way round */
        r.arg_row[4] = 1;
        r.arg_row[5] = 0;
        assert_int_not_equal(kc_check_rendered(dev, k, &r, 3, msg,
                                               sizeof msg), ET_OK);
        assert_non_null(strstr(msg, "element"));
    }
    et_rendered_free(&r);
    /* the generic kernel (every size an argument, for dispatch tables):
     * the same arguments, every row right; its CUDA rendering compiles */
    assert_int_equal(et_kernel_render_generic(&e, td_backend(), &r),
                     ET_OK);
    assert_int_equal(r.n_args, 7);
    for (int a = 0; a < 7; a++) {
        assert_int_equal(r.arg_operand[a], op[a]);
        assert_int_equal(r.arg_row[a], row[a]);
    }
    if (dev)
        assert_int_equal(kc_check_rendered(dev, k, &r, 5, msg, sizeof msg),
                         ET_OK);
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* Row r's output g (X by I) must be u (X by J) times D (I by J)
 * transposed, exactly: the inputs are small integers, every sum exact. */
static void expect_row(const char *what, int r, const float *u,
                       const float *D, const float *g, int X, int I, int J)
{
    for (int x = 0; x < X; x++)
        for (int i = 0; i < I; i++) {
            float want = 0;
            for (int j = 0; j < J; j++)
                want += u[x * J + j] * D[i * J + j];
            if (g[x * I + i] != want)
                fail_msg("%s, row %d [%d,%d]: %g, want %g", what, r, x, i,
                         (double)g[x * I + i], (double)want);
        }
}

static void put_raw(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* The exported batched kernel, run by the delivery tests' host program
 * (plain OpenCL, the header's macros only): one argument per row, every
 * row's output its own product. Small integers: every sum is exact. */
static void export_and_run(const et_problem *p, const char *db)
{
    char dir[] = "/tmp/et_batched_xp_XXXXXX";
    assert_non_null(mkdtemp(dir));
    et_best_options bo = {0};
    bo.db = db;
    et_best_kernel *bk = NULL;
    et_diag d;
    if (et_best_kernel_find(p, &bo, &bk, &d) != ET_OK)
        fail_msg("best: %s", d.msg);
    et_export_options xo = {0};
    xo.dir = dir;
    xo.name = "grad";
    if (et_best_kernel_export(bk, &xo, NULL, &d) != ET_OK)
        fail_msg("export: %s", d.msg);
    et_best_kernel_free(bk);
    char inc[300], exe[300], src[300], files[8][300];
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/host", dir);
    snprintf(src, sizeof src, "%s/grad.cl", dir);
    char *cc[] = {"cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
                  inc, "-DET_EXPORT_HEADER=\"grad.h\"",
                  "tests/delivery/host.c", "-lOpenCL", "-o", exe, NULL};
    if (bc_run_argv(cc) != 0) {
        print_message("no cc or OpenCL headers: the host program is not "
                      "built\n");
        return;
    }
    /* arguments: out_0 out_1 out_2 in0 (u) in1_0 in1_1 in1_2 */
    enum { X = 256, I = 10, J = 10 };
    static float u[X * J], D[3][I * J], g[3][X * I];
    for (int t = 0; t < X * J; t++)
        u[t] = (float)(t * 7 % 9) - 4;
    for (int r = 0; r < 3; r++)
        for (int t = 0; t < I * J; t++)
            D[r][t] = (float)((t * (r + 3) + r) % 7) - 3;
    for (int r = 0; r < 3; r++) {
        for (int t = 0; t < X * I; t++)
            g[r][t] = NAN;
        snprintf(files[r], sizeof files[r], "%s/out%d", dir, r);
        put_raw(files[r], g[r], sizeof g[r]);
        snprintf(files[4 + r], sizeof files[4 + r], "%s/D%d", dir, r);
        put_raw(files[4 + r], D[r], sizeof D[r]);
    }
    snprintf(files[3], sizeof files[3], "%s/u", dir);
    put_raw(files[3], u, sizeof u);
    char *host[] = {exe, src, "1", files[0], files[1], files[2], files[3],
                    files[4], files[5], files[6], NULL};
    assert_int_equal(bc_run_argv(host), 0);
    for (int r = 0; r < 3; r++) {
        FILE *f = fopen(files[r], "rb");
        assert_non_null(f);
        assert_int_equal(fread(g[r], sizeof g[r][0], X * I, f), X * I);
        fclose(f);
        expect_row("exported", r, u, D[r], g[r], X, I, J);
    }
    char *rm[] = {"rm", "-rf", dir, NULL};
    bc_run_argv(rm);
}

/* The batched einsum's dispatch table (the tuned kernel at x=256, the
 * generic one at x=37), run by the host program through NAME_dispatch:
 * every row of both right. */
static void dispatch_and_run(const char *db)
{
    char dir[] = "/tmp/et_batched_dx_XXXXXX";
    assert_non_null(mkdtemp(dir));
    et_dispatch_options o = {ET_SIZED(et_dispatch_options)};
    o.dir = dir;
    o.db = db;
    o.name = "gradt";
    o.batch = "u,Dr; u,Ds; u,Dt";
    et_dispatch_result res;
    et_diag d;
    if (et_dispatch_export("xj,ij->xi", "x=256/37,i=10,j=10", "f32", &o, &res,
                           &d) != ET_OK)
        fail_msg("dispatch: %s", d.msg);
    assert_int_equal(res.n_tuned, 1);
    /* a malformed batch: its position */
    o.batch = "u,Dr; u";
    assert_int_equal(et_dispatch_export("xj,ij->xi", "x=256,i=10,j=10", "f32",
                                        &o, &res, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_BATCH);
    char inc[300], exe[300], src[300], files[2][8][300];
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/host", dir);
    snprintf(src, sizeof src, "%s/gradt.cl", dir);
    char *cc[] = {"cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
                  inc, "-DET_DISPATCH_HEADER=\"gradt.h\"",
                  "-DET_DISPATCH_NAME=gradt", "tests/delivery/host.c",
                  "-lOpenCL", "-o", exe, NULL};
    if (bc_run_argv(cc) != 0) {
        print_message("no cc or OpenCL headers: the host program is not "
                      "built\n");
        return;
    }
    enum { XM = 256, I = 10, J = 10 };
    static const int xs[2] = {256, 37};
    static float u[XM * J], D[3][I * J], g[3][XM * I];
    for (int t = 0; t < XM * J; t++)
        u[t] = (float)(t * 3 % 11) - 5;
    for (int r = 0; r < 3; r++)
        for (int t = 0; t < I * J; t++)
            D[r][t] = (float)((t * (r + 4) + r) % 5) - 2;
    char *host[2 + 2 * 8 + 1];
    int h = 0;
    host[h++] = exe;
    host[h++] = src;
    char sizes[2][64];
    for (int s = 0; s < 2; s++) {
        int X = xs[s];
        snprintf(sizes[s], sizeof sizes[s], "R=3,x=%d,i=10,j=10", X);
        host[h++] = sizes[s];
        for (int r = 0; r < 3; r++) {
            for (int t = 0; t < X * I; t++)
                g[r][t] = NAN;
            snprintf(files[s][r], sizeof files[s][r], "%s/out%d_%d", dir, s,
                     r);
            put_raw(files[s][r], g[r], (size_t)X * I * sizeof(float));
            snprintf(files[s][4 + r], sizeof files[s][4 + r], "%s/D%d", dir,
                     r);
            put_raw(files[s][4 + r], D[r], sizeof D[r]);
        }
        snprintf(files[s][3], sizeof files[s][3], "%s/u%d", dir, s);
        put_raw(files[s][3], u, (size_t)X * J * sizeof(float));
        for (int a = 0; a < 7; a++)
            host[h++] = files[s][a];
    }
    host[h] = NULL;
    assert_int_equal(bc_run_argv(host), 0);
    for (int s = 0; s < 2; s++) {
        int X = xs[s];
        for (int r = 0; r < 3; r++) {
            FILE *f = fopen(files[s][r], "rb");
            assert_non_null(f);
            assert_int_equal(fread(g[r], sizeof(float), (size_t)X * I, f),
                             (size_t)X * I);
            fclose(f);
            expect_row(X == XM ? "dispatch, tuned" : "dispatch, generic",
                       r, u, D[r], g[r], X, I, J);
        }
    }
    char *rm[] = {"rm", "-rf", dir, NULL};
    bc_run_argv(rm);
}

/* The batched kernel loaded into this program's own OpenCL context and
 * launched on its own buffers, one per row (et_cl_kernel_launch_args);
 * the launch without rows and a short row buffer refused. */
static void load_and_launch(const et_problem *p, const char *db)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &plat, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, &n) != CL_SUCCESS) {
        print_message("no OpenCL device: no load\n");
        return;
    }
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    et_load_options lo = {0};
    lo.db = db;
    et_loaded_kernel *lk = NULL;
    et_diag d;
    if (et_cl_kernel_load(p, ctx, dev, &lo, &lk, &d) != ET_OK)
        fail_msg("load: %s", d.msg);
    /* out_0 out_1 out_2 in0 (u) in1_0 in1_1 in1_2 */
    assert_int_equal(et_loaded_kernel_n_args(lk), 7);
    int op = 9, row = 9;
    assert_int_equal(et_loaded_kernel_arg(lk, 5, &op, &row), 0);
    assert_int_equal(op, 1);
    assert_int_equal(row, 1);
    assert_int_equal(et_loaded_kernel_arg(lk, 3, &op, &row), 0);
    assert_int_equal(op, 0);
    assert_int_equal(row, -1);
    assert_int_equal(et_loaded_kernel_arg(lk, 7, &op, &row), -1);
    enum { X = 256, I = 10, J = 10 };
    static float u[X * J], D[3][I * J], g[3][X * I];
    for (int t = 0; t < X * J; t++)
        u[t] = (float)(t * 5 % 7) - 3;
    for (int r = 0; r < 3; r++)
        for (int t = 0; t < I * J; t++)
            D[r][t] = (float)((t * (r + 2) + 2 * r) % 9) - 4;
    cl_mem args[7], shortbuf;
    for (int r = 0; r < 3; r++) {
        for (int t = 0; t < X * I; t++)
            g[r][t] = NAN;
        args[r] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof g[r], g[r], &rc);
        assert_int_equal(rc, CL_SUCCESS);
        args[4 + r] = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                              CL_MEM_COPY_HOST_PTR,
                                     sizeof D[r], D[r], &rc);
        assert_int_equal(rc, CL_SUCCESS);
    }
    args[3] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             sizeof u, u, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    /* without rows: refused, naming the call that takes them */
    assert_int_equal(et_cl_kernel_launch(lk, q, args[0], &args[3], 2, NULL,
                                         NULL, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "et_cl_kernel_launch_args"));
    /* a row buffer one element short: refused, nothing launched */
    shortbuf = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof D[1] - 4, NULL,
                              &rc);
    assert_int_equal(rc, CL_SUCCESS);
    cl_mem bad[7];
    memcpy(bad, args, sizeof bad);
    bad[5] = shortbuf;
    assert_int_equal(et_cl_kernel_launch_args(lk, q, bad, 7, NULL, NULL, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "row 1 of input 1"));
    assert_int_equal(et_cl_kernel_launch_args(lk, q, args, 6, NULL, NULL, &d),
                     ET_ERR_INPUT);
    if (et_cl_kernel_launch_args(lk, q, args, 7, NULL, NULL, &d) != ET_OK)
        fail_msg("launch: %s", d.msg);
    for (int r = 0; r < 3; r++)
        assert_int_equal(clEnqueueReadBuffer(q, args[r], CL_TRUE, 0,
                                             sizeof g[r], g[r], 0, NULL,
                                             NULL), CL_SUCCESS);
    for (int r = 0; r < 3; r++)
        expect_row("loaded", r, u, D[r], g[r], X, I, J);
    et_loaded_kernel_free(lk);
    /* opts of the caller's own (every row in a work-item): verified in
     * this context, on host inputs, before the load returns */
    lo.opts = "UPCAST(R,0) UPCAST(i,2)";
    if (et_cl_kernel_load(p, ctx, dev, &lo, &lk, &d) != ET_OK)
        fail_msg("load with opts: %s", d.msg);
    for (int r = 0; r < 3; r++)
        assert_int_equal(clEnqueueFillBuffer(q, args[r], &(float){NAN},
                                             sizeof(float), 0, sizeof g[r], 0,
                                             NULL, NULL), CL_SUCCESS);
    if (et_cl_kernel_launch_args(lk, q, args, 7, NULL, NULL, &d) != ET_OK)
        fail_msg("launch with opts: %s", d.msg);
    for (int r = 0; r < 3; r++) {
        float got[X * I];
        assert_int_equal(clEnqueueReadBuffer(q, args[r], CL_TRUE, 0,
                                             sizeof got, got, 0, NULL, NULL),
                         CL_SUCCESS);
        assert_memory_equal(got, g[r], sizeof got);
    }
    et_loaded_kernel_free(lk);
    for (int a = 0; a < 7; a++)
        clReleaseMemObject(args[a]);
    clReleaseMemObject(shortbuf);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* A tuning run through the public API: the best verified kernel of the
 * batched problem, with every row's output checked. */
static void test_tune(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    char db[] = "/tmp/et_batched_XXXXXX";
    int fd = mkstemp(db);
    assert_true(fd >= 0);
    close(fd);
    unlink(db);
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=256,i=10,j=10", "f32",
                                     &p, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds; u,Dt", &d), ET_OK);
    char why[512];
    if (bc_tune(p, db, 6, why, sizeof why) != ET_OK)
        fail_msg("tune: %s", why); /* every candidate verified on all
                                    * three outputs */
    export_and_run(p, db);
    dispatch_and_run(db);
    load_and_launch(p, db);
    et_problem_free(p);
    unlink(db);
}

/* An open axis in a batched einsum (x=*): tuned at x=64, checked at the
 * awkward sizes as any open einsum; the entry then serves run --best at
 * another x (every row's output against the product), a load into this
 * program's own OpenCL context launched at x=37 and x=1, and the rows
 * written in another order with other names. */
static void test_open_axis(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    char db[] = "/tmp/et_batched_open_XXXXXX";
    int fd = mkstemp(db);
    assert_true(fd >= 0);
    close(fd);
    unlink(db);
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=*,i=10,j=10", "f32",
                                     &p, &d), ET_OK);
    assert_int_equal(et_problem_set_tune_at(p, "x=64", &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds; u,Dt", &d), ET_OK);
    /* R, x, i, j: x the open one, R not */
    assert_int_equal(et_problem_n_indices(p), 4);
    assert_string_equal(et_problem_index_name(p, 1), "x");
    assert_true(et_problem_index_open(p, 1));
    assert_false(et_problem_index_open(p, 0));
    char why[512];
    if (bc_tune(p, db, 5, why, sizeof why) != ET_OK)
        fail_msg("tune: %s", why);
    /* a second run: the cost model takes the first run's trials from the
     * database (rebuilt at their tune-at size) */
    et_tune_options o = {0};
    o.db = db;
    o.budget = 2;
    o.race = -1;
    et_tune_report *rep = NULL;
    if (et_tune_run_full(p, &o, &rep, &d) != ET_OK)
        fail_msg("second tune: %s", d.msg);
    char *js = et_tune_report_json(rep);
    assert_non_null(js);
    const char *ds = strstr(js, "\"db_samples\":");
    assert_non_null(ds);
    long nds = strtol(ds + strlen("\"db_samples\":"), NULL, 10);
    assert_true(nds >= 2); /* 0 when they could not be rebuilt */
    et_free(js);
    et_tune_report_free(rep);

    /* loaded in this program's context, launched at other sizes of x */
    cl_platform_id plat;
    cl_device_id dev;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &plat, &n) == CL_SUCCESS && n > 0 &&
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, &n) == CL_SUCCESS) {
        cl_int rc;
        cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        et_load_options lo = {0};
        lo.db = db;
        et_loaded_kernel *lk = NULL;
        if (et_cl_kernel_load(p, ctx, dev, &lo, &lk, &d) != ET_OK)
            fail_msg("load: %s", d.msg);
        enum { XM = 37, I = 10, J = 10 };
        static float u[XM * J], D[3][I * J], g[3][XM * I];
        for (int t = 0; t < XM * J; t++)
            u[t] = (float)(t * 5 % 7) - 3;
        for (int r = 0; r < 3; r++)
            for (int t = 0; t < I * J; t++)
                D[r][t] = (float)((t * (r + 2) + 2 * r) % 9) - 4;
        static const int xs[] = {37, 1};
        for (int c = 0; c < 2; c++) {
            int X = xs[c];
            cl_mem args[7];
            for (int r = 0; r < 3; r++) {
                for (int t = 0; t < XM * I; t++)
                    g[r][t] = NAN;
                args[r] = clCreateBuffer(ctx, CL_MEM_READ_WRITE |
                                                  CL_MEM_COPY_HOST_PTR,
                                         (size_t)X * I * sizeof(float), g[r],
                                         &rc);
                assert_int_equal(rc, CL_SUCCESS);
                args[4 + r] = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                                      CL_MEM_COPY_HOST_PTR,
                                             sizeof D[r], D[r], &rc);
                assert_int_equal(rc, CL_SUCCESS);
            }
            args[3] = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                              CL_MEM_COPY_HOST_PTR,
                                     (size_t)X * J * sizeof(float), u, &rc);
            assert_int_equal(rc, CL_SUCCESS);
            const int64_t sizes[4] = {3, X, I, J};
            if (et_cl_kernel_launch_args(lk, q, args, 7, sizes, NULL, &d) !=
                ET_OK)
                fail_msg("launch at x=%d: %s", X, d.msg);
            for (int r = 0; r < 3; r++) {
                assert_int_equal(clEnqueueReadBuffer(q, args[r], CL_TRUE, 0,
                                                     (size_t)X * I *
                                                         sizeof(float),
                                                     g[r], 0, NULL, NULL),
                                 CL_SUCCESS);
                expect_row(X == 1 ? "loaded, x=1" : "loaded, x=37", r, u,
                           D[r], g[r], X, I, J);
            }
            for (int a = 0; a < 7; a++)
                clReleaseMemObject(args[a]);
        }
        et_loaded_kernel_free(lk);
        clReleaseCommandQueue(q);
        clReleaseContext(ctx);
    }

    /* the rows in another order, renamed, at a concrete x: the open
     * entry answers */
    et_problem *p2 = NULL;
    assert_int_equal(et_problem_init("yb,ab->ya", "y=300,a=10,b=10", "f32",
                                     &p2, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p2, "w,Dt; w,Dr; w,Ds", &d), ET_OK);
    et_best_options bo = {0};
    bo.db = db;
    et_best_kernel *bk = NULL;
    if (et_best_kernel_find(p2, &bo, &bk, &d) != ET_OK)
        fail_msg("best for the renamed rows at y=300: %s", d.msg);
    et_best_kernel_free(bk);
    et_problem_free(p2);
    et_problem_free(p);
    unlink(db);
}

/* The fused row seed's opts (et_tune_row_fused_opts) for row's opts on
 * the batched kernel of xj,ij->xi at shape with rows, into buf. */
static void fused_opts(const char *shape, const char *dt, const char *rows,
                       const char *row, char *buf, size_t cap)
{
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", shape, dt, rows, &e, &d), ET_OK);
    et_opt o[ET_MAX_OPTS], out[ET_MAX_OPTS];
    int n = 0;
    assert_int_equal(et_opts_parse(row, o, ET_MAX_OPTS, &n, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    int m = et_tune_row_fused_opts(k, o, n, out);
    assert_true(m > 0);
    et_opts_format(out, m, buf, cap);
    et_kernel_free(k);
}

/* The fused row seed keeps the row's register block: UPCAST(R,0) in
 * front, the UPCASTs after the vector axis's cut to the largest product
 * of divisors of theirs at most theirs over the rows. */
static void test_row_fused_opts(void **state)
{
    (void)state;
    static const struct {
        const char *shape, *rows, *row, *want;
    } c[] = {
        /* 8 over 3 rows: 2; the later splits still divide */
        {"x=209664,i=20,j=20", "u,Dr; u,Ds; u,Dt",
         "UPCAST(i,0) UPCAST(x,8) STAGE LOOP(x,63) NTSTORE LOCAL(x,16)",
         "UPCAST(R,0) UPCAST(i,0) UPCAST(x,2) STAGE LOOP(x,63) NTSTORE "
         "LOCAL(x,16)"},
        /* 3 x 2 over 3: the 2 kept, the 3 left out */
        {"x=419328,i=20,j=20", "u,Dr; u,Ds; u,Dt",
         "UPCAST(i,0) STAGE LOOP(x,64) UPCAST(x,3) UPCAST(x,2)",
         "UPCAST(R,0) UPCAST(i,0) STAGE LOOP(x,64) UPCAST(x,2)"},
        /* 16 over 3: 4 */
        {"x=2097024,i=4,j=4", "u,Dr; u,Ds; u,Dt",
         "UPCAST(i,0) UPCAST(x,16) NTSTORE",
         "UPCAST(R,0) UPCAST(i,0) UPCAST(x,4) NTSTORE"},
        /* over 2 rows, a whole axis read as its size: x=64 by 2 */
        {"x=128,i=4,j=4", "u,Dr; u,Ds", "UPCAST(i,0) LOOP(x,2) UPCAST(x,0)",
         "UPCAST(R,0) UPCAST(i,0) LOOP(x,2) UPCAST(x,32)"},
        /* under the rows: left out */
        {"x=4096,i=4,j=4", "u,Dr; u,Ds; u,Dt", "UPCAST(i,0) UPCAST(x,2)",
         "UPCAST(R,0) UPCAST(i,0)"},
        /* the vector axis alone: nothing to cut */
        {"x=4096,i=4,j=4", "u,Dr; u,Ds; u,Dt", "UPCAST(i,0) NTSTORE",
         "UPCAST(R,0) UPCAST(i,0) NTSTORE"},
        /* rows summed: UNROLL(R,0), the row's opts as they are */
        {"x=4096,i=4,j=4", "u0,Dr + u1,Ds", "UPCAST(i,0) UPCAST(x,8)",
         "UNROLL(R,0) UPCAST(i,0) UPCAST(x,8)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char got[1200];
        fused_opts(c[i].shape, "f64", c[i].rows, c[i].row, got, sizeof got);
        if (strcmp(got, c[i].want) != 0)
            fail_msg("%s [%s] '%s': '%s', want '%s'", c[i].shape, c[i].rows,
                     c[i].row, got, c[i].want);
    }
}

/* The index of the first seed candidate of rep at or after i; fails the
 * test when there is none. */
static int next_seed(const et_tune_report *rep, int i, et_tune_entry *c)
{
    while (et_tune_report_candidate(rep, i, c) == 0 && !c->seed)
        i++;
    assert_int_equal(et_tune_report_candidate(rep, i, c), 0);
    return i;
}

/* The row seed: a batched einsum's search starts from the best opts the
 * database knows for one row (the rows' separate kernels in one launch),
 * before the structural seeds. */
static void test_row_seed(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    char db[] = "/tmp/et_batched_seed_XXXXXX";
    int fd = mkstemp(db);
    assert_true(fd >= 0);
    close(fd);
    unlink(db);
    et_problem *row = NULL, *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=64,i=4,j=4", "f32", &row,
                                     &d), ET_OK);
    et_tune_options o = {0};
    o.db = db;
    o.budget = 4;
    o.race = -1;
    et_tune_report *rep = NULL;
    if (et_tune_run_full(row, &o, &rep, &d) != ET_OK)
        fail_msg("tune the row: %s", d.msg);
    et_tune_summary s;
    et_tune_report_summary(rep, &s);
    assert_true(s.found);
    et_tune_report_free(rep);
    assert_int_equal(et_problem_init("xj,ij->xi", "x=64,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds", &d), ET_OK);
    o.budget = 4;
    if (et_tune_run_full(p, &o, &rep, &d) != ET_OK)
        fail_msg("tune the batch: %s", d.msg);
    /* the first seed answered (after the untransformed kernel): the
     * row's best, from the database */
    et_tune_entry c;
    int i = next_seed(rep, 0, &c);
    assert_string_equal(c.opts, s.opts);
    assert_false(c.seed_structural);
    assert_string_equal(c.seed_einsum, "xj,ij->xi");
    /* the next seed: the same opts with every row in each work-item,
     * the row's block cut to its size (test_row_fused_opts) */
    char fused[1200];
    fused_opts("x=64,i=4,j=4", "f32", "u,Dr; u,Ds", s.opts, fused,
               sizeof fused);
    i = next_seed(rep, i + 1, &c);
    assert_string_equal(c.opts, fused);
    assert_false(c.seed_structural);
    /* then the row's opts with the rows one after another: the row axis
     * swapped with x, the axis launched last (docs/opts.md, "Batched
     * einsums"), unless the row's opts already swapped x inward */
    char apart[1200];
    if (strstr(s.opts, "SWAP") == NULL) {
        snprintf(apart, sizeof apart, "%s%sSWAP(R,x)", s.opts,
                 s.opts[0] ? " " : "");
        i = next_seed(rep, i + 1, &c);
        assert_string_equal(c.opts, apart);
        assert_false(c.seed_structural);
    }
    /* the structural seeds store past the caches exactly when the row's
     * best does (the heuristics never suggest NTSTORE themselves) */
    bool row_nt = strstr(s.opts, "NTSTORE") != NULL;
    for (i++; et_tune_report_candidate(rep, i, &c) == 0; i++) {
        if (!c.seed || !c.seed_structural)
            continue;
        if ((strstr(c.opts, "NTSTORE") != NULL) != row_nt)
            fail_msg("structural seed '%s' against the row's '%s'", c.opts,
                     s.opts);
    }
    et_tune_report_free(rep);
    et_problem_free(row);
    et_problem_free(p);
    unlink(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_space_binds_a_row),
        cmocka_unit_test(test_row_rules),
        cmocka_unit_test(test_args_and_wrong_rows),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_tune),
        cmocka_unit_test(test_open_axis),
        cmocka_unit_test(test_row_fused_opts),
        cmocka_unit_test(test_row_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
