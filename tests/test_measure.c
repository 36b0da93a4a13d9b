/*
 * test_measure.c - the device layer: specs, OpenCL on the PoCL CPU device,
 * CUDA through NVRTC (no GPU needed) and through a fake libcuda
 * (build/tests/fake_cuda.so, loaded via ET_LIBCUDA).
 */
#include "measure/backend.h"

#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

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

static const char saxpy_cu[] __attribute__((unused)) =
    "extern \"C\" __global__ void saxpy(float *out, const float *x,\n"
    "                                   const float *y)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    out[i] = 2.0f * x[i] + y[i];\n"
    "}\n";

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

static void test_open_default_and_limits(void **state)
{
    (void)state;
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
                     ET_ERR_DEVICE);
    assert_non_null(strstr(err.msg, "no-such-device-xyz"));
    assert_int_equal(et_device_open("opencl:4096", &none, &err),
                     ET_ERR_DEVICE);
    assert_int_equal(et_device_open("opencl:7:0", &none, &err),
                     ET_ERR_DEVICE);
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
    et_device *dev = open_ok(NULL);
    run_saxpy(dev, saxpy_cl, 1024, 64);
    run_saxpy(dev, saxpy_cl, 1000, 0); /* runtime chooses the local size */
    et_device_close(dev);
}

static void test_opencl_fp64_2d(void **state)
{
    (void)state;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
