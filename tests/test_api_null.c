/*
 * test_api_null.c - no public function crashes on a NULL pointer.
 *
 * The list of functions is include/eintune.h itself, parsed here when the
 * test runs ($ET_SOURCE_DIR/include/eintune.h, else include/eintune.h from
 * the repository root where the tests run): every declaration, its return
 * type and its parameters, a parameter being a pointer when it has a '*'
 * or its type is one of the header's function pointer typedefs. For each
 * function and each of its pointer parameters the function is called with
 * NULL there and valid values elsewhere, in a child process of its own,
 * and so once more with every argument valid. A child killed by a signal
 * is a crash. A function the header declares that the call table below
 * lacks fails the test by name (as does an entry for a function the header
 * no longer has, or with another number of parameters), so a function
 * added to the header cannot be forgotten here.
 *
 * Beyond not crashing, each child checks the contract of include/eintune.h
 * for what it called: a function returning et_status given NULL where the
 * table does not allow it returns ET_ERR_INPUT with a diag that names the
 * parameter ('out'); a call with a diag fills it with the status it returns
 * and clears it on entry (a diag holding an earlier error's message comes
 * back without it).
 *
 * PoCL starts driver threads at its first call, and fork() after that can
 * deadlock: the parent makes no OpenCL call. It writes the files the calls
 * read, then forks; every object a call needs (a problem, a tuned report,
 * a runner, a kernel loaded into an OpenCL context of the child's own, one
 * in the fake CUDA driver's context) is made in the child. The first
 * children tune the small problem into the test's database, so that later
 * ones are answered from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "measure/cuda/nvrtc.h"
#include "tests/so/fake_cuda.h"
#include "tests/suite_device.h"

#include <CL/cl.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the header, parsed -------------------------------------------------- */

enum { MAX_FUNCS = 400, MAX_PARAMS = 12, MAX_PTR_TYPES = 64 };

typedef struct hparam {
    char name[64];
    int is_ptr;
} hparam;

typedef struct hfunc {
    char name[96];
    int returns_status;
    int n;
    hparam p[MAX_PARAMS];
} hfunc;

static hfunc g_funcs[MAX_FUNCS];
static int g_n_funcs;
static char g_ptr_types[MAX_PTR_TYPES][64]; /* function pointer typedefs */
static int g_n_ptr_types;

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

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    size_t i = 0;
    while (isspace((unsigned char)s[i]))
        i++;
    memmove(s, s + i, n - i + 1);
}

/* The last identifier of s[0..end) into out ("" when none). */
static void last_ident(const char *s, size_t end, char *out, size_t cap)
{
    size_t e = end;
    while (e && !(isalnum((unsigned char)s[e - 1]) || s[e - 1] == '_'))
        e--;
    size_t b = e;
    while (b && (isalnum((unsigned char)s[b - 1]) || s[b - 1] == '_'))
        b--;
    snprintf(out, cap, "%.*s", (int)(e - b), s + b);
}

static int is_ptr_type(const char *param)
{
    /* the type's identifiers: any that names a function pointer typedef */
    for (int t = 0; t < g_n_ptr_types; t++) {
        const char *hit = strstr(param, g_ptr_types[t]);
        size_t n = strlen(g_ptr_types[t]);
        if (hit && (hit == param || !(isalnum((unsigned char)hit[-1]) ||
                                      hit[-1] == '_')) &&
            !(isalnum((unsigned char)hit[n]) || hit[n] == '_'))
            return 1;
    }
    return strchr(param, '*') != NULL;
}

/* One statement at file scope, comments and preprocessor lines gone. */
static void statement(char *s)
{
    trim(s);
    if (!*s)
        return;
    if (!strncmp(s, "typedef", 7)) {
        /* typedef R (*NAME)(...): a pointer type */
        char *star = strstr(s, "(*");
        if (star && !strchr(s, '{') && g_n_ptr_types < MAX_PTR_TYPES) {
            char *close = strchr(star, ')');
            if (close)
                last_ident(s, (size_t)(close - s),
                           g_ptr_types[g_n_ptr_types++], 64);
        }
        return;
    }
    char *open = strchr(s, '(');
    if (!open || strchr(s, '{') || s[strlen(s) - 1] != ')' ||
        g_n_funcs >= MAX_FUNCS)
        return;
    hfunc *f = &g_funcs[g_n_funcs];
    memset(f, 0, sizeof *f);
    last_ident(s, (size_t)(open - s), f->name, sizeof f->name);
    char ret[256];
    snprintf(ret, sizeof ret, "%.*s", (int)(open - s), s);
    ret[strlen(ret) - strlen(f->name)] = '\0';
    trim(ret);
    /* the export mark every declaration starts with is no part of the type */
    if (!strncmp(ret, "ET_API", 6) && isspace((unsigned char)ret[6]))
        memmove(ret, ret + 7, strlen(ret + 7) + 1);
    trim(ret);
    /* and so is the mark of the calls a session replaces */
    if (!strncmp(ret, "ET_DEPRECATED", 13) && isspace((unsigned char)ret[13]))
        memmove(ret, ret + 14, strlen(ret + 14) + 1);
    trim(ret);
    f->returns_status = strcmp(ret, "et_status") == 0;
    /* the parameters: between the first '(' and the last ')' */
    char params[2048];
    snprintf(params, sizeof params, "%.*s",
             (int)(strrchr(s, ')') - open - 1), open + 1);
    trim(params);
    if (strcmp(params, "void") != 0 && params[0]) {
        int depth = 0;
        char *start = params;
        for (char *c = params;; c++) {
            if (*c == '(')
                depth++;
            else if (*c == ')')
                depth--;
            if ((*c == ',' && depth == 0) || !*c) {
                char one[512];
                snprintf(one, sizeof one, "%.*s", (int)(c - start), start);
                trim(one);
                if (f->n < MAX_PARAMS) {
                    last_ident(one, strlen(one), f->p[f->n].name,
                               sizeof f->p[f->n].name);
                    f->p[f->n].is_ptr = is_ptr_type(one);
                    f->n++;
                }
                if (!*c)
                    break;
                start = c + 1;
            }
        }
    }
    g_n_funcs++;
}

/* Reads the header into g_funcs; 0, or -1 with why. */
static int parse_header(const char *path, char *why, size_t cap)
{
    char *text = slurp(path);
    if (!text) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    /* comments out, preprocessor lines (with their continuations) out */
    for (char *c = text; *c; c++) {
        if (c[0] == '/' && c[1] == '*') {
            char *e = strstr(c + 2, "*/");
            char *end = e ? e + 2 : c + strlen(c);
            memset(c, ' ', (size_t)(end - c));
            c = end - 1;
        } else if (c[0] == '/' && c[1] == '/') {
            while (*c && *c != '\n')
                *c++ = ' ';
            if (!*c)
                break;
        } else if (c[0] == '"') {
            for (c++; *c && *c != '"'; c++)
                if (*c == '\\' && c[1])
                    c++;
            if (!*c)
                break;
        }
    }
    int bol = 1;
    for (char *c = text; *c; c++) {
        if (bol) {
            char *q = c;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '#') {
                for (; *q && !(*q == '\n' && q[-1] != '\\'); q++)
                    *q = ' ';
                c = q;
                if (!*c)
                    break;
            }
        }
        bol = *c == '\n';
    }
    /* statements at brace depth 0; extern "C" { ... } is no block */
    size_t n = strlen(text);
    char *st = calloc(n + 1, 1);
    size_t len = 0;
    int depth = 0, in_extern = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '{') {
            st[len] = '\0';
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s", st);
            trim(st);
            if (depth == 0 && !strcmp(st, "extern \"C\"")) {
                in_extern = 1;
                len = 0;
                continue;
            }
            len = strlen(st);
            depth++;
        } else if (c == '}') {
            if (depth == 0 && in_extern) {
                in_extern = 0;
                len = 0;
                continue;
            }
            depth--;
        } else if (c == ';' && depth == 0) {
            st[len] = '\0';
            statement(st);
            len = 0;
            continue;
        }
        st[len++] = c == '\n' || c == '\t' ? ' ' : c;
    }
    free(st);
    free(text);
    if (g_n_funcs == 0) {
        snprintf(why, cap, "no function declarations found in %s", path);
        return -1;
    }
    return 0;
}

static const hfunc *header_func(const char *name)
{
    for (int i = 0; i < g_n_funcs; i++)
        if (!strcmp(g_funcs[i].name, name))
            return &g_funcs[i];
    return NULL;
}

/* ---- what the calls need, made in the child ------------------------------ */

static char g_dir[64];        /* the test's files */
static char g_db[128];        /* the database the first children tune into */
static char g_space[160];     /* a space file */
static char g_campaign[160];  /* a campaign of one small problem */
static char g_npy[160];       /* an array of operand 0 */
static char g_fake[1024];     /* the fake libcuda */

#define EINSUM "ij,jk->ik"
#define SHAPE "i=2,j=3,k=4"

/* A child that cannot make what its call needs: exit status SETUP. */
enum { CHILD_OK = 0, CHILD_CONTRACT = 3, CHILD_SETUP = 4, CHILD_SKIP = 5 };

static void need(int ok, const char *what, const et_diag *d)
{
    if (ok)
        return;
    fprintf(stderr, "  setup: %s failed%s%s\n", what, d ? ": " : "",
            d ? d->msg : "");
    fflush(stderr);
    _exit(CHILD_SETUP);
}

/* The suite's device spec where a call needs one that is not NULL. */
static const char *spec(void)
{
    return td_device() ? td_device() : "opencl:0";
}

static et_problem *prob(void)
{
    static et_problem *p;
    et_diag d;
    if (!p)
        need(et_problem_init(EINSUM, SHAPE, "f32", &p, &d) == ET_OK,
             "et_problem_init", &d);
    return p;
}

static et_problem *prob_open(void)
{
    static et_problem *p;
    et_diag d;
    if (!p)
        need(et_problem_init("xik,kj->xij", "x=*,i=2,k=3,j=4", "f32", &p,
                             &d) == ET_OK,
             "et_problem_init (open)", &d);
    return p;
}

static et_space *space(void)
{
    static et_space *s;
    et_diag d;
    if (!s)
        need(et_space_builtin(&s, &d) == ET_OK, "et_space_builtin", &d);
    return s;
}

static et_tune_options tune_opts(void)
{
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    o.budget = 2;
    o.race = -1;
    o.no_seeding = 1;
    o.model = -1;
    return o;
}

static et_tune_report *treport(void)
{
    static et_tune_report *r;
    et_diag d;
    et_tune_options o = tune_opts();
    if (!r)
        need(et_tune_run_full(prob(), &o, &r, &d) == ET_OK,
             "et_tune_run_full", &d);
    return r;
}

static et_campaign *campaign(void)
{
    static et_campaign *c;
    et_diag d;
    if (!c)
        need(et_campaign_load(g_campaign, &c, &d) == ET_OK,
             "et_campaign_load", &d);
    return c;
}

static et_campaign_options campaign_opts(void)
{
    et_campaign_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    return o;
}

static et_campaign_report *creport(void)
{
    static et_campaign_report *r;
    et_diag d;
    et_campaign_options o = campaign_opts();
    if (!r)
        need(et_campaign_run(campaign(), &o, &r, &d) == ET_OK,
             "et_campaign_run", &d);
    return r;
}

static et_peaks_options peaks_opts(void)
{
    et_peaks_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    return o;
}

static et_peaks_report *preport(void)
{
    static et_peaks_report *r;
    et_diag d;
    et_peaks_options o = peaks_opts();
    if (!r)
        need(et_peaks_report_init(&o, &r, &d) == ET_OK,
             "et_peaks_report_init", &d);
    return r;
}

static et_check_report *ckreport(void)
{
    static et_check_report *r;
    et_diag d;
    if (!r)
        need(et_problem_check(prob(), NULL, 0, &r, &d) == ET_OK,
             "et_problem_check", &d);
    return r;
}

static et_best_options best_opts(void)
{
    et_best_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    return o;
}

static et_best_kernel *bkernel(void)
{
    static et_best_kernel *bk;
    et_diag d;
    et_best_options o = best_opts();
    if (!bk)
        need(et_best_kernel_find(prob(), &o, &bk, &d) == ET_OK,
             "et_best_kernel_find", &d);
    return bk;
}

static et_database *database(void)
{
    static et_database *db;
    et_diag d;
    if (!db)
        need(et_database_open(g_db, &db, &d) == ET_OK, "et_database_open",
             &d);
    return db;
}

static et_run_options run_opts(void)
{
    et_run_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    return o;
}

/* Host arrays of prob()'s operands: out, then the inputs. */
static void *host_out(void)
{
    static et_host_array a;
    if (!a.data)
        need(et_host_array_init(prob(), -1, &a) == ET_OK,
             "et_host_array_init", NULL);
    return a.data;
}

static const void *const *host_in(void)
{
    static et_host_array a[2];
    static const void *in[2];
    for (int k = 0; k < 2; k++)
        if (!a[k].data) {
            need(et_host_array_init(prob(), k, &a[k]) == ET_OK,
                 "et_host_array_init", NULL);
            for (int64_t n = 0; n < et_host_array_elems(&a[k]); n++)
                ((float *)a[k].data)[n] = (float)(n % 5) - 2;
            in[k] = a[k].data;
        }
    return in;
}

/* A runner of prob() past stage: 0 open, 1 built, 2 run, 3 timed. */
static et_runner *runner(int stage)
{
    static et_runner *r;
    static int at = -1;
    et_diag d;
    et_run_options o = run_opts();
    static et_run_options keep;
    keep = o;
    if (!r) {
        need(et_runner_open(prob(), &keep, &r, &d) == ET_OK,
             "et_runner_open", &d);
        at = 0;
    }
    if (stage >= 1 && at < 1) {
        need(et_runner_build(r, &d) == ET_OK, "et_runner_build", &d);
        at = 1;
    }
    if (stage >= 2 && at < 2) {
        need(et_runner_exec(r, host_out(), host_in(), &d) == ET_OK,
             "et_runner_exec", &d);
        at = 2;
    }
    if (stage >= 3 && at < 3) {
        et_run_timing t;
        need(et_runner_time(r, &t, &d) == ET_OK, "et_runner_time", &d);
        at = 3;
    }
    return r;
}

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        need((f = fopen("/dev/null", "w")) != NULL, "/dev/null", NULL);
    return f;
}

/* The child's own OpenCL context, queue and buffers for prob(). */
typedef struct cl_env {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_mem out, in[2];
} cl_env;

static cl_env *cl(void)
{
    static cl_env e;
    static int made;
    if (made)
        return &e;
    if (!td_opencl_only("a kernel loaded into an OpenCL context"))
        _exit(CHILD_SKIP);
    cl_platform_id plat[8];
    cl_uint np = 0;
    cl_int rc;
    need(clGetPlatformIDs(8, plat, &np) == CL_SUCCESS && np > 0,
         "clGetPlatformIDs", NULL);
    for (cl_uint i = 0; i < np && !e.dev; i++)
        if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &e.dev, NULL) !=
            CL_SUCCESS)
            e.dev = NULL;
    need(e.dev != NULL, "an OpenCL device", NULL);
    e.ctx = clCreateContext(NULL, 1, &e.dev, NULL, NULL, &rc);
    need(rc == CL_SUCCESS, "clCreateContext", NULL);
    e.q = clCreateCommandQueue(e.ctx, e.dev, 0, &rc);
    need(rc == CL_SUCCESS, "clCreateCommandQueue", NULL);
    e.out = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE,
                           et_problem_operand_bytes(prob(), -1), NULL, &rc);
    for (int k = 0; k < 2 && rc == CL_SUCCESS; k++)
        e.in[k] = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE,
                                 et_problem_operand_bytes(prob(), k), NULL,
                                 &rc);
    need(rc == CL_SUCCESS, "clCreateBuffer", NULL);
    made = 1;
    return &e;
}

static et_load_options load_opts(void)
{
    et_load_options o;
    memset(&o, 0, sizeof o);
    o.db = g_db;
    o.opts = "";
    return o;
}

static et_loaded_kernel *cl_loaded(void)
{
    static et_loaded_kernel *k;
    et_diag d;
    et_load_options o = load_opts();
    if (!k)
        need(et_cl_kernel_load(prob(), cl()->ctx, cl()->dev, &o, &k, &d) ==
                 ET_OK,
             "et_cl_kernel_load", &d);
    return k;
}

/* The fake driver's context current in this child, and buffers. */
typedef struct cu_env {
    unsigned long long out, in[2];
} cu_env;

static cu_env *cu(void)
{
    static cu_env e;
    static int made;
    if (made)
        return &e;
    et_error err;
    if (!et_cuda_have_nvrtc(&err)) {
        fprintf(stderr, "  skipped: %s\n", err.msg);
        _exit(CHILD_SKIP);
    }
    setenv("ET_LIBCUDA", g_fake, 1);
    void *lib = dlopen(g_fake, RTLD_NOW | RTLD_LOCAL);
    need(lib != NULL, g_fake, NULL);
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
    int (*retain)(void **, int) =
        (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    int (*alloc)(unsigned long long *, size_t) =
        (int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2");
    need(init && retain && set && alloc, "the fake driver's symbols", NULL);
    void *ctx = NULL;
    need(init(0) == 0 && retain(&ctx, 0) == 0 && set(ctx) == 0,
         "the fake driver's context", NULL);
    need(alloc(&e.out, et_problem_operand_bytes(prob(), -1)) == 0 &&
             alloc(&e.in[0], et_problem_operand_bytes(prob(), 0)) == 0 &&
             alloc(&e.in[1], et_problem_operand_bytes(prob(), 1)) == 0,
         "cuMemAlloc", NULL);
    made = 1;
    return &e;
}

static et_load_options cu_load_opts(void)
{
    et_load_options o = load_opts();
    o.no_verify = 1; /* the fake runs nothing */
    return o;
}

static et_loaded_kernel *cu_kernel(void)
{
    static et_loaded_kernel *k;
    et_diag d;
    cu();
    et_load_options o = cu_load_opts();
    if (!k)
        need(et_cu_kernel_load(prob(), 0, &o, &k, &d) == ET_OK,
             "et_cu_kernel_load", &d);
    return k;
}

static int list_row(void *arg, const et_database_row *row)
{
    (void)arg;
    (void)row;
    return 0;
}

/* ---- the call table -------------------------------------------------------- */

/*
 * Each entry calls one function with NULL at parameter nul (-1: none) and
 * valid values elsewhere, d as its diag; it returns the function's status
 * (or 0 for a function that returns none). `nullable` names the parameters
 * include/eintune.h allows to be NULL (where it means a default, "not
 * wanted", or an accessor's neutral answer); every other pointer
 * parameter must be refused.
 */
typedef int (*call_fn)(int nul, et_diag *d);

typedef struct call {
    const char *name;
    int n_params;
    const char *nullable;
    call_fn fn;
} call;

#define A(i, v) (nul == (i) ? NULL : (v))

static int c_status_str(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_status_str(ET_ERR_NOT_FOUND)[0] ? 0 : 1;
}
static int c_dtype_name(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_dtype_name(ET_F32)[0] ? 0 : 1;
}
static int c_dtype_size(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_dtype_size(ET_F64) == 8 ? 0 : 1;
}
static int c_dtype_parse(int nul, et_diag *d)
{
    (void)d;
    et_dtype t;
    int rc = et_dtype_parse(A(0, "f32"), A(1, &t));
    return nul >= 0 ? (rc == -1 ? 0 : 1) : rc;
}
static int c_input_name(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_input_name(ET_INPUT_SPACE)[0] ? 0 : 1;
}
static int c_backend_name(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_backend_name(ET_BACKEND_CUDA)[0] ? 0 : 1;
}
static int c_problem_init(int nul, et_diag *d)
{
    et_problem *p = NULL;
    return et_problem_init(A(0, EINSUM), A(1, SHAPE), A(2, "f32"), A(3, &p),
                           A(4, d));
}
static int c_problem_free(int nul, et_diag *d)
{
    (void)d;
    et_problem_free(A(0, prob()));
    return 0;
}
static int c_problem_einsum(int nul, et_diag *d)
{
    (void)d;
    return et_problem_einsum(A(0, prob())) ? 0 : 1;
}
static int c_problem_ops(int nul, et_diag *d)
{
    (void)d;
    return et_problem_ops(A(0, prob()), ET_F32) >= 0 ? 0 : 1;
}
static int c_problem_bytes(int nul, et_diag *d)
{
    (void)d;
    return et_problem_bytes(A(0, prob())) >= 0 ? 0 : 1;
}
static int c_problem_init_arrays(int nul, et_diag *d)
{
    static const int ndim[2] = {2, 2};
    static const int64_t a[2] = {2, 3}, b[2] = {3, 4};
    static const int64_t *const dims[2] = {a, b};
    static const et_dtype dt[2] = {ET_F32, ET_F32};
    et_problem *p = NULL;
    return et_problem_init_arrays(A(0, EINSUM), 2, A(2, ndim), A(3, dims),
                                  A(4, dt), A(5, &p), A(6, d));
}
static int c_problem_set_batch(int nul, et_diag *d)
{
    et_problem *p = NULL;
    et_diag pd;
    need(et_problem_init("xj,ij->xi", "x=8,i=2,j=2", "f32", &p, &pd) == ET_OK,
         "et_problem_init (batch)", &pd);
    et_status st = et_problem_set_batch(A(0, p), A(1, "u,D; u,E"), A(2, d));
    et_problem_free(p);
    return st;
}
static int c_problem_n_rows(int nul, et_diag *d)
{
    (void)d;
    return et_problem_n_rows(A(0, prob())) >= 0 ? 0 : 1;
}
static int c_problem_n_outputs(int nul, et_diag *d)
{
    (void)d;
    return et_problem_n_outputs(A(0, prob())) >= 0 ? 0 : 1;
}
static int c_problem_row_name(int nul, et_diag *d)
{
    (void)d;
    return et_problem_row_name(A(0, prob()), 0, 0) ? 0 : 1;
}
static int c_problem_n_operands(int nul, et_diag *d)
{
    (void)d;
    return et_problem_n_operands(A(0, prob())) >= 0 ? 0 : 1;
}
static int c_problem_dtype(int nul, et_diag *d)
{
    (void)d;
    return (int)et_problem_dtype(A(0, prob()), -1) >= 0 ? 0 : 1;
}
static int c_problem_elems(int nul, et_diag *d)
{
    (void)d;
    return et_problem_elems(A(0, prob()), 0) >= 0 ? 0 : 1;
}
static int c_problem_operand_bytes(int nul, et_diag *d)
{
    (void)d;
    return et_problem_operand_bytes(A(0, prob()), 1) < ((size_t)1 << 40)
               ? 0
               : 1;
}
static int c_problem_n_indices(int nul, et_diag *d)
{
    (void)d;
    return et_problem_n_indices(A(0, prob())) >= 0 ? 0 : 1;
}
static int c_problem_index_name(int nul, et_diag *d)
{
    (void)d;
    return et_problem_index_name(A(0, prob()), 0) ? 0 : 1;
}
static int c_problem_index_size(int nul, et_diag *d)
{
    (void)d;
    return et_problem_index_size(A(0, prob()), 0) >= 0 ? 0 : 1;
}
static int c_problem_index_open(int nul, et_diag *d)
{
    (void)d;
    return et_problem_index_open(A(0, prob_open()), 0) >= 0 ? 0 : 1;
}
static int c_problem_set_tune_at(int nul, et_diag *d)
{
    return et_problem_set_tune_at(A(0, prob_open()), A(1, "x=8"), A(2, d));
}
static int c_shape_expand(int nul, et_diag *d)
{
    char *out = NULL;
    int n = 0;
    int st = et_shape_expand(A(0, "i=2/4,j=3"), A(1, &out), A(2, &n),
                             A(3, d));
    et_free(out);
    return st;
}
static int c_free(int nul, et_diag *d)
{
    (void)d;
    et_free(A(0, malloc(8)));
    return 0;
}
static int c_codegen(int nul, et_diag *d)
{
    et_kernel_source *k = NULL;
    int st = et_codegen(A(0, prob()), A(1, "UPCAST(k,2)"), ET_BACKEND_OPENCL,
                        A(3, &k), A(4, d));
    et_kernel_source_free(k);
    return st;
}
static int c_kernel_source_free(int nul, et_diag *d)
{
    et_kernel_source *k = NULL;
    if (nul < 0)
        need(et_codegen(prob(), NULL, ET_BACKEND_CUDA, &k, d) == ET_OK,
             "et_codegen", d);
    et_kernel_source_free(A(0, k));
    return 0;
}
static int c_space_load(int nul, et_diag *d)
{
    et_space *s = NULL;
    return et_space_load(A(0, g_space), A(1, &s), A(2, d));
}
static int c_space_load_text(int nul, et_diag *d)
{
    static const char text[] = "name: small\neinsum: any\nactions:\n"
                               "  - {op: UPCAST, axis: any_global, amt: 2}\n";
    et_space *s = NULL;
    return et_space_load_text(A(0, text), sizeof text - 1, A(2, "small"),
                              A(3, &s), A(4, d));
}
static int c_space_builtin(int nul, et_diag *d)
{
    et_space *s = NULL;
    return et_space_builtin(A(0, &s), A(1, d));
}
static int c_space_name(int nul, et_diag *d)
{
    (void)d;
    return et_space_name(A(0, space())) ? 0 : 1;
}
static int c_space_free(int nul, et_diag *d)
{
    (void)d;
    et_space_free(A(0, space()));
    return 0;
}
static int c_outcome_name(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_outcome_name(ET_OUTCOME_CRASH)[0] ? 0 : 1;
}
static int c_outcome_parse(int nul, et_diag *d)
{
    (void)d;
    et_outcome o;
    int rc = et_outcome_parse(A(0, "timeout"), A(1, &o));
    return nul >= 0 ? (rc == -1 ? 0 : 1) : rc;
}
static int c_tune(int nul, et_diag *d)
{
    et_tune_options o = tune_opts();
    et_tune_summary s;
    return et_tune(A(0, prob()), A(1, &o), A(2, &s), A(3, d));
}
static int c_tune_run_full(int nul, et_diag *d)
{
    et_tune_options o = tune_opts();
    et_tune_report *r = NULL;
    return et_tune_run_full(A(0, prob()), A(1, &o), A(2, &r), A(3, d));
}
static int c_tune_report_free(int nul, et_diag *d)
{
    (void)d;
    et_tune_report_free(A(0, treport()));
    return 0;
}
static int c_tune_report_summary(int nul, et_diag *d)
{
    (void)d;
    et_tune_summary s;
    et_tune_report_summary(A(0, treport()), A(1, &s));
    return 0;
}
static int c_tune_report_n_candidates(int nul, et_diag *d)
{
    (void)d;
    return et_tune_report_n_candidates(A(0, treport())) >=
                   0
               ? 0
               : 1;
}
static int c_tune_report_candidate(int nul, et_diag *d)
{
    (void)d;
    et_tune_entry e;
    et_tune_report_candidate(A(0, treport()), 0, A(2, &e));
    return 0;
}
static int c_tune_report_has_roofline(int nul, et_diag *d)
{
    (void)d;
    return et_tune_report_has_roofline(A(0, treport())) >=
                   0
               ? 0
               : 1;
}
static int c_tune_report_rank(int nul, et_diag *d)
{
    (void)d;
    return et_tune_report_rank(A(0, treport())) >= 0 ? 0
                                                                       : 1;
}
static int c_tune_report_n_ranks(int nul, et_diag *d)
{
    (void)d;
    return et_tune_report_n_ranks(A(0, treport())) >= 0
               ? 0
               : 1;
}
static int c_tune_report_print(int nul, et_diag *d)
{
    (void)d;
    et_tune_report_print(A(0, treport()), A(1, devnull()));
    return 0;
}
static int c_tune_report_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_tune_report_json(A(0, treport())));
    return 0;
}
static int c_tune_report_plot(int nul, et_diag *d)
{
    char path[200];
    snprintf(path, sizeof path, "%s/tune.svg", g_dir);
    return et_tune_report_plot(A(0, treport()),
                               A(1, path), A(2, d));
}
static int c_campaign_load(int nul, et_diag *d)
{
    et_campaign *c = NULL;
    return et_campaign_load(A(0, g_campaign), A(1, &c), A(2, d));
}
static int c_campaign_free(int nul, et_diag *d)
{
    (void)d;
    et_campaign_free(A(0, campaign()));
    return 0;
}
static int c_campaign_n_problems(int nul, et_diag *d)
{
    (void)d;
    return et_campaign_n_problems(A(0, campaign())) >= 0
               ? 0
               : 1;
}
static int c_campaign_state_name(int nul, et_diag *d)
{
    (void)nul, (void)d;
    return et_campaign_state_name(ET_CAMPAIGN_TUNED)[0] ? 0 : 1;
}
static int c_campaign_run(int nul, et_diag *d)
{
    et_campaign_options o = campaign_opts();
    et_campaign_report *r = NULL;
    return et_campaign_run(A(0, campaign()), A(1, &o),
                           A(2, &r), A(3, d));
}
static et_session *sess(void);
static int c_session_campaign_run(int nul, et_diag *d)
{
    et_campaign_report *r = NULL;
    int st = et_session_campaign_run(A(0, sess()), A(1, campaign()), NULL,
                                     A(3, &r), A(4, d));
    et_campaign_report_free(r);
    return st;
}
static int c_campaign_report_free(int nul, et_diag *d)
{
    (void)d;
    et_campaign_report_free(A(0, creport()));
    return 0;
}
static int c_campaign_report_rank(int nul, et_diag *d)
{
    (void)d;
    return et_campaign_report_rank(A(0, creport())) >= 0
               ? 0
               : 1;
}
static int c_campaign_report_n(int nul, et_diag *d)
{
    (void)d;
    return et_campaign_report_n(A(0, creport())) >= 0 ? 0
                                                                        : 1;
}
static int c_campaign_report_entry(int nul, et_diag *d)
{
    (void)d;
    et_campaign_entry e;
    et_campaign_report_entry(A(0, creport()), 0, A(2, &e));
    return 0;
}
static int c_campaign_report_print(int nul, et_diag *d)
{
    (void)d;
    et_campaign_report_print(A(0, creport()),
                             A(1, devnull()));
    return 0;
}
static int c_campaign_report_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_campaign_report_json(A(0, creport())));
    return 0;
}
static int c_device_desc_list(int nul, et_diag *d)
{
    et_device_desc *list = NULL;
    int n = 0;
    char *notes = NULL;
    int st = et_device_desc_list(A(0, &list), A(1, &n), A(2, &notes), A(3, d));
    et_free(list);
    et_free(notes);
    return st;
}
static const et_device_desc *descs(int *n)
{
    static et_device_desc *list;
    static int count;
    et_diag d;
    if (!list)
        need(et_device_desc_list(&list, &count, NULL, &d) == ET_OK &&
                 count > 0,
             "et_device_desc_list", &d);
    *n = count;
    return list;
}
static int c_device_desc_print(int nul, et_diag *d)
{
    (void)d;
    int n = 1;
    const et_device_desc *list = nul == 0 ? NULL : descs(&n);
    et_device_desc_print(A(0, list), n, A(2, devnull()));
    return 0;
}
static int c_device_desc_json(int nul, et_diag *d)
{
    (void)d;
    int n = 1;
    const et_device_desc *list = nul == 0 ? NULL : descs(&n);
    et_free(et_device_desc_json(A(0, list), n));
    return 0;
}
static int c_peaks_report_init(int nul, et_diag *d)
{
    et_peaks_options o = peaks_opts();
    et_peaks_report *r = NULL;
    return et_peaks_report_init(A(0, &o), A(1, &r), A(2, d));
}
static int c_peaks_report_free(int nul, et_diag *d)
{
    (void)d;
    et_peaks_report_free(A(0, preport()));
    return 0;
}
static int c_peaks_report_gflops(int nul, et_diag *d)
{
    (void)d;
    return et_peaks_report_gflops(A(0, preport()),
                                  ET_F32) >= 0
               ? 0
               : 1;
}
static int c_peaks_report_bandwidth(int nul, et_diag *d)
{
    (void)d;
    return et_peaks_report_bandwidth(A(0, preport())) >= 0
               ? 0
               : 1;
}
static int c_peaks_report_source(int nul, et_diag *d)
{
    (void)d;
    return et_peaks_report_source(A(0, preport())) ? 0 : 1;
}
static int c_peaks_report_print(int nul, et_diag *d)
{
    (void)d;
    et_peaks_report_print(A(0, preport()),
                          A(1, devnull()));
    return 0;
}
static int c_peaks_report_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_peaks_report_json(A(0, preport())));
    return 0;
}
static int c_problem_check(int nul, et_diag *d)
{
    et_check_report *r = NULL;
    return et_problem_check(A(0, prob()), A(1, spec()), 0, A(3, &r),
                            A(4, d));
}
static int c_check_report_free(int nul, et_diag *d)
{
    (void)d;
    et_check_report_free(A(0, ckreport()));
    return 0;
}
static int c_check_report_has_roofline(int nul, et_diag *d)
{
    (void)d;
    return et_check_report_has_roofline(A(0, ckreport())) >=
                   0
               ? 0
               : 1;
}
static int c_check_report_roofline_s(int nul, et_diag *d)
{
    (void)d;
    return et_check_report_roofline_s(A(0, ckreport())) >=
                   0
               ? 0
               : 1;
}
static int c_check_report_print(int nul, et_diag *d)
{
    (void)d;
    et_check_report_print(A(0, ckreport()),
                          A(1, devnull()));
    return 0;
}
static int c_check_report_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_check_report_json(A(0, ckreport())));
    return 0;
}
static int c_best_lookup(int nul, et_diag *d)
{
    et_best_info bi;
    int found = 0;
    return et_best_lookup(A(0, prob()), A(1, spec()), A(2, g_db),
                          A(3, &bi), A(4, &found), A(5, d));
}
static int c_best_kernel_find(int nul, et_diag *d)
{
    et_best_options o = best_opts();
    et_best_kernel *bk = NULL;
    int st = et_best_kernel_find(A(0, prob()), A(1, &o), A(2, &bk), A(3, d));
    et_best_kernel_free(bk);
    return st;
}
static int c_best_kernel_free(int nul, et_diag *d)
{
    (void)d;
    et_best_kernel_free(A(0, bkernel()));
    return 0;
}
static int c_best_kernel_info(int nul, et_diag *d)
{
    (void)d;
    et_best_info bi;
    et_best_kernel_info(A(0, bkernel()), A(1, &bi));
    return 0;
}
static int c_best_report_print(int nul, et_diag *d)
{
    (void)d;
    int rc = et_best_report_print(A(0, bkernel()),
                                  A(1, devnull()));
    return nul >= 0 ? (rc == -1 ? 0 : 1) : rc;
}
static int c_best_report_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_best_report_json(A(0, bkernel())));
    return 0;
}
static int c_best_kernel_export(int nul, et_diag *d)
{
    char dir[200];
    snprintf(dir, sizeof dir, "%s/export", g_dir);
    et_export_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.force = 1;
    et_export_result r;
    return et_best_kernel_export(A(0, bkernel()), A(1, &o),
                                 A(2, &r), A(3, d));
}
static int c_export_name_validate(int nul, et_diag *d)
{
    return et_export_name_validate(A(0, "my_kernel"), A(1, d));
}
static int c_dispatch_export(int nul, et_diag *d)
{
    char dir[200];
    snprintf(dir, sizeof dir, "%s/dispatch", g_dir);
    et_dispatch_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.db = g_db;
    o.force = 1;
    et_dispatch_result r;
    return et_dispatch_export(A(0, EINSUM), A(1, SHAPE), A(2, "f32"),
                              A(3, &o), A(4, &r), A(5, d));
}
static int c_npy_load(int nul, et_diag *d)
{
    et_host_array a;
    memset(&a, 0, sizeof a);
    int st = et_npy_load(A(0, g_npy), A(1, &a), A(2, d));
    et_host_array_free(&a);
    return st;
}
static int c_npy_save(int nul, et_diag *d)
{
    char path[200];
    snprintf(path, sizeof path, "%s/saved.npy", g_dir);
    static et_host_array a;
    if (!a.data)
        need(et_host_array_init(prob(), 1, &a) == ET_OK, "et_host_array_init",
             NULL);
    return et_npy_save(A(0, path), A(1, &a), A(2, d));
}
static int c_host_array_init(int nul, et_diag *d)
{
    (void)d;
    et_host_array a;
    int st = et_host_array_init(A(0, prob()), 0, A(2, &a));
    if (st == ET_OK)
        et_host_array_free(&a);
    return st;
}
static int c_host_array_elems(int nul, et_diag *d)
{
    (void)d;
    et_host_array a;
    memset(&a, 0, sizeof a);
    a.ndim = 1;
    a.dims[0] = 3;
    return et_host_array_elems(A(0, &a)) >= 0 ? 0 : 1;
}
static int c_host_array_free(int nul, et_diag *d)
{
    (void)d;
    et_host_array a;
    memset(&a, 0, sizeof a);
    a.data = malloc(8);
    et_host_array_free(A(0, &a));
    if (nul == 0)
        free(a.data);
    return 0;
}
static int c_einsum_count_operands(int nul, et_diag *d)
{
    int n = 0;
    return et_einsum_count_operands(A(0, EINSUM), A(1, &n), A(2, d));
}
static int c_opts_validate(int nul, et_diag *d)
{
    return et_opts_validate(A(0, "LOCAL(i,2) UPCAST(k,2)"), A(1, d));
}
static int c_runner_open(int nul, et_diag *d)
{
    static et_run_options o;
    o = run_opts();
    et_runner *r = NULL;
    return et_runner_open(A(0, prob()), A(1, &o), A(2, &r), A(3, d));
}
static et_runner *runner_best(void)
{
    static et_runner *r;
    static et_run_options o;
    et_diag e;
    o = run_opts();
    o.best = 1;
    if (!r)
        need(et_runner_open(prob(), &o, &r, &e) == ET_OK, "et_runner_open",
             &e);
    return r;
}
static int c_runner_find_best(int nul, et_diag *d)
{
    et_best_info bi;
    int found = 0;
    return et_runner_find_best(A(0, runner_best()),
                               A(1, &bi), A(2, &found), A(3, d));
}
static int c_runner_build(int nul, et_diag *d)
{
    return et_runner_build(A(0, runner(0)), A(1, d));
}
static int c_runner_exec(int nul, et_diag *d)
{
    return et_runner_exec(A(0, runner(1)), A(1, host_out()),
                          A(2, host_in()), A(3, d));
}
static int c_runner_check_output(int nul, et_diag *d)
{
    et_run_verification v;
    return et_runner_check_output(A(0, runner(2)),
                                  A(1, host_in()), A(2, host_out()),
                                  A(3, &v), A(4, d));
}
static int c_runner_verify(int nul, et_diag *d)
{
    et_run_verification v;
    return et_runner_verify(A(0, runner(1)), A(1, &v),
                            A(2, d));
}
static int c_runner_time(int nul, et_diag *d)
{
    et_run_timing t;
    return et_runner_time(A(0, runner(2)), A(1, &t),
                          A(2, d));
}
static int c_runner_roofline(int nul, et_diag *d)
{
    char plot[200];
    snprintf(plot, sizeof plot, "%s/run.svg", g_dir);
    int drawn = 0;
    return et_runner_roofline(A(0, runner(3)),
                              A(1, devnull()), A(2, plot), A(3, &drawn),
                              A(4, d));
}
static int c_runner_info(int nul, et_diag *d)
{
    (void)d;
    et_run_info info;
    et_runner_info(A(0, runner(0)), A(1, &info));
    return 0;
}
static int c_runner_json(int nul, et_diag *d)
{
    (void)d;
    et_free(et_runner_json(A(0, runner(2)),
                           A(1, "out.npy")));
    return 0;
}
static int c_runner_free(int nul, et_diag *d)
{
    (void)d;
    et_runner_free(A(0, runner(0)));
    return 0;
}
static int c_run(int nul, et_diag *d)
{
    static et_run_options o;
    o = run_opts();
    o.best = 1;
    et_run_result res;
    return et_run(A(0, prob()), A(1, &o), A(2, host_out()), A(3, host_in()),
                  A(4, &res), A(5, d));
}
/* One session on the OpenCL device over g_db, opened once per child. */
static et_session *sess(void)
{
    static et_session *s;
    et_session_options o = {ET_SIZED(et_session_options), .db = g_db};
    et_diag e;
    if (!s)
        need(et_session_open(&o, &s, &e) == ET_OK, "et_session_open", &e);
    return s;
}
static int c_session_open(int nul, et_diag *d)
{
    et_session_options o = {ET_SIZED(et_session_options), .db = g_db};
    et_session *s = NULL;
    int st = et_session_open(A(0, &o), A(1, &s), A(2, d));
    et_session_close(s);
    return st;
}
static int c_session_close(int nul, et_diag *d)
{
    (void)d;
    if (nul == 0)
        et_session_close(NULL);
    return 0;
}
static int c_session_device_name(int nul, et_diag *d)
{
    (void)d;
    return et_session_device_name(A(0, sess()))[0] ? 0 : 1;
}
static int c_session_db_path(int nul, et_diag *d)
{
    (void)d;
    return et_session_db_path(A(0, sess()))[0] ? 0 : 1;
}
static int c_session_tune(int nul, et_diag *d)
{
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.budget = 1;
    o.race = -1;
    o.no_seeding = 1;
    et_tune_report *r = NULL;
    int st = et_session_tune(A(0, sess()), A(1, prob()), A(2, &o), A(3, &r),
                             A(4, d));
    et_tune_report_free(r);
    return st;
}
static int c_session_best_lookup(int nul, et_diag *d)
{
    et_best_info bi;
    int found = 0;
    return et_session_best_lookup(A(0, sess()), A(1, prob()), A(2, &bi),
                                  A(3, &found), A(4, d));
}
static int c_session_best_kernel_find(int nul, et_diag *d)
{
    et_best_kernel *bk = NULL;
    int st = et_session_best_kernel_find(A(0, sess()), A(1, prob()), NULL,
                                         A(3, &bk), A(4, d));
    et_best_kernel_free(bk);
    return st;
}
static int c_session_runner_open(int nul, et_diag *d)
{
    et_runner *r = NULL;
    int st = et_session_runner_open(A(0, sess()), A(1, prob()), NULL,
                                    A(3, &r), A(4, d));
    et_runner_free(r);
    return st;
}
static int c_session_run(int nul, et_diag *d)
{
    et_run_options o;
    memset(&o, 0, sizeof o);
    o.best = 1;
    et_run_result res;
    return et_session_run(A(0, sess()), A(1, prob()), A(2, &o),
                          A(3, host_out()), A(4, host_in()), A(5, &res),
                          A(6, d));
}
static int c_session_cl_kernel_load(int nul, et_diag *d)
{
    et_load_options o = load_opts();
    et_loaded_kernel *k = NULL;
    int st = et_session_cl_kernel_load(A(0, sess()), A(1, prob()),
                                       A(2, cl()->ctx), A(3, cl()->dev),
                                       A(4, &o), A(5, &k), A(6, d));
    et_loaded_kernel_free(k);
    return st;
}
static int c_session_cu_kernel_load(int nul, et_diag *d)
{
    cu();
    et_load_options o = cu_load_opts();
    et_loaded_kernel *k = NULL;
    int st = et_session_cu_kernel_load(A(0, sess()), A(1, prob()), 0,
                                       A(3, &o), A(4, &k), A(5, d));
    et_loaded_kernel_free(k);
    return st;
}
static int c_cl_kernel_load(int nul, et_diag *d)
{
    et_load_options o = load_opts();
    et_loaded_kernel *k = NULL;
    int st = et_cl_kernel_load(A(0, prob()), A(1, cl()->ctx), A(2, cl()->dev),
                               A(3, &o), A(4, &k), A(5, d));
    et_loaded_kernel_free(k);
    return st;
}
static int c_cl_kernel_launch(int nul, et_diag *d)
{
    cl_env *e = cl();
    int64_t sizes[3] = {2, 4, 3};
    cl_event ev = NULL;
    int st = et_cl_kernel_launch(A(0, cl_loaded()),
                                 A(1, e->q), A(2, e->out), A(3, e->in), 2,
                                 A(5, sizes), A(6, &ev), A(7, d));
    if (ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clFinish(e->q);
    return st;
}
static int c_cu_kernel_load(int nul, et_diag *d)
{
    cu();
    et_load_options o = cu_load_opts();
    et_loaded_kernel *k = NULL;
    int st = et_cu_kernel_load(A(0, prob()), 0, A(2, &o), A(3, &k), A(4, d));
    et_loaded_kernel_free(k);
    return st;
}
static int c_cu_kernel_launch(int nul, et_diag *d)
{
    cu_env *e = cu();
    int64_t sizes[3] = {2, 4, 3};
    return et_cu_kernel_launch(A(0, cu_kernel()), NULL,
                               e->out, A(3, e->in), 2, A(5, sizes), A(6, d));
}
static int c_cl_kernel_launch_args(int nul, et_diag *d)
{
    cl_env *e = cl();
    int64_t sizes[3] = {2, 4, 3};
    cl_mem args[3] = {e->out, e->in[0], e->in[1]};
    cl_event ev = NULL;
    int st = et_cl_kernel_launch_args(A(0, cl_loaded()), A(1, e->q),
                                      A(2, args), 3, A(4, sizes), A(5, &ev),
                                      A(6, d));
    if (ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clFinish(e->q);
    return st;
}
static int c_cu_kernel_launch_args(int nul, et_diag *d)
{
    cu_env *e = cu();
    int64_t sizes[3] = {2, 4, 3};
    unsigned long long args[3] = {e->out, e->in[0], e->in[1]};
    return et_cu_kernel_launch_args(A(0, cu_kernel()), NULL, A(2, args), 3,
                                    A(4, sizes), A(5, d));
}
static int c_loaded_kernel_n_args(int nul, et_diag *d)
{
    (void)d;
    return et_loaded_kernel_n_args(A(0, cl_loaded())) >= 0 ? 0 : 1;
}
static int c_loaded_kernel_arg(int nul, et_diag *d)
{
    (void)d;
    int op = 0, row = 0;
    return et_loaded_kernel_arg(A(0, cl_loaded()), 0, A(2, &op), A(3, &row))
               >= -1 ? 0 : 1;
}
static int c_loaded_kernel_opts(int nul, et_diag *d)
{
    (void)d;
    return et_loaded_kernel_opts(A(0, cl_loaded())) ? 0 : 1;
}
static int c_loaded_kernel_name(int nul, et_diag *d)
{
    (void)d;
    return et_loaded_kernel_name(A(0, cl_loaded())) ? 0 : 1;
}
static int c_loaded_kernel_zero_bytes(int nul, et_diag *d)
{
    (void)d;
    return et_loaded_kernel_zero_bytes(A(0, cl_loaded())) <
                   ((size_t)1 << 40)
               ? 0
               : 1;
}
static int c_loaded_kernel_free(int nul, et_diag *d)
{
    (void)d;
    et_loaded_kernel_free(A(0, cl_loaded()));
    return 0;
}
static int c_database_open(int nul, et_diag *d)
{
    et_database *db = NULL;
    int st = et_database_open(A(0, g_db), A(1, &db), A(2, d));
    et_database_close(db);
    return st;
}
static int c_database_close(int nul, et_diag *d)
{
    (void)d;
    et_database_close(A(0, database()));
    return 0;
}
static int c_database_path(int nul, et_diag *d)
{
    (void)d;
    return et_database_path(A(0, database())) ? 0 : 1;
}
static int c_database_stats_get(int nul, et_diag *d)
{
    et_database_stats s;
    return et_database_stats_get(A(0, database()),
                                 A(1, &s), A(2, d));
}
static int c_database_list(int nul, et_diag *d)
{
    et_database_filter f;
    memset(&f, 0, sizeof f);
    f.limit = 3;
    return et_database_list(A(0, database()), A(1, &f),
                            A(2, list_row), A(3, &f), A(4, d));
}
static int c_database_prune(int nul, et_diag *d)
{
    et_database_prune_options o;
    memset(&o, 0, sizeof o);
    o.failed = 1;
    o.dry_run = 1;
    int64_t n = 0;
    return et_database_prune(A(0, database()), A(1, &o),
                             A(2, &n), A(3, d));
}
static int c_database_merge(int nul, et_diag *d)
{
    /* g_db merged into a database of this child's own */
    char path[200];
    snprintf(path, sizeof path, "%s/merge_%d.db", g_dir, (int)getpid());
    et_database *db = NULL;
    et_diag e;
    if (nul != 0)
        need(et_database_open(path, &db, &e) == ET_OK, "et_database_open",
             &e);
    et_database_merge_stats st;
    int rc = et_database_merge(A(0, db), A(1, g_db), A(2, &st), A(3, d));
    et_database_close(db);
    unlink(path);
    return rc;
}

static const call g_calls[] = {
    {"et_status_str", 1, "", c_status_str},
    {"et_dtype_name", 1, "", c_dtype_name},
    {"et_dtype_size", 1, "", c_dtype_size},
    {"et_dtype_parse", 2, "", c_dtype_parse},
    {"et_input_name", 1, "", c_input_name},
    {"et_backend_name", 1, "", c_backend_name},
    {"et_problem_init", 5, "dtypes diag", c_problem_init},
    {"et_problem_free", 1, "p", c_problem_free},
    {"et_problem_einsum", 1, "p", c_problem_einsum},
    {"et_problem_ops", 2, "p", c_problem_ops},
    {"et_problem_bytes", 1, "p", c_problem_bytes},
    {"et_problem_init_arrays", 7, "dtypes diag", c_problem_init_arrays},
    {"et_problem_n_operands", 1, "p", c_problem_n_operands},
    {"et_problem_dtype", 2, "p", c_problem_dtype},
    {"et_problem_elems", 2, "p", c_problem_elems},
    {"et_problem_operand_bytes", 2, "p", c_problem_operand_bytes},
    {"et_problem_n_indices", 1, "p", c_problem_n_indices},
    {"et_problem_index_name", 2, "p", c_problem_index_name},
    {"et_problem_index_size", 2, "p", c_problem_index_size},
    {"et_problem_index_open", 2, "p", c_problem_index_open},
    {"et_problem_set_tune_at", 3, "diag", c_problem_set_tune_at},
    {"et_problem_set_batch", 3, "diag", c_problem_set_batch},
    {"et_problem_n_rows", 1, "p", c_problem_n_rows},
    {"et_problem_n_outputs", 1, "p", c_problem_n_outputs},
    {"et_problem_row_name", 3, "p", c_problem_row_name},
    {"et_shape_expand", 4, "diag", c_shape_expand},
    {"et_free", 1, "ptr", c_free},
    {"et_codegen", 5, "opts diag", c_codegen},
    {"et_kernel_source_free", 1, "k", c_kernel_source_free},
    {"et_space_load", 3, "diag", c_space_load},
    {"et_space_load_text", 5, "name diag", c_space_load_text},
    {"et_space_builtin", 2, "diag", c_space_builtin},
    {"et_space_name", 1, "s", c_space_name},
    {"et_space_free", 1, "s", c_space_free},
    {"et_outcome_name", 1, "", c_outcome_name},
    {"et_outcome_parse", 2, "", c_outcome_parse},
    {"et_tune", 4, "o diag", c_tune},
    {"et_tune_run_full", 4, "o diag", c_tune_run_full},
    {"et_tune_report_free", 1, "r", c_tune_report_free},
    {"et_tune_report_summary", 2, "r out", c_tune_report_summary},
    {"et_tune_report_n_candidates", 1, "r", c_tune_report_n_candidates},
    {"et_tune_report_candidate", 3, "r out", c_tune_report_candidate},
    {"et_tune_report_has_roofline", 1, "r", c_tune_report_has_roofline},
    {"et_tune_report_rank", 1, "r", c_tune_report_rank},
    {"et_tune_report_n_ranks", 1, "r", c_tune_report_n_ranks},
    {"et_tune_report_print", 2, "r f", c_tune_report_print},
    {"et_tune_report_json", 1, "r", c_tune_report_json},
    {"et_tune_report_plot", 3, "diag", c_tune_report_plot},
    {"et_campaign_load", 3, "diag", c_campaign_load},
    {"et_campaign_free", 1, "c", c_campaign_free},
    {"et_campaign_n_problems", 1, "c", c_campaign_n_problems},
    {"et_campaign_state_name", 1, "", c_campaign_state_name},
    {"et_campaign_run", 4, "o diag", c_campaign_run},
    {"et_session_campaign_run", 5, "o diag", c_session_campaign_run},
    {"et_campaign_report_free", 1, "r", c_campaign_report_free},
    {"et_campaign_report_rank", 1, "r", c_campaign_report_rank},
    {"et_campaign_report_n", 1, "r", c_campaign_report_n},
    {"et_campaign_report_entry", 3, "r out", c_campaign_report_entry},
    {"et_campaign_report_print", 2, "r f", c_campaign_report_print},
    {"et_campaign_report_json", 1, "r", c_campaign_report_json},
    {"et_device_desc_list", 4, "notes diag", c_device_desc_list},
    {"et_device_desc_print", 3, "d f", c_device_desc_print},
    {"et_device_desc_json", 2, "d", c_device_desc_json},
    {"et_peaks_report_init", 3, "o diag", c_peaks_report_init},
    {"et_peaks_report_free", 1, "r", c_peaks_report_free},
    {"et_peaks_report_gflops", 2, "r", c_peaks_report_gflops},
    {"et_peaks_report_bandwidth", 1, "r", c_peaks_report_bandwidth},
    {"et_peaks_report_source", 1, "r", c_peaks_report_source},
    {"et_peaks_report_print", 2, "r f", c_peaks_report_print},
    {"et_peaks_report_json", 1, "r", c_peaks_report_json},
    {"et_problem_check", 5, "device diag", c_problem_check},
    {"et_check_report_free", 1, "r", c_check_report_free},
    {"et_check_report_has_roofline", 1, "r", c_check_report_has_roofline},
    {"et_check_report_roofline_s", 1, "r", c_check_report_roofline_s},
    {"et_check_report_print", 2, "r f", c_check_report_print},
    {"et_check_report_json", 1, "r", c_check_report_json},
    {"et_best_lookup", 6, "device db found diag", c_best_lookup},
    {"et_best_kernel_find", 4, "o diag", c_best_kernel_find},
    {"et_best_kernel_free", 1, "bk", c_best_kernel_free},
    {"et_best_kernel_info", 2, "bk out", c_best_kernel_info},
    {"et_best_report_print", 2, "bk f", c_best_report_print},
    {"et_best_report_json", 1, "bk", c_best_report_json},
    {"et_best_kernel_export", 4, "out diag", c_best_kernel_export},
    {"et_export_name_validate", 2, "diag", c_export_name_validate},
    {"et_dispatch_export", 6, "dtypes out diag", c_dispatch_export},
    {"et_npy_load", 3, "diag", c_npy_load},
    {"et_npy_save", 3, "diag", c_npy_save},
    {"et_host_array_init", 3, "", c_host_array_init},
    {"et_host_array_elems", 1, "a", c_host_array_elems},
    {"et_host_array_free", 1, "a", c_host_array_free},
    {"et_einsum_count_operands", 3, "diag", c_einsum_count_operands},
    {"et_opts_validate", 2, "opts diag", c_opts_validate},
    {"et_runner_open", 4, "o diag", c_runner_open},
    {"et_runner_find_best", 4, "info found diag", c_runner_find_best},
    {"et_runner_build", 2, "diag", c_runner_build},
    {"et_runner_exec", 4, "diag", c_runner_exec},
    {"et_runner_check_output", 5, "diag", c_runner_check_output},
    {"et_runner_verify", 3, "diag", c_runner_verify},
    {"et_runner_time", 3, "diag", c_runner_time},
    {"et_runner_roofline", 5, "table plot drawn diag", c_runner_roofline},
    {"et_runner_info", 2, "r out", c_runner_info},
    {"et_runner_json", 2, "r output", c_runner_json},
    {"et_runner_free", 1, "r", c_runner_free},
    {"et_run", 6, "o res diag", c_run},
    {"et_cl_kernel_load", 6, "o diag", c_cl_kernel_load},
    {"et_session_open", 3, "o diag", c_session_open},
    {"et_session_close", 1, "s", c_session_close},
    {"et_session_device_name", 1, "s", c_session_device_name},
    {"et_session_db_path", 1, "s", c_session_db_path},
    {"et_session_tune", 5, "o diag", c_session_tune},
    {"et_session_best_lookup", 5, "found diag", c_session_best_lookup},
    {"et_session_best_kernel_find", 5, "o diag",
     c_session_best_kernel_find},
    {"et_session_runner_open", 5, "o diag", c_session_runner_open},
    {"et_session_run", 7, "o res diag", c_session_run},
    {"et_session_cl_kernel_load", 7, "o diag", c_session_cl_kernel_load},
    {"et_session_cu_kernel_load", 6, "o diag", c_session_cu_kernel_load},
    {"et_cl_kernel_launch", 8, "sizes event diag", c_cl_kernel_launch},
    {"et_cu_kernel_load", 5, "o diag", c_cu_kernel_load},
    {"et_cu_kernel_launch", 7, "stream sizes diag", c_cu_kernel_launch},
    {"et_cl_kernel_launch_args", 7, "sizes event diag",
     c_cl_kernel_launch_args},
    {"et_cu_kernel_launch_args", 6, "stream sizes diag",
     c_cu_kernel_launch_args},
    {"et_loaded_kernel_n_args", 1, "k", c_loaded_kernel_n_args},
    {"et_loaded_kernel_arg", 4, "k operand row", c_loaded_kernel_arg},
    {"et_loaded_kernel_opts", 1, "k", c_loaded_kernel_opts},
    {"et_loaded_kernel_name", 1, "k", c_loaded_kernel_name},
    {"et_loaded_kernel_zero_bytes", 1, "k", c_loaded_kernel_zero_bytes},
    {"et_loaded_kernel_free", 1, "k", c_loaded_kernel_free},
    {"et_database_open", 3, "path diag", c_database_open},
    {"et_database_close", 1, "db", c_database_close},
    {"et_database_path", 1, "db", c_database_path},
    {"et_database_stats_get", 3, "diag", c_database_stats_get},
    {"et_database_list", 5, "f arg diag", c_database_list},
    {"et_database_prune", 4, "deleted diag", c_database_prune},
    {"et_database_merge", 4, "st diag", c_database_merge},
};

static const call *table_call(const char *name)
{
    for (size_t i = 0; i < sizeof g_calls / sizeof g_calls[0]; i++)
        if (!strcmp(g_calls[i].name, name))
            return &g_calls[i];
    return NULL;
}

/* Is parameter name in the space-separated list? */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = list; (c = strstr(c, name)) != NULL; c += n)
        if ((c == list || c[-1] == ' ') && (c[n] == ' ' || !c[n]))
            return 1;
    return 0;
}

/* ---- running the calls ---------------------------------------------------- */

static const char stale[] = "stale message of an earlier call";

/* In the child: calls c with NULL at parameter nul of f and checks the
 * contract; never returns. */
static void child(const hfunc *f, const call *c, int nul)
{
    /* cmocka catches these to fail the test in progress and go on with the
     * next one: here they are to kill the child, a crash the parent sees */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
                               SIGSYS, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    alarm(120);
    et_diag d;
    memset(&d, 0, sizeof d);
    snprintf(d.msg, sizeof d.msg, "%s", stale);
    d.status = ET_ERR_IO;
    d.input = ET_INPUT_FILE;
    d.pos = 7;
    int diag_at = -1;
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->p[i].name, "diag"))
            diag_at = i;
    int rc = c->fn(nul, &d);
    int bad = 0;
    const char *pname = nul >= 0 ? f->p[nul].name : "";
    int refused = nul >= 0 && !listed(c->nullable, pname);
    if (refused && f->returns_status && rc != ET_ERR_INPUT) {
        fprintf(stderr, "  %s(%s = NULL) returned %s, not bad input\n",
                f->name, pname, et_status_str((et_status)rc));
        bad = 1;
    }
    if (refused && f->returns_status && diag_at >= 0) {
        char quoted[80];
        snprintf(quoted, sizeof quoted, "'%s'", pname);
        if (!strstr(d.msg, quoted) && !strstr(d.msg, pname)) {
            fprintf(stderr, "  %s(%s = NULL): the message does not name "
                            "the argument: %s\n",
                    f->name, pname, d.msg);
            bad = 1;
        }
    }
    if (f->returns_status && diag_at >= 0 && nul != diag_at) {
        if ((int)d.status != rc) {
            fprintf(stderr, "  %s (NULL: %s): returned %s, diag says %s\n",
                    f->name, nul >= 0 ? pname : "none",
                    et_status_str((et_status)rc), et_status_str(d.status));
            bad = 1;
        }
        if (strstr(d.msg, stale)) {
            fprintf(stderr, "  %s (NULL: %s): returned %s with an earlier "
                            "call's message left in the diag\n",
                    f->name, nul >= 0 ? pname : "none",
                    et_status_str((et_status)rc));
            bad = 1;
        }
        if (rc == ET_OK && (d.msg[0] || d.input != ET_INPUT_NONE)) {
            fprintf(stderr, "  %s (NULL: %s): success with a message or an "
                            "input left: '%s'\n",
                    f->name, nul >= 0 ? pname : "none", d.msg);
            bad = 1;
        }
    }
    if (getenv("ET_TEST_VERBOSE"))
        fprintf(stderr, "  %s(%s%s): %d%s%s\n", f->name,
                nul >= 0 ? pname : "all valid", nul >= 0 ? " = NULL" : "",
                rc, diag_at >= 0 && d.msg[0] ? ": " : "",
                diag_at >= 0 ? d.msg : "");
    fflush(stderr);
    _exit(bad ? CHILD_CONTRACT : CHILD_OK);
}

typedef struct tally {
    int runs, crashes, contract, setup, skipped, hangs;
} tally;

/* Forks a child for f with NULL at nul (-1: none) and waits for it. */
static void run_one(const hfunc *f, const call *c, int nul, tally *t)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child(f, c, nul);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    t->runs++;
    const char *what = nul >= 0 ? f->p[nul].name : NULL;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) {
            t->hangs++;
            print_message("HANG: %s(%s%s) ran past 120 s\n", f->name,
                          what ? what : "all valid",
                          what ? " = NULL" : "");
        } else {
            t->crashes++;
            print_message("CRASH: %s(%s%s): signal %d (%s)\n", f->name,
                          what ? what : "all valid", what ? " = NULL" : "",
                          sig, strsignal(sig));
        }
        return;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == CHILD_CONTRACT) {
        t->contract++;
        print_message("CONTRACT: %s(%s%s), above\n", f->name,
                      what ? what : "all valid", what ? " = NULL" : "");
    } else if (code == CHILD_SETUP) {
        t->setup++;
        print_message("SETUP: %s(%s%s) could not be called, above\n",
                      f->name, what ? what : "all valid",
                      what ? " = NULL" : "");
    } else if (code == CHILD_SKIP) {
        t->skipped++;
    } else if (code != CHILD_OK) {
        t->contract++;
        print_message("EXIT %d: %s(%s%s)\n", code, f->name,
                      what ? what : "all valid", what ? " = NULL" : "");
    }
}

/* ---- the tests ------------------------------------------------------------- */

static char g_header[1100];

static int group_setup(void **state)
{
    (void)state;
    const char *src = getenv("ET_SOURCE_DIR");
    snprintf(g_header, sizeof g_header, "%s/include/eintune.h",
             src && *src ? src : ".");
    char why[1200];
    if (parse_header(g_header, why, sizeof why) != 0) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/et_apinull_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    char path[300];
    /* nothing measured, nothing cached outside g_dir */
    snprintf(path, sizeof path, "%s/xdg", g_dir);
    setenv("XDG_CACHE_HOME", path, 1);
    snprintf(path, sizeof path, "%s/peaks.json", g_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\"gflops\": {\"f32\": 100, \"f64\": 50, \"f16\": 100}, "
          "\"bandwidth_gbs\": 20}\n",
          f);
    fclose(f);
    setenv("ET_PEAKS_FILE", path, 1);
    const char *bd = getenv("ET_BUILD_DIR");
    if (!bd)
        bd = "build";
    if (!getenv("ET_WORKER")) {
        snprintf(path, sizeof path, "%s/eintune-worker", bd);
        setenv("ET_WORKER", path, 1);
    }
    if (!getenv("POCL_CACHE_DIR")) {
        snprintf(path, sizeof path, "%s/pocl", g_dir);
        setenv("POCL_CACHE_DIR", path, 1);
    }
    snprintf(g_fake, sizeof g_fake, "%s/tests/fake_cuda.so", bd);
    snprintf(g_space, sizeof g_space, "%s/space.yaml", g_dir);
    f = fopen(g_space, "w");
    if (!f)
        return -1;
    fputs("name: small\neinsum: any\nactions:\n"
          "  - {op: UPCAST, axis: any_global, amt: 2}\n",
          f);
    fclose(f);
    snprintf(g_campaign, sizeof g_campaign, "%s/campaign.yaml", g_dir);
    f = fopen(g_campaign, "w");
    if (!f)
        return -1;
    fprintf(f, "- einsum: \"%s\"\n  shape: %s\n  dtype: f32\n  budget: 2\n"
               "  race: 0\n",
            EINSUM, SHAPE);
    fclose(f);
    /* an array of operand 0 (no driver involved) */
    et_problem *p = NULL;
    et_host_array a;
    et_diag d;
    snprintf(g_npy, sizeof g_npy, "%s/a.npy", g_dir);
    if (et_problem_init(EINSUM, SHAPE, "f32", &p, &d) != ET_OK ||
        et_host_array_init(p, 0, &a) != ET_OK ||
        et_npy_save(g_npy, &a, &d) != ET_OK)
        return -1;
    et_host_array_free(&a);
    et_problem_free(p);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The header parsed as it should be: a few declarations checked. */
static void test_header_parsed(void **state)
{
    (void)state;
    assert_true(g_n_funcs >= 100);
    const hfunc *f = header_func("et_cl_kernel_launch");
    assert_non_null(f);
    assert_true(f->returns_status);
    assert_int_equal(f->n, 8);
    assert_string_equal(f->p[0].name, "k");
    assert_string_equal(f->p[3].name, "in");
    assert_true(f->p[3].is_ptr);
    assert_false(f->p[4].is_ptr); /* int n_inputs */
    f = header_func("et_database_list");
    assert_non_null(f);
    assert_string_equal(f->p[2].name, "fn");
    assert_true(f->p[2].is_ptr); /* et_database_row_fn: a typedef */
    f = header_func("et_cu_kernel_launch");
    assert_non_null(f);
    assert_false(f->p[2].is_ptr); /* out: a CUdeviceptr value */
    f = header_func("et_problem_free");
    assert_non_null(f);
    assert_false(f->returns_status);
    assert_null(header_func("et_diag")); /* types are no functions */
}

/* Every function the header declares has its entry, as declared. */
static void test_table_covers_header(void **state)
{
    (void)state;
    int missing = 0;
    for (int i = 0; i < g_n_funcs; i++) {
        const call *c = table_call(g_funcs[i].name);
        if (!c) {
            print_message("not in the call table of %s: %s\n", __FILE__,
                          g_funcs[i].name);
            missing++;
        } else if (c->n_params != g_funcs[i].n) {
            print_message("%s: the header declares %d parameters, the "
                          "table has %d\n",
                          g_funcs[i].name, g_funcs[i].n, c->n_params);
            missing++;
        } else {
            /* the nullable ones are parameters it has */
            char list[256];
            snprintf(list, sizeof list, "%s", c->nullable);
            for (char *w = strtok(list, " "); w; w = strtok(NULL, " ")) {
                int found = 0;
                for (int k = 0; k < g_funcs[i].n; k++)
                    found |= !strcmp(g_funcs[i].p[k].name, w);
                if (!found) {
                    print_message("%s: no parameter '%s' in the header\n",
                                  g_funcs[i].name, w);
                    missing++;
                }
            }
        }
    }
    for (size_t i = 0; i < sizeof g_calls / sizeof g_calls[0]; i++)
        if (!header_func(g_calls[i].name)) {
            print_message("in the call table but not in the header: %s\n",
                          g_calls[i].name);
            missing++;
        }
    assert_int_equal(missing, 0);
}

/* Every pointer parameter of every function NULL in turn (and once none):
 * no crash, and the contract of the header's comments. */
static void test_null_arguments(void **state)
{
    (void)state;
    tally t;
    memset(&t, 0, sizeof t);
    int pointers = 0;
    /* the functions that fill the database first, so that the later
     * children are answered from it */
    static const char *const first[] = {"et_tune_run_full", "et_tune"};
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
        run_one(header_func(first[i]), table_call(first[i]), -1, &t);
    for (int i = 0; i < g_n_funcs; i++) {
        const hfunc *f = &g_funcs[i];
        const call *c = table_call(f->name);
        if (!c || c->n_params != f->n)
            continue; /* test_table_covers_header says so */
        run_one(f, c, -1, &t);
        for (int k = 0; k < f->n; k++)
            if (f->p[k].is_ptr) {
                pointers++;
                run_one(f, c, k, &t);
            }
    }
    print_message("%d functions, %d pointer parameters: %d calls, %d "
                  "crashes, %d contract failures, %d hangs, %d not set up, "
                  "%d skipped\n",
                  g_n_funcs, pointers, t.runs, t.crashes, t.contract,
                  t.hangs, t.setup, t.skipped);
    assert_int_equal(t.crashes, 0);
    assert_int_equal(t.hangs, 0);
    assert_int_equal(t.contract, 0);
    assert_int_equal(t.setup, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_parsed),
        cmocka_unit_test(test_table_covers_header),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests_name("api_null", tests, group_setup,
                                       group_teardown);
}
