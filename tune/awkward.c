/*
 * awkward.c - the awkward sizes of an open axis (see tune.h): 1 and the
 * largest prime below the tuned size, their verifiers, a kernel's launch
 * there, and the evaluation that checks a candidate at them too (the one
 * both the local loop and an evaluating rank make).
 */
#include "tune/tune.h"

#include "transforms/kernel.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest prime below n (0 when none). */
static int64_t prime_below(int64_t n)
{
    for (int64_t p = n - 1; p >= 2; p--) {
        bool prime = true;
        for (int64_t q = 2; q * q <= p && prime; q++)
            prime = p % q != 0;
        if (prime)
            return p;
    }
    return 0;
}

et_status et_tune_awkward_init(const et_einsum *e, const et_verify_opts *vo,
                               et_tune_awkward *a, et_error *err)
{
    memset(a, 0, sizeof *a);
    a->axis = et_einsum_open_axis(e);
    if (a->axis < 0)
        return ET_OK;
    snprintf(a->name, sizeof a->name, "%s", e->idx[a->axis].name);
    int64_t w = e->idx[a->axis].size;
    int64_t cand[ET_TUNE_AWKWARD_MAX] = {1, prime_below(w)};
    if (!vo) {
        /* the sizes alone */
        for (int i = 0; i < ET_TUNE_AWKWARD_MAX; i++)
            if (cand[i] >= 1 && cand[i] != w &&
                !(i == 1 && cand[1] == cand[0]))
                a->size[a->n++] = cand[i];
        return ET_OK;
    }
    et_verify_opts one = *vo;
    one.trials = 1;
    et_einsum *ea = malloc(sizeof *ea);
    if (!ea)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = ET_OK;
    for (int i = 0; i < ET_TUNE_AWKWARD_MAX && st == ET_OK; i++) {
        if (cand[i] < 1 || cand[i] == w || (i == 1 && cand[1] == cand[0]))
            continue;
        *ea = *e;
        if (et_einsum_set_size(ea, a->axis, cand[i], NULL) != ET_OK)
            continue;
        st = et_verifier_init(ea, &one, &a->ver[a->n], err);
        if (st == ET_OK)
            a->size[a->n++] = cand[i];
    }
    free(ea);
    if (st != ET_OK)
        et_tune_awkward_free(a);
    return st;
}

void et_tune_awkward_release(et_tune_awkward *a)
{
    for (int i = 0; i < a->n; i++)
        et_verifier_release(a->ver[i]);
}

void et_tune_awkward_free(et_tune_awkward *a)
{
    for (int i = 0; i < ET_TUNE_AWKWARD_MAX; i++) {
        if (a->ver[i]) {
            et_verifier_release(a->ver[i]);
            et_verifier_free(a->ver[i]);
        }
        a->ver[i] = NULL;
    }
    a->n = 0;
}

et_status et_tune_awkward_launch(const et_tune_awkward *a,
                                 const et_kernel *k, et_backend_kind be,
                                 et_launch geom[ET_TUNE_AWKWARD_MAX],
                                 et_error *err)
{
    for (int i = 0; i < a->n; i++) {
        et_kernel *c = et_kernel_clone(k);
        if (!c)
            return et_errorf(err, ET_ERR_NOMEM, "out of memory");
        et_diag d;
        memset(&d, 0, sizeof d);
        et_status st = et_kernel_set_open_size(c, a->size[i], &d);
        if (st == ET_OK)
            st = et_kernel_launch(c, be, &geom[i]);
        et_kernel_free(c);
        if (st != ET_OK)
            return et_errorf(err, st, "the launch at %s=%lld: %s", a->name,
                             (long long)a->size[i],
                             d.msg[0] ? d.msg : et_status_str(st));
    }
    return ET_OK;
}

/* One awkward size: build, launch with geom, check with ver. */
static void verify_at(et_tune_awkward *a, int i, const et_launch *geom,
                      et_device *dev, const char *source, const char *name,
                      et_evaluation *ev)
{
    et_program *prog = NULL;
    et_error e2 = {{0}};
    et_verify_result vr;
    memset(&vr, 0, sizeof vr);
    et_status st = et_program_build(dev, source, name, &prog, &e2);
    if (st == ET_OK)
        st = et_verify_kernel(a->ver[i], dev, prog, geom, &vr, &e2);
    if (prog)
        et_program_free(dev, prog);
    if (st != ET_OK) {
        ev->result.outcome = vr.outcome != ET_OUTCOME_OK
                                 ? vr.outcome
                                 : st == ET_ERR_BUILD
                                       ? ET_OUTCOME_BUILD_ERROR
                                       : ET_OUTCOME_LAUNCH_ERROR;
        snprintf(ev->result.reason, sizeof ev->result.reason,
                 "at %s=%lld: %.900s", a->name, (long long)a->size[i],
                 e2.msg);
        et_verifier_release(a->ver[i]);
    } else if (vr.outcome != ET_OUTCOME_OK) {
        ev->result.outcome = vr.outcome;
        snprintf(ev->result.reason, sizeof ev->result.reason,
                 "at %s=%lld: %.900s", a->name, (long long)a->size[i],
                 vr.reason);
        et_verifier_release(a->ver[i]);
    }
}

et_status et_tune_evaluate(et_verifier *ver, et_tune_awkward *a,
                           const et_launch *geom_at, et_device *dev,
                           const char *source, const char *name,
                           const et_launch *geom, const et_timing_opts *to,
                           et_evaluation *ev, et_error *err)
{
    et_status st = et_evaluate_kernel(ver, dev, source, name, geom, to, ev,
                                      err);
    if (st != ET_OK || !a || !geom_at)
        return st;
    for (int i = 0; i < a->n && ev->result.outcome == ET_OUTCOME_OK; i++)
        verify_at(a, i, &geom_at[i], dev, source, name, ev);
    return ET_OK;
}
