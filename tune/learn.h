/*
 * learn.h - the cost model of a tuning run (model/model.h,
 * docs/model.md): what it learns from and how the search asks it.
 *
 * Before the search a run's model learns from the database's verified
 * trials of the same device (every einsum whose untransformed kernel was
 * verified too: the time of a trial over that kernel's is the target),
 * each kernel rebuilt from its einsum and opts text (trials whose opts no
 * longer apply are dropped), and is fitted. During the search it learns
 * every candidate this run times (a candidate cut at the early-cut bound
 * counts with the bound, a time it is known to exceed) and is fitted
 * again after every ET_TUNE_LEARN_REFIT new samples. The search ranks
 * through et_tune_learn_predict, which answers NaN (rank nothing) while
 * the model is not fitted.
 *
 * Ownership: et_tune_learn_init fills a learner freed with
 * et_tune_learn_free; it keeps pointers to opts' peaks (which must
 * outlive it), nothing else. Not thread-safe.
 */
#ifndef ET_TUNE_LEARN_H
#define ET_TUNE_LEARN_H

#include "db/db.h"
#include "model/model.h"
#include "roofline/roofline.h"
#include "transforms/kernel.h"

#include <stdbool.h>

/* new samples between fits during a run */
#define ET_TUNE_LEARN_REFIT 8
/* the most recent trials a run learns from */
#define ET_TUNE_LEARN_DB_LIMIT 20000

/* What the model did in a run (the report's "model"). Plain value. */
typedef struct et_tune_model_report {
    bool on;            /* not turned off */
    bool used;          /* fitted, and it ranked a step */
    bool fitted_at_start;
    int db_samples;     /* trials of the database it learnt from */
    int db_dropped;     /* trials that no longer rebuild or apply */
    int run_samples;    /* candidates of this run it learnt from */
    int fitted_on;      /* samples of the last fit (0: never fitted) */
    int ranked;         /* new kernels it scored (search stats) */
    int skipped;        /* of which never timed */
    double r2;          /* in-sample R^2 of the last fit (NaN: none) */
    char note[256];     /* why it was not used, or a fit's failure */
} et_tune_model_report;

typedef struct et_tune_learn {
    et_model *m;
    et_model_problem prob;  /* the run's problem */
    int since_fit;
    et_tune_model_report *rep;
} et_tune_learn;

/*
 * Sets up L for a run of einsum e on a device of target t whose
 * untransformed kernel took base_s: learns from db's trials of device_id
 * (db may be NULL: nothing to learn from yet), with the roofline of each
 * problem from peaks (NULL: unknown), and fits. rep gets the figures.
 * ET_ERR_NOMEM; a database that cannot be read is noted in rep->note and
 * the run goes on learning from its own candidates.
 */
et_status et_tune_learn_init(et_tune_learn *L, et_db *db, int64_t device_id,
                             const et_einsum *e, const et_target *t,
                             const et_peaks *peaks, double base_s,
                             et_tune_model_report *rep, et_error *err);

/* A candidate of this run: k took time_s (cut: time_s is the bound it
 * exceeded). Fits again every ET_TUNE_LEARN_REFIT samples. */
void et_tune_learn_add(et_tune_learn *L, const et_kernel *k, double time_s);

/* What et_search_opts.predict answers: the predicted ln(time /
 * untransformed time) of k in the run's problem, NaN while not fitted. */
double et_tune_learn_predict(const et_tune_learn *L, const et_kernel *k);

/* Copies the search's counts into the report and frees the model. */
void et_tune_learn_free(et_tune_learn *L, int ranked, int skipped);

#endif
