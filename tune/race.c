/*
 * race.c - the final race of a tuning run (see tune.h and
 * docs/measurement.md): the fastest distinct candidates and, where the
 * time limit leaves room, the untransformed kernel picked, as many rounds
 * as the limit leaves, the kernels timed round robin on one device, the
 * verdict of et_race_decide taken as the run's best, and the race
 * recorded in the database.
 */
#include "tune/tune_impl.h"

#include "base/clock.h"
#include "transforms/kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Renders, for the race, the base kernel with opts text applied. */
static et_status race_render(tune_ctx *t, const char *opts, et_rendered *rend,
                             int *n_opts)
{
    const et_kernel *base = et_binding_base(t->b);
    et_kernel *k = et_kernel_clone(base);
    et_opt *ol = calloc(ET_MAX_OPTS, sizeof *ol);
    et_status st = k && ol ? ET_OK : ET_ERR_NOMEM;
    int n = 0;
    char why[512] = "";
    if (st == ET_OK && opts[0]) {
        et_diag d = {0};
        st = et_opts_parse(opts, ol, ET_MAX_OPTS, &n, &d);
        if (st == ET_OK)
            st = et_kernel_apply_opts(k, ol, n, why, sizeof why);
        if (st != ET_OK)
            et_errorf(t->err, st, "race: opts %s: %s", opts,
                      why[0] ? why : d.msg);
    }
    if (st == ET_OK)
        st = et_kernel_render(k, t->backend, NULL, rend);
    *n_opts = n;
    et_kernel_free(k);
    free(ol);
    return st;
}

et_status et_tune_race_time(et_device *dev, et_verifier *ver,
                            const et_tune_race_kernel *k, int n, int warmups,
                            int rounds, double max_seconds, double *times,
                            int *done, int *failed, et_error *err)
{
    et_program *progs[ET_RACE_MAX] = {NULL};
    et_launch geoms[ET_RACE_MAX];
    *done = 0;
    *failed = -1;
    if (n < 1 || n > ET_RACE_MAX)
        return et_errorf(err, ET_ERR_INPUT, "race: %d kernels (1 to %d)", n,
                         ET_RACE_MAX);
    et_status st = ET_OK;
    for (int i = 0; i < n && st == ET_OK; i++) {
        geoms[i] = k[i].geom;
        st = et_program_build(dev, k[i].source, k[i].name, &progs[i], err);
        if (st != ET_OK)
            *failed = i;
    }
    et_buffer *args[ET_MAX_ARGS];
    size_t offsets[ET_MAX_ARGS];
    int nargs = 0;
    if (st == ET_OK)
        st = et_verifier_args(ver, dev, args, offsets, &nargs, err);
    if (st == ET_OK)
        st = et_time_round_robin(dev, progs, geoms, n, args, offsets, nargs,
                                 warmups, rounds, max_seconds, times, done,
                                 failed, err);
    for (int i = 0; i < n; i++)
        if (progs[i])
            et_program_free(dev, progs[i]);
    return st;
}

/* The race's estimated wall time for np candidates, and the untransformed
 * kernel when base_s > 0, over `rounds` rounds: a build each (as the
 * search's took) and its two untimed launches (three medians: a first
 * launch compiles on some devices), then the rounds (the kernels' known
 * medians and a launch's round trip). */
static double race_cost(const et_tune_result *res, const int *pick, int np,
                        double base_s, int rounds)
{
    double build = res->evaluations > 0 ? res->build_s / res->evaluations
                                        : 1.0;
    double round = base_s > 0 ? base_s + 0.002 : 0;
    for (int i = 0; i < np; i++)
        round += res->cand[pick[i]].timing.median_s + 0.002;
    int n = np + (base_s > 0);
    return n * (build + 0.01) + 3 * round + rounds * round;
}

static void race_record(tune_ctx *t)
{
    et_tune_race *R = &t->res->race;
    et_db_race *dr = calloc(1, sizeof *dr);
    if (!dr)
        return;
    et_error e2 = {{0}};
    dr->einsum_id = t->einsum_id;
    dr->device_id = t->device_id;
    tune_copy_str(dr->einsum_text, sizeof dr->einsum_text,
                  et_binding_einsum(t->b)->text);
    dr->rounds = R->rounds;
    dr->conf = R->conf;
    tune_copy_str(dr->verdict, sizeof dr->verdict,
                  et_race_verdict_name(R->verdict));
    tune_copy_str(dr->chosen_opts, sizeof dr->chosen_opts,
                  R->e[R->chosen].opts);
    if (R->runner_up >= 0)
        tune_copy_str(dr->runner_up_opts, sizeof dr->runner_up_opts,
                      R->e[R->runner_up].opts);
    dr->faster_pct = R->runner_up >= 0 ? R->faster_pct : NAN;
    dr->faster_lo = R->runner_up >= 0 && isfinite(R->faster_lo) ? R->faster_lo
                                                                 : NAN;
    dr->faster_hi = R->runner_up >= 0 && isfinite(R->faster_hi) ? R->faster_hi
                                                                 : NAN;
    dr->speedup = R->speedup;
    dr->speedup_lo = isfinite(R->speedup_lo) ? R->speedup_lo : NAN;
    dr->speedup_hi = isfinite(R->speedup_hi) ? R->speedup_hi : NAN;
    dr->load_1m = et_tune_load_1m();
    dr->n = R->n;
    for (int i = 0; i < R->n; i++) {
        const et_tune_race_entry *e = &R->e[i];
        et_db_race_entry *d = &dr->e[i];
        tune_copy_str(d->opts, sizeof d->opts, e->opts);
        tune_copy_str(d->kernel_name, sizeof d->kernel_name, e->kernel);
        tune_copy_str(d->source_hash, sizeof d->source_hash, e->source_hash);
        d->untransformed = e->untransformed;
        d->chosen = i == R->chosen;
        d->tied = e->tied;
        d->median_s = e->timing.median_s;
        d->low_s = e->timing.low_s;
        d->high_s = e->timing.high_s;
        d->cv = e->timing.cv;
        d->times = R->times + i;
        d->stride = R->n;
    }
    et_status st = t->o->store
                       ? t->o->store->race(t->o->store->ctx, dr, &e2)
                       : et_db_race_record(t->o->db, dr, &R->db_id, &e2);
    if (st != ET_OK)
        tune_say(t, ET_TUNE_WARN, "the race is not recorded in the "
                 "database: %s", e2.msg);
    free(dr);
}

/* The race_k fastest distinct candidates that passed, the untransformed
 * kernel left out (it races anyway), into p->pick; the untransformed
 * kernel's own candidate, when it passed, into p->base_cand. */
static void race_pick(const tune_ctx *t, et_tune_race_plan *p)
{
    const et_tune_result *res = t->res;
    uint64_t base_key = et_kernel_dedupe_key(et_binding_base(t->b),
                                             t->backend);
    int k = t->o->race_k < ET_RACE_MAX - 1 ? t->o->race_k : ET_RACE_MAX - 1;
    p->np = 0;
    p->base_cand = -1;
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *c = &res->cand[i];
        if (c->outcome == ET_OUTCOME_OK && c->duplicate_of < 0 &&
            c->key == base_key && p->base_cand < 0)
            p->base_cand = i;
    }
    while (p->np < k) {
        int b = -1;
        for (int i = 0; i < res->n_cand; i++) {
            const et_tune_candidate *c = &res->cand[i];
            if (c->outcome != ET_OUTCOME_OK || c->duplicate_of >= 0 ||
                c->key == base_key)
                continue;
            bool taken = false;
            for (int j = 0; j < p->np; j++)
                taken = taken || res->cand[p->pick[j]].key == c->key;
            if (!taken &&
                (b < 0 || c->timing.median_s < res->cand[b].timing.median_s))
                b = i;
        }
        if (b < 0)
            break;
        p->pick[p->np++] = b;
    }
}

/* Drops p's slowest candidates, down to `floor`, while min_rounds rounds
 * (with the untransformed kernel when p->with_base) exceed p->allow;
 * whether they fit then. */
static bool race_shrink(const et_tune_result *res, et_tune_race_plan *p,
                        int floor, int min_rounds)
{
    double base_s = p->with_base ? p->base_s : 0;
    while (p->np > floor &&
           race_cost(res, p->pick, p->np, base_s, min_rounds) > p->allow)
        p->np--;
    return race_cost(res, p->pick, p->np, base_s, min_rounds) <= p->allow;
}

bool et_tune_race_fit(const et_tune_result *res, et_tune_race_plan *p,
                      int want, char *note, size_t cap)
{
    int min_rounds = want < ET_RACE_MIN_ROUNDS ? want : ET_RACE_MIN_ROUNDS;
    int np0 = p->np;
    p->with_base = true;
    bool fits = p->limit <= 0 || race_shrink(res, p, 2, min_rounds);
    if (!fits && np0 >= 2 &&
        p->base_s > res->cand[p->pick[np0 - 1]].timing.median_s) {
        p->np = np0;
        p->with_base = false;
        fits = race_shrink(res, p, 2, min_rounds);
    }
    if (!fits) {
        p->with_base = true;
        fits = race_shrink(res, p, 1, min_rounds);
    }
    double base_s = p->with_base ? p->base_s : 0;
    note[0] = '\0';
    if (!fits) {
        snprintf(note, cap, "no final race: the time limit leaves %.1f s, "
                 "%d rounds need about %.1f s", p->allow > 0 ? p->allow : 0,
                 min_rounds,
                 race_cost(res, p->pick, p->np, base_s, min_rounds));
        return false;
    }
    p->rounds = want;
    while (p->rounds > min_rounds &&
           race_cost(res, p->pick, p->np, base_s, p->rounds) > p->allow)
        p->rounds--;
    int dropped = np0 - p->np, len = 0;
    if (dropped)
        len = snprintf(note, cap, "%d candidate%s left out of the race to "
                       "fit the time limit", dropped,
                       dropped == 1 ? "" : "s");
    if (!p->with_base && len >= 0 && (size_t)len < cap)
        snprintf(note + len, cap - (size_t)len,
                 "%sthe untransformed kernel (%.4g ms in the search, "
                 "slower than every candidate) left out of the race to fit "
                 "the time limit", len ? "; " : "", p->base_s * 1e3);
    return true;
}

/* The plan's time (what the time limit leaves, else a quarter of the run
 * so far, 10 s at least) and what fits in it (et_tune_race_fit); false,
 * with a warning, when nothing does. */
static bool race_fit(tune_ctx *t, et_tune_race_plan *p, double t_run0)
{
    et_tune_result *res = t->res;
    et_tune_race *R = &res->race;
    p->base_s = p->base_cand >= 0 ? res->cand[p->base_cand].timing.median_s
                                  : res->baseline.median_s;
    double elapsed = et_now_s() - t_run0;
    p->limit = t->o->search.time_limit_s;
    p->allow = p->limit > 0 ? p->limit - elapsed
                            : fmax(10.0, 0.25 * elapsed);
    int want = t->o->race_rounds > 0 ? t->o->race_rounds : ET_RACE_ROUNDS;
    if (et_tune_race_fit(res, p, want, R->note, sizeof R->note))
        return true;
    tune_say(t, ET_TUNE_WARN, "%s; the figures are the search's own",
             R->note);
    return false;
}

/*
 * The race's kernels (the candidates fastest first, the untransformed
 * last) into race's entries, rendered and timed round robin, on the
 * device or on one evaluator (o->exec), into race.times; r0 is when the
 * race began. n_opts and eligible get each kernel's, done the rounds
 * timed, failed the kernel that failed (-1: none); e2 the reason of a
 * failed timing.
 */
static et_status race_time(tune_ctx *t, const et_tune_race_plan *p,
                           double r0, int *n_opts, bool *eligible,
                           int *done, int *failed, et_error *e2)
{
    et_tune_result *res = t->res;
    et_tune_race *R = &res->race;
    int np = p->np, n = np + p->with_base;
    et_rendered rends[ET_RACE_MAX];
    et_tune_race_kernel ks[ET_RACE_MAX];
    memset(rends, 0, sizeof rends);
    memset(ks, 0, sizeof ks);
    et_status st = ET_OK;
    R->n = n;
    R->baseline = p->with_base ? np : -1;
    for (int i = 0; i < n && st == ET_OK; i++) {
        et_tune_race_entry *e = &R->e[i];
        e->untransformed = p->with_base && i == np;
        e->cand = e->untransformed ? p->base_cand : p->pick[i];
        e->eligible = e->cand >= 0;
        eligible[i] = e->eligible;
        tune_copy_str(e->opts, sizeof e->opts,
                      e->untransformed ? "" : res->cand[p->pick[i]].opts);
        st = race_render(t, e->opts, &rends[i], &e->n_opts);
        if (st != ET_OK)
            break;
        n_opts[i] = e->n_opts;
        tune_copy_str(e->kernel, sizeof e->kernel, rends[i].name);
        et_db_source_hash(rends[i].source, &rends[i].launch, e->source_hash);
        ks[i].source = rends[i].source;
        ks[i].name = rends[i].name;
        ks[i].geom = rends[i].launch;
    }
    *done = 0;
    *failed = -1;
    R->times = st == ET_OK ? calloc((size_t)n * (size_t)p->rounds,
                                    sizeof *R->times)
                           : NULL;
    if (st == ET_OK && !R->times)
        st = ET_ERR_NOMEM;
    if (st == ET_OK) {
        const et_tune_exec *x = t->o->exec;
        double max_s = p->limit > 0
                           ? fmax(1e-3, p->allow - (et_now_s() - r0))
                           : 0;
        tune_say(t, ET_TUNE_INFO, "final race: %d candidate%s%s, %d "
                 "rounds round robin", np, np == 1 ? "" : "s",
                 p->with_base ? " and the untransformed kernel" : "",
                 p->rounds);
        if (x)
            st = x->race(x->ctx, ks, n, 2, p->rounds, max_s, R->times, done,
                         failed, &R->rank, e2);
        else
            st = et_tune_race_time(t->dev, t->ver, ks, n, 2, p->rounds,
                                   max_s, R->times, done, failed, e2);
    }
    for (int i = 0; i < n; i++)
        et_rendered_free(&rends[i]);
    return st;
}

/*
 * The verdict on the n kernels' done rounds (et_race_decide): the race's
 * figures, its choice as the run's best and the race's untransformed
 * figure as the baseline, a log line per kernel, the record in the
 * database. r0 is when the race began.
 */
static et_status race_decide(tune_ctx *t, int n, int done,
                             const int *n_opts, const bool *eligible,
                             double r0, et_error *e2)
{
    et_tune_result *res = t->res;
    et_tune_race *R = &res->race;
    et_race_stats *S = malloc(sizeof *S);
    if (!S)
        return et_errorf(t->err, ET_ERR_NOMEM, "race: out of memory");
    et_status st = et_race_decide(R->times, n, done, n_opts, eligible, 0.95,
                                  S, e2);
    if (st != ET_OK) {
        free(S);
        snprintf(R->note, sizeof R->note, "no final race: %.200s", e2->msg);
        tune_say(t, ET_TUNE_WARN, "%s", R->note);
        return st == ET_ERR_NOMEM ? et_errorf(t->err, st, "%s", e2->msg)
                                  : ET_OK;
    }
    R->ran = true;
    R->conf = S->conf;
    R->pair_conf = S->pair_conf;
    R->verdict = S->verdict;
    R->fastest = S->fastest;
    R->runner_up = S->runner_up;
    R->chosen = S->chosen;
    for (int i = 0; i < n; i++) {
        R->e[i].timing = S->timing[i];
        R->e[i].tied = S->tied[i];
    }
    if (R->runner_up >= 0)
        et_race_faster_pct(S, R->fastest, R->runner_up, &R->faster_pct,
                           &R->faster_lo, &R->faster_hi);
    R->tie_with = -1;
    if (R->verdict == ET_RACE_TIED) {
        R->tie_with = R->chosen;
        if (R->chosen == R->fastest)
            for (int i = 0; i < n; i++)
                if (i != R->fastest && S->tied[i] &&
                    (R->tie_with == R->fastest ||
                     S->timing[i].median_s <
                         S->timing[R->tie_with].median_s))
                    R->tie_with = i;
        et_race_faster_pct(S, R->fastest, R->tie_with, &R->tie_pct,
                           &R->tie_lo, &R->tie_hi);
    }
    int c = R->chosen, b = R->baseline;
    if (b >= 0) {
        R->speedup = exp(-S->lr[c][b]);
        R->speedup_lo = c == b ? 1 : exp(-S->lr_hi[c][b]);
        R->speedup_hi = c == b ? 1 : exp(-S->lr_lo[c][b]);
        res->baseline = R->e[b].timing;
    } else {
        /* the search's untransformed figure against the race's: timed
         * apart, so no interval */
        R->speedup = res->baseline.median_s / R->e[c].timing.median_s;
        R->speedup_lo = R->speedup_hi = NAN;
    }
    free(S);
    R->elapsed_s = et_now_s() - r0;

    res->best = R->e[c].cand;
    char line[256];
    for (int i = 0; i < n; i++) {
        et_timing_format(&R->e[i].timing, line, sizeof line);
        tune_say(t, ET_TUNE_INFO, "race %s: %s",
                 R->e[i].opts[0] ? R->e[i].opts : "untransformed", line);
    }
    if (t->o->db || t->o->store)
        race_record(t);
    return ET_OK;
}

et_status tune_race_run(tune_ctx *t, double t_run0)
{
    et_tune_race *R = &t->res->race;
    R->fastest = R->runner_up = R->chosen = R->baseline = -1;
    if (t->o->race_k <= 0) {
        snprintf(R->note, sizeof R->note, "no final race (turned off)");
        return ET_OK;
    }
    if (tune_stopping(t)) {
        snprintf(R->note, sizeof R->note, "no final race (interrupted)");
        return ET_OK;
    }
    et_tune_race_plan p;
    memset(&p, 0, sizeof p);
    race_pick(t, &p);
    if (p.np == 0) {
        snprintf(R->note, sizeof R->note, "no final race: %s",
                 p.base_cand >= 0 ? "only the untransformed kernel passed"
                                  : "no candidate passed");
        return ET_OK;
    }
    if (!race_fit(t, &p, t_run0))
        return ET_OK;

    double r0 = et_now_s();
    int n_opts[ET_RACE_MAX], done = 0, failed = -1;
    bool eligible[ET_RACE_MAX];
    et_error e2 = {{0}};
    et_status st = race_time(t, &p, r0, n_opts, eligible, &done, &failed,
                             &e2);
    R->rounds_planned = p.rounds;
    R->rounds = done;
    if (st == ET_ERR_NOMEM)
        return et_errorf(t->err, st, "race: out of memory");
    if (st != ET_OK) {
        snprintf(R->note, sizeof R->note, "no final race: %s%s%.200s",
                 failed >= 0 ? R->e[failed].kernel : "",
                 failed >= 0 ? ": " : "", e2.msg);
        tune_say(t, ET_TUNE_WARN, "%s; the figures are the search's own",
                 R->note);
        return ET_OK;
    }
    return race_decide(t, p.np + p.with_base, done, n_opts, eligible, r0,
                       &e2);
}
