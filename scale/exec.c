/*
 * exec.c - rank 0 of a tuning run over MPI (see scale.h): the ranks'
 * HELLOs checked (one kind of device), the executor whose slots are the
 * evaluating ranks (jobs handed to a free rank, results waited for, the
 * final race on one rank), and the end: STOP and the ranks' STATS, with
 * the run's figures.
 */
#include "scale/scale.h"

#ifdef ET_HAVE_MPI

#include "scale/mpi_impl.h"

#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static et_status exec_submit(void *ctx, long job, const char *source,
                             const char *name, const et_launch *geom,
                             const et_launch *geom_at, int n_at,
                             const et_timing_opts *to, et_error *err)
{
    et_scale *s = ctx;
    double t0 = et_now_s();
    int r = 1;
    while (r < s->size && s->busy[r])
        r++;
    if (r >= s->size)
        return et_errorf(err, ET_ERR_INTERNAL, "no free rank for a job");
    size_t n = strlen(source) + 1;
    wire_job *j = malloc(sizeof *j + n);
    if (!j)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    memset(j, 0, sizeof *j);
    j->id = job;
    j->to = *to;
    j->geom = *geom;
    if (n_at < 0 || n_at > ET_TUNE_AWKWARD_MAX || (n_at > 0 && !geom_at)) {
        free(j);
        return et_errorf(err, ET_ERR_INTERNAL, "a job with %d awkward sizes",
                         n_at);
    }
    j->n_at = n_at;
    for (int i = 0; i < n_at; i++)
        j->geom_at[i] = geom_at[i];
    snprintf(j->name, sizeof j->name, "%s", name);
    j->src_len = (int64_t)n;
    memcpy(j + 1, source, n);
    int rc = MPI_Send(j, (int)(sizeof *j + n), MPI_BYTE, r, TAG_JOB,
                      s->comm);
    free(j);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "sending a job");
    s->busy[r] = 1;
    s->fig.jobs++;
    s->fig.submit_s += et_now_s() - t0;
    return ET_OK;
}

static et_status exec_wait(void *ctx, long *job, et_evaluation *ev,
                           int *where, double *load_1m, et_error *err)
{
    et_scale *s = ctx;
    double t0 = et_now_s();
    MPI_Status pst;
    int rc = scale_probe_wait(s->comm, MPI_ANY_SOURCE, TAG_RESULT, &pst);
    wire_result *res = NULL;
    int len = 0;
    if (rc == MPI_SUCCESS)
        rc = scale_recv_probed(s->comm, &pst, (void **)&res, &len);
    s->fig.wait_s += et_now_s() - t0;
    if (rc != MPI_SUCCESS) {
        free(res);
        return scale_fail(err, rc, "waiting for a result");
    }
    if (len != (int)sizeof *res) {
        free(res);
        return et_errorf(err, ET_ERR_INTERNAL, "rank %d sent a malformed "
                         "result (%d bytes)", pst.MPI_SOURCE, len);
    }
    *job = (long)res->id;
    *ev = res->ev;
    *where = pst.MPI_SOURCE;
    if (load_1m)
        *load_1m = res->load_1m;
    s->busy[pst.MPI_SOURCE] = 0;
    free(res);
    return ET_OK;
}

/* The final race on the lowest free rank (all are free after the
 * search): one device times every kernel of it. */
static et_status exec_race(void *ctx, const et_tune_race_kernel *k, int n,
                           int warmups, int rounds, double max_seconds,
                           double *times, int *done, int *failed, int *where,
                           et_error *err)
{
    et_scale *s = ctx;
    *done = 0;
    *failed = -1;
    *where = 0;
    if (n < 1 || n > ET_RACE_MAX || rounds < 1)
        return et_errorf(err, ET_ERR_INPUT, "race: %d kernels, %d rounds", n,
                         rounds);
    int r = 1;
    while (r < s->size && s->busy[r])
        r++;
    if (r >= s->size)
        return et_errorf(err, ET_ERR_INTERNAL, "no free rank for the race");
    size_t bytes = sizeof(wire_race);
    for (int i = 0; i < n; i++)
        bytes += strlen(k[i].source) + 1;
    wire_race *w = calloc(1, bytes);
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->n = n;
    w->warmups = warmups;
    w->rounds = rounds;
    w->max_seconds = max_seconds;
    char *p = (char *)(w + 1);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(k[i].source) + 1;
        w->geom[i] = k[i].geom;
        snprintf(w->name[i], sizeof w->name[i], "%s", k[i].name);
        w->src_len[i] = (int64_t)len;
        memcpy(p, k[i].source, len);
        p += len;
    }
    double t0 = et_now_s();
    int rc = MPI_Send(w, (int)bytes, MPI_BYTE, r, TAG_RACE, s->comm);
    free(w);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "sending the race");
    s->busy[r] = 1;
    s->fig.jobs++;
    s->fig.submit_s += et_now_s() - t0;
    MPI_Status pst;
    wire_race_result *res = NULL;
    int len = 0;
    t0 = et_now_s();
    rc = scale_probe_wait(s->comm, r, TAG_RACE_RESULT, &pst);
    if (rc == MPI_SUCCESS)
        rc = scale_recv_probed(s->comm, &pst, (void **)&res, &len);
    s->fig.wait_s += et_now_s() - t0;
    s->busy[r] = 0;
    if (rc != MPI_SUCCESS) {
        free(res);
        return scale_fail(err, rc, "waiting for the race");
    }
    et_status st;
    size_t got = len >= (int)sizeof *res
                     ? ((size_t)len - sizeof *res) / sizeof(double)
                     : 0;
    if (len < (int)sizeof *res || res->done < 0 || res->done > rounds ||
        got != (size_t)res->done * (size_t)n) {
        st = et_errorf(err, ET_ERR_INTERNAL, "rank %d sent a malformed race "
                       "(%d bytes)", r, len);
    } else {
        memcpy(times, res + 1, got * sizeof(double));
        *done = res->done;
        *failed = res->failed;
        *where = r;
        st = (et_status)res->status;
        if (st != ET_OK)
            et_errorf(err, st, "%s", res->msg);
    }
    free(res);
    return st;
}

et_status et_scale_master_start(et_scale *s, et_tune_exec *x,
                                et_scale_rank *ranks, et_error *err)
{
    memset(x, 0, sizeof *x);
    memset(ranks, 0, sizeof *ranks * (size_t)s->size);
    s->t0 = et_now_s();
    s->cpu0 = cpu_now();
    memset(&s->fig, 0, sizeof s->fig);
    ranks[0].rank = 0;
    gethostname(ranks[0].host, sizeof ranks[0].host - 1);
    et_status st = ET_OK;
    int first_bad = 0, got = 0;
    wire_hello *hs = calloc((size_t)s->size, sizeof *hs);
    if (!hs)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    while (got < s->size - 1) {
        MPI_Status pst;
        int rc = scale_probe_wait(s->comm, MPI_ANY_SOURCE, TAG_HELLO, &pst);
        void *buf = NULL;
        int len = 0;
        if (rc == MPI_SUCCESS)
            rc = scale_recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            free(hs);
            return scale_fail(err, rc, "waiting for the ranks");
        }
        int r = pst.MPI_SOURCE;
        if (len == (int)sizeof *hs && r > 0 && r < s->size && !s->hello[r]) {
            hs[r] = *(wire_hello *)buf;
            s->hello[r] = true;
            got++;
        }
        free(buf);
    }
    s->started = true;
    s->fig.hello_s = et_now_s() - s->t0;
    for (int r = 1; r < s->size; r++) {
        ranks[r].rank = r;
        snprintf(ranks[r].host, sizeof ranks[r].host, "%s", hs[r].host);
        snprintf(ranks[r].spec, sizeof ranks[r].spec, "%s", hs[r].spec);
        snprintf(ranks[r].cpus, sizeof ranks[r].cpus, "%s", hs[r].cpus);
        ranks[r].info = hs[r].info;
        if (hs[r].status != ET_OK && !first_bad)
            first_bad = r;
    }
    if (first_bad) {
        st = et_errorf(err, (et_status)hs[first_bad].status,
                       "rank %d (%s, device %s): %s", first_bad,
                       hs[first_bad].host, hs[first_bad].spec,
                       hs[first_bad].msg);
        goto out;
    }
    for (int r = 2; r < s->size; r++)
        if (!scale_same_kind(&hs[1].info, &hs[r].info)) {
            st = et_errorf(err, ET_ERR_INPUT,
                           "the ranks' devices differ: rank 1 has %s (%s, "
                           "driver %s), rank %d has %s (%s, driver %s); "
                           "one search needs one kind of device",
                           hs[1].info.name,
                           et_backend_name(hs[1].info.target.backend),
                           hs[1].info.driver_version, r, hs[r].info.name,
                           et_backend_name(hs[r].info.target.backend),
                           hs[r].info.driver_version);
            goto out;
        }
    x->slots = s->size - 1;
    x->submit = exec_submit;
    x->wait = exec_wait;
    x->race = exec_race;
    x->ctx = s;
    x->info = hs[1].info;
    x->baseline = hs[1].baseline;
    x->baseline_verify = hs[1].baseline_verify;
    x->baseline_s = hs[1].baseline_s;
out:
    free(hs);
    return st;
}

void et_scale_master_stop(et_scale *s, et_scale_rank *ranks,
                          et_scale_figures *fig)
{
    /* HELLOs not received yet (a start that failed early) are received
     * first, so that no rank is left with a send that nobody takes */
    for (int r = 1; r < s->size; r++) {
        if (s->hello[r])
            continue;
        MPI_Status pst;
        void *buf = NULL;
        int len = 0;
        if (scale_probe_wait(s->comm, r, TAG_HELLO, &pst) == MPI_SUCCESS)
            scale_recv_probed(s->comm, &pst, &buf, &len);
        free(buf);
        s->hello[r] = true;
    }
    /* results still in flight (a run that failed while ranks worked) */
    for (int r = 1; r < s->size; r++) {
        if (!s->busy[r])
            continue;
        MPI_Status pst;
        void *buf = NULL;
        int len = 0;
        if (scale_probe_wait(s->comm, r, TAG_RESULT, &pst) == MPI_SUCCESS)
            scale_recv_probed(s->comm, &pst, &buf, &len);
        free(buf);
        s->busy[r] = 0;
    }
    for (int r = 1; r < s->size; r++)
        MPI_Send(NULL, 0, MPI_BYTE, r, TAG_STOP, s->comm);
    for (int n = 1; n < s->size; n++) {
        MPI_Status pst;
        wire_stats *w = NULL;
        int len = 0;
        if (scale_probe_wait(s->comm, MPI_ANY_SOURCE, TAG_STATS, &pst) !=
                MPI_SUCCESS ||
            scale_recv_probed(s->comm, &pst, (void **)&w, &len) !=
                MPI_SUCCESS) {
            free(w);
            break;
        }
        if (ranks && len == (int)sizeof *w) {
            ranks[pst.MPI_SOURCE].evaluations = w->evaluations;
            ranks[pst.MPI_SOURCE].busy_s = w->busy_s;
            ranks[pst.MPI_SOURCE].idle_s = w->idle_s;
        }
        free(w);
    }
    s->fig.wall_s = et_now_s() - s->t0;
    s->fig.cpu_s = cpu_now() - s->cpu0;
    if (fig)
        *fig = s->fig;
    memset(s->hello, 0, sizeof *s->hello * (size_t)s->size);
    s->started = false;
}

#endif
