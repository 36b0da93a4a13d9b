/*
 * scale.h - one tuning run spread over the ranks of an MPI job
 * (docs/scale-out.md).
 *
 * Rank 0 runs the search and alone owns the database, stdout and the
 * JSON; every other rank opens one device through its own device worker
 * and evaluates what rank 0 hands it: it builds, verifies and times a
 * kernel's source and sends the evaluation back. Rank 0 reaches the ranks
 * through an et_tune_exec (tune/tune.h) whose slots are the ranks: a
 * candidate goes to whichever rank is free.
 *
 * A run, seen from the ranks (tag = message kind):
 *   every rank > 0: opens its device (bound to its own cores when the
 *     device is OpenCL: a CPU device shared by ranks would otherwise give
 *     false timings), verifies and times the untransformed kernel, and
 *     sends HELLO {status, host, device, cores, baseline}; then answers
 *     JOB {id, timing options, geometry, name, source} with RESULT {id,
 *     evaluation, its machine's load} and RACE {kernels' geometries,
 *     names and sources, rounds, time limit} with RACE_RESULT {status,
 *     rounds done, times} (et_tune_race_time on its device) until STOP,
 *     to which it answers STATS {evaluations, busy and idle seconds}. A
 *     rank that could not open its device says so in HELLO, answers
 *     until STOP and then returns that failure.
 *   rank 0: waits for every HELLO (et_scale_master_start), refuses ranks
 *     whose devices differ (ET_ERR_INPUT: one search, one device kind),
 *     runs the search through the executor, then the final race on one
 *     rank, and ends every path with et_scale_master_stop (STOP, then the
 *     ranks' STATS).
 * Both ends are the same build on machines of one architecture: messages
 * are structs sent as bytes.
 *
 * Waiting never spins: Open MPI's blocking calls busy-poll a core, which
 * a timing rank may need, so every wait here is MPI_Iprobe with a sleep
 * between probes that grows from 20 us to 1 ms.
 *
 * MPI is optional at build time (ET_HAVE_MPI, from `pkg-config ompi-c` or
 * mpicc): without it et_scale_available is false, the environment is
 * still read (so that a run under mpirun can say that scale-out is off),
 * and every other function returns ET_ERR_UNSUPPORTED.
 *
 * MPI_Init is called only when MPI_Initialized says nobody has; then
 * MPI_Finalize runs at exit. A communicator given by the caller is
 * duplicated, so that these messages never meet the caller's.
 * Not thread-safe: one run at a time per process.
 */
#ifndef ET_SCALE_H
#define ET_SCALE_H

#include "db/db.h"
#include "measure/backend.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "tune/tune.h"

#include <stdbool.h>

/* Where this process stands in a job, as the launcher's environment says
 * (readable before MPI_Init: OMPI_COMM_WORLD_*, PMIX_RANK, PMI_*). */
typedef struct et_scale_env {
    bool launched;          /* started by an MPI launcher */
    int rank, size;         /* 0 and 1 when not launched */
    int local_rank, local_size;
} et_scale_env;

void et_scale_env_get(et_scale_env *out);

/* True when eintune was built with MPI. */
bool et_scale_available(void);

/* One rank as rank 0 saw it. Plain value. */
typedef struct et_scale_rank {
    int rank;
    char host[64];
    char spec[64];          /* the device spec it opened */
    et_device_info info;
    char cpus[64];          /* the cores it is bound to, "" when not bound */
    /* from its STATS at the end */
    int evaluations;
    double busy_s;          /* evaluating */
    double idle_s;          /* waiting for work after its first job */
} et_scale_rank;

/* Rank 0's own figures for a run. */
typedef struct et_scale_figures {
    int jobs;               /* evaluations handed out (the re-timing too) */
    double submit_s;        /* sending jobs */
    double wait_s;          /* blocked waiting for a result */
    double hello_s;         /* waiting for the ranks' HELLO (their device
                               and baseline) */
    double cpu_s;           /* CPU time of rank 0 over the run */
    double wall_s;
} et_scale_figures;

typedef struct et_scale et_scale;

/*
 * Joins the job: MPI_Init when nobody has (then MPI_Finalize at exit),
 * and a duplicate of comm (an MPI_Comm *; NULL: MPI_COMM_WORLD). *out is
 * freed with et_scale_free (which does not finalize MPI).
 */
et_status et_scale_join(void *comm, et_scale **out, et_error *err);
void et_scale_free(et_scale *s);
int et_scale_rank_of(const et_scale *s);
int et_scale_size(const et_scale *s);
/* The node-local index of this rank among the evaluating ranks (rank 0
 * excluded) and their count on this node. */
void et_scale_local(const et_scale *s, int *index, int *count);

/* What an evaluating rank needs to serve a run. */
typedef struct et_scale_serve_opts {
    const et_einsum *e;
    const char *device;       /* the --device list (NULL: by local index) */
    et_verify_opts verify;
    et_timing_opts timing;
    int recycle_every;        /* as et_tune_opts */
    void (*log)(void *arg, et_tune_level lvl, const char *msg);
    void *arg;
} et_scale_serve_opts;

/*
 * An evaluating rank's whole part in a run (see the header comment):
 * returns after STOP. ET_OK when it served to the end; when its own
 * device could not be opened or verify the untransformed kernel (told to
 * rank 0 in HELLO), that status after STOP (ET_ERR_INPUT for a device
 * spec that names no device), err naming the rank; MPI failures
 * otherwise.
 */
et_status et_scale_serve(et_scale *s, const et_scale_serve_opts *o,
                         et_error *err);

/*
 * Rank 0: waits for every rank's HELLO and fills x (slots, functions,
 * the device, the baseline of the lowest rank) and ranks[1..size-1]
 * (ranks has room for et_scale_size entries; ranks[0] is rank 0, without
 * a device). Errors: a rank that could not open its device or verify the
 * untransformed kernel (its status, err names the rank), ranks whose
 * devices differ (ET_ERR_INPUT). Call et_scale_master_stop afterwards in
 * every case.
 */
et_status et_scale_master_start(et_scale *s, et_tune_exec *x,
                                et_scale_rank *ranks, et_error *err);

/*
 * Rank 0: STOP to every rank, then their STATS into ranks and rank 0's
 * figures into fig (may be NULL). Safe after a failed start.
 */
void et_scale_master_stop(et_scale *s, et_scale_rank *ranks,
                          et_scale_figures *fig);

/* ---- campaigns: one problem per rank ------------------------------------ */

/*
 * A campaign over the ranks (scale/campaign.c): rank 0 owns the
 * database and hands out problems by index (every rank loaded the same
 * campaign); every other rank tunes the problem it gets on its own device
 * and sends rank 0 what would go to the database.
 *
 *   rank > 0: et_scale_campaign_device (its device spec, its cores), opens
 *     the device, et_scale_campaign_hello {status, device}; waits for GO
 *     or STOP (et_scale_campaign_wait_go); then et_scale_campaign_ask
 *     (ASK -> PROBLEM i, or STOP) until STOP; while tuning a problem:
 *     LOOKUP {trial key} -> ANSWER {found, trial}, RECORD {trial}, RACE
 *     {race, times}, and at the end DONE {status, message, result text}.
 *   rank 0: et_scale_campaign_start (every HELLO, one device kind; GO to
 *     all, or STOP to all and the error), then et_scale_campaign_next for
 *     each message, answering ASK with et_scale_campaign_give (a problem,
 *     or -1: STOP) and LOOKUP with et_scale_campaign_answer.
 * Messages between two ranks keep their order, so a RECORD is in the
 * database before that rank's next LOOKUP is answered.
 */

/* What a campaign's rank sent rank 0 (et_scale_campaign_next). */
typedef enum et_scale_cmsg_kind {
    ET_CMSG_ASK, ET_CMSG_LOOKUP, ET_CMSG_RECORD, ET_CMSG_RACE, ET_CMSG_DONE
} et_scale_cmsg_kind;

typedef struct et_scale_cmsg {
    et_scale_cmsg_kind kind;
    int rank;
    int problem;            /* the rank's problem (all but ASK) */
    et_db_trial trial;      /* LOOKUP: its key; RECORD: the row */
    et_db_race race;        /* RACE: e[i].times point into times */
    double *times;          /* RACE (malloc'ed) */
    int32_t status;         /* DONE: the tuning run's status */
    char msg[1024];         /* DONE: its message when it failed */
    char *text;             /* DONE: the result (malloc'ed) */
} et_scale_cmsg;

/* Frees what m holds (times, text). */
void et_scale_cmsg_clear(et_scale_cmsg *m);

/* Rank > 0: the device spec of this rank (the list's item by node-local
 * index, or the index-th OpenCL device) into spec, and, for an OpenCL
 * device, the binding to its own cores (cpus gets them, "" when not
 * bound; log may be NULL). */
void et_scale_campaign_device(et_scale *s, const char *list, char *spec,
                              size_t spec_cap, char *cpus, size_t cpus_cap,
                              void (*log)(void *arg, et_tune_level lvl,
                                          const char *msg),
                              void *arg);

/* Rank > 0: tells rank 0 its device (info when st is ET_OK, else err's
 * message), then waits for GO (*go true) or STOP. */
et_status et_scale_campaign_hello(et_scale *s, et_status st,
                                  const et_error *why, const char *spec,
                                  const char *cpus,
                                  const et_device_info *info, bool *go,
                                  et_error *err);

/* Rank > 0: asks for a problem; *problem -1 for STOP. */
et_status et_scale_campaign_ask(et_scale *s, int *problem, et_error *err);

/* Rank > 0, tuning problem: the database's answer for key (*out, *found),
 * recording a trial, a race, and the problem's end. */
et_status et_scale_campaign_lookup(et_scale *s, int problem,
                                   const et_db_trial *key, et_db_trial *out,
                                   bool *found, et_error *err);
et_status et_scale_campaign_record(et_scale *s, int problem,
                                   const et_db_trial *tr, et_error *err);
et_status et_scale_campaign_race(et_scale *s, int problem,
                                 const et_db_race *r, et_error *err);
et_status et_scale_campaign_done(et_scale *s, int problem, et_status st,
                                 const char *msg, const char *text,
                                 et_error *err);

/* Rank 0: every rank's HELLO into ranks (room for et_scale_size); GO to
 * all when they opened their devices and those are of one kind (*info
 * the kind), else STOP to all and the first rank's failure (ET_ERR_INPUT:
 * kinds differ, or its device spec names no device). */
et_status et_scale_campaign_start(et_scale *s, et_scale_rank *ranks,
                                  et_device_info *info, et_error *err);

/* Rank 0: the next message from any rank (blocks without spinning). */
et_status et_scale_campaign_next(et_scale *s, et_scale_cmsg *m,
                                 et_error *err);

/* Rank 0: problem for rank (-1: STOP), and a LOOKUP's answer. */
et_status et_scale_campaign_give(et_scale *s, int rank, int problem,
                                 et_error *err);
et_status et_scale_campaign_answer(et_scale *s, int rank,
                                   const et_db_trial *out, bool found,
                                   et_error *err);

/* Plain-text list of a CPU set: "0-1,4". */
void et_scale_cpus_text(const void *cpu_set, char *out, size_t cap);

#endif
