/*
 * tune_json.c - a tuning run's JSON report (report.h, et_tune_report_json;
 * the document is docs/api.md's): the run's figures, the cost model, the
 * noise, the best with its timing, speed-up, roofline and verification,
 * the final race, the ranks of a scaled-out run, the seeds and every
 * candidate.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

/* "{'a': 1, 'b': true}" -> a JSON object (names are identifiers). */
static cJSON *params_json(const char *text)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    cJSON *j = cJSON_Parse(buf);
    return j ? j : cJSON_CreateObject();
}

static cJSON *candidate_json(const et_tune_candidate *c,
                             const et_tune_report *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "params", params_json(c->params));
    cJSON_AddStringToObject(j, "opts", c->opts);
    cJSON_AddStringToObject(j, "status", et_outcome_name(c->outcome));
    cJSON_AddStringToObject(j, "reason", c->reason);
    if (c->outcome == ET_OUTCOME_OK) {
        cJSON_AddNumberToObject(j, "time_s", c->timing.median_s);
        if (r->have_roof)
            cJSON_AddItemToObject(
                j, "gops", et_measured_gops_json(&r->roof,
                                                 c->timing.median_s));
    } else {
        cJSON_AddNullToObject(j, "time_s");
        cJSON_AddNullToObject(j, "gops");
    }
    cJSON_AddBoolToObject(j, "cached", c->cached);
    if (r->n_ranks > 1)
        cJSON_AddNumberToObject(j, "rank", c->rank);
    cJSON_AddNumberToObject(j, "elapsed_s", c->done_s);
    if (c->cached)
        cJSON_AddNumberToObject(j, "measured_at", (double)c->db_created_at);
    if (c->duplicate_of >= 0)
        cJSON_AddNumberToObject(j, "duplicate_of", c->duplicate_of);
    else
        cJSON_AddNullToObject(j, "duplicate_of");
    if (c->seed > 0) {
        const et_tune_seed *sd = &r->res.seeds[c->seed - 1];
        cJSON *js = cJSON_AddObjectToObject(j, "seed");
        cJSON_AddNumberToObject(js, "index", c->seed - 1);
        cJSON_AddStringToObject(js, "einsum", sd->einsum);
        cJSON_AddStringToObject(js, "sizes", sd->sizes);
        cJSON_AddNumberToObject(js, "distance", sd->distance);
        cJSON_AddStringToObject(js, "source",
                                sd->structural ? "structure" : "database");
    } else {
        cJSON_AddNullToObject(j, "seed");
    }
    return j;
}

/* The seeds looked at: where each came from, and the candidate that
 * proposed it or why it was dropped. */
static cJSON *seeds_json(const et_tune_result *res)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < res->n_seeds; i++) {
        const et_tune_seed *sd = &res->seeds[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "opts", sd->opts);
        cJSON_AddStringToObject(j, "einsum", sd->einsum);
        cJSON_AddStringToObject(j, "sizes", sd->sizes);
        cJSON_AddNumberToObject(j, "distance", sd->distance);
        cJSON_AddStringToObject(j, "source",
                                sd->structural ? "structure" : "database");
        cJSON_AddBoolToObject(j, "dropped", sd->dropped);
        if (sd->dropped)
            cJSON_AddStringToObject(j, "reason", sd->reason);
        else
            cJSON_AddNullToObject(j, "reason");
        if (sd->cand >= 0)
            cJSON_AddNumberToObject(j, "candidate", sd->cand);
        else
            cJSON_AddNullToObject(j, "candidate");
        cJSON_AddItemToArray(a, j);
    }
    return a;
}

/* A number, or null when it is not finite. */
static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *pair_json(double a, double b)
{
    if (!isfinite(a) || !isfinite(b))
        return cJSON_CreateNull();
    cJSON *j = cJSON_CreateArray();
    cJSON_AddItemToArray(j, cJSON_CreateNumber(a));
    cJSON_AddItemToArray(j, cJSON_CreateNumber(b));
    return j;
}

static cJSON *race_json(const et_tune_race *R)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "ran", R->ran);
    cJSON_AddStringToObject(j, "note", R->note);
    if (!R->ran)
        return j;
    cJSON_AddStringToObject(j, "method",
                            "round robin on the same inputs; per pair, the "
                            "median of the per-round log time ratios with "
                            "its sign-test interval, Bonferroni-corrected "
                            "over the pairs; tied kernels: the fewest opts");
    cJSON_AddNumberToObject(j, "rounds", R->rounds);
    cJSON_AddNumberToObject(j, "rounds_planned", R->rounds_planned);
    cJSON_AddNumberToObject(j, "conf", R->conf);
    cJSON_AddNumberToObject(j, "pair_conf", R->pair_conf);
    cJSON_AddStringToObject(j, "verdict", et_race_verdict_name(R->verdict));
    cJSON_AddNumberToObject(j, "chosen", R->chosen);
    cJSON_AddNumberToObject(j, "fastest", R->fastest);
    if (R->runner_up >= 0) {
        cJSON_AddNumberToObject(j, "runner_up", R->runner_up);
        cJSON_AddNumberToObject(j, "faster_pct", R->faster_pct);
        cJSON_AddItemToObject(j, "faster_pct_ci95",
                              pair_json(R->faster_lo, R->faster_hi));
    } else {
        cJSON_AddNullToObject(j, "runner_up");
    }
    if (R->tie_with >= 0) {
        cJSON *jt = cJSON_AddObjectToObject(j, "tie");
        cJSON_AddNumberToObject(jt, "with", R->tie_with);
        cJSON_AddNumberToObject(jt, "faster_pct", R->tie_pct);
        cJSON_AddItemToObject(jt, "faster_pct_ci95",
                              pair_json(R->tie_lo, R->tie_hi));
    } else {
        cJSON_AddNullToObject(j, "tie");
    }
    if (R->baseline >= 0)
        cJSON_AddNumberToObject(j, "baseline", R->baseline);
    else
        cJSON_AddNullToObject(j, "baseline");
    cJSON_AddNumberToObject(j, "speedup", R->speedup);
    cJSON_AddItemToObject(j, "speedup_ci95",
                          pair_json(R->speedup_lo, R->speedup_hi));
    cJSON_AddNumberToObject(j, "elapsed_s", R->elapsed_s);
    cJSON *jk = cJSON_AddArrayToObject(j, "kernels");
    for (int i = 0; i < R->n; i++) {
        const et_tune_race_entry *e = &R->e[i];
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "opts", e->opts);
        cJSON_AddStringToObject(k, "kernel", e->kernel);
        cJSON_AddBoolToObject(k, "untransformed", e->untransformed);
        if (e->cand >= 0)
            cJSON_AddNumberToObject(k, "candidate", e->cand);
        else
            cJSON_AddNullToObject(k, "candidate");
        cJSON_AddBoolToObject(k, "tied", e->tied);
        cJSON_AddNumberToObject(k, "time_s", e->timing.median_s);
        cJSON_AddItemToObject(k, "ci95_s",
                              pair_json(e->timing.low_s, e->timing.high_s));
        cJSON_AddNumberToObject(k, "cv", e->timing.cv);
        cJSON *jt = cJSON_AddArrayToObject(k, "times_s");
        for (int r = 0; r < R->rounds; r++)
            cJSON_AddItemToArray(jt,
                                 cJSON_CreateNumber(R->times[r * R->n + i]));
        cJSON_AddItemToArray(jk, k);
    }
    return j;
}


/* The problem's tune-at size, the device, and the search's figures: what
 * it evaluated, its failures and cuts, where its time went. */
static void run_json(const et_tune_report *r, cJSON *doc)
{
    const et_tune_result *res = &r->res;
    /* an open axis: the size the search and the race ran at */
    int oa = et_einsum_open_axis(&r->e);
    if (oa >= 0) {
        cJSON *ja = cJSON_AddObjectToObject(doc, "tune_at");
        cJSON_AddNumberToObject(ja, r->e.idx[oa].name,
                                (double)r->e.idx[oa].size);
    } else {
        cJSON_AddNullToObject(doc, "tune_at");
    }
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", r->info.name);
    cJSON_AddStringToObject(jd, "backend",
                            et_backend_name(r->info.target.backend));
    cJSON_AddStringToObject(jd, "driver", r->info.driver_version);
    cJSON_AddStringToObject(doc, "space", r->space);
    cJSON_AddStringToObject(doc, "search", et_search_name(r->kind));
    cJSON_AddNumberToObject(doc, "evaluations", res->evaluations);
    cJSON_AddNumberToObject(doc, "cached", res->cached);
    cJSON *jf = cJSON_AddObjectToObject(doc, "failures");
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        if (res->failures[o] && o != ET_OUTCOME_SLOWER_THAN_BOUND)
            cJSON_AddNumberToObject(jf, et_outcome_name((et_outcome)o),
                                    res->failures[o]);
    /* the search's cuts, apart from the failures */
    cJSON_AddNumberToObject(doc, "cut_at_bound",
                            res->failures[ET_OUTCOME_SLOWER_THAN_BOUND]);
    cJSON_AddNumberToObject(doc, "elapsed_s", res->elapsed_s);
    /* where the time went: builds, verification (with the driver's compile
     * at a kernel's first launch), timing, the untransformed kernel, and
     * the rest (search, rendering, database) */
    cJSON *jt = cJSON_AddObjectToObject(doc, "time_s");
    cJSON_AddNumberToObject(jt, "baseline", res->baseline_s);
    cJSON_AddNumberToObject(jt, "build", res->build_s);
    cJSON_AddNumberToObject(jt, "verify", res->verify_s);
    cJSON_AddNumberToObject(jt, "timing", res->timing_s);
    cJSON_AddNumberToObject(jt, "other",
                            res->elapsed_s - res->baseline_s - res->build_s -
                                res->verify_s - res->timing_s);
    cJSON_AddStringToObject(doc, "stop_reason", res->stop_reason);
    cJSON_AddNumberToObject(doc, "beam_widenings", res->stats.widenings);
    cJSON_AddNumberToObject(doc, "duplicates", res->duplicates);
}

/* The cost model ("model") and the noise of the machine ("noise"). */
static void model_noise_json(const et_tune_result *res, cJSON *doc)
{
    cJSON *jm = cJSON_AddObjectToObject(doc, "model");
    cJSON_AddBoolToObject(jm, "on", res->model.on);
    cJSON_AddBoolToObject(jm, "used", res->model.used);
    cJSON_AddNumberToObject(jm, "samples", res->model.fitted_on);
    cJSON_AddNumberToObject(jm, "db_samples", res->model.db_samples);
    cJSON_AddNumberToObject(jm, "run_samples", res->model.run_samples);
    cJSON_AddNumberToObject(jm, "ranked", res->model.ranked);
    cJSON_AddNumberToObject(jm, "skipped", res->model.skipped);
    cJSON_AddItemToObject(jm, "r2", num_or_null(res->model.r2));
    cJSON_AddStringToObject(jm, "note", res->model.note);
    cJSON *jn = cJSON_AddObjectToObject(doc, "noise");
    cJSON_AddNumberToObject(jn, "cv_limit", ET_TUNE_NOISY_CV);
    cJSON_AddNumberToObject(jn, "high_cv", res->noisy);
    cJSON_AddItemToObject(jn, "load_1m_start", num_or_null(res->load_start));
    cJSON_AddItemToObject(jn, "load_1m_min", num_or_null(res->load_min));
    cJSON_AddItemToObject(jn, "load_1m_max", num_or_null(res->load_max));
    cJSON_AddBoolToObject(jn, "load_changed",
                          res->load_max - res->load_min >
                              ET_TUNE_LOAD_CHANGE);
}

/* The best's re-timing on one rank and its verification, into best. */
static void best_checks_json(const et_tune_result *res, cJSON *best)
{
    const et_tune_candidate *b = &res->cand[res->best];
    if (res->retimed) {
        cJSON *jr = cJSON_AddObjectToObject(best, "retimed");
        cJSON_AddNumberToObject(jr, "rank", res->retime_rank);
        cJSON_AddStringToObject(jr, "status",
                                et_outcome_name(res->retime_outcome));
        cJSON_AddNumberToObject(jr, "time_s", res->retime.median_s);
        cJSON *rci = cJSON_AddArrayToObject(jr, "ci95_s");
        cJSON_AddItemToArray(rci, cJSON_CreateNumber(res->retime.low_s));
        cJSON_AddItemToArray(rci,
                             cJSON_CreateNumber(res->retime.high_s));
    }
    cJSON *jv = cJSON_AddObjectToObject(best, "verified");
    cJSON_AddNumberToObject(jv, "trials", b->verify.trials);
    cJSON_AddNumberToObject(jv, "max_norm_err", b->verify.max_norm_err);
    if (isfinite(b->verify.p_value))
        cJSON_AddNumberToObject(jv, "p_value", b->verify.p_value);
    else
        cJSON_AddNullToObject(jv, "p_value");
}

/* The best ("best"): its opts, time and where it comes from, speed-up,
 * roofline, re-timing and verification. */
static void best_json(const et_tune_report *r, cJSON *doc)
{
    const et_tune_result *res = &r->res;
    const et_tune_candidate *b = &res->cand[res->best];
    const et_timing *bt = report_tune_best_timing(res);
    cJSON *best = cJSON_AddObjectToObject(doc, "best");
    cJSON_AddItemToObject(best, "params", params_json(b->params));
    cJSON_AddStringToObject(best, "opts", b->opts);
    cJSON_AddStringToObject(best, "kernel", b->kernel);
    cJSON_AddNumberToObject(best, "time_s", bt->median_s);
    cJSON *ci = cJSON_AddArrayToObject(best, "ci95_s");
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(bt->low_s));
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(bt->high_s));
    cJSON_AddStringToObject(best, "source",
                            res->race.ran ? "race"
                            : b->cached   ? "database"
                                          : "this run");
    /* the search's own median of the same kernel */
    cJSON_AddNumberToObject(best, "search_time_s", b->timing.median_s);
    cJSON_AddItemToObject(best, "search_ci95_s",
                          pair_json(b->timing.low_s, b->timing.high_s));
    if (!res->race.ran && b->cached)
        cJSON_AddNumberToObject(best, "measured_at",
                                (double)b->db_created_at);
    double sci[2];
    double sp = report_tune_speedup(res, sci);
    if (sp > 0) {
        cJSON_AddNumberToObject(best, "speedup", sp);
        cJSON_AddItemToObject(best, "speedup_ci95",
                              report_tune_baseline_raced(res)
                                  ? pair_json(sci[0], sci[1])
                                  : cJSON_CreateNull());
    } else {
        cJSON_AddNullToObject(best, "speedup");
        cJSON_AddNullToObject(best, "speedup_ci95");
    }
    if (r->have_roof) {
        cJSON_AddItemToObject(best, "gops",
                              et_measured_gops_json(&r->roof, bt->median_s));
        cJSON_AddItemToObject(best, "roofline_gops",
                              et_roofline_gops_json(&r->roof));
        cJSON_AddItemToObject(best, "roofline_memory",
                              et_roofline_memory_json(&r->roof));
        cJSON_AddStringToObject(best, "roofline_note", r->roof_note);
    }
    best_checks_json(res, best);
}

/* A scaled-out run's ranks ("ranks") and rank 0's figures ("scale"). */
static void ranks_json(const et_tune_report *r, cJSON *doc)
{
    cJSON *jr = cJSON_AddArrayToObject(doc, "ranks");
    for (int k = 0; k < r->n_ranks; k++) {
        const et_scale_rank *q = &r->ranks[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", k);
        cJSON_AddStringToObject(e, "host", q->host);
        if (k == 0) {
            cJSON_AddNullToObject(e, "device");
        } else {
            cJSON_AddStringToObject(e, "device", q->info.name);
            cJSON_AddStringToObject(e, "spec", q->spec);
            cJSON_AddStringToObject(
                e, "backend", et_backend_name(q->info.target.backend));
            cJSON_AddStringToObject(e, "driver", q->info.driver_version);
            cJSON_AddStringToObject(e, "cpus", q->cpus);
            cJSON_AddNumberToObject(e, "evaluations", q->evaluations);
            cJSON_AddNumberToObject(e, "busy_s", q->busy_s);
            cJSON_AddNumberToObject(e, "idle_s", q->idle_s);
        }
        cJSON_AddItemToArray(jr, e);
    }
    cJSON *js = cJSON_AddObjectToObject(doc, "scale");
    cJSON_AddNumberToObject(js, "ranks", r->n_ranks);
    cJSON_AddNumberToObject(js, "jobs", r->fig.jobs);
    cJSON_AddNumberToObject(js, "rank0_s_per_trial",
                            report_tune_rank0_per_trial(r));
    cJSON_AddNumberToObject(js, "db_s", r->res.db_s);
    cJSON_AddNumberToObject(js, "submit_s", r->fig.submit_s);
    cJSON_AddNumberToObject(js, "wait_s", r->fig.wait_s);
    cJSON_AddNumberToObject(js, "hello_s", r->fig.hello_s);
    cJSON_AddNumberToObject(js, "cpu_s", r->fig.cpu_s);
    cJSON_AddNumberToObject(js, "wall_s", r->fig.wall_s);
}

void report_tune_json(const et_tune_report *r, cJSON *doc)
{
    const et_tune_result *res = &r->res;
    run_json(r, doc);
    model_noise_json(res, doc);
    cJSON *jb = cJSON_AddObjectToObject(doc, "baseline");
    cJSON_AddNumberToObject(jb, "time_s", res->baseline.median_s);
    cJSON_AddStringToObject(jb, "source",
                            report_tune_baseline_raced(res) ? "race"
                                                            : "this run");
    if (res->best >= 0)
        best_json(r, doc);
    else
        cJSON_AddNullToObject(doc, "best");
    cJSON *jrace = race_json(&res->race);
    if (r->n_ranks > 1 && res->race.ran)
        cJSON_AddNumberToObject(jrace, "rank", res->race.rank);
    cJSON_AddItemToObject(doc, "race", jrace);
    if (r->n_ranks > 1 && r->ranks)
        ranks_json(r, doc);
    cJSON_AddItemToObject(doc, "seeds", seeds_json(res));
    cJSON *jc = cJSON_AddArrayToObject(doc, "candidates");
    for (int i = 0; i < res->n_cand; i++)
        cJSON_AddItemToArray(jc, candidate_json(&res->cand[i], r));
}
