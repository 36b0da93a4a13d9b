/*
 * deliver.h - what a kernel handed to a user must pass (load, run with
 * the best known kernel, export, dispatch): the invariant of
 * docs/measurement.md, "Kernels handed out".
 *
 * A kernel handed out is either byte-identical to a source the tuner
 * verified on that device (its source and launch geometry at the trial's
 * sizes hash to the trial's source_hash), or it is verified on the device
 * before it is handed out, at every size it is handed out for: a concrete
 * kernel at its own sizes, a kernel with an open axis at 1, 2, the
 * largest prime below its tune-at size and the tune-at size (and any size
 * the asker adds).
 *
 * Nothing here owns a device: the caller opens and closes it. Plain
 * values; not thread-safe per device (as measure/).
 */
#ifndef ET_TUNE_DELIVER_H
#define ET_TUNE_DELIVER_H

#include "db/db.h"
#include "measure/backend.h"
#include "transforms/kernel.h"

#include <stdbool.h>
#include <stdint.h>

#define ET_DELIVER_MAX_SIZES 8

/*
 * The sizes an open kernel tuned at tune_at is verified at when it is
 * handed out: 1, 2, the largest prime below tune_at (a prime itself when
 * tune_at <= 3: 3 or 2), tune_at, then extra[0..n_extra-1]; each once, in
 * that order, at most ET_DELIVER_MAX_SIZES. Returns how many.
 */
int et_deliver_open_sizes(int64_t tune_at, const int64_t *extra, int n_extra,
                          int64_t out[ET_DELIVER_MAX_SIZES]);

/* The size in a trial's tuned_at text ("x=256"), 0 when none. */
int64_t et_deliver_tuned_at(const et_db_trial *t);

/*
 * Whether kernel k (opts applied), rendered for backend be, is the kernel
 * trial t verified: its source and launch geometry, with an open axis at
 * the trial's tune-at size, hash to t->source_hash (an outcome other than
 * ok, or no hash, is never reproduced).
 */
bool et_deliver_reproduces(const et_kernel *k, et_backend_kind be,
                           const et_db_trial *t);

/* The problem an open kernel k serves at size n of its open axis oa, made
 * from k's einsum without et_einsum_set_size (every dimension of the axis
 * is n: an open axis never broadcasts), so that a reference built from it
 * shares no mistake of the kernel's own resizing. */
void et_deliver_problem_at(const et_kernel *k, int oa, int64_t n,
                           et_einsum *out);

/* What a verification before delivery found. */
typedef struct et_deliver_result {
    bool ok;                    /* every size passed */
    int n_sizes;                /* sizes checked (1 for a concrete kernel) */
    int64_t size[ET_DELIVER_MAX_SIZES]; /* the open axis' sizes checked */
    double max_norm_err;        /* over every size and input set */
    char summary[512];          /* "verified at x=1, 2, 13, 16: max
                                 * normalized error 0.41 (limit 1)" */
    char reason[1024];          /* the first failure, "" when ok */
} et_deliver_result;

/*
 * Builds k's kernel on dev and verifies it against the extended-precision
 * reference (measure/verify.h, no baseline): a concrete kernel at its own
 * sizes on 3 input sets, an open one at each of sizes[0..n_sizes-1] on
 * one input set each. Returns ET_OK when every launch ran (the verdict is
 * res->ok, with res->reason); a build or device failure returns its
 * status with err filled (res->reason says it too).
 */
et_status et_deliver_verify(et_device *dev, const et_kernel *k,
                            const int64_t *sizes, int n_sizes,
                            et_deliver_result *res, et_error *err);

#endif /* ET_TUNE_DELIVER_H */
