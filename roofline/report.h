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
 *   {"device": {"name", "backend", "driver"}, "eintune_version", "source",
 *    "gflops": {dtype: value}, "bandwidth_gbs": value,
 *    "gflops_spread": {dtype: {"runs", "min", "median", "max"}},
 *    "bandwidth": {kind: {"gbs", "runs", "min", "median", "max"}}}
 * gflops and gflops_spread hold only the dtypes that have a figure; the
 * spreads only figures that were measured (runs > 0).
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
 * The roofline part of `check`: {"roofline_s", "bound", "compute_s",
 * "memory_s", "roofline_gops": {dtype: value}, "peaks": {"gflops": {...},
 * "bandwidth_gbs"}}. (check's own keys ops, bytes and intensity stay with
 * check.)
 */
cJSON *et_roofline_to_json(const et_roofline *r, const et_peaks *p);

/*
 * Adds to obj the keys a timed result carries (run --time, tune's `best`
 * and `candidates`): "gops" and "roofline_gops" (dtype -> value) and
 * "roofline_fraction" (measured / roofline, see et_roofline_ratio).
 * Returns 0, or -1 when out of memory.
 */
int et_report_add_gops(cJSON *obj, const et_roofline *r, double measured_s);

/*
 * The table
 *
 *   Dtype | Measured GOps/s | Roofline GOps/s | % of roofline
 *
 * one row per dtype with ops, then one line with the bound, the
 * intensity and the effective against the peak bandwidth. A copy or
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

typedef struct et_plot {
    const et_peaks *peaks;   /* the roofs (required) */
    const char *title;       /* e.g. the einsum and the device; may be NULL */
    const et_plot_point *points;
    int n_points;
    int best;                /* index of the best point, -1 for none */
    const char *best_label;  /* e.g. "best: 42.1 GOps/s"; NULL: generated */
} et_plot;

/*
 * Draws the roofline chart: log-log axes, ops/byte (x) and GOps/s (y)
 * with tick labels, the bandwidth slope and one compute roof per dtype
 * with a peak (labelled), every point as a blue circle, the best as a red
 * diamond with a label, and a legend. The format follows the extension of
 * path: ".svg" or ".png" (case-insensitive); anything else is
 * ET_ERR_INPUT. ET_ERR_IO when the file cannot be written. why (may be
 * NULL) gets the reason.
 *
 * SVG markers are identifiable: every ordinary point (and its legend
 * sample) is filled with ET_PLOT_POINT_FILL, the best point (and its
 * legend sample) with ET_PLOT_BEST_FILL, colours used nowhere else.
 */
et_status et_plot_write(const char *path, const et_plot *plot, char *why,
                        size_t why_cap);

/* The fill colours as cairo's SVG surface writes them. */
#define ET_PLOT_POINT_FILL "fill:rgb(12.54902%,37.647059%,74.901961%)"
#define ET_PLOT_BEST_FILL "fill:rgb(87.843137%,12.54902%,12.54902%)"

#endif /* ET_REPORT_H */
