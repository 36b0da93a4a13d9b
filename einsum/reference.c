/*
 * reference.c - the high-precision reference evaluator (et_reference_eval).
 *
 * Every kernel eintune builds is checked against this evaluator, so it aims
 * to be obviously right first and fast second.
 *
 * Precision: every operand value is exact in long double (f16, f32 and f64
 * all embed in it), each term is a product of those values in long double
 * (x87 extended, 64-bit significand) and the terms of one output element are
 * added with compensated summation in long double (Neumaier's; in the
 * inner loops its branch-free form, Knuth's two-sum, which adds the same
 * exact error terms). The result is
 * accurate to a few units of 2^-64 relative to Σ|terms| - far below the
 * error of any f32 or f64 kernel, which is what verification needs. Σ|terms|
 * is accumulated plainly (all addends are non-negative, so the relative
 * error is at most K·2^-64).
 *
 * Addressing: for every operand k and index i, stride[k][i] is the sum of
 * the C-order strides of the operand's dimensions that carry index i and are
 * not broadcast (a repeated index - a diagonal - sums its strides; a
 * broadcast dimension of extent 1 has stride 0). Output elements are visited
 * in C order with an odometer over the output indices; for each element the
 * summed indices run as a second odometer whose innermost loop, over the
 * last summed index, only adds strides to pointers: no division or modulo
 * per term. Operands are read in their own dtype (f16 through a table of
 * all 65536 values), so memory use is the output alone; the loops are
 * specialised for operands sharing one dtype and for 1, 2 and 3 operands.
 *
 * Two operands of f32 or f16 (sharing the dtype) take a faster path of
 * the same accuracy: their products are exact in double, and the terms are
 * summed in double-double (two-sum, in vectors of 16, 8 or 4 output
 * elements along the last output index), then rounded once to long
 * double; the sums came out equal to the bit to the long double path's in
 * every case tried; Σ|terms| is a plain double sum there (relative error K·2^-53).
 * Two f64 operands take the same path on a CPU with FMA: a product is
 * then the double p and its exact error fma(a, b, -p), both summed, which
 * is more accurate than the long double path (about K^2·2^-106 against
 * K·2^-64 of Σ|terms|) and several times faster.
 *
 * Threads: large problems are split over the online CPUs (at most
 * REF_MAX_THREADS) with pthreads, by ranges of output elements or, when the
 * output has fewer elements than threads, by ranges of the first summed
 * index with the compensated partial sums combined at the end. The result
 * does not depend on the split beyond the last bits of the compensation.
 */
#include "einsum/einsum.h"

#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_MAX_THREADS 8
/* below this many terms a single thread is faster than starting others */
#define REF_THREAD_MIN_TERMS (1 << 20)

typedef struct ref_ctx {
    int n_ops;
    const void *data[ET_MAX_OPERANDS];
    et_dtype dtype[ET_MAX_OPERANDS];
    int uniform;                               /* all operands one dtype */
    int64_t stride[ET_MAX_OPERANDS][ET_MAX_INDICES];
    int n_out;                                 /* output indices 0..n_out-1 */
    int64_t out_size[ET_MAX_INDICES];          /* by output position */
    int out_index[ET_MAX_INDICES];             /* output position -> index */
    int n_sum;                                 /* summed indices */
    int64_t sum_size[ET_MAX_INDICES];
    int sum_index[ET_MAX_INDICES];
} ref_ctx;

/* One piece of work: output elements [o_lo, o_hi), and of the first summed
 * index only [s_lo, s_hi). Results go to sum/comp/abs[0 .. o_hi-o_lo-1]. */
typedef struct ref_job {
    const ref_ctx *c;
    int64_t o_lo, o_hi;
    int64_t s_lo, s_hi;
    long double *sum, *comp, *abs;
} ref_job;

/* Neumaier's step: s + c holds the running sum exactly up to rounding of
 * c itself. */
#define NEUMAIER_ADD(s, c, p)                                                 \
    do {                                                                      \
        long double t_ = (s) + (p);                                           \
        if (fabsl(s) >= fabsl(p))                                             \
            (c) += ((s) - t_) + (p);                                          \
        else                                                                  \
            (c) += ((p) - t_) + (s);                                          \
        (s) = t_;                                                             \
    } while (0)

/* Knuth's two-sum, branch-free: the same exact error of s + p as
 * Neumaier's step (the rounding error of a sum is one number, and both
 * compute it exactly), added to c. In the inner loops: Neumaier's
 * data-dependent branch cost more than the extra additions (one
 * reference of xik,kj->xij f64 at x=4096, 35^3: 1.09 s with it, 0.53 s
 * without, the same result to the bit). */
#define TWO_SUM_ADD(s, c, p)                                                  \
    do {                                                                      \
        long double t_ = (s) + (p);                                           \
        long double z_ = t_ - (s);                                            \
        (c) += ((s) - (t_ - z_)) + ((p) - z_);                                \
        (s) = t_;                                                             \
    } while (0)

/* exact binary16 -> float table (256 KiB), built once */
static float half_table[65536];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void half_table_init(void)
{
    for (uint32_t h = 0; h < 65536; h++)
        half_table[h] = et_half_to_float((uint16_t)h);
}

#define LOAD_F16(x) ((long double)half_table[*(x)])
#define LOAD_F32(x) ((long double)*(x))
#define LOAD_F64(x) ((long double)*(x))

/*
 * The innermost loop over n terms: operand k starts at element off[k] and
 * steps by st[k]; adds the products into (*s, *cp) and |products| into *a.
 * One function per dtype shared by all operands, with unrolled cases for
 * 1, 2 and 3 operands.
 */
#define DEFINE_INNER(NAME, T, LOAD)                                           \
    static void NAME(const ref_ctx *c, const int64_t *off, const int64_t *st, \
                     int64_t n, long double *s, long double *cp,              \
                     long double *a)                                          \
    {                                                                         \
        long double s_ = *s, c_ = *cp, a_ = *a;                               \
        const int m = c->n_ops;                                               \
        switch (m) {                                                          \
        case 1: {                                                             \
            const T *x = (const T *)c->data[0] + off[0];                       \
            int64_t sx = st[0];                                               \
            for (int64_t t = 0; t < n; t++, x += sx) {                        \
                long double v = LOAD(x);                                      \
                TWO_SUM_ADD(s_, c_, v);                                      \
                a_ += fabsl(v);                                               \
            }                                                                 \
            break;                                                            \
        }                                                                     \
        case 2: {                                                             \
            const T *x = (const T *)c->data[0] + off[0];                       \
            const T *y = (const T *)c->data[1] + off[1];                       \
            int64_t sx = st[0], sy = st[1];                                   \
            for (int64_t t = 0; t < n; t++, x += sx, y += sy) {               \
                long double v = LOAD(x) * LOAD(y);                            \
                TWO_SUM_ADD(s_, c_, v);                                      \
                a_ += fabsl(v);                                               \
            }                                                                 \
            break;                                                            \
        }                                                                     \
        case 3: {                                                             \
            const T *x = (const T *)c->data[0] + off[0];                       \
            const T *y = (const T *)c->data[1] + off[1];                       \
            const T *z = (const T *)c->data[2] + off[2];                       \
            int64_t sx = st[0], sy = st[1], sz = st[2];                       \
            for (int64_t t = 0; t < n; t++, x += sx, y += sy, z += sz) {      \
                long double v = LOAD(x) * LOAD(y) * LOAD(z);                  \
                TWO_SUM_ADD(s_, c_, v);                                      \
                a_ += fabsl(v);                                               \
            }                                                                 \
            break;                                                            \
        }                                                                     \
        default: {                                                            \
            const T *p[ET_MAX_OPERANDS];                                      \
            for (int k = 0; k < m; k++)                                       \
                p[k] = (const T *)c->data[k] + off[k];                        \
            for (int64_t t = 0; t < n; t++) {                                 \
                long double v = LOAD(p[0]);                                   \
                p[0] += st[0];                                                \
                for (int k = 1; k < m; k++) {                                 \
                    v *= LOAD(p[k]);                                          \
                    p[k] += st[k];                                            \
                }                                                             \
                TWO_SUM_ADD(s_, c_, v);                                      \
                a_ += fabsl(v);                                               \
            }                                                                 \
            break;                                                            \
        }                                                                     \
        }                                                                     \
        *s = s_;                                                              \
        *cp = c_;                                                             \
        *a = a_;                                                              \
    }

DEFINE_INNER(inner_f16, uint16_t, LOAD_F16)
DEFINE_INNER(inner_f32, float, LOAD_F32)
DEFINE_INNER(inner_f64, double, LOAD_F64)

static inline long double load_any(const ref_ctx *c, int k, int64_t i)
{
    switch (c->dtype[k]) {
    case ET_F16:
        return half_table[((const uint16_t *)c->data[k])[i]];
    case ET_F32:
        return ((const float *)c->data[k])[i];
    default:
        return ((const double *)c->data[k])[i];
    }
}

/* operands of different dtypes: a switch per load */
static void inner_mixed(const ref_ctx *c, const int64_t *off,
                        const int64_t *st, int64_t n, long double *s,
                        long double *cp, long double *a)
{
    long double s_ = *s, c_ = *cp, a_ = *a;
    const int m = c->n_ops;
    int64_t p[ET_MAX_OPERANDS];
    for (int k = 0; k < m; k++)
        p[k] = off[k];
    for (int64_t t = 0; t < n; t++) {
        long double v = load_any(c, 0, p[0]);
        p[0] += st[0];
        for (int k = 1; k < m; k++) {
            v *= load_any(c, k, p[k]);
            p[k] += st[k];
        }
        TWO_SUM_ADD(s_, c_, v);
        a_ += fabsl(v);
    }
    *s = s_;
    *cp = c_;
    *a = a_;
}

typedef void (*inner_fn)(const ref_ctx *, const int64_t *, const int64_t *,
                         int64_t, long double *, long double *,
                         long double *);

/* What the summed odometer hands each run of the innermost summed index:
 * the operands' offsets where it starts, their strides along it and its
 * length. */
typedef void (*visit_fn)(void *arg, const int64_t *start, const int64_t *st,
                         int64_t n);

/* Runs the summed indices of the output element(s) whose operand offsets
 * start at base[k] (the output indices already applied): an odometer over
 * the summed indices but the innermost (last) one, whose runs go to
 * visit; the first summed index runs over [j->s_lo, j->s_hi). */
static void sum_odometer(const ref_ctx *c, const ref_job *j,
                         const int64_t *base, visit_fn visit, void *arg)
{
    const int m = c->n_ops;
    const int ns = c->n_sum;
    const int last = c->sum_index[ns - 1];
    int64_t n_inner = c->sum_size[ns - 1];
    int64_t lo[ET_MAX_INDICES], hi[ET_MAX_INDICES], ctr[ET_MAX_INDICES];
    int64_t st_in[ET_MAX_OPERANDS], start[ET_MAX_OPERANDS];
    for (int q = 0; q < ns; q++) {
        lo[q] = 0;
        hi[q] = c->sum_size[q];
    }
    lo[0] = j->s_lo;
    hi[0] = j->s_hi;
    if (ns == 1)
        n_inner = j->s_hi - j->s_lo;
    for (int k = 0; k < m; k++) {
        st_in[k] = c->stride[k][last];
        start[k] = base[k] + lo[0] * c->stride[k][c->sum_index[0]];
    }
    for (int q = 0; q < ns - 1; q++)
        ctr[q] = lo[q];

    for (;;) {
        visit(arg, start, st_in, n_inner);
        /* advance the outer summed odometer (positions ns-2 .. 0) */
        int q = ns - 2;
        for (; q >= 0; q--) {
            int ix = c->sum_index[q];
            if (++ctr[q] < hi[q]) {
                for (int k = 0; k < m; k++)
                    start[k] += c->stride[k][ix];
                break;
            }
            for (int k = 0; k < m; k++)
                start[k] -= (ctr[q] - 1 - lo[q]) * c->stride[k][ix];
            ctr[q] = lo[q];
        }
        if (q < 0)
            break;
    }
}

/* One element's long double sums (the general path). */
typedef struct ld_acc {
    const ref_ctx *c;
    inner_fn inner;
    long double s, comp, a;
} ld_acc;

static void ld_visit(void *arg, const int64_t *start, const int64_t *st,
                     int64_t n)
{
    ld_acc *x = arg;
    x->inner(x->c, start, st, n, &x->s, &x->comp, &x->a);
}

/* Sums the terms of one output element whose operand offsets (elements)
 * start at base[k] (the output indices already applied). */
static void ref_element(const ref_ctx *c, const ref_job *j, inner_fn inner,
                        const int64_t *base, long double *s_out,
                        long double *c_out, long double *a_out)
{
    const int m = c->n_ops;
    if (c->n_sum == 0) {
        long double t = 1;
        for (int k = 0; k < m; k++)
            t *= load_any(c, k, base[k]);
        *s_out = t;
        *c_out = 0;
        *a_out = fabsl(t);
        return;
    }
    ld_acc x = {c, inner, 0, 0, 0};
    sum_odometer(c, j, base, ld_visit, &x);
    *s_out = x.s;
    *c_out = x.comp;
    *a_out = x.a;
}

/*
 * The double-double path: two operands of f32 or f16, whose products are
 * exact in double (24 + 24 bits of significand), summed with Knuth's
 * two-sum in double: s + c holds the sum to about n^2 2^-106 of Sum|terms|
 * before it is rounded once to long double, as accurate as the long
 * double path (a few units of 2^-64) and several times faster: vectors
 * instead of x87, and a block of 16, 8 or 4 output elements adjacent along
 * the last output index at once (their loads of an operand strided along
 * the summed index, kj in xik,kj->xij, come from the same cache lines: 16
 * f32 fill one). The visits are compiled for AVX-512, AVX2 and the
 * baseline, picked by the CPU's features (explicit target attributes and
 * a dispatch here rather than target_clones, whose resolvers clang 14
 * exports from the shared library whatever the visibility); the block of
 * 16 pays only with the wide registers (case 2's 2M-element reference: 1.5
 * s in blocks of 8 on SSE2, 0.42 s in blocks of 16 with AVX-512). Every
 * element has the same operations in the same order in a block as alone,
 * and the products are exact, so the result does not depend on the
 * blocking or on the instructions chosen.
 */
#define DD_BLOCK 16
#define DD_HALF 8
#define DD_QUARTER 4
typedef double dd_vec __attribute__((vector_size(DD_BLOCK * 8)));
typedef int64_t dd_ivec __attribute__((vector_size(DD_BLOCK * 8)));
typedef double dd_hvec __attribute__((vector_size(DD_HALF * 8)));
typedef int64_t dd_hivec __attribute__((vector_size(DD_HALF * 8)));
typedef double dd_qvec __attribute__((vector_size(DD_QUARTER * 8)));
typedef int64_t dd_qivec __attribute__((vector_size(DD_QUARTER * 8)));
typedef double dd_1vec __attribute__((vector_size(8)));
typedef int64_t dd_1ivec __attribute__((vector_size(8)));

typedef struct dd_acc {
    const ref_ctx *c;
    const int64_t *so;           /* operands' strides to the next element */
    double s[DD_BLOCK], comp[DD_BLOCK], a[DD_BLOCK]; /* lane b: element b */
} dd_acc;

static inline double dd_load(const ref_ctx *c, int k, int64_t i)
{
    return c->dtype[k] == ET_F16 ? half_table[((const uint16_t *)
                                                   c->data[k])[i]]
                                 : ((const float *)c->data[k])[i];
}

/* The visits of W lanes of vector type VEC (IVEC: the integers of its
 * size, to clear the sign bits): DD_ENTER loads the block's sums into
 * vectors, DD_STEP adds the terms (ERR 1: and each product's exact error,
 * fma(u, w, -v), for f64 operands whose products are not exact), and
 * DD_LEAVE stores the sums back. */
#define DD_ENTER(VEC, IVEC)                                                   \
    dd_acc *x = arg;                                                          \
    const ref_ctx *c = x->c;                                                  \
    const IVEC nosign = (IVEC){0} + INT64_MAX;                                \
    VEC s, comp, a;                                                           \
    memcpy(&s, x->s, sizeof s);                                               \
    memcpy(&comp, x->comp, sizeof comp);                                      \
    memcpy(&a, x->a, sizeof a);                                               \
    int64_t p0 = start[0], p1 = start[1];                                     \
    const int64_t o0 = x->so[0], o1 = x->so[1];
#define DD_LEAVE()                                                            \
    memcpy(x->s, &s, sizeof s);                                               \
    memcpy(x->comp, &comp, sizeof comp);                                      \
    memcpy(x->a, &a, sizeof a);
#define DD_STEP(W, VEC, IVEC, ERR, LOAD_U, LOAD_W)                            \
    for (int64_t t = 0; t < n; t++, p0 += st[0], p1 += st[1]) {               \
        VEC u, w;                                                             \
        for (int b = 0; b < (W); b++) {                                       \
            u[b] = LOAD_U;                                                    \
            w[b] = LOAD_W;                                                    \
        }                                                                     \
        VEC v = u * w;                                                        \
        VEC tt = s + v, z = tt - s;                                           \
        comp += (s - (tt - z)) + (v - z);                                     \
        if (ERR) {                                                            \
            VEC e;                                                            \
            for (int b = 0; b < (W); b++)                                     \
                e[b] = __builtin_fma(u[b], w[b], -v[b]);                      \
            comp += e;                                                        \
        }                                                                     \
        s = tt;                                                               \
        a += (VEC)((IVEC)v & nosign);                                         \
    }

/* f32 and f16 operands: products exact in double */
#define DD_VISIT(NAME, W, VEC, IVEC, ATTR)                                    \
    ATTR static void NAME(void *arg, const int64_t *start, const int64_t *st,      \
                     int64_t n)                                               \
    {                                                                         \
        DD_ENTER(VEC, IVEC)                                                   \
        const float *f0 = c->data[0], *f1 = c->data[1];                       \
        if (c->dtype[0] == ET_F32 && o0 == 0 && o1 == 1) {                    \
            DD_STEP(W, VEC, IVEC, 0, f0[p0], f1[p1 + b]) /* xik,kj->xij */    \
        } else if (c->dtype[0] == ET_F32 && o0 == 1 && o1 == 0) {             \
            DD_STEP(W, VEC, IVEC, 0, f0[p0 + b], f1[p1])                      \
        } else if (c->dtype[0] == ET_F32) {                                   \
            DD_STEP(W, VEC, IVEC, 0, f0[p0 + b * o0], f1[p1 + b * o1])        \
        } else {                                                              \
            DD_STEP(W, VEC, IVEC, 0, dd_load(c, 0, p0 + b * o0),              \
                    dd_load(c, 1, p1 + b * o1))                               \
        }                                                                     \
        DD_LEAVE()                                                            \
    }
#define DD_AVX512 __attribute__((target("avx512f,avx2")))
#define DD_AVX2 __attribute__((target("avx2")))
DD_VISIT(dd_visit16_avx512, DD_BLOCK, dd_vec, dd_ivec, DD_AVX512)
DD_VISIT(dd_visit8_avx512, DD_HALF, dd_hvec, dd_hivec, DD_AVX512)
DD_VISIT(dd_visit4_avx512, DD_QUARTER, dd_qvec, dd_qivec, DD_AVX512)
DD_VISIT(dd_visit16_avx2, DD_BLOCK, dd_vec, dd_ivec, DD_AVX2)
DD_VISIT(dd_visit8_avx2, DD_HALF, dd_hvec, dd_hivec, DD_AVX2)
DD_VISIT(dd_visit4_avx2, DD_QUARTER, dd_qvec, dd_qivec, DD_AVX2)
DD_VISIT(dd_visit16_base, DD_BLOCK, dd_vec, dd_ivec, )
DD_VISIT(dd_visit8_base, DD_HALF, dd_hvec, dd_hivec, )
DD_VISIT(dd_visit4_base, DD_QUARTER, dd_qvec, dd_qivec, )
DD_VISIT(dd_visit1_base, 1, dd_1vec, dd_1ivec, )
#undef DD_AVX512
#undef DD_AVX2
#undef DD_VISIT

/* Two f64 operands, on a CPU with FMA (dd64_level): each product as p
 * plus its exact error e = fma(a, b, -p), p summed by two-sum into s +
 * comp and e added to comp. Compiled twice, for AVX-512 and for AVX2,
 * both with FMA (which neither implies), and picked by the CPU's
 * features. */
#define DD64_VISIT(NAME, W, VEC, IVEC, TARGET)                                \
    __attribute__((target(TARGET)))                                           \
    static void NAME(void *arg, const int64_t *start, const int64_t *st,      \
                     int64_t n)                                               \
    {                                                                         \
        DD_ENTER(VEC, IVEC)                                                   \
        const double *f0 = c->data[0], *f1 = c->data[1];                      \
        if (o0 == 0 && o1 == 1) {                                             \
            DD_STEP(W, VEC, IVEC, 1, f0[p0], f1[p1 + b]) /* xik,kj->xij */    \
        } else if (o0 == 1 && o1 == 0) {                                      \
            DD_STEP(W, VEC, IVEC, 1, f0[p0 + b], f1[p1])                      \
        } else {                                                              \
            DD_STEP(W, VEC, IVEC, 1, f0[p0 + b * o0], f1[p1 + b * o1])        \
        }                                                                     \
        DD_LEAVE()                                                            \
    }
#define DD64_AVX512 "avx512f,avx2,fma"
#define DD64_AVX2 "avx2,fma"
DD64_VISIT(dd64_visit16_avx512, DD_BLOCK, dd_vec, dd_ivec, DD64_AVX512)
DD64_VISIT(dd64_visit8_avx512, DD_HALF, dd_hvec, dd_hivec, DD64_AVX512)
DD64_VISIT(dd64_visit4_avx512, DD_QUARTER, dd_qvec, dd_qivec, DD64_AVX512)
DD64_VISIT(dd64_visit1_avx512, 1, dd_1vec, dd_1ivec, DD64_AVX512)
DD64_VISIT(dd64_visit16_avx2, DD_BLOCK, dd_vec, dd_ivec, DD64_AVX2)
DD64_VISIT(dd64_visit8_avx2, DD_HALF, dd_hvec, dd_hivec, DD64_AVX2)
DD64_VISIT(dd64_visit4_avx2, DD_QUARTER, dd_qvec, dd_qivec, DD64_AVX2)
DD64_VISIT(dd64_visit1_avx2, 1, dd_1vec, dd_1ivec, DD64_AVX2)
#undef DD64_VISIT
#undef DD_STEP
#undef DD_ENTER
#undef DD_LEAVE

/* The vector units of this CPU: 2 AVX-512, 1 AVX2, 0 neither. */
static int simd_level(void)
{
    static int level = -1; /* a benign race: every thread finds the same */
    if (level < 0) {
        __builtin_cpu_init();
        level = !__builtin_cpu_supports("avx2")      ? 0
                : __builtin_cpu_supports("avx512f") ? 2
                                                    : 1;
    }
    return level;
}

/* The f64 path this CPU can take: 2 AVX-512 and FMA, 1 AVX2 and FMA, 0
 * none (the long double path then). */
static int dd64_level(void)
{
    static int fma = -1; /* a benign race, as above */
    if (fma < 0) {
        __builtin_cpu_init();
        fma = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return fma ? simd_level() : 0;
}

/* The visits by path (f64 with AVX-512 or AVX2, f32/f16 with AVX-512,
 * AVX2 or neither) and block (DD_BLOCK, DD_HALF, DD_QUARTER, 1 lanes). */
static const visit_fn dd_visits[5][4] = {
    {dd64_visit16_avx512, dd64_visit8_avx512, dd64_visit4_avx512,
     dd64_visit1_avx512},
    {dd64_visit16_avx2, dd64_visit8_avx2, dd64_visit4_avx2,
     dd64_visit1_avx2},
    {dd_visit16_avx512, dd_visit8_avx512, dd_visit4_avx512, dd_visit1_base},
    {dd_visit16_avx2, dd_visit8_avx2, dd_visit4_avx2, dd_visit1_base},
    {dd_visit16_base, dd_visit8_base, dd_visit4_base, dd_visit1_base},
};

/* nb (DD_BLOCK, DD_HALF, DD_QUARTER or 1) elements by the double-double
 * path, the next one so[k] further; the sum rounded once to long double,
 * no compensation left. */
static void ref_element_dd(const ref_ctx *c, const ref_job *j,
                           const int64_t *base, const int64_t *so, int nb,
                           long double *s_out, long double *c_out,
                           long double *a_out)
{
    dd_acc x = {.c = c, .so = so};
    int path = c->dtype[0] == ET_F64 ? 2 - dd64_level() : 4 - simd_level();
    int block = nb == DD_BLOCK ? 0 : nb == DD_HALF ? 1 : nb == DD_QUARTER ? 2
                                                                        : 3;
    sum_odometer(c, j, base, dd_visits[path][block], &x);
    for (int b = 0; b < nb; b++) {
        /* an infinite sum makes the compensation NaN: the sum alone */
        s_out[b] = isfinite(x.s[b]) ? (long double)x.s[b] + x.comp[b]
                                    : (long double)x.s[b];
        c_out[b] = 0;
        a_out[b] = x.a[b];
    }
}

static void *ref_run(void *arg)
{
    const ref_job *j = arg;
    const ref_ctx *c = j->c;
    const int m = c->n_ops;
    int64_t base[ET_MAX_OPERANDS];
    int64_t ctr[ET_MAX_INDICES];
    inner_fn inner = inner_mixed;
    if (c->uniform)
        inner = c->dtype[0] == ET_F16   ? inner_f16
                : c->dtype[0] == ET_F32 ? inner_f32
                                        : inner_f64;
    /* the double-double path, in blocks along the last output index */
    const int lq = c->n_out - 1;
    int64_t so[ET_MAX_OPERANDS] = {0};
    bool dd = c->uniform && m == 2 && c->n_sum > 0 &&
              (c->dtype[0] == ET_F32 || c->dtype[0] == ET_F16 ||
               (c->dtype[0] == ET_F64 && dd64_level() > 0));
    for (int k = 0; dd && lq >= 0 && k < m; k++)
        so[k] = c->stride[k][c->out_index[lq]];

    /* coordinates of the first output element (one division per job) */
    int64_t rest = j->o_lo;
    for (int q = c->n_out - 1; q >= 0; q--) {
        ctr[q] = rest % c->out_size[q];
        rest /= c->out_size[q];
    }
    for (int k = 0; k < m; k++) {
        base[k] = 0;
        for (int q = 0; q < c->n_out; q++)
            base[k] += ctr[q] * c->stride[k][c->out_index[q]];
    }
    for (int64_t o = j->o_lo; o < j->o_hi;) {
        int64_t r = o - j->o_lo;
        int nb = 1;
        for (int w = DD_BLOCK; dd && lq >= 0 && nb == 1 && w >= DD_QUARTER;
             w /= 2)
            if (o + w <= j->o_hi && ctr[lq] + w <= c->out_size[lq])
                nb = w;
        if (dd)
            ref_element_dd(c, j, base, so, nb, &j->sum[r], &j->comp[r],
                           &j->abs[r]);
        else
            ref_element(c, j, inner, base, &j->sum[r], &j->comp[r],
                        &j->abs[r]);
        for (; nb > 0; nb--, o++)
            for (int q = c->n_out - 1; q >= 0; q--) {
                int ix = c->out_index[q];
                if (++ctr[q] < c->out_size[q]) {
                    for (int k = 0; k < m; k++)
                        base[k] += c->stride[k][ix];
                    break;
                }
                for (int k = 0; k < m; k++)
                    base[k] -= (ctr[q] - 1) * c->stride[k][ix];
                ctr[q] = 0;
            }
    }
    return NULL;
}

/* Checks the layout invariants of einsum.h; a broken one is a caller bug
 * reported as ET_ERR_INPUT rather than a wild read. */
static et_status ref_check(const et_einsum *e, const void *const *inputs,
                           const long double *ref)
{
    if (!e || !inputs || !ref)
        return ET_ERR_INPUT;
    if (e->n_ops < 1 || e->n_ops > ET_MAX_OPERANDS || e->n_idx < 0 ||
        e->n_idx > ET_MAX_INDICES || e->n_out < 0 || e->n_out > e->n_idx)
        return ET_ERR_INPUT;
    for (int i = 0; i < e->n_idx; i++)
        if (e->idx[i].size < 1)
            return ET_ERR_INPUT;
    for (int k = -1; k < e->n_ops; k++) {
        const et_operand *op = k < 0 ? &e->out : &e->op[k];
        if (op->rank < 0 || op->rank > ET_MAX_RANK ||
            (unsigned)op->dtype >= ET_DTYPE_COUNT)
            return ET_ERR_INPUT;
        if (k >= 0 && !inputs[k])
            return ET_ERR_INPUT;
        for (int d = 0; d < op->rank; d++) {
            int ix = op->idx[d];
            if (ix < 0 || ix >= e->n_idx)
                return ET_ERR_INPUT;
            if (op->dim[d] != e->idx[ix].size && op->dim[d] != 1)
                return ET_ERR_INPUT;
        }
    }
    if (e->out.rank != e->n_out)
        return ET_ERR_INPUT;
    for (int d = 0; d < e->n_out; d++)
        if (e->out.idx[d] != d || e->out.dim[d] != e->idx[d].size)
            return ET_ERR_INPUT;
    return ET_OK;
}

et_status et_reference_eval(const et_einsum *e, const void *const *inputs,
                            long double *ref, long double *abs_terms)
{
    et_status st = ref_check(e, inputs, ref);
    if (st != ET_OK)
        return st;

    ref_ctx *c = calloc(1, sizeof *c);
    long double *part = NULL;
    ref_job jobs[REF_MAX_THREADS];
    pthread_t tid[REF_MAX_THREADS];
    if (!c)
        return ET_ERR_NOMEM;

    c->n_ops = e->n_ops;
    int64_t out_elems = 1, terms = 1;
    for (int i = 0; i < e->n_idx; i++) {
        if (__builtin_mul_overflow(terms, e->idx[i].size, &terms)) {
            st = ET_ERR_INPUT;
            goto done;
        }
    }
    for (int q = 0; q < e->n_out; q++) {
        c->out_index[q] = q;
        c->out_size[q] = e->idx[q].size;
        out_elems *= e->idx[q].size;
    }
    c->n_out = e->n_out;
    c->n_sum = e->n_idx - e->n_out;
    for (int q = 0; q < c->n_sum; q++) {
        c->sum_index[q] = e->n_out + q;
        c->sum_size[q] = e->idx[e->n_out + q].size;
    }

    /* strides per index; operands are read in place */
    pthread_once(&half_once, half_table_init);
    c->uniform = 1;
    for (int k = 0; k < e->n_ops; k++) {
        const et_operand *op = &e->op[k];
        int64_t n = 1;
        for (int d = op->rank - 1; d >= 0; d--) {
            if (op->dim[d] != 1)
                c->stride[k][op->idx[d]] += n;
            n *= op->dim[d];
        }
        c->data[k] = inputs[k];
        c->dtype[k] = op->dtype;
        if (op->dtype != e->op[0].dtype)
            c->uniform = 0;
    }

    int n_thr = 1;
    if (terms >= REF_THREAD_MIN_TERMS) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n_thr = cpus < 1 ? 1 : cpus > REF_MAX_THREADS ? REF_MAX_THREADS
                                                      : (int)cpus;
    }
    /* split by output elements, or for a single output element by the
     * first summed index */
    int by_sum = out_elems == 1 && c->n_sum > 0;
    int64_t span = by_sum ? c->sum_size[0] : out_elems;
    if (span < n_thr)
        n_thr = (int)span;

    /* by_sum: sum, comp, abs per job; else comp per element, and abs per
     * element when the caller does not want it */
    size_t n_part = by_sum ? (size_t)n_thr * 3
                           : (size_t)out_elems * (abs_terms ? 1 : 2);
    part = malloc(n_part * sizeof *part);
    if (!part) {
        st = ET_ERR_NOMEM;
        goto done;
    }
    long double *comp_buf = part;
    long double *abs_buf = abs_terms ? abs_terms : part + out_elems;

    for (int t = 0; t < n_thr; t++) {
        ref_job *j = &jobs[t];
        j->c = c;
        int64_t a = span * t / n_thr, b = span * (t + 1) / n_thr;
        if (by_sum) {
            j->o_lo = 0;
            j->o_hi = 1;
            j->s_lo = a;
            j->s_hi = b;
            j->sum = &part[3 * t];
            j->comp = &part[3 * t + 1];
            j->abs = &part[3 * t + 2];
        } else {
            j->o_lo = a;
            j->o_hi = b;
            j->s_lo = 0;
            j->s_hi = c->n_sum ? c->sum_size[0] : 0;
            j->sum = ref + a;
            j->comp = comp_buf + a;
            j->abs = abs_buf + a;
        }
    }
    int started = 0;
    for (int t = 1; t < n_thr; t++) {
        if (pthread_create(&tid[t], NULL, ref_run, &jobs[t]) != 0)
            break;
        started = t;
    }
    ref_run(&jobs[0]);
    /* jobs whose thread did not start run here */
    for (int t = started + 1; t < n_thr; t++)
        ref_run(&jobs[t]);
    for (int t = 1; t <= started; t++)
        pthread_join(tid[t], NULL);

    if (by_sum) {
        long double s = 0, cc = 0, a = 0;
        for (int t = 0; t < n_thr; t++) {
            NEUMAIER_ADD(s, cc, part[3 * t]);
            cc += part[3 * t + 1];
            a += part[3 * t + 2];
        }
        ref[0] = isfinite(s) ? s + cc : s;
        if (abs_terms)
            abs_terms[0] = a;
    } else {
        /* an infinite running sum makes the compensation NaN: keep the
         * sum alone then */
        for (int64_t o = 0; o < out_elems; o++)
            if (isfinite(ref[o]))
                ref[o] += comp_buf[o];
    }

done:
    free(part);
    free(c);
    return st;
}
