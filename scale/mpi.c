/*
 * mpi.c - joining an MPI job (see scale.h): MPI_Init when nobody has,
 * the duplicated communicator, this rank's place among the evaluating
 * ranks of its node; and what the other files of scale/ share
 * (mpi_impl.h): waiting for and receiving a message, HELLO, an evaluating
 * rank's device and cores. Compiled with ET_HAVE_MPI when the build found
 * MPI; off.c stands in for it otherwise.
 */
#include "scale/scale.h"

#ifdef ET_HAVE_MPI

#include "scale/mpi_impl.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
            return scale_fail(err, rc, "MPI_Init");
        atexit(finalize_at_exit);
    }
    et_scale *s = calloc(1, sizeof *s);
    if (!s)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    MPI_Comm base = comm ? *(MPI_Comm *)comm : MPI_COMM_WORLD;
    int rc = MPI_Comm_dup(base, &s->comm);
    if (rc != MPI_SUCCESS) {
        free(s);
        return scale_fail(err, rc, "MPI_Comm_dup");
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

/* ---- what the other files share ------------------------------------- */

et_status scale_fail(et_error *err, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return et_errorf(err, ET_ERR_IO, "%s: %s", what, s);
}

/* Never spins: a sleep between probes that grows from 20 us to 1 ms. */
int scale_probe_wait(MPI_Comm c, int src, int tag, MPI_Status *st)
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

int scale_recv_probed(MPI_Comm c, const MPI_Status *pst, void **buf,
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

void scale_log(const et_scale_serve_opts *o, et_tune_level lvl,
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

void scale_choose_spec(const char *list, int index, char *out, size_t cap)
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

/* Evaluating rank j of W on the node: cores [j n / W, (j+1) n / W). */
void scale_bind_cores(const et_scale *s, const et_scale_serve_opts *o,
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
        scale_log(o, ET_TUNE_WARN, "rank %d: %d timing ranks share %d "
                  "cores on this node: timings disturb each other", s->rank,
                  W, n);
    }
    if (sched_setaffinity(0, sizeof mine, &mine) != 0) {
        scale_log(o, ET_TUNE_WARN, "rank %d: cannot bind to its cores: %s",
                  s->rank, strerror(errno));
        return;
    }
    char num[16];
    snprintf(num, sizeof num, "%d", k);
    setenv("POCL_MAX_PTHREAD_COUNT", num, 1);
    et_scale_cpus_text(&mine, cpus, cap);
}

int scale_send_hello(et_scale *s, wire_hello *h, et_status st,
                     const et_error *err)
{
    h->status = (int32_t)st;
    if (st != ET_OK)
        snprintf(h->msg, sizeof h->msg, "%.1000s", err->msg);
    return MPI_Send(h, (int)sizeof *h, MPI_BYTE, 0, TAG_HELLO, s->comm);
}

bool scale_same_kind(const et_device_info *a, const et_device_info *b)
{
    return a->target.backend == b->target.backend &&
           strcmp(a->name, b->name) == 0 &&
           strcmp(a->driver_version, b->driver_version) == 0;
}

#endif
