/* test_limits.c - limits on untrusted input: each is a clear error (exit
 * status 2 from the command), found in bounded time and memory.
 *   - einsum: sizes whose products overflow, more than 32 dimensions or
 *     operands, text longer than ET_MAX_TEXT;
 *   - opt lists: more than ET_MAX_OPTS opts, amounts that do not fit, a
 *     megabyte of text;
 *   - YAML spaces: larger than ET_SPACE_MAX_FILE, nested deeper than
 *     ET_SPACE_MAX_NESTING (libyaml is quadratic in the depth: a megabyte
 *     of '[' took minutes), an alias bomb, ranges whose width overflows
 *     64 bits (undefined behaviour before), a parameter with too many
 *     points;
 *   - expressions: division and modulo by zero, overflow, INT64_MIN / -1,
 *     nesting and length limits; the language has no loops or recursion,
 *     so the largest expression evaluates in microseconds;
 *   - .npy: headers that claim more data than the file holds, shapes whose
 *     product overflows, header lengths past the file or over 64 KiB, and
 *     endless streams (/dev/zero, a pipe that never ends) read no further
 *     than the header allows (memory grew without bound before). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "einsum/npy.h"
#include "spaces/expr.h"
#include "spaces/space.h"
#include "transforms/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char scratch[256];

/* AddressSanitizer reserves terabytes of shadow address space, so an
 * RLIMIT_AS makes every sanitized program fail at start ("Failed to
 * mmap"). Under ASan the memory bound is ASan's own RSS limit instead, for
 * the programs this test starts; in-process checks keep their time bounds
 * only. The plain build checks the address-space bounds. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* In a child about to exec or work: bounds its memory to mib MiB. */
static void limit_memory(unsigned mib, int will_exec)
{
    if (getenv("ET_UNDER_VALGRIND")) /* valgrind needs its own room */
        return;
    if (UNDER_ASAN) {
        if (will_exec) {
            char opts[1024];
            const char *old = getenv("ASAN_OPTIONS");
            snprintf(opts, sizeof opts, "%s%shard_rss_limit_mb=%u",
                     old ? old : "", old && *old ? ":" : "", mib);
            setenv("ASAN_OPTIONS", opts, 1);
        }
        return;
    }
    struct rlimit as = {(rlim_t)mib << 20, (rlim_t)mib << 20};
    setrlimit(RLIMIT_AS, &as);
}

/* Time bounds are stretched under valgrind (tests/valgrind.sh sets
 * ET_UNDER_VALGRIND), where code runs 20-50x slower. */
static double slow(void)
{
    return getenv("ET_UNDER_VALGRIND") ? 60.0 : 1.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the command ---------------------------------------------------------- */

/* Runs build/eintune with argv (NULL-terminated) under a 2 GiB address
 * space limit and a 30 s CPU limit; returns its exit status (-signal when
 * killed) and keeps its stderr in err. */
static int run_cli(char *err, size_t cap, const char *const *argv)
{
    char exe[512];
    const char *b = getenv("ET_BUILD_DIR");
    snprintf(exe, sizeof exe, "%s/eintune", b ? b : "build");
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit cpu = {30, 30};
        limit_memory(2048, 1);
        setrlimit(RLIMIT_CPU, &cpu);
        dup2(p[1], 2);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        close(p[0]);
        close(p[1]);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    char sink[4096];
    while ((r = read(p[0], n + 1 < cap ? err + n : sink,
                     n + 1 < cap ? cap - 1 - n : sizeof sink)) > 0)
        if (n + 1 < cap)
            n += (size_t)r;
    err[n] = 0;
    close(p[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

#define CLI(err, ...)                                                         \
    run_cli(err, sizeof err,                                                  \
            (const char *const[]){"eintune", __VA_ARGS__, NULL})

/* ---- einsum ------------------------------------------------------------- */

static void expect_einsum_error(const char *text, const char *shape,
                                const char *what)
{
    et_einsum e;
    et_diag d;
    et_status st = et_einsum_from_strings(text, shape, NULL, &e, &d);
    assert_int_equal(st, ET_ERR_INPUT);
    if (!strstr(d.msg, what))
        fail_msg("'%.60s' with '%.60s': message '%s' lacks '%s'", text, shape,
                 d.msg, what);
}

static void test_einsum_limits(void **state)
{
    (void)state;
    expect_einsum_error("ij,jk->ik", "i=4294967296,j=4294967296,k=4",
                        "overflows 64 bits");
    expect_einsum_error("i->i", "i=9223372036854775807", "overflows");
    expect_einsum_error("ij->ij", "i=99999999999999999999,j=2",
                        "does not fit in 64 bits");
    expect_einsum_error("i->i", "i=0", "");
    expect_einsum_error("i->i", "i=-3", "");
    /* elements fit, bytes do not: 2^61 f64 elements */
    expect_einsum_error("ij->ij", "i=1073741824,j=2147483648", "");

    char text[ET_MAX_TEXT * 4];
    memset(text, 'a', 40);
    text[40] = 0;
    expect_einsum_error(text, "a=2", "at most 32");
    text[0] = 0;
    for (int i = 0; i < 40; i++)
        strcat(text, i ? ",a" : "a");
    expect_einsum_error(text, "a=2", "too many operands");
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = 0;
    expect_einsum_error(text, "a=2", "too long");
}

static void test_einsum_limits_cli(void **state)
{
    (void)state;
    char err[4096];
    assert_int_equal(CLI(err, "check", "ij,jk->ik", "--shape",
                         "i=4294967296,j=4294967296,k=4294967296"),
                     2);
    assert_non_null(strstr(err, "overflows 64 bits"));
    /* (one argument of at most 128 KiB passes exec) */
    char *longtext = malloc(100001);
    memset(longtext, 'a', 100000);
    longtext[100000] = 0;
    assert_int_equal(CLI(err, "check", longtext, "--shape", "a=2"), 2);
    assert_non_null(strstr(err, "too long"));
    free(longtext);
}

/* ---- opt lists ---------------------------------------------------------- */

static void test_opts_limits(void **state)
{
    (void)state;
    et_opt opts[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    size_t cap = 100 * 12 + 1;
    char *text = calloc(1, cap);
    for (int i = 0; i < 100; i++)
        strcat(text, "LOCAL(i,1) ");
    assert_int_equal(et_opts_parse(text, opts, ET_MAX_OPTS, &n, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "too many opts"));
    free(text);

    assert_int_equal(et_opts_parse("LOCAL(i,99999999999999999999)", opts,
                                   ET_MAX_OPTS, &n, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "too large"));

    /* a megabyte of blanks around one opt: linear, fast */
    size_t big = 1 << 20;
    text = malloc(big + 32);
    memset(text, ' ', big);
    strcpy(text + big, "UPCAST(j,4)");
    double t0 = now_s();
    assert_int_equal(et_opts_parse(text, opts, ET_MAX_OPTS, &n, &d), ET_OK);
    assert_int_equal(n, 1);
    assert_true(now_s() - t0 < 1.0 * slow());
    free(text);

    /* amounts past what a kernel can hold are refused, not overflowed */
    et_einsum e;
    assert_int_equal(et_einsum_from_strings("ij->ij", "i=8,j=8", "f32", &e, &d),
                     ET_OK);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    char reason[256];
    et_opt o = et_opt_make(ET_OPT_PADTO, "i", (int64_t)1 << 62);
    assert_int_equal(et_kernel_apply_opt(k, &o, reason, sizeof reason),
                     ET_ERR_REFUSED);
    o = et_opt_make(ET_OPT_LOCAL, "i", INT64_MAX);
    assert_int_equal(et_kernel_apply_opt(k, &o, reason, sizeof reason),
                     ET_ERR_REFUSED);
    o = et_opt_make(ET_OPT_UPCAST, "j", -8);
    assert_int_equal(et_kernel_apply_opt(k, &o, reason, sizeof reason),
                     ET_ERR_REFUSED);
    et_kernel_free(k);
}

static void test_opts_limits_cli(void **state)
{
    (void)state;
    char err[4096];
    char *text = malloc(64 * 1024);
    text[0] = 0;
    for (int i = 0; i < 1000; i++)
        strcat(text, "LOCAL(i,1) ");
    assert_int_equal(CLI(err, "codegen", "ij->ij", "--shape", "i=8,j=8",
                         "--opts", text),
                     2);
    assert_non_null(strstr(err, "too many opts"));
    free(text);
    assert_int_equal(CLI(err, "codegen", "ij->ij", "--shape", "i=8,j=8",
                         "--opts", "PADTO(i,4611686018427387904)"),
                     2);
    assert_non_null(strstr(err, "2^31-1"));
}

/* ---- YAML spaces -------------------------------------------------------- */

static et_status load(const char *text, size_t len, et_diag *d, double *secs)
{
    et_space *s = NULL;
    double t0 = now_s();
    et_status st = et_space_load_text(text, len, "limits.yaml", &s, d);
    if (secs)
        *secs = now_s() - t0;
    et_space_free(s);
    return st;
}

static void test_yaml_nesting(void **state)
{
    (void)state;
    size_t n = 400000;
    char *text = malloc(2 * n + 2);
    memset(text, '[', n);
    memset(text + n, ']', n);
    text[2 * n] = '\n';
    et_diag d;
    double secs;
    assert_int_equal(load(text, 2 * n + 1, &d, &secs), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "nested more than"));
    assert_int_equal(d.line, 1);
    assert_int_equal(d.col, ET_SPACE_MAX_NESTING + 1);
    assert_true(secs < 1.0 * slow());
    /* mappings, in flow and block style */
    text[0] = 0;
    for (int i = 0; i < 20000; i++)
        strcat(text + (size_t)i * 4, "{a: ");
    assert_int_equal(load(text, strlen(text), &d, &secs), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "nested more than"));
    assert_true(secs < 1.0 * slow());
    size_t len = 0;
    for (int i = 0; i < 200; i++) {
        memset(text + len, ' ', (size_t)i);
        len += (size_t)i;
        len += (size_t)sprintf(text + len, "k%d:\n", i);
    }
    assert_int_equal(load(text, len, &d, &secs), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "nested more than"));
    free(text);

    /* the example spaces stay well inside the limit */
    et_space *s = NULL;
    assert_int_equal(et_space_load("examples/dg_operator.yaml", &s, &d), ET_OK);
    et_space_free(s);
}

static void test_yaml_size_and_aliases(void **state)
{
    (void)state;
    et_diag d;
    size_t n = ET_SPACE_MAX_FILE + 1;
    char *text = malloc(n);
    memset(text, '#', n);
    assert_int_equal(load(text, n, &d, NULL), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "larger than"));
    free(text);

    /* an alias bomb: 10^40 scalars if expanded */
    char bomb[8192] = "a0: &a0 [1,1,1,1,1,1,1,1,1,1]\n";
    for (int i = 1; i < 40; i++) {
        size_t len = strlen(bomb);
        len += (size_t)sprintf(bomb + len, "a%d: &a%d [", i, i);
        for (int j = 0; j < 10; j++)
            len += (size_t)sprintf(bomb + len, "%s*a%d", j ? "," : "", i - 1);
        strcpy(bomb + len, "]\n");
    }
    strcat(bomb, "name: t\neinsum: \"ik,kj->ij\"\nparams:\n"
                 "  u: {values: *a39}\ntransforms:\n"
                 "  - {op: UPCAST, axis: j, amt: u}\n");
    double secs;
    assert_int_equal(load(bomb, strlen(bomb), &d, &secs), ET_ERR_INPUT);
    assert_true(secs < 1.0 * slow());
    /* an alias that contains itself */
    const char *cyc = "name: &n [*n]\neinsum: \"ij->ij\"\n";
    assert_int_equal(load(cyc, strlen(cyc), &d, &secs), ET_ERR_INPUT);
    assert_true(secs < 1.0 * slow());
}

static et_status bind_range(const char *lo, const char *hi, et_diag *d)
{
    char text[1024];
    snprintf(text, sizeof text,
             "name: t\neinsum: \"ik,kj->ij\"\nparams:\n"
             "  u: {range: [%s, %s]}\ntransforms:\n"
             "  - {op: UPCAST, axis: j, amt: u}\n",
             lo, hi);
    et_space *s = NULL;
    et_status st = et_space_load_text(text, strlen(text), "r.yaml", &s, d);
    if (st != ET_OK)
        return st;
    et_einsum e;
    et_diag d2;
    assert_int_equal(et_einsum_from_strings("ik,kj->ij",
                                            "i=576460752303423488,k=1,j=1",
                                            "f32", &e, &d2),
                     ET_OK);
    et_binding *b = NULL;
    st = et_space_bind(s, &e, NULL, &b, d);
    et_binding_free(b);
    et_space_free(s);
    return st;
}

static void test_space_ranges(void **state)
{
    (void)state;
    et_diag d;
    /* constant bounds whose difference overflows: checked at loading */
    assert_int_equal(bind_range("-9223372036854775807", "9223372036854775807",
                                &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "more than 1000000 points"));
    assert_int_equal(d.line, 4);
    /* bounds from sizes: checked at binding */
    assert_int_equal(bind_range("-i", "i", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "more than 1000000 points"));
    assert_int_equal(bind_range("-i*8-i*8", "i*8+(i*8-1)", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "more than 1000000 points"));
    assert_int_equal(bind_range("1", "i*16", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "overflow"));
    assert_int_equal(bind_range("1", "i/(k-1)", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "division by zero"));
    assert_int_equal(bind_range("1", "i%(k-1)", &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "modulo by zero"));
    /* a million points is the most a parameter has */
    assert_int_equal(bind_range("1", "1000001", &d), ET_ERR_INPUT);
    et_status st = bind_range("1", "1000000", &d);
    if (st != ET_OK)
        fail_msg("%s", d.msg);
}

static void test_space_limits_cli(void **state)
{
    (void)state;
    char path[300], err[4096];
    snprintf(path, sizeof path, "%s/deep.yaml", scratch);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 300000; i++)
        fputc('[', f);
    fclose(f);
    char db[300];
    snprintf(db, sizeof db, "%s/limits.db", scratch);
    double t0 = now_s();
    assert_int_equal(CLI(err, "tune", "ik,kj->ij", "--shape", "i=4,k=4,j=4",
                         "--space", path, "--db", db),
                     2);
    assert_true(now_s() - t0 < 20.0 * slow());
    assert_non_null(strstr(err, "nested more than"));

    f = fopen(path, "w");
    fputs("name: t\neinsum: \"ik,kj->ij\"\nparams:\n"
          "  u: {range: [-9223372036854775807, 9223372036854775807]}\n"
          "transforms:\n  - {op: UPCAST, axis: j, amt: u}\n",
          f);
    fclose(f);
    assert_int_equal(CLI(err, "tune", "ik,kj->ij", "--shape", "i=4,k=4,j=4",
                         "--space", path, "--db", db),
                     2);
    assert_non_null(strstr(err, "deep.yaml:4:"));
}

/* ---- expressions -------------------------------------------------------- */

static int lookup_ab(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    if (len == 1 && name[0] == 'a')
        return 0;
    if (len == 1 && name[0] == 'b')
        return 1;
    return -1;
}

static et_status eval(const char *text, int64_t a, int64_t b, int64_t *out,
                      char *err, size_t cap)
{
    et_expr *e = NULL;
    et_diag d;
    et_status st = et_expr_parse(text, lookup_ab, NULL, &e, &d);
    if (st != ET_OK) {
        snprintf(err, cap, "%.200s", d.msg);
        return st;
    }
    int64_t vals[2] = {a, b};
    st = et_expr_eval(e, vals, out, err, cap);
    et_expr_free(e);
    return st;
}

static void test_expr_limits(void **state)
{
    (void)state;
    int64_t v;
    char err[256];
    assert_int_equal(eval("a / b", 7, 0, &v, err, sizeof err), ET_ERR_INPUT);
    assert_non_null(strstr(err, "division by zero"));
    assert_int_equal(eval("a % b", 7, 0, &v, err, sizeof err), ET_ERR_INPUT);
    assert_non_null(strstr(err, "modulo by zero"));
    assert_int_equal(eval("a / b", INT64_MIN, -1, &v, err, sizeof err),
                     ET_ERR_INPUT);
    assert_int_equal(eval("a % b", INT64_MIN, -1, &v, err, sizeof err),
                     ET_ERR_INPUT);
    assert_int_equal(eval("-a", INT64_MIN, 0, &v, err, sizeof err),
                     ET_ERR_INPUT);
    assert_int_equal(eval("a * b", INT64_MAX, 2, &v, err, sizeof err),
                     ET_ERR_INPUT);
    assert_int_equal(eval("a + b", INT64_MAX, 1, &v, err, sizeof err),
                     ET_ERR_INPUT);
    assert_int_equal(eval("a - b", INT64_MIN, 1, &v, err, sizeof err),
                     ET_ERR_INPUT);
    /* short-circuit: the guarded division is never evaluated */
    assert_int_equal(eval("b != 0 and a % b == 0", 7, 0, &v, err, sizeof err),
                     ET_OK);
    assert_int_equal(v, 0);

    /* nesting and length */
    char text[4096];
    memset(text, '(', 200);
    text[200] = 'a';
    memset(text + 201, ')', 200);
    text[401] = 0;
    assert_int_equal(eval(text, 1, 1, &v, err, sizeof err), ET_ERR_INPUT);
    memset(text, '-', 300);
    strcpy(text + 300, "a");
    assert_int_equal(eval(text, 1, 1, &v, err, sizeof err), ET_ERR_INPUT);
    text[0] = 0;
    for (int i = 0; i < 600; i++)
        strcat(text, "a+");
    strcat(text, "a");
    assert_int_equal(eval(text, 1, 1, &v, err, sizeof err), ET_ERR_INPUT);
    assert_non_null(strstr(err, "longer than"));

    /* the largest expression accepted evaluates at once: no loops, no
     * recursion in the language */
    text[0] = 0;
    for (int i = 0; i < 80; i++)
        strcat(text, "a*b+");
    strcat(text, "a");
    assert_true(strlen(text) < ET_EXPR_MAX_TEXT);
    double t0 = now_s();
    for (int i = 0; i < 1000; i++)
        assert_int_equal(eval(text, 3, 5, &v, err, sizeof err), ET_OK);
    assert_int_equal(v, 80 * 15 + 3);
    assert_true(now_s() - t0 < 2.0 * slow());
}

/* ---- .npy ---------------------------------------------------------------- */

/* An .npy v1 image with header dict `dict` and `data` bytes of data. */
static size_t npy_image(unsigned char *buf, const char *dict, size_t data)
{
    size_t h = strlen(dict);
    size_t pad = 64 - (10 + h + 1) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t hl = h + pad + 1;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, dict, h);
    memset(buf + 10 + h, ' ', pad);
    buf[10 + h + pad] = '\n';
    memset(buf + 10 + hl, 0, data);
    return 10 + hl + data;
}

static void test_npy_lies(void **state)
{
    (void)state;
    static unsigned char buf[1 << 16];
    et_array a;
    et_diag d;
    /* claims 10^12 elements, holds 8 bytes: refused before allocating */
    size_t n = npy_image(buf, "{'descr': '<f8', 'fortran_order': False, "
                              "'shape': (1000000, 1000000), }", 8);
    assert_int_equal(et_npy_read_mem(buf, n, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "truncated data"));
    assert_null(a.data);
    /* a product that overflows 64 bits */
    n = npy_image(buf, "{'descr': '<f8', 'fortran_order': False, "
                       "'shape': (4294967296, 4294967296, 4), }", 8);
    assert_int_equal(et_npy_read_mem(buf, n, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "64 bits"));
    /* elements fit, bytes do not */
    n = npy_image(buf, "{'descr': '<f8', 'fortran_order': False, "
                       "'shape': (2305843009213693952,), }", 8);
    assert_int_equal(et_npy_read_mem(buf, n, &a, &d), ET_ERR_INPUT);
    /* more data than the shape */
    n = npy_image(buf, "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }", 12);
    assert_int_equal(et_npy_read_mem(buf, n, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "does not match"));
    /* a header length past the end of the file */
    n = npy_image(buf, "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }", 8);
    buf[9] = 0x7f;
    assert_int_equal(et_npy_read_mem(buf, n, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "truncated"));
    /* a v2 header claiming 4 GiB */
    n = npy_image(buf, "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }", 8);
    unsigned char v2[16] = "\x93NUMPY\x02\x00\xff\xff\xff\xff";
    assert_int_equal(et_npy_read_mem(v2, 12, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "at most 65536"));
}

/* Reads path in a child under a 256 MiB address-space limit; returns the
 * child's exit status: 0 when et_npy_read failed cleanly with want. */
static int read_limited(const char *path, et_status want)
{
    pid_t pid = fork();
    if (pid == 0) {
        limit_memory(256, 0);
        alarm(20);
        et_array a;
        et_diag d;
        et_status st = et_npy_read(path, &a, &d);
        if (st == ET_OK)
            _exit(3);
        fprintf(stderr, "%s: %s\n", et_status_str(st), d.msg);
        _exit(st == want ? 0 : 4);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_npy_endless_streams(void **state)
{
    (void)state;
    /* a device that never ends and is no .npy file */
    assert_int_equal(read_limited("/dev/zero", ET_ERR_INPUT), 0);

    /* a valid header followed by an endless stream of data */
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/endless.npy", scratch);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        signal(SIGPIPE, SIG_DFL);
        int fd = open(fifo, O_WRONLY);
        static unsigned char buf[1 << 16];
        size_t n = npy_image(buf, "{'descr': '<f8', 'fortran_order': "
                                  "False, 'shape': (4,), }", 32);
        if (write(fd, buf, n) != (ssize_t)n)
            _exit(1);
        memset(buf, 0, sizeof buf);
        for (int i = 0; i < 100000; i++) /* 6.5 GB, or until closed */
            if (write(fd, buf, sizeof buf) < 0)
                _exit(0);
        _exit(2);
    }
    double t0 = now_s();
    assert_int_equal(read_limited(fifo, ET_ERR_INPUT), 0);
    assert_true(now_s() - t0 < 10.0 * slow());
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    unlink(fifo);
}

static void test_npy_limits_cli(void **state)
{
    (void)state;
    char path[300], out[300], err[4096];
    snprintf(path, sizeof path, "%s/lie.npy", scratch);
    snprintf(out, sizeof out, "%s/out.npy", scratch);
    static unsigned char buf[1 << 16];
    size_t n = npy_image(buf, "{'descr': '<f8', 'fortran_order': False, "
                              "'shape': (1000000, 1000000), }", 8);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    assert_int_equal(CLI(err, "run", "ij->ji", "-i", path, "-o", out), 2);
    assert_non_null(strstr(err, "truncated data"));
    assert_int_equal(access(out, F_OK), -1);
    assert_int_equal(CLI(err, "run", "i->i", "-i", "/dev/zero", "-o", out), 2);
    assert_non_null(strstr(err, "not an .npy file"));
    assert_int_equal(access(out, F_OK), -1);
}

static int setup(void **state)
{
    snprintf(scratch, sizeof scratch, "%s/eintune-limits.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    const char *names[] = {"deep.yaml", "limits.db", "limits.db-wal",
                           "limits.db-shm", "lie.npy", "out.npy",
                           "endless.npy"};
    char p[600];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", scratch, names[i]);
        unlink(p);
    }
    rmdir(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_einsum_limits),
        cmocka_unit_test(test_einsum_limits_cli),
        cmocka_unit_test(test_opts_limits),
        cmocka_unit_test(test_opts_limits_cli),
        cmocka_unit_test(test_yaml_nesting),
        cmocka_unit_test(test_yaml_size_and_aliases),
        cmocka_unit_test(test_space_ranges),
        cmocka_unit_test(test_space_limits_cli),
        cmocka_unit_test(test_expr_limits),
        cmocka_unit_test(test_npy_lies),
        cmocka_unit_test(test_npy_endless_streams),
        cmocka_unit_test(test_npy_limits_cli),
    };
    return cmocka_run_group_tests_name("limits", tests, setup, teardown);
}
