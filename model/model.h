/*
 * model.h - a cost model of kernels fitted on measured trials, so that a
 * search can rank the candidates of a step before any is built or timed
 * and time only the promising ones (docs/model.md).
 *
 * A sample is a kernel (an einsum with its opts applied, transforms/) of
 * a problem, with the time it took relative to the untransformed kernel
 * of the same problem on the same device. The kernel and its problem
 * become a fixed feature vector (et_model_features; the features are
 * listed in model.c and docs/model.md: the opts' amounts per axis role,
 * the register tile, the launch's work-items and work per item, vector
 * width fit, the problem's bytes per op, dtype and distance from its
 * roofline). The model is linear in them and predicts
 *     y = ln(time / untransformed time)
 * by ridge regression (GSL: gsl_multifit_linear_svd and _solve on
 * standardised features, the regularisation chosen by generalised cross
 * validation, never below ET_MODEL_MIN_LAMBDA). Problem-wide features
 * shift the prediction of every kernel of a problem alike, so they do not
 * change a ranking within one problem; they are there so that the
 * per-opt coefficients are not biased by problems that gain more or less.
 *
 * Fitted: with fewer than ET_MODEL_MIN_PER_FEATURE x (features + 1)
 * samples the model is not fitted, et_model_fitted() is false and
 * et_model_predict() answers NaN: a search then ranks nothing.
 *
 * Ownership: et_model_init returns a model freed with et_model_free; it
 * keeps copies of the samples' feature vectors, never pointers to the
 * kernels. Not thread-safe per model.
 */
#ifndef ET_MODEL_H
#define ET_MODEL_H

#include "eintune.h"
#include "base/error.h"
#include "transforms/kernel.h"

#include <stdbool.h>

typedef enum et_model_feature {
    ET_MF_UPCAST_INNER = 0, /* log2 UPCAST on the innermost output axis */
    ET_MF_UPCAST_OUTER,     /* log2 UPCAST on the other output axes */
    ET_MF_TILE_SQ,          /* (log2 register tile)^2: spills */
    ET_MF_UNROLL,           /* log2 UNROLL on all reduce axes */
    ET_MF_UNROLL_CONTIG,    /* log2 UNROLL on reduce axes contiguous in an
                             * input */
    ET_MF_LOCAL,            /* log2 work-group size from LOCAL */
    ET_MF_GROUP,            /* log2 GROUP/GROUPTOP lanes */
    ET_MF_SPLIT,            /* log2 SPLIT amount */
    ET_MF_PREFETCH,         /* PREFETCH present (0/1) */
    ET_MF_HOIST,            /* HOIST present (0/1) */
    ET_MF_ITEMS,            /* log2 work-items launched */
    ET_MF_STARVE,           /* max(0, log2(64 x compute units) - items) */
    ET_MF_WORK,             /* log2 iterations per work-item */
    ET_MF_VECTOR,           /* innermost output UPCAST a multiple of the
                             * preferred vector width (> 1) (0/1) */
    ET_MF_BYTES_PER_OP,     /* log2 compulsory bytes / ops (problem) */
    ET_MF_F64,              /* accumulation in f64 (problem, 0/1) */
    ET_MF_HEADROOM,         /* log2 untransformed time / roofline time
                             * (problem; 0 unknown) */
    ET_MF_TILE_F64,         /* log2 register tile x f64 */
    ET_MF_FACTOR,           /* FACTOR present (0/1) */
    ET_MF_STAGE,            /* STAGE present (0/1) */
    ET_MF_LOOP,             /* log2 LOOP amounts (global axes iterated
                             * inside a work-item) */
    ET_MF_NTSTORE,          /* NTSTORE present (0/1) */
    ET_MF_COUNT
} et_model_feature;

#define ET_MODEL_N_FEATURES ET_MF_COUNT
/* samples needed per coefficient (the features and the intercept) */
#define ET_MODEL_MIN_PER_FEATURE 2
#define ET_MODEL_MIN_SAMPLES \
    (ET_MODEL_MIN_PER_FEATURE * (ET_MODEL_N_FEATURES + 1))
#define ET_MODEL_MIN_LAMBDA 1e-3

/* "upcast_inner", ... (as docs/model.md names them). */
const char *et_model_feature_name(et_model_feature f);

/* What the model needs to know of a kernel's problem beyond the kernel:
 * the untransformed kernel's time and the roofline time of the problem
 * on the device (either 0 or less: unknown). */
typedef struct et_model_problem {
    double base_s;
    double roof_s;
} et_model_problem;

/* The feature vector of kernel k of problem p (p may be NULL: nothing
 * known) into x[ET_MODEL_N_FEATURES]. */
void et_model_features(const et_kernel *k, const et_model_problem *p,
                       double x[ET_MODEL_N_FEATURES]);

typedef struct et_model et_model;

/* A model without samples; NULL when out of memory. */
et_model *et_model_init(void);
void et_model_free(et_model *m);

/* Adds a sample: k of problem p took time_s where its untransformed
 * kernel took p->base_s. ET_ERR_INPUT (nothing added) when either time
 * is not finite and positive; ET_ERR_NOMEM. */
et_status et_model_add(et_model *m, const et_kernel *k,
                       const et_model_problem *p, double time_s);
/* Adds a sample as a feature vector and its target y = ln(time / base). */
et_status et_model_add_features(et_model *m,
                                const double x[ET_MODEL_N_FEATURES],
                                double y);

/* Samples added so far. */
int et_model_n_samples(const et_model *m);

/*
 * Fits on every sample added so far. With too few samples (above) the
 * model is left not fitted and ET_OK is returned; ET_ERR_NOMEM, or
 * ET_ERR_INTERNAL (err says what GSL said) when the solve fails (the
 * model is then not fitted either).
 */
et_status et_model_fit(et_model *m, et_error *err);

/* True after a fit that had enough samples. */
bool et_model_fitted(const et_model *m);
/* The samples of the last successful fit (0: none). */
int et_model_n_fitted(const et_model *m);
/* The last fit's regularisation and in-sample R^2 (NaN: not fitted). */
double et_model_lambda(const et_model *m);
double et_model_r2(const et_model *m);
/* The last fit's coefficient of feature f in the features' own units
 * (NaN: not fitted). */
double et_model_coef(const et_model *m, et_model_feature f);

/* Predicted ln(time / untransformed time) of k in problem p; NaN when
 * the model is not fitted. */
double et_model_predict(const et_model *m, const et_kernel *k,
                        const et_model_problem *p);
double et_model_predict_features(const et_model *m,
                                 const double x[ET_MODEL_N_FEATURES]);

#endif
