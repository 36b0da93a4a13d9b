/*
 * test_reference.c - the long-double reference evaluator and the binary16
 * conversions.
 *
 * Reference: hand-computed values; specific einsums against loops written
 * out here (matmul, batched matmul, dot, outer, trace, diagonal, 3
 * operands, full reduction, scalar operand, broadcasting); a generic
 * brute force over the whole iteration space for a table of einsums; f16,
 * f32, f64 and mixed inputs; Σ|terms|; precision beyond naive double
 * summation; the threaded paths. Inputs are small multiples of 1/8 so that
 * every sum is exact and results compare with ==.
 *
 * Half: exhaustive round trip of all 65536 bit patterns, known values,
 * float -> half against an independent nearest-value search at every
 * midpoint between halves and on a stride through all floats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "einsum/einsum.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

static void mk(et_einsum *e, const char *text, const char *shape,
               const char *dtype)
{
    et_diag d = {0};
    if (et_einsum_from_strings(text, shape, dtype, e, &d) != ET_OK)
        fail_msg("%s with %s: %s", text, shape, d.msg);
}

/* Resolves with NumPy operand shapes (for broadcasting). */
static void mk_shapes(et_einsum *e, const char *text, int n_ops,
                      const int *rank, const int64_t (*dim)[4])
{
    et_subscripts s;
    et_operand_shapes sh = {.n_ops = n_ops};
    et_diag d = {0};
    if (et_subscripts_parse(text, &s, &d) != ET_OK)
        fail_msg("%s: %s", text, d.msg);
    for (int k = 0; k < n_ops; k++) {
        sh.rank[k] = rank[k];
        for (int r = 0; r < rank[k]; r++)
            sh.dim[k][r] = dim[k][r];
    }
    if (et_einsum_resolve(&s, NULL, &sh, NULL, e, &d) != ET_OK)
        fail_msg("%s: %s", text, d.msg);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random multiple of 1/8 in [-2, 2]: exact in every dtype. */
static double small_val(void)
{
    return ((double)(next_rand() % 33) - 16.0) / 8.0;
}

/* Operand buffers holding values in each operand's dtype, and the same
 * values as doubles for the loops written in the tests. */
typedef struct bufs {
    void *in[ET_MAX_OPERANDS];
    double *x[ET_MAX_OPERANDS];
    int64_t n[ET_MAX_OPERANDS];
    long double *ref, *abs;
    int64_t n_out;
} bufs;

static void store(void *dst, et_dtype t, int64_t i, double v)
{
    switch (t) {
    case ET_F16:
        ((uint16_t *)dst)[i] = et_float_to_half((float)v);
        break;
    case ET_F32:
        ((float *)dst)[i] = (float)v;
        break;
    default:
        ((double *)dst)[i] = v;
        break;
    }
}

static void bufs_init(bufs *b, const et_einsum *e)
{
    memset(b, 0, sizeof *b);
    for (int k = 0; k < e->n_ops; k++) {
        b->n[k] = et_einsum_operand_elems(e, k);
        b->x[k] = malloc((size_t)b->n[k] * sizeof(double));
        b->in[k] = malloc((size_t)b->n[k] * et_dtype_size(e->op[k].dtype));
        assert_non_null(b->x[k]);
        assert_non_null(b->in[k]);
        for (int64_t i = 0; i < b->n[k]; i++) {
            b->x[k][i] = small_val();
            store(b->in[k], e->op[k].dtype, i, b->x[k][i]);
        }
    }
    b->n_out = et_einsum_operand_elems(e, -1);
    b->ref = malloc((size_t)b->n_out * sizeof(long double));
    b->abs = malloc((size_t)b->n_out * sizeof(long double));
    assert_non_null(b->ref);
    assert_non_null(b->abs);
}

/* Sets operand k's value i (both copies). */
static void bufs_set(bufs *b, const et_einsum *e, int k, int64_t i, double v)
{
    b->x[k][i] = v;
    store(b->in[k], e->op[k].dtype, i, v);
}

static void bufs_eval(bufs *b, const et_einsum *e)
{
    assert_int_equal(et_reference_eval(e, (const void *const *)b->in, b->ref,
                                       b->abs),
                     ET_OK);
}

static void bufs_free(bufs *b)
{
    for (int k = 0; k < ET_MAX_OPERANDS; k++) {
        free(b->in[k]);
        free(b->x[k]);
    }
    free(b->ref);
    free(b->abs);
}

/* ---- specific einsums against loops written out ------------------------- */

static void check_out(const bufs *b, const long double *want,
                      const long double *want_abs, const char *what)
{
    for (int64_t o = 0; o < b->n_out; o++) {
        if (b->ref[o] != want[o])
            fail_msg("%s: element %lld is %.21Lg, expected %.21Lg", what,
                     (long long)o, b->ref[o], want[o]);
        if (want_abs && b->abs[o] != want_abs[o])
            fail_msg("%s: abs_terms %lld is %.21Lg, expected %.21Lg", what,
                     (long long)o, b->abs[o], want_abs[o]);
    }
}

static void test_hand_values(void **state)
{
    /* [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]] */
    et_einsum e;
    bufs b;
    mk(&e, "ij,jk->ik", "i=2,j=2,k=2", "f64");
    bufs_init(&b, &e);
    for (int t = 0; t < 4; t++) {
        bufs_set(&b, &e, 0, t, t + 1);
        bufs_set(&b, &e, 1, t, t + 5);
    }
    bufs_eval(&b, &e);
    check_out(&b, (long double[]){19, 22, 43, 50},
              (long double[]){19, 22, 43, 50}, "matmul 2x2");
    bufs_free(&b);

    /* dot with mixed signs: 1*1 - 2*1 + 3*1 = 2, Σ|terms| = 6 */
    mk(&e, "i,i->", "i=3", "f32");
    bufs_init(&b, &e);
    double x[3] = {1, -2, 3};
    for (int t = 0; t < 3; t++) {
        bufs_set(&b, &e, 0, t, x[t]);
        bufs_set(&b, &e, 1, t, 1);
    }
    bufs_eval(&b, &e);
    check_out(&b, (long double[]){2}, (long double[]){6}, "dot");
    bufs_free(&b);

    /* trace of [[1,2],[3,4]] = 5; diagonal = [1,4] */
    mk(&e, "ii->", "i=2", "f16");
    bufs_init(&b, &e);
    for (int t = 0; t < 4; t++)
        bufs_set(&b, &e, 0, t, t + 1);
    bufs_eval(&b, &e);
    check_out(&b, (long double[]){5}, (long double[]){5}, "trace");
    bufs_free(&b);
    mk(&e, "ii->i", "i=2", "f64");
    bufs_init(&b, &e);
    for (int t = 0; t < 4; t++)
        bufs_set(&b, &e, 0, t, -(t + 1));
    bufs_eval(&b, &e);
    check_out(&b, (long double[]){-1, -4}, (long double[]){1, 4}, "diag");
    bufs_free(&b);
}

static void test_matmul_batched(void **state)
{
    static const char *dt[] = {"f64", "f32", "f16", "f16,f64"};
    for (size_t c = 0; c < sizeof dt / sizeof dt[0]; c++) {
        et_einsum e;
        bufs b;
        int B = 3, I = 4, K = 5, J = 6;
        mk(&e, "xik,kj->xij", "x=3,i=4,k=5,j=6", dt[c]);
        bufs_init(&b, &e);
        bufs_eval(&b, &e);
        long double *w = calloc((size_t)b.n_out, sizeof *w);
        long double *wa = calloc((size_t)b.n_out, sizeof *wa);
        for (int x = 0; x < B; x++)
            for (int i = 0; i < I; i++)
                for (int j = 0; j < J; j++)
                    for (int k = 0; k < K; k++) {
                        long double t = (long double)b.x[0][(x * I + i) * K +
                                                            k] *
                                        b.x[1][k * J + j];
                        w[(x * I + i) * J + j] += t;
                        wa[(x * I + i) * J + j] += fabsl(t);
                    }
        check_out(&b, w, wa, dt[c]);
        free(w);
        free(wa);
        bufs_free(&b);
    }
}

static void test_dot_outer_transpose(void **state)
{
    et_einsum e;
    bufs b;
    mk(&e, "i,j->ij", "i=3,j=4", "f32,f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double w[12], wa[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            w[i * 4 + j] = (long double)b.x[0][i] * b.x[1][j];
            wa[i * 4 + j] = fabsl(w[i * 4 + j]);
        }
    check_out(&b, w, wa, "outer");
    bufs_free(&b);

    mk(&e, "ij->ji", "i=3,j=4", "f16");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            w[j * 3 + i] = b.x[0][i * 4 + j];
    check_out(&b, w, NULL, "transpose");
    bufs_free(&b);

    mk(&e, "i,i->", "i=37", "f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double s = 0, a = 0;
    for (int i = 0; i < 37; i++) {
        s += (long double)b.x[0][i] * b.x[1][i];
        a += fabsl((long double)b.x[0][i] * b.x[1][i]);
    }
    check_out(&b, &s, &a, "dot");
    bufs_free(&b);
}

static void test_trace_diag_three_ops(void **state)
{
    et_einsum e;
    bufs b;
    mk(&e, "ii->", "i=7", "f32");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double s = 0;
    for (int i = 0; i < 7; i++)
        s += b.x[0][i * 7 + i];
    check_out(&b, &s, NULL, "trace");
    bufs_free(&b);

    /* diagonal of a 3-d block: iji->ij */
    mk(&e, "iji->ij", "i=3,j=2", "f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double w[6];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            w[i * 2 + j] = b.x[0][(i * 2 + j) * 3 + i];
    check_out(&b, w, NULL, "iji->ij");
    bufs_free(&b);

    /* 3 operands: xre,rij,xej->xei (the DG operator) */
    mk(&e, "xre,rij,xej->xei", "x=2,r=3,e=2,i=4,j=5", "f64,f32,f16");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double *o = calloc((size_t)b.n_out, sizeof *o);
    long double *oa = calloc((size_t)b.n_out, sizeof *oa);
    for (int x = 0; x < 2; x++)
        for (int ee = 0; ee < 2; ee++)
            for (int i = 0; i < 4; i++)
                for (int r = 0; r < 3; r++)
                    for (int j = 0; j < 5; j++) {
                        long double t = (long double)b.x[0][(x * 3 + r) * 2 +
                                                            ee] *
                                        b.x[1][(r * 4 + i) * 5 + j] *
                                        b.x[2][(x * 2 + ee) * 5 + j];
                        o[(x * 2 + ee) * 4 + i] += t;
                        oa[(x * 2 + ee) * 4 + i] += fabsl(t);
                    }
    check_out(&b, o, oa, "xre,rij,xej->xei");
    free(o);
    free(oa);
    bufs_free(&b);
}

static void test_full_reduction_scalar(void **state)
{
    et_einsum e;
    bufs b;
    mk(&e, "ijk->", "i=2,j=3,k=4", "f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double s = 0, a = 0;
    for (int t = 0; t < 24; t++) {
        s += b.x[0][t];
        a += fabsl(b.x[0][t]);
    }
    check_out(&b, &s, &a, "ijk->");
    bufs_free(&b);

    /* a scalar operand times a matrix */
    mk(&e, ",ij->ij", "i=2,j=3", "f32,f64");
    bufs_init(&b, &e);
    bufs_set(&b, &e, 0, 0, -1.5);
    bufs_eval(&b, &e);
    long double w[6];
    for (int t = 0; t < 6; t++)
        w[t] = -1.5L * b.x[1][t];
    check_out(&b, w, NULL, ",ij->ij");
    bufs_free(&b);

    /* scalar times scalar, no indices at all */
    mk(&e, ",->", "", "f64");
    bufs_init(&b, &e);
    bufs_set(&b, &e, 0, 0, 3);
    bufs_set(&b, &e, 1, 0, -0.5);
    bufs_eval(&b, &e);
    check_out(&b, (long double[]){-1.5}, (long double[]){1.5}, ",->");
    bufs_free(&b);

    /* abs_terms may be NULL */
    mk(&e, "ij->", "i=3,j=3", "f64");
    bufs_init(&b, &e);
    assert_int_equal(et_reference_eval(&e, (const void *const *)b.in, b.ref,
                                       NULL),
                     ET_OK);
    s = 0;
    for (int t = 0; t < 9; t++)
        s += b.x[0][t];
    check_out(&b, &s, NULL, "ij-> without abs");
    bufs_free(&b);
}

static void test_broadcast(void **state)
{
    /* ij,ij->ij with shapes (3,1) and (1,4): an outer product by
     * broadcasting */
    et_einsum e;
    bufs b;
    mk_shapes(&e, "ij,ij->ij", 2, (int[]){2, 2},
              (const int64_t[][4]){{3, 1}, {1, 4}});
    assert_int_equal(e.op[0].dim[1], 1);
    assert_int_equal(e.op[1].dim[0], 1);
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double w[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            w[i * 4 + j] = (long double)b.x[0][i] * b.x[1][j];
    check_out(&b, w, NULL, "broadcast ij,ij->ij");
    bufs_free(&b);

    /* a summed index broadcast in one operand: ij,j-> with (2,3),(1,) */
    mk_shapes(&e, "ij,j->", 2, (int[]){2, 1},
              (const int64_t[][4]){{2, 3}, {1}});
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double s = 0;
    for (int t = 0; t < 6; t++)
        s += (long double)b.x[0][t] * b.x[1][0];
    check_out(&b, &s, NULL, "broadcast ij,j->");
    bufs_free(&b);

    /* ellipsis broadcasting: ...ij,...jk->...ik with (2,1,2,3),(3,3,2) */
    mk_shapes(&e, "...ij,...jk->...ik", 2, (int[]){4, 3},
              (const int64_t[][4]){{2, 1, 2, 3}, {3, 3, 2}});
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    assert_int_equal(b.n_out, 2 * 3 * 2 * 2);
    long double *o = calloc((size_t)b.n_out, sizeof *o);
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 2; k++)
                    for (int j = 0; j < 3; j++)
                        o[((p * 3 + q) * 2 + i) * 2 + k] +=
                            (long double)b.x[0][(p * 2 + i) * 3 + j] *
                            b.x[1][(q * 3 + j) * 2 + k];
    check_out(&b, o, NULL, "ellipsis broadcast");
    free(o);
    bufs_free(&b);
}

/* ---- generic brute force over the iteration space ---------------------- */

/* Independent of the evaluator's stride bookkeeping: every iteration
 * point's operand offsets are computed from its coordinates. */
static void brute(const et_einsum *e, const bufs *b, long double *out,
                  long double *out_abs)
{
    int64_t coord[ET_MAX_INDICES] = {0};
    for (int64_t o = 0; o < b->n_out; o++)
        out[o] = out_abs[o] = 0;
    for (;;) {
        long double t = 1;
        for (int k = 0; k < e->n_ops; k++) {
            int64_t off = 0;
            for (int d = 0; d < e->op[k].rank; d++) {
                int64_t c = e->op[k].dim[d] == 1 ? 0 : coord[e->op[k].idx[d]];
                off = off * e->op[k].dim[d] + c;
            }
            t *= b->x[k][off];
        }
        int64_t oo = 0;
        for (int d = 0; d < e->out.rank; d++)
            oo = oo * e->out.dim[d] + coord[e->out.idx[d]];
        out[oo] += t;
        out_abs[oo] += fabsl(t);
        int i = e->n_idx - 1;
        for (; i >= 0; i--) {
            if (++coord[i] < e->idx[i].size)
                break;
            coord[i] = 0;
        }
        if (i < 0)
            break;
    }
}

static void test_brute_force_table(void **state)
{
    static const struct {
        const char *text, *shape, *dtype;
    } cases[] = {
        {"ij,jk->ik", "i=3,j=4,k=5", "f64"},
        {"ik,kj->ij", "i=1,k=7,j=2", "f32"},
        {"bij,bjk->bik", "b=2,i=3,j=4,k=2", "f16"},
        {"i,i->", "i=11", "f64,f32"},
        {"i,j->ij", "i=3,j=4", "f64"},
        {"ii->", "i=5", "f64"},
        {"ii->i", "i=5", "f32"},
        {"iij,jk->ik", "i=3,j=2,k=4", "f64"},
        {"ij,jk,kl->il", "i=2,j=3,k=4,l=2", "f64,f32,f16"},
        {"ijk->", "i=3,j=4,k=2", "f64"},
        {"ijk->j", "i=3,j=4,k=2", "f64"},
        {"ij->ji", "i=3,j=4", "f64"},
        {"i,i,i,i->i", "i=6", "f64"},
        {"i,i,i,i->", "i=6", "f32"},
        {"ab,bc,cd,de->ae", "a=2,b=2,c=3,d=2,e=2", "f64"},
        {",ij->ji", "i=2,j=3", "f64"},
        {"ijkl,jm->mkil", "i=2,j=3,k=2,l=2,m=3", "f64"},
        {"...ij,...jk->...ik", "...=2x1,i=2,j=3,k=2", "f64"},
        {"xre,rij,xej->xei", "x=3,r=2,e=2,i=3,j=4", "f64"},
        {"ba,ab->", "a=3,b=4", "f64"},
        {"iijj->ij", "i=2,j=3", "f64"},
        {"ijji->", "i=2,j=3", "f64"},
        {"ij", "i=3,j=2", "f64"},
        {"ij,jk", "i=3,j=2,k=2", "f64"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        et_einsum e;
        bufs b;
        mk(&e, cases[c].text, cases[c].shape, cases[c].dtype);
        bufs_init(&b, &e);
        bufs_eval(&b, &e);
        long double *w = malloc((size_t)b.n_out * sizeof *w);
        long double *wa = malloc((size_t)b.n_out * sizeof *wa);
        brute(&e, &b, w, wa);
        check_out(&b, w, wa, cases[c].text);
        free(w);
        free(wa);
        bufs_free(&b);
    }
}

/* ---- the threaded paths ------------------------------------------------ */

static void test_large_threaded(void **state)
{
    /* split over output elements: 2 M terms */
    et_einsum e;
    bufs b;
    mk(&e, "xik,kj->xij", "x=64,i=32,k=32,j=32", "f32");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double *w = malloc((size_t)b.n_out * sizeof *w);
    long double *wa = malloc((size_t)b.n_out * sizeof *wa);
    brute(&e, &b, w, wa);
    check_out(&b, w, wa, "xik,kj->xij large");
    free(w);
    free(wa);
    bufs_free(&b);

    /* split over the first summed index of a full reduction */
    mk(&e, "ij,ij->", "i=1500,j=1000", "f64,f16");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double s, a;
    brute(&e, &b, &s, &a);
    check_out(&b, &s, &a, "ij,ij-> large");
    bufs_free(&b);

    /* fewer output elements than terms, split over outputs */
    mk(&e, "ij->i", "i=3,j=700000", "f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    long double w3[3], wa3[3];
    brute(&e, &b, w3, wa3);
    check_out(&b, w3, wa3, "ij->i large");
    bufs_free(&b);

    /* single summed index full reduction */
    mk(&e, "i->", "i=3000000", "f64");
    bufs_init(&b, &e);
    bufs_eval(&b, &e);
    brute(&e, &b, &s, &a);
    check_out(&b, &s, &a, "i-> large");
    bufs_free(&b);
}

/* ---- precision ---------------------------------------------------------- */

static void test_precision(void **state)
{
    /* valgrind computes x87 long double in 64 bits, so precision beyond
     * double cannot be seen there (tests/valgrind.sh); memory is checked,
     * the precision is checked by the plain and sanitized runs */
    if (getenv("ET_UNDER_VALGRIND"))
        skip();
    et_einsum e;
    bufs b;
    /* 1 + 1e100 + 1 - 1e100 = 2; naive double summation gives 0 */
    mk(&e, "i->", "i=4", "f64");
    bufs_init(&b, &e);
    double x[4] = {1.0, 1e100, 1.0, -1e100};
    double naive = 0;
    for (int i = 0; i < 4; i++) {
        bufs_set(&b, &e, 0, i, x[i]);
        naive += x[i];
    }
    assert_true(naive == 0.0);
    bufs_eval(&b, &e);
    assert_true(b.ref[0] == 2.0L);
    assert_true(b.abs[0] == 2.0L * (long double)1e100); /* 1 + 1e100 rounds */
    bufs_free(&b);

    /* products needing more than 53 bits:
     * (1+2^-30)^2 - (1+2^-29) = 2^-60 exactly; double gives 0 */
    mk(&e, "i,i->", "i=2", "f64");
    bufs_init(&b, &e);
    double a = 1.0 + ldexp(1, -30);
    bufs_set(&b, &e, 0, 0, a);
    bufs_set(&b, &e, 1, 0, a);
    bufs_set(&b, &e, 0, 1, -1.0);
    bufs_set(&b, &e, 1, 1, 1.0 + ldexp(1, -29));
    assert_true(a * a + -1.0 * (1.0 + ldexp(1, -29)) == 0.0);
    bufs_eval(&b, &e);
    assert_true(b.ref[0] == ldexpl(1, -60));
    bufs_free(&b);

    /* many terms with cancellation: 100000 pairs (big, -big) with small
     * values in between; exact sum = sum of the small ones */
    mk(&e, "i->", "i=300000", "f64");
    bufs_init(&b, &e);
    long double want = 0;
    for (int i = 0; i < 100000; i++) {
        double big = ldexp(1.0 + (double)(i % 97) / 128.0, 70 + i % 13);
        double sm = ldexp((double)(i % 7) + 1.0, -(i % 11));
        bufs_set(&b, &e, 0, 3 * i, big);
        bufs_set(&b, &e, 0, 3 * i + 1, sm);
        bufs_set(&b, &e, 0, 3 * i + 2, -big);
        want += sm; /* exact: multiples of 2^-10 below 2^20 */
    }
    bufs_eval(&b, &e);
    if (b.ref[0] != want)
        fail_msg("cancellation: %.21Lg, expected %.21Lg", b.ref[0], want);
    bufs_free(&b);
}

/* The double-double path (two operands of f32 or f16) against the long
 * double path on the same values given as f64: values with full
 * significands over a range of exponents, so that a plain double sum
 * would be off by far more than the bound; einsums with blocks of 16,
 * 8 and 4 along the last output index and a tail (j=13: 8 + 4 + 1,
 * j=29: 16 + 8 + 4 + 1, j=24: 16 + 8), an operand strided along it (ik,jk->ij), a last
 * output index shorter than a block and a split full reduction (i,i->) */
static void test_double_double_path(void **state)
{
    static const char *const cases[][3] = {
        {"xik,kj->xij", "x=3,i=5,k=300,j=13", "f32"},
        {"xik,kj->xij", "x=2,i=3,k=150,j=29", "f32"},
        {"ik,jk->ij", "i=7,k=257,j=19", "f32"},
        {"ij,j->i", "i=5,j=1000", "f32"},
        {"i,i->", "i=2000000", "f32"},
        {"xik,kj->xij", "x=2,i=9,k=200,j=24", "f16"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool half = strcmp(cases[c][2], "f16") == 0;
        et_einsum e, e64;
        bufs b, b64;
        mk(&e, cases[c][0], cases[c][1], cases[c][2]);
        mk(&e64, cases[c][0], cases[c][1], "f64");
        bufs_init(&b, &e);
        bufs_init(&b64, &e64);
        for (int k = 0; k < e.n_ops; k++)
            for (int64_t i = 0; i < b.n[k]; i++) {
                int bits = half ? 11 : 24;
                double m = (double)(next_rand() % (1u << bits)) /
                           (double)(1u << bits);
                int ex = (int)(next_rand() % 13) - 6;
                double v = ldexp(next_rand() % 2 ? -m : m, ex);
                bufs_set(&b, &e, k, i, v);
                bufs_set(&b64, &e64, k, i, v);
            }
        bufs_eval(&b, &e);
        bufs_eval(&b64, &e64);
        for (int64_t o = 0; o < b.n_out; o++) {
            long double tol = ldexpl(b64.abs[o], -62);
            if (fabsl(b.ref[o] - b64.ref[o]) > tol)
                fail_msg("%s %s element %lld: %.21Lg, long double %.21Lg",
                         cases[c][0], cases[c][2], (long long)o, b.ref[o],
                         b64.ref[o]);
            assert_true(fabsl(b.abs[o] - b64.abs[o]) <=
                        ldexpl(b64.abs[o], -40));
        }
        bufs_free(&b);
        bufs_free(&b64);
    }
}

/* Two f64 operands (the double-double path with FMA where the CPU has
 * it, else the long double one) against sums in binary128, where every
 * product of two doubles is exact (106 of its 113 bits) and each addition
 * rounds at 2^-113: full 53-bit significands over a range of exponents,
 * blocks of 16, 8 and 4 and a tail (j=29: 16 + 8 + 4 + 1; j=19: 16 + 3
 * single elements), an operand strided along the last output index, a
 * matrix-vector product and a split full reduction. */
static void test_f64_against_binary128(void **state)
{
    enum { XIK_KJ, IK_JK, IJ_J, I_I };
    static const struct {
        int form;
        const char *text, *shape;
        int64_t x, i, k, j;
    } cases[] = {
        {XIK_KJ, "xik,kj->xij", "x=3,i=5,k=300,j=29", 3, 5, 300, 29},
        {IK_JK, "ik,jk->ij", "i=7,k=257,j=19", 1, 7, 257, 19},
        {IJ_J, "ij,j->i", "i=5,j=1000", 1, 5, 1000, 1},
        {I_I, "i,i->", "i=2000000", 1, 1, 2000000, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        et_einsum e;
        bufs b;
        mk(&e, cases[c].text, cases[c].shape, "f64");
        bufs_init(&b, &e);
        for (int k = 0; k < e.n_ops; k++)
            for (int64_t i = 0; i < b.n[k]; i++) {
                double m = (double)(next_rand() >> 11) * 0x1.0p-53;
                int ex = (int)(next_rand() % 13) - 6;
                bufs_set(&b, &e, k, i, ldexp(next_rand() % 2 ? -m : m, ex));
            }
        bufs_eval(&b, &e);
        const double *A = b.x[0], *B = b.x[1];
        int64_t X = cases[c].x, I = cases[c].i, K = cases[c].k,
                J = cases[c].j;
        for (int64_t o = 0; o < b.n_out; o++) {
            int64_t x = o / (I * J), i = o / J % I, j = o % J;
            __float128 sum = 0;
            long double abs_sum = 0;
            for (int64_t k = 0; k < K; k++) {
                double a, w;
                switch (cases[c].form) {
                case XIK_KJ:
                    a = A[(x * I + i) * K + k];
                    w = B[k * J + j];
                    break;
                case IK_JK:
                    a = A[i * K + k];
                    w = B[j * K + k];
                    break;
                case IJ_J:
                    a = A[i * K + k];
                    w = B[k];
                    break;
                default:
                    a = A[k];
                    w = B[k];
                    break;
                }
                sum += (__float128)a * (__float128)w;
                abs_sum += fabsl((long double)a * w);
            }
            long double want = (long double)sum;
            long double tol = ldexpl(abs_sum, -62);
            if (fabsl(b.ref[o] - want) > tol)
                fail_msg("%s element %lld: %.21Lg, binary128 %.21Lg",
                         cases[c].text, (long long)o, b.ref[o], want);
            assert_true(fabsl(b.abs[o] - abs_sum) <= ldexpl(abs_sum, -40));
        }
        (void)X;
        bufs_free(&b);
    }
}

/* Infinite terms give an infinite result, not the NaN of inf - inf in the
 * compensation; NaN inputs give NaN. */
static void test_non_finite(void **state)
{
    /* valgrind's 64-bit emulation of x87 long double also changes how
     * infinities pass through the compensated sums (tests/valgrind.sh) */
    if (getenv("ET_UNDER_VALGRIND"))
        skip();
    et_einsum e;
    bufs b;
    mk(&e, "i->", "i=3", "f64");
    bufs_init(&b, &e);
    bufs_set(&b, &e, 0, 0, 1.0);
    bufs_set(&b, &e, 0, 1, INFINITY);
    bufs_set(&b, &e, 0, 2, 2.0);
    bufs_eval(&b, &e);
    assert_true(isinf(b.ref[0]) && b.ref[0] > 0);
    assert_true(isinf(b.abs[0]));
    bufs_set(&b, &e, 0, 1, NAN);
    bufs_eval(&b, &e);
    assert_true(isnan(b.ref[0]));
    bufs_free(&b);

    mk(&e, "ij,j->i", "i=2,j=2", "f32");
    bufs_init(&b, &e);
    for (int t = 0; t < 4; t++)
        bufs_set(&b, &e, 0, t, 1.0);
    bufs_set(&b, &e, 1, 0, -INFINITY);
    bufs_set(&b, &e, 1, 1, 1.0);
    bufs_eval(&b, &e);
    assert_true(isinf(b.ref[0]) && b.ref[0] < 0);
    assert_true(isinf(b.ref[1]) && b.ref[1] < 0);
    bufs_free(&b);

    /* the split full reduction */
    mk(&e, "i->", "i=2000000", "f64");
    bufs_init(&b, &e);
    bufs_set(&b, &e, 0, 1999999, INFINITY);
    bufs_eval(&b, &e);
    assert_true(isinf(b.ref[0]) && b.ref[0] > 0);
    bufs_free(&b);
}

static void test_bad_arguments(void **state)
{
    et_einsum e;
    mk(&e, "ij->i", "i=2,j=2", "f64");
    double x[4] = {0};
    const void *in[1] = {x};
    long double r[2];
    assert_int_equal(et_reference_eval(NULL, in, r, NULL), ET_ERR_INPUT);
    assert_int_equal(et_reference_eval(&e, NULL, r, NULL), ET_ERR_INPUT);
    assert_int_equal(et_reference_eval(&e, in, NULL, NULL), ET_ERR_INPUT);
    const void *none[1] = {NULL};
    assert_int_equal(et_reference_eval(&e, none, r, NULL), ET_ERR_INPUT);
    et_einsum bad = e;
    bad.op[0].idx[0] = 7;
    assert_int_equal(et_reference_eval(&bad, in, r, NULL), ET_ERR_INPUT);
    bad = e;
    bad.op[0].dim[1] = 3;
    assert_int_equal(et_reference_eval(&bad, in, r, NULL), ET_ERR_INPUT);
}

/* ---- binary16 ----------------------------------------------------------- */

static double half_exact(uint16_t h)
{
    int ex = (h >> 10) & 31, m = h & 1023;
    double v = ex == 0 ? ldexp(m, -24) : ldexp(m | 1024, ex - 25);
    return (h & 0x8000) ? -v : v;
}

static void test_half_exhaustive(void **state)
{
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float f = et_half_to_float(h);
        int is_nan = ((h >> 10) & 31) == 31 && (h & 1023);
        int is_inf = ((h >> 10) & 31) == 31 && !(h & 1023);
        if (is_nan) {
            if (!isnan(f))
                fail_msg("0x%04x: not NaN", h);
            /* payload kept, quiet bit set */
            assert_int_equal(et_float_to_half(f), h | 0x200);
            continue;
        }
        if (is_inf) {
            assert_true(isinf(f));
            assert_int_equal(signbit(f) != 0, (h >> 15) != 0);
        } else if ((double)f != half_exact(h)) {
            fail_msg("0x%04x -> %a, expected %a", h, (double)f,
                     half_exact(h));
        }
        if (et_float_to_half(f) != h)
            fail_msg("0x%04x -> %a -> 0x%04x", h, (double)f,
                     et_float_to_half(f));
    }
}

static void test_half_known(void **state)
{
    static const struct {
        float f;
        uint16_t h;
    } k[] = {
        {0.0f, 0x0000},        {-0.0f, 0x8000},      {1.0f, 0x3c00},
        {-2.0f, 0xc000},       {0.5f, 0x3800},       {65504.0f, 0x7bff},
        {65519.0f, 0x7bff},    {65520.0f, 0x7c00},   {1e9f, 0x7c00},
        {-1e9f, 0xfc00},       {0x1p-14f, 0x0400},   {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000},    {0x1.0001p-25f, 0x0001},
        {0x1.8p-24f, 0x0002},  {0x1p-26f, 0x0000},   {0.1f, 0x2e66},
        {1.0f / 3.0f, 0x3555}, {3.14159265f, 0x4248}, {FLT_MAX, 0x7c00},
        {FLT_MIN, 0x0000},     {-FLT_MIN, 0x8000},
        /* ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> even (1);
         * 1 + 3*2^-11 -> 1 + 2^-9 (even) */
        {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x1.8p-10f, 0x3c02},
        {1.0f + 0x1.01p-11f, 0x3c01},
        /* rounding carries into the exponent */
        {0x1.ffep0f, 0x4000},  {0x1.ffcp-15f, 0x0400}, {0x1.ff8p-15f, 0x03ff},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (et_float_to_half(k[i].f) != k[i].h)
            fail_msg("%a -> 0x%04x, expected 0x%04x", (double)k[i].f,
                     et_float_to_half(k[i].f), k[i].h);
    assert_true(isinf(et_half_to_float(0x7c00)));
    assert_true(et_half_to_float(0xfc00) < 0);
    assert_true(et_half_to_float(0x7bff) == 65504.0f);
    assert_true(et_half_to_float(0x0001) == 0x1p-24f);
    assert_true(signbit(et_half_to_float(0x8000)));
    assert_true(isnan(et_half_to_float(et_float_to_half(NAN))));
    /* a signalling float NaN whose payload is only in the low bits stays
     * NaN */
    uint32_t snan = 0x7f800001u;
    float fs;
    memcpy(&fs, &snan, sizeof fs);
    uint16_t hs = et_float_to_half(fs);
    assert_true((hs & 0x7c00) == 0x7c00 && (hs & 0x3ff) != 0);
}

/* Independent rounding: the nearest finite half by binary search over the
 * monotone non-negative bit patterns, ties to the even pattern, with 2^16
 * standing for infinity above 65504. */
static uint16_t half_nearest(float f)
{
    long double v = fabsl((long double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    int lo = 0, hi = 0x7bff;
    if (v >= 65504.0L) {
        lo = 0x7bff;
    } else {
        while (lo < hi) { /* largest h with value <= v */
            int mid = (lo + hi + 1) / 2;
            if ((long double)half_exact((uint16_t)mid) <= v)
                lo = mid;
            else
                hi = mid - 1;
        }
    }
    long double below = half_exact((uint16_t)lo);
    long double above = lo == 0x7bff ? 65536.0L
                                     : half_exact((uint16_t)(lo + 1));
    long double db = v - below, da = above - v;
    int up = da < db || (da == db && (lo & 1));
    return (uint16_t)(sign | (up ? lo + 1 : lo));
}

static void test_half_rounding(void **state)
{
    /* every midpoint between neighbouring halves, and one float ulp either
     * side of it */
    for (int h = 0; h < 0x7c00; h++) {
        long double a = half_exact((uint16_t)h);
        long double b = h == 0x7bff ? 65536.0L : half_exact((uint16_t)(h + 1));
        float m = (float)((a + b) / 2);
        assert_true((long double)m == (a + b) / 2);
        float probes[3] = {nextafterf(m, 0), m, nextafterf(m, INFINITY)};
        for (int p = 0; p < 3; p++)
            for (int s = 0; s < 2; s++) {
                float f = s ? -probes[p] : probes[p];
                if (et_float_to_half(f) != half_nearest(f))
                    fail_msg("%a -> 0x%04x, expected 0x%04x", (double)f,
                             et_float_to_half(f), half_nearest(f));
            }
    }
    /* a stride through all finite floats */
    for (uint64_t u = 0; u < 0x7f800000u; u += 997) {
        uint32_t bits = (uint32_t)u;
        float f;
        memcpy(&f, &bits, sizeof f);
        if (et_float_to_half(f) != half_nearest(f))
            fail_msg("%a -> 0x%04x, expected 0x%04x", (double)f,
                     et_float_to_half(f), half_nearest(f));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_values),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_dot_outer_transpose),
        cmocka_unit_test(test_trace_diag_three_ops),
        cmocka_unit_test(test_full_reduction_scalar),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_brute_force_table),
        cmocka_unit_test(test_large_threaded),
        cmocka_unit_test(test_precision),
        cmocka_unit_test(test_double_double_path),
        cmocka_unit_test(test_f64_against_binary128),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_half_exhaustive),
        cmocka_unit_test(test_half_known),
        cmocka_unit_test(test_half_rounding),
    };
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
