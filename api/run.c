/*
 * run.c - running a kernel on the caller's host arrays (et_runner_* and
 * the one-call et_run): what `eintune run` does, step by step so that a
 * front end can write its output before verifying and timing.
 *
 * All device work goes through an isolated device (a worker process, see
 * measure/remote.h): a kernel that hangs or crashes the driver costs the
 * run, never the caller's process.
 *
 * Verification is two things: a check of the output on the caller's own
 * inputs against the extended-precision reference, element by element
 * within the rigorous bound (et_runner_check_output), and the statistical
 * verification of the tuner (R input sets drawn by the verifier, the
 * untransformed kernel as the baseline of the one-sided test:
 * et_runner_verify).
 */
#include "api/best_impl.h"

#include "db/db.h"
#include "measure/remote.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "roofline/report.h"
#include "transforms/kernel.h"
#include "tune/deliver.h"
#include "tune/peaks_db.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_runner {
    const et_einsum *e;         /* the caller's problem's */
    et_run_options o;
    et_db *db;                  /* with o.best */
    et_device *dev;
    bool shared;                /* db and dev are a session's: not closed */
    et_best *best;              /* found by et_runner_find_best */
    et_kernel *kern;
    et_rendered rend;
    et_program *prog;
    et_buffer *buf[ET_MAX_OPERANDS + 1]; /* output first, then inputs */
    int n_bufs;
    et_verifier *ver;
    int checked, verified, timed, have_roof;
    et_run_verification v;
    et_timing timing;
    et_roofline roof;
    char roof_note[256];      /* the peaks were measured again: why */
};

et_status et_runner_open(const et_problem *p, const et_run_options *o,
                         et_runner **out, et_diag *diag)
{
    return api_runner_open(NULL, p, o, out, diag);
}

et_status api_runner_open(et_session *s, const et_problem *p,
                          const et_run_options *o, et_runner **out,
                          et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_run_options, o, diag);
    API_NEED(diag, p, "p");
    et_runner *r = calloc(1, sizeof *r);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    r->e = &p->e;
    r->o = *o;
    if (s && !r->o.log) {
        r->o.log = s->log;
        r->o.log_arg = s->log_arg;
    }
    o = &r->o;
    et_error err = {{0}};
    et_status st = ET_OK;
    r->shared = s != NULL;
    /* the database before the device: a refused file costs no worker */
    if (o->best) {
        bool own = false;
        st = api_session_db(s, o->db, &r->db, &own, diag);
        if (st != ET_OK)
            goto fail;
    }
    if (s)
        r->dev = s->dev;
    else
        st = et_device_open_isolated(o->device, NULL, &r->dev, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        goto fail;
    }
    api_log(o->log, o->log_arg, ET_LOG_INFO, "device %s (%s)",
            r->dev->info.name, r->dev->info.spec);
    if (r->e->acc_dtype == ET_F64 && !r->dev->info.target.has_fp64) {
        st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                      "device %s has no fp64 support", r->dev->info.name);
        goto fail;
    }
    *out = r;
    return ET_OK;
fail:
    et_runner_free(r);
    return st;
}

et_status et_runner_find_best(et_runner *r, et_best_info *info, int *found,
                              et_diag *diag)
{
    api_diag_clear(diag);
    if (found)
        *found = 0;
    API_NEED(diag, r, "r");
    if (!r->db)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the runner was opened without best");
    if (!r->best) {
        r->best = malloc(sizeof *r->best);
        if (!r->best)
            return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
    }
    et_error err = {{0}};
    bool hit = false;
    et_status st = et_best_find(r->db, r->e, &r->dev->info,
                                r->o.exact != 0, r->best, &hit, &err);
    if (st != ET_OK || !hit) {
        free(r->best);
        r->best = NULL;
        return st != ET_OK ? api_fail_err(diag, st, ET_INPUT_NONE, &err)
                           : api_no_kernel(diag, r->e, &r->dev->info,
                                           et_db_path(r->db),
                                           r->o.exact != 0);
    }
    if (found)
        *found = 1;
    if (info) {
        et_db_race_pick pick;
        api_best_info_fill(r->best, &r->dev->info, info);
        api_best_info_race(api_best_race_lookup(r->db, r->best, &pick)
                               ? &pick
                               : NULL,
                           info);
    }
    if (r->best->source == ET_BEST_FALLBACK)
        api_log(r->o.log, r->o.log_arg, ET_LOG_INFO,
                "best known: %s (tuned as %s at %s, applied at %s: "
                "verified here before use)",
                r->best->opts[0] ? r->best->opts : "untransformed",
                r->best->trial.einsum_text, r->best->tuned_at,
                r->best->applied_at);
    else if (r->best->source == ET_BEST_OPEN)
        api_log(r->o.log, r->o.log_arg, ET_LOG_INFO,
                "best known: %s (tuned as %s with open axis %s at %s, "
                "%.4g ms there; applied at %s)",
                r->best->opts[0] ? r->best->opts : "untransformed",
                r->best->trial.einsum_text,
                r->best->e.idx[r->best->open_axis].name, r->best->tuned_at,
                r->best->trial.median_s * 1e3, r->best->applied_at);
    else
        api_log(r->o.log, r->o.log_arg, ET_LOG_INFO,
                "best known: %s (tuned as %s, %.4g ms)",
                r->best->opts[0] ? r->best->opts : "untransformed",
                r->best->trial.einsum_text, r->best->trial.median_s * 1e3);
    return ET_OK;
}

/* Builds program of rendered kernel rd on the runner's device. */
static et_status build(et_runner *r, const et_rendered *rd, et_program **p,
                       et_diag *diag)
{
    et_error err = {{0}};
    et_status st = et_program_build(r->dev, rd->source, rd->name, p, &err);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "cannot build kernel %s: %s",
                        rd->name, err.msg);
    if (err.msg[0])
        api_log(r->o.log, r->o.log_arg, ET_LOG_DEBUG,
                "compiler output for %s:\n%s", rd->name, err.msg);
    return ET_OK;
}

et_status et_runner_build(et_runner *r, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    if (r->kern)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "the kernel is built already");
    et_opt *opts = calloc(ET_MAX_OPTS, sizeof *opts);
    if (!opts)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    int n_opts = 0;
    et_status st = ET_OK;
    if (r->best) {
        memcpy(opts, r->best->opt, (size_t)r->best->n_opts * sizeof *opts);
        n_opts = r->best->n_opts;
    } else if (r->o.opts && *r->o.opts) {
        st = et_opts_parse(r->o.opts, opts, ET_MAX_OPTS, &n_opts, diag);
        if (st != ET_OK) {
            diag->status = st;
            diag->input = ET_INPUT_OPTS;
            goto out;
        }
    }
    char reason[512] = "";
    /* an answer with an open axis runs the einsum with that axis open */
    if (et_kernel_init(r->best ? &r->best->e : r->e, &r->dev->info.target,
                       &r->kern) != ET_OK) {
        st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                      "cannot build the kernel IR");
        goto out;
    }
    st = et_kernel_apply_opts(r->kern, opts, n_opts, reason, sizeof reason);
    if (st != ET_OK) {
        api_fail(diag, ET_ERR_REFUSED, ET_INPUT_OPTS, "%s", reason);
        st = ET_ERR_REFUSED;
        goto out;
    }
    if (et_kernel_render(r->kern, r->dev->info.target.backend, NULL,
                         &r->rend) != ET_OK) {
        st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                      "cannot render the kernel");
        goto out;
    }
    api_log(r->o.log, r->o.log_arg, ET_LOG_DEBUG, "kernel %s", r->rend.name);
    st = build(r, &r->rend, &r->prog, diag);
    if (st == ET_OK && r->best &&
        !et_deliver_reproduces(r->kern, r->dev->info.target.backend,
                               &r->best->trial)) {
        /* not the very kernel the trial verified (opts tuned at other
         * sizes, an open entry, a renaming): verified at these sizes
         * before use (tune/deliver.h) */
        et_run_verification v;
        memset(&v, 0, sizeof v);
        st = et_runner_verify(r, &v, diag);
        if (st == ET_OK && v.outcome != ET_OUTCOME_OK)
            st = api_fail(diag, ET_ERR_BUILD, ET_INPUT_NONE,
                          "the kernel (%s, tuned as %s%s%s) fails "
                          "verification at these sizes: %s",
                          r->best->opts[0] ? r->best->opts : "untransformed",
                          r->best->trial.einsum_text,
                          r->best->tuned_at[0] ? " at " : "",
                          r->best->tuned_at, v.reason);
        if (st == ET_OK && r->best->tuned_at[0])
            api_log(r->o.log, r->o.log_arg, ET_LOG_INFO,
                    "the kernel tuned at %s, applied at %s: %s",
                    r->best->tuned_at, r->best->applied_at, v.summary);
        else if (st == ET_OK)
            api_log(r->o.log, r->o.log_arg, ET_LOG_INFO,
                    "the kernel (tuned as %s) at these sizes: %s",
                    r->best->trial.einsum_text, v.summary);
        if (st != ET_OK) {
            et_program_free(r->dev, r->prog);
            r->prog = NULL;
            et_rendered_free(&r->rend);
        }
    }
out:
    if (st != ET_OK) {
        et_kernel_free(r->kern);
        r->kern = NULL;
    }
    free(opts);
    return st;
}

et_status et_runner_exec(et_runner *r, void *out, const void *const *in,
                         et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, out, "out");
    API_NEED(diag, in, "in");
    if (!r->prog)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "no kernel built (et_runner_build)");
    for (int i = 0; i < r->e->n_ops; i++)
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "%s: in[%d] (input %d) is NULL", __func__, i, i);
    const et_einsum *e = r->e;
    et_error err = {{0}};
    et_status st = ET_OK;
    size_t out_bytes = (size_t)et_einsum_operand_elems(e, -1) *
                       et_dtype_size(e->out.dtype);
    if (r->n_bufs == 0) {
        for (int i = 0; i < 1 + e->n_ops; i++) {
            size_t bytes = i == 0 ? out_bytes
                                  : (size_t)et_einsum_operand_elems(e, i - 1) *
                                        et_dtype_size(e->op[i - 1].dtype);
            st = et_buffer_alloc(r->dev, bytes ? bytes : 1, &r->buf[i], &err);
            if (st != ET_OK)
                return api_fail_err(diag, st, ET_INPUT_NONE, &err);
            r->n_bufs = i + 1;
        }
    }
    for (int i = 1; i < r->n_bufs; i++) {
        size_t bytes = (size_t)et_einsum_operand_elems(e, i - 1) *
                       et_dtype_size(e->op[i - 1].dtype);
        st = et_buffer_write(r->dev, r->buf[i], 0, in[i - 1], bytes, &err);
        if (st != ET_OK)
            return api_fail_err(diag, st, ET_INPUT_NONE, &err);
    }
    st = et_launch_kernel(r->dev, r->prog, &r->rend.launch, r->buf, NULL,
                          r->n_bufs, NULL, &err);
    if (st == ET_OK)
        st = et_buffer_read(r->dev, r->buf[0], 0, out, out_bytes, &err);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "kernel %s failed: %s",
                        r->rend.name, err.msg);
    return ET_OK;
}

/* Unit roundoff of a dtype as accumulated here (f16 computes in f32). */
static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
}

et_status et_runner_check_output(et_runner *r, const void *const *in,
                                 const void *out, et_run_verification *v,
                                 et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, in, "in");
    API_NEED(diag, out, "out");
    API_NEED(diag, v, "v");
    for (int i = 0; i < r->e->n_ops; i++)
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "%s: in[%d] (input %d) is NULL", __func__, i, i);
    const et_einsum *e = r->e;
    int64_t n = et_einsum_operand_elems(e, -1);
    long double *ref = malloc((size_t)n * sizeof *ref);
    long double *absv = malloc((size_t)n * sizeof *absv);
    et_status st = ET_OK;
    v->output_checked = 0;
    v->output_ok = 0;
    v->output_max_norm_err = 0;
    v->output_reason[0] = '\0';
    if (!ref || !absv) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                      "out of memory for the reference");
        goto done;
    }
    if (et_reference_eval(e, in, ref, absv) != ET_OK) {
        st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                      "the reference evaluator failed");
        goto done;
    }
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
            snprintf(v->output_reason, sizeof v->output_reason,
                     "element %lld: got %.17g, reference %.17Lg, normalized "
                     "error %.3g > 1",
                     (long long)i, got, rv, ne);
            ok = 0;
        }
    }
    v->output_checked = 1;
    v->output_ok = ok;
    v->output_max_norm_err = max_err;
    r->checked = 1;
    r->v.output_checked = 1;
    r->v.output_ok = ok;
    r->v.output_max_norm_err = max_err;
    snprintf(r->v.output_reason, sizeof r->v.output_reason, "%s",
             v->output_reason);
done:
    free(ref);
    free(absv);
    return st;
}

et_status et_runner_verify(et_runner *r, et_run_verification *v,
                           et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, v, "v");
    if (!r->kern)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "no kernel built (et_runner_build)");
    et_error err = {{0}};
    et_kernel *base = NULL;
    et_rendered rend_base;
    et_program *prog_base = NULL;
    et_verify_result vr;
    memset(&rend_base, 0, sizeof rend_base);
    memset(&vr, 0, sizeof vr);
    et_status st;
    if (!r->ver) {
        st = et_verifier_init(r->e, NULL, &r->ver, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
    }
    et_backend_kind bk = r->dev->info.target.backend;
    if (et_kernel_init(r->e, &r->dev->info.target, &base) != ET_OK) {
        st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                      "cannot build the kernel IR");
        goto out;
    }
    if (et_kernel_render(base, bk, NULL, &rend_base) != ET_OK) {
        st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                      "cannot render the untransformed kernel");
        goto out;
    }
    st = build(r, &rend_base, &prog_base, diag);
    if (st != ET_OK)
        goto out;
    st = et_verifier_baseline_kernel(r->ver, r->dev, prog_base,
                                     &rend_base.launch, &vr, &err);
    if (st != ET_OK || vr.outcome != ET_OUTCOME_OK) {
        api_fail(diag, st != ET_OK ? st : ET_ERR_INTERNAL, ET_INPUT_NONE,
                 "the untransformed kernel failed: %s",
                 st != ET_OK ? err.msg : vr.reason);
        if (st == ET_OK)
            st = ET_ERR_INTERNAL;
        goto out;
    }
    st = et_verify_kernel(r->ver, r->dev, r->prog, &r->rend.launch, &vr,
                          &err);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE,
                 "verification could not run: %s", err.msg);
        goto out;
    }
    r->verified = 1;
    r->v.verified = 1;
    r->v.outcome = vr.outcome;
    r->v.trials = vr.trials;
    r->v.max_norm_err = vr.max_norm_err;
    r->v.p_value = vr.p_value;
    snprintf(r->v.reason, sizeof r->v.reason, "%s", vr.reason);
    et_verify_summary(&vr, r->v.summary, sizeof r->v.summary);
    v->verified = 1;
    v->outcome = r->v.outcome;
    v->trials = r->v.trials;
    v->max_norm_err = r->v.max_norm_err;
    v->p_value = r->v.p_value;
    memcpy(v->reason, r->v.reason, sizeof v->reason);
    memcpy(v->summary, r->v.summary, sizeof v->summary);
out:
    if (prog_base)
        et_program_free(r->dev, prog_base);
    et_rendered_free(&rend_base);
    et_kernel_free(base);
    return st;
}

static double total_gops(const et_einsum *e, double median_s)
{
    int64_t ops[ET_DTYPE_COUNT], total = 0;
    et_einsum_ops(e, ops);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        total += ops[t];
    return median_s > 0 ? (double)total / median_s / 1e9 : 0;
}

et_status et_runner_time(et_runner *r, et_run_timing *t, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, t, "t");
    memset(t, 0, sizeof *t);
    API_NEED(diag, r, "r");
    if (!r->n_bufs)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "nothing ran yet (et_runner_exec)");
    et_error err = {{0}};
    et_timing tm;
    et_result tr;
    memset(&tm, 0, sizeof tm);
    memset(&tr, 0, sizeof tr);
    et_status st = et_time_kernel(r->dev, r->prog, &r->rend.launch, r->buf,
                                  NULL, r->n_bufs, NULL, &tm, &tr, &err);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "timing failed: %s",
                        err.msg);
    r->timing = tm;
    r->timed = 1;
    t->time_s = tm.median_s;
    t->ci95_s[0] = tm.low_s;
    t->ci95_s[1] = tm.high_s;
    t->cv = tm.cv;
    t->runs = tm.runs;
    t->gops = total_gops(r->e, tm.median_s);
    et_timing_format(&tm, t->summary, sizeof t->summary);
    return ET_OK;
}

et_status et_runner_roofline(et_runner *r, FILE *table, const char *plot,
                             int *drawn, et_diag *diag)
{
    api_diag_clear(diag);
    if (drawn)
        *drawn = 0;
    API_NEED(diag, r, "r");
    if (!r->timed)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "not timed yet (et_runner_time)");
    et_error err = {{0}};
    et_peaks pk;
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    char why[256] = "";
    double median = r->timing.median_s;
    if (drawn)
        *drawn = 0;
    if (et_peaks_get_db(r->dev, r->db, &po, &pk, &err) != ET_OK) {
        api_log(r->o.log, r->o.log_arg, ET_LOG_WARN, "no roofline: %s",
                err.msg);
        return ET_OK;
    }
    if (et_roofline_compute(r->e, &pk, &r->roof, why, sizeof why) !=
        ET_OK) {
        api_log(r->o.log, r->o.log_arg, ET_LOG_WARN, "no roofline: %s", why);
        return ET_OK;
    }
    r->have_roof = 1;
    /* a kernel above the roofline: the peaks are measured again */
    api_roof_again(r->dev, r->db, r->e, median, r->timing.high_s, &pk,
                   &r->roof, "this kernel", r->roof_note,
                   sizeof r->roof_note, r->o.log, r->o.log_arg);
    if (table)
        et_roofline_table(table, &r->roof, median);
    if (plot) {
        et_plot_point pt = {r->roof.intensity,
                            (double)r->roof.ops_total / median / 1e9};
        char title[ET_MAX_TEXT + 300], sub[2600], opts[2048] = "";
        api_problem_title(r->e, title, sizeof title);
        if (r->kern)
            et_opts_format(r->kern->opts, r->kern->n_opts, opts,
                           sizeof opts);
        snprintf(sub, sizeof sub, "%.255s (%s)   %.2000s, median %.4g ms",
                 r->dev->info.name,
                 et_backend_name(r->dev->info.target.backend),
                 opts[0] ? opts : "untransformed", median * 1e3);
        char label[96];
        snprintf(label, sizeof label, "this kernel: %.3g GOps/s, %.3g %% of "
                 "the roofline",
                 pt.gops, 100 * et_roofline_ratio(&r->roof, median));
        et_plot pl;
        memset(&pl, 0, sizeof pl);
        pl.peaks = &pk;
        pl.title = title;
        pl.subtitle = sub;
        pl.points = &pt;
        pl.n_points = 1;
        pl.best = 0;
        pl.best_label = label;
        pl.roof_dtypes = api_roof_dtypes(r->e);
        pl.bandwidth_gbs = r->roof.bandwidth_gbs;
        char pwhy[256] = "";
        et_status st = et_plot_write(plot, &pl, pwhy, sizeof pwhy);
        if (st != ET_OK) {
            api_fail(diag, st, ET_INPUT_FILE, "%s", pwhy);
            if (diag)
                snprintf(diag->file, sizeof diag->file, "%s", plot);
            return st;
        }
    }
    if (drawn)
        *drawn = 1;
    return ET_OK;
}

void et_runner_info(const et_runner *r, et_run_info *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    const et_device_info *info = &r->dev->info;
    snprintf(out->device, sizeof out->device, "%s", info->name);
    snprintf(out->spec, sizeof out->spec, "%s", info->spec);
    out->backend = info->target.backend;
    snprintf(out->driver, sizeof out->driver, "%s", info->driver_version);
    if (r->db)
        snprintf(out->db, sizeof out->db, "%s", et_db_path(r->db));
    if (r->kern) {
        et_opts_format(r->kern->opts, r->kern->n_opts, out->opts,
                       sizeof out->opts);
        snprintf(out->kernel, sizeof out->kernel, "%s", r->rend.name);
    }
}

char *et_runner_json(const et_runner *r, const char *output)
{
    if (!r)
        return NULL;
    et_run_info info;
    et_runner_info(r, &info);
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "einsum", r->e->text);
    api_json_problem(doc, r->e);
    cJSON *jdev = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jdev, "name", info.device);
    cJSON_AddStringToObject(jdev, "backend", et_backend_name(info.backend));
    cJSON_AddStringToObject(jdev, "driver", info.driver);
    cJSON_AddStringToObject(doc, "opts", info.opts);
    cJSON_AddStringToObject(doc, "kernel", info.kernel);
    cJSON_AddStringToObject(doc, "output", output ? output : "");
    if (r->checked || r->verified) {
        cJSON *jv = cJSON_AddObjectToObject(doc, "verified");
        if (r->checked)
            cJSON_AddNumberToObject(jv, "output_max_norm_err",
                                    r->v.output_max_norm_err);
        if (r->verified) {
            cJSON_AddNumberToObject(jv, "trials", r->v.trials);
            cJSON_AddNumberToObject(jv, "max_norm_err", r->v.max_norm_err);
            if (isfinite(r->v.p_value))
                cJSON_AddNumberToObject(jv, "p_value", r->v.p_value);
            else
                cJSON_AddNullToObject(jv, "p_value");
            cJSON_AddStringToObject(jv, "status",
                                    et_outcome_name(r->v.outcome));
        }
    }
    if (r->timed) {
        const et_timing *t = &r->timing;
        cJSON_AddNumberToObject(doc, "time_s", t->median_s);
        cJSON *ci = cJSON_AddArrayToObject(doc, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->low_s));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->high_s));
        cJSON_AddNumberToObject(doc, "cv", t->cv);
        cJSON_AddNumberToObject(doc, "runs", t->runs);
        if (r->have_roof && et_report_add_gops(doc, &r->roof, t->median_s)) {
            cJSON_Delete(doc);
            return NULL;
        }
        if (r->roof_note[0])
            cJSON_AddStringToObject(doc, "roofline_note", r->roof_note);
    }
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return api_json_own(text);
}

void et_runner_free(et_runner *r)
{
    if (!r)
        return;
    if (r->dev) {
        if (r->ver)
            et_verifier_release(r->ver);
        for (int i = 0; i < r->n_bufs; i++)
            if (r->buf[i])
                et_buffer_free(r->dev, r->buf[i]);
        if (r->prog)
            et_program_free(r->dev, r->prog);
        if (!r->shared)
            et_device_close(r->dev);
    }
    et_verifier_free(r->ver);
    et_rendered_free(&r->rend);
    et_kernel_free(r->kern);
    free(r->best);
    if (!r->shared)
        et_db_close(r->db);
    free(r);
}

et_status et_run(const et_problem *p, const et_run_options *o, void *out,
                 const void *const *in, et_run_result *res, et_diag *diag)
{
    return api_run(NULL, p, o, out, in, res, diag);
}

et_status api_run(et_session *s, const et_problem *p,
                  const et_run_options *o, void *out,
                  const void *const *in, et_run_result *res, et_diag *diag)
{
    et_diag local;
    et_run_result local_res;
    if (!diag)
        diag = &local;
    if (!res)
        res = &local_res;
    memset(res, 0, sizeof *res);
    api_diag_clear(diag);
    API_OPTIONS(et_run_options, o, diag);
    API_NEED(diag, p, "p");
    API_NEED(diag, out, "out");
    API_NEED(diag, in, "in");
    for (int i = 0; i < p->e.n_ops; i++)
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_run: in[%d] (input %d) is NULL", i, i);
    et_runner *r = NULL;
    et_status st = api_runner_open(s, p, o, &r, diag);
    if (st != ET_OK)
        return st;
    if (o->best) {
        /* nothing known: ET_ERR_NOT_FOUND, api_no_kernel's message */
        st = et_runner_find_best(r, NULL, NULL, diag);
        if (st != ET_OK)
            goto out;
    }
    st = et_runner_build(r, diag);
    if (st == ET_OK)
        st = et_runner_exec(r, out, in, diag);
    if (st == ET_OK && o->verify) {
        st = et_runner_check_output(r, in, out, &res->verify, diag);
        if (st == ET_OK)
            st = et_runner_verify(r, &res->verify, diag);
    }
    if (st == ET_OK && o->time) {
        st = et_runner_time(r, &res->timing, diag);
        res->timed = st == ET_OK;
    }
    if (r->kern) {
        et_run_info info;
        et_runner_info(r, &info);
        memcpy(res->opts, info.opts, sizeof res->opts);
        memcpy(res->kernel, info.kernel, sizeof res->kernel);
    }
out:
    et_runner_free(r);
    return st;
}
