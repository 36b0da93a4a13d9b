/* test_worker.c - end to end on the PoCL device through the worker process
 * (OpenCL only, whatever the suite's device: tests/suite_device.h):
 * hand-written matmul kernels (args out, A, B) verified statistically,
 * planted bugs rejected, a hanging kernel killed as timeout, a crashing
 * worker recorded as crash with the next candidate running fine, and the
 * timing protocol through the worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "measure/inputs.h"
#include "measure/outcome.h"
#include "measure/remote.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "tests/suite_device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* C[M,N] = A[M,K] B[K,N]: "ik,kj->ij" */
#define M 37
#define N 29
#define K 301

static et_device *dev;
static et_verifier *ver;
static et_einsum ein;

static const char *prelude =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#define M 37\n#define N 29\n#define K 301\n";

/* one work-item per output element, dimension 0 = j, 1 = i */
static const et_launch geom2d = {
    .ndim = 2, .global = {N, M, 1}, .local = {1, 1, 1}, .has_local = true};
/* 16 lanes per output element reduce in local memory */
static const et_launch geom_group = {
    .ndim = 2, .global = {16 * N, M, 1}, .local = {16, 1, 1},
    .has_local = true};

static const char *src_sequential =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k < K; k++) acc += A[i*K + k] * B[k*N + j];\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* another summation order: 16 strided partial sums, tree in local mem */
static const char *src_group =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  __local double part[16];\n"
    "  int l = get_local_id(0), j = get_group_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = l; k < K; k += 16) acc += A[i*K + k] * B[k*N + j];\n"
    "  part[l] = acc;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (int s = 8; s > 0; s >>= 1) {\n"
    "    if (l < s) part[l] += part[l + s];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (l == 0) C[i*N + j] = part[0];\n"
    "}\n";

/* planted: the barriers of the reduction are missing (a race) */
static const char *src_race =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  __local double part[16];\n"
    "  int l = get_local_id(0), j = get_group_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = l; k < K; k += 16) acc += A[i*K + k] * B[k*N + j];\n"
    "  part[l] = acc;\n"
    "  if (l == 0) {\n"
    "    double s = 0.0;\n"
    "    for (int t = 0; t < 16; t++) s += part[t];\n"
    "    C[i*N + j] = s;\n"
    "  }\n"
    "}\n";

/* planted: off-by-one in A's index */
static const char *src_off_by_one =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k < K; k++) acc += A[i*K + k + 1] * B[k*N + j];\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* planted: unrolled by 4 without the remainder (K = 301 misses a term) */
static const char *src_missed_tail =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k + 3 < K; k += 4) {\n"
    "    acc += A[i*K + k] * B[k*N + j];\n"
    "    acc += A[i*K + k+1] * B[(k+1)*N + j];\n"
    "    acc += A[i*K + k+2] * B[(k+2)*N + j];\n"
    "    acc += A[i*K + k+3] * B[(k+3)*N + j];\n"
    "  }\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* planted: f32 accumulation in an f64 kernel */
static const char *src_f32_acc =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  float acc = 0.0f;\n"
    "  for (int k = 0; k < K; k++) acc += (float)(A[i*K + k] * B[k*N + j]);\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* planted: one element never written */
static const char *src_unwritten =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  if (i == 3 && j == 5) return;\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k < K; k++) acc += A[i*K + k] * B[k*N + j];\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* planted: a write one element past the end of the output */
static const char *src_past_end =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k < K; k++) acc += A[i*K + k] * B[k*N + j];\n"
    "  C[i*N + j] = acc;\n"
    "  if (i == M - 1 && j == N - 1) C[M*N] = acc;\n"
    "}\n";

/* planted: each product rounded to 47 bits (Veltkamp split) - within the
 * bound, clearly less accurate than the baseline */
static const char *src_extra_rounding =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  double acc = 0.0;\n"
    "  for (int k = 0; k < K; k++) {\n"
    "    double p = A[i*K + k] * B[k*N + j];\n"
    "    double c = p * 65.0;\n"
    "    double hi = c - (c - p);\n"
    "    acc += hi;\n"
    "  }\n"
    "  C[i*N + j] = acc;\n"
    "}\n";

/* hangs while A[0] > 0.5 (a value the compiler cannot know) */
static const char *src_hang =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  int j = get_global_id(0), i = get_global_id(1);\n"
    "  while (A[0] > 0.5) C[i*N + j] = C[i*N + j] + 1.0;\n"
    "  C[i*N + j] = 0.0;\n"
    "}\n";

static et_program *build(const char *body, et_error *err)
{
    size_t n = strlen(prelude) + strlen(body) + 1;
    char *src = malloc(n);
    assert_non_null(src);
    snprintf(src, n, "%s%s", prelude, body);
    et_program *p = NULL;
    et_status st = et_program_build(dev, src, "mm", &p, err);
    free(src);
    if (st != ET_OK)
        print_message("build failed: %s\n", err->msg);
    assert_int_equal(st, ET_OK);
    return p;
}

static int group_setup(void **state)
{
    et_error err = {{0}};
    et_remote_limits lim = {.launch_s = 2.0};
    et_status st = et_device_open_isolated(NULL, &lim, &dev, &err);
    if (st != ET_OK) {
        fprintf(stderr, "cannot open the isolated device: %s\n", err.msg);
        return -1;
    }
    et_diag d;
    char shape[64];
    snprintf(shape, sizeof shape, "i=%d,k=%d,j=%d", M, K, N);
    if (et_einsum_from_strings("ik,kj->ij", shape, "f64", &ein, &d) != ET_OK)
        return -1;
    if (et_verifier_init(&ein, NULL, &ver, &err) != ET_OK) {
        fprintf(stderr, "verifier: %s\n", err.msg);
        return -1;
    }
    /* the untransformed kernel is the baseline */
    et_program *p = build(src_sequential, &err);
    et_verify_result r;
    st = et_verifier_baseline_kernel(ver, dev, p, &geom2d, &r, &err);
    et_program_free(dev, p);
    if (st != ET_OK) {
        fprintf(stderr, "baseline: %s\n", err.msg);
        return -1;
    }
    char line[256];
    et_verify_summary(&r, line, sizeof line);
    print_message("baseline %s\n", line);
    return 0;
}

static int group_teardown(void **state)
{
    if (ver) {
        et_verifier_release(ver);
        et_verifier_free(ver);
    }
    et_device_close(dev);
    return 0;
}

static et_verify_result check_kernel(const char *body, const et_launch *g)
{
    et_error err = {{0}};
    et_program *p = build(body, &err);
    et_verify_result r;
    et_status st = et_verify_kernel(ver, dev, p, g, &r, &err);
    if (st != ET_OK)
        print_message("verify: %s\n", err.msg);
    assert_int_equal(st, ET_OK);
    et_program_free(dev, p);
    char line[256];
    et_verify_summary(&r, line, sizeof line);
    print_message("%s: %s%s%s\n", et_outcome_name(r.outcome), line,
                  r.reason[0] ? " -- " : "", r.reason);
    return r;
}

static void test_device_through_worker(void **state)
{
    assert_true(et_device_is_isolated(dev));
    assert_true(et_device_worker_pid(dev) > 0);
    assert_true(dev->info.name[0] != '\0');
    assert_true(dev->info.target.mem_base_addr_align > 0);
    et_error err = {{0}};
    assert_int_equal(et_remote_test_hook(dev, ET_REMOTE_HOOK_PING, &err),
                     ET_OK);
    /* a round trip larger than a socket buffer */
    size_t n = 3u << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 7 + 3);
    et_buffer *buf;
    assert_int_equal(et_buffer_alloc(dev, n, &buf, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, buf, 0, a, n, &err), ET_OK);
    memset(b, 0, n);
    assert_int_equal(et_buffer_read(dev, buf, 0, b, n, &err), ET_OK);
    assert_memory_equal(a, b, n);
    /* a fill runs in the worker: an 8-byte pattern over part of the
     * buffer, everything around it as written */
    const unsigned char pat[8] = {1, 2, 3, 4, 5, 6, 7, 0xfe};
    size_t off = 4096, len = n - 8192;
    assert_int_equal(et_buffer_fill(dev, buf, off, pat, 8, len, &err), ET_OK);
    assert_int_equal(et_buffer_read(dev, buf, 0, b, n, &err), ET_OK);
    assert_memory_equal(a, b, off);
    for (size_t i = off; i < off + len; i++)
        if (b[i] != pat[(i - off) % 8])
            fail_msg("byte %zu is %d after the fill, not %d", i, b[i],
                     pat[(i - off) % 8]);
    assert_memory_equal(a + off + len, b + off + len, n - off - len);
    /* an offset the pattern does not divide is refused before the worker */
    assert_int_equal(et_buffer_fill(dev, buf, 4, pat, 8, 64, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "pattern"));
    et_buffer_free(dev, buf);
    free(a);
    free(b);
    /* a build error travels back with its log */
    et_program *p = NULL;
    assert_int_equal(et_program_build(dev, "__kernel void mm(__global int *C) { C[0] = ; }",
                                      "mm",
                                      &p, &err),
                     ET_ERR_BUILD);
    assert_true(strlen(err.msg) > 0);
}

/* PoCL's clang prints "N warning(s) generated." on the stderr of the
 * process that builds: the worker and an in-process device both keep it
 * off the process's stderr and give it (with the build log's warning) to
 * the caller in err on success, and in the error when the build fails. */
static void test_compiler_output_captured(void **state)
{
    (void)state;
    char path[] = "/tmp/et_test_stderr_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    /* a fresh worker inherits the redirected stderr */
    et_device *devs[2] = {NULL, NULL};
    et_error err = {{0}};
    et_status st0 = et_device_open_isolated(NULL, NULL, &devs[0], &err);
    et_status st1 = et_device_open(NULL, &devs[1], &err);
    char said[2][sizeof err.msg], failed[2][sizeof err.msg];
    et_status built[2], broke[2];
    /* a nonce in the code (PoCL's cache key ignores comments) keeps the
     * cache from answering without compiling */
    long nonce = (long)time(NULL) * 100000 + (long)getpid() % 100000;
    for (int d = 0; d < 2; d++) {
        char src[512];
        snprintf(src, sizeof src,
                 "__kernel void w(__global long *a) { long x;\n"
                 "  if (x = a[0]) a[1] = x + %ldL + %d; }\n", nonce, d);
        et_program *p = NULL;
        built[d] = devs[d] ? et_program_build(devs[d], src, "w", &p, &err)
                           : ET_ERR_DEVICE;
        snprintf(said[d], sizeof said[d], "%s", err.msg);
        if (p)
            et_program_free(devs[d], p);
        snprintf(src, sizeof src,
                 "__kernel void w(__global long *a) { long x;\n"
                 "  if (x = a[0]) a[1] = x + %ldL + %d; a[2] = ; }\n", nonce,
                 d);
        p = NULL;
        broke[d] = devs[d] ? et_program_build(devs[d], src, "w", &p, &err)
                           : ET_ERR_DEVICE;
        snprintf(failed[d], sizeof failed[d], "%s", err.msg);
    }
    for (int d = 0; d < 2; d++)
        if (devs[d])
            et_device_close(devs[d]);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char leaked[4096] = "";
    ssize_t n = pread(fd, leaked, sizeof leaked - 1, 0);
    leaked[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    assert_int_equal(st0, ET_OK);
    assert_int_equal(st1, ET_OK);
    if (strstr(leaked, "generated"))
        fail_msg("compiler output reached stderr: %s", leaked);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(built[d], ET_OK);
        if (!strstr(said[d], "warning generated") ||
            !strstr(said[d], "assignment as a condition"))
            fail_msg("device %d: no compiler output on success: '%s'", d,
                     said[d]);
        assert_int_equal(broke[d], ET_ERR_BUILD);
        if (!strstr(failed[d], "compiler output:") ||
            !strstr(failed[d], "generated"))
            fail_msg("device %d: compiler output missing from the error: "
                     "'%s'", d, failed[d]);
    }
}

static void test_correct_kernels_pass(void **state)
{
    et_verify_result r = check_kernel(src_sequential, &geom2d);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_int_equal(r.trials, 3);
    assert_true(r.max_norm_err <= 1);
    assert_true(r.p_value > 0.001);
    r = check_kernel(src_group, &geom_group);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_true(r.max_norm_err <= 1);
}

static void expect_rejected(const char *body, const et_launch *g,
                            const char *needle)
{
    et_verify_result r = check_kernel(body, g);
    assert_int_equal(r.outcome, ET_OUTCOME_WRONG_RESULT);
    if (!strstr(r.reason, needle))
        fail_msg("reason '%s' lacks '%s'", r.reason, needle);
}

static void test_planted_off_by_one(void **state)
{
    expect_rejected(src_off_by_one, &geom2d, "element [");
}

static void test_planted_missed_tail(void **state)
{
    expect_rejected(src_missed_tail, &geom2d, "out of bound");
}

static void test_planted_race(void **state)
{
    expect_rejected(src_race, &geom_group, "element [");
}

static void test_planted_f32_accumulation(void **state)
{
    expect_rejected(src_f32_acc, &geom2d, "out of bound");
}

static void test_planted_unwritten(void **state)
{
    expect_rejected(src_unwritten, &geom2d, "element [3, 5] is NaN");
}

static void test_planted_write_past_end(void **state)
{
    expect_rejected(src_past_end, &geom2d, "output guard after the data");
}

static void test_planted_extra_rounding(void **state)
{
    et_verify_result r = check_kernel(src_extra_rounding, &geom2d);
    assert_int_equal(r.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_true(r.max_norm_err <= 1); /* within the bound ... */
    assert_true(r.p_value < 0.001);   /* ... but caught by the test */
    assert_true(r.mean_ratio >= 2);
    assert_non_null(strstr(r.reason, "less accurate than the baseline"));
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_hang_is_timeout(void **state)
{
    et_error err = {{0}};
    uint64_t epoch = et_device_epoch(dev);
    int pid = et_device_worker_pid(dev);
    et_program *p = build(src_hang, &err);
    et_guarded c, a, b;
    size_t cb = M * N * 8, ab = M * K * 8, bb = K * N * 8;
    assert_int_equal(et_guarded_alloc(dev, cb, &c, &err), ET_OK);
    assert_int_equal(et_guarded_alloc(dev, ab, &a, &err), ET_OK);
    assert_int_equal(et_guarded_alloc(dev, bb, &b, &err), ET_OK);
    double *host = calloc(M * K, sizeof *host);
    assert_int_equal(et_guarded_write(dev, &a, host, &err), ET_OK);
    et_buffer *args[3] = {c.buf, a.buf, b.buf};
    size_t offs[3] = {c.guard, a.guard, b.guard};
    /* first launch (compiles) with A[0] = 0: returns */
    assert_int_equal(
        et_launch_kernel(dev, p, &geom2d, args, offs, 3, NULL, &err), ET_OK);
    /* now A[0] = 1: endless loop, killed after the 2 s launch limit */
    host[0] = 1.0;
    assert_int_equal(et_guarded_write(dev, &a, host, &err), ET_OK);
    double t0 = wall();
    et_status st = et_launch_kernel(dev, p, &geom2d, args, offs, 3, NULL,
                                    &err);
    double took = wall() - t0;
    print_message("hang: %s (%.2f s)\n", err.msg, took);
    assert_int_equal(st, ET_ERR_TIMEOUT);
    assert_int_equal(et_outcome_from_status(st), ET_OUTCOME_TIMEOUT);
    assert_true(took < 30);
    assert_non_null(strstr(err.msg, "time limit"));
    assert_non_null(strstr(err.msg, "'mm'"));
    assert_int_equal(et_device_epoch(dev), epoch + 1);
    assert_true(et_device_worker_pid(dev) != pid);
    /* old handles are refused, not crashed on; freeing them is harmless */
    assert_int_equal(
        et_launch_kernel(dev, p, &geom2d, args, offs, 3, NULL, &err),
        ET_ERR_DEVICE);
    assert_non_null(strstr(err.msg, "re-create"));
    assert_int_equal(et_guarded_write(dev, &a, host, &err), ET_ERR_DEVICE);
    et_guarded_free(dev, &a);
    et_guarded_free(dev, &b);
    et_guarded_free(dev, &c);
    et_program_free(dev, p);
    free(host);
    /* the next candidate runs on the restarted worker */
    et_verify_result r = check_kernel(src_sequential, &geom2d);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
}

/* spins A[0] rounds (a count the compiler cannot know) */
static const char *src_spin =
    "__kernel void mm(__global double *C, __global const double *A,\n"
    "                 __global const double *B) {\n"
    "  double x = A[1];\n"
    "  long n = (long)A[0];\n"
    "  for (long t = 0; t < n; t++) x = x * 0.999999 + 1e-7;\n"
    "  C[get_global_id(0)] = x;\n"
    "}\n";

/* Runs the spin kernel of program p with `rounds`; returns the device
 * time, or -1 with err set. */
static double spin(et_program *p, double rounds, et_error *err)
{
    static const et_launch one = {
        .ndim = 1, .global = {1, 1, 1}, .local = {1, 1, 1}, .has_local = true};
    et_guarded c, a, b;
    assert_int_equal(et_guarded_alloc(dev, 64, &c, err), ET_OK);
    assert_int_equal(et_guarded_alloc(dev, 16, &a, err), ET_OK);
    assert_int_equal(et_guarded_alloc(dev, 8, &b, err), ET_OK);
    double host[2] = {rounds, 0.5};
    assert_int_equal(et_guarded_write(dev, &a, host, err), ET_OK);
    et_buffer *args[3] = {c.buf, a.buf, b.buf};
    size_t offs[3] = {c.guard, a.guard, b.guard};
    double s = -1;
    et_status st = et_launch_kernel(dev, p, &one, args, offs, 3, &s, err);
    et_guarded_free(dev, &a);
    et_guarded_free(dev, &b);
    et_guarded_free(dev, &c);
    return st == ET_OK ? s : -1;
}

/* A kernel that legitimately runs longer than the later-launch limit (2 s
 * here) is not killed: its limit follows its own first launch. */
static void test_long_kernel_not_killed(void **state)
{
    et_error err = {{0}};
    uint64_t epoch = et_device_epoch(dev);
    /* calibrate on a program of its own (limits are per program) */
    et_program *cal = build(src_spin, &err);
    assert_true(spin(cal, 1e3, &err) >= 0); /* compiles */
    double r = 1e6, t = 0;
    for (int i = 0; i < 12 && t < 0.3; i++, r *= 4) {
        t = spin(cal, r, &err);
        assert_true(t > 0);
    }
    r /= 4;
    et_program_free(dev, cal);
    double rounds = r * 3.0 / t; /* about 3 s */
    et_program *p = build(src_spin, &err);
    double t1 = spin(p, rounds, &err);
    print_message("spin: %.0f rounds, first launch %.2f s\n", rounds, t1);
    assert_true(t1 > 0);
    double t2 = spin(p, rounds, &err);
    if (t2 < 0)
        print_message("second launch: %s\n", err.msg);
    print_message("spin: second launch %.2f s (later-launch limit 2 s)\n",
                  t2);
    assert_true(t2 > 0);
    assert_int_equal(et_device_epoch(dev), epoch);
    et_program_free(dev, p);
}

static void test_crash_then_next_runs(void **state)
{
    et_error err = {{0}};
    uint64_t epoch = et_device_epoch(dev);
    et_status st = et_remote_test_hook(dev, ET_REMOTE_HOOK_ABORT, &err);
    print_message("crash: %s\n", err.msg);
    assert_int_equal(st, ET_ERR_CRASH);
    assert_int_equal(et_outcome_from_status(st), ET_OUTCOME_CRASH);
    assert_non_null(strstr(err.msg, "signal 6"));
    assert_int_equal(et_device_epoch(dev), epoch + 1);
    et_verify_result r = check_kernel(src_group, &geom_group);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
}

static void test_hook_hang_is_timeout(void **state)
{
    et_error err = {{0}};
    double t0 = wall();
    et_status st = et_remote_test_hook(dev, ET_REMOTE_HOOK_HANG, &err);
    assert_int_equal(st, ET_ERR_TIMEOUT);
    assert_true(wall() - t0 < 10);
    assert_int_equal(et_remote_test_hook(dev, ET_REMOTE_HOOK_PING, &err),
                     ET_OK);
}

static void test_timing_through_worker(void **state)
{
    et_error err = {{0}};
    et_program *p = build(src_sequential, &err);
    et_buffer *args[3];
    size_t offs[3];
    int nargs;
    assert_int_equal(et_verifier_args(ver, dev, args, offs, &nargs, &err),
                     ET_OK);
    assert_int_equal(nargs, 3);
    et_timing t;
    et_result res;
    et_status st = et_time_kernel(dev, p, &geom2d, args, offs, nargs, NULL,
                                  &t, &res, &err);
    assert_int_equal(st, ET_OK);
    assert_int_equal(res.outcome, ET_OUTCOME_OK);
    assert_true(t.runs >= 6 && t.runs <= 50);
    assert_true(t.low_s <= t.median_s && t.median_s <= t.high_s);
    char line[128];
    et_timing_format(&t, line, sizeof line);
    print_message("timing: %s\n", line);
    /* an absurdly small bound: the early cut after one timed run */
    et_timing_opts o = {.bound_s = 1e-12};
    st = et_time_kernel(dev, p, &geom2d, args, offs, nargs, &o, &t, &res,
                        &err);
    assert_int_equal(st, ET_OK);
    assert_int_equal(res.outcome, ET_OUTCOME_SLOWER_THAN_BOUND);
    assert_int_equal(t.runs, 1);
    et_program_free(dev, p);
}

static char *with_prelude(const char *body)
{
    size_t n = strlen(prelude) + strlen(body) + 1;
    char *src = malloc(n);
    assert_non_null(src);
    snprintf(src, n, "%s%s", prelude, body);
    return src;
}

static void test_evaluate_candidates(void **state)
{
    et_error err = {{0}};
    et_evaluation ev;
    char *src = with_prelude(src_group);
    assert_int_equal(et_evaluate_kernel(ver, dev, src, "mm", &geom_group,
                                        NULL, &ev, &err),
                     ET_OK);
    free(src);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_OK);
    assert_true(ev.verified && ev.timed);
    assert_true(ev.timing.runs >= 6);
    char vl[160], tl[160];
    et_verify_summary(&ev.verify, vl, sizeof vl);
    et_timing_format(&ev.timing, tl, sizeof tl);
    print_message("candidate: %s; %s\n", vl, tl);

    src = with_prelude(src_missed_tail);
    assert_int_equal(et_evaluate_kernel(ver, dev, src, "mm", &geom2d, NULL,
                                        &ev, &err),
                     ET_OK);
    free(src);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_true(ev.verified && !ev.timed);
    assert_non_null(strstr(ev.result.reason, "out of bound"));

    /* with a bound: a candidate over it is cut before verification */
    et_timing_opts cut = {.bound_s = 1e-12};
    src = with_prelude(src_group);
    assert_int_equal(et_evaluate_kernel(ver, dev, src, "mm", &geom_group,
                                        &cut, &ev, &err),
                     ET_OK);
    free(src);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_SLOWER_THAN_BOUND);
    assert_true(!ev.verified && ev.timed);
    assert_int_equal(ev.timing.runs, 1);
    assert_true(ev.timing.median_s > 1e-12);
    assert_non_null(strstr(ev.result.reason, "not verified"));
    /* a wrong kernel under the bound is still verified and rejected */
    et_timing_opts loose = {.bound_s = 1e6};
    src = with_prelude(src_missed_tail);
    assert_int_equal(et_evaluate_kernel(ver, dev, src, "mm", &geom2d,
                                        &loose, &ev, &err),
                     ET_OK);
    free(src);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_WRONG_RESULT);
    assert_true(ev.verified && !ev.timed);
    /* and a correct one passes and is timed after it */
    src = with_prelude(src_sequential);
    assert_int_equal(et_evaluate_kernel(ver, dev, src, "mm", &geom2d,
                                        &loose, &ev, &err),
                     ET_OK);
    free(src);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_OK);
    assert_true(ev.verified && ev.timed && ev.timing.runs >= 6);

    assert_int_equal(et_evaluate_kernel(ver, dev, "__kernel void mm(", "mm",
                                        &geom2d, NULL, &ev, &err),
                     ET_OK);
    assert_int_equal(ev.result.outcome, ET_OUTCOME_BUILD_ERROR);
    assert_true(strlen(ev.result.reason) > 0);
    assert_false(ev.verified);
}

static void test_worker_process_group_and_path(void **state)
{
    /* its own process group: ^C in the terminal reaches the parent only */
    pid_t w = (pid_t)et_device_worker_pid(dev);
    assert_int_equal(getpgid(w), w);
    assert_true(getpgid(w) != getpgrp());
    char path[4096];
    assert_int_equal(et_remote_worker_path(path, sizeof path), 0);
    assert_non_null(strstr(path, "eintune-worker"));
    /* a worker that is not there: a clear device error */
    char *old = getenv("ET_WORKER") ? strdup(getenv("ET_WORKER")) : NULL;
    setenv("ET_WORKER", "/nonexistent/eintune-worker", 1);
    et_device *d2 = NULL;
    et_error err = {{0}};
    assert_int_equal(et_device_open_isolated(NULL, NULL, &d2, &err),
                     ET_ERR_DEVICE);
    assert_null(d2);
    assert_non_null(strstr(err.msg, "/nonexistent/eintune-worker"));
    if (old)
        setenv("ET_WORKER", old, 1);
    else
        unsetenv("ET_WORKER");
    free(old);
}

static void test_worker_dies_with_its_parent(void **state)
{
    /* a child process opens an isolated device and exits without closing
     * it: PR_SET_PDEATHSIG takes the worker down with it */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        et_device *d = NULL;
        et_error err;
        int wpid = 0;
        if (et_device_open_isolated(NULL, NULL, &d, &err) == ET_OK)
            wpid = et_device_worker_pid(d);
        if (write(fds[1], &wpid, sizeof wpid) != sizeof wpid)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    int wpid = 0;
    assert_int_equal(read(fds[0], &wpid, sizeof wpid), (int)sizeof wpid);
    close(fds[0]);
    int status;
    waitpid(child, &status, 0);
    assert_true(wpid > 0);
    bool gone = false;
    for (int i = 0; i < 500 && !gone; i++) {
        if (kill(wpid, 0) != 0 && errno == ESRCH)
            gone = true;
        else
            usleep(10000);
    }
    assert_true(gone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_through_worker),
        cmocka_unit_test(test_compiler_output_captured),
        cmocka_unit_test(test_correct_kernels_pass),
        cmocka_unit_test(test_planted_off_by_one),
        cmocka_unit_test(test_planted_missed_tail),
        cmocka_unit_test(test_planted_race),
        cmocka_unit_test(test_planted_f32_accumulation),
        cmocka_unit_test(test_planted_unwritten),
        cmocka_unit_test(test_planted_write_past_end),
        cmocka_unit_test(test_planted_extra_rounding),
        cmocka_unit_test(test_hang_is_timeout),
        cmocka_unit_test(test_long_kernel_not_killed),
        cmocka_unit_test(test_crash_then_next_runs),
        cmocka_unit_test(test_hook_hang_is_timeout),
        cmocka_unit_test(test_timing_through_worker),
        cmocka_unit_test(test_evaluate_candidates),
        cmocka_unit_test(test_worker_process_group_and_path),
        cmocka_unit_test(test_worker_dies_with_its_parent),
    };
    /* its kernels are OpenCL C written by hand */
    if (!td_opencl_only("matmul kernels written in OpenCL C"))
        return 0;
    return cmocka_run_group_tests_name("worker", tests, group_setup,
                                       group_teardown);
}
