/*
 * kernel_check.c - render + build + run + compare, for the transform tests
 * (see kernel_check.h). The reference is computed here in long double over
 * the whole iteration space (small test sizes only).
 */
#include "tests/kernel_check.h"

#include "einsum/einsum.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *msg, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

et_device *kc_device(void)
{
    static et_device *dev;
    static int tried;
    if (!tried) {
        tried = 1;
        et_error err = {{0}};
        if (et_device_open(NULL, &dev, &err) != ET_OK) {
            fprintf(stderr, "kernel_check: no OpenCL device: %s\n", err.msg);
            dev = NULL;
        }
    }
    return dev;
}

/* binary16 bits to double (exact) */
static double half_bits_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(m | 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A value uniform in [-1, 1] stored in dtype t at dst[i]; returns its
 * exact value. */
static double draw(uint64_t *s, et_dtype t, void *dst, int64_t i)
{
    double v = (double)(rng_next(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    switch (t) {
    case ET_F16: {
        /* |v| < 1: exponent below 15, random mantissa */
        uint16_t h = (uint16_t)((rng_next(s) & 0x8000) |
                                ((rng_next(s) % 15) << 10) |
                                (rng_next(s) & 1023));
        ((uint16_t *)dst)[i] = h;
        return half_bits_to_double(h);
    }
    case ET_F32:
        ((float *)dst)[i] = (float)v;
        return (float)v;
    default:
        ((double *)dst)[i] = v;
        return v;
    }
}

/* Host reference: ref and sum|terms| per output element. */
static void reference(const et_einsum *e, double *const *vals,
                      long double *ref, long double *abs_terms)
{
    int64_t no = et_einsum_operand_elems(e, -1);
    for (int64_t i = 0; i < no; i++)
        ref[i] = abs_terms[i] = 0;
    int64_t tot = et_einsum_iter_size(e);
    int64_t iv[ET_MAX_INDICES];
    for (int64_t t = 0; t < tot; t++) {
        int64_t rem = t;
        for (int a = e->n_idx - 1; a >= 0; a--) {
            iv[a] = rem % e->idx[a].size;
            rem /= e->idx[a].size;
        }
        long double prod = 1;
        for (int op = 0; op < e->n_ops; op++) {
            const et_operand *o = &e->op[op];
            int64_t addr = 0;
            for (int d = 0; d < o->rank; d++)
                addr = addr * o->dim[d] + (o->dim[d] == 1 ? 0 : iv[o->idx[d]]);
            prod *= vals[op][addr];
        }
        int64_t oa = 0;
        for (int a = 0; a < e->n_out; a++)
            oa = oa * e->idx[a].size + iv[a];
        ref[oa] += prod;
        abs_terms[oa] += fabsl(prod);
    }
}

static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? 0x1.0p-53 : (t == ET_F32 ? 0x1.0p-24 : 0x1.0p-11);
}

et_status kc_check_kernel(et_device *dev, const et_kernel *k, unsigned seed,
                          char *msg, size_t cap)
{
    const et_einsum *e = &k->e;
    int nops = e->n_ops;
    et_rendered r = {0};
    et_program *prog = NULL;
    et_buffer *bufs[ET_MAX_OPERANDS + 1] = {0};
    void *host[ET_MAX_OPERANDS + 1] = {0};
    double *vals[ET_MAX_OPERANDS] = {0};
    long double *ref = NULL, *abs_terms = NULL;
    et_error err = {{0}};
    et_status st = et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r);
    if (st != ET_OK) {
        say(msg, cap, "render: %s", et_status_str(st));
        goto done;
    }
    st = et_program_build(dev, r.source, r.name, &prog, &err);
    if (st != ET_OK) {
        say(msg, cap, "build: %s\n%s", err.msg, r.source);
        goto done;
    }
    uint64_t rs = 0x9e3779b97f4a7c15ull ^ seed;
    for (int op = 0; op < nops; op++) {
        int64_t ne = et_einsum_operand_elems(e, op);
        size_t es = et_dtype_size(e->op[op].dtype);
        host[op + 1] = malloc((size_t)ne * es);
        vals[op] = malloc((size_t)ne * sizeof(double));
        if (!host[op + 1] || !vals[op]) {
            st = ET_ERR_NOMEM;
            goto done;
        }
        for (int64_t i = 0; i < ne; i++)
            vals[op][i] = draw(&rs, e->op[op].dtype, host[op + 1], i);
        st = et_buffer_alloc(dev, (size_t)ne * es, &bufs[op + 1], &err);
        if (st == ET_OK)
            st = et_buffer_write(dev, bufs[op + 1], 0, host[op + 1],
                                 (size_t)ne * es, &err);
        if (st != ET_OK) {
            say(msg, cap, "input buffer: %s", err.msg);
            goto done;
        }
    }
    int64_t no = et_einsum_operand_elems(e, -1);
    size_t os = et_dtype_size(e->out.dtype);
    host[0] = malloc((size_t)no * os);
    ref = malloc((size_t)no * sizeof *ref);
    abs_terms = malloc((size_t)no * sizeof *abs_terms);
    if (!host[0] || !ref || !abs_terms) {
        st = ET_ERR_NOMEM;
        goto done;
    }
    for (int64_t i = 0; i < no; i++) {
        if (os == 4)
            ((float *)host[0])[i] = NAN;
        else
            ((double *)host[0])[i] = NAN;
    }
    st = et_buffer_alloc(dev, (size_t)no * os, &bufs[0], &err);
    if (st == ET_OK)
        st = et_buffer_write(dev, bufs[0], 0, host[0], (size_t)no * os, &err);
    if (st != ET_OK) {
        say(msg, cap, "output buffer: %s", err.msg);
        goto done;
    }
    st = et_launch_kernel(dev, prog, &r.launch, bufs, NULL, nops + 1, NULL,
                          &err);
    if (st != ET_OK) {
        say(msg, cap, "launch: %s\n%s", err.msg, r.source);
        goto done;
    }
    st = et_buffer_read(dev, bufs[0], 0, host[0], (size_t)no * os, &err);
    if (st != ET_OK) {
        say(msg, cap, "read: %s", err.msg);
        goto done;
    }
    reference(e, vals, ref, abs_terms);
    int64_t K = 1;
    for (int a = e->n_out; a < e->n_idx; a++)
        K *= e->idx[a].size;
    double u = unit_roundoff(e->acc_dtype);
    double u_out = e->out.dtype == e->acc_dtype ? 0 : unit_roundoff(e->out.dtype);
    double n = (double)(K + nops - 2);
    double gamma = n > 0 ? n * u / (1 - n * u) : 0;
    for (int64_t i = 0; i < no; i++) {
        double got = os == 4 ? ((float *)host[0])[i] : ((double *)host[0])[i];
        long double bound = gamma * abs_terms[i] + u_out * fabsl(ref[i]);
        long double diff = fabsl((long double)got - ref[i]);
        if (!(diff <= bound)) {
            say(msg, cap,
                "element %lld: got %.17g, reference %.17Lg, error %.3Lg > "
                "bound %.3Lg\n%s",
                (long long)i, got, ref[i], diff, bound, r.source);
            st = ET_ERR_INTERNAL;
            goto done;
        }
    }
    st = ET_OK;
done:
    for (int i = 0; i <= nops; i++) {
        if (bufs[i])
            et_buffer_free(dev, bufs[i]);
        free(host[i]);
    }
    for (int op = 0; op < nops; op++)
        free(vals[op]);
    free(ref);
    free(abs_terms);
    if (prog)
        et_program_free(dev, prog);
    et_rendered_free(&r);
    return st;
}

et_status kc_check(et_device *dev, const char *einsum, const char *shape,
                   const char *dtype, const char *opts, char *msg, size_t cap)
{
    et_einsum *e = malloc(sizeof *e);
    et_opt *o = malloc(ET_MAX_OPTS * sizeof *o);
    et_kernel *k = NULL;
    et_diag d;
    int n = 0;
    et_status st = e && o ? ET_OK : ET_ERR_NOMEM;
    if (st == ET_OK) {
        st = et_einsum_from_strings(einsum, shape, dtype, e, &d);
        if (st != ET_OK)
            say(msg, cap, "einsum %s: %s", einsum, d.msg);
    }
    if (st == ET_OK) {
        st = et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d);
        if (st != ET_OK)
            say(msg, cap, "opts %s: %s", opts, d.msg);
    }
    if (st == ET_OK)
        st = et_kernel_init(e, NULL, &k);
    if (st == ET_OK)
        st = et_kernel_apply_opts(k, o, n, msg, cap);
    if (st == ET_OK)
        st = kc_check_kernel(dev, k, 1, msg, cap);
    et_kernel_free(k);
    free(o);
    free(e);
    return st;
}

/* ---- NVRTC, loaded at run time -------------------------------------------- */

typedef int (*nvrtc_create_fn)(void **, const char *, const char *, int,
                               const char *const *, const char *const *);
typedef int (*nvrtc_compile_fn)(void *, int, const char *const *);
typedef int (*nvrtc_logsize_fn)(void *, size_t *);
typedef int (*nvrtc_log_fn)(void *, char *);
typedef int (*nvrtc_destroy_fn)(void **);

et_status kc_cuda_compile(const et_kernel *k, char *msg, size_t cap)
{
    static void *lib;
    static int tried;
    if (!tried) {
        tried = 1;
        lib = dlopen("libnvrtc.so.13", RTLD_NOW);
        if (!lib)
            lib = dlopen("libnvrtc.so", RTLD_NOW);
        if (!lib)
            lib = dlopen("/usr/local/cuda/lib64/libnvrtc.so", RTLD_NOW);
    }
    if (!lib) {
        say(msg, cap, "libnvrtc not found");
        return ET_ERR_UNSUPPORTED;
    }
    nvrtc_create_fn create = (nvrtc_create_fn)dlsym(lib, "nvrtcCreateProgram");
    nvrtc_compile_fn compile =
        (nvrtc_compile_fn)dlsym(lib, "nvrtcCompileProgram");
    nvrtc_logsize_fn logsize =
        (nvrtc_logsize_fn)dlsym(lib, "nvrtcGetProgramLogSize");
    nvrtc_log_fn getlog = (nvrtc_log_fn)dlsym(lib, "nvrtcGetProgramLog");
    nvrtc_destroy_fn destroy =
        (nvrtc_destroy_fn)dlsym(lib, "nvrtcDestroyProgram");
    if (!create || !compile || !logsize || !getlog || !destroy) {
        say(msg, cap, "libnvrtc lacks symbols");
        return ET_ERR_UNSUPPORTED;
    }
    et_rendered r;
    et_status st = et_kernel_render(k, ET_BACKEND_CUDA, NULL, &r);
    if (st != ET_OK) {
        say(msg, cap, "render: %s", et_status_str(st));
        return st;
    }
    void *prog = NULL;
    st = ET_OK;
    if (create(&prog, r.source, "kernel.cu", 0, NULL, NULL) != 0) {
        say(msg, cap, "nvrtcCreateProgram failed");
        st = ET_ERR_BUILD;
    } else {
        const char *const opts[] = {"--gpu-architecture=compute_90"};
        if (compile(prog, 1, opts) != 0) {
            size_t n = 0;
            logsize(prog, &n);
            char *log = malloc(n + 1);
            if (log) {
                getlog(prog, log);
                log[n] = '\0';
            }
            say(msg, cap, "nvrtc: %s\n%s", log ? log : "?", r.source);
            free(log);
            st = ET_ERR_BUILD;
        }
        destroy(&prog);
    }
    et_rendered_free(&r);
    return st;
}
