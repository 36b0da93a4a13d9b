/* verify.c - inputs drawn once, references once, per-element bounds, the
 * one-sided Welch test against the baseline, and the device-side runs.
 *
 * The reference is kept as two doubles per element, hi + lo, its long
 * double value exactly (lo holds the bits hi drops: at most 11 of them),
 * so the check of every output element - run for every candidate of a
 * tune, on outputs of tens of millions of elements - is double arithmetic
 * the compiler vectorizes rather than x87; large outputs are checked by
 * several threads, by ranges of elements. */
#include "measure/verify.h"

#include "base/clock.h"

#include "measure/inputs.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SEED 0x65696e74756e65ull /* "eintune" */

typedef struct trial_data {
    void *in[ET_MAX_OPERANDS]; /* host inputs in the operands' dtypes */
    double *ref_hi, *ref_lo;   /* the reference: hi + lo exactly */
    double *bound;
    int64_t *pick;             /* sample positions */
    /* device copies, one per kernel argument (transforms/kernel.h: a
     * batched kernel's rows are arguments of their own) */
    et_guarded d_arg[ET_MAX_ARGS];
} trial_data;

struct et_verifier {
    et_einsum e;
    et_verify_opts o;
    int64_t n_out;             /* output elements */
    int64_t n_pick;            /* sample size per trial */
    /* the kernels' buffer arguments: operand (-1 the output) and row */
    int n_args;
    int arg_op[ET_MAX_ARGS];
    int arg_row[ET_MAX_ARGS];
    trial_data *t;
    /* each trial's output as read back, kept from one kernel to the next
     * (a tune verifies every candidate: fresh pages each time cost more
     * than the check) */
    void **out;
    /* the device the copies live on */
    et_device *dev;
    uint64_t epoch;
    bool uploaded;
    /* the baseline's sample statistics */
    bool has_base;
    double base_mean, base_var;
    int64_t base_n;
};

static double unit_roundoff(et_dtype t)
{
    switch (t) {
    case ET_F16:
        return 0x1.0p-11;
    case ET_F32:
        return 0x1.0p-24;
    default:
        return 0x1.0p-53;
    }
}

/* hi + lo == r exactly: r has a 64-bit significand, hi the first 53 bits
 * rounded, and r - hi (exact in long double) at most 11 bits, which a
 * double holds. A finite r beyond the doubles' range (no f32 or f64
 * output reaches it) becomes +-DBL_MAX, so it is still checked as finite;
 * a non-finite r stays non-finite in hi (such elements are not checked). */
static void split_ref(long double r, double *hi, double *lo)
{
    double h = (double)r;
    if (isinf(h) && isfinite(r)) {
        *hi = r > 0 ? DBL_MAX : -DBL_MAX;
        *lo = 0;
        return;
    }
    *hi = h;
    *lo = isfinite(h) ? (double)(r - (long double)h) : 0;
}

static long double ref_at(const trial_data *t, int64_t i)
{
    return (long double)t->ref_hi[i] + (long double)t->ref_lo[i];
}

static et_status nomem(et_error *err)
{
    return et_errorf(err, ET_ERR_NOMEM, "verify: out of memory");
}

et_status et_verifier_init(const et_einsum *e, const et_verify_opts *opts,
                           et_verifier **out, et_error *err)
{
    *out = NULL;
    gsl_set_error_handler_off();
    et_verifier *v = calloc(1, sizeof *v);
    if (!v)
        return nomem(err);
    v->e = *e;
    v->o = opts ? *opts : (et_verify_opts){0};
    if (v->o.trials <= 0)
        v->o.trials = 3;
    if (v->o.seed == 0)
        v->o.seed = DEFAULT_SEED;
    if (v->o.sample <= 0)
        v->o.sample = 100000;
    if (v->o.alpha <= 0)
        v->o.alpha = 0.001;
    if (v->o.effect <= 0)
        v->o.effect = 2.0;
    v->n_out = et_einsum_operand_elems(e, -1);
    if (!et_kernel_args(e, &v->n_args, v->arg_op, v->arg_row)) {
        free(v);
        return et_errorf(err, ET_ERR_UNSUPPORTED,
                         "the kernel would take more than %d arrays",
                         ET_MAX_ARGS);
    }
    v->n_pick = v->n_out < v->o.sample ? v->n_out : v->o.sample;
    v->t = calloc((size_t)v->o.trials, sizeof *v->t);
    v->out = calloc((size_t)v->o.trials, sizeof *v->out);
    if (!v->t || !v->out) {
        free(v->t);
        free(v->out);
        free(v);
        return nomem(err);
    }

    /* n = K + m - 2 terms' worth of roundings per element */
    long double k_terms = 1;
    for (int i = e->n_out; i < e->n_idx; i++)
        k_terms *= (long double)e->idx[i].size;
    long double n = k_terms + e->n_ops - 2;
    if (n < 0)
        n = 0;
    long double u = unit_roundoff(e->acc_dtype);
    long double u_out =
        e->out.dtype == e->acc_dtype ? 0 : unit_roundoff(e->out.dtype);
    long double gamma = n * u < 1 ? n * u / (1 - n * u) : INFINITY;

    et_status st = ET_OK;
    size_t n_out = (size_t)v->n_out;
    long double *abs_terms = malloc((n_out ? n_out : 1) * sizeof *abs_terms);
    long double *ref = malloc((n_out ? n_out : 1) * sizeof *ref);
    if (!abs_terms || !ref) {
        st = nomem(err);
        goto fail;
    }
    for (int r = 0; r < v->o.trials; r++) {
        trial_data *t = &v->t[r];
        et_dist dist = (et_dist)(r % ET_DIST_COUNT);
        for (int k = 0; k < e->n_ops; k++) {
            size_t n_el = (size_t)et_einsum_operand_elems(e, k);
            size_t sz = et_dtype_size(e->op[k].dtype);
            t->in[k] = malloc(n_el * sz > 0 ? n_el * sz : 1);
            if (!t->in[k]) {
                st = nomem(err);
                goto fail;
            }
            et_inputs_fill(t->in[k], e->op[k].dtype, n_el, dist,
                           et_seed_mix(v->o.seed, (uint64_t)r, (uint64_t)k));
        }
        t->ref_hi = malloc((n_out ? n_out : 1) * sizeof *t->ref_hi);
        t->ref_lo = malloc((n_out ? n_out : 1) * sizeof *t->ref_lo);
        t->bound = malloc((n_out ? n_out : 1) * sizeof *t->bound);
        t->pick = malloc((size_t)(v->n_pick ? v->n_pick : 1) *
                         sizeof *t->pick);
        if (!t->ref_hi || !t->ref_lo || !t->bound || !t->pick) {
            st = nomem(err);
            goto fail;
        }
        st = et_reference_eval(e, (const void *const *)t->in, ref,
                               abs_terms);
        if (st != ET_OK) {
            et_errorf(err, st, "verify: reference evaluation failed: %s",
                      et_status_str(st));
            goto fail;
        }
        for (size_t i = 0; i < n_out; i++) {
            long double b = u_out * fabsl(ref[i]);
            if (abs_terms[i] != 0)
                b += gamma * abs_terms[i];
            t->bound[i] = (double)b;
            split_ref(ref[i], &t->ref_hi[i], &t->ref_lo[i]);
        }
        if (v->n_pick == v->n_out) {
            for (int64_t i = 0; i < v->n_pick; i++)
                t->pick[i] = i;
        } else {
            et_rng rng;
            et_rng_seed(&rng, et_seed_mix(v->o.seed, (uint64_t)r, 0x5a));
            for (int64_t i = 0; i < v->n_pick; i++)
                t->pick[i] = (int64_t)et_rng_below(&rng, (uint64_t)v->n_out);
        }
    }
    free(abs_terms);
    free(ref);
    *out = v;
    return ET_OK;
fail:
    free(abs_terms);
    free(ref);
    et_verifier_free(v);
    return st;
}

void et_verifier_free(et_verifier *v)
{
    if (!v)
        return;
    for (int r = 0; r < v->o.trials; r++) {
        trial_data *t = &v->t[r];
        for (int k = 0; k < ET_MAX_OPERANDS; k++)
            free(t->in[k]);
        free(t->ref_hi);
        free(t->ref_lo);
        free(t->bound);
        free(t->pick);
        free(v->out[r]);
    }
    free(v->t);
    free(v->out);
    free(v);
}

int et_verifier_trials(const et_verifier *v)
{
    return v->o.trials;
}

const void *et_verifier_input(const et_verifier *v, int trial, int k)
{
    return v->t[trial].in[k];
}

long double et_verifier_reference(const et_verifier *v, int trial,
                                  int64_t i)
{
    return ref_at(&v->t[trial], i);
}

const double *et_verifier_bounds(const et_verifier *v, int trial)
{
    return v->t[trial].bound;
}

const char *et_verifier_dist_name(const et_verifier *v, int trial)
{
    return et_dist_name((et_dist)(trial % ET_DIST_COUNT));
}

bool et_verifier_has_baseline(const et_verifier *v)
{
    return v->has_base;
}

/* ---- host-side check ---------------------------------------------------- */

/* |got - (hi + lo)| / bound: got - hi is exact where the two are within
 * a factor of 2 of each other, and the rest rounds once or twice at 2^-53
 * of the error itself, far below what a normalized error needs. */
static inline double norm_err(double got, double hi, double lo, double bound)
{
    double e = fabs((got - hi) - lo);
    if (bound == 0)
        return e == 0 ? 0.0 : INFINITY;
    return e / bound;
}

static inline double out_get(const void *out, et_dtype t, int64_t i)
{
    switch (t) {
    case ET_F32:
        return ((const float *)out)[i];
    case ET_F64:
        return ((const double *)out)[i];
    default:
        return et_elem_get(out, t, (size_t)i);
    }
}

/* "[3, 17]" for flat index i of the output. */
static void multi_index(const et_einsum *e, int64_t i, char *buf, size_t cap)
{
    int64_t idx[ET_MAX_RANK];
    for (int d = e->out.rank - 1; d >= 0; d--) {
        idx[d] = i % e->out.dim[d];
        i /= e->out.dim[d];
    }
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "[");
    for (int d = 0; d < e->out.rank && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", d ? ", " : "",
                               (long long)idx[d]);
    if (at < cap)
        snprintf(buf + at, cap - at, "]");
}

static void describe(const et_verifier *v, int r, int64_t i, double got,
                     const char *what, char *buf, size_t cap)
{
    char mi[ET_MAX_RANK * 22 + 4];
    multi_index(&v->e, i, mi, sizeof mi);
    const trial_data *t = &v->t[r];
    int at = snprintf(buf, cap, "trial %d (%s): element %s %s: got %.17g, "
                                "expected %.17Lg",
                      r, et_verifier_dist_name(v, r), mi, what, got,
                      ref_at(t, i));
    if (isfinite(got) && at > 0 && (size_t)at < cap)
        snprintf(buf + at, cap - (size_t)at,
                 " (normalized error %.3g, bound %.3g)",
                 norm_err(got, t->ref_hi[i], t->ref_lo[i], t->bound[i]),
                 t->bound[i]);
}

/* One range of one trial's elements: the bound check and finiteness. */
typedef struct check_part {
    const trial_data *t;
    const void *out;
    et_dtype ot;
    int64_t begin, end;
    int64_t n_bad, n_nan, nan_i, worst_i; /* nan_i, worst_i: -1 for none */
    double worst;
} check_part;

static void *check_range(void *arg)
{
    check_part *p = arg;
    const double *hi = p->t->ref_hi, *lo = p->t->ref_lo, *b = p->t->bound;
    int64_t n_bad = 0, n_nan = 0, nan_i = -1, worst_i = -1;
    double worst = -1;
    for (int64_t i = p->begin; i < p->end; i++) {
        if (!isfinite(hi[i]))
            continue; /* a non-finite reference cannot be checked */
        double got = out_get(p->out, p->ot, i);
        if (!isfinite(got)) {
            if (nan_i < 0)
                nan_i = i;
            n_nan++;
            continue;
        }
        double ne = norm_err(got, hi[i], lo[i], b[i]);
        if (ne > 1)
            n_bad++;
        if (ne > worst) {
            worst = ne;
            worst_i = i;
        }
    }
    p->n_bad = n_bad;
    p->n_nan = n_nan;
    p->nan_i = nan_i;
    p->worst = worst;
    p->worst_i = worst_i;
    return NULL;
}

/* Threads for one trial's check: one per online CPU up to the cap, for
 * outputs large enough to pay for starting them (the device is idle while
 * the host checks). */
#define CHECK_MAX_THREADS 8
#define CHECK_THREAD_MIN_ELEMS (1 << 20)

static int check_threads(int64_t n)
{
    if (n < CHECK_THREAD_MIN_ELEMS)
        return 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    if (cpus > CHECK_MAX_THREADS)
        cpus = CHECK_MAX_THREADS;
    return (int)cpus;
}

/* Checks bounds and finiteness; collects the pooled sample into `sample`
 * (v->n_pick per trial) when it is non-NULL. The ranges are merged in
 * element order, so the element named (the first non-finite one, the
 * first of the worst) is the one a single pass would name. */
static void check(const et_verifier *v, const void *const *outs,
                  const char *const *guard_faults, double *sample,
                  et_verify_result *res)
{
    memset(res, 0, sizeof *res);
    res->outcome = ET_OUTCOME_OK;
    res->trials = v->o.trials;
    res->p_value = NAN;
    res->mean_ratio = NAN;
    et_dtype ot = v->e.out.dtype;

    int nan_r = -1, worst_r = -1;
    int64_t nan_i = 0, worst_i = 0, n_nan = 0;
    double worst = -1;
    int n_thr = check_threads(v->n_out);
    for (int r = 0; r < v->o.trials; r++) {
        const trial_data *t = &v->t[r];
        check_part part[CHECK_MAX_THREADS];
        pthread_t tid[CHECK_MAX_THREADS];
        bool started[CHECK_MAX_THREADS] = {false};
        for (int k = 0; k < n_thr; k++) {
            part[k] = (check_part){
                .t = t, .out = outs[r], .ot = ot,
                .begin = v->n_out * k / n_thr,
                .end = v->n_out * (k + 1) / n_thr,
            };
            if (k > 0)
                started[k] = pthread_create(&tid[k], NULL, check_range,
                                            &part[k]) == 0;
        }
        check_range(&part[0]);
        for (int k = 1; k < n_thr; k++) {
            if (started[k])
                pthread_join(tid[k], NULL);
            else
                check_range(&part[k]); /* no thread: this one does it */
        }
        for (int k = 0; k < n_thr; k++) {
            const check_part *p = &part[k];
            if (p->nan_i >= 0 && nan_r < 0) {
                nan_r = r;
                nan_i = p->nan_i;
            }
            n_nan += p->n_nan;
            res->n_bad += p->n_bad + p->n_nan;
            if (p->worst_i >= 0 && p->worst > worst) {
                worst = p->worst;
                worst_r = r;
                worst_i = p->worst_i;
            }
        }
        if (sample) {
            for (int64_t j = 0; j < v->n_pick; j++) {
                int64_t i = t->pick[j];
                double got = out_get(outs[r], ot, i);
                sample[r * v->n_pick + j] =
                    norm_err(got, t->ref_hi[i], t->ref_lo[i], t->bound[i]);
            }
        }
    }
    res->max_norm_err = n_nan ? INFINITY : (worst < 0 ? 0 : worst);

    if (guard_faults) {
        for (int r = 0; r < v->o.trials; r++) {
            if (guard_faults[r]) {
                res->outcome = ET_OUTCOME_WRONG_RESULT;
                snprintf(res->reason, sizeof res->reason,
                         "trial %d (%s): %s", r, et_verifier_dist_name(v, r),
                         guard_faults[r]);
                return;
            }
        }
    }
    if (nan_r >= 0) {
        double got = et_elem_get(outs[nan_r], ot, (size_t)nan_i);
        char what[96];
        snprintf(what, sizeof what, "is %s%s", isnan(got) ? "NaN" : "Inf",
                 isnan(got) ? " (never written?)" : "");
        describe(v, nan_r, nan_i, got, what, res->reason,
                 sizeof res->reason);
        size_t at = strlen(res->reason);
        snprintf(res->reason + at, sizeof res->reason - at,
                 "; %lld elements not finite", (long long)n_nan);
        res->outcome = ET_OUTCOME_WRONG_RESULT;
        return;
    }
    if (worst > 1) {
        double got = et_elem_get(outs[worst_r], ot, (size_t)worst_i);
        describe(v, worst_r, worst_i, got, "out of bound", res->reason,
                 sizeof res->reason);
        size_t at = strlen(res->reason);
        snprintf(res->reason + at, sizeof res->reason - at,
                 "; %lld elements out of bound", (long long)res->n_bad);
        res->outcome = ET_OUTCOME_WRONG_RESULT;
    }
}

static void mean_var(const double *x, int64_t n, double *mean, double *var)
{
    /* two passes in long double: the values span many magnitudes */
    long double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    long double m = n ? s / n : 0;
    long double q = 0;
    for (int64_t i = 0; i < n; i++)
        q += (x[i] - m) * (x[i] - m);
    *mean = (double)m;
    *var = n > 1 ? (double)(q / (n - 1)) : 0.0;
}

et_status et_verify_outputs(et_verifier *v, const void *const *outs,
                            const char *const *guard_faults,
                            et_verify_result *res)
{
    int64_t total = v->n_pick * v->o.trials;
    double *sample = malloc((size_t)(total ? total : 1) * sizeof *sample);
    if (!sample) {
        memset(res, 0, sizeof *res);
        return ET_ERR_NOMEM;
    }
    check(v, outs, guard_faults, sample, res);
    double mean, var;
    mean_var(sample, total, &mean, &var);
    free(sample);
    res->mean_norm_err = mean;
    if (res->outcome != ET_OUTCOME_OK || !v->has_base)
        return ET_OK;

    /* one-sided Welch test, H1: candidate mean > baseline mean */
    double nc = (double)total, nb = (double)v->base_n;
    double sc = var / nc, sb = v->base_var / nb;
    double se2 = sc + sb;
    double p;
    if (se2 > 0) {
        double tstat = (mean - v->base_mean) / sqrt(se2);
        double den = (nc > 1 ? sc * sc / (nc - 1) : 0) +
                     (nb > 1 ? sb * sb / (nb - 1) : 0);
        double df = den > 0 ? se2 * se2 / den : 1e9;
        p = gsl_cdf_tdist_Q(tstat, df);
    } else {
        p = mean > v->base_mean ? 0.0 : (mean == v->base_mean ? 0.5 : 1.0);
    }
    res->p_value = p;
    res->mean_ratio = v->base_mean > 0 ? mean / v->base_mean
                                       : (mean > 0 ? INFINITY : 1.0);
    if (p < v->o.alpha && res->mean_ratio >= v->o.effect) {
        res->outcome = ET_OUTCOME_WRONG_RESULT;
        snprintf(res->reason, sizeof res->reason,
                 "less accurate than the baseline: mean normalized error "
                 "%.3g vs %.3g (%.3gx), one-sided Welch p = %.3g < %g "
                 "(within the bound: max normalized error %.3g)",
                 mean, v->base_mean, res->mean_ratio, p, v->o.alpha,
                 res->max_norm_err);
    }
    return ET_OK;
}

et_status et_verifier_set_baseline(et_verifier *v, const void *const *outs,
                                   et_verify_result *res)
{
    bool had = v->has_base;
    v->has_base = false; /* the baseline is not compared with itself */
    et_status st = et_verify_outputs(v, outs, NULL, res);
    if (st != ET_OK) {
        v->has_base = had;
        return st;
    }
    if (res->outcome != ET_OUTCOME_OK) {
        v->has_base = had;
        return ET_ERR_INTERNAL;
    }
    /* recompute the sample's variance (et_verify_outputs keeps the mean) */
    int64_t total = v->n_pick * v->o.trials;
    double *sample = malloc((size_t)(total ? total : 1) * sizeof *sample);
    if (!sample) {
        v->has_base = had;
        return ET_ERR_NOMEM;
    }
    et_verify_result tmp;
    check(v, outs, NULL, sample, &tmp);
    mean_var(sample, total, &v->base_mean, &v->base_var);
    free(sample);
    v->base_n = total;
    v->has_base = true;
    return ET_OK;
}

void et_verify_summary(const et_verify_result *res, char *buf, size_t cap)
{
    /* The one-sided Welch test asks whether the candidate's mean normalized
     * error is larger than the untransformed kernel's; p is the chance of
     * a difference at least this large if it is not. A large p (0.5 when
     * both give the same errors, as most reorderings do) says nothing, so
     * it is shown only where it informs: below 0.05. A kernel fails only
     * at p < alpha (0.001) together with twice the mean error. */
    int n = snprintf(buf, cap, "verified: %d trial%s, max normalized error "
                     "%.2g (limit 1)",
                     res->trials, res->trials == 1 ? "" : "s",
                     res->max_norm_err);
    if (n < 0 || (size_t)n >= cap || isnan(res->p_value) ||
        isnan(res->mean_ratio))
        return;
    n += snprintf(buf + n, cap - (size_t)n, ", mean error %.2gx the "
                  "untransformed kernel's", res->mean_ratio);
    if (n < 0 || (size_t)n >= cap || !(res->p_value < 0.05))
        return;
    snprintf(buf + n, cap - (size_t)n, " (larger at one-sided Welch p = "
             "%.2g)", res->p_value);
}

/* ---- device side -------------------------------------------------------- */

void et_verifier_release(et_verifier *v)
{
    if (!v->dev)
        return;
    for (int r = 0; r < v->o.trials; r++) {
        trial_data *t = &v->t[r];
        for (int a = 0; a < v->n_args; a++)
            et_guarded_free(v->dev, &t->d_arg[a]);
    }
    v->dev = NULL;
    v->uploaded = false;
}

/* Bytes of argument a's array, and the first of the rows before it (0
 * for an array that is not a row). */
static size_t arg_bytes(const et_verifier *v, int a)
{
    int k = v->arg_op[a];
    et_dtype t = k < 0 ? v->e.out.dtype : v->e.op[k].dtype;
    return (size_t)et_einsum_row_elems(&v->e, k) * et_dtype_size(t);
}

static size_t arg_first(const et_verifier *v, int a)
{
    return v->arg_row[a] < 0 ? 0 : (size_t)v->arg_row[a];
}

/* Makes sure every trial's inputs are on dev (re-uploading after a worker
 * restart or a failed candidate). */
static et_status upload(et_verifier *v, et_device *dev, et_error *err)
{
    if (v->uploaded && v->dev == dev && v->epoch == et_device_epoch(dev))
        return ET_OK;
    et_verifier_release(v);
    v->dev = dev;
    v->epoch = et_device_epoch(dev);
    et_status st = ET_OK;
    for (int r = 0; r < v->o.trials && st == ET_OK; r++) {
        trial_data *t = &v->t[r];
        for (int a = 0; a < v->n_args && st == ET_OK; a++) {
            int k = v->arg_op[a];
            size_t bytes = arg_bytes(v, a);
            st = et_guarded_alloc(dev, bytes, &t->d_arg[a], err);
            if (st == ET_OK && k >= 0)
                st = et_guarded_write(
                    dev, &t->d_arg[a],
                    (const char *)t->in[k] + arg_first(v, a) * bytes, err);
        }
    }
    if (st != ET_OK) {
        et_verifier_release(v);
        return st;
    }
    v->uploaded = true;
    return ET_OK;
}

static int fill_args(const et_verifier *v, int r, et_buffer **args,
                     size_t *offsets)
{
    const trial_data *t = &v->t[r];
    for (int a = 0; a < v->n_args; a++) {
        args[a] = t->d_arg[a].buf;
        offsets[a] = t->d_arg[a].guard;
    }
    return v->n_args;
}

et_status et_verifier_args(et_verifier *v, et_device *dev, et_buffer **args,
                           size_t *offsets, int *nargs, et_error *err)
{
    et_status st = upload(v, dev, err);
    if (st != ET_OK)
        return st;
    *nargs = fill_args(v, 0, args, offsets);
    return ET_OK;
}

/* Runs p on every trial; outs[r] gets trial r's output, faults[r] a guard
 * report (or NULL), launch_s the device time of the launches after the
 * first (*n_launch of them). */
static et_status run_trials(et_verifier *v, et_device *dev, et_program *p,
                            const et_launch *geom, void **outs,
                            char (*fault_text)[512], const char **faults,
                            double *launch_s, int *n_launch, et_error *err)
{
    *n_launch = 0;
    et_status st = upload(v, dev, err);
    if (st != ET_OK)
        return st;
    et_buffer *args[ET_MAX_ARGS];
    size_t offsets[ET_MAX_ARGS];
    for (int r = 0; r < v->o.trials; r++) {
        trial_data *t = &v->t[r];
        faults[r] = NULL;
        for (int a = 0; a < v->n_args && st == ET_OK; a++)
            if (v->arg_op[a] < 0)
                st = et_guarded_fill_nan(dev, &t->d_arg[a], v->e.out.dtype,
                                         err);
        if (st != ET_OK)
            break;
        int nargs = fill_args(v, r, args, offsets);
        bool timed = r > 0 && *n_launch < ET_VERIFY_LAUNCHES;
        double s = 0;
        st = et_launch_kernel(dev, p, geom, args, offsets, nargs,
                              timed ? &s : NULL, err);
        if (st != ET_OK)
            break;
        if (timed)
            launch_s[(*n_launch)++] = s;
        for (int a = 0; a < v->n_args && st == ET_OK; a++)
            if (v->arg_op[a] < 0)
                st = et_guarded_read(dev, &t->d_arg[a],
                                     (char *)outs[r] +
                                         arg_first(v, a) * arg_bytes(v, a),
                                     err);
        if (st != ET_OK)
            break;
        /* the output's guards, then the inputs' (arguments in order) */
        for (int a = 0; a < v->n_args && !faults[r]; a++) {
            int b = v->arg_op[a];
            bool intact;
            char where[400], row[32] = "";
            st = et_guarded_check(dev, &t->d_arg[a], &intact, where,
                                  sizeof where, err);
            if (st != ET_OK)
                break;
            if (v->arg_row[a] >= 0)
                snprintf(row, sizeof row, " (row %d)", v->arg_row[a]);
            if (!intact) {
                if (b < 0)
                    snprintf(fault_text[r], sizeof fault_text[r],
                             "output%s %s", row, where);
                else
                    snprintf(fault_text[r], sizeof fault_text[r],
                             "input %d%s %s", b, row, where);
                faults[r] = fault_text[r];
            }
        }
        if (st != ET_OK)
            break;
    }
    return st;
}

static et_status verify_device(et_verifier *v, et_device *dev, et_program *p,
                               const et_launch *geom, bool baseline,
                               et_verify_result *res, et_error *err)
{
    memset(res, 0, sizeof *res);
    res->trials = v->o.trials;
    res->p_value = res->mean_ratio = NAN;
    size_t out_bytes = (size_t)v->n_out * et_dtype_size(v->e.out.dtype);
    int R = v->o.trials;
    void **outs = v->out;
    char(*fault_text)[512] = calloc((size_t)R, sizeof *fault_text);
    const char **faults = calloc((size_t)R, sizeof *faults);
    et_status st = ET_OK;
    if (!fault_text || !faults) {
        st = nomem(err);
        goto done;
    }
    for (int r = 0; r < R; r++) {
        if (!outs[r])
            outs[r] = malloc(out_bytes ? out_bytes : 1);
        if (!outs[r]) {
            st = nomem(err);
            goto done;
        }
    }
    double launch_s[ET_VERIFY_LAUNCHES];
    int n_launch = 0;
    st = run_trials(v, dev, p, geom, outs, fault_text, faults, launch_s,
                    &n_launch, err);
    if (st != ET_OK)
        goto done;
    if (baseline) {
        bool any_fault = false;
        for (int r = 0; r < R; r++)
            any_fault |= faults[r] != NULL;
        if (any_fault) {
            et_verify_outputs(v, (const void *const *)outs, faults, res);
            st = ET_ERR_INTERNAL;
        } else {
            st = et_verifier_set_baseline(v, (const void *const *)outs, res);
        }
        if (st != ET_OK)
            et_errorf(err, st, "baseline kernel fails verification: %.1000s",
                      res->reason);
    } else {
        st = et_verify_outputs(v, (const void *const *)outs, faults, res);
        if (st != ET_OK)
            nomem(err);
    }
    /* the check starts the result afresh: the launches' times after it */
    res->n_launch = n_launch;
    memcpy(res->launch_s, launch_s, (size_t)n_launch * sizeof *launch_s);
done:
    if (st != ET_OK && st != ET_ERR_INTERNAL) {
        res->outcome = et_outcome_from_status(st);
        snprintf(res->reason, sizeof res->reason, "%.1000s", err->msg);
    }
    /* a failed candidate may have written into an input: re-upload */
    if (st != ET_OK || res->outcome != ET_OUTCOME_OK)
        v->uploaded = false;
    free(fault_text);
    free(faults);
    return st;
}

et_status et_verify_kernel(et_verifier *v, et_device *dev, et_program *p,
                           const et_launch *geom, et_verify_result *res,
                           et_error *err)
{
    return verify_device(v, dev, p, geom, false, res, err);
}

et_status et_verifier_baseline_kernel(et_verifier *v, et_device *dev,
                                      et_program *p, const et_launch *geom,
                                      et_verify_result *res, et_error *err)
{
    return verify_device(v, dev, p, geom, true, res, err);
}

et_status et_evaluate_kernel(et_verifier *v, et_device *dev,
                             const char *source, const char *name,
                             const et_launch *geom,
                             const et_timing_opts *topts, et_evaluation *ev,
                             et_error *err)
{
    memset(ev, 0, sizeof *ev);
    et_program *p = NULL;
    double t0 = et_now_s();
    et_status st = et_program_build(dev, source, name, &p, err);
    double t1 = et_now_s();
    ev->build_s = t1 - t0;
    if (st != ET_OK) {
        et_result_set(&ev->result, et_outcome_from_status(st), "%.1000s",
                      err->msg);
        return st == ET_ERR_NOMEM ? st : ET_OK;
    }
    snprintf(ev->compiler_said, sizeof ev->compiler_said, "%.1000s",
             err->msg);
    /* The early cut comes first: a candidate whose first timed run (after
     * the protocol's warm-ups, on trial 0's inputs) already exceeds the
     * bound cannot be chosen, so it is not verified. Verifying it first
     * cost three launches of the slowest kernels of a search. */
    if (topts && topts->bound_s > 0) {
        et_buffer *pa[ET_MAX_ARGS];
        size_t po[ET_MAX_ARGS];
        int pn = 0;
        int warm = topts->warmups > 0 ? topts->warmups : 2;
        double s = 0;
        st = et_verifier_args(v, dev, pa, po, &pn, err);
        for (int w = 0; st == ET_OK && w < warm; w++)
            st = et_launch_kernel(dev, p, geom, pa, po, pn, NULL, err);
        if (st == ET_OK)
            st = et_launch_kernel(dev, p, geom, pa, po, pn, &s, err);
        if (st != ET_OK) {
            et_result_set(&ev->result, et_outcome_from_status(st),
                          "%.1000s", err->msg);
            ev->timing_s = et_now_s() - t1;
            goto done;
        }
        if (s > topts->bound_s) {
            ev->timing.runs = 1;
            ev->timing.median_s = ev->timing.low_s = ev->timing.high_s = s;
            ev->timing.mean_s = ev->timing.total_s = s;
            ev->timed = true; /* one run, as the protocol's own cut */
            et_result_set(&ev->result, ET_OUTCOME_SLOWER_THAN_BOUND,
                          "first timed run %.6g s exceeds the bound %.6g s "
                          "(not verified: it cannot be chosen)",
                          s, topts->bound_s);
            ev->timing_s = et_now_s() - t1;
            goto done;
        }
    }
    double tp = et_now_s();
    ev->timing_s = tp - t1;
    st = et_verify_kernel(v, dev, p, geom, &ev->verify, err);
    double t2 = et_now_s();
    ev->verify_s = t2 - tp;
    if (st != ET_OK) {
        et_result_set(&ev->result, et_outcome_from_status(st), "%.1000s",
                      err->msg);
        goto done;
    }
    ev->verified = true;
    if (ev->verify.outcome != ET_OUTCOME_OK) {
        et_result_set(&ev->result, ev->verify.outcome, "%s",
                      ev->verify.reason);
        goto done;
    }
    et_buffer *args[ET_MAX_ARGS];
    size_t offsets[ET_MAX_ARGS];
    int nargs = 0;
    st = et_verifier_args(v, dev, args, offsets, &nargs, err);
    if (st != ET_OK) {
        et_result_set(&ev->result, et_outcome_from_status(st), "%.1000s",
                      err->msg);
        goto done;
    }
    st = et_time_kernel(dev, p, geom, args, offsets, nargs, topts,
                        &ev->timing, &ev->result, err);
    ev->timing_s += et_now_s() - t2;
    ev->timed = st == ET_OK;
done:
    /* a dead worker took the program with it: freeing it is harmless */
    et_program_free(dev, p);
    return st == ET_ERR_NOMEM ? st : ET_OK;
}
