/* test_verify.c - statistical verification on hand-made outputs, the bound
 * formula, the Welch test, guard zones and NaN pre-fill through an
 * in-memory fake device, and the seeded input generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "measure/inputs.h"
#include "measure/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static et_einsum make(const char *text, const char *shape, const char *dt)
{
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings(text, shape, dt, &e, &d) != ET_OK)
        fail_msg("einsum %s %s: %s", text, shape, d.msg);
    return e;
}

static et_verifier *make_verifier(const et_einsum *e,
                                  const et_verify_opts *o)
{
    et_verifier *v = NULL;
    et_error err = {{0}};
    if (et_verifier_init(e, o, &v, &err) != ET_OK)
        fail_msg("verifier: %s", err.msg);
    return v;
}

/* outs[r] = reference of trial r + noise: element i gets
 * sign * uniform(0, scale) * bound[i]; rounded to double. */
static double **noisy_outputs(const et_verifier *v, int64_t n, double scale,
                              uint64_t seed)
{
    int R = et_verifier_trials(v);
    double **outs = calloc((size_t)R, sizeof *outs);
    assert_non_null(outs);
    et_rng rng;
    et_rng_seed(&rng, seed);
    for (int r = 0; r < R; r++) {
        outs[r] = malloc((size_t)n * sizeof **outs);
        assert_non_null(outs[r]);
        const double *b = et_verifier_bounds(v, r);
        for (int64_t i = 0; i < n; i++) {
            double s = (et_rng_next(&rng) & 1) ? 1 : -1;
            long double d = s * scale * et_rng_uniform(&rng) * b[i];
            outs[r][i] = (double)(et_verifier_reference(v, r, i) + d);
        }
    }
    return outs;
}

static void free_outputs(double **outs, int R)
{
    for (int r = 0; r < R; r++)
        free(outs[r]);
    free(outs);
}

static et_verify_result verify(et_verifier *v, double **outs,
                               const char *const *faults)
{
    et_verify_result res;
    assert_int_equal(
        et_verify_outputs(v, (const void *const *)outs, faults, &res), ET_OK);
    return res;
}

/* ---- bounds, exact results, perturbations ------------------------------- */

static void test_bound_formula(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=3,k=7,j=4", "f32");
    et_verifier *v = make_verifier(&e, NULL);
    assert_int_equal(et_verifier_trials(v), 3);
    for (int r = 0; r < 3; r++) {
        const float *A = et_verifier_input(v, r, 0);
        const float *B = et_verifier_input(v, r, 1);
        const double *b = et_verifier_bounds(v, r);
        /* n = K + m - 2 = 7, u = 2^-24, output dtype = accumulation */
        double u = 0x1.0p-24, g = 7 * u / (1 - 7 * u);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                long double s = 0, a = 0;
                for (int k = 0; k < 7; k++) {
                    long double t = (long double)A[i * 7 + k] * B[k * 4 + j];
                    s += t;
                    a += fabsl(t);
                }
                assert_true(fabsl(et_verifier_reference(v, r, i * 4 + j) - s) <=
                            1e-15L * a);
                assert_true(fabs(b[i * 4 + j] - (double)(g * a)) <=
                            1e-12 * b[i * 4 + j]);
            }
    }
    assert_string_equal(et_verifier_dist_name(v, 0), "uniform");
    assert_string_equal(et_verifier_dist_name(v, 1), "normal");
    assert_string_equal(et_verifier_dist_name(v, 2), "mixed");
    et_verifier_free(v);
}

static void test_exact_passes_perturbed_fails(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=6,k=300,j=5", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    double **outs = noisy_outputs(v, 30, 0, 1);
    et_verify_result res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_string_equal(res.reason, "");
    assert_int_equal(res.trials, 3);
    assert_true(res.max_norm_err < 0.01);
    assert_true(isnan(res.p_value)); /* no baseline yet */

    /* within the bound: still fine */
    const double *b1 = et_verifier_bounds(v, 1);
    long double ref13 = et_verifier_reference(v, 1, 13);
    outs[1][2 * 5 + 3] = (double)(ref13 + 0.5L * b1[13]);
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(res.max_norm_err > 0.4 && res.max_norm_err < 0.6);

    /* beyond it: rejected, naming the element */
    outs[1][2 * 5 + 3] = (double)(ref13 + 10.0L * b1[13]);
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_int_equal(res.n_bad, 1);
    assert_true(res.max_norm_err > 9.9 && res.max_norm_err < 10.1);
    print_message("%s\n", res.reason);
    assert_non_null(strstr(res.reason, "trial 1 (normal): element [2, 3]"));
    assert_non_null(strstr(res.reason, "normalized error 10"));
    assert_non_null(strstr(res.reason, "got "));
    assert_non_null(strstr(res.reason, "expected "));
    free_outputs(outs, 3);
    et_verifier_free(v);
}

static void test_nan_and_inf_fail(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=4,k=9,j=3", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    double **outs = noisy_outputs(v, 12, 0, 2);
    outs[2][1 * 3 + 2] = NAN; /* never written */
    et_verify_result res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    print_message("%s\n", res.reason);
    assert_non_null(strstr(res.reason, "trial 2 (mixed): element [1, 2] is "
                                       "NaN (never written?)"));
    assert_true(isinf(res.max_norm_err));
    outs[2][1 * 3 + 2] = 1.0;
    outs[0][0] = -INFINITY;
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "element [0, 0] is Inf"));
    free_outputs(outs, 3);
    et_verifier_free(v);
}

static void test_guard_fault_fails(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=4,k=9,j=3", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    double **outs = noisy_outputs(v, 12, 0, 3);
    const char *faults[3] = {NULL, "output guard after the data overwritten",
                             NULL};
    et_verify_result res = verify(v, outs, faults);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_string_equal(res.reason, "trial 1 (normal): output guard after "
                                    "the data overwritten");
    free_outputs(outs, 3);
    et_verifier_free(v);
}

static void test_zero_bound_demands_exact(void **state)
{
    /* a transpose: K = 1, m = 1, n = 0 -> every bound is 0 */
    et_einsum e = make("ij->ji", "i=5,j=7", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    for (int i = 0; i < 35; i++)
        assert_true(et_verifier_bounds(v, 0)[i] == 0);
    double **outs = noisy_outputs(v, 35, 0, 4);
    et_verify_result res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(res.max_norm_err == 0);
    outs[0][3] = nextafter(outs[0][3], INFINITY);
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "element [0, 3]"));
    free_outputs(outs, 3);
    et_verifier_free(v);
}

/* The reference kept as hi + lo is the evaluator's long double value to
 * the bit (sums of 300 f64 products need all 64 bits of it). */
static void test_reference_kept_exactly(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=6,k=300,j=5", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    long double ref[30], abs_terms[30];
    int beyond_double = 0;
    for (int r = 0; r < 3; r++) {
        const void *in[2] = {et_verifier_input(v, r, 0),
                             et_verifier_input(v, r, 1)};
        assert_int_equal(et_reference_eval(&e, in, ref, abs_terms), ET_OK);
        for (int i = 0; i < 30; i++) {
            assert_true(et_verifier_reference(v, r, i) == ref[i]);
            beyond_double += (long double)(double)ref[i] != ref[i];
        }
    }
    assert_true(beyond_double > 0); /* the low bits were there to keep */
    et_verifier_free(v);
}

/* An output of 2^21 elements is checked in ranges (one per CPU): the
 * count of bad elements is the sum over them, and the element named is
 * the one a single pass names, whichever range holds it. */
static void test_large_output_checked_in_ranges(void **state)
{
    const int64_t n = 2048 * 1024;
    et_einsum e = make("ik,kj->ij", "i=2048,k=2,j=1024", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    double **outs = noisy_outputs(v, n, 0, 5);
    et_verify_result res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(res.max_norm_err < 1);

    /* two out of bound, the worse one last; another in an earlier trial */
    const double *b2 = et_verifier_bounds(v, 2);
    int64_t a = 100 * 1024 + 7, z = n - 3;
    outs[2][a] = (double)(et_verifier_reference(v, 2, a) + 5.0L * b2[a]);
    outs[2][z] = (double)(et_verifier_reference(v, 2, z) + 20.0L * b2[z]);
    const double *b0 = et_verifier_bounds(v, 0);
    int64_t m = n / 2 + 11;
    outs[0][m] = (double)(et_verifier_reference(v, 0, m) + 3.0L * b0[m]);
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_int_equal(res.n_bad, 3);
    assert_true(res.max_norm_err > 19.9 && res.max_norm_err < 20.1);
    print_message("%s\n", res.reason);
    assert_non_null(
        strstr(res.reason, "trial 2 (mixed): element [2047, 1021]"));
    assert_non_null(strstr(res.reason, "3 elements out of bound"));

    /* non-finite in two ranges of one trial: the first is named */
    outs[1][n - 1] = NAN;
    outs[1][5 * 1024 + 9] = INFINITY;
    res = verify(v, outs, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(
        strstr(res.reason, "trial 1 (normal): element [5, 9] is Inf"));
    assert_non_null(strstr(res.reason, "2 elements not finite"));
    free_outputs(outs, 3);
    et_verifier_free(v);
}

static void test_f16_inputs_f32_bound(void **state)
{
    /* f16 operands compute in f32: u = 2^-24 */
    et_einsum e = make("ik,kj->ij", "i=3,k=10,j=2", "f16");
    assert_int_equal(e.acc_dtype, ET_F32);
    et_verifier *v = make_verifier(&e, NULL);
    const uint16_t *A = et_verifier_input(v, 2, 0);
    for (int i = 0; i < 30; i++) {
        float f = et_half_to_float(A[i]);
        assert_true(isfinite(f));
        assert_int_equal(et_float_to_half(f), A[i]);
    }
    et_verifier_free(v);
}

/* ---- the Welch test against the baseline -------------------------------- */

static void test_welch_against_baseline(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=64,k=300,j=64", "f64");
    et_verifier *v = make_verifier(&e, NULL);
    int64_t n = 64 * 64;
    double **base = noisy_outputs(v, n, 0.02, 10);
    et_verify_result res;
    assert_int_equal(
        et_verifier_set_baseline(v, (const void *const *)base, &res), ET_OK);
    assert_true(et_verifier_has_baseline(v));

    /* similar errors (other noise, same size): passes */
    double **same = noisy_outputs(v, n, 0.02, 11);
    res = verify(v, same, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(res.p_value > 0.001);
    assert_true(res.mean_ratio > 0.8 && res.mean_ratio < 1.25);
    char line[128];
    et_verify_summary(&res, line, sizeof line);
    print_message("similar: %s\n", line);

    /* smaller errors (a more accurate order): passes */
    double **better = noisy_outputs(v, n, 0.005, 12);
    res = verify(v, better, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(res.p_value > 0.5);

    /* 4x the errors, still within the bound: rejected by the test */
    double **worse = noisy_outputs(v, n, 0.08, 13);
    res = verify(v, worse, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_true(res.max_norm_err < 1);
    assert_true(res.p_value < 0.001);
    assert_true(res.mean_ratio > 3 && res.mean_ratio < 5);
    print_message("worse: %s\n", res.reason);
    assert_non_null(strstr(res.reason, "less accurate than the baseline"));

    /* significant but a small effect (1.5x): passes, both are needed */
    double **slight = noisy_outputs(v, n, 0.03, 14);
    res = verify(v, slight, NULL);
    assert_true(res.p_value < 0.001);
    assert_true(res.mean_ratio < 2);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);

    /* a baseline that fails its own bounds is not recorded */
    worse[0][5] = NAN;
    assert_int_equal(
        et_verifier_set_baseline(v, (const void *const *)worse, &res),
        ET_ERR_INTERNAL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    res = verify(v, same, NULL); /* the old baseline is still in place */
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_false(isnan(res.p_value));

    free_outputs(base, 3);
    free_outputs(same, 3);
    free_outputs(better, 3);
    free_outputs(worse, 3);
    free_outputs(slight, 3);
    et_verifier_free(v);
}

static void test_sample_cap(void **state)
{
    et_einsum e = make("ik,kj->ij", "i=40,k=50,j=40", "f64");
    et_verify_opts o = {.sample = 100, .trials = 2, .seed = 99};
    et_verifier *v = make_verifier(&e, &o);
    assert_int_equal(et_verifier_trials(v), 2);
    double **base = noisy_outputs(v, 1600, 0.02, 20);
    et_verify_result res;
    assert_int_equal(
        et_verifier_set_baseline(v, (const void *const *)base, &res), ET_OK);
    double **worse = noisy_outputs(v, 1600, 0.2, 21);
    res = verify(v, worse, NULL);
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_int_equal(res.trials, 2);
    free_outputs(base, 2);
    free_outputs(worse, 2);
    et_verifier_free(v);
}

static void test_summary_line(void **state)
{
    et_verify_result r = {.trials = 3, .max_norm_err = 0.031,
                          .p_value = 0.62, .mean_ratio = 0.98};
    char buf[160];
    /* a large p says nothing: it is left out */
    et_verify_summary(&r, buf, sizeof buf);
    assert_string_equal(buf,
                        "verified: 3 trials, max normalized error 0.031 "
                        "(limit 1), mean error 0.98x the untransformed "
                        "kernel's");
    /* a small one is shown with what it tested */
    r.p_value = 0.004;
    r.mean_ratio = 1.3;
    et_verify_summary(&r, buf, sizeof buf);
    assert_string_equal(buf,
                        "verified: 3 trials, max normalized error 0.031 "
                        "(limit 1), mean error 1.3x the untransformed "
                        "kernel's (larger at one-sided Welch p = 0.004)");
    /* no baseline, no comparison */
    r.p_value = NAN;
    r.mean_ratio = NAN;
    et_verify_summary(&r, buf, sizeof buf);
    assert_string_equal(buf,
                        "verified: 3 trials, max normalized error 0.031 "
                        "(limit 1)");
}

/* ---- an in-memory fake device: guards and NaN fill end to end ----------- */

typedef struct mem_buf {
    size_t n;
    unsigned char *data;
} mem_buf;

/* host kernels for "ik,kj->ij" with i=8,k=16,j=8 (f64) */
enum { FM = 8, FK = 16, FN = 8 };
typedef void (*host_kernel)(double *C, const double *A, const double *B);

static void k_ok(double *C, const double *A, const double *B)
{
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++) {
            double acc = 0;
            for (int k = 0; k < FK; k++)
                acc += A[i * FK + k] * B[k * FN + j];
            C[i * FN + j] = acc;
        }
}

static void k_past_end(double *C, const double *A, const double *B)
{
    k_ok(C, A, B);
    C[FM * FN + 2] = 1.0;
}

static void k_before_start(double *C, const double *A, const double *B)
{
    k_ok(C, A, B);
    C[-1] = 1.0;
}

static void k_skip(double *C, const double *A, const double *B)
{
    double keep = C[2 * FN + 7];
    k_ok(C, A, B);
    C[2 * FN + 7] = keep; /* as if never written */
}

static void k_into_input(double *C, const double *A, const double *B)
{
    k_ok(C, A, B);
    ((double *)B)[FK * FN] = 0.0;
}

typedef struct host_entry {
    const char *name;
    host_kernel fn;
} host_entry;

static const host_entry host_kernels[] = {
    {"ok", k_ok},         {"past_end", k_past_end},
    {"before", k_before_start}, {"skip", k_skip},
    {"into_input", k_into_input},
};

static int mem_writes;
static int mem_launches;

static et_status mem_alloc(void *ctx, size_t bytes, et_buffer **out,
                           et_error *err)
{
    mem_buf *b = malloc(sizeof *b);
    b->n = bytes;
    b->data = malloc(bytes);
    memset(b->data, 0x55, bytes);
    *out = (et_buffer *)b;
    return ET_OK;
}

static et_status mem_write(void *ctx, et_buffer *vb, size_t off,
                           const void *src, size_t n, et_error *err)
{
    mem_buf *b = (mem_buf *)vb;
    assert_true(off + n <= b->n);
    memcpy(b->data + off, src, n);
    mem_writes++;
    return ET_OK;
}

static et_status mem_read(void *ctx, et_buffer *vb, size_t off, void *dst,
                          size_t n, et_error *err)
{
    mem_buf *b = (mem_buf *)vb;
    assert_true(off + n <= b->n);
    memcpy(dst, b->data + off, n);
    return ET_OK;
}

static void mem_free(void *ctx, et_buffer *vb)
{
    mem_buf *b = (mem_buf *)vb;
    free(b->data);
    free(b);
}

static et_status mem_build(void *ctx, const char *source, const char *name,
                           et_program **out, et_error *err)
{
    for (size_t i = 0; i < sizeof host_kernels / sizeof host_kernels[0];
         i++)
        if (strcmp(name, host_kernels[i].name) == 0) {
            *out = (et_program *)&host_kernels[i];
            return ET_OK;
        }
    snprintf(err->msg, sizeof err->msg, "no kernel %s", name);
    return ET_ERR_BUILD;
}

static void mem_pfree(void *ctx, et_program *p) {}

static et_status mem_launch(void *ctx, et_program *p, const et_launch *geom,
                            et_buffer *const *args, const size_t *offsets,
                            int nargs, double *seconds, et_error *err)
{
    assert_int_equal(nargs, 3);
    double *ptr[3];
    for (int i = 0; i < 3; i++) {
        mem_buf *b = (mem_buf *)args[i];
        assert_true(offsets[i] % 256 == 0); /* the device's alignment */
        ptr[i] = (double *)(b->data + offsets[i]);
    }
    ((const host_entry *)p)->fn(ptr[0], ptr[1], ptr[2]);
    mem_launches++;
    if (seconds)
        *seconds = 1e-3 * mem_launches; /* tells the launches apart */
    return ET_OK;
}

static void mem_close(void *ctx) {}

static const et_backend_ops mem_ops = {
    .name = "mem",
    .buffer_alloc = mem_alloc,
    .buffer_write = mem_write,
    .buffer_read = mem_read,
    .buffer_free = mem_free,
    .program_build = mem_build,
    .program_free = mem_pfree,
    .launch = mem_launch,
    .close = mem_close,
};

static et_verify_result run_host_kernel(et_verifier *v, et_device *dev,
                                        const char *name)
{
    et_error err = {{0}};
    et_program *p;
    assert_int_equal(et_program_build(dev, "", name, &p, &err), ET_OK);
    et_launch g = {.ndim = 1, .global = {1, 1, 1}, .local = {1, 1, 1}};
    et_verify_result res;
    assert_int_equal(et_verify_kernel(v, dev, p, &g, &res, &err), ET_OK);
    print_message("%s: %s\n", name, res.reason);
    return res;
}

static void test_guards_and_nan_fill_on_fake_device(void **state)
{
    et_device dev = {.ops = &mem_ops};
    dev.info.target.mem_base_addr_align = 256;
    assert_int_equal(et_guard_bytes(&dev) % 256, 0);
    assert_true(et_guard_bytes(&dev) >= 4096);

    char shape[64];
    snprintf(shape, sizeof shape, "i=%d,k=%d,j=%d", FM, FK, FN);
    et_einsum e = make("ik,kj->ij", shape, "f64");
    et_verifier *v = make_verifier(&e, NULL);

    int launches = mem_launches;
    et_verify_result res = run_host_kernel(v, &dev, "ok");
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    /* the launches after the first are timed, the first (a driver may
     * compile there) is not */
    assert_int_equal(mem_launches, launches + 3);
    assert_int_equal(res.n_launch, 2);
    assert_true(res.launch_s[0] == 1e-3 * (launches + 2));
    assert_true(res.launch_s[1] == 1e-3 * (launches + 3));
    /* inputs stay on the device between candidates */
    int before = mem_writes;
    res = run_host_kernel(v, &dev, "ok");
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_int_equal(mem_writes - before, 3 * 3); /* NaN fill + 2 canaries */

    res = run_host_kernel(v, &dev, "past_end");
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "output guard after the data "
                                       "overwritten at byte 16 past the end"));

    res = run_host_kernel(v, &dev, "before");
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "output guard before the data "
                                       "overwritten from byte 8 to byte "));

    res = run_host_kernel(v, &dev, "skip");
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "element [2, 7] is NaN"));

    res = run_host_kernel(v, &dev, "into_input");
    assert_int_equal(res.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_non_null(strstr(res.reason, "input 1 guard after the data"));

    /* after failures the inputs are uploaded afresh; a good kernel passes */
    res = run_host_kernel(v, &dev, "ok");
    assert_int_equal(res.outcome, ET_OUTCOME_OK);

    et_buffer *args[3];
    size_t offs[3];
    int nargs;
    et_error err;
    assert_int_equal(et_verifier_args(v, &dev, args, offs, &nargs, &err),
                     ET_OK);
    assert_int_equal(nargs, 3);
    assert_int_equal(offs[0], et_guard_bytes(&dev));
    et_verifier_release(v);
    et_verifier_free(v);
}

/* ---- the generator ------------------------------------------------------ */

static void test_generator(void **state)
{
    et_rng a, b;
    et_rng_seed(&a, 42);
    et_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        assert_true(et_rng_next(&a) == et_rng_next(&b));
    /* xoshiro256** from splitmix64(42): the same bits on every machine */
    et_rng_seed(&a, 0);
    uint64_t first = et_rng_next(&a);
    et_rng_seed(&a, 0);
    assert_true(et_rng_next(&a) == first);
    assert_true(et_seed_mix(1, 2, 3) != et_seed_mix(1, 3, 2));

    enum { n = 20000 };
    static double x[n];
    et_inputs_fill(x, ET_F64, n, ET_DIST_UNIFORM, 7);
    double lo = 1, hi = -1, s = 0;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
        s += x[i];
    }
    assert_true(lo >= -1 && hi <= 1 && lo < -0.99 && hi > 0.99);
    assert_true(fabs(s / n) < 0.02);

    et_inputs_fill(x, ET_F64, n, ET_DIST_NORMAL, 7);
    double m = 0, q = 0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m /= n;
    for (int i = 0; i < n; i++)
        q += (x[i] - m) * (x[i] - m);
    assert_true(fabs(m) < 0.03);
    assert_true(fabs(sqrt(q / (n - 1)) - 1) < 0.03);

    et_inputs_fill(x, ET_F64, n, ET_DIST_MIXED, 7);
    double amin = 1e300, amax = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] != 0)
            amin = fmin(amin, fabs(x[i]));
        amax = fmax(amax, fabs(x[i]));
    }
    assert_true(amax > 0x1p18 && amax <= 0x1p20);
    assert_true(amin < 0x1p-19);

    /* values are rounded to the dtype: the same draws, rounded */
    static float f[n];
    et_inputs_fill(x, ET_F64, n, ET_DIST_NORMAL, 8);
    et_inputs_fill(f, ET_F32, n, ET_DIST_NORMAL, 8);
    for (int i = 0; i < n; i++)
        assert_true(f[i] == (float)x[i]);
    static uint16_t h[n];
    et_inputs_fill(h, ET_F16, n, ET_DIST_MIXED, 7);
    for (int i = 0; i < n; i++) {
        float v = et_half_to_float(h[i]);
        assert_true(isfinite(v) && fabsf(v) <= 1024);
    }
    et_fill_nan(h, ET_F16, 4);
    assert_true(isnan(et_half_to_float(h[3])));
    et_fill_nan(f, ET_F32, 4);
    assert_true(isnan(f[0]));
    assert_string_equal(et_dist_name(ET_DIST_MIXED), "mixed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_formula),
        cmocka_unit_test(test_exact_passes_perturbed_fails),
        cmocka_unit_test(test_nan_and_inf_fail),
        cmocka_unit_test(test_guard_fault_fails),
        cmocka_unit_test(test_zero_bound_demands_exact),
        cmocka_unit_test(test_reference_kept_exactly),
        cmocka_unit_test(test_large_output_checked_in_ranges),
        cmocka_unit_test(test_f16_inputs_f32_bound),
        cmocka_unit_test(test_welch_against_baseline),
        cmocka_unit_test(test_sample_cap),
        cmocka_unit_test(test_summary_line),
        cmocka_unit_test(test_guards_and_nan_fill_on_fake_device),
        cmocka_unit_test(test_generator),
    };
    return cmocka_run_group_tests_name("verify", tests, NULL, NULL);
}
