/*
 * tune.h - the tuning loop: a space's search wired to measurement,
 * verification, the roofline and the tuning database.
 *
 * et_tune_run takes a bound space (spaces/space.h) and an open device
 * (normally an isolated one, measure/remote.h), verifies and times the
 * untransformed kernel once as the baseline of the statistical test, then
 * runs the search; every candidate the search proposes goes through
 * et_evaluate_kernel (build, verify on R input sets, time with the
 * protocol, early cut at the search's bound) unless the database already
 * holds its answer. A proposal whose kernel is one already answered in
 * this run (same source up to names, same geometry) is answered from it,
 * kept with duplicate_of, and not charged to the budget. Every candidate,
 * refused and failed ones included, is kept in the result in proposal
 * order and recorded in the database as it completes.
 *
 * Then the final race (docs/measurement.md): the race_k fastest distinct
 * verified candidates and the untransformed kernel are timed round robin
 * on the same inputs (et_time_round_robin) and compared with
 * et_race_decide; its choice becomes the result's best, its figures the
 * best's and the baseline's time, and the race is recorded in the
 * database. Time limit: with one, the search gets 85 % of it and the race
 * the rest; the race takes as many rounds as fit (ET_RACE_ROUNDS at most,
 * ET_RACE_MIN_ROUNDS at least), dropping its slowest candidates while even
 * ET_RACE_MIN_ROUNDS do not fit, or racing the candidates alone when the
 * untransformed kernel is the one that does not fit (et_tune_race_fit),
 * and is skipped (race.ran false, race.note says why) when not even the
 * best candidate and the untransformed kernel fit. Without a limit,
 * rounds are cut (not below ET_RACE_MIN_ROUNDS) only when the estimate
 * exceeds both 10 s and a quarter of the time so far.
 *
 * Callbacks (all optional) let the front end log, show progress and print
 * the report after each new best; the loop itself prints nothing.
 *
 * Ownership: et_tune_result holds malloc'ed memory released by
 * et_tune_result_free. Not thread-safe; one run per device at a time.
 */
#ifndef ET_TUNE_H
#define ET_TUNE_H

#include "db/db.h"
#include "measure/backend.h"
#include "measure/outcome.h"
#include "measure/race.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "tune/learn.h"

#include <signal.h>
#include <stdbool.h>

struct et_db;

/* One candidate as the tuning run saw it. Plain value. */
typedef struct et_tune_candidate {
    long seq;                 /* proposal order */
    char params[512];         /* "{'a': 1}" or "{}" */
    char opts[1024];          /* canonical opt text */
    char kernel[160];         /* kernel name ("" when refused) */
    et_outcome outcome;
    char reason[1024];
    bool cached;              /* answered from the database */
    bool timed;
    et_timing timing;         /* when timed */
    bool verified;
    et_verify_result verify;  /* when verified */
    double eval_s;            /* wall time spent on it in this run */
    /* of which: program build, verification (with PoCL's compile at the
     * first launch), timing protocol; 0 when not evaluated here */
    double build_s, verify_s, timing_s;
    /* since the run started (et_tune_run's call, the untransformed
     * kernel's measurement included), when this candidate was answered:
     * the search's convergence against time */
    double done_s;
    uint64_t key;             /* et_kernel_dedupe_key; 0 when refused */
    int n_opts;               /* opts in the list */
    int duplicate_of;         /* index of the candidate whose kernel this
                               * is (answered from it), -1: none */
    int64_t db_created_at;    /* cached: when the trial was measured */
    double load_1m;           /* 1-minute load average when answered (NaN:
                               * unknown) */
    int rank;                 /* with an executor: the slot (MPI rank)
                                 that evaluated it; 0 otherwise */
    int seed;                 /* a seed: 1 + its entry in the result's
                               * seeds; 0 otherwise */
} et_tune_candidate;

/*
 * A seed of the run: the best opts of a tuned problem near this one
 * (et_best_nearest), re-applied here, or the opts the einsum's structure
 * suggests (structural), proposed before the search's own candidates; or
 * one left out because the rules refuse its opts here. Plain value.
 */
typedef struct et_tune_seed {
    char opts[ET_DB_OPTS_LEN]; /* in this run's names (dropped: as
                                * stored) */
    char einsum[ET_MAX_TEXT]; /* the einsum text it was tuned under */
    char sizes[256];          /* its sizes in this run's names */
    double distance;          /* sum |log2 size ratio| */
    bool structural;          /* suggested by the einsum's structure
                               * (transforms/heuristic.h), not by the
                               * database: einsum is this run's, sizes
                               * "", distance 0 */
    bool dropped;             /* not proposed: reason says why */
    char reason[512];
    int cand;                 /* the candidate that proposed it; -1: none
                               * (dropped, or the search stopped first) */
} et_tune_seed;

/* One kernel of the final race. Plain value. */
typedef struct et_tune_race_entry {
    int cand;                 /* index into cand, -1: the untransformed
                               * kernel when it is no candidate */
    bool untransformed;
    bool eligible;            /* may be chosen (a candidate of the search) */
    char opts[1024];
    char kernel[160];
    char source_hash[17];
    int n_opts;
    et_timing timing;         /* over the race's rounds */
    bool tied;                /* tied with the fastest */
} et_tune_race_entry;

/* The final race (see above). Plain value but for times. */
typedef struct et_tune_race {
    bool ran;
    char note[256];           /* why it did not run, or what was cut */
    int n;                    /* kernels */
    int rounds, rounds_planned;
    et_tune_race_entry e[ET_RACE_MAX];
    double *times;            /* times[r * n + i] (malloc'ed) */
    int baseline;             /* entry of the untransformed kernel, -1:
                               * it did not race (speedup then from the
                               * search's time, no interval: NaN) */
    int fastest, runner_up, chosen; /* entries; -1 none */
    et_race_verdict verdict;
    double conf, pair_conf;
    /* the fastest against the runner-up, % faster (+-inf: no interval) */
    double faster_pct, faster_lo, faster_hi;
    /* tied: the kernel that makes the tie (the chosen one when it is not
     * the fastest, else the fastest tied other) and the fastest's lead
     * over it, % with its interval (contains 0); -1 when not tied */
    int tie_with;
    double tie_pct, tie_lo, tie_hi;
    /* the untransformed kernel's time over the chosen one's */
    double speedup, speedup_lo, speedup_hi;
    double elapsed_s;
    int64_t db_id;            /* its row in the database, 0: none */
    int rank;                 /* with an executor: the evaluator (MPI
                               * rank) that ran it; 0 otherwise */
} et_tune_race;

typedef enum et_tune_level { ET_TUNE_DEBUG, ET_TUNE_INFO, ET_TUNE_WARN }
    et_tune_level;

/* One kernel of the final race as et_tune_race_time takes it. */
typedef struct et_tune_race_kernel {
    const char *source;
    const char *name;
    et_launch geom;
} et_tune_race_kernel;

/*
 * Evaluation elsewhere (scale/: the ranks of an MPI job): candidates are
 * built, verified and timed by `slots` evaluators at once instead of on
 * the loop's own device. The search then runs batched
 * (et_search_run_many); the loop hands each candidate that needs a
 * measurement to submit() while a slot is free, and otherwise waits in
 * wait() for any to finish. The database, the result and the callbacks
 * stay with the loop. After the search the final race runs on one
 * evaluator (race()), so that the figures it compares and reports come
 * from one device; with the race turned off, the winner is re-timed on
 * one evaluator instead (et_tune_result.retime).
 */
typedef struct et_tune_exec {
    int slots;                /* evaluations in flight at once, >= 1 */
    /* Starts job `job` (build, verify, time with to, as
     * et_tune_evaluate; geom_at: the kernel's geometries at the open
     * axis' n_at awkward sizes, NULL when n_at is 0) on a free slot. */
    et_status (*submit)(void *ctx, long job, const char *source,
                        const char *name, const et_launch *geom,
                        const et_launch *geom_at, int n_at,
                        const et_timing_opts *to, et_error *err);
    /* Blocks, without spinning, until a job finishes: its id, its
     * evaluation, the slot's name (the rank) that made it and the
     * 1-minute load average of its machine then (NaN: unknown). */
    et_status (*wait)(void *ctx, long *job, et_evaluation *ev, int *where,
                      double *load_1m, et_error *err);
    /* The final race on one evaluator with no job in flight:
     * et_tune_race_time there, with the same arguments and results;
     * where gets the slot's name. */
    et_status (*race)(void *ctx, const et_tune_race_kernel *k, int n,
                      int warmups, int rounds, double max_seconds,
                      double *times, int *done, int *failed, int *where,
                      et_error *err);
    void *ctx;
    et_device_info info;      /* the evaluators' device (one kind) */
    /* the untransformed kernel as an evaluator verified and timed it */
    et_timing baseline;
    et_verify_result baseline_verify;
    double baseline_s;
} et_tune_exec;

/*
 * A database elsewhere (a campaign's rank 0 under MPI): what the loop
 * would look up and record in et_tune_opts.db goes through these instead.
 * The rows' einsum_id, device_id and space_id are 0: the store's owner
 * sets them from the problem, device and space it knows the run by.
 * lookup: as et_db_trial_lookup (key's trial key, *out the row found);
 * record: as et_db_trial_record; race: as et_db_race_record.
 */
typedef struct et_tune_store {
    et_status (*lookup)(void *ctx, const et_db_trial *key, et_db_trial *out,
                        bool *found, et_error *err);
    et_status (*record)(void *ctx, const et_db_trial *tr, et_error *err);
    et_status (*race)(void *ctx, const et_db_race *r, et_error *err);
    void *ctx;
} et_tune_store;

typedef struct et_tune_opts {
    et_search_opts search;    /* kind, budget, limits, seed, start opts */
    et_timing_opts timing;    /* bound_s is set per candidate */
    et_verify_opts verify;
    bool retime;              /* re-measure points the database knows */
    int race_k;               /* final race: this many candidates and the
                               * untransformed kernel (at most
                               * ET_RACE_MAX - 1); 0: no race */
    int race_rounds;          /* 0: ET_RACE_ROUNDS */
    /* A new device worker after this many evaluations (0: 250; < 0:
     * never), so that the driver's memory, which grows with every program
     * it builds, stays bounded in a long run. */
    int recycle_every;
    struct et_db *db;         /* NULL: no database */
    const et_tune_store *store; /* instead of db (db NULL) */
    int64_t db_space_id;      /* the space's row in db (0: none) */
    /* Seeding (docs/spaces.md): up to this many seeds, the best opts of
     * the nearest tuned problems in db (not a store), proposed first; 0:
     * none. search.seeds and on_seed_dropped are set by the loop. */
    int seeds;
    /* 1: the structural seeds too (transforms/heuristic.h), proposed
     * after the database's; they need no database. */
    int structural_seeds;
    /* Set asynchronously (SIGINT): the trial in flight finishes, the
     * search stops, the result is complete up to there. */
    volatile sig_atomic_t *stop;
    /* NULL: every candidate on the device given to et_tune_run; else
     * through the executor (the device may then be NULL) */
    const et_tune_exec *exec;
    void (*log)(void *arg, et_tune_level lvl, const char *msg);
    /* After each answered candidate: done = answered so far. A nonzero
     * return stops the search after this candidate ("cancelled"). */
    int (*progress)(void *arg, int done, int budget,
                    const et_tune_candidate *c, const et_tune_candidate *best);
    /* After each new best. */
    void (*new_best)(void *arg, const et_tune_candidate *best);
    void *arg;
    /* The cost model (tune/learn.h, docs/model.md): 0: on, learning from
     * db's trials of the device and this run's candidates, ranking the
     * search's candidates once it is fitted; < 0: off. */
    int model;
    /* The device's peaks, for the model's roofline feature; NULL:
     * unknown. */
    const et_peaks *peaks;
} et_tune_opts;

typedef struct et_tune_result {
    et_tune_candidate *cand;  /* every candidate in proposal order */
    int n_cand;
    int cap_cand;
    int evaluations;          /* candidates timed in this run */
    int cached;               /* candidates answered from the database */
    int failures[ET_OUTCOME_COUNT];
    int best;                 /* index into cand, -1 if none passed */
    et_timing baseline;       /* the untransformed kernel */
    et_verify_result baseline_verify;
    et_search_stats stats;
    double elapsed_s;
    /* wall time of the phases over the candidates evaluated in this run,
     * and of the untransformed kernel's verification and timing */
    double build_s, verify_s, timing_s, baseline_s;
    int recycles;             /* device workers replaced (recycle_every) */
    double db_s;              /* in database lookups and records */
    char stop_reason[64];
    int duplicates;           /* proposals answered from an earlier one */
    et_tune_race race;
    /* noise: the 1-minute load average at the start, its range over the
     * run (NaN: unknown), and the candidates timed in this run whose cv
     * exceeded ET_TUNE_NOISY_CV */
    double load_start, load_min, load_max;
    int noisy;
    /* with an executor and the race turned off: the winner re-timed on
     * one evaluator */
    bool retimed;
    int retime_rank;
    et_outcome retime_outcome;
    et_timing retime;
    /* the seeds looked at, nearest first, those dropped among them;
     * malloc'ed */
    et_tune_seed *seeds;
    int n_seeds;
    et_tune_model_report model; /* what the cost model did */
} et_tune_result;

/* A candidate's timing is noisy above this coefficient of variation, and
 * the machine's load "changed" when its 1-minute average moved by more
 * than ET_TUNE_LOAD_CHANGE over the run. */
#define ET_TUNE_NOISY_CV 0.10
#define ET_TUNE_LOAD_CHANGE 1.0

/* The machine's 1-minute load average (getloadavg), NaN when unknown. */
double et_tune_load_1m(void);

/*
 * Runs a tuning session. Returns ET_OK when the search ran (whatever its
 * candidates' outcomes; res->best < 0 if none passed), ET_ERR_INPUT when the
 * search cannot run (err says why), ET_ERR_DEVICE/ET_ERR_BUILD... when the
 * untransformed kernel itself cannot be built, verified or timed, and
 * ET_ERR_NOMEM. res is always initialised and must be freed.
 */
et_status et_tune_run(et_device *dev, const et_binding *b,
                      const et_tune_opts *o, et_tune_result *res,
                      et_error *err);

void et_tune_result_free(et_tune_result *res);

/* The most wall time the baseline's timing takes (see et_tune_baseline). */
#define ET_TUNE_BASELINE_S 1.0
/* A baseline whose verification launches after the first all took at
 * least this long is not launched again: its estimate is those launches
 * (et_tune_baseline_estimate). The brief timing would give at most ten
 * runs after a warm-up and take its whole second: a 0.87 s untransformed
 * kernel (case 2 of the bench) took 3 more launches, 2.6 s before the
 * search; the batched gradient at P3 f64 (196 ms) 7 more, 1.4 s of a 20 s
 * tune; case 1 f64 (x=4096, 35^3: 68 to 86 ms on a 2-core EPYC) a warm-up
 * and 6 to 12 runs, 0.5 to 1 s before its first seed, a fifth of the time
 * its beam takes to reach its block. */
#define ET_TUNE_BASELINE_SLOW_S (ET_TUNE_BASELINE_S / 20)

/* Fills timing from v's launches when there are two or more and every
 * one took at least ET_TUNE_BASELINE_SLOW_S; false (timing untouched)
 * otherwise. */
bool et_tune_baseline_estimate(const et_verify_result *v, et_timing *timing);

/*
 * Verifies the untransformed kernel base on dev with ver (recording it as
 * the verifier's baseline) and times it with to, briefly: one warm-up and
 * timed runs until to's protocol is met or ET_TUNE_BASELINE_S has passed,
 * at least one (timing.h, step 4), or, for a slow kernel, takes the
 * verification's launches as the estimate (et_tune_baseline_estimate);
 * the final race times it again. What a run does before its search, and
 * what each evaluator of an executor does before its first candidate.
 * name gets the kernel's name and said what the compiler said ("" when
 * nothing). ET_ERR_INTERNAL when it fails verification (err
 * says why); device errors as they come.
 */
et_status et_tune_baseline(et_device *dev, et_verifier *ver,
                           const et_kernel *base, const et_timing_opts *to,
                           et_timing *timing, et_verify_result *verify,
                           char *name, size_t name_cap, char *said,
                           size_t said_cap, et_error *err);

/*
 * An open axis' awkward sizes. A kernel with an open axis is correct for
 * every size or it is wrong: after passing at the tune-at size (the
 * einsum's working size of the axis) it is verified at 1 and at the
 * largest prime below the tune-at size too (those that differ from it
 * and from each other; one input set each, the bound checks alone).
 * Rank 0 of a run over MPI and every evaluating rank build the same sizes
 * from the same einsum; the launch geometries at those sizes come from
 * the kernel, which rank 0 alone has, and travel with the job.
 */
#define ET_TUNE_AWKWARD_MAX 2

typedef struct et_tune_awkward {
    int n;                                  /* 0: no open axis */
    int axis;                               /* the open axis in e (-1) */
    char name[ET_NAME_LEN];                 /* its letter */
    int64_t size[ET_TUNE_AWKWARD_MAX];
    et_verifier *ver[ET_TUNE_AWKWARD_MAX];  /* a verifier at each size */
} et_tune_awkward;

/* a's sizes and verifiers for e (n = 0 when e has no open axis); vo
 * NULL: the sizes alone, no verifier (what rank 0 needs to compute the
 * geometries). */
et_status et_tune_awkward_init(const et_einsum *e, const et_verify_opts *vo,
                               et_tune_awkward *a, et_error *err);
/* Frees the verifiers' device buffers (before a device worker is
 * replaced); they are uploaded again when next used. */
void et_tune_awkward_release(et_tune_awkward *a);
void et_tune_awkward_free(et_tune_awkward *a);

/* k's launch geometry at each of a's sizes into geom[0..a->n-1]. */
et_status et_tune_awkward_launch(const et_tune_awkward *a,
                                 const et_kernel *k, et_backend_kind be,
                                 et_launch geom[ET_TUNE_AWKWARD_MAX],
                                 et_error *err);

/*
 * A candidate's evaluation, shared by the local loop and the evaluating
 * ranks of a run over MPI: et_evaluate_kernel with ver at the einsum's
 * sizes, then, when it passed and a has sizes (a may be NULL), the
 * verification at each awkward size with geom_at's geometries. A failure
 * there turns the evaluation into wrong_result (or the device's outcome)
 * with a reason saying at which size. Errors as et_evaluate_kernel's.
 */
et_status et_tune_evaluate(et_verifier *ver, et_tune_awkward *a,
                           const et_launch *geom_at, et_device *dev,
                           const char *source, const char *name,
                           const et_launch *geom, const et_timing_opts *to,
                           et_evaluation *ev, et_error *err);

/*
 * The final race's measurement on dev: builds the n kernels (at most
 * ET_RACE_MAX), and times them round robin on ver's inputs
 * (et_time_round_robin with warmups, rounds and max_seconds; ver holds
 * the untransformed kernel's verification, as et_tune_baseline leaves
 * it). times[r * n + i] gets kernel i's time in round r, *done the rounds
 * made. A kernel that fails to build or launch returns its status with
 * *failed its index and err saying why (*failed -1 otherwise). What
 * et_tune_run does locally, and what an evaluator of an executor does for
 * its race().
 */
et_status et_tune_race_time(et_device *dev, et_verifier *ver,
                            const et_tune_race_kernel *k, int n, int warmups,
                            int rounds, double max_seconds, double *times,
                            int *done, int *failed, et_error *err);

/* What a final race runs: the candidates picked (indices in res->cand,
 * fastest first), the untransformed kernel's candidate and median, whether
 * it races, the time the race may take and its rounds. */
typedef struct et_tune_race_plan {
    int pick[ET_RACE_MAX];
    int np;                   /* candidates picked */
    int base_cand;            /* the untransformed kernel's, -1: none */
    double base_s;            /* the untransformed kernel's median */
    bool with_base;           /* the untransformed kernel races */
    double limit;             /* the run's time limit, 0: none */
    double allow;             /* what the race may take */
    int rounds;
} et_tune_race_plan;

/*
 * A batched einsum's fused row seed: UPCAST(R,0) before the row's opts
 * (row, n_row of them, for the batched kernel base), so each
 * work-item computes its elements of every row, and an operand the rows
 * share is loaded once for all of them (what a batched kernel is for:
 * the gradient's u read once instead of once per row). Its register
 * block keeps the row's size: the row's UPCASTs after the first (the
 * vector axis's) are cut to divisors of their amounts whose product is
 * the largest at most theirs over the rows (all 1, those UPCASTs left
 * out, when their product is under the rows). The gradient P3 f64 row
 * `UPCAST(i,0) UPCAST(x,8) STAGE LOOP(x,63) NTSTORE LOCAL(x,16)` gets
 * `UPCAST(x,2)`: 10.9 ms at x = 419328 in one process, against 11.8 for
 * the rows in one launch and 13.5 for the rows' kernels (an AVX-512
 * EPYC); UPCAST(R,0) in front of the row's block as it is (60
 * accumulators by 8) is refused. The divided amounts keep every later
 * split dividing what it splits; a cut that does not apply leaves the
 * row's opts as they are. Rows
 * summed into one output: UNROLL(R,0), every row's terms in the
 * innermost loop's body (the row seed has the rows in a loop around
 * it). Writes the opts into out (ET_MAX_OPTS) and returns their count;
 * 0 when there is no room for one more opt.
 */
int et_tune_row_fused_opts(const et_kernel *base, const et_opt *row,
                           int n_row, et_opt *out);

/*
 * Fits the race p (pick, np, base_s, limit and allow filled) with `want`
 * rounds at most into p->allow, by res's build times and medians. With a
 * time limit, the first of these that fits ET_RACE_MIN_ROUNDS (or want,
 * when fewer): the candidates (down to two, the slowest left out first)
 * and the untransformed kernel; the candidates alone (down to two) when
 * the untransformed kernel was slower in the search than every one of
 * them, so that it could not win anyway; the best candidate and the
 * untransformed kernel. Sets np, with_base and rounds; note gets what was
 * left out ("" when nothing), or why nothing fits (then false).
 */
bool et_tune_race_fit(const et_tune_result *res, et_tune_race_plan *p,
                      int want, char *note, size_t cap);

/* A space point as et_point_format writes it ("{'a': 16, 'b': true}") in
 * the log's form "a=16 b=true" into out (cap bytes); "" for "{}". */
void et_tune_params_text(const char *params, char *out, size_t cap);

/* The built-in general space: a tinygrad-style action pool that fits any
 * einsum (YAML text, loaded with et_space_load_text). */
extern const char et_builtin_space_yaml[];

#endif
