/*
 * runner.c - one kernel run on host arrays on an open device (runner.h):
 * the kernel built and checked before use, its runs, the check of its
 * output against the reference, its verification and its timing.
 *
 * Verification is two things: a check of the output on the caller's own
 * inputs against the extended-precision reference, element by element
 * within the rigorous bound (et_krun_check_output), and the statistical
 * verification of the tuner (R input sets drawn by the verifier, the
 * untransformed kernel as the baseline of the one-sided test:
 * et_krun_verify).
 */
#include "tune/runner.h"

#include "tune/deliver.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A printf-formatted line to r's log (nothing without one). */
static void say(const et_krun *r, et_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const et_krun *r, et_log_level lvl, const char *fmt, ...)
{
    if (!r->log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->log(r->log_arg, lvl, buf);
}

void et_krun_say_best(const et_krun *r, const et_best *b)
{
    const char *opts = b->opts[0] ? b->opts : "untransformed";
    if (b->source == ET_BEST_FALLBACK)
        say(r, ET_LOG_INFO,
            "best known: %s (tuned as %s at %s, applied at %s: "
            "verified here before use)",
            opts, b->trial.einsum_text, b->tuned_at, b->applied_at);
    else if (b->source == ET_BEST_OPEN)
        say(r, ET_LOG_INFO,
            "best known: %s (tuned as %s with open axis %s at %s, "
            "%.4g ms there; applied at %s)",
            opts, b->trial.einsum_text, b->e.idx[b->open_axis].name,
            b->tuned_at, b->trial.median_s * 1e3, b->applied_at);
    else
        say(r, ET_LOG_INFO, "best known: %s (tuned as %s, %.4g ms)", opts,
            b->trial.einsum_text, b->trial.median_s * 1e3);
}

/* Builds program of rendered kernel rd on the run's device. */
static et_status build(et_krun *r, const et_rendered *rd, et_program **p,
                       et_error *err)
{
    et_error e = {{0}};
    et_status st = et_program_build(r->dev, rd->source, rd->name, p, &e);
    if (st != ET_OK)
        return et_errorf(err, st, "cannot build kernel %s: %s", rd->name,
                         e.msg);
    if (e.msg[0])
        say(r, ET_LOG_DEBUG, "compiler output for %s:\n%s", rd->name, e.msg);
    return ET_OK;
}

/* A best kernel that is not the very kernel its trial verified (opts
 * tuned at other sizes, an open entry, a renaming): verified at these
 * sizes before use (tune/deliver.h). */
static et_status check_before_use(et_krun *r, et_error *err)
{
    const et_best *b = r->best;
    et_status st = et_krun_verify(r, err);
    if (st == ET_OK && r->vr.outcome != ET_OUTCOME_OK)
        st = et_errorf(err, ET_ERR_BUILD,
                       "the kernel (%s, tuned as %s%s%s) fails "
                       "verification at these sizes: %s",
                       b->opts[0] ? b->opts : "untransformed",
                       b->trial.einsum_text, b->tuned_at[0] ? " at " : "",
                       b->tuned_at, r->vr.reason);
    if (st == ET_OK && b->tuned_at[0])
        say(r, ET_LOG_INFO, "the kernel tuned at %s, applied at %s: %s",
            b->tuned_at, b->applied_at, r->summary);
    else if (st == ET_OK)
        say(r, ET_LOG_INFO, "the kernel (tuned as %s) at these sizes: %s",
            b->trial.einsum_text, r->summary);
    if (st != ET_OK) {
        et_program_free(r->dev, r->prog);
        r->prog = NULL;
        et_rendered_free(&r->rend);
    }
    return st;
}

et_status et_krun_build(et_krun *r, const et_opt *opts, int n_opts,
                        et_error *err)
{
    char reason[512] = "";
    et_status st;
    /* an answer with an open axis runs the einsum with that axis open */
    if (et_kernel_init(r->best ? &r->best->e : r->e, &r->dev->info.target,
                       &r->kern) != ET_OK) {
        st = et_errorf(err, ET_ERR_INTERNAL, "cannot build the kernel IR");
        goto out;
    }
    st = et_kernel_apply_opts(r->kern, opts, n_opts, reason, sizeof reason);
    if (st != ET_OK) {
        st = et_errorf(err, ET_ERR_REFUSED, "%s", reason);
        goto out;
    }
    if (et_kernel_render(r->kern, r->dev->info.target.backend, NULL,
                         &r->rend) != ET_OK) {
        st = et_errorf(err, ET_ERR_INTERNAL, "cannot render the kernel");
        goto out;
    }
    say(r, ET_LOG_DEBUG, "kernel %s", r->rend.name);
    st = build(r, &r->rend, &r->prog, err);
    if (st == ET_OK && r->best &&
        !et_deliver_reproduces(r->kern, r->dev->info.target.backend,
                               &r->best->trial))
        st = check_before_use(r, err);
out:
    if (st != ET_OK) {
        et_kernel_free(r->kern);
        r->kern = NULL;
    }
    return st;
}

et_status et_krun_exec(et_krun *r, void *out, const void *const *in,
                       et_error *err)
{
    const et_einsum *e = r->e;
    const et_rendered *rd = &r->rend;
    et_error e2 = {{0}};
    et_status st = ET_OK;
    /* argument a is operand k's array (-1 the output), or a row of it:
     * the rows of a batched einsum's host arrays lie one after another */
    size_t bytes[ET_MAX_ARGS], at[ET_MAX_ARGS];
    for (int a = 0; a < rd->n_args; a++) {
        int k = rd->arg_operand[a];
        bytes[a] = (size_t)et_einsum_row_elems(e, k) *
                   et_dtype_size(k < 0 ? e->out.dtype : e->op[k].dtype);
        at[a] = rd->arg_row[a] < 0 ? 0 : (size_t)rd->arg_row[a] * bytes[a];
    }
    if (r->n_bufs == 0) {
        for (int a = 0; a < rd->n_args; a++) {
            st = et_buffer_alloc(r->dev, bytes[a] ? bytes[a] : 1, &r->buf[a],
                                 err);
            if (st != ET_OK)
                return st;
            r->n_bufs = a + 1;
        }
    }
    for (int a = 0; a < r->n_bufs; a++) {
        int k = rd->arg_operand[a];
        if (k < 0)
            continue;
        st = et_buffer_write(r->dev, r->buf[a], 0,
                             (const char *)in[k] + at[a], bytes[a], err);
        if (st != ET_OK)
            return st;
    }
    st = et_launch_kernel(r->dev, r->prog, &r->rend.launch, r->buf, NULL,
                          r->n_bufs, NULL, &e2);
    for (int a = 0; a < r->n_bufs && st == ET_OK; a++)
        if (rd->arg_operand[a] < 0)
            st = et_buffer_read(r->dev, r->buf[a], 0, (char *)out + at[a],
                                bytes[a], &e2);
    if (st != ET_OK)
        return et_errorf(err, st, "kernel %s failed: %s", r->rend.name,
                         e2.msg);
    return ET_OK;
}

/* Unit roundoff of a dtype as accumulated here (f16 computes in f32). */
static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
}

/* Compares out with the reference ref (absv: the sums of magnitudes) under
 * the rigorous bound; the figures go to r. */
static void compare(et_krun *r, const void *out, const long double *ref,
                    const long double *absv)
{
    const et_einsum *e = r->e;
    int64_t n = et_einsum_operand_elems(e, -1);
    int64_t terms = 1;
    for (int i = e->n_out; i < e->n_idx; i++)
        terms *= e->idx[i].size;
    double u = unit_roundoff(e->acc_dtype);
    double u_out = e->out.dtype == e->acc_dtype ? 0.0
                                                : unit_roundoff(e->out.dtype);
    double nn = (double)(terms + e->n_ops - 2);
    if (nn < 0)
        nn = 0;
    /* past n*u >= 1 the bound is vacuous (a sum of 2^24 or more f32
     * terms): every finite result passes, as in measure/verify.c */
    double gamma = nn * u < 1 ? nn * u / (1.0 - nn * u) : INFINITY;
    double max_err = 0;
    int ok = 1;
    r->output_reason[0] = '\0';
    for (int64_t i = 0; i < n; i++) {
        double got = e->out.dtype == ET_F64 ? ((const double *)out)[i]
                                            : ((const float *)out)[i];
        long double rv = ref[i];
        double bound = u_out * fabs((double)rv);
        if (absv[i] != 0)
            bound += gamma * (double)absv[i];
        double err = fabs((double)((long double)got - rv));
        double ne;
        if (!isfinite(got) && isfinite((double)rv))
            ne = INFINITY;
        else if (bound > 0)
            ne = err / bound;
        else
            ne = err > 0 ? INFINITY : 0;
        if (ne > max_err)
            max_err = ne;
        if (ne > 1 && ok) {
            snprintf(r->output_reason, sizeof r->output_reason,
                     "element %lld: got %.17g, reference %.17Lg, normalized "
                     "error %.3g > 1",
                     (long long)i, got, rv, ne);
            ok = 0;
        }
    }
    r->checked = true;
    r->output_ok = ok;
    r->output_max_norm_err = max_err;
}

et_status et_krun_check_output(et_krun *r, const void *const *in,
                               const void *out, et_error *err)
{
    const et_einsum *e = r->e;
    int64_t n = et_einsum_operand_elems(e, -1);
    long double *ref = malloc((size_t)n * sizeof *ref);
    long double *absv = malloc((size_t)n * sizeof *absv);
    et_status st = ET_OK;
    if (!ref || !absv)
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory for the reference");
    else if (et_reference_eval(e, in, ref, absv) != ET_OK)
        st = et_errorf(err, ET_ERR_INTERNAL,
                       "the reference evaluator failed");
    else
        compare(r, out, ref, absv);
    free(ref);
    free(absv);
    return st;
}

et_status et_krun_verify(et_krun *r, et_error *err)
{
    et_error e = {{0}};
    et_kernel *base = NULL;
    et_rendered rend_base;
    et_program *prog_base = NULL;
    et_verify_result vr;
    memset(&rend_base, 0, sizeof rend_base);
    memset(&vr, 0, sizeof vr);
    et_status st;
    if (!r->ver) {
        st = et_verifier_init(r->e, NULL, &r->ver, err);
        if (st != ET_OK)
            goto out;
    }
    et_backend_kind bk = r->dev->info.target.backend;
    if (et_kernel_init(r->e, &r->dev->info.target, &base) != ET_OK) {
        st = et_errorf(err, ET_ERR_INTERNAL, "cannot build the kernel IR");
        goto out;
    }
    if (et_kernel_render(base, bk, NULL, &rend_base) != ET_OK) {
        st = et_errorf(err, ET_ERR_INTERNAL,
                       "cannot render the untransformed kernel");
        goto out;
    }
    st = build(r, &rend_base, &prog_base, err);
    if (st != ET_OK)
        goto out;
    st = et_verifier_baseline_kernel(r->ver, r->dev, prog_base,
                                     &rend_base.launch, &vr, &e);
    if (st != ET_OK || vr.outcome != ET_OUTCOME_OK) {
        st = et_errorf(err, st != ET_OK ? st : ET_ERR_INTERNAL,
                       "the untransformed kernel failed: %s",
                       st != ET_OK ? e.msg : vr.reason);
        goto out;
    }
    st = et_verify_kernel(r->ver, r->dev, r->prog, &r->rend.launch, &vr, &e);
    if (st != ET_OK) {
        et_errorf(err, st, "verification could not run: %s", e.msg);
        goto out;
    }
    r->verified = true;
    r->vr = vr;
    et_verify_summary(&vr, r->summary, sizeof r->summary);
out:
    if (prog_base)
        et_program_free(r->dev, prog_base);
    et_rendered_free(&rend_base);
    et_kernel_free(base);
    return st;
}

et_status et_krun_time(et_krun *r, et_error *err)
{
    et_error e = {{0}};
    et_timing tm;
    et_result tr;
    memset(&tm, 0, sizeof tm);
    memset(&tr, 0, sizeof tr);
    et_status st = et_time_kernel(r->dev, r->prog, &r->rend.launch, r->buf,
                                  NULL, r->n_bufs, NULL, &tm, &tr, &e);
    if (st != ET_OK)
        return et_errorf(err, st, "timing failed: %s", e.msg);
    r->timing = tm;
    r->timed = true;
    return ET_OK;
}

double et_krun_gops(const et_einsum *e, double median_s)
{
    int64_t ops[ET_DTYPE_COUNT], total = 0;
    et_einsum_ops(e, ops);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        total += ops[t];
    return median_s > 0 ? (double)total / median_s / 1e9 : 0;
}

void et_krun_release(et_krun *r)
{
    if (r->dev) {
        if (r->ver)
            et_verifier_release(r->ver);
        for (int i = 0; i < r->n_bufs; i++)
            if (r->buf[i])
                et_buffer_free(r->dev, r->buf[i]);
        if (r->prog)
            et_program_free(r->dev, r->prog);
    }
    et_verifier_free(r->ver);
    et_rendered_free(&r->rend);
    et_kernel_free(r->kern);
    r->ver = NULL;
    r->prog = NULL;
    r->kern = NULL;
    r->n_bufs = 0;
}
