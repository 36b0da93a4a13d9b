/*
 * consumer_cl.c - a program that uses an installed eintune as any library
 * user would: only <eintune.h>, built with
 *   cc consumer_cl.c $(pkg-config --cflags --libs eintune OpenCL)
 * (tests/test_install.c builds and runs it against a temporary PREFIX).
 *
 *   consumer_cl DB            tunes, cancels, looks up, then loads the best
 *                             kernel into its own OpenCL context and checks
 *                             its output against a host loop
 *   consumer_cl --codegen     only renders a kernel (no device, no worker:
 *                             for the statically linked build)
 *
 * Prints what it checked; exits 1 on any failure.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <eintune.h>

#include <CL/cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X = 64, I = 16, K = 16, J = 16 };

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            printf("FAILED: " __VA_ARGS__);                                 \
            printf(" (%s, line %d)\n", #cond, __LINE__);                    \
            failures++;                                                     \
        }                                                                   \
    } while (0)

typedef struct counter {
    int calls;
    int last_candidate;
    int stop_at; /* cancel after this many candidates; 0 never */
} counter;

static int on_progress(void *arg, const et_progress *pr)
{
    counter *c = arg;
    c->calls++;
    c->last_candidate = pr->candidate;
    return c->stop_at > 0 && c->calls >= c->stop_at;
}

static int codegen_only(void)
{
    et_problem *p = NULL;
    et_kernel_source *ks = NULL;
    et_diag d;
    if (et_problem_init("xik,kj->xij", "x=64,i=16,k=16,j=16", "f32", &p,
                        &d) != ET_OK ||
        et_codegen(p, "LOCAL(i,8) UPCAST(j,4)", ET_BACKEND_OPENCL, &ks,
                   &d) != ET_OK) {
        printf("FAILED: codegen: %s\n", d.msg);
        return 1;
    }
    printf("codegen: kernel %s, %zu bytes of OpenCL C\n", ks->name,
           strlen(ks->source));
    et_kernel_source_free(ks);
    et_problem_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--codegen"))
        return codegen_only();
    if (argc != 2) {
        fprintf(stderr, "usage: consumer_cl DB | --codegen\n");
        return 2;
    }
    const char *db = argv[1];
    et_diag d;
    et_problem *p = NULL;
    if (et_problem_init("xik,kj->xij", "x=64,i=16,k=16,j=16", "f32", &p,
                        &d) != ET_OK) {
        printf("FAILED: et_problem_init: %s\n", d.msg);
        return 1;
    }

    /* 1. a tuning run, counting the candidates its callback sees */
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.budget = 8;
    o.search = "random";
    o.seed = 3;
    counter c1 = {0, 0, 0};
    o.progress = on_progress;
    o.progress_arg = &c1;
    et_tune_summary s1;
    et_status st = et_tune(p, &o, &s1, &d);
    CHECK(st == ET_OK, "et_tune: %s: %s", et_status_str(st), d.msg);
    CHECK(s1.found, "et_tune found no verified kernel");
    CHECK(c1.calls == s1.evaluations + s1.cached,
          "progress saw %d candidates, the summary %d timed + %d cached",
          c1.calls, s1.evaluations, s1.cached);
    CHECK(c1.last_candidate == c1.calls, "last candidate number %d of %d",
          c1.last_candidate, c1.calls);
    CHECK(c1.calls > 3 && c1.calls <= 8, "%d candidates for budget 8",
          c1.calls);
    CHECK(!s1.cancelled, "the first run says cancelled");
    printf("tune: %d candidates seen by the callback (%d timed, %d cached, "
           "%d failed); best '%s' %.3g s\n",
           c1.calls, s1.evaluations, s1.cached, s1.failures, s1.opts,
           s1.time_s);

    /* 2. a run the callback cancels after 3 candidates */
    counter c2 = {0, 0, 3};
    o.progress_arg = &c2;
    o.seed = 4;
    et_tune_summary s2;
    st = et_tune(p, &o, &s2, &d);
    CHECK(st == ET_OK, "cancelled et_tune: %s: %s", et_status_str(st),
          d.msg);
    CHECK(c2.calls == 3, "the cancelled run went on to %d candidates",
          c2.calls);
    CHECK(s2.cancelled, "the cancelled run's summary says not cancelled "
          "(stop reason '%s')", s2.stop_reason);
    printf("cancel: stopped after %d candidates (stop reason '%s')\n",
           c2.calls, s2.stop_reason);

    /* 3. the database's answer */
    et_best_info bi;
    int found = 0;
    st = et_best_lookup(p, NULL, db, &bi, &found, &d);
    CHECK(st == ET_OK && found, "et_best_lookup: %s: %s", et_status_str(st),
          d.msg);
    printf("best: '%s' on %s (%s)\n", bi.opts, bi.device, bi.driver);

    /* 4. the best kernel in this program's own OpenCL context */
    cl_platform_id plat;
    cl_device_id dev;
    cl_int rc;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) !=
            CL_SUCCESS) {
        printf("FAILED: no OpenCL device\n");
        return 1;
    }
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    static float a[X * I * K], b[K * J], out[X * I * J];
    srand(1);
    for (int n = 0; n < X * I * K; n++)
        a[n] = (float)((double)rand() / RAND_MAX - 0.5);
    for (int n = 0; n < K * J; n++)
        b[n] = (float)((double)rand() / RAND_MAX - 0.5);
    cl_mem ma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               sizeof a, a, &rc);
    cl_mem mb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               sizeof b, b, &rc);
    cl_mem mc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof out, NULL, &rc);
    et_load_options lo = {.db = db};
    et_loaded_kernel *k = NULL;
    st = et_cl_kernel_load(p, ctx, dev, &lo, &k, &d);
    CHECK(st == ET_OK, "et_cl_kernel_load: %s: %s", et_status_str(st),
          d.msg);
    if (st == ET_OK) {
        CHECK(!strcmp(et_loaded_kernel_opts(k), bi.opts),
              "loaded '%s', the lookup said '%s'", et_loaded_kernel_opts(k),
              bi.opts);
        cl_mem in[2] = {ma, mb};
        cl_event ev = NULL;
        st = et_cl_kernel_launch(k, q, mc, in, 2, NULL, &ev, &d);
        CHECK(st == ET_OK && ev, "et_cl_kernel_launch: %s: %s",
              et_status_str(st), d.msg);
        if (ev) {
            CHECK(clWaitForEvents(1, &ev) == CL_SUCCESS, "clWaitForEvents");
            clReleaseEvent(ev);
        }
        CHECK(clEnqueueReadBuffer(q, mc, CL_TRUE, 0, sizeof out, out, 0,
                                  NULL, NULL) == CL_SUCCESS,
              "clEnqueueReadBuffer");
        double worst = 0;
        int bad = 0;
        for (int x = 0; x < X; x++)
            for (int i = 0; i < I; i++)
                for (int j = 0; j < J; j++) {
                    double s = 0, m = 0;
                    for (int kk = 0; kk < K; kk++) {
                        double t = (double)a[(x * I + i) * K + kk] *
                                   b[kk * J + j];
                        s += t;
                        m += fabs(t);
                    }
                    /* f32: relative to the sum of magnitudes */
                    double e = fabs(out[(x * I + i) * J + j] - s) /
                               (m > 0 ? m : 1);
                    if (!(e <= 1e-5))
                        bad++;
                    if (e > worst || e != e)
                        worst = e;
                }
        CHECK(bad == 0, "%d of %d elements off (worst relative error %g)",
              bad, X * I * J, worst);
        printf("launch: kernel %s ('%s') in our own context: %d elements "
               "match the host loop (worst relative error %.2g)\n",
               et_loaded_kernel_name(k), et_loaded_kernel_opts(k),
               X * I * J - bad, worst);
        et_loaded_kernel_free(k);
    }
    clReleaseMemObject(ma);
    clReleaseMemObject(mb);
    clReleaseMemObject(mc);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    et_problem_free(p);
    printf("%s\n", failures ? "consumer_cl: FAILED" : "consumer_cl: ok");
    return failures ? 1 : 0;
}
