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
    {
        const long long sizes[] = ET_EXPORT(INDEX_SIZES_AT)(n_open);
        const long long elems[NARGS] = ET_EXPORT(ARG_ELEMS_AT)(n_open);
        const long long shapes[NARGS][MAXR] =
            ET_EXPORT(ARG_SHAPES_AT)(n_open);
        memcpy(index_size, sizes, sizeof index_size);
        memcpy(arg_elems, elems, sizeof arg_elems);
        memcpy(arg_shape, shapes, sizeof arg_shape);
    }
    for (int a = 0; a < NARGS; a++)
        if (arg_elem_size[a] == 2) {
            fprintf(stderr, "export_demo: f16 data are not handled here\n");
            return 77;
        }
#ifdef ET_EXPORT_EMBED
    /* the source the header holds: no file at run time */
    char *src = malloc(ET_EXPORT(SOURCE_BYTES) + 1);
    if (src)
        memcpy(src, ET_EXPORT(SOURCE), ET_EXPORT(SOURCE_BYTES) + 1);
    if (!src || strcmp(argv[1], "-") != 0) {
        fprintf(stderr, "export_demo: built with ET_EXPORT_EMBED: the "
                        "source is the header's; give - for KERNEL.cl\n");
        return 2;
    }
#else
    char *src = slurp(argv[1]);
    if (!src) {
        fprintf(stderr, "export_demo: cannot read %s\n", argv[1]);
        return 2;
    }
#endif
    srand(argc > 2 ? (unsigned)atoi(argv[2]) : 1u);

    /* host data: arg 0 is the output, the others the inputs in order */
    void *host[NARGS];
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

    /* the plain OpenCL API */
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
        fprintf(stderr, "export_demo: no OpenCL device\n");
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
        fprintf(stderr, "export_demo: build failed:\n%s\n", log);
        return 2;
    }
    cl_kernel k = clCreateKernel(prog, ET_EXPORT(KERNEL_NAME), &err);
    CHECK(err);
    cl_mem buf[NARGS];
    for (int a = 0; a < NARGS; a++) {
        size_t bytes = (size_t)(arg_elems[a] * arg_elem_size[a]);
        buf[a] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1,
                                NULL, &err);
        CHECK(err);
        if (a > 0 && bytes)
            CHECK(clEnqueueWriteBuffer(q, buf[a], CL_TRUE, 0, bytes, host[a],
                                       0, NULL, NULL));
        CHECK(clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &buf[a]));
    }
    if (ET_EXPORT(N_SCALARS) > 0) {
        /* the open axis' size, after the buffers */
        cl_long n_arg = (cl_long)n_open;
        CHECK(clSetKernelArg(k, NARGS, sizeof n_arg, &n_arg));
    }
    long long zero_bytes = ET_EXPORT(ZERO_OUTPUT_BYTES_AT)(n_open);
    if (zero_bytes > 0) {
        /* a SPLIT kernel adds into its output */
        const unsigned char zero = 0;
        CHECK(clEnqueueFillBuffer(q, buf[0], &zero, 1, 0, (size_t)zero_bytes,
                                  0, NULL, NULL));
    }
    const long long global_ll[3] = ET_EXPORT(GLOBAL_SIZE_AT)(n_open);
    size_t global[3] = {(size_t)global_ll[0], (size_t)global_ll[1],
                        (size_t)global_ll[2]};
    size_t local[3] = ET_EXPORT(LOCAL_SIZE);
    CHECK(clEnqueueNDRangeKernel(q, k, ET_EXPORT(WORK_DIM), NULL, global,
                                 ET_EXPORT(HAS_LOCAL) ? local : NULL, 0, NULL,
                                 NULL));
    CHECK(clEnqueueReadBuffer(q, buf[0], CL_TRUE, 0,
                              (size_t)(arg_elems[0] * arg_elem_size[0]),
                              host[0], 0, NULL, NULL));

    /* the naive loop over the iteration space */
    long long n_out = arg_elems[0];
    long double *ref = calloc((size_t)n_out + 1, sizeof *ref);
    long double *mag = calloc((size_t)n_out + 1, sizeof *mag);
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

    for (int a = 0; a < NARGS; a++) {
        clReleaseMemObject(buf[a]);
        free(host[a]);
    }
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(src);
    free(ref);
    free(mag);
    return bad < 0 ? 0 : 1;
}
