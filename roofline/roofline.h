/*
 * roofline.h - device peaks and the roofline model (docs/roofline.md).
 *
 * Peaks (et_peaks) are plain values: the FMA throughput per dtype in
 * GFLOP/s and the read-only and copy bandwidth per memory level in GB/s,
 * with the spread of the runs that produced them and the micro-benchmark
 * variants that won. They come from the micro-benchmarks in peaks.h, from
 * the per-device cache, or from an override file (see et_peaks_load()).
 *
 * The model, for an einsum with ops_d operations booked to dtype d, R
 * compulsory bytes read (every input once) and W written (the output
 * once), B = R + W:
 *
 *   compute time  = max over d of ops_d / peak_d
 *   memory time   = sum over the levels l of T_l(R_l, W_l), with
 *     T(R, W)     = max(R / read_bw + W * c_w,  (R + W) / max(read_bw, copy_bw))
 *                   with c_w = max(0, 2 / copy_bw - 1 / read_bw)
 *   roofline time = max(compute time, memory time)
 *   roofline GOps/s of d = ops_d / roofline time
 *
 * read_bw is the read-only figure (a reduction that writes nothing), copy_bw
 * the copy's (b = a), both counted as (bytes read + written) / time, of
 * level l. c_w is the time a written byte costs in a copy once its read is
 * paid: T gives exactly the read-only time for bytes that are only read
 * and exactly the copy time for as many written as read, and is linear in
 * between; the second term is a guard for figures where writes would look
 * free (never binding once read_bw >= copy_bw, as below).
 *
 * Which levels: the bytes are sliced from the closest level out. Each
 * measured cache level, from L1 on, serves the bytes between the
 * capacity of the levels before it and its own capacity (its size, times
 * the compute units when each unit has its own), DRAM the rest; every
 * slice reads and writes in the problem's proportion (R_l / W_l = R / W).
 * Launched again and again on the same buffers, a kernel can find at most
 * a cache's capacity of its bytes in that cache, so the slices make a
 * ceiling even for a problem a little larger than the last cache, whose
 * leftovers from the previous launch a single DRAM figure would not
 * allow for. `level` is the level of the last slice: the smallest cache
 * level whose capacity holds B; DRAM when none does or none was measured.
 * A level's figures are raised to those of the
 * larger levels and DRAM where those are higher (a ceiling never drops as
 * the data grows closer), and a read-only figure below the copy figure of
 * its level is raised to it (a kernel that only reads can do what a copy
 * does). Missing figures fall back: a level's read
 * figure to its copy figure, a level without figures to the next larger
 * one, DRAM's read figure to `bandwidth_gbs` (the DRAM copy figure, the
 * one an override file gives), so peaks with only `bandwidth_gbs` give
 * memory time = B / bandwidth_gbs, the classic roofline.
 *
 * Which peak serves a dtype: its own when measured (> 0); f16 without a
 * native f16 peak uses the f32 peak, because f16 is a storage type computed
 * in f32 (et_einsum_ops books its ops to the accumulation dtype anyway, so
 * this only matters for hand-made op counts). A dtype with ops but no peak
 * and no fallback (f64 on a device without fp64) is ET_ERR_UNSUPPORTED.
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

/*
 * Version of the micro-benchmarks. Peaks measured by another version are
 * not used (it is part of the cache key and checked in stored peaks):
 * bump it whenever a benchmark changes what it measures.
 *   1  fixed kernels: FMA with 12 chains, streaming read/write/copy/triad
 *   2  searched variants, read-only and copy figures, cache levels
 *   3  a second pass re-times every winner; each figure keeps the faster
 */
#define ET_PEAKS_BENCH_VERSION 3

/* The streaming kernels that measure bandwidth. */
typedef enum et_bw_kind {
    ET_BW_READ = 0, /* read-only: a reduction that writes nothing */
    ET_BW_COPY,     /* b = a */
    ET_BW_COUNT
} et_bw_kind;

/* "read", "copy". */
const char *et_bw_kind_name(et_bw_kind k);

/* Memory levels the model chooses among: caches 1..3 and DRAM. */
typedef enum et_mem_level {
    ET_MEM_L1 = 0,
    ET_MEM_L2,
    ET_MEM_L3,
    ET_MEM_DRAM,
    ET_MEM_LEVEL_COUNT
} et_mem_level;

/* "L1", "L2", "L3", "DRAM". */
const char *et_mem_level_name(et_mem_level l);

/* The winning variant of an FMA benchmark. */
typedef struct et_fma_variant {
    int width;   /* vector lanes per accumulator (1..16) */
    int chains;  /* independent accumulators per work-item */
    int local;   /* work-group size */
} et_fma_variant;

/* Access patterns of the bandwidth benchmarks. */
typedef enum et_bw_pattern {
    ET_BW_CHUNK = 0, /* each work-item a contiguous run of elements */
    ET_BW_STRIDED,   /* element k of work-item g at g + k * global size */
    ET_BW_WALK,      /* cache levels, CPU: every work-item of a group
                      * walks its group's whole working set */
    ET_BW_SWEEP,     /* cache levels, GPU: a group's work-items sweep its
                      * working set together */
    ET_BW_PATTERN_COUNT
} et_bw_pattern;

/* "chunk", "strided", "walk", "sweep". */
const char *et_bw_pattern_name(et_bw_pattern p);

/* The winning variant of a bandwidth benchmark. width 0: none recorded. */
typedef struct et_bw_variant {
    int width;      /* floats per vector element (1..16) */
    int per_item;   /* elements per work-item (per loop step for walks) */
    int local;      /* work-group size; 0: the runtime chose */
    et_bw_pattern pattern;
} et_bw_variant;

/* Bandwidth of one memory level. */
typedef struct et_level_bw {
    int64_t capacity_bytes;    /* bytes a problem may have to use this
                                  level; 0: not measured (DRAM: unbounded) */
    int64_t working_set_bytes; /* bytes the benchmark kept in the level */
    double gbs[ET_BW_COUNT];   /* read-only and copy; 0: not measured */
    et_spread spread[ET_BW_COUNT];
    et_bw_variant variant[ET_BW_COUNT];
} et_level_bw;

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
    int bench_version;       /* ET_PEAKS_BENCH_VERSION when measured; 0
                                unknown (an override file) */
    et_peaks_source source;
    /* FMA throughput; 0 where the dtype was not measured (no native f16,
     * no fp64). Each figure is the best run, i.e. spread.max when measured. */
    double gflops[ET_DTYPE_COUNT];
    et_spread gflops_spread[ET_DTYPE_COUNT];
    et_fma_variant fma_variant[ET_DTYPE_COUNT]; /* width 0: not recorded */
    /* Bandwidth per memory level; level[ET_MEM_DRAM] over buffers far
     * larger than the last-level cache. */
    et_level_bw level[ET_MEM_LEVEL_COUNT];
    /* The DRAM copy figure (or the override's): the fallback of every
     * bandwidth figure that is missing (see the model above). */
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
    int64_t read_bytes;          /* compulsory bytes read (inputs) */
    int64_t write_bytes;         /* compulsory bytes written (output) */
    et_mem_level level;          /* the level of the last slice: the one
                                    the problem's bytes fit in */
    double read_gbs;             /* its read-only figure (after fallbacks) */
    double copy_gbs;             /* its copy figure (after fallbacks) */
    int64_t closer_bytes;        /* bytes the slices of closer cache levels
                                    serve (B minus the last slice) */
    double bandwidth_gbs;        /* bytes / memory_s: the effective roof */
    double memory_s;             /* the memory time of the model above */
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
 * The level a problem of `bytes` compulsory bytes uses on p (the model's
 * rule above) and its read-only and copy figures after the fallbacks
 * (either may be 0 when p has no bandwidth at all).
 */
et_mem_level et_peaks_level_for(const et_peaks *p, int64_t bytes,
                                double *read_gbs, double *copy_gbs);

/*
 * The model from raw counts. ops[d] >= 0 per dtype, read_bytes >= 0,
 * write_bytes >= 0. Returns ET_OK, ET_ERR_INPUT (negative counts,
 * bandwidth <= 0 with bytes > 0, or nothing to count at all), or
 * ET_ERR_UNSUPPORTED (ops in a dtype with no peak). `why` (may be NULL,
 * `why_cap` bytes) says which.
 */
et_status et_roofline_from_counts(const int64_t ops[ET_DTYPE_COUNT],
                                  int64_t read_bytes, int64_t write_bytes,
                                  const et_peaks *p, et_roofline *r,
                                  char *why, size_t why_cap);

/*
 * "52.7 GB/s (L2, read-only)": the effective bandwidth the roofline used,
 * its level, and "read-only" when under 10 % of the bytes are written,
 * "copy" from 40 %, "read/copy mix" between. Returns buf.
 */
const char *et_roofline_bandwidth_label(const et_roofline *r, char *buf,
                                        size_t cap);

/* The model for an einsum: et_einsum_ops, the inputs' and the output's
 * bytes (their sum is et_einsum_bytes), then as above. */
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
