/*
 * tune.c - tuning through the public API: et_tune_run_full keeps a run's
 * whole result (every candidate, the device, the space, the roofline from
 * the device's peaks) as an et_tune_report, whose text report, JSON and
 * chart report/ makes; et_tune is its summary. Both map et_tune_options
 * onto the tuning loop (tune/tune.h): the search's options, the start
 * opts, the space (loaded here or the caller's), progress and log
 * callbacks, the cancel flag and the early-cut bound; and open what the
 * run needs: the device (or the ranks of an MPI job), the database, the
 * space's binding, the device's peaks.
 */
#include "api/api_impl.h"
#include "base/clock.h"

#include "db/db.h"
#include "measure/remote.h"
#include "report/report.h"
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The figures of a scaled-out run as log lines. */
static void log_scale(const et_tune_options *o, const et_tune_report *r)
{
    api_logf(o->log, o->log_arg, ET_LOG_INFO,
             "rank 0: %.2f ms of its own a candidate (database %.2f, "
             "dispatch %.2f), waited %.1f s for results, CPU %.2f s of "
             "%.1f s", 1e3 * report_tune_rank0_per_trial(r),
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
    const et_timing *bt = report_tune_best_timing(&r->res);
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


/* One run's state: the options mapped, and what it opened or made. */
typedef struct tune_ctx {
    const et_problem *p;
    const et_tune_options *o;
    const api_tune_env *env;
    et_diag *diag;
    et_tune_report *r;
    et_opt *start;            /* the start opts (ET_MAX_OPTS of them) */
    et_tune_opts to;
    et_space *own_space;      /* loaded for the run, or NULL */
    const et_space *space;
    et_scale *sc;             /* the MPI job's, NULL when alone */
    et_tune_exec exec;        /* rank 0's executor over the ranks */
    et_device *dev;           /* NULL on rank 0 of a scaled-out run */
    const et_device_info *info;
    et_db *db;
    et_binding *b;
    tune_bridge tb;
    et_error err;
} tune_ctx;

/* Scale-out: under an MPI launcher with more than one rank, or with the
 * caller's communicator, the run joins the job (t->sc; NULL when it is
 * alone) and the report gets its rank and the number of ranks. */
static et_status tune_join(tune_ctx *t)
{
    const et_tune_options *o = t->o;
    et_scale_env envl;
    et_scale_env_get(&envl);
    t->r->n_ranks = 1;
    if (!t->env->no_scale && (o->comm || (envl.launched && envl.size > 1))) {
        if (!et_scale_available())
            return api_fail(t->diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                            "scale-out is off: eintune was built without "
                            "MPI, and this is rank %d of %d under an MPI "
                            "launcher (run it without mpirun, or rebuild "
                            "with libopenmpi-dev installed)",
                            envl.rank, envl.size);
        et_status st = et_scale_join(o->comm, &t->sc, &t->err);
        if (st != ET_OK)
            return api_fail_err(t->diag, st, ET_INPUT_NONE, &t->err);
        if (et_scale_size(t->sc) == 1) {
            et_scale_free(t->sc);
            t->sc = NULL;
        }
    }
    if (t->sc) {
        t->r->rank = et_scale_rank_of(t->sc);
        t->r->n_ranks = et_scale_size(t->sc);
    }
    return ET_OK;
}

/* An evaluating rank: serves rank 0 until it says stop. */
static et_status tune_serve(tune_ctx *t)
{
    et_scale_serve_opts so = {&t->p->e, t->o->device, t->to.verify,
                              t->to.timing, 0, bridge_log, &t->tb};
    et_status st = et_scale_serve(t->sc, &so, &t->err);
    if (st != ET_OK)
        api_fail_err(t->diag, st, ET_INPUT_NONE, &t->err);
    return st;
}

/* The device the run measures on: the ranks' (rank 0 of a scaled-out
 * run, which has none of its own), the caller's open one, or o->device
 * opened in a worker. */
static et_status tune_open_device(tune_ctx *t)
{
    et_tune_report *r = t->r;
    et_status st;
    if (t->sc) {
        r->ranks = calloc((size_t)r->n_ranks, sizeof *r->ranks);
        if (!r->ranks)
            return api_fail(t->diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
        st = et_scale_master_start(t->sc, &t->exec, r->ranks, &t->err);
        if (st != ET_OK)
            return api_fail_err(t->diag, st,
                                st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                   : ET_INPUT_NONE,
                                &t->err);
        t->info = &t->exec.info;
        for (int k = 1; k < r->n_ranks; k++)
            api_logf(t->o->log, t->o->log_arg, ET_LOG_INFO,
                     "rank %d on %s: %s (%s)%s%s", k, r->ranks[k].host,
                     r->ranks[k].info.name, r->ranks[k].spec,
                     r->ranks[k].cpus[0] ? ", bound to cores " : "",
                     r->ranks[k].cpus);
        return ET_OK;
    }
    if (t->env->dev) {
        t->dev = t->env->dev;
        t->info = &t->dev->info;
        return ET_OK;
    }
    st = et_device_open_isolated(t->o->device, NULL, &t->dev, &t->err);
    if (st != ET_OK)
        return api_fail_err(t->diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                            : ET_INPUT_NONE,
                            &t->err);
    t->info = &t->dev->info;
    return ET_OK;
}

/* Where the trials go: a database elsewhere (a campaign's rank 0), the
 * caller's open one, or o->db opened, with the space's id in it. */
static et_status tune_open_db(tune_ctx *t)
{
    const et_tune_options *o = t->o;
    if (t->env->store) {
        t->to.store = t->env->store;
        return ET_OK;
    }
    et_status st = ET_OK;
    if (t->env->db)
        t->db = t->env->db;
    else
        st = et_db_open(o->db, &t->db, &t->err);
    if (st != ET_OK) {
        api_fail_err(t->diag, st, ET_INPUT_FILE, &t->err);
        if (o->db)
            snprintf(t->diag->file, sizeof t->diag->file, "%s", o->db);
        return st;
    }
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx",
             (unsigned long long)t->space->hash);
    st = et_db_space_id(t->db, t->space->name, hash, &t->to.db_space_id,
                        &t->err);
    if (st != ET_OK)
        return api_fail_err(t->diag, st, ET_INPUT_NONE, &t->err);
    t->to.db = t->db;
    api_logf(o->log, o->log_arg, ET_LOG_INFO, "database %s",
             et_db_path(t->db));
    return ET_OK;
}

/* The space bound to the problem on the device (fp64 checked first), the
 * report's problem, device and search, and (env->roofline) the roofline
 * from the device's peaks. */
static et_status tune_bind(tune_ctx *t)
{
    const et_problem *p = t->p;
    const et_tune_options *o = t->o;
    const et_device_info *info = t->info;
    et_tune_report *r = t->r;
    if (t->sc)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "device %s on %d ranks, space %s, search %s", info->name,
                 r->n_ranks - 1, t->space->name,
                 et_search_name(t->to.search.kind));
    else
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "device %s (%s), space %s, search %s", info->name,
                 info->spec, t->space->name,
                 et_search_name(t->to.search.kind));
    if (p->e.acc_dtype == ET_F64 && !info->target.has_fp64)
        return api_fail(t->diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                        "device %s has no fp64 support", info->name);
    et_status st = et_space_bind(t->space, &p->e, &info->target, &t->b,
                                 t->diag);
    if (st != ET_OK) {
        t->diag->input = ET_INPUT_SPACE;
        t->diag->status = st;
        return st;
    }
    snprintf(r->einsum, sizeof r->einsum, "%s", p->e.text);
    r->e = p->e;
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(&p->e, ops);
    for (int d = 0; d < ET_DTYPE_COUNT; d++)
        r->ops_total += ops[d];
    r->info = *info;
    snprintf(r->space, sizeof r->space, "%s", t->space->name);
    r->kind = t->to.search.kind;
    if (t->env->roofline && t->dev)
        tune_roofline(p, o, t->dev, t->db, r);
    else if (t->env->roofline)
        tune_roofline_db(p, o, info, t->db, r);
    return ET_OK;
}

/* The search (tune/tune.h), its progress bridged to the caller's
 * callbacks; then the best held against the roofline. */
static et_status tune_search(tune_ctx *t)
{
    et_tune_report *r = t->r;
    t->tb.roof = r->have_roof ? &r->roof : NULL;
    t->to.peaks = r->have_roof ? &r->peaks : NULL;
    t->tb.ops_total = r->ops_total;
    t->to.progress = bridge_progress;
    t->to.new_best = bridge_new_best;
    t->to.log = bridge_log;
    t->to.arg = &t->tb;
    t->to.stop = t->o->cancel;
    t->to.exec = t->sc ? &t->exec : NULL;
    et_status st = et_tune_run(t->dev, t->b, &t->to, &r->res, &t->err);
    if (st != ET_OK)
        api_fail_err(t->diag, st, ET_INPUT_NONE, &t->err);
    else if (r->have_roof && r->res.best >= 0)
        roof_check(t->p, t->o, t->dev, t->db, r);
    return st;
}

/* The end of a run whose status is st: rank 0 stops the ranks, what the
 * run opened is closed (never the caller's device or database), and the
 * report goes to *out, or is freed on failure. Returns st. */
static et_status tune_finish(tune_ctx *t, et_status st, et_tune_report **out)
{
    et_tune_report *r = t->r;
    if (t->sc && r->rank == 0) {
        et_scale_master_stop(t->sc, r->ranks, &r->fig);
        if (st == ET_OK)
            log_scale(t->o, r);
    }
    et_scale_free(t->sc);
    free(t->tb.table);
    et_binding_free(t->b);
    if (t->dev && t->dev != t->env->dev)
        et_device_close(t->dev);
    if (t->db != t->env->db)
        et_db_close(t->db);
    et_space_free(t->own_space);
    free(t->start);
    if (st != ET_OK) {
        et_tune_report_free(r);
        return st;
    }
    *out = r;
    return ET_OK;
}

/* The run behind et_tune and et_tune_run_full; env->roofline: look up
 * the device's peaks for the report. */
static et_status tune_impl(const et_problem *p, const et_tune_options *o,
                           const api_tune_env *env, et_tune_report **out,
                           et_diag *diag)
{
    API_DIAG(diag);
    api_diag_clear(diag);
    *out = NULL;
    API_OPTIONS(et_tune_options, o, diag);

    tune_ctx t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.o = o;
    t.env = env;
    t.diag = diag;
    t.r = calloc(1, sizeof *t.r);
    t.start = calloc(ET_MAX_OPTS, sizeof *t.start);
    if (!t.r || !t.start) {
        free(t.r);
        free(t.start);
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    t.r->res.best = -1;
    t.tb = (tune_bridge){o, et_now_s(), NULL, 0, false, NULL};
    et_status st = tune_opts_map(o, &t.to, t.start, diag);
    if (st == ET_OK)
        st = tune_space(o, &t.own_space, &t.space, diag);
    if (st == ET_OK)
        st = tune_join(&t);
    if (st == ET_OK && t.sc && t.r->rank > 0)
        return tune_finish(&t, tune_serve(&t), out);
    if (st == ET_OK)
        st = tune_open_device(&t);
    if (st == ET_OK)
        st = tune_open_db(&t);
    if (st == ET_OK)
        st = tune_bind(&t);
    if (st == ET_OK)
        st = tune_search(&t);
    return tune_finish(&t, st, out);
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
        const et_timing *bt = report_tune_best_timing(res);
        out->time_s = bt->median_s;
        out->ci95_s[0] = bt->low_s;
        out->ci95_s[1] = bt->high_s;
        out->gops = bt->median_s > 0
                        ? (double)r->ops_total / bt->median_s / 1e9
                        : 0;
        out->speedup = report_tune_speedup(res, out->speedup_ci95);
        snprintf(out->time_source, sizeof out->time_source, "%s",
                 report_tune_time_source(res));
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

void et_tune_report_print(const et_tune_report *r, FILE *f)
{
    if (r && f)
        report_tune_print(r, f);
}

char *et_tune_report_json(const et_tune_report *r)
{
    if (!r)
        return NULL;
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "einsum", r->einsum);
    api_json_problem(doc, &r->e);
    report_tune_json(r, doc);
    return report_json_text(doc);
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
    report_tune_chart c;
    if (report_tune_chart_init(&c, r) != ET_OK)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    char title[ET_MAX_TEXT + 300];
    api_problem_title(&r->e, title, sizeof title);
    c.plot.title = title;
    c.plot.roof_dtypes = api_roof_dtypes(&r->e);
    char why[256] = "";
    et_status st = et_plot_write(path, &c.plot, why, sizeof why);
    report_tune_chart_free(&c);
    if (st != ET_OK) {
        api_fail(diag, st, st == ET_ERR_INPUT ? ET_INPUT_FILE : ET_INPUT_NONE,
                 "%s", why);
        if (diag)
            snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    return st;
}
