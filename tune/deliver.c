/*
 * deliver.c - the checks a kernel passes before it is handed to a user
 * (deliver.h): the source hash against the trial's, and verification on
 * the device at every size it is handed out for.
 */
#include "tune/deliver.h"

#include "einsum/einsum.h"
#include "base/sbuf.h"
#include "measure/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_prime(int64_t p)
{
    if (p < 2)
        return false;
    for (int64_t q = 2; q * q <= p; q++)
        if (p % q == 0)
            return false;
    return true;
}

static void add_size(int64_t *out, int *n, int64_t s)
{
    if (s < 1 || *n >= ET_DELIVER_MAX_SIZES)
        return;
    for (int i = 0; i < *n; i++)
        if (out[i] == s)
            return;
    out[(*n)++] = s;
}

int et_deliver_open_sizes(int64_t tune_at, const int64_t *extra, int n_extra,
                          int64_t out[ET_DELIVER_MAX_SIZES])
{
    int n = 0;
    add_size(out, &n, 1);
    add_size(out, &n, 2);
    int64_t p = tune_at > 3 ? tune_at - 1 : 3;
    while (p > 2 && !is_prime(p))
        p--;
    add_size(out, &n, p);
    add_size(out, &n, tune_at);
    for (int i = 0; i < n_extra; i++)
        add_size(out, &n, extra[i]);
    return n;
}

int64_t et_deliver_tuned_at(const et_db_trial *t)
{
    const char *eq = strchr(t->tuned_at, '=');
    return eq ? strtoll(eq + 1, NULL, 10) : 0;
}

bool et_deliver_reproduces(const et_kernel *k, et_backend_kind be,
                           const et_db_trial *t)
{
    if (t->outcome != ET_OUTCOME_OK || !t->source_hash[0])
        return false;
    et_kernel *c = et_kernel_clone(k);
    if (!c)
        return false;
    bool same = false;
    int64_t at = et_deliver_tuned_at(t);
    if (et_einsum_open_axis(&c->e) >= 0 &&
        (at < 1 || et_kernel_set_open_size(c, at, NULL) != ET_OK))
        goto done;
    et_rendered r;
    memset(&r, 0, sizeof r);
    if (et_kernel_render(c, be, NULL, &r) == ET_OK) {
        char hash[ET_DB_HASH_LEN];
        et_db_source_hash(r.source, &r.launch, hash);
        same = strcmp(hash, t->source_hash) == 0;
    }
    et_rendered_free(&r);
done:
    et_kernel_free(c);
    return same;
}

void et_deliver_problem_at(const et_kernel *k, int oa, int64_t n,
                           et_einsum *r)
{
    *r = k->e;
    r->idx[oa].size = n;
    for (int op = 0; op < r->n_ops; op++)
        for (int d = 0; d < r->op[op].rank; d++)
            if (r->op[op].idx[d] == oa)
                r->op[op].dim[d] = n;
    for (int d = 0; d < r->out.rank; d++)
        if (r->out.idx[d] == oa)
            r->out.dim[d] = n;
}

/* Verifies program prog (k's kernel, launched at k's sizes) against the
 * problem ref; fills res. */
static et_status verify_one(et_device *dev, et_program *prog,
                            const et_kernel *k, const et_einsum *ref,
                            int trials, et_deliver_result *res,
                            et_error *err)
{
    et_launch geom;
    et_status st = et_kernel_launch(k, dev->info.target.backend, &geom);
    if (st != ET_OK)
        return et_errorf(err, st, "no launch geometry: %s",
                         et_status_str(st));
    et_verify_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.trials = trials;
    et_verifier *v = NULL;
    st = et_verifier_init(ref, &vo, &v, err);
    if (st != ET_OK)
        return st;
    et_verify_result vr;
    memset(&vr, 0, sizeof vr);
    st = et_verify_kernel(v, dev, prog, &geom, &vr, err);
    et_verifier_release(v);
    et_verifier_free(v);
    if (st != ET_OK)
        return st;
    if (vr.max_norm_err > res->max_norm_err)
        res->max_norm_err = vr.max_norm_err;
    if (vr.outcome != ET_OUTCOME_OK) {
        res->ok = false;
        if (!res->reason[0])
            snprintf(res->reason, sizeof res->reason, "%.900s", vr.reason);
    }
    return ET_OK;
}

et_status et_deliver_verify(et_device *dev, const et_kernel *k,
                            const int64_t *sizes, int n_sizes,
                            et_deliver_result *res, et_error *err)
{
    memset(res, 0, sizeof *res);
    res->ok = true;
    int oa = et_einsum_open_axis(&k->e);
    et_rendered r;
    memset(&r, 0, sizeof r);
    et_program *prog = NULL;
    et_kernel *c = NULL;
    et_einsum *ref = malloc(sizeof *ref);
    if (!ref)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = et_kernel_render(k, dev->info.target.backend, NULL, &r);
    if (st != ET_OK) {
        et_errorf(err, st, "cannot render the kernel: %s", et_status_str(st));
        goto done;
    }
    st = et_program_build(dev, r.source, r.name, &prog, err);
    if (st != ET_OK)
        goto done;
    if (oa < 0) {
        res->n_sizes = 1;
        st = verify_one(dev, prog, k, &k->e, 3, res, err);
    } else {
        c = et_kernel_clone(k);
        if (!c) {
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (int i = 0; i < n_sizes && i < ET_DELIVER_MAX_SIZES; i++) {
            et_diag d;
            memset(&d, 0, sizeof d);
            st = et_kernel_set_open_size(c, sizes[i], &d);
            if (st != ET_OK) {
                et_errorf(err, st, "%s=%lld: %s", k->e.idx[oa].name,
                          (long long)sizes[i], d.msg);
                goto done;
            }
            res->size[res->n_sizes++] = sizes[i];
            bool was_ok = res->ok;
            et_deliver_problem_at(k, oa, sizes[i], ref);
            st = verify_one(dev, prog, c, ref, 1, res, err);
            if (st != ET_OK)
                goto done;
            if (was_ok && !res->ok) {
                char tmp[sizeof res->reason];
                snprintf(tmp, sizeof tmp, "at %s=%lld: %.900s",
                         k->e.idx[oa].name, (long long)sizes[i], res->reason);
                memcpy(res->reason, tmp, sizeof tmp);
            }
        }
    }
    et_sbuf b;
    et_sbuf_fixed(&b, res->summary, sizeof res->summary);
    et_sbuf_printf(&b, "%s", res->ok ? "verified" : "fails verification");
    if (oa >= 0) {
        et_sbuf_printf(&b, " at %s=", k->e.idx[oa].name);
        for (int i = 0; i < res->n_sizes; i++)
            et_sbuf_printf(&b, "%s%lld", i ? ", " : "",
                           (long long)res->size[i]);
    }
    et_sbuf_printf(&b, ": max normalized error %.3g (limit 1)",
                   res->max_norm_err);
done:
    if (st != ET_OK) {
        res->ok = false;
        if (!res->reason[0])
            snprintf(res->reason, sizeof res->reason, "%.900s", err->msg);
    }
    if (prog)
        et_program_free(dev, prog);
    et_kernel_free(c);
    et_rendered_free(&r);
    free(ref);
    return st;
}
