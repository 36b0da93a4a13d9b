/*
 * peaks_impl.h - internal to the micro-benchmarks of roofline/ (peaks.c,
 * peaks_fma.c, peaks_bw.c): what every benchmark of one et_peaks_measure
 * shares, its program cache, and the functions one file calls in another
 * (prefixed pk_). Not part of the API; nothing outside roofline/
 * includes it.
 *
 * Files, by what they own:
 *   peaks.c      et_peaks_measure (the passes over the benchmarks), the
 *                variant search, timing launches, the kept runs
 *   peaks_fma.c  FMA throughput: its sources and its benchmark
 *   peaks_bw.c   bandwidth, DRAM and cache levels: its sources and its
 *                benchmark
 */
#ifndef ET_PEAKS_IMPL_H
#define ET_PEAKS_IMPL_H

#include "roofline/peaks.h"

#include <stddef.h>
#include <stdint.h>

/* Component names of an OpenCL vector: s0..sf. */
extern const char pk_hexdigit[17];

/* The vector width a source gets for w: a power of two in 1..16 (4 for
 * w <= 0). Inline, so that the compiler sees the bound where a width is
 * printed. */
static inline int pk_clamp_width(int w)
{
    if (w <= 0)
        return 4;
    int p = 1;
    while (p * 2 <= w && p < 16)
        p *= 2;
    return p;
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

/* ---- peaks.c ---- */

/* A note for the log (o->log), printf-style. */
void pk_note(const et_peaks_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Launches `runs` timed times after one untimed launch (where PoCL
 * compiles for a new geometry); rates[i] = work / duration. */
et_status pk_time_runs(et_device *dev, et_program *p, const et_launch *g,
                       et_buffer *const *args, int nargs, double work,
                       int runs, double *rates, et_error *err);

/* A 1-D launch of `global` work-items; local 0: the runtime's
 * work-groups. */
et_launch pk_launch_1d(int64_t global, int64_t local);

/* The program of src (taken: freed here or kept in the cache). */
et_status pk_prog_get(prog_cache *pc, char *src, const char *name,
                      et_program **out, et_error *err);

/* Adds a winner's n runs to figure fig's and returns the spread of all
 * its runs so far (of this pass's alone when out of memory). */
et_spread pk_keep_runs(bench *bn, int fig, double *rates, int n);

/* A pass's fastest launch: the search's best and the winner's runs. */
double pk_fastest_of(double best, const double *rates, int n);

/* A later pass times the winner alone: every dimension pinned to the
 * winner's value, fixed[i]. */
void pk_pin_dims(et_vsearch_dim *dims, int *fixed, int n);

/* "" in the search, ", pass 2" etc. after it (for the notes). */
const char *pk_pass_text(const bench *bn, char *buf, size_t cap);

/* A variant that cannot be built or launched only loses the search (0);
 * a lost device or memory stops the whole measurement (bn->st). */
double pk_variant_failed(bench *bn, et_status st, const et_error *e);

/* ---- peaks_fma.c ---- */

/* The FMA throughput of dtype t into out (a later pass: its winner
 * again). */
et_status pk_measure_fma(bench *bn, et_dtype t, et_peaks *out);

/* ---- peaks_bw.c ---- */

/* The DRAM bandwidth over buffers of `bytes`, then each cache level's,
 * read-only and copy, into out (a later pass: the winners again). */
et_status pk_measure_bw(bench *bn, size_t bytes, et_peaks *out);

#endif
