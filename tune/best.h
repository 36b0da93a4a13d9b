/*
 * best.h - the best known kernel for an einsum, in the asker's own names:
 * what `eintune best`, `eintune export` and `eintune run --best` answer.
 *
 * The database (db/db.h) finds the fastest verified trial of the
 * einsum's canonical form on a device; that trial's opts name axes by the
 * letters of the einsum text it was tuned under (trial.einsum_text) and
 * operands by their position there, which may be a renamed or reordered
 * equivalent of the asker's einsum ("ab,bc->ac" or "jk,ij->ik" asked,
 * "ij,jk->ik" tuned). et_best_map_opts carries the opts over:
 *
 *   1. every way to see the asker's einsum as the trial's text
 *      (et_einsum_match; the identity first when the texts are equal,
 *      which also covers texts with '...' that the matcher refuses);
 *   2. for each, the trial's einsum is rebuilt with the asker's sizes and
 *      dtypes pulled back through the mapping, the stored opts applied and
 *      rendered for the device's target, and the source hash compared with
 *      the trial's: equal means this mapping is the one the trial was
 *      measured under (an einsum with symmetries has several mappings, and
 *      only those that keep every size are the same kernel);
 *   3. the opts are rewritten (axis letters through the index mapping,
 *      PREFETCH operand numbers through the operand mapping) and applied
 *      to the asker's kernel, which must accept them.
 * The first mapping that passes 2 and 3 wins (exact). When none reproduces
 * the hash (a trial recorded without a source, or rendered by other code
 * of the same renderer version) the first mapping whose opts apply is
 * taken, with exact false.
 *
 * Sizes never tuned (et_best_find): an exact answer first, then a kernel
 * tuned with an open axis that covers the asked size, then the opts tuned
 * at the nearest other sizes re-applied where the rules accept them.
 *
 * Nothing here touches a device: the target (limits and backend) is the
 * device's as recorded, given by the caller. Plain values, nothing to free.
 */
#ifndef ET_TUNE_BEST_H
#define ET_TUNE_BEST_H

#include "einsum/einsum.h"
#include "measure/backend.h"
#include "db/db.h"
#include "transforms/kernel.h"

#include <stdbool.h>

/* Where an answer comes from (see et_best_find). */
typedef enum et_best_source {
    ET_BEST_EXACT = 0,  /* tuned for these sizes (or this open einsum) */
    ET_BEST_OPEN,       /* tuned with an open axis that covers the size */
    ET_BEST_FALLBACK,   /* tuned at other sizes, its opts re-applied */
    ET_BEST_SOURCE_COUNT
} et_best_source;

/* "exact", "open", "fallback". */
const char *et_best_source_name(et_best_source s);

/* The answer: the stored trial and its opts in the asker's names. */
typedef struct et_best {
    et_db_trial trial;          /* as stored (opts in einsum_text's names) */
    et_opt opt[ET_MAX_OPTS];    /* mapped onto the asker's einsum */
    int n_opts;
    char opts[ET_DB_OPTS_LEN];  /* their canonical text (et_opts_format) */
    bool exact;                 /* the stored source hash was reproduced */
    /* --- answers for sizes never tuned --- */
    et_best_source source;
    /* the einsum the opts apply to: the asker's, with open_axis open for
     * ET_BEST_OPEN (at the asker's size); render this one */
    et_einsum e;
    int open_axis;              /* e's open axis, -1 when none */
    /* the sizes the trial was measured at and the asker's, in the asker's
     * names, for the axes where they differ ("x=512" and "x=1024"; for an
     * open axis its tune-at size); "" for ET_BEST_EXACT of a concrete
     * einsum */
    char tuned_at[256];
    char applied_at[256];
    double distance;            /* ET_BEST_FALLBACK: sum |log2 ratio| */
    /* et_best_nearest: every size the trial was measured at, in the
     * asker's names ("x=512,i=16,k=16,j=16") */
    char sizes[256];
} et_best;

/*
 * Maps trial's opts onto einsum e for target t (see the header comment).
 * On success out gets the trial, the mapped opts and exact. Returns ET_OK,
 * ET_ERR_INPUT when trial's einsum text or opts do not parse or no mapping
 * exists (err says why), ET_ERR_REFUSED when no mapping gives opts that e's
 * kernel accepts (err has the refusal), ET_ERR_NOMEM.
 */
et_status et_best_map_opts(const et_db_trial *trial, const et_einsum *e,
                           const et_target *t, et_best *out, et_error *err);

/*
 * The fastest verified kernel known for e on the device described by info,
 * mapped with et_best_map_opts for info->target, in this order:
 *   1. exact: e's own canonical form (et_db_best);
 *   2. open (a concrete e only): an einsum of the same structure with one
 *      of e's output axes open and every other size e's; the kernel takes
 *      that axis' size at launch (out->e has it open);
 *   3. fallback (unless exact_only): the best trials of every other einsum
 *      of e's structure form (et_db_einsums_like), nearest first by the
 *      distance sum over axes of |log2(tuned size / asked size)| (an open
 *      axis at its tune-at size; ties: the faster trial), each trial's opts
 *      re-applied to e; the first that e's kernel accepts wins. Its timing
 *      was measured at other sizes and says nothing about these.
 * *found is false when none applies (then ET_OK is returned). Errors: the
 * database's, or a stored trial that cannot be read.
 */
et_status et_best_find(et_db *db, const et_einsum *e,
                       const et_device_info *info, bool exact_only,
                       et_best *out, bool *found, et_error *err);

/* Told of a tuned problem whose opts e's kernel refuses: b has the
 * trial, its sizes and distance (b->opts: the stored opts text); why is
 * the refusal. */
typedef void (*et_best_skip_fn)(void *arg, const et_best *b,
                                const char *why);

/*
 * The best opts of the tuned problems nearest to e on the device
 * described by info, re-applied to e, for seeding a search: the best
 * trial of every other einsum of e's structure form (the same einsum at
 * other sizes, renamings and operand orders of it, open-axis entries at
 * their tune-at size) by the distance of et_best_find's fallback (ties:
 * the faster). e's own trials are not among them: a run of e repeated,
 * or resumed after it was killed, takes the path it took before. Each
 * trial's opts are mapped with et_best_map_opts; those e's kernel refuses
 * are passed to skip (may be NULL) and left out, and an opts text already
 * taken is not taken again. Up to max answers into out (room for max),
 * *n_out how many, nearest first; source ET_BEST_FALLBACK, sizes and
 * distance set. Errors: the database's, or out of memory.
 */
et_status et_best_nearest(et_db *db, const et_einsum *e,
                          const et_device_info *info, int max, et_best *out,
                          int *n_out, et_best_skip_fn skip, void *arg,
                          et_error *err);

#endif /* ET_TUNE_BEST_H */
