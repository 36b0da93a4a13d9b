/*
 * tune_figures.c - the figures every part of a tuning run's report shares
 * (report.h): the best's timing and where it comes from, the speed-up
 * over the untransformed kernel, rank 0's cost per trial; and a JSON
 * document's text.
 */
#include "report/report.h"

#include <cjson/cJSON.h>

const et_timing *report_tune_best_timing(const et_tune_result *res)
{
    if (res->race.ran && res->race.chosen >= 0)
        return &res->race.e[res->race.chosen].timing;
    return &res->cand[res->best].timing;
}

const char *report_tune_time_source(const et_tune_result *res)
{
    if (res->race.ran && res->race.chosen >= 0)
        return "race";
    return res->cand[res->best].cached ? "database" : "this run";
}

bool report_tune_baseline_raced(const et_tune_result *res)
{
    return res->race.ran && res->race.baseline >= 0;
}

double report_tune_speedup(const et_tune_result *res, double ci[2])
{
    ci[0] = ci[1] = 0;
    if (res->best < 0)
        return 0;
    if (res->race.ran) {
        /* no interval when the untransformed kernel did not race */
        if (report_tune_baseline_raced(res)) {
            ci[0] = res->race.speedup_lo;
            ci[1] = res->race.speedup_hi;
        }
        return res->race.speedup;
    }
    const et_tune_candidate *b = &res->cand[res->best];
    if (b->cached || !(b->timing.median_s > 0))
        return 0;
    return res->baseline.median_s / b->timing.median_s;
}

double report_tune_rank0_per_trial(const et_tune_report *r)
{
    int n = r->res.n_cand > 0 ? r->res.n_cand : 1;
    double own = r->fig.wall_s - r->fig.wait_s - r->fig.hello_s;
    return (own > 0 ? own : 0) / n;
}

char *report_json_text(cJSON *doc)
{
    if (!doc)
        return NULL;
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}
