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
        et_sbuf_printf(b, "%ss.s%c", l ? " + " : "", hexdigit[l]);
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
        fma_opencl(&b, t, clamp_width(width), chains);
    if (name)
        *name = fma_names[t];
    return et_sbuf_take(&b);
}

/* ---- bandwidth ---------------------------------------------------------- */

/*
 * One generator for both dialects: a prelude maps the few names that
 * differ, the body is common C. OpenCL gets vectors of `width` floats,
 * CUDA scalar floats (width 1). Every kernel takes (out, in, prm): prm[0]
 * is the number of vector elements of one group's working set (walk and
 * sweep; a power of two), prm[1] the passes over it. The read kernels add
 * what they read into four accumulators and store only when the sum is
 * -1, which never happens (the buffers hold ones), so they write nothing
 * yet cannot skip a load.
 */
static void bw_prelude(et_sbuf *b, et_backend_kind be, int w)
{
    if (be == ET_BACKEND_CUDA) {
        et_sbuf_printf(b,
                       "#define GID ((unsigned long long)blockIdx.x * "
                       "blockDim.x + threadIdx.x)\n"
                       "#define GSIZE ((unsigned long long)gridDim.x * "
                       "blockDim.x)\n"
                       "#define LID ((unsigned)threadIdx.x)\n"
                       "#define LSIZE ((unsigned)blockDim.x)\n"
                       "#define GRP ((unsigned long long)blockIdx.x)\n"
                       "#define KERNEL extern \"C\" __global__ void\n"
                       "#define GLOBAL\n"
                       "typedef float VT;\n"
                       "#define LANES(s) (s)\n");
        return;
    }
    et_sbuf_printf(b,
                   "#define GID ((ulong)get_global_id(0))\n"
                   "#define GSIZE ((ulong)get_global_size(0))\n"
                   "#define LID ((uint)get_local_id(0))\n"
                   "#define LSIZE ((uint)get_local_size(0))\n"
                   "#define GRP ((ulong)get_group_id(0))\n"
                   "#define KERNEL __kernel void\n"
                   "#define GLOBAL __global\n");
    if (w > 1) {
        et_sbuf_printf(b, "typedef float%d VT;\n#define LANES(s) (", w);
        for (int l = 0; l < w; l++)
            et_sbuf_printf(b, "%s(s).s%c", l ? " + " : "", hexdigit[l]);
        et_sbuf_printf(b, ")\n");
    } else {
        et_sbuf_printf(b, "typedef float VT;\n#define LANES(s) (s)\n");
    }
}

/* Element k (0..K-1) of this work-item's step, by pattern. */
static void bw_index(et_sbuf *b, et_bw_pattern pat, int k, int K)
{
    switch (pat) {
    case ET_BW_CHUNK:
        et_sbuf_printf(b, "GID * %d + %d", K, k);
        break;
    case ET_BW_STRIDED:
        et_sbuf_printf(b, "GID + %d * GSIZE", k);
        break;
    default: /* walk and sweep: j is the step's first element */
        et_sbuf_printf(b, "j + %d", k);
        break;
    }
}

/* The K accesses of one step: reads into s0..s3, or copies. */
static void bw_step(et_sbuf *b, et_bw_kind kind, et_bw_pattern pat, int K,
                    const char *indent, const char *src, const char *dst)
{
    for (int k = 0; k < K; k++) {
        et_sbuf_printf(b, "%s", indent);
        if (kind == ET_BW_READ) {
            et_sbuf_printf(b, "s%d += %s[", k % 4, src);
            bw_index(b, pat, k, K);
            et_sbuf_printf(b, "];\n");
        } else {
            et_sbuf_printf(b, "%s[", dst);
            bw_index(b, pat, k, K);
            et_sbuf_printf(b, "] = %s[", src);
            bw_index(b, pat, k, K);
            et_sbuf_printf(b, "];\n");
        }
    }
}

char *et_peaks_bw_source(et_backend_kind backend, et_bw_kind kind,
                         const et_bw_variant *v, const char **name)
{
    if ((unsigned)kind >= ET_BW_COUNT || !v ||
        (unsigned)v->pattern >= ET_BW_PATTERN_COUNT)
        return NULL;
    int w = backend == ET_BACKEND_CUDA ? 1 : clamp_width(v->width);
    int K = v->per_item < 1 ? 1 : v->per_item > 64 ? 64 : v->per_item;
    et_bw_pattern pat = v->pattern;
    static const char *const names[ET_BW_COUNT] = {"et_peak_read",
                                                   "et_peak_copy"};
    et_sbuf b = {0};
    et_sbuf_printf(&b,
                   "/* eintune peak: %s bandwidth, %d float%s per element, "
                   "%d elements per\n * work-item step, %s pattern. */\n",
                   et_bw_kind_name(kind), w, w > 1 ? "s" : "", K,
                   et_bw_pattern_name(pat));
    bw_prelude(&b, backend, w);
    if (kind == ET_BW_READ)
        et_sbuf_printf(&b,
                       "KERNEL %s(GLOBAL float *out, GLOBAL const VT *a,\n"
                       "    GLOBAL const unsigned int *prm)\n{\n"
                       "    VT s0 = (VT)(0.0f), s1 = s0, s2 = s0, s3 = s0;\n",
                       names[kind]);
    else
        et_sbuf_printf(&b,
                       "KERNEL %s(GLOBAL VT *out, GLOBAL const VT *a,\n"
                       "    GLOBAL const unsigned int *prm)\n{\n",
                       names[kind]);
    if (pat == ET_BW_CHUNK || pat == ET_BW_STRIDED) {
        /* one pass over buffers far larger than any cache */
        bw_step(&b, kind, pat, K, "    ", "a", "out");
    } else {
        /* a group's working set, prm[1] passes over it: on a CPU each
         * work-item walks all of it from its own start (work-items of a
         * group run one after another on one core); on a GPU the group's
         * work-items sweep it together */
        et_sbuf_printf(&b,
                       "    const unsigned int n = prm[0], passes = prm[1];\n"
                       "    GLOBAL const VT *r = a + GRP * n;\n");
        if (kind == ET_BW_COPY)
            et_sbuf_printf(&b, "    GLOBAL VT *o = out + GRP * n;\n");
        if (pat == ET_BW_WALK)
            et_sbuf_printf(&b,
                           "    const unsigned int start = (LID * (n / "
                           "LSIZE)) / %d * %d;\n"
                           "    for (unsigned int p = 0; p < passes; p++)\n"
                           "        for (unsigned int k = 0; k < n; k += %d) "
                           "{\n"
                           "            const unsigned int j = (start + k) & "
                           "(n - 1);\n",
                           K, K, K);
        else
            et_sbuf_printf(&b,
                           "    for (unsigned int p = 0; p < passes; p++)\n"
                           "        for (unsigned int j = LID * %d; j < n; "
                           "j += LSIZE * %d) {\n",
                           K, K);
        bw_step(&b, kind, pat, K, "            ", "r", "o");
        et_sbuf_printf(&b, "        }\n");
    }
    if (kind == ET_BW_READ)
        et_sbuf_printf(&b,
                       "    const float t = LANES(s0 + s1 + s2 + s3);\n"
                       "    if (t == -1.0f)\n"
                       "        out[0] = t;\n");
    et_sbuf_printf(&b, "}\n");
    if (name)
        *name = names[kind];
    return et_sbuf_take(&b);
}

/* The kernel that fills buffers with ones (scalar floats, any dialect). */
static char *fill_source(et_backend_kind be)
{
    et_sbuf b = {0};
    et_sbuf_printf(&b, "/* eintune peak: fills a buffer with ones. */\n");
    bw_prelude(&b, be, 1);
    et_sbuf_printf(&b, "KERNEL et_peak_fill(GLOBAL float *a)\n"
                       "{\n    a[GID] = 1.0f;\n}\n");
    return et_sbuf_take(&b);
}

/* ---- variant search ----------------------------------------------------- */

int et_vsearch_run(const et_vsearch_dim *dims, int ndims, int *point,
                   double *best_rate, et_vsearch_rate rate, void *arg)
{
    /* every point timed, so that none is timed twice */
    enum { MEMO = 128 };
    int seen[MEMO][ET_VSEARCH_MAX_DIMS];
    double seen_rate[MEMO];
    int n_seen = 0, evals = 0;
    if (ndims < 1 || ndims > ET_VSEARCH_MAX_DIMS)
        return 0;
    int cur[ET_VSEARCH_MAX_DIMS];
    memcpy(cur, point, (size_t)ndims * sizeof(int));
    double best = rate(arg, cur);
    evals++;
    memcpy(seen[n_seen], cur, (size_t)ndims * sizeof(int));
    seen_rate[n_seen++] = best;
    /* coordinate descent: a coarse pass along each dimension in turn from
     * the start, then passes that refine around the best until one finds
     * nothing better (at most ET_VSEARCH_PASSES) */
    for (int pass = 0; pass < ET_VSEARCH_PASSES; pass++) {
        bool better = false;
        for (int d = 0; d < ndims; d++) {
            int keep = cur[d];
            for (int i = 0; i < dims[d].n; i++) {
                int trial[ET_VSEARCH_MAX_DIMS];
                memcpy(trial, cur, (size_t)ndims * sizeof(int));
                trial[d] = dims[d].values[i];
                if (trial[d] == keep)
                    continue;
                int hit = -1;
                for (int s = 0; s < n_seen && hit < 0; s++)
                    if (!memcmp(seen[s], trial, (size_t)ndims * sizeof(int)))
                        hit = s;
                double r;
                if (hit >= 0) {
                    r = seen_rate[hit];
                } else {
                    r = rate(arg, trial);
                    evals++;
                    if (n_seen < MEMO) {
                        memcpy(seen[n_seen], trial,
                               (size_t)ndims * sizeof(int));
                        seen_rate[n_seen++] = r;
                    }
                }
                if (r > best) {
                    best = r;
                    memcpy(cur, trial, (size_t)ndims * sizeof(int));
                    better = true;
                }
            }
        }
        if (!better)
            break;
    }
    memcpy(point, cur, (size_t)ndims * sizeof(int));
    if (best_rate)
        *best_rate = best;
    return evals;
}

/* ---- measurement -------------------------------------------------------- */

static void note(const et_peaks_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(const et_peaks_opts *o, const char *fmt, ...)
{
    if (!o->log)
        return;
    char msg[320];
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

/* Launches `runs` timed times after one untimed launch (where PoCL
 * compiles for a new geometry); rates[i] = work / duration. */
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

/* Programs built during one measurement, by source: a variant that only
 * changes the launch reuses its program. A caller uses the program it
 * gets before asking for another, so a full cache may simply be emptied. */
#define PROG_CACHE_CAP 64
typedef struct prog_cache {
    et_device *dev;
    int n;
    char *src[PROG_CACHE_CAP];
    et_program *prog[PROG_CACHE_CAP];
} prog_cache;

static void prog_cache_free(prog_cache *pc)
{
    for (int i = 0; i < pc->n; i++) {
        et_program_free(pc->dev, pc->prog[i]);
        free(pc->src[i]);
    }
    pc->n = 0;
}

/* The program of src (taken: freed here or kept in the cache). */
static et_status prog_get(prog_cache *pc, char *src, const char *name,
                          et_program **out, et_error *err)
{
    for (int i = 0; i < pc->n; i++)
        if (!strcmp(pc->src[i], src)) {
            free(src);
            *out = pc->prog[i];
            return ET_OK;
        }
    if (pc->n == PROG_CACHE_CAP)
        prog_cache_free(pc);
    et_status st = et_program_build(pc->dev, src, name, out, err);
    if (st != ET_OK) {
        free(src);
        return st;
    }
    pc->src[pc->n] = src;
    pc->prog[pc->n++] = *out;
    return ET_OK;
}

/* Figures, for the runs kept over the passes: the FMA of each dtype, then
 * each level's read-only and copy bandwidth. */
#define FIG_FMA(t) ((int)(t))
#define FIG_BW(l, k) (ET_DTYPE_COUNT + (int)(l) * ET_BW_COUNT + (int)(k))
#define FIG_COUNT (ET_DTYPE_COUNT + ET_MEM_LEVEL_COUNT * ET_BW_COUNT)

/* What every benchmark of one et_peaks_measure shares. */
typedef struct bench {
    et_device *dev;
    const et_peaks_opts *o;
    prog_cache pc;
    int runs;          /* timed runs of a winner */
    int short_runs;    /* timed runs of a variant in the search */
    double target_s;   /* one launch of a winner */
    int pass;          /* 0: the search; later: the winners again */
    double *kept[FIG_COUNT]; /* every winner run of a figure, all passes */
    int nkept[FIG_COUNT];
    et_status st;      /* the first failure that is not the variant's */
    et_error *err;
} bench;

/* Adds a winner's n runs to figure fig's and returns the spread of all
 * its runs so far (of this pass's alone when out of memory). The kept
 * runs are a multiset: sorting them in place is fine. */
static et_spread keep_runs(bench *bn, int fig, double *rates, int n)
{
    double *k = realloc(bn->kept[fig],
                        (size_t)(bn->nkept[fig] + n) * sizeof(double));
    if (!k)
        return spread_of(rates, n);
    memcpy(k + bn->nkept[fig], rates, (size_t)n * sizeof(double));
    bn->kept[fig] = k;
    bn->nkept[fig] += n;
    return spread_of(k, bn->nkept[fig]);
}

/* A pass's fastest launch: the search's best and the winner's runs. */
static double fastest_of(double best, const double *rates, int n)
{
    double f = best > 0 ? best : 0;
    for (int i = 0; i < n; i++)
        f = fmax(f, rates[i]);
    return f;
}

/* A later pass times the winner alone: every dimension pinned to the
 * winner's value, fixed[i]. */
static void pin_dims(et_vsearch_dim *dims, int *fixed, int n)
{
    for (int i = 0; i < n; i++) {
        dims[i].values = &fixed[i];
        dims[i].n = 1;
    }
}

/* "" in the search, ", pass 2" etc. after it (for the notes). */
static const char *pass_text(const bench *bn, char *buf, size_t cap)
{
    if (bn->pass == 0)
        return "";
    snprintf(buf, cap, ", pass %d: the winner again", bn->pass + 1);
    return buf;
}

/* A variant that cannot be built or launched (too large a work-group,
 * a compiler's refusal) only loses the search; a lost device or memory
 * stops the whole measurement. */
static double variant_failed(bench *bn, et_status st, const et_error *e)
{
    if (st == ET_ERR_NOMEM || st == ET_ERR_TIMEOUT || st == ET_ERR_CRASH) {
        bn->st = st;
        *bn->err = *e;
    }
    return 0;
}

/* ---- FMA ---------------------------------------------------------------- */

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
                    : clamp_width(pt[0]);
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
    et_status st = prog_get(&c->bn->pc, src, name, &p, err);
    if (st != ET_OK)
        return st;
    c->global = fma_global(c->bn->dev, c->t, pt, flops);
    et_launch g = launch_1d(c->global, pt[2]);
    double work = fma_flops_per_item(c->bn->dev, c->t, pt) *
                  (double)c->global / 1e9;
    return time_runs(c->bn->dev, p, &g, c->args, 2, work, runs, rates, err);
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
        return variant_failed(c->bn, st, &e);
    return fastest_of(0, rates, c->bn->short_runs);
}

static et_status measure_fma(bench *bn, et_dtype t, et_peaks *out)
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
    int w0 = cuda ? 1 : clamp_width(tg->preferred_vector_width[t]);
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
        pin_dims(dims, fixed, 3);
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
        double this_pass = fastest_of(best, rates, bn->runs);
        out->gflops_spread[t] = keep_runs(bn, FIG_FMA(t), rates, bn->runs);
        /* the fastest launch of the winner, in any pass's runs or search
         * (another process can only slow a launch down) */
        out->gflops[t] = fmax(out->gflops[t],
                              fmax(out->gflops_spread[t].max, best));
        out->fma_variant[t].width = cuda ? (t == ET_F16 ? 2 : 1) : pt[0];
        out->fma_variant[t].chains = pt[1];
        out->fma_variant[t].local = pt[2];
        char pass[48];
        note(bn->o, "%s FMA: %.1f GFLOP/s (this pass %.1f; min %.1f, median "
             "%.1f, %d runs; best of %d variants: width %d, %d chains, "
             "work-groups of %d%s)",
             et_dtype_name(t), out->gflops[t], this_pass,
             out->gflops_spread[t].min, out->gflops_spread[t].median,
             out->gflops_spread[t].runs, evals, out->fma_variant[t].width,
             pt[1], pt[2], pass_text(bn, pass, sizeof pass));
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

/* ---- bandwidth ---------------------------------------------------------- */

typedef struct bw_ctx {
    bench *bn;
    et_bw_kind kind;
    et_buffer *a, *b, *sums, *prm;
    size_t bytes;       /* DRAM: bytes per buffer */
    /* cache levels */
    int level;          /* -1: DRAM */
    int64_t region;     /* bytes of one group's working set per buffer */
    int groups;
    unsigned passes;
} bw_ctx;

/* pt: width, per_item, pattern, local. */
static et_bw_variant bw_variant_of(const int *pt)
{
    et_bw_variant v;
    v.width = pt[0];
    v.per_item = pt[1];
    v.pattern = (et_bw_pattern)pt[2];
    v.local = pt[3];
    return v;
}

/* Times variant pt: `runs` rates in GB/s, (bytes read + written) / time. */
static et_status bw_time(bw_ctx *c, const int *pt, int runs, double *rates,
                         et_error *err)
{
    et_device *dev = c->bn->dev;
    const et_backend_kind be = dev->info.target.backend;
    et_bw_variant v = bw_variant_of(pt);
    const char *name = NULL;
    char *src = et_peaks_bw_source(be, c->kind, &v, &name);
    if (!src)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_program *p = NULL;
    et_status st = prog_get(&c->bn->pc, src, name, &p, err);
    if (st != ET_OK)
        return st;
    const int w = be == ET_BACKEND_CUDA ? 1 : clamp_width(v.width);
    const size_t esz = (size_t)w * sizeof(float);
    int64_t global;
    double moved; /* per launch */
    int64_t local = v.local;
    if (c->level < 0) {
        int64_t n = (int64_t)(c->bytes / esz);
        global = n / v.per_item;
        if (local > 0 && global % local)
            return et_errorf(err, ET_ERR_INPUT, "no whole work-groups");
        moved = (c->kind == ET_BW_COPY ? 2.0 : 1.0) * (double)c->bytes;
    } else {
        uint32_t n = (uint32_t)(c->region / (int64_t)esz);
        uint32_t prm[2] = {n, c->passes};
        if (n < (uint32_t)v.per_item * 4)
            return et_errorf(err, ET_ERR_INPUT, "working set too small");
        st = et_buffer_write(dev, c->prm, 0, prm, sizeof prm, err);
        if (st != ET_OK)
            return st;
        if (local <= 0)
            local = 1;
        global = (int64_t)c->groups * local;
        /* walk: every work-item reads the group's whole set each pass;
         * sweep: the group together does */
        double per_group = (double)c->passes * (double)n * (double)esz *
                           (v.pattern == ET_BW_WALK ? (double)local : 1.0);
        moved = (c->kind == ET_BW_COPY ? 2.0 : 1.0) * per_group *
                (double)c->groups;
    }
    et_buffer *args[3] = {c->kind == ET_BW_READ ? c->sums : c->b, c->a,
                          c->prm};
    et_launch g = launch_1d(global, local);
    return time_runs(dev, p, &g, args, 3, moved / 1e9, runs, rates, err);
}

static double bw_rate(void *arg, const int *pt)
{
    bw_ctx *c = arg;
    if (c->bn->st != ET_OK)
        return 0;
    double rates[8];
    et_error e = {{0}};
    et_status st = bw_time(c, pt, c->bn->short_runs, rates, &e);
    if (st != ET_OK)
        return variant_failed(c->bn, st, &e);
    return fastest_of(0, rates, c->bn->short_runs);
}

/* Searches the variants of one kind at one level, then times the winner
 * properly into lv. */
static et_status bw_search(bw_ctx *c, et_vsearch_dim *dims, int *pt,
                           et_level_bw *lv, double *rates)
{
    bench *bn = c->bn;
    /* a later pass: the winner alone */
    const et_bw_variant *won = &lv->variant[c->kind];
    int fixed[4];
    et_vsearch_dim one[4];
    if (bn->pass > 0 && won->width > 0) {
        fixed[0] = pt[0] = won->width;
        fixed[1] = pt[1] = won->per_item;
        fixed[2] = pt[2] = (int)won->pattern;
        fixed[3] = pt[3] = won->local;
        memcpy(one, dims, sizeof one); /* the caller's serve other kinds */
        pin_dims(one, fixed, 4);
        dims = one;
    }
    double best = 0;
    int evals = et_vsearch_run(dims, 4, pt, &best, bw_rate, c);
    et_status st = bn->st;
    if (st != ET_OK)
        return st;
    if (!(best > 0))
        return et_errorf(bn->err, ET_ERR_DEVICE, "no variant ran");
    if (c->level >= 0)
        c->passes *= 4; /* the winner runs longer */
    st = bw_time(c, pt, bn->runs, rates, bn->err);
    if (c->level >= 0)
        c->passes /= 4;
    if (st != ET_OK)
        return st;
    double this_pass = fastest_of(best, rates, bn->runs);
    lv->spread[c->kind] = keep_runs(
        bn, FIG_BW(c->level < 0 ? ET_MEM_DRAM : c->level, c->kind), rates,
        bn->runs);
    /* the fastest launch of the winner, in any pass's runs or search
     * (another process can only slow a launch down) */
    lv->gbs[c->kind] = fmax(lv->gbs[c->kind],
                            fmax(lv->spread[c->kind].max, best));
    lv->variant[c->kind] = bw_variant_of(pt);
    if (bn->dev->info.target.backend == ET_BACKEND_CUDA)
        lv->variant[c->kind].width = 1;
    const et_bw_variant *v = &lv->variant[c->kind];
    char where[64];
    if (c->level < 0)
        snprintf(where, sizeof where, "DRAM");
    else
        snprintf(where, sizeof where, "L%d, %lld KiB working set",
                 c->level + 1, (long long)(lv->working_set_bytes >> 10));
    char wg[32];
    if (v->local > 0)
        snprintf(wg, sizeof wg, "work-groups of %d", v->local);
    else
        snprintf(wg, sizeof wg, "the runtime's work-groups");
    char pass[48];
    note(bn->o, "%s %s bandwidth: %.1f GB/s (this pass %.1f; min %.1f, "
         "median %.1f, %d runs; best of %d variants: width %d, %d per "
         "work-item, %s, %s%s)",
         where, et_bw_kind_name(c->kind), lv->gbs[c->kind], this_pass,
         lv->spread[c->kind].min, lv->spread[c->kind].median,
         lv->spread[c->kind].runs, evals, v->width, v->per_item,
         et_bw_pattern_name(v->pattern), wg, pass_text(bn, pass, sizeof pass));
    return ET_OK;
}

/* Largest power of two <= x (x >= 1). */
static int64_t pow2_floor(int64_t x)
{
    int64_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}

/* Passes over a level's working set so that a short launch takes about
 * target_s / 4, from one timed probe of variant pt. */
static et_status bw_calibrate(bw_ctx *c, const int *pt, et_error *err)
{
    c->passes = 1;
    for (int round = 0; round < 6; round++) {
        double r = 0;
        et_status st = bw_time(c, pt, 1, &r, err);
        if (st != ET_OK)
            return st;
        double moved_gb = (c->kind == ET_BW_COPY ? 2.0 : 1.0) *
                          (double)c->region * (double)c->groups *
                          (double)c->passes / 1e9;
        if (pt[2] == ET_BW_WALK && pt[3] > 0)
            moved_gb *= pt[3];
        double s = moved_gb / r;
        if (s >= 0.2 * c->bn->target_s || c->passes >= (1u << 20))
            break;
        double scale = s > 0 ? 0.25 * c->bn->target_s / s : 64;
        scale = scale > 64 ? 64 : scale < 2 ? 2 : scale;
        c->passes = (unsigned)((double)c->passes * scale);
    }
    return ET_OK;
}

static et_status measure_bw(bench *bn, size_t bytes, et_peaks *out)
{
    et_device *dev = bn->dev;
    const et_device_info *info = &dev->info;
    const et_target *tg = &info->target;
    const bool cuda = tg->backend == ET_BACKEND_CUDA;
    et_error *err = bn->err;
    bw_ctx c;
    memset(&c, 0, sizeof c);
    c.bn = bn;
    c.bytes = bytes;
    c.level = -1;
    double *rates = calloc((size_t)bn->runs, sizeof(double));
    et_status st = rates ? ET_OK : et_errorf(err, ET_ERR_NOMEM,
                                             "out of memory");
    if (st == ET_OK)
        st = et_buffer_alloc(dev, bytes, &c.a, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, bytes, &c.b, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 64, &c.sums, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 16, &c.prm, err);
    /* ones everywhere (also faults the pages in on a CPU): the reads see
     * ordinary numbers and never the -1 that would make them store */
    if (st == ET_OK) {
        char *src = fill_source(tg->backend);
        et_program *fill = NULL;
        st = src ? prog_get(&bn->pc, src, "et_peak_fill", &fill, err)
                 : et_errorf(err, ET_ERR_NOMEM, "out of memory");
        et_launch g = launch_1d((int64_t)(bytes / sizeof(float)), 0);
        for (int i = 0; i < 2 && st == ET_OK; i++) {
            et_buffer *a[1] = {i ? c.b : c.a};
            st = et_launch_kernel(dev, fill, &g, a, NULL, 1, NULL, err);
        }
    }
    /* DRAM: the grid of widths, elements per work-item, patterns and
     * work-group sizes (0: the runtime's choice) */
    static const int widths[] = {1, 2, 4, 8, 16};
    static const int per_item[] = {1, 4, 16, 64};
    static const int patterns[] = {ET_BW_CHUNK, ET_BW_STRIDED};
    int locals[3] = {0, 64, 256}, nl = 1;
    for (int i = 1; i < 3; i++)
        if (tg->max_work_group_size <= 0 ||
            locals[i] <= tg->max_work_group_size)
            locals[nl++] = locals[i];
    int one = 1;
    et_vsearch_dim dims[4] = {
        {"width", cuda ? &one : widths, cuda ? 1 : 5},
        {"per_item", per_item, 4},
        {"pattern", patterns, 2},
        {"local", locals, nl},
    };
    int start_w = cuda ? 1 : 4;
    if (bn->o->quick) {
        dims[0].values = &start_w;
        dims[0].n = 1;
        dims[3].n = 1;
    }
    int dram_pt[ET_BW_COUNT][4];
    for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
        c.kind = (et_bw_kind)k;
        int pt[4] = {start_w, 16, ET_BW_CHUNK, 0};
        st = bw_search(&c, dims, pt, &out->level[ET_MEM_DRAM], rates);
        memcpy(dram_pt[k], pt, sizeof pt);
        if (st != ET_OK) {
            et_error_prefix(err, k == ET_BW_READ ? "DRAM read bandwidth "
                                                   "benchmark"
                                                 : "DRAM copy bandwidth "
                                                   "benchmark");
        }
    }
    if (st == ET_OK) {
        out->level[ET_MEM_DRAM].working_set_bytes = (int64_t)bytes;
        out->bandwidth_gbs = out->level[ET_MEM_DRAM].gbs[ET_BW_COPY];
    }

    /* Cache levels: a working set of half the cache (per group for a
     * private level, shared out among the groups for a shared one); the
     * same buffers are launched on again and again, so they stay in it.
     * On a CPU one group per compute unit, each walking its own set; on a
     * GPU four groups per unit of 256 work-items sweeping theirs. Searched:
     * the width and the elements per step. */
    const int cu = tg->compute_units > 0 ? tg->compute_units : 1;
    const int levels = bn->o->quick ? 1 : ET_CACHE_LEVELS;
    for (int l = 0; l < levels && st == ET_OK; l++) {
        const et_cache_level *cl = &info->cache[l];
        if (cl->bytes <= 0)
            continue;
        et_level_bw *lv = &out->level[l];
        c.level = l;
        c.groups = info->is_cpu ? cu : 4 * cu;
        int local = info->is_cpu ? 1 : 256;
        if (tg->max_work_group_size > 0 && local > tg->max_work_group_size)
            local = (int)tg->max_work_group_size;
        static const int lvl_items[] = {4, 16};
        int lvl_pattern = info->is_cpu ? ET_BW_WALK : ET_BW_SWEEP;
        et_vsearch_dim ld[4] = {
            {"width", cuda ? &one : widths, cuda ? 1 : 5},
            {"per_item", lvl_items, 2},
            {"pattern", &lvl_pattern, 1},
            {"local", &local, 1},
        };
        if (bn->o->quick) {
            ld[0].values = &start_w;
            ld[0].n = 1;
            ld[1].n = 1;
        }
        for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
            c.kind = (et_bw_kind)k;
            int64_t set = cl->shared ? cl->bytes / 2 / c.groups
                                     : cl->bytes / 2;
            if (k == ET_BW_COPY)
                set /= 2; /* a and b */
            c.region = pow2_floor(set < 64 ? 64 : set);
            if (c.region * c.groups > (int64_t)bytes)
                c.region = pow2_floor((int64_t)bytes / c.groups);
            lv->working_set_bytes = c.region * c.groups *
                                    (k == ET_BW_COPY ? 2 : 1);
            int pt[4] = {dram_pt[k][0] > 0 ? dram_pt[k][0] : start_w, 4,
                         lvl_pattern, local};
            if (bn->o->quick)
                pt[0] = start_w;
            st = bw_calibrate(&c, pt, err);
            if (st == ET_OK)
                st = bw_search(&c, ld, pt, lv, rates);
            if (st != ET_OK) {
                char what[64];
                snprintf(what, sizeof what, "L%d %s bandwidth benchmark",
                         l + 1, et_bw_kind_name(c.kind));
                et_error_prefix(err, what);
            }
        }
        /* a problem may use the level while its bytes fit in all of this
         * level's caches together; the copy's set is a and b together */
        lv->capacity_bytes = cl->bytes * (cl->shared ? 1 : cu);
        lv->working_set_bytes = 2 * c.region * c.groups;
    }
    if (c.a)
        et_buffer_free(dev, c.a);
    if (c.b)
        et_buffer_free(dev, c.b);
    if (c.sums)
        et_buffer_free(dev, c.sums);
    if (c.prm)
        et_buffer_free(dev, c.prm);
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
    int passes = o.passes > 0 ? o.passes : (o.quick ? 1 : 2);
    double target_s = o.target_s > 0 ? o.target_s : (o.quick ? 0.005 : 0.02);
    size_t bytes = o.bw_bytes ? o.bw_bytes
                              : (o.quick ? (size_t)4 << 20 : (size_t)64 << 20);
    const et_device_info *info = &dev->info;
    const et_target *tg = &info->target;
    /* DRAM buffers at least four times the largest cache */
    for (int l = 0; !o.bw_bytes && !o.quick && l < ET_CACHE_LEVELS; l++)
        if (info->cache[l].bytes > 0 &&
            bytes < 4 * (size_t)info->cache[l].bytes)
            bytes = 4 * (size_t)info->cache[l].bytes;
    if (tg->global_mem_bytes > 0 && bytes > (size_t)tg->global_mem_bytes / 4)
        bytes = (size_t)tg->global_mem_bytes / 4;
    /* whole work-groups of 256 for every width and elements per item */
    size_t quantum = 16 * sizeof(float) * 64 * 256;
    bytes = bytes / quantum * quantum;
    if (bytes == 0)
        bytes = quantum;

    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "%s", info->name);
    snprintf(out->backend, sizeof(out->backend), "%s",
             et_backend_name(tg->backend));
    snprintf(out->driver, sizeof(out->driver), "%s", info->driver_version);
    snprintf(out->eintune_version, sizeof(out->eintune_version), "%s",
             ET_VERSION);
    out->bench_version = ET_PEAKS_BENCH_VERSION;
    out->source = ET_PEAKS_MEASURED;
    err->msg[0] = '\0';

    bench bn;
    memset(&bn, 0, sizeof bn);
    bn.dev = dev;
    bn.o = &o;
    bn.pc.dev = dev;
    bn.runs = runs;
    bn.short_runs = 3;
    bn.target_s = target_s;
    bn.err = err;
    /* Pass 1 searches every figure's variants; each later pass times the
     * winners again, seconds after, and a figure keeps its fastest run of
     * any pass: a spell in which the machine ran slowly (another process,
     * a host that took a core away for a while) then lowers one pass, not
     * the ceiling. */
    note(&o, ET_PEAKS_NOTE_START "%s: FMA throughput, then bandwidth "
         "per memory level; %d pass%s", info->name, passes,
         passes > 1 ? "es" : "");
    et_status st = ET_OK;
    for (bn.pass = 0; st == ET_OK && bn.pass < passes; bn.pass++) {
        st = measure_fma(&bn, ET_F32, out);
        if (st == ET_OK && tg->has_fp64)
            st = measure_fma(&bn, ET_F64, out);
        if (st == ET_OK && tg->has_fp16)
            st = measure_fma(&bn, ET_F16, out);
        /* the FMA programs are not needed until the next pass */
        prog_cache_free(&bn.pc);
        if (st == ET_OK)
            st = measure_bw(&bn, bytes, out);
        prog_cache_free(&bn.pc);
    }
    for (int f = 0; f < FIG_COUNT; f++)
        free(bn.kept[f]);
    for (int t = 0; st == ET_OK && t < ET_DTYPE_COUNT; t++)
        if (!isfinite(out->gflops[t])) {
            st = et_errorf(err, ET_ERR_DEVICE,
                           "%s FMA benchmark gave a non-finite figure",
                           et_dtype_name((et_dtype)t));
        }
    return st;
}
