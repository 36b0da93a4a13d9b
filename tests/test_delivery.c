/*
 * test_delivery.c - every way a tuned kernel leaves eintune, on every
 * kind of problem, at awkward sizes, checked against the reference.
 *
 * Problems (the table `problems` below): a batched matmul, a row
 * reduction, a full reduction over the non-open axes and a plain one, the
 * 3-operand DG operator, a diagonal, an ellipsis, and two batched einsums
 * (docs/einsum.md): the DG gradient's three rows sharing u, each with its
 * own output, and the divergence's three rows summed into one. Each is
 * tuned (small
 * budget, no race, a database of its own) concretely, and with its first
 * axis open where the einsum allows it; the tuned sizes cover 1, 2, a
 * prime and 256. Then every delivery path runs the tuned kernel at sizes
 * 1, 2, 37, the tuned size and 1000 of that axis:
 *
 *   api          et_cl_kernel_load of the concrete problem at each size in
 *                this program's own OpenCL context, et_cl_kernel_launch
 *                on its own buffers
 *   api-open     the open problem loaded once, launched at each size
 *   et_run       et_run with best
 *   cli-run      `eintune run ... --best` on .npy files
 *   export       `eintune export` at each size, run by a host program
 *                (tests/delivery/host.c) built from the header's macros
 *   export-open  the open export, one host program run at each size
 *   dispatch     `eintune export --dispatch` of every size, run by the
 *                host program through the table's dispatch function
 *   nvrtc        the CUDA source `eintune export --backend cuda` writes
 *                at each size, compiled with NVRTC (no GPU here)
 *
 * A batched problem's arrays go in by name where the path takes names
 * (`eintune run -i NAME=FILE`, one -o per output) and one buffer per row
 * where it takes buffers (et_cl_kernel_launch_args, the exported header's
 * arguments: the output's rows, then each operand, a shared one once, a
 * rowed one row by row); its outputs are read back row by row.
 *
 * Every output is checked element by element against the extended-
 * precision reference (einsum/reference.c) within the bound the tuner's
 * verification uses (measure/verify.c): |got - ref| <= gamma_n * sum|terms|
 * + u_out * |ref|, n = K + m - 2. The output starts as NaN, so an element
 * never written fails. A failure names the problem, the tuning, the path,
 * the size and the maximum normalized error (limit 1); each path is one
 * test that fails when any of its launches did, and the whole matrix is
 * printed at the end.
 *
 * Runs $ET_BUILD_DIR/eintune (default build/) and cc; the paths that need
 * them are skipped without. About 100 s on two cores with PoCL's kernel
 * cache empty. ET_KEEP_DELIVERY=1 keeps the temporary directory
 * (databases, exports, host programs, every command's output) and says
 * where. Not in the valgrind lists: it tunes and builds some 200 kernels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "einsum/einsum.h"
#include "einsum/npy.h"
#include "measure/cuda/nvrtc.h"
#include "tests/suite_device.h"

#include <CL/cl.h>

#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the table ---------------------------------------------------------- */

/* A problem: '#' in shape stands for the size of its first axis, the one
 * the launches vary (and, with open_at, the one opened). */
typedef struct problem {
    const char *id;
    const char *einsum;
    const char *shape;
    const char *dtype;
    int64_t concrete_at; /* tuned with the axis at this size */
    int64_t open_at;     /* tuned with the axis open, at this size; 0: never
                          * (the einsum cannot open it) */
    const char *rows;    /* a batched einsum's rows (--batch), or NULL */
} problem;

static const problem problems[] = {
    {"bmm", "xik,kj->xij", "x=#,i=8,k=16,j=8", "f32", 16, 256, NULL},
    {"rowsum", "xij->xi", "x=#,i=5,j=16", "f64", 13, 13, NULL},
    {"fullsum", "xij->x", "x=#,i=6,j=7", "f32", 2, 1, NULL},
    {"sum2d", "ij->", "i=#,j=13", "f64", 16, 0, NULL},
    {"dg", "xre,rij,xej->xei", "x=#,r=3,e=4,i=10,j=10", "f64", 7, 2, NULL},
    {"diag", "xii->xi", "x=#,i=7", "f64", 1, 256, NULL},
    {"ellipsis", "...ik,kj->...ij", "...=#x3,i=5,k=6,j=7", "f32", 4, 0, NULL},
    {"grad", "xj,ij->xi", "x=#,i=6,j=5", "f64", 9, 64, "u,Dr; u,Ds; u,Dt"},
    {"div", "xj,ij->xi", "x=#,i=4,j=7", "f32", 5, 3,
     "u0,Dr + u1,Ds + u2,Dt"},
};
#define N_PROBLEMS (sizeof problems / sizeof problems[0])

/* The names exported kernels and tables get (the files, the macros). */
#define KERNEL "deliv_kernel"
#define TABLE "deliv_table"

/* The sizes every delivery runs at, besides the tuned one. */
static const int64_t launch_sizes[] = {1, 2, 37, 1000};
#define MAX_SIZES 5

typedef enum dpath {
    PATH_API,
    PATH_API_OPEN,
    PATH_RUN,
    PATH_CLI,
    PATH_EXPORT,
    PATH_EXPORT_OPEN,
    PATH_DISPATCH,
    PATH_NVRTC,
    PATH_COUNT
} dpath;

static const char *const path_names[] = {
    "api", "api-open", "et_run", "cli-run", "export", "export-open",
    "dispatch", "nvrtc",
};
_Static_assert(sizeof path_names / sizeof path_names[0] == PATH_COUNT,
               "a name for every path");

/* A cell's state. CELL_NA: a concrete tuning asked at another size, where
 * its opts do not apply and the lookup says so ("no verified kernel
 * known", as documented): no kernel, nothing wrong. */
enum { CELL_NONE = 0, CELL_OK, CELL_FAIL, CELL_SKIP, CELL_NA };

typedef struct cell {
    int state;
    double err;     /* max normalized error of an output that was read */
    char msg[512];  /* why it failed or was skipped */
} cell;

/* One tuning of one problem, and what its deliveries gave. */
typedef struct entry {
    const problem *p;
    bool open;
    int64_t at;                 /* the tuned size */
    char name[64];              /* "bmm open@256" */
    char tag[64];               /* "bmm-open" (files) */
    char db[512];
    bool tuned;
    char opts[1024];            /* the tuned best, or why there is none */
    int64_t sizes[MAX_SIZES];
    int n_sizes;
    cell cells[PATH_COUNT][MAX_SIZES];
} entry;

static entry g_entries[2 * N_PROBLEMS];
static int g_n_entries;

/* ---- the fixture -------------------------------------------------------- */

static char g_dir[256];
static char g_bin[512];
static bool g_have_bin, g_have_cc;

static struct {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
} g_cl;

static const char *build_dir(void)
{
    const char *d = getenv("ET_BUILD_DIR");
    return d && *d ? d : "build";
}

static void say(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* The shape spec with the first axis at n ("*" for 0). */
static void shape_at(const problem *p, int64_t n, char *out, size_t cap)
{
    const char *h = strchr(p->shape, '#');
    char num[32];
    if (n > 0)
        snprintf(num, sizeof num, "%lld", (long long)n);
    else
        snprintf(num, sizeof num, "*");
    snprintf(out, cap, "%.*s%s%s", (int)(h - p->shape), p->shape, num, h + 1);
}

/* The problem p with its first axis at n (0: open), batched when p has
 * rows; ET_OK or the failing call's status with d set. */
static et_status problem_at(const problem *p, int64_t n, et_problem **out,
                            et_diag *d)
{
    char shape[256];
    shape_at(p, n, shape, sizeof shape);
    *out = NULL;
    et_status st = et_problem_init(p->einsum, shape, p->dtype, out, d);
    if (st == ET_OK && p->rows)
        st = et_problem_set_batch(*out, p->rows, d);
    if (st != ET_OK) {
        et_problem_free(*out);
        *out = NULL;
    }
    return st;
}

/* The first axis' letter, "x" ("" for an ellipsis). */
static void axis_name(const problem *p, char *out, size_t cap)
{
    const char *eq = strchr(p->shape, '=');
    snprintf(out, cap, "%.*s", p->shape[0] == '.' ? 0 : (int)(eq - p->shape),
             p->shape);
}

/* Runs argv with stdout and stderr into DIR/TAG.out and .err; the exit
 * status, -1 when it could not run or died. */
static int spawn(char *const *argv, const char *tag)
{
    char out_path[600], err_path[600];
    snprintf(out_path, sizeof out_path, "%s/%s.out", g_dir, tag);
    snprintf(err_path, sizeof err_path, "%s/%s.err", g_dir, tag);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int ws;
    if (waitpid(pid, &ws, 0) < 0)
        return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* The last lines of DIR/TAG.err (or .out), one line, for a message. */
static void tail_of(const char *tag, const char *ext, char *out, size_t cap)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.%s", g_dir, tag, ext);
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    const char *start = buf;
    if (n > 300)
        start = buf + n - 300;
    size_t o = 0;
    for (const char *c = start; *c && o + 1 < cap; c++)
        out[o++] = *c == '\n' ? '|' : *c;
    out[o] = '\0';
}

static void setenv_in(const char *var, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    setenv(var, path, 1);
}

static bool open_cl(void)
{
    cl_platform_id plat[8];
    cl_uint np = 0;
    cl_int rc;
    if (clGetPlatformIDs(8, plat, &np) != CL_SUCCESS || np == 0)
        return false;
    for (cl_uint i = 0; i < np && !g_cl.dev; i++)
        if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &g_cl.dev, NULL) !=
            CL_SUCCESS)
            g_cl.dev = NULL;
    if (!g_cl.dev)
        return false;
    g_cl.ctx = clCreateContext(NULL, 1, &g_cl.dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return false;
    g_cl.q = clCreateCommandQueue(g_cl.ctx, g_cl.dev, 0, &rc);
    return rc == CL_SUCCESS;
}

/* ---- tuning ------------------------------------------------------------- */

static void entry_add(const problem *p, bool open, int64_t at)
{
    entry *en = &g_entries[g_n_entries++];
    en->p = p;
    en->open = open;
    en->at = at;
    snprintf(en->name, sizeof en->name, "%s %s@%lld", p->id,
             open ? "open" : "concrete", (long long)at);
    char tag[64];
    snprintf(tag, sizeof tag, "%s-%s", p->id, open ? "open" : "concrete");
    snprintf(en->tag, sizeof en->tag, "%s", tag);
    snprintf(en->db, sizeof en->db, "%s/%s.db", g_dir, tag);
    en->sizes[en->n_sizes++] = at;
    for (size_t s = 0; s < sizeof launch_sizes / sizeof *launch_sizes; s++)
        if (launch_sizes[s] != at)
            en->sizes[en->n_sizes++] = launch_sizes[s];
}

static void entry_tune(entry *en)
{
    const problem *p = en->p;
    et_problem *pr = NULL;
    et_diag d;
    if (problem_at(p, en->open ? 0 : en->at, &pr, &d) != ET_OK) {
        say(en->opts, sizeof en->opts, "problem %s %s: %s", p->einsum,
            p->shape, d.msg);
        return;
    }
    if (en->open) {
        char axis[16], at[64];
        axis_name(p, axis, sizeof axis);
        snprintf(at, sizeof at, "%s=%lld", axis, (long long)en->at);
        if (et_problem_set_tune_at(pr, at, &d) != ET_OK) {
            say(en->opts, sizeof en->opts, "tune-at %s: %s", at, d.msg);
            et_problem_free(pr);
            return;
        }
    }
    et_tune_options o = {0};
    o.db = en->db;
    o.budget = 4;
    o.race = -1;
    et_tune_summary s;
    if (et_tune(pr, &o, &s, &d) != ET_OK)
        say(en->opts, sizeof en->opts, "tune: %s", d.msg);
    else if (!s.found)
        say(en->opts, sizeof en->opts, "tune: no verified kernel (%s)",
            s.stop_reason);
    else {
        en->tuned = true;
        snprintf(en->opts, sizeof en->opts, "%s", s.opts);
    }
    et_problem_free(pr);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_delivery_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    setenv_in("XDG_CACHE_HOME", "xdg");
    if (!getenv("POCL_CACHE_DIR"))
        setenv_in("POCL_CACHE_DIR", "pocl");
    /* the commands never measure peaks: figures from a file */
    char path[600];
    snprintf(path, sizeof path, "%s/peaks.json", g_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\"gflops\": {\"f32\": 100, \"f64\": 50, \"f16\": 100}, "
          "\"bandwidth_gbs\": 20}\n",
          f);
    fclose(f);
    setenv("ET_PEAKS_FILE", path, 1);
    snprintf(g_bin, sizeof g_bin, "%s/eintune", build_dir());
    g_have_bin = access(g_bin, X_OK) == 0;
    char *cc[] = {"cc", "--version", NULL};
    g_have_cc = access("tests/delivery/host.c", R_OK) == 0 &&
                spawn(cc, "cc-version") == 0;

    for (size_t i = 0; i < N_PROBLEMS; i++) {
        entry_add(&problems[i], false, problems[i].concrete_at);
        if (problems[i].open_at > 0)
            entry_add(&problems[i], true, problems[i].open_at);
    }
    /* tuning first: the workers start before this process makes any
     * OpenCL call of its own */
    for (int e = 0; e < g_n_entries; e++) {
        entry_tune(&g_entries[e]);
        print_message("tuned %-22s %s\n", g_entries[e].name,
                      g_entries[e].opts);
    }
    return open_cl() ? 0 : -1;
}

static void print_matrix(void)
{
    print_message("delivery matrix: max normalized error per size "
                  "(limit 1); FAIL; '-' skipped; n/a: no kernel applies "
                  "there\n");
    for (int e = 0; e < g_n_entries; e++) {
        entry *en = &g_entries[e];
        print_message("%s: %s\n", en->name, en->opts);
        for (int pa = 0; pa < PATH_COUNT; pa++) {
            char line[512];
            size_t n = 0;
            bool any = false;
            for (int s = 0; s < en->n_sizes; s++) {
                const cell *c = &en->cells[pa][s];
                char v[32];
                if (c->state == CELL_NONE)
                    continue;
                any = true;
                if (c->state == CELL_OK)
                    snprintf(v, sizeof v, "%.2g", c->err);
                else if (c->state == CELL_SKIP)
                    snprintf(v, sizeof v, "-");
                else if (c->state == CELL_NA)
                    snprintf(v, sizeof v, "n/a");
                else if (isnan(c->err))
                    snprintf(v, sizeof v, "FAIL");
                else
                    snprintf(v, sizeof v, "FAIL(%.3g)", c->err);
                n += (size_t)snprintf(line + n, sizeof line - n, " %6lld:%-9s",
                                      (long long)en->sizes[s], v);
                if (n >= sizeof line)
                    break;
            }
            if (any)
                print_message("  %-12s%s\n", path_names[pa], line);
        }
    }
}

static int group_teardown(void **state)
{
    (void)state;
    print_matrix();
    if (g_cl.q)
        clReleaseCommandQueue(g_cl.q);
    if (g_cl.ctx)
        clReleaseContext(g_cl.ctx);
    if (!getenv("ET_KEEP_DELIVERY")) {
        char *rm[] = {"rm", "-rf", g_dir, NULL};
        spawn(rm, "rm");
    } else {
        fprintf(stderr, "test_delivery: files kept in %s\n", g_dir);
    }
    return 0;
}

/* ---- inputs and references ---------------------------------------------- */

/* A problem at one size: its einsum, inputs, reference and bounds, and the
 * files the out-of-process paths read. */
typedef struct data {
    const problem *p;
    int64_t size;
    et_einsum *e;
    void *in[ET_MAX_OPERANDS];
    size_t in_bytes[ET_MAX_OPERANDS];
    long double *ref;
    double *bound;
    int64_t n_out;
    size_t out_bytes;
    char npy[ET_MAX_OPERANDS][600];  /* inputs as .npy */
    char raw[ET_MAX_OPERANDS][600];  /* inputs as raw dense arrays */
    /* The kernel's buffers in the documented order: the output's (its
     * rows, or 1), then every input's (a rowed operand's rows, one for
     * any other): operand and row (-1: the whole array) and, for the
     * inputs, raw files. An unbatched problem: the output, the inputs. */
    int n_out_args;
    int n_in_args;
    int in_arg_op[ET_MAX_BATCH_ARGS];
    int in_arg_row[ET_MAX_BATCH_ARGS];
    char in_arg_raw[ET_MAX_BATCH_ARGS][600];
    /* A batched problem's arrays by name, as `eintune run -i` takes them:
     * "NAME=FILE.npy", each distinct name once. */
    int n_named;
    char named[ET_MAX_ROWS * ET_MAX_OPERANDS][700];
} data;

static data *g_data[N_PROBLEMS * 8];
static int g_n_data;

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

static void write_file(const char *path, const void *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Operand k's array (k >= 0) of one row (row < 0: the whole array) in
 * dd's inputs, and its bytes. */
static const void *in_slice(const data *dd, int k, int row, size_t *bytes)
{
    if (row < 0) {
        *bytes = dd->in_bytes[k];
        return dd->in[k];
    }
    *bytes = (size_t)et_einsum_row_elems(dd->e, k) *
             et_dtype_size(dd->e->op[k].dtype);
    return (const char *)dd->in[k] + (size_t)row * *bytes;
}

/* dd's buffer list, and a batched problem's raw files per row and .npy
 * files per name. */
static void data_args(data *dd, const problem *p, const et_rows *rows)
{
    const et_einsum *e = dd->e;
    int n_rows = e->n_rows;
    dd->n_out_args = et_einsum_op_rowed(e, -1) ? n_rows : 1;
    for (int k = 0; k < e->n_ops; k++) {
        bool rowed = et_einsum_op_rowed(e, k);
        for (int r = 0; r < (rowed ? n_rows : 1); r++) {
            int a = dd->n_in_args++;
            assert_true(a < ET_MAX_BATCH_ARGS);
            dd->in_arg_op[a] = k;
            dd->in_arg_row[a] = rowed ? r : -1;
            if (!rowed) {
                snprintf(dd->in_arg_raw[a], sizeof dd->in_arg_raw[a], "%s",
                         dd->raw[k]);
                continue;
            }
            snprintf(dd->in_arg_raw[a], sizeof dd->in_arg_raw[a],
                     "%s/%s-%lld-in%d-row%d.bin", g_dir, p->id,
                     (long long)dd->size, k, r);
            size_t nb;
            const void *src = in_slice(dd, k, r, &nb);
            write_file(dd->in_arg_raw[a], src, nb);
        }
    }
    if (!p->rows)
        return;
    for (int r = 0; r < rows->n_rows; r++) {
        for (int k = 0; k < e->n_ops; k++) {
            const char *name = rows->name[r][k];
            bool seen = false;
            for (int i = 0; i < dd->n_named && !seen; i++)
                seen = strncmp(dd->named[i], name, strlen(name)) == 0 &&
                       dd->named[i][strlen(name)] == '=';
            if (seen)
                continue;
            bool rowed = et_einsum_op_rowed(e, k);
            char path[600];
            snprintf(path, sizeof path, "%s/%s-%lld-%s.npy", g_dir, p->id,
                     (long long)dd->size, name);
            et_operand op;
            et_einsum_row_operand(e, k, &op);
            et_array a;
            memset(&a, 0, sizeof a);
            a.dtype = op.dtype;
            a.rank = op.rank;
            for (int i = 0; i < op.rank; i++)
                a.dim[i] = op.dim[i];
            size_t nb;
            a.data = (void *)in_slice(dd, k, rowed ? r : -1, &nb);
            et_diag d;
            if (et_npy_write(path, &a, &d) != ET_OK)
                fail_msg("%s: %s", path, d.msg);
            assert_true(dd->n_named < ET_MAX_ROWS * ET_MAX_OPERANDS);
            snprintf(dd->named[dd->n_named++], sizeof dd->named[0], "%s=%s",
                     name, path);
        }
    }
}

/* The data of problem p at size n, made once. */
static const data *data_get(const problem *p, int64_t n)
{
    for (int i = 0; i < g_n_data; i++)
        if (g_data[i]->p == p && g_data[i]->size == n)
            return g_data[i];
    assert_true(g_n_data < (int)(sizeof g_data / sizeof *g_data));
    data *dd = calloc(1, sizeof *dd);
    assert_non_null(dd);
    dd->p = p;
    dd->size = n;
    dd->e = malloc(sizeof *dd->e);
    assert_non_null(dd->e);
    char shape[256];
    shape_at(p, n, shape, sizeof shape);
    et_diag d;
    if (et_einsum_from_strings(p->einsum, shape, p->dtype, dd->e, &d) !=
        ET_OK)
        fail_msg("%s %s: %s", p->einsum, shape, d.msg);
    et_rows rows;
    memset(&rows, 0, sizeof rows);
    if (p->rows) {
        et_einsum base = *dd->e;
        if (et_einsum_batch_spec(&base, p->rows, &rows, dd->e, &d) != ET_OK)
            fail_msg("%s --batch '%s': %s", p->einsum, p->rows, d.msg);
    }
    const et_einsum *e = dd->e;
    uint64_t rs = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(p - problems) << 32) ^
                  (uint64_t)n;
    for (int k = 0; k < e->n_ops; k++) {
        int64_t ne = et_einsum_operand_elems(e, k);
        size_t es = et_dtype_size(e->op[k].dtype);
        dd->in_bytes[k] = (size_t)ne * es;
        dd->in[k] = malloc(dd->in_bytes[k] ? dd->in_bytes[k] : 1);
        assert_non_null(dd->in[k]);
        for (int64_t i = 0; i < ne; i++) {
            double v = (double)(rng_next(&rs) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
            if (es == 4)
                ((float *)dd->in[k])[i] = (float)v;
            else
                ((double *)dd->in[k])[i] = v;
        }
        snprintf(dd->raw[k], sizeof dd->raw[k], "%s/%s-%lld-in%d.bin", g_dir,
                 p->id, (long long)n, k);
        write_file(dd->raw[k], dd->in[k], dd->in_bytes[k]);
        snprintf(dd->npy[k], sizeof dd->npy[k], "%s/%s-%lld-in%d.npy", g_dir,
                 p->id, (long long)n, k);
        et_array a;
        memset(&a, 0, sizeof a);
        a.dtype = e->op[k].dtype;
        a.rank = e->op[k].rank;
        for (int r = 0; r < a.rank; r++)
            a.dim[r] = e->op[k].dim[r];
        a.data = dd->in[k];
        if (et_npy_write(dd->npy[k], &a, &d) != ET_OK)
            fail_msg("%s: %s", dd->npy[k], d.msg);
    }
    data_args(dd, p, &rows);
    dd->n_out = et_einsum_operand_elems(e, -1);
    dd->out_bytes = (size_t)dd->n_out * et_dtype_size(e->out.dtype);
    size_t no = (size_t)(dd->n_out ? dd->n_out : 1);
    dd->ref = malloc(no * sizeof *dd->ref);
    dd->bound = malloc(no * sizeof *dd->bound);
    long double *abs_terms = malloc(no * sizeof *abs_terms);
    assert_non_null(dd->ref);
    assert_non_null(dd->bound);
    assert_non_null(abs_terms);
    assert_int_equal(et_reference_eval(e, (const void *const *)dd->in,
                                       dd->ref, abs_terms),
                     ET_OK);
    /* the verification's bound (measure/verify.c) */
    long double k_terms = 1;
    for (int i = e->n_out; i < e->n_idx; i++)
        k_terms *= (long double)e->idx[i].size;
    long double nt = k_terms + e->n_ops - 2;
    if (nt < 0)
        nt = 0;
    long double u = unit_roundoff(e->acc_dtype);
    long double u_out =
        e->out.dtype == e->acc_dtype ? 0 : unit_roundoff(e->out.dtype);
    long double gamma = nt * u < 1 ? nt * u / (1 - nt * u) : INFINITY;
    for (int64_t i = 0; i < dd->n_out; i++) {
        long double b = u_out * fabsl(dd->ref[i]);
        if (abs_terms[i] != 0)
            b += gamma * abs_terms[i];
        dd->bound[i] = (double)b;
    }
    free(abs_terms);
    g_data[g_n_data++] = dd;
    return dd;
}

/* A host output buffer of dd's output filled with NaN. */
static void *nan_output(const data *dd)
{
    void *out = malloc(dd->out_bytes ? dd->out_bytes : 1);
    assert_non_null(out);
    bool f32 = et_dtype_size(dd->e->out.dtype) == 4;
    for (int64_t i = 0; i < dd->n_out; i++) {
        if (f32)
            ((float *)out)[i] = NAN;
        else
            ((double *)out)[i] = NAN;
    }
    return out;
}

/* ---- results ------------------------------------------------------------ */

static int size_slot(const entry *en, int64_t n)
{
    for (int s = 0; s < en->n_sizes; s++)
        if (en->sizes[s] == n)
            return s;
    fail_msg("size %lld is not one of %s's", (long long)n, en->name);
    return -1;
}

static void fail_cell(entry *en, dpath pa, int64_t n, double err,
                      const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void fail_cell(entry *en, dpath pa, int64_t n, double err,
                      const char *fmt, ...)
{
    cell *c = &en->cells[pa][size_slot(en, n)];
    c->state = CELL_FAIL;
    c->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

static void skip_cell(entry *en, dpath pa, int64_t n, const char *why)
{
    cell *c = &en->cells[pa][size_slot(en, n)];
    c->state = CELL_SKIP;
    snprintf(c->msg, sizeof c->msg, "%s", why);
}

/* No kernel known for en at size n: n/a where the concrete tuning's opts
 * may well not apply (another size than the tuned one), else a failure. */
static void none_cell(entry *en, dpath pa, int64_t n, const char *msg)
{
    if (en->open || n == en->at) {
        fail_cell(en, pa, n, NAN, "%s", msg);
        return;
    }
    cell *c = &en->cells[pa][size_slot(en, n)];
    c->state = CELL_NA;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

/* A delivery that gave no kernel: none_cell when msg says none is known,
 * else a failure. */
static void no_kernel(entry *en, dpath pa, int64_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void no_kernel(entry *en, dpath pa, int64_t n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (strstr(msg, "no verified kernel known"))
        none_cell(en, pa, n, msg);
    else
        fail_cell(en, pa, n, NAN, "%s", msg);
}

static void ok_cell(entry *en, dpath pa, int64_t n, double err)
{
    cell *c = &en->cells[pa][size_slot(en, n)];
    c->state = CELL_OK;
    c->err = err;
}

/* Compares out (dd's output dtype) with dd's reference; the cell gets the
 * maximum normalized error and, beyond 1, the first bad element. `what`
 * says which kernel ran. */
static void check_output(entry *en, dpath pa, const data *dd, const void *out,
                         const char *what)
{
    bool f32 = et_dtype_size(dd->e->out.dtype) == 4;
    double worst = 0;
    int64_t bad = -1;
    int64_t n_bad = 0;
    for (int64_t i = 0; i < dd->n_out; i++) {
        double got = f32 ? ((const float *)out)[i] : ((const double *)out)[i];
        long double diff = fabsl((long double)got - dd->ref[i]);
        double ne = dd->bound[i] > 0 ? (double)(diff / dd->bound[i])
                                     : (diff == 0 ? 0 : INFINITY);
        if (isnan(ne))
            ne = INFINITY;
        if (ne > worst)
            worst = ne;
        if (!(ne <= 1)) {
            n_bad++;
            if (bad < 0)
                bad = i;
        }
    }
    if (bad < 0) {
        ok_cell(en, pa, dd->size, worst);
        return;
    }
    double got = f32 ? ((const float *)out)[bad] : ((const double *)out)[bad];
    fail_cell(en, pa, dd->size, worst,
              "max normalized error %.3g: %lld of %lld elements out of "
              "bound, element %lld %.17g, reference %.17Lg [%s]",
              worst, (long long)n_bad, (long long)dd->n_out, (long long)bad,
              got, dd->ref[bad], what);
}

/* Fails the current test when any cell of dpath pa failed, listing them. */
static void path_verdict(dpath pa)
{
    int n_fail = 0, n_ok = 0, n_skip = 0, n_na = 0;
    for (int e = 0; e < g_n_entries; e++) {
        entry *en = &g_entries[e];
        for (int s = 0; s < en->n_sizes; s++) {
            const cell *c = &en->cells[pa][s];
            if (c->state == CELL_OK)
                n_ok++;
            else if (c->state == CELL_SKIP)
                n_skip++;
            else if (c->state == CELL_NA)
                n_na++;
            if (c->state != CELL_FAIL)
                continue;
            n_fail++;
            print_error("FAIL %s %s at %lld: %s\n", en->name, path_names[pa],
                        (long long)en->sizes[s], c->msg);
        }
    }
    print_message("%s: %d ok, %d failed, %d skipped, %d with no kernel\n",
                  path_names[pa], n_ok, n_fail, n_skip, n_na);
    if (n_fail)
        fail_msg("%s: %d launches wrong or failed (listed above)",
                 path_names[pa], n_fail);
}

/* True when en was tuned; else every size of pa fails with the reason. */
static bool have_kernel(entry *en, dpath pa)
{
    if (en->tuned)
        return true;
    for (int s = 0; s < en->n_sizes; s++)
        fail_cell(en, pa, en->sizes[s], NAN, "not tuned: %s", en->opts);
    return false;
}

static void skip_all(entry *en, dpath pa, const char *why)
{
    for (int s = 0; s < en->n_sizes; s++)
        skip_cell(en, pa, en->sizes[s], why);
}

/* ---- the caller's own OpenCL context ------------------------------------ */

/* Buffers of dd's inputs and a NaN output in the fixture's context,
 * launched through k with the index sizes `sizes` (NULL: the problem's),
 * the output checked. */
static void cl_launch_args_check(entry *en, dpath pa, et_loaded_kernel *k,
                                 const data *dd, const int64_t *sizes);

static void cl_launch_check(entry *en, dpath pa, et_loaded_kernel *k,
                            const data *dd, const int64_t *sizes)
{
    if (dd->e->n_rows > 0) {
        cl_launch_args_check(en, pa, k, dd, sizes);
        return;
    }
    cl_int rc;
    cl_mem in[ET_MAX_OPERANDS] = {0}, out = NULL;
    void *host = nan_output(dd);
    int n_in = dd->e->n_ops;
    char what[300];
    snprintf(what, sizeof what, "%s: %s", et_loaded_kernel_name(k),
             et_loaded_kernel_opts(k));
    for (int i = 0; i < n_in; i++) {
        in[i] = clCreateBuffer(g_cl.ctx,
                               CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               dd->in_bytes[i] ? dd->in_bytes[i] : 1,
                               dd->in_bytes[i] ? dd->in[i] : (void *)&rc,
                               &rc);
        assert_int_equal(rc, CL_SUCCESS);
    }
    out = clCreateBuffer(g_cl.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                         dd->out_bytes, host, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    et_diag d;
    cl_event ev = NULL;
    if (et_cl_kernel_launch(k, g_cl.q, out, in, n_in, sizes, &ev, &d) !=
        ET_OK) {
        fail_cell(en, pa, dd->size, NAN, "et_cl_kernel_launch: %s [%s]",
                  d.msg, what);
    } else {
        assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
        assert_int_equal(clEnqueueReadBuffer(g_cl.q, out, CL_TRUE, 0,
                                             dd->out_bytes, host, 0, NULL,
                                             NULL),
                         CL_SUCCESS);
        check_output(en, pa, dd, host, what);
    }
    for (int i = 0; i < n_in; i++)
        clReleaseMemObject(in[i]);
    clReleaseMemObject(out);
    free(host);
}

/* A batched problem's launch: one buffer per argument as
 * et_loaded_kernel_arg names it (a row of the output or of a rowed
 * operand holds that row alone), through et_cl_kernel_launch_args; the
 * outputs read back row by row into one array and checked. */
static void cl_launch_args_check(entry *en, dpath pa, et_loaded_kernel *k,
                                 const data *dd, const int64_t *sizes)
{
    cl_int rc;
    int n_args = et_loaded_kernel_n_args(k);
    cl_mem buf[ET_MAX_BATCH_ARGS] = {0};
    int op[ET_MAX_BATCH_ARGS], row[ET_MAX_BATCH_ARGS];
    char *host = nan_output(dd);
    size_t out_row = dd->out_bytes / (size_t)dd->n_out_args;
    char what[300];
    snprintf(what, sizeof what, "%s: %s", et_loaded_kernel_name(k),
             et_loaded_kernel_opts(k));
    if (n_args != dd->n_out_args + dd->n_in_args) {
        fail_cell(en, pa, dd->size, NAN, "%d kernel arguments, not %d [%s]",
                  n_args, dd->n_out_args + dd->n_in_args, what);
        free(host);
        return;
    }
    for (int a = 0; a < n_args; a++) {
        assert_int_equal(et_loaded_kernel_arg(k, a, &op[a], &row[a]), 0);
        size_t nb;
        const void *src;
        if (op[a] < 0) {
            nb = out_row;
            src = host + (size_t)(row[a] < 0 ? 0 : row[a]) * out_row;
        } else {
            src = in_slice(dd, op[a], row[a], &nb);
        }
        buf[a] = clCreateBuffer(g_cl.ctx,
                                CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                nb ? nb : 1, nb ? (void *)src : (void *)&rc,
                                &rc);
        assert_int_equal(rc, CL_SUCCESS);
    }
    et_diag d;
    cl_event ev = NULL;
    if (et_cl_kernel_launch_args(k, g_cl.q, buf, n_args, sizes, &ev, &d) !=
        ET_OK) {
        fail_cell(en, pa, dd->size, NAN, "et_cl_kernel_launch_args: %s [%s]",
                  d.msg, what);
    } else {
        assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
        for (int a = 0; a < n_args; a++) {
            if (op[a] >= 0)
                continue;
            assert_int_equal(
                clEnqueueReadBuffer(g_cl.q, buf[a], CL_TRUE, 0, out_row,
                                    host + (size_t)(row[a] < 0 ? 0 : row[a]) *
                                               out_row,
                                    0, NULL, NULL),
                CL_SUCCESS);
        }
        check_output(en, pa, dd, host, what);
    }
    for (int a = 0; a < n_args; a++)
        clReleaseMemObject(buf[a]);
    free(host);
}

/* api: the concrete problem at each size, loaded and launched. */
static void deliver_api(entry *en)
{
    if (!have_kernel(en, PATH_API))
        return;
    for (int s = 0; s < en->n_sizes; s++) {
        const data *dd = data_get(en->p, en->sizes[s]);
        et_problem *pr = NULL;
        et_diag d;
        assert_int_equal(problem_at(en->p, en->sizes[s], &pr, &d), ET_OK);
        et_load_options lo = {.db = en->db};
        et_loaded_kernel *k = NULL;
        if (et_cl_kernel_load(pr, g_cl.ctx, g_cl.dev, &lo, &k, &d) != ET_OK)
            no_kernel(en, PATH_API, en->sizes[s], "et_cl_kernel_load: %s: %s",
                      et_status_str(d.status), d.msg);
        else
            cl_launch_check(en, PATH_API, k, dd, NULL);
        et_loaded_kernel_free(k);
        et_problem_free(pr);
    }
}

/* api-open: the open problem loaded once, launched at every size. */
static void deliver_api_open(entry *en)
{
    if (!en->open || !have_kernel(en, PATH_API_OPEN))
        return;
    et_problem *pr = NULL;
    et_diag d;
    assert_int_equal(problem_at(en->p, 0, &pr, &d), ET_OK);
    et_load_options lo = {.db = en->db};
    et_loaded_kernel *k = NULL;
    if (et_cl_kernel_load(pr, g_cl.ctx, g_cl.dev, &lo, &k, &d) != ET_OK) {
        for (int s = 0; s < en->n_sizes; s++)
            fail_cell(en, PATH_API_OPEN, en->sizes[s], NAN,
                      "et_cl_kernel_load: %s: %s", et_status_str(d.status),
                      d.msg);
        et_problem_free(pr);
        return;
    }
    int n_idx = et_problem_n_indices(pr);
    for (int s = 0; s < en->n_sizes; s++) {
        int64_t sizes[64];
        for (int i = 0; i < n_idx; i++)
            sizes[i] = et_problem_index_open(pr, i)
                           ? en->sizes[s]
                           : et_problem_index_size(pr, i);
        cl_launch_check(en, PATH_API_OPEN, k,
                        data_get(en->p, en->sizes[s]), sizes);
    }
    et_loaded_kernel_free(k);
    et_problem_free(pr);
}

/* ---- et_run ------------------------------------------------------------- */

static void deliver_run(entry *en)
{
    if (!have_kernel(en, PATH_RUN))
        return;
    for (int s = 0; s < en->n_sizes; s++) {
        const data *dd = data_get(en->p, en->sizes[s]);
        et_problem *pr = NULL;
        et_diag d;
        assert_int_equal(problem_at(en->p, en->sizes[s], &pr, &d), ET_OK);
        et_run_options ro = {0};
        ro.db = en->db;
        ro.best = 1;
        void *out = nan_output(dd);
        et_run_result res;
        memset(&res, 0, sizeof res);
        if (et_run(pr, &ro, out, (const void *const *)dd->in, &res, &d) !=
            ET_OK) {
            no_kernel(en, PATH_RUN, dd->size, "et_run: %s: %s",
                      et_status_str(d.status), d.msg);
        } else {
            char what[2300];
            snprintf(what, sizeof what, "%s: %s", res.kernel, res.opts);
            check_output(en, PATH_RUN, dd, out, what);
        }
        free(out);
        et_problem_free(pr);
    }
}

/* ---- the eintune command ------------------------------------------------ */

/* `eintune export` of en's problem (its einsum, rows, dtype and
 * database) with the shape spec `shape`, then ARGS... (NULL-terminated),
 * its output under tag. */
static int eintune_export(const char *tag, const entry *en,
                          const char *shape, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = g_bin;
    argv[n++] = "export";
    argv[n++] = (char *)en->p->einsum;
    if (en->p->rows) {
        argv[n++] = "--batch";
        argv[n++] = (char *)en->p->rows;
    }
    argv[n++] = "--shape";
    argv[n++] = (char *)shape;
    argv[n++] = "--dtype";
    argv[n++] = (char *)en->p->dtype;
    argv[n++] = "--db";
    argv[n++] = (char *)en->db;
    va_list ap;
    va_start(ap, shape);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 63)
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return spawn(argv, tag);
}

static void deliver_cli(entry *en)
{
    if (!have_kernel(en, PATH_CLI))
        return;
    if (!g_have_bin) {
        skip_all(en, PATH_CLI, "no eintune command");
        return;
    }
    for (int s = 0; s < en->n_sizes; s++) {
        const data *dd = data_get(en->p, en->sizes[s]);
        char tag[128], out[ET_MAX_ROWS][600];
        snprintf(tag, sizeof tag, "%s-cli-%lld", en->tag, (long long)dd->size);
        char *argv[24 + 2 * ET_MAX_ROWS * (ET_MAX_OPERANDS + 1)];
        int a = 0;
        argv[a++] = g_bin;
        argv[a++] = "run";
        argv[a++] = (char *)en->p->einsum;
        if (en->p->rows) {
            /* the arrays by name, an output per row */
            argv[a++] = "--batch";
            argv[a++] = (char *)en->p->rows;
            for (int i = 0; i < dd->n_named; i++) {
                argv[a++] = "-i";
                argv[a++] = (char *)dd->named[i];
            }
        } else {
            for (int k = 0; k < dd->e->n_ops; k++) {
                argv[a++] = "-i";
                argv[a++] = (char *)dd->npy[k];
            }
        }
        for (int r = 0; r < dd->n_out_args; r++) {
            snprintf(out[r], sizeof out[r], "%s/%s-out%d.npy", g_dir, tag, r);
            argv[a++] = "-o";
            argv[a++] = out[r];
        }
        argv[a++] = "--best";
        argv[a++] = "--db";
        argv[a++] = en->db;
        argv[a] = NULL;
        int rc = spawn(argv, tag);
        char err[400];
        tail_of(tag, "err", err, sizeof err);
        if (rc != 0) {
            no_kernel(en, PATH_CLI, dd->size, "eintune run: exit %d: %s", rc,
                      err);
            continue;
        }
        /* the outputs, row after row, into one array */
        char *host = nan_output(dd);
        int64_t row_elems = dd->n_out / dd->n_out_args;
        size_t row_bytes = dd->out_bytes / (size_t)dd->n_out_args;
        bool read = true;
        for (int r = 0; r < dd->n_out_args && read; r++) {
            et_array got;
            et_diag d;
            if (et_npy_read(out[r], &got, &d) != ET_OK) {
                fail_cell(en, PATH_CLI, dd->size, NAN, "%s: %s", out[r],
                          d.msg);
                read = false;
                continue;
            }
            if (et_array_elems(&got) != row_elems ||
                got.dtype != dd->e->out.dtype) {
                fail_cell(en, PATH_CLI, dd->size, NAN,
                          "%s: %lld elements, not %lld", out[r],
                          (long long)et_array_elems(&got),
                          (long long)row_elems);
                read = false;
            } else {
                memcpy(host + (size_t)r * row_bytes, got.data, row_bytes);
            }
            et_array_free(&got);
        }
        if (read)
            check_output(en, PATH_CLI, dd, host, err);
        free(host);
    }
}

/* ---- exported kernels in a host program --------------------------------- */

/* Builds tests/delivery/host.c against DIR/NAME.h (an exported kernel, or
 * with dispatch a table) into DIR/host; false with why. */
static bool host_build(const char *dir, const char *name, bool dispatch,
                       const char *tag, char *why, size_t cap)
{
    char inc[700], def[300], dname[300], exe[700], ctag[160];
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/host", dir);
    snprintf(ctag, sizeof ctag, "%s-cc", tag);
    snprintf(def, sizeof def, "-DET_%s_HEADER=\"%s.h\"",
             dispatch ? "DISPATCH" : "EXPORT", name);
    snprintf(dname, sizeof dname, "-DET_DISPATCH_NAME=%s", name);
    char *cc[] = {"cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
                  inc, def, "tests/delivery/host.c", "-lOpenCL", "-o", exe,
                  dispatch ? dname : NULL, NULL};
    int rc = spawn(cc, ctag);
    if (rc != 0) {
        char err[400];
        tail_of(ctag, "err", err, sizeof err);
        say(why, cap, "cc %s.h: exit %d: %s", name, rc, err);
        return false;
    }
    return true;
}

/* Runs DIR/host on DIR/NAME.cl at the given sizes (sizes_arg[i] is the
 * program's SIZES for en->sizes[slot[i]]) and checks each output. */
static void host_run(entry *en, dpath pa, const char *dir, const char *name,
                     const char *tag, const int *slot, char **sizes_arg,
                     int n)
{
    char exe[700], src[700];
    snprintf(exe, sizeof exe, "%s/host", dir);
    snprintf(src, sizeof src, "%s/%s.cl", dir, name);
    static char *argv[2 + MAX_SIZES * (ET_MAX_BATCH_ARGS + 1) + 1];
    static char outs[MAX_SIZES][ET_MAX_ROWS][700];
    int a = 0;
    argv[a++] = exe;
    argv[a++] = src;
    for (int i = 0; i < n; i++) {
        const data *dd = data_get(en->p, en->sizes[slot[i]]);
        char *nan = nan_output(dd);
        size_t row_bytes = dd->out_bytes / (size_t)dd->n_out_args;
        argv[a++] = sizes_arg[i];
        for (int r = 0; r < dd->n_out_args; r++) {
            snprintf(outs[i][r], sizeof outs[i][r], "%s/out-%lld-%d.bin",
                     dir, (long long)dd->size, r);
            write_file(outs[i][r], nan + (size_t)r * row_bytes, row_bytes);
            argv[a++] = outs[i][r];
        }
        free(nan);
        for (int k = 0; k < dd->n_in_args; k++)
            argv[a++] = (char *)dd->in_arg_raw[k];
    }
    argv[a] = NULL;
    int rc = spawn(argv, tag);
    char msg[400];
    if (rc != 0) {
        tail_of(tag, "err", msg, sizeof msg);
        for (int i = 0; i < n; i++)
            fail_cell(en, pa, en->sizes[slot[i]], NAN, "host: exit %d: %s",
                      rc, msg);
        return;
    }
    char *lines = NULL;
    {
        char path_out[600];
        snprintf(path_out, sizeof path_out, "%s/%s.out", g_dir, tag);
        FILE *f = fopen(path_out, "rb");
        lines = calloc(1, 16384);
        assert_non_null(lines);
        if (f) {
            size_t got = fread(lines, 1, 16383, f);
            lines[got] = '\0';
            fclose(f);
        }
    }
    const char *line = lines;
    for (int i = 0; i < n; i++) {
        const data *dd = data_get(en->p, en->sizes[slot[i]]);
        const char *nl = line ? strchr(line, '\n') : NULL;
        char what[400] = "";
        if (nl) {
            snprintf(what, sizeof what, "%.*s", (int)(nl - line), line);
            line = nl + 1;
        }
        char *out = malloc(dd->out_bytes ? dd->out_bytes : 1);
        assert_non_null(out);
        size_t row_bytes = dd->out_bytes / (size_t)dd->n_out_args;
        bool read = true;
        for (int r = 0; r < dd->n_out_args && read; r++) {
            FILE *f = fopen(outs[i][r], "rb");
            size_t got =
                f ? fread(out + (size_t)r * row_bytes, 1, row_bytes, f) : 0;
            if (f)
                fclose(f);
            if (got != row_bytes) {
                fail_cell(en, pa, dd->size, NAN, "%s: %zu bytes, not %zu",
                          outs[i][r], got, row_bytes);
                read = false;
            }
        }
        if (read)
            check_output(en, pa, dd, out, what);
        free(out);
    }
    free(lines);
}

/* `eintune export` of the problem at size n (0: the open problem) into
 * DIR (made here) as kernel `k`, for backend; false with why. */
static bool export_at(entry *en, int64_t n, const char *backend,
                      const char *dir, const char *tag, char *why,
                      size_t cap)
{
    char shape[256];
    shape_at(en->p, n, shape, sizeof shape);
    int rc = eintune_export(tag, en, shape, "--backend", backend, "--name",
                            KERNEL, "-o", dir, (char *)NULL);
    if (rc != 0) {
        char err[400];
        tail_of(tag, "err", err, sizeof err);
        say(why, cap, "eintune export --shape %s: exit %d: %s", shape, rc,
            err);
        return false;
    }
    return true;
}

/* export: a concrete export at each size, its host program run there. */
static void deliver_export(entry *en)
{
    if (!have_kernel(en, PATH_EXPORT))
        return;
    if (!g_have_bin || !g_have_cc) {
        skip_all(en, PATH_EXPORT, "no eintune command or no cc");
        return;
    }
    for (int s = 0; s < en->n_sizes; s++) {
        char dir[600], tag[160], why[700], arg[32];
        snprintf(tag, sizeof tag, "%s-export-%lld", en->tag,
                 (long long)en->sizes[s]);
        snprintf(dir, sizeof dir, "%s/%s", g_dir, tag);
        if (!export_at(en, en->sizes[s], "opencl", dir, tag, why,
                       sizeof why) ||
            !host_build(dir, KERNEL, false, tag, why, sizeof why)) {
            no_kernel(en, PATH_EXPORT, en->sizes[s], "%s", why);
            continue;
        }
        /* the open size is this size when the export has an open axis */
        snprintf(arg, sizeof arg, "%lld", (long long)en->sizes[s]);
        char *args[1] = {arg};
        char rtag[200];
        snprintf(rtag, sizeof rtag, "%s-host", tag);
        host_run(en, PATH_EXPORT, dir, KERNEL, rtag, &s, args, 1);
    }
}

/* export-open: the open export, one host program run at every size. */
static void deliver_export_open(entry *en)
{
    if (!en->open || !have_kernel(en, PATH_EXPORT_OPEN))
        return;
    if (!g_have_bin || !g_have_cc) {
        skip_all(en, PATH_EXPORT_OPEN, "no eintune command or no cc");
        return;
    }
    char dir[600], tag[160], why[700];
    snprintf(tag, sizeof tag, "%s-export-open", en->tag);
    snprintf(dir, sizeof dir, "%s/%s", g_dir, tag);
    if (!export_at(en, 0, "opencl", dir, tag, why, sizeof why) ||
        !host_build(dir, KERNEL, false, tag, why, sizeof why)) {
        for (int s = 0; s < en->n_sizes; s++)
            fail_cell(en, PATH_EXPORT_OPEN, en->sizes[s], NAN, "%s", why);
        return;
    }
    char args[MAX_SIZES][32];
    char *argp[MAX_SIZES];
    int slot[MAX_SIZES];
    for (int s = 0; s < en->n_sizes; s++) {
        snprintf(args[s], sizeof args[s], "%lld", (long long)en->sizes[s]);
        argp[s] = args[s];
        slot[s] = s;
    }
    char rtag[200];
    snprintf(rtag, sizeof rtag, "%s-host", tag);
    host_run(en, PATH_EXPORT_OPEN, dir, KERNEL, rtag, slot, argp, en->n_sizes);
}

/* "x=37,i=8,j=8,k=16": every index of dd's einsum by name. */
static void sizes_by_name(const data *dd, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int a = 0; a < dd->e->n_idx && n < cap; a++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s=%lld", a ? "," : "",
                              dd->e->idx[a].name,
                              (long long)dd->e->idx[a].size);
}

/* The --dispatch shape: every size as a list ('...=' takes no list: the
 * tuned size alone there; the others fall to the generic kernel). */
static void dispatch_shape(const entry *en, char *out, size_t cap)
{
    const char *h = strchr(en->p->shape, '#');
    char list[128];
    size_t n = 0;
    list[0] = '\0';
    if (en->p->shape[0] == '.')
        snprintf(list, sizeof list, "%lld", (long long)en->at);
    else
        for (int s = 0; s < en->n_sizes; s++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%lld",
                                  s ? "/" : "", (long long)en->sizes[s]);
    snprintf(out, cap, "%.*s%s%s", (int)(h - en->p->shape), en->p->shape,
             list, h + 1);
}

/* dispatch: the table of every size, its dispatch function at each. */
static void deliver_dispatch(entry *en)
{
    if (!have_kernel(en, PATH_DISPATCH))
        return;
    if (!g_have_bin || !g_have_cc) {
        skip_all(en, PATH_DISPATCH, "no eintune command or no cc");
        return;
    }
    char dir[600], tag[160], why[700], shape[256];
    snprintf(tag, sizeof tag, "%s-dispatch", en->tag);
    snprintf(dir, sizeof dir, "%s/%s", g_dir, tag);
    dispatch_shape(en, shape, sizeof shape);
    int rc = eintune_export(tag, en, shape, "--dispatch", "--name", TABLE,
                            "-o", dir, (char *)NULL);
    if (rc != 0) {
        char err[400];
        tail_of(tag, "err", err, sizeof err);
        say(why, sizeof why, "eintune export --dispatch --shape %s: exit "
            "%d: %s", shape, rc, err);
    }
    if (rc != 0 || !host_build(dir, TABLE, true, tag, why, sizeof why)) {
        for (int s = 0; s < en->n_sizes; s++)
            fail_cell(en, PATH_DISPATCH, en->sizes[s], NAN, "%s", why);
        return;
    }
    char args[MAX_SIZES][256];
    char *argp[MAX_SIZES];
    int slot[MAX_SIZES];
    for (int s = 0; s < en->n_sizes; s++) {
        sizes_by_name(data_get(en->p, en->sizes[s]), args[s],
                      sizeof args[s]);
        argp[s] = args[s];
        slot[s] = s;
    }
    char rtag[200];
    snprintf(rtag, sizeof rtag, "%s-host", tag);
    host_run(en, PATH_DISPATCH, dir, TABLE, rtag, slot, argp, en->n_sizes);
}

/* ---- CUDA through NVRTC ------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (s && n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n > 0 ? n : 0] = '\0';
    fclose(f);
    return s;
}

/* nvrtc: the CUDA export at each size (and the open one for an open
 * entry, counted at the tuned size) compiled to PTX; a source already
 * compiled is not compiled again. */
static void deliver_nvrtc(entry *en)
{
    if (!have_kernel(en, PATH_NVRTC))
        return;
    et_error err = {{0}};
    if (!g_have_bin || !et_cuda_have_nvrtc(&err)) {
        skip_all(en, PATH_NVRTC, g_have_bin ? "no NVRTC" : "no eintune");
        return;
    }
    char *done[MAX_SIZES + 1] = {0};
    int n_done = 0;
    for (int s = -1; s < en->n_sizes; s++) {
        if (s < 0 && !en->open)
            continue;
        int64_t n = s < 0 ? 0 : en->sizes[s];
        int64_t at = s < 0 ? en->at : n;
        char dir[600], tag[160], why[700], src[700];
        snprintf(tag, sizeof tag, "%s-cuda-%lld", en->tag, (long long)n);
        snprintf(dir, sizeof dir, "%s/%s", g_dir, tag);
        if (!export_at(en, n, "cuda", dir, tag, why, sizeof why)) {
            no_kernel(en, PATH_NVRTC, at, "%s", why);
            continue;
        }
        snprintf(src, sizeof src, "%s/" KERNEL ".cu", dir);
        char *text = slurp(src);
        if (!text) {
            fail_cell(en, PATH_NVRTC, at, NAN, "%s: not written", src);
            continue;
        }
        bool seen = false;
        for (int i = 0; i < n_done && !seen; i++)
            seen = strcmp(done[i], text) == 0;
        if (seen) {
            free(text);
            if (en->cells[PATH_NVRTC][size_slot(en, at)].state == CELL_NONE)
                ok_cell(en, PATH_NVRTC, at, 0);
            continue;
        }
        char *ptx = NULL;
        size_t n_ptx = 0;
        et_status st = et_cuda_compile_ptx(text, "compute_90", &ptx, &n_ptx,
                                           &err);
        if (st != ET_OK)
            fail_cell(en, PATH_NVRTC, at, NAN, "nvrtc (%s): %s", src,
                      err.msg);
        else if (en->cells[PATH_NVRTC][size_slot(en, at)].state != CELL_FAIL)
            ok_cell(en, PATH_NVRTC, at, 0);
        free(ptx);
        done[n_done++] = text;
    }
    for (int i = 0; i < n_done; i++)
        free(done[i]);
}

/* ---- the tests: one per path over every entry --------------------------- */

typedef void (*deliver_fn)(entry *en);

static void run_path(dpath pa, deliver_fn fn)
{
    for (int e = 0; e < g_n_entries; e++)
        fn(&g_entries[e]);
    path_verdict(pa);
}

static void test_api(void **state)
{
    (void)state;
    run_path(PATH_API, deliver_api);
}

static void test_api_open(void **state)
{
    (void)state;
    run_path(PATH_API_OPEN, deliver_api_open);
}

static void test_et_run(void **state)
{
    (void)state;
    run_path(PATH_RUN, deliver_run);
}

static void test_cli_run(void **state)
{
    (void)state;
    run_path(PATH_CLI, deliver_cli);
}

static void test_export(void **state)
{
    (void)state;
    run_path(PATH_EXPORT, deliver_export);
}

static void test_export_open(void **state)
{
    (void)state;
    run_path(PATH_EXPORT_OPEN, deliver_export_open);
}

static void test_dispatch(void **state)
{
    (void)state;
    run_path(PATH_DISPATCH, deliver_dispatch);
}

static void test_nvrtc(void **state)
{
    (void)state;
    run_path(PATH_NVRTC, deliver_nvrtc);
}

/* Every problem was tuned, concretely and (where it can be) open, and the
 * tunings cover the sizes 1, 2, a prime and 256. */
static void test_tuned(void **state)
{
    (void)state;
    bool at1 = false, at2 = false, at13 = false, at256 = false;
    int n_bad = 0;
    for (int e = 0; e < g_n_entries; e++) {
        const entry *en = &g_entries[e];
        if (!en->tuned) {
            print_error("not tuned: %s: %s\n", en->name, en->opts);
            n_bad++;
        }
        if (en->open) {
            at1 |= en->at == 1;
            at2 |= en->at == 2;
            at13 |= en->at == 13;
            at256 |= en->at == 256;
        }
    }
    assert_true(at1 && at2 && at13 && at256);
    assert_int_equal(n_bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuned),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_api_open),
        cmocka_unit_test(test_et_run),
        cmocka_unit_test(test_cli_run),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_export_open),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_nvrtc),
    };
    /* its paths load kernels into OpenCL contexts of its own and run
     * exports with OpenCL host programs: on OpenCL whatever the suite's
     * device */
    if (!td_opencl_only("kernels delivered into OpenCL contexts and host "
                        "programs"))
        return 0;
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
