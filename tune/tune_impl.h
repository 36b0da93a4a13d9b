/*
 * tune_impl.h - internal to the files of a tuning run (tune/tune.c,
 * tune/seeds.c, tune/race.c): the run's context and the functions one of
 * them calls in another (prefixed tune_). Not part of the API; nothing
 * outside tune/ includes it.
 *
 * Files, by what they own:
 *   tune.c     the loop: baseline, the search's callbacks wired to
 *              measurement and the database, worker recycling, the
 *              executor's batches, the cost model, the run's summary
 *   seeds.c    the seeds of a run: the nearest tuned problems' opts
 *              from the database and those the einsum's structure suggests
 *   race.c     the final race: its candidates, its time, its rounds, its
 *              verdict and its record in the database
 *   awkward.c  the awkward sizes of an open axis (tune.h; needs no
 *              context)
 */
#ifndef ET_TUNE_IMPL_H
#define ET_TUNE_IMPL_H

#include "transforms/heuristic.h"
#include "tune/best.h"
#include "tune/learn.h"
#include "tune/tune.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tune_ctx {
    et_device *dev;
    const et_binding *b;
    const et_tune_opts *o;
    et_tune_result *res;
    et_verifier *ver;
    et_error *err;
    et_status fatal;          /* a host failure that stops the search */
    int64_t einsum_id;        /* rows in the database (when o->db) */
    int64_t device_id;
    bool cancelled;           /* the progress callback asked to stop */
    et_backend_kind backend;  /* of the device the kernels are for */
    et_rendered best_rend;    /* with an executor: the winner so far */
    double t0;                /* when the run started (et_now_s) */
    /* an open axis: the awkward sizes every verified candidate is checked
     * at too (1 and a prime), with their verifiers */
    et_tune_awkward awk;
    /* seeding: the search's seed i is res->seeds[seed_entry[i]], its
     * opts in seed_best[i] */
    int seed_entry[ET_SEARCH_MAX_SEEDS];
    et_best *seed_best;
    int n_seeds;              /* the search's seeds */
    bool row_ntstore;         /* a batched einsum's row seed has NTSTORE */
    /* the structural seeds' opts (start opts + a suggestion) */
    et_opt heur[ET_HEURISTIC_MAX][ET_MAX_OPTS];
    /* the cost model, when on (learn.h) */
    bool learning;
    et_tune_learn learn;
} tune_ctx;

/* ---- tune.c ---- */

/* A line of the run's log (o->log), printf-style; nothing without one. */
void tune_say(const tune_ctx *t, et_tune_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* src (NULL: "") into dst of cap bytes, cut to fit. */
void tune_copy_str(char *dst, size_t cap, const char *src);

/* 1 when the search is to stop after the candidate in flight. */
int tune_stopping(const tune_ctx *t);

/* ---- seeds.c ---- */

/* A seed's candidate: marked with its entry, and the entry with it. */
void tune_mark_seed(tune_ctx *t, et_tune_candidate *tc,
                    const et_candidate *c);

/* The search's on_seed_dropped (user: the tune_ctx). */
void tune_seed_dropped(void *user, int i, const char *reason);

/*
 * The seeds of a run: up to o->seeds best opts of the nearest tuned
 * problems on this device (et_best_nearest), into ss (the opts live in
 * t->seed_best). A database that cannot answer costs the run its seeds,
 * not the run: a warning, and no seeds.
 */
et_status tune_seeds_find(tune_ctx *t, const et_device_info *info,
                          et_search_seed *ss, int *n);

/*
 * The structural seeds (transforms/heuristic.h): the start opts and each
 * suggestion of the rules for the start kernel, appended to ss after the
 * n seeds already there (at most ET_SEARCH_MAX_SEEDS in all).
 */
et_status tune_seeds_structural(tune_ctx *t, et_search_seed *ss, int *n);

/* ---- race.c ---- */

/*
 * The final race (tune.h, docs/measurement.md); t_run0 is when the run
 * started. Fills res->race; a race that cannot run leaves race.ran false
 * with the reason in race.note and the search's figures stand. Returns an
 * error only for a host failure.
 */
et_status tune_race_run(tune_ctx *t, double t_run0);

#endif
