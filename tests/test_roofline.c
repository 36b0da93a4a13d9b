/*
 * test_roofline.c - the roofline model on hand-computed cases, the peaks
 * cache and override file, the reports, the plot writer, and the peak
 * micro-benchmarks on the suite's device (the PoCL device unless `make
 * test DEVICE=..`; quick mode: positive and finite, never a speed).
 */
#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/backend_impl.h"
#include "measure/cuda/nvrtc.h"
#include "tests/suite_device.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "tune/peaks_db.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- helpers ----------------------------------------------------------- */

static void einsum_ok(const char *text, const char *shape, const char *dt,
                      et_einsum *e)
{
    et_diag d;
    memset(&d, 0, sizeof(d));
    et_status st = et_einsum_from_strings(text, shape, dt, e, &d);
    if (st != ET_OK)
        fail_msg("%s with %s: %s", text, shape, d.msg);
}

static et_peaks peaks_of(double f32, double f64, double bw)
{
    et_peaks p;
    memset(&p, 0, sizeof(p));
    snprintf(p.device_name, sizeof(p.device_name), "test device");
    snprintf(p.backend, sizeof(p.backend), "opencl");
    snprintf(p.driver, sizeof(p.driver), "1.0");
    p.gflops[ET_F32] = f32;
    p.gflops[ET_F64] = f64;
    p.bandwidth_gbs = bw;
    return p;
}

static void roofline_ok(const et_einsum *e, const et_peaks *p,
                        et_roofline *r)
{
    char why[256];
    et_status st = et_roofline_compute(e, p, r, why, sizeof(why));
    if (st != ET_OK)
        fail_msg("%s: %s", e->text, why);
}

#define assert_close(a, b)                                                  \
    do {                                                                    \
        double a_ = (a), b_ = (b);                                          \
        if (!(fabs(a_ - b_) <= 1e-9 * fmax(fabs(a_), fabs(b_)) + 1e-300))  \
            fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);             \
    } while (0)

static char tmpdir[256];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/et_roofline_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    char xdg[300];
    snprintf(xdg, sizeof(xdg), "%s/cache", tmpdir);
    setenv("XDG_CACHE_HOME", xdg, 1);
    unsetenv("ET_PEAKS_FILE");
    return 0;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p;
         p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* ---- the model ----------------------------------------------------------- */

/* matmul 1024^3 in f32: 2^31 ops, 12 MiB; 100 GFLOP/s, 10 GB/s. */
static void test_compute_bound(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ik,kj->ij", "i=1024,k=1024,j=1024", "f32", &e);
    et_peaks p = peaks_of(100, 50, 10);
    et_roofline r;
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops[ET_F32], (int64_t)1 << 31);
    assert_int_equal(r.ops[ET_F64], 0);
    assert_int_equal(r.bytes, 3 * 1024 * 1024 * 4);
    assert_close(r.intensity, 2147483648.0 / 12582912.0);
    assert_close(r.compute_s, 2147483648.0 / 100e9);
    assert_close(r.memory_s, 12582912.0 / 10e9);
    assert_close(r.time_s, r.compute_s);
    assert_int_equal(r.bound, ET_BOUND_COMPUTE);
    assert_int_equal(r.compute_dtype, ET_F32);
    assert_close(r.gops[ET_F32], 100.0);
    assert_close(r.gops[ET_F64], 0.0);
    /* a run at half the roofline */
    assert_close(et_roofline_ratio(&r, 2 * r.time_s), 0.5);
    assert_close(et_roofline_measured_gops(&r, ET_F32, 2 * r.time_s), 50.0);
    assert_close(et_roofline_measured_gops(&r, ET_F64, 2 * r.time_s), 0.0);
    assert_close(et_roofline_ratio(&r, 0), 0.0);
    et_plot_point pt = et_plot_point_of(&r, 2 * r.time_s);
    assert_close(pt.intensity, r.intensity);
    assert_close(pt.gops, 50.0);
}

/* matvec 4096x4096 in f64: 2*4096^2 ops, (4096^2 + 2*4096)*8 bytes. */
static void test_memory_bound(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ij,j->i", "i=4096,j=4096", "f64", &e);
    et_peaks p = peaks_of(100, 50, 20);
    et_roofline r;
    roofline_ok(&e, &p, &r);
    const double ops = 2.0 * 4096 * 4096;
    const double bytes = (4096.0 * 4096 + 2 * 4096) * 8;
    assert_int_equal(r.ops[ET_F64], (int64_t)ops);
    assert_int_equal(r.bytes, (int64_t)bytes);
    assert_close(r.memory_s, bytes / 20e9);
    assert_close(r.compute_s, ops / 50e9);
    assert_int_equal(r.bound, ET_BOUND_MEMORY);
    assert_close(r.time_s, r.memory_s);
    assert_close(r.gops[ET_F64], ops / (bytes / 20e9) / 1e9);
    assert_close(r.gops[ET_F64], 20.0 * ops / bytes);
}

/* f16 storage, f32 accumulation: ops go to f32, bytes count 2-byte
 * inputs and the f32 output; no f16 peak needed. */
static void test_mixed_f16_storage(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=64,j=64,k=64", "f16", &e);
    assert_int_equal(e.acc_dtype, ET_F32);
    et_peaks p = peaks_of(100, 50, 10);
    et_roofline r;
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops[ET_F16], 0);
    assert_int_equal(r.ops[ET_F32], 2 * 64 * 64 * 64);
    assert_int_equal(r.bytes, 2 * 64 * 64 * 2 +
                                  64 * 64 *
                                      (int64_t)et_dtype_size(e.out.dtype));
    assert_close(r.compute_s, 2.0 * 64 * 64 * 64 / 100e9);

    /* hand-made counts with f16 ops: served by the f32 peak */
    int64_t ops[ET_DTYPE_COUNT] = {0};
    ops[ET_F16] = 4000000000;
    ops[ET_F32] = 1000000000;
    et_roofline r2;
    char why[200];
    assert_int_equal(et_roofline_from_counts(ops, 600, 400, &p, &r2, why,
                                             sizeof(why)),
                     ET_OK);
    assert_close(r2.peak_gflops[ET_F16], 100.0);
    assert_close(r2.compute_s, 0.04);
    assert_int_equal(r2.compute_dtype, ET_F16);
    assert_close(r2.gops[ET_F16], 100.0);
    assert_close(r2.gops[ET_F32], 25.0);
    /* a native f16 peak is used when there is one */
    p.gflops[ET_F16] = 400;
    assert_int_equal(et_roofline_from_counts(ops, 600, 400, &p, &r2, why,
                                             sizeof(why)),
                     ET_OK);
    assert_close(r2.compute_s, 0.01);
}

/* f32 and f64 ops in one count: the slower dtype sets the compute time,
 * and each dtype's roofline GOps/s is its ops over that time. */
static void test_mixed_f32_f64(void **state)
{
    (void)state;
    et_peaks p = peaks_of(100, 25, 1000);
    int64_t ops[ET_DTYPE_COUNT] = {0};
    ops[ET_F32] = 1000000000;
    ops[ET_F64] = 1000000000;
    et_roofline r;
    assert_int_equal(et_roofline_from_counts(ops, 1000, 0, &p, &r, NULL, 0),
                     ET_OK);
    assert_close(r.compute_s, 0.04);
    assert_int_equal(r.compute_dtype, ET_F64);
    assert_int_equal(r.bound, ET_BOUND_COMPUTE);
    assert_close(r.gops[ET_F32], 25.0);
    assert_close(r.gops[ET_F64], 25.0);
    assert_int_equal(r.ops_total, 2000000000);
    /* an einsum with an f32 and an f64 operand accumulates in f64 */
    et_einsum e;
    einsum_ok("ij,j->i", "i=100,j=200", "f32,f64", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops[ET_F64], 2 * 100 * 200);
    assert_int_equal(r.ops[ET_F32], 0);
    assert_int_equal(r.bytes, 100 * 200 * 4 + 200 * 8 + 100 * 8);
}

static void test_missing_peak(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ij,j->i", "i=8,j=8", "f64", &e);
    et_peaks p = peaks_of(100, 0, 10); /* no fp64 */
    et_roofline r;
    char why[256];
    assert_int_equal(et_roofline_compute(&e, &p, &r, why, sizeof(why)),
                     ET_ERR_UNSUPPORTED);
    assert_non_null(strstr(why, "f64"));
    /* no bandwidth */
    p = peaks_of(100, 50, 0);
    assert_int_equal(et_roofline_compute(&e, &p, &r, why, sizeof(why)),
                     ET_ERR_INPUT);
    assert_non_null(strstr(why, "bandwidth"));
    int64_t bad[ET_DTYPE_COUNT] = {0, -1, 0};
    assert_int_equal(et_roofline_from_counts(bad, 8, 0, &p, &r, NULL, 0),
                     ET_ERR_INPUT);
}

/* The ops formula |I| * ((m - 1) + s) on one operand, outer products and
 * three operands. */
static void test_ops_formula(void **state)
{
    (void)state;
    et_peaks p = peaks_of(100, 50, 10);
    et_einsum e;
    et_roofline r;

    /* reduction ij->: one operand, summed: |I| * 1 */
    einsum_ok("ij->", "i=30,j=40", "f64", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops[ET_F64], 30 * 40);
    assert_int_equal(r.bytes, (30 * 40 + 1) * 8);

    /* transpose ij->ji: no ops, purely memory-bound */
    einsum_ok("ij->ji", "i=30,j=40", "f32", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops_total, 0);
    assert_int_equal(r.bytes, 2 * 30 * 40 * 4);
    assert_int_equal(r.bound, ET_BOUND_MEMORY);
    assert_close(r.intensity, 0.0);
    assert_close(r.compute_s, 0.0);
    assert_close(r.time_s, 2.0 * 30 * 40 * 4 / 10e9);
    assert_close(et_roofline_ratio(&r, 4 * r.time_s), 0.25);

    /* outer product i,j->ij: nothing summed: |I| * (m - 1) */
    einsum_ok("i,j->ij", "i=300,j=500", "f32", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.ops[ET_F32], 300 * 500);
    assert_int_equal(r.bytes, (300 + 500 + 300 * 500) * 4);
    assert_int_equal(r.bound, ET_BOUND_MEMORY);

    /* three operands, summed: the loop nest's 3 * |I| is not the count;
     * the cheapest order forms xre*xej once per (x, e, r, j), then sums
     * over r and j against rij: x*e*r*j + 2 * |I| */
    einsum_ok("xre,rij,xej->xei", "x=64,r=3,e=4,i=35,j=35", "f64", &e);
    roofline_ok(&e, &p, &r);
    const int64_t iter = 64LL * 3 * 4 * 35 * 35;
    const int64_t path = 64LL * 4 * 3 * 35 + 2 * iter;
    assert_int_equal(r.ops[ET_F64], path);
    assert_int_equal(r.bytes,
                     (64 * 3 * 4 + 3 * 35 * 35 + 64 * 4 * 35 + 64 * 4 * 35) *
                         8);
    double compute = (double)path / 50e9, memory = (double)r.bytes / 10e9;
    assert_close(r.time_s, fmax(compute, memory));
    assert_int_equal(r.bound,
                     compute > memory ? ET_BOUND_COMPUTE : ET_BOUND_MEMORY);
}

/* ---- reports ------------------------------------------------------------ */

static void test_table_and_json(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ik,kj->ij", "i=1024,k=1024,j=1024", "f32", &e);
    et_peaks p = peaks_of(100, 50, 10);
    et_roofline r;
    roofline_ok(&e, &p, &r);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    et_roofline_table(f, &r, 4 * r.time_s);
    fclose(f);
    assert_non_null(strstr(text, "Dtype | Measured GOps/s | Roofline GOps/s "
                                 "| % of roofline"));
    assert_non_null(strstr(text, "f32   |          25.000 |         100.000 "
                                 "|         25.0"));
    assert_non_null(strstr(text, "compute-bound"));
    assert_null(strstr(text, "note:"));
    free(text);

    /* faster than the roofline: the table says why that can be */
    f = open_memstream(&text, &len);
    assert_non_null(f);
    et_roofline_table(f, &r, 0.5 * r.time_s);
    fclose(f);
    assert_non_null(strstr(text, "note: 200 % of the roofline"));
    assert_non_null(strstr(text, "--remeasure"));
    free(text);

    cJSON *o = cJSON_CreateObject();
    assert_int_equal(et_report_add_gops(o, &r, 4 * r.time_s), 0);
    cJSON *g = cJSON_GetObjectItem(o, "gops");
    cJSON *rg = cJSON_GetObjectItem(o, "roofline_gops");
    assert_close(cJSON_GetObjectItem(g, "f32")->valuedouble, 25.0);
    assert_close(cJSON_GetObjectItem(rg, "f32")->valuedouble, 100.0);
    assert_null(cJSON_GetObjectItem(g, "f64"));
    assert_close(cJSON_GetObjectItem(o, "roofline_fraction")->valuedouble,
                 0.25);
    cJSON_Delete(o);

    o = et_roofline_to_json(&r, &p);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "bound")->valuestring,
                        "compute");
    assert_close(cJSON_GetObjectItem(o, "roofline_s")->valuedouble, r.time_s);
    cJSON_Delete(o);

    /* the peaks document of docs/roofline.md */
    p.gflops_spread[ET_F32] = (et_spread){5, 90, 95, 100};
    p.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 10;
    p.level[ET_MEM_DRAM].spread[ET_BW_COPY] = (et_spread){5, 8, 9, 10};
    p.level[ET_MEM_DRAM].variant[ET_BW_COPY] =
        (et_bw_variant){16, 4, 0, ET_BW_STRIDED};
    p.level[ET_MEM_L2].capacity_bytes = 1 << 20;
    p.level[ET_MEM_L2].gbs[ET_BW_READ] = 77;
    p.fma_variant[ET_F32] = (et_fma_variant){16, 12, 64};
    p.bench_version = ET_PEAKS_BENCH_VERSION;
    o = et_peaks_to_json(&p);
    assert_int_equal(cJSON_GetObjectItem(o, "bench_version")->valueint,
                     ET_PEAKS_BENCH_VERSION);
    cJSON *fv = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "fma_variants"),
                                    "f32");
    assert_int_equal(cJSON_GetObjectItem(fv, "chains")->valueint, 12);
    cJSON *lvs = cJSON_GetObjectItem(o, "levels");
    assert_int_equal(cJSON_GetArraySize(lvs), 1);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(lvs, 0), "level")->valuestring,
        "L2");
    cJSON *dev = cJSON_GetObjectItem(o, "device");
    assert_string_equal(cJSON_GetObjectItem(dev, "name")->valuestring,
                        "test device");
    assert_string_equal(cJSON_GetObjectItem(dev, "backend")->valuestring,
                        "opencl");
    assert_string_equal(cJSON_GetObjectItem(dev, "driver")->valuestring,
                        "1.0");
    cJSON *gf = cJSON_GetObjectItem(o, "gflops");
    assert_close(cJSON_GetObjectItem(gf, "f32")->valuedouble, 100);
    assert_close(cJSON_GetObjectItem(gf, "f64")->valuedouble, 50);
    assert_null(cJSON_GetObjectItem(gf, "f16"));
    assert_close(cJSON_GetObjectItem(o, "bandwidth_gbs")->valuedouble, 10);
    cJSON *sp = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "gflops_spread"),
                                    "f32");
    assert_close(cJSON_GetObjectItem(sp, "median")->valuedouble, 95);
    cJSON *copy =
        cJSON_GetObjectItem(cJSON_GetObjectItem(o, "bandwidth"), "copy");
    assert_close(cJSON_GetObjectItem(copy, "min")->valuedouble, 8);
    cJSON *cv = cJSON_GetObjectItem(copy, "variant");
    assert_string_equal(cJSON_GetObjectItem(cv, "pattern")->valuestring,
                        "strided");
    assert_int_equal(cJSON_GetObjectItem(cv, "local")->valueint, 0);
    cJSON_Delete(o);
    /* the table names the winning variants */
    f = open_memstream(&text, &len);
    et_peaks_print(f, &p);
    fclose(f);
    assert_non_null(strstr(text, "w16, 12 chains, wg64"));
    assert_non_null(strstr(text, "w16 x4 strided wg-"));
    assert_non_null(strstr(text, "L2 read"));
    free(text);

    /* a copy has no ops: one "-" row with the ratio of times */
    einsum_ok("ij->ji", "i=30,j=40", "f32", &e);
    roofline_ok(&e, &p, &r);
    f = open_memstream(&text, &len);
    et_roofline_table(f, &r, 2 * r.time_s);
    fclose(f);
    assert_non_null(strstr(text, "-     |           0 ops |           0 ops "
                                 "|         50.0"));
    free(text);
}

/* ---- cache and override file ------------------------------------------- */

static et_device_info info_of(const char *name, const char *driver)
{
    et_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.name, sizeof(info.name), "%s", name);
    snprintf(info.driver_version, sizeof(info.driver_version), "%s", driver);
    info.target = et_target_generic(ET_BACKEND_OPENCL);
    info.target.has_fp64 = true;
    info.target.has_fp16 = false;
    return info;
}

/* A re-measure because a kernel beat the roof keeps, per figure, the
 * faster of the stored and the new one, with its spread and variant; a
 * cache level measured at another capacity, another device or another
 * micro-benchmark version is left alone. */
static void test_keep_max(void **state)
{
    (void)state;
    et_peaks n, o;
    memset(&n, 0, sizeof n);
    snprintf(n.device_name, sizeof n.device_name, "dev A");
    snprintf(n.backend, sizeof n.backend, "opencl");
    n.bench_version = ET_PEAKS_BENCH_VERSION;
    o = n;
    n.gflops[ET_F32] = 100;
    o.gflops[ET_F32] = 90;
    n.gflops[ET_F64] = 40;
    o.gflops[ET_F64] = 50;
    o.gflops_spread[ET_F64] = (et_spread){5, 45, 48, 50};
    o.fma_variant[ET_F64].width = 8;
    n.level[ET_MEM_DRAM].gbs[ET_BW_READ] = 50;
    o.level[ET_MEM_DRAM].gbs[ET_BW_READ] = 60;
    o.level[ET_MEM_DRAM].variant[ET_BW_READ].per_item = 64;
    n.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 45;
    o.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 40;
    n.level[ET_MEM_L2].capacity_bytes = 1 << 20;
    o.level[ET_MEM_L2].capacity_bytes = 1 << 21; /* another capacity */
    n.level[ET_MEM_L2].gbs[ET_BW_READ] = 300;
    o.level[ET_MEM_L2].gbs[ET_BW_READ] = 400;
    n.level[ET_MEM_L1].capacity_bytes = o.level[ET_MEM_L1].capacity_bytes =
        32768;
    n.level[ET_MEM_L1].gbs[ET_BW_COPY] = 700;
    o.level[ET_MEM_L1].gbs[ET_BW_COPY] = 900;
    n.bandwidth_gbs = 45;
    et_peaks p = n;
    et_peaks_keep_max(&p, &o);
    assert_close(p.gflops[ET_F32], 100);
    assert_close(p.gflops[ET_F64], 50);
    assert_close(p.gflops_spread[ET_F64].max, 50);
    assert_int_equal(p.fma_variant[ET_F64].width, 8);
    assert_close(p.level[ET_MEM_DRAM].gbs[ET_BW_READ], 60);
    assert_int_equal(p.level[ET_MEM_DRAM].variant[ET_BW_READ].per_item, 64);
    assert_close(p.level[ET_MEM_DRAM].gbs[ET_BW_COPY], 45);
    assert_close(p.bandwidth_gbs, 45);
    assert_close(p.level[ET_MEM_L2].gbs[ET_BW_READ], 300);
    assert_close(p.level[ET_MEM_L1].gbs[ET_BW_COPY], 900);
    /* the DRAM copy figure is the fallback bandwidth */
    o.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 70;
    p = n;
    et_peaks_keep_max(&p, &o);
    assert_close(p.bandwidth_gbs, 70);
    /* other device, other micro-benchmarks: nothing changes */
    et_peaks q = o;
    snprintf(q.device_name, sizeof q.device_name, "dev B");
    p = n;
    et_peaks_keep_max(&p, &q);
    assert_memory_equal(&p, &n, sizeof p);
    q = o;
    q.bench_version = ET_PEAKS_BENCH_VERSION - 1;
    et_peaks_keep_max(&p, &q);
    assert_memory_equal(&p, &n, sizeof p);
}

static void test_cache_round_trip(void **state)
{
    (void)state;
    et_device_info info = info_of("Fancy GPU 9000", "42.1 (beta)");
    et_error err = {{0}};
    et_peaks p = peaks_of(1234.5, 617.25, 321.125);
    snprintf(p.device_name, sizeof(p.device_name), "%s", info.name);
    snprintf(p.driver, sizeof(p.driver), "%s", info.driver_version);
    p.gflops_spread[ET_F32] = (et_spread){5, 1000, 1200, 1234.5};
    p.bench_version = ET_PEAKS_BENCH_VERSION;
    p.fma_variant[ET_F32] = (et_fma_variant){8, 16, 256};
    et_level_bw *d = &p.level[ET_MEM_DRAM];
    d->gbs[ET_BW_COPY] = 321.125;
    d->gbs[ET_BW_READ] = 400.5;
    d->spread[ET_BW_READ] = (et_spread){3, 300, 310, 400.5};
    d->variant[ET_BW_READ] = (et_bw_variant){16, 4, 0, ET_BW_STRIDED};
    d->working_set_bytes = 64 << 20;
    et_level_bw *l2 = &p.level[ET_MEM_L2];
    l2->capacity_bytes = 2 << 20;
    l2->working_set_bytes = 1 << 20;
    l2->gbs[ET_BW_READ] = 900.25;
    l2->gbs[ET_BW_COPY] = 700.75;
    l2->variant[ET_BW_COPY] = (et_bw_variant){8, 16, 1, ET_BW_WALK};

    et_peaks q;
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_ERR_IO); /* miss */
    assert_int_equal(et_peaks_store(&p, &err), ET_OK);

    char path[4096];
    assert_int_equal(et_peaks_cache_path(&info, path, sizeof(path), &err),
                     ET_OK);
    char expect_dir[400];
    snprintf(expect_dir, sizeof(expect_dir), "%s/cache/eintune/", tmpdir);
    assert_true(strncmp(path, expect_dir, strlen(expect_dir)) == 0);
    assert_null(strchr(path + strlen(expect_dir), ' '));
    struct stat sb;
    expect_dir[strlen(expect_dir) - 1] = '\0';
    assert_int_equal(stat(expect_dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_int_equal(stat(path, &sb), 0);

    memset(&q, 0, sizeof(q));
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_OK);
    assert_int_equal(q.source, ET_PEAKS_CACHED);
    assert_string_equal(q.device_name, "Fancy GPU 9000");
    assert_string_equal(q.driver, "42.1 (beta)");
    assert_string_equal(q.eintune_version, ET_VERSION);
    assert_close(q.gflops[ET_F32], 1234.5);
    assert_close(q.gflops[ET_F64], 617.25);
    assert_close(q.gflops[ET_F16], 0);
    assert_close(q.bandwidth_gbs, 321.125);
    assert_int_equal(q.gflops_spread[ET_F32].runs, 5);
    assert_close(q.gflops_spread[ET_F32].median, 1200);
    assert_int_equal(q.bench_version, ET_PEAKS_BENCH_VERSION);
    assert_int_equal(q.fma_variant[ET_F32].width, 8);
    assert_int_equal(q.fma_variant[ET_F32].chains, 16);
    assert_int_equal(q.fma_variant[ET_F32].local, 256);
    assert_close(q.level[ET_MEM_DRAM].gbs[ET_BW_READ], 400.5);
    assert_close(q.level[ET_MEM_DRAM].gbs[ET_BW_COPY], 321.125);
    assert_close(q.level[ET_MEM_DRAM].spread[ET_BW_READ].min, 300);
    assert_int_equal(q.level[ET_MEM_DRAM].variant[ET_BW_READ].pattern,
                     ET_BW_STRIDED);
    assert_int_equal(q.level[ET_MEM_DRAM].variant[ET_BW_READ].per_item, 4);
    assert_int_equal(q.level[ET_MEM_DRAM].working_set_bytes, 64 << 20);
    assert_int_equal(q.level[ET_MEM_L2].capacity_bytes, 2 << 20);
    assert_int_equal(q.level[ET_MEM_L2].working_set_bytes, 1 << 20);
    assert_close(q.level[ET_MEM_L2].gbs[ET_BW_READ], 900.25);
    assert_close(q.level[ET_MEM_L2].gbs[ET_BW_COPY], 700.75);
    assert_int_equal(q.level[ET_MEM_L2].variant[ET_BW_COPY].pattern,
                     ET_BW_WALK);
    assert_int_equal(q.level[ET_MEM_L2].variant[ET_BW_COPY].local, 1);
    assert_int_equal(q.level[ET_MEM_L1].capacity_bytes, 0);
    assert_close(q.level[ET_MEM_L3].gbs[ET_BW_READ], 0);

    /* peaks of older micro-benchmarks are a miss, even at this file's
     * path with this eintune version: the same file, bench_version 1 */
    char *text_now = read_all(path, NULL);
    char *at = strstr(text_now, "\"bench_version\":");
    assert_non_null(at);
    at = strchr(at, ':') + 1;
    while (*at == ' ' || *at == '\t')
        at++;
    assert_int_equal(*at, '0' + ET_PEAKS_BENCH_VERSION);
    *at = '1';
    write_text(path, text_now);
    free(text_now);
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_ERR_IO);
    assert_non_null(strstr(err.msg, "older micro-benchmarks"));
    assert_int_equal(et_peaks_store(&p, &err), ET_OK);
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_OK);

    /* another driver version is another key: a miss */
    et_device_info other = info_of("Fancy GPU 9000", "42.2");
    assert_int_equal(et_peaks_load(&other, &q, &err), ET_ERR_IO);
    /* a file whose key differs (as after an upgrade) is a miss too */
    char text[512];
    snprintf(text, sizeof(text),
             "{\"device\": {\"name\": \"Fancy GPU 9000\", \"backend\": "
             "\"opencl\", \"driver\": \"42.1 (beta)\"}, \"eintune_version\": "
             "\"0.0.0-old\", \"gflops\": {\"f32\": 1}, \"bandwidth_gbs\": 1}");
    write_text(path, text);
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_ERR_IO);
    assert_non_null(strstr(err.msg, "version"));
    /* a corrupt file is an input error */
    write_text(path, "{\"gflops\": ");
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_ERR_INPUT);
    /* storing again replaces it */
    assert_int_equal(et_peaks_store(&p, &err), ET_OK);
    assert_int_equal(et_peaks_load(&info, &q, &err), ET_OK);
}

static void test_override_file(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof(path), "%s/vendor.json", tmpdir);
    et_error err = {{0}};
    et_peaks p;
    unsigned given;

    write_text(path, "{\"gflops\": {\"f32\": 3000.5, \"f64\": 1500},\n"
                     " \"bandwidth_gbs\": 400}\n");
    memset(&p, 0, sizeof(p));
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err), ET_OK);
    assert_close(p.gflops[ET_F32], 3000.5);
    assert_close(p.gflops[ET_F64], 1500);
    assert_close(p.bandwidth_gbs, 400);
    assert_int_equal(given, 1u << ET_F32 | 1u << ET_F64 | 1u << ET_DTYPE_COUNT);

    /* errors name the file and the key */
    write_text(path, "{\"gflops\": {\"f33\": 1}}");
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "gflops.f33"));
    assert_non_null(strstr(err.msg, "vendor.json"));
    write_text(path, "{\"bandwidth_gbs\": -3}");
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "bandwidth_gbs"));
    write_text(path, "{\"gflops\": {\"f32\": \"fast\"}}");
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err),
                     ET_ERR_INPUT);
    write_text(path, "{}");
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err),
                     ET_ERR_INPUT);
    write_text(path, "\n\n[1, 2");
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "vendor.json:3"));
    snprintf(path, sizeof(path), "%s/absent.json", tmpdir);
    assert_int_equal(et_peaks_read_file(path, &p, &given, &err), ET_ERR_IO);
}

/* et_peaks_get without device calls: complete override, cache hit, and a
 * partial override over the cache. A device with no function table would
 * crash if anything were measured. */
static void test_peaks_get(void **state)
{
    (void)state;
    et_device dev;
    memset(&dev, 0, sizeof(dev));
    dev.info = info_of("Vendor Accelerator X", "7.0");
    et_error err = {{0}};
    char path[400];
    snprintf(path, sizeof(path), "%s/override.json", tmpdir);

    write_text(path, "{\"device\": {\"name\": \"accelerator x\"},\n"
                     " \"gflops\": {\"f32\": 2000, \"f64\": 1000},\n"
                     " \"bandwidth_gbs\": 300}");
    et_peaks_get_opts o;
    memset(&o, 0, sizeof(o));
    o.peaks_file = path;
    et_peaks p;
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(p.source, ET_PEAKS_OVERRIDE);
    assert_string_equal(p.device_name, "Vendor Accelerator X");
    assert_close(p.gflops[ET_F32], 2000);
    assert_close(p.bandwidth_gbs, 300);

    /* the same through $ET_PEAKS_FILE */
    o.peaks_file = NULL;
    setenv("ET_PEAKS_FILE", path, 1);
    memset(&p, 0, sizeof(p));
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_close(p.gflops[ET_F64], 1000);
    unsetenv("ET_PEAKS_FILE");

    /* a file for another device is refused */
    write_text(path, "{\"device\": {\"name\": \"Other GPU\"},\n"
                     " \"gflops\": {\"f32\": 2000}, \"bandwidth_gbs\": 1}");
    o.peaks_file = path;
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "Other GPU"));

    /* a cached device with a partial override: bandwidth from the file */
    et_peaks c = peaks_of(111, 55, 22);
    snprintf(c.device_name, sizeof(c.device_name), "%s", dev.info.name);
    snprintf(c.driver, sizeof(c.driver), "%s", dev.info.driver_version);
    c.gflops_spread[ET_F32] = (et_spread){5, 100, 105, 111};
    assert_int_equal(et_peaks_store(&c, &err), ET_OK);
    write_text(path, "{\"bandwidth_gbs\": 99.5}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(p.source, ET_PEAKS_OVERRIDE);
    assert_close(p.gflops[ET_F32], 111);
    assert_int_equal(p.gflops_spread[ET_F32].runs, 5);
    assert_close(p.bandwidth_gbs, 99.5);
    /* without the file: the cache */
    o.peaks_file = NULL;
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(p.source, ET_PEAKS_CACHED);
    assert_close(p.bandwidth_gbs, 22);
}

/* ---- memory levels, read-only and copy figures -------------------------- */

/* DRAM read 40 / copy 30; L1 (64 KiB) 400 / 300; L2 (2 MiB) 100 / 150;
 * L3 (32 MiB) 80 / 20. */
static et_peaks planted_levels(void)
{
    et_peaks p = peaks_of(1000, 500, 30);
    p.level[ET_MEM_DRAM].gbs[ET_BW_READ] = 40;
    p.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 30;
    const int64_t cap[3] = {64 << 10, 2 << 20, 32 << 20};
    const double rd[3] = {400, 100, 80}, cp[3] = {300, 150, 20};
    for (int l = 0; l < 3; l++) {
        p.level[l].capacity_bytes = cap[l];
        p.level[l].working_set_bytes = cap[l] / 2;
        p.level[l].gbs[ET_BW_READ] = rd[l];
        p.level[l].gbs[ET_BW_COPY] = cp[l];
    }
    return p;
}

/* The memory time of the model for R bytes read and W written at figures
 * rd and cp (GB/s), computed here from the formula in roofline.h. */
static double model_memory_s(double R, double W, double rd, double cp)
{
    double cw = fmax(0, 2 / (cp * 1e9) - 1 / (rd * 1e9));
    return fmax(R / (rd * 1e9) + W * cw, (R + W) / (fmax(rd, cp) * 1e9));
}

/* The sliced memory time of roofline.h, computed here: level l (capacity
 * cap[l], cumulative; the last one unbounded) serves the bytes between
 * cap[l - 1] and cap[l] at figures rd[l] / cp[l], reading and writing in
 * the problem's proportion. */
static double sliced_memory_s(double R, double W, int n, const double *cap,
                              const double *rd, const double *cp)
{
    double B = R + W, below = 0, t = 0;
    for (int l = 0; l < n && below < B; l++) {
        double upto = l == n - 1 || cap[l] > B ? B : cap[l];
        double slice = upto - below;
        t += model_memory_s(slice * R / B, slice * W / B, rd[l], cp[l]);
        below = upto;
    }
    return t;
}

/* planted_levels() after the raising: L1 400 / 300, L2 150 / 150 (read
 * raised to copy), L3 80 / 30 (copy raised to DRAM's), DRAM 40 / 30. */
static const double PL_CAP[4] = {64 << 10, 2 << 20, 32 << 20, 0};
static const double PL_RD[4] = {400, 150, 80, 40};
static const double PL_CP[4] = {300, 150, 30, 30};

static double planted_memory_s(double R, double W)
{
    return sliced_memory_s(R, W, 4, PL_CAP, PL_RD, PL_CP);
}

static void memory_ok(const et_peaks *p, int64_t R, int64_t W,
                      et_mem_level level, double rd, double cp,
                      double expect_s, int64_t closer)
{
    int64_t ops[ET_DTYPE_COUNT] = {0};
    et_roofline r;
    char why[200];
    et_status st = et_roofline_from_counts(ops, R, W, p, &r, why,
                                           sizeof why);
    if (st != ET_OK)
        fail_msg("%lld/%lld bytes: %s", (long long)R, (long long)W, why);
    if (r.level != level)
        fail_msg("%lld bytes: level %s, expected %s", (long long)(R + W),
                 et_mem_level_name(r.level), et_mem_level_name(level));
    assert_int_equal(r.read_bytes, R);
    assert_int_equal(r.write_bytes, W);
    assert_close(r.read_gbs, rd);
    assert_close(r.copy_gbs, cp);
    assert_close(r.memory_s, expect_s);
    assert_int_equal(r.closer_bytes, closer);
    assert_close(r.bandwidth_gbs, (double)(R + W) / r.memory_s / 1e9);
    assert_close(r.time_s, r.memory_s);
    assert_int_equal(r.bound, ET_BOUND_MEMORY);
}

/* memory_ok on planted_levels() */
static void planted_ok(const et_peaks *p, int64_t R, int64_t W,
                       et_mem_level level, int64_t closer)
{
    memory_ok(p, R, W, level, PL_RD[level], PL_CP[level],
              planted_memory_s((double)R, (double)W), closer);
}

static void test_memory_levels(void **state)
{
    (void)state;
    et_peaks p = planted_levels();
    /* within L1: L1's figures for every byte */
    planted_ok(&p, 32 << 10, 0, ET_MEM_L1, 0);
    planted_ok(&p, 64 << 10, 0, ET_MEM_L1, 0);
    memory_ok(&p, 64 << 10, 0, ET_MEM_L1, 400, 300,
              (double)(64 << 10) / 400e9, 0);
    /* one byte more: 64 KiB at L1's figures, the byte at L2's (its read
     * figure 100 is below its copy figure: raised to 150) */
    planted_ok(&p, (64 << 10) + 1, 0, ET_MEM_L2, 64 << 10);
    memory_ok(&p, (64 << 10) + 1, 0, ET_MEM_L2, 150, 150,
              (double)(64 << 10) / 400e9 + 1 / 150e9, 64 << 10);
    planted_ok(&p, 1 << 20, 1 << 20, ET_MEM_L2, 64 << 10);
    /* L3's copy figure (20) is below DRAM's (30): raised to it */
    planted_ok(&p, 16 << 20, 0, ET_MEM_L3, 2 << 20);
    planted_ok(&p, 8 << 20, 8 << 20, ET_MEM_L3, 2 << 20);
    planted_ok(&p, 100 << 20, 0, ET_MEM_DRAM, 32 << 20);
    /* the slices by hand: 100 MiB read-only is 64 KiB at 400, the rest of
     * 2 MiB at 150, the rest of 32 MiB at 80, 68 MiB at 40 */
    int64_t ops[ET_DTYPE_COUNT] = {0};
    et_roofline r;
    assert_int_equal(et_roofline_from_counts(ops, 100 << 20, 0, &p, &r,
                                             NULL, 0), ET_OK);
    assert_close(r.memory_s, (double)(64 << 10) / 400e9 +
                                 (double)((2 << 20) - (64 << 10)) / 150e9 +
                                 (double)(30 << 20) / 80e9 +
                                 (double)(68 << 20) / 40e9);
    /* a ceiling never drops as the problem grows: the time never falls */
    double last = 0;
    for (int64_t b = 1 << 10; b <= (256LL << 20); b += b / 3 + 1) {
        assert_int_equal(et_roofline_from_counts(ops, b - b / 4, b / 4, &p,
                                                 &r, NULL, 0), ET_OK);
        if (r.memory_s < last)
            fail_msg("%lld bytes: %g s, below %g s for fewer bytes",
                     (long long)b, r.memory_s, last);
        last = r.memory_s;
    }
    /* the exact ends of T at one level (classic peaks, one DRAM level):
     * read-only is R / read, a copy (as many bytes written as read)
     * 2R / copy, a quarter written linear between */
    et_peaks d = peaks_of(1000, 500, 30);
    d.level[ET_MEM_DRAM].gbs[ET_BW_READ] = 40;
    d.level[ET_MEM_DRAM].gbs[ET_BW_COPY] = 30;
    assert_int_equal(et_roofline_from_counts(ops, 100 << 20, 0, &d, &r,
                                             NULL, 0), ET_OK);
    assert_close(r.memory_s, (double)(100 << 20) / 40e9);
    assert_int_equal(et_roofline_from_counts(ops, 50 << 20, 50 << 20, &d,
                                             &r, NULL, 0), ET_OK);
    assert_close(r.memory_s, (double)(100 << 20) / 30e9);
    assert_int_equal(et_roofline_from_counts(ops, 75 << 20, 25 << 20, &d,
                                             &r, NULL, 0), ET_OK);
    double t_read = (double)(100 << 20) / 40e9;
    double t_copy = (double)(100 << 20) / 30e9;
    assert_close(r.memory_s, t_read + 0.5 * (t_copy - t_read));
    char label[96];
    assert_string_equal(et_roofline_bandwidth_label(&r, label, sizeof label),
                        "34.3 GB/s (DRAM, read/copy mix)");
    /* with the levels the label says how much the caches served */
    assert_int_equal(et_roofline_from_counts(ops, 75 << 20, 25 << 20, &p,
                                             &r, NULL, 0), ET_OK);
    snprintf(label, sizeof label, "%.1f GB/s (DRAM, read/copy mix; 32 MiB "
             "of it from closer caches)", (double)(100 << 20) / r.memory_s /
             1e9);
    char got[96];
    assert_string_equal(et_roofline_bandwidth_label(&r, got, sizeof got),
                        label);
    /* a level that was not measured is skipped: L2 serves from byte 0 */
    p.level[ET_MEM_L1].capacity_bytes = 0;
    memory_ok(&p, 32 << 10, 0, ET_MEM_L2, 150, 150,
              (double)(32 << 10) / 150e9, 0);
    memory_ok(&p, 4 << 20, 0, ET_MEM_L3, 80, 30,
              (double)(2 << 20) / 150e9 + (double)(2 << 20) / 80e9, 2 << 20);

    /* through einsums: a row sum reads 257x what it writes: read-only */
    p = planted_levels();
    et_einsum e;
    einsum_ok("xij->xi", "x=512,i=256,j=256", "f32", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.read_bytes, 512LL * 256 * 256 * 4);
    assert_int_equal(r.write_bytes, 512LL * 256 * 4);
    assert_int_equal(r.level, ET_MEM_DRAM);
    assert_close(r.memory_s, planted_memory_s((double)r.read_bytes,
                                              (double)r.write_bytes));
    et_roofline_bandwidth_label(&r, label, sizeof label);
    assert_non_null(strstr(label, "(DRAM, read-only; 32 MiB of it from "
                                  "closer caches)"));
    /* a transpose that fits L1: the copy figure of L1 */
    einsum_ok("ij->ji", "i=64,j=64", "f32", &e);
    roofline_ok(&e, &p, &r);
    assert_int_equal(r.level, ET_MEM_L1);
    assert_close(r.memory_s, 32768.0 / 300e9);
    assert_string_equal(et_roofline_bandwidth_label(&r, label, sizeof label),
                        "300.0 GB/s (L1, copy)");
    /* the report and JSON say which figure */
    cJSON *m = et_roofline_memory_json(&r);
    assert_non_null(m);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(m, "level")->valuestring, "L1");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(m, "label")->valuestring,
        "300.0 GB/s (L1, copy)");
    assert_close(cJSON_GetObjectItemCaseSensitive(m, "copy_gbs")->valuedouble,
                 300);
    cJSON_Delete(m);
    char path[400];
    snprintf(path, sizeof path, "%s/table.txt", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    et_roofline_table(f, &r, 2 * r.time_s);
    et_roofline_print(f, &r, &p);
    fclose(f);
    char *text = read_all(path, NULL);
    assert_int_equal(count_of(text, "300.0 GB/s (L1, copy)"), 2);
    free(text);

    /* peaks with only the classic figure: B / bandwidth_gbs everywhere */
    p = peaks_of(100, 50, 25);
    memory_ok(&p, 1000, 0, ET_MEM_DRAM, 25, 25, 1000 / 25e9, 0);
    memory_ok(&p, 600, 400, ET_MEM_DRAM, 25, 25, 1000 / 25e9, 0);
    assert_int_equal(et_roofline_from_counts(ops, 600, 400, &p, &r, NULL, 0),
                     ET_OK);
    assert_close(r.memory_s, 1000 / 25e9);
}

/* An override file's bandwidth figures over the cache's (levels, DRAM
 * read): bandwidth_gbs alone stands for every figure; "bandwidth" and
 * "levels" replace theirs. */
static void test_override_levels(void **state)
{
    (void)state;
    et_device dev;
    memset(&dev, 0, sizeof(dev));
    dev.info = info_of("Levelled Device", "2.0");
    et_error err = {{0}};
    et_peaks c = planted_levels();
    snprintf(c.device_name, sizeof(c.device_name), "%s", dev.info.name);
    snprintf(c.driver, sizeof(c.driver), "%s", dev.info.driver_version);
    assert_int_equal(et_peaks_store(&c, &err), ET_OK);
    char path[400];
    snprintf(path, sizeof(path), "%s/levels.json", tmpdir);
    et_peaks_get_opts o;
    memset(&o, 0, sizeof(o));
    et_peaks p;
    /* the cache alone keeps its levels */
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(p.source, ET_PEAKS_CACHED);
    assert_int_equal(et_peaks_level_for(&p, 1000, NULL, NULL), ET_MEM_L1);

    /* bandwidth_gbs only: read = copy = it, no levels */
    o.peaks_file = path;
    write_text(path, "{\"bandwidth_gbs\": 99.5}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(p.source, ET_PEAKS_OVERRIDE);
    assert_close(p.gflops[ET_F32], 1000); /* from the cache */
    double rd = 0, cp = 0;
    assert_int_equal(et_peaks_level_for(&p, 1000, &rd, &cp), ET_MEM_DRAM);
    assert_close(rd, 99.5);
    assert_close(cp, 99.5);
    for (int l = 0; l < ET_MEM_DRAM; l++)
        assert_int_equal(p.level[l].capacity_bytes, 0);

    /* with its own read figure */
    write_text(path, "{\"bandwidth_gbs\": 99.5,\n"
                     " \"bandwidth\": {\"read\": {\"gbs\": 150}}}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_int_equal(et_peaks_level_for(&p, 1000, &rd, &cp), ET_MEM_DRAM);
    assert_close(rd, 150);
    assert_close(cp, 99.5);

    /* with levels; a complete override (no cache needed) */
    write_text(path, "{\"gflops\": {\"f32\": 10, \"f64\": 5},\n"
                     " \"bandwidth_gbs\": 50,\n"
                     " \"levels\": [{\"level\": \"L2\", \"capacity_bytes\":"
                     " 1048576, \"read\": {\"gbs\": 500}, \"copy\": "
                     "{\"gbs\": 400}}]}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_OK);
    assert_close(p.gflops[ET_F32], 10);
    assert_int_equal(et_peaks_level_for(&p, 1 << 19, &rd, &cp), ET_MEM_L2);
    assert_close(rd, 500);
    assert_close(cp, 400);
    assert_int_equal(et_peaks_level_for(&p, 2 << 20, &rd, &cp), ET_MEM_DRAM);
    assert_close(rd, 50);

    /* malformed levels and bandwidth are refused, naming the key */
    write_text(path, "{\"bandwidth_gbs\": 50, \"levels\": [{\"level\": "
                     "\"L7\", \"capacity_bytes\": 1, \"read\": {\"gbs\": "
                     "1}}]}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "levels"));
    write_text(path, "{\"bandwidth_gbs\": 50, \"bandwidth\": {\"read\": "
                     "{\"gbs\": -1}}}");
    assert_int_equal(et_peaks_get(&dev, &o, &p, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "bandwidth"));
}

/* Peaks in the database from older micro-benchmarks are a miss. */
static void test_peaks_db_version(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof(path), "%s/tuning.db", tmpdir);
    et_error err = {{0}};
    et_db *db = NULL;
    assert_int_equal(et_db_open(path, &db, &err), ET_OK);
    et_device_info info = info_of("DB Device", "1.5");
    int64_t id = 0;
    assert_int_equal(et_db_device_id(db, &info, &id, &err), ET_OK);
    et_peaks p = planted_levels();
    snprintf(p.device_name, sizeof(p.device_name), "%s", info.name);
    snprintf(p.driver, sizeof(p.driver), "%s", info.driver_version);
    for (int version = 1; version <= ET_PEAKS_BENCH_VERSION; version++) {
        p.bench_version = version;
        cJSON *doc = et_peaks_to_json(&p);
        char *text = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        assert_int_equal(et_db_peaks_store(db, id, text, 0, &err), ET_OK);
        cJSON_free(text);
        et_peaks q;
        et_status st = et_peaks_db_load(db, &info, &q, &err);
        if (version < ET_PEAKS_BENCH_VERSION) {
            assert_int_equal(st, ET_ERR_IO);
            assert_non_null(strstr(err.msg, "older micro-benchmarks"));
        } else {
            assert_int_equal(st, ET_OK);
            assert_close(q.level[ET_MEM_L2].gbs[ET_BW_COPY], 150);
            assert_int_equal(q.level[ET_MEM_L3].capacity_bytes, 32 << 20);
        }
    }
    et_db_close(db);
}

/* The variant search on planted rates. */
typedef struct planted {
    int calls;
    int seen[64][2];
    const double (*table)[5]; /* rate[a index][b index] */
    const int *a_vals, *b_vals;
    int na, nb;
} planted;

static int index_of(const int *vals, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (vals[i] == v)
            return i;
    fail_msg("value %d not in the grid", v);
    return -1;
}

static double planted_rate(void *arg, const int *pt)
{
    planted *pl = arg;
    for (int i = 0; i < pl->calls; i++)
        if (pl->seen[i][0] == pt[0] && pl->seen[i][1] == pt[1])
            fail_msg("variant (%d, %d) timed twice", pt[0], pt[1]);
    assert_true(pl->calls < 64);
    pl->seen[pl->calls][0] = pt[0];
    pl->seen[pl->calls][1] = pt[1];
    pl->calls++;
    return pl->table[index_of(pl->a_vals, pl->na, pt[0])]
                    [index_of(pl->b_vals, pl->nb, pt[1])];
}

static void test_variant_search(void **state)
{
    (void)state;
    /* separable: width x per-item; width 16 cannot run (0) */
    static const int widths[] = {1, 2, 4, 8, 16}, items[] = {1, 4, 16};
    static const double sep[5][5] = {
        {1 * 1, 1 * 3, 1 * 2}, {2 * 1, 2 * 3, 2 * 2},
        {3 * 1, 3 * 3, 3 * 2}, {5 * 1, 5 * 3, 5 * 2}, {0, 0, 0}};
    planted pl = {0, {{0}}, sep, widths, items, 5, 3};
    et_vsearch_dim dims[2] = {{"width", widths, 5}, {"items", items, 3}};
    int pt[2] = {1, 1};
    double best = 0;
    int evals = et_vsearch_run(dims, 2, pt, &best, planted_rate, &pl);
    assert_int_equal(pt[0], 8);
    assert_int_equal(pt[1], 4);
    assert_close(best, 15);
    /* the coarse pass: the start, 4 widths, 2 per-item counts; the next
     * pass: the 4 other widths at 4 per item, nothing better: stop */
    assert_int_equal(evals, 7 + 4);
    assert_int_equal(pl.calls, evals);

    /* an interaction only a second pass finds */
    static const int as[] = {0, 1, 2, 3}, bs[] = {0, 1, 2};
    static const double inter[5][5] = {
        {1, 0.1, 1}, {2, 2.5, 3}, {1.5, 0.1, 2}, {0.5, 1, 4}};
    planted p2 = {0, {{0}}, inter, as, bs, 4, 3};
    et_vsearch_dim d2[2] = {{"a", as, 4}, {"b", bs, 3}};
    int q[2] = {0, 0};
    evals = et_vsearch_run(d2, 2, q, &best, planted_rate, &p2);
    assert_int_equal(q[0], 3);
    assert_int_equal(q[1], 2);
    assert_close(best, 4);
    assert_int_equal(p2.calls, evals);

    /* a start that nothing beats stays; bad dimensions time nothing */
    static const double flat[5][5] = {{9, 1, 1}, {1, 1, 1}, {1, 1, 1},
                                      {1, 1, 1}};
    planted p3 = {0, {{0}}, flat, as, bs, 4, 3};
    int r0[2] = {0, 0};
    evals = et_vsearch_run(d2, 2, r0, &best, planted_rate, &p3);
    assert_int_equal(r0[0], 0);
    assert_int_equal(r0[1], 0);
    assert_int_equal(evals, 1 + 3 + 2);
    assert_int_equal(et_vsearch_run(d2, 0, r0, &best, planted_rate, &p3), 0);
    assert_int_equal(et_vsearch_run(d2, ET_VSEARCH_MAX_DIMS + 1, r0, &best,
                                    planted_rate, &p3), 0);
}

/* The CPU's caches from a sysfs-like tree. */
static void test_sysfs_caches(void **state)
{
    (void)state;
    char dir[400], sub[500], file[600];
    snprintf(dir, sizeof dir, "%s/sysfs", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    static const char *const rows[][4] = {
        {"1", "Data", "48K", "0"},
        {"1", "Instruction", "32K", "0"},
        {"2", "Unified", "1024K", "0"},
        {"3", "Unified", "32M", "0-1"},
    };
    static const char *const names[] = {"level", "type", "size",
                                        "shared_cpu_list"};
    for (int i = 0; i < 4; i++) {
        snprintf(sub, sizeof sub, "%s/index%d", dir, i);
        assert_int_equal(mkdir(sub, 0700), 0);
        for (int k = 0; k < 4; k++) {
            snprintf(file, sizeof file, "%s/%s", sub, names[k]);
            char line[32];
            snprintf(line, sizeof line, "%s\n", rows[i][k]);
            write_text(file, line);
        }
    }
    et_device_info info;
    memset(&info, 0, sizeof info);
    assert_int_equal(et_cpu_caches_sysfs(dir, &info), 3);
    assert_int_equal(info.cache[0].bytes, 48 << 10);
    assert_false(info.cache[0].shared);
    assert_int_equal(info.cache[1].bytes, 1 << 20);
    assert_false(info.cache[1].shared);
    assert_int_equal(info.cache[2].bytes, 32 << 20);
    assert_true(info.cache[2].shared);
    /* no such tree: nothing found, nothing changed */
    snprintf(sub, sizeof sub, "%s/absent", tmpdir);
    assert_int_equal(et_cpu_caches_sysfs(sub, &info), 0);
    assert_int_equal(info.cache[2].bytes, 32 << 20);
}

/* ---- plot --------------------------------------------------------------- */

/*
 * A small well-formedness check for XML (no libxml2 here): every tag is
 * closed in order, attribute values are quoted, comments, declarations
 * and the prolog are skipped. Returns the number of elements, or -1.
 */
static int xml_elements(const char *s, char *root, size_t root_cap)
{
    char stack[64][64];
    int depth = 0, elements = 0;
    root[0] = '\0';
    for (const char *p = s; *p;) {
        if (*p != '<') {
            if (depth == 0 && !strchr(" \t\r\n", *p))
                return -1; /* text outside the root */
            p++;
            continue;
        }
        if (!strncmp(p, "<?", 2) || !strncmp(p, "<!--", 4)) {
            const char *end = strstr(p, p[1] == '?' ? "?>" : "-->");
            if (!end)
                return -1;
            p = end + 2;
            continue;
        }
        int closing = p[1] == '/';
        const char *n = p + 1 + closing;
        size_t nl = strcspn(n, " \t\r\n/>");
        if (nl == 0 || nl >= 64)
            return -1;
        const char *q = n + nl;
        char quote = 0;
        for (; *q && (quote || *q != '>'); q++) {
            if (quote && *q == quote)
                quote = 0;
            else if (!quote && (*q == '"' || *q == '\''))
                quote = *q;
        }
        if (*q != '>')
            return -1;
        int empty = q[-1] == '/';
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], n, nl) != 0 ||
                stack[depth - 1][nl] != '\0')
                return -1;
            depth--;
        } else {
            if (depth == 0 && root[0])
                return -1; /* a second root */
            if (depth == 0)
                snprintf(root, root_cap, "%.*s", (int)nl, n);
            elements++;
            if (!empty) {
                if (depth == 64)
                    return -1;
                memcpy(stack[depth], n, nl);
                stack[depth][nl] = '\0';
                depth++;
            }
        }
        p = q + 1;
    }
    return depth == 0 && root[0] ? elements : -1;
}

static et_plot plot_fixture(et_peaks *p, et_plot_point *pts, int n)
{
    *p = peaks_of(232, 119.6, 40);
    for (int i = 0; i < n; i++) {
        pts[i].intensity = 0.25 * (1 + i % 3);
        pts[i].gops = 1.0 + 1.5 * i;
    }
    et_plot pl;
    memset(&pl, 0, sizeof pl);
    pl.peaks = p;
    pl.title = "ik,kj->ij  i=k=j=512 f32";
    pl.points = pts;
    pl.n_points = n;
    pl.best = n - 1;
    return pl;
}

static void test_plot_svg(void **state)
{
    (void)state;
    et_peaks p;
    et_plot_point pts[9];
    et_plot pl = plot_fixture(&p, pts, 9);
    pts[2].intensity = 0; /* a copy: left out of a log-log chart */
    pts[2].gops = 0;
    char path[400], why[512];
    snprintf(path, sizeof(path), "%s/roof.svg", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_OK);
    size_t len;
    char *svg = read_all(path, &len);
    assert_true(len > 1000);
    assert_true(strncmp(svg, "<?xml", 5) == 0);
    const char *end = svg + len;
    while (end > svg && strchr(" \r\n", end[-1]))
        end--;
    assert_true(end - svg > 6 && strncmp(end - 6, "</svg>", 6) == 0);
    char root[64];
    int elements = xml_elements(svg, root, sizeof(root));
    assert_true(elements > 20);
    assert_string_equal(root, "svg");
    /* 9 points: one hidden, one best; plus one legend sample each */
    assert_int_equal(count_of(svg, ET_PLOT_POINT_FILL), 7 + 1);
    assert_int_equal(count_of(svg, ET_PLOT_BEST_FILL), 1 + 1);
    free(svg);

    /* no best, no points: roofs alone */
    pl.best = -1;
    pl.n_points = 0;
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_OK);
    svg = read_all(path, &len);
    assert_int_equal(count_of(svg, ET_PLOT_BEST_FILL), 0);
    assert_int_equal(count_of(svg, ET_PLOT_POINT_FILL), 1);
    assert_true(xml_elements(svg, root, sizeof(root)) > 0);
    free(svg);
}

/* With trials: the convergence panel beside the roofline (twice as wide),
 * one marker per timed trial, the roofs of the problem's dtypes only, and
 * the title, subtitle and axis titles as SVG text; the candidates of one
 * intensity are spread and the legend says so. */
static void test_plot_convergence(void **state)
{
    (void)state;
    et_peaks p;
    et_plot_point pts[6];
    et_plot pl = plot_fixture(&p, pts, 6);
    for (int i = 0; i < 6; i++)
        pts[i].intensity = 0.5; /* one einsum: one intensity */
    /* 8 trials: 6 timed (one from the database, the 5th the best), 2
     * refused */
    et_plot_trial tr[8] = {
        {0.4, 2e-3, 0}, {0.9, 0, 0},    {1.3, 1.1e-3, 1}, {1.8, 9e-4, 0},
        {2.0, 0, 0},    {2.6, 4e-4, 0}, {3.1, 6e-4, 0},   {3.5, 1.5e-3, 0},
    };
    pl.trials = tr;
    pl.n_trials = 8;
    pl.best_trial = 5;
    pl.run_s = 3.8;
    pl.baseline_s = 2e-3;
    pl.roofline_s = 1e-4;
    pl.roof_dtypes = 1u << ET_F32;
    pl.subtitle = "test device (opencl)   beam search";
    char path[400], why[512];
    snprintf(path, sizeof(path), "%s/conv.svg", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_OK);
    size_t len;
    char *svg = read_all(path, &len);
    char root[64];
    assert_true(xml_elements(svg, root, sizeof(root)) > 20);
    assert_string_equal(root, "svg");
    assert_non_null(strstr(svg, "width=\"1680\""));
    assert_non_null(strstr(svg, "<title>ik,kj-&gt;ij  i=k=j=512 f32 "
                                "\xe2\x80\x94 test device (opencl)   beam "
                                "search</title>"));
    assert_non_null(strstr(svg, ET_PLOT_CONV_X_LABEL));
    assert_non_null(strstr(svg, ET_PLOT_CONV_Y_LABEL));
    assert_non_null(strstr(svg, "f32 peak 232.0 GFLOP/s"));
    assert_null(strstr(svg, "f64 peak"));
    assert_non_null(strstr(svg, "(400 \xc2\xb5s at 2.6 s)"));
    /* 6 timed: 1 best (diamond), 1 hollow, 4 filled, + legend sample */
    assert_int_equal(count_of(svg, ET_PLOT_CONV_FILL), 4 + 1);
    /* the roofline panel as before: 5 points + legend, best + legend */
    assert_int_equal(count_of(svg, ET_PLOT_POINT_FILL), 5 + 1);
    assert_int_equal(count_of(svg, ET_PLOT_BEST_FILL), 1 + 1);
    free(svg);

    snprintf(path, sizeof(path), "%s/conv.png", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_OK);
    unsigned char *png = (unsigned char *)read_all(path, &len);
    assert_true(len > 33);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_int_equal(png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19],
                     1680);
    assert_int_equal(png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23],
                     700);
    free(png);
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
           b[3];
}

static void test_plot_png_and_errors(void **state)
{
    (void)state;
    et_peaks p;
    et_plot_point pts[5];
    et_plot pl = plot_fixture(&p, pts, 5);
    char path[400], why[512];
    snprintf(path, sizeof(path), "%s/roof.PNG", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_OK);
    size_t len;
    unsigned char *png = (unsigned char *)read_all(path, &len);
    assert_true(len > 33);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G',
                                         '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(png, sig, 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    assert_int_equal(be32(png + 16), 960);
    assert_int_equal(be32(png + 20), 640);
    free(png);

    snprintf(path, sizeof(path), "%s/roof.pdf", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)),
                     ET_ERR_INPUT);
    assert_non_null(strstr(why, ".svg or .png"));
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/dir.svg/plot", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)),
                     ET_ERR_INPUT);
    snprintf(path, sizeof(path), "%s/no/such/dir/roof.svg", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_ERR_IO);
    snprintf(path, sizeof(path), "%s/no/such/dir/roof.png", tmpdir);
    assert_int_equal(et_plot_write(path, &pl, why, sizeof(why)), ET_ERR_IO);
}

/* ---- micro-benchmarks on the device ------------------------------------- */

static void test_sources(void **state)
{
    (void)state;
    const char *name = NULL;
    char *s = et_peaks_fma_source(ET_BACKEND_OPENCL, ET_F32, 16, 12, &name);
    assert_non_null(s);
    assert_string_equal(name, "et_peak_fma_f32");
    assert_non_null(strstr(s, "float16 x11"));
    assert_null(strstr(s, "x12"));
    assert_non_null(strstr(s, "fma(x0, a, b)"));
    assert_null(strstr(s, "fast"));
    free(s);
    /* the chains are the variant's */
    s = et_peaks_fma_source(ET_BACKEND_OPENCL, ET_F32, 2, 4, &name);
    assert_non_null(strstr(s, "float2 x3"));
    assert_null(strstr(s, "x4"));
    free(s);
    s = et_peaks_fma_source(ET_BACKEND_OPENCL, ET_F64, 8, 12, &name);
    assert_non_null(strstr(s, "cl_khr_fp64"));
    assert_non_null(strstr(s, "double8"));
    free(s);
    s = et_peaks_fma_source(ET_BACKEND_OPENCL, ET_F16, 8, 12, &name);
    assert_non_null(strstr(s, "cl_khr_fp16"));
    assert_non_null(strstr(s, "half8"));
    free(s);
    s = et_peaks_fma_source(ET_BACKEND_CUDA, ET_F32, 16, 16, &name);
    assert_non_null(strstr(s, "extern \"C\" __global__"));
    assert_non_null(strstr(s, "fmaf(x15, a, b)"));
    free(s);
    s = et_peaks_fma_source(ET_BACKEND_CUDA, ET_F16, 16, 12, &name);
    assert_non_null(strstr(s, "fma.rn.f16x2"));
    free(s);

    /* bandwidth: the variant shapes the source */
    et_bw_variant v = {8, 4, 0, ET_BW_CHUNK};
    s = et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_READ, &v, &name);
    assert_string_equal(name, "et_peak_read");
    assert_non_null(strstr(s, "typedef float8 VT;"));
    assert_non_null(strstr(s, "s3 += a[GID * 4 + 3];"));
    /* a read-only kernel: its one store is under a condition the data
     * never meets */
    assert_non_null(strstr(s, "if (t == -1.0f)"));
    assert_int_equal(count_of(s, "out["), 1);
    free(s);
    v = (et_bw_variant){1, 2, 64, ET_BW_STRIDED};
    s = et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_COPY, &v, &name);
    assert_string_equal(name, "et_peak_copy");
    assert_non_null(strstr(s, "typedef float VT;"));
    assert_non_null(strstr(s, "out[GID + 1 * GSIZE] = a[GID + 1 * GSIZE];"));
    free(s);
    v = (et_bw_variant){4, 4, 1, ET_BW_WALK};
    s = et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_READ, &v, &name);
    assert_non_null(strstr(s, "prm[1]"));
    assert_non_null(strstr(s, "& (n - 1)"));
    free(s);
    v = (et_bw_variant){4, 4, 256, ET_BW_SWEEP};
    s = et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_COPY, &v, &name);
    assert_non_null(strstr(s, "j += LSIZE * 4"));
    free(s);
    v = (et_bw_variant){16, 4, 0, ET_BW_CHUNK};
    s = et_peaks_bw_source(ET_BACKEND_CUDA, ET_BW_READ, &v, &name);
    assert_non_null(strstr(s, "extern \"C\""));
    assert_non_null(strstr(s, "typedef float VT;")); /* CUDA: scalars */
    free(s);
    v.pattern = ET_BW_PATTERN_COUNT;
    assert_null(et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_READ, &v, &name));
    assert_null(et_peaks_bw_source(ET_BACKEND_OPENCL, ET_BW_COUNT, &v, &name));
}

/* The CUDA sources compile with NVRTC (no GPU needed), f16 included.
 * Under valgrind (ET_UNDER_VALGRIND), where each NVRTC compile takes tens
 * of seconds, only the f16 FMA source (inline PTX) and the first
 * bandwidth source are compiled. */
static void test_cuda_sources_compile(void **state)
{
    (void)state;
    et_error err = {{0}};
    if (!et_cuda_have_nvrtc(&err)) {
        fprintf(stderr, "  no NVRTC (%s): skipped\n", err.msg);
        skip();
    }
    const bool vg = getenv("ET_UNDER_VALGRIND") != NULL;
    /* the FMA sources, then each bandwidth kind in each pattern */
    for (int i = 0; i < ET_DTYPE_COUNT + ET_BW_COUNT * ET_BW_PATTERN_COUNT;
         i++) {
        if (vg && i != ET_F16 && i != ET_DTYPE_COUNT)
            continue;
        const char *name = NULL;
        int b = i - ET_DTYPE_COUNT;
        et_bw_variant v = {1, 4, 0, (et_bw_pattern)(b / ET_BW_COUNT)};
        char *src = i < ET_DTYPE_COUNT
                        ? et_peaks_fma_source(ET_BACKEND_CUDA, (et_dtype)i, 1,
                                              12, &name)
                        : et_peaks_bw_source(ET_BACKEND_CUDA,
                                             (et_bw_kind)(b % ET_BW_COUNT),
                                             &v, &name);
        assert_non_null(src);
        char *ptx = NULL;
        size_t len = 0;
        et_status st = et_cuda_compile_ptx(src, "compute_90", &ptx, &len, &err);
        if (st != ET_OK)
            fail_msg("%s: %s\n%s", name, err.msg, src);
        assert_non_null(strstr(ptx, name));
        free(ptx);
        free(src);
    }
}

static void logline(void *arg, const char *msg)
{
    int *n = arg;
    (*n)++;
    if (getenv("ET_TEST_VERBOSE"))
        fprintf(stderr, "  %s\n", msg);
}

/* The suite's device (tests/suite_device.h; the test is skipped without
 * one) and quick measurement options for it. */
static et_device *quick_device(et_peaks_opts *o)
{
    et_device *dev = NULL;
    et_error err = {{0}};
    if (et_device_open(td_device(), &dev, &err) != ET_OK) {
        fprintf(stderr, "  no device %s (%s): skipped\n", td_spec(), err.msg);
        skip();
    }
    memset(o, 0, sizeof(*o));
    o->quick = true;
    /* under valgrind: 1 MiB bandwidth buffers instead of quick's 4 MiB */
    if (getenv("ET_UNDER_VALGRIND"))
        o->bw_bytes = (size_t)1 << 20;
    return dev;
}

static void test_measure_pocl(void **state)
{
    (void)state;
    et_error err = {{0}};
    et_peaks_opts o;
    et_device *dev = quick_device(&o);
    int lines = 0;
    o.log = logline;
    o.log_arg = &lines;
    et_peaks p;
    et_status st = et_peaks_measure(dev, &o, &p, &err);
    if (st != ET_OK)
        fail_msg("et_peaks_measure: %s: %s", et_status_str(st), err.msg);
    assert_int_equal(p.source, ET_PEAKS_MEASURED);
    assert_string_equal(p.device_name, dev->info.name);
    assert_string_equal(p.driver, dev->info.driver_version);
    assert_true(isfinite(p.gflops[ET_F32]) && p.gflops[ET_F32] > 0);
    if (dev->info.target.has_fp64)
        assert_true(isfinite(p.gflops[ET_F64]) && p.gflops[ET_F64] > 0);
    if (!dev->info.target.has_fp16)
        assert_true(p.gflops[ET_F16] == 0);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p.gflops[t] > 0) {
            const et_spread *s = &p.gflops_spread[t];
            assert_int_equal(s->runs, 2);
            assert_true(s->min > 0 && s->min <= s->median &&
                        s->median <= s->max && s->max <= p.gflops[t]);
        }
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p.gflops[t] > 0) {
            assert_true(p.fma_variant[t].width >= 1);
            assert_true(p.fma_variant[t].chains >= 1);
            assert_true(p.fma_variant[t].local >= 1);
        }
    assert_int_equal(p.bench_version, ET_PEAKS_BENCH_VERSION);
    const et_level_bw *d = &p.level[ET_MEM_DRAM];
    for (int k = 0; k < ET_BW_COUNT; k++) {
        assert_true(isfinite(d->gbs[k]) && d->gbs[k] > 0);
        assert_true(d->spread[k].min <= d->spread[k].max);
        assert_true(d->spread[k].max <= d->gbs[k]);
        assert_true(d->variant[k].width >= 1);
        assert_true(d->variant[k].pattern == ET_BW_CHUNK ||
                    d->variant[k].pattern == ET_BW_STRIDED);
    }
    assert_close(p.bandwidth_gbs, d->gbs[ET_BW_COPY]);
    /* quick measures the first cache level the device reports */
    if (dev->info.cache[0].bytes > 0) {
        const et_level_bw *l1 = &p.level[ET_MEM_L1];
        assert_true(l1->capacity_bytes >= dev->info.cache[0].bytes);
        assert_true(l1->working_set_bytes > 0 &&
                    l1->working_set_bytes <= l1->capacity_bytes);
        for (int k = 0; k < ET_BW_COUNT; k++) {
            assert_true(isfinite(l1->gbs[k]) && l1->gbs[k] > 0);
            assert_true(l1->variant[k].pattern ==
                        (dev->info.is_cpu ? ET_BW_WALK : ET_BW_SWEEP));
        }
    }
    assert_true(lines >= 3);

    /* through et_peaks_get: measured, stored, then a cache hit */
    et_peaks_get_opts g;
    memset(&g, 0, sizeof(g));
    g.remeasure = true;
    g.measure = o;
    et_peaks q;
    assert_int_equal(et_peaks_get(dev, &g, &q, &err), ET_OK);
    assert_int_equal(q.source, ET_PEAKS_MEASURED);
    g.remeasure = false;
    et_peaks c;
    assert_int_equal(et_peaks_get(dev, &g, &c, &err), ET_OK);
    assert_int_equal(c.source, ET_PEAKS_CACHED);
    assert_close(c.gflops[ET_F32], q.gflops[ET_F32]);
    assert_close(c.bandwidth_gbs, q.bandwidth_gbs);
    et_device_close(dev);
}

/* The notes of one measurement, kept. */
typedef struct notes {
    char text[64][320];
    int n;
} notes;

static void keep_note(void *arg, const char *msg)
{
    notes *nt = arg;
    if (nt->n < 64)
        snprintf(nt->text[nt->n++], sizeof nt->text[0], "%s", msg);
    if (getenv("ET_TEST_VERBOSE"))
        fprintf(stderr, "  %s\n", msg);
}

/* The figure a pass gave ("this pass X") in the note of figure `what`
 * ("f32 FMA:", "DRAM read bandwidth:") of pass `pass` (1, 2). */
static double pass_figure(const notes *nt, const char *what, int pass)
{
    for (int i = 0; i < nt->n; i++) {
        const char *t = nt->text[i];
        if (strncmp(t, what, strlen(what)) != 0)
            continue;
        if ((strstr(t, "pass 2: the winner again") != NULL) != (pass == 2))
            continue;
        const char *x = strstr(t, "(this pass ");
        return x ? strtod(x + strlen("(this pass "), NULL) : -1;
    }
    return -1;
}

/* Two passes: every figure searched once, its winner timed again, and the
 * figure the faster of the two passes, with the runs of both. */
static void test_measure_two_passes(void **state)
{
    (void)state;
    et_error err = {{0}};
    et_peaks_opts o;
    et_device *dev = quick_device(&o);
    o.passes = 2;
    static notes nt;
    nt.n = 0;
    o.log = keep_note;
    o.log_arg = &nt;
    et_peaks p;
    et_status st = et_peaks_measure(dev, &o, &p, &err);
    if (st != ET_OK)
        fail_msg("et_peaks_measure: %s: %s", et_status_str(st), err.msg);
    int seconds = 0;
    for (int i = 0; i < nt.n; i++)
        seconds += strstr(nt.text[i], "pass 2: the winner again") != NULL;
    int figures = 1 + (p.gflops[ET_F64] > 0) + (p.gflops[ET_F16] > 0) + 2 +
                  (p.level[ET_MEM_L1].gbs[ET_BW_COPY] > 0 ? 2 : 0);
    assert_int_equal(seconds, figures);
    /* each figure: both passes' runs, and the faster pass (notes round
     * to 0.1) */
    char what[64];
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(p.gflops[t] > 0))
            continue;
        assert_int_equal(p.gflops_spread[t].runs, 4);
        snprintf(what, sizeof what, "%s FMA:", et_dtype_name((et_dtype)t));
        double a = pass_figure(&nt, what, 1), b = pass_figure(&nt, what, 2);
        assert_true(a > 0 && b > 0);
        if (fabs(p.gflops[t] - fmax(a, b)) > 0.051)
            fail_msg("%s %.2f, passes %.1f and %.1f", what, p.gflops[t], a,
                     b);
    }
    const et_level_bw *d = &p.level[ET_MEM_DRAM];
    for (int k = 0; k < ET_BW_COUNT; k++) {
        assert_int_equal(d->spread[k].runs, 4);
        snprintf(what, sizeof what, "DRAM %s bandwidth:",
                 et_bw_kind_name((et_bw_kind)k));
        double a = pass_figure(&nt, what, 1), b = pass_figure(&nt, what, 2);
        assert_true(a > 0 && b > 0);
        if (fabs(d->gbs[k] - fmax(a, b)) > 0.051)
            fail_msg("%s %.2f, passes %.1f and %.1f", what, d->gbs[k], a, b);
    }
    et_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compute_bound),
        cmocka_unit_test(test_memory_bound),
        cmocka_unit_test(test_mixed_f16_storage),
        cmocka_unit_test(test_mixed_f32_f64),
        cmocka_unit_test(test_missing_peak),
        cmocka_unit_test(test_ops_formula),
        cmocka_unit_test(test_table_and_json),
        cmocka_unit_test(test_keep_max),
        cmocka_unit_test(test_cache_round_trip),
        cmocka_unit_test(test_override_file),
        cmocka_unit_test(test_peaks_get),
        cmocka_unit_test(test_memory_levels),
        cmocka_unit_test(test_override_levels),
        cmocka_unit_test(test_peaks_db_version),
        cmocka_unit_test(test_variant_search),
        cmocka_unit_test(test_sysfs_caches),
        cmocka_unit_test(test_plot_svg),
        cmocka_unit_test(test_plot_png_and_errors),
        cmocka_unit_test(test_plot_convergence),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_cuda_sources_compile),
        cmocka_unit_test(test_measure_pocl),
        cmocka_unit_test(test_measure_two_passes),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
