/*
 * peaks.h - device peaks: the micro-benchmarks that measure them, and the
 * per-device cache and override file that keep them.
 *
 * Micro-benchmarks (et_peaks_measure) run on the device itself through the
 * et_device interface, from OpenCL C or CUDA C source generated here (the
 * dialect follows dev->info.target.backend):
 *   - FMA throughput per dtype: f32, f64 (where the device has fp64), f16
 *     (only where the device has native half arithmetic). Each work-item
 *     keeps ET_PEAK_FMA_CHAINS independent accumulators of the device's
 *     preferred vector width and runs a long unrolled loop of fma(); the
 *     sum of the accumulators is stored so the compiler cannot drop the
 *     work. Work-groups of 64; the global size is calibrated so that one
 *     launch lasts about target_s. Counted as 2 flops per lane per fma.
 *     On a CPU device every other busy process takes whole cores from the
 *     benchmark (on this project's 2-core machine one busy process halves
 *     the figure): measure on an idle device, or override.
 *   - Bandwidth: read (a reduction of three buffers), write (a fill), copy
 *     (b = a) and triad
 *     (a = b + s*c) over buffers far larger than the last-level cache
 *     (64 MiB each, at most global memory / 12), counted as (bytes read +
 *     bytes written) / time.
 * Each figure is the best of `runs` timed launches (default 5) on the
 * device timer, with min/median/max kept; the first launch of every kernel
 * and geometry (where PoCL compiles) is never timed. No fast-math flags.
 *
 * Cache (et_peaks_load / et_peaks_store): one small JSON file per device
 * and driver under $XDG_CACHE_HOME/eintune/ (~/.cache/eintune when unset;
 * directories made 0700, files written to a temporary name and renamed).
 * The key is (backend, device name, driver version, eintune version): the
 * file name holds a readable form and a hash of it, the file repeats the
 * key, and a file whose key differs is a miss. The tuning database keeps
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
 * measured or taken from the cache. "device.name", when given, must be a
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

#define ET_PEAK_FMA_CHAINS 12   /* independent accumulators per work-item */
#define ET_PEAK_FMA_UNROLL 16   /* fma rounds per loop iteration */
#define ET_PEAK_FMA_ITERS 128   /* loop iterations */
#define ET_PEAK_READ_STREAMS 4 /* elements of each buffer a work-item of
                                  `read` sums */

/* Options; the zero value means the defaults. */
typedef struct et_peaks_opts {
    int runs;          /* timed runs per figure; 0 -> 5 (quick: 2) */
    bool quick;        /* small buffers and short launches (tests) */
    size_t bw_bytes;   /* bytes per bandwidth buffer; 0 -> 64 MiB (quick:
                          4 MiB); at most global memory / 12 */
    double target_s;   /* duration of one FMA launch; 0 -> 0.05 s (quick:
                          0.005 s) */
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
 * 8 or 16; CUDA ignores it) in the backend's dialect. Kernel arguments:
 * (out, in) with in[0..3] the constants a, b, seed scale, chain offset.
 * Returns a malloc'ed string the caller frees, NULL when out of memory;
 * *name (static) gets the kernel name.
 */
char *et_peaks_fma_source(et_backend_kind backend, et_dtype t, int width,
                          const char **name);

/*
 * Source of bandwidth kernel k (f32 data, 16-byte elements in OpenCL,
 * scalar floats in CUDA). Arguments, output first:
 *   read:  (partial sums, a, b, c)    write: (a, constants)
 *   copy:  (b, a)               triad: (a, b, c, constants)
 * Same ownership as et_peaks_fma_source.
 */
char *et_peaks_bw_source(et_backend_kind backend, et_bw_kind k,
                         const char **name);

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

/*
 * Reads a peaks file (override or cache format) at path into out: the
 * figures it gives are set, the others left as they were; device fields it
 * gives are copied. *given (may be NULL) gets a bit mask of what was given:
 * 1 << dtype for gflops, 1 << ET_DTYPE_COUNT for bandwidth_gbs.
 * ET_ERR_IO when unreadable, ET_ERR_INPUT when malformed (err names the
 * file and the key).
 */
et_status et_peaks_read_file(const char *path, et_peaks *out, unsigned *given,
                             et_error *err);

/* Options of et_peaks_get. Zero value: use the cache, no override. */
typedef struct et_peaks_get_opts {
    bool remeasure;           /* ignore the cache; store the new figures */
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
