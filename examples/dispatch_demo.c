/*
 * dispatch_demo.c - runs the kernels of a dispatch table written by
 * `eintune export --dispatch` with the plain OpenCL API and nothing of
 * eintune: for each size tuple given, the header's NAME_dispatch picks the
 * kernel (tuned for those sizes, one with an open axis covering them, or
 * the generic untransformed kernel), and the output is checked against a
 * naive loop over the iteration space in long double.
 *
 * Build (the header's directory on the include path, as export_demo):
 *   cc -std=c11 -DET_DISPATCH_HEADER='"dispatch_xik_kj_to_xij_f64.h"' \
 *      -Iout examples/dispatch_demo.c -lOpenCL -lm -o dispatch_demo
 *   ./dispatch_demo out/dispatch_xik_kj_to_xij_f64.cl 256,8,8,8 ...
 * The header's own ET_DISPATCH(x) (its macros, prefixed with NAME_ in
 * upper case: DISPATCH_XIK_KJ_TO_XIJ_F64_N_INDICES) and ET_DISPATCH_FN(x)
 * (its function and type: dispatch_xik_kj_to_xij_f64_dispatch) name what
 * it declares. With a header exported with --embed, add
 * -DET_DISPATCH_EMBED: the kernels' source is the header's string
 * (ET_DISPATCH(SOURCE)) and the first argument is "-" (no file is read).
 * Each size argument gives the index sizes in the header's index order
 * (NAME_INDEX_NAMES), comma-separated. Only einsums whose operands have
 * no broadcast dimension, with f32 or f64 data. A line per run says which
 * kernel ran; exit 0 when every output is right, 1 when one is not, 2 when
 * setup failed.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ET_DISPATCH_HEADER
#error "define ET_DISPATCH_HEADER (the header's name in quotes)"
#endif
#include ET_DISPATCH_HEADER

#define NIDX ET_DISPATCH(N_INDICES)
#define NARGS ET_DISPATCH(N_ARGS)

/*
 * The einsum's operands as index lists, parsed from its text: op -1 is the
 * output. The sizes of index letters follow the header's index order.
 */
static char letters[NIDX + 1];
static int arg_rank[NARGS];
static int arg_idx[NARGS][32];

static int parse_einsum(const char *text)
{
    static const char *names[] = ET_DISPATCH(INDEX_NAMES);
    for (int a = 0; a < NIDX; a++)
        letters[a] = names[a][0];
    const char *arrow = strstr(text, "->");
    if (!arrow)
        return -1;
    int k = 1;
    const char *p = text;
    for (; p < arrow; p++) {
        if (*p == ',') {
            k++;
            continue;
        }
        const char *at = strchr(letters, *p);
        if (!at || k >= NARGS)
            return -1;
        arg_idx[k][arg_rank[k]++] = (int)(at - letters);
    }
    for (p = arrow + 2; *p; p++) {
        const char *at = strchr(letters, *p);
        if (!at)
            return -1;
        arg_idx[0][arg_rank[0]++] = (int)(at - letters);
    }
    return 0;
}

static long long offset(int a, const long long *t, const long long *sz)
{
    long long off = 0;
    for (int d = 0; d < arg_rank[a]; d++)
        off = off * sz[arg_idx[a][d]] + t[arg_idx[a][d]];
    return off;
}

static long long elems(int a, const long long *sz)
{
    long long n = 1;
    for (int d = 0; d < arg_rank[a]; d++)
        n *= sz[arg_idx[a][d]];
    return n;
}

#ifndef ET_DISPATCH_EMBED
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}
#endif

#define CHECK(call)                                                         \
    do {                                                                    \
        cl_int rc_ = (call);                                                \
        if (rc_ != CL_SUCCESS) {                                            \
            fprintf(stderr, "dispatch_demo: %s failed: %d\n", #call, rc_);  \
            return 2;                                                       \
        }                                                                   \
    } while (0)

/* One run at sizes sz: 0 right, 1 wrong, 2 failed. */
static int run(cl_context ctx, cl_command_queue q, cl_program prog,
               const long long *sz, int esize)
{
    ET_DISPATCH_FN(launch) l;
    int which = ET_DISPATCH_FN(dispatch)(sz, &l);
    if (which < 0) {
        fprintf(stderr, "dispatch_demo: sizes below 1\n");
        return 2;
    }
    cl_int err;
    cl_kernel k = clCreateKernel(prog, l.kernel, &err);
    CHECK(err);
    void *host[NARGS];
    cl_mem buf[NARGS];
    for (int a = 0; a < NARGS; a++) {
        size_t bytes = (size_t)(elems(a, sz) * esize);
        host[a] = malloc(bytes);
        if (!host[a])
            return 2;
        for (long long i = 0; a > 0 && i < elems(a, sz); i++) {
            double v = 2.0 * rand() / RAND_MAX - 1.0;
            if (esize == 8)
                ((double *)host[a])[i] = v;
            else
                ((float *)host[a])[i] = (float)v;
        }
        buf[a] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
        CHECK(err);
        if (a > 0)
            CHECK(clEnqueueWriteBuffer(q, buf[a], CL_TRUE, 0, bytes, host[a],
                                       0, NULL, NULL));
        CHECK(clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &buf[a]));
    }
    for (int s = 0; s < l.n_scalars; s++) {
        cl_long v = (cl_long)l.scalars[s];
        CHECK(clSetKernelArg(k, (cl_uint)(NARGS + s), sizeof v, &v));
    }
    if (l.zero_bytes > 0) {
        const unsigned char zero = 0;
        CHECK(clEnqueueFillBuffer(q, buf[0], &zero, 1, 0,
                                  (size_t)l.zero_bytes, 0, NULL, NULL));
    }
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++) {
        global[d] = (size_t)l.global[d];
        local[d] = (size_t)l.local[d];
    }
    CHECK(clEnqueueNDRangeKernel(q, k, (cl_uint)l.work_dim, NULL, global,
                                 l.has_local ? local : NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, buf[0], CL_TRUE, 0,
                              (size_t)(elems(0, sz) * esize), host[0], 0,
                              NULL, NULL));
    /* the naive loop */
    long long n_out = elems(0, sz), iter = 1;
    for (int a = 0; a < NIDX; a++)
        iter *= sz[a];
    long double *ref = calloc((size_t)n_out, sizeof *ref);
    long double *mag = calloc((size_t)n_out, sizeof *mag);
    long long t[NIDX] = {0};
    for (long long it = 0; it < iter; it++) {
        long double prod = 1;
        for (int a = 1; a < NARGS; a++) {
            long long o = offset(a, t, sz);
            prod *= esize == 8 ? ((double *)host[a])[o]
                               : ((float *)host[a])[o];
        }
        long long o = offset(0, t, sz);
        ref[o] += prod;
        mag[o] += fabsl(prod);
        for (int x = NIDX - 1; x >= 0; x--) {
            if (++t[x] < sz[x])
                break;
            t[x] = 0;
        }
    }
    double u = esize == 8 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    double n = (double)(iter / n_out) + NARGS;
    double gamma = n * u / (1.0 - n * u), worst = 0;
    long long bad = -1;
    for (long long i = 0; i < n_out; i++) {
        double got = esize == 8 ? ((double *)host[0])[i]
                                : ((float *)host[0])[i];
        double bound = gamma * (double)mag[i] + u * fabs((double)ref[i]);
        double e = fabs(got - (double)ref[i]);
        double ne = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0);
        if (!(ne <= worst))
            worst = ne;
        if (!(ne <= 1) && bad < 0)
            bad = i;
    }
    printf("dispatch_demo:");
    for (int a = 0; a < NIDX; a++)
        printf(" %c=%lld", letters[a], sz[a]);
    printf(": kernel %d %s (%s%s%s): max normalized error %.3g: %s\n", which,
           l.kernel, l.tuned ? "tuned" : "generic",
           l.opts[0] ? ", " : "", l.opts, worst, bad < 0 ? "ok" : "WRONG");
    for (int a = 0; a < NARGS; a++) {
        clReleaseMemObject(buf[a]);
        free(host[a]);
    }
    clReleaseKernel(k);
    free(ref);
    free(mag);
    return bad < 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SOURCE.cl SIZES [SIZES ...]\n", argv[0]);
        return 2;
    }
    if (parse_einsum(ET_DISPATCH(EINSUM)) != 0) {
        fprintf(stderr, "dispatch_demo: cannot read %s\n",
                ET_DISPATCH(EINSUM));
        return 2;
    }
#ifdef ET_DISPATCH_EMBED
    /* the source the header holds: no file at run time */
    char *src = malloc(ET_DISPATCH(SOURCE_BYTES) + 1);
    if (src)
        memcpy(src, ET_DISPATCH(SOURCE), ET_DISPATCH(SOURCE_BYTES) + 1);
    if (!src || strcmp(argv[1], "-") != 0) {
        fprintf(stderr, "dispatch_demo: built with ET_DISPATCH_EMBED: the "
                        "source is the header's; give - for SOURCE.cl\n");
        return 2;
    }
#else
    char *src = slurp(argv[1]);
    if (!src) {
        fprintf(stderr, "dispatch_demo: cannot read %s\n", argv[1]);
        return 2;
    }
#endif
    int esize = strstr(src, "double") ? 8 : 4;
    cl_platform_id plats[8];
    cl_uint n_plat = 0;
    cl_device_id dev = NULL;
    CHECK(clGetPlatformIDs(8, plats, &n_plat));
    for (cl_uint p = 0; p < n_plat && !dev; p++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &dev, &n) !=
                CL_SUCCESS ||
            n == 0)
            dev = NULL;
    }
    if (!dev) {
        fprintf(stderr, "dispatch_demo: no OpenCL device\n");
        return 2;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    const char *srcs[1] = {src};
    cl_program prog = clCreateProgramWithSource(ctx, 1, srcs, NULL, &err);
    CHECK(err);
    if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log,
                              log, NULL);
        fprintf(stderr, "dispatch_demo: build failed:\n%s\n", log);
        return 2;
    }
    int status = 0;
    srand(7);
    for (int i = 2; i < argc; i++) {
        long long sz[NIDX];
        char *p = argv[i];
        for (int a = 0; a < NIDX; a++) {
            sz[a] = strtoll(p, &p, 10);
            if (*p == ',')
                p++;
        }
        int rc = run(ctx, q, prog, sz, esize);
        if (rc > status)
            status = rc;
    }
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(src);
    return status;
}
