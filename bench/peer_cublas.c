/*
 * peer_cublas - times cuBLAS on a CUDA device for the benchmark's cases
 * 1, 2 and 5, with the timing protocol of bench/peer_stats.h (device time
 * from CUDA events recorded around the calls on one stream), checks a
 * sample of the result against a host computation, and prints one JSON
 * object on stdout, as bench/peer_clblast.c does.
 *
 *   peer_cublas [--device N] DTYPE OP ARGS...
 *     DTYPE  f32 | f64
 *     OP     gemm M N K               C[M,N] = A[M,K] B[K,N], row-major
 *                                     (cases 1 and 2: the batch collapsed)
 *            gemm_strided B M N K S   B batches of that GEMM, A and C
 *                                     strided, B shared (S=1: stride 0)
 *                                     or strided (S=0)
 *            dg X R I J E             case 5, xre,rij,xej->xei, as a
 *                                     user writes it with BLAS: one GEMM
 *                                     D[x,e,r,i] = sum_j C[x,e,j] B[r,i,j]
 *                                     then E strided-batched GEMMs over x,
 *                                     out[x,e,i] = sum_r A[x,r,e] D[x,e,r,i];
 *                                     the time covers all 1 + E calls
 *     --device N  the CUDA device's ordinal (eintune's cuda:N), default 0
 *
 * Nothing is linked at build time: libcuda through bench/cu_driver.h and
 * libcublas with dlopen (libcublas.so.13, .12, unversioned, then the same
 * under /usr/local/cuda/lib64; $ET_LIBCUBLAS first when set), with the
 * prototypes below, which are cuBLAS's own (cublas_api.h). cuBLAS runs in
 * its default math mode (no TF32 for f32) on the device's primary
 * context, its stream set to the one the events are recorded on. "gflops"
 * in the output counts the arithmetic of the calls made (2 M N K per
 * GEMM); the bench credits every contender with the einsum's own op count
 * instead.
 *
 * Exit status 0 on success (the JSON has the timing); 1 when a call fails
 * or the result is wrong (the JSON has "error"); 2 for bad usage; 3 when
 * the peer cannot run here: no CUDA driver, no such device, or no cuBLAS
 * (the JSON has "not_run" with the reason, "no GPU: ..." when there is no
 * device): the bench reports the peer as not run, and why, not as a
 * failure.
 */
#include "cu_driver.h"
#include "peer_stats.h"

#include <stdint.h>

#define EXIT_NOT_RUN 3

/* ---- output ------------------------------------------------------------ */

/* s as a JSON string's contents (quotes and backslashes escaped, control
 * characters dropped). */
static void json_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

static void not_run(const char *why)
{
    printf("{\"peer\": \"cublas\", \"not_run\": \"");
    json_text(stdout, why);
    printf("\"}\n");
    fprintf(stderr, "peer_cublas: cuBLAS peer not run: %s\n", why);
    exit(EXIT_NOT_RUN);
}

static void fail(const char *what, long code)
{
    printf("{\"peer\": \"cublas\", \"error\": \"");
    json_text(stdout, what);
    printf(" (%ld)\"}\n", code);
    exit(1);
}

/* ---- cuBLAS, opened at run time ---------------------------------------- */

typedef int cublasStatus_t; /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublasContext *cublasHandle_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;

typedef struct cublas_api {
    void *lib;
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*Destroy)(cublasHandle_t);
    cublasStatus_t (*SetStream)(cublasHandle_t, CUstream);
    cublasStatus_t (*GetVersion)(cublasHandle_t, int *);
    cublasStatus_t (*Sgemm)(cublasHandle_t, cublasOperation_t,
                            cublasOperation_t, int, int, int, const float *,
                            const float *, int, const float *, int,
                            const float *, float *, int);
    cublasStatus_t (*Dgemm)(cublasHandle_t, cublasOperation_t,
                            cublasOperation_t, int, int, int, const double *,
                            const double *, int, const double *, int,
                            const double *, double *, int);
    cublasStatus_t (*SgemmStridedBatched)(
        cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
        const float *, const float *, int, long long, const float *, int,
        long long, const float *, float *, int, long long, int);
    cublasStatus_t (*DgemmStridedBatched)(
        cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
        const double *, const double *, int, long long, const double *, int,
        long long, const double *, double *, int, long long, int);
    char path[256];
} cublas_api;

static int cublas_open(cublas_api *c, char *why, size_t cap)
{
    memset(c, 0, sizeof *c);
    const char *env = getenv("ET_LIBCUBLAS");
    const char *names[] = {env && *env ? env : NULL,
                           "libcublas.so.13",
                           "libcublas.so.12",
                           "libcublas.so",
                           "/usr/local/cuda/lib64/libcublas.so.13",
                           "/usr/local/cuda/lib64/libcublas.so.12",
                           "/usr/local/cuda/lib64/libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !c->lib; i++)
        if (names[i] && (c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
            snprintf(c->path, sizeof c->path, "%s", names[i]);
    if (!c->lib) {
        snprintf(why, cap, "libcublas not found (libcublas.so.13, .12 or "
                           ".so on the loader's path or under "
                           "/usr/local/cuda/lib64; ET_LIBCUBLAS names it)");
        return -1;
    }
    static const struct {
        size_t off;
        const char *name;
    } syms[] = {
        {offsetof(cublas_api, Create), "cublasCreate_v2"},
        {offsetof(cublas_api, Destroy), "cublasDestroy_v2"},
        {offsetof(cublas_api, SetStream), "cublasSetStream_v2"},
        {offsetof(cublas_api, GetVersion), "cublasGetVersion_v2"},
        {offsetof(cublas_api, Sgemm), "cublasSgemm_v2"},
        {offsetof(cublas_api, Dgemm), "cublasDgemm_v2"},
        {offsetof(cublas_api, SgemmStridedBatched),
         "cublasSgemmStridedBatched"},
        {offsetof(cublas_api, DgemmStridedBatched),
         "cublasDgemmStridedBatched"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(c->lib, syms[i].name);
        if (!p) {
            snprintf(why, cap, "%s lacks %s", c->path, syms[i].name);
            return -1;
        }
        memcpy((char *)c + syms[i].off, &p, sizeof p);
    }
    return 0;
}

/* ---- the operation ----------------------------------------------------- */

typedef struct job {
    int f64;
    const char *op;
    size_t batch, m, n, k;  /* gemm, gemm_strided */
    int shared_b;
    size_t x, r, i, j, e;   /* dg */
    cu_driver *d;
    cublas_api *cb;
    cublasHandle_t h;
    CUstream s;
    CUevent ev0, ev1;
    CUdeviceptr in[3], out; /* operands in the einsum's order */
    CUdeviceptr tmp;        /* dg's D[x,e,r,i] */
} job;

static cublasStatus_t g_last;

/* Enqueues one run of the operation on j->s; the first failing status. */
static cublasStatus_t enqueue(job *j)
{
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const cublas_api *c = j->cb;
    /* Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B
     * first, then A, each with its row length as leading dimension. */
    if (!strcmp(j->op, "gemm")) {
        int m = (int)j->m, n = (int)j->n, k = (int)j->k;
        if (j->f64)
            return c->Dgemm(j->h, N, N, n, m, k, &one,
                            (const double *)j->in[1], n,
                            (const double *)j->in[0], k, &zero,
                            (double *)j->out, n);
        return c->Sgemm(j->h, N, N, n, m, k, &onef, (const float *)j->in[1],
                        n, (const float *)j->in[0], k, &zerof,
                        (float *)j->out, n);
    }
    if (!strcmp(j->op, "gemm_strided")) {
        int m = (int)j->m, n = (int)j->n, k = (int)j->k;
        long long sa = (long long)(j->m * j->k),
                  sb = j->shared_b ? 0 : (long long)(j->k * j->n),
                  sc = (long long)(j->m * j->n);
        if (j->f64)
            return c->DgemmStridedBatched(
                j->h, N, N, n, m, k, &one, (const double *)j->in[1], n, sb,
                (const double *)j->in[0], k, sa, &zero, (double *)j->out, n,
                sc, (int)j->batch);
        return c->SgemmStridedBatched(
            j->h, N, N, n, m, k, &onef, (const float *)j->in[1], n, sb,
            (const float *)j->in[0], k, sa, &zerof, (float *)j->out, n, sc,
            (int)j->batch);
    }
    /* dg, in0 = A[x,r,e], in1 = B[r,i,j], in2 = C[x,e,j]. First D: row-
     * major D (XE x RI) = C (XE x J) B'^T with B' = B as (RI x J); in
     * column-major terms D^T (RI x XE) = op_T(B'^T stored J x RI, ld J)
     * times C^T (stored J x XE, ld J), ld RI. */
    const size_t es = j->f64 ? 8 : 4;
    const int ri = (int)(j->r * j->i), xe = (int)(j->x * j->e);
    const int jj = (int)j->j, ii = (int)j->i, rr = (int)j->r;
    const int ee = (int)j->e, xx = (int)j->x;
    cublasStatus_t st =
        j->f64 ? c->Dgemm(j->h, T, N, ri, xe, jj, &one,
                          (const double *)j->in[1], jj,
                          (const double *)j->in[2], jj, &zero,
                          (double *)j->tmp, ri)
               : c->Sgemm(j->h, T, N, ri, xe, jj, &onef,
                          (const float *)j->in[1], jj,
                          (const float *)j->in[2], jj, &zerof,
                          (float *)j->tmp, ri);
    /* Then, for each e, batched over x: out[x,e,:] (1 x I) = A[x,:,e]
     * (1 x R, its elements E apart) times D[x,e] (R x I, row-major). In
     * column-major terms out^T (I x 1, ld I) = D[x,e]^T (stored I x R,
     * ld I) times op_T(the 1 x R matrix of ld E); batch strides E R I,
     * R E and E I elements. */
    for (int e = 0; e < ee && st == 0; e++) {
        CUdeviceptr dx = j->tmp + (size_t)e * j->r * j->i * es;
        CUdeviceptr ax = j->in[0] + (size_t)e * es;
        CUdeviceptr ox = j->out + (size_t)e * j->i * es;
        long long sd = (long long)ee * ri, sa = (long long)rr * ee,
                  so = (long long)ee * ii;
        st = j->f64 ? c->DgemmStridedBatched(
                          j->h, N, T, ii, 1, rr, &one, (const double *)dx,
                          ii, sd, (const double *)ax, ee, sa, &zero,
                          (double *)ox, ii, so, xx)
                    : c->SgemmStridedBatched(
                          j->h, N, T, ii, 1, rr, &onef, (const float *)dx,
                          ii, sd, (const float *)ax, ee, sa, &zerof,
                          (float *)ox, ii, so, xx);
    }
    return st;
}

/* One timed run for ps_time: seconds between the events around the
 * calls, negative on failure. */
static double run_once(void *arg)
{
    job *j = arg;
    cu_driver *d = j->d;
    if (d->EventRecord(j->ev0, j->s) != 0)
        return -1;
    g_last = enqueue(j);
    if (g_last != 0)
        return -1;
    float ms = 0;
    if (d->EventRecord(j->ev1, j->s) != 0 ||
        d->EventSynchronize(j->ev1) != 0 ||
        d->EventElapsedTime(&ms, j->ev0, j->ev1) != 0)
        return -1;
    return (double)ms * 1e-3;
}

/* ---- host side --------------------------------------------------------- */

static double get(const void *p, int f64, size_t i)
{
    return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static void *host_fill(int f64, size_t n, unsigned long long *seed)
{
    void *h = malloc(n * (f64 ? 8 : 4));
    if (!h)
        fail("out of memory", 0);
    for (size_t i = 0; i < n; i++) {
        double v = ps_rand(seed);
        if (f64)
            ((double *)h)[i] = v;
        else
            ((float *)h)[i] = (float)v;
    }
    return h;
}

static CUdeviceptr dev_alloc(cu_driver *d, size_t bytes, const void *init)
{
    CUdeviceptr p = 0;
    CUresult r = d->MemAlloc(&p, bytes);
    if (r != 0)
        fail("cuMemAlloc", r);
    if (init && (r = d->MemcpyHtoD(p, init, bytes)) != 0)
        fail("cuMemcpyHtoD", r);
    return p;
}

/* The reference of output element o and the sum of |terms|; *terms the
 * number of products in it. */
static double reference(const job *j, void *const *h, size_t o, double *mag,
                        size_t *terms)
{
    double ref = 0;
    *mag = 0;
    if (!strcmp(j->op, "dg")) {
        size_t x = o / (j->e * j->i), e = (o / j->i) % j->e, i = o % j->i;
        *terms = j->r * j->j;
        for (size_t r = 0; r < j->r; r++)
            for (size_t jj = 0; jj < j->j; jj++) {
                double v = get(h[0], j->f64, (x * j->r + r) * j->e + e) *
                           get(h[1], j->f64, (r * j->i + i) * j->j + jj) *
                           get(h[2], j->f64, (x * j->e + e) * j->j + jj);
                ref += v, *mag += fabs(v);
            }
        return ref;
    }
    size_t bi = o / (j->m * j->n), row = (o / j->n) % j->m, col = o % j->n;
    size_t boff = j->shared_b ? 0 : bi * j->k * j->n;
    *terms = j->k;
    for (size_t kk = 0; kk < j->k; kk++) {
        double v = get(h[0], j->f64, bi * j->m * j->k + row * j->k + kk) *
                   get(h[1], j->f64, boff + kk * j->n + col);
        ref += v, *mag += fabs(v);
    }
    return ref;
}

static size_t arg_size(const char *s)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v == 0 || v > (1ull << 31)) {
        fprintf(stderr, "peer_cublas: '%s' is not a size\n", s);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    int devno = 0, ai = 1;
    if (argc > 2 && !strcmp(argv[1], "--device")) {
        devno = atoi(argv[2]);
        ai = 3;
    }
    if (argc - ai < 2 ||
        (strcmp(argv[ai], "f32") && strcmp(argv[ai], "f64"))) {
        fprintf(stderr, "usage: peer_cublas [--device N] f32|f64 OP ARGS "
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
        j.m = arg_size(a[0]), j.n = arg_size(a[1]), j.k = arg_size(a[2]);
    } else if (!strcmp(j.op, "gemm_strided") && na == 5) {
        j.batch = arg_size(a[0]), j.m = arg_size(a[1]);
        j.n = arg_size(a[2]), j.k = arg_size(a[3]);
        j.shared_b = atoi(a[4]) != 0;
    } else if (!strcmp(j.op, "dg") && na == 5) {
        j.x = arg_size(a[0]), j.r = arg_size(a[1]), j.i = arg_size(a[2]);
        j.j = arg_size(a[3]), j.e = arg_size(a[4]);
    } else {
        fprintf(stderr, "peer_cublas: bad operation or argument count\n");
        return 2;
    }

    /* the device, then cuBLAS: either missing is "not run" */
    cu_driver d;
    cublas_api cb;
    char why[512];
    int rc = cu_driver_open(&d, devno, why, sizeof why);
    if (rc == -1)
        not_run(why);
    if (rc != 0)
        fail(why, rc);
    if (cublas_open(&cb, why, sizeof why) != 0)
        not_run(why);
    j.d = &d;
    j.cb = &cb;
    CUresult r;
    if ((r = d.StreamCreate(&j.s, 0)) != 0 ||
        (r = d.EventCreate(&j.ev0, 0)) != 0 ||
        (r = d.EventCreate(&j.ev1, 0)) != 0)
        fail(cu_error_text(&d, r), r);
    cublasStatus_t cs;
    if ((cs = cb.Create(&j.h)) != 0)
        fail("cublasCreate", cs);
    if ((cs = cb.SetStream(j.h, j.s)) != 0)
        fail("cublasSetStream", cs);
    int cublas_version = 0;
    cb.GetVersion(j.h, &cublas_version);

    /* operands, in the einsum's order, and the output */
    size_t n_in = 2, el[3], n_out, n_tmp = 0;
    double flops;
    if (!strcmp(j.op, "dg")) {
        n_in = 3;
        el[0] = j.x * j.r * j.e, el[1] = j.r * j.i * j.j,
        el[2] = j.x * j.e * j.j;
        n_out = j.x * j.e * j.i;
        n_tmp = j.x * j.e * j.r * j.i;
        flops = 2.0 * (double)n_tmp * (double)j.j +
                2.0 * (double)n_out * (double)j.r;
    } else {
        el[0] = j.batch * j.m * j.k;
        el[1] = (j.shared_b ? 1 : j.batch) * j.k * j.n;
        n_out = j.batch * j.m * j.n;
        flops = 2.0 * (double)n_out * (double)j.k;
    }
    size_t es = j.f64 ? 8 : 4;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    void *h[3] = {NULL, NULL, NULL};
    for (size_t o = 0; o < n_in; o++) {
        h[o] = host_fill(j.f64, el[o], &seed);
        j.in[o] = dev_alloc(&d, el[o] * es, h[o]);
    }
    void *hout = host_fill(j.f64, n_out, &seed); /* overwritten */
    j.out = dev_alloc(&d, n_out * es, hout);
    if (n_tmp)
        j.tmp = dev_alloc(&d, n_tmp * es, NULL);

    ps_timing t;
    if (ps_time(run_once, &j, &t) != 0)
        fail(g_last ? "cuBLAS call failed" : "CUDA event timing failed",
             (long)g_last);
    if ((r = d.StreamSynchronize(j.s)) != 0)
        fail(cu_error_text(&d, r), r);
    if ((r = d.MemcpyDtoH(hout, j.out, n_out * es)) != 0)
        fail("cuMemcpyDtoH", r);

    /* A sample of the output (all of it when small), against double. */
    double u = j.f64 ? 1.1102230246251565e-16 : 5.9604644775390625e-08;
    double worst = 0;
    size_t nsample = n_out < 256 ? n_out : 256;
    for (size_t s = 0; s < nsample; s++) {
        size_t o = (size_t)(((double)s + 0.5) / (double)nsample *
                            (double)n_out);
        double mag;
        size_t terms;
        double ref = reference(&j, h, o, &mag, &terms);
        double bound = 2.0 * (double)(terms + 2) * u * mag + 1e-300;
        double err = fabs(get(hout, j.f64, o) - ref) / bound;
        if (!(err <= 1.0))
            fail("wrong result", (long)o);
        if (err > worst)
            worst = err;
    }

    printf("{\"peer\": \"cublas\", \"device\": \"");
    json_text(stdout, d.name);
    printf("\", \"driver\": %d, \"cublas\": %d, \"library\": \"",
           d.version, cublas_version);
    json_text(stdout, cb.path);
    printf("\", \"dtype\": \"%s\", \"op\": \"%s\", ", j.f64 ? "f64" : "f32",
           j.op);
    if (!strcmp(j.op, "dg"))
        printf("\"x\": %zu, \"r\": %zu, \"i\": %zu, \"j\": %zu, "
               "\"e\": %zu, \"calls\": %zu, ",
               j.x, j.r, j.i, j.j, j.e, 1 + j.e);
    else
        printf("\"batch\": %zu, \"m\": %zu, \"n\": %zu, \"k\": %zu, "
               "\"shared_b\": %d, ",
               j.batch, j.m, j.n, j.k, j.shared_b);
    ps_print_json(stdout, &t);
    printf(", \"flops\": %.0f, \"gflops\": %.4g, \"checked\": %zu, "
           "\"max_norm_err\": %.3g}\n",
           flops, t.median_s > 0 ? flops / t.median_s * 1e-9 : 0.0, nsample,
           worst);

    cb.Destroy(j.h);
    for (size_t o = 0; o < n_in; o++) {
        d.MemFree(j.in[o]);
        free(h[o]);
    }
    d.MemFree(j.out);
    if (j.tmp)
        d.MemFree(j.tmp);
    free(hout);
    d.EventDestroy(j.ev0);
    d.EventDestroy(j.ev1);
    d.StreamDestroy(j.s);
    cu_driver_close(&d);
    return 0;
}
