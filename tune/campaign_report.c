/*
 * campaign_report.c - a campaign's report (campaign.h): an entry per
 * problem, the summary table `eintune campaign` prints, the report as
 * JSON, and a tuning summary as the JSON object kept in the database
 * (campaign_results) and read back from it.
 */
#include "tune/campaign.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a tuning summary as JSON ------------------------------------------- */

static cJSON *pair(double a, double b)
{
    cJSON *j = cJSON_CreateArray();
    cJSON_AddItemToArray(j, cJSON_CreateNumber(isfinite(a) ? a : 0));
    cJSON_AddItemToArray(j, cJSON_CreateNumber(isfinite(b) ? b : 0));
    return j;
}

/* A tuning run's summary as the JSON object kept in the database. */
static cJSON *summary_json(const et_tune_summary *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "found", s->found);
    if (s->found) {
        cJSON *b = cJSON_AddObjectToObject(j, "best");
        cJSON_AddStringToObject(b, "opts", s->opts);
        cJSON_AddStringToObject(b, "kernel", s->kernel);
        cJSON_AddNumberToObject(b, "time_s", s->time_s);
        cJSON_AddItemToObject(b, "ci95_s", pair(s->ci95_s[0], s->ci95_s[1]));
        cJSON_AddNumberToObject(b, "gops", s->gops);
        cJSON_AddNumberToObject(b, "speedup", s->speedup);
        cJSON_AddItemToObject(b, "speedup_ci95",
                              pair(s->speedup_ci95[0], s->speedup_ci95[1]));
        cJSON_AddBoolToObject(b, "raced", s->raced);
        cJSON_AddStringToObject(b, "time_source", s->time_source);
        cJSON_AddNumberToObject(b, "search_time_s", s->search_time_s);
        cJSON_AddItemToObject(b, "search_ci95_s",
                              pair(s->search_ci95_s[0], s->search_ci95_s[1]));
    } else {
        cJSON_AddNullToObject(j, "best");
    }
    cJSON_AddNumberToObject(j, "baseline_s", s->baseline_s);
    cJSON_AddNumberToObject(j, "evaluations", s->evaluations);
    cJSON_AddNumberToObject(j, "cached", s->cached);
    cJSON_AddNumberToObject(j, "duplicates", s->duplicates);
    cJSON_AddNumberToObject(j, "failures", s->failures);
    cJSON_AddNumberToObject(j, "cut_at_bound", s->cut_at_bound);
    cJSON_AddStringToObject(j, "stop_reason", s->stop_reason);
    cJSON_AddNumberToObject(j, "elapsed_s", s->elapsed_s);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void str(const cJSON *o, const char *k, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static double num_at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void pair_of(const cJSON *o, const char *k, double out[2])
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    out[0] = cJSON_IsArray(v) ? num_at(v, 0) : 0;
    out[1] = cJSON_IsArray(v) ? num_at(v, 1) : 0;
}

char *campaign_summary_text(const et_tune_summary *s)
{
    cJSON *j = summary_json(s);
    char *t = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return t;
}

bool campaign_summary_parse(const char *text, et_tune_summary *s)
{
    memset(s, 0, sizeof *s);
    cJSON *j = cJSON_Parse(text);
    if (!j)
        return false;
    s->found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "found"));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best");
    if (s->found && cJSON_IsObject(b)) {
        str(b, "opts", s->opts, sizeof s->opts);
        str(b, "kernel", s->kernel, sizeof s->kernel);
        s->time_s = num(b, "time_s");
        pair_of(b, "ci95_s", s->ci95_s);
        s->gops = num(b, "gops");
        s->speedup = num(b, "speedup");
        pair_of(b, "speedup_ci95", s->speedup_ci95);
        s->raced = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "raced"));
        str(b, "time_source", s->time_source, sizeof s->time_source);
        s->search_time_s = num(b, "search_time_s");
        pair_of(b, "search_ci95_s", s->search_ci95_s);
    }
    s->baseline_s = num(j, "baseline_s");
    s->evaluations = (int)num(j, "evaluations");
    s->cached = (int)num(j, "cached");
    s->duplicates = (int)num(j, "duplicates");
    s->failures = (int)num(j, "failures");
    s->cut_at_bound = (int)num(j, "cut_at_bound");
    str(j, "stop_reason", s->stop_reason, sizeof s->stop_reason);
    s->elapsed_s = num(j, "elapsed_s");
    cJSON_Delete(j);
    return true;
}

/* ---- the report --------------------------------------------------------- */

et_campaign_report *campaign_report_new(const et_campaign *c)
{
    et_campaign_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->e = calloc((size_t)c->n, sizeof *r->e);
    if (!r->e) {
        free(r);
        return NULL;
    }
    r->n = c->n;
    r->n_ranks = 1;
    snprintf(r->path, sizeof r->path, "%s", c->path);
    for (int i = 0; i < c->n; i++) {
        const campaign_problem *cp = &c->p[i];
        et_campaign_entry *e = &r->e[i];
        e->index = i;
        e->line = cp->line;
        snprintf(e->einsum, sizeof e->einsum, "%s",
                 cp->batch[0] ? cp->e->text : cp->einsum);
        snprintf(e->shape, sizeof e->shape, "%s", cp->shape);
        snprintf(e->dtype, sizeof e->dtype, "%s", cp->dtype);
        snprintf(e->space, sizeof e->space, "%s",
                 cp->space_given[0] ? cp->space_given : "builtin");
        snprintf(e->search, sizeof e->search, "%s", cp->search);
        e->budget = cp->budget;
        e->state = ET_CAMPAIGN_NOT_RUN;
    }
    return r;
}

void campaign_report_free(et_campaign_report *r)
{
    if (!r)
        return;
    free(r->e);
    free(r);
}

const char *campaign_state_name(et_campaign_state s)
{
    static const char *const names[] = {"not run", "tuned", "database",
                                        "failed"};
    _Static_assert(sizeof names / sizeof names[0] == ET_CAMPAIGN_STATE_COUNT,
                   "one name per state");
    return (unsigned)s < ET_CAMPAIGN_STATE_COUNT ? names[s] : "?";
}

/* The counts of each state. */
static void counts(const et_campaign_report *r, int n[ET_CAMPAIGN_STATE_COUNT])
{
    memset(n, 0, sizeof(int) * ET_CAMPAIGN_STATE_COUNT);
    for (int i = 0; i < r->n; i++)
        n[r->e[i].state]++;
}

/* "2024-05-01 14:03" (local time). */
static void date_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&tt, &tm) ||
        !strftime(buf, cap, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, cap, "an unknown date");
}

void campaign_report_print(const et_campaign_report *r, FILE *f)
{
    int n[ET_CAMPAIGN_STATE_COUNT];
    counts(r, n);
    fprintf(f, "campaign    %s: %d problem%s on %s%s; %d tuned in this run, "
               "%d from the database, %d failed, %d not run\n",
            r->path, r->n, r->n == 1 ? "" : "s", r->device,
            r->n_ranks > 1 ? " (one problem per rank)" : "",
            n[ET_CAMPAIGN_TUNED], n[ET_CAMPAIGN_FROM_DB],
            n[ET_CAMPAIGN_FAILED], n[ET_CAMPAIGN_NOT_RUN]);
    fprintf(f, "database    %s\n\n", r->db);
    fprintf(f, "%-3s %-18s %-22s %-8s %-9s%s %-28s %-30s %s\n", "#", "einsum",
            "shape", "dtype", "state", r->n_ranks > 1 ? " rank" : "",
            "best", "time ms [95 % interval]", "speed-up");
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        const et_tune_summary *s = &e->summary;
        char rank[16] = "";
        if (r->n_ranks > 1)
            snprintf(rank, sizeof rank, " %-4d", e->rank);
        char best[64], time[64] = "", sp[48] = "";
        if (e->state == ET_CAMPAIGN_FAILED || e->state == ET_CAMPAIGN_NOT_RUN)
            snprintf(best, sizeof best, "-");
        else if (!s->found)
            snprintf(best, sizeof best, "none passed");
        else
            snprintf(best, sizeof best, "%.28s",
                     s->opts[0] ? s->opts : "untransformed");
        if (s->found && e->state != ET_CAMPAIGN_FAILED) {
            snprintf(time, sizeof time, "%.4g [%.4g, %.4g]", s->time_s * 1e3,
                     s->ci95_s[0] * 1e3, s->ci95_s[1] * 1e3);
            if (s->speedup > 0)
                snprintf(sp, sizeof sp, "%.3gx%s", s->speedup,
                         s->raced ? " (race)" : "");
        }
        fprintf(f, "%-3d %-18.18s %-22.22s %-8.8s %-9s%s %-28s %-30s %s\n",
                i + 1, e->einsum, e->shape, e->dtype,
                campaign_state_name(e->state), rank, best, time, sp);
    }
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        if (e->state == ET_CAMPAIGN_FAILED)
            fprintf(f, "problem %d (%s:%d): %s\n", i + 1, r->path, e->line,
                    e->message);
        else if (e->state == ET_CAMPAIGN_FROM_DB) {
            char d[64];
            date_text(e->finished_at, d, sizeof d);
            fprintf(f, "problem %d: finished %s, answered from the database "
                       "(nothing timed)\n", i + 1, d);
        }
    }
}

char *campaign_report_json(const et_campaign_report *r)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    int n[ET_CAMPAIGN_STATE_COUNT];
    counts(r, n);
    cJSON_AddStringToObject(doc, "campaign", r->path);
    cJSON_AddStringToObject(doc, "database", r->db);
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", r->device);
    cJSON_AddStringToObject(jd, "backend", r->backend);
    cJSON_AddStringToObject(jd, "driver", r->driver);
    cJSON_AddNumberToObject(doc, "ranks", r->n_ranks);
    cJSON *jt = cJSON_AddObjectToObject(doc, "totals");
    cJSON_AddNumberToObject(jt, "problems", r->n);
    cJSON_AddNumberToObject(jt, "tuned", n[ET_CAMPAIGN_TUNED]);
    cJSON_AddNumberToObject(jt, "from_database", n[ET_CAMPAIGN_FROM_DB]);
    cJSON_AddNumberToObject(jt, "failed", n[ET_CAMPAIGN_FAILED]);
    cJSON_AddNumberToObject(jt, "not_run", n[ET_CAMPAIGN_NOT_RUN]);
    cJSON_AddNumberToObject(doc, "elapsed_s", r->elapsed_s);
    cJSON *jp = cJSON_AddArrayToObject(doc, "problems");
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        cJSON *o = (e->state == ET_CAMPAIGN_TUNED ||
                    e->state == ET_CAMPAIGN_FROM_DB)
                       ? summary_json(&e->summary)
                       : cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddNumberToObject(o, "line", e->line);
        cJSON_AddStringToObject(o, "einsum", e->einsum);
        cJSON_AddStringToObject(o, "shape", e->shape);
        cJSON_AddStringToObject(o, "dtype", e->dtype);
        cJSON_AddStringToObject(o, "space", e->space);
        cJSON_AddStringToObject(o, "search", e->search);
        cJSON_AddNumberToObject(o, "budget", e->budget);
        cJSON_AddStringToObject(o, "state", campaign_state_name(e->state));
        if (r->n_ranks > 1)
            cJSON_AddNumberToObject(o, "rank", e->rank);
        if (e->finished_at > 0)
            cJSON_AddNumberToObject(o, "finished_at", (double)e->finished_at);
        if (e->state == ET_CAMPAIGN_FAILED)
            cJSON_AddStringToObject(o, "message", e->message);
        cJSON_AddItemToArray(jp, o);
    }
    char *t = cJSON_Print(doc);
    cJSON_Delete(doc);
    return t;
}

