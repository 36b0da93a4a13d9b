/*
 * test_npy.c - .npy reading and writing: round trips of every dtype and
 * ranks 0..4, fixtures written by NumPy 1.24 (tests/data/npy, made by
 * make_fixtures.py: versions 1.0/2.0/3.0, Fortran order, big endian), byte
 * equality of our output with NumPy's, and malformed, truncated and lying
 * files refused with a message naming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "einsum/npy.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIXDIR "tests/data/npy/"

/* ---- helpers ------------------------------------------------------------ */

/* value of C-order element t in the fixtures (see make_fixtures.py) */
static double fix_val(int64_t t)
{
    return (double)(t + 1) * 0.5 * (t % 2 ? -1.0 : 1.0);
}

static double elem(const et_array *a, int64_t t)
{
    switch (a->dtype) {
    case ET_F16:
        return et_half_to_float(((const uint16_t *)a->data)[t]);
    case ET_F32:
        return ((const float *)a->data)[t];
    default:
        return ((const double *)a->data)[t];
    }
}

static void check_fixture(const char *file, et_dtype t, int rank,
                          const int64_t *dim)
{
    char path[256];
    snprintf(path, sizeof path, FIXDIR "%s", file);
    et_array a;
    et_diag d = {0};
    et_status st = et_npy_read(path, &a, &d);
    if (st != ET_OK)
        fail_msg("%s: %s", path, d.msg);
    assert_int_equal(a.dtype, t);
    assert_int_equal(a.rank, rank);
    for (int r = 0; r < rank; r++)
        assert_int_equal(a.dim[r], dim[r]);
    int64_t n = et_array_elems(&a);
    for (int64_t i = 0; i < n; i++)
        if (elem(&a, i) != fix_val(i))
            fail_msg("%s: element %lld is %g, expected %g", path,
                     (long long)i, elem(&a, i), fix_val(i));
    et_array_free(&a);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* A scratch directory for written files, removed by the teardown. */
static char scratch[256];

static int setup_dir(void **state)
{
    snprintf(scratch, sizeof scratch, "/tmp/et_test_npy.XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int count_entries(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(dp);
    return n;
}

static int teardown_dir(void **state)
{
    DIR *dp = opendir(scratch);
    if (dp) {
        struct dirent *de;
        char p[512];
        while ((de = readdir(dp))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", scratch, de->d_name);
            if (remove(p) != 0)
                rmdir(p);
        }
        closedir(dp);
    }
    rmdir(scratch);
    return 0;
}

/* Builds an .npy image from a header dict text (version 1.0, no padding
 * unless the text has it) followed by n_data bytes of data. */
static size_t build(unsigned char *out, size_t cap, int major,
                    const char *hdr, const void *data, size_t n_data)
{
    size_t h = strlen(hdr), pre = major == 1 ? 10 : 12;
    assert_true(pre + h + n_data <= cap);
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)(h & 0xff);
    out[9] = (unsigned char)(h >> 8);
    if (major != 1) {
        out[10] = (unsigned char)(h >> 16);
        out[11] = (unsigned char)(h >> 24);
    }
    memcpy(out + pre, hdr, h);
    if (n_data)
        memcpy(out + pre + h, data, n_data);
    return pre + h + n_data;
}

static void expect_refused(const void *buf, size_t len, const char *needle)
{
    et_array a;
    et_diag d = {0};
    et_status st = et_npy_read_mem(buf, len, &a, &d);
    if (st != ET_ERR_INPUT)
        fail_msg("expected refusal containing \"%s\", got status %d (%s)",
                 needle, st, d.msg);
    assert_null(a.data);
    if (needle && !strstr(d.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", d.msg, needle);
}

static void expect_accepted(const void *buf, size_t len, et_array *a)
{
    et_diag d = {0};
    et_status st = et_npy_read_mem(buf, len, a, &d);
    if (st != ET_OK)
        fail_msg("refused: %s", d.msg);
}

/* ---- round trips -------------------------------------------------------- */

static void test_round_trip_all(void **state)
{
    static const int64_t dims[4] = {3, 1, 4, 2};
    unsigned seed = 12345;
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        for (int rank = 0; rank <= 4; rank++) {
            et_array a = {.dtype = (et_dtype)t, .rank = rank};
            for (int r = 0; r < rank; r++)
                a.dim[r] = dims[r] + r;
            int64_t n = et_array_elems(&a);
            size_t sz = et_dtype_size(a.dtype), bytes = (size_t)n * sz;
            a.data = malloc(bytes);
            assert_non_null(a.data);
            unsigned char *p = a.data;
            for (size_t i = 0; i < bytes; i++) {
                seed = seed * 1103515245u + 12345u;
                p[i] = (unsigned char)(seed >> 16);
            }
            char path[512];
            snprintf(path, sizeof path, "%s/rt_%d_%d.npy", scratch, t, rank);
            et_diag d = {0};
            assert_int_equal(et_npy_write(path, &a, &d), ET_OK);

            et_array b;
            if (et_npy_read(path, &b, &d) != ET_OK)
                fail_msg("%s", d.msg);
            assert_int_equal(b.dtype, a.dtype);
            assert_int_equal(b.rank, rank);
            for (int r = 0; r < rank; r++)
                assert_int_equal(b.dim[r], a.dim[r]);
            assert_memory_equal(b.data, a.data, bytes);

            /* data starts at a multiple of 64, header ends with '\n' */
            size_t len;
            unsigned char *img = slurp(path, &len);
            assert_int_equal((len - bytes) % 64, 0);
            assert_int_equal(img[len - bytes - 1], '\n');
            assert_int_equal(img[6], 1);
            free(img);
            et_array_free(&b);
            et_array_free(&a);
        }
    }
    /* nothing but the written files in the directory: no temp files */
    assert_int_equal(count_entries(scratch), ET_DTYPE_COUNT * 5);
}

/* Our writer produces NumPy's bytes exactly. */
static void test_write_matches_numpy(void **state)
{
    static const struct {
        const char *file;
        et_dtype t;
        int rank;
        int64_t dim[4];
    } cases[] = {
        {"v1_f8_2x3.npy", ET_F64, 2, {2, 3}},
        {"v1_f4_4.npy", ET_F32, 1, {4}},
        {"v1_f2_3x2.npy", ET_F16, 2, {3, 2}},
        {"v1_f8_scalar.npy", ET_F64, 0, {0}},
        {"v1_f4_2x1x3x2.npy", ET_F32, 4, {2, 1, 3, 2}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char fix[256], out[512];
        snprintf(fix, sizeof fix, FIXDIR "%s", cases[c].file);
        snprintf(out, sizeof out, "%s/%s", scratch, cases[c].file);
        et_array a;
        et_diag d = {0};
        if (et_npy_read(fix, &a, &d) != ET_OK)
            fail_msg("%s", d.msg);
        assert_int_equal(et_npy_write(out, &a, &d), ET_OK);
        size_t l1, l2;
        unsigned char *b1 = slurp(fix, &l1), *b2 = slurp(out, &l2);
        assert_int_equal(l1, l2);
        assert_memory_equal(b1, b2, l1);
        free(b1);
        free(b2);
        et_array_free(&a);
    }
}

/* ---- NumPy fixtures ----------------------------------------------------- */

static void test_fixtures(void **state)
{
    check_fixture("v1_f8_2x3.npy", ET_F64, 2, (int64_t[]){2, 3});
    check_fixture("v1_f4_4.npy", ET_F32, 1, (int64_t[]){4});
    check_fixture("v1_f2_3x2.npy", ET_F16, 2, (int64_t[]){3, 2});
    check_fixture("v1_f8_scalar.npy", ET_F64, 0, NULL);
    check_fixture("v1_f4_2x1x3x2.npy", ET_F32, 4, (int64_t[]){2, 1, 3, 2});
    check_fixture("v2_f4_3x4.npy", ET_F32, 2, (int64_t[]){3, 4});
    check_fixture("v3_f8_5.npy", ET_F64, 1, (int64_t[]){5});
    check_fixture("fortran_f8_2x3x4.npy", ET_F64, 3, (int64_t[]){2, 3, 4});
    check_fixture("fortran_f4_3x5.npy", ET_F32, 2, (int64_t[]){3, 5});
    check_fixture("be_f4_2x2.npy", ET_F32, 2, (int64_t[]){2, 2});
    check_fixture("be_f8_3.npy", ET_F64, 1, (int64_t[]){3});
    check_fixture("be_f2_2x3.npy", ET_F16, 2, (int64_t[]){2, 3});
    check_fixture("be_fortran_f8_2x3.npy", ET_F64, 2, (int64_t[]){2, 3});
}

static void expect_file_refused(const char *file, const char *needle)
{
    char path[256];
    snprintf(path, sizeof path, FIXDIR "%s", file);
    et_array a;
    et_diag d = {0};
    assert_int_equal(et_npy_read(path, &a, &d), ET_ERR_INPUT);
    assert_null(a.data);
    if (!strstr(d.msg, path))
        fail_msg("message \"%s\" does not name the file", d.msg);
    if (!strstr(d.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", d.msg, needle);
}

static void test_fixtures_refused(void **state)
{
    expect_file_refused("bad_i4_3.npy", "unsupported dtype '<i4'");
    expect_file_refused("bad_c16_2.npy", "unsupported dtype '<c16'");
    expect_file_refused("bad_struct.npy", "structured");
    expect_file_refused("bad_zero_dim.npy", "dimension 1");
}

static void test_missing_file(void **state)
{
    et_array a;
    et_diag d = {0};
    assert_int_equal(et_npy_read("/nonexistent/x.npy", &a, &d), ET_ERR_IO);
    assert_non_null(strstr(d.msg, "/nonexistent/x.npy"));
    assert_int_equal(et_npy_read(scratch, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "directory"));
    /* an empty file */
    char p[512];
    snprintf(p, sizeof p, "%s/empty.npy", scratch);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(et_npy_read(p, &a, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "empty"));
    remove(p);
}

/* A pipe (not a regular file) is read to its end. */
static void test_read_fifo(void **state)
{
    char p[512];
    snprintf(p, sizeof p, "%s/fifo.npy", scratch);
    assert_int_equal(mkfifo(p, 0600), 0);
    size_t len;
    unsigned char *img = slurp(FIXDIR "v2_f4_3x4.npy", &len);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(img, 1, len, f) != len)
            _exit(1);
        fclose(f);
        _exit(0);
    }
    et_array a;
    et_diag d = {0};
    et_status st = et_npy_read(p, &a, &d);
    int wst;
    waitpid(pid, &wst, 0);
    if (st != ET_OK)
        fail_msg("%s", d.msg);
    assert_int_equal(a.rank, 2);
    assert_int_equal(a.dim[1], 4);
    assert_true(elem(&a, 11) == fix_val(11));
    et_array_free(&a);
    free(img);
    remove(p);
}

/* ---- header dialects ---------------------------------------------------- */

static void test_header_dialects(void **state)
{
    static const double v[3] = {1.5, -2.0, 4.25};
    static const char *ok3[] = {
        "{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}",
        "{\"descr\":\"<f8\",\"fortran_order\":False,\"shape\":(3,),}\n",
        ("  {  'descr' : '<f8' ,\n 'fortran_order' : True , 'shape' : ( 3 , ) "
         ", }    \n"),
        "{'descr': '|f8', 'fortran_order': False, 'shape': (3L,), }\n",
        "{'descr': '=f8', 'fortran_order': False, 'shape': (3,), }\n",
        "{'descr': 'f8', 'fortran_order': False, 'shape': (3,)}",
    };
    unsigned char buf[512];
    for (size_t c = 0; c < sizeof ok3 / sizeof ok3[0]; c++) {
        for (int major = 1; major <= 3; major++) {
            size_t n = build(buf, sizeof buf, major, ok3[c], v, sizeof v);
            et_array a;
            expect_accepted(buf, n, &a);
            assert_int_equal(a.dtype, ET_F64);
            assert_int_equal(a.rank, 1);
            assert_int_equal(a.dim[0], 3);
            assert_memory_equal(a.data, v, sizeof v);
            et_array_free(&a);
        }
    }
    /* scalar and multi-dim without trailing comma */
    size_t n = build(buf, sizeof buf, 1,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
                     v, 8);
    et_array a;
    expect_accepted(buf, n, &a);
    assert_int_equal(a.rank, 0);
    assert_int_equal(et_array_elems(&a), 1);
    et_array_free(&a);
    n = build(buf, sizeof buf, 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,1)}",
              (float[]){1, 2}, 8);
    expect_accepted(buf, n, &a);
    assert_int_equal(a.rank, 3);
    assert_int_equal(a.dim[1], 2);
    et_array_free(&a);
}

/* ---- malformed input ---------------------------------------------------- */

static void test_malformed_headers(void **state)
{
    static const double v[3] = {1, 2, 3};
    static const struct {
        const char *hdr;
        const char *needle;
    } bad[] = {
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}",
         "unsupported dtype '<i4'"},
        {"{'descr': '<f16', 'fortran_order': False, 'shape': (3,)}",
         "unsupported dtype"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}",
         "unsupported dtype"},
        {"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,)}",
         "structured"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3)}",
         "not a tuple"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (-3,)}",
         "negative"},
        {"{'descr': '<f8', 'fortran_order': False}", "missing key 'shape'"},
        {"{'descr': '<f8', 'shape': (3,)}", "missing key 'fortran_order'"},
        {"{'fortran_order': False, 'shape': (3,)}", "missing key 'descr'"},
        {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, "
         "'shape': (3,)}", "twice"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), "
         "'extra': 1}", "unexpected key 'extra'"},
        {"{'descr': '<f8', 'fortran_order': 0, 'shape': (3,)}",
         "True or False"},
        {"{'descr': '<f8', 'fortran_order': Fals, 'shape': (3,)}",
         "True or False"},
        {"{'descr': '<f8, 'fortran_order': False, 'shape': (3,)}",
         "expected"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)", "'}'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} x",
         "after the dictionary"},
        {"'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", "'{'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,,)}",
         "expected a dimension"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3 1)}",
         "',' or ')'"},
        {"{'descr': '<f8' 'fortran_order': False, 'shape': (3,)}",
         "',' or '}'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': "
         "(99999999999999999999,)}", "too large"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': "
         "(4294967296, 4294967296, 4294967296)}", "64 bits"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': "
         "(1073741824, 2147483648)}", "too large"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 0)}",
         "is 0"},
        {"{'descr': '<f\\x38', 'fortran_order': False, 'shape': (3,)}",
         "unsupported character"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\xc3\xa9",
         "byte 0xc3"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': "
         "(1000000000, 1000)}", "truncated data"},
        {"", "'{'"},
        {"{}", "missing key"},
    };
    unsigned char buf[1024];
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        size_t n = build(buf, sizeof buf, 1, bad[c].hdr, v, sizeof v);
        expect_refused(buf, n, bad[c].needle);
    }
    /* rank above ET_MAX_RANK */
    char hdr[512];
    int h = snprintf(hdr, sizeof hdr, "{'descr': '<f8', 'fortran_order': "
                     "False, 'shape': (");
    for (int r = 0; r < ET_MAX_RANK + 1; r++)
        h += snprintf(hdr + h, sizeof hdr - (size_t)h, "1,");
    snprintf(hdr + h, sizeof hdr - (size_t)h, ")}");
    size_t n = build(buf, sizeof buf, 1, hdr, v, 8);
    expect_refused(buf, n, "more than 32 dimensions");
    /* exactly ET_MAX_RANK is fine */
    h = snprintf(hdr, sizeof hdr, "{'descr': '<f8', 'fortran_order': "
                 "False, 'shape': (");
    for (int r = 0; r < ET_MAX_RANK; r++)
        h += snprintf(hdr + h, sizeof hdr - (size_t)h, "1,");
    snprintf(hdr + h, sizeof hdr - (size_t)h, ")}");
    n = build(buf, sizeof buf, 1, hdr, v, 8);
    et_array a;
    expect_accepted(buf, n, &a);
    assert_int_equal(a.rank, ET_MAX_RANK);
    et_array_free(&a);
}

static void test_malformed_prefix(void **state)
{
    static const double v[3] = {1, 2, 3};
    const char *hdr = "{'descr': '<f8', 'fortran_order': False, "
                      "'shape': (3,), }";
    unsigned char buf[512];
    size_t n = build(buf, sizeof buf, 1, hdr, v, sizeof v);

    expect_refused(buf, 0, "not an .npy file");
    expect_refused(NULL, 0, "not an .npy file");
    unsigned char b2[512];
    memcpy(b2, buf, n);
    b2[1] = 'n';
    expect_refused(b2, n, "not an .npy file");
    memcpy(b2, buf, n);
    b2[6] = 4;
    expect_refused(b2, n, "version 4.0");
    memcpy(b2, buf, n);
    b2[7] = 1;
    expect_refused(b2, n, "version 1.1");
    /* a lying header length */
    memcpy(b2, buf, n);
    b2[8] = 0xff;
    b2[9] = 0xff;
    expect_refused(b2, n, "header claims 65535");
    n = build(b2, sizeof b2, 2, hdr, v, sizeof v);
    b2[11] = 0xff;
    expect_refused(b2, n, "header claims");
    /* data too short, too long */
    n = build(b2, sizeof b2, 1, hdr, v, sizeof v - 1);
    expect_refused(b2, n, "truncated data");
    n = build(b2, sizeof b2, 1, hdr, v, sizeof v);
    b2[n++] = 0;
    expect_refused(b2, n, "does not match");

    /* every proper prefix of a valid image is refused, never a crash */
    n = build(buf, sizeof buf, 1, hdr, v, sizeof v);
    for (size_t k = 0; k < n; k++) {
        unsigned char *p = malloc(k ? k : 1); /* exact size for ASan */
        memcpy(p, buf, k);
        et_array a;
        et_diag d = {0};
        assert_int_equal(et_npy_read_mem(p, k, &a, &d), ET_ERR_INPUT);
        assert_non_null(strstr(d.msg, "<memory>"));
        free(p);
    }
}

/* Every truncation of every fixture is refused. */
static void test_fixture_truncations(void **state)
{
    static const char *files[] = {"v2_f4_3x4.npy", "v3_f8_5.npy",
                                  "fortran_f8_2x3x4.npy", "be_f2_2x3.npy"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[256];
        snprintf(path, sizeof path, FIXDIR "%s", files[f]);
        size_t len;
        unsigned char *img = slurp(path, &len);
        for (size_t k = 0; k < len; k++) {
            unsigned char *p = malloc(k ? k : 1);
            memcpy(p, img, k);
            et_array a;
            et_diag d = {0};
            assert_int_equal(et_npy_read_mem(p, k, &a, &d), ET_ERR_INPUT);
            free(p);
        }
        et_array a;
        expect_accepted(img, len, &a);
        et_array_free(&a);
        free(img);
    }
}

/* ---- writing failures --------------------------------------------------- */

static void test_write_failures(void **state)
{
    double x[2] = {1, 2};
    et_array a = {.dtype = ET_F64, .rank = 1, .dim = {2}, .data = x};
    et_diag d = {0};
    int before = count_entries(scratch);

    /* a directory that does not exist */
    char p[512];
    snprintf(p, sizeof p, "%s/no/such/dir/out.npy", scratch);
    assert_int_equal(et_npy_write(p, &a, &d), ET_ERR_IO);
    assert_non_null(strstr(d.msg, "out.npy"));

    /* the target is a directory: rename fails, no temp file left */
    snprintf(p, sizeof p, "%s/adir", scratch);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(et_npy_write(p, &a, &d), ET_ERR_IO);
    assert_int_equal(count_entries(scratch), before + 1);
    rmdir(p);

    /* an existing file is replaced whole */
    snprintf(p, sizeof p, "%s/replace.npy", scratch);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("old contents, much longer than nothing at all ...........", f);
    fclose(f);
    assert_int_equal(et_npy_write(p, &a, &d), ET_OK);
    et_array b;
    assert_int_equal(et_npy_read(p, &b, &d), ET_OK);
    assert_memory_equal(b.data, x, sizeof x);
    et_array_free(&b);
    remove(p);

    /* invalid arrays */
    et_array bad = a;
    bad.dim[0] = 0;
    assert_int_equal(et_npy_write(p, &bad, &d), ET_ERR_INPUT);
    bad = a;
    bad.rank = ET_MAX_RANK + 1;
    assert_int_equal(et_npy_write(p, &bad, &d), ET_ERR_INPUT);
    bad = a;
    bad.data = NULL;
    assert_int_equal(et_npy_write(p, &bad, &d), ET_ERR_INPUT);
    assert_int_equal(count_entries(scratch), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_all),
        cmocka_unit_test(test_write_matches_numpy),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_fixtures_refused),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_read_fifo),
        cmocka_unit_test(test_header_dialects),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_malformed_prefix),
        cmocka_unit_test(test_fixture_truncations),
        cmocka_unit_test(test_write_failures),
    };
    return cmocka_run_group_tests_name("npy", tests, setup_dir,
                                       teardown_dir);
}
