/*
 * peaks.c - micro-benchmarks for the device peaks (see peaks.h): generated
 * OpenCL C / CUDA C sources, launched through the et_device interface and
 * timed with the device timer, best of N.
 */
#include "roofline/peaks.h"

#include "base/sbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- FMA throughput ----------------------------------------------------- */

static const char *const fma_names[ET_DTYPE_COUNT] = {
    "et_peak_fma_f16", "et_peak_fma_f32", "et_peak_fma_f64"};

static int clamp_width(int w)
{
    if (w <= 0)
        return 4;
    int p = 1;
    while (p * 2 <= w && p < 16)
        p *= 2;
    return p;
}

/* Component names of an OpenCL vector: s0..sf. */
static const char hexdigit[] = "0123456789abcdef";

static void fma_opencl(et_sbuf *b, et_dtype t, int w)
{
    const char *scalar = t == ET_F64 ? "double" : t == ET_F16 ? "half"
                                                               : "float";
    char vec[16];
    if (w > 1)
        snprintf(vec, sizeof(vec), "%s%d", scalar, w);
    else
        snprintf(vec, sizeof(vec), "%s", scalar);
    et_sbuf_printf(b,
                   "/* eintune peak: %s FMA throughput, %d chains of %s,\n"
                   " * %d x %d fma rounds per work-item. in = {a, b, seed "
                   "scale, chain offset}. */\n",
                   et_dtype_name(t), ET_PEAK_FMA_CHAINS, vec, ET_PEAK_FMA_ITERS,
                   ET_PEAK_FMA_UNROLL);
    if (t == ET_F64)
        et_sbuf_printf(b, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    if (t == ET_F16)
        et_sbuf_printf(b, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
    /* f16 constants come as f32 (storage) and are converted once. */
    const char *in_t = t == ET_F64 ? "double" : "float";
    et_sbuf_printf(b,
                   "__kernel void %s(__global %s *out, __global const %s *in)\n"
                   "{\n"
                   "    const size_t gid = get_global_id(0);\n"
                   "    const %s a = (%s)((%s)in[0]);\n"
                   "    const %s b = (%s)((%s)in[1]);\n"
                   "    const %s seed = (%s)((%s)gid * in[2]);\n",
                   fma_names[t], in_t, in_t, vec, vec, scalar, vec, vec, scalar,
                   vec, vec, scalar);
    for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++)
        et_sbuf_printf(b,
                       "    %s x%d = seed + (%s)((%s)(%d) * (%s)in[3]);\n",
                       vec, c, vec, scalar, c, scalar);
    et_sbuf_printf(b, "    for (int it = 0; it < %d; it++) {\n",
                   ET_PEAK_FMA_ITERS);
    for (int u = 0; u < ET_PEAK_FMA_UNROLL; u++)
        for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++)
            et_sbuf_printf(b, "        x%d = fma(x%d, a, b);\n", c, c);
    et_sbuf_printf(b, "    }\n    const %s s = x0", vec);
    for (int c = 1; c < ET_PEAK_FMA_CHAINS; c++)
        et_sbuf_printf(b, " + x%d", c);
    et_sbuf_printf(b,
                   ";\n    /* every work-item stores; the slots are shared, "
                   "the values\n     * do not matter */\n"
                   "    out[gid & 1023] = (%s)(",
                   in_t);
    if (w == 1)
        et_sbuf_printf(b, "s");
    for (int l = 0; l < w && w > 1; l++)
        et_sbuf_printf(b, "%ss.s%c", l ? " + " : "", hexdigit[l]);
    et_sbuf_printf(b, ");\n}\n");
}

static void fma_cuda(et_sbuf *b, et_dtype t)
{
    /* f16 runs as half2 pairs in inline PTX (fma.rn.f16x2, sm_53 and up;
     * NVRTC has no cuda_fp16.h without the toolkit's include path): one
     * instruction is two fmas. */
    const char *st = t == ET_F64 ? "double" : t == ET_F16 ? "unsigned int"
                                                           : "float";
    const char *in_t = t == ET_F64 ? "double" : "float";
    et_sbuf_printf(b,
                   "/* eintune peak: %s FMA throughput, %d chains of %s,\n"
                   " * %d x %d fma rounds per thread. in = {a, b, seed scale,"
                   " chain offset}. */\n",
                   et_dtype_name(t), ET_PEAK_FMA_CHAINS,
                   t == ET_F16 ? "half2" : st, ET_PEAK_FMA_ITERS,
                   ET_PEAK_FMA_UNROLL);
    if (t == ET_F16)
        et_sbuf_printf(b,
                       "static __device__ unsigned int half2_of(float v)\n"
                       "{\n"
                       "    unsigned short h;\n"
                       "    asm(\"cvt.rn.f16.f32 %%0, %%1;\" : \"=h\"(h) : "
                       "\"f\"(v));\n"
                       "    return (unsigned int)h | ((unsigned int)h << 16);\n"
                       "}\n"
                       "static __device__ float half2_sum(unsigned int x)\n"
                       "{\n"
                       "    float lo, hi;\n"
                       "    asm(\"{ .reg .f16 l, h; mov.b32 {l, h}, %%2;\"\n"
                       "        \" cvt.f32.f16 %%0, l; cvt.f32.f16 %%1, h; "
                       "}\"\n"
                       "        : \"=f\"(lo), \"=f\"(hi) : \"r\"(x));\n"
                       "    return lo + hi;\n"
                       "}\n"
                       "#define HFMA2(x, a, b) asm volatile("
                       "\"fma.rn.f16x2 %%0, %%0, %%1, %%2;\" \\\n"
                       "    : \"+r\"(x) : \"r\"(a), \"r\"(b))\n");
    et_sbuf_printf(b,
                   "extern \"C\" __global__ void %s(%s *out, const %s *in)\n"
                   "{\n"
                   "    const unsigned long long gid =\n"
                   "        (unsigned long long)blockIdx.x * blockDim.x + "
                   "threadIdx.x;\n",
                   fma_names[t], in_t, in_t);
    if (t == ET_F16) {
        et_sbuf_printf(b,
                       "    const unsigned int a = half2_of(in[0]);\n"
                       "    const unsigned int b = half2_of(in[1]);\n"
                       "    const float seed = (float)gid * in[2];\n");
        for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++)
            et_sbuf_printf(b,
                           "    unsigned int x%d = half2_of(seed + %d.0f * "
                           "in[3]);\n",
                           c, c);
    } else {
        et_sbuf_printf(b,
                       "    const %s a = in[0];\n"
                       "    const %s b = in[1];\n"
                       "    const %s seed = (%s)gid * in[2];\n",
                       st, st, st, st);
        for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++)
            et_sbuf_printf(b, "    %s x%d = seed + (%s)%d * in[3];\n", st,
                           c, st, c);
    }
    et_sbuf_printf(b, "    for (int it = 0; it < %d; it++) {\n",
                   ET_PEAK_FMA_ITERS);
    for (int u = 0; u < ET_PEAK_FMA_UNROLL; u++)
        for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++) {
            if (t == ET_F16)
                et_sbuf_printf(b, "        HFMA2(x%d, a, b);\n", c);
            else
                et_sbuf_printf(b, "        x%d = %s(x%d, a, b);\n", c,
                               t == ET_F64 ? "fma" : "fmaf", c);
        }
    et_sbuf_printf(b, "    }\n");
    if (t == ET_F16) {
        et_sbuf_printf(b, "    float s = 0.0f;\n");
        for (int c = 0; c < ET_PEAK_FMA_CHAINS; c++)
            et_sbuf_printf(b, "    s += half2_sum(x%d);\n", c);
        et_sbuf_printf(b, "    out[gid & 1023] = s;\n}\n");
    } else {
        et_sbuf_printf(b, "    out[gid & 1023] = x0");
        for (int c = 1; c < ET_PEAK_FMA_CHAINS; c++)
            et_sbuf_printf(b, " + x%d", c);
        et_sbuf_printf(b, ";\n}\n");
    }
}

char *et_peaks_fma_source(et_backend_kind backend, et_dtype t, int width,
                          const char **name)
{
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return NULL;
    et_sbuf b = {0};
    if (backend == ET_BACKEND_CUDA)
        fma_cuda(&b, t);
    else
        fma_opencl(&b, t, clamp_width(width));
    if (name)
        *name = fma_names[t];
    return et_sbuf_take(&b);
}

/* ---- bandwidth ---------------------------------------------------------- */

static const char *const bw_names[ET_BW_COUNT] = {
    "et_peak_bw_read", "et_peak_bw_write", "et_peak_bw_copy",
    "et_peak_bw_triad"};

static void bw_opencl(et_sbuf *b, et_bw_kind k)
{
    et_sbuf_printf(b,
                   "/* eintune peak: %s bandwidth over float4 elements. */\n",
                   et_bw_kind_name(k));
    switch (k) {
    case ET_BW_READ:
        /* Work-item g sums x[g + r*n] for r < R over the three buffers:
         * 3R streams, each read contiguously by consecutive work-items
         * (coalesced on a GPU, vectorizable across work-items on a CPU);
         * three buffers so that a launch moves as much as a triad. */
        et_sbuf_printf(b,
                       "__kernel void %s(__global float4 *sums,\n"
                       "                 __global const float4 *a,\n"
                       "                 __global const float4 *b,\n"
                       "                 __global const float4 *c)\n"
                       "{\n"
                       "    const size_t g = get_global_id(0);\n"
                       "    const size_t n = get_global_size(0);\n"
                       "    float4 s = a[g] + b[g] + c[g];\n",
                       bw_names[k]);
        for (int r = 1; r < ET_PEAK_READ_STREAMS; r++)
            et_sbuf_printf(b, "    s += a[g + %d * n] + b[g + %d * n] + "
                           "c[g + %d * n];\n", r, r, r);
        et_sbuf_printf(b, "    sums[g] = s;\n}\n");
        break;
    case ET_BW_WRITE:
        et_sbuf_printf(b,
                       "__kernel void %s(__global float4 *a,\n"
                       "                 __global const float *k)\n"
                       "{\n"
                       "    a[get_global_id(0)] = (float4)(k[0]);\n"
                       "}\n",
                       bw_names[k]);
        break;
    case ET_BW_COPY:
        et_sbuf_printf(b,
                       "__kernel void %s(__global float4 *b,\n"
                       "                 __global const float4 *a)\n"
                       "{\n"
                       "    const size_t g = get_global_id(0);\n"
                       "    b[g] = a[g];\n"
                       "}\n",
                       bw_names[k]);
        break;
    default:
        et_sbuf_printf(b,
                       "__kernel void %s(__global float4 *a,\n"
                       "                 __global const float4 *b,\n"
                       "                 __global const float4 *c,\n"
                       "                 __global const float *k)\n"
                       "{\n"
                       "    const size_t g = get_global_id(0);\n"
                       "    a[g] = b[g] + k[1] * c[g];\n"
                       "}\n",
                       bw_names[k]);
        break;
    }
}

static void bw_cuda(et_sbuf *b, et_bw_kind k)
{
    et_sbuf_printf(b,
                   "/* eintune peak: %s bandwidth over floats. */\n"
                   "#define GID ((unsigned long long)blockIdx.x * blockDim.x + "
                   "threadIdx.x)\n"
                   "#define GSIZE ((unsigned long long)gridDim.x * "
                   "blockDim.x)\n",
                   et_bw_kind_name(k));
    switch (k) {
    case ET_BW_READ:
        et_sbuf_printf(b,
                       "extern \"C\" __global__ void %s(float *sums, "
                       "const float *a,\n"
                       "    const float *b, const float *c)\n"
                       "{\n"
                       "    const unsigned long long g = GID, n = GSIZE;\n"
                       "    float s = a[g] + b[g] + c[g];\n",
                       bw_names[k]);
        for (int r = 1; r < ET_PEAK_READ_STREAMS; r++)
            et_sbuf_printf(b, "    s += a[g + %d * n] + b[g + %d * n] + "
                           "c[g + %d * n];\n", r, r, r);
        et_sbuf_printf(b, "    sums[g] = s;\n}\n");
        break;
    case ET_BW_WRITE:
        et_sbuf_printf(b,
                       "extern \"C\" __global__ void %s(float *a, "
                       "const float *k)\n"
                       "{\n    a[GID] = k[0];\n}\n",
                       bw_names[k]);
        break;
    case ET_BW_COPY:
        et_sbuf_printf(b,
                       "extern \"C\" __global__ void %s(float *b, "
                       "const float *a)\n"
                       "{\n    b[GID] = a[GID];\n}\n",
                       bw_names[k]);
        break;
    default:
        et_sbuf_printf(b,
                       "extern \"C\" __global__ void %s(float *a, "
                       "const float *b,\n"
                       "    const float *c, const float *k)\n"
                       "{\n    a[GID] = b[GID] + k[1] * c[GID];\n}\n",
                       bw_names[k]);
        break;
    }
}

char *et_peaks_bw_source(et_backend_kind backend, et_bw_kind k,
                         const char **name)
{
    if ((unsigned)k >= ET_BW_COUNT)
        return NULL;
    et_sbuf b = {0};
    if (backend == ET_BACKEND_CUDA)
        bw_cuda(&b, k);
    else
        bw_opencl(&b, k);
    if (name)
        *name = bw_names[k];
    return et_sbuf_take(&b);
}

/* ---- measurement -------------------------------------------------------- */

static void note(const et_peaks_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(const et_peaks_opts *o, const char *fmt, ...)
{
    if (!o->log)
        return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    o->log(o->log_arg, msg);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Spread of n rates (n >= 1); sorts them. */
static et_spread spread_of(double *rates, int n)
{
    qsort(rates, (size_t)n, sizeof(double), cmp_double);
    et_spread s;
    s.runs = n;
    s.min = rates[0];
    s.max = rates[n - 1];
    s.median = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
    return s;
}

/* Launches `runs` timed times after one untimed launch; rates[i] = work /
 * duration. */
static et_status time_runs(et_device *dev, et_program *p, const et_launch *g,
                           et_buffer *const *args, int nargs, double work,
                           int runs, double *rates, et_error *err)
{
    et_status st = et_launch_kernel(dev, p, g, args, NULL, nargs, NULL, err);
    for (int i = 0; st == ET_OK && i < runs; i++) {
        double s = 0;
        st = et_launch_kernel(dev, p, g, args, NULL, nargs, &s, err);
        if (st == ET_OK && !(s > 0)) {
            st = et_errorf(err, ET_ERR_DEVICE,
                           "device timer gave a duration of %g s", s);
        }
        if (st == ET_OK)
            rates[i] = work / s;
    }
    return st;
}

static et_launch launch_1d(int64_t global, int64_t local)
{
    et_launch g;
    memset(&g, 0, sizeof(g));
    g.ndim = 1;
    g.global[0] = global;
    g.global[1] = g.global[2] = 1;
    g.local[0] = local > 0 ? local : 1;
    g.local[1] = g.local[2] = 1;
    g.has_local = local > 0;
    return g;
}

static et_status measure_fma(et_device *dev, et_dtype t,
                             const et_peaks_opts *o, int runs,
                             double target_s, et_peaks *out, et_error *err)
{
    const et_target *tg = &dev->info.target;
    const char *name = NULL;
    char *src = et_peaks_fma_source(tg->backend, t,
                                    tg->preferred_vector_width[t], &name);
    if (!src)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    int width = tg->backend == ET_BACKEND_CUDA
                    ? (t == ET_F16 ? 2 : 1)
                    : clamp_width(tg->preferred_vector_width[t]);
    /* per work-item: chains x width lanes x rounds, 2 flops each */
    double flops_per_item = 2.0 * ET_PEAK_FMA_CHAINS * width *
                            ET_PEAK_FMA_ITERS * ET_PEAK_FMA_UNROLL;
    et_program *prog = NULL;
    et_buffer *bout = NULL, *bin = NULL;
    double *rates = calloc((size_t)runs, sizeof(double));
    size_t esz = t == ET_F64 ? 8 : 4;
    int64_t global = 1024 * (int64_t)(tg->compute_units > 0
                                          ? tg->compute_units
                                          : 1);
    const int64_t max_global = (int64_t)1 << 28;
    /* Work-groups of 64: many groups for the CPU threads to share, a
     * whole number of warps/wavefronts on a GPU. */
    int64_t fma_local = 64;
    if (tg->max_work_group_size > 0 && tg->max_work_group_size < fma_local)
        fma_local = tg->max_work_group_size;
    while (1024 % fma_local) /* divides every global size used below */
        fma_local--;
    et_status st = rates ? ET_OK : ET_ERR_NOMEM;
    if (st == ET_OK)
        st = et_program_build(dev, src, name, &prog, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 1024 * esz, &bout, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 4 * esz, &bin, err);
    if (st == ET_OK) {
        double k64[4] = {0.9999, 1e-4, 1e-7, 0.25};
        float k32[4] = {0.9999f, 1e-4f, 1e-7f, 0.25f};
        st = et_buffer_write(dev, bin, 0, esz == 8 ? (void *)k64 : (void *)k32,
                             4 * esz, err);
    }
    et_buffer *args[2] = {bout, bin};
    /* Calibrate: one untimed launch per new geometry (compilation), then
     * a timed one; grow the global size until a launch takes target_s. */
    for (int round = 0; st == ET_OK && round < 6; round++) {
        et_launch g = launch_1d(global, fma_local);
        double s = 0;
        st = et_launch_kernel(dev, prog, &g, args, NULL, 2, NULL, err);
        if (st == ET_OK)
            st = et_launch_kernel(dev, prog, &g, args, NULL, 2, &s, err);
        if (st != ET_OK || s >= 0.5 * target_s || global >= max_global)
            break;
        double scale = s > 0 ? target_s / s : 64;
        if (scale > 64)
            scale = 64;
        int64_t next = (int64_t)((double)global * scale) / 1024 * 1024;
        if (next > max_global)
            next = max_global;
        if (next <= global)
            break;
        global = next;
    }
    if (st == ET_OK) {
        et_launch g = launch_1d(global, fma_local);
        double work = flops_per_item * (double)global / 1e9;
        st = time_runs(dev, prog, &g, args, 2, work, runs, rates, err);
    }
    if (st == ET_OK) {
        out->gflops_spread[t] = spread_of(rates, runs);
        out->gflops[t] = out->gflops_spread[t].max;
        note(o, "%s FMA: %.1f GFLOP/s (min %.1f, median %.1f, %d runs, "
             "%lld work-items, %d chains of %d lanes)",
             et_dtype_name(t), out->gflops[t], out->gflops_spread[t].min,
             out->gflops_spread[t].median, runs, (long long)global,
             ET_PEAK_FMA_CHAINS, width);
    } else if (st == ET_ERR_NOMEM && err->msg[0] == '\0') {
        et_errorf(err, st, "out of memory");
    }
    if (st != ET_OK) {
        char what[64];
        snprintf(what, sizeof(what), "%s FMA benchmark", et_dtype_name(t));
        et_error_prefix(err, what);
    }
    if (bin)
        et_buffer_free(dev, bin);
    if (bout)
        et_buffer_free(dev, bout);
    if (prog)
        et_program_free(dev, prog);
    free(rates);
    free(src);
    return st;
}

static et_status measure_bw(et_device *dev, const et_peaks_opts *o, int runs,
                            size_t bytes, et_peaks *out, et_error *err)
{
    const et_backend_kind be = dev->info.target.backend;
    const size_t elem = be == ET_BACKEND_CUDA ? 4 : 16;
    const int64_t n = (int64_t)(bytes / elem); /* elements per buffer */
    et_buffer *buf[3] = {NULL, NULL, NULL}, *sums = NULL, *kbuf = NULL;
    et_program *prog[ET_BW_COUNT] = {NULL};
    double *rates = calloc((size_t)runs, sizeof(double));
    et_status st = rates ? ET_OK : ET_ERR_NOMEM;
    if (st != ET_OK)
        et_errorf(err, st, "out of memory");
    for (int i = 0; i < 3 && st == ET_OK; i++)
        st = et_buffer_alloc(dev, bytes, &buf[i], err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, bytes / ET_PEAK_READ_STREAMS, &sums, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 2 * sizeof(float), &kbuf, err);
    if (st == ET_OK) {
        const float k[2] = {1.0f, 0.5f};
        st = et_buffer_write(dev, kbuf, 0, k, sizeof(k), err);
    }
    const char *what = "bandwidth benchmark";
    for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
        what = et_bw_kind_name((et_bw_kind)k);
        const char *name = NULL;
        char *src = et_peaks_bw_source(be, (et_bw_kind)k, &name);
        if (!src) {
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            break;
        }
        st = et_program_build(dev, src, name, &prog[k], err);
        free(src);
    }
    /* Fill every buffer first (also faults their pages in on a CPU): the
     * timed kernels then read ordinary numbers, never NaN or denormals. */
    if (st == ET_OK) {
        what = "fill";
        et_launch g = launch_1d(n, 0);
        for (int i = 0; i < 3 && st == ET_OK; i++) {
            et_buffer *a[2] = {buf[i], kbuf};
            st = et_launch_kernel(dev, prog[ET_BW_WRITE], &g, a, NULL, 2,
                                  NULL, err);
        }
    }
    for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
        what = et_bw_kind_name((et_bw_kind)k);
        et_buffer *a[4];
        int nargs = 0;
        double moved = 0; /* bytes read + bytes written */
        int64_t global = n;
        switch ((et_bw_kind)k) {
        case ET_BW_READ:
            global = n / ET_PEAK_READ_STREAMS;
            a[0] = sums, a[1] = buf[0], a[2] = buf[1], a[3] = buf[2];
            nargs = 4;
            moved = 3.0 * (double)bytes + (double)global * (double)elem;
            break;
        case ET_BW_WRITE:
            a[0] = buf[0], a[1] = kbuf, nargs = 2;
            moved = (double)bytes;
            break;
        case ET_BW_COPY:
            a[0] = buf[1], a[1] = buf[0], nargs = 2;
            moved = 2.0 * (double)bytes;
            break;
        default:
            a[0] = buf[0], a[1] = buf[1], a[2] = buf[2], a[3] = kbuf;
            nargs = 4;
            moved = 3.0 * (double)bytes;
            break;
        }
        et_launch g = launch_1d(global, 0);
        st = time_runs(dev, prog[k], &g, a, nargs, moved / 1e9, runs, rates,
                       err);
        if (st != ET_OK)
            break;
        out->bw_spread[k] = spread_of(rates, runs);
        out->bw_gbs[k] = out->bw_spread[k].max;
        if (out->bw_gbs[k] > out->bandwidth_gbs)
            out->bandwidth_gbs = out->bw_gbs[k];
        note(o, "%s bandwidth: %.1f GB/s (min %.1f, median %.1f, %d runs, "
             "%.0f MiB moved)",
             what, out->bw_gbs[k], out->bw_spread[k].min,
             out->bw_spread[k].median, runs, moved / (1024.0 * 1024.0));
    }
    if (st != ET_OK) {
        char w[64];
        snprintf(w, sizeof(w), "%s bandwidth benchmark", what);
        et_error_prefix(err, w);
    }
    for (int k = 0; k < ET_BW_COUNT; k++)
        if (prog[k])
            et_program_free(dev, prog[k]);
    for (int i = 0; i < 3; i++)
        if (buf[i])
            et_buffer_free(dev, buf[i]);
    if (sums)
        et_buffer_free(dev, sums);
    if (kbuf)
        et_buffer_free(dev, kbuf);
    free(rates);
    return st;
}

et_status et_peaks_measure(et_device *dev, const et_peaks_opts *opts,
                           et_peaks *out, et_error *err)
{
    et_peaks_opts o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof(o));
    int runs = o.runs > 0 ? o.runs : (o.quick ? 2 : 5);
    double target_s = o.target_s > 0 ? o.target_s : (o.quick ? 0.005 : 0.05);
    size_t bytes = o.bw_bytes ? o.bw_bytes
                              : (o.quick ? (size_t)4 << 20 : (size_t)64 << 20);
    const et_target *tg = &dev->info.target;
    if (tg->global_mem_bytes > 0 && bytes > (size_t)tg->global_mem_bytes / 12)
        bytes = (size_t)tg->global_mem_bytes / 12;
    /* whole read-kernel work-items, and a global size that is a multiple
     * of 1024 */
    size_t quantum = 16 * ET_PEAK_READ_STREAMS * 1024;
    bytes = bytes / quantum * quantum;
    if (bytes == 0)
        bytes = quantum;

    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "%s",
             dev->info.name);
    snprintf(out->backend, sizeof(out->backend), "%s",
             et_backend_name(tg->backend));
    snprintf(out->driver, sizeof(out->driver), "%s",
             dev->info.driver_version);
    snprintf(out->eintune_version, sizeof(out->eintune_version), "%s",
             ET_VERSION);
    out->source = ET_PEAKS_MEASURED;
    err->msg[0] = '\0';

    et_status st = measure_fma(dev, ET_F32, &o, runs, target_s, out, err);
    if (st == ET_OK && tg->has_fp64)
        st = measure_fma(dev, ET_F64, &o, runs, target_s, out, err);
    if (st == ET_OK && tg->has_fp16)
        st = measure_fma(dev, ET_F16, &o, runs, target_s, out, err);
    if (st == ET_OK)
        st = measure_bw(dev, &o, runs, bytes, out, err);
    for (int t = 0; st == ET_OK && t < ET_DTYPE_COUNT; t++)
        if (!isfinite(out->gflops[t])) {
            st = et_errorf(err, ET_ERR_DEVICE,
                           "%s FMA benchmark gave a non-finite figure",
                           et_dtype_name((et_dtype)t));
        }
    return st;
}
