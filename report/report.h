/*
 * report.h - the reports of the public API's results, printed and as JSON:
 * a tuning run's (et_tune_report), the best known kernel's (et_best_kernel),
 * a problem check's (et_check_report) and the device's peaks
 * (et_peaks_report), and the data of a tuning run's chart. api/ keeps the
 * handles, the argument checks and the public accessors, and calls these.
 *
 * Files, by what they own:
 *   tune_figures.c  the figures every part of a tuning run's report
 *                   shares: the best's timing and its source, the
 *                   speed-up, rank 0's cost per trial; a JSON
 *                   document's text, which every JSON report ends with
 *   tune_print.c    a tuning run's printed report
 *   tune_json.c     a tuning run's JSON report
 *   tune_plot.c     a tuning run's chart data (roofline/report.h draws it)
 *   best.c          the best known kernel, printed and as JSON
 *   check.c         a problem check, printed and as JSON
 *   peaks.c         the device's peaks, printed and as JSON
 *
 * Built on tune/, scale/, roofline/ and the layers below; never calls
 * api/ (the layer above it): what a report shares with api/'s other
 * reports (a problem's "sizes" and "dtypes" in JSON, a chart's title) the
 * caller adds. The functions only read the reports they are given: one
 * report may be read by several threads at once.
 */
#ifndef ET_REPORT_REPORT_H
#define ET_REPORT_REPORT_H

#include "eintune.h"

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "scale/scale.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "tune/best.h"
#include "tune/tune.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- a tuning run ------------------------------------------------------- */

/* The whole result of a tuning run (et_tune_run_full); api/tune.c fills
 * it, frees it (et_tune_report_free) and reads it for the accessors. */
struct et_tune_report {
    char einsum[ET_MAX_TEXT];
    et_einsum e;              /* the problem, for the JSON's sizes, dtypes */
    int64_t ops_total;        /* over all dtypes, for the summary's GOps/s */
    et_device_info info;
    char space[ET_SPACE_NAME_LEN];
    et_search_kind kind;
    et_tune_result res;
    et_peaks peaks;
    et_roofline roof;
    bool have_roof;
    /* scale-out: this process's rank, the run's ranks (rank 0 only) and
     * rank 0's figures */
    int rank, n_ranks;
    et_scale_rank *ranks;
    et_scale_figures fig;
    char roof_note[256];      /* the peaks were measured again: why */
};

/* The best's timing as the report gives it: the race's when it ran. */
const et_timing *report_tune_best_timing(const et_tune_result *res);

/* What report_tune_best_timing is, as the JSON's best.source says:
 * "race" (the final race's median), "this run" (the search's, timed in
 * this run) or "database" (the search's time an earlier run recorded). */
const char *report_tune_time_source(const et_tune_result *res);

/* Whether the untransformed kernel's figure is the final race's (a race
 * ran with it), not the search's. */
bool report_tune_baseline_raced(const et_tune_result *res);

/* The speed-up over the untransformed kernel when it means something:
 * from the race (its 95 % interval in ci), or both times measured in this
 * run (no interval then: ci zeros). 0 when the best's time is from the
 * database or there is no best. */
double report_tune_speedup(const et_tune_result *res, double ci[2]);

/* Rank 0's cost per trial of a scaled-out run: its wall time not spent
 * waiting for the ranks (the search, rendering, the database,
 * dispatching), over the candidates answered. */
double report_tune_rank0_per_trial(const et_tune_report *r);

/* The printed report of `eintune tune` (docs/api.md,
 * et_tune_report_print). */
void report_tune_print(const et_tune_report *r, FILE *f);

/* The run's fields of the JSON report (et_tune_report_json) added to doc,
 * an object that holds the problem already ("einsum", "sizes", "dtypes"):
 * "tune_at", "device", ... "seeds", "candidates". */
void report_tune_json(const et_tune_report *r, cJSON *doc);

/* The chart of a run (et_tune_report_plot) but its title and compute
 * roofs, which the caller sets in plot (the problem's, as api/ words them
 * for every chart) before et_plot_write. Owns the points and trials plot
 * points at; do not move it once filled. */
typedef struct report_tune_chart {
    et_plot plot;
    et_plot_point *points;
    et_plot_trial *trials;
    char subtitle[1600];
} report_tune_chart;

/* Fills c from r, which has a roofline (r->have_roof). ET_ERR_NOMEM (c
 * left empty) when out of memory, else ET_OK; free with
 * report_tune_chart_free. */
et_status report_tune_chart_init(report_tune_chart *c,
                                 const et_tune_report *r);
void report_tune_chart_free(report_tune_chart *c);

/* ---- the best known kernel ---------------------------------------------- */

/* What the best kernel's report shows (api/best.c maps its et_best_kernel
 * onto it). Every pointer but roof and race is required. */
typedef struct report_best {
    const et_einsum *e;          /* the einsum the kernel runs (an open
                                  * axis for an open answer) */
    const et_device_info *info;  /* the device it was looked up for */
    const et_best *best;         /* the stored trial, opts in e's names */
    const char *kernel;          /* the kernel's name in e's names */
    const et_roofline *roof;     /* from the stored peaks; NULL: none */
    const et_db_race_pick *race; /* the latest final race, which chose it;
                                  * NULL: none did */
} report_best;

/* The printed report of `eintune best` (et_best_report_print); flushes
 * f. */
void report_best_print(const report_best *b, FILE *f);

/* The kernel's fields of the JSON report (et_best_report_json) added to
 * doc, an object that holds the problem already ("einsum", "sizes",
 * "dtypes"): "device", "opts", ... "tuned_as". */
void report_best_json(const report_best *b, cJSON *doc);

/* ---- a problem check ---------------------------------------------------- */

/* What `eintune check` says about a problem (et_problem_check fills it). */
struct et_check_report {
    et_einsum e;
    int64_t ops[ET_DTYPE_COUNT];
    int64_t ops_direct;   /* the loop nest's count, booked as ops are */
    int64_t bytes;
    double intensity;
    bool want_roof;       /* the roofline part was asked for */
    bool have_roof;
    char why[2048];       /* why it is missing */
    et_peaks peaks;
    et_roofline roof;
};

/* The printed report (et_check_report_print). */
void report_check_print(const et_check_report *r, FILE *f);

/* The JSON report (et_check_report_json): cJSON_Print's text, NULL when
 * out of memory. */
char *report_check_json(const et_check_report *r);

/* ---- the device's peaks ------------------------------------------------- */

/* The table of `eintune peaks` (et_peaks_report_print). */
void report_peaks_print(const et_peaks *p, FILE *f);

/* The peaks' JSON document (et_peaks_report_json): cJSON_Print's text,
 * NULL when out of memory. */
char *report_peaks_json(const et_peaks *p);

/* ---- shared ------------------------------------------------------------- */

/* doc's text (cJSON_Print; free with cJSON_free, which is free unless
 * cJSON's hooks were changed), doc deleted; NULL for a NULL doc or when
 * out of memory. */
char *report_json_text(cJSON *doc);

#endif /* ET_REPORT_REPORT_H */
