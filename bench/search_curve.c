/*
 * search_curve - runs one eintune tuning session through the library
 * (tune/tune.h, the same loop `eintune tune` runs) and records, for every
 * answered candidate, the wall time since the session started and the best
 * verified time so far: the search-efficiency curve of bench/README.md.
 *
 *   search_curve [--model on|off] EINSUM SHAPE DTYPE SEARCH BUDGET
 *                TIME_LIMIT DB OUT.csv [SPACE.yaml|-] [BEAM_WIDTH] [SEED]
 *
 * --model off turns the cost model off (docs/model.md): every candidate
 * the search proposes is timed; on (the default) is `eintune tune`'s. The
 * seeds are `eintune tune`'s defaults (docs/spaces.md, "Seeds"): up to 3
 * from DB, then the structure's.
 * SEARCH is beam, random or grid; TIME_LIMIT in seconds (0: none); DB the
 * tuning database (a scratch file for fresh results); SPACE '-' or absent:
 * the built-in action pool, as `eintune tune` without --space. The
 * session's start (t = 0) is just before et_tune_run, so the times include
 * the untransformed baseline's verification and timing, every candidate's
 * build, verification and timing, and the search's own bookkeeping.
 *
 * OUT.csv columns: t_s, answered, status, cached, cand_time_s, best_time_s,
 * opts. A summary JSON object goes to stdout: evaluations, cached,
 * elapsed_s, best {opts, time_s}, stop_reason, model {on, used, samples,
 * db_samples, ranked, skipped}.
 */
#include "einsum/einsum.h"
#include "db/db.h"
#include "measure/remote.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct curve {
    FILE *f;
    double t0;
} curve;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int on_progress(void *arg, int done, int budget,
                       const et_tune_candidate *c,
                       const et_tune_candidate *best)
{
    (void)budget;
    curve *cv = arg;
    fprintf(cv->f, "%.3f,%d,%s,%d,%.9g,%.9g,\"", now_s() - cv->t0, done,
            et_outcome_name(c->outcome), c->cached ? 1 : 0,
            c->timed ? c->timing.median_s : NAN,
            best ? best->timing.median_s : NAN);
    for (const char *p = c->opts; *p; p++)
        if (*p != '"')
            fputc(*p, cv->f);
    fputs("\"\n", cv->f);
    fflush(cv->f);
    return 0;
}

static void on_log(void *arg, et_tune_level lvl, const char *msg)
{
    (void)arg;
    if (lvl >= ET_TUNE_WARN)
        fprintf(stderr, "search_curve: %s\n", msg);
}

/* JSON numbers: non-finite values as null. */
static void num(const char *key, double v)
{
    if (isfinite(v))
        printf(", \"%s\": %.9g", key, v);
    else
        printf(", \"%s\": null", key);
}

/* The final race, as the bench's JSON keeps it (the chosen kernel, its
 * lead over the runner-up and the speed-up over the untransformed kernel,
 * each with its 95 % interval, and every entry's median). */
static void print_race(const et_tune_race *R)
{
    printf(", \"race\": {\"ran\": %s, \"note\": \"%s\"",
           R->ran ? "true" : "false", R->note);
    if (R->ran) {
        printf(", \"rounds\": %d, \"verdict\": \"%s\"", R->rounds,
               et_race_verdict_name(R->verdict));
        if (R->chosen >= 0)
            printf(", \"chosen\": \"%s\"", R->e[R->chosen].opts);
        num("faster_pct", R->faster_pct);
        num("faster_lo", R->faster_lo);
        num("faster_hi", R->faster_hi);
        num("speedup", R->speedup);
        num("speedup_lo", R->speedup_lo);
        num("speedup_hi", R->speedup_hi);
        printf(", \"entries\": [");
        for (int i = 0; i < R->n; i++)
            printf("%s{\"opts\": \"%s\", \"untransformed\": %s, "
                   "\"median_s\": %.9g, \"low_s\": %.9g, "
                   "\"high_s\": %.9g}", i ? ", " : "", R->e[i].opts,
                   R->e[i].untransformed ? "true" : "false",
                   R->e[i].timing.median_s, R->e[i].timing.low_s,
                   R->e[i].timing.high_s);
        printf("]");
    }
    printf("}");
}

int main(int argc, char **argv)
{
    int model = 0;
    if (argc > 2 && strcmp(argv[1], "--model") == 0) {
        if (strcmp(argv[2], "on") && strcmp(argv[2], "off")) {
            fprintf(stderr, "search_curve: --model must be on or off, not "
                    "'%s'\n", argv[2]);
            return 2;
        }
        model = strcmp(argv[2], "off") ? 0 : -1;
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    if (argc < 9) {
        fprintf(stderr,
                "usage: search_curve [--model on|off] EINSUM SHAPE DTYPE "
                "beam|random|grid BUDGET TIME_LIMIT DB OUT.csv [SPACE|-] "
                "[BEAM_WIDTH] [SEED]\n");
        return 2;
    }
    const char *text = argv[1], *shape = argv[2], *dtype = argv[3];
    const char *space_path = argc > 9 && strcmp(argv[9], "-") ? argv[9]
                                                               : NULL;
    et_tune_opts to;
    memset(&to, 0, sizeof to);
    if (et_search_parse(argv[4], &to.search.kind) != 0) {
        fprintf(stderr, "search_curve: bad search '%s'\n", argv[4]);
        return 2;
    }
    to.search.budget = atoi(argv[5]);
    to.search.time_limit_s = atof(argv[6]);
    if (argc > 10)
        to.search.beam_width = atoi(argv[10]);
    if (argc > 11)
        to.search.seed = strtoull(argv[11], NULL, 10);
    to.verify.seed = to.search.seed;
    to.race_k = 3; /* the final race, as `eintune tune` runs it */
    to.model = model;
    /* the seeds `eintune tune` proposes by default: up to 3 from the
     * nearest tuned problems in the database, then the structure's */
    to.seeds = 3;
    to.structural_seeds = 1;

    static et_subscripts sub;
    static et_shape_spec sp;
    static et_einsum e;
    et_dtype dt[ET_MAX_OPERANDS];
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_subscripts_parse(text, &sub, &d) != ET_OK ||
        et_shape_spec_parse(shape, &sp, &d) != ET_OK ||
        et_dtype_spec_parse(dtype, sub.n_ops, dt, &d) != ET_OK ||
        et_einsum_resolve(&sub, &sp, NULL, dt, &e, &d) != ET_OK) {
        fprintf(stderr, "search_curve: bad einsum, shape or dtype: %s\n",
                d.msg);
        return 2;
    }
    et_space *space = NULL;
    et_status st =
        space_path ? et_space_load(space_path, &space, &d)
                   : et_space_load_text(et_builtin_space_yaml,
                                        strlen(et_builtin_space_yaml),
                                        "<built-in space>", &space, &d);
    if (st != ET_OK) {
        fprintf(stderr, "search_curve: %s\n", d.msg);
        return 2;
    }
    curve cv = {0};
    cv.f = fopen(argv[8], "w");
    if (!cv.f) {
        perror(argv[8]);
        return 1;
    }
    fputs("t_s,answered,status,cached,cand_time_s,best_time_s,opts\n", cv.f);

    int status = 1;
    et_db *db = NULL;
    et_device *dev = NULL;
    et_binding *b = NULL;
    et_tune_result res;
    memset(&res, 0, sizeof res);
    res.best = -1;
    et_error err;
    memset(&err, 0, sizeof err);
    if (et_device_open_isolated(NULL, NULL, &dev, &err) != ET_OK ||
        et_db_open(argv[7], &db, &err) != ET_OK) {
        fprintf(stderr, "search_curve: %s\n", err.msg);
        goto out;
    }
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)space->hash);
    if (et_db_space_id(db, space->name, hash, &to.db_space_id, &err) !=
        ET_OK) {
        fprintf(stderr, "search_curve: %s\n", err.msg);
        goto out;
    }
    to.db = db;
    if (et_space_bind(space, &e, &dev->info.target, &b, &d) != ET_OK) {
        fprintf(stderr, "search_curve: %s\n", d.msg);
        goto out;
    }
    to.log = on_log;
    to.progress = on_progress;
    to.arg = &cv;
    cv.t0 = now_s();
    if (et_tune_run(dev, b, &to, &res, &err) != ET_OK) {
        fprintf(stderr, "search_curve: %s\n", err.msg);
        goto out;
    }
    printf("{\"einsum\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", "
           "\"search\": \"%s\", \"space\": \"%s\", \"beam_width\": %d, "
           "\"budget\": %d, \"time_limit_s\": %g, \"evaluations\": %d, "
           "\"cached\": %d, \"elapsed_s\": %.3f, \"stop_reason\": \"%s\", "
           "\"baseline_time_s\": %.9g",
           text, shape, dtype, et_search_name(to.search.kind), space->name,
           to.search.beam_width ? to.search.beam_width : 4,
           to.search.budget, to.search.time_limit_s, res.evaluations,
           res.cached, res.elapsed_s, res.stop_reason,
           res.baseline.median_s);
    if (res.best >= 0)
        printf(", \"best\": {\"opts\": \"%s\", \"time_s\": %.9g}",
               res.cand[res.best].opts, res.cand[res.best].timing.median_s);
    print_race(&res.race);
    printf(", \"model\": {\"on\": %s, \"used\": %s, \"samples\": %d, "
           "\"db_samples\": %d, \"ranked\": %d, \"skipped\": %d}",
           res.model.on ? "true" : "false", res.model.used ? "true" : "false",
           res.model.fitted_on, res.model.db_samples, res.model.ranked,
           res.model.skipped);
    printf("}\n");
    status = res.best >= 0 ? 0 : 1;
out:
    fclose(cv.f);
    et_tune_result_free(&res);
    et_binding_free(b);
    if (dev)
        et_device_close(dev);
    et_db_close(db);
    et_space_free(space);
    return status;
}
