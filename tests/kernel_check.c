/*
 * kernel_check.c - render + build + run + compare, for the transform tests
 * (see kernel_check.h), on the suite's device (tests/suite_device.h).
 * The reference is computed here in long double over the whole iteration
 * space by et_reference_eval (small test sizes only).
 */
#include "tests/kernel_check.h"

#include "einsum/einsum.h"
#include "measure/cuda/nvrtc.h"
#include "tests/suite_device.h"

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
        if (et_device_open(td_device(), &dev, &err) != ET_OK) {
            fprintf(stderr, "kernel_check: no device (%s): %s\n", td_spec(),
                    err.msg);
            dev = NULL;
        }
    }
    return dev;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A value uniform in [-1, 1] stored in dtype t at dst[i]. */
static void draw(uint64_t *s, et_dtype t, void *dst, int64_t i)
{
    double v = (double)(rng_next(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    switch (t) {
    case ET_F16:
        /* |v| < 1: exponent below 15, random mantissa */
        ((uint16_t *)dst)[i] = (uint16_t)((rng_next(s) & 0x8000) |
                                          ((rng_next(s) % 15) << 10) |
                                          (rng_next(s) & 1023));
        break;
    case ET_F32: ((float *)dst)[i] = (float)v; break;
    default: ((double *)dst)[i] = v; break;
    }
}

static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? 0x1.0p-53 : (t == ET_F32 ? 0x1.0p-24 : 0x1.0p-11);
}

/* Runs the built program `prog` of k's OpenCL rendering r (source and
 * launch geometry) and compares; prog and r stay the caller's. */
static et_status run_and_compare(et_device *dev, const et_kernel *k,
                                 const et_rendered *r, et_program *prog,
                                 unsigned seed, char *msg, size_t cap)
{
    const et_einsum *e = &k->e;
    int nops = e->n_ops;
    /* host[0] the output, host[1 + k] operand k, each whole (a batched
     * einsum's rows one after another); bufs[a] kernel argument a (a row
     * of a rowed array, else the whole array) */
    et_buffer *bufs[ET_MAX_ARGS] = {0};
    void *host[ET_MAX_OPERANDS + 1] = {0};
    long double *ref = NULL, *abs_terms = NULL;
    et_error err = {{0}};
    et_status st = ET_OK;
    uint64_t rs = 0x9e3779b97f4a7c15ull ^ seed;
    for (int op = 0; op < nops; op++) {
        int64_t ne = et_einsum_operand_elems(e, op);
        size_t es = et_dtype_size(e->op[op].dtype);
        host[op + 1] = malloc((size_t)ne * es);
        if (!host[op + 1]) {
            st = ET_ERR_NOMEM;
            goto done;
        }
        for (int64_t i = 0; i < ne; i++)
            draw(&rs, e->op[op].dtype, host[op + 1], i);
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
    for (int a = 0; a < r->n_args; a++) {
        int op = r->arg_operand[a];
        size_t es = et_dtype_size(op < 0 ? e->out.dtype : e->op[op].dtype);
        size_t bytes = (size_t)et_einsum_row_elems(e, op) * es;
        size_t at = r->arg_row[a] < 0 ? 0 : (size_t)r->arg_row[a] * bytes;
        st = et_buffer_alloc(dev, bytes, &bufs[a], &err);
        if (st == ET_OK)
            st = et_buffer_write(dev, bufs[a], 0, (char *)host[op + 1] + at,
                                 bytes, &err);
        if (st != ET_OK) {
            say(msg, cap, "argument %d's buffer: %s", a, err.msg);
            goto done;
        }
    }
    /* a kernel that adds into a zeroed output (SPLIT) runs twice: the
     * second result is only right if the launch zeroed it again */
    for (int run = 0; run < (r->launch.zero_bytes ? 2 : 1); run++) {
        st = et_launch_kernel(dev, prog, &r->launch, bufs, NULL, r->n_args,
                              NULL, &err);
        if (st != ET_OK) {
            say(msg, cap, "launch: %s\n%s", err.msg, r->source);
            goto done;
        }
    }
    for (int a = 0; a < r->n_args && st == ET_OK; a++) {
        if (r->arg_operand[a] >= 0)
            continue;
        size_t bytes = (size_t)et_einsum_row_elems(e, -1) * os;
        size_t at = r->arg_row[a] < 0 ? 0 : (size_t)r->arg_row[a] * bytes;
        st = et_buffer_read(dev, bufs[a], 0, (char *)host[0] + at, bytes,
                            &err);
    }
    if (st != ET_OK) {
        say(msg, cap, "read: %s", err.msg);
        goto done;
    }
    st = et_reference_eval(e, (const void *const *)&host[1], ref, abs_terms);
    if (st != ET_OK) {
        say(msg, cap, "reference: %s", et_status_str(st));
        goto done;
    }
    int64_t K = 1;
    for (int a = e->n_out; a < e->n_idx; a++)
        K *= e->idx[a].size;
    double u = unit_roundoff(e->acc_dtype);
    double u_out = e->out.dtype == e->acc_dtype ? 0 : unit_roundoff(e->out.dtype);
    double n = (double)(K + nops - 2);
    /* as measure/verify.c: no bound where n u reaches 1 */
    double gamma = n <= 0       ? 0
                   : n * u < 1 ? n * u / (1 - n * u)
                               : INFINITY;
    for (int64_t i = 0; i < no; i++) {
        double got = os == 4 ? ((float *)host[0])[i] : ((double *)host[0])[i];
        long double bound = gamma * abs_terms[i] + u_out * fabsl(ref[i]);
        long double diff = fabsl((long double)got - ref[i]);
        if (!(diff <= bound)) {
            say(msg, cap,
                "element %lld: got %.17g, reference %.17Lg, error %.3Lg > "
                "bound %.3Lg\n%s",
                (long long)i, got, ref[i], diff, bound, r->source);
            st = ET_ERR_INTERNAL;
            goto done;
        }
    }
    st = ET_OK;
done:
    for (int a = 0; a < ET_MAX_ARGS; a++)
        if (bufs[a])
            et_buffer_free(dev, bufs[a]);
    for (int i = 0; i <= nops; i++)
        free(host[i]);
    free(ref);
    free(abs_terms);
    return st;
}

et_status kc_check_rendered(et_device *dev, const et_kernel *k,
                            const et_rendered *r, unsigned seed, char *msg,
                            size_t cap)
{
    et_program *prog = NULL;
    et_error err = {{0}};
    et_status st = et_program_build(dev, r->source, r->name, &prog, &err);
    if (st != ET_OK)
        say(msg, cap, "build: %s\n%s", err.msg, r->source);
    else
        st = run_and_compare(dev, k, r, prog, seed, msg, cap);
    if (prog)
        et_program_free(dev, prog);
    return st;
}

et_status kc_check_kernel(et_device *dev, const et_kernel *k, unsigned seed,
                          char *msg, size_t cap)
{
    et_rendered r = {0};
    et_program *prog = NULL;
    et_error err = {{0}};
    et_status st = et_kernel_render(k, dev->info.target.backend, NULL, &r);
    if (st != ET_OK) {
        say(msg, cap, "render: %s", et_status_str(st));
        return st;
    }
    st = et_program_build(dev, r.source, r.name, &prog, &err);
    if (st != ET_OK)
        say(msg, cap, "build: %s\n%s", err.msg, r.source);
    else
        st = run_and_compare(dev, k, &r, prog, seed, msg, cap);
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

/* ---- NVRTC (measure/cuda/nvrtc.h) ------------------------------------------ */

et_status kc_cuda_compile(const et_kernel *k, char *msg, size_t cap)
{
    et_error err = {{0}};
    if (!et_cuda_have_nvrtc(&err)) {
        say(msg, cap, "%s", err.msg[0] ? err.msg : "libnvrtc not found");
        return ET_ERR_UNSUPPORTED;
    }
    et_rendered r;
    et_status st = et_kernel_render(k, ET_BACKEND_CUDA, NULL, &r);
    if (st != ET_OK) {
        say(msg, cap, "render: %s", et_status_str(st));
        return st;
    }
    char *ptx = NULL;
    size_t n = 0;
    st = et_cuda_compile_ptx(r.source, "compute_90", &ptx, &n, &err);
    if (st != ET_OK)
        say(msg, cap, "nvrtc: %s\n%s", err.msg, r.source);
    free(ptx);
    et_rendered_free(&r);
    return st;
}
