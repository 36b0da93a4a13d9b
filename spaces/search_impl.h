/*
 * search_impl.h - internal to the files of the searches (spaces/search*.c):
 * the search's state, the shapes its strategies share, and the functions
 * one file calls in another (prefixed srch_). Not part of the API; nothing
 * outside spaces/ includes it (the interface is spaces/search.h).
 *
 * Every proposal goes through srch_propose(): de-duplication (a kernel
 * seen before is not evaluated again; its known time is reused where the
 * parametric beam needs it), the callback, the statistics, the best so far
 * and the stop conditions (budget, time limit, callback). With a
 * predictor (et_search_opts.predict), a beam round or a random pool is
 * built first and srch_choose() decides which of its new kernels are
 * proposed at all; without one, the loops propose as they build.
 *
 * Files, by what they own:
 *   search.c              the kinds' names, the options' defaults, the run
 *                         (parametric phase, then actions phase) and the
 *                         entry points
 *   search_prng.c         the PRNG (xoshiro256** seeded by splitmix64)
 *   search_kmap.c         the hash map key -> value
 *   search_dedupe.c       the de-duplication key of a kernel
 *   search_propose.c      proposing one candidate; stops and answers
 *   search_batch.c        batched mode (et_search_run_many): the pending
 *                         batch, its flush, deferred duplicates
 *   search_points.c       the parametric space as an index set, and the
 *                         kernel of a point
 *   search_seeds.c        the seeds' kernels and their proposal
 *   search_rank.c         ranking by a cost model, random search pools
 *   search_random.c       random search: points, and action sequences
 *   search_grid.c         grid search: points, and action sequences <= 2
 *   search_beam.c         the parametric beam, the beam members' order
 *   search_beam_actions.c the action beam, its archive and widening
 */
#ifndef ET_SPACES_SEARCH_IMPL_H
#define ET_SPACES_SEARCH_IMPL_H

#include "spaces/search.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- search_prng.c ---- */

typedef struct rng {
    uint64_t s[4];
} rng;

void srch_rng_seed(rng *r, uint64_t seed);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t srch_rng_below(rng *r, uint64_t n);

/* ---- search_kmap.c ---- */

/* Open addressing, a power-of-two capacity; the zero value is empty. */
typedef struct kmap {
    size_t cap, n;
    uint64_t *key;
    double *val;
    bool *used;
} kmap;

/* Is k in m? Its value into *v (v may be NULL). */
bool srch_kmap_find(const kmap *m, uint64_t k, double *v);
/* Sets k's value; false when out of memory (m unchanged). */
bool srch_kmap_put(kmap *m, uint64_t k, double v);
void srch_kmap_free(kmap *m);

/* ---- the search state ---- */

typedef struct srch {
    const et_binding *b;
    const et_space *s;
    et_search_opts o;
    et_eval_fn fn;
    void *user;
    et_search_stats *st;
    rng r;
    kmap seen;
    kmap seen_seq;       /* key -> seq of the candidate that was answered */
    kmap said;           /* opts and params texts already reported */
    double t0; /* et_now_s() at the start */
    bool stop;
    long seq;
    int budget;          /* budget of the current phase (absolute count) */
    et_kernel *start;    /* base kernel + start opts */
    bool nomem;
    /* batched (et_search_run_many): candidates proposed and not yet
     * answered, handed to the callback together by srch_flush() */
    et_eval_many_fn many;
    struct pend *pend;
    int n_pend, cap_pend;
    int n_pend_eval;     /* of which not refused (they count as answered
                            for the budget until the flush) */
    int last_slot;       /* the pending slot propose used, -1 if none */
    bool flushed;        /* the batch was answered; batch_clear next */
    /* duplicates of a kernel waiting in the batch, told to on_duplicate
     * once it is answered (flush) */
    struct dup_later *later;
    int n_later, cap_later;
    /* seeds: their kernels (NULL: dropped), the one propose is
     * proposing (1 + index, 0: none), whether they were proposed */
    et_kernel *seed_k[ET_SEARCH_MAX_SEEDS];
    int cur_seed;
    bool seeds_done;
    /* the start kernel and the seeds are being proposed: the time limit
     * waits (srch_must_stop, srch_flush). A limit that the baseline used
     * up (the reference and the untransformed kernel of a large problem
     * can take a 20 s limit whole) would otherwise end the run with its
     * slowest kernel, the seeds that make it fast never timed; the first
     * of them is rarely the fastest (the batched gradient at P4 f32: the
     * plain register block 39.6 ms, with STAGE LOOP 14.3 ms), so all of
     * them are timed, at most ET_SEARCH_MAX_SEEDS, each cut at the bound
     * as any candidate */
    bool opening;
    /* the fastest point answered (the actions search starts there) */
    bool has_bp;
    et_point bp;
    double bp_t;
} srch;

/* A candidate waiting in the batch; its et_candidate's pointers are set
 * at the flush (the array may move while it grows). */
typedef struct pend {
    et_candidate c;
    et_kernel *k;                /* a clone, owned; NULL when refused */
    bool has_point;
    et_point pt;
    int n_opts;
    et_opt opts[ET_MAX_OPTS];
    char opts_text[4096], params_text[1024], reason[512];
    et_eval_result r;
    double t;                    /* after the flush: its time (INFINITY
                                    for a failure or no answer) */
} pend;

/* A proposal of a kernel that waits in the batch, for on_duplicate. */
typedef struct dup_later {
    int slot;                    /* the first proposal's pending slot */
    long seq;
    uint64_t key;
    bool has_point;
    et_point pt;
    int n_opts, n_actions;
    int seed;
    et_opt opts[ET_MAX_OPTS];
    char opts_text[4096], params_text[1024];
} dup_later;

/* A member of a beam (or of the seeds' first step). */
typedef struct member {
    et_point pt;
    et_kernel *k;    /* action beam only */
    double t;
    long order;      /* tie-break: proposal order */
    int slot;        /* batched: the pending slot its time comes from,
                        -1 when known */
    int depth;       /* action beam: steps from the first one */
    bool expanded;   /* action beam's archive: its actions were tried */
} member;

/* A proposal of a step held back to be ranked before it is proposed. */
typedef struct held {
    et_kernel *k;        /* owned until proposed */
    bool has_pt;
    et_point pt;
    int n_actions;
    int src;             /* the caller's (the beam member it came from) */
    uint64_t key;        /* et_kernel_dedupe_key; 0: not yet known */
    double pred;         /* predicted cost (new kernels) */
    int first;           /* an earlier held proposal of the same kernel,
                            -1: none */
} held;

/* What a proposal came to (srch_propose); srch_try_point adds -2 for a
 * point whose constraints are false. */
enum { P_STOP = -1, P_ANSWERED = 0, P_DUPLICATE = 1, P_REFUSED = 2,
       P_PENDING = 3 };

/* ---- search_dedupe.c ---- */

/* FNV-1a of n bytes on top of h. */
uint64_t srch_fnv(uint64_t h, const void *p, size_t n);
/* A kernel's de-duplication key for the binding's backend. */
uint64_t srch_key_of(const srch *S, const et_kernel *k);

/* ---- search_propose.c ---- */

/* Seconds since the search started. */
double srch_elapsed(const srch *S);
/* Stops the search; the first reason given is the one kept. */
void srch_set_stop(srch *S, const char *why);
/* True when the search must stop before the next proposal. */
bool srch_must_stop(srch *S);
/* Books an answer: the de-duplication map, the counts, the best so far. */
void srch_record_answer(srch *S, uint64_t key, const et_point *pt,
                        const et_opt *opts, int n_opts,
                        const et_eval_result *r, double *t);
/*
 * Proposes one candidate. k is the kernel (NULL when refused, with
 * reason). On P_ANSWERED and P_DUPLICATE *t gets its time (INFINITY for a
 * failure or an unknown duplicate). key: the kernel's key when known
 * (NULL: computed).
 */
int srch_propose_key(srch *S, const et_point *pt, const et_kernel *k,
                     const et_opt *opts, int n_opts, int n_actions,
                     const char *reason, double *t, const uint64_t *key);
int srch_propose(srch *S, const et_point *pt, const et_kernel *k,
                 const et_opt *opts, int n_opts, int n_actions,
                 const char *reason, double *t);

/* ---- search_batch.c ---- */

/* Batched mode: appends a candidate to the batch (P_PENDING, or
 * P_REFUSED for a refused one, which the callback records in its place
 * in the order). S->last_slot names its slot. */
int srch_enqueue(srch *S, const et_point *pt, const et_kernel *k,
                 const et_opt *opts, int n_opts, int n_actions,
                 const char *reason, const char *opts_text,
                 const char *params_text, uint64_t key, double bound);
/* Slot holding a pending candidate of this key, -1 if none. */
int srch_pending_slot(const srch *S, uint64_t key);
/* Batched mode: keeps a duplicate of the kernel in pending slot `slot`
 * for on_duplicate, which is told once that kernel is answered. */
void srch_defer_duplicate(srch *S, int slot, const et_candidate *c);
/* Batched mode: hands the batch to the callback and books the answers
 * (pend[i].t holds the times until srch_batch_clear). */
void srch_flush(srch *S);
/* Forgets the flushed batch. */
void srch_batch_clear(srch *S);
/* Random and grid searches in batched mode: flush once the batch is
 * full (their proposals do not depend on the answers). */
void srch_maybe_flush(srch *S);
/* Batched mode, after a step's candidates were proposed: flushes them
 * and gives every member waiting for a slot its time; returns the new
 * count of members. Sequential mode: nothing to do. */
int srch_settle(srch *S, member *m, int n);

/* ---- search_points.c ---- */

/* More points than this are "huge": drawn, never enumerated. */
#define HUGE_COUNT ((uint64_t)1 << 62)

/* Builds the kernel of a point on top of the start kernel. */
et_point_status srch_point_kernel(srch *S, const et_point *pt, et_kernel **k,
                                  et_opt *opts, int *n, char *reason,
                                  size_t rcap);
/* Evaluates a point: P_* or -2 for an invalid point (not a candidate). */
int srch_try_point(srch *S, const et_point *pt, double *t, et_kernel **keep);
/* The number of points (HUGE_COUNT when more). */
uint64_t srch_total_count(const srch *S);
/* Point number idx: mapping blocks, then mixed radix with the first
 * declared parameter outermost. */
void srch_point_at(const srch *S, uint64_t idx, et_point *pt);
/* A random point; returns its identity for the set of points drawn. */
uint64_t srch_point_draw(srch *S, uint64_t total, et_point *pt);

/* ---- search_seeds.c ---- */

/* The seeds' kernels (S->seed_k); the dropped ones are told. */
void srch_seeds_build(srch *S);
/* Proposes the seeds, once in a run; with out (the beam's first step),
 * as members. Returns false when the search must stop. */
bool srch_seeds_propose(srch *S, member *out, int *n_out, long *order,
                        uint64_t skip_key);

/* ---- search_rank.c ---- */

bool srch_ranking_on(const srch *S);
/* The model's choice among a step's n held proposals: the indices to
 * propose into order; returns their number. */
int srch_choose(srch *S, held *h, int n, int *order);
/* Frees the held kernels left (those not proposed or not kept). */
void srch_held_free(held *h, int n);
/* How many new kernels a random search's pool holds. */
int srch_pool_new(const srch *S);
/* Adds kernel k (owned from here) to a random search's pool. */
void srch_held_add(const srch *S, held *h, int *nh, et_kernel *k,
                   const et_point *pt, int n_actions, int *n_new,
                   int *idle);
/* Proposes what the model chooses of a pool and frees the pool; 1 when
 * a proposal was answered or is waiting. */
int srch_pool_propose(srch *S, held *h, int nh, int *ord);

/* ---- the strategies ---- */

/* search_random.c */
void srch_param_random(srch *S);
void srch_action_random(srch *S, et_kernel *start, const et_point *pt);
/* search_grid.c */
void srch_param_grid(srch *S);
void srch_action_grid(srch *S, et_kernel *start, const et_point *pt);
/* search_beam.c */
int srch_member_cmp(const void *x, const void *y);
void srch_param_beam(srch *S);
/* search_beam_actions.c */
int srch_action_beam(srch *S, et_kernel *start, const et_point *pt);

#endif
