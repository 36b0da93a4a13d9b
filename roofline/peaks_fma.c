/*
 * peaks_fma.c - the FMA throughput micro-benchmark (see peaks.h): its
 * OpenCL C and CUDA C sources (chains of fma() over vectors of `width`
 * lanes) and its measurement: the launch calibrated to the target time,
 * the variant search over width, chains and work-group size, the winner
 * timed properly.
 */
#include "roofline/peaks_impl.h"

#include "base/sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sources ------------------------------------------------------------ */

static const char *const fma_names[ET_DTYPE_COUNT] = {
    "et_peak_fma_f16", "et_peak_fma_f32", "et_peak_fma_f64"};

static void fma_opencl(et_sbuf *b, et_dtype t, int w, int chains)
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
                   et_dtype_name(t), chains, vec, ET_PEAK_FMA_ITERS,
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
    for (int c = 0; c < chains; c++)
        et_sbuf_printf(b,
                       "    %s x%d = seed + (%s)((%s)(%d) * (%s)in[3]);\n",
                       vec, c, vec, scalar, c, scalar);
    et_sbuf_printf(b, "    for (int it = 0; it < %d; it++) {\n",
                   ET_PEAK_FMA_ITERS);
    for (int u = 0; u < ET_PEAK_FMA_UNROLL; u++)
        for (int c = 0; c < chains; c++)
            et_sbuf_printf(b, "        x%d = fma(x%d, a, b);\n", c, c);
    et_sbuf_printf(b, "    }\n    const %s s = x0", vec);
    for (int c = 1; c < chains; c++)
        et_sbuf_printf(b, " + x%d", c);
    et_sbuf_printf(b,
                   ";\n    /* every work-item stores; the slots are shared, "
                   "the values\n     * do not matter */\n"
                   "    out[gid & 1023] = (%s)(",
                   in_t);
    if (w == 1)
        et_sbuf_printf(b, "s");
    for (int l = 0; l < w && w > 1; l++)
        et_sbuf_printf(b, "%ss.s%c", l ? " + " : "", pk_hexdigit[l]);
    et_sbuf_printf(b, ");\n}\n");
}

static void fma_cuda(et_sbuf *b, et_dtype t, int chains)
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
                   et_dtype_name(t), chains,
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
        for (int c = 0; c < chains; c++)
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
        for (int c = 0; c < chains; c++)
            et_sbuf_printf(b, "    %s x%d = seed + (%s)%d * in[3];\n", st,
                           c, st, c);
    }
    et_sbuf_printf(b, "    for (int it = 0; it < %d; it++) {\n",
                   ET_PEAK_FMA_ITERS);
    for (int u = 0; u < ET_PEAK_FMA_UNROLL; u++)
        for (int c = 0; c < chains; c++) {
            if (t == ET_F16)
                et_sbuf_printf(b, "        HFMA2(x%d, a, b);\n", c);
            else
                et_sbuf_printf(b, "        x%d = %s(x%d, a, b);\n", c,
                               t == ET_F64 ? "fma" : "fmaf", c);
        }
    et_sbuf_printf(b, "    }\n");
    if (t == ET_F16) {
        et_sbuf_printf(b, "    float s = 0.0f;\n");
        for (int c = 0; c < chains; c++)
            et_sbuf_printf(b, "    s += half2_sum(x%d);\n", c);
        et_sbuf_printf(b, "    out[gid & 1023] = s;\n}\n");
    } else {
        et_sbuf_printf(b, "    out[gid & 1023] = x0");
        for (int c = 1; c < chains; c++)
            et_sbuf_printf(b, " + x%d", c);
        et_sbuf_printf(b, ";\n}\n");
    }
}

char *et_peaks_fma_source(et_backend_kind backend, et_dtype t, int width,
                          int chains, const char **name)
{
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return NULL;
    if (chains < 1)
        chains = 1;
    if (chains > ET_PEAK_FMA_MAX_CHAINS)
        chains = ET_PEAK_FMA_MAX_CHAINS;
    et_sbuf b = {0};
    if (backend == ET_BACKEND_CUDA)
        fma_cuda(&b, t, chains);
    else
        fma_opencl(&b, t, pk_clamp_width(width), chains);
    if (name)
        *name = fma_names[t];
    return et_sbuf_take(&b);
}

/* ---- measurement -------------------------------------------------------- */

typedef struct fma_ctx {
    bench *bn;
    et_dtype t;
    et_buffer *args[2];
    double flops;      /* per launch in the search */
    int64_t global;    /* of the last launch */
} fma_ctx;

static double fma_flops_per_item(const et_device *dev, et_dtype t,
                                 const int *pt)
{
    int lanes = dev->info.target.backend == ET_BACKEND_CUDA
                    ? (t == ET_F16 ? 2 : 1)
                    : pk_clamp_width(pt[0]);
    return 2.0 * pt[1] * lanes * ET_PEAK_FMA_ITERS * ET_PEAK_FMA_UNROLL;
}

/* Work-items for `flops` with variant pt: a multiple of its local size
 * and of 1024 / local, at least 2 groups per compute unit. */
static int64_t fma_global(const et_device *dev, et_dtype t, const int *pt,
                          double flops)
{
    int64_t local = pt[2];
    int cu = dev->info.target.compute_units > 0
                 ? dev->info.target.compute_units
                 : 1;
    double items = flops / fma_flops_per_item(dev, t, pt);
    int64_t g = ((int64_t)items + local - 1) / local * local;
    if (g < 2 * cu * local)
        g = 2 * cu * local;
    if (g > ((int64_t)1 << 28))
        g = ((int64_t)1 << 28) / local * local;
    return g;
}

static et_status fma_time(fma_ctx *c, const int *pt, double flops, int runs,
                          double *rates, et_error *err)
{
    const char *name = NULL;
    char *src = et_peaks_fma_source(c->bn->dev->info.target.backend, c->t,
                                    pt[0], pt[1], &name);
    if (!src)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_program *p = NULL;
    et_status st = pk_prog_get(&c->bn->pc, src, name, &p, err);
    if (st != ET_OK)
        return st;
    c->global = fma_global(c->bn->dev, c->t, pt, flops);
    et_launch g = pk_launch_1d(c->global, pt[2]);
    double work = fma_flops_per_item(c->bn->dev, c->t, pt) *
                  (double)c->global / 1e9;
    return pk_time_runs(c->bn->dev, p, &g, c->args, 2, work, runs, rates, err);
}

static double fma_rate(void *arg, const int *pt)
{
    fma_ctx *c = arg;
    if (c->bn->st != ET_OK)
        return 0;
    double rates[8];
    et_error e = {{0}};
    et_status st = fma_time(c, pt, c->flops, c->bn->short_runs, rates, &e);
    if (st != ET_OK)
        return pk_variant_failed(c->bn, st, &e);
    return pk_fastest_of(0, rates, c->bn->short_runs);
}

et_status pk_measure_fma(bench *bn, et_dtype t, et_peaks *out)
{
    et_device *dev = bn->dev;
    const et_target *tg = &dev->info.target;
    et_error *err = bn->err;
    const bool cuda = tg->backend == ET_BACKEND_CUDA;
    size_t esz = t == ET_F64 ? 8 : 4;
    fma_ctx c;
    memset(&c, 0, sizeof c);
    c.bn = bn;
    c.t = t;
    double *rates = calloc((size_t)bn->runs, sizeof(double));
    et_status st = rates ? ET_OK : et_errorf(err, ET_ERR_NOMEM,
                                             "out of memory");
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 1024 * esz, &c.args[0], err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 4 * esz, &c.args[1], err);
    if (st == ET_OK) {
        double k64[4] = {0.9999, 1e-4, 1e-7, 0.25};
        float k32[4] = {0.9999f, 1e-4f, 1e-7f, 0.25f};
        st = et_buffer_write(dev, c.args[1], 0,
                             esz == 8 ? (void *)k64 : (void *)k32, 4 * esz,
                             err);
    }
    /* the grid: widths the dialect has, chains, work-group sizes the
     * device allows */
    static const int widths[] = {1, 2, 4, 8, 16}, chains_q[] = {8, 12};
    static const int chains[] = {4, 8, 12, 16};
    int locals[3], nl = 0;
    const int want_local[3] = {16, 64, 256};
    for (int i = 0; i < 3; i++)
        if (tg->max_work_group_size <= 0 ||
            want_local[i] <= tg->max_work_group_size)
            locals[nl++] = want_local[i];
    if (nl == 0)
        locals[nl++] = (int)tg->max_work_group_size;
    /* start: the preferred width, 12 chains, groups of 64; quick: only
     * two chain counts at that width */
    int w0 = cuda ? 1 : pk_clamp_width(tg->preferred_vector_width[t]);
    int pt[3] = {w0, 12, nl > 1 ? locals[1] : locals[0]};
    const bool fixed_w = cuda || bn->o->quick;
    et_vsearch_dim dims[3] = {
        {"width", fixed_w ? &w0 : widths, fixed_w ? 1 : 5},
        {"chains", bn->o->quick ? chains_q : chains, bn->o->quick ? 2 : 4},
        {"local", bn->o->quick ? &pt[2] : locals, bn->o->quick ? 1 : nl},
    };
    /* a later pass: the winner alone */
    const et_fma_variant *won = &out->fma_variant[t];
    int fixed[3];
    if (bn->pass > 0 && won->width > 0) {
        fixed[0] = pt[0] = cuda ? 1 : won->width;
        fixed[1] = pt[1] = won->chains;
        fixed[2] = pt[2] = won->local;
        pk_pin_dims(dims, fixed, 3);
    }
    /* Calibrate the start variant: grow the work until a launch takes a
     * quarter of target_s; every variant of the search then does the same
     * flops in short runs, the winner target_s in full runs. */
    double flops = 1024.0 * fma_flops_per_item(dev, t, pt) *
                   (tg->compute_units > 0 ? tg->compute_units : 1);
    for (int round = 0; st == ET_OK && round < 8; round++) {
        double r = 0;
        st = fma_time(&c, pt, flops, 1, &r, err);
        if (st != ET_OK)
            break;
        double s = flops / 1e9 / r;
        if (s >= 0.25 * bn->target_s || c.global >= ((int64_t)1 << 28))
            break;
        double scale = s > 0 ? 0.3 * bn->target_s / s : 64;
        flops *= scale > 64 ? 64 : scale < 1.5 ? 1.5 : scale;
    }
    double best = 0;
    int evals = 0;
    if (st == ET_OK) {
        c.flops = flops;
        evals = et_vsearch_run(dims, 3, pt, &best, fma_rate, &c);
        st = bn->st;
        if (st == ET_OK && !(best > 0))
            st = et_errorf(err, ET_ERR_DEVICE, "no variant ran");
    }
    if (st == ET_OK)
        st = fma_time(&c, pt, flops * 4, bn->runs, rates, err);
    if (st == ET_OK) {
        double this_pass = pk_fastest_of(best, rates, bn->runs);
        out->gflops_spread[t] = pk_keep_runs(bn, FIG_FMA(t), rates, bn->runs);
        /* the fastest launch of the winner, in any pass's runs or search
         * (another process can only slow a launch down) */
        out->gflops[t] = fmax(out->gflops[t],
                              fmax(out->gflops_spread[t].max, best));
        out->fma_variant[t].width = cuda ? (t == ET_F16 ? 2 : 1) : pt[0];
        out->fma_variant[t].chains = pt[1];
        out->fma_variant[t].local = pt[2];
        char pass[48];
        pk_note(bn->o, "%s FMA: %.1f GFLOP/s (this pass %.1f; min %.1f, median "
                "%.1f, %d runs; best of %d variants: width %d, %d chains, "
                "work-groups of %d%s)",
                et_dtype_name(t), out->gflops[t], this_pass,
                out->gflops_spread[t].min, out->gflops_spread[t].median,
                out->gflops_spread[t].runs, evals, out->fma_variant[t].width,
                pt[1], pt[2], pk_pass_text(bn, pass, sizeof pass));
    }
    if (st != ET_OK) {
        char what[64];
        snprintf(what, sizeof(what), "%s FMA benchmark", et_dtype_name(t));
        et_error_prefix(err, what);
    }
    for (int i = 0; i < 2; i++)
        if (c.args[i])
            et_buffer_free(dev, c.args[i]);
    free(rates);
    return st;
}
