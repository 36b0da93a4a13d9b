/*
 * fuzz_delivery.c - libFuzzer driver for the kernels eintune hands out:
 * an einsum, opts a search could have found at its tuned size, and the
 * kernel built from them the way a delivery builds it (tune/best.c,
 * api/kernel.c), run on the OpenCL device at other sizes and compared
 * with the extended-precision reference. Aborts on a wrong element.
 *
 * Input layout (bytes are taken in order; past the end every byte is 0):
 *   - the einsum: from the table below, or one made up of up to three
 *     operands over x and the letters abcd (repeated letters make
 *     diagonals; x, when an operand has it, comes first);
 *   - the dtype (f32, f64, f16 inputs);
 *   - open or concrete: x open when the einsum allows it;
 *   - the tuned size T of x;
 *   - each letter's size from a short list (1, 2, 3, primes, 8, 16);
 *   - the launch sizes: 1, 2, a prime, T and a large one (x varies);
 *   - up to eight opts of any kind on any axis with amounts of 0, 2, 3,
 *     4, 5, 7, 8, 16, 32, applied one by one to the tuned kernel (x at
 *     T, open or not) with refusals skipped, as a search builds a
 *     candidate; the applied list goes through its text form, as the
 *     database keeps it.
 *
 * Then, like a delivery:
 *   - open: the open kernel at T is the tuned one; a concrete problem at
 *     one of the launch sizes asked of it is answered as tune/best.c
 *     answers it (that problem with x opened, the same opts applied),
 *     which must render the very source of the open kernel; that program
 *     is built once and launched at every launch size with the geometry
 *     and size argument et_kernel_set_open_size gives (as
 *     et_cl_kernel_launch does);
 *   - concrete: the opts re-applied at other sizes (the fallback to the
 *     nearest tuned size); where the rules accept them, the kernel is
 *     rendered, built and run there.
 * Each launch is compared element by element with the reference of the
 * problem at that size, made from the einsum text (never from the
 * kernel's own resizing), within the verification's bound
 * (measure/verify.c); the output starts as NaN; a SPLIT kernel runs
 * twice (the launch must zero its output again). Invariants: a kernel
 * the rules accept renders and builds; its output is right.
 *
 * The device is the first OpenCL device, opened in a worker process
 * (measure/remote.h: $ET_WORKER, fuzz/run.sh sets it to the build's
 * eintune-worker), so that an abort inside the driver's compiler (PoCL
 * has some, docs/PLATFORM traps) costs a restarted worker, not the
 * fuzzer: such inputs are reported on stderr and skipped. Without a
 * device every input is skipped (said once).
 */
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the input ---------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned take(reader *r, unsigned mod)
{
    unsigned v = 0;
    if (r->n) {
        v = *r->p++;
        r->n--;
    }
    return mod ? v % mod : v;
}

/* Einsums whose first output axis x may be open, and one that may not. */
static const char *const table[] = {
    "xik,kj->xij",      "xij->xi",         "xij->x",
    "xre,rij,xej->xei", "xii->xi",         "xi,i->x",
    "xab,b->xab",       "x,x->x",          "xab->xba",
    "xik,xkj->xij",     "xi,xj->xij",      "xij,j->xi",
    "xab->xa",          "xa,ab,b->x",      "xabc->xcab",
    "ab,xb->xa",
};
#define N_TABLE (sizeof table / sizeof table[0])

static const int64_t letter_sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16};
static const int64_t tuned_sizes[] = {1, 2, 3, 5, 13, 16, 64, 256};
static const int64_t primes[] = {3, 5, 7, 11, 13, 31, 37, 61, 97, 101};
static const int64_t large_sizes[] = {128, 255, 1000};
static const int64_t amounts[] = {0, 2, 3, 4, 5, 7, 8, 16, 32};

/* Makes up an einsum over x and abcd into buf; false when it has no
 * operand with x. */
static bool made_up(reader *r, char *buf, size_t cap)
{
    static const char pool[] = "abcd";
    char ops[3][8], out[8];
    int n_ops = 1 + (int)take(r, 3);
    bool used[4] = {false};
    bool any_x = false;
    for (int k = 0; k < n_ops; k++) {
        int n = 0;
        if (take(r, 4) != 0) {
            ops[k][n++] = 'x';
            any_x = true;
        }
        int len = 1 + (int)take(r, 3);
        for (int i = 0; i < len; i++) {
            int l = (int)take(r, 4);
            ops[k][n++] = pool[l];
            used[l] = true;
        }
        ops[k][n] = '\0';
    }
    if (!any_x)
        return false;
    int n = 0;
    out[n++] = 'x';
    for (int l = 0; l < 4; l++)
        if (used[l] && take(r, 2))
            out[n++] = pool[l];
    out[n] = '\0';
    size_t o = 0;
    for (int k = 0; k < n_ops; k++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? "," : "",
                              ops[k]);
    snprintf(buf + o, cap - o, "->%s", out);
    return true;
}

/* The shape spec with x at n ("*" for 0) and the letters' sizes. */
static void shape_spec(const char *einsum, const int64_t *size, int64_t n,
                       char *out, size_t cap)
{
    size_t o = 0;
    bool seen[26] = {false};
    for (const char *c = einsum; *c && o < cap; c++) {
        if (*c < 'a' || *c > 'z' || seen[*c - 'a'])
            continue;
        seen[*c - 'a'] = true;
        if (*c == 'x')
            o += n ? (size_t)snprintf(out + o, cap - o, "%sx=%lld",
                                      o ? "," : "", (long long)n)
                   : (size_t)snprintf(out + o, cap - o, "%sx=*",
                                      o ? "," : "");
        else
            o += (size_t)snprintf(out + o, cap - o, "%s%c=%lld",
                                  o ? "," : "", *c,
                                  (long long)size[*c - 'a']);
    }
}

/* ---- the device --------------------------------------------------------- */

static et_device *g_dev;
static bool g_tried;

static et_device *device(void)
{
    if (!g_tried) {
        g_tried = true;
        et_error err = {{0}};
        if (et_device_open_isolated(NULL, NULL, &g_dev, &err) != ET_OK) {
            fprintf(stderr, "fuzz_delivery: no device, every input "
                            "skipped: %s\n", err.msg);
            g_dev = NULL;
        }
    }
    return g_dev;
}

/* A failure of the device or its compiler rather than of the kernel: a
 * worker that crashed or hung (restarted by measure/remote.c). */
static bool driver_trouble(et_status st)
{
    return st == ET_ERR_CRASH || st == ET_ERR_TIMEOUT;
}

/* $FUZZ_DELIVERY_VERBOSE set: a line per launch checked on stderr. */
static bool verbose(void)
{
    static int v = -1;
    if (v < 0)
        v = getenv("FUZZ_DELIVERY_VERBOSE") != NULL;
    return v;
}

static _Noreturn void found(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static _Noreturn void found(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_delivery: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ---- one launch checked ------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? 0x1.0p-53 : (t == ET_F32 ? 0x1.0p-24 : 0x1.0p-11);
}

static double get(const void *p, et_dtype t, int64_t i)
{
    switch (t) {
    case ET_F16: return et_half_to_float(((const uint16_t *)p)[i]);
    case ET_F32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

/* What a launch is about, for the report of a wrong one. */
typedef struct story {
    const char *einsum, *shape, *dtype, *opts, *how;
    const char *source;
} story;

/*
 * Launches prog with geometry geom on inputs of einsum e (the problem at
 * the launch's sizes, built from the text) and compares. Returns ET_OK, or
 * the device's status when the device failed (driver trouble); aborts on
 * a wrong element or a launch the kernel should not fail.
 */
static et_status launch_check(et_device *dev, et_program *prog,
                              const et_launch *geom, const et_einsum *e,
                              uint64_t seed, const story *st)
{
    int nops = e->n_ops;
    et_buffer *bufs[ET_MAX_OPERANDS + 1] = {0};
    void *host[ET_MAX_OPERANDS + 1] = {0};
    et_error err = {{0}};
    et_status rc = ET_OK;
    uint64_t rs = seed | 1;
    for (int k = 0; k < nops && rc == ET_OK; k++) {
        int64_t ne = et_einsum_operand_elems(e, k);
        size_t bytes = (size_t)ne * et_dtype_size(e->op[k].dtype);
        host[k + 1] = malloc(bytes ? bytes : 1);
        if (!host[k + 1])
            abort();
        for (int64_t i = 0; i < ne; i++) {
            double v = (double)(rng_next(&rs) >> 11) * 0x1.0p-53 * 2 - 1;
            if (e->op[k].dtype == ET_F16)
                ((uint16_t *)host[k + 1])[i] = et_float_to_half((float)v);
            else if (e->op[k].dtype == ET_F32)
                ((float *)host[k + 1])[i] = (float)v;
            else
                ((double *)host[k + 1])[i] = v;
        }
        rc = et_buffer_alloc(dev, bytes ? bytes : 1, &bufs[k + 1], &err);
        if (rc == ET_OK && bytes)
            rc = et_buffer_write(dev, bufs[k + 1], 0, host[k + 1], bytes,
                                 &err);
    }
    int64_t no = et_einsum_operand_elems(e, -1);
    size_t os = et_dtype_size(e->out.dtype);
    host[0] = malloc((size_t)no * os);
    long double *ref = malloc((size_t)no * sizeof *ref);
    long double *mag = malloc((size_t)no * sizeof *mag);
    if (!host[0] || !ref || !mag)
        abort();
    for (int64_t i = 0; i < no; i++) {
        if (os == 4)
            ((float *)host[0])[i] = NAN;
        else
            ((double *)host[0])[i] = NAN;
    }
    if (rc == ET_OK)
        rc = et_buffer_alloc(dev, (size_t)no * os, &bufs[0], &err);
    if (rc == ET_OK)
        rc = et_buffer_write(dev, bufs[0], 0, host[0], (size_t)no * os,
                             &err);
    /* a SPLIT kernel adds into its output: right the second time only if
     * the launch zeroed it again */
    for (int run = 0; rc == ET_OK && run < (geom->zero_bytes ? 2 : 1); run++)
        rc = et_launch_kernel(dev, prog, geom, bufs, NULL, nops + 1, NULL,
                              &err);
    if (rc == ET_OK)
        rc = et_buffer_read(dev, bufs[0], 0, host[0], (size_t)no * os, &err);
    if (rc != ET_OK && !driver_trouble(rc))
        found("%s %s %s '%s' (%s): the launch failed: %s\n%s", st->einsum,
              st->shape, st->dtype, st->opts, st->how, err.msg, st->source);
    if (rc == ET_OK) {
        if (et_reference_eval(e, (const void *const *)&host[1], ref, mag) !=
            ET_OK)
            abort();
        long double k_terms = 1;
        for (int a = e->n_out; a < e->n_idx; a++)
            k_terms *= (long double)e->idx[a].size;
        long double n = k_terms + nops - 2;
        if (n < 0)
            n = 0;
        long double u = unit_roundoff(e->acc_dtype);
        long double u_out =
            e->out.dtype == e->acc_dtype ? 0 : unit_roundoff(e->out.dtype);
        long double gamma = n * u < 1 ? n * u / (1 - n * u) : INFINITY;
        for (int64_t i = 0; i < no; i++) {
            double got = get(host[0], e->out.dtype, i);
            long double bound = u_out * fabsl(ref[i]);
            if (mag[i] != 0)
                bound += gamma * mag[i];
            long double diff = fabsl((long double)got - ref[i]);
            if (!(diff <= bound))
                found("%s %s %s '%s' (%s): element %lld of %lld: got "
                      "%.17g, reference %.17Lg, error %.3Lg > bound %.3Lg\n"
                      "%s",
                      st->einsum, st->shape, st->dtype, st->opts, st->how,
                      (long long)i, (long long)no, got, ref[i], diff, bound,
                      st->source);
        }
        if (verbose())
            fprintf(stderr, "fuzz_delivery: %s %s %s '%s' (%s): ok\n",
                    st->einsum, st->shape, st->dtype, st->opts, st->how);
    } else {
        fprintf(stderr, "fuzz_delivery: skipped, the device failed (%s): "
                        "%s\n", et_status_str(rc), err.msg);
    }
    for (int i = 0; i <= nops; i++) {
        if (bufs[i])
            et_buffer_free(dev, bufs[i]);
        free(host[i]);
    }
    free(ref);
    free(mag);
    return rc;
}

/* Builds r's source; aborts when a kernel the rules accepted does not
 * build; NULL on driver trouble. */
static et_program *build(et_device *dev, const et_rendered *r,
                         const story *st)
{
    et_program *prog = NULL;
    et_error err = {{0}};
    et_status rc = et_program_build(dev, r->source, r->name, &prog, &err);
    if (rc == ET_OK)
        return prog;
    if (!driver_trouble(rc))
        found("%s %s %s '%s' (%s): the kernel does not build: %s\n%s",
              st->einsum, st->shape, st->dtype, st->opts, st->how, err.msg,
              r->source);
    fprintf(stderr, "fuzz_delivery: skipped, the compiler failed (%s): %s\n",
            et_status_str(rc), err.msg);
    return NULL;
}

/* ---- the deliveries ----------------------------------------------------- */

typedef struct problem {
    char einsum[64];
    int64_t size[26];   /* by letter; x's is the launch's */
    char dtype[8];
    int64_t tuned;      /* T */
    int64_t launch[5];  /* 1, 2, a prime, T, a large size */
    int n_launch;
    et_opt opt[ET_MAX_OPTS];
    int n_opts;
    char opts[1024];
} problem;

static bool einsum_at(const problem *p, int64_t n, et_einsum *e,
                      char *shape, size_t cap)
{
    shape_spec(p->einsum, p->size, n, shape, cap);
    et_diag d;
    return et_einsum_from_strings(p->einsum, shape, p->dtype, e, &d) ==
           ET_OK;
}

/* A kernel of e with p's opts for dev; NULL when the rules refuse them
 * (reason in why). */
static et_kernel *kernel_of(et_device *dev, const et_einsum *e,
                            const problem *p, char *why, size_t cap)
{
    et_kernel *k = NULL;
    if (et_kernel_init(e, &dev->info.target, &k) != ET_OK)
        abort();
    if (et_kernel_apply_opts(k, p->opt, p->n_opts, why, cap) != ET_OK) {
        et_kernel_free(k);
        return NULL;
    }
    return k;
}

/* x open: the tuned open kernel, then the kernel answering a concrete
 * problem at size `asked`, built once and launched at every size. */
static void deliver_open(et_device *dev, const problem *p, int asked,
                         et_einsum *e, uint64_t seed)
{
    char shape[256], why[512], at[32];
    snprintf(at, sizeof at, "x=%lld", (long long)p->tuned);
    if (!einsum_at(p, 0, e, shape, sizeof shape) ||
        et_einsum_tune_at(e, at, NULL) != ET_OK)
        abort(); /* the driver checked that x opens */
    et_kernel *kt = kernel_of(dev, e, p, why, sizeof why);
    if (!kt)
        found("%s %s '%s': the opts applied at the tuned size are refused "
              "again: %s", p->einsum, shape, p->opts, why);
    et_rendered rt;
    if (et_kernel_render(kt, ET_BACKEND_OPENCL, NULL, &rt) != ET_OK) {
        et_kernel_free(kt);
        return;
    }
    /* tune/best.c: the concrete problem at the asked size, x opened */
    char shape_s[256];
    int64_t s_asked = p->launch[asked];
    if (!einsum_at(p, s_asked, e, shape_s, sizeof shape_s))
        abort();
    e->idx[et_einsum_index_find(e, "x")].open = true;
    et_kernel *ks = kernel_of(dev, e, p, why, sizeof why);
    if (!ks)
        found("%s %s '%s': an open kernel tuned at x=%lld is refused when "
              "asked at x=%lld: %s", p->einsum, shape, p->opts,
              (long long)p->tuned, (long long)s_asked, why);
    et_rendered rs;
    if (et_kernel_render(ks, ET_BACKEND_OPENCL, NULL, &rs) != ET_OK)
        found("%s '%s': renders at x=%lld, not asked at x=%lld", p->einsum,
              p->opts, (long long)p->tuned, (long long)s_asked);
    if (strcmp(rs.source, rt.source) != 0)
        found("%s %s '%s': asked at x=%lld, the opened problem renders "
              "another source than the open kernel tuned at x=%lld:\n%s\n"
              "---- the open kernel:\n%s",
              p->einsum, shape, p->opts, (long long)s_asked,
              (long long)p->tuned, rs.source, rt.source);
    char how[128];
    snprintf(how, sizeof how, "open, tuned at x=%lld, asked at x=%lld",
             (long long)p->tuned, (long long)s_asked);
    story st = {p->einsum, shape_s, p->dtype, p->opts, how, rs.source};
    et_program *prog = build(dev, &rs, &st);
    for (int i = 0; prog && i < p->n_launch; i++) {
        int64_t s = p->launch[i];
        if (et_kernel_set_open_size(ks, s, NULL) != ET_OK)
            abort();
        et_launch geom;
        if (et_kernel_launch(ks, ET_BACKEND_OPENCL, &geom) != ET_OK)
            continue; /* not expressible (CUDA limits only) */
        char shape_l[256];
        et_einsum *el = malloc(sizeof *el);
        if (!el || !einsum_at(p, s, el, shape_l, sizeof shape_l))
            abort();
        snprintf(how, sizeof how, "open, tuned at x=%lld, asked at "
                 "x=%lld, launched at x=%lld", (long long)p->tuned,
                 (long long)s_asked, (long long)s);
        st.shape = shape_l;
        et_status rc = launch_check(dev, prog, &geom, el, seed + (uint64_t)i,
                                    &st);
        free(el);
        if (rc != ET_OK)
            break;
    }
    if (prog)
        et_program_free(dev, prog);
    et_rendered_free(&rs);
    et_rendered_free(&rt);
    et_kernel_free(ks);
    et_kernel_free(kt);
}

/* x concrete: the opts tuned at T re-applied at the launch sizes picked
 * (mask), each built and run there when the rules accept them. */
static void deliver_concrete(et_device *dev, const problem *p, unsigned mask,
                             et_einsum *e, uint64_t seed)
{
    char shape[256], why[512], how[128];
    if (!einsum_at(p, p->tuned, e, shape, sizeof shape))
        return;
    et_kernel *kt = kernel_of(dev, e, p, why, sizeof why);
    if (!kt)
        found("%s %s '%s': the opts applied at the tuned size are refused "
              "again: %s", p->einsum, shape, p->opts, why);
    et_kernel_free(kt);
    for (int i = 0; i < p->n_launch; i++) {
        int64_t s = p->launch[i];
        if (s != p->tuned && !(mask & (1u << i)))
            continue;
        if (!einsum_at(p, s, e, shape, sizeof shape))
            continue;
        et_kernel *k = kernel_of(dev, e, p, why, sizeof why);
        if (!k)
            continue; /* the fallback skips it, as it should */
        et_rendered r;
        if (et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r) != ET_OK) {
            et_kernel_free(k);
            continue;
        }
        snprintf(how, sizeof how, "concrete, tuned at x=%lld, re-applied "
                 "at x=%lld", (long long)p->tuned, (long long)s);
        story st = {p->einsum, shape, p->dtype, p->opts, how, r.source};
        et_program *prog = build(dev, &r, &st);
        if (prog) {
            launch_check(dev, prog, &r.launch, e, seed + (uint64_t)i, &st);
            et_program_free(dev, prog);
        }
        et_rendered_free(&r);
        et_kernel_free(k);
    }
}

/* ---- the driver --------------------------------------------------------- */

/* Reads the problem; false when the input gives no valid einsum. */
static bool read_problem(reader *r, problem *p, bool *open)
{
    memset(p, 0, sizeof *p);
    unsigned pick = take(r, 2 * N_TABLE);
    if (pick < N_TABLE)
        snprintf(p->einsum, sizeof p->einsum, "%s", table[pick]);
    else if (!made_up(r, p->einsum, sizeof p->einsum))
        return false;
    static const char *const dtypes[] = {"f32", "f64", "f32", "f64", "f16"};
    snprintf(p->dtype, sizeof p->dtype, "%s", dtypes[take(r, 5)]);
    *open = take(r, 4) != 3;
    p->tuned =
        tuned_sizes[take(r, sizeof tuned_sizes / sizeof *tuned_sizes)];
    if (take(r, 4) == 3)
        p->tuned = 1 + (int64_t)take(r, 0);
    /* the sizes of the letters it has, the reduction kept small: the
     * reference runs over the whole iteration space at x up to 1000 */
    int64_t volume = 1;
    for (int l = 0; l < 26; l++) {
        if (!strchr(p->einsum, 'a' + l) || l == 'x' - 'a')
            continue;
        p->size[l] = letter_sizes[take(r, sizeof letter_sizes /
                                              sizeof *letter_sizes)];
        while (volume * p->size[l] > 2048 && p->size[l] > 1)
            p->size[l] /= 2;
        volume *= p->size[l];
    }
    int64_t cand[5] = {p->tuned, 1, 2,
                       primes[take(r, sizeof primes / sizeof *primes)],
                       large_sizes[take(r, sizeof large_sizes /
                                               sizeof *large_sizes)]};
    for (int i = 0; i < 5; i++) {
        bool dup = false;
        for (int j = 0; j < p->n_launch; j++)
            dup |= p->launch[j] == cand[i];
        if (!dup)
            p->launch[p->n_launch++] = cand[i];
    }
    return true;
}

/* Opts a search could have applied at the tuned size: random ones, the
 * refused skipped; then their text form and back, as the database keeps
 * them. */
static void read_opts(reader *r, et_device *dev, const et_einsum *e,
                      problem *p)
{
    et_kernel *k = NULL;
    if (et_kernel_init(e, &dev->info.target, &k) != ET_OK)
        abort();
    int n = (int)take(r, 9);
    for (int i = 0; i < n; i++) {
        et_opt_kind kind = (et_opt_kind)take(r, ET_OPT_COUNT);
        const char *axis = e->idx[take(r, (unsigned)e->n_idx)].name;
        int64_t amt = amounts[take(r, sizeof amounts / sizeof *amounts)];
        et_opt o = et_opt_make(kind, axis, amt);
        if (kind == ET_OPT_PREFETCH)
            o.operand = (int)take(r, (unsigned)e->n_ops);
        if (kind == ET_OPT_SWAP) {
            snprintf(o.axis2.name, sizeof o.axis2.name, "%s",
                     e->idx[take(r, (unsigned)e->n_idx)].name);
            o.axis2.pos = -1;
        }
        char why[512];
        (void)et_kernel_apply_opt(k, &o, why, sizeof why);
    }
    et_opts_format(k->opts, k->n_opts, p->opts, sizeof p->opts);
    et_diag d;
    if (et_opts_parse(p->opts, p->opt, ET_MAX_OPTS, &p->n_opts, &d) !=
        ET_OK)
        found("the applied opts '%s' do not parse again: %s", p->opts,
              d.msg);
    et_kernel_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    et_device *dev = device();
    if (!dev)
        return 0;
    reader r = {data, size};
    problem *p = malloc(sizeof *p);
    et_einsum *e = malloc(sizeof *e);
    if (!p || !e)
        abort();
    bool open = false;
    char shape[256];
    if (!read_problem(&r, p, &open)) {
        free(p);
        free(e);
        return 0;
    }
    /* x open where the einsum allows it, else concrete at T */
    if (open && !(einsum_at(p, 0, e, shape, sizeof shape) &&
                  et_einsum_tune_at(e, "x=1", NULL) == ET_OK))
        open = false;
    if (open) {
        char at[32];
        snprintf(at, sizeof at, "x=%lld", (long long)p->tuned);
        if (et_einsum_tune_at(e, at, NULL) != ET_OK)
            abort();
    } else if (!einsum_at(p, p->tuned, e, shape, sizeof shape)) {
        free(p);
        free(e);
        return 0;
    }
    read_opts(&r, dev, e, p);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 0x100000001b3ull;
    if (open)
        deliver_open(dev, p, (int)take(&r, (unsigned)p->n_launch), e, seed);
    else
        deliver_concrete(dev, p, take(&r, 0) | 1u << take(&r, 5), e, seed);
    free(p);
    free(e);
    return 0;
}
