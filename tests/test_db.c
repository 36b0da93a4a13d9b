/*
 * test_db.c - the tuning database: schema creation and reopening, the
 * trial key (record, lookup, invalidation by driver and renderer version,
 * renamed einsums), best(), failures kept, peaks, stats/list/prune,
 * concurrent readers and writers, refusal of corrupt, foreign and newer
 * files (left byte for byte as they were), migration from older schema
 * versions, and a writer killed with SIGKILL at random moments.
 *
 * No OpenCL here, so fork() is fine.
 */
#include "einsum/einsum.h"
#include "db/db.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

/* ---- helpers ----------------------------------------------------------- */

static char tmpdir[256];
static int path_counter;

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/et_db_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    char xdg[300];
    snprintf(xdg, sizeof(xdg), "%s/xdg/nested", tmpdir);
    setenv("XDG_CACHE_HOME", xdg, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh file name under tmpdir. */
static void new_path(char *buf, size_t cap, const char *stem)
{
    snprintf(buf, cap, "%s/%s-%d.db", tmpdir, stem, path_counter++);
}

static et_db *open_ok(const char *path)
{
    et_db *db = NULL;
    et_error err = {{0}};
    et_status st = et_db_open(path, &db, &err);
    if (st != ET_OK)
        fail_msg("open %s: %s (%s)", path ? path : "(default)", err.msg,
                 et_status_str(st));
    return db;
}

static void einsum_ok(const char *text, const char *shape, const char *dt,
                      et_einsum *e)
{
    et_diag d;
    memset(&d, 0, sizeof(d));
    if (et_einsum_from_strings(text, shape, dt, e, &d) != ET_OK)
        fail_msg("%s with %s: %s", text, shape, d.msg);
}

static et_device_info device_of(const char *name, const char *driver)
{
    et_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.name, sizeof(info.name), "%s", name);
    snprintf(info.vendor, sizeof(info.vendor), "Test Vendor");
    snprintf(info.driver_version, sizeof(info.driver_version), "%s", driver);
    snprintf(info.device_version, sizeof(info.device_version),
             "OpenCL 3.0 test");
    snprintf(info.spec, sizeof(info.spec), "opencl:0");
    info.target = et_target_generic(ET_BACKEND_OPENCL);
    return info;
}

#define CHECK(call)                                                         \
    do {                                                                    \
        et_error err_ = {{0}};                                              \
        et_status st_ = (call);                                             \
        if (st_ != ET_OK)                                                   \
            fail_msg("%s: %s (%s)", #call, err_.msg, et_status_str(st_));   \
    } while (0)
/* CHECK's calls name their error argument &err_ */

static int64_t device_id(et_db *db, const et_device_info *info)
{
    int64_t id = 0;
    CHECK(et_db_device_id(db, info, &id, &err_));
    return id;
}

static int64_t einsum_id(et_db *db, const et_einsum *e)
{
    int64_t id = 0;
    CHECK(et_db_einsum_id(db, e, &id, &err_));
    return id;
}

/* A trial of opts on (e, dev) with a made-up source, outcome and median. */
static et_db_trial trial_of(int64_t eid, const et_einsum *e, int64_t did,
                            const char *opts, et_outcome o, double median)
{
    et_db_trial t;
    char source[512];
    snprintf(source, sizeof(source), "/* %.200s %.200s */ __kernel void k() {}",
             e->text, opts);
    et_launch geom = {
        .ndim = 1, .global = {64, 1, 1}, .local = {8, 1, 1}, .has_local = true};
    CHECK(et_db_trial_init(&t, eid, e, did, opts,
                           o == ET_OUTCOME_REFUSED ? NULL : source,
                           &geom, &err_));
    t.outcome = o;
    snprintf(t.reason, sizeof(t.reason), "%s",
             o == ET_OUTCOME_OK ? "" : "made-up reason");
    snprintf(t.kernel_name, sizeof(t.kernel_name), "r_4_6_5");
    snprintf(t.params_json, sizeof(t.params_json), "{\"opts\": \"%s\"}",
             opts);
    if (median > 0) {
        t.median_s = median;
        t.low_s = median * 0.99;
        t.high_s = median * 1.01;
        t.cv = 0.01;
        t.runs = 8;
        t.gops = 1e-9 / median;
    }
    if (o == ET_OUTCOME_OK) {
        t.verify_trials = 3;
        t.max_norm_err = 0.03;
        t.p_value = 0.5;
    }
    return t;
}

static int64_t record(et_db *db, const et_db_trial *t)
{
    int64_t id = 0;
    CHECK(et_db_trial_record(db, t, &id, &err_));
    return id;
}

static bool lookup(et_db *db, const et_db_trial *key, et_db_trial *out)
{
    bool found = false;
    CHECK(et_db_trial_lookup(db, key, out, &found, &err_));
    return found;
}

/* Reads a whole file (for before/after comparisons); *n gets its size. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot read %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)sz + 1);
    assert_non_null(buf);
    *n = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Runs SQL on a file through SQLite directly. */
static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *c;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(c, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(c);
}

static int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *c;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(c));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return v;
}

/* Opening path must fail with ET_ERR_INPUT, a message containing `want`,
 * and leave the file exactly as it was (and no -wal beside it). */
static void refused_untouched(const char *path, const char *want)
{
    size_t n0, n1;
    unsigned char *before = slurp(path, &n0);
    et_db *db = (et_db *)0x1;
    et_error err = {{0}};
    et_status st = et_db_open(path, &db, &err);
    assert_int_equal(st, ET_ERR_INPUT);
    assert_null(db);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, path));
    unsigned char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    char wal[512];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    assert_false(exists(wal));
}

/* ---- schema ------------------------------------------------------------ */

static void test_create_and_reopen(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "create");
    et_db *db = open_ok(path);
    assert_string_equal(et_db_path(db), path);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.schema_version, ET_DB_SCHEMA_VERSION);
    assert_int_equal(s.trials, 0);
    assert_true(s.file_bytes > 0);
    char msg[256];
    CHECK(et_db_integrity(db, msg, sizeof(msg), &err_));
    assert_string_equal(msg, "ok");
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    record(db, &t);
    et_db_close(db);

    assert_int_equal(sql_int(path, "PRAGMA application_id"),
                     ET_DB_APPLICATION_ID);
    assert_int_equal(sql_int(path, "PRAGMA user_version"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     ET_DB_SCHEMA_VERSION);

    db = open_ok(path);
    /* the same ids come back: nothing was re-created */
    assert_int_equal(einsum_id(db, &e), eid);
    assert_int_equal(device_id(db, &dev), did);
    et_db_trial got;
    assert_true(lookup(db, &t, &got));
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, 1);
    assert_int_equal(s.devices, 1);
    assert_int_equal(s.einsums, 1);
    assert_int_equal(s.by_outcome[ET_OUTCOME_OK], 1);
    et_db_close(db);
    sqlite3 *c;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(c, "PRAGMA journal_mode", -1, &st,
                                        NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(c);
}

static void test_default_path(void **state)
{
    (void)state;
    char want[512], got[512];
    snprintf(want, sizeof(want), "%s/xdg/nested/eintune/tuning.db", tmpdir);
    CHECK(et_db_default_path(got, sizeof(got), &err_));
    assert_string_equal(got, want);
    et_db *db = open_ok(NULL);
    assert_string_equal(et_db_path(db), want);
    et_db_close(db);
    assert_true(exists(want));
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/xdg/nested/eintune", tmpdir);
    struct stat sb;
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    /* HOME when XDG_CACHE_HOME is unset or relative */
    char *old = strdup(getenv("XDG_CACHE_HOME"));
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", "/home/someone", 1);
    CHECK(et_db_default_path(got, sizeof(got), &err_));
    assert_string_equal(got, "/home/someone/.cache/eintune/tuning.db");
    setenv("XDG_CACHE_HOME", old, 1);
    if (home)
        setenv("HOME", home, 1);
    free(old);
    free(home);

    /* an explicit path in a missing directory: a clear error */
    char bad[512];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/x.db", tmpdir);
    et_db *db2 = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(bad, &db2, &err), ET_ERR_IO);
    assert_null(db2);
    assert_non_null(strstr(err.msg, bad));
}

/* ---- the key ----------------------------------------------------------- */

static void test_record_and_lookup(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "record");
    et_db *db = open_ok(path);
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    int64_t sid = 0;
    CHECK(et_db_space_id(db, "matmul", "0123456789abcdef", &sid, &err_));
    int64_t sid2 = 0;
    CHECK(et_db_space_id(db, "matmul", "0123456789abcdef", &sid2, &err_));
    assert_int_equal(sid, sid2);
    CHECK(et_db_space_id(db, "matmul", "fedcba9876543210", &sid2, &err_));
    assert_int_not_equal(sid, sid2);

    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,2) UPCAST(k,2)",
                             ET_OUTCOME_OK, 2.5e-3);
    t.space_id = sid;
    t.compile_s = 0.25;
    int64_t id = record(db, &t);
    assert_true(id > 0);

    et_db_trial got;
    assert_true(lookup(db, &t, &got));
    assert_int_equal(got.id, id);
    assert_int_equal(got.einsum_id, eid);
    assert_int_equal(got.device_id, did);
    assert_int_equal(got.space_id, sid);
    assert_string_equal(got.einsum_text, "ij,jk->ik");
    assert_string_equal(got.opts, "LOCAL(i,2) UPCAST(k,2)");
    assert_string_equal(got.source_hash, t.source_hash);
    assert_int_equal(strlen(got.source_hash), 16);
    assert_int_equal(got.renderer_version, ET_RENDERER_VERSION);
    assert_string_equal(got.params_json, t.params_json);
    assert_string_equal(got.kernel_name, "r_4_6_5");
    assert_int_equal(got.outcome, ET_OUTCOME_OK);
    assert_true(got.median_s == 2.5e-3);
    assert_true(got.low_s == t.low_s && got.high_s == t.high_s);
    assert_true(got.cv == 0.01 && got.runs == 8);
    assert_int_equal(got.verify_trials, 3);
    assert_true(got.max_norm_err == 0.03 && got.p_value == 0.5);
    assert_true(got.gops == t.gops && got.compile_s == 0.25);
    assert_true(got.created_at > 0);
    assert_string_equal(got.eintune_version, ET_VERSION);

    /* every key field matters */
    et_db_trial k = t;
    snprintf(k.opts, sizeof(k.opts), "LOCAL(i,2)");
    assert_false(lookup(db, &k, &got));
    k = t;
    snprintf(k.source_hash, sizeof(k.source_hash), "0000000000000000");
    assert_false(lookup(db, &k, &got));
    k = t;
    k.device_id = device_id(db, &(et_device_info){0});
    assert_false(lookup(db, &k, &got));

    /* space and params are not in the key: the same kernel, one trial */
    k = t;
    k.space_id = sid2;
    assert_true(lookup(db, &k, &got));

    /* re-recording (--retime) replaces, keeping the row id */
    et_db_trial r = t;
    r.median_s = 1.5e-3;
    r.space_id = sid2;
    assert_int_equal(record(db, &r), id);
    assert_true(lookup(db, &t, &got));
    assert_true(got.median_s == 1.5e-3);
    assert_int_equal(got.space_id, sid2);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, 1);
    assert_int_equal(s.spaces, 2);

    /* out may be the key itself */
    et_db_trial same = t;
    assert_true(lookup(db, &same, &same));
    assert_int_equal(same.id, id);

    /* a NaN figure comes back NaN */
    et_db_trial n = trial_of(eid, &e, did, "UPCAST(k,3)", ET_OUTCOME_OK,
                             1e-3);
    n.p_value = NAN;
    record(db, &n);
    assert_true(lookup(db, &n, &got));
    assert_true(isnan(got.p_value));

    /* a trial naming rows that do not exist is refused */
    et_db_trial bad = t;
    bad.einsum_id = 9999;
    et_error err = {{0}};
    assert_int_equal(et_db_trial_record(db, &bad, NULL, &err), ET_ERR_INPUT);
    bad = t;
    bad.outcome = ET_OUTCOME_COUNT;
    assert_int_equal(et_db_trial_record(db, &bad, NULL, &err), ET_ERR_INPUT);
    et_db_close(db);
}

static void test_source_hash(void **state)
{
    (void)state;
    et_launch a = {
        .ndim = 2, .global = {64, 32, 1}, .local = {8, 4, 1}, .has_local = true};
    et_launch b = a;
    b.local[0] = 16;
    char h1[ET_DB_HASH_LEN], h2[ET_DB_HASH_LEN], h3[ET_DB_HASH_LEN];
    et_db_source_hash("kernel", &a, h1);
    et_db_source_hash("kernel", &a, h2);
    assert_string_equal(h1, h2);
    et_db_source_hash("kernel", &b, h3);
    assert_string_not_equal(h1, h3);
    et_db_source_hash("kernel ", &a, h3);
    assert_string_not_equal(h1, h3);
    et_db_source_hash("kernel", NULL, h3);
    assert_string_not_equal(h1, h3);
    /* FNV-1a 64 test vectors */
    char hex[ET_DB_HASH_LEN];
    et_db_hash_hex("", 0, hex);
    assert_string_equal(hex, "cbf29ce484222325");
    et_db_hash_hex("a", 1, hex);
    assert_string_equal(hex, "af63dc4c8601ec8c");
    et_db_hash_hex("foobar", 6, hex);
    assert_string_equal(hex, "85944171f73967e8");
}

static void test_key_invalidation(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "invalidate");
    et_db *db = open_ok(path);
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    record(db, &t);
    et_db_trial got;
    bool found;
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_true(found);

    /* a new driver version is another device: miss */
    et_device_info newer = device_of("pthread-test", "3.2");
    CHECK(et_db_best(db, &e, &newer, &got, &found, &err_));
    assert_false(found);
    int64_t did2 = device_id(db, &newer);
    assert_int_not_equal(did, did2);
    et_db_trial k = trial_of(eid, &e, did2, "LOCAL(i,2)", ET_OUTCOME_OK, 0);
    assert_false(lookup(db, &k, &got));
    CHECK(et_db_best(db, &e, &newer, &got, &found, &err_));
    assert_false(found);
    /* a CUDA device of the same name and driver is another device too */
    et_device_info cuda = dev;
    cuda.target.backend = ET_BACKEND_CUDA;
    CHECK(et_db_best(db, &e, &cuda, &got, &found, &err_));
    assert_false(found);
    /* vendor or device_version changes do not split the device */
    et_device_info same = dev;
    snprintf(same.vendor, sizeof(same.vendor), "Other");
    assert_int_equal(device_id(db, &same), did);

    /* another renderer version: miss, and best ignores the old one */
    k = t;
    k.renderer_version = ET_RENDERER_VERSION + 1;
    assert_false(lookup(db, &k, &got));
    et_db_trial old = trial_of(eid, &e, did, "UPCAST(k,2)", ET_OUTCOME_OK,
                               1e-6);
    old.renderer_version = ET_RENDERER_VERSION - 1;
    record(db, &old);
    assert_true(lookup(db, &old, &got));
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_true(found);
    assert_string_equal(got.opts, "LOCAL(i,2)");
    et_db_trial cur = old;
    cur.renderer_version = ET_RENDERER_VERSION;
    assert_false(lookup(db, &cur, &got));

    /* another size or dtype is another einsum */
    et_einsum e2;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=7", "f32", &e2);
    CHECK(et_db_best(db, &e2, &dev, &got, &found, &err_));
    assert_false(found);
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f64", &e2);
    CHECK(et_db_best(db, &e2, &dev, &got, &found, &err_));
    assert_false(found);
    assert_int_not_equal(einsum_id(db, &e2), eid);
    et_db_close(db);
}

/* ---- best -------------------------------------------------------------- */

static void test_best(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "best");
    et_db *db = open_ok(path);
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    et_db_trial got;
    bool found = true;
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_false(found);

    static const struct {
        const char *opts;
        et_outcome o;
        double median;
    } cases[] = {
        {"LOCAL(i,2)", ET_OUTCOME_OK, 3e-3},
        {"LOCAL(i,4)", ET_OUTCOME_OK, 1e-3},
        {"UPCAST(k,2)", ET_OUTCOME_OK, 2e-3},
        {"UPCAST(k,3)", ET_OUTCOME_WRONG_RESULT, 1e-5},
        {"UNROLL(j,5)", ET_OUTCOME_SLOWER_THAN_BOUND, 1e-4},
        {"LOCAL(i,3)", ET_OUTCOME_REFUSED, 0},
        {"LOCAL(k,2)", ET_OUTCOME_TIMEOUT, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        et_db_trial t = trial_of(eid, &e, did, cases[i].opts, cases[i].o,
                                 cases[i].median);
        record(db, &t);
    }
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_true(found);
    assert_string_equal(got.opts, "LOCAL(i,4)");
    assert_true(got.median_s == 1e-3);
    assert_int_equal(got.outcome, ET_OUTCOME_OK);
    et_db_trial by_ids;
    CHECK(et_db_best_ids(db, eid, did, &by_ids, &found, &err_));
    assert_true(found);
    assert_int_equal(by_ids.id, got.id);

    /* a retimed trial that became slower loses its place */
    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,4)", ET_OUTCOME_OK, 9e-3);
    record(db, &t);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "UPCAST(k,2)");
    /* and one that now fails is no longer a candidate */
    t = trial_of(eid, &e, did, "UPCAST(k,2)", ET_OUTCOME_WRONG_RESULT, 2e-3);
    record(db, &t);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,2)");

    /* a final race's choice wins over the smallest median (the race
     * compared its kernels in one run), the latest race first */
    t = trial_of(eid, &e, did, "LOCAL(i,4)", ET_OUTCOME_OK, 2.5e-3);
    record(db, &t);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,4)");
    et_db_race race;
    memset(&race, 0, sizeof race);
    race.einsum_id = eid;
    race.device_id = did;
    snprintf(race.einsum_text, sizeof race.einsum_text, "%s", e.text);
    race.rounds = 2;
    race.conf = 0.95;
    snprintf(race.verdict, sizeof race.verdict, "tied");
    snprintf(race.chosen_opts, sizeof race.chosen_opts, "LOCAL(i,2)");
    snprintf(race.runner_up_opts, sizeof race.runner_up_opts, "LOCAL(i,4)");
    race.faster_pct = race.faster_lo = race.faster_hi = NAN;
    race.speedup = 2;
    race.speedup_lo = 1.5;
    race.speedup_hi = 2.5;
    race.load_1m = NAN;
    race.created_at = 1000;
    const double times[4] = {3e-3, 2.9e-3, 3.1e-3, 2.8e-3};
    race.n = 2;
    for (int i = 0; i < 2; i++) {
        snprintf(race.e[i].opts, sizeof race.e[i].opts, "%s",
                 i ? "LOCAL(i,4)" : "LOCAL(i,2)");
        race.e[i].chosen = i == 0;
        race.e[i].tied = true;
        race.e[i].median_s = times[i];
        race.e[i].times = times + i;
        race.e[i].stride = 2;
    }
    int64_t race_id = 0;
    CHECK(et_db_race_record(db, &race, &race_id, &err_));
    assert_true(race_id > 0);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,2)");
    /* a later race that chose another kernel takes over */
    race.created_at = 2000;
    snprintf(race.chosen_opts, sizeof race.chosen_opts, "LOCAL(i,4)");
    CHECK(et_db_race_record(db, &race, NULL, &err_));
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,4)");
    /* a chosen kernel whose trial now fails does not count */
    t = trial_of(eid, &e, did, "LOCAL(i,4)", ET_OUTCOME_WRONG_RESULT, 1e-3);
    record(db, &t);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,2)");
    et_db_stats stats;
    CHECK(et_db_stats_get(db, &stats, &err_));
    assert_int_equal(stats.races, 2);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM race_entries"), 4);
    et_db_close(db);
    assert_int_equal(
        sql_int(path, "SELECT count(*) FROM race_entries WHERE times_json = "
                      "'[0.003, 0.0031]' AND position = 0"),
        2);
}

static void test_canonical_renamed(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "canon");
    et_db *db = open_ok(path);
    et_einsum e, renamed, swapped, other;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    einsum_ok("ab,bc->ac", "a=4,b=5,c=6", "f32", &renamed);
    einsum_ok("jk,ij->ik", "i=4,j=5,k=6", "f32", &swapped);
    einsum_ok("ab,bc->ac", "a=4,b=6,c=5", "f32", &other);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    assert_int_equal(einsum_id(db, &renamed), eid);
    assert_int_equal(einsum_id(db, &swapped), eid);
    int64_t oid = einsum_id(db, &other);
    assert_int_not_equal(oid, eid);

    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,2)", ET_OUTCOME_OK, 2e-3);
    record(db, &t);
    t = trial_of(eid, &e, did, "LOCAL(i,4)", ET_OUTCOME_OK, 1e-3);
    record(db, &t);
    /* a faster trial recorded under the renamed form */
    et_db_trial r = trial_of(eid, &renamed, did, "LOCAL(a,4) UPCAST(c,2)",
                             ET_OUTCOME_OK, 5e-4);
    record(db, &r);
    /* and a fast one of the other sizes, which must not count */
    et_db_trial o = trial_of(oid, &other, did, "LOCAL(a,2)", ET_OUTCOME_OK,
                             1e-6);
    record(db, &o);

    et_db_trial b1, b2, b3;
    bool f1, f2, f3;
    CHECK(et_db_best(db, &e, &dev, &b1, &f1, &err_));
    CHECK(et_db_best(db, &renamed, &dev, &b2, &f2, &err_));
    CHECK(et_db_best(db, &swapped, &dev, &b3, &f3, &err_));
    assert_true(f1 && f2 && f3);
    assert_int_equal(b1.id, b2.id);
    assert_int_equal(b1.id, b3.id);
    assert_string_equal(b1.opts, "LOCAL(a,4) UPCAST(c,2)");
    /* the naming its opts are written in comes with it */
    assert_string_equal(b1.einsum_text, "ab,bc->ac");

    /* the same opt text on a renamed equivalent is another key: in
     * "ji,ik->jk" index i is summed, so LOCAL(i,2) means something else
     * (here: refused, with no source to tell the two apart) */
    et_einsum flipped;
    einsum_ok("ji,ik->jk", "j=4,i=5,k=6", "f32", &flipped);
    assert_int_equal(einsum_id(db, &flipped), eid);
    et_db_trial ref = trial_of(eid, &flipped, did, "LOCAL(i,2)",
                               ET_OUTCOME_REFUSED, 0);
    et_db_trial got;
    assert_false(lookup(db, &ref, &got));
    record(db, &ref);
    assert_true(lookup(db, &ref, &got));
    assert_int_equal(got.outcome, ET_OUTCOME_REFUSED);
    et_db_trial ok = trial_of(eid, &e, did, "LOCAL(i,2)", ET_OUTCOME_OK, 0);
    assert_true(lookup(db, &ok, &got));
    assert_int_equal(got.outcome, ET_OUTCOME_OK);
    et_db_close(db);
}

/* ---- failures ---------------------------------------------------------- */

static void test_failures_kept(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "fail");
    et_db *db = open_ok(path);
    et_einsum e;
    einsum_ok("xik,kj->xij", "x=8,i=4,k=4,j=4", "f64", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    for (int o = 1; o < ET_OUTCOME_COUNT; o++) {
        char opts[64];
        snprintf(opts, sizeof(opts), "LOCAL(x,%d)", o);
        et_db_trial t = trial_of(eid, &e, did, opts, (et_outcome)o,
                                 o == ET_OUTCOME_SLOWER_THAN_BOUND ? 1e-2
                                                                   : 0);
        snprintf(t.reason, sizeof(t.reason), "reason %s",
                 et_outcome_name((et_outcome)o));
        record(db, &t);
    }
    et_db_close(db);

    /* a resumed run, in a new handle, finds each with its reason */
    db = open_ok(path);
    for (int o = 1; o < ET_OUTCOME_COUNT; o++) {
        char opts[64], reason[64];
        snprintf(opts, sizeof(opts), "LOCAL(x,%d)", o);
        snprintf(reason, sizeof(reason), "reason %s",
                 et_outcome_name((et_outcome)o));
        et_db_trial k = trial_of(eid, &e, did, opts, (et_outcome)o, 0), got;
        assert_true(lookup(db, &k, &got));
        assert_int_equal(got.outcome, o);
        assert_string_equal(got.reason, reason);
    }
    et_db_trial best;
    bool found;
    CHECK(et_db_best(db, &e, &dev, &best, &found, &err_));
    assert_false(found);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, ET_OUTCOME_COUNT - 1);
    assert_int_equal(s.by_outcome[ET_OUTCOME_OK], 0);
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        assert_int_equal(s.by_outcome[o], 1);
    et_db_close(db);
}

/* et_db_trial_set_evaluation from an et_evaluation */
static void test_set_evaluation(void **state)
{
    (void)state;
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=100,j=100,k=100", "f32", &e);
    et_db_trial t;
    CHECK(et_db_trial_init(&t, 1, &e, 2, "LOCAL(i,4)", "src", NULL, &err_));
    assert_true(isnan(t.p_value));
    et_evaluation ev;
    memset(&ev, 0, sizeof(ev));
    et_result_set(&ev.result, ET_OUTCOME_OK, "%s", "");
    ev.verified = true;
    ev.verify.trials = 3;
    ev.verify.max_norm_err = 0.031;
    ev.verify.p_value = 0.62;
    ev.timed = true;
    ev.timing.runs = 9;
    ev.timing.median_s = 1e-3;
    ev.timing.low_s = 0.9e-3;
    ev.timing.high_s = 1.1e-3;
    ev.timing.cv = 0.02;
    et_db_trial_set_evaluation(&t, &e, &ev);
    assert_int_equal(t.outcome, ET_OUTCOME_OK);
    assert_int_equal(t.verify_trials, 3);
    assert_true(t.p_value == 0.62);
    assert_int_equal(t.runs, 9);
    /* 2 * 100^3 ops in 1 ms = 2 GOps/s */
    assert_true(fabs(t.gops - 2.0) < 1e-9);

    char longopts[ET_DB_OPTS_LEN + 10];
    memset(longopts, 'A', sizeof(longopts) - 1);
    longopts[sizeof(longopts) - 1] = '\0';
    et_error err = {{0}};
    assert_int_equal(et_db_trial_init(&t, 1, &e, 2, longopts, NULL, NULL,
                                      &err),
                     ET_ERR_INPUT);
}

/* ---- peaks ------------------------------------------------------------- */

static void test_peaks(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "peaks");
    et_db *db = open_ok(path);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t did = device_id(db, &dev);
    char *json = NULL;
    bool found = true;
    CHECK(et_db_peaks_load(db, did, &json, NULL, &found, &err_));
    assert_false(found);
    assert_null(json);
    const char *p = "{\"gflops\": {\"f32\": 100.5}, \"bandwidth_gbs\": 20}";
    CHECK(et_db_peaks_store(db, did, p, 1700000000, &err_));
    int64_t when = 0;
    CHECK(et_db_peaks_load(db, did, &json, &when, &found, &err_));
    assert_true(found);
    assert_string_equal(json, p);
    assert_int_equal(when, 1700000000);
    free(json);
    /* the device row keeps its peaks when seen again */
    assert_int_equal(device_id(db, &dev), did);
    CHECK(et_db_peaks_load(db, did, &json, NULL, &found, &err_));
    assert_true(found);
    free(json);
    /* another driver: no peaks */
    et_device_info newer = device_of("pthread-test", "3.2");
    CHECK(et_db_peaks_load(db, device_id(db, &newer), &json, NULL, &found,
                           &err_));
    assert_false(found);
    et_error err = {{0}};
    assert_int_equal(et_db_peaks_store(db, 9999, p, 0, &err), ET_ERR_INPUT);
    et_db_close(db);
    /* peaks of another eintune version are a miss */
    sql_exec(path, "UPDATE devices SET peaks_eintune_version = '0.0.1'");
    db = open_ok(path);
    CHECK(et_db_peaks_load(db, did, &json, NULL, &found, &err_));
    assert_false(found);
    et_db_close(db);
}

/* ---- list and prune ---------------------------------------------------- */

typedef struct collected {
    int n;
    char opts[16][64];
    et_outcome outcome[16];
    char device[16][64];
    char canonical[16][128];
} collected;

static int collect(void *arg, const et_db_row *row)
{
    collected *c = arg;
    if (c->n < 16) {
        snprintf(c->opts[c->n], 64, "%.63s", row->trial.opts);
        c->outcome[c->n] = row->trial.outcome;
        snprintf(c->device[c->n], 64, "%.63s", row->device_name);
        snprintf(c->canonical[c->n], 128, "%.127s", row->canonical);
    }
    c->n++;
    return 0;
}

static int stop_after_two(void *arg, const et_db_row *row)
{
    (void)row;
    return ++*(int *)arg >= 2;
}

static void test_list_and_prune(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "prune");
    et_db *db = open_ok(path);
    et_einsum e, e2;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    einsum_ok("i->", "i=64", "f32", &e2);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), eid2 = einsum_id(db, &e2);
    int64_t did = device_id(db, &dev);
    int64_t long_ago = (int64_t)time(NULL) - 40 * 86400;
    struct {
        int64_t eid;
        const et_einsum *e;
        const char *opts;
        et_outcome o;
        double median;
        int renderer;
        int64_t created;
    } rows[] = {
        {eid, &e, "LOCAL(i,2)", ET_OUTCOME_OK, 2e-3, 0, 0},
        {eid, &e, "LOCAL(i,4)", ET_OUTCOME_OK, 1e-3, 0, long_ago},
        {eid, &e, "UPCAST(k,3)", ET_OUTCOME_WRONG_RESULT, 1e-3, 0, 0},
        {eid, &e, "UPCAST(k,5)", ET_OUTCOME_REFUSED, 0, 0, long_ago},
        {eid, &e, "UPCAST(k,2)", ET_OUTCOME_OK, 5e-4, -1, long_ago},
        {eid2, &e2, "GROUP(i,8)", ET_OUTCOME_OK, 1e-4, 0, 0},
        {eid2, &e2, "GROUP(i,7)", ET_OUTCOME_BUILD_ERROR, 0, -1, 0},
    };
    int nrows = (int)(sizeof(rows) / sizeof(rows[0]));
    for (int i = 0; i < nrows; i++) {
        et_db_trial t = trial_of(rows[i].eid, rows[i].e, did, rows[i].opts,
                                 rows[i].o, rows[i].median);
        t.renderer_version += rows[i].renderer;
        t.created_at = rows[i].created;
        record(db, &t);
    }

    collected c;
    memset(&c, 0, sizeof(c));
    CHECK(et_db_list(db, NULL, collect, &c, &err_));
    assert_int_equal(c.n, nrows);
    /* first einsum: ok fastest first, then failures newest first */
    assert_string_equal(c.opts[0], "UPCAST(k,2)");
    assert_string_equal(c.opts[1], "LOCAL(i,4)");
    assert_string_equal(c.opts[2], "LOCAL(i,2)");
    assert_string_equal(c.opts[3], "UPCAST(k,3)");
    assert_string_equal(c.opts[4], "UPCAST(k,5)");
    assert_string_equal(c.device[0], "pthread-test");
    assert_non_null(strstr(c.canonical[0], "|"));

    et_db_filter f;
    memset(&f, 0, sizeof(f));
    f.einsum_id = eid2;
    memset(&c, 0, sizeof(c));
    CHECK(et_db_list(db, &f, collect, &c, &err_));
    assert_int_equal(c.n, 2);
    f.einsum_id = 0;
    f.outcome_mask = 1u << ET_OUTCOME_OK;
    memset(&c, 0, sizeof(c));
    CHECK(et_db_list(db, &f, collect, &c, &err_));
    assert_int_equal(c.n, 4);
    f.limit = 2;
    memset(&c, 0, sizeof(c));
    CHECK(et_db_list(db, &f, collect, &c, &err_));
    assert_int_equal(c.n, 2);
    int calls = 0;
    CHECK(et_db_list(db, NULL, stop_after_two, &calls, &err_));
    assert_int_equal(calls, 2);

    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.old_renderer, 2);
    assert_int_equal(s.oldest, long_ago);

    /* prune: at least one criterion; criteria combine with "and" */
    et_db_prune_opts po;
    memset(&po, 0, sizeof(po));
    int64_t n = -1;
    et_error err = {{0}};
    assert_int_equal(et_db_prune(db, &po, &n, &err), ET_ERR_INPUT);
    po.failed = true;
    po.older_than_days = 30;
    po.dry_run = true;
    CHECK(et_db_prune(db, &po, &n, &err_));
    assert_int_equal(n, 1); /* UPCAST(k,5) refused long ago */
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, nrows);
    po.dry_run = false;
    CHECK(et_db_prune(db, &po, &n, &err_));
    assert_int_equal(n, 1);
    memset(&po, 0, sizeof(po));
    po.renderer_old = true;
    CHECK(et_db_prune(db, &po, &n, &err_));
    assert_int_equal(n, 2);
    memset(&po, 0, sizeof(po));
    po.failed = true;
    CHECK(et_db_prune(db, &po, &n, &err_));
    assert_int_equal(n, 1); /* UPCAST(k,3) */
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, 3);
    assert_int_equal(s.by_outcome[ET_OUTCOME_OK], 3);
    assert_int_equal(s.einsums, 2);
    memset(&po, 0, sizeof(po));
    po.older_than_days = 30;
    CHECK(et_db_prune(db, &po, &n, &err_));
    assert_int_equal(n, 1); /* LOCAL(i,4) */
    et_db_trial best;
    bool found;
    CHECK(et_db_best(db, &e, &dev, &best, &found, &err_));
    assert_true(found);
    assert_string_equal(best.opts, "LOCAL(i,2)");
    et_db_close(db);
}

/* ---- foreign, corrupt, newer, older files ------------------------------ */

static void test_corrupt_file(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "garbage");
    unsigned char junk[8192];
    srand(7);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)rand();
    write_file(path, junk, sizeof(junk));
    refused_untouched(path, "not a database");

    new_path(path, sizeof(path), "text");
    const char *text = "name,size\nx,4\n";
    write_file(path, text, strlen(text));
    refused_untouched(path, "not a database");

    new_path(path, sizeof(path), "short");
    write_file(path, "SQLite", 6);
    refused_untouched(path, "not a database");

    /* an eintune database whose first page (the schema) is garbled */
    new_path(path, sizeof(path), "garbled");
    et_db *db = open_ok(path);
    et_db_close(db);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    assert_true(n >= 4096);
    for (size_t i = 100; i < 4096; i++)
        bytes[i] = (unsigned char)(i * 37 + 11);
    write_file(path, bytes, n);
    free(bytes);
    refused_untouched(path, "not a database");

    /* a directory */
    et_error err = {{0}};
    assert_int_equal(et_db_open(tmpdir, &db, &err), ET_ERR_INPUT);
    assert_null(db);
}

static void test_foreign_sqlite(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "foreign");
    sql_exec(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
                   "INSERT INTO users (name) VALUES ('ada'), ('grace');");
    refused_untouched(path, "not an eintune database");

    /* another program's application id, no tables */
    new_path(path, sizeof(path), "foreign-appid");
    sql_exec(path, "PRAGMA application_id = 1234; "
                   "CREATE TABLE t (x); DROP TABLE t;");
    refused_untouched(path, "not an eintune database");

    /* a foreign WAL database in use, with its -wal beside it: classified
     * through the read-write connection, never checkpointed into */
    new_path(path, sizeof(path), "foreign-wal");
    sqlite3 *c;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    assert_int_equal(sqlite3_exec(c, "PRAGMA journal_mode = WAL;"
                                     "CREATE TABLE users (name TEXT);"
                                     "INSERT INTO users VALUES ('ada');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    char wal[600];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    assert_true(exists(wal));
    size_t n0, n1, w0, w1;
    unsigned char *before = slurp(path, &n0), *wbefore = slurp(wal, &w0);
    et_db *db = (et_db *)0x1;
    et_error err = {{0}};
    assert_int_equal(et_db_open(path, &db, &err), ET_ERR_INPUT);
    assert_null(db);
    assert_non_null(strstr(err.msg, "not an eintune database"));
    unsigned char *after = slurp(path, &n1), *wafter = slurp(wal, &w1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(w0, w1);
    assert_memory_equal(wbefore, wafter, w0);
    free(before);
    free(after);
    free(wbefore);
    free(wafter);
    sqlite3_close(c);

    /* an empty file is a new database */
    new_path(path, sizeof(path), "empty");
    write_file(path, "", 0);
    db = open_ok(path);
    et_db_close(db);
    assert_int_equal(sql_int(path, "PRAGMA user_version"),
                     ET_DB_SCHEMA_VERSION);
}

static void test_newer_schema(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "newer");
    et_db *db = open_ok(path);
    et_db_close(db);
    sql_exec(path, "PRAGMA user_version = 99");
    /* checkpoint the WAL into the file so the comparison sees it all */
    sql_exec(path, "PRAGMA wal_checkpoint(TRUNCATE); "
                   "PRAGMA journal_mode = DELETE");
    refused_untouched(path, "newer eintune");
    et_error err = {{0}};
    assert_int_equal(et_db_open(path, &db, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "99"));
}

/* The schema of version 1, as it was, written here by hand. */
static const char schema_v1[] =
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
    "  applied_at INTEGER NOT NULL, eintune_version TEXT NOT NULL);"
    "CREATE TABLE devices (id INTEGER PRIMARY KEY, backend TEXT NOT NULL,"
    "  name TEXT NOT NULL, driver_version TEXT NOT NULL,"
    "  vendor TEXT NOT NULL DEFAULT '', device_version TEXT NOT NULL "
    "  DEFAULT '', limits_json TEXT NOT NULL DEFAULT '{}',"
    "  first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL,"
    "  UNIQUE (backend, name, driver_version));"
    "CREATE TABLE einsums (id INTEGER PRIMARY KEY,"
    "  canonical TEXT NOT NULL UNIQUE, text TEXT NOT NULL,"
    "  sizes TEXT NOT NULL, dtypes TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE spaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  content_hash TEXT NOT NULL, created_at INTEGER NOT NULL,"
    "  UNIQUE (name, content_hash));"
    "CREATE TABLE trials (id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  einsum_text TEXT NOT NULL,"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  opts TEXT NOT NULL, renderer_version INTEGER NOT NULL,"
    "  source_hash TEXT NOT NULL, space_id INTEGER REFERENCES spaces(id),"
    "  params_json TEXT NOT NULL DEFAULT '',"
    "  kernel_name TEXT NOT NULL DEFAULT '',"
    "  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'refused',"
    "    'build_error', 'launch_error', 'wrong_result', 'timeout', 'crash',"
    "    'slower_than_bound')),"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  median_s REAL, low_s REAL, high_s REAL, cv REAL,"
    "  runs INTEGER NOT NULL DEFAULT 0,"
    "  verify_trials INTEGER NOT NULL DEFAULT 0,"
    "  max_norm_err REAL, p_value REAL, gops REAL, compile_s REAL,"
    "  created_at INTEGER NOT NULL, eintune_version TEXT NOT NULL);"
    "CREATE UNIQUE INDEX trials_key ON trials (einsum_id, device_id,"
    "  einsum_text, opts, renderer_version, source_hash);"
    "CREATE INDEX trials_best ON trials (einsum_id, device_id, outcome,"
    "  median_s);"
    "CREATE INDEX trials_space ON trials (space_id);"
    "INSERT INTO schema_migrations VALUES (1, 1600000000, '0.0.9');";

/* A version-1 file at path as eintune 0.0.9 wrote it: schema_v1 with a
 * device, a space, an einsum, a verified trial t and a refused trial r;
 * `extra` (SQL) runs last, before the version is set. */
static void write_v1(const char *path, const et_einsum *e,
                     const et_db_trial *t, const et_db_trial *r,
                     const char *extra)
{
    char canon[ET_DB_CANON_LEN];
    et_einsum_canonical(e, canon, sizeof(canon));
    static char sql[32768];
    snprintf(sql, sizeof(sql),
             "%s"
             "INSERT INTO devices VALUES (1, 'opencl', 'pthread-test', '3.1',"
             "  'Test Vendor', 'OpenCL 3.0', '{\"max_wg\": 4096}',"
             "  1600000000, 1600000100);"
             "INSERT INTO spaces VALUES (1, 'matmul.yaml', 'abcdef0123456789',"
             "  1600000000);"
             "INSERT INTO einsums VALUES (1, '%s', 'ij,jk->ik', "
             "  'i=4,j=5,k=6', 'f32,f32->f32', 1600000000);"
             "INSERT INTO trials (einsum_id, einsum_text, device_id, opts,"
             "  renderer_version, source_hash, space_id, params_json,"
             "  kernel_name, outcome, median_s, low_s, high_s, cv, runs,"
             "  verify_trials, max_norm_err, compile_s, created_at,"
             "  eintune_version) VALUES (1, 'ij,jk->ik', 1, '%s', %d, '%s',"
             "  1, '{\"tile\": 2}', 'r_2_6', 'ok', 0.001, 0.00099, 0.00101,"
             "  0.01, 8, 3, 0.25, 0.5, 1600000200, '0.0.9');"
             "INSERT INTO trials (einsum_id, einsum_text, device_id, opts,"
             "  renderer_version, source_hash, outcome, reason, created_at,"
             "  eintune_version) VALUES (1, 'ij,jk->ik', 1, '%s', %d, '',"
             "  'refused', 'made-up reason', 1600000300, '0.0.9');"
             "%s"
             "PRAGMA application_id = %d; PRAGMA user_version = 1;",
             schema_v1, canon, t->opts, ET_RENDERER_VERSION, t->source_hash,
             r->opts, ET_RENDERER_VERSION, extra ? extra : "",
             ET_DB_APPLICATION_ID);
    sql_exec(path, sql);
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 1);
}

static int like_hits;
static int64_t like_id;

static int like_cb(void *arg, const et_db_einsum_row *row)
{
    (void)arg;
    like_hits++;
    like_id = row->id;
    return 0;
}

static void test_migrate_v1(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "v1");
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_db_trial t = trial_of(1, &e, 1, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    et_db_trial r = trial_of(1, &e, 1, "UPCAST(j,4)", ET_OUTCOME_REFUSED, 0);
    write_v1(path, &e, &t, &r, NULL);

    et_db *db = open_ok(path);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.schema_version, ET_DB_SCHEMA_VERSION);
    assert_int_equal(s.trials, 2);
    /* every field of the verified trial comes through */
    et_db_trial got;
    assert_true(lookup(db, &t, &got));
    assert_string_equal(got.eintune_version, "0.0.9");
    assert_int_equal(got.outcome, ET_OUTCOME_OK);
    assert_int_equal(got.space_id, 1);
    assert_string_equal(got.params_json, "{\"tile\": 2}");
    assert_string_equal(got.kernel_name, "r_2_6");
    assert_true(got.median_s == 0.001 && got.low_s == 0.00099 &&
                got.high_s == 0.00101 && got.cv == 0.01);
    assert_int_equal(got.runs, 8);
    assert_int_equal(got.verify_trials, 3);
    assert_true(got.max_norm_err == 0.25 && got.compile_s == 0.5);
    assert_true(isnan(got.p_value)); /* NULL in the file */
    assert_int_equal(got.created_at, 1600000200);
    /* and the refused one, NULL figures and all */
    assert_true(lookup(db, &r, &got));
    assert_int_equal(got.outcome, ET_OUTCOME_REFUSED);
    assert_string_equal(got.reason, "made-up reason");
    assert_string_equal(got.source_hash, "");
    /* the rows it refers to keep their ids */
    et_device_info dev = device_of("pthread-test", "3.1");
    assert_int_equal(device_id(db, &dev), 1);
    assert_int_equal(einsum_id(db, &e), 1);
    int64_t sid = 0;
    CHECK(et_db_space_id(db, "matmul.yaml", "abcdef0123456789", &sid,
                         &err_));
    assert_int_equal(sid, 1);
    bool found;
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_true(found);
    assert_string_equal(got.opts, t.opts);
    /* what version 2 added works: no peaks yet, then stored and read */
    char *json = NULL;
    CHECK(et_db_peaks_load(db, 1, &json, NULL, &found, &err_));
    assert_false(found);
    free(json);
    CHECK(et_db_peaks_store(db, 1, "{}", 0, &err_));
    CHECK(et_db_peaks_load(db, 1, &json, NULL, &found, &err_));
    assert_true(found);
    free(json);
    /* what version 3 added works: no race yet, the load column NULL */
    assert_true(isnan(got.load_1m));
    /* what version 4 added: a campaign's table, empty */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM campaign_results"),
                     0);
    /* what version 5 added: the old einsum's structure form was rebuilt
     * from its canonical form, so other sizes of it find it */
    et_einsum other;
    einsum_ok("ab,bc->ac", "a=9,b=2,c=7", "f32", &other);
    like_hits = 0;
    like_id = 0;
    CHECK(et_db_einsums_like(db, &other, like_cb, NULL, &err_));
    assert_int_equal(like_hits, 1);
    assert_int_equal(like_id, 1);
    einsum_ok("ab,bc->ac", "a=9,b=2,c=7", "f64", &other);
    like_hits = 0;
    CHECK(et_db_einsums_like(db, &other, like_cb, NULL, &err_));
    assert_int_equal(like_hits, 0); /* other dtypes: another structure */
    got.tuned_at[0] = 'q';
    assert_true(lookup(db, &t, &got));
    assert_string_equal(got.tuned_at, "");
    /* new trials go in beside the old ones */
    et_db_trial n = trial_of(1, &e, 1, "LOCAL(i,4)", ET_OUTCOME_OK, 5e-4);
    CHECK(et_db_trial_record(db, &n, NULL, &err_));
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,4)");
    et_db_close(db);

    assert_int_equal(sql_int(path, "PRAGMA user_version"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "PRAGMA application_id"),
                     ET_DB_APPLICATION_ID);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM trials"), 3);
    /* (et_db_device_id above updated its limits, not its history) */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM devices WHERE "
                                   "first_seen = 1600000000"),
                     1);
    /* one row per step: the old one as it was, then each step applied */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT applied_at FROM schema_migrations "
                                   "WHERE version = 1"),
                     1600000000);
    assert_int_equal(sql_int(path, "SELECT max(version) FROM "
                                   "schema_migrations"),
                     ET_DB_SCHEMA_VERSION);
    /* opening again migrates nothing */
    db = open_ok(path);
    et_db_close(db);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     ET_DB_SCHEMA_VERSION);

    /* a step that fails (here: version 2's column is already there) leaves
     * the file at version 1 with its rows */
    new_path(path, sizeof(path), "v1bad");
    write_v1(path, &e, &t, &r, "ALTER TABLE devices ADD COLUMN peaks_json;");
    et_error err = {{0}};
    db = NULL;
    assert_int_not_equal(et_db_open(path, &db, &err), ET_OK);
    assert_null(db);
    assert_non_null(strstr(err.msg, "migrating to schema version 2"));
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM trials"), 2);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     1);

    /* version 0: an eintune-marked file with no schema yet */
    new_path(path, sizeof(path), "v0");
    sql_exec(path, "PRAGMA application_id = 1163150402; "
                   "CREATE TABLE t (x); DROP TABLE t;");
    assert_int_equal(sql_int(path, "PRAGMA application_id"),
                     ET_DB_APPLICATION_ID);
    db = open_ok(path);
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.schema_version, ET_DB_SCHEMA_VERSION);
    et_db_close(db);
}

/* What versions 2 and 3 added, as they were, written here by hand: a
 * version-3 file is what eintune wrote before open axes (final races,
 * the load with each trial, no einsums.structure, no trials.tuned_at). */
static const char schema_v2_v3[] =
    "ALTER TABLE devices ADD COLUMN peaks_json TEXT;"
    "ALTER TABLE devices ADD COLUMN peaks_measured_at INTEGER;"
    "ALTER TABLE devices ADD COLUMN peaks_eintune_version TEXT;"
    "ALTER TABLE trials ADD COLUMN load_1m REAL;"
    "CREATE TABLE races (id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  einsum_text TEXT NOT NULL, rounds INTEGER NOT NULL,"
    "  conf REAL NOT NULL,"
    "  verdict TEXT NOT NULL CHECK (verdict IN ('faster', 'tied', 'alone')),"
    "  chosen_opts TEXT NOT NULL, runner_up_opts TEXT,"
    "  faster_pct REAL, faster_lo REAL, faster_hi REAL,"
    "  speedup REAL, speedup_lo REAL, speedup_hi REAL, load_1m REAL,"
    "  created_at INTEGER NOT NULL, eintune_version TEXT NOT NULL);"
    "CREATE INDEX races_key ON races (einsum_id, device_id, created_at);"
    "CREATE TABLE race_entries ("
    "  race_id INTEGER NOT NULL REFERENCES races(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL, opts TEXT NOT NULL,"
    "  kernel_name TEXT NOT NULL, source_hash TEXT NOT NULL,"
    "  untransformed INTEGER NOT NULL, chosen INTEGER NOT NULL,"
    "  tied INTEGER NOT NULL, median_s REAL, low_s REAL, high_s REAL,"
    "  cv REAL, times_json TEXT NOT NULL, PRIMARY KEY (race_id, position));"
    "INSERT INTO schema_migrations VALUES (2, 1650000000, '0.1.0');"
    "INSERT INTO schema_migrations VALUES (3, 1700000000, '0.2.0');";

/* A version-3 file at path: write_v1's rows, then versions 2 and 3 with
 * a second verified trial s (load 0.5) slower than t, and a final race
 * that chose s over t; `extra` (SQL) runs last. */
static void write_v3(const char *path, const et_einsum *e,
                     const et_db_trial *t, const et_db_trial *r,
                     const et_db_trial *slow, const char *extra)
{
    static char sql[20480];
    snprintf(sql, sizeof(sql),
             "%s"
             "UPDATE trials SET load_1m = 1.25 WHERE opts = '%s';"
             "INSERT INTO trials (einsum_id, einsum_text, device_id, opts,"
             "  renderer_version, source_hash, kernel_name, outcome,"
             "  median_s, low_s, high_s, cv, runs, verify_trials,"
             "  created_at, eintune_version, load_1m) VALUES (1, 'ij,jk->ik',"
             "  1, '%s', %d, '%s', 'r_4_6', 'ok', 0.002, 0.0019, 0.0021,"
             "  0.02, 8, 3, 1700000100, '0.2.0', 0.5);"
             "INSERT INTO races VALUES (1, 1, 1, 'ij,jk->ik', 30, 0.95,"
             "  'tied', '%s', '%s', 2.0, -1.0, 5.0, 1.5, 1.2, 1.8, 0.75,"
             "  1700000200, '0.2.0');"
             "INSERT INTO race_entries VALUES (1, 0, '%s', 'r_4_6', '%s', 0,"
             "  1, 1, 0.002, 0.0019, 0.0021, 0.02, '[0.002, 0.0021]');"
             "INSERT INTO race_entries VALUES (1, 1, '%s', 'r_2_6', '%s', 0,"
             "  0, 1, 0.001, 0.00099, 0.00101, 0.01, '[0.001, 0.0011]');"
             "%s",
             schema_v2_v3, t->opts, slow->opts, ET_RENDERER_VERSION,
             slow->source_hash, slow->opts, t->opts, slow->opts,
             slow->source_hash, t->opts, t->source_hash,
             extra ? extra : "");
    write_v1(path, e, t, r, sql);
    sql_exec(path, "PRAGMA user_version = 3;");
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 3);
}

static void test_migrate_v3(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "v3");
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_db_trial t = trial_of(1, &e, 1, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    et_db_trial r = trial_of(1, &e, 1, "UPCAST(j,4)", ET_OUTCOME_REFUSED, 0);
    et_db_trial slow = trial_of(1, &e, 1, "UPCAST(k,2)", ET_OUTCOME_OK,
                                2e-3);
    write_v3(path, &e, &t, &r, &slow, NULL);

    et_db *db = open_ok(path);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.schema_version, ET_DB_SCHEMA_VERSION);
    assert_int_equal(s.trials, 3);
    assert_int_equal(s.races, 1);
    /* the trials keep what version 3 gave them and get no tune-at size */
    et_db_trial got;
    assert_true(lookup(db, &t, &got));
    assert_true(got.load_1m == 1.25);
    assert_string_equal(got.tuned_at, "");
    assert_true(lookup(db, &slow, &got));
    assert_true(got.load_1m == 0.5);
    assert_true(got.median_s == 0.002);
    assert_string_equal(got.eintune_version, "0.2.0");
    assert_true(lookup(db, &r, &got));
    assert_true(isnan(got.load_1m));
    /* the race still decides the best: its choice, not the smaller median */
    et_device_info dev = device_of("pthread-test", "3.1");
    bool found;
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_true(found);
    assert_string_equal(got.opts, "UPCAST(k,2)");
    /* the einsum's structure form was rebuilt: other sizes find it */
    et_einsum other;
    einsum_ok("ab,bc->ac", "a=8,b=3,c=2", "f32", &other);
    like_hits = 0;
    like_id = 0;
    CHECK(et_db_einsums_like(db, &other, like_cb, NULL, &err_));
    assert_int_equal(like_hits, 1);
    assert_int_equal(like_id, 1);
    /* a new race after the migration takes over */
    et_db_race *race = calloc(1, sizeof *race);
    assert_non_null(race);
    race->einsum_id = 1;
    race->device_id = 1;
    snprintf(race->einsum_text, sizeof race->einsum_text, "%s", e.text);
    race->rounds = 1;
    race->conf = 0.95;
    snprintf(race->verdict, sizeof race->verdict, "faster");
    snprintf(race->chosen_opts, sizeof race->chosen_opts, "%s", t.opts);
    race->faster_pct = race->faster_lo = race->faster_hi = NAN;
    race->speedup = race->speedup_lo = race->speedup_hi = NAN;
    race->load_1m = NAN;
    race->created_at = 1800000000;
    const double one = 1e-3;
    race->n = 1;
    snprintf(race->e[0].opts, sizeof race->e[0].opts, "%s", t.opts);
    race->e[0].chosen = true;
    race->e[0].median_s = one;
    race->e[0].times = &one;
    race->e[0].stride = 1;
    CHECK(et_db_race_record(db, race, NULL, &err_));
    free(race);
    CHECK(et_db_best(db, &e, &dev, &got, &found, &err_));
    assert_string_equal(got.opts, "LOCAL(i,2)");
    et_db_close(db);

    assert_int_equal(sql_int(path, "PRAGMA user_version"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM race_entries"), 3);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM race_entries WHERE "
                                   "race_id = 1 AND times_json = "
                                   "'[0.002, 0.0021]'"),
                     1);
    /* the old steps' rows as they were, then the new step */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT applied_at FROM schema_migrations "
                                   "WHERE version = 3"),
                     1700000000);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM einsums WHERE "
                                   "structure = ''"),
                     0);

    /* a step 5 that fails (its column is already there) leaves the file
     * at version 3 with its races: step 4 went with it */
    new_path(path, sizeof(path), "v3bad");
    write_v3(path, &e, &t, &r, &slow,
             "ALTER TABLE trials ADD COLUMN tuned_at TEXT;");
    et_error err = {{0}};
    db = NULL;
    assert_int_not_equal(et_db_open(path, &db, &err), ET_OK);
    assert_null(db);
    assert_non_null(strstr(err.msg, "migrating to schema version 5"));
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 3);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM races"), 1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM trials"), 3);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     3);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master "
                                   "WHERE name = 'campaign_results'"),
                     0);
}

/* What version 4 added, as it was: a campaign's finished problem. */
static const char schema_v4_test[] =
    "CREATE TABLE campaign_results (id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  problem_key TEXT NOT NULL, result_json TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL, eintune_version TEXT NOT NULL,"
    "  UNIQUE (einsum_id, device_id, problem_key));"
    "INSERT INTO campaign_results VALUES (1, 1, 1, 'budget=8',"
    "  '{\"found\": true}', 1750000000, '0.3.0');"
    "INSERT INTO schema_migrations VALUES (4, 1750000000, '0.3.0');";

/* A version-4 file (campaigns, before open axes): the version-3 file and
 * one finished campaign problem. Step 5 rebuilds the structure forms and
 * leaves the campaign's result as it was. */
static void test_migrate_v4(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "v4");
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_db_trial t = trial_of(1, &e, 1, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    et_db_trial r = trial_of(1, &e, 1, "UPCAST(j,4)", ET_OUTCOME_REFUSED, 0);
    et_db_trial slow = trial_of(1, &e, 1, "UPCAST(k,2)", ET_OUTCOME_OK,
                                2e-3);
    write_v3(path, &e, &t, &r, &slow, schema_v4_test);
    sql_exec(path, "PRAGMA user_version = 4;");

    et_db *db = open_ok(path);
    et_db_stats s;
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.schema_version, ET_DB_SCHEMA_VERSION);
    assert_int_equal(s.trials, 3);
    assert_int_equal(s.races, 1);
    /* the campaign's result comes through, under its key */
    char *json = NULL;
    int64_t at = 0;
    bool found = false;
    CHECK(et_db_campaign_lookup(db, 1, 1, "budget=8", &json, &at, &found,
                                &err_));
    assert_true(found);
    assert_string_equal(json, "{\"found\": true}");
    assert_int_equal(at, 1750000000);
    free(json);
    json = NULL;
    CHECK(et_db_campaign_lookup(db, 1, 1, "budget=9", &json, NULL, &found,
                                &err_));
    assert_false(found);
    /* version 5's columns: no tune-at size, the structure form rebuilt */
    et_db_trial got;
    assert_true(lookup(db, &t, &got));
    assert_string_equal(got.tuned_at, "");
    assert_true(got.load_1m == 1.25);
    et_einsum other;
    einsum_ok("ab,bc->ac", "a=8,b=3,c=2", "f32", &other);
    like_hits = 0;
    like_id = 0;
    CHECK(et_db_einsums_like(db, &other, like_cb, NULL, &err_));
    assert_int_equal(like_hits, 1);
    assert_int_equal(like_id, 1);
    et_db_close(db);

    assert_int_equal(sql_int(path, "PRAGMA user_version"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT applied_at FROM schema_migrations "
                                   "WHERE version = 4"),
                     1750000000);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_migrations"),
                     ET_DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM einsums WHERE "
                                   "structure = ''"),
                     0);
}

/* ---- concurrency ------------------------------------------------------- */

/* Records n trials of opts "UNROLL(j,<i>)" in a fresh handle. */
static int write_trials(const char *path, int first, int n, int pause_us,
                        int report_fd)
{
    et_db *db = NULL;
    et_error err = {{0}};
    if (et_db_open(path, &db, &err) != ET_OK) {
        fprintf(stderr, "child: %s\n", err.msg);
        return 1;
    }
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings("ij,jk->ik", "i=4,j=5,k=6", "f32", &e, &d) !=
        ET_OK)
        return 1;
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid, did;
    if (et_db_einsum_id(db, &e, &eid, &err) != ET_OK ||
        et_db_device_id(db, &dev, &did, &err) != ET_OK) {
        fprintf(stderr, "child: %s\n", err.msg);
        return 1;
    }
    for (int i = first; i < first + n; i++) {
        char opts[64];
        snprintf(opts, sizeof(opts), "UNROLL(j,%d)", i);
        et_db_trial t;
        if (et_db_trial_init(&t, eid, &e, did, opts, opts, NULL, &err) !=
            ET_OK)
            return 1;
        t.outcome = (i % 3) ? ET_OUTCOME_OK : ET_OUTCOME_BUILD_ERROR;
        t.median_s = 1e-3 + i * 1e-6;
        snprintf(t.reason, sizeof(t.reason), "trial %d", i);
        if (et_db_trial_record(db, &t, NULL, &err) != ET_OK) {
            fprintf(stderr, "child: %s\n", err.msg);
            return 1;
        }
        if (report_fd >= 0 &&
            write(report_fd, &i, sizeof(i)) != (ssize_t)sizeof(i))
            return 1;
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    et_db_close(db);
    return 0;
}

static et_db_trial unroll_key(int64_t eid, const et_einsum *e, int64_t did,
                              int i)
{
    char opts[64];
    snprintf(opts, sizeof(opts), "UNROLL(j,%d)", i);
    et_db_trial t;
    CHECK(et_db_trial_init(&t, eid, e, did, opts, opts, NULL, &err_));
    return t;
}

/* The parent's handle, kept where a forked child's leak check (valgrind
 * traces forked children) sees it as still referenced: the child never
 * closes it (closing an inherited SQLite connection in a child is unsafe),
 * and a pointer kept only in a register would look lost. */
static et_db *volatile g_parent_db;

static void test_concurrent(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "concurrent");
    et_db *db = open_ok(path);
    g_parent_db = db;
    et_einsum e;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);

    /* two handles in one process: a reader inside a read transaction does
     * not block the writer, and sees its snapshot until it ends */
    et_db *w = open_ok(path);
    assert_int_equal(write_trials(path, 0, 1, 0, -1), 0);
    sqlite3 *rc;
    assert_int_equal(sqlite3_open(path, &rc), SQLITE_OK);
    assert_int_equal(sqlite3_exec(rc, "BEGIN; SELECT count(*) FROM trials",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(write_trials(path, 1, 5, 0, -1), 0);
    et_db_stats s;
    CHECK(et_db_stats_get(w, &s, &err_));
    assert_int_equal(s.trials, 6);
    sqlite3_exec(rc, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(rc);
    et_db_close(w);

    /* two processes: a child writes 200 trials while the parent reads */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(write_trials(path, 100, 200, 200, -1));
    int64_t last = 0, reads = 0;
    for (;;) {
        int status;
        pid_t done = waitpid(pid, &status, WNOHANG);
        CHECK(et_db_stats_get(db, &s, &err_));
        assert_true(s.trials >= last);
        last = s.trials;
        /* whatever count is seen, every trial before it is complete */
        et_db_trial k = unroll_key(eid, &e, did, 100), got;
        if (s.trials > 6) {
            assert_true(lookup(db, &k, &got));
            assert_string_equal(got.reason, "trial 100");
        }
        collected c;
        memset(&c, 0, sizeof(c));
        et_db_filter f = {eid, did, 0, 3};
        CHECK(et_db_list(db, &f, collect, &c, &err_));
        reads++;
        if (done == pid) {
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
            break;
        }
        usleep(1000);
    }
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, 206);
    assert_true(reads > 5);

    /* two processes writing at once: both complete, nothing lost */
    pid_t a = fork();
    if (a == 0)
        _exit(write_trials(path, 1000, 100, 0, -1));
    pid_t b = fork();
    if (b == 0)
        _exit(write_trials(path, 2000, 100, 0, -1));
    assert_int_equal(write_trials(path, 3000, 100, 0, -1), 0);
    int sa, sb;
    assert_int_equal(waitpid(a, &sa, 0), a);
    assert_int_equal(waitpid(b, &sb, 0), b);
    assert_true(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
    assert_true(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    CHECK(et_db_stats_get(db, &s, &err_));
    assert_int_equal(s.trials, 506);
    et_db_close(db);
}

/* A child records trials in a loop, reporting each committed one through
 * a pipe; it is killed with SIGKILL at a random moment. The file must pass
 * integrity_check and hold every trial reported. Several rounds on one
 * file, each resuming where the last was killed. */
static void test_kill(void **state)
{
    (void)state;
    char path[512];
    new_path(path, sizeof(path), "kill");
    srand((unsigned)time(NULL));
    int next = 0;
    for (int round = 0; round < 6; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            /* round 0 is killed during creation as often as not */
            _exit(write_trials(path, next, 1000000, 0, fds[1]));
        }
        close(fds[1]);
        usleep((useconds_t)(round == 0 ? rand() % 20000
                                       : 20000 + rand() % 200000));
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        int reported[65536], n = 0, v;
        while (read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v))
            if (n < 65536)
                reported[n++] = v;
        close(fds[0]);

        if (getenv("ET_TEST_VERBOSE"))
            fprintf(stderr, "round %d: %d trials reported\n", round, n);
        et_db *db = open_ok(path);
        char msg[256];
        CHECK(et_db_integrity(db, msg, sizeof(msg), &err_));
        assert_string_equal(msg, "ok");
        et_einsum e;
        einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
        et_device_info dev = device_of("pthread-test", "3.1");
        int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
        for (int i = 0; i < n; i++) {
            et_db_trial k = unroll_key(eid, &e, did, reported[i]), got;
            if (!lookup(db, &k, &got))
                fail_msg("round %d: trial %d reported but missing", round,
                         reported[i]);
            char want[32];
            snprintf(want, sizeof(want), "trial %d", reported[i]);
            assert_string_equal(got.reason, want);
        }
        /* at most the one in flight beyond what was reported */
        et_db_stats s;
        CHECK(et_db_stats_get(db, &s, &err_));
        assert_true(s.trials >= next + n);
        assert_true(s.trials <= next + n + 1);
        next = (int)s.trials;
        et_db_close(db);
    }
}

/* ---- eintune db -------------------------------------------------------- */

/* Runs `eintune ARGS`, stdout into out (cap bytes); returns the exit
 * status. */
static int run_cli(const char *args, char *out, size_t cap)
{
    const char *dir = getenv("ET_BUILD_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/eintune' %s 2>/dev/null",
             dir ? dir : "build", args);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void **state)
{
    (void)state;
    const char *dir = getenv("ET_BUILD_DIR");
    char bin[512];
    snprintf(bin, sizeof(bin), "%s/eintune", dir ? dir : "build");
    if (access(bin, X_OK) != 0)
        skip();
    char path[512], args[1200];
    static char out[1 << 16];
    new_path(path, sizeof(path), "cli");
    et_db *db = open_ok(path);
    et_einsum e, renamed;
    einsum_ok("ij,jk->ik", "i=4,j=5,k=6", "f32", &e);
    einsum_ok("ab,bc->ac", "a=4,b=5,c=6", "f32", &renamed);
    et_device_info dev = device_of("pthread-test", "3.1");
    int64_t eid = einsum_id(db, &e), did = device_id(db, &dev);
    et_db_trial t = trial_of(eid, &e, did, "LOCAL(i,2)", ET_OUTCOME_OK, 1e-3);
    record(db, &t);
    t = trial_of(eid, &e, did, "LOCAL(i,4)", ET_OUTCOME_OK, 5e-4);
    record(db, &t);
    t = trial_of(eid, &e, did, "UPCAST(k,3)", ET_OUTCOME_BUILD_ERROR, 0);
    record(db, &t);
    et_db_close(db);

    snprintf(args, sizeof(args), "db stats --db '%s' --json -", path);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetObjectItem(doc, "trials")->valuedouble, 3);
    cJSON *oc = cJSON_GetObjectItem(doc, "outcomes");
    assert_int_equal(cJSON_GetObjectItem(oc, "ok")->valuedouble, 2);
    assert_int_equal(cJSON_GetObjectItem(oc, "build_error")->valuedouble, 1);
    assert_string_equal(cJSON_GetObjectItem(doc, "integrity")->valuestring,
                        "ok");
    cJSON_Delete(doc);

    /* list by a renamed equivalent, fastest first */
    snprintf(args, sizeof(args),
             "db list --db '%s' --einsum ab,bc-\\>ac --shape a=4,b=5,c=6 "
             "--dtype f32 --outcome ok --json -",
             path);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    doc = cJSON_Parse(out);
    assert_non_null(doc);
    cJSON *arr = cJSON_GetObjectItem(doc, "trials");
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    cJSON *first = cJSON_GetArrayItem(arr, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "opts")->valuestring,
                        "LOCAL(i,4)");
    assert_string_equal(cJSON_GetObjectItem(first, "status")->valuestring,
                        "ok");
    assert_true(cJSON_GetObjectItem(first, "time_s")->valuedouble == 5e-4);
    cJSON_Delete(doc);

    /* the table names the trials */
    snprintf(args, sizeof(args), "db list --db '%s' --limit 2", path);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "LOCAL(i,4)"));
    assert_non_null(strstr(out, "pthread-test"));
    assert_null(strstr(out, "UPCAST(k,3)"));

    /* prune wants a criterion; then deletes the failure */
    snprintf(args, sizeof(args), "db prune --db '%s'", path);
    assert_int_equal(run_cli(args, out, sizeof(out)), 2);
    snprintf(args, sizeof(args), "db prune --db '%s' --failed --json -",
             path);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    doc = cJSON_Parse(out);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetObjectItem(doc, "deleted")->valuedouble, 1);
    cJSON_Delete(doc);

    /* a foreign file: exit 2, untouched */
    char foreign[512];
    new_path(foreign, sizeof(foreign), "cli-foreign");
    sql_exec(foreign, "CREATE TABLE notes (t TEXT)");
    size_t n0, n1;
    unsigned char *before = slurp(foreign, &n0);
    snprintf(args, sizeof(args), "db stats --db '%s'", foreign);
    assert_int_equal(run_cli(args, out, sizeof(out)), 2);
    unsigned char *after = slurp(foreign, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);

    assert_int_equal(run_cli("db --help", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "prune"));
    assert_int_equal(run_cli("db frob", out, sizeof(out)), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_and_reopen),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_record_and_lookup),
        cmocka_unit_test(test_source_hash),
        cmocka_unit_test(test_key_invalidation),
        cmocka_unit_test(test_best),
        cmocka_unit_test(test_canonical_renamed),
        cmocka_unit_test(test_failures_kept),
        cmocka_unit_test(test_set_evaluation),
        cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_list_and_prune),
        cmocka_unit_test(test_corrupt_file),
        cmocka_unit_test(test_foreign_sqlite),
        cmocka_unit_test(test_newer_schema),
        cmocka_unit_test(test_migrate_v1),
        cmocka_unit_test(test_migrate_v3),
        cmocka_unit_test(test_migrate_v4),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_kill),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests_name("db", tests, setup, teardown);
}
