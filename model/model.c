/*
 * model.c - the kernel cost model (model.h): features of a kernel and its
 * problem, and a ridge regression of ln(time / untransformed time) on
 * them, so that a search can skip candidates predicted to be slow.
 *
 * Why these features: on the devices eintune targets a kernel's time is
 * set by how many independent accumulators each work-item keeps (the
 * register tile: UPCAST, spilling when too large, hence its square and
 * its interaction with f64, whose registers hold half as many lanes),
 * whether the contiguous output axis is upcast in whole vectors (the
 * compiler's vector loads and stores), how the reduction is unrolled
 * (contiguous reduce axes give vector loads), how many work-items there
 * are to keep the compute units busy (too few starve them: a hinge below
 * 64 per compute unit) and how much each one does (launch overhead
 * against loop overhead), and the cooperative opts (LOCAL, GROUP, SPLIT,
 * PREFETCH, HOIST, FACTOR, STAGE, LOOP, NTSTORE) that change memory
 * traffic or arithmetic. Amounts enter as log2, so
 * that doubling an amount is one step whatever its size.
 */
#include "model/model.h"

#include "einsum/einsum.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const feature_names[] = {
    "upcast_inner", "upcast_outer", "tile_sq",     "unroll",
    "unroll_contig", "local",       "group",       "split",
    "prefetch",     "hoist",        "items",       "starve",
    "work",         "vector",       "bytes_per_op", "f64",
    "headroom",     "tile_f64",     "factor",      "stage",
    "loop",         "ntstore",
};
_Static_assert(sizeof(feature_names) / sizeof(feature_names[0]) ==
                   ET_MF_COUNT,
               "feature_names must match et_model_feature");

const char *et_model_feature_name(et_model_feature f)
{
    return (unsigned)f < ET_MF_COUNT ? feature_names[f] : "?";
}

/* ---- features ------------------------------------------------------------ */

/* Is reduce axis a the last (contiguous) dimension of an input? */
static bool contiguous_in_input(const et_einsum *e, int a)
{
    for (int k = 0; k < e->n_ops; k++)
        if (e->op[k].rank > 0 && e->op[k].idx[e->op[k].rank - 1] == a &&
            e->op[k].dim[e->op[k].rank - 1] > 1)
            return true;
    return false;
}

void et_model_features(const et_kernel *k, const et_model_problem *p,
                       double x[ET_MODEL_N_FEATURES])
{
    const et_einsum *e = &k->e;
    memset(x, 0, sizeof(double) * ET_MODEL_N_FEATURES);
    int inner = e->n_out - 1; /* the output's contiguous axis, -1: none */
    double lg_tile = 0, lg_items = 0, lg_iter = 0;
    int64_t up_inner = 1;
    for (int i = 0; i < k->n_parts; i++) {
        const et_part *pt = &k->part[i];
        double lg = pt->size > 1 ? log2((double)pt->size) : 0;
        switch (pt->kind) {
        case ET_PART_UPCAST:
            if (pt->axis == inner) {
                x[ET_MF_UPCAST_INNER] += lg;
                up_inner *= pt->size;
            } else {
                x[ET_MF_UPCAST_OUTER] += lg;
            }
            lg_tile += lg;
            break;
        case ET_PART_UNROLL:
            x[ET_MF_UNROLL] += lg;
            if (contiguous_in_input(e, pt->axis))
                x[ET_MF_UNROLL_CONTIG] += lg;
            break;
        case ET_PART_LOCAL:
            x[ET_MF_LOCAL] += lg;
            lg_items += lg;
            break;
        case ET_PART_GROUP:
            x[ET_MF_GROUP] += lg;
            lg_items += lg;
            break;
        case ET_PART_SPLIT:
            x[ET_MF_SPLIT] += lg;
            lg_items += lg;
            break;
        case ET_PART_GLOBAL:
            lg_items += lg;
            break;
        case ET_PART_LOOP:
            x[ET_MF_LOOP] += lg;
            break;
        default:
            break;
        }
        lg_iter += lg;
    }
    x[ET_MF_TILE_SQ] = lg_tile * lg_tile;
    x[ET_MF_PREFETCH] = k->prefetch_axis >= 0 ? 1 : 0;
    x[ET_MF_HOIST] = k->hoist ? 1 : 0;
    x[ET_MF_FACTOR] = k->factor ? 1 : 0;
    x[ET_MF_STAGE] = k->stage ? 1 : 0;
    x[ET_MF_NTSTORE] = k->ntstore ? 1 : 0;
    x[ET_MF_ITEMS] = lg_items;
    int cu = k->target.compute_units > 0 ? k->target.compute_units : 1;
    double want = log2(64.0 * cu);
    x[ET_MF_STARVE] = lg_items < want ? want - lg_items : 0;
    x[ET_MF_WORK] = lg_iter > lg_items ? lg_iter - lg_items : 0;
    int w = k->target.preferred_vector_width[e->out.dtype];
    x[ET_MF_VECTOR] = w > 1 && up_inner % w == 0 ? 1 : 0;
    int64_t ops[ET_DTYPE_COUNT], n_ops = 0;
    et_einsum_ops(e, ops);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        n_ops += ops[t];
    int64_t bytes = et_einsum_bytes(e);
    if (n_ops > 0 && bytes > 0)
        x[ET_MF_BYTES_PER_OP] = log2((double)bytes / (double)n_ops);
    x[ET_MF_F64] = e->acc_dtype == ET_F64 ? 1 : 0;
    if (p && p->base_s > 0 && p->roof_s > 0 && isfinite(p->base_s) &&
        isfinite(p->roof_s))
        x[ET_MF_HEADROOM] = log2(p->base_s / p->roof_s);
    x[ET_MF_TILE_F64] = lg_tile * x[ET_MF_F64];
}

/* ---- the regression -------------------------------------------------------- */

struct et_model {
    int n, cap;
    double *x;          /* n rows of ET_MODEL_N_FEATURES */
    double *y;
    bool fitted;
    int n_fitted;
    double coef[ET_MODEL_N_FEATURES]; /* in the features' units */
    double intercept;
    double lambda, r2;
};

et_model *et_model_init(void)
{
    et_model *m = calloc(1, sizeof *m);
    if (m) {
        m->lambda = NAN;
        m->r2 = NAN;
    }
    return m;
}

void et_model_free(et_model *m)
{
    if (!m)
        return;
    free(m->x);
    free(m->y);
    free(m);
}

et_status et_model_add_features(et_model *m,
                                const double x[ET_MODEL_N_FEATURES],
                                double y)
{
    if (!isfinite(y))
        return ET_ERR_INPUT;
    for (int j = 0; j < ET_MODEL_N_FEATURES; j++)
        if (!isfinite(x[j]))
            return ET_ERR_INPUT;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 256;
        double *nx = realloc(m->x, sizeof(double) * ET_MODEL_N_FEATURES *
                                       (size_t)cap);
        if (!nx)
            return ET_ERR_NOMEM;
        m->x = nx;
        double *ny = realloc(m->y, sizeof(double) * (size_t)cap);
        if (!ny)
            return ET_ERR_NOMEM;
        m->y = ny;
        m->cap = cap;
    }
    memcpy(m->x + (size_t)m->n * ET_MODEL_N_FEATURES, x,
           sizeof(double) * ET_MODEL_N_FEATURES);
    m->y[m->n++] = y;
    return ET_OK;
}

et_status et_model_add(et_model *m, const et_kernel *k,
                       const et_model_problem *p, double time_s)
{
    if (!p || !(p->base_s > 0) || !isfinite(p->base_s) || !(time_s > 0) ||
        !isfinite(time_s))
        return ET_ERR_INPUT;
    double x[ET_MODEL_N_FEATURES];
    et_model_features(k, p, x);
    return et_model_add_features(m, x, log(time_s / p->base_s));
}

int et_model_n_samples(const et_model *m)
{
    return m->n;
}

bool et_model_fitted(const et_model *m)
{
    return m->fitted;
}

int et_model_n_fitted(const et_model *m)
{
    return m->fitted ? m->n_fitted : 0;
}

double et_model_lambda(const et_model *m)
{
    return m->fitted ? m->lambda : NAN;
}

double et_model_r2(const et_model *m)
{
    return m->fitted ? m->r2 : NAN;
}

double et_model_coef(const et_model *m, et_model_feature f)
{
    return m->fitted && (unsigned)f < ET_MF_COUNT ? m->coef[f] : NAN;
}

/*
 * The fit: features centred and scaled to unit spread (a feature that
 * never varies gets coefficient 0), the target centred, so that one
 * lambda treats every feature alike and the intercept is not shrunk;
 * lambda by GCV over GSL's grid of the singular values' range.
 */
et_status et_model_fit(et_model *m, et_error *err)
{
    enum { P = ET_MODEL_N_FEATURES, N_LAMBDA = 40 };
    int n = m->n;
    m->fitted = false;
    if (n < ET_MODEL_MIN_SAMPLES)
        return ET_OK;
    gsl_set_error_handler_off();
    double mean[P], scale[P], ybar = 0;
    for (int j = 0; j < P; j++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < n; i++)
            s += m->x[(size_t)i * P + j];
        mean[j] = s / n;
        for (int i = 0; i < n; i++) {
            double d = m->x[(size_t)i * P + j] - mean[j];
            s2 += d * d;
        }
        double sd = sqrt(s2 / n);
        scale[j] = sd > 1e-12 ? sd : 0;
    }
    for (int i = 0; i < n; i++)
        ybar += m->y[i];
    ybar /= n;

    et_status st = ET_OK;
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, P);
    gsl_vector *y = gsl_vector_alloc((size_t)n);
    gsl_vector *c = gsl_vector_alloc(P);
    gsl_vector *reg = gsl_vector_alloc(N_LAMBDA);
    gsl_vector *G = gsl_vector_alloc(N_LAMBDA);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)n,
                                                                 P);
    if (!X || !y || !c || !reg || !G || !w) {
        st = et_errorf(err, ET_ERR_NOMEM, "model: out of memory");
        goto done;
    }
    double tss = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < P; j++)
            gsl_matrix_set(X, (size_t)i, (size_t)j,
                           scale[j] > 0
                               ? (m->x[(size_t)i * P + j] - mean[j]) / scale[j]
                               : 0);
        double d = m->y[i] - ybar;
        gsl_vector_set(y, (size_t)i, d);
        tss += d * d;
    }
    int gs = gsl_multifit_linear_svd(X, w);
    double lambda = ET_MODEL_MIN_LAMBDA, g_lambda = 0;
    if (gs == GSL_SUCCESS) {
        if (gsl_multifit_linear_gcv(y, reg, G, &lambda, &g_lambda, w) !=
            GSL_SUCCESS)
            lambda = 1.0; /* GCV fails on a degenerate spectrum: a light
                           * fixed ridge */
        if (!(lambda >= ET_MODEL_MIN_LAMBDA))
            lambda = ET_MODEL_MIN_LAMBDA;
        double rnorm = 0, snorm = 0;
        gs = gsl_multifit_linear_solve(lambda, X, y, c, &rnorm, &snorm, w);
        if (gs == GSL_SUCCESS) {
            m->r2 = tss > 0 ? 1 - rnorm * rnorm / tss : NAN;
            m->lambda = lambda;
        }
    }
    if (gs != GSL_SUCCESS) {
        st = et_errorf(err, ET_ERR_INTERNAL, "model: the fit failed: %s",
                       gsl_strerror(gs));
        goto done;
    }
    m->intercept = ybar;
    for (int j = 0; j < P; j++) {
        m->coef[j] = scale[j] > 0 ? gsl_vector_get(c, (size_t)j) / scale[j]
                                  : 0;
        m->intercept -= m->coef[j] * mean[j];
    }
    m->fitted = true;
    m->n_fitted = n;
done:
    gsl_matrix_free(X);
    gsl_vector_free(y);
    gsl_vector_free(c);
    gsl_vector_free(reg);
    gsl_vector_free(G);
    if (w)
        gsl_multifit_linear_free(w);
    return st;
}

double et_model_predict_features(const et_model *m,
                                 const double x[ET_MODEL_N_FEATURES])
{
    if (!m || !m->fitted)
        return NAN;
    double s = m->intercept;
    for (int j = 0; j < ET_MODEL_N_FEATURES; j++)
        s += m->coef[j] * x[j];
    return s;
}

double et_model_predict(const et_model *m, const et_kernel *k,
                        const et_model_problem *p)
{
    if (!m || !m->fitted)
        return NAN;
    double x[ET_MODEL_N_FEATURES];
    et_model_features(k, p, x);
    return et_model_predict_features(m, x);
}
