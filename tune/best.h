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

/* The answer: the stored trial and its opts in the asker's names. */
typedef struct et_best {
    et_db_trial trial;          /* as stored (opts in einsum_text's names) */
    et_opt opt[ET_MAX_OPTS];    /* mapped onto the asker's einsum */
    int n_opts;
    char opts[ET_DB_OPTS_LEN];  /* their canonical text (et_opts_format) */
    bool exact;                 /* the stored source hash was reproduced */
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
 * The fastest verified kernel known for e on the device described by info
 * (et_db_best), mapped with et_best_map_opts for info->target. *found is
 * false when the database knows none (then out is untouched and ET_OK is
 * returned). Errors: the database's, or et_best_map_opts's.
 */
et_status et_best_find(et_db *db, const et_einsum *e,
                       const et_device_info *info, et_best *out, bool *found,
                       et_error *err);

#endif /* ET_TUNE_BEST_H */
