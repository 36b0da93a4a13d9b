/*
 * campaign.h - a campaign: a list of problems tuned in one go
 * (`eintune campaign FILE`, docs/scale-out.md), below the public API.
 *
 * Files, by what they own:
 *   campaign_file.c    the campaign file: YAML, every problem and space
 *                      checked when it is loaded
 *   campaign_run.c     the key a finished problem is recorded under, its
 *                      record in the database, one problem tuned through
 *                      the tuning callback, the campaign in one process
 *   campaign_report.c  the report: its entries, the summary printed and
 *                      as JSON, a tuning summary as the JSON kept in the
 *                      database
 * Calls between them go one way: campaign_run.c uses campaign_report.c,
 * campaign_file.c uses neither. The campaign over the ranks of an MPI job
 * is scale/campaign.c's, built on these pieces (never the other way).
 *
 * Tuning one problem is the caller's (campaign_tune_fn): the code above
 * this layer passes the function that turns a problem and its options
 * into a tuning run, so that nothing here calls upwards.
 *
 * Ownership: et_campaign (campaign_load, freed with campaign_free) owns
 * its problems' einsums and spaces; et_campaign_report
 * (campaign_report_new, freed with campaign_report_free) owns its
 * entries. Not thread-safe: one run of a campaign at a time.
 */
#ifndef ET_TUNE_CAMPAIGN_H
#define ET_TUNE_CAMPAIGN_H

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "spaces/space.h"
#include "tune/tune.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

/* One problem as loaded and checked. */
typedef struct campaign_problem {
    int line, col;              /* of its mapping, 1-based */
    char einsum[1024];
    char shape[1024];
    char tune_at[256];          /* an open axis' tune-at size, "" default */
    char batch[512];            /* a batched einsum's rows, "" none */
    char dtype[64];             /* "f64" when the file gave none */
    char space_given[512];      /* as the file wrote it, "" built-in */
    char space_path[1024];      /* resolved against the file's directory */
    char search[16];
    int budget;
    double time_limit_s;
    uint64_t seed;
    int race;                   /* 0: no final race */
    et_einsum *e;               /* owned (malloc'ed) */
    et_space *space;            /* owned */
} campaign_problem;

struct et_campaign {
    char path[1024];
    int n;
    campaign_problem *p;
};

struct et_campaign_report {
    char path[1024];
    char db[1024];
    char device[256], backend[16], driver[128];
    int rank, n_ranks;
    double elapsed_s;
    int n;
    et_campaign_entry *e;
};

struct campaign_opts;

/* What tuning one problem needs. */
typedef struct campaign_tune_req {
    const campaign_problem *cp;   /* the problem, its space and search */
    const struct campaign_opts *o; /* the campaign's options */
    et_device *dev;               /* open; used as it is and kept open */
    const et_tune_store *store;   /* the trials' database elsewhere (o->db
                                   * not opened); NULL: o->db */
    et_log_fn log;                /* the run's log lines (NULL: none) */
    void *log_arg;
} campaign_tune_req;

/*
 * Tunes q's problem on q->dev, without joining an MPI job, and answers
 * its summary in *out (cancelled set when it was stopped); on failure the
 * run's status with d's message (*out untouched). arg is the options'
 * tune_arg.
 */
typedef et_status (*campaign_tune_fn)(void *arg, const campaign_tune_req *q,
                                      et_tune_summary *out, et_diag *d);

/* How a campaign runs. */
typedef struct campaign_opts {
    const char *device;         /* device spec (under MPI a list) */
    const char *db;             /* database path; NULL: the default */
    int retime;                 /* tune every problem again, the
                                 * database's trials measured again */
    et_log_fn log;              /* NULL: silent */
    void *log_arg;
    volatile sig_atomic_t *cancel; /* stops after the problems in flight */
    void *comm;                 /* the MPI communicator (scale/), NULL:
                                 * the launcher's job */
    void (*done)(void *arg, const et_campaign_entry *e); /* NULL: none */
    void *done_arg;
    campaign_tune_fn tune;      /* required */
    void *tune_arg;
    et_device *dev;             /* in one process: an open device to use
                                 * (kept open), a session's; NULL: open
                                 * device */
    et_db *open_db;             /* likewise the database; NULL: open db */
} campaign_opts;

/* ---- campaign_file.c ----------------------------------------------------- */

/*
 * Loads the campaign file at path into *out (freed with campaign_free).
 * d must be cleared (pos -1, status ET_OK). ET_ERR_INPUT (ET_INPUT_FILE,
 * "FILE:LINE:COL: why", 1-based) for a bad file, a space file's own
 * diagnostic (ET_INPUT_SPACE), ET_ERR_IO when the file cannot be read.
 */
et_status campaign_load(const char *path, et_campaign **out, et_diag *d);
void campaign_free(et_campaign *c);

/* ---- campaign_run.c ------------------------------------------------------ */

/* d (may be NULL) gets status st, input in and a printf message; returns
 * st. campaign_fail: err's message (st's name when it is empty). */
et_status campaign_failf(et_diag *d, et_status st, et_input in,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
et_status campaign_fail(et_diag *d, et_status st, et_input in,
                        const et_error *err);

/* A log line to o's log (nothing without one). */
void campaign_logf(const campaign_opts *o, et_log_level lvl,
                   const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The key a finished problem is recorded under (with its einsum and the
 * device): everything else that defines it. */
void campaign_problem_key(const campaign_problem *cp, char *out, size_t cap);

/* Whether cp was finished on the device (*found; then e has its result,
 * state ET_CAMPAIGN_FROM_DB), and recording e's result. */
et_status campaign_finished(et_db *db, const campaign_problem *cp,
                            int64_t device_id, et_campaign_entry *e,
                            bool *found, et_error *err);
et_status campaign_record(et_db *db, const campaign_problem *cp,
                          int64_t device_id, et_campaign_entry *e,
                          et_error *err);

/* Problem i of c, answered from the database: logged, and o->done. */
void campaign_from_db(const et_campaign *c, const campaign_opts *o, int i,
                      const et_campaign_entry *e);

/*
 * Tunes cp through o->tune on dev (store, log: as campaign_tune_req) into
 * e: tuned, failed (status, message) or not run when it was cancelled.
 */
void campaign_tune(const campaign_opts *o, const campaign_problem *cp,
                   et_device *dev, const et_tune_store *store, et_log_fn log,
                   void *log_arg, et_campaign_entry *e);

/* r's device, backend and driver from i. */
void campaign_describe_device(et_campaign_report *r, const et_device_info *i);

/*
 * The campaign in this process, one problem after another, on o->device
 * with o->db: r's entries filled. ET_OK when it ran (a problem that
 * failed is an entry), else the device's or the database's error.
 */
et_status campaign_run_here(const et_campaign *c, const campaign_opts *o,
                            et_campaign_report *r, et_diag *d);

/* ---- campaign_report.c --------------------------------------------------- */

/* A report with an entry per problem, all ET_CAMPAIGN_NOT_RUN (NULL when
 * out of memory). */
et_campaign_report *campaign_report_new(const et_campaign *c);
void campaign_report_free(et_campaign_report *r);

/* "not run", "tuned", "database", "failed"; "?" for another value. */
const char *campaign_state_name(et_campaign_state s);

/* The summary table to f, and the report as JSON (malloc'ed; NULL when
 * out of memory). r and f non-NULL. */
void campaign_report_print(const et_campaign_report *r, FILE *f);
char *campaign_report_json(const et_campaign_report *r);

/* A summary as the JSON text kept in the database (malloc'ed, NULL when
 * out of memory), and back (false for text that is not JSON). */
char *campaign_summary_text(const et_tune_summary *s);
bool campaign_summary_parse(const char *text, et_tune_summary *s);

#endif /* ET_TUNE_CAMPAIGN_H */
