/*
 * test_rows_summed.c - batched einsums whose rows are summed into one
 * output ("u0,Dr + u1,Ds + u2,Dt", docs/einsum.md): the spec and its
 * errors, the einsum's structure (the row axis a summed index), counts,
 * canonical form (rows reordered and arrays renamed give the same key,
 * another key than rows with outputs of their own), the row rules, the
 * kernels of every opt kind verified on the suite's device against the
 * long-double reference and compiled with NVRTC, rows passed in the wrong
 * order caught, and a tuning run through the public API whose best is
 * then run by `eintune run`, loaded into this program's OpenCL context
 * and launched, and exported and run by a plain OpenCL host program:
 * every result compared exactly with the sum of the rows' products.
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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char msg[65536];

static void spec_fails(const char *rows, int pos, const char *say)
{
    et_rows r;
    et_diag d;
    memset(&d, 0, sizeof d);
    assert_int_equal(et_rows_parse(rows, 2, &r, &d), ET_ERR_INPUT);
    if (!strstr(d.msg, say))
        fail_msg("'%s': message '%s' lacks '%s'", rows, d.msg, say);
    assert_int_equal(d.pos, pos);
}

static void test_spec(void **state)
{
    (void)state;
    et_rows r;
    et_diag d;
    assert_int_equal(et_rows_parse("u0,Dr + u1,Ds+u2,Dt", 2, &r, &d), ET_OK);
    assert_int_equal(r.n_rows, 3);
    assert_true(r.summed);
    assert_string_equal(r.name[2][0], "u2");
    assert_int_equal(et_rows_parse("u,Dr; u,Ds", 2, &r, &d), ET_OK);
    assert_false(r.summed);
    spec_fails("u,Dr; u,Ds + u,Dt", 11, "not both");
    spec_fails("u,Dr + u,Ds; u,Dt", 11, "not both");
    spec_fails("u,Dr + u,Ds +", 13, "a row after '+'");
    spec_fails("u,Dr + u,Dr", 0, "the sum would be");
    spec_fails("u,Dr * u,Ds", 5, "';' or '+'");

    et_problem *p = NULL;
    assert_int_equal(et_problem_n_outputs(NULL), 0);
    assert_int_equal(et_problem_init("xj,ij->xi", "x=8,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_n_outputs(p), 1);
    assert_int_equal(et_problem_set_batch(p, "u0,Dr + u1,Ds + u2,Dt", &d),
                     ET_OK);
    assert_int_equal(et_problem_n_rows(p), 3);
    assert_int_equal(et_problem_n_outputs(p), 1);
    assert_string_equal(et_problem_einsum(p), "Rxj,Rij->xi");
    assert_string_equal(et_problem_row_name(p, 2, 1), "Dt");
    et_problem_free(p);
    assert_int_equal(et_problem_init("xj,ij->xi", "x=8,i=4,j=4", "f32", &p,
                                     &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u,Dr; u,Ds; u,Dt", &d), ET_OK);
    assert_int_equal(et_problem_n_outputs(p), 3);
    et_problem_free(p);
}

static void test_structure(void **state)
{
    (void)state;
    et_einsum e, base;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=100,i=20,j=20", "f64",
                             "u0,Dr + u1,Ds + u2,Dt", &e, &d), ET_OK);
    assert_string_equal(e.text, "Rxj,Rij->xi");
    assert_int_equal(e.n_rows, 3);
    assert_int_equal(e.n_out, 2);
    assert_true(et_einsum_rows_summed(&e));
    assert_int_equal(e.row_axis, 2); /* first of the summed, by appearance */
    assert_string_equal(e.idx[e.row_axis].name, "R");
    assert_int_equal(e.idx[e.row_axis].size, 3);
    assert_int_equal(e.idx[e.row_axis].role, ET_ROLE_SUMMED);
    assert_true(et_einsum_op_rowed(&e, 0));
    assert_true(et_einsum_op_rowed(&e, 1));
    assert_false(et_einsum_op_rowed(&e, -1));
    assert_int_equal(et_einsum_row_elems(&e, 0), 100 * 20);
    assert_int_equal(et_einsum_row_elems(&e, -1), 100 * 20);
    /* every row's arrays, one output */
    assert_int_equal(et_einsum_bytes(&e),
                     8 * (3 * 100 * 20 + 3 * 400 + 100 * 20));
    et_einsum_unbatch(&e, &base);
    assert_string_equal(base.text, "xj,ij->xi");
    assert_int_equal(base.n_idx, 3);
    assert_int_equal(base.n_out, 2);
    assert_int_equal(base.op[1].rank, 2);
    assert_string_equal(base.idx[base.op[1].idx[1]].name, "j");

    /* a shared first operand: the row axis after j, which appears first */
    assert_int_equal(bc_batched("xj,ij->xi", "x=10,i=4,j=6", "f32", "u,Dr + u,Ds",
                             &e, &d), ET_OK);
    assert_string_equal(e.text, "xj,Rij->xi");
    assert_int_equal(e.row_axis, 3);
    assert_string_equal(e.idx[2].name, "j");
    assert_false(et_einsum_op_rowed(&e, 0));
    et_einsum_unbatch(&e, &base);
    assert_string_equal(base.text, "xj,ij->xi");
    assert_int_equal(base.op[1].idx[1], 2);
    assert_int_equal(base.idx[2].size, 6);
}

static void test_canonical(void **state)
{
    (void)state;
    et_einsum a, b, c, sep, back;
    et_diag d;
    char ca[512], cb[512], cc[512], cs[512], cback[512];
    assert_int_equal(bc_batched("xj,ij->xi", "x=64,i=8,j=6", "f32",
                             "u0,Dr + u1,Ds + u2,Dt", &a, &d), ET_OK);
    assert_int_equal(bc_batched("xj,ij->xi", "x=64,i=8,j=6", "f32",
                             "w2,Dt + w0,Dr + w1,Ds", &b, &d), ET_OK);
    assert_int_equal(bc_batched("ab,yb->ya", "y=64,a=8,b=6", "f32",
                             "P,v0 + Q,v1 + S,v2", &c, &d), ET_OK);
    et_einsum_canonical(&a, ca, sizeof ca);
    et_einsum_canonical(&b, cb, sizeof cb);
    et_einsum_canonical(&c, cc, sizeof cc);
    assert_string_equal(ca, cb);
    assert_string_equal(ca, cc);
    assert_true(strncmp(ca, "rows+", 5) == 0);
    /* rows with outputs of their own are another problem */
    assert_int_equal(bc_batched("xj,ij->xi", "x=64,i=8,j=6", "f32",
                             "u0,Dr; u1,Ds; u2,Dt", &sep, &d), ET_OK);
    et_einsum_canonical(&sep, cs, sizeof cs);
    assert_string_not_equal(ca, cs);
    /* rebuilt from the form: the same row axis */
    assert_int_equal(et_einsum_from_canonical(ca, &back, &d), ET_OK);
    assert_int_equal(back.n_rows, 3);
    assert_true(et_einsum_rows_summed(&back));
    assert_int_equal(back.idx[back.row_axis].size, 3);
    et_einsum_canonical(&back, cback, sizeof cback);
    assert_string_equal(ca, cback);
    assert_int_equal(et_einsum_from_canonical("rows+9|ab->a|a=2,b=3|f32->f32",
                                              &back, &d), ET_ERR_INPUT);
    /* b is no summed index of 2 to 16 rows here */
    assert_int_equal(et_einsum_from_canonical("rows+a|ab->a|a=2,b=3|f32->f32",
                                              &back, &d), ET_ERR_INPUT);
}

/* A space written for one row binds to the rows summed: its indices land
 * on the row's, those from the row axis on one further. */
static void test_space_binds_a_row(void **state)
{
    (void)state;
    static const char text[] =
        "name: div\n"
        "einsum: \"ab,cb->ac\"\n"
        "params:\n"
        "  t: {values: [1, 2]}\n"
        "transforms:\n"
        "  - {op: UPCAST, axis: c, amt: t, when: t > 1}\n";
    et_space *sp = NULL;
    et_diag d;
    assert_int_equal(et_space_load_text(text, sizeof text - 1, "div.yaml",
                                        &sp, &d), ET_OK);
    et_einsum e;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u0,Dr + u1,Ds + u2,Dt", &e, &d), ET_OK);
    et_binding *b = NULL;
    if (et_space_bind(sp, &e, NULL, &b, &d) != ET_OK)
        fail_msg("bind: %s", d.msg);
    const et_match *m = et_binding_map(b, 0);
    assert_string_equal(e.idx[m->idx_map[0]].name, "x");
    assert_string_equal(e.idx[m->idx_map[1]].name, "i");
    assert_string_equal(e.idx[m->idx_map[2]].name, "j");
    assert_int_equal(m->idx_map[2], 3); /* past R, index 2 */
    et_binding_free(b);
    et_space_free(sp);
}

static void refused(const char *opts, const char *say)
{
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u0,Dr + u1,Ds + u2,Dt", &e, &d), ET_OK);
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
    refused("UNROLL(R,1)", "takes all its 3 rows");
    refused("UNROLL(R,3) UNROLL(R,0)", "takes all its 3 rows");
    refused("GROUP(R,3)", "a loop or UNROLLed whole");
    refused("GROUPTOP(R,3)", "a loop or UNROLLed whole");
    refused("PREFETCH(0,R,1)", "a loop or UNROLLed whole");
    refused("SPLIT(R,3)", "a loop or UNROLLed whole");
    refused("UPCAST(R,0)", "reduce axis");
    /* the row axis is a loop, or UNROLLed whole; SPLIT of another reduce
     * axis applies (one output to zero) */
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=32,i=8,j=8", "f32",
                             "u0,Dr + u1,Ds + u2,Dt", &e, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    int rp = k->outer[e.row_axis];
    assert_int_equal(k->part[rp].kind, ET_PART_REDUCE);
    assert_int_equal(k->part[rp].size, 3);
    et_opt un = et_opt_make(ET_OPT_UNROLL, "R", 0);
    assert_int_equal(et_kernel_apply_opt(k, &un, NULL, 0), ET_OK);
    assert_int_equal(k->part[rp].size, 1);
    assert_int_equal(k->part[et_kernel_part_find(k, "R_r")].size, 3);
    et_opt sp = et_opt_make(ET_OPT_SPLIT, "j", 2);
    assert_int_equal(et_kernel_apply_opt(k, &sp, NULL, 0), ET_OK);
    et_launch L;
    assert_int_equal(et_kernel_launch(k, ET_BACKEND_OPENCL, &L), ET_OK);
    assert_int_equal(L.zero_bytes, 32 * 8 * 4);
    et_kernel_free(k);
}

typedef struct scase {
    const char *einsum, *shape, *rows;
} scase;

static const scase scases[] = {
    /* the divergence: each row its own field and matrix */
    {"xj,ij->xi", "x=37,i=8,j=12", "u0,Dr + u1,Ds + u2,Dt"},
    /* one field, the matrices summed */
    {"xj,ij->xi", "x=16,i=5,j=6", "u,Dr + u,Ds"},
    /* every operand rowed (a sum of matmuls) */
    {"ik,kj->ij", "i=12,k=10,j=8", "A,B + C,D"},
    /* three operands, the first rowed */
    {"xr,rij,xj->xi", "x=20,r=3,i=8,j=8", "g0,D,u + g1,D,u + g2,D,u"},
    /* the divergence with an open x, at its working size (1024) */
    {"xj,ij->xi", "x=*,i=8,j=12", "u0,Dr + u1,Ds + u2,Dt"},
};

/* Between them every opt kind; an opt the case cannot take (an axis it
 * lacks, a size that does not divide) is skipped. */
static const char *const sopts[] = {
    "",
    "UPCAST(i,4)",
    "UPCAST(i,4) UNROLL(j,4)",
    "LOCAL(i,4) UPCAST(j,2)",
    "GROUP(j,4)",
    "GROUPTOP(j,2) UPCAST(i,2)",
    "PADTO(i,16) LOCAL(i,16)",
    "SWAP(i,x)",
    "NOLOCALS UPCAST(i,2)",
    "LOCAL(i,4) PREFETCH(0,j,4)",
    "LOCAL(i,2) PREFETCH(1,j,2) PREFETCH(0,j,2)",
    "STAGE",
    "LOCAL(i,4) STAGE UNROLL(j,2)",
    "HOIST UPCAST(i,2)",
    "FACTOR UNROLL(j,2)",
    "LOOP(i,2) STAGE",
    "UPCAST(i,8) UNROLL(j,2)",
    "SPLIT(j,2)",
    "LOCAL(i,2) SPLIT(j,3) UPCAST(i,2)",
    "SPLIT(k,2) UPCAST(j,4)",
    "NTSTORE UPCAST(i,4)",
    "UPCAST(i,0) STAGE NTSTORE",
    "UPCAST(x,4) UPCAST(i,0) STAGE LOOP(x,5)",
};

/* Every sequence with the rows a loop, and again after UNROLL(R,0). */
static void test_kernels(void **state)
{
    (void)state;
    et_device *dev = kc_device();
    if (!dev)
        skip();
    bc_tally t = {0};
    char why[1024];
    for (size_t c = 0; c < sizeof scases / sizeof scases[0]; c++)
        for (size_t q = 0; q < sizeof sopts / sizeof sopts[0]; q++)
            for (int mode = 0; mode < 2; mode++) {
                char opts[512];
                snprintf(opts, sizeof opts, "%s%s",
                         mode ? "UNROLL(R,0) " : "", sopts[q]);
                const scase *b = &scases[c];
                if (bc_check(dev, b->einsum, b->shape, b->rows,
                             (c + q + mode) % 2 ? "f32" : "f64", opts, 11,
                             &t, why, sizeof why) != 0)
                    fail_msg("%s", why);
            }
    print_message("kernels of rows summed: %d verified, %d CUDA renderings "
                  "compiled%s\n", t.checked, t.cuda,
                  t.nvrtc_absent ? " (libnvrtc absent)" : "");
    assert_int_equal(t.failures, 0);
    assert_true(t.checked >= 100);
}

/* One argument per row of each rowed operand, one output; rows passed in
 * the wrong order are caught by the element check; the generic kernel
 * (dispatch tables) sums the rows too. */
static void test_args_and_wrong_rows(void **state)
{
    (void)state;
    et_einsum e;
    et_diag d;
    assert_int_equal(bc_batched("xj,ij->xi", "x=16,i=4,j=4", "f64",
                             "u0,Dr + u1,Ds + u2,Dt", &e, &d), ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_rendered r;
    /* the rows a loop: each iteration's pointers chosen at its top */
    assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r), ET_OK);
    assert_non_null(strstr(r.source, "for (int R = 0; R < 3; R++)"));
    assert_non_null(strstr(r.source, "in0 = R == 0 ? in0_0 : R == 1 ? "
                                     "in0_1 : in0_2;"));
    et_rendered_free(&r);
    /* UNROLLed whole: every row's pointers named */
    et_opt un = et_opt_make(ET_OPT_UNROLL, "R", 0);
    assert_int_equal(et_kernel_apply_opt(k, &un, NULL, 0), ET_OK);
    assert_int_equal(et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r), ET_OK);
    /* out in0_0 in0_1 in0_2 in1_0 in1_1 in1_2 */
    assert_int_equal(r.n_args, 7);
    static const int op[] = {-1, 0, 0, 0, 1, 1, 1};
    static const int row[] = {-1, 0, 1, 2, 0, 1, 2};
    for (int a = 0; a < 7; a++) {
        assert_int_equal(r.arg_operand[a], op[a]);
        assert_int_equal(r.arg_row[a], row[a]);
    }
    assert_non_null(strstr(r.source, "in0_2["));
    assert_non_null(strstr(r.source, "in1_1["));
    et_device *dev = kc_device();
    if (dev) {
        /* the same arguments rendered for the suite's device */
        et_rendered_free(&r);
        assert_int_equal(et_kernel_render(k, td_backend(), NULL, &r), ET_OK);
        assert_int_equal(r.n_args, 7);
        assert_int_equal(kc_check_rendered(dev, k, &r, 3, msg, sizeof msg),
                         ET_OK);
        r.arg_row[4] = 1;
        r.arg_row[5] = 0;
        assert_int_not_equal(kc_check_rendered(dev, k, &r, 3, msg,
                                               sizeof msg), ET_OK);
        assert_non_null(strstr(msg, "element"));
    }
    et_rendered_free(&r);
    assert_int_equal(et_kernel_render_generic(&e, td_backend(), &r),
                     ET_OK);
    assert_int_equal(r.n_args, 7);
    for (int a = 0; a < 7; a++)
        assert_int_equal(r.arg_row[a], row[a]);
    if (dev)
        assert_int_equal(kc_check_rendered(dev, k, &r, 5, msg, sizeof msg),
                         ET_OK);
    et_rendered_free(&r);
    et_kernel_free(k);
}

/* ---- delivery ------------------------------------------------------------ */

enum { X = 256, I = 10, J = 10 };
static float u[3][X * J], D[3][I * J], want[X * I];

/* Small integers: every sum exact, in any order. */
static void make_inputs(void)
{
    for (int r = 0; r < 3; r++) {
        for (int t = 0; t < X * J; t++)
            u[r][t] = (float)((t * (r + 5) + 3 * r) % 9) - 4;
        for (int t = 0; t < I * J; t++)
            D[r][t] = (float)((t * (r + 3) + r) % 7) - 3;
    }
    for (int x = 0; x < X; x++)
        for (int i = 0; i < I; i++) {
            float s = 0;
            for (int r = 0; r < 3; r++)
                for (int j = 0; j < J; j++)
                    s += u[r][x * J + j] * D[r][i * J + j];
            want[x * I + i] = s;
        }
}

static void expect_sum(const char *what, const float *g)
{
    for (int t = 0; t < X * I; t++)
        if (g[t] != want[t])
            fail_msg("%s [%d,%d]: %g, want %g", what, t / I, t % I,
                     (double)g[t], (double)want[t]);
}

static void put_npy(const char *path, const float *p, int64_t d0, int64_t d1)
{
    et_host_array a = {.dtype = ET_F32, .ndim = 2, .dims = {d0, d1},
                       .data = (void *)p};
    et_diag d;
    if (et_npy_save(path, &a, &d) != ET_OK)
        fail_msg("%s: %s", path, d.msg);
}

/* `eintune run --best` with named inputs and one -o; two -o refused. */
static void run_cli(const char *db, const char *dir)
{
    char files[6][300], out[300], iargs[6][320];
    static const char *const names[6] = {"u0", "u1", "u2", "Dr", "Ds", "Dt"};
    for (int a = 0; a < 6; a++) {
        snprintf(files[a], sizeof files[a], "%s/%s.npy", dir, names[a]);
        if (a < 3)
            put_npy(files[a], u[a], X, J);
        else
            put_npy(files[a], D[a - 3], I, J);
        snprintf(iargs[a], sizeof iargs[a], "%s=%.300s", names[a], files[a]);
    }
    snprintf(out, sizeof out, "%s/div.npy", dir);
    char bin[64];
    snprintf(bin, sizeof bin, "%s/eintune",
             getenv("BUILD") ? getenv("BUILD") : "build");
    char *argv[] = {bin, "run", "xj,ij->xi", "--batch",
                    "u0,Dr + u1,Ds + u2,Dt", "--best", "--db", (char *)db,
                    "-q", "-i", iargs[0], "-i", iargs[1], "-i", iargs[2],
                    "-i", iargs[3], "-i", iargs[4], "-i", iargs[5], "-o", out,
                    NULL, NULL, NULL};
    if (access(bin, X_OK) != 0) {
        print_message("no %s: the command line is not run\n", bin);
        return;
    }
    assert_int_equal(bc_run_argv(argv), 0);
    et_host_array g;
    et_diag d;
    if (et_npy_load(out, &g, &d) != ET_OK)
        fail_msg("%s: %s", out, d.msg);
    assert_int_equal(g.ndim, 2);
    assert_int_equal(g.dims[0], X);
    assert_int_equal(g.dims[1], I);
    expect_sum("eintune run", g.data);
    et_host_array_free(&g);
    /* two outputs for one sum: refused (exit 2), naming the rule */
    char out2[320];
    snprintf(out2, sizeof out2, "%s/div2.npy", dir);
    argv[23] = "-o";
    argv[24] = out2;
    assert_int_equal(bc_run_argv(argv), 2);
}

/* Loaded into this program's own context, launched on its buffers. */
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
    assert_int_equal(et_loaded_kernel_n_args(lk), 7);
    static float g[X * I];
    for (int t = 0; t < X * I; t++)
        g[t] = NAN;
    cl_mem args[7];
    args[0] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             sizeof g, g, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    for (int r = 0; r < 3; r++) {
        args[1 + r] = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                              CL_MEM_COPY_HOST_PTR,
                                     sizeof u[r], u[r], &rc);
        assert_int_equal(rc, CL_SUCCESS);
        args[4 + r] = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                              CL_MEM_COPY_HOST_PTR,
                                     sizeof D[r], D[r], &rc);
        assert_int_equal(rc, CL_SUCCESS);
    }
    /* one buffer short: refused */
    assert_int_equal(et_cl_kernel_launch_args(lk, q, args, 6, NULL, NULL, &d),
                     ET_ERR_INPUT);
    if (et_cl_kernel_launch_args(lk, q, args, 7, NULL, NULL, &d) != ET_OK)
        fail_msg("launch: %s", d.msg);
    assert_int_equal(clEnqueueReadBuffer(q, args[0], CL_TRUE, 0, sizeof g, g,
                                         0, NULL, NULL), CL_SUCCESS);
    expect_sum("loaded", g);
    et_loaded_kernel_free(lk);
    for (int a = 0; a < 7; a++)
        clReleaseMemObject(args[a]);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* The exported kernel, run by the delivery tests' host program. */
static void export_and_run(const et_problem *p, const char *db,
                           const char *dir)
{
    et_best_options bo = {0};
    bo.db = db;
    et_best_kernel *bk = NULL;
    et_diag d;
    if (et_best_kernel_find(p, &bo, &bk, &d) != ET_OK)
        fail_msg("best: %s", d.msg);
    et_export_options xo = {0};
    xo.dir = dir;
    xo.name = "div";
    if (et_best_kernel_export(bk, &xo, NULL, &d) != ET_OK)
        fail_msg("export: %s", d.msg);
    et_best_kernel_free(bk);
    char inc[300], exe[300], src[300], hdr[300], files[7][300];
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/host", dir);
    snprintf(src, sizeof src, "%s/div.cl", dir);
    snprintf(hdr, sizeof hdr, "%s/div.h", dir);
    /* the header says the rows are summed */
    FILE *f = fopen(hdr, "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t nt = fread(text, 1, sizeof text - 1, f);
    text[nt] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "ROWS_SUMMED 1"));
    char *cc[] = {"cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
                  inc, "-DET_EXPORT_HEADER=\"div.h\"",
                  "tests/delivery/host.c", "-lOpenCL", "-o", exe, NULL};
    if (bc_run_argv(cc) != 0) {
        print_message("no cc or OpenCL headers: the host program is not "
                      "built\n");
        return;
    }
    static float g[X * I];
    for (int t = 0; t < X * I; t++)
        g[t] = NAN;
    FILE *o;
    for (int a = 0; a < 7; a++) {
        snprintf(files[a], sizeof files[a], "%s/arg%d", dir, a);
        o = fopen(files[a], "wb");
        assert_non_null(o);
        const void *data = a == 0 ? (const void *)g
                           : a < 4 ? (const void *)u[a - 1]
                                   : (const void *)D[a - 4];
        size_t bytes = a == 0 ? sizeof g : a < 4 ? sizeof u[0] : sizeof D[0];
        assert_int_equal(fwrite(data, 1, bytes, o), bytes);
        fclose(o);
    }
    char *host[] = {exe, src, "1", files[0], files[1], files[2], files[3],
                    files[4], files[5], files[6], NULL};
    assert_int_equal(bc_run_argv(host), 0);
    o = fopen(files[0], "rb");
    assert_non_null(o);
    assert_int_equal(fread(g, sizeof g[0], X * I, o), X * I);
    fclose(o);
    expect_sum("exported", g);
}

static void test_tune_and_deliver(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    make_inputs();
    char dir[] = "/tmp/et_rows_summed_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[320];
    snprintf(db, sizeof db, "%s/tuning.db", dir);
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=256,i=10,j=10", "f32",
                                     &p, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u0,Dr + u1,Ds + u2,Dt", &d),
                     ET_OK);
    char why[512];
    if (bc_tune(p, db, 6, why, sizeof why) != ET_OK)
        fail_msg("tune: %s", why);
    /* rows reordered and renamed: the same entry */
    et_problem *p2 = NULL;
    assert_int_equal(et_problem_init("ab,yb->ya", "y=256,a=10,b=10", "f32",
                                     &p2, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p2, "Q,w1 + S,w2 + P,w0", &d),
                     ET_OK);
    et_best_options bo = {0};
    bo.db = db;
    et_best_kernel *bk = NULL;
    if (et_best_kernel_find(p2, &bo, &bk, &d) != ET_OK)
        fail_msg("best of the renamed rows: %s", d.msg);
    et_best_kernel_free(bk);
    et_problem_free(p2);
    run_cli(db, dir);
    load_and_launch(p, db);
    export_and_run(p, db, dir);
    et_problem_free(p);
    char *rm[] = {"rm", "-rf", dir, NULL};
    bc_run_argv(rm);
}

/* An open axis in rows summed into one output: tuned at x=64 (checked at
 * x=1 and at a prime as any open einsum), the entry serves `eintune run
 * --best` at x=256 (the output against the rows' sum, exactly). */
static void test_open_axis(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    make_inputs();
    char dir[] = "/tmp/et_rows_summed_open_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[320];
    snprintf(db, sizeof db, "%s/tuning.db", dir);
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xj,ij->xi", "x=*,i=10,j=10", "f32",
                                     &p, &d), ET_OK);
    assert_int_equal(et_problem_set_batch(p, "u0,Dr + u1,Ds + u2,Dt", &d),
                     ET_OK);
    assert_int_equal(et_problem_set_tune_at(p, "x=64", &d), ET_OK);
    int xa = strcmp(et_problem_index_name(p, 0), "x") == 0 ? 0 : 1;
    assert_string_equal(et_problem_index_name(p, xa), "x");
    assert_true(et_problem_index_open(p, xa));
    assert_int_equal(et_problem_index_size(p, xa), 64);
    char why[512];
    if (bc_tune(p, db, 4, why, sizeof why) != ET_OK)
        fail_msg("tune: %s", why);
    run_cli(db, dir);
    et_problem_free(p);
    char *rm[] = {"rm", "-rf", dir, NULL};
    bc_run_argv(rm);
}

/* The row seeds of rows summed: the row's best (the rows a loop around
 * the row's kernel), then UNROLL(R,0) in front of it. */
static void test_row_seed(void **state)
{
    (void)state;
    if (!kc_device())
        skip();
    char db[] = "/tmp/et_rows_summed_seed_XXXXXX";
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
    assert_int_equal(et_problem_set_batch(p, "u0,Dr + u1,Ds", &d), ET_OK);
    if (et_tune_run_full(p, &o, &rep, &d) != ET_OK)
        fail_msg("tune the rows: %s", d.msg);
    et_tune_entry c;
    int i = 0;
    while (et_tune_report_candidate(rep, i, &c) == 0 && !c.seed)
        i++;
    assert_int_equal(et_tune_report_candidate(rep, i, &c), 0);
    assert_string_equal(c.opts, s.opts);
    char fused[1200];
    snprintf(fused, sizeof fused, "UNROLL(R,0)%s%s", s.opts[0] ? " " : "",
             s.opts);
    i++;
    while (et_tune_report_candidate(rep, i, &c) == 0 && !c.seed)
        i++;
    assert_int_equal(et_tune_report_candidate(rep, i, &c), 0);
    assert_string_equal(c.opts, fused);
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
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_args_and_wrong_rows),
        cmocka_unit_test(test_tune_and_deliver),
        cmocka_unit_test(test_open_axis),
        cmocka_unit_test(test_row_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
