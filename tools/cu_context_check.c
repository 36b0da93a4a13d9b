/*
 * cu_context_check - a library user's program on a real CUDA device: it
 * makes the device's primary context current, allocates its own buffers
 * with the Driver API, loads tuned kernels into that context with
 * et_cu_kernel_load (checked on the device before they are handed out)
 * and launches them on its own stream with et_cu_kernel_launch, then
 * compares every output element with a host loop in double precision. A
 * launch on an output one element short must be refused (ET_ERR_INPUT)
 * without touching the device. Made to run under compute-sanitizer
 * (memcheck, racecheck), which then sees the library's own launches in a
 * context it does not own (tools/gpu-carry.sh does so on the GPU
 * machine).
 *
 *   cu_context_check [--device N] [OPTS ...]
 *
 * Each OPTS is one kernel's opts for xik,kj->xij at x=64, i=k=j=16 in f32
 * and f64 (default: "", "LOCAL(i,8) UPCAST(j,4)" and "SPLIT(k,4)", whose
 * launch zeroes the output first with cuMemsetD8Async on the stream). The
 * database is a scratch file in $TMPDIR, so nothing is read from or
 * written to the user's. Exit status 0 when every launch is right, 1 when
 * one is not, 3 when there is no CUDA device (said on stderr, "no GPU").
 */
#include "bench/cu_driver.h"
#include "eintune.h"

#include <math.h>
#include <stdint.h>
#include <unistd.h>

#define EINSUM "xik,kj->xij"
#define SHAPE "x=64,i=16,k=16,j=16"
enum { X = 64, I = 16, K = 16, J = 16 };

static unsigned long long g_seed = 0x9e3779b97f4a7c15ULL;

static double next(void)
{
    g_seed ^= g_seed << 13;
    g_seed ^= g_seed >> 7;
    g_seed ^= g_seed << 17;
    return (double)(g_seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* One kernel in one dtype: load, launch, compare; a short output refused.
 * 0 when right. */
static int check(cu_driver *d, CUstream s, int device, const char *db,
                 const char *opts, int f64)
{
    const char *dt = f64 ? "f64" : "f32";
    size_t es = f64 ? 8 : 4;
    const size_t n_a = (size_t)X * I * K, n_b = (size_t)K * J,
                 n_c = (size_t)X * I * J;
    et_problem *p = NULL;
    et_diag dg;
    if (et_problem_init(EINSUM, SHAPE, dt, &p, &dg) != ET_OK) {
        fprintf(stderr, "problem: %s\n", dg.msg);
        return 1;
    }
    et_load_options o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.opts = opts;
    et_loaded_kernel *k = NULL;
    if (et_cu_kernel_load(p, device, &o, &k, &dg) != ET_OK) {
        fprintf(stderr, "'%s' %s: et_cu_kernel_load: %s\n", opts, dt,
                dg.msg);
        et_problem_free(p);
        return 1;
    }
    double *ha = malloc(n_a * sizeof *ha), *hb = malloc(n_b * sizeof *hb);
    void *a = malloc(n_a * es), *b = malloc(n_b * es), *c = malloc(n_c * es);
    int bad = !ha || !hb || !a || !b || !c;
    for (size_t i = 0; !bad && i < n_a; i++) {
        ha[i] = next();
        if (f64)
            ((double *)a)[i] = ha[i];
        else
            ((float *)a)[i] = (float)ha[i], ha[i] = ((float *)a)[i];
    }
    for (size_t i = 0; !bad && i < n_b; i++) {
        hb[i] = next();
        if (f64)
            ((double *)b)[i] = hb[i];
        else
            ((float *)b)[i] = (float)hb[i], hb[i] = ((float *)b)[i];
    }
    CUdeviceptr da = 0, db_ = 0, dc = 0, dshort = 0;
    CUresult r = 0;
    if (!bad && ((r = d->MemAlloc(&da, n_a * es)) != 0 ||
                 (r = d->MemAlloc(&db_, n_b * es)) != 0 ||
                 (r = d->MemAlloc(&dc, n_c * es)) != 0 ||
                 (r = d->MemAlloc(&dshort, (n_c - 1) * es)) != 0 ||
                 (r = d->MemcpyHtoD(da, a, n_a * es)) != 0 ||
                 (r = d->MemcpyHtoD(db_, b, n_b * es)) != 0)) {
        fprintf(stderr, "device memory: %s\n", cu_error_text(d, r));
        bad = 1;
    }
    const unsigned long long in[2] = {da, db_};
    if (!bad) {
        /* the output first filled with NaN: an element never written
         * fails */
        memset(c, 0xff, n_c * es);
        if ((r = d->MemcpyHtoD(dc, c, n_c * es)) != 0 ||
            et_cu_kernel_launch(k, s, dc, in, 2, NULL, &dg) != ET_OK ||
            (r = d->StreamSynchronize(s)) != 0 ||
            (r = d->MemcpyDtoH(c, dc, n_c * es)) != 0) {
            fprintf(stderr, "'%s' %s: launch: %s\n", opts, dt,
                    r ? cu_error_text(d, r) : dg.msg);
            bad = 1;
        }
    }
    double u = f64 ? 0x1.0p-53 : 0x1.0p-24, worst = 0;
    for (size_t e = 0; !bad && e < n_c; e++) {
        size_t x = e / (I * J), i = (e / J) % I, j = e % J;
        double ref = 0, mag = 0;
        for (size_t kk = 0; kk < K; kk++) {
            double v = ha[(x * I + i) * K + kk] * hb[kk * J + j];
            ref += v, mag += fabs(v);
        }
        double got = f64 ? ((double *)c)[e] : ((float *)c)[e];
        double err = fabs(got - ref) / (2.0 * (K + 1) * u * mag + 1e-300);
        if (!(err <= 1.0)) {
            fprintf(stderr, "'%s' %s: element %zu: got %.17g, want %.17g\n",
                    opts, dt, e, got, ref);
            bad = 1;
        }
        worst = err > worst ? err : worst;
    }
    /* an output one element short: refused, nothing queued */
    if (!bad && et_cu_kernel_launch(k, s, dshort, in, 2, NULL, &dg) !=
                    ET_ERR_INPUT) {
        fprintf(stderr, "'%s' %s: a short output was not refused\n", opts,
                dt);
        bad = 1;
    }
    if (!bad)
        printf("ok  %-24s %s  %zu elements, max error %.3g of the bound, "
               "short output refused: %s\n",
               opts[0] ? opts : "(untransformed)", dt, n_c, worst, dg.msg);
    d->StreamSynchronize(s);
    if (da)
        d->MemFree(da);
    if (db_)
        d->MemFree(db_);
    if (dc)
        d->MemFree(dc);
    if (dshort)
        d->MemFree(dshort);
    et_loaded_kernel_free(k);
    et_problem_free(p);
    free(ha), free(hb), free(a), free(b), free(c);
    return bad;
}

int main(int argc, char **argv)
{
    int device = 0, ai = 1;
    if (argc > 2 && !strcmp(argv[1], "--device")) {
        device = atoi(argv[2]);
        ai = 3;
    }
    static const char *const dflt[] = {"", "LOCAL(i,8) UPCAST(j,4)",
                                       "SPLIT(k,4)"};
    const char *const *opts = ai < argc ? (const char *const *)argv + ai
                                        : dflt;
    int n_opts = ai < argc ? argc - ai : 3;

    cu_driver d;
    char why[512];
    int rc = cu_driver_open(&d, device, why, sizeof why);
    if (rc != 0) {
        fprintf(stderr, "cu_context_check: %s\n", why);
        return rc == -1 ? 3 : 1;
    }
    CUstream s = NULL;
    CUresult r = d.StreamCreate(&s, 0);
    if (r != 0) {
        fprintf(stderr, "cuStreamCreate: %s\n", cu_error_text(&d, r));
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    char db[512];
    snprintf(db, sizeof db, "%s/cu_context_check_%d.db",
             tmp && *tmp ? tmp : "/tmp", (int)getpid());
    printf("device %d: %s (driver %d)\n", device, d.name, d.version);
    int bad = 0;
    for (int i = 0; i < n_opts; i++)
        for (int f64 = 0; f64 < 2; f64++)
            bad |= check(&d, s, device, db, opts[i], f64);
    d.StreamDestroy(s);
    cu_driver_close(&d);
    static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char side[600];
        snprintf(side, sizeof side, "%s%s", db, ext[i]);
        unlink(side);
    }
    printf("%s\n", bad ? "FAILED" : "all launches right");
    return bad;
}
