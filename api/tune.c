/*
 * tune.c - tuning through the public API: et_tune_run_full keeps a run's
 * whole result (every candidate, the device, the space, the roofline from
 * the device's peaks) as an et_tune_report with its text report, JSON and
 * chart; et_tune is its summary. Both map et_tune_options onto the tuning
 * loop (tune/tune.h): the search's options, the start opts, the space
 * (loaded here or the caller's), progress and log callbacks, the cancel
 * flag and the early-cut bound.
 */
#include "api/api_impl.h"
#include "base/clock.h"

#include "db/db.h"
#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "scale/scale.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/peaks_db.h"
#include "tune/tune.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
};

/* What the tuning loop tells per candidate, in the public form. */
typedef struct tune_bridge {
    const et_tune_options *o;
    double t0;
    const et_roofline *roof;  /* the roofline for new bests, NULL: none */
    int64_t ops_total;        /* the problem's ops over all dtypes */
    bool new_best;            /* the candidate being reported is one */
    char *table;              /* its roofline table (malloc'ed), or NULL */
} tune_bridge;

/* The roofline table of a run of time_s as text (malloc'ed), NULL when
 * out of memory. */
static char *roofline_table_text(const et_roofline *roof, double time_s)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return NULL;
    et_roofline_table(f, roof, time_s);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void bridge_new_best(void *arg, const et_tune_candidate *best)
{
    tune_bridge *tb = arg;
    tb->new_best = true;
    free(tb->table);
    tb->table = NULL;
    if (tb->roof && tb->o->progress)
        tb->table = roofline_table_text(tb->roof, best->timing.median_s);
}

static int bridge_progress(void *arg, int done, int budget,
                           const et_tune_candidate *c,
                           const et_tune_candidate *best)
{
    tune_bridge *tb = arg;
    if (!tb->o->progress)
        return 0;
    et_progress pr;
    memset(&pr, 0, sizeof pr);
    pr.candidate = done;
    pr.budget = budget;
    pr.elapsed_s = et_now_s() - tb->t0;
    pr.time_limit_s = tb->o->time_limit_s;
    pr.opts = c->opts;
    char ptext[512];
    et_tune_params_text(c->params, ptext, sizeof ptext);
    pr.params = ptext;
    pr.outcome = c->outcome;
    pr.reason = c->reason;
    pr.time_s = c->outcome == ET_OUTCOME_OK ? c->timing.median_s : 0;
    pr.cached = c->cached;
    pr.have_best = best != NULL;
    pr.best_opts = best ? best->opts : "";
    pr.best_time_s = best ? best->timing.median_s : 0;
    if (best && best->timing.median_s > 0) {
        pr.best_gops = (double)tb->ops_total / best->timing.median_s / 1e9;
        if (tb->roof)
            pr.best_roofline_pct = 100 * tb->roof->time_s /
                                   best->timing.median_s;
    }
    pr.new_best = tb->new_best;
    pr.best_roofline = tb->new_best && tb->table ? tb->table : "";
    int rc = tb->o->progress(tb->o->progress_arg, &pr);
    tb->new_best = false;
    free(tb->table);
    tb->table = NULL;
    return rc;
}

static void bridge_log(void *arg, et_tune_level lvl, const char *msg)
{
    tune_bridge *tb = arg;
    if (tb->o->log)
        tb->o->log(tb->o->log_arg,
                   lvl == ET_TUNE_DEBUG  ? ET_LOG_DEBUG
                   : lvl == ET_TUNE_WARN ? ET_LOG_WARN
                                         : ET_LOG_INFO,
                   msg);
}

/* The options that need no device: the search's, then the start opts. */
static et_status tune_opts_map(const et_tune_options *o, et_tune_opts *to,
                               et_opt *start, et_diag *diag)
{
    memset(to, 0, sizeof *to);
    if (o->search && et_search_parse(o->search, &to->search.kind) != 0)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "unknown search '%s' (beam, random, grid)",
                        o->search);
    if (o->budget < 0 || o->beam_width < 0 || o->time_limit_s < 0 ||
        o->bound < 0)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "budget, beam width, time limit and bound must not "
                        "be negative");
    if (o->bound > 0 && o->bound < 1)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "bound %g is below 1: it would cut candidates "
                        "faster than the best so far", o->bound);
    to->search.cut_factor = o->bound;
    to->search.budget = o->budget;
    to->search.time_limit_s = o->time_limit_s;
    to->search.beam_width = o->beam_width;
    to->search.seed = o->seed;
    to->verify.seed = o->seed;
    to->retime = o->retime != 0;
    int n_start = 0;
    if (o->start_opts && *o->start_opts) {
        et_status st = et_opts_parse(o->start_opts, start, ET_MAX_OPTS,
                                     &n_start, diag);
        if (st != ET_OK) {
            diag->input = ET_INPUT_OPTS;
            diag->status = st;
            return st;
        }
    }
    to->search.start = start;
    to->search.n_start = n_start;
    return ET_OK;
}

/* The caller's space, or the file's, or the built-in pool into *own. */
static et_status tune_space(const et_tune_options *o, et_space **own,
                            const et_space **space, et_diag *diag)
{
    *own = NULL;
    *space = o->space_obj;
    if (*space)
        return ET_OK;
    et_status st = o->space ? et_space_load(o->space, own, diag)
                            : et_space_builtin(own, diag);
    if (st != ET_OK) {
        st = st == ET_ERR_IO ? ET_ERR_INPUT : st;
        diag->input = ET_INPUT_SPACE;
        diag->status = st;
        if (o->space)
            snprintf(diag->file, sizeof diag->file, "%s", o->space);
        return st;
    }
    *space = *own;
    return ET_OK;
}

/* The roofline of p on dev from its peaks (database, cache, measured);
 * a warning when there is none. */
static void tune_roofline(const et_problem *p, const et_tune_options *o,
                          et_device *dev, et_db *db, et_tune_report *r)
{
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    et_error err = {{0}};
    char why[256] = "";
    if (et_peaks_get_db(dev, db, &po, &r->peaks, &err) != ET_OK)
        api_logf(o->log, o->log_arg, ET_LOG_WARN, "no roofline: %s", err.msg);
    else if (et_roofline_compute(&p->e, &r->peaks, &r->roof, why,
                                 sizeof why) != ET_OK)
        api_logf(o->log, o->log_arg, ET_LOG_WARN, "no roofline: %s", why);
    else
        r->have_roof = true;
}

/* The roofline when this process has no device (rank 0 of a scaled-out
 * run): the peaks the database holds for the ranks' device, if any. */
static void tune_roofline_db(const et_problem *p, const et_tune_options *o,
                             const et_device_info *info, et_db *db,
                             et_tune_report *r)
{
    et_error err = {{0}};
    char why[256] = "";
    if (et_peaks_db_load(db, info, &r->peaks, &err) != ET_OK)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "no roofline: the database has no peaks of %s (run "
                 "`eintune peaks` on a rank's machine first)", info->name);
    else if (et_roofline_compute(&p->e, &r->peaks, &r->roof, why,
                                 sizeof why) != ET_OK)
        api_logf(o->log, o->log_arg, ET_LOG_WARN, "no roofline: %s", why);
    else
        r->have_roof = true;
}

/* Rank 0's cost per trial: its wall time not spent waiting for the
 * ranks (the search, rendering, the database, dispatching), over the
 * candidates answered. */
static double rank0_per_trial(const et_tune_report *r)
{
    int n = r->res.n_cand > 0 ? r->res.n_cand : 1;
    double own = r->fig.wall_s - r->fig.wait_s - r->fig.hello_s;
    return (own > 0 ? own : 0) / n;
}

/* The figures of a scaled-out run as log lines. */
static void log_scale(const et_tune_options *o, const et_tune_report *r)
{
    api_logf(o->log, o->log_arg, ET_LOG_INFO,
             "rank 0: %.2f ms of its own a candidate (database %.2f, "
             "dispatch %.2f), waited %.1f s for results, CPU %.2f s of "
             "%.1f s", 1e3 * rank0_per_trial(r),
             1e3 * r->res.db_s / (r->res.n_cand ? r->res.n_cand : 1),
             1e3 * r->fig.submit_s / (r->fig.jobs ? r->fig.jobs : 1),
             r->fig.wait_s, r->fig.cpu_s, r->fig.wall_s);
    for (int k = 1; k < r->n_ranks; k++)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "rank %d: %d evaluations, busy %.1f s, idle %.1f s",
                 k, r->ranks[k].evaluations, r->ranks[k].busy_s,
                 r->ranks[k].idle_s);
}

/* The run behind et_tune and et_tune_run_full; roofline: look up the
 * device's peaks for the report. */
static et_status tune_impl(const et_problem *p, const et_tune_options *o,
                           bool roofline, et_tune_report **out,
                           et_diag *diag)
{
    const et_tune_options defaults = {0};
    et_diag local;
    if (!diag)
        diag = &local;
    if (!o)
        o = &defaults;
    *out = NULL;
    api_diag_clear(diag);

    et_tune_report *r = calloc(1, sizeof *r);
    et_opt *start = calloc(ET_MAX_OPTS, sizeof *start);
    if (!r || !start) {
        free(r);
        free(start);
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    r->res.best = -1;
    et_tune_opts to;
    et_space *own_space = NULL;
    const et_space *space = NULL;
    et_device *dev = NULL;
    et_db *db = NULL;
    et_binding *b = NULL;
    et_error err = {{0}};
    tune_bridge tb = {o, et_now_s(), NULL, 0, false, NULL};
    et_scale *sc = NULL;
    et_tune_exec exec;
    memset(&exec, 0, sizeof exec);
    const et_device_info *info = NULL;
    et_status st = tune_opts_map(o, &to, start, diag);
    if (st == ET_OK)
        st = tune_space(o, &own_space, &space, diag);
    if (st != ET_OK)
        goto out;

    /* scale-out: under an MPI launcher with more than one rank, or with
     * the caller's communicator */
    et_scale_env env;
    et_scale_env_get(&env);
    r->n_ranks = 1;
    if (o->comm || (env.launched && env.size > 1)) {
        if (!et_scale_available()) {
            st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                          "scale-out is off: eintune was built without MPI, "
                          "and this is rank %d of %d under an MPI launcher "
                          "(run it without mpirun, or rebuild with "
                          "libopenmpi-dev installed)", env.rank, env.size);
            goto out;
        }
        st = et_scale_join(o->comm, &sc, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (et_scale_size(sc) == 1) {
            et_scale_free(sc);
            sc = NULL;
        }
    }
    if (sc) {
        r->rank = et_scale_rank_of(sc);
        r->n_ranks = et_scale_size(sc);
    }
    if (sc && r->rank > 0) {
        /* an evaluating rank: serves rank 0 until it says stop */
        et_scale_serve_opts so = {&p->e, o->device, to.verify, to.timing,
                                  0, bridge_log, &tb};
        st = et_scale_serve(sc, &so, &err);
        if (st != ET_OK)
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    if (sc) {
        r->ranks = calloc((size_t)r->n_ranks, sizeof *r->ranks);
        if (!r->ranks) {
            st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
            goto out;
        }
        st = et_scale_master_start(sc, &exec, r->ranks, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                      : ET_INPUT_NONE, &err);
            goto out;
        }
        info = &exec.info;
        for (int k = 1; k < r->n_ranks; k++)
            api_logf(o->log, o->log_arg, ET_LOG_INFO,
                     "rank %d on %s: %s (%s)%s%s", k, r->ranks[k].host,
                     r->ranks[k].info.name, r->ranks[k].spec,
                     r->ranks[k].cpus[0] ? ", bound to cores " : "",
                     r->ranks[k].cpus);
    } else {
        st = et_device_open_isolated(o->device, NULL, &dev, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                      : ET_INPUT_NONE, &err);
            goto out;
        }
        info = &dev->info;
    }
    st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (o->db)
            snprintf(diag->file, sizeof diag->file, "%s", o->db);
        goto out;
    }
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)space->hash);
    st = et_db_space_id(db, space->name, hash, &to.db_space_id, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    to.db = db;
    api_logf(o->log, o->log_arg, ET_LOG_INFO, "database %s", et_db_path(db));
    if (sc)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "device %s on %d ranks, space %s, search %s", info->name,
                 r->n_ranks - 1, space->name, et_search_name(to.search.kind));
    else
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "device %s (%s), space %s, search %s", info->name,
                 info->spec, space->name, et_search_name(to.search.kind));
    if (p->e.acc_dtype == ET_F64 && !info->target.has_fp64) {
        st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                      "device %s has no fp64 support", info->name);
        goto out;
    }
    st = et_space_bind(space, &p->e, &info->target, &b, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_SPACE;
        diag->status = st;
        goto out;
    }
    snprintf(r->einsum, sizeof r->einsum, "%s", p->e.text);
    r->e = p->e;
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(&p->e, ops);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        r->ops_total += ops[t];
    r->info = *info;
    snprintf(r->space, sizeof r->space, "%s", space->name);
    r->kind = to.search.kind;
    if (roofline && dev)
        tune_roofline(p, o, dev, db, r);
    else if (roofline)
        tune_roofline_db(p, o, info, db, r);

    tb.roof = r->have_roof ? &r->roof : NULL;
    tb.ops_total = r->ops_total;
    to.progress = bridge_progress;
    to.new_best = bridge_new_best;
    to.log = bridge_log;
    to.arg = &tb;
    to.stop = o->cancel;
    to.exec = sc ? &exec : NULL;
    st = et_tune_run(dev, b, &to, &r->res, &err);
    if (st != ET_OK)
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
out:
    if (sc && r->rank == 0) {
        et_scale_master_stop(sc, r->ranks, &r->fig);
        if (st == ET_OK)
            log_scale(o, r);
    }
    et_scale_free(sc);
    free(tb.table);
    et_binding_free(b);
    if (dev)
        et_device_close(dev);
    et_db_close(db);
    et_space_free(own_space);
    free(start);
    if (st != ET_OK) {
        et_tune_report_free(r);
        return st;
    }
    *out = r;
    return ET_OK;
}

et_status et_tune_run_full(const et_problem *p, const et_tune_options *o,
                           et_tune_report **out, et_diag *diag)
{
    return tune_impl(p, o, true, out, diag);
}

void et_tune_report_free(et_tune_report *r)
{
    if (!r)
        return;
    et_tune_result_free(&r->res);
    free(r->ranks);
    free(r);
}

int et_tune_report_rank(const et_tune_report *r)
{
    return r->rank;
}

int et_tune_report_n_ranks(const et_tune_report *r)
{
    return r->n_ranks > 0 ? r->n_ranks : 1;
}

void et_tune_report_summary(const et_tune_report *r, et_tune_summary *out)
{
    const et_tune_result *res = &r->res;
    memset(out, 0, sizeof *out);
    out->cancelled = !strcmp(res->stop_reason, "cancelled") ||
                     !strcmp(res->stop_reason, "interrupted");
    snprintf(out->stop_reason, sizeof out->stop_reason, "%s",
             res->stop_reason);
    out->elapsed_s = res->elapsed_s;
    out->evaluations = res->evaluations;
    out->cached = res->cached;
    for (int i = 1; i < ET_OUTCOME_COUNT; i++)
        out->failures += res->failures[i];
    out->baseline_s = res->baseline.median_s;
    if (res->best >= 0) {
        const et_tune_candidate *c = &res->cand[res->best];
        out->found = 1;
        snprintf(out->opts, sizeof out->opts, "%s", c->opts);
        snprintf(out->kernel, sizeof out->kernel, "%s", c->kernel);
        out->time_s = c->timing.median_s;
        out->ci95_s[0] = c->timing.low_s;
        out->ci95_s[1] = c->timing.high_s;
        out->gops = c->timing.median_s > 0
                        ? (double)r->ops_total / c->timing.median_s / 1e9
                        : 0;
    }
}

et_status et_tune(const et_problem *p, const et_tune_options *o,
                  et_tune_summary *out, et_diag *diag)
{
    et_tune_report *r = NULL;
    memset(out, 0, sizeof *out);
    et_status st = tune_impl(p, o, false, &r, diag);
    if (st != ET_OK)
        return st;
    et_tune_report_summary(r, out);
    et_tune_report_free(r);
    return ET_OK;
}

int et_tune_report_n_candidates(const et_tune_report *r)
{
    return r->res.n_cand;
}

int et_tune_report_candidate(const et_tune_report *r, int i,
                             et_tune_entry *out)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= r->res.n_cand)
        return -1;
    const et_tune_candidate *c = &r->res.cand[i];
    out->opts = c->opts;
    out->params = c->params;
    out->kernel = c->kernel;
    out->outcome = c->outcome;
    out->reason = c->reason;
    if (c->outcome == ET_OUTCOME_OK) {
        out->time_s = c->timing.median_s;
        out->ci95_s[0] = c->timing.low_s;
        out->ci95_s[1] = c->timing.high_s;
    }
    out->cached = c->cached;
    return 0;
}

int et_tune_report_has_roofline(const et_tune_report *r)
{
    return r->have_roof;
}

void et_tune_report_print(const et_tune_report *r, FILE *f)
{
    const et_tune_result *res = &r->res;
    fprintf(f, "einsum      %s\n", r->einsum);
    fprintf(f, "device      %s\n", r->info.name);
    for (int k = 1; r->ranks && k < r->n_ranks; k++) {
        const et_scale_rank *q = &r->ranks[k];
        fprintf(f, "rank %-6d %s on %s (%s%s%s), %d evaluations, busy "
                   "%.1f s, idle %.1f s\n",
                k, q->info.name, q->host, q->spec,
                q->cpus[0] ? ", cores " : "", q->cpus, q->evaluations,
                q->busy_s, q->idle_s);
    }
    fprintf(f, "space       %s, search %s, %s after %.1f s\n", r->space,
            et_search_name(r->kind), res->stop_reason, res->elapsed_s);
    int n_failed = 0;
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        n_failed += res->failures[o];
    fprintf(f,
            "candidates  %d evaluated in this run, %d answered from the "
            "database; %d failed, refused or cut at the bound\n",
            res->evaluations, res->cached, n_failed);
    if (res->evaluations > 0 && r->n_ranks > 1)
        fprintf(f,
                "spent       %.1f s; on the %d ranks together: untransformed "
                "%.1f, builds %.1f (%.3f s a candidate), verification %.1f, "
                "timing %.1f\n",
                res->elapsed_s, r->n_ranks - 1, res->baseline_s,
                res->build_s, res->build_s / res->evaluations,
                res->verify_s, res->timing_s);
    else if (res->evaluations > 0)
        fprintf(f,
                "spent       %.1f s: untransformed %.1f, builds %.1f (%.3f s "
                "a candidate), verification %.1f, timing %.1f, reference and "
                "search %.1f\n",
                res->elapsed_s, res->baseline_s, res->build_s,
                res->build_s / res->evaluations, res->verify_s,
                res->timing_s,
                res->elapsed_s - res->baseline_s - res->build_s -
                    res->verify_s - res->timing_s);
    fprintf(f, "untransformed %.4g ms\n", res->baseline.median_s * 1e3);
    if (res->best >= 0) {
        const et_tune_candidate *best = &res->cand[res->best];
        char ptext[512];
        et_tune_params_text(best->params, ptext, sizeof ptext);
        fprintf(f, "best        %s\n",
                best->opts[0] ? best->opts : "untransformed");
        if (ptext[0])
            fprintf(f, "params      %s\n", ptext);
        fprintf(f, "time        %.4g ms [%.4g, %.4g], %.1fx the untransformed "
                   "kernel\n",
                best->timing.median_s * 1e3, best->timing.low_s * 1e3,
                best->timing.high_s * 1e3,
                res->baseline.median_s / best->timing.median_s);
        if (res->retimed && res->retime_outcome == ET_OUTCOME_OK)
            fprintf(f, "re-timed    %.4g ms [%.4g, %.4g] on rank %d\n",
                    res->retime.median_s * 1e3, res->retime.low_s * 1e3,
                    res->retime.high_s * 1e3, res->retime_rank);
        char vl[256];
        et_verify_summary(&best->verify, vl, sizeof vl);
        fprintf(f, "%s\n\n", vl);
        if (r->have_roof)
            et_roofline_table(f, &r->roof, best->timing.median_s);
    } else {
        fprintf(f, "best        none: no candidate passed\n");
    }
}

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
    return j;
}

static cJSON *report_json(const et_tune_report *r)
{
    const et_tune_result *res = &r->res;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", r->einsum);
    api_json_problem(doc, &r->e);
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
        if (res->failures[o])
            cJSON_AddNumberToObject(jf, et_outcome_name((et_outcome)o),
                                    res->failures[o]);
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
    cJSON *jb = cJSON_AddObjectToObject(doc, "baseline");
    cJSON_AddNumberToObject(jb, "time_s", res->baseline.median_s);
    if (res->best >= 0) {
        const et_tune_candidate *b = &res->cand[res->best];
        cJSON *best = cJSON_AddObjectToObject(doc, "best");
        cJSON_AddItemToObject(best, "params", params_json(b->params));
        cJSON_AddStringToObject(best, "opts", b->opts);
        cJSON_AddStringToObject(best, "kernel", b->kernel);
        cJSON_AddNumberToObject(best, "time_s", b->timing.median_s);
        cJSON *ci = cJSON_AddArrayToObject(best, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(b->timing.low_s));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(b->timing.high_s));
        if (r->have_roof) {
            cJSON_AddItemToObject(
                best, "gops",
                et_measured_gops_json(&r->roof, b->timing.median_s));
            cJSON_AddItemToObject(best, "roofline_gops",
                                  et_roofline_gops_json(&r->roof));
        }
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
    } else {
        cJSON_AddNullToObject(doc, "best");
    }
    if (r->n_ranks > 1 && r->ranks) {
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
        cJSON_AddNumberToObject(js, "rank0_s_per_trial", rank0_per_trial(r));
        cJSON_AddNumberToObject(js, "db_s", res->db_s);
        cJSON_AddNumberToObject(js, "submit_s", r->fig.submit_s);
        cJSON_AddNumberToObject(js, "wait_s", r->fig.wait_s);
        cJSON_AddNumberToObject(js, "hello_s", r->fig.hello_s);
        cJSON_AddNumberToObject(js, "cpu_s", r->fig.cpu_s);
        cJSON_AddNumberToObject(js, "wall_s", r->fig.wall_s);
    }
    cJSON *jc = cJSON_AddArrayToObject(doc, "candidates");
    for (int i = 0; i < res->n_cand; i++)
        cJSON_AddItemToArray(jc, candidate_json(&res->cand[i], r));
    return doc;
}

char *et_tune_report_json(const et_tune_report *r)
{
    cJSON *doc = report_json(r);
    if (!doc)
        return NULL;
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

et_status et_tune_report_plot(const et_tune_report *r, const char *path,
                              et_diag *diag)
{
    api_diag_clear(diag);
    if (!r->have_roof)
        return api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                        "no roofline: the device's peaks are not known");
    const et_tune_result *res = &r->res;
    et_plot_point *pts = calloc((size_t)res->n_cand + 1, sizeof *pts);
    int n = 0, best = -1;
    if (!pts)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    for (int i = 0; i < res->n_cand; i++) {
        if (res->cand[i].outcome != ET_OUTCOME_OK)
            continue;
        if (i == res->best)
            best = n;
        pts[n].intensity = r->roof.intensity;
        pts[n].gops = (double)r->roof.ops_total /
                      res->cand[i].timing.median_s / 1e9;
        n++;
    }
    char title[ET_MAX_TEXT + 300];
    snprintf(title, sizeof title, "%s on %s", r->einsum, r->info.name);
    et_plot plot = {&r->peaks, title, pts, n, best, NULL};
    char why[256] = "";
    et_status st = et_plot_write(path, &plot, why, sizeof why);
    free(pts);
    if (st != ET_OK) {
        api_fail(diag, st, st == ET_ERR_INPUT ? ET_INPUT_FILE : ET_INPUT_NONE,
                 "%s", why);
        if (diag)
            snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    return st;
}
