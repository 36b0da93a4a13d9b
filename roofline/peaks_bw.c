/*
 * peaks_bw.c - the bandwidth micro-benchmarks (see peaks.h): their
 * OpenCL C and CUDA C sources (read-only and copy, by pattern) and their
 * measurement: DRAM over buffers far larger than any cache, then each
 * cache level over a working set that stays in it, a variant search for
 * each, the winner timed properly.
 */
#include "roofline/peaks_impl.h"

#include "base/sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sources ------------------------------------------------------------ */

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
            et_sbuf_printf(b, "%s(s).s%c", l ? " + " : "", pk_hexdigit[l]);
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
    int w = backend == ET_BACKEND_CUDA ? 1 : pk_clamp_width(v->width);
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

/* ---- measurement -------------------------------------------------------- */

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
    et_status st = pk_prog_get(&c->bn->pc, src, name, &p, err);
    if (st != ET_OK)
        return st;
    const int w = be == ET_BACKEND_CUDA ? 1 : pk_clamp_width(v.width);
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
    et_launch g = pk_launch_1d(global, local);
    return pk_time_runs(dev, p, &g, args, 3, moved / 1e9, runs, rates, err);
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
        return pk_variant_failed(c->bn, st, &e);
    return pk_fastest_of(0, rates, c->bn->short_runs);
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
        pk_pin_dims(one, fixed, 4);
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
    double this_pass = pk_fastest_of(best, rates, bn->runs);
    lv->spread[c->kind] = pk_keep_runs(
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
    pk_note(bn->o, "%s %s bandwidth: %.1f GB/s (this pass %.1f; min %.1f, "
            "median %.1f, %d runs; best of %d variants: width %d, %d per "
            "work-item, %s, %s%s)",
            where, et_bw_kind_name(c->kind), lv->gbs[c->kind], this_pass,
            lv->spread[c->kind].min, lv->spread[c->kind].median,
            lv->spread[c->kind].runs, evals, v->width, v->per_item,
            et_bw_pattern_name(v->pattern), wg,
            pk_pass_text(bn, pass, sizeof pass));
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

/* The widths of the OpenCL variants (CUDA's are scalar). */
static const int bw_widths[] = {1, 2, 4, 8, 16};

/* The buffers of c, a and b of `bytes` each, with ones everywhere (also
 * faults the pages in on a CPU): the reads see ordinary numbers and never
 * the -1 that would make them store. */
static et_status bw_buffers(bw_ctx *c, size_t bytes)
{
    et_device *dev = c->bn->dev;
    et_error *err = c->bn->err;
    et_status st = et_buffer_alloc(dev, bytes, &c->a, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, bytes, &c->b, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 64, &c->sums, err);
    if (st == ET_OK)
        st = et_buffer_alloc(dev, 16, &c->prm, err);
    if (st == ET_OK) {
        char *src = fill_source(dev->info.target.backend);
        et_program *fill = NULL;
        st = src ? pk_prog_get(&c->bn->pc, src, "et_peak_fill", &fill, err)
                 : et_errorf(err, ET_ERR_NOMEM, "out of memory");
        et_launch g = pk_launch_1d((int64_t)(bytes / sizeof(float)), 0);
        for (int i = 0; i < 2 && st == ET_OK; i++) {
            et_buffer *a[1] = {i ? c->b : c->a};
            st = et_launch_kernel(dev, fill, &g, a, NULL, 1, NULL, err);
        }
    }
    return st;
}

/* DRAM, read-only then copy, over the buffers of c: the grid of widths,
 * elements per work-item, patterns and work-group sizes (0: the runtime's
 * choice). dram_pt gets each kind's winner. */
static et_status bw_dram(bw_ctx *c, et_peaks *out, double *rates,
                         int dram_pt[ET_BW_COUNT][4])
{
    bench *bn = c->bn;
    const et_target *tg = &bn->dev->info.target;
    const bool cuda = tg->backend == ET_BACKEND_CUDA;
    static const int per_item[] = {1, 4, 16, 64};
    static const int patterns[] = {ET_BW_CHUNK, ET_BW_STRIDED};
    int locals[3] = {0, 64, 256}, nl = 1;
    for (int i = 1; i < 3; i++)
        if (tg->max_work_group_size <= 0 ||
            locals[i] <= tg->max_work_group_size)
            locals[nl++] = locals[i];
    int one = 1;
    et_vsearch_dim dims[4] = {
        {"width", cuda ? &one : bw_widths, cuda ? 1 : 5},
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
    et_status st = ET_OK;
    for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
        c->kind = (et_bw_kind)k;
        int pt[4] = {start_w, 16, ET_BW_CHUNK, 0};
        st = bw_search(c, dims, pt, &out->level[ET_MEM_DRAM], rates);
        memcpy(dram_pt[k], pt, sizeof pt);
        if (st != ET_OK) {
            et_error_prefix(bn->err, k == ET_BW_READ ? "DRAM read bandwidth "
                                                       "benchmark"
                                                     : "DRAM copy bandwidth "
                                                       "benchmark");
        }
    }
    if (st == ET_OK) {
        out->level[ET_MEM_DRAM].working_set_bytes = (int64_t)c->bytes;
        out->bandwidth_gbs = out->level[ET_MEM_DRAM].gbs[ET_BW_COPY];
    }
    return st;
}

/*
 * Cache level l (a level the device reports), read-only then copy: a
 * working set of half the cache (per group for a private level, shared
 * out among the groups for a shared one); the same buffers are launched
 * on again and again, so they stay in it. On a CPU one group per compute
 * unit, each walking its own set; on a GPU four groups per unit of 256
 * work-items sweeping theirs. Searched: the width (from DRAM's winner,
 * dram_pt) and the elements per step.
 */
static et_status bw_level(bw_ctx *c, int l, et_peaks *out, double *rates,
                          int dram_pt[ET_BW_COUNT][4])
{
    bench *bn = c->bn;
    const et_device_info *info = &bn->dev->info;
    const et_target *tg = &info->target;
    const bool cuda = tg->backend == ET_BACKEND_CUDA;
    const int cu = tg->compute_units > 0 ? tg->compute_units : 1;
    const et_cache_level *cl = &info->cache[l];
    if (cl->bytes <= 0)
        return ET_OK;
    et_level_bw *lv = &out->level[l];
    c->level = l;
    c->groups = info->is_cpu ? cu : 4 * cu;
    int local = info->is_cpu ? 1 : 256;
    if (tg->max_work_group_size > 0 && local > tg->max_work_group_size)
        local = (int)tg->max_work_group_size;
    static const int lvl_items[] = {4, 16};
    int lvl_pattern = info->is_cpu ? ET_BW_WALK : ET_BW_SWEEP;
    int one = 1, start_w = cuda ? 1 : 4;
    et_vsearch_dim ld[4] = {
        {"width", cuda ? &one : bw_widths, cuda ? 1 : 5},
        {"per_item", lvl_items, 2},
        {"pattern", &lvl_pattern, 1},
        {"local", &local, 1},
    };
    if (bn->o->quick) {
        ld[0].values = &start_w;
        ld[0].n = 1;
        ld[1].n = 1;
    }
    et_status st = ET_OK;
    for (int k = 0; k < ET_BW_COUNT && st == ET_OK; k++) {
        c->kind = (et_bw_kind)k;
        int64_t set = cl->shared ? cl->bytes / 2 / c->groups
                                 : cl->bytes / 2;
        if (k == ET_BW_COPY)
            set /= 2; /* a and b */
        c->region = pow2_floor(set < 64 ? 64 : set);
        if (c->region * c->groups > (int64_t)c->bytes)
            c->region = pow2_floor((int64_t)c->bytes / c->groups);
        lv->working_set_bytes = c->region * c->groups *
                                (k == ET_BW_COPY ? 2 : 1);
        int pt[4] = {dram_pt[k][0] > 0 ? dram_pt[k][0] : start_w, 4,
                     lvl_pattern, local};
        if (bn->o->quick)
            pt[0] = start_w;
        st = bw_calibrate(c, pt, bn->err);
        if (st == ET_OK)
            st = bw_search(c, ld, pt, lv, rates);
        if (st != ET_OK) {
            char what[64];
            snprintf(what, sizeof what, "L%d %s bandwidth benchmark",
                     l + 1, et_bw_kind_name(c->kind));
            et_error_prefix(bn->err, what);
        }
    }
    /* a problem may use the level while its bytes fit in all of this
     * level's caches together; the copy's set is a and b together */
    lv->capacity_bytes = cl->bytes * (cl->shared ? 1 : cu);
    lv->working_set_bytes = 2 * c->region * c->groups;
    return st;
}

et_status pk_measure_bw(bench *bn, size_t bytes, et_peaks *out)
{
    et_device *dev = bn->dev;
    bw_ctx c;
    memset(&c, 0, sizeof c);
    c.bn = bn;
    c.bytes = bytes;
    c.level = -1;
    double *rates = calloc((size_t)bn->runs, sizeof(double));
    et_status st = rates ? ET_OK : et_errorf(bn->err, ET_ERR_NOMEM,
                                             "out of memory");
    if (st == ET_OK)
        st = bw_buffers(&c, bytes);
    int dram_pt[ET_BW_COUNT][4];
    if (st == ET_OK)
        st = bw_dram(&c, out, rates, dram_pt);
    const int levels = bn->o->quick ? 1 : ET_CACHE_LEVELS;
    for (int l = 0; l < levels && st == ET_OK; l++)
        st = bw_level(&c, l, out, rates, dram_pt);
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
