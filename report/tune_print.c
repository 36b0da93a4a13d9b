/*
 * tune_print.c - a tuning run's printed report (report.h,
 * et_tune_report_print): the problem, the device and its ranks, the
 * search and where its time went, the seeds, the cost model, the final
 * race and its verdict, the untransformed kernel, the best with its
 * timing, verification and roofline.
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

/* "2024-05-01 14:03" (local time) of a Unix time. */
static void date_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&tt, &tm) ||
        !strftime(buf, cap, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, cap, "an unknown date");
}

/* "95 % interval [lo, hi]" of a lead in the race, or why there is
 * none. */
static void interval_text(double lo, double hi, char *buf, size_t cap)
{
    if (isfinite(lo) && isfinite(hi))
        snprintf(buf, cap, "95 %% interval [%.1f, %.1f]", lo, hi);
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
        interval_text(R->faster_lo, R->faster_hi, iv, sizeof iv);
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
        interval_text(R->tie_lo, R->tie_hi, iv, sizeof iv);
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

/* The lines of the search: its space and stop, the candidates, the
 * seeds, the cost model and where the time went. */
static void print_search(const et_tune_report *r, FILE *f)
{
    const et_tune_result *res = &r->res;
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
}

/* The best's time line: the race's median, or the search's from the
 * database or this run, and the speed-up when it means something. */
static void print_best_time(const et_tune_result *res, FILE *f)
{
    const et_tune_candidate *best = &res->cand[res->best];
    const et_timing *bt = report_tune_best_timing(res);
    fprintf(f, "time        %.4g ms [%.4g, %.4g]", bt->median_s * 1e3,
            bt->low_s * 1e3, bt->high_s * 1e3);
    double ci[2];
    double sp = report_tune_speedup(res, ci);
    if (res->race.ran) {
        if (report_tune_baseline_raced(res))
            fprintf(f, " (race), %.3gx the untransformed kernel (95 %% "
                       "interval [%.3g, %.3g])\n", sp, ci[0], ci[1]);
        else
            fprintf(f, " (race), %.3gx the untransformed kernel (its time "
                       "from the search, which it did not race: no "
                       "interval)\n", sp);
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
}

/* The best's lines: its opts and params, time, re-timing, verification
 * and roofline. */
static void print_best(const et_tune_report *r, FILE *f)
{
    const et_tune_result *res = &r->res;
    const et_tune_candidate *best = &res->cand[res->best];
    char ptext[512];
    et_tune_params_text(best->params, ptext, sizeof ptext);
    fprintf(f, "best        %s\n",
            best->opts[0] ? best->opts : "untransformed");
    if (ptext[0])
        fprintf(f, "params      %s\n", ptext);
    print_best_time(res, f);
    if (res->retimed && res->retime_outcome == ET_OUTCOME_OK)
        fprintf(f, "re-timed    %.4g ms [%.4g, %.4g] on rank %d\n",
                res->retime.median_s * 1e3, res->retime.low_s * 1e3,
                res->retime.high_s * 1e3, res->retime_rank);
    char vl[256];
    et_verify_summary(&best->verify, vl, sizeof vl);
    fprintf(f, "%s\n\n", vl);
    if (r->have_roof)
        et_roofline_table(f, &r->roof,
                          report_tune_best_timing(res)->median_s);
    if (r->roof_note[0])
        fprintf(f, "note: %s\n", r->roof_note);
}

void report_tune_print(const et_tune_report *r, FILE *f)
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
    print_search(r, f);
    if (res->race.ran)
        print_race(&res->race, r->n_ranks, f);
    else if (res->race.note[0])
        fprintf(f, "race        %s\n", res->race.note);
    fprintf(f, "untransformed %.4g ms (%s)\n", res->baseline.median_s * 1e3,
            report_tune_baseline_raced(res) ? "race" : "timed in this run");
    if (res->best >= 0)
        print_best(r, f);
    else
        fprintf(f, "best        none: no candidate passed\n");
}
