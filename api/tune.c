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
    char roof_note[256];      /* the peaks were measured again: why */
};

/* The best's timing as the report gives it: the race's when it ran. */
static const et_timing *best_timing(const et_tune_result *res)
{
    if (res->race.ran && res->race.chosen >= 0)
        return &res->race.e[res->race.chosen].timing;
    return &res->cand[res->best].timing;
}

/* What best_timing is, as the JSON's best.source says: "race" (the
 * final race's median), "this run" (the search's, timed in this run) or
 * "database" (the search's time an earlier run recorded). */
static const char *time_source(const et_tune_result *res)
{
    if (res->race.ran && res->race.chosen >= 0)
        return "race";
    return res->cand[res->best].cached ? "database" : "this run";
}

/* The speed-up over the untransformed kernel when it means something:
 * from the race, or both times measured in this run (no interval then).
 * 0 when the best's time is from the database. */
static double best_speedup(const et_tune_result *res, double ci[2])
{
    ci[0] = ci[1] = 0;
    if (res->best < 0)
        return 0;
    if (res->race.ran) {
        ci[0] = res->race.speedup_lo;
        ci[1] = res->race.speedup_hi;
        return res->race.speedup;
    }
    const et_tune_candidate *b = &res->cand[res->best];
    if (b->cached || !(b->timing.median_s > 0))
        return 0;
    return res->baseline.median_s / b->timing.median_s;
}

/* "2024-05-01 14:03" (local time) of a Unix time. */
static void date_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&tt, &tm) ||
        !strftime(buf, cap, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, cap, "an unknown date");
}

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
    if (o->n_seeds < 0 || o->n_seeds > ET_SEARCH_MAX_SEEDS)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "n_seeds %d: from 0 to %d seeds", o->n_seeds,
                        ET_SEARCH_MAX_SEEDS);
    to->seeds = o->no_seeding ? 0 : o->n_seeds > 0 ? o->n_seeds : 3;
    to->structural_seeds = !o->no_seeding;
    if (o->race > ET_RACE_MAX - 1)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "race %d: at most %d candidates race the "
                        "untransformed kernel", o->race, ET_RACE_MAX - 1);
    to->race_k = o->race == 0 ? 3 : o->race < 0 ? 0 : o->race;
    to->search.cut_factor = o->bound;
    to->search.budget = o->budget;
    to->search.time_limit_s = o->time_limit_s;
    to->search.beam_width = o->beam_width;
    to->search.seed = o->seed;
    to->verify.seed = o->seed;
    to->retime = o->retime != 0;
    to->model = o->model < 0 ? -1 : 0;
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

/* The peaks' progress lines during a tune: the line that starts a
 * measurement (which takes a while, once per device) at info, in the
 * tune's words, everything else at debug. */
static void tune_peaks_log(void *arg, const char *msg)
{
    const et_tune_options *o = arg;
    if (!strncmp(msg, ET_PEAKS_NOTE_START, strlen(ET_PEAKS_NOTE_START)))
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "measuring the device's peaks for the roofline, once per "
                 "device (15-25 s; `eintune peaks` shows them)");
    api_logf(o->log, o->log_arg, ET_LOG_DEBUG, "peaks: %s", msg);
}

/* The roofline of p on dev from its peaks (database, cache, measured);
 * a warning when there is none. */
static void tune_roofline(const et_problem *p, const et_tune_options *o,
                          et_device *dev, et_db *db, et_tune_report *r)
{
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    po.measure.log = tune_peaks_log;
    po.measure.log_arg = (void *)o;
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

/* A roofline is a ceiling: when the best's whole interval lies below the
 * roofline time, the peaks (from older micro-benchmarks or a busy moment)
 * are measured once more and the roofline recomputed; the report says so.
 * Peaks from an override file are the user's and stay. */
static void roof_check(const et_problem *p, const et_tune_options *o,
                       et_device *dev, et_db *db, et_tune_report *r)
{
    const et_timing *bt = best_timing(&r->res);
    if (!(bt->high_s < r->roof.time_s) ||
        r->peaks.source == ET_PEAKS_OVERRIDE)
        return;
    if (!dev) {
        /* rank 0 of a scaled-out run has no device to measure them on */
        snprintf(r->roof_note, sizeof r->roof_note, "the best measured "
                 "%.0f %% of the roofline of the stored peaks; run `eintune "
                 "peaks --remeasure` on a rank's machine",
                 100 * r->roof.time_s / bt->median_s);
        api_logf(o->log, o->log_arg, ET_LOG_WARN, "%s", r->roof_note);
        return;
    }
    api_roof_again(dev, db, &p->e, bt->median_s, bt->high_s, &r->peaks,
                   &r->roof, "the best", r->roof_note, sizeof r->roof_note,
                   o->log, o->log_arg);
}

/* The run behind et_tune and et_tune_run_full; roofline: look up the
 * device's peaks for the report. */
static et_status tune_impl(const et_problem *p, const et_tune_options *o,
                           const api_tune_env *env, et_tune_report **out,
                           et_diag *diag)
{
    bool roofline = env->roofline;
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    *out = NULL;
    API_OPTIONS(et_tune_options, o, diag);

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
    et_scale_env envl;
    et_scale_env_get(&envl);
    r->n_ranks = 1;
    if (!env->no_scale && (o->comm || (envl.launched && envl.size > 1))) {
        if (!et_scale_available()) {
            st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                          "scale-out is off: eintune was built without MPI, "
                          "and this is rank %d of %d under an MPI launcher "
                          "(run it without mpirun, or rebuild with "
                          "libopenmpi-dev installed)", envl.rank, envl.size);
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
    } else if (env->dev) {
        dev = env->dev;
        info = &dev->info;
    } else {
        st = et_device_open_isolated(o->device, NULL, &dev, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                      : ET_INPUT_NONE, &err);
            goto out;
        }
        info = &dev->info;
    }
    if (env->store) {
        /* the trials go to a database elsewhere (a campaign's rank 0) */
        to.store = env->store;
    } else {
        if (env->db)
            db = env->db;
        else
            st = et_db_open(o->db, &db, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_FILE, &err);
            if (o->db)
                snprintf(diag->file, sizeof diag->file, "%s", o->db);
            goto out;
        }
        char hash[ET_DB_HASH_LEN];
        snprintf(hash, sizeof hash, "%016llx",
                 (unsigned long long)space->hash);
        st = et_db_space_id(db, space->name, hash, &to.db_space_id, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        to.db = db;
        api_logf(o->log, o->log_arg, ET_LOG_INFO, "database %s",
                 et_db_path(db));
    }
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
    to.peaks = r->have_roof ? &r->peaks : NULL;
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
    else if (r->have_roof && r->res.best >= 0)
        roof_check(p, o, dev, db, r);
out:
    if (sc && r->rank == 0) {
        et_scale_master_stop(sc, r->ranks, &r->fig);
        if (st == ET_OK)
            log_scale(o, r);
    }
    et_scale_free(sc);
    free(tb.table);
    et_binding_free(b);
    if (dev && dev != env->dev)
        et_device_close(dev);
    if (db != env->db)
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

et_status api_tune_run(const et_problem *p, const et_tune_options *o,
                       const api_tune_env *env, et_tune_report **out,
                       et_diag *diag)
{
    return tune_impl(p, o, env, out, diag);
}

et_status et_tune_run_full(const et_problem *p, const et_tune_options *o,
                           et_tune_report **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, p, "p");
    api_tune_env env = {true, false, NULL, NULL, NULL};
    return tune_impl(p, o, &env, out, diag);
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
    return r ? r->rank : 0;
}

int et_tune_report_n_ranks(const et_tune_report *r)
{
    if (!r)
        return 0;
    return r->n_ranks > 0 ? r->n_ranks : 1;
}

void et_tune_report_summary(const et_tune_report *r, et_tune_summary *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    const et_tune_result *res = &r->res;
    out->cancelled = !strcmp(res->stop_reason, "cancelled") ||
                     !strcmp(res->stop_reason, "interrupted");
    snprintf(out->stop_reason, sizeof out->stop_reason, "%s",
             res->stop_reason);
    out->elapsed_s = res->elapsed_s;
    out->evaluations = res->evaluations;
    out->cached = res->cached;
    /* a cut at the bound is the search's, not the candidate's failure */
    for (int i = 1; i < ET_OUTCOME_COUNT; i++)
        if (i == ET_OUTCOME_SLOWER_THAN_BOUND)
            out->cut_at_bound += res->failures[i];
        else
            out->failures += res->failures[i];
    out->baseline_s = res->baseline.median_s;
    if (res->best >= 0) {
        const et_tune_candidate *c = &res->cand[res->best];
        out->found = 1;
        snprintf(out->opts, sizeof out->opts, "%s", c->opts);
        snprintf(out->kernel, sizeof out->kernel, "%s", c->kernel);
        const et_timing *bt = best_timing(res);
        out->time_s = bt->median_s;
        out->ci95_s[0] = bt->low_s;
        out->ci95_s[1] = bt->high_s;
        out->gops = bt->median_s > 0
                        ? (double)r->ops_total / bt->median_s / 1e9
                        : 0;
        out->speedup = best_speedup(res, out->speedup_ci95);
        snprintf(out->time_source, sizeof out->time_source, "%s",
                 time_source(res));
        out->search_time_s = c->timing.median_s;
        out->search_ci95_s[0] = c->timing.low_s;
        out->search_ci95_s[1] = c->timing.high_s;
    }
    out->raced = res->race.ran;
    out->duplicates = res->duplicates;
    out->model_used = res->model.used;
    out->model_samples = res->model.fitted_on;
    out->model_skipped = res->model.skipped;
}

et_status et_tune(const et_problem *p, const et_tune_options *o,
                  et_tune_summary *out, et_diag *diag)
{
    et_tune_report *r = NULL;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    memset(out, 0, sizeof *out);
    API_NEED(diag, p, "p");
    api_tune_env env = {false, false, NULL, NULL, NULL};
    et_status st = tune_impl(p, o, &env, &r, diag);
    if (st != ET_OK)
        return st;
    et_tune_report_summary(r, out);
    et_tune_report_free(r);
    return ET_OK;
}

int et_tune_report_n_candidates(const et_tune_report *r)
{
    return r ? r->res.n_cand : 0;
}

int et_tune_report_candidate(const et_tune_report *r, int i,
                             et_tune_entry *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!r || i < 0 || i >= r->res.n_cand)
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
    out->elapsed_s = c->done_s;
    out->duplicate_of = c->duplicate_of;
    if (c->seed > 0) {
        const et_tune_seed *sd = &r->res.seeds[c->seed - 1];
        out->seed = 1;
        out->seed_einsum = sd->einsum;
        out->seed_sizes = sd->sizes;
        out->seed_distance = sd->distance;
        out->seed_structural = sd->structural;
    }
    return 0;
}

int et_tune_report_has_roofline(const et_tune_report *r)
{
    return r ? r->have_roof : 0;
}

/* "95 % interval [a, b]" of the race's lead, or why there is none. */
static void interval_text(const et_tune_race *R, char *buf, size_t cap)
{
    if (isfinite(R->faster_lo) && isfinite(R->faster_hi))
        snprintf(buf, cap, "95 %% interval [%.1f, %.1f]", R->faster_lo,
                 R->faster_hi);
    else
        snprintf(buf, cap, "no interval: too few rounds");
}

/* The race's lines of the report. */
static void print_race(const et_tune_race *R, int n_ranks, FILE *f)
{
    char where[32] = "";
    if (n_ranks > 1)
        snprintf(where, sizeof where, " on rank %d", R->rank);
    fprintf(f, "race        %d kernels, %d rounds round robin on the same "
               "inputs%s (%.1f s)%s%s\n",
            R->n, R->rounds, where, R->elapsed_s, R->note[0] ? "; " : "",
            R->note);
    for (int i = 0; i < R->n; i++) {
        const et_tune_race_entry *e = &R->e[i];
        fprintf(f, "            %-36s %.4g ms [%.4g, %.4g]%s\n",
                e->opts[0] ? e->opts : "untransformed",
                e->timing.median_s * 1e3, e->timing.low_s * 1e3,
                e->timing.high_s * 1e3,
                i == R->chosen ? "  chosen"
                : e->tied      ? "  tied"
                : !e->eligible ? "  (not a candidate)"
                               : "");
    }
    const et_tune_race_entry *c = &R->e[R->chosen];
    const char *cn = c->opts[0] ? c->opts : "untransformed";
    if (R->verdict == ET_RACE_ALONE) {
        fprintf(f, "verdict     %s alone (the untransformed kernel is no "
                   "candidate)\n", cn);
    } else if (R->verdict == ET_RACE_FASTER) {
        const et_tune_race_entry *ru = &R->e[R->runner_up];
        char iv[96];
        interval_text(R, iv, sizeof iv);
        fprintf(f, "verdict     %s is faster than the runner-up (%s) by "
                   "%.1f %% (%s)\n",
                cn, ru->opts[0] ? ru->opts : "untransformed", R->faster_pct,
                iv);
    } else {
        fprintf(f, "verdict     tied: ");
        int shown = 0;
        for (int i = 0; i < R->n; i++) {
            if (!R->e[i].tied)
                continue;
            fprintf(f, "%s%s", shown++ ? ", " : "",
                    R->e[i].opts[0] ? R->e[i].opts : "untransformed");
        }
        const et_tune_race_entry *fa = &R->e[R->fastest];
        const et_tune_race_entry *tw = &R->e[R->tie_with];
        char iv[96];
        if (isfinite(R->tie_lo) && isfinite(R->tie_hi))
            snprintf(iv, sizeof iv, "95 %% interval [%.1f, %.1f]", R->tie_lo,
                     R->tie_hi);
        else
            snprintf(iv, sizeof iv, "no interval: too few rounds");
        fprintf(f, " are not shown apart (the fastest median, %s, leads %s "
                   "by %.1f %%, %s); chose %s (%s)\n",
                fa->opts[0] ? fa->opts : "untransformed",
                tw->opts[0] ? tw->opts : "untransformed", R->tie_pct, iv, cn,
                R->chosen == R->fastest ? "fewest opts, fastest median"
                                        : "fewest opts among them");
    }
}

/* A line per seed: where it came from and what became of it. */
static void print_seeds(const et_tune_result *res, FILE *f)
{
    for (int i = 0; i < res->n_seeds; i++) {
        const et_tune_seed *sd = &res->seeds[i];
        char from[600];
        if (sd->structural)
            snprintf(from, sizeof from, "the einsum's structure");
        else
            snprintf(from, sizeof from, "%.250s at %.250s, distance %.3g",
                     sd->einsum, sd->sizes, sd->distance);
        fprintf(f, "seed        %s (%s): ",
                sd->opts[0] ? sd->opts : "untransformed", from);
        const et_tune_candidate *c = sd->cand >= 0 ? &res->cand[sd->cand]
                                                   : NULL;
        if (sd->dropped)
            fprintf(f, "dropped, %s\n", sd->reason);
        else if (!c)
            fprintf(f, "not proposed (the search stopped first)\n");
        else if (c->duplicate_of >= 0)
            fprintf(f, "candidate %d, the same kernel as candidate %d\n",
                    sd->cand, c->duplicate_of);
        else if (c->outcome == ET_OUTCOME_OK)
            fprintf(f, "candidate %d, %.4g ms%s\n", sd->cand,
                    c->timing.median_s * 1e3,
                    sd->cand == res->best ? ", the best" : "");
        else
            fprintf(f, "candidate %d, %s\n", sd->cand,
                    et_outcome_name(c->outcome));
    }
}

void et_tune_report_print(const et_tune_report *r, FILE *f)
{
    if (!r || !f)
        return;
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
    fprintf(f, "space       %s, search %s, %s after %.1f s", r->space,
            et_search_name(r->kind), res->stop_reason, res->elapsed_s);
    if (res->stats.widenings > 0)
        fprintf(f, " (the converged beam widened %d time%s)",
                res->stats.widenings, res->stats.widenings > 1 ? "s" : "");
    fputc('\n', f);
    int n_failed = 0, n_cut = res->failures[ET_OUTCOME_SLOWER_THAN_BOUND];
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        if (o != ET_OUTCOME_SLOWER_THAN_BOUND)
            n_failed += res->failures[o];
    fprintf(f,
            "candidates  %d evaluated in this run, %d answered from the "
            "database, %d the same kernel as an earlier one; %d failed or "
            "refused, %d cut at the bound (slower than the bound times the "
            "best so far: the search's cut, not a failure)\n",
            res->evaluations, res->cached, res->duplicates, n_failed, n_cut);
    print_seeds(res, f);
    if (res->model.used)
        fprintf(f, "cost model  fitted on %d samples (%d from the database), "
                   "%d of the %d new kernels it ranked not timed\n",
                res->model.fitted_on, res->model.db_samples,
                res->model.skipped, res->model.ranked);
    else if (res->model.on)
        fprintf(f, "cost model  not used: %s\n", res->model.note);
    else
        fprintf(f, "cost model  off\n");
    double race_s = res->race.ran ? res->race.elapsed_s : 0;
    if (res->evaluations > 0 && r->n_ranks > 1)
        fprintf(f,
                "spent       %.1f s; on the %d ranks together: untransformed "
                "%.1f, builds %.1f (%.3f s a candidate), verification %.1f, "
                "timing %.1f; race %.1f on rank %d\n",
                res->elapsed_s, r->n_ranks - 1, res->baseline_s,
                res->build_s, res->build_s / res->evaluations,
                res->verify_s, res->timing_s, race_s, res->race.rank);
    else if (res->evaluations > 0)
        fprintf(f,
                "spent       %.1f s: untransformed %.1f, builds %.1f (%.3f s "
                "a candidate), verification %.1f, timing %.1f, race %.1f, "
                "reference and search %.1f\n",
                res->elapsed_s, res->baseline_s, res->build_s,
                res->build_s / res->evaluations, res->verify_s,
                res->timing_s, race_s,
                res->elapsed_s - res->baseline_s - res->build_s -
                    res->verify_s - res->timing_s - race_s);
    if (res->race.ran)
        print_race(&res->race, r->n_ranks, f);
    else if (res->race.note[0])
        fprintf(f, "race        %s\n", res->race.note);
    fprintf(f, "untransformed %.4g ms (%s)\n", res->baseline.median_s * 1e3,
            res->race.ran ? "race" : "timed in this run");
    if (res->best >= 0) {
        const et_tune_candidate *best = &res->cand[res->best];
        const et_timing *bt = best_timing(res);
        char ptext[512];
        et_tune_params_text(best->params, ptext, sizeof ptext);
        fprintf(f, "best        %s\n",
                best->opts[0] ? best->opts : "untransformed");
        if (ptext[0])
            fprintf(f, "params      %s\n", ptext);
        fprintf(f, "time        %.4g ms [%.4g, %.4g]", bt->median_s * 1e3,
                bt->low_s * 1e3, bt->high_s * 1e3);
        double ci[2];
        double sp = best_speedup(res, ci);
        if (res->race.ran) {
            fprintf(f, " (race), %.3gx the untransformed kernel (95 %% "
                       "interval [%.3g, %.3g])\n", sp, ci[0], ci[1]);
            fprintf(f, "search time %.4g ms [%.4g, %.4g] (%s; the race's "
                       "median above is the one to compare)\n",
                    best->timing.median_s * 1e3, best->timing.low_s * 1e3,
                    best->timing.high_s * 1e3,
                    best->cached ? "from the database" : "this run");
        } else if (best->cached) {
            char date[64];
            date_text(best->db_created_at, date, sizeof date);
            fprintf(f, " (from the database, measured %s); no speed-up: "
                       "the untransformed kernel was timed in this run "
                       "(--race or --retime compare them in one run)\n",
                    date);
        } else {
            fprintf(f, " (this run), %.3gx the untransformed kernel (timed "
                       "apart, no interval)\n", sp);
        }
        if (res->retimed && res->retime_outcome == ET_OUTCOME_OK)
            fprintf(f, "re-timed    %.4g ms [%.4g, %.4g] on rank %d\n",
                    res->retime.median_s * 1e3, res->retime.low_s * 1e3,
                    res->retime.high_s * 1e3, res->retime_rank);
        char vl[256];
        et_verify_summary(&best->verify, vl, sizeof vl);
        fprintf(f, "%s\n\n", vl);
        if (r->have_roof)
            et_roofline_table(f, &r->roof, bt->median_s);
        if (r->roof_note[0])
            fprintf(f, "note: %s\n", r->roof_note);
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
    cJSON_AddNumberToObject(j, "baseline", R->baseline);
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

static cJSON *report_json(const et_tune_report *r)
{
    const et_tune_result *res = &r->res;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", r->einsum);
    api_json_problem(doc, &r->e);
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
    cJSON *jb = cJSON_AddObjectToObject(doc, "baseline");
    cJSON_AddNumberToObject(jb, "time_s", res->baseline.median_s);
    cJSON_AddStringToObject(jb, "source",
                            res->race.ran ? "race" : "this run");
    if (res->best >= 0) {
        const et_tune_candidate *b = &res->cand[res->best];
        const et_timing *bt = best_timing(res);
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
        double sp = best_speedup(res, sci);
        if (sp > 0) {
            cJSON_AddNumberToObject(best, "speedup", sp);
            cJSON_AddItemToObject(best, "speedup_ci95",
                                  res->race.ran ? pair_json(sci[0], sci[1])
                                                : cJSON_CreateNull());
        } else {
            cJSON_AddNullToObject(best, "speedup");
            cJSON_AddNullToObject(best, "speedup_ci95");
        }
        if (r->have_roof) {
            cJSON_AddItemToObject(
                best, "gops",
                et_measured_gops_json(&r->roof, bt->median_s));
            cJSON_AddItemToObject(best, "roofline_gops",
                                  et_roofline_gops_json(&r->roof));
            cJSON_AddItemToObject(best, "roofline_memory",
                                  et_roofline_memory_json(&r->roof));
            cJSON_AddStringToObject(best, "roofline_note", r->roof_note);
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
    cJSON *jrace = race_json(&res->race);
    if (r->n_ranks > 1 && res->race.ran)
        cJSON_AddNumberToObject(jrace, "rank", res->race.rank);
    cJSON_AddItemToObject(doc, "race", jrace);
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
    cJSON_AddItemToObject(doc, "seeds", seeds_json(res));
    cJSON *jc = cJSON_AddArrayToObject(doc, "candidates");
    for (int i = 0; i < res->n_cand; i++)
        cJSON_AddItemToArray(jc, candidate_json(&res->cand[i], r));
    return doc;
}

char *et_tune_report_json(const et_tune_report *r)
{
    if (!r)
        return NULL;
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
    API_NEED(diag, r, "r");
    API_NEED(diag, path, "path");
    if (!r->have_roof)
        return api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                        "no roofline: the device's peaks are not known");
    const et_tune_result *res = &r->res;
    et_plot_point *pts = calloc((size_t)res->n_cand + 1, sizeof *pts);
    et_plot_trial *trials = calloc((size_t)res->n_cand + 1, sizeof *trials);
    int n = 0, best = -1;
    if (!pts || !trials) {
        free(pts);
        free(trials);
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *c = &res->cand[i];
        trials[i].elapsed_s = c->done_s;
        trials[i].cached = c->cached;
        /* a duplicate was answered from the candidate whose kernel it is:
         * not timed again, so no point of its own */
        if (c->outcome != ET_OUTCOME_OK || c->duplicate_of >= 0)
            continue;
        trials[i].time_s = c->timing.median_s;
        double ts = i == res->best ? best_timing(res)->median_s
                                   : c->timing.median_s;
        if (i == res->best)
            best = n;
        pts[n].intensity = r->roof.intensity;
        pts[n].gops = (double)r->roof.ops_total / ts / 1e9;
        n++;
    }
    char title[ET_MAX_TEXT + 300], sub[1600], tb[64] = "";
    api_problem_title(&r->e, title, sizeof title);
    if (res->best >= 0) {
        snprintf(tb, sizeof tb, ", best %.3g GOps/s",
                 (double)r->roof.ops_total / best_timing(res)->median_s /
                     1e9);
    }
    snprintf(sub, sizeof sub, "%.255s (%s)   %s search, %d candidates in "
             "%.3g s%s",
             r->info.name, et_backend_name(r->info.target.backend),
             et_search_name(r->kind), res->n_cand, res->elapsed_s, tb);
    et_plot plot;
    memset(&plot, 0, sizeof plot);
    plot.peaks = &r->peaks;
    plot.title = title;
    plot.subtitle = sub;
    plot.points = pts;
    plot.n_points = n;
    plot.best = best;
    plot.roof_dtypes = api_roof_dtypes(&r->e);
    plot.trials = trials;
    plot.n_trials = res->n_cand;
    plot.best_trial = res->best;
    plot.run_s = res->elapsed_s;
    plot.baseline_s = res->baseline.median_s;
    plot.roofline_s = r->roof.time_s;
    plot.bandwidth_gbs = r->roof.bandwidth_gbs;
    char why[256] = "";
    et_status st = et_plot_write(path, &plot, why, sizeof why);
    free(pts);
    free(trials);
    if (st != ET_OK) {
        api_fail(diag, st, st == ET_ERR_INPUT ? ET_INPUT_FILE : ET_INPUT_NONE,
                 "%s", why);
        if (diag)
            snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    return st;
}
