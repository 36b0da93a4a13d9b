/*
 * mpi_impl.h - internal to the files of scale/ built with MPI
 * (ET_HAVE_MPI): the job's state, the message kinds and the messages of a
 * tuning run, and the functions one file calls in another (prefixed
 * scale_). Not part of the API; nothing outside scale/ includes it.
 *
 * Files, by what they own:
 *   mpi.c    joining the job; waiting for and receiving a message; HELLO;
 *            an evaluating rank's device and cores
 *   serve.c  an evaluating rank's loop: jobs and the final race
 *   exec.c   rank 0's executor: HELLOs, jobs handed out, results, the
 *            race on one rank, STOP and the ranks' STATS
 *   cmsg.c   a campaign's messages, both ends
 *   off.c    every function of scale.h when built without MPI
 */
#ifndef ET_SCALE_MPI_IMPL_H
#define ET_SCALE_MPI_IMPL_H

#include "scale/scale.h"

#include <mpi.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* An MPI failure rc of `what` into err (ET_ERR_IO); returns ET_ERR_IO. */
et_status scale_fail(et_error *err, int rc, const char *what);

/*
 * Waits for a message from src (MPI_ANY_SOURCE) with tag (MPI_ANY_TAG)
 * without spinning: MPI_Iprobe, then a sleep that grows from 20 us to
 * 1 ms (Open MPI's blocking receive would busy-poll a core).
 */
int scale_probe_wait(MPI_Comm c, int src, int tag, MPI_Status *st);

/* Receives the message scale_probe_wait found into a malloc'ed buffer. */
int scale_recv_probed(MPI_Comm c, const MPI_Status *pst, void **buf,
                      int *len);

/* Sends HELLO to rank 0 (status st, err's message when failed). */
int scale_send_hello(et_scale *s, wire_hello *h, et_status st,
                     const et_error *err);

/* The same kind of device: backend, name and driver. */
bool scale_same_kind(const et_device_info *a, const et_device_info *b);

/* A line of an evaluating rank's log (o->log), printf-style. */
void scale_log(const et_scale_serve_opts *o, et_tune_level lvl,
               const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The device of evaluating rank `index` on its node: the --device list's
 * item, else the index-th OpenCL device (cyclic over those there are). */
void scale_choose_spec(const char *list, int index, char *out, size_t cap);

/*
 * Binds this rank (and so the device worker it starts, which inherits
 * the mask) to its share of the cores it may use: evaluating rank j of W
 * on the node gets cores [j n / W, (j+1) n / W) of the n it has, and
 * PoCL as many threads. More ranks than cores: one core each, shared,
 * with a warning. cpus gets the set as text.
 */
void scale_bind_cores(const et_scale *s, const et_scale_serve_opts *o,
                      char *cpus, size_t cap);

#endif
