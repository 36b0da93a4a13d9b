/*
 * api.c - the public API of include/eintune.h: problems, code generation
 * and tuning, as thin wrappers over the layers (einsum/, transforms/,
 * spaces/, measure/, tune/).
 */
#include "api/api_impl.h"

#include "einsum/einsum.h"
#include "db/db.h"
#include "measure/remote.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/tune.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

et_status et_problem_init(const char *einsum, const char *shape,
                          const char *dtypes, et_problem **out,
                          et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    *out = NULL;
    if (!einsum || !shape)
        return et_diag_fail(diag, -1, "an einsum and its sizes are needed");
    et_problem *p = calloc(1, sizeof *p);
    if (!p)
        return ET_ERR_NOMEM;
    et_status st = et_einsum_from_strings(einsum, shape, dtypes, &p->e, diag);
    if (st != ET_OK) {
        free(p);
        return st;
    }
    *out = p;
    return ET_OK;
}

void et_problem_free(et_problem *p)
{
    free(p);
}

const char *et_problem_einsum(const et_problem *p)
{
    return p->e.text;
}

int64_t et_problem_ops(const et_problem *p, et_dtype t)
{
    int64_t ops[ET_DTYPE_COUNT];
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return 0;
    et_einsum_ops(&p->e, ops);
    return ops[t];
}

int64_t et_problem_bytes(const et_problem *p)
{
    return et_einsum_bytes(&p->e);
}

et_status et_problem_init_arrays(const char *einsum, int n_operands,
                                 const int *ndim,
                                 const int64_t *const *dims,
                                 const et_dtype *dtypes, et_problem **out,
                                 et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    *out = NULL;
    et_subscripts sub;
    et_status st = et_subscripts_parse(einsum ? einsum : "", &sub, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_EINSUM;
        return st;
    }
    if (n_operands != sub.n_ops) {
        diag->input = ET_INPUT_EINSUM;
        return et_diag_fail(diag, -1, "the einsum has %d operands, %d arrays "
                            "were given", sub.n_ops, n_operands);
    }
    et_operand_shapes shapes;
    memset(&shapes, 0, sizeof shapes);
    shapes.n_ops = n_operands;
    et_dtype dt[ET_MAX_OPERANDS];
    for (int k = 0; k < n_operands; k++) {
        if (ndim[k] < 0 || ndim[k] > ET_MAX_RANK) {
            diag->input = ET_INPUT_OPTION;
            return et_diag_fail(diag, -1, "operand %d: %d dimensions (at "
                                "most %d)", k, ndim[k], ET_MAX_RANK);
        }
        shapes.rank[k] = ndim[k];
        for (int a = 0; a < ndim[k]; a++)
            shapes.dim[k][a] = dims[k][a];
        dt[k] = dtypes ? dtypes[k] : ET_F64;
        if ((unsigned)dt[k] >= ET_DTYPE_COUNT) {
            diag->input = ET_INPUT_DTYPE;
            return et_diag_fail(diag, -1, "operand %d: unknown dtype %d", k,
                                (int)dt[k]);
        }
    }
    et_problem *p = calloc(1, sizeof *p);
    if (!p)
        return ET_ERR_NOMEM;
    st = et_einsum_resolve(&sub, NULL, &shapes, dt, &p->e, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_EINSUM;
        diag->status = st;
        free(p);
        return st;
    }
    *out = p;
    return ET_OK;
}

int et_problem_n_operands(const et_problem *p)
{
    return p->e.n_ops;
}

static const et_operand *problem_operand(const et_problem *p, int k)
{
    if (k == -1)
        return &p->e.out;
    if (k < 0 || k >= p->e.n_ops)
        return NULL;
    return &p->e.op[k];
}

et_dtype et_problem_dtype(const et_problem *p, int k)
{
    const et_operand *o = problem_operand(p, k);
    return o ? o->dtype : (et_dtype)0;
}

int64_t et_problem_elems(const et_problem *p, int k)
{
    return problem_operand(p, k) ? et_einsum_operand_elems(&p->e, k) : 0;
}

size_t et_problem_operand_bytes(const et_problem *p, int k)
{
    const et_operand *o = problem_operand(p, k);
    if (!o)
        return 0;
    return (size_t)et_einsum_operand_elems(&p->e, k) * et_dtype_size(o->dtype);
}

int et_problem_n_indices(const et_problem *p)
{
    return p->e.n_idx;
}

const char *et_problem_index_name(const et_problem *p, int i)
{
    return i >= 0 && i < p->e.n_idx ? p->e.idx[i].name : "";
}

int64_t et_problem_index_size(const et_problem *p, int i)
{
    return i >= 0 && i < p->e.n_idx ? p->e.idx[i].size : 0;
}

void et_free(void *ptr)
{
    free(ptr);
}

et_status et_space_builtin(et_space **out, et_diag *diag)
{
    return et_space_load_text(et_builtin_space_yaml,
                              strlen(et_builtin_space_yaml),
                              "<built-in space>", out, diag);
}

const char *et_space_name(const et_space *s)
{
    return s->name;
}

/* Applies an opt list given as text to a fresh kernel of e. */
static et_status kernel_with_opts(const et_einsum *e, const et_target *t,
                                  const char *opts, et_kernel **out,
                                  et_diag *diag)
{
    et_opt list[ET_MAX_OPTS];
    int n = 0;
    *out = NULL;
    if (opts && *opts) {
        et_status st = et_opts_parse(opts, list, ET_MAX_OPTS, &n, diag);
        if (st != ET_OK) {
            diag->input = ET_INPUT_OPTS;
            diag->status = st;
            return st;
        }
    }
    et_kernel *k = NULL;
    et_status st = et_kernel_init(e, t, &k);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "cannot build the kernel: "
                        "%s", et_status_str(st));
    char reason[512] = "";
    st = et_kernel_apply_opts(k, list, n, reason, sizeof reason);
    if (st != ET_OK) {
        et_kernel_free(k);
        diag->pos = -1;
        diag->line = diag->col = 0;
        return api_fail(diag, st, ET_INPUT_OPTS, "%s", reason);
    }
    *out = k;
    return ET_OK;
}

et_status et_codegen(const et_problem *p, const char *opts,
                     et_backend_kind b, et_kernel_source **out,
                     et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    *out = NULL;
    if ((unsigned)b >= ET_BACKEND_COUNT)
        return et_diag_fail(diag, -1, "unknown backend %d", (int)b);
    et_target t = et_target_generic(b);
    et_kernel *k = NULL;
    et_status st = kernel_with_opts(&p->e, &t, opts, &k, diag);
    if (st != ET_OK)
        return st;
    et_rendered r = {0};
    st = et_kernel_render(k, b, NULL, &r);
    et_kernel_free(k);
    if (st != ET_OK)
        return st;
    et_kernel_source *ks = calloc(1, sizeof *ks);
    if (!ks) {
        et_rendered_free(&r);
        return ET_ERR_NOMEM;
    }
    ks->source = r.source; /* ownership moves to ks */
    r.source = NULL;
    snprintf(ks->name, sizeof ks->name, "%s", r.name);
    ks->ndim = r.launch.ndim;
    for (int d = 0; d < 3; d++) {
        ks->global[d] = r.launch.global[d];
        ks->local[d] = r.launch.local[d];
    }
    ks->has_local = r.launch.has_local;
    et_rendered_free(&r);
    *out = ks;
    return ET_OK;
}

void et_kernel_source_free(et_kernel_source *k)
{
    if (!k)
        return;
    free(k->source);
    free(k);
}

void api_diag_clear(et_diag *d)
{
    if (!d)
        return;
    memset(d, 0, sizeof *d);
    d->pos = -1;
}

et_status api_fail(et_diag *d, et_status st, et_input in, const char *fmt,
                   ...)
{
    if (!d)
        return st;
    d->status = st;
    d->input = in;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    return st;
}

et_status api_fail_err(et_diag *d, et_status st, et_input in,
                       const et_error *err)
{
    return api_fail(d, st, in, "%s", err->msg[0] ? err->msg
                                                  : et_status_str(st));
}

/* What the tuning loop tells per candidate, in the public form. */
typedef struct tune_bridge {
    const et_tune_options *o;
    double t0;
    double time_limit_s;
} tune_bridge;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
    pr.elapsed_s = mono_s() - tb->t0;
    pr.time_limit_s = tb->time_limit_s;
    pr.opts = c->opts;
    pr.params = strcmp(c->params, "{}") ? c->params : "";
    pr.outcome = c->outcome;
    pr.reason = c->reason;
    pr.time_s = c->outcome == ET_OUTCOME_OK ? c->timing.median_s : 0;
    pr.cached = c->cached;
    pr.have_best = best != NULL;
    pr.best_opts = best ? best->opts : "";
    pr.best_time_s = best ? best->timing.median_s : 0;
    return tb->o->progress(tb->o->progress_arg, &pr);
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

et_status et_tune(const et_problem *p, const et_tune_options *o,
                  et_tune_summary *out, et_diag *diag)
{
    const et_tune_options defaults = {0};
    et_diag local;
    if (!diag)
        diag = &local;
    if (!o)
        o = &defaults;
    memset(out, 0, sizeof *out);
    api_diag_clear(diag);

    et_tune_opts to;
    memset(&to, 0, sizeof to);
    if (o->search && et_search_parse(o->search, &to.search.kind) != 0)
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
    to.search.cut_factor = o->bound;
    to.search.budget = o->budget;
    to.search.time_limit_s = o->time_limit_s;
    to.search.beam_width = o->beam_width;
    to.search.seed = o->seed;
    to.verify.seed = o->seed;
    to.retime = o->retime != 0;
    et_opt *start = calloc(ET_MAX_OPTS, sizeof *start);
    if (!start)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    int n_start = 0;
    if (o->start_opts && *o->start_opts) {
        et_status st = et_opts_parse(o->start_opts, start, ET_MAX_OPTS,
                                     &n_start, diag);
        if (st != ET_OK) {
            free(start);
            diag->input = ET_INPUT_OPTS;
            diag->status = st;
            return st;
        }
    }
    to.search.start = start;
    to.search.n_start = n_start;

    tune_bridge tb = {o, mono_s(), o->time_limit_s};
    to.progress = bridge_progress;
    to.log = bridge_log;
    to.arg = &tb;
    to.stop = o->cancel;

    et_space *own_space = NULL;
    const et_space *space = o->space_obj;
    et_status st = ET_OK;
    if (!space) {
        if (o->space)
            st = et_space_load(o->space, &own_space, diag);
        else
            st = et_space_builtin(&own_space, diag);
        if (st != ET_OK) {
            free(start);
            st = st == ET_ERR_IO ? ET_ERR_INPUT : st;
            diag->input = ET_INPUT_SPACE;
            diag->status = st;
            if (o->space)
                snprintf(diag->file, sizeof diag->file, "%s", o->space);
            return st;
        }
        space = own_space;
    }

    et_device *dev = NULL;
    et_db *db = NULL;
    et_binding *b = NULL;
    et_tune_result res;
    memset(&res, 0, sizeof res);
    et_error err = {{0}};
    st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (o->db)
            snprintf(diag->file, sizeof diag->file, "%s", o->db);
        goto out;
    }
    st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        goto out;
    }
    if (p->e.acc_dtype == ET_F64 && !dev->info.target.has_fp64) {
        st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                      "device %s has no fp64 support", dev->info.name);
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
    st = et_space_bind(space, &p->e, &dev->info.target, &b, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_SPACE;
        diag->status = st;
        goto out;
    }
    st = et_tune_run(dev, b, &to, &res, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    out->cancelled = !strcmp(res.stop_reason, "cancelled") ||
                     !strcmp(res.stop_reason, "interrupted");
    snprintf(out->stop_reason, sizeof out->stop_reason, "%s",
             res.stop_reason);
    out->elapsed_s = res.elapsed_s;
    out->evaluations = res.evaluations;
    out->cached = res.cached;
    for (int i = 1; i < ET_OUTCOME_COUNT; i++)
        out->failures += res.failures[i];
    out->baseline_s = res.baseline.median_s;
    if (res.best >= 0) {
        const et_tune_candidate *c = &res.cand[res.best];
        int64_t ops[ET_DTYPE_COUNT], total = 0;
        et_einsum_ops(&p->e, ops);
        for (int t = 0; t < ET_DTYPE_COUNT; t++)
            total += ops[t];
        out->found = 1;
        snprintf(out->opts, sizeof out->opts, "%s", c->opts);
        snprintf(out->kernel, sizeof out->kernel, "%s", c->kernel);
        out->time_s = c->timing.median_s;
        out->ci95_s[0] = c->timing.low_s;
        out->ci95_s[1] = c->timing.high_s;
        out->gops = c->timing.median_s > 0
                        ? (double)total / c->timing.median_s / 1e9
                        : 0;
    }
out:
    et_tune_result_free(&res);
    et_binding_free(b);
    if (dev)
        et_device_close(dev);
    et_db_close(db);
    et_space_free(own_space);
    free(start);
    return st;
}
