/*
 * report.h - roofline reports: the human table, the JSON pieces of
 * docs/roofline.md ("Reports and JSON"), and the roofline chart.
 *
 * Used by `eintune peaks`, `check` (roofline part), `run --time` and
 * `tune`. The JSON builders return cJSON objects the caller owns (free
 * with cJSON_Delete, or hand them to a parent with cJSON_AddItemTo*);
 * they return NULL only when out of memory. Numbers in JSON are GOps/s,
 * GFLOP/s, GB/s and seconds.
 */
#ifndef ET_REPORT_H
#define ET_REPORT_H

#include "roofline/roofline.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* ---- peaks -------------------------------------------------------------- */

/*
 * The `peaks` document:
 *   {"device": {"name", "backend", "driver"}, "eintune_version",
 *    "bench_version", "source",
 *    "gflops": {dtype: value}, "bandwidth_gbs": DRAM copy figure,
 *    "gflops_spread": {dtype: {"runs", "min", "median", "max"}},
 *    "fma_variants": {dtype: {"width", "chains", "local"}},
 *    "bandwidth": {"read"|"copy": {"gbs", "runs", "min", "median", "max",
 *                  "variant": {"width", "per_item", "pattern", "local"}},
 *                  "working_set_bytes"},                      (DRAM)
 *    "levels": [{"level": "L1".."L3", "capacity_bytes",
 *                "working_set_bytes", "read": {..}, "copy": {..}}]}
 * gflops and gflops_spread hold only the dtypes that have a figure; the
 * spreads only figures that were measured (runs > 0), the variants only
 * those recorded.
 */
cJSON *et_peaks_to_json(const et_peaks *p);

/* The peaks as a table: one line per dtype (GFLOP/s) and per bandwidth
 * kernel (GB/s), each with min/median/max and runs. */
void et_peaks_print(FILE *f, const et_peaks *p);

/* ---- one einsum --------------------------------------------------------- */

/* {dtype: roofline GOps/s} for the dtypes with ops. */
cJSON *et_roofline_gops_json(const et_roofline *r);

/* {dtype: measured GOps/s} for the dtypes with ops, for a run of
 * measured_s seconds. */
cJSON *et_measured_gops_json(const et_roofline *r, double measured_s);

/*
 * The bandwidth the roofline used: {"level": "L2" (the last slice's),
 * "read_bytes", "write_bytes", "read_gbs", "copy_gbs" (that level's),
 * "closer_bytes" (served by the closer levels' slices), "bandwidth_gbs"
 * (effective), "label": "52.7 GB/s (L2, read-only; 96 KiB of it from
 * closer caches)"}.
 */
cJSON *et_roofline_memory_json(const et_roofline *r);

/*
 * The roofline part of `check`: {"roofline_s", "bound", "compute_s",
 * "memory_s", "roofline_gops": {dtype: value}, "memory" (as above),
 * "peaks": {"gflops": {...}, "bandwidth_gbs"}}. (check's own keys ops,
 * bytes and intensity stay with check.)
 */
cJSON *et_roofline_to_json(const et_roofline *r, const et_peaks *p);

/*
 * Adds to obj the keys a timed result carries (run --time, tune's `best`
 * and `candidates`): "gops" and "roofline_gops" (dtype -> value),
 * "roofline_memory" (et_roofline_memory_json) and "roofline_fraction"
 * (measured / roofline, see et_roofline_ratio).
 * Returns 0, or -1 when out of memory.
 */
int et_report_add_gops(cJSON *obj, const et_roofline *r, double measured_s);

/*
 * The table
 *
 *   Dtype | Measured GOps/s | Roofline GOps/s | % of roofline
 *
 * one row per dtype with ops, then one line with the bound, the
 * intensity and the bandwidth moved against the one the roofline used
 * (et_roofline_bandwidth_label). A copy or
 * transpose (no ops) gets a single row for "-" whose % is the ratio of
 * times.
 */
void et_roofline_table(FILE *f, const et_roofline *r, double measured_s);

/* Two lines for `check`: the roofline time, its bound and the roofs used. */
void et_roofline_print(FILE *f, const et_roofline *r, const et_peaks *p);

/* ---- the chart ---------------------------------------------------------- */

/* One timed candidate on the chart. */
typedef struct et_plot_point {
    double intensity;  /* ops per byte (x) */
    double gops;       /* measured GOps/s over all dtypes (y) */
} et_plot_point;

/* The point of a run of measured_s seconds: (r->intensity, ops_total /
 * measured_s / 1e9); gops 0 when measured_s <= 0. */
et_plot_point et_plot_point_of(const et_roofline *r, double measured_s);

/* One answered candidate of a tuning run on the convergence panel. */
typedef struct et_plot_trial {
    double elapsed_s;  /* when it was answered, since the run started (x) */
    double time_s;     /* its median time (y, log scale); 0: not timed
                        * (refused, failed, cut), marked on the time axis */
    int cached;        /* answered from the database: a hollow circle */
} et_plot_trial;

/* What to draw; initialise with memset or {0}: fields may be added. */
typedef struct et_plot {
    const et_peaks *peaks;   /* the roofs (required) */
    const char *title;       /* the problem: einsum, sizes, dtypes; NULL:
                              * "roofline" */
    const et_plot_point *points;
    int n_points;
    int best;                /* index of the best point, -1 for none */
    const char *best_label;  /* e.g. "best: 42.1 GOps/s"; NULL: generated */
    const char *subtitle;    /* a second title line (the device, the run);
                              * NULL: none */
    unsigned roof_dtypes;    /* bit 1 << dtype: the compute roofs drawn
                              * (the problem's dtypes); 0: every dtype with
                              * a peak */
    /* The convergence panel, beside the roofline, when n_trials > 0: */
    const et_plot_trial *trials; /* in the order they were answered */
    int n_trials;
    int best_trial;          /* index of the final best, -1 for none */
    double run_s;            /* the run's length (the x axis' end); 0: the
                              * last trial's */
    double baseline_s;       /* the untransformed kernel's time, a dashed
                              * reference line; 0: none */
    double roofline_s;       /* the roofline time, the floor no candidate
                              * can pass; 0: none */
    double bandwidth_gbs;    /* the bandwidth slope: the roofline's
                              * (et_roofline.bandwidth_gbs, its memory
                              * level); 0: the peaks' DRAM copy figure */
} et_plot;

/* The convergence panel's axis titles (also in the SVG's <desc>). */
#define ET_PLOT_CONV_X_LABEL "elapsed time in the run (s)"
#define ET_PLOT_CONV_Y_LABEL "candidate time (median, log scale)"

/*
 * Draws the roofline chart: log-log axes, ops/byte (x) and GOps/s (y)
 * with tick labels, the bandwidth slope and one compute roof per dtype of
 * roof_dtypes with a peak (labelled), every point as a blue circle, the
 * best as a red diamond with a label, and a legend. Points that share one
 * intensity (every candidate of one einsum) are spread a few pixels
 * apart along x, and the legend says so. With trials, a second panel
 * (right) shows the search's convergence: each timed candidate's time
 * against when it was answered (log time axis, linear elapsed axis), the
 * best so far as a step line, the final best as a red diamond, untimed
 * candidates as ticks on the time axis, the untransformed kernel's and
 * the roofline's times as dashed lines. The title (two lines with the
 * subtitle) spans the top. 960x640 for the roofline alone, 1680x700
 * with the convergence panel.
 *
 * The format follows the extension of path: ".svg" or ".png"
 * (case-insensitive); anything else is ET_ERR_INPUT. ET_ERR_IO when the
 * file cannot be written. why (may be NULL) gets the reason. cairo draws
 * text as glyph outlines, so the SVG also carries the title (<title>) and
 * a description of each panel and its axes (<desc>) as text.
 *
 * SVG markers are identifiable: every ordinary point of the roofline
 * panel (and its legend sample) is filled with ET_PLOT_POINT_FILL, the
 * best point (and its legend sample) with ET_PLOT_BEST_FILL, and every
 * timed candidate of the convergence panel but the best (and the legend
 * sample) with ET_PLOT_CONV_FILL (a candidate from the database is a
 * hollow circle), colours used nowhere else.
 */
et_status et_plot_write(const char *path, const et_plot *plot, char *why,
                        size_t why_cap);

/* The fill colours as cairo's SVG surface writes them. */
#define ET_PLOT_POINT_FILL "fill:rgb(12.54902%,37.647059%,74.901961%)"
#define ET_PLOT_BEST_FILL "fill:rgb(87.843137%,12.54902%,12.54902%)"
/* the convergence panel's timed candidates (and their legend sample) */
#define ET_PLOT_CONV_FILL "fill:rgb(18.823529%,54.901961%,85.098039%)"

#endif /* ET_REPORT_H */
