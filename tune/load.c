/*
 * load.c - a kernel to be loaded in a caller's own context (load.h): its
 * rendering from the opts for the device's limits and backend, and its
 * verification on host inputs run through the caller's context.
 */
#include "tune/load.h"

#include "measure/verify.h"
#include "tune/deliver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status et_load_render(const et_einsum *e, const et_device_info *info,
                         const et_best *best, const et_opt *list, int n,
                         et_load_kernel *k, et_rendered *r, bool *refused,
                         et_error *err)
{
    et_kernel *kern = NULL;
    *refused = false;
    /* an answer with an open axis runs the einsum with that axis open */
    et_status st = et_kernel_init(best ? &best->e : e, &info->target, &kern);
    if (st != ET_OK)
        return et_errorf(err, st, "cannot build the kernel: %s",
                         et_status_str(st));
    char reason[512] = "";
    st = et_kernel_apply_opts(kern, list, n, reason, sizeof reason);
    if (st != ET_OK) {
        *refused = true;
        et_errorf(err, st, "%s", reason);
        goto cleanup;
    }
    et_opts_format(list, n, k->opts, sizeof k->opts);
    st = et_kernel_render(kern, info->target.backend, NULL, r);
    if (st != ET_OK) {
        et_errorf(err, st, "cannot render the kernel for %s: %s", info->name,
                  et_status_str(st));
        goto cleanup;
    }
    snprintf(k->name, sizeof k->name, "%s", r->name);
    k->launch = r->launch;
    k->open_axis = et_einsum_open_axis(&kern->e);
    k->reproduced = best && et_deliver_reproduces(kern, info->target.backend,
                                                  &best->trial);
    k->tune_at = best ? et_deliver_tuned_at(&best->trial) : 0;
    if (k->open_axis >= 0) {
        k->kern = kern;
        kern = NULL;
    }
cleanup:
    et_kernel_free(kern);
    return st;
}

/* out_bytes of NaN in dtype t: an element the kernel never writes shows */
static void fill_nan(void *out, et_dtype t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (t == ET_F64)
            ((double *)out)[i] = NAN;
        else if (t == ET_F32)
            ((float *)out)[i] = NAN;
        else
            ((uint16_t *)out)[i] = 0x7e00;
    }
}

/* Verifies the kernel at one size: the problem ref, launched with g. */
static et_status verify_at(const et_einsum *ref, const et_launch *g,
                           int trials, et_load_run_fn run, void *arg,
                           double *max_err, char *why, size_t cap,
                           et_error *err)
{
    et_verify_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.trials = trials;
    et_verifier *v = NULL;
    et_status st = et_verifier_init(ref, &vo, &v, err);
    if (st != ET_OK)
        return st;
    void *outs[3] = {NULL, NULL, NULL};
    size_t in_bytes[ET_MAX_OPERANDS];
    const void *in[ET_MAX_OPERANDS];
    int64_t n_out = et_einsum_operand_elems(ref, -1);
    size_t out_bytes = (size_t)n_out * et_dtype_size(ref->out.dtype);
    for (int op = 0; op < ref->n_ops; op++)
        in_bytes[op] = (size_t)et_einsum_operand_elems(ref, op) *
                       et_dtype_size(ref->op[op].dtype);
    for (int r = 0; r < trials && st == ET_OK; r++) {
        outs[r] = malloc(out_bytes ? out_bytes : 1);
        if (!outs[r]) {
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            break;
        }
        fill_nan(outs[r], ref->out.dtype, n_out);
        for (int op = 0; op < ref->n_ops; op++)
            in[op] = et_verifier_input(v, r, op);
        st = run(arg, g, in, in_bytes, ref->n_ops, outs[r], out_bytes, err);
    }
    if (st == ET_OK) {
        et_verify_result vr;
        memset(&vr, 0, sizeof vr);
        st = et_verify_outputs(v, (const void *const *)outs, NULL, &vr);
        if (st == ET_OK) {
            if (vr.max_norm_err > *max_err)
                *max_err = vr.max_norm_err;
            if (vr.outcome != ET_OUTCOME_OK)
                snprintf(why, cap, "%s", vr.reason);
        }
    }
    for (int r = 0; r < 3; r++)
        free(outs[r]);
    et_verifier_free(v);
    return st;
}

et_status et_load_verify(et_load_kernel *k, const et_einsum *e,
                         et_backend_kind be, const char *device,
                         et_load_run_fn run, void *arg, et_error *err)
{
    et_error e2 = {{0}};
    char why[1024] = "";
    double max_err = 0;
    et_status st = ET_OK;
    et_einsum *ref = malloc(sizeof *ref);
    if (!ref)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    int oa = k->open_axis;
    int64_t sizes[ET_DELIVER_MAX_SIZES];
    int n = 1;
    if (oa >= 0) {
        int64_t asked = e->idx[oa].size;
        n = et_deliver_open_sizes(k->tune_at > 0 ? k->tune_at : asked,
                                  &asked, 1, sizes);
    }
    for (int i = 0; i < n && st == ET_OK && !why[0]; i++) {
        et_launch g = k->launch;
        if (oa >= 0) {
            st = et_kernel_set_open_size(k->kern, sizes[i], NULL);
            if (st == ET_OK)
                st = et_kernel_launch(k->kern, be, &g);
            if (st != ET_OK) {
                et_errorf(&e2, st, "no launch at %s=%lld", e->idx[oa].name,
                          (long long)sizes[i]);
                break;
            }
            et_deliver_problem_at(k->kern, oa, sizes[i], ref);
        } else {
            *ref = *e;
        }
        st = verify_at(ref, &g, oa >= 0 ? 1 : 3, run, arg, &max_err, why,
                       sizeof why, &e2);
        if (st == ET_OK && why[0] && oa >= 0) {
            char tmp[sizeof why];
            snprintf(tmp, sizeof tmp, "at %s=%lld: %.900s", e->idx[oa].name,
                     (long long)sizes[i], why);
            memcpy(why, tmp, sizeof tmp);
        }
    }
    if (oa >= 0 && k->kern)
        et_kernel_set_open_size(k->kern, e->idx[oa].size, NULL);
    free(ref);
    const char *opts = k->opts[0] ? k->opts : "untransformed";
    if (st != ET_OK)
        return et_errorf(err, st, "cannot verify the kernel (%s) on %s: %s",
                         opts, device, e2.msg);
    if (why[0])
        return et_errorf(err, ET_ERR_BUILD,
                         "the kernel (%s) fails verification on %s: %s",
                         opts, device, why);
    return ET_OK;
}
