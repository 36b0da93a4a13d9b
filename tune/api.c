/*
 * api.c - the public API of include/eintune.h: problems, code generation
 * and tuning, as thin wrappers over the layers (einsum/, transforms/,
 * spaces/, measure/, tune/).
 */
#include "eintune.h"

#include "einsum/einsum.h"
#include "measure/db.h"
#include "measure/remote.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_problem {
    et_einsum e;
};

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

/* Applies an opt list given as text to a fresh kernel of e. */
static et_status kernel_with_opts(const et_einsum *e, const et_target *t,
                                  const char *opts, et_kernel **out,
                                  et_diag *diag)
{
    static et_opt list[ET_MAX_OPTS];
    int n = 0;
    *out = NULL;
    if (opts && *opts) {
        et_status st = et_opts_parse(opts, list, ET_MAX_OPTS, &n, diag);
        if (st != ET_OK)
            return st;
    }
    et_kernel *k = NULL;
    et_status st = et_kernel_init(e, t, &k);
    if (st != ET_OK)
        return st;
    char reason[512] = "";
    st = et_kernel_apply_opts(k, list, n, reason, sizeof reason);
    if (st != ET_OK) {
        et_kernel_free(k);
        diag->pos = -1;
        diag->line = diag->col = 0;
        snprintf(diag->msg, sizeof diag->msg, "%s", reason);
        return st;
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

et_status et_tune(const et_problem *p, const et_tune_options *o,
                  et_tune_summary *out, et_diag *diag)
{
    static const et_tune_options defaults;
    et_diag local;
    if (!diag)
        diag = &local;
    if (!o)
        o = &defaults;
    memset(out, 0, sizeof *out);
    memset(diag, 0, sizeof *diag);
    diag->pos = -1;

    et_tune_opts to;
    memset(&to, 0, sizeof to);
    if (o->search && et_search_parse(o->search, &to.search.kind) != 0)
        return et_diag_fail(diag, -1, "unknown search '%s' (beam, random, "
                            "grid)", o->search);
    if (o->budget < 0 || o->beam_width < 0 || o->time_limit_s < 0)
        return et_diag_fail(diag, -1, "budget, beam width and time limit "
                            "must not be negative");
    to.search.budget = o->budget;
    to.search.time_limit_s = o->time_limit_s;
    to.search.beam_width = o->beam_width;
    to.search.seed = o->seed;
    to.verify.seed = o->seed;
    to.retime = o->retime != 0;
    static et_opt start[ET_MAX_OPTS];
    int n_start = 0;
    if (o->start_opts && *o->start_opts) {
        et_status st = et_opts_parse(o->start_opts, start, ET_MAX_OPTS,
                                     &n_start, diag);
        if (st != ET_OK)
            return st;
    }
    to.search.start = start;
    to.search.n_start = n_start;

    et_space *space = NULL;
    et_status st;
    if (o->space)
        st = et_space_load(o->space, &space, diag);
    else
        st = et_space_load_text(et_builtin_space_yaml,
                                strlen(et_builtin_space_yaml),
                                "<built-in space>", &space, diag);
    if (st != ET_OK)
        return st == ET_ERR_IO ? ET_ERR_INPUT : st;

    et_device *dev = NULL;
    et_db *db = NULL;
    et_binding *b = NULL;
    et_tune_result res;
    memset(&res, 0, sizeof res);
    et_error err = {{0}};
    st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st == ET_OK)
        st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        snprintf(diag->msg, sizeof diag->msg, "%.500s", err.msg);
        goto out;
    }
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)space->hash);
    st = et_db_space_id(db, space->name, hash, &to.db_space_id, &err);
    if (st != ET_OK) {
        snprintf(diag->msg, sizeof diag->msg, "%.500s", err.msg);
        goto out;
    }
    to.db = db;
    st = et_space_bind(space, &p->e, &dev->info.target, &b, diag);
    if (st != ET_OK)
        goto out;
    st = et_tune_run(dev, b, &to, &res, &err);
    if (st != ET_OK) {
        snprintf(diag->msg, sizeof diag->msg, "%.500s", err.msg);
        goto out;
    }
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
    et_space_free(space);
    return st;
}
