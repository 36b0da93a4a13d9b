/*
 * test_measure.c - the device layer: specs, OpenCL on the PoCL CPU device,
 * CUDA through NVRTC (no GPU needed) and through a fake libcuda
 * (build/tests/fake_cuda.so, loaded via ET_LIBCUDA). The OpenCL tests keep
 * OpenCL whatever the suite's device (tests/suite_device.h).
 */
#include "measure/backend.h"
#include "measure/cuda/nvrtc.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/so/fake_cuda.h"
#include "tests/suite_device.h"

/* ---- helpers ----------------------------------------------------------- */

static const char saxpy_cl[] =
    "__kernel void saxpy(__global float *out, __global const float *x,\n"
    "                    __global const float *y)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = 2.0f * x[i] + y[i];\n"
    "}\n";

static const char dmul_cl[] =
    "__kernel void dmul(__global double *out, __global const double *a,\n"
    "                   __global const double *b)\n"
    "{\n"
    "    size_t i = get_global_id(1) * get_global_size(0) + "
    "get_global_id(0);\n"
    "    out[i] = a[i] * b[i] + 0.5;\n"
    "}\n";

static const char saxpy_cu[] =
    "extern \"C\" __global__ void saxpy(float *out, const float *x,\n"
    "                                   const float *y)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    out[i] = 2.0f * x[i] + y[i];\n"
    "}\n";

/* The OpenCL backend's tests: OpenCL C written by hand, PoCL's devices */
#define OPENCL_ONLY "the OpenCL backend, its kernels written in OpenCL C"

static et_device *open_ok(const char *spec)
{
    et_device *dev = NULL;
    et_error err = {{0}};
    et_status st = et_device_open(spec, &dev, &err);
    if (st != ET_OK)
        fail_msg("et_device_open(%s): %s: %s", spec ? spec : "NULL",
                 et_status_str(st), err.msg);
    assert_non_null(dev);
    return dev;
}

static et_buffer *alloc_ok(et_device *dev, size_t bytes)
{
    et_buffer *b = NULL;
    et_error err = {{0}};
    et_status st = et_buffer_alloc(dev, bytes, &b, &err);
    if (st != ET_OK)
        fail_msg("alloc %zu: %s", bytes, err.msg);
    return b;
}

static et_program *build_ok(et_device *dev, const char *src, const char *name)
{
    et_program *p = NULL;
    et_error err = {{0}};
    et_status st = et_program_build(dev, src, name, &p, &err);
    if (st != ET_OK)
        fail_msg("build %s: %s: %s", name, et_status_str(st), err.msg);
    return p;
}

static et_launch geom1(int64_t global, int64_t local)
{
    et_launch g = {0};
    g.ndim = 1;
    g.global[0] = global;
    g.global[1] = g.global[2] = 1;
    g.local[0] = local > 0 ? local : 1;
    g.local[1] = g.local[2] = 1;
    g.has_local = local > 0;
    return g;
}

/* ---- specs ------------------------------------------------------------- */

static void test_spec_parse(void **state)
{
    (void)state;
    et_device_spec s;
    et_error err = {{0}};

    assert_int_equal(et_device_spec_parse(NULL, &s, &err), ET_OK);
    assert_int_equal(s.backend, ET_BACKEND_OPENCL);
    assert_int_equal(s.kind, ET_SPEC_DEFAULT);

    assert_int_equal(et_device_spec_parse("opencl:3", &s, &err), ET_OK);
    assert_int_equal(s.kind, ET_SPEC_INDEX);
    assert_int_equal(s.index, 3);

    assert_int_equal(et_device_spec_parse("opencl:1:2", &s, &err), ET_OK);
    assert_int_equal(s.kind, ET_SPEC_PLATFORM_DEVICE);
    assert_int_equal(s.platform, 1);
    assert_int_equal(s.device, 2);

    assert_int_equal(et_device_spec_parse("opencl:gfx90a:sramecc+", &s, &err),
                     ET_OK);
    assert_int_equal(s.kind, ET_SPEC_NAME);
    assert_string_equal(s.name, "gfx90a:sramecc+");

    assert_int_equal(et_device_spec_parse("cuda:2", &s, &err), ET_OK);
    assert_int_equal(s.backend, ET_BACKEND_CUDA);
    assert_int_equal(s.index, 2);

    assert_int_equal(et_device_spec_parse("cuda", &s, &err), ET_OK);
    assert_int_equal(s.backend, ET_BACKEND_CUDA);
    assert_int_equal(s.kind, ET_SPEC_DEFAULT);

    static const char *const bad[] = {
        "opencl:",  "opencl:1:", "opencl:1:x", "opencl:-1", "opencl:+2",
        "opencl: ", "opencl:99999999999", "cuda:",  "cuda:x",
        "cuda:0:0", "cuda:-1",  "vulkan:0", "pthread", ":0", "OPENCL:0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        et_status st = et_device_spec_parse(bad[i], &s, &err);
        if (st != ET_ERR_INPUT)
            fail_msg("spec '%s' gave %s", bad[i], et_status_str(st));
        assert_non_null(strstr(err.msg, "malformed device spec"));
        et_device *dev = (et_device *)0x1;
        assert_int_equal(et_device_open(bad[i], &dev, &err), ET_ERR_INPUT);
        assert_null(dev);
    }
}

/* ---- OpenCL ------------------------------------------------------------ */

/*
 * PoCL's worker threads: pinned one per CPU (POCL_AFFINITY=1) when the
 * process may run on every CPU, left to the scheduler otherwise, and a
 * value the user set kept. Each case runs in a child process of its own,
 * before this process opened any device: the library decides once per
 * process, before PoCL starts. The child answers through its exit status
 * (no cmocka assertion runs there).
 */
enum { AFF_USER_ZERO, AFF_FREE, AFF_ONE_CPU };

/* Threads of this process allowed on exactly one CPU. */
static int pinned_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        cpu_set_t set;
        CPU_ZERO(&set);
        if (tid > 0 && sched_getaffinity(tid, sizeof set, &set) == 0 &&
            CPU_COUNT(&set) == 1)
            n++;
    }
    closedir(d);
    return n;
}

/* 0: as expected; 1-5: which expectation failed. */
static int affinity_child(int how, int ncpu)
{
    if (how == AFF_USER_ZERO)
        setenv("POCL_AFFINITY", "0", 1);
    else
        unsetenv("POCL_AFFINITY");
    if (how == AFF_ONE_CPU) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(ncpu - 1, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            return 1;
    }
    et_device *dev = NULL;
    et_error err = {{0}};
    if (et_device_open(NULL, &dev, &err) != ET_OK)
        return 2;
    const char *v = getenv("POCL_AFFINITY");
    int pinned = pinned_threads();
    et_device_close(dev);
    switch (how) {
    case AFF_USER_ZERO:
        return v && strcmp(v, "0") == 0 ? 0 : 3;
    case AFF_FREE:
        if (!v || strcmp(v, "1") != 0)
            return 3;
        /* PoCL honoured it: its workers are each on one CPU */
        return pinned >= 2 ? 0 : 4;
    default:
        return v ? 3 : 0;
    }
}

static void test_pocl_affinity(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    cpu_set_t have;
    CPU_ZERO(&have);
    assert_int_equal(sched_getaffinity(0, sizeof have, &have), 0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    bool free_here = online >= 2 && CPU_COUNT(&have) == online;
    for (int c = 0; free_here && c < online; c++)
        free_here = CPU_ISSET(c, &have);
    if (!free_here || getenv("POCL_MAX_PTHREAD_COUNT")) {
        print_message("this process is bound to some CPUs: skipped\n");
        skip();
    }
    static const char *const names[] = {"POCL_AFFINITY=0 set by the user",
                                        "every CPU free",
                                        "bound to one CPU"};
    for (int how = AFF_USER_ZERO; how <= AFF_ONE_CPU; how++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(affinity_child(how, (int)online));
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("%s: child ended with status %d (1 bind, 2 open, "
                     "3 POCL_AFFINITY, 4 workers not pinned)", names[how],
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}


static void test_open_default_and_limits(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    const et_device_info *in = &dev->info;
    const et_target *t = &in->target;
    assert_string_equal(dev->ops->name, "opencl");
    assert_int_equal(t->backend, ET_BACKEND_OPENCL);
    assert_true(strlen(in->name) > 0);
    assert_string_equal(in->spec, "opencl:0:0");
    assert_true(strlen(in->driver_version) > 0);
    assert_non_null(strstr(in->device_version, "OpenCL"));
    assert_true(t->max_work_group_size >= 1);
    for (int i = 0; i < 3; i++)
        assert_true(t->max_work_item_sizes[i] >= 1);
    assert_true(t->local_mem_bytes > 0);
    assert_true(t->global_mem_bytes > 0);
    assert_true(t->compute_units >= 1);
    assert_true(t->mem_base_addr_align >= 1);
    assert_int_equal(t->mem_base_addr_align & (t->mem_base_addr_align - 1),
                     0);
    assert_true(t->preferred_vector_width[ET_F32] >= 1);
    assert_true(t->preferred_vector_width[ET_F16] >= 1);
    if (strstr(in->device_version, "PoCL")) {
        assert_true(t->has_fp64);
        assert_true(t->preferred_vector_width[ET_F64] >= 1);
    }
    et_device_close(dev);
}

static void test_open_by_index_and_name(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *def = open_ok("");
    et_device *by_index = open_ok("opencl:0");
    et_device *by_pd = open_ok("opencl:0:0");
    assert_string_equal(def->info.name, by_index->info.name);
    assert_string_equal(def->info.name, by_pd->info.name);

    /* a middle part of the name, in upper case */
    char sub[64];
    const char *name = def->info.name;
    size_t len = strlen(name);
    size_t from = len > 4 ? 1 : 0;
    size_t n = len - from > 6 ? 6 : len - from;
    for (size_t i = 0; i < n; i++) {
        char ch = name[from + i];
        sub[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
    }
    sub[n] = '\0';
    char spec[96];
    /* a name must not start with a digit or a sign */
    if (sub[0] >= '0' && sub[0] <= '9')
        snprintf(spec, sizeof spec, "opencl:%s", name);
    else
        snprintf(spec, sizeof spec, "opencl:%s", sub);
    et_device *by_name = open_ok(spec);
    assert_string_equal(def->info.name, by_name->info.name);

    et_error err = {{0}};
    et_device *none = NULL;
    assert_int_equal(et_device_open("opencl:no-such-device-xyz", &none, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "no-such-device-xyz"));
    assert_int_equal(et_device_open("opencl:4096", &none, &err),
                     ET_ERR_INPUT);
    assert_int_equal(et_device_open("opencl:7:0", &none, &err),
                     ET_ERR_INPUT);
    assert_null(none);

    et_device_close(by_name);
    et_device_close(by_pd);
    et_device_close(by_index);
    et_device_close(def);
}

static void run_saxpy(et_device *dev, const char *src, int n, int64_t local)
{
    size_t bytes = (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(out);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 97) - 40.0f;
        y[i] = 0.25f * (float)(i % 13);
        out[i] = NAN;
    }
    et_buffer *bo = alloc_ok(dev, bytes), *bx = alloc_ok(dev, bytes),
              *by = alloc_ok(dev, bytes);
    et_error err = {{0}};
    assert_int_equal(et_buffer_write(dev, bx, 0, x, bytes, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, by, 0, y, bytes, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, bo, 0, out, bytes, &err), ET_OK);
    et_program *p = build_ok(dev, src, "saxpy");
    et_buffer *args[3] = {bo, bx, by};
    et_launch g = geom1(n, local);
    double secs = -1;
    et_status st = et_launch_kernel(dev, p, &g, args, NULL, 3, &secs, &err);
    if (st != ET_OK)
        fail_msg("launch: %s", err.msg);
    assert_true(isfinite(secs));
    assert_true(secs >= 0);
    assert_int_equal(et_buffer_read(dev, bo, 0, out, bytes, &err), ET_OK);
    for (int i = 0; i < n; i++)
        if (out[i] != 2.0f * x[i] + y[i])
            fail_msg("element %d: %g, expected %g", i, (double)out[i],
                     (double)(2.0f * x[i] + y[i]));
    et_program_free(dev, p);
    et_buffer_free(dev, bo);
    et_buffer_free(dev, bx);
    et_buffer_free(dev, by);
    free(x);
    free(y);
    free(out);
}

static void test_opencl_saxpy(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    run_saxpy(dev, saxpy_cl, 1024, 64);
    run_saxpy(dev, saxpy_cl, 1000, 0); /* runtime chooses the local size */
    et_device_close(dev);
}

static void test_opencl_fp64_2d(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    if (!dev->info.target.has_fp64) {
        et_device_close(dev);
        skip();
    }
    enum { W = 32, H = 24, N = W * H };
    double a[N], b[N], out[N];
    for (int i = 0; i < N; i++) {
        a[i] = (double)(i % 50) * 0.125;
        b[i] = (double)(i % 7) - 3.0;
        out[i] = NAN;
    }
    et_buffer *bo = alloc_ok(dev, sizeof out), *ba = alloc_ok(dev, sizeof a),
              *bb = alloc_ok(dev, sizeof b);
    et_error err = {{0}};
    assert_int_equal(et_buffer_write(dev, ba, 0, a, sizeof a, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, bb, 0, b, sizeof b, &err), ET_OK);
    et_program *p = build_ok(dev, dmul_cl, "dmul");
    et_launch g = {.ndim = 2,
                   .global = {W, H, 1},
                   .local = {8, 4, 1},
                   .has_local = true};
    et_buffer *args[3] = {bo, ba, bb};
    if (et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err) != ET_OK)
        fail_msg("launch: %s", err.msg);
    assert_int_equal(et_buffer_read(dev, bo, 0, out, sizeof out, &err),
                     ET_OK);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == a[i] * b[i] + 0.5);
    et_program_free(dev, p);
    et_buffer_free(dev, bo);
    et_buffer_free(dev, ba);
    et_buffer_free(dev, bb);
    et_device_close(dev);
}

static void test_opencl_build_error(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    et_program *p = (et_program *)0x1;
    et_error err = {{0}};
    const char *broken = "__kernel void k(__global float *out)\n"
                         "{\n"
                         "    out[0] = undeclared_thing + 1.0f;\n"
                         "}\n";
    assert_int_equal(et_program_build(dev, broken, "k", &p, &err),
                     ET_ERR_BUILD);
    assert_null(p);
    assert_non_null(strstr(err.msg, "error"));
    assert_non_null(strstr(err.msg, "undeclared_thing"));
    assert_non_null(strstr(err.msg, "build log"));

    /* the program builds, the kernel name is wrong */
    assert_int_equal(et_program_build(dev, saxpy_cl, "nope", &p, &err),
                     ET_ERR_BUILD);
    assert_non_null(strstr(err.msg, "nope"));
    et_device_close(dev);
}

static void test_opencl_bad_launch(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    et_buffer *b = alloc_ok(dev, 4096 * sizeof(float));
    et_program *p = build_ok(dev, saxpy_cl, "saxpy");
    et_buffer *args[3] = {b, b, b};
    et_error err = {{0}};

    /* local does not divide global: OpenCL 1.2 refuses */
    et_launch g = geom1(1000, 7);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "CL_INVALID_WORK_GROUP_SIZE"));
    assert_non_null(strstr(err.msg, "clEnqueueNDRangeKernel"));

    /* more work-items per group than the device allows */
    int64_t too_big = dev->info.target.max_work_group_size * 2;
    g = geom1(too_big, too_big);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "CL_INVALID_WORK_"));

    /* wrong argument count, bad ndim */
    g = geom1(64, 8);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 2, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "3 arguments"));
    g.ndim = 0;
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);

    /* out-of-range buffer access */
    float v[4];
    assert_int_equal(et_buffer_read(dev, b, 4096 * sizeof(float) - 8, v,
                                    sizeof v, &err),
                     ET_ERR_INPUT);
    assert_int_equal(
        et_buffer_write(dev, b, SIZE_MAX - 2, v, sizeof v, &err),
        ET_ERR_INPUT);
    et_buffer *zero = (et_buffer *)0x1;
    assert_int_equal(et_buffer_alloc(dev, 0, &zero, &err), ET_ERR_INPUT);
    assert_null(zero);

    et_program_free(dev, p);
    et_buffer_free(dev, b);
    et_device_close(dev);
}

static void test_opencl_timing(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    enum { N = 1 << 16 };
    et_buffer *bo = alloc_ok(dev, N * sizeof(float));
    et_buffer *bx = alloc_ok(dev, N * sizeof(float));
    et_program *p = build_ok(dev, saxpy_cl, "saxpy");
    et_buffer *args[3] = {bo, bx, bx};
    et_launch g = geom1(N, 64);
    et_error err = {{0}};
    for (int run = 0; run < 3; run++) {
        double secs = -1;
        if (et_launch_kernel(dev, p, &g, args, NULL, 3, &secs, &err) != ET_OK)
            fail_msg("launch: %s", err.msg);
        assert_true(isfinite(secs));
        assert_true(secs > 0);
        assert_true(secs < 10);
    }
    et_program_free(dev, p);
    et_buffer_free(dev, bo);
    et_buffer_free(dev, bx);
    et_device_close(dev);
}

static void test_opencl_offsets(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    et_device *dev = open_ok(NULL);
    size_t align = (size_t)dev->info.target.mem_base_addr_align;
    enum { N = 256 };
    size_t pad = align; /* elements start one alignment unit in */
    size_t bytes = pad + N * sizeof(float);
    float *host = malloc(bytes);
    assert_non_null(host);
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(3 * i);
    }
    memset(host, 0, bytes);
    et_buffer *bo = alloc_ok(dev, bytes), *bx = alloc_ok(dev, bytes),
              *by = alloc_ok(dev, N * sizeof(float));
    et_error err = {{0}};
    assert_int_equal(et_buffer_write(dev, bo, 0, host, bytes, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, bx, pad, x, sizeof x, &err), ET_OK);
    assert_int_equal(et_buffer_write(dev, by, 0, y, sizeof y, &err), ET_OK);
    et_program *p = build_ok(dev, saxpy_cl, "saxpy");
    et_buffer *args[3] = {bo, bx, by};
    size_t offsets[3] = {pad, pad, 0};
    et_launch g = geom1(N, 32);
    for (int rep = 0; rep < 2; rep++) { /* the second uses cached views */
        if (et_launch_kernel(dev, p, &g, args, offsets, 3, NULL, &err) !=
            ET_OK)
            fail_msg("launch: %s", err.msg);
    }
    assert_int_equal(et_buffer_read(dev, bo, 0, host, bytes, &err), ET_OK);
    for (size_t i = 0; i < pad / sizeof(float); i++)
        assert_true(host[i] == 0.0f); /* nothing written before the offset */
    memcpy(out, (char *)host + pad, sizeof out);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == 2.0f * x[i] + y[i]);

    /* many distinct offsets: more views than the cache holds */
    for (int k = 1; k <= 6; k++) {
        size_t offs[3] = {0, 0, 0};
        size_t off = (size_t)k * align;
        et_buffer *big = alloc_ok(dev, off + N * sizeof(float));
        et_buffer *a2[3] = {big, bx, by};
        offs[0] = off;
        offs[1] = pad;
        if (et_launch_kernel(dev, p, &g, a2, offs, 3, NULL, &err) != ET_OK)
            fail_msg("launch at offset %zu: %s", off, err.msg);
        float got[N];
        assert_int_equal(et_buffer_read(dev, big, off, got, sizeof got, &err),
                         ET_OK);
        for (int i = 0; i < N; i++)
            assert_true(got[i] == 2.0f * x[i] + y[i]);
        et_buffer_free(dev, big);
    }
    /* misaligned offsets are refused with the reason */
    if (align > 1) {
        size_t bad[3] = {sizeof(float), 0, 0};
        assert_int_equal(
            et_launch_kernel(dev, p, &g, args, bad, 3, NULL, &err),
            ET_ERR_LAUNCH);
        assert_non_null(strstr(err.msg, "alignment"));
    }
    size_t outside[3] = {bytes + align, 0, 0};
    outside[0] -= outside[0] % align;
    assert_int_equal(
        et_launch_kernel(dev, p, &g, args, outside, 3, NULL, &err),
        ET_ERR_LAUNCH);

    et_program_free(dev, p);
    et_buffer_free(dev, bo);
    et_buffer_free(dev, bx);
    et_buffer_free(dev, by);
    free(host);
    et_device_close(dev);
}

static void test_device_list(void **state)
{
    (void)state;
    if (!td_opencl_only(OPENCL_ONLY))
        skip();
    setenv("ET_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    et_device_info infos[16];
    int n = -1;
    char notes[1024];
    assert_int_equal(et_device_list(infos, 16, &n, notes, sizeof notes),
                     ET_OK);
    assert_true(n >= 1);
    assert_string_equal(infos[0].spec, "opencl:0:0");
    assert_int_equal(infos[0].target.backend, ET_BACKEND_OPENCL);
    assert_true(strlen(infos[0].name) > 0);
    assert_non_null(strstr(notes, "cuda"));
    /* a cap smaller than the count is respected */
    assert_int_equal(et_device_list(infos, 0, &n, NULL, 0), ET_OK);
    assert_int_equal(n, 0);
    unsetenv("ET_LIBCUDA");
}

/* ---- CUDA: NVRTC without a GPU ----------------------------------------- */

static void test_nvrtc_compile(void **state)
{
    (void)state;
    et_error err = {{0}};
    if (!et_cuda_have_nvrtc(&err)) {
        print_message("skipping: %s\n", err.msg);
        skip();
    }
    char *ptx = NULL;
    size_t len = 0;
    et_status st = et_cuda_compile_ptx(saxpy_cu, "compute_90", &ptx, &len,
                                       &err);
    if (st != ET_OK)
        fail_msg("NVRTC: %s", err.msg);
    assert_non_null(ptx);
    assert_int_equal(strlen(ptx), len);
    assert_non_null(strstr(ptx, ".entry saxpy("));
    assert_non_null(strstr(ptx, ".target sm_90"));
    free(ptx);

    /* sm_XY gives a CUBIN: an ELF image */
    st = et_cuda_compile_ptx(saxpy_cu, "sm_90", &ptx, &len, &err);
    if (st != ET_OK)
        fail_msg("NVRTC sm_90: %s", err.msg);
    assert_true(len > 4);
    assert_memory_equal(ptx, "\177ELF", 4);
    free(ptx);

    /* a compile error carries the log */
    const char *broken = "extern \"C\" __global__ void k(float *o)\n"
                         "{ o[0] = missing_name; }\n";
    ptx = (char *)0x1;
    assert_int_equal(
        et_cuda_compile_ptx(broken, "compute_90", &ptx, &len, &err),
        ET_ERR_BUILD);
    assert_null(ptx);
    assert_non_null(strstr(err.msg, "error"));
    assert_non_null(strstr(err.msg, "missing_name"));

    assert_int_equal(
        et_cuda_compile_ptx(saxpy_cu, "gfx90a", &ptx, &len, &err),
        ET_ERR_INPUT);
}

/* ---- CUDA without a driver, and through the fake ----------------------- */

static void test_cuda_absent(void **state)
{
    (void)state;
    setenv("ET_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    et_device *dev = (et_device *)0x1;
    et_error err = {{0}};
    assert_int_equal(et_device_open("cuda:0", &dev, &err), ET_ERR_DEVICE);
    assert_null(dev);
    assert_non_null(strstr(err.msg, "no CUDA device"));
    assert_non_null(strstr(err.msg, "cannot be loaded"));
    unsetenv("ET_LIBCUDA");

    /* the default path, where libcuda.so.1 is really absent */
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *probe = real ? real : dlopen("libcuda.so.1", RTLD_LAZY);
    if (probe) {
        dlclose(probe);
        return; /* a real driver is installed: nothing more to check */
    }
    assert_int_equal(et_device_open("cuda:0", &dev, &err), ET_ERR_DEVICE);
    assert_non_null(
        strstr(err.msg, "the CUDA driver (libcuda.so.1) is not installed"));
}

typedef struct fake_state {
    void *lib;
    fake_cuda_log_get_fn get;
    fake_cuda_log_reset_fn reset;
    char path[4096];
} fake_state;

static int fake_setup(void **state)
{
    static fake_state fs;
    const char *dir = getenv("ET_BUILD_DIR");
    snprintf(fs.path, sizeof fs.path, "%s/tests/fake_cuda.so",
             dir && *dir ? dir : "build");
    /* hold our own handle so the log outlives the backend's dlclose */
    fs.lib = dlopen(fs.path, RTLD_NOW | RTLD_LOCAL);
    if (!fs.lib) {
        fprintf(stderr, "cannot load the fake libcuda: %s\n", dlerror());
        return -1;
    }
    fs.get = (fake_cuda_log_get_fn)dlsym(fs.lib, "fake_cuda_log_get");
    fs.reset = (fake_cuda_log_reset_fn)dlsym(fs.lib, "fake_cuda_log_reset");
    if (!fs.get || !fs.reset)
        return -1;
    setenv("ET_LIBCUDA", fs.path, 1);
    *state = &fs;
    return 0;
}

static int fake_teardown(void **state)
{
    fake_state *fs = *state;
    unsetenv("ET_LIBCUDA");
    if (fs && fs->lib)
        dlclose(fs->lib);
    return 0;
}

static void test_cuda_fake_open_and_memory(void **state)
{
    fake_state *fs = *state;
    fs->reset();
    et_device *dev = open_ok("cuda:0");
    const et_device_info *in = &dev->info;
    assert_string_equal(dev->ops->name, "cuda");
    assert_string_equal(in->spec, "cuda:0");
    assert_non_null(strstr(in->name, "Fake CUDA Device 0"));
    assert_string_equal(in->device_version, "CUDA 9.0");
    assert_string_equal(in->driver_version, "CUDA 13.0");
    assert_int_equal(in->target.backend, ET_BACKEND_CUDA);
    assert_int_equal(in->target.max_work_group_size, 1024);
    assert_int_equal(in->target.max_work_item_sizes[2], 64);
    assert_int_equal(in->target.local_mem_bytes, 49152);
    assert_int_equal(in->target.compute_units, 132);
    assert_true(in->target.has_fp64);
    assert_true(in->target.has_fp16);
    assert_int_equal(fs->get()->ctx_retained, 1);

    /* round trip, whole and at an offset */
    enum { N = 1000 };
    double src[N], dst[N];
    for (int i = 0; i < N; i++)
        src[i] = 1.0 / (i + 1);
    et_buffer *b = alloc_ok(dev, sizeof src);
    et_error err = {{0}};
    assert_int_equal(et_buffer_write(dev, b, 0, src, sizeof src, &err),
                     ET_OK);
    memset(dst, 0, sizeof dst);
    assert_int_equal(et_buffer_read(dev, b, 0, dst, sizeof dst, &err), ET_OK);
    assert_memory_equal(src, dst, sizeof src);
    assert_int_equal(et_buffer_write(dev, b, 8 * 10, src, 8 * 5, &err),
                     ET_OK);
    assert_int_equal(et_buffer_read(dev, b, 8 * 10, dst, 8 * 5, &err), ET_OK);
    assert_memory_equal(src, dst, 8 * 5);
    assert_int_equal(et_buffer_read(dev, b, sizeof src - 8, dst, 16, &err),
                     ET_ERR_INPUT);
    /* a backend without a fill of its own is filled from the host */
    assert_null(dev->ops->buffer_fill);
    double two = 2.0;
    assert_int_equal(et_buffer_fill(dev, b, 8 * 3, &two, 8, 8 * 990, &err),
                     ET_OK);
    assert_int_equal(et_buffer_read(dev, b, 0, dst, sizeof dst, &err), ET_OK);
    for (int i = 0; i < N; i++)
        assert_true(dst[i] == (i >= 3 && i < 993 ? 2.0 : src[i]));
    assert_int_equal(et_buffer_fill(dev, b, 0, &two, 3, 9, &err),
                     ET_ERR_INPUT);
    assert_int_equal(fs->get()->live_allocs, 1);
    et_buffer_free(dev, b);
    assert_int_equal(fs->get()->live_allocs, 0);

    et_device *none = NULL;
    assert_int_equal(et_device_open("cuda:1", &none, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "no CUDA device 1"));

    et_device_close(dev);
    assert_int_equal(fs->get()->ctx_retained, 0);
    assert_int_equal(fs->get()->events_live, 0);

    /* the list shows the fake after the OpenCL devices */
    et_device_info infos[16];
    int n = 0;
    assert_int_equal(et_device_list(infos, 16, &n, NULL, 0), ET_OK);
    assert_true(n >= 2);
    assert_string_equal(infos[n - 1].spec, "cuda:0");
    assert_int_equal(infos[n - 1].target.backend, ET_BACKEND_CUDA);
    assert_int_equal(infos[0].target.backend, ET_BACKEND_OPENCL);
}

static void test_cuda_fake_launch(void **state)
{
    fake_state *fs = *state;
    et_error err = {{0}};
    if (!et_cuda_have_nvrtc(&err)) {
        print_message("skipping: %s\n", err.msg);
        skip();
    }
    fs->reset();
    et_device *dev = open_ok("cuda:0");
    enum { N = 1024 };
    et_buffer *bo = alloc_ok(dev, N * 4 + 512), *bx = alloc_ok(dev, N * 4),
              *by = alloc_ok(dev, N * 4);
    const fake_cuda_log *log = fs->get();
    assert_int_equal(log->nallocs, 3);

    et_program *p = build_ok(dev, saxpy_cu, "saxpy");
    assert_int_equal(log->module_loads, 1);
    assert_non_null(strstr(log->module_image, ".entry saxpy("));
    assert_non_null(strstr(log->module_image, ".target sm_90"));
    assert_string_equal(log->function, "saxpy");

    et_buffer *args[3] = {bo, bx, by};
    et_launch g = geom1(N, 128);
    double secs = -1;
    if (et_launch_kernel(dev, p, &g, args, NULL, 3, &secs, &err) != ET_OK)
        fail_msg("launch: %s", err.msg);
    assert_true(isfinite(secs) && secs > 0);
    assert_int_equal(log->launches, 1);
    assert_int_equal(log->grid[0], N / 128);
    assert_int_equal(log->grid[1], 1);
    assert_int_equal(log->grid[2], 1);
    assert_int_equal(log->block[0], 128);
    assert_int_equal(log->block[1], 1);
    assert_int_equal(log->shared_mem, 0);
    assert_int_equal(log->nparams, 3);
    for (int i = 0; i < 3; i++)
        assert_true(log->params[i] == log->alloc_ptrs[i]);

    /* offsets are added to the pointers */
    size_t offs[3] = {512, 0, 0};
    assert_int_equal(et_launch_kernel(dev, p, &g, args, offs, 3, NULL, &err),
                     ET_OK);
    assert_true(log->params[0] == log->alloc_ptrs[0] + 512);
    offs[0] = 4;
    assert_int_equal(et_launch_kernel(dev, p, &g, args, offs, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "alignment"));

    /* zero_bytes (SPLIT): argument 0 at its offset is zeroed before the
     * kernel; more than the buffer holds is refused before the driver */
    assert_int_equal(log->memsets, 0);
    g.zero_bytes = 40;
    offs[0] = 512;
    assert_int_equal(et_launch_kernel(dev, p, &g, args, offs, 3, NULL, &err),
                     ET_OK);
    assert_int_equal(log->memsets, 1);
    assert_true(log->memset_ptr == log->alloc_ptrs[0] + 512);
    assert_true(log->memset_bytes == 40);
    assert_int_equal(log->memset_value, 0);
    assert_int_equal(log->memset_before_launch, log->launches - 1);
    g.zero_bytes = N * 4 + 1;
    assert_int_equal(et_launch_kernel(dev, p, &g, args, offs, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "larger than argument 0"));
    assert_int_equal(log->memsets, 1);
    g.zero_bytes = 0;

    /* no local size: the backend picks a block along dimension 0 */
    g = geom1(N, 0);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_OK);
    assert_int_equal(log->block[0], 256);
    assert_int_equal(log->grid[0], N / 256);
    g = geom1(7 * 11 * 13, 0); /* 1001: largest divisor <= 256 is 143 */
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_OK);
    assert_int_equal(log->block[0], 143);
    assert_int_equal(log->grid[0], 7);

    /* 3-D geometry maps dimension by dimension */
    g = (et_launch){.ndim = 3,
                    .global = {64, 6, 4},
                    .local = {16, 2, 1},
                    .has_local = true};
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_OK);
    assert_int_equal(log->grid[0], 4);
    assert_int_equal(log->grid[1], 3);
    assert_int_equal(log->grid[2], 4);
    assert_int_equal(log->block[1], 2);

    /* grid y beyond 65535 is refused before the driver sees it */
    int launches = log->launches;
    g = (et_launch){.ndim = 2,
                    .global = {32, 70000, 1},
                    .local = {32, 1, 1},
                    .has_local = true};
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    assert_non_null(strstr(err.msg, "65535"));
    assert_int_equal(log->launches, launches);
    /* local must divide global; blocks must fit */
    g = geom1(1000, 7);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);
    g = geom1(4096, 2048);
    assert_int_equal(et_launch_kernel(dev, p, &g, args, NULL, 3, NULL, &err),
                     ET_ERR_LAUNCH);

    /* build failures: NVRTC errors and a missing kernel name */
    et_program *bad = NULL;
    assert_int_equal(et_program_build(dev, "extern \"C\" __global__ void "
                                           "k(float *o) { o[0] = nope; }\n",
                                      "k", &bad, &err),
                     ET_ERR_BUILD);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(et_program_build(dev, saxpy_cu, "other", &bad, &err),
                     ET_ERR_BUILD);
    assert_non_null(strstr(err.msg, "other"));
    assert_null(bad);

    et_program_free(dev, p);
    et_buffer_free(dev, bo);
    et_buffer_free(dev, bx);
    et_buffer_free(dev, by);
    assert_int_equal(log->modules_live, 0);
    assert_int_equal(log->live_allocs, 0);
    et_device_close(dev);
    assert_int_equal(log->ctx_retained, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: its children must start before this process opens a
         * device */
        cmocka_unit_test(test_pocl_affinity),
        cmocka_unit_test(test_spec_parse),
        cmocka_unit_test(test_open_default_and_limits),
        cmocka_unit_test(test_open_by_index_and_name),
        cmocka_unit_test(test_opencl_saxpy),
        cmocka_unit_test(test_opencl_fp64_2d),
        cmocka_unit_test(test_opencl_build_error),
        cmocka_unit_test(test_opencl_bad_launch),
        cmocka_unit_test(test_opencl_timing),
        cmocka_unit_test(test_opencl_offsets),
        cmocka_unit_test(test_device_list),
        cmocka_unit_test(test_nvrtc_compile),
        cmocka_unit_test(test_cuda_absent),
    };
    const struct CMUnitTest fake_tests[] = {
        cmocka_unit_test(test_cuda_fake_open_and_memory),
        cmocka_unit_test(test_cuda_fake_launch),
    };
    int failed = cmocka_run_group_tests_name("measure", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("measure_fake_cuda", fake_tests,
                                          fake_setup, fake_teardown);
    return failed;
}
