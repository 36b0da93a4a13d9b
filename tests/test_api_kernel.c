/*
 * test_api_kernel.c - kernels loaded into the caller's own OpenCL context
 * (et_cl_kernel_load / et_cl_kernel_launch) on the PoCL device: the test
 * makes its context, queue and buffers as a library user would and checks
 * the output against a host loop. Trials are put into temporary databases
 * with the internal database API (tuning would take minutes); the CUDA
 * loader is checked through the fake libcuda (build/tests/fake_cuda.so).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/cuda/nvrtc.h"
#include "measure/user_kernel.h"
#include "tests/so/fake_cuda.h"
#include "tests/suite_device.h"

#include <CL/cl.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* x=4, i=k=j=16: small enough for valgrind, large enough for tiles */
#define EINSUM "xik,kj->xij"
#define SHAPE "x=4,i=16,k=16,j=16"
enum { X = 4, I = 16, K = 16, J = 16 };

typedef struct cl_fixture {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_mem a, b, c;
    float ha[X * I * K], hb[K * J], ref[X * I * J], tol[X * I * J];
    et_problem *p;
    char dir[64];
    char db[128];
} cl_fixture;

static int setup(void **state)
{
    cl_fixture *f = calloc(1, sizeof *f);
    cl_platform_id plat[8];
    cl_uint np = 0;
    cl_int rc;
    if (!f || clGetPlatformIDs(8, plat, &np) != CL_SUCCESS || np == 0)
        return -1;
    for (cl_uint i = 0; i < np && !f->dev; i++)
        if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &f->dev, NULL) !=
            CL_SUCCESS)
            f->dev = NULL;
    if (!f->dev)
        return -1;
    f->ctx = clCreateContext(NULL, 1, &f->dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return -1;
    f->q = clCreateCommandQueue(f->ctx, f->dev, 0, &rc);
    if (rc != CL_SUCCESS)
        return -1;
    srand(42);
    for (int n = 0; n < X * I * K; n++)
        f->ha[n] = (float)((double)rand() / RAND_MAX - 0.5);
    for (int n = 0; n < K * J; n++)
        f->hb[n] = (float)((double)rand() / RAND_MAX - 0.5);
    for (int x = 0; x < X; x++)
        for (int i = 0; i < I; i++)
            for (int j = 0; j < J; j++) {
                double s = 0, m = 0;
                for (int k = 0; k < K; k++) {
                    double t = (double)f->ha[(x * I + i) * K + k] *
                               f->hb[k * J + j];
                    s += t;
                    m += fabs(t);
                }
                f->ref[(x * I + i) * J + j] = (float)s;
                /* f32 accumulation: a few ulps per term */
                f->tol[(x * I + i) * J + j] = (float)(m * 1e-5 + 1e-7);
            }
    f->a = clCreateBuffer(f->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof f->ha, f->ha, &rc);
    f->b = clCreateBuffer(f->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof f->hb, f->hb, &rc);
    f->c = clCreateBuffer(f->ctx, CL_MEM_READ_WRITE, sizeof f->ref, NULL,
                          &rc);
    if (!f->a || !f->b || !f->c)
        return -1;
    et_diag d;
    if (et_problem_init(EINSUM, SHAPE, "f32", &f->p, &d) != ET_OK)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/et_apik_XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    cl_fixture *f = *state;
    clReleaseMemObject(f->a);
    clReleaseMemObject(f->b);
    clReleaseMemObject(f->c);
    clReleaseCommandQueue(f->q);
    clReleaseContext(f->ctx);
    et_problem_free(f->p);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* Fills buffer m with a pattern that is no valid result (NaNs). */
static void poison(cl_fixture *f, cl_mem m)
{
    const cl_uchar ff = 0xFF;
    assert_int_equal(clEnqueueFillBuffer(f->q, m, &ff, 1, 0, sizeof f->ref,
                                         0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
}

/* Reads m and compares it with the host loop's result. */
static void check_output(cl_fixture *f, cl_mem m)
{
    float got[X * I * J];
    assert_int_equal(clEnqueueReadBuffer(f->q, m, CL_TRUE, 0, sizeof got,
                                         got, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int n = 0; n < X * I * J; n++) {
        if (!(fabsf(got[n] - f->ref[n]) <= f->tol[n]))
            fail_msg("element %d: %g, expected %g", n, got[n], f->ref[n]);
    }
}

/* Records a verified trial of einsum/shape with opts for the device info
 * describes, as a tuning run would. */
static void record_ok(const char *db_path, const et_device_info *info,
                      const char *einsum, const char *shape,
                      const char *opts)
{
    et_error err = {{0}};
    et_diag d;
    et_db *db = NULL;
    et_einsum *e = calloc(1, sizeof *e);
    et_db_trial *t = calloc(1, sizeof *t);
    assert_non_null(e);
    assert_non_null(t);
    int64_t dev_id = 0, e_id = 0;
    assert_int_equal(et_db_open(db_path, &db, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, info, &dev_id, &err), ET_OK);
    assert_int_equal(et_einsum_from_strings(einsum, shape, "f32", e, &d),
                     ET_OK);
    assert_int_equal(et_db_einsum_id(db, e, &e_id, &err), ET_OK);
    assert_int_equal(et_db_trial_init(t, e_id, e, dev_id, opts, NULL, NULL,
                                      &err),
                     ET_OK);
    t->outcome = ET_OUTCOME_OK;
    t->median_s = t->low_s = t->high_s = 1e-5;
    t->runs = 5;
    t->verify_trials = 3;
    snprintf(t->kernel_name, sizeof t->kernel_name, "recorded");
    assert_int_equal(et_db_trial_record(db, t, NULL, &err), ET_OK);
    et_db_close(db);
    free(t);
    free(e);
}

static void test_load_launch_event(void **state)
{
    cl_fixture *f = *state;
    et_load_options o = {.db = f->db, .opts = "LOCAL(i,8) UPCAST(j,4)"};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    assert_non_null(k);
    assert_non_null(strstr(et_loaded_kernel_opts(k), "LOCAL(i,8)"));
    assert_true(et_loaded_kernel_name(k)[0] != '\0');
    assert_int_equal(et_loaded_kernel_zero_bytes(k), 0);
    poison(f, f->c);
    cl_mem in[2] = {f->a, f->b};
    cl_event ev = NULL;
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, NULL, &ev,
                                         &d),
                     ET_OK);
    assert_non_null(ev);
    assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
    cl_int exec = -1;
    assert_int_equal(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                    sizeof exec, &exec, NULL),
                     CL_SUCCESS);
    assert_int_equal(exec, CL_COMPLETE);
    clReleaseEvent(ev);
    check_output(f, f->c);

    /* the untransformed kernel, without an event */
    et_loaded_kernel_free(k);
    o.opts = "";
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    assert_string_equal(et_loaded_kernel_opts(k), "");
    poison(f, f->c);
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, NULL, NULL,
                                         &d),
                     ET_OK);
    check_output(f, f->c);
    et_loaded_kernel_free(k);
}

static void test_split_zeroes_output(void **state)
{
    cl_fixture *f = *state;
    et_load_options o = {.opts = "SPLIT(k,4)"};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    assert_int_equal(et_loaded_kernel_zero_bytes(k), sizeof f->ref);
    poison(f, f->c);
    cl_mem in[2] = {f->a, f->b};
    /* twice: the second launch must not add onto the first's result */
    for (int rep = 0; rep < 2; rep++) {
        cl_event ev = NULL;
        assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, NULL,
                                             &ev, &d),
                         ET_OK);
        assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
        check_output(f, f->c);
    }
    et_loaded_kernel_free(k);
}

static void test_sizes_and_arguments(void **state)
{
    cl_fixture *f = *state;
    et_load_options o = {.opts = "UPCAST(j,2)"};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    cl_mem in[2] = {f->a, f->b};
    int n = et_problem_n_indices(f->p);
    int64_t sizes[8];
    for (int i = 0; i < n; i++)
        sizes[i] = et_problem_index_size(f->p, i);
    /* the problem's own sizes are fine */
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes, NULL,
                                         &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    check_output(f, f->c);
    /* others are refused, naming the index */
    sizes[n - 1] *= 2;
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes, NULL,
                                         &d),
                     ET_ERR_UNSUPPORTED);
    char want[32];
    snprintf(want, sizeof want, "sizes[%d]", n - 1);
    assert_non_null(strstr(d.msg, want));
    assert_non_null(strstr(d.msg, et_problem_index_name(f->p, n - 1)));
    /* a wrong number of inputs */
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 1, NULL, NULL,
                                         &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "2 input buffers"));
    et_loaded_kernel_free(k);

    /* refused and malformed opts */
    o.opts = "UPCAST(k,4)";
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_ERR_REFUSED);
    assert_null(k);
    assert_int_equal(d.input, ET_INPUT_OPTS);
    o.opts = "UPCAST(j,";
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_OPTS);
}

static void test_unknown_device_then_lookup(void **state)
{
    cl_fixture *f = *state;
    et_load_options o = {.db = f->db};
    et_loaded_kernel *k = NULL;
    et_diag d;
    et_device_info info;
    et_error err;
    assert_int_equal(et_opencl_device_info(f->dev, &info, &err), ET_OK);
    /* an empty database knows neither the device nor the einsum */
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_ERR_NOT_FOUND);
    assert_null(k);
    assert_non_null(strstr(d.msg, "no verified kernel known"));
    assert_non_null(strstr(d.msg, info.name));

    /* a trial tuned under renamed letters: its opts come back in ours */
    record_ok(f->db, &info, "zab,bc->zac", "z=4,a=16,b=16,c=16",
              "LOCAL(a,4) UPCAST(c,2)");
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    assert_non_null(strstr(et_loaded_kernel_opts(k), "LOCAL(i,4)"));
    assert_non_null(strstr(et_loaded_kernel_opts(k), "UPCAST(j,2)"));
    cl_mem in[2] = {f->a, f->b};
    poison(f, f->c);
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, NULL, NULL,
                                         &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    check_output(f, f->c);
    et_loaded_kernel_free(k);

    /* the same database on another (unknown) device name: no answer */
    snprintf(info.name, sizeof info.name, "another device");
    record_ok(f->db, &info, EINSUM, SHAPE, "UPCAST(j,4)");
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    assert_null(strstr(et_loaded_kernel_opts(k), "UPCAST(j,4)"));
    et_loaded_kernel_free(k);
}

/* Compares the first x batches of m with the host loop's result. */
static void check_batches(cl_fixture *f, cl_mem m, int x)
{
    float got[X * I * J];
    assert_int_equal(clEnqueueReadBuffer(f->q, m, CL_TRUE, 0, sizeof got,
                                         got, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int n = 0; n < x * I * J; n++)
        if (!(fabsf(got[n] - f->ref[n]) <= f->tol[n]))
            fail_msg("x=%d: element %d: %g, expected %g", x, n, got[n],
                     f->ref[n]);
    /* past them nothing was written: the poison is still there */
    for (int n = x * I * J; n < X * I * J; n++)
        if (!isnan(got[n]))
            fail_msg("x=%d: element %d written: %g", x, n, got[n]);
}

/* An open axis: a problem with x=*, and a concrete problem answered by an
 * entry tuned with x=*: the launch takes any x. */
static void test_open_axis(void **state)
{
    cl_fixture *f = *state;
    et_loaded_kernel *k = NULL;
    et_diag d;
    cl_mem in[2] = {f->a, f->b};
    et_problem *po = NULL;
    assert_int_equal(et_problem_init(EINSUM, "x=*,i=16,k=16,j=16", "f32",
                                     &po, &d),
                     ET_OK);
    assert_int_equal(et_problem_index_open(po, 0), 1);
    et_load_options o = {.opts = "LOCAL(x,3) UPCAST(j,2)"};
    assert_int_equal(et_cl_kernel_load(po, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    int64_t sizes[4] = {1, I, J, K};
    for (int x = 1; x <= X; x++) {
        sizes[0] = x;
        poison(f, f->c);
        assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes,
                                             NULL, &d),
                         ET_OK);
        assert_int_equal(clFinish(f->q), CL_SUCCESS);
        check_batches(f, f->c, x);
    }
    /* the other sizes are still compiled in */
    sizes[1] = 8;
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes, NULL,
                                         &d),
                     ET_ERR_UNSUPPORTED);
    sizes[0] = 0;
    sizes[1] = I;
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes, NULL,
                                         &d),
                     ET_ERR_INPUT);
    et_loaded_kernel_free(k);
    et_problem_free(po);

    /* the concrete problem x=4, answered by the open entry */
    char db[160];
    snprintf(db, sizeof db, "%s/open.db", f->dir);
    et_device_info info;
    et_error err;
    assert_int_equal(et_opencl_device_info(f->dev, &info, &err), ET_OK);
    record_ok(db, &info, EINSUM, "x=*,i=16,k=16,j=16", "UPCAST(x,3)");
    et_load_options ob = {.db = db, .exact = 1};
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &ob, &k, &d),
                     ET_OK);
    assert_string_equal(et_loaded_kernel_opts(k), "UPCAST(x,3)");
    assert_true(strncmp(et_loaded_kernel_name(k), "r_n_", 4) == 0);
    poison(f, f->c);
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, NULL, NULL,
                                         &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    check_output(f, f->c);
    sizes[0] = 2;
    poison(f, f->c);
    assert_int_equal(et_cl_kernel_launch(k, f->q, f->c, in, 2, sizes, NULL,
                                         &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    check_batches(f, f->c, 2);
    et_loaded_kernel_free(k);
}

typedef struct thread_arg {
    cl_fixture *f;
    et_loaded_kernel *k;
    cl_command_queue q;
    cl_mem out;
    int failures;
} thread_arg;

static void *launcher(void *varg)
{
    thread_arg *t = varg;
    cl_mem in[2] = {t->f->a, t->f->b};
    for (int n = 0; n < 25; n++) {
        et_diag d;
        cl_event ev = NULL;
        if (et_cl_kernel_launch(t->k, t->q, t->out, in, 2, NULL, &ev, &d) !=
                ET_OK ||
            clWaitForEvents(1, &ev) != CL_SUCCESS)
            t->failures++;
        if (ev)
            clReleaseEvent(ev);
    }
    return NULL;
}

static void test_two_threads(void **state)
{
    cl_fixture *f = *state;
    et_load_options o = {.opts = "SPLIT(k,2)"};
    et_loaded_kernel *k = NULL;
    et_diag d;
    cl_int rc;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    thread_arg t[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (thread_arg){f, k, NULL, NULL, 0};
        t[i].q = clCreateCommandQueue(f->ctx, f->dev, 0, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        t[i].out = clCreateBuffer(f->ctx, CL_MEM_READ_WRITE, sizeof f->ref,
                                  NULL, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        poison(f, t[i].out);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, launcher, &t[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(t[i].failures, 0);
        check_output(f, t[i].out);
        clReleaseMemObject(t[i].out);
        clReleaseCommandQueue(t[i].q);
    }
    et_loaded_kernel_free(k);
}

/* ---- CUDA through the fake driver -------------------------------------- */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_release_fn)(int);
typedef int (*cu_set_fn)(void *);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_stream_fn)(void **, unsigned);
typedef int (*cu_stream_destroy_fn)(void *);

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fail_msg("fake_cuda.so lacks %s", name);
    return p;
}

static void test_cuda_fake(void **state)
{
    (void)state;
    et_error err;
    if (!et_cuda_have_nvrtc(&err)) {
        print_message("skipped: %s\n", err.msg);
        skip();
    }
    const char *bd = getenv("ET_BUILD_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fake_cuda.so", bd ? bd : "build");
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        fail_msg("cannot load %s: %s", path, dlerror());
    setenv("ET_LIBCUDA", path, 1);
    fake_cuda_log_get_fn log_get =
        (fake_cuda_log_get_fn)sym(lib, "fake_cuda_log_get");
    fake_cuda_log_reset_fn log_reset =
        (fake_cuda_log_reset_fn)sym(lib, "fake_cuda_log_reset");
    cu_init_fn init = (cu_init_fn)sym(lib, "cuInit");
    cu_retain_fn retain = (cu_retain_fn)sym(lib, "cuDevicePrimaryCtxRetain");
    cu_release_fn release =
        (cu_release_fn)sym(lib, "cuDevicePrimaryCtxRelease_v2");
    cu_set_fn set_current = (cu_set_fn)sym(lib, "cuCtxSetCurrent");
    cu_alloc_fn alloc = (cu_alloc_fn)sym(lib, "cuMemAlloc_v2");
    cu_free_fn mfree = (cu_free_fn)sym(lib, "cuMemFree_v2");
    cu_stream_fn stream_create = (cu_stream_fn)sym(lib, "cuStreamCreate");
    cu_stream_destroy_fn stream_destroy =
        (cu_stream_destroy_fn)sym(lib, "cuStreamDestroy_v2");

    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    /* the fake driver runs no kernel: nothing it builds could pass the
     * check on the device before it is handed out (no_verify) */
    et_load_options o = {.opts = "SPLIT(k,4)", .no_verify = 1};
    et_loaded_kernel *k = NULL;

    /* no current context in this thread: a clear error */
    assert_int_equal(init(0), 0);
    assert_int_equal(set_current(NULL), 0);
    assert_int_equal(et_cu_kernel_load(p, 0, &o, &k, &d), ET_ERR_DEVICE);
    assert_non_null(strstr(d.msg, "no current CUDA context"));
    /* no such device */
    assert_int_equal(et_cu_kernel_load(p, 5, &o, &k, &d), ET_ERR_DEVICE);
    assert_non_null(strstr(d.msg, "no CUDA device 5"));

    void *ctx = NULL, *stream = NULL;
    assert_int_equal(retain(&ctx, 0), 0);
    assert_int_equal(set_current(ctx), 0);
    assert_int_equal(stream_create(&stream, 0), 0);
    unsigned long long out = 0, in[2] = {0, 0};
    assert_int_equal(alloc(&out, X * I * J * sizeof(float)), 0);
    assert_int_equal(alloc(&in[0], X * I * K * sizeof(float)), 0);
    assert_int_equal(alloc(&in[1], K * J * sizeof(float)), 0);

    assert_int_equal(et_cu_kernel_load(p, 0, &o, &k, &d), ET_OK);
    assert_int_equal(et_loaded_kernel_zero_bytes(k),
                     X * I * J * sizeof(float));
    log_reset();
    assert_int_equal(et_cu_kernel_launch(k, stream, out, in, 2, NULL, &d),
                     ET_OK);
    const fake_cuda_log *l = log_get();
    assert_int_equal(l->launches, 1);
    assert_int_equal(l->nparams, 3);
    assert_true(l->params[0] == out);
    assert_true(l->params[1] == in[0]);
    assert_true(l->params[2] == in[1]);
    assert_true(l->launch_stream == (unsigned long long)(uintptr_t)stream);
    assert_int_equal(l->memsets, 1);
    assert_true(l->memset_ptr == out);
    assert_true(l->memset_bytes == X * I * J * sizeof(float));
    assert_true(l->memset_stream == (unsigned long long)(uintptr_t)stream);
    assert_int_equal(l->memset_before_launch, 0);
    /* the wrong launcher for this kernel */
    assert_int_equal(et_cl_kernel_launch(k, NULL, NULL, NULL, 2, NULL, NULL,
                                         &d),
                     ET_ERR_INPUT);
    et_loaded_kernel_free(k);
    k = NULL;

    /* the database's best for the fake device */
    char dir[] = "/tmp/et_apik_cu_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[128];
    snprintf(db, sizeof db, "%s/t.db", dir);
    et_cu_user_kernel *u = NULL;
    et_device_info info;
    assert_int_equal(et_cu_user_open(0, &u, &info, &err), ET_OK);
    et_cu_user_free(u);
    record_ok(db, &info, EINSUM, SHAPE, "LOCAL(i,4) UPCAST(j,2)");
    o.opts = NULL;
    o.db = db;
    assert_int_equal(et_cu_kernel_load(p, 0, &o, &k, &d), ET_OK);
    assert_non_null(strstr(et_loaded_kernel_opts(k), "LOCAL(i,4)"));
    assert_int_equal(et_loaded_kernel_zero_bytes(k), 0);
    log_reset();
    assert_int_equal(et_cu_kernel_launch(k, NULL, out, in, 2, NULL, &d),
                     ET_OK);
    assert_int_equal(l->launches, 1);
    assert_int_equal(l->memsets, 0);
    assert_true(l->launch_stream == 0);
    et_loaded_kernel_free(k);
    assert_int_equal(l->modules_live, 0);

    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    mfree(out);
    mfree(in[0]);
    mfree(in[1]);
    stream_destroy(stream);
    set_current(NULL);
    release(0);
    unsetenv("ET_LIBCUDA");
    et_problem_free(p);
    dlclose(lib);
}

int main(void)
{
    const struct CMUnitTest cl_tests[] = {
        cmocka_unit_test(test_load_launch_event),
        cmocka_unit_test(test_split_zeroes_output),
        cmocka_unit_test(test_sizes_and_arguments),
        cmocka_unit_test(test_unknown_device_then_lookup),
        cmocka_unit_test(test_open_axis),
        cmocka_unit_test(test_two_threads),
    };
    const struct CMUnitTest cu_tests[] = {
        cmocka_unit_test(test_cuda_fake),
    };
    /* the OpenCL group keeps OpenCL; the fake driver's runs anywhere */
    int failed = 0;
    if (td_opencl_only("kernels in the caller's own OpenCL context"))
        failed = cmocka_run_group_tests_name("api_kernel_opencl", cl_tests,
                                             setup, teardown);
    failed += cmocka_run_group_tests_name("api_kernel_cuda_fake", cu_tests,
                                          NULL, NULL);
    return failed ? 1 : 0;
}
