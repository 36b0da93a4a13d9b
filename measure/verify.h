/*
 * verify.h - statistical verification of a kernel's output
 * (docs/measurement.md).
 *
 * A verifier is made once per run and einsum: it draws R input sets (R = 3
 * by default; trial r uses distribution r mod 3: uniform on [-1, 1],
 * standard normal, mixed magnitudes), in each operand's dtype, and computes
 * their long-double references and per-element sums of |terms| once
 * (et_reference_eval). For an output element that is a sum of K terms
 * (K = product of the summed index sizes, 1 if none), each a product of m
 * operands, the bound for any order of evaluation is
 *     bound = gamma_n * sum|terms| + u_out * |ref|,
 *     n = K + m - 2, gamma_n = n u / (1 - n u),
 * u the unit roundoff of the accumulation dtype (2^-24 f32, 2^-53 f64),
 * u_out that of the output dtype (0 when it is the accumulation dtype).
 * When n u >= 1 the bound is infinite. The normalized error of an element
 * is |out - ref| / bound (a zero bound demands an exact result: error 0
 * gives 0, anything else infinity).
 *
 * A candidate passes when, in every trial, the guard zones are intact,
 * nothing is NaN or Inf where the reference is finite, every normalized
 * error is <= 1, and a one-sided Welch t-test (GSL's t distribution) over a
 * seeded sample of at most 100 000 normalized errors per trial (the same
 * element positions for every kernel, the trials pooled) does not find the
 * candidate's mean error larger than the baseline's (the untransformed
 * kernel, recorded with et_verifier_set_baseline*) at alpha = 0.001 with a
 * ratio of means of at least 2 (both needed, so a correct kernel with
 * another summation order passes). Without a baseline the test is skipped
 * and p is NaN.
 *
 * Device buffers: et_verify_kernel uploads the inputs of every trial into
 * guarded buffers once and keeps them for later candidates on the same
 * device. They are re-created when the device changes, when its worker was
 * restarted (et_device_epoch changes: buffers of a dead worker are gone),
 * and after any failed candidate (a buggy kernel may have written into an
 * input). Call et_verifier_release before closing the device.
 *
 * Ownership: et_verifier_init returns a verifier freed with
 * et_verifier_free. Not thread-safe.
 */
#ifndef ET_VERIFY_H
#define ET_VERIFY_H

#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/outcome.h"
#include "measure/timing.h"

#include <stdbool.h>
#include <stdint.h>

/* Options; the zero value means the defaults. */
typedef struct et_verify_opts {
    int trials;      /* input sets; 0 -> 3 */
    uint64_t seed;   /* inputs and sample positions; 0 -> a fixed default */
    int sample;      /* normalized errors sampled per trial; 0 -> 100000 */
    double alpha;    /* significance of the one-sided test; 0 -> 0.001 */
    double effect;   /* ratio of means also needed to fail; 0 -> 2 */
} et_verify_opts;

#define ET_VERIFY_LAUNCHES 8

typedef struct et_verify_result {
    et_outcome outcome;    /* ok or wrong_result */
    char reason[1024];     /* the failing element, guard or test; "" if ok */
    int trials;
    double max_norm_err;   /* over every element of every trial */
    int64_t n_bad;         /* elements out of bound or not finite */
    double mean_norm_err;  /* over the sample */
    double p_value;        /* one-sided Welch test; NaN without baseline */
    double mean_ratio;     /* candidate mean / baseline mean; NaN without */
    /* device seconds of the trials' launches after the first (the first
     * may carry a driver's compile), at most ET_VERIFY_LAUNCHES: what a
     * slow kernel's estimate can come from without launching it again */
    int n_launch;
    double launch_s[ET_VERIFY_LAUNCHES];
} et_verify_result;

typedef struct et_verifier et_verifier;

/*
 * Draws the inputs and computes the references. ET_ERR_NOMEM, or the
 * reference evaluator's status, with err filled.
 */
et_status et_verifier_init(const et_einsum *e, const et_verify_opts *opts,
                           et_verifier **out, et_error *err);
/* Frees host memory; device buffers must have been released before. */
void et_verifier_free(et_verifier *v);

int et_verifier_trials(const et_verifier *v);
/* Input data of operand k in trial r (dense, in the operand's dtype). */
const void *et_verifier_input(const et_verifier *v, int trial, int k);
/* The reference of output element i of trial r (kept as two doubles whose
 * sum is the long double value), and the bounds of trial r's elements. */
long double et_verifier_reference(const et_verifier *v, int trial,
                                  int64_t i);
const double *et_verifier_bounds(const et_verifier *v, int trial);
/* The distribution of trial r. */
const char *et_verifier_dist_name(const et_verifier *v, int trial);

/*
 * Checks host outputs: outs[r] holds trial r's output in the output dtype.
 * guard_faults may be NULL; else guard_faults[r] is NULL when trial r's
 * guards were intact, or says what was overwritten. Fills r; returns ET_OK
 * (the verdict is r->outcome) or ET_ERR_NOMEM.
 */
et_status et_verify_outputs(et_verifier *v, const void *const *outs,
                            const char *const *guard_faults,
                            et_verify_result *res);

/*
 * Records the baseline's sample of normalized errors from its outputs. The
 * baseline must pass the bound checks itself: otherwise nothing is recorded
 * and ET_ERR_INTERNAL is returned with res saying why.
 */
et_status et_verifier_set_baseline(et_verifier *v, const void *const *outs,
                                   et_verify_result *res);
bool et_verifier_has_baseline(const et_verifier *v);

/*
 * Runs program p (arguments: output, input 0, input 1, ..., a batched
 * einsum's rows each an argument: et_kernel_args) once per trial
 * on dev, with guarded buffers and a NaN-filled output, and checks the
 * outputs. Returns ET_OK when every launch ran (the verdict is
 * res->outcome); a failing device call returns its status with err filled
 * and res->outcome the outcome it stands for (launch_error, timeout,
 * crash).
 */
et_status et_verify_kernel(et_verifier *v, et_device *dev, et_program *p,
                           const et_launch *geom, et_verify_result *res,
                           et_error *err);

/* As et_verify_kernel, then records the outputs as the baseline. */
et_status et_verifier_baseline_kernel(et_verifier *v, et_device *dev,
                                      et_program *p, const et_launch *geom,
                                      et_verify_result *res, et_error *err);

/*
 * The device arguments of trial 0 (uploading them if needed), for timing
 * the kernel on the data it was verified on. args and offsets need room for
 * ET_MAX_ARGS entries (the kernel's arguments, transforms/kernel.h); they
 * stay valid until the next call on v.
 */
et_status et_verifier_args(et_verifier *v, et_device *dev, et_buffer **args,
                           size_t *offsets, int *nargs, et_error *err);

/* Frees the device buffers the verifier holds on its current device. */
void et_verifier_release(et_verifier *v);

/* ---- one candidate, start to end ---------------------------------------- */

/* What became of one candidate. Plain value. */
typedef struct et_evaluation {
    et_result result;        /* the outcome and its reason */
    bool verified;           /* verification ran to a verdict */
    et_verify_result verify;
    bool timed;              /* the timing protocol ran */
    et_timing timing;
    /* wall time of each phase: building the program (on PoCL the kernel
     * is compiled again at its first launch), the verification launches,
     * and timing (the early-cut probe and the timing protocol) */
    double build_s, verify_s, timing_s;
    char compiler_said[1024]; /* a build's warnings, "" when none */
} et_evaluation;

/*
 * Builds kernel `name` from `source` on dev, verifies it (every trial) and,
 * if it passes, times it with the timing protocol on trial 0's data
 * (topts may be NULL; its bound_s is the early cut). With a bound, the
 * warm-ups and the first timed run come before verification: a candidate
 * over the bound is slower_than_bound without being verified (it cannot
 * be chosen; ev->verified stays false, ev->timing holds that one run, as
 * when the protocol itself cuts). The outcome is in
 * ev->result: ok, build_error, launch_error, wrong_result, timeout, crash
 * or slower_than_bound, each with its reason. Returns ET_OK whenever an
 * outcome was recorded; only host failures (out of memory) return an
 * error. This is the path `eintune run --verify --time` and the tuning
 * loop share.
 */
et_status et_evaluate_kernel(et_verifier *v, et_device *dev,
                             const char *source, const char *name,
                             const et_launch *geom,
                             const et_timing_opts *topts, et_evaluation *ev,
                             et_error *err);

/* The log line: "verified: 3 trials, max normalized error 0.031 (limit 1),
 * mean error 0.98x the untransformed kernel's", with " (larger at
 * one-sided Welch p = 0.004)" appended only when p < 0.05 (a larger p
 * says nothing); without a baseline the line ends after the limit. */
void et_verify_summary(const et_verify_result *res, char *buf, size_t cap);

#endif
