/*
 * peer_clblast - times one CLBlast operation on an OpenCL device with the
 * timing protocol of bench/peer_stats.h (device time from the OpenCL
 * profiling event CLBlast returns), checks a sample of the result against
 * a host computation, and prints one JSON object on stdout.
 *
 *   peer_clblast [--device N] DTYPE OP ARGS...
 *     DTYPE  f32 | f64
 *     OP     gemm M N K               C[M,N] = A[M,K] B[K,N], row-major
 *            gemm_strided B M N K S   B batches of that GEMM, A and C
 *                                     strided, B shared (S=1: stride 0)
 *                                     or strided (S=0)
 *            gemv M N                 y[M] = A[M,N] x[N], row-major
 *            sum N                    s = sum of x[N] (CLBlast's Xsum)
 *
 * --device N counts OpenCL devices over all platforms in order, as
 * eintune's `--device opencl:N` does (default 0, eintune's default).
 * Exit status 0 on success, 1 when the device or CLBlast fails or the
 * result is wrong (the JSON then has "error").
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>

#include "peer_stats.h"

#include <stdint.h>

typedef struct job {
    int f64;
    const char *op;
    size_t batch, m, n, k;
    int shared_b;
    cl_command_queue q;
    cl_mem a, b, c;
} job;

static void fail(const char *what, long code)
{
    printf("{\"peer\": \"clblast\", \"error\": \"%s (%ld)\"}\n", what, code);
    exit(1);
}

/*
 * Device time from a marker enqueued just before the CLBlast call to the
 * end of the event CLBlast returns. CLBlast may enqueue several kernels for
 * one call (padding/transposing copies before a GEMM, the epilogue of a
 * reduction) and its event is the last one's; on the in-order queue the
 * span from the marker covers all of them.
 */
static double elapsed(cl_event mk, cl_event ev)
{
    cl_ulong t0 = 0, t1 = 0;
    double r = -1;
    if (clWaitForEvents(1, &ev) == CL_SUCCESS &&
        clGetEventProfilingInfo(mk, CL_PROFILING_COMMAND_END, sizeof t0, &t0,
                                NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                                NULL) == CL_SUCCESS)
        r = (double)(t1 - t0) * 1e-9;
    clReleaseEvent(ev);
    clReleaseEvent(mk);
    return r;
}

static CLBlastStatusCode g_last;

static double run_once(void *arg)
{
    job *j = arg;
    cl_event ev = NULL, mk = NULL;
    CLBlastStatusCode s;
    if (clFinish(j->q) != CL_SUCCESS ||
        clEnqueueMarkerWithWaitList(j->q, 0, NULL, &mk) != CL_SUCCESS)
        return -1;
    const CLBlastLayout L = CLBlastLayoutRowMajor;
    const CLBlastTranspose N = CLBlastTransposeNo;
    if (!strcmp(j->op, "gemm")) {
        s = j->f64 ? CLBlastDgemm(L, N, N, j->m, j->n, j->k, 1.0, j->a, 0,
                                  j->k, j->b, 0, j->n, 0.0, j->c, 0, j->n,
                                  &j->q, &ev)
                   : CLBlastSgemm(L, N, N, j->m, j->n, j->k, 1.0f, j->a, 0,
                                  j->k, j->b, 0, j->n, 0.0f, j->c, 0, j->n,
                                  &j->q, &ev);
    } else if (!strcmp(j->op, "gemm_strided")) {
        size_t sa = j->m * j->k, sb = j->shared_b ? 0 : j->k * j->n,
               sc = j->m * j->n;
        s = j->f64 ? CLBlastDgemmStridedBatched(
                         L, N, N, j->m, j->n, j->k, 1.0, j->a, 0, j->k, sa,
                         j->b, 0, j->n, sb, 0.0, j->c, 0, j->n, sc, j->batch,
                         &j->q, &ev)
                   : CLBlastSgemmStridedBatched(
                         L, N, N, j->m, j->n, j->k, 1.0f, j->a, 0, j->k, sa,
                         j->b, 0, j->n, sb, 0.0f, j->c, 0, j->n, sc,
                         j->batch, &j->q, &ev);
    } else if (!strcmp(j->op, "gemv")) {
        s = j->f64 ? CLBlastDgemv(L, N, j->m, j->n, 1.0, j->a, 0, j->n, j->b,
                                  0, 1, 0.0, j->c, 0, 1, &j->q, &ev)
                   : CLBlastSgemv(L, N, j->m, j->n, 1.0f, j->a, 0, j->n,
                                  j->b, 0, 1, 0.0f, j->c, 0, 1, &j->q, &ev);
    } else {
        s = j->f64 ? CLBlastDsum(j->n, j->c, 0, j->a, 0, 1, &j->q, &ev)
                   : CLBlastSsum(j->n, j->c, 0, j->a, 0, 1, &j->q, &ev);
    }
    g_last = s;
    if (s != CLBlastSuccess) {
        clReleaseEvent(mk);
        return -1;
    }
    return elapsed(mk, ev);
}

static double get(const void *p, int f64, size_t i)
{
    return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static cl_mem make_buf(cl_context ctx, int f64, size_t n, void **host,
                       unsigned long long *seed, int fill_ones)
{
    size_t es = f64 ? 8 : 4;
    *host = malloc(n * es);
    if (!*host)
        fail("out of memory", 0);
    for (size_t i = 0; i < n; i++) {
        double v = fill_ones ? 1.0 : ps_rand(seed);
        if (f64)
            ((double *)*host)[i] = v;
        else
            ((float *)*host)[i] = (float)v;
    }
    cl_int e;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * es, *host, &e);
    if (e != CL_SUCCESS)
        fail("clCreateBuffer", e);
    return m;
}

int main(int argc, char **argv)
{
    int devno = 0, ai = 1;
    if (argc > 2 && !strcmp(argv[1], "--device")) {
        devno = atoi(argv[2]);
        ai = 3;
    }
    if (argc - ai < 3) {
        fprintf(stderr, "usage: peer_clblast [--device N] f32|f64 OP ARGS "
                        "(see the source)\n");
        return 2;
    }
    job j;
    memset(&j, 0, sizeof j);
    j.f64 = !strcmp(argv[ai], "f64");
    j.op = argv[ai + 1];
    char **a = argv + ai + 2;
    int na = argc - ai - 2;
    j.batch = 1;
    if (!strcmp(j.op, "gemm") && na == 3) {
        j.m = strtoull(a[0], 0, 10), j.n = strtoull(a[1], 0, 10),
        j.k = strtoull(a[2], 0, 10);
    } else if (!strcmp(j.op, "gemm_strided") && na == 5) {
        j.batch = strtoull(a[0], 0, 10), j.m = strtoull(a[1], 0, 10),
        j.n = strtoull(a[2], 0, 10), j.k = strtoull(a[3], 0, 10);
        j.shared_b = atoi(a[4]);
    } else if (!strcmp(j.op, "gemv") && na == 2) {
        j.m = strtoull(a[0], 0, 10), j.n = strtoull(a[1], 0, 10);
    } else if (!strcmp(j.op, "sum") && na == 1) {
        j.n = strtoull(a[0], 0, 10);
    } else {
        fprintf(stderr, "peer_clblast: bad operation or argument count\n");
        return 2;
    }

    /* The N-th device over all platforms. */
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0)
        fail("no OpenCL platform", 0);
    cl_device_id dev = NULL;
    int seen = 0;
    for (cl_uint p = 0; p < np && !dev; p++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ds, &nd) !=
            CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd; d++)
            if (seen++ == devno) {
                dev = ds[d];
                break;
            }
    }
    if (!dev)
        fail("no such OpenCL device", devno);
    char name[256] = "", drv[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (e != CL_SUCCESS)
        fail("clCreateContext", e);
    j.q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (e != CL_SUCCESS)
        fail("clCreateCommandQueue", e);

    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    void *ha, *hb = NULL, *hc;
    size_t na_el, nb_el, nc_el;
    if (!strcmp(j.op, "gemm") || !strcmp(j.op, "gemm_strided")) {
        na_el = j.batch * j.m * j.k;
        nb_el = (j.shared_b ? 1 : j.batch) * j.k * j.n;
        nc_el = j.batch * j.m * j.n;
    } else if (!strcmp(j.op, "gemv")) {
        na_el = j.m * j.n, nb_el = j.n, nc_el = j.m;
    } else {
        na_el = j.n, nb_el = 0, nc_el = 1;
    }
    j.a = make_buf(ctx, j.f64, na_el, &ha, &seed, 0);
    if (nb_el)
        j.b = make_buf(ctx, j.f64, nb_el, &hb, &seed,
                       !strcmp(j.op, "gemv"));
    j.c = make_buf(ctx, j.f64, nc_el, &hc, &seed, 0);

    ps_timing t;
    if (ps_time(run_once, &j, &t) != 0)
        fail("CLBlast call failed", (long)g_last);

    /* Check a sample of the output (all of it when small). */
    size_t es = j.f64 ? 8 : 4;
    if (clEnqueueReadBuffer(j.q, j.c, CL_TRUE, 0, nc_el * es, hc, 0, NULL,
                            NULL) != CL_SUCCESS)
        fail("clEnqueueReadBuffer", 0);
    double u = j.f64 ? 1.1102230246251565e-16 : 5.9604644775390625e-08;
    double worst = 0;
    size_t nsample = nc_el < 256 ? nc_el : 256;
    for (size_t s = 0; s < nsample; s++) {
        /* spread evenly over the output */
        size_t o = (size_t)(((double)s + 0.5) / (double)nsample * (double)nc_el);
        double ref = 0, mag = 0;
        size_t terms;
        if (!strcmp(j.op, "sum")) {
            terms = j.n;
            for (size_t i = 0; i < j.n; i++)
                ref += get(ha, j.f64, i), mag += fabs(get(ha, j.f64, i));
        } else if (!strcmp(j.op, "gemv")) {
            terms = j.n;
            for (size_t i = 0; i < j.n; i++) {
                double v = get(ha, j.f64, o * j.n + i) * get(hb, j.f64, i);
                ref += v, mag += fabs(v);
            }
        } else {
            terms = j.k;
            size_t bi = o / (j.m * j.n), r = (o / j.n) % j.m, col = o % j.n;
            size_t boff = j.shared_b ? 0 : bi * j.k * j.n;
            for (size_t kk = 0; kk < j.k; kk++) {
                double v = get(ha, j.f64, bi * j.m * j.k + r * j.k + kk) *
                           get(hb, j.f64, boff + kk * j.n + col);
                ref += v, mag += fabs(v);
            }
        }
        double bound = 2.0 * (double)(terms + 1) * u * mag + 1e-300;
        double err = fabs(get(hc, j.f64, o) - ref) / bound;
        if (!(err <= 1.0))
            fail("wrong result", (long)o);
        if (err > worst)
            worst = err;
    }

    printf("{\"peer\": \"clblast\", \"device\": \"%s\", \"driver\": \"%s\", "
           "\"dtype\": \"%s\", \"op\": \"%s\", \"batch\": %zu, \"m\": %zu, "
           "\"n\": %zu, \"k\": %zu, \"shared_b\": %d, ",
           name, drv, j.f64 ? "f64" : "f32", j.op, j.batch, j.m, j.n, j.k,
           j.shared_b);
    ps_print_json(stdout, &t);
    printf(", \"checked\": %zu, \"max_norm_err\": %.3g}\n", nsample, worst);

    clReleaseMemObject(j.a);
    if (j.b)
        clReleaseMemObject(j.b);
    clReleaseMemObject(j.c);
    clReleaseCommandQueue(j.q);
    clReleaseContext(ctx);
    free(ha);
    free(hb);
    free(hc);
    return 0;
}
