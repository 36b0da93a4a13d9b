/*
 * host.c - the host program of tests/test_delivery.c: runs a kernel that
 * `eintune export` (or `eintune export --dispatch`) wrote, with the plain
 * OpenCL API and nothing of eintune, on inputs the test wrote, and writes
 * the output back for the test to check against its reference. The
 * program knows no einsum: every size and shape comes from the header's
 * macros (or, for a dispatch table, from the sizes the test names), and
 * the arrays are raw dense C-ordered files.
 *
 * Built by the test, one program per header:
 *   cc -std=c11 -IDIR -DET_EXPORT_HEADER='"k.h"' host.c -lOpenCL
 *   cc -std=c11 -IDIR -DET_DISPATCH_HEADER='"t.h"' -DET_DISPATCH_NAME=t \
 *      host.c -lOpenCL
 *
 *   host SOURCE RUN...     RUN = SIZES OUT IN1 ... IN(N_ARGS-1)
 *
 * SIZES is, for an exported kernel, the open axis' size n (ignored without
 * an open axis: the kernel's sizes are its own); for a dispatch table,
 * every index's size by name, "x=37,i=8,j=8,k=16". OUT holds the output's
 * initial contents (the test fills it with NaN, so an element never
 * written shows) and gets the result; so does every other output
 * argument (a batched einsum's rows: OUT0 OUT1 ... then the inputs, as
 * the header's ARG_OPERANDS says). An input or output file whose size
 * is not what the header says for the run's sizes is an error: the header
 * and the kernel would not serve that size. One line per run on stdout
 * names the kernel; exit 0 when every run ran (right or wrong is the
 * test's to say), 2 when one could not.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(ET_EXPORT_HEADER)
#include ET_EXPORT_HEADER
#define NARGS ET_EXPORT(N_ARGS)
#elif defined(ET_DISPATCH_HEADER) && defined(ET_DISPATCH_NAME)
#include ET_DISPATCH_HEADER
#ifdef ET_DISPATCH
/* the header's own names for a program that includes one table */
#define DM(x) ET_DISPATCH(x)
#define DF(x) ET_DISPATCH_FN(x)
#else
/* a header without them: NAME_x throughout */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define DM(x) CAT(ET_DISPATCH_NAME, CAT(_, x))
#define DF(x) CAT(ET_DISPATCH_NAME, CAT(_, x))
#endif
#define NARGS DM(N_ARGS)
#define NIDX DM(N_INDICES)
#else
#error "define ET_EXPORT_HEADER, or ET_DISPATCH_HEADER and ET_DISPATCH_NAME"
#endif

static _Noreturn void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "host: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

#define CHECK(call)                                                         \
    do {                                                                    \
        cl_int rc_ = (call);                                                \
        if (rc_ != CL_SUCCESS)                                              \
            die("%s failed: %d", #call, (int)rc_);                    \
    } while (0)

/* The whole file at path; *n its bytes. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(len > 0 ? (size_t)len + 1 : 1);
    if (!s || (len > 0 && fread(s, 1, (size_t)len, f) != (size_t)len))
        die("cannot read %s", path);
    fclose(f);
    s[len > 0 ? len : 0] = '\0';
    *n = len > 0 ? (size_t)len : 0;
    return s;
}

static void spill(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        die("cannot write %s", path);
}

/* What one run launches: the kernel's name and geometry, the bytes each
 * argument must have, the scalars after the buffers. */
typedef struct launch {
    const char *kernel, *what;
    int work_dim, has_local, n_scalars;
    size_t global[3], local[3];
    long long bytes[NARGS]; /* -1: as the file has it */
    long long zero_bytes;
    long long scalars[8];
} launch;

#if defined(ET_EXPORT_HEADER)
static void plan(const char *sizes, launch *l)
{
    long long n = atoll(sizes);
    if (n < 1)
        die("%s: the open size must be at least 1", sizes);
    static const int esize[NARGS] = ET_EXPORT(ARG_ELEM_SIZES);
    const long long elems[NARGS] = ET_EXPORT(ARG_ELEMS_AT)(n);
    const long long global[3] = ET_EXPORT(GLOBAL_SIZE_AT)(n);
    const size_t local[3] = ET_EXPORT(LOCAL_SIZE);
    l->kernel = ET_EXPORT(KERNEL_NAME);
    l->what = ET_EXPORT(OPTS);
    l->work_dim = ET_EXPORT(WORK_DIM);
    l->has_local = ET_EXPORT(HAS_LOCAL);
    for (int d = 0; d < 3; d++) {
        l->global[d] = (size_t)global[d];
        l->local[d] = local[d];
    }
    for (int a = 0; a < NARGS; a++)
        l->bytes[a] = elems[a] * esize[a];
    l->zero_bytes = ET_EXPORT(ZERO_OUTPUT_BYTES_AT)(n);
    l->n_scalars = ET_EXPORT(N_SCALARS);
    l->scalars[0] = n;
}
#else
static void plan(const char *sizes, launch *l)
{
    static const char *const names[] = DM(INDEX_NAMES);
    long long sz[NIDX];
    for (int a = 0; a < NIDX; a++) {
        size_t len = strlen(names[a]);
        const char *p = sizes;
        sz[a] = -1;
        while (p && *p) {
            if (!strncmp(p, names[a], len) && p[len] == '=') {
                sz[a] = atoll(p + len + 1);
                break;
            }
            p = strchr(p, ',');
            p = p ? p + 1 : NULL;
        }
        if (sz[a] < 1)
            die("%s: no size for index %s", sizes, names[a]);
    }
    static DF(launch) dl;
    int which = DF(dispatch)(sz, &dl);
    if (which < 0)
        die("%s: the dispatch function refused these sizes", sizes);
    l->kernel = dl.kernel;
    l->what = dl.tuned ? dl.opts : "generic";
    l->work_dim = dl.work_dim;
    l->has_local = dl.has_local;
    for (int d = 0; d < 3; d++) {
        l->global[d] = (size_t)dl.global[d];
        l->local[d] = (size_t)dl.local[d];
    }
    for (int a = 0; a < NARGS; a++)
        l->bytes[a] = -1;
    l->zero_bytes = dl.zero_bytes;
    l->n_scalars = dl.n_scalars;
    if (l->n_scalars > 8)
        die("dispatch: %d scalars", l->n_scalars);
    for (int s = 0; s < dl.n_scalars; s++)
        l->scalars[s] = dl.scalars[s];
}
#endif

/* Is argument a an output (a batched einsum's row of it: ROW)? */
static int is_output(int a)
{
#if defined(ET_EXPORT_HEADER)
    static const int ops[NARGS] = ET_EXPORT(ARG_OPERANDS);
#else
    static const int ops[NARGS] = DM(ARG_OPERANDS);
#endif
    return ops[a] < 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc - 2) % (NARGS + 1) != 0) {
        fprintf(stderr, "usage: %s SOURCE {SIZES OUT IN...}...\n", argv[0]);
        return 2;
    }
    size_t n_src;
    char *src = slurp(argv[1], &n_src);
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
    if (!dev)
        die("no OpenCL device");
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
        fprintf(stderr, "host: build failed:\n%s\n", log);
        return 2;
    }
    for (int r = 2; r < argc; r += NARGS + 1) {
        launch l;
        memset(&l, 0, sizeof l);
        plan(argv[r], &l);
        cl_kernel k = clCreateKernel(prog, l.kernel, &err);
        CHECK(err);
        cl_mem buf[NARGS];
        char *host[NARGS];
        size_t bytes[NARGS];
        for (int a = 0; a < NARGS; a++) {
            host[a] = slurp(argv[r + 1 + a], &bytes[a]);
            if (l.bytes[a] >= 0 && (long long)bytes[a] != l.bytes[a])
                die("%s: %lld bytes, the header says %lld", argv[r + 1 + a],
                    (long long)bytes[a], l.bytes[a]);
            buf[a] = clCreateBuffer(ctx, CL_MEM_READ_WRITE,
                                    bytes[a] ? bytes[a] : 1, NULL, &err);
            CHECK(err);
            if (bytes[a])
                CHECK(clEnqueueWriteBuffer(q, buf[a], CL_TRUE, 0, bytes[a],
                                           host[a], 0, NULL, NULL));
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
        CHECK(clEnqueueNDRangeKernel(q, k, (cl_uint)l.work_dim, NULL,
                                     l.global, l.has_local ? l.local : NULL,
                                     0, NULL, NULL));
        /* the outputs back: argument 0, and a batched einsum's other
         * rows (operand -1) */
        for (int a = 0; a < NARGS; a++) {
            if (a > 0 && !is_output(a))
                continue;
            CHECK(clEnqueueReadBuffer(q, buf[a], CL_TRUE, 0, bytes[a],
                                      host[a], 0, NULL, NULL));
            spill(argv[r + 1 + a], host[a], bytes[a]);
        }
        printf("host: %s: %s (%s)\n", argv[r], l.kernel, l.what);
        for (int a = 0; a < NARGS; a++) {
            clReleaseMemObject(buf[a]);
            free(host[a]);
        }
        clReleaseKernel(k);
    }
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(src);
    return 0;
}
