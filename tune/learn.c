/*
 * learn.c - a tuning run's cost model (learn.h): the database's trials
 * rebuilt into kernels and samples, and the run's own candidates.
 */
#include "tune/learn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The problem a run of rows is about, rebuilt once per einsum and
 * tune-at sizes. */
typedef struct learn_ctx {
    et_model *m;
    const et_target *target;
    const et_peaks *peaks;
    int added, dropped;
    bool nomem;
    int64_t einsum_id;      /* of base (0: none yet) */
    char tuned_at[256];
    bool usable;            /* base rebuilt */
    et_kernel *base;
    double roof_s;
    et_einsum e;
} learn_ctx;

/* The problem of einsum text, sizes ("R=3,x=*,i=10") and dtypes with
 * each open size the one tuned_at ("x=4096") gives it, resolved as a
 * plain einsum: a batched einsum's open axis stands after its row axis,
 * which the plain einsum of its text may not have open, and its trials
 * were measured at the tune-at size. */
static et_status resolve_at_tune_at(const char *text, const char *sizes,
                                    const char *tuned_at, const char *dt,
                                    et_einsum *e, et_diag *d)
{
    et_subscripts sub;
    et_shape_spec sp, at;
    et_dtype dts[ET_MAX_OPERANDS];
    et_status st = et_subscripts_parse(text, &sub, d);
    if (st == ET_OK)
        st = et_shape_spec_parse(sizes, &sp, d);
    if (st == ET_OK)
        st = et_shape_spec_parse(tuned_at, &at, d);
    if (st == ET_OK)
        st = et_dtype_spec_parse(dt, sub.n_ops, dts, d);
    for (int i = 0; st == ET_OK && i < sp.n; i++) {
        if (!sp.open[i])
            continue;
        int j = 0;
        while (j < at.n && strcmp(at.name[j], sp.name[i]) != 0)
            j++;
        if (j == at.n)
            return ET_ERR_INPUT;
        sp.size[i] = at.size[j];
        sp.open[i] = false;
    }
    return st == ET_OK ? et_einsum_resolve(&sub, &sp, NULL, dts, e, d) : st;
}

/* Rebuilds the untransformed kernel of a row's problem into c->base. */
static void rebuild_problem(learn_ctx *c, const et_db_sample *s)
{
    et_kernel_free(c->base);
    c->base = NULL;
    c->usable = false;
    c->roof_s = 0;
    c->einsum_id = s->einsum_id;
    snprintf(c->tuned_at, sizeof c->tuned_at, "%s", s->tuned_at);
    /* the operands' dtypes: "f32,f32->f32" without its output */
    char dt[256];
    snprintf(dt, sizeof dt, "%s", s->dtypes);
    char *arrow = strstr(dt, "->");
    if (arrow)
        *arrow = '\0';
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_einsum_from_strings(s->einsum, s->sizes, dt, &c->e, &d) ==
        ET_OK) {
        if (s->tuned_at[0] &&
            et_einsum_tune_at(&c->e, s->tuned_at, &d) != ET_OK)
            return;
    } else {
        if (!s->tuned_at[0] ||
            resolve_at_tune_at(s->einsum, s->sizes, s->tuned_at, dt, &c->e,
                               &d) != ET_OK)
            return;
    }
    if (et_kernel_init(&c->e, c->target, &c->base) != ET_OK) {
        c->base = NULL;
        return;
    }
    if (c->peaks) {
        et_roofline r;
        char why[256];
        if (et_roofline_compute(&c->e, c->peaks, &r, why, sizeof why) ==
            ET_OK)
            c->roof_s = r.time_s;
    }
    c->usable = true;
}

static int add_row(void *arg, const et_db_sample *s)
{
    learn_ctx *c = arg;
    if (s->einsum_id != c->einsum_id || strcmp(s->tuned_at, c->tuned_at))
        rebuild_problem(c, s);
    /* opts name the letters of the trial's einsum text; rows whose text
     * differs from the einsum row's (a renamed equivalent) are left out */
    if (!c->usable || strcmp(s->einsum_text, s->einsum) != 0) {
        c->dropped++;
        return 0;
    }
    et_opt opts[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_opts_parse(s->opts, opts, ET_MAX_OPTS, &n, &d) != ET_OK) {
        c->dropped++;
        return 0;
    }
    et_kernel *k = et_kernel_clone(c->base);
    if (!k) {
        c->nomem = true;
        return 1;
    }
    if (et_kernel_apply_opts(k, opts, n, NULL, 0) != ET_OK) {
        c->dropped++;
    } else {
        et_model_problem p = {s->base_s, c->roof_s};
        et_status st = et_model_add(c->m, k, &p, s->median_s);
        if (st == ET_OK)
            c->added++;
        else if (st == ET_ERR_NOMEM)
            c->nomem = true;
        else
            c->dropped++;
    }
    et_kernel_free(k);
    return c->nomem ? 1 : 0;
}

static void fit(et_tune_learn *L)
{
    et_error e2 = {{0}};
    L->since_fit = 0;
    if (et_model_fit(L->m, &e2) != ET_OK) {
        snprintf(L->rep->note, sizeof L->rep->note, "%.250s", e2.msg);
        return;
    }
    if (et_model_fitted(L->m)) {
        L->rep->fitted_on = et_model_n_fitted(L->m);
        L->rep->r2 = et_model_r2(L->m);
    }
}

et_status et_tune_learn_init(et_tune_learn *L, et_db *db, int64_t device_id,
                             const et_einsum *e, const et_target *t,
                             const et_peaks *peaks, double base_s,
                             et_tune_model_report *rep, et_error *err)
{
    memset(L, 0, sizeof *L);
    L->rep = rep;
    rep->on = true;
    rep->r2 = NAN;
    L->m = et_model_init();
    if (!L->m)
        return et_errorf(err, ET_ERR_NOMEM, "model: out of memory");
    L->prob.base_s = base_s;
    if (peaks) {
        et_roofline r;
        char why[256];
        if (et_roofline_compute(e, peaks, &r, why, sizeof why) == ET_OK)
            L->prob.roof_s = r.time_s;
    }
    if (db && device_id > 0) {
        learn_ctx c;
        memset(&c, 0, sizeof c);
        c.m = L->m;
        c.target = t;
        c.peaks = peaks;
        et_error e2 = {{0}};
        et_status st = et_db_samples(db, device_id, ET_TUNE_LEARN_DB_LIMIT,
                                     add_row, &c, &e2);
        et_kernel_free(c.base);
        rep->db_samples = c.added;
        rep->db_dropped = c.dropped;
        if (c.nomem)
            return et_errorf(err, ET_ERR_NOMEM, "model: out of memory");
        if (st != ET_OK)
            snprintf(rep->note, sizeof rep->note,
                     "the database's trials were not read: %.200s", e2.msg);
    }
    fit(L);
    rep->fitted_at_start = et_model_fitted(L->m);
    if (!rep->fitted_at_start && !rep->note[0])
        snprintf(rep->note, sizeof rep->note,
                 "%d samples from the database, %d needed to fit",
                 rep->db_samples, ET_MODEL_MIN_SAMPLES);
    return ET_OK;
}

void et_tune_learn_add(et_tune_learn *L, const et_kernel *k, double time_s)
{
    if (!L->m || !k)
        return;
    if (et_model_add(L->m, k, &L->prob, time_s) != ET_OK)
        return;
    L->rep->run_samples++;
    if (++L->since_fit >= ET_TUNE_LEARN_REFIT)
        fit(L);
}

double et_tune_learn_predict(const et_tune_learn *L, const et_kernel *k)
{
    return L->m ? et_model_predict(L->m, k, &L->prob) : NAN;
}

void et_tune_learn_free(et_tune_learn *L, int ranked, int skipped)
{
    if (L->rep) {
        L->rep->ranked = ranked;
        L->rep->skipped = skipped;
        L->rep->used = L->rep->fitted_on > 0 && ranked > 0;
        if (L->rep->used)
            L->rep->note[0] = '\0';
        else if (L->rep->fitted_on > 0)
            snprintf(L->rep->note, sizeof L->rep->note,
                     "fitted, but no step had more new kernels than it "
                     "keeps");
    }
    et_model_free(L->m);
    L->m = NULL;
}
