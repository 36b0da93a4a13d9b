/*
 * campaign_impl.h - the campaign's internals shared by api/campaign.c
 * (loading, one process) and api/campaign_mpi.c (over MPI ranks). Not
 * installed.
 */
#ifndef ET_CAMPAIGN_IMPL_H
#define ET_CAMPAIGN_IMPL_H

#include "api/api_impl.h"

#include <stdbool.h>

/* One problem as loaded and checked. */
typedef struct campaign_problem {
    int line, col;              /* of its mapping, 1-based */
    char einsum[1024];
    char shape[1024];
    char tune_at[256];          /* an open axis' tune-at size, "" default */
    char dtype[64];             /* "f64" when the file gave none */
    char space_given[512];      /* as the file wrote it, "" built-in */
    char space_path[1024];      /* resolved against the file's directory */
    char search[16];
    int budget;
    double time_limit_s;
    uint64_t seed;
    int race;                   /* 0: no final race */
    et_problem *p;              /* owned */
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

/* A report with an entry per problem, all ET_CAMPAIGN_NOT_RUN. */
et_campaign_report *campaign_report_new(const et_campaign *c);

/* The key a finished problem is recorded under (with its einsum and the
 * device): everything else that defines it. */
void campaign_problem_key(const campaign_problem *cp, char *out, size_t cap);

/* The tuning options of problem cp in campaign options o. */
void campaign_tune_options(const campaign_problem *cp,
                           const et_campaign_options *o,
                           et_tune_options *to);

/* A summary as the JSON text kept in the database (malloc'ed, NULL when
 * out of memory), and back (false for text that is not JSON). */
char *campaign_summary_text(const et_tune_summary *s);
bool campaign_summary_parse(const char *text, et_tune_summary *s);

/* Whether cp was finished on the device (*found; then e has its result,
 * state ET_CAMPAIGN_FROM_DB), and recording e's result. */
et_status campaign_finished(et_db *db, const campaign_problem *cp,
                            int64_t device_id, et_campaign_entry *e,
                            bool *found, et_error *err);
et_status campaign_record(et_db *db, const campaign_problem *cp,
                          int64_t device_id, et_campaign_entry *e,
                          et_error *err);

/* e from a tuning run's outcome: failed (st, d's message), tuned, or not
 * run when it was cancelled. */
void campaign_entry_from_run(et_campaign_entry *e, et_status st,
                             const et_diag *d, const et_tune_report *rep);

void campaign_describe_device(et_campaign_report *r, const et_device_info *i);

/*
 * Runs the campaign over MPI ranks when this process is one of more than
 * one (o->comm, or an MPI launcher's environment): *scaled true then, and
 * r filled on rank 0. *scaled false (ET_OK) when there is no MPI job;
 * ET_ERR_UNSUPPORTED when there is one but the build has no MPI.
 */
et_status campaign_mpi_maybe(const et_campaign *c,
                             const et_campaign_options *o,
                             et_campaign_report *r, bool *scaled,
                             et_diag *diag);

#endif
