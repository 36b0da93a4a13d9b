/*
 * peer_openblas - times one OpenBLAS operation on the host with the timing
 * protocol of bench/peer_stats.h (clock_gettime around each call), checks a
 * sample of the result against a plain host computation, and prints one
 * JSON object on stdout, including which OpenBLAS kernel ran
 * (openblas_get_config, openblas_get_corename) and the thread count.
 *
 *   peer_openblas [--threads T] DTYPE OP ARGS...
 *     DTYPE  f32 | f64
 *     OP     gemm M N K           C[M,N] = A[M,K] B[K,N], row-major (cblas)
 *            gemv_loop B M K      for each of B batches: y_b = A_b x_b,
 *                                 A_b M x K row-major (one cblas gemv each)
 *            gemv M N             y[M] = A[M,N] x[N], x all ones
 *            dot N                s = x . ones (a sum through BLAS)
 *
 * --threads T sets openblas_set_num_threads (default: all cores, as
 * sysconf(_SC_NPROCESSORS_ONLN) says).
 */
#include <cblas.h>

#include "peer_stats.h"

#include <unistd.h>

char *openblas_get_config(void);
char *openblas_get_corename(void);
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

typedef struct job {
    int f64;
    const char *op;
    size_t batch, m, n, k;
    void *a, *b, *c;
} job;

static double run_once(void *arg)
{
    job *j = arg;
    double t0 = ps_now();
    const int M = (int)j->m, N = (int)j->n, K = (int)j->k;
    if (!strcmp(j->op, "gemm")) {
        if (j->f64)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K,
                        1.0, j->a, K, j->b, N, 0.0, j->c, N);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K,
                        1.0f, j->a, K, j->b, N, 0.0f, j->c, N);
    } else if (!strcmp(j->op, "gemv_loop")) {
        for (size_t bi = 0; bi < j->batch; bi++) {
            if (j->f64)
                cblas_dgemv(CblasRowMajor, CblasNoTrans, M, K, 1.0,
                            (double *)j->a + bi * j->m * j->k, K,
                            (double *)j->b + bi * j->k, 1, 0.0,
                            (double *)j->c + bi * j->m, 1);
            else
                cblas_sgemv(CblasRowMajor, CblasNoTrans, M, K, 1.0f,
                            (float *)j->a + bi * j->m * j->k, K,
                            (float *)j->b + bi * j->k, 1, 0.0f,
                            (float *)j->c + bi * j->m, 1);
        }
    } else if (!strcmp(j->op, "gemv")) {
        if (j->f64)
            cblas_dgemv(CblasRowMajor, CblasNoTrans, M, N, 1.0, j->a, N,
                        j->b, 1, 0.0, j->c, 1);
        else
            cblas_sgemv(CblasRowMajor, CblasNoTrans, M, N, 1.0f, j->a, N,
                        j->b, 1, 0.0f, j->c, 1);
    } else {
        if (j->f64)
            ((double *)j->c)[0] = cblas_ddot(N, j->a, 1, j->b, 1);
        else
            ((float *)j->c)[0] = cblas_sdot(N, j->a, 1, j->b, 1);
    }
    return ps_now() - t0;
}

static double get(const void *p, int f64, size_t i)
{
    return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static void *make(int f64, size_t n, unsigned long long *seed, int ones)
{
    size_t es = f64 ? 8 : 4;
    void *p = NULL;
    if (posix_memalign(&p, 64, n > 0 ? n * es : 64) != 0) {
        printf("{\"peer\": \"openblas\", \"error\": \"out of memory\"}\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        double v = ones ? 1.0 : ps_rand(seed);
        if (f64)
            ((double *)p)[i] = v;
        else
            ((float *)p)[i] = (float)v;
    }
    return p;
}

int main(int argc, char **argv)
{
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), ai = 1;
    if (argc > 2 && !strcmp(argv[1], "--threads")) {
        threads = atoi(argv[2]);
        ai = 3;
    }
    if (argc - ai < 3) {
        fprintf(stderr, "usage: peer_openblas [--threads T] f32|f64 OP ARGS "
                        "(see the source)\n");
        return 2;
    }
    if (threads < 1)
        threads = 1;
    openblas_set_num_threads(threads);
    job j;
    memset(&j, 0, sizeof j);
    j.f64 = !strcmp(argv[ai], "f64");
    j.op = argv[ai + 1];
    char **a = argv + ai + 2;
    int na = argc - ai - 2;
    j.batch = 1;
    size_t na_el, nb_el, nc_el;
    if (!strcmp(j.op, "gemm") && na == 3) {
        j.m = strtoull(a[0], 0, 10), j.n = strtoull(a[1], 0, 10),
        j.k = strtoull(a[2], 0, 10);
        na_el = j.m * j.k, nb_el = j.k * j.n, nc_el = j.m * j.n;
    } else if (!strcmp(j.op, "gemv_loop") && na == 3) {
        j.batch = strtoull(a[0], 0, 10), j.m = strtoull(a[1], 0, 10),
        j.k = strtoull(a[2], 0, 10);
        na_el = j.batch * j.m * j.k, nb_el = j.batch * j.k,
        nc_el = j.batch * j.m;
    } else if (!strcmp(j.op, "gemv") && na == 2) {
        j.m = strtoull(a[0], 0, 10), j.n = strtoull(a[1], 0, 10);
        na_el = j.m * j.n, nb_el = j.n, nc_el = j.m;
    } else if (!strcmp(j.op, "dot") && na == 1) {
        j.n = strtoull(a[0], 0, 10);
        na_el = j.n, nb_el = j.n, nc_el = 1;
    } else {
        fprintf(stderr, "peer_openblas: bad operation or argument count\n");
        return 2;
    }
    if (j.m > 2147483647u || j.n > 2147483647u || j.k > 2147483647u) {
        fprintf(stderr, "peer_openblas: size beyond BLAS int\n");
        return 2;
    }
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    int ones_b = !strcmp(j.op, "gemv") || !strcmp(j.op, "dot");
    j.a = make(j.f64, na_el, &seed, 0);
    j.b = make(j.f64, nb_el, &seed, ones_b);
    j.c = make(j.f64, nc_el, &seed, 0);

    ps_timing t;
    if (ps_time(run_once, &j, &t) != 0) {
        printf("{\"peer\": \"openblas\", \"error\": \"run failed\"}\n");
        return 1;
    }

    double u = j.f64 ? 1.1102230246251565e-16 : 5.9604644775390625e-08;
    double worst = 0;
    size_t nsample = nc_el < 256 ? nc_el : 256;
    for (size_t s = 0; s < nsample; s++) {
        size_t o = (size_t)(((double)s + 0.5) / (double)nsample *
                            (double)nc_el);
        double ref = 0, mag = 0;
        size_t terms;
        if (!strcmp(j.op, "gemm")) {
            terms = j.k;
            size_t r = o / j.n, col = o % j.n;
            for (size_t kk = 0; kk < j.k; kk++) {
                double v = get(j.a, j.f64, r * j.k + kk) *
                           get(j.b, j.f64, kk * j.n + col);
                ref += v, mag += fabs(v);
            }
        } else if (!strcmp(j.op, "gemv_loop")) {
            terms = j.k;
            size_t bi = o / j.m, r = o % j.m;
            for (size_t kk = 0; kk < j.k; kk++) {
                double v = get(j.a, j.f64, bi * j.m * j.k + r * j.k + kk) *
                           get(j.b, j.f64, bi * j.k + kk);
                ref += v, mag += fabs(v);
            }
        } else {
            /* gemv and dot with ones: a row sum, the whole sum */
            size_t base = !strcmp(j.op, "gemv") ? o * j.n : 0;
            terms = j.n;
            for (size_t i = 0; i < j.n; i++) {
                double v = get(j.a, j.f64, base + i);
                ref += v, mag += fabs(v);
            }
        }
        double bound = 2.0 * (double)(terms + 1) * u * mag + 1e-300;
        double err = fabs(get(j.c, j.f64, o) - ref) / bound;
        if (!(err <= 1.0)) {
            printf("{\"peer\": \"openblas\", \"error\": \"wrong result at "
                   "%zu\"}\n", o);
            return 1;
        }
        if (err > worst)
            worst = err;
    }
    const char *ct = getenv("OPENBLAS_CORETYPE");
    const char *l2 = getenv("OPENBLAS_L2_SIZE");
    printf("{\"peer\": \"openblas\", \"config\": \"%s\", \"corename\": "
           "\"%s\", \"threads\": %d, \"env_coretype\": \"%s\", "
           "\"env_l2_size\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", "
           "\"batch\": %zu, \"m\": %zu, \"n\": %zu, \"k\": %zu, ",
           openblas_get_config(), openblas_get_corename(),
           openblas_get_num_threads(), ct ? ct : "", l2 ? l2 : "",
           j.f64 ? "f64" : "f32", j.op, j.batch, j.m, j.n, j.k);
    ps_print_json(stdout, &t);
    printf(", \"checked\": %zu, \"max_norm_err\": %.3g}\n", nsample,
           worst);
    free(j.a);
    free(j.b);
    free(j.c);
    return 0;
}
