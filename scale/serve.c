/*
 * serve.c - an evaluating rank of a tuning run over MPI (see scale.h):
 * it opens its device on its own cores, verifies and times the
 * untransformed kernel and says HELLO; then it evaluates the jobs rank 0
 * hands it (et_tune_evaluate, the local loop's evaluation, awkward sizes
 * and all), recycles its device worker, times the final race when asked,
 * and answers STOP with its STATS.
 */
#include "scale/scale.h"

#ifdef ET_HAVE_MPI

#include "scale/mpi_impl.h"

#include "base/clock.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Runs the final race rank 0 sent (buf, len bytes) on dev and sends the
 * answer; dev NULL: this rank cannot serve (why says why). Returns the
 * MPI status of the send.
 */
static int serve_race(et_scale *s, const et_scale_serve_opts *o,
                      et_device *dev, et_verifier *ver, const et_error *why,
                      const void *buf, int len)
{
    const wire_race *w = buf;
    wire_race_result *out = NULL;
    size_t n_times = 0;
    et_tune_race_kernel k[ET_RACE_MAX];
    int64_t need = (int64_t)sizeof *w;
    bool ok = len >= (int)sizeof *w && w->n >= 1 && w->n <= ET_RACE_MAX &&
              w->rounds >= 1 && w->rounds <= 100000;
    const char *src = (const char *)(w + 1);
    for (int i = 0; ok && i < w->n; i++) {
        if (w->src_len[i] < 1 || need + w->src_len[i] > len ||
            src[need - (int64_t)sizeof *w + w->src_len[i] - 1] != '\0') {
            ok = false;
            break;
        }
        k[i].source = src + (need - (int64_t)sizeof *w);
        k[i].name = w->name[i];
        k[i].geom = w->geom[i];
        need += w->src_len[i];
    }
    if (ok)
        n_times = (size_t)w->n * (size_t)w->rounds;
    out = calloc(1, sizeof *out + n_times * sizeof(double));
    if (!out) {
        wire_race_result small = {ET_ERR_NOMEM, -1, 0, 0, "out of memory"};
        return MPI_Send(&small, (int)sizeof small, MPI_BYTE, 0,
                        TAG_RACE_RESULT, s->comm);
    }
    out->failed = -1;
    et_error e2 = {{0}};
    et_status st;
    if (!ok) {
        st = et_errorf(&e2, ET_ERR_INTERNAL, "rank %d: a malformed race",
                       s->rank);
    } else if (!dev) {
        st = et_errorf(&e2, ET_ERR_INTERNAL, "rank %d cannot race: %s",
                       s->rank, why->msg);
    } else {
        int done = 0, failed = -1;
        scale_log(o, ET_TUNE_DEBUG, "rank %d: the final race, %d kernels",
                  s->rank, w->n);
        st = et_tune_race_time(dev, ver, k, w->n, w->warmups, w->rounds,
                               w->max_seconds, (double *)(out + 1), &done,
                               &failed, &e2);
        out->done = done;
        out->failed = failed;
    }
    out->status = (int32_t)st;
    snprintf(out->msg, sizeof out->msg, "%.1000s", e2.msg);
    size_t bytes = sizeof *out + (size_t)out->done * (ok ? (size_t)w->n : 0) *
                                     sizeof(double);
    int rc = MPI_Send(out, (int)bytes, MPI_BYTE, 0, TAG_RACE_RESULT,
                      s->comm);
    free(out);
    return rc;
}

/* What an evaluating rank serves with: its device, the verifier and the
 * awkward sizes of an open axis; own and why: whether it can serve and,
 * when not, why (it still answers until STOP). */
typedef struct serve_state {
    et_device *dev;
    et_verifier *ver;
    et_tune_awkward awk;
    et_status own;
    et_error why;
    char spec[64];
} serve_state;

/*
 * Opens this rank's device (on its own cores when it is OpenCL), its
 * verifier and awkward sizes, verifies and times the untransformed
 * kernel, and says HELLO to rank 0 with the outcome (ss->own, ss->why).
 * Returns an error only when HELLO cannot be sent.
 */
static et_status serve_open(et_scale *s, const et_scale_serve_opts *o,
                            serve_state *ss, et_error *err)
{
    wire_hello *h = calloc(1, sizeof *h);
    if (!h)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    gethostname(h->host, sizeof h->host - 1);
    scale_choose_spec(o->device, s->local_index, h->spec, sizeof h->spec);
    et_device_spec ds;
    if (et_device_spec_parse(h->spec, &ds, NULL) == ET_OK &&
        ds.backend == ET_BACKEND_OPENCL)
        scale_bind_cores(s, o, h->cpus, sizeof h->cpus);
    et_kernel *base = NULL;
    et_error *e1 = &ss->why;
    double tb = et_now_s();
    et_status st = et_device_open_isolated(h->spec, NULL, &ss->dev, e1);
    if (st == ET_OK) {
        h->info = ss->dev->info;
        st = et_verifier_init(o->e, &o->verify, &ss->ver, e1);
    }
    if (st == ET_OK)
        st = et_tune_awkward_init(o->e, &o->verify, &ss->awk, e1);
    if (st == ET_OK) {
        st = et_kernel_init(o->e, &ss->dev->info.target, &base);
        if (st != ET_OK)
            et_errorf(e1, st, "cannot build the untransformed kernel");
    }
    if (st == ET_OK) {
        char name[160], said[1024];
        st = et_tune_baseline(ss->dev, ss->ver, base, &o->timing,
                              &h->baseline, &h->baseline_verify, name,
                              sizeof name, said, sizeof said, e1);
    }
    h->baseline_s = et_now_s() - tb;
    et_kernel_free(base);
    int rc = scale_send_hello(s, h, st, e1);
    ss->own = st;
    snprintf(ss->spec, sizeof ss->spec, "%s", h->spec);
    free(h);
    return rc == MPI_SUCCESS ? ET_OK : scale_fail(err, rc, "sending HELLO");
}

/*
 * One JOB (buf, len bytes): the evaluation the local loop makes, awkward
 * sizes and all, sent back as RESULT; a rank that cannot serve answers
 * with why. The device worker is recycled every `every` evaluations.
 * Returns an error only for a host failure or a send that failed.
 */
static et_status serve_job(et_scale *s, const et_scale_serve_opts *o,
                           serve_state *ss, const void *buf, int len,
                           int every, wire_stats *stats, et_error *err)
{
    double t0 = et_now_s();
    const wire_job *j = buf;
    const char *source = (const char *)(j + 1);
    wire_result *res = calloc(1, sizeof *res);
    if (!res)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    res->id = j->id;
    res->load_1m = et_tune_load_1m();
    bool serving = ss->own == ET_OK;
    if (!serving || (int64_t)len != (int64_t)sizeof *j + j->src_len) {
        et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                      "rank %d cannot evaluate: %s", s->rank,
                      serving ? "malformed job" : ss->why.msg);
    } else if (j->n_at != ss->awk.n) {
        et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                      "rank %d: the job has %d awkward sizes of the open "
                      "axis, this rank %d", s->rank, (int)j->n_at,
                      ss->awk.n);
    } else {
        et_error e2 = {{0}};
        et_status es = et_tune_evaluate(ss->ver, &ss->awk, j->geom_at,
                                        ss->dev, source, j->name, &j->geom,
                                        &j->to, &res->ev, &e2);
        if (es != ET_OK)
            et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                          "rank %d: %s", s->rank, e2.msg);
        stats->evaluations++;
        if (every > 0 && stats->evaluations % every == 0) {
            et_verifier_release(ss->ver);
            et_tune_awkward_release(&ss->awk);
            if (et_device_recycle(ss->dev, &e2) != ET_OK)
                scale_log(o, ET_TUNE_WARN, "rank %d: %s", s->rank, e2.msg);
        }
    }
    stats->busy_s += et_now_s() - t0;
    int rc = MPI_Send(res, (int)sizeof *res, MPI_BYTE, 0, TAG_RESULT,
                      s->comm);
    free(res);
    return rc == MPI_SUCCESS ? ET_OK
                             : scale_fail(err, rc, "sending a result");
}

et_status et_scale_serve(et_scale *s, const et_scale_serve_opts *o,
                         et_error *err)
{
    serve_state ss;
    memset(&ss, 0, sizeof ss);
    et_status st = serve_open(s, o, &ss, err);
    if (st != ET_OK)
        goto out;
    /* a rank that cannot serve still answers until STOP (rank 0 ends the
     * run), then returns why, so that it exits as rank 0 does */
    wire_stats stats = {0, 0, 0};
    double idle_from = -1; /* idle is counted from the first job on */
    int every = o->recycle_every ? o->recycle_every : 250;
    for (;;) {
        MPI_Status pst;
        double tw = et_now_s();
        int rc = scale_probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
        if (rc != MPI_SUCCESS) {
            st = scale_fail(err, rc, "waiting for work");
            break;
        }
        if (idle_from >= 0)
            stats.idle_s += et_now_s() - tw;
        void *buf = NULL;
        int len = 0;
        rc = scale_recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            st = scale_fail(err, rc, "receiving work");
            break;
        }
        if (pst.MPI_TAG == TAG_STOP) {
            free(buf);
            MPI_Send(&stats, (int)sizeof stats, MPI_BYTE, 0, TAG_STATS,
                     s->comm);
            break;
        }
        if (pst.MPI_TAG == TAG_RACE) {
            double t0 = et_now_s();
            rc = serve_race(s, o, ss.own == ET_OK ? ss.dev : NULL, ss.ver,
                            &ss.why, buf, len);
            free(buf);
            stats.busy_s += et_now_s() - t0;
            if (rc != MPI_SUCCESS) {
                st = scale_fail(err, rc, "sending the race");
                break;
            }
            continue;
        }
        if (pst.MPI_TAG != TAG_JOB || len < (int)sizeof(wire_job)) {
            free(buf);
            continue;
        }
        idle_from = 0;
        st = serve_job(s, o, &ss, buf, len, every, &stats, err);
        free(buf);
        if (st != ET_OK)
            break;
    }
    if (st == ET_OK && ss.own != ET_OK)
        st = et_errorf(err, ss.own, "rank %d (device %s): %s", s->rank,
                       ss.spec, ss.why.msg);
out:
    if (ss.ver) {
        et_verifier_release(ss.ver);
        et_verifier_free(ss.ver);
    }
    et_tune_awkward_free(&ss.awk);
    if (ss.dev)
        et_device_close(ss.dev);
    return st;
}

#endif
