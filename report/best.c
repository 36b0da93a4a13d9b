/*
 * best.c - the best known kernel's report (report.h, et_best_report_print
 * and et_best_report_json): the problem and the device, the opts and the
 * kernel, what kind of answer it is (at these sizes, an open axis, another
 * size's opts), the search's and the final race's times, the
 * verification, the roofline or the GOps/s per dtype.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The lines after the answer's kind: times, verification, roofline. */
static void print_figures(const report_best *b, FILE *f)
{
    const et_best *bb = b->best;
    const et_db_trial *t = &bb->trial;
    fprintf(f, "time        %.4g ms [%.4g, %.4g] (search median, %d runs, "
               "cv %.2g %%)%s%s\n",
            t->median_s * 1e3, t->low_s * 1e3, t->high_s * 1e3, t->runs,
            100 * t->cv, bb->tuned_at[0] ? " at " : "", bb->tuned_at);
    if (b->race)
        fprintf(f, "race time   %.4g ms [%.4g, %.4g] (the final race's "
                   "median over %d rounds, which chose it: %s)\n",
                b->race->median_s * 1e3, b->race->low_s * 1e3,
                b->race->high_s * 1e3, b->race->rounds, b->race->verdict);
    else
        fprintf(f, "race time   none (no final race chose it)\n");
    if (isfinite(t->p_value))
        fprintf(f, "verified    %d trials, max normalized error %.3g, "
                   "p = %.3g\n",
                t->verify_trials, t->max_norm_err, t->p_value);
    else
        fprintf(f, "verified    %d trials, max normalized error %.3g\n",
                t->verify_trials, t->max_norm_err);
    if (b->roof) {
        fputc('\n', f);
        et_roofline_table(f, b->roof, t->median_s);
    } else if (!bb->tuned_at[0]) {
        int64_t ops[ET_DTYPE_COUNT];
        et_einsum_ops(b->e, ops);
        for (int d = 0; d < ET_DTYPE_COUNT; d++)
            if (ops[d] > 0 && t->median_s > 0)
                fprintf(f, "gops        %.4g (%s; no stored peaks for the "
                           "roofline)\n",
                        (double)ops[d] / t->median_s / 1e9,
                        et_dtype_name((et_dtype)d));
    }
}

void report_best_print(const report_best *b, FILE *f)
{
    const et_einsum *e = b->e;
    const et_device_info *info = b->info;
    const et_best *bb = b->best;
    const et_db_trial *t = &bb->trial;
    fprintf(f, "einsum      %s\n", e->text);
    fprintf(f, "device      %s (%s, driver %s)\n", info->name,
            et_backend_name(info->target.backend), info->driver_version);
    if (strcmp(t->einsum_text, e->text) != 0)
        fprintf(f, "tuned as    %s with %s\n", t->einsum_text,
                t->opts[0] ? t->opts : "untransformed");
    fprintf(f, "opts        %s\n", bb->opts[0] ? bb->opts : "untransformed");
    fprintf(f, "kernel      %s\n", b->kernel);
    if (bb->open_axis >= 0)
        fprintf(f, "open axis   %s: the kernel takes its size at launch\n",
                e->idx[bb->open_axis].name);
    if (bb->source == ET_BEST_FALLBACK) {
        fprintf(f, "answer      fallback: tuned at %s, applied at %s "
                   "(the opts re-applied; distance %.3g)\n",
                bb->tuned_at, bb->applied_at, bb->distance);
        fprintf(f, "time        not measured at these sizes\n");
    } else {
        if (bb->source == ET_BEST_OPEN)
            fprintf(f, "answer      open: tuned at %s, applied at %s\n",
                    bb->tuned_at, bb->applied_at);
        print_figures(b, f);
    }
    fflush(f);
}

/* The times ("time_s", "ci95_s") and the GOps/s, against the roofline
 * when there is one; nulls for a fallback, measured at other sizes. */
static void figures_json(const report_best *b, cJSON *doc)
{
    const et_db_trial *t = &b->best->trial;
    if (b->best->source == ET_BEST_FALLBACK) {
        /* measured at other sizes: no figures for these */
        cJSON_AddNullToObject(doc, "time_s");
        cJSON_AddNullToObject(doc, "ci95_s");
        cJSON_AddNullToObject(doc, "gops");
        cJSON_AddNullToObject(doc, "roofline_gops");
        return;
    }
    cJSON_AddNumberToObject(doc, "time_s", t->median_s);
    cJSON *ci = cJSON_AddArrayToObject(doc, "ci95_s");
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->low_s));
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->high_s));
    if (b->roof) {
        cJSON_AddItemToObject(doc, "gops",
                              et_measured_gops_json(b->roof, t->median_s));
        cJSON_AddItemToObject(doc, "roofline_gops",
                              et_roofline_gops_json(b->roof));
        cJSON_AddItemToObject(doc, "roofline_memory",
                              et_roofline_memory_json(b->roof));
        return;
    }
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(b->e, ops);
    cJSON *g = cJSON_AddObjectToObject(doc, "gops");
    for (int d = 0; d < ET_DTYPE_COUNT; d++)
        if (ops[d] > 0 && t->median_s > 0)
            cJSON_AddNumberToObject(g, et_dtype_name((et_dtype)d),
                                    (double)ops[d] / t->median_s / 1e9);
    cJSON_AddNullToObject(doc, "roofline_gops");
}

/* The final race that chose the kernel ("race"), or null. */
static void race_pick_json(const et_db_race_pick *race, cJSON *doc)
{
    if (!race) {
        cJSON_AddNullToObject(doc, "race");
        return;
    }
    cJSON *jr = cJSON_AddObjectToObject(doc, "race");
    cJSON_AddNumberToObject(jr, "time_s", race->median_s);
    cJSON *rci = cJSON_AddArrayToObject(jr, "ci95_s");
    cJSON_AddItemToArray(rci, cJSON_CreateNumber(race->low_s));
    cJSON_AddItemToArray(rci, cJSON_CreateNumber(race->high_s));
    cJSON_AddNumberToObject(jr, "rounds", race->rounds);
    cJSON_AddStringToObject(jr, "verdict", race->verdict);
}

void report_best_json(const report_best *b, cJSON *doc)
{
    const et_einsum *e = b->e;
    const et_device_info *info = b->info;
    const et_best *bb = b->best;
    const et_db_trial *t = &bb->trial;
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", info->name);
    cJSON_AddStringToObject(jd, "backend",
                            et_backend_name(info->target.backend));
    cJSON_AddStringToObject(jd, "driver", info->driver_version);
    cJSON_AddStringToObject(doc, "opts", bb->opts);
    cJSON_AddStringToObject(doc, "kernel", b->kernel);
    cJSON_AddStringToObject(doc, "source", et_best_source_name(bb->source));
    if (bb->open_axis >= 0)
        cJSON_AddStringToObject(doc, "open_axis",
                                e->idx[bb->open_axis].name);
    else
        cJSON_AddNullToObject(doc, "open_axis");
    if (bb->tuned_at[0]) {
        cJSON_AddStringToObject(doc, "tuned_at", bb->tuned_at);
        cJSON_AddStringToObject(doc, "applied_at", bb->applied_at);
    } else {
        cJSON_AddNullToObject(doc, "tuned_at");
        cJSON_AddNullToObject(doc, "applied_at");
    }
    /* time_s is the search's median; the final race's, when a race chose
     * the kernel, is under "race" */
    cJSON_AddStringToObject(doc, "time_source", "search");
    race_pick_json(b->race, doc);
    figures_json(b, doc);
    cJSON *jv = cJSON_AddObjectToObject(doc, "verified");
    cJSON_AddNumberToObject(jv, "trials", t->verify_trials);
    cJSON_AddNumberToObject(jv, "max_norm_err", t->max_norm_err);
    if (isfinite(t->p_value))
        cJSON_AddNumberToObject(jv, "p_value", t->p_value);
    else
        cJSON_AddNullToObject(jv, "p_value");
    cJSON *ta = cJSON_AddObjectToObject(doc, "tuned_as");
    cJSON_AddStringToObject(ta, "einsum", t->einsum_text);
    cJSON_AddStringToObject(ta, "opts", t->opts);
    cJSON_AddStringToObject(ta, "kernel", t->kernel_name);
    cJSON_AddBoolToObject(ta, "source_reproduced", bb->exact);
}
