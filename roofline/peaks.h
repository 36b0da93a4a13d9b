/*
 * peaks.h - device peaks: the micro-benchmarks that measure them, and the
 * per-device cache and override file that keep them.
 *
 * Micro-benchmarks (et_peaks_measure) run on the device itself through the
 * et_device interface, from OpenCL C or CUDA C source generated here (the
 * dialect follows dev->info.target.backend). Each benchmark searches its
 * own variants and keeps the fastest, so that the figures are ceilings no
 * kernel of eintune's passes (docs/roofline.md):
 *   - FMA throughput per dtype: f32, f64 (where the device has fp64), f16
 *     (only where the device has native half arithmetic). Each work-item
 *     keeps `chains` independent accumulators of `width` lanes and runs an
 *     unrolled loop of fma(); the sum is stored so the compiler cannot drop
 *     the work. Searched: width 1..16 (OpenCL), chains 4..16, work-groups
 *     of 16, 64, 256. Counted as 2 flops per lane per fma.
 *   - Bandwidth, read-only (a reduction that writes nothing) and copy
 *     (b = a), counted as (bytes read + written) / time: in DRAM over
 *     buffers far larger than the last-level cache (64 MiB each, at least
 *     4x the largest cache, at most global memory / 4), searched over width
 *     1..16, elements per work-item 1, 4, 16, the pattern (contiguous
 *     chunk per work-item or strided across work-items) and work-group
 *     size (runtime's, 64, 256); then per cache level the device reports
 *     (dev->info.cache), with a working set of half the cache launched on
 *     again and again, searched over width and elements per step.
 * The search is coordinate descent (et_vsearch_run): from a start variant,
 * one dimension at a time, then again around the best until nothing
 * improves; each variant is timed briefly (3 short launches, the same work
 * for all), only the winner properly: `runs` launches (default 5) on the
 * device timer, min/median/max kept. The figure is the winner's fastest
 * launch, in its runs or in the search (another process can only slow a
 * launch down, so the fastest is the nearest to the device's own). A
 * second pass (opts.passes) times every winner again once all figures
 * have been searched, seconds later, and each figure keeps the faster:
 * on a shared or virtual machine a spell of slow running then lowers
 * one pass and not the ceiling. The first launch of every
 * kernel and geometry (where PoCL compiles) is never timed. No fast-math
 * flags. On a CPU device every other busy process takes whole cores from
 * the benchmark: measure on an idle device, or override.
 *
 * Cache (et_peaks_load / et_peaks_store): one small JSON file per device
 * and driver under $XDG_CACHE_HOME/eintune/ (~/.cache/eintune when unset;
 * directories made 0700, files written to a temporary name and renamed).
 * The key is (backend, device name, driver version, eintune version,
 * ET_PEAKS_BENCH_VERSION): the file name holds a readable form and a hash
 * of it, the file repeats the key ("bench_version"), and a file whose key
 * differs (peaks from older micro-benchmarks included) is a miss. The tuning database keeps
 * a second copy (tune/peaks_db.h); callers only see these two functions.
 *
 * Override file (--peaks-file FILE or $ET_PEAKS_FILE), for a device whose
 * vendor figures are known. JSON, every key optional except that at least
 * one figure must be given:
 *
 *   {"device": {"name": "pthread-skylake-avx512"},    // substring check
 *    "gflops": {"f32": 3000.0, "f64": 1500.0, "f16": 6000.0},
 *    "bandwidth_gbs": 400.0}
 *
 * Figures it gives replace measured (or cached) ones; figures it omits are
 * measured or taken from the cache. "bandwidth_gbs" is the DRAM copy
 * figure; a file that gives it stands for every bandwidth figure it does
 * not give itself: the read-only figure is the copy figure and no cache
 * level is used (the DRAM figure serves every problem), unless the file
 * also has "bandwidth": {"read": {"gbs": ..}} or "levels" (the cache
 * format below). "device.name", when given, must be a
 * substring of the device's name, else the file is refused. The cache file
 * uses the same format (the JSON of et_peaks_to_json in report.h), so a
 * cache file is a valid override file.
 *
 * Not thread-safe per device (measurements share the device's queue).
 */
#ifndef ET_PEAKS_H
#define ET_PEAKS_H

#include "measure/backend.h"
#include "roofline/roofline.h"

#include <stdbool.h>
#include <stddef.h>

#define ET_PEAK_FMA_MAX_CHAINS 16 /* independent accumulators, at most */
#define ET_PEAK_FMA_UNROLL 16   /* fma rounds per loop iteration */
#define ET_PEAK_FMA_ITERS 128   /* loop iterations */

/* How the first note of et_peaks_measure begins (a measurement starts):
 * "measuring the peaks of DEVICE: ...". */
#define ET_PEAKS_NOTE_START "measuring the peaks of "

/* Options; the zero value means the defaults. */
typedef struct et_peaks_opts {
    int runs;          /* timed runs per figure; 0 -> 5 (quick: 2) */
    int passes;        /* 0 -> 2 (quick: 1): the search, then the
                          winners timed again; each figure keeps its
                          fastest run of any pass */
    bool quick;        /* small buffers, short launches, a few variants,
                          only the first cache level (tests) */
    size_t bw_bytes;   /* bytes per DRAM bandwidth buffer; 0 -> 64 MiB and
                          at least 4x the largest cache (quick: 4 MiB); at
                          most global memory / 4 */
    double target_s;   /* duration of one winner's launch; 0 -> 0.02 s
                          (quick: 0.005 s); the search's are a quarter */
    /* Progress messages ("f32 FMA: 152.3 GFLOP/s"); may be NULL. */
    void (*log)(void *arg, const char *msg);
    void *log_arg;
} et_peaks_opts;

/*
 * Measures the peaks of dev. out gets every figure the device supports
 * (the others 0), the device's name, backend and driver, and source
 * ET_PEAKS_MEASURED. Returns ET_OK or the failing device call's status with
 * err saying which benchmark and why.
 */
et_status et_peaks_measure(et_device *dev, const et_peaks_opts *opts,
                           et_peaks *out, et_error *err);

/*
 * Source of the FMA benchmark for dtype t, vector width `width` (1, 2, 4,
 * 8 or 16; CUDA ignores it) and `chains` accumulators (1..16) in the
 * backend's dialect. Kernel arguments: (out, in) with in[0..3] the
 * constants a, b, seed scale, chain offset. Returns a malloc'ed string the
 * caller frees, NULL when out of memory; *name (static) gets the kernel
 * name.
 */
char *et_peaks_fma_source(et_backend_kind backend, et_dtype t, int width,
                          int chains, const char **name);

/*
 * Source of bandwidth kernel k for variant v (f32 data; v->width floats
 * per element in OpenCL, scalar floats in CUDA; v->per_item elements per
 * work-item (chunk, strided) or per loop step (walk, sweep)). Arguments
 * (out, a, prm): read's out is a float it never writes in practice,
 * copy's out the destination; prm (uint) = {elements of a group's working
 * set (a power of two), passes} for walk and sweep, unused otherwise.
 * Same ownership as et_peaks_fma_source; NULL also for a bad k or v.
 */
char *et_peaks_bw_source(et_backend_kind backend, et_bw_kind k,
                         const et_bw_variant *v, const char **name);

/* ---- the variant search (coordinate descent) --------------------------- */

#define ET_VSEARCH_MAX_DIMS 4
#define ET_VSEARCH_PASSES 3   /* the coarse pass and at most two more */

/* One dimension of a variant grid: the values it may take. */
typedef struct et_vsearch_dim {
    const char *name;
    const int *values;
    int n;
} et_vsearch_dim;

/* The rate of a variant (higher is faster); <= 0 when it cannot run. */
typedef double (*et_vsearch_rate)(void *arg, const int *point);

/*
 * Searches the grid from `point` (in: the start, one value per dimension;
 * out: the fastest found): each pass tries, dimension by dimension, every
 * other value of that dimension with the others at the best so far and
 * moves to any faster one; passes stop when one finds nothing faster, at
 * most ET_VSEARCH_PASSES. No point is timed twice. *best_rate (may be
 * NULL) gets the winner's rate. Returns the number of points timed (0 for
 * a bad ndims).
 */
int et_vsearch_run(const et_vsearch_dim *dims, int ndims, int *point,
                   double *best_rate, et_vsearch_rate rate, void *arg);

/*
 * Path of the cache file for a device (see above). Returns ET_OK, or
 * ET_ERR_IO when no cache directory can be named (no $XDG_CACHE_HOME and
 * no $HOME) or the path does not fit in cap.
 */
et_status et_peaks_cache_path(const et_device_info *info, char *buf,
                              size_t cap, et_error *err);

/*
 * Loads the cached peaks of a device into out (source ET_PEAKS_CACHED).
 * Returns ET_OK on a hit; ET_ERR_IO when there is no cache file or its key
 * differs (a miss; err says which); ET_ERR_INPUT when the file is
 * unreadable JSON.
 */
et_status et_peaks_load(const et_device_info *info, et_peaks *out,
                        et_error *err);

/* Stores p (keyed by its device fields and ET_VERSION) atomically. */
et_status et_peaks_store(const et_peaks *p, et_error *err);

/* Bits of et_peaks_read_file's *given beyond 1 << dtype (gflops) and
 * 1 << ET_DTYPE_COUNT (bandwidth_gbs). */
#define ET_PEAKS_GIVEN_DRAM (1u << (ET_DTYPE_COUNT + 1))   /* "bandwidth" */
#define ET_PEAKS_GIVEN_LEVELS (1u << (ET_DTYPE_COUNT + 2)) /* "levels" */

/*
 * Reads a peaks file (override or cache format) at path into out: the
 * figures it gives are set, the others left as they were; device fields it
 * gives are copied. *given (may be NULL) gets a bit mask of what was given:
 * 1 << dtype for gflops, 1 << ET_DTYPE_COUNT for bandwidth_gbs, and the
 * ET_PEAKS_GIVEN_* bits. A file must give a gflops or bandwidth_gbs.
 * ET_ERR_IO when unreadable, ET_ERR_INPUT when malformed (err names the
 * file and the key).
 */
et_status et_peaks_read_file(const char *path, et_peaks *out, unsigned *given,
                             et_error *err);

/* The same from JSON text; `path` names it in errors. */
et_status et_peaks_parse(const char *text, const char *path, et_peaks *out,
                         unsigned *given, et_error *err);

/*
 * Puts the bandwidth figures of an override file (ov, read with *given)
 * over out, the rule above: bandwidth_gbs replaces every bandwidth figure
 * (read-only = copy = it, no cache levels), then the file's own
 * "bandwidth" and "levels" figures replace theirs.
 */
void et_peaks_apply_bandwidth(et_peaks *out, const et_peaks *ov,
                              unsigned given);

/*
 * Per figure (FMA throughput per dtype, read-only and copy bandwidth per
 * level), keeps in p the larger of p's and old's, with its spread and
 * variant. Figures of another device or micro-benchmark version are not
 * looked at (nothing changes then).
 */
void et_peaks_keep_max(et_peaks *p, const et_peaks *old);

/* Options of et_peaks_get. Zero value: use the cache, no override. */
typedef struct et_peaks_get_opts {
    bool remeasure;           /* ignore the cache; store the new figures */
    bool keep_max;            /* with remeasure: per figure, the faster of
                                 the stored and the new one (a re-measure
                                 because a kernel beat the roof: both are
                                 measurements, the ceiling is at least
                                 the larger) */
    const char *peaks_file;   /* override file; NULL -> $ET_PEAKS_FILE */
    et_peaks_opts measure;    /* how to measure when needed */
} et_peaks_get_opts;

/*
 * The peaks `check`, `run --time`, `tune` and `peaks` use: the override
 * file's figures where it gives them; the rest from the cache, or measured
 * (and then stored) on a miss or with remeasure. A failure to store the
 * cache is not an error (the figures are still good); a refused override
 * file is ET_ERR_INPUT.
 */
et_status et_peaks_get(et_device *dev, const et_peaks_get_opts *opts,
                       et_peaks *out, et_error *err);

#endif /* ET_PEAKS_H */
