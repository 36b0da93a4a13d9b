/*
 * tune_plot.c - a tuning run's chart data (report.h, et_tune_report_plot):
 * a point per timed candidate on the roofline (the best at its reported
 * time), every answered candidate on the convergence panel, the subtitle
 * naming the device and the run; roofline/report.h's et_plot_write draws
 * it.
 */
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status report_tune_chart_init(report_tune_chart *c,
                                 const et_tune_report *r)
{
    memset(c, 0, sizeof *c);
    const et_tune_result *res = &r->res;
    et_plot_point *pts = calloc((size_t)res->n_cand + 1, sizeof *pts);
    et_plot_trial *trials = calloc((size_t)res->n_cand + 1, sizeof *trials);
    int n = 0, best = -1;
    if (!pts || !trials) {
        free(pts);
        free(trials);
        return ET_ERR_NOMEM;
    }
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *cd = &res->cand[i];
        trials[i].elapsed_s = cd->done_s;
        trials[i].cached = cd->cached;
        /* a duplicate was answered from the candidate whose kernel it is:
         * not timed again, so no point of its own */
        if (cd->outcome != ET_OUTCOME_OK || cd->duplicate_of >= 0)
            continue;
        trials[i].time_s = cd->timing.median_s;
        double ts = i == res->best ? report_tune_best_timing(res)->median_s
                                   : cd->timing.median_s;
        if (i == res->best)
            best = n;
        pts[n].intensity = r->roof.intensity;
        pts[n].gops = (double)r->roof.ops_total / ts / 1e9;
        n++;
    }
    char tb[64] = "";
    if (res->best >= 0) {
        snprintf(tb, sizeof tb, ", best %.3g GOps/s",
                 (double)r->roof.ops_total /
                     report_tune_best_timing(res)->median_s / 1e9);
    }
    snprintf(c->subtitle, sizeof c->subtitle,
             "%.255s (%s)   %s search, %d candidates in %.3g s%s",
             r->info.name, et_backend_name(r->info.target.backend),
             et_search_name(r->kind), res->n_cand, res->elapsed_s, tb);
    c->points = pts;
    c->trials = trials;
    et_plot *plot = &c->plot;
    plot->peaks = &r->peaks;
    plot->subtitle = c->subtitle;
    plot->points = pts;
    plot->n_points = n;
    plot->best = best;
    plot->trials = trials;
    plot->n_trials = res->n_cand;
    plot->best_trial = res->best;
    plot->run_s = res->elapsed_s;
    plot->baseline_s = res->baseline.median_s;
    plot->roofline_s = r->roof.time_s;
    plot->bandwidth_gbs = r->roof.bandwidth_gbs;
    return ET_OK;
}

void report_tune_chart_free(report_tune_chart *c)
{
    free(c->points);
    free(c->trials);
    c->points = NULL;
    c->trials = NULL;
}
