/*
 * export_demo.c - runs a kernel written by `eintune export` with the plain
 * OpenCL API and nothing of eintune: the exported header gives the kernel
 * name, the argument order, shapes and dtypes, and the launch geometry;
 * the .cl file gives the source, or the header itself when it was
 * exported with --embed.
 *
 * Build (see examples/README.md, or examples/Makefile):
 *   cc -std=c11 -Iout -DET_EXPORT_HEADER='"r_16_12_8_f32.h"' \
 *      examples/export_demo.c -lOpenCL -lm -o export_demo
 *   ./export_demo out/r_16_12_8_f32.cl [SEED [N]]
 *
 * With a header exported with --embed, add -DET_EXPORT_EMBED: the source
 * is the header's string <PREFIX>SOURCE, compiled into the program, and
 * the first argument is "-" (no .cl file is read):
 *   ./export_demo - [SEED [N]]
 *
 * A kernel with an open axis (exported from an einsum tuned with x=*)
 * takes that axis' size at launch: N (default 1000) is the size it is run
 * at, and the header's ..._AT(n) macros give the arrays' sizes, the launch
 * geometry and the bytes to zero at that size. Without an open axis N is
 * ignored.
 *
 * It fills the inputs with uniform random numbers in [-1, 1], runs the
 * kernel once on the first OpenCL device, and checks every output element
 * against a naive loop over the whole iteration space (in long double),
 * within a bound on the rounding error of any summation order. Exit
 * status: 0 the output is right, 1 it is not, 2 setup failed (file,
 * device, build), 77 the kernel uses f16 data (not handled here).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ET_EXPORT_HEADER
#error "define ET_EXPORT_HEADER as the exported header's path in quotes"
#endif
#include ET_EXPORT_HEADER

#define NARGS ET_EXPORT(N_ARGS)
#define NIDX ET_EXPORT(N_INDICES)
#define MAXR ET_EXPORT(MAX_RANK)

static const int arg_rank[NARGS] = ET_EXPORT(ARG_RANKS);
static const int arg_elem_size[NARGS] = ET_EXPORT(ARG_ELEM_SIZES);
static const int arg_index[NARGS][MAXR] = ET_EXPORT(ARG_INDICES);
/* the sizes at the open axis' size n (the constants without one) */
static long long index_size[NIDX > 0 ? NIDX : 1];
static long long arg_elems[NARGS];
static long long arg_shape[NARGS][MAXR];

#ifndef ET_EXPORT_EMBED
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

static double get(const void *p, int size, long long i)
{
    return size == 8 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* Element offset of arg a at the index tuple t (broadcast dims: 0). */
static long long offset(int a, const long long *t)
{
    long long off = 0;
    for (int d = 0; d < arg_rank[a]; d++) {
        long long v = arg_shape[a][d] == 1 ? 0 : t[arg_index[a][d]];
        off = off * arg_shape[a][d] + v;
    }
    return off;
}

#define CHECK(call)                                                         \
    do {                                                                    \
        cl_int rc_ = (call);                                                \
        if (rc_ != CL_SUCCESS) {                                            \
            fprintf(stderr, "export_demo: %s failed: %d\n", #call, rc_);    \
            return 2;                                                       \
        }                                                                   \
    } while (0)

/* The sizes at the open axis' size n (the constants without one); 77 for
 * f16 data, which this program does not handle, else 0. */
static int sizes_at(long long n)
{
    (void)n; /* a header without an open axis ignores it */
    const long long sizes[] = ET_EXPORT(INDEX_SIZES_AT)(n);
    const long long elems[NARGS] = ET_EXPORT(ARG_ELEMS_AT)(n);
    const long long shapes[NARGS][MAXR] = ET_EXPORT(ARG_SHAPES_AT)(n);
    memcpy(index_size, sizes, sizeof index_size);
    memcpy(arg_elems, elems, sizeof arg_elems);
    memcpy(arg_shape, shapes, sizeof arg_shape);
    for (int a = 0; a < NARGS; a++)
        if (arg_elem_size[a] == 2) {
            fprintf(stderr, "export_demo: f16 data are not handled here\n");
            return 77;
        }
    return 0;
}

/* The kernel's source: the header's string with ET_EXPORT_EMBED (arg must
 * be "-"), else the file arg. NULL (said) when there is none. */
static char *kernel_source(const char *arg)
{
#ifdef ET_EXPORT_EMBED
    /* the source the header holds: no file at run time */
    char *src = malloc(ET_EXPORT(SOURCE_BYTES) + 1);
    if (src)
        memcpy(src, ET_EXPORT(SOURCE), ET_EXPORT(SOURCE_BYTES) + 1);
    if (!src || strcmp(arg, "-") != 0) {
        fprintf(stderr, "export_demo: built with ET_EXPORT_EMBED: the "
                        "source is the header's; give - for KERNEL.cl\n");
        free(src);
        return NULL;
    }
    return src;
#else
    char *src = slurp(arg);
    if (!src)
        fprintf(stderr, "export_demo: cannot read %s\n", arg);
    return src;
#endif
}

/* Host data: arg 0 is the output, the others the inputs in order, filled
 * with uniform random numbers in [-1, 1]. 0, or 2 out of memory. */
static int host_data(void *host[NARGS])
{
    for (int a = 0; a < NARGS; a++) {
        size_t bytes = (size_t)(arg_elems[a] * arg_elem_size[a]);
        host[a] = malloc(bytes ? bytes : 1);
        if (!host[a])
            return 2;
        for (long long i = 0; a > 0 && i < arg_elems[a]; i++) {
            double v = 2.0 * rand() / RAND_MAX - 1.0;
            if (arg_elem_size[a] == 8)
                ((double *)host[a])[i] = v;
            else
                ((float *)host[a])[i] = (float)v;
        }
    }
    return 0;
}

/* The first OpenCL device, or NULL. */
static cl_device_id first_device(void)
{
    cl_platform_id plats[8];
    cl_uint n_plat = 0;
    cl_device_id dev = NULL;
    if (clGetPlatformIDs(8, plats, &n_plat) != CL_SUCCESS)
        return NULL;
    for (cl_uint p = 0; p < n_plat && !dev; p++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &dev, &n) !=
                CL_SUCCESS ||
            n == 0)
            dev = NULL;
    }
    return dev;
}

/* The OpenCL objects of one run, released by release(). */
typedef struct cl_run {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem buf[NARGS];
} cl_run;

static void release(cl_run *r)
{
    for (int a = 0; a < NARGS; a++)
        if (r->buf[a])
            clReleaseMemObject(r->buf[a]);
    if (r->k)
        clReleaseKernel(r->k);
    if (r->prog)
        clReleaseProgram(r->prog);
    if (r->q)
        clReleaseCommandQueue(r->q);
    if (r->ctx)
        clReleaseContext(r->ctx);
}

/* The context, queue, program and kernel for src on dev. 0, or 2. */
static int build(cl_run *r, cl_device_id dev, const char *src)
{
    cl_int err;
    r->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    r->q = clCreateCommandQueue(r->ctx, dev, 0, &err);
    CHECK(err);
    const char *srcs[1] = {src};
    r->prog = clCreateProgramWithSource(r->ctx, 1, srcs, NULL, &err);
    CHECK(err);
    if (clBuildProgram(r->prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(r->prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log,
                              log, NULL);
        fprintf(stderr, "export_demo: build failed:\n%s\n", log);
        return 2;
    }
    r->k = clCreateKernel(r->prog, ET_EXPORT(KERNEL_NAME), &err);
    CHECK(err);
    return 0;
}

/* The buffers and arguments as the header orders them, the launch at the
 * open axis' size n_open with the header's geometry, and the output read
 * back into host[0]. 0, or 2. */
static int launch(cl_run *r, void *host[NARGS], long long n_open)
{
    cl_int err;
    for (int a = 0; a < NARGS; a++) {
        size_t bytes = (size_t)(arg_elems[a] * arg_elem_size[a]);
        r->buf[a] = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE,
                                   bytes ? bytes : 1, NULL, &err);
        CHECK(err);
        if (a > 0 && bytes)
            CHECK(clEnqueueWriteBuffer(r->q, r->buf[a], CL_TRUE, 0, bytes,
                                       host[a], 0, NULL, NULL));
        CHECK(clSetKernelArg(r->k, (cl_uint)a, sizeof(cl_mem), &r->buf[a]));
    }
    if (ET_EXPORT(N_SCALARS) > 0) {
        /* the open axis' size, after the buffers */
        cl_long n_arg = (cl_long)n_open;
        CHECK(clSetKernelArg(r->k, NARGS, sizeof n_arg, &n_arg));
    }
    long long zero_bytes = ET_EXPORT(ZERO_OUTPUT_BYTES_AT)(n_open);
    if (zero_bytes > 0) {
        /* a SPLIT kernel adds into its output */
        const unsigned char zero = 0;
        CHECK(clEnqueueFillBuffer(r->q, r->buf[0], &zero, 1, 0,
                                  (size_t)zero_bytes, 0, NULL, NULL));
    }
    const long long global_ll[3] = ET_EXPORT(GLOBAL_SIZE_AT)(n_open);
    size_t global[3] = {(size_t)global_ll[0], (size_t)global_ll[1],
                        (size_t)global_ll[2]};
    size_t local[3] = ET_EXPORT(LOCAL_SIZE);
    CHECK(clEnqueueNDRangeKernel(r->q, r->k, ET_EXPORT(WORK_DIM), NULL,
                                 global, ET_EXPORT(HAS_LOCAL) ? local : NULL,
                                 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(r->q, r->buf[0], CL_TRUE, 0,
                              (size_t)(arg_elems[0] * arg_elem_size[0]),
                              host[0], 0, NULL, NULL));
    return 0;
}

/* The output against a naive loop over the iteration space (in long
 * double), within a bound on the rounding error of any summation order;
 * prints the verdict. 0 right, 1 wrong, 2 out of memory. */
static int check(void *host[NARGS])
{
    long long n_out = arg_elems[0];
    long double *ref = calloc((size_t)n_out + 1, sizeof *ref);
    long double *mag = calloc((size_t)n_out + 1, sizeof *mag);
    if (!ref || !mag) {
        free(ref);
        free(mag);
        return 2;
    }
    long long t[NIDX > 0 ? NIDX : 1] = {0}, iter = 1;
    for (int x = 0; x < NIDX; x++)
        iter *= index_size[x];
    for (long long it = 0; it < iter; it++) {
        long double prod = 1;
        for (int a = 1; a < NARGS; a++)
            prod *= get(host[a], arg_elem_size[a], offset(a, t));
        long long o = offset(0, t);
        ref[o] += prod;
        mag[o] += fabsl(prod);
        for (int x = NIDX - 1; x >= 0; x--) {
            if (++t[x] < index_size[x])
                break;
            t[x] = 0;
        }
    }
    /* any summation order: |error| <= gamma_n * sum|terms| + u*|ref| */
    double u = arg_elem_size[0] == 8 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    double n = (double)(n_out ? iter / n_out : 0) + NARGS;
    double gamma = n * u / (1.0 - n * u);
    double worst = 0;
    long long bad = -1;
    for (long long i = 0; i < n_out; i++) {
        double got = get(host[0], arg_elem_size[0], i);
        double bound = gamma * (double)mag[i] + u * fabs((double)ref[i]);
        double e = fabs(got - (double)ref[i]);
        double ne = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0);
        if (!(ne <= worst))
            worst = ne;
        if (!(ne <= 1) && bad < 0)
            bad = i;
    }
    printf("export_demo: %s (%s): %lld output elements, max normalized "
           "error %.3g: %s\n",
           ET_EXPORT(KERNEL_NAME), ET_EXPORT(EINSUM), n_out, worst,
           bad < 0 ? "ok" : "WRONG");
    if (bad >= 0)
        printf("export_demo: element %lld: got %.17g, expected %.17Lg\n",
               bad, get(host[0], arg_elem_size[0], bad), ref[bad]);
    free(ref);
    free(mag);
    return bad < 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
#ifdef ET_EXPORT_EMBED
        fprintf(stderr, "usage: %s - [SEED [N]]\n", argv[0]);
#else
        fprintf(stderr, "usage: %s KERNEL.cl [SEED [N]]\n", argv[0]);
#endif
        return 2;
    }
    long long n_open = argc > 3 ? atoll(argv[3]) : 1000;
    if (n_open < 1) {
        fprintf(stderr, "export_demo: N must be at least 1\n");
        return 2;
    }
    int rc = sizes_at(n_open);
    if (rc != 0)
        return rc;
    char *src = kernel_source(argv[1]);
    if (!src)
        return 2;
    srand(argc > 2 ? (unsigned)atoi(argv[2]) : 1u);
    void *host[NARGS] = {0};
    cl_run run;
    memset(&run, 0, sizeof run);
    cl_device_id dev = NULL;
    rc = host_data(host);
    if (rc == 0 && !(dev = first_device())) {
        fprintf(stderr, "export_demo: no OpenCL device\n");
        rc = 2;
    }
    if (rc == 0)
        rc = build(&run, dev, src);
    if (rc == 0)
        rc = launch(&run, host, n_open);
    if (rc == 0)
        rc = check(host);
    release(&run);
    for (int a = 0; a < NARGS; a++)
        free(host[a]);
    free(src);
    return rc;
}
