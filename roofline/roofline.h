/*
 * roofline.h - device peaks and the roofline model (docs/roofline.md).
 *
 * Peaks (et_peaks) are plain values: the FMA throughput per dtype in
 * GFLOP/s and the streaming bandwidth in GB/s, with the spread of the runs
 * that produced them. They come from the micro-benchmarks in peaks.h, from
 * the per-device cache, or from an override file (see et_peaks_load()).
 *
 * The model, for an einsum with ops_d operations booked to dtype d and
 * `bytes` of compulsory traffic:
 *
 *   compute time  = max over d of ops_d / peak_d
 *   memory time   = bytes / bandwidth
 *   roofline time = max(compute time, memory time)
 *   roofline GOps/s of d = ops_d / roofline time
 *
 * Which peak serves a dtype: its own when measured (> 0); f16 without a
 * native f16 peak uses the f32 peak, because f16 is a storage type computed
 * in f32 (et_einsum_ops books its ops to the accumulation dtype anyway, so
 * this only matters for hand-made op counts). A dtype with ops but no peak
 * and no fallback (f64 on a device without fp64) is ET_ERR_UNSUPPORTED.
 *
 * Bandwidth used by the model: `bandwidth_gbs`, the best of the streaming
 * kernels (read, write, copy, triad), each counted as (bytes read + bytes
 * written) / time. The copy is the usual figure; the best of the four is the
 * honest roof for kernels that mostly read (reductions, matvec), which a
 * copy-only figure would let exceed 100 % of the roofline.
 *
 * Nothing here touches a device; everything is thread-safe.
 */
#ifndef ET_ROOFLINE_H
#define ET_ROOFLINE_H

#include "eintune.h"
#include "einsum/einsum.h"

#include <stdbool.h>
#include <stdint.h>

/* Spread of one figure over its runs (rates: GFLOP/s or GB/s). */
typedef struct et_spread {
    int runs;       /* 0: no spread known (override file, hand-made) */
    double min;
    double median;
    double max;
} et_spread;

/* The streaming kernels that measure bandwidth. */
typedef enum et_bw_kind {
    ET_BW_READ = 0, /* a reduction: reads a buffer, writes a little */
    ET_BW_WRITE,    /* fills a buffer */
    ET_BW_COPY,     /* b = a */
    ET_BW_TRIAD,    /* a = b + s * c */
    ET_BW_COUNT
} et_bw_kind;

/* "read", "write", "copy", "triad". */
const char *et_bw_kind_name(et_bw_kind k);

/* Where a set of peaks came from. */
typedef enum et_peaks_source {
    ET_PEAKS_MEASURED = 0, /* micro-benchmarks in this process */
    ET_PEAKS_CACHED,       /* the per-device cache file */
    ET_PEAKS_OVERRIDE,     /* an override file (vendor figures) */
    ET_PEAKS_SOURCE_COUNT
} et_peaks_source;

/* "measured", "cached", "override". */
const char *et_peaks_source_name(et_peaks_source s);

typedef struct et_peaks {
    /* The device they belong to (the cache key with eintune's version). */
    char device_name[256];
    char backend[16];        /* "opencl", "cuda" */
    char driver[128];        /* driver version */
    char eintune_version[32];
    et_peaks_source source;
    /* FMA throughput; 0 where the dtype was not measured (no native f16,
     * no fp64). Each figure is the best run, i.e. spread.max when measured. */
    double gflops[ET_DTYPE_COUNT];
    et_spread gflops_spread[ET_DTYPE_COUNT];
    /* Streaming bandwidth per kernel; 0 where not measured. */
    double bw_gbs[ET_BW_COUNT];
    et_spread bw_spread[ET_BW_COUNT];
    /* The model's bandwidth: the best of bw_gbs (or the override's). */
    double bandwidth_gbs;
} et_peaks;

/* Which roof limits an einsum. */
typedef enum et_bound {
    ET_BOUND_MEMORY = 0,
    ET_BOUND_COMPUTE,
    ET_BOUND_COUNT
} et_bound;

/* "memory", "compute". */
const char *et_bound_name(et_bound b);

/* The model's answer for one einsum on one device. Plain value. */
typedef struct et_roofline {
    int64_t ops[ET_DTYPE_COUNT]; /* ops booked per dtype */
    int64_t ops_total;
    int64_t bytes;               /* compulsory bytes */
    double intensity;            /* ops_total / bytes (ops per byte) */
    double peak_gflops[ET_DTYPE_COUNT]; /* the peak that serves each dtype
                                           (0: none, no ops there) */
    double compute_s;            /* max over d of ops_d / peak_d */
    et_dtype compute_dtype;      /* the dtype that sets compute_s */
    double memory_s;             /* bytes / bandwidth */
    double time_s;               /* max(compute_s, memory_s) */
    et_bound bound;              /* memory when memory_s >= compute_s */
    double gops[ET_DTYPE_COUNT]; /* roofline GOps/s: ops_d / time_s / 1e9 */
} et_roofline;

/*
 * The peak (GFLOP/s) that serves dtype t under the fallback rule above;
 * 0 when there is none.
 */
double et_peaks_gflops_for(const et_peaks *p, et_dtype t);

/*
 * The model from raw counts. ops[d] >= 0 per dtype, bytes >= 0.
 * Returns ET_OK, ET_ERR_INPUT (negative counts, bandwidth <= 0 with
 * bytes > 0, or nothing to count at all), or ET_ERR_UNSUPPORTED (ops in a
 * dtype with no peak). `why` (may be NULL, `why_cap` bytes) says which.
 */
et_status et_roofline_from_counts(const int64_t ops[ET_DTYPE_COUNT],
                                  int64_t bytes, const et_peaks *p,
                                  et_roofline *r, char *why, size_t why_cap);

/* The model for an einsum: et_einsum_ops + et_einsum_bytes, then as above. */
et_status et_roofline_compute(const et_einsum *e, const et_peaks *p,
                              et_roofline *r, char *why, size_t why_cap);

/* Measured GOps/s of dtype t for a run of measured_s seconds (0 when t has
 * no ops or measured_s <= 0). */
double et_roofline_measured_gops(const et_roofline *r, et_dtype t,
                                 double measured_s);

/*
 * Fraction of the roofline a run of measured_s seconds reaches:
 * roofline time / measured time, which equals measured GOps/s over
 * roofline GOps/s for every dtype with ops, and still means something for
 * a copy (0 ops). 0 when measured_s <= 0.
 */
double et_roofline_ratio(const et_roofline *r, double measured_s);

#endif /* ET_ROOFLINE_H */
