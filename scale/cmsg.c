/*
 * cmsg.c - the messages of a campaign over MPI (see scale.h), both ends:
 * an evaluating rank's device and HELLO, asking for a problem, rank 0's
 * database asked and written through rank 0 (LOOKUP, RECORD, RACE_REC),
 * a problem's result (DONE); rank 0's start (HELLOs, GO or STOP), the
 * next message from any rank, a problem handed out, a lookup answered.
 * A campaign message's buffers are freed with MPI or without.
 */
#include "scale/scale.h"

#include <stdlib.h>

#ifdef ET_HAVE_MPI

#include "scale/mpi_impl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct wire_trial {
    int32_t problem;
    int32_t found;                /* ANSWER */
    et_db_trial t;
} wire_trial;

/* RACE_REC: the race, then n * rounds times, entry by entry. */
typedef struct wire_race_rec {
    int32_t problem;
    et_db_race r;
} wire_race_rec;
_Static_assert(sizeof(wire_race_rec) % _Alignof(double) == 0,
               "the times after a race record are aligned");

/* DONE: the result text follows, with its NUL. */
typedef struct wire_done {
    int32_t problem;
    int32_t status;
    char msg[1024];
} wire_done;

void et_scale_campaign_device(et_scale *s, const char *list, char *spec,
                              size_t spec_cap, char *cpus, size_t cpus_cap,
                              void (*log)(void *arg, et_tune_level lvl,
                                          const char *msg),
                              void *arg)
{
    scale_choose_spec(list, s->local_index, spec, spec_cap);
    cpus[0] = '\0';
    et_device_spec ds;
    et_scale_serve_opts o;
    memset(&o, 0, sizeof o);
    o.log = log;
    o.arg = arg;
    if (et_device_spec_parse(spec, &ds, NULL) == ET_OK &&
        ds.backend == ET_BACKEND_OPENCL)
        scale_bind_cores(s, &o, cpus, cpus_cap);
}

et_status et_scale_campaign_hello(et_scale *s, et_status st,
                                  const et_error *why, const char *spec,
                                  const char *cpus,
                                  const et_device_info *info, bool *go,
                                  et_error *err)
{
    *go = false;
    wire_hello *h = calloc(1, sizeof *h);
    if (!h)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    gethostname(h->host, sizeof h->host - 1);
    snprintf(h->spec, sizeof h->spec, "%s", spec);
    snprintf(h->cpus, sizeof h->cpus, "%s", cpus);
    if (st == ET_OK)
        h->info = *info;
    int rc = scale_send_hello(s, h, st, why);
    free(h);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "sending HELLO");
    MPI_Status pst;
    void *buf = NULL;
    int len = 0;
    rc = scale_probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
    if (rc == MPI_SUCCESS)
        rc = scale_recv_probed(s->comm, &pst, &buf, &len);
    free(buf);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "waiting for rank 0");
    *go = pst.MPI_TAG == TAG_GO;
    return ET_OK;
}

et_status et_scale_campaign_ask(et_scale *s, int *problem, et_error *err)
{
    *problem = -1;
    int rc = MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ASK, s->comm);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "asking for a problem");
    MPI_Status pst;
    void *buf = NULL;
    int len = 0;
    rc = scale_probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
    if (rc == MPI_SUCCESS)
        rc = scale_recv_probed(s->comm, &pst, &buf, &len);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return scale_fail(err, rc, "waiting for a problem");
    }
    if (pst.MPI_TAG == TAG_PROBLEM && len == (int)sizeof(int32_t))
        *problem = *(int32_t *)buf;
    free(buf);
    return ET_OK;
}

et_status et_scale_campaign_lookup(et_scale *s, int problem,
                                   const et_db_trial *key, et_db_trial *out,
                                   bool *found, et_error *err)
{
    *found = false;
    wire_trial *w = calloc(1, sizeof *w);
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->problem = problem;
    w->t = *key;
    int rc = MPI_Send(w, (int)sizeof *w, MPI_BYTE, 0, TAG_LOOKUP, s->comm);
    free(w);
    if (rc != MPI_SUCCESS)
        return scale_fail(err, rc, "asking rank 0's database");
    MPI_Status pst;
    wire_trial *a = NULL;
    int len = 0;
    rc = scale_probe_wait(s->comm, 0, TAG_ANSWER, &pst);
    if (rc == MPI_SUCCESS)
        rc = scale_recv_probed(s->comm, &pst, (void **)&a, &len);
    if (rc != MPI_SUCCESS) {
        free(a);
        return scale_fail(err, rc, "waiting for rank 0's database");
    }
    if (len != (int)sizeof *a) {
        free(a);
        return et_errorf(err, ET_ERR_INTERNAL, "a malformed answer");
    }
    *found = a->found != 0;
    if (*found)
        *out = a->t;
    free(a);
    return ET_OK;
}

et_status et_scale_campaign_record(et_scale *s, int problem,
                                   const et_db_trial *tr, et_error *err)
{
    wire_trial *w = calloc(1, sizeof *w);
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->problem = problem;
    w->t = *tr;
    int rc = MPI_Send(w, (int)sizeof *w, MPI_BYTE, 0, TAG_RECORD, s->comm);
    free(w);
    return rc == MPI_SUCCESS ? ET_OK
                             : scale_fail(err, rc, "sending a trial to rank 0");
}

et_status et_scale_campaign_race(et_scale *s, int problem,
                                 const et_db_race *r, et_error *err)
{
    if (r->n < 1 || r->n > ET_DB_RACE_MAX || r->rounds < 0)
        return et_errorf(err, ET_ERR_INPUT, "a race of %d kernels", r->n);
    size_t nt = (size_t)r->n * (size_t)r->rounds;
    wire_race_rec *w = calloc(1, sizeof *w + nt * sizeof(double));
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->problem = problem;
    w->r = *r;
    double *t = (double *)(w + 1);
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < r->rounds; k++)
            t[(size_t)i * (size_t)r->rounds + (size_t)k] =
                r->e[i].times ? r->e[i].times[(size_t)k *
                                              (size_t)r->e[i].stride]
                              : 0;
        w->r.e[i].times = NULL;
    }
    int rc = MPI_Send(w, (int)(sizeof *w + nt * sizeof(double)), MPI_BYTE, 0,
                      TAG_RACE_REC, s->comm);
    free(w);
    return rc == MPI_SUCCESS ? ET_OK
                             : scale_fail(err, rc, "sending a race to rank 0");
}

et_status et_scale_campaign_done(et_scale *s, int problem, et_status st,
                                 const char *msg, const char *text,
                                 et_error *err)
{
    size_t n = text ? strlen(text) + 1 : 1;
    wire_done *w = calloc(1, sizeof *w + n);
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->problem = problem;
    w->status = (int32_t)st;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
    if (text)
        memcpy(w + 1, text, n);
    int rc = MPI_Send(w, (int)(sizeof *w + n), MPI_BYTE, 0, TAG_DONE,
                      s->comm);
    free(w);
    return rc == MPI_SUCCESS
               ? ET_OK
               : scale_fail(err, rc, "sending a result to rank 0");
}

et_status et_scale_campaign_start(et_scale *s, et_scale_rank *ranks,
                                  et_device_info *info, et_error *err)
{
    memset(ranks, 0, sizeof *ranks * (size_t)s->size);
    ranks[0].rank = 0;
    gethostname(ranks[0].host, sizeof ranks[0].host - 1);
    wire_hello *hs = calloc((size_t)s->size, sizeof *hs);
    if (!hs)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = ET_OK;
    for (int got = 0; got < s->size - 1 && st == ET_OK;) {
        MPI_Status pst;
        void *buf = NULL;
        int len = 0;
        int rc = scale_probe_wait(s->comm, MPI_ANY_SOURCE, TAG_HELLO, &pst);
        if (rc == MPI_SUCCESS)
            rc = scale_recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS)
            st = scale_fail(err, rc, "waiting for the ranks");
        int r = pst.MPI_SOURCE;
        if (rc == MPI_SUCCESS && len == (int)sizeof *hs && r > 0 &&
            r < s->size && !s->hello[r]) {
            hs[r] = *(wire_hello *)buf;
            s->hello[r] = true;
            got++;
        }
        free(buf);
    }
    int bad = 0;
    for (int r = 1; r < s->size && st == ET_OK; r++) {
        ranks[r].rank = r;
        snprintf(ranks[r].host, sizeof ranks[r].host, "%s", hs[r].host);
        snprintf(ranks[r].spec, sizeof ranks[r].spec, "%s", hs[r].spec);
        snprintf(ranks[r].cpus, sizeof ranks[r].cpus, "%s", hs[r].cpus);
        ranks[r].info = hs[r].info;
        if (hs[r].status != ET_OK && !bad)
            bad = r;
    }
    if (st == ET_OK && bad)
        st = et_errorf(err, (et_status)hs[bad].status,
                       "rank %d (%s, device %s): %s", bad, hs[bad].host,
                       hs[bad].spec, hs[bad].msg);
    for (int r = 2; r < s->size && st == ET_OK; r++)
        if (!scale_same_kind(&hs[1].info, &hs[r].info))
            st = et_errorf(err, ET_ERR_INPUT,
                           "the ranks' devices differ: rank 1 has %s (%s, "
                           "driver %s), rank %d has %s (%s, driver %s); one "
                           "campaign needs one kind of device",
                           hs[1].info.name,
                           et_backend_name(hs[1].info.target.backend),
                           hs[1].info.driver_version, r, hs[r].info.name,
                           et_backend_name(hs[r].info.target.backend),
                           hs[r].info.driver_version);
    if (st == ET_OK && s->size > 1)
        *info = hs[1].info;
    for (int r = 1; r < s->size; r++)
        MPI_Send(NULL, 0, MPI_BYTE, r, st == ET_OK ? TAG_GO : TAG_STOP,
                 s->comm);
    memset(s->hello, 0, sizeof *s->hello * (size_t)s->size);
    free(hs);
    return st;
}

et_status et_scale_campaign_next(et_scale *s, et_scale_cmsg *m,
                                 et_error *err)
{
    memset(m, 0, sizeof *m);
    for (;;) {
        MPI_Status pst;
        void *buf = NULL;
        int len = 0;
        int rc = scale_probe_wait(s->comm, MPI_ANY_SOURCE, MPI_ANY_TAG, &pst);
        if (rc == MPI_SUCCESS)
            rc = scale_recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            return scale_fail(err, rc, "waiting for the ranks");
        }
        m->rank = pst.MPI_SOURCE;
        et_status st = ET_OK;
        bool ok = true;
        switch (pst.MPI_TAG) {
        case TAG_ASK:
            m->kind = ET_CMSG_ASK;
            break;
        case TAG_LOOKUP:
        case TAG_RECORD:
            ok = len == (int)sizeof(wire_trial);
            if (ok) {
                const wire_trial *w = buf;
                m->kind = pst.MPI_TAG == TAG_LOOKUP ? ET_CMSG_LOOKUP
                                                    : ET_CMSG_RECORD;
                m->problem = w->problem;
                m->trial = w->t;
            }
            break;
        case TAG_RACE_REC: {
            const wire_race_rec *w = buf;
            ok = len >= (int)sizeof *w && w->r.n >= 1 &&
                 w->r.n <= ET_DB_RACE_MAX && w->r.rounds >= 0;
            size_t nt = ok ? (size_t)w->r.n * (size_t)w->r.rounds : 0;
            ok = ok && (size_t)len == sizeof *w + nt * sizeof(double);
            if (!ok)
                break;
            m->kind = ET_CMSG_RACE;
            m->problem = w->problem;
            m->race = w->r;
            m->times = malloc(nt ? nt * sizeof(double) : 1);
            if (!m->times) {
                st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(m->times, w + 1, nt * sizeof(double));
            for (int i = 0; i < m->race.n; i++) {
                m->race.e[i].times = m->times + (size_t)i * (size_t)w->r.rounds;
                m->race.e[i].stride = 1;
            }
            break;
        }
        case TAG_DONE: {
            const wire_done *w = buf;
            ok = len >= (int)sizeof *w + 1 &&
                 ((const char *)buf)[len - 1] == '\0';
            if (!ok)
                break;
            m->kind = ET_CMSG_DONE;
            m->problem = w->problem;
            m->status = w->status;
            snprintf(m->msg, sizeof m->msg, "%s", w->msg);
            m->text = strdup((const char *)(w + 1));
            if (!m->text)
                st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            break;
        }
        default:
            ok = false;
            break;
        }
        free(buf);
        if (st != ET_OK)
            return st;
        if (ok)
            return ET_OK;
        /* anything else (a stray message) is not for us: the next one */
    }
}

et_status et_scale_campaign_give(et_scale *s, int rank, int problem,
                                 et_error *err)
{
    int32_t p = problem;
    int rc = problem >= 0
                 ? MPI_Send(&p, (int)sizeof p, MPI_BYTE, rank, TAG_PROBLEM,
                            s->comm)
                 : MPI_Send(NULL, 0, MPI_BYTE, rank, TAG_STOP, s->comm);
    return rc == MPI_SUCCESS ? ET_OK
                             : scale_fail(err, rc, "handing out a problem");
}

et_status et_scale_campaign_answer(et_scale *s, int rank,
                                   const et_db_trial *out, bool found,
                                   et_error *err)
{
    wire_trial *w = calloc(1, sizeof *w);
    if (!w)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    w->found = found;
    if (found)
        w->t = *out;
    int rc = MPI_Send(w, (int)sizeof *w, MPI_BYTE, rank, TAG_ANSWER,
                      s->comm);
    free(w);
    return rc == MPI_SUCCESS ? ET_OK
                             : scale_fail(err, rc, "answering a lookup");
}

#endif

/* With MPI or without: a campaign message's buffers. */
void et_scale_cmsg_clear(et_scale_cmsg *m)
{
    free(m->times);
    free(m->text);
    m->times = NULL;
    m->text = NULL;
}
