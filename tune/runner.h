/*
 * runner.h - one kernel run on host arrays on an open device: the kernel
 * rendered from opts (or the best known kernel's), built, checked before
 * use where it is not the kernel a trial verified (tune/deliver.h), run
 * on the caller's inputs, its output checked against the
 * extended-precision reference within the rigorous bound, verified
 * statistically against the untransformed kernel, and timed.
 *
 * Nothing here opens or closes a device or a database: the caller owns
 * them. Failures return a status with err filled; the figures of each
 * step are kept in the et_krun. Not thread-safe (as measure/).
 */
#ifndef ET_TUNE_RUNNER_H
#define ET_TUNE_RUNNER_H

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "transforms/kernel.h"
#include "tune/best.h"

#include <stdbool.h>

/* A kernel's run on host arrays; zero it, then set e, dev, best, log. */
typedef struct et_krun {
    const et_einsum *e;         /* the problem run (outlives the run) */
    et_device *dev;             /* open; the caller's */
    const et_best *best;        /* the best known kernel run, NULL when
                                 * opts are given; the caller's */
    et_log_fn log;              /* log lines; NULL: silent */
    void *log_arg;
    et_kernel *kern;            /* built (et_krun_build) */
    et_rendered rend;
    et_program *prog;
    et_buffer *buf[ET_MAX_ARGS]; /* one per kernel argument (rend's) */
    int n_bufs;
    et_verifier *ver;
    /* et_krun_check_output's figures */
    bool checked;
    int output_ok;
    double output_max_norm_err;
    char output_reason[512];    /* the first element out of bound */
    /* et_krun_verify's */
    bool verified;
    et_verify_result vr;
    char summary[256];          /* "verified: 3 trials, ..." */
    /* et_krun_time's */
    bool timed;
    et_timing timing;
} et_krun;

/* Logs the best known kernel b found for r->e ("best known: OPTS (tuned
 * as E, 0.123 ms)"; where it was tuned and applied for one tuned at other
 * sizes or with an open axis). */
void et_krun_say_best(const et_krun *r, const et_best *b);

/*
 * Builds the kernel of r->e (r->best's einsum with an open axis when
 * r->best is set) with opts[0..n_opts-1] applied, rendered for the
 * device's backend; a best kernel that is not the one its trial verified
 * is verified at these sizes first (et_krun_verify), its outcome logged.
 * ET_ERR_REFUSED with the reason for opts that break a rule; ET_ERR_BUILD
 * for a kernel that fails that verification; the layers' statuses.
 */
et_status et_krun_build(et_krun *r, const et_opt *opts, int n_opts,
                        et_error *err);

/* Runs the built kernel on in[0..n_ops-1] (host arrays of the problem's
 * dtypes) into out; the device buffers are made at the first run. */
et_status et_krun_exec(et_krun *r, void *out, const void *const *in,
                       et_error *err);

/* Checks out, the kernel's output on in, element by element against the
 * extended-precision reference within the rigorous bound; the figures go
 * to r (checked, output_ok, output_max_norm_err, output_reason). */
et_status et_krun_check_output(et_krun *r, const void *const *in,
                               const void *out, et_error *err);

/* The tuner's statistical verification of the built kernel, the
 * untransformed kernel as the baseline; the figures go to r (verified,
 * vr, summary). */
et_status et_krun_verify(et_krun *r, et_error *err);

/* Times the kernel run last (et_krun_exec); the figures go to r->timing
 * (timed). */
et_status et_krun_time(et_krun *r, et_error *err);

/* GOps/s of e over all dtypes at median_s (0 when median_s is not
 * positive). */
double et_krun_gops(const et_einsum *e, double median_s);

/* Frees what r holds (on r->dev, when set) but r->dev itself. */
void et_krun_release(et_krun *r);

#endif /* ET_TUNE_RUNNER_H */
