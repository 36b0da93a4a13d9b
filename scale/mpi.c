/*
 * mpi.c - the ranks of a tuning run over MPI (see scale.h): joining the
 * job, an evaluating rank's loop and rank 0's executor. Compiled with ET_HAVE_MPI when the build found MPI;
 * otherwise only the stubs at the end, which say that scale-out is off.
 */
#include "scale/scale.h"

#include "base/clock.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF_MSG "scale-out is off: eintune was built without MPI " \
                "(install libopenmpi-dev, e.g. with make deps, and rebuild)"

#ifdef ET_HAVE_MPI

#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Message kinds (tags). */
enum {
    TAG_HELLO = 1, TAG_JOB, TAG_RESULT, TAG_STOP, TAG_STATS, TAG_RACE,
    TAG_RACE_RESULT,
    /* campaigns */
    TAG_GO, TAG_ASK, TAG_PROBLEM, TAG_LOOKUP, TAG_ANSWER, TAG_RECORD,
    TAG_RACE_REC, TAG_DONE
};

struct et_scale {
    MPI_Comm comm;
    int rank, size;
    int local_index, local_count; /* among evaluating ranks on the node */
    /* rank 0's executor */
    int *busy;                    /* busy[r]: rank r has a job */
    et_scale_figures fig;
    double t0, cpu0;
    bool started;                 /* HELLOs were received */
    bool *hello;                  /* hello[r]: rank r's HELLO was received */
};

typedef struct wire_hello {
    int32_t status;
    char msg[1024];
    char host[64];
    char spec[64];
    char cpus[64];
    et_device_info info;
    et_timing baseline;
    et_verify_result baseline_verify;
    double baseline_s;
} wire_hello;

typedef struct wire_job {
    int64_t id;
    et_timing_opts to;
    et_launch geom;
    /* an open kernel: its launch at the open axis' awkward sizes, which
     * the rank verifies it at too (et_tune_evaluate) */
    int32_t n_at;
    et_launch geom_at[ET_TUNE_AWKWARD_MAX];
    char name[160];
    int64_t src_len;              /* the source follows, with its NUL */
} wire_job;

typedef struct wire_result {
    int64_t id;
    et_evaluation ev;
    double load_1m;               /* of the rank's machine, NaN: unknown */
} wire_result;

/* The final race: n kernels; their sources follow, each with its NUL. */
typedef struct wire_race {
    int32_t n, warmups, rounds;
    double max_seconds;
    et_launch geom[ET_RACE_MAX];
    char name[ET_RACE_MAX][160];
    int64_t src_len[ET_RACE_MAX];
} wire_race;

/* Its answer; n * rounds times follow, aligned. */
typedef struct wire_race_result {
    int32_t status, failed, done;
    int32_t pad;
    char msg[1024];
} wire_race_result;
_Static_assert(sizeof(wire_race_result) % _Alignof(double) == 0,
               "the times after a race's answer are aligned");

typedef struct wire_stats {
    int32_t evaluations;
    double busy_s, idle_s;
} wire_stats;

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static et_status mpi_fail(et_error *err, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return et_errorf(err, ET_ERR_IO, "%s: %s", what, s);
}

/*
 * Waits for a message from src (MPI_ANY_SOURCE) with tag (MPI_ANY_TAG)
 * without spinning: MPI_Iprobe, then a sleep that grows from 20 us to
 * 1 ms (Open MPI's blocking receive would busy-poll a core).
 */
static int probe_wait(MPI_Comm c, int src, int tag, MPI_Status *st)
{
    long ns = 20000;
    for (;;) {
        int flag = 0;
        int rc = MPI_Iprobe(src, tag, c, &flag, st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (flag)
            return MPI_SUCCESS;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000)
            ns = ns * 2 > 1000000 ? 1000000 : ns * 2;
    }
}

/* Receives the message probe_wait found into a malloc'ed buffer. */
static int recv_probed(MPI_Comm c, const MPI_Status *pst, void **buf,
                       int *len)
{
    int n = 0;
    MPI_Get_count(pst, MPI_BYTE, &n);
    *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!*buf)
        return MPI_ERR_NO_MEM;
    *len = n;
    return MPI_Recv(*buf, n, MPI_BYTE, pst->MPI_SOURCE, pst->MPI_TAG, c,
                    MPI_STATUS_IGNORE);
}

static void finalize_at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

bool et_scale_available(void)
{
    return true;
}

et_status et_scale_join(void *comm, et_scale **out, et_error *err)
{
    *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Init");
        atexit(finalize_at_exit);
    }
    et_scale *s = calloc(1, sizeof *s);
    if (!s)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    MPI_Comm base = comm ? *(MPI_Comm *)comm : MPI_COMM_WORLD;
    int rc = MPI_Comm_dup(base, &s->comm);
    if (rc != MPI_SUCCESS) {
        free(s);
        return mpi_fail(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    /* the evaluating ranks on this node, in node order, rank 0 left out:
     * they share the node's cores and devices */
    MPI_Comm node;
    MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                        &node);
    int nn = 0, me = 0;
    MPI_Comm_size(node, &nn);
    MPI_Comm_rank(node, &me);
    int *ranks = calloc((size_t)nn, sizeof *ranks);
    if (!ranks) {
        MPI_Comm_free(&node);
        et_scale_free(s);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    MPI_Allgather(&s->rank, 1, MPI_INT, ranks, 1, MPI_INT, node);
    for (int i = 0; i < nn; i++) {
        if (ranks[i] == 0)
            continue;
        if (i < me)
            s->local_index++;
        s->local_count++;
    }
    free(ranks);
    MPI_Comm_free(&node);
    s->busy = calloc((size_t)s->size, sizeof *s->busy);
    s->hello = calloc((size_t)s->size, sizeof *s->hello);
    if (!s->busy || !s->hello) {
        et_scale_free(s);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    *out = s;
    return ET_OK;
}

void et_scale_free(et_scale *s)
{
    if (!s)
        return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && s->comm != MPI_COMM_NULL && s->comm)
        MPI_Comm_free(&s->comm);
    free(s->busy);
    free(s->hello);
    free(s);
}

int et_scale_rank_of(const et_scale *s)
{
    return s->rank;
}

int et_scale_size(const et_scale *s)
{
    return s->size;
}

void et_scale_local(const et_scale *s, int *index, int *count)
{
    *index = s->local_index;
    *count = s->local_count;
}

/* ---- an evaluating rank ------------------------------------------------ */

static void slog(const et_scale_serve_opts *o, et_tune_level lvl,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void slog(const et_scale_serve_opts *o, et_tune_level lvl,
                 const char *fmt, ...)
{
    if (!o->log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->log(o->arg, lvl, buf);
}

/* Item i (cyclic) of a comma-separated list into out; false when the
 * list is empty. */
static bool list_item(const char *list, int i, char *out, size_t cap)
{
    if (!list || !*list)
        return false;
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    i %= n;
    const char *p = list;
    while (i-- > 0)
        p = strchr(p, ',') + 1;
    size_t len = strcspn(p, ",");
    snprintf(out, cap, "%.*s", (int)len, p);
    return true;
}

/* The device of evaluating rank `index` on its node: the --device list's
 * item, else the index-th OpenCL device (cyclic over those there are). */
static void choose_spec(const char *list, int index, char *out, size_t cap)
{
    if (list_item(list, index, out, cap))
        return;
    et_device_info infos[16];
    int n = 0;
    et_device_list(infos, 16, &n, NULL, 0);
    int n_cl = 0;
    for (int i = 0; i < n; i++)
        n_cl += infos[i].target.backend == ET_BACKEND_OPENCL;
    snprintf(out, cap, "opencl:%d", n_cl > 0 ? index % n_cl : 0);
}

/*
 * Binds this rank (and so the device worker it starts, which inherits
 * the mask) to its share of the cores it may use: evaluating rank j of W
 * on the node gets cores [j n / W, (j+1) n / W) of the n it has, and
 * PoCL as many threads. More ranks than cores: one core each, shared,
 * with a warning. cpus gets the set as text.
 */
static void bind_cores(const et_scale *s, const et_scale_serve_opts *o,
                       char *cpus, size_t cap)
{
    cpu_set_t have, mine;
    cpus[0] = '\0';
    if (sched_getaffinity(0, sizeof have, &have) != 0)
        return;
    int list[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &have))
            list[n++] = c;
    int W = s->local_count > 0 ? s->local_count : 1, j = s->local_index;
    CPU_ZERO(&mine);
    int k = 0;
    if (W <= n) {
        for (int i = j * n / W; i < (j + 1) * n / W; i++, k++)
            CPU_SET(list[i], &mine);
    } else {
        CPU_SET(list[j % n], &mine);
        k = 1;
        slog(o, ET_TUNE_WARN, "rank %d: %d timing ranks share %d cores on "
             "this node: timings disturb each other", s->rank, W, n);
    }
    if (sched_setaffinity(0, sizeof mine, &mine) != 0) {
        slog(o, ET_TUNE_WARN, "rank %d: cannot bind to its cores: %s",
             s->rank, strerror(errno));
        return;
    }
    char num[16];
    snprintf(num, sizeof num, "%d", k);
    setenv("POCL_MAX_PTHREAD_COUNT", num, 1);
    et_scale_cpus_text(&mine, cpus, cap);
}

/* Sends HELLO (status st, err's message when failed). */
static int send_hello(et_scale *s, wire_hello *h, et_status st,
                      const et_error *err)
{
    h->status = (int32_t)st;
    if (st != ET_OK)
        snprintf(h->msg, sizeof h->msg, "%.1000s", err->msg);
    return MPI_Send(h, (int)sizeof *h, MPI_BYTE, 0, TAG_HELLO, s->comm);
}

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
        slog(o, ET_TUNE_DEBUG, "rank %d: the final race, %d kernels",
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

et_status et_scale_serve(et_scale *s, const et_scale_serve_opts *o,
                         et_error *err)
{
    wire_hello *h = calloc(1, sizeof *h);
    if (!h)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    gethostname(h->host, sizeof h->host - 1);
    choose_spec(o->device, s->local_index, h->spec, sizeof h->spec);
    et_device_spec ds;
    if (et_device_spec_parse(h->spec, &ds, NULL) == ET_OK &&
        ds.backend == ET_BACKEND_OPENCL)
        bind_cores(s, o, h->cpus, sizeof h->cpus);
    et_device *dev = NULL;
    et_verifier *ver = NULL;
    et_tune_awkward awk;
    memset(&awk, 0, sizeof awk);
    et_kernel *base = NULL;
    et_error e1 = {{0}};
    double tb = et_now_s();
    et_status st = et_device_open_isolated(h->spec, NULL, &dev, &e1);
    if (st == ET_OK) {
        h->info = dev->info;
        st = et_verifier_init(o->e, &o->verify, &ver, &e1);
    }
    if (st == ET_OK)
        st = et_tune_awkward_init(o->e, &o->verify, &awk, &e1);
    if (st == ET_OK) {
        st = et_kernel_init(o->e, &dev->info.target, &base);
        if (st != ET_OK)
            et_errorf(&e1, st, "cannot build the untransformed kernel");
    }
    if (st == ET_OK) {
        char name[160], said[1024];
        st = et_tune_baseline(dev, ver, base, &o->timing, &h->baseline,
                              &h->baseline_verify, name, sizeof name, said,
                              sizeof said, &e1);
    }
    h->baseline_s = et_now_s() - tb;
    et_kernel_free(base);
    int rc = send_hello(s, h, st, &e1);
    bool serving = st == ET_OK && rc == MPI_SUCCESS;
    char h_spec[64];
    snprintf(h_spec, sizeof h_spec, "%s", h->spec);
    free(h);
    if (rc != MPI_SUCCESS) {
        st = mpi_fail(err, rc, "sending HELLO");
        goto out;
    }
    /* a rank that cannot serve still answers until STOP (rank 0 ends the
     * run), then returns why, so that it exits as rank 0 does */
    et_status own = st;
    st = ET_OK;

    wire_stats stats = {0, 0, 0};
    double idle_from = -1; /* idle is counted from the first job on */
    int every = o->recycle_every ? o->recycle_every : 250;
    for (;;) {
        MPI_Status pst;
        double tw = et_now_s();
        rc = probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(err, rc, "waiting for work");
            break;
        }
        if (idle_from >= 0)
            stats.idle_s += et_now_s() - tw;
        void *buf = NULL;
        int len = 0;
        rc = recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            st = mpi_fail(err, rc, "receiving work");
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
            rc = serve_race(s, o, serving ? dev : NULL, ver, &e1, buf, len);
            free(buf);
            stats.busy_s += et_now_s() - t0;
            if (rc != MPI_SUCCESS) {
                st = mpi_fail(err, rc, "sending the race");
                break;
            }
            continue;
        }
        if (pst.MPI_TAG != TAG_JOB || len < (int)sizeof(wire_job)) {
            free(buf);
            continue;
        }
        idle_from = 0;
        double t0 = et_now_s();
        wire_job *j = buf;
        const char *source = (const char *)(j + 1);
        wire_result *res = calloc(1, sizeof *res);
        if (!res) {
            free(buf);
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            break;
        }
        res->id = j->id;
        res->load_1m = et_tune_load_1m();
        if (!serving || (int64_t)len != (int64_t)sizeof *j + j->src_len) {
            et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                          "rank %d cannot evaluate: %s", s->rank,
                          serving ? "malformed job" : e1.msg);
        } else if (j->n_at != awk.n) {
            et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                          "rank %d: the job has %d awkward sizes of the open "
                          "axis, this rank %d", s->rank, (int)j->n_at,
                          awk.n);
        } else {
            /* the evaluation the local loop makes, awkward sizes and all */
            et_error e2 = {{0}};
            et_status es = et_tune_evaluate(ver, &awk, j->geom_at, dev,
                                            source, j->name, &j->geom,
                                            &j->to, &res->ev, &e2);
            if (es != ET_OK)
                et_result_set(&res->ev.result, ET_OUTCOME_LAUNCH_ERROR,
                              "rank %d: %s", s->rank, e2.msg);
            stats.evaluations++;
            if (every > 0 && stats.evaluations % every == 0) {
                et_verifier_release(ver);
                et_tune_awkward_release(&awk);
                if (et_device_recycle(dev, &e2) != ET_OK)
                    slog(o, ET_TUNE_WARN, "rank %d: %s", s->rank, e2.msg);
            }
        }
        free(buf);
        stats.busy_s += et_now_s() - t0;
        rc = MPI_Send(res, (int)sizeof *res, MPI_BYTE, 0, TAG_RESULT,
                      s->comm);
        free(res);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(err, rc, "sending a result");
            break;
        }
    }
    if (st == ET_OK && own != ET_OK)
        st = et_errorf(err, own, "rank %d (device %s): %s", s->rank,
                       h_spec, e1.msg);
out:
    if (ver) {
        et_verifier_release(ver);
        et_verifier_free(ver);
    }
    et_tune_awkward_free(&awk);
    if (dev)
        et_device_close(dev);
    return st;
}

/* ---- rank 0 ----------------------------------------------------------------- */

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
        return mpi_fail(err, rc, "sending a job");
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
    int rc = probe_wait(s->comm, MPI_ANY_SOURCE, TAG_RESULT, &pst);
    wire_result *res = NULL;
    int len = 0;
    if (rc == MPI_SUCCESS)
        rc = recv_probed(s->comm, &pst, (void **)&res, &len);
    s->fig.wait_s += et_now_s() - t0;
    if (rc != MPI_SUCCESS) {
        free(res);
        return mpi_fail(err, rc, "waiting for a result");
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
        return mpi_fail(err, rc, "sending the race");
    s->busy[r] = 1;
    s->fig.jobs++;
    s->fig.submit_s += et_now_s() - t0;
    MPI_Status pst;
    wire_race_result *res = NULL;
    int len = 0;
    t0 = et_now_s();
    rc = probe_wait(s->comm, r, TAG_RACE_RESULT, &pst);
    if (rc == MPI_SUCCESS)
        rc = recv_probed(s->comm, &pst, (void **)&res, &len);
    s->fig.wait_s += et_now_s() - t0;
    s->busy[r] = 0;
    if (rc != MPI_SUCCESS) {
        free(res);
        return mpi_fail(err, rc, "waiting for the race");
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

static bool same_kind(const et_device_info *a, const et_device_info *b)
{
    return a->target.backend == b->target.backend &&
           strcmp(a->name, b->name) == 0 &&
           strcmp(a->driver_version, b->driver_version) == 0;
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
        int rc = probe_wait(s->comm, MPI_ANY_SOURCE, TAG_HELLO, &pst);
        void *buf = NULL;
        int len = 0;
        if (rc == MPI_SUCCESS)
            rc = recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            free(hs);
            return mpi_fail(err, rc, "waiting for the ranks");
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
        if (!same_kind(&hs[1].info, &hs[r].info)) {
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
        if (probe_wait(s->comm, r, TAG_HELLO, &pst) == MPI_SUCCESS)
            recv_probed(s->comm, &pst, &buf, &len);
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
        if (probe_wait(s->comm, r, TAG_RESULT, &pst) == MPI_SUCCESS)
            recv_probed(s->comm, &pst, &buf, &len);
        free(buf);
        s->busy[r] = 0;
    }
    for (int r = 1; r < s->size; r++)
        MPI_Send(NULL, 0, MPI_BYTE, r, TAG_STOP, s->comm);
    for (int n = 1; n < s->size; n++) {
        MPI_Status pst;
        wire_stats *w = NULL;
        int len = 0;
        if (probe_wait(s->comm, MPI_ANY_SOURCE, TAG_STATS, &pst) !=
                MPI_SUCCESS ||
            recv_probed(s->comm, &pst, (void **)&w, &len) != MPI_SUCCESS) {
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

/* ---- campaigns -------------------------------------------------------------- */

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
    choose_spec(list, s->local_index, spec, spec_cap);
    cpus[0] = '\0';
    et_device_spec ds;
    et_scale_serve_opts o;
    memset(&o, 0, sizeof o);
    o.log = log;
    o.arg = arg;
    if (et_device_spec_parse(spec, &ds, NULL) == ET_OK &&
        ds.backend == ET_BACKEND_OPENCL)
        bind_cores(s, &o, cpus, cpus_cap);
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
    int rc = send_hello(s, h, st, why);
    free(h);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "sending HELLO");
    MPI_Status pst;
    void *buf = NULL;
    int len = 0;
    rc = probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
    if (rc == MPI_SUCCESS)
        rc = recv_probed(s->comm, &pst, &buf, &len);
    free(buf);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "waiting for rank 0");
    *go = pst.MPI_TAG == TAG_GO;
    return ET_OK;
}

et_status et_scale_campaign_ask(et_scale *s, int *problem, et_error *err)
{
    *problem = -1;
    int rc = MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ASK, s->comm);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "asking for a problem");
    MPI_Status pst;
    void *buf = NULL;
    int len = 0;
    rc = probe_wait(s->comm, 0, MPI_ANY_TAG, &pst);
    if (rc == MPI_SUCCESS)
        rc = recv_probed(s->comm, &pst, &buf, &len);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return mpi_fail(err, rc, "waiting for a problem");
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
        return mpi_fail(err, rc, "asking rank 0's database");
    MPI_Status pst;
    wire_trial *a = NULL;
    int len = 0;
    rc = probe_wait(s->comm, 0, TAG_ANSWER, &pst);
    if (rc == MPI_SUCCESS)
        rc = recv_probed(s->comm, &pst, (void **)&a, &len);
    if (rc != MPI_SUCCESS) {
        free(a);
        return mpi_fail(err, rc, "waiting for rank 0's database");
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
                             : mpi_fail(err, rc, "sending a trial to rank 0");
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
                             : mpi_fail(err, rc, "sending a race to rank 0");
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
    return rc == MPI_SUCCESS ? ET_OK
                             : mpi_fail(err, rc, "sending a result to rank 0");
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
        int rc = probe_wait(s->comm, MPI_ANY_SOURCE, TAG_HELLO, &pst);
        if (rc == MPI_SUCCESS)
            rc = recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS)
            st = mpi_fail(err, rc, "waiting for the ranks");
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
        if (!same_kind(&hs[1].info, &hs[r].info))
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
        int rc = probe_wait(s->comm, MPI_ANY_SOURCE, MPI_ANY_TAG, &pst);
        if (rc == MPI_SUCCESS)
            rc = recv_probed(s->comm, &pst, &buf, &len);
        if (rc != MPI_SUCCESS) {
            free(buf);
            return mpi_fail(err, rc, "waiting for the ranks");
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
                             : mpi_fail(err, rc, "handing out a problem");
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
                             : mpi_fail(err, rc, "answering a lookup");
}

#else /* !ET_HAVE_MPI */

bool et_scale_available(void)
{
    return false;
}

et_status et_scale_join(void *comm, et_scale **out, et_error *err)
{
    *out = NULL;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

void et_scale_free(et_scale *s)
{
    (void)s;
}

int et_scale_rank_of(const et_scale *s)
{
    (void)s;
    return 0;
}

int et_scale_size(const et_scale *s)
{
    (void)s;
    return 1;
}

void et_scale_local(const et_scale *s, int *index, int *count)
{
    (void)s;
    *index = 0;
    *count = 0;
}

et_status et_scale_serve(et_scale *s, const et_scale_serve_opts *o,
                         et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_master_start(et_scale *s, et_tune_exec *x,
                                et_scale_rank *ranks, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

void et_scale_master_stop(et_scale *s, et_scale_rank *ranks,
                          et_scale_figures *fig)
{
}

void et_scale_campaign_device(et_scale *s, const char *list, char *spec,
                              size_t spec_cap, char *cpus, size_t cpus_cap,
                              void (*log)(void *arg, et_tune_level lvl,
                                          const char *msg),
                              void *arg)
{
    snprintf(spec, spec_cap, "%s", list ? list : "");
    if (cpus_cap)
        cpus[0] = '\0';
}

et_status et_scale_campaign_hello(et_scale *s, et_status st,
                                  const et_error *why, const char *spec,
                                  const char *cpus,
                                  const et_device_info *info, bool *go,
                                  et_error *err)
{
    *go = false;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_ask(et_scale *s, int *problem, et_error *err)
{
    *problem = -1;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_lookup(et_scale *s, int problem,
                                   const et_db_trial *key, et_db_trial *out,
                                   bool *found, et_error *err)
{
    *found = false;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_record(et_scale *s, int problem,
                                   const et_db_trial *tr, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_race(et_scale *s, int problem,
                                 const et_db_race *r, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_done(et_scale *s, int problem, et_status st,
                                 const char *msg, const char *text,
                                 et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_start(et_scale *s, et_scale_rank *ranks,
                                  et_device_info *info, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_next(et_scale *s, et_scale_cmsg *m,
                                 et_error *err)
{
    memset(m, 0, sizeof *m);
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_give(et_scale *s, int rank, int problem,
                                 et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_answer(et_scale *s, int rank,
                                   const et_db_trial *out, bool found,
                                   et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
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
