/*
 * search.h - searches over a bound space: random, grid, beam
 * (docs/spaces.md, "Searches").
 *
 * A search never touches a device. It proposes candidates (a point of the
 * parametric space and/or a sequence of actions, always with the opt list
 * and the kernel they give) and learns their cost from an evaluate
 * callback, which the tuning loop (tune/) wires to measurement and the
 * database, and which tests replace with a synthetic cost function.
 *
 * Contract of the callback:
 *   - called once per distinct kernel (de-duplicated by the rendered source
 *     up to its comments and the names it gives, plus the launch geometry:
 *     UPCAST(j,0) UPCAST(j,0) is UPCAST(j,0)); later proposals of a kernel
 *     seen go to the optional on_duplicate callback instead;
 *   - c->refused true: the search found the point refused (an opt broke a
 *     validity rule, or an expression failed) and tells the callback so it
 *     can record it with c->reason; nothing to time, the answer is ignored
 *     and the budget is not charged. Points whose constraints are false are
 *     not candidates and are never reported; neither are actions of a pool
 *     that do not apply to a beam member (they are counted in the stats);
 *   - otherwise the callback fills r: status OK with time_s (seconds, lower
 *     is better) or a failure with its reason, and cached when the answer
 *     came from a database rather than a timing in this run. c->bound_s is
 *     the early-cut bound (cut factor x best time so far, INFINITY before
 *     the first success): timing may stop once a candidate is surely slower
 *     and answer ET_EVAL_FAILED with its own outcome code;
 *   - returns 0 to go on, anything else to stop the search at once.
 * Every answered candidate counts against the budget. The same binding,
 * options and callback answers give the same sequence of candidates.
 *
 * Ownership: pointers inside an et_candidate are valid during the call
 * only. et_search_run keeps nothing after it returns.
 */
#ifndef ET_SPACES_SEARCH_H
#define ET_SPACES_SEARCH_H

#include "spaces/space.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum et_search_kind {
    ET_SEARCH_BEAM = 0, /* the default */
    ET_SEARCH_RANDOM,
    ET_SEARCH_GRID,
    ET_SEARCH_COUNT
} et_search_kind;

/* "beam", "random", "grid". */
const char *et_search_name(et_search_kind k);
/* Parses a name as et_search_name gives it; 0 on success, -1 if unknown. */
int et_search_parse(const char *name, et_search_kind *out);

/* Options; the zero value means the defaults (docs/spaces.md). */
struct et_candidate;

typedef struct et_search_opts {
    et_search_kind kind;
    int budget;             /* answered candidates; 0 = 100 */
    double time_limit_s;    /* wall time; 0 = none */
    int beam_width;         /* 0 = 4 */
    uint64_t seed;          /* PRNG seed (random search, random actions) */
    double min_progress;    /* action beam stops below it; 0 = 0.01 */
    double cut_factor;      /* early-cut bound factor; 0 = 3 */
    int max_draws;          /* random: draws without a new candidate before
                               giving up; 0 = 100000 */
    const et_opt *start;    /* fixed opts applied before the space's */
    int n_start;
    int batch;              /* et_search_run_many: random and grid
                               searches propose this many candidates before
                               their answers; 0 = 8 */
    /* Optional: told of a proposal whose kernel (source up to names, and
     * launch geometry: et_kernel_dedupe_key) was already answered under
     * other opts or params; first_seq is the seq of the candidate that
     * was. c->seq is a fresh proposal number. Once per distinct opts and
     * params text; never charged to the budget; called with the
     * callback's user pointer. NULL: duplicates stay silent. */
    void (*on_duplicate)(void *user, const struct et_candidate *c,
                         long first_seq);
    /* Seeds: opt lists proposed before anything else the search would
     * propose (docs/spaces.md, "Seeds"), as whole opt lists applied to
     * the untransformed kernel; a seed whose list does not begin with
     * the start opts' (as the kernel resolves them), or that the kernel
     * refuses, is dropped and told to on_seed_dropped (may be NULL). The
     * beam's first step takes the start kernel and the seeds and keeps
     * the fastest beam_width of them (the start kernel always, when
     * fewer passed); random and grid searches, and a parametric beam,
     * propose them before their own candidates. A seed is a candidate
     * like any other: it counts against the budget and is
     * de-duplicated. */
    const struct et_search_seed *seeds;
    int n_seeds;                /* at most ET_SEARCH_MAX_SEEDS */
    void (*on_seed_dropped)(void *user, int seed, const char *reason);
    /* Optional ranking by a cost model (docs/model.md): the predicted
     * cost of a kernel (lower is better, any monotone scale; NaN: no
     * opinion; -INFINITY: free to answer, e.g. a cache holds it, always
     * proposed), called with the callback's user pointer. When a beam step
     * (every beam member with every value or action), or a random
     * search's pool of draws, holds more new kernels than it keeps, the
     * search predicts each new kernel and proposes only the best
     * predicted, best first, then a few of the others drawn with the seed
     * (exploration); the rest are counted in stats.model_skipped and are
     * never proposed to the callback nor charged to the budget. Kernels
     * already answered or waiting are proposed as usual. NULL, or a NaN
     * among a step's predictions: every candidate is proposed, in the
     * order and with the answers of a search without it. Grid searches
     * are never ranked. */
    double (*predict)(void *user, const et_kernel *k);
    double keep_frac;       /* share of a step's new kernels kept; 0 = 0.3 */
    int keep_min;           /* and at least this many; 0 = 2 x beam_width;
                               a random search's pool is keep_min /
                               keep_frac new kernels */
    double explore_frac;    /* of the others, this share proposed anyway
                               (at least one); 0 = 0.1; < 0: none */
} et_search_opts;

#define ET_SEARCH_MAX_SEEDS 16

/* One seed: an opt list (the caller's memory, read during the run). */
typedef struct et_search_seed {
    const et_opt *opts;
    int n_opts;
} et_search_seed;

typedef struct et_candidate {
    long seq;                   /* 0, 1, 2 ... in proposal order */
    const et_binding *binding;
    bool has_point;             /* a point of the parametric space */
    et_point point;
    int n_actions;              /* opts added by actions (at the end) */
    int n_opts;
    const et_opt *opts;         /* the full opt list, user's letters */
    const char *opts_text;      /* its text form */
    const char *params_text;    /* the point as "{'a': 1}" ("{}" if none) */
    const et_kernel *kernel;    /* opts applied; NULL when refused */
    uint64_t key;               /* de-duplication key */
    double bound_s;             /* early-cut bound, INFINITY if none */
    bool refused;
    const char *reason;         /* why refused ("" otherwise) */
    int seed;                   /* 1 + its index in et_search_opts.seeds
                                 * when it is a seed; 0 otherwise */
} et_candidate;

typedef enum et_eval_status {
    ET_EVAL_OK = 0,      /* verified and timed: time_s is its cost */
    ET_EVAL_FAILED,      /* build/launch/verify failure, timeout, cut ... */
    ET_EVAL_COUNT
} et_eval_status;

typedef struct et_eval_result {
    et_eval_status status;
    int outcome;         /* the caller's own outcome code, passed through */
    double time_s;
    bool cached;         /* answered from a database, not timed now */
    char reason[512];
    bool answered;       /* et_search_run_many: the callback answered it */
} et_eval_result;

typedef int (*et_eval_fn)(void *user, const et_candidate *c,
                          et_eval_result *r);

typedef struct et_search_stats {
    int answered;        /* callback answers (the budget counts these) */
    int cached;          /* of which answered from a cache */
    int failed;          /* of which not OK */
    int refused;         /* points refused before evaluation (reported) */
    int invalid;         /* points whose constraints are false */
    int actions_refused; /* pool actions that did not apply, or split
                          * by 1 (the same kernel; beam) */
    int duplicates;      /* proposals whose kernel was already seen */
    bool has_best;
    double best_time_s;
    bool best_has_point;
    et_point best_point;
    int best_n_opts;
    et_opt best_opts[ET_MAX_OPTS];
    double start_time_s; /* the starting kernel's time (beam), INFINITY */
    double elapsed_s;
    char stop_reason[64]; /* "budget", "time limit", "exhausted", ... */
    int seeds;           /* seeds proposed (duplicates included) */
    int seeds_dropped;   /* seeds that did not apply (on_seed_dropped) */
    /* ranking (et_search_opts.predict): new kernels the predictor scored,
     * and of those the ones never proposed */
    int model_ranked;
    int model_skipped;
    /* action beam with a time limit: times the converged beam widened
     * (x2, from the fastest kernels of the run) and went on */
    int widenings;
} et_search_stats;

/*
 * A batch of candidates for et_search_run_many. The callback may evaluate
 * them in any order and at once (on several devices); it sets
 * r[i].answered for each one it answered and fills r[i] as the evaluate
 * callback would. Candidates it does not get to (it was stopped, or
 * deadline_s passed before it started them) are not answered: the search
 * counts and remembers only answered ones, and stops after the batch.
 * Refused candidates (c[i].refused) are in the batch in their place in
 * the proposal order, to be recorded; they need no answer.
 */
typedef struct et_eval_batch {
    const et_candidate *c;  /* n candidates, in proposal order */
    et_eval_result *r;      /* their answers (zeroed, time_s INFINITY) */
    int n;
    /* c[i].bound_s is cut_factor x the best time known when the batch was
     * made; the callback may tighten it with cut_factor x the best time
     * answered in the batch so far (what the one-at-a-time search would
     * have used) */
    double cut_factor;
    double deadline_s;      /* et_now_s() past which no candidate is to be
                             * started (the time limit); INFINITY: none */
} et_eval_batch;

/* Answers a batch; returns 0 to go on, anything else to stop the search
 * (the candidates it answered count). */
typedef int (*et_eval_many_fn)(void *user, et_eval_batch *batch);

/*
 * Runs the search o->kind over b. With both transforms and actions in the
 * space, the parametric search runs first (half the budget) and the
 * actions search on top of its best kernel with the rest (beam or random
 * as o->kind says; grid enumerates action sequences of length <= 2).
 * Returns ET_OK when the search ended normally (see stats->stop_reason),
 * ET_ERR_INPUT with d->msg for a search that cannot run (grid over an
 * action pool deeper than 2, refused start opts), ET_ERR_NOMEM.
 */
et_status et_search_run(const et_binding *b, const et_search_opts *o,
                        et_eval_fn fn, void *user, et_search_stats *stats,
                        et_diag *d);

/*
 * As et_search_run, with candidates handed over in batches, so that they
 * can be evaluated at once on several devices: a beam search proposes a
 * whole step (every beam member with every value or action) as one batch
 * and decides the next step from its answers, as it does one at a time;
 * random and grid searches propose o->batch candidates ahead. The budget
 * counts candidates in batches not yet answered, so it is never
 * overdrawn; the time limit is the batch's deadline_s; a kernel already
 * waiting in the batch is a duplicate. Given the same answers, the beam's
 * steps are those of et_search_run; the early-cut bound may be looser
 * within a step (see et_eval_batch).
 */
et_status et_search_run_many(const et_binding *b, const et_search_opts *o,
                             et_eval_many_fn many, void *user,
                             et_search_stats *stats, et_diag *d);

/*
 * The de-duplication key of a kernel: a 64-bit hash of its rendered source
 * up to names (comments and white space dropped, the kernel's name and
 * every name the source introduces replaced by its order of first use;
 * keywords, types, upper-case macros, members and called builtins kept)
 * and its launch geometry; with an open axis, the geometry at the size
 * the kernel is worked at and the step that axis' size is rounded up to
 * (et_kernel_open_step), which with the source (rendered independent of
 * that size) fixes the launch at every size.
 */
uint64_t et_kernel_dedupe_key(const et_kernel *k, et_backend_kind backend);

#endif
