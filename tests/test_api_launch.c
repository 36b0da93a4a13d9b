/*
 * test_api_launch.c - launches of kernels loaded into the caller's own
 * context are memory-safe for the caller: a launch on buffers too short
 * for the kernel at the launch's sizes (one element short, for the output
 * and for each input in turn, an open axis at a size larger than the
 * buffers were made for, a CUDA pointer into the middle of an allocation)
 * is refused with ET_ERR_INPUT naming the operand, its bytes and the bytes
 * needed, and writes nothing (not even SPLIT's zeroing); a queue or a
 * buffer of another OpenCL context is refused with words saying so.
 *
 * OpenCL runs on the PoCL device, as a library user would (its own
 * context, queue and buffers). CUDA runs through the fake driver
 * (build/tests/fake_cuda.so), whose memory is this process's heap: told
 * the bytes the kernel touches (fake_cuda_touch), each launch writes the
 * output's and reads the inputs' as the kernel would. Under `make asan`
 * the fake makes those accesses whatever the allocation's size, so were
 * the library's check missing, the launch on the short buffer would be an
 * AddressSanitizer report here; in the plain build the fake counts the
 * overrun, and the test fails on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "measure/cuda/nvrtc.h"
#include "tests/so/fake_cuda.h"
#include "tests/suite_device.h"

#include <CL/cl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EINSUM "xik,kj->xij"
#define SHAPE "x=2,i=8,k=8,j=8"
#define OPEN_SHAPE "x=*,i=8,k=8,j=8"
enum { X = 2, I = 8, K = 8, J = 8 };
/* elements of the output, input 0 and input 1 at x = X */
static const size_t g_elems[3] = {X * I * J, X * I * K, K * J};
static const unsigned char SENTINEL = 0x5A;

typedef struct cl_fix {
    cl_device_id dev;
    cl_context ctx, ctx2;
    cl_command_queue q, q2;
    et_problem *p, *po;
} cl_fix;

static int cl_setup(void **state)
{
    cl_fix *f = calloc(1, sizeof *f);
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
    f->ctx2 = clCreateContext(NULL, 1, &f->dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return -1;
    f->q = clCreateCommandQueue(f->ctx, f->dev, 0, &rc);
    if (rc != CL_SUCCESS)
        return -1;
    f->q2 = clCreateCommandQueue(f->ctx2, f->dev, 0, &rc);
    if (rc != CL_SUCCESS)
        return -1;
    et_diag d;
    if (et_problem_init(EINSUM, SHAPE, "f32", &f->p, &d) != ET_OK ||
        et_problem_init(EINSUM, OPEN_SHAPE, "f32", &f->po, &d) != ET_OK)
        return -1;
    *state = f;
    return 0;
}

static int cl_teardown(void **state)
{
    cl_fix *f = *state;
    clReleaseCommandQueue(f->q);
    clReleaseCommandQueue(f->q2);
    clReleaseContext(f->ctx);
    clReleaseContext(f->ctx2);
    et_problem_free(f->p);
    et_problem_free(f->po);
    free(f);
    return 0;
}

/* A buffer of `bytes` in ctx, every byte SENTINEL. */
static cl_mem sentinel_buffer(cl_context ctx, size_t bytes)
{
    unsigned char *host = malloc(bytes);
    assert_non_null(host);
    memset(host, SENTINEL, bytes);
    cl_int rc;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, host, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    free(host);
    return m;
}

/* Every byte of m is still SENTINEL: nothing was written. */
static void assert_untouched(cl_command_queue q, cl_mem m, size_t bytes)
{
    unsigned char *host = malloc(bytes);
    assert_non_null(host);
    assert_int_equal(clFinish(q), CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(q, m, CL_TRUE, 0, bytes, host, 0,
                                         NULL, NULL),
                     CL_SUCCESS);
    for (size_t b = 0; b < bytes; b++)
        if (host[b] != SENTINEL)
            fail_msg("byte %zu written (0x%02x) by a refused launch", b,
                     host[b]);
    free(host);
}

static const char *const g_names[3] = {"the output (out)", "input 0 (in[0])",
                                       "input 1 (in[1])"};

/* The message of a refused short buffer: operand, bytes held, needed. */
static void assert_short_message(const et_diag *d, int a, size_t have,
                                 size_t need)
{
    char want[128];
    assert_int_equal(d->status, ET_ERR_INPUT);
    assert_non_null(strstr(d->msg, g_names[a]));
    snprintf(want, sizeof want, "has %zu bytes", have);
    if (!strstr(d->msg, want))
        fail_msg("'%s' not in: %s", want, d->msg);
    snprintf(want, sizeof want, "%s %zu (", a == 0 ? "writes" : "reads",
             need);
    if (!strstr(d->msg, want))
        fail_msg("'%s' not in: %s", want, d->msg);
}

/* Each operand in turn one element short, for a kernel of opts. */
static void short_operands(cl_fix *f, const char *opts)
{
    et_load_options o = {.opts = opts};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    for (int a = 0; a < 3; a++) {
        size_t bytes[3];
        cl_mem m[3];
        for (int b = 0; b < 3; b++) {
            bytes[b] = g_elems[b] * sizeof(float) - (b == a ? 4 : 0);
            m[b] = sentinel_buffer(f->ctx, bytes[b]);
        }
        cl_event ev = (cl_event)&d; /* must come back NULL */
        assert_int_equal(et_cl_kernel_launch(k, f->q, m[0], &m[1], 2, NULL,
                                             &ev, &d),
                         ET_ERR_INPUT);
        assert_null(ev);
        assert_short_message(&d, a, bytes[a], g_elems[a] * sizeof(float));
        assert_int_equal(d.input, ET_INPUT_OPTION);
        /* nothing ran: the output (SPLIT zeroes it first) and the inputs
         * are as they were */
        for (int b = 0; b < 3; b++) {
            assert_untouched(f->q, m[b], bytes[b]);
            clReleaseMemObject(m[b]);
        }
    }
    /* buffers larger than needed are fine */
    cl_mem m[3];
    for (int b = 0; b < 3; b++)
        m[b] = sentinel_buffer(f->ctx, g_elems[b] * sizeof(float) + 64);
    assert_int_equal(et_cl_kernel_launch(k, f->q, m[0], &m[1], 2, NULL, NULL,
                                         &d),
                     ET_OK);
    assert_string_equal(d.msg, "");
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    for (int b = 0; b < 3; b++)
        clReleaseMemObject(m[b]);
    et_loaded_kernel_free(k);
}

static void test_cl_short_buffers(void **state)
{
    short_operands(*state, "");
}

static void test_cl_short_buffers_split(void **state)
{
    /* SPLIT zeroes the output before the launch: refused, it must not */
    short_operands(*state, "SPLIT(k,2)");
}

/* An open axis: the bytes needed follow the size given at launch. */
static void test_cl_open_axis_sizes(void **state)
{
    cl_fix *f = *state;
    et_load_options o = {.opts = "UPCAST(j,2)"};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->po, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    /* buffers for x = 3 */
    size_t bytes[3] = {3 * I * J * sizeof(float), 3 * I * K * sizeof(float),
                       K * J * sizeof(float)};
    cl_mem m[3];
    for (int b = 0; b < 3; b++)
        m[b] = sentinel_buffer(f->ctx, bytes[b]);
    int64_t sizes[4] = {3, I, J, K}; /* x, i, j, k: output's first */
    assert_int_equal(et_cl_kernel_launch(k, f->q, m[0], &m[1], 2, sizes,
                                         NULL, &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    sizes[0] = 1;
    assert_int_equal(et_cl_kernel_launch(k, f->q, m[0], &m[1], 2, sizes,
                                         NULL, &d),
                     ET_OK);
    assert_int_equal(clFinish(f->q), CL_SUCCESS);
    /* x = 4 needs more than the buffers hold: the output is named first */
    for (int b = 0; b < 3; b++) {
        clReleaseMemObject(m[b]);
        m[b] = sentinel_buffer(f->ctx, bytes[b]);
    }
    sizes[0] = 4;
    assert_int_equal(et_cl_kernel_launch(k, f->q, m[0], &m[1], 2, sizes,
                                         NULL, &d),
                     ET_ERR_INPUT);
    assert_short_message(&d, 0, bytes[0], 4 * I * J * sizeof(float));
    for (int b = 0; b < 3; b++) {
        assert_untouched(f->q, m[b], bytes[b]);
        clReleaseMemObject(m[b]);
    }
    et_loaded_kernel_free(k);
}

/* A queue or a buffer of another context: refused in words. */
static void test_cl_other_context(void **state)
{
    cl_fix *f = *state;
    et_load_options o = {.opts = ""};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cl_kernel_load(f->p, f->ctx, f->dev, &o, &k, &d),
                     ET_OK);
    cl_mem m[3], m2[3];
    for (int b = 0; b < 3; b++) {
        m[b] = sentinel_buffer(f->ctx, g_elems[b] * sizeof(float));
        m2[b] = sentinel_buffer(f->ctx2, g_elems[b] * sizeof(float));
    }
    /* the queue of another context */
    assert_int_equal(et_cl_kernel_launch(k, f->q2, m[0], &m[1], 2, NULL,
                                         NULL, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "the command queue q belongs to another "
                                  "OpenCL context"));
    assert_null(strstr(d.msg, "CL_INVALID"));
    /* buffers of another context, each in turn */
    for (int a = 0; a < 3; a++) {
        cl_mem use[3] = {m[0], m[1], m[2]};
        use[a] = m2[a];
        assert_int_equal(et_cl_kernel_launch(k, f->q, use[0], &use[1], 2,
                                             NULL, NULL, &d),
                         ET_ERR_INPUT);
        assert_non_null(strstr(d.msg, g_names[a]));
        assert_non_null(strstr(d.msg, "belongs to another OpenCL context"));
        assert_null(strstr(d.msg, "CL_INVALID"));
    }
    for (int b = 0; b < 3; b++) {
        assert_untouched(f->q, m[b], g_elems[b] * sizeof(float));
        assert_untouched(f->q2, m2[b], g_elems[b] * sizeof(float));
        clReleaseMemObject(m[b]);
        clReleaseMemObject(m2[b]);
    }
    et_loaded_kernel_free(k);
}

/* ---- CUDA through the fake driver ---------------------------------------- */

typedef struct cu_fix {
    void *lib;
    fake_cuda_log_get_fn log_get;
    fake_cuda_log_reset_fn log_reset;
    fake_cuda_touch_fn touch;
    int (*alloc)(unsigned long long *, size_t);
    int (*mfree)(unsigned long long);
    int (*set_current)(void *);
    int (*release)(int);
    et_problem *p;
} cu_fix;

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fprintf(stderr, "fake_cuda.so lacks %s\n", name);
    return p;
}

static int cu_setup(void **state)
{
    cu_fix *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    et_error err;
    if (!et_cuda_have_nvrtc(&err)) {
        fprintf(stderr, "no NVRTC (%s): the CUDA tests skip\n", err.msg);
        return 0;
    }
    const char *bd = getenv("ET_BUILD_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fake_cuda.so", bd ? bd : "build");
    f->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!f->lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    setenv("ET_LIBCUDA", path, 1);
    f->log_get = (fake_cuda_log_get_fn)sym(f->lib, "fake_cuda_log_get");
    f->log_reset = (fake_cuda_log_reset_fn)sym(f->lib, "fake_cuda_log_reset");
    f->touch = (fake_cuda_touch_fn)sym(f->lib, "fake_cuda_touch");
    f->alloc = (int (*)(unsigned long long *, size_t))sym(f->lib,
                                                          "cuMemAlloc_v2");
    f->mfree = (int (*)(unsigned long long))sym(f->lib, "cuMemFree_v2");
    f->set_current = (int (*)(void *))sym(f->lib, "cuCtxSetCurrent");
    f->release = (int (*)(int))sym(f->lib, "cuDevicePrimaryCtxRelease_v2");
    int (*init)(unsigned) = (int (*)(unsigned))sym(f->lib, "cuInit");
    int (*retain)(void **, int) =
        (int (*)(void **, int))sym(f->lib, "cuDevicePrimaryCtxRetain");
    if (!f->log_get || !f->log_reset || !f->touch || !f->alloc ||
        !f->mfree || !f->set_current || !f->release || !init || !retain)
        return -1;
    void *ctx = NULL;
    if (init(0) || retain(&ctx, 0) || f->set_current(ctx))
        return -1;
    et_diag d;
    if (et_problem_init(EINSUM, SHAPE, "f32", &f->p, &d) != ET_OK)
        return -1;
    return 0;
}

static int cu_teardown(void **state)
{
    cu_fix *f = *state;
    if (f->lib) {
        f->touch(NULL, 0);
        f->set_current(NULL);
        f->release(0);
        unsetenv("ET_LIBCUDA");
        dlclose(f->lib);
    }
    et_problem_free(f->p);
    free(f);
    return 0;
}

/* Every byte of the fake's allocation at ptr is the 0xA5 cuMemAlloc
 * fills it with: nothing was written. */
static void assert_fresh(unsigned long long ptr, size_t bytes)
{
    const unsigned char *mem = (const unsigned char *)(uintptr_t)ptr;
    for (size_t b = 0; b < bytes; b++)
        if (mem[b] != 0xA5)
            fail_msg("byte %zu written (0x%02x) by a refused launch", b,
                     mem[b]);
}

static void cu_short_operands(cu_fix *f, const char *opts)
{
    et_load_options o = {.opts = opts, .no_verify = 1};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cu_kernel_load(f->p, 0, &o, &k, &d), ET_OK);
    /* a launch touches what the kernel would */
    unsigned long long need[3];
    for (int b = 0; b < 3; b++)
        need[b] = g_elems[b] * sizeof(float);
    f->touch(need, 3);
    for (int a = 0; a < 3; a++) {
        unsigned long long m[3];
        size_t bytes[3];
        for (int b = 0; b < 3; b++) {
            bytes[b] = g_elems[b] * sizeof(float) - (b == a ? 4 : 0);
            assert_int_equal(f->alloc(&m[b], bytes[b]), 0);
        }
        f->log_reset();
        assert_int_equal(et_cu_kernel_launch(k, NULL, m[0], &m[1], 2, NULL,
                                             &d),
                         ET_ERR_INPUT);
        assert_short_message(&d, a, bytes[a], g_elems[a] * sizeof(float));
        const fake_cuda_log *l = f->log_get();
        assert_true(l->address_ranges > 0);
        assert_int_equal(l->launches, 0);
        assert_int_equal(l->memsets, 0);
        assert_int_equal(l->overruns, 0);
        for (int b = 0; b < 3; b++) {
            assert_fresh(m[b], bytes[b]);
            f->mfree(m[b]);
        }
    }
    /* the sizes the kernel needs: it runs, touching all of them */
    unsigned long long m[3];
    for (int b = 0; b < 3; b++)
        assert_int_equal(f->alloc(&m[b], g_elems[b] * sizeof(float)), 0);
    f->log_reset();
    assert_int_equal(et_cu_kernel_launch(k, NULL, m[0], &m[1], 2, NULL, &d),
                     ET_OK);
    const fake_cuda_log *l = f->log_get();
    assert_int_equal(l->launches, 1);
    assert_int_equal(l->touches, 1);
    assert_int_equal(l->overruns, 0);
    for (int b = 0; b < 3; b++)
        f->mfree(m[b]);
    f->touch(NULL, 0);
    et_loaded_kernel_free(k);
}

static void test_cu_short_buffers(void **state)
{
    cu_fix *f = *state;
    if (!f->lib)
        skip();
    cu_short_operands(f, "");
}

static void test_cu_short_buffers_split(void **state)
{
    cu_fix *f = *state;
    if (!f->lib)
        skip();
    cu_short_operands(f, "SPLIT(k,2)");
}

/* Pointers into an allocation count from where they point; a pointer the
 * context did not allocate is refused by name. */
static void test_cu_pointers(void **state)
{
    cu_fix *f = *state;
    if (!f->lib)
        skip();
    et_load_options o = {.opts = "", .no_verify = 1};
    et_loaded_kernel *k = NULL;
    et_diag d;
    assert_int_equal(et_cu_kernel_load(f->p, 0, &o, &k, &d), ET_OK);
    unsigned long long m[3];
    for (int b = 0; b < 3; b++)
        assert_int_equal(f->alloc(&m[b], g_elems[b] * sizeof(float)), 0);
    /* input 1 four bytes into its allocation: one element short */
    unsigned long long in[2] = {m[1], m[2] + 4};
    f->log_reset();
    assert_int_equal(et_cu_kernel_launch(k, NULL, m[0], in, 2, NULL, &d),
                     ET_ERR_INPUT);
    assert_short_message(&d, 2, g_elems[2] * sizeof(float) - 4,
                         g_elems[2] * sizeof(float));
    assert_int_equal(f->log_get()->launches, 0);
    /* host memory is no device pointer of the context */
    float host[K * J];
    in[1] = (unsigned long long)(uintptr_t)host;
    assert_int_equal(et_cu_kernel_launch(k, NULL, m[0], in, 2, NULL, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "input 1 (in[1])"));
    assert_non_null(strstr(d.msg, "not device memory"));
    assert_int_equal(f->log_get()->launches, 0);
    /* a null one, by name */
    assert_int_equal(et_cu_kernel_launch(k, NULL, 0, in, 2, NULL, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "'out'"));
    for (int b = 0; b < 3; b++)
        f->mfree(m[b]);
    et_loaded_kernel_free(k);
}

int main(void)
{
    const struct CMUnitTest cl_tests[] = {
        cmocka_unit_test(test_cl_short_buffers),
        cmocka_unit_test(test_cl_short_buffers_split),
        cmocka_unit_test(test_cl_open_axis_sizes),
        cmocka_unit_test(test_cl_other_context),
    };
    const struct CMUnitTest cu_tests[] = {
        cmocka_unit_test(test_cu_short_buffers),
        cmocka_unit_test(test_cu_short_buffers_split),
        cmocka_unit_test(test_cu_pointers),
    };
    /* the OpenCL group keeps OpenCL; the fake driver's runs anywhere */
    int failed = 0;
    if (td_opencl_only("launches in the caller's own OpenCL context"))
        failed = cmocka_run_group_tests_name("api_launch_opencl", cl_tests,
                                             cl_setup, cl_teardown);
    failed += cmocka_run_group_tests_name("api_launch_cuda_fake", cu_tests,
                                          cu_setup, cu_teardown);
    return failed ? 1 : 0;
}
