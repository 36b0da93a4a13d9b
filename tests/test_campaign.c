/*
 * test_campaign.c - `eintune campaign FILE` on the suite's device
 * (tests/suite_device.h: the PoCL device unless `make test DEVICE=..`),
 * without MPI: three small problems tuned one after another, every trial
 * and each finished problem in the database, the JSON summary; the same
 * campaign run again answers every problem from the database and times
 * nothing (no trial, race or result written again); a longer campaign
 * resumes (the finished problems answered, the new one tuned); bad
 * campaign files are bad input (exit 2) named FILE:LINE:COLUMN, 1-based,
 * with the line echoed and a caret; a device spec naming no device is bad
 * input too.
 *
 * Runs $ET_BUILD_DIR/eintune (default build/) with --db in a temporary
 * directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[256];
static char g_bin[512];

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

static void write_file(const char *name, const char *text)
{
    char p[512];
    path_in(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *name)
{
    char p[512];
    path_in(p, sizeof p, name);
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

/* eintune campaign FILE --db DB [--json tag.json] args..., stdout and
 * stderr into tag.out and tag.err; its exit status. On the suite's device
 * unless args name one. */
static int campaign(const char *tag, const char *file, const char *db,
                    const char *extra)
{
    char cmd[4096];
    const char *dev = extra && strstr(extra, "--device") ? NULL : td_device();
    snprintf(cmd, sizeof cmd,
             "cd %s && %s campaign %s --db %s --json %s.json %s%s%s > %s.out "
             "2> %s.err",
             g_dir, g_bin, file, db, tag, extra ? extra : "",
             dev ? " --device " : "", dev ? dev : "", tag, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static int64_t count(const char *db, const char *sql)
{
    char p[512];
    path_in(p, sizeof p, db);
    sqlite3 *c;
    assert_int_equal(sqlite3_open(p, &c), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(c));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return n;
}

static cJSON *json_of(const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "%s.json", tag);
    char *text = slurp(name);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    return doc;
}

static int total(const cJSON *doc, const char *key)
{
    const cJSON *t = cJSON_GetObjectItem(doc, "totals");
    return cJSON_GetObjectItem(t, key)->valueint;
}

static const cJSON *problem(const cJSON *doc, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "problems"), i);
}

static const char *pstr(const cJSON *p, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(p, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *best_opts(const cJSON *p)
{
    const cJSON *b = cJSON_GetObjectItem(p, "best");
    assert_true(cJSON_IsObject(b));
    return pstr(b, "opts");
}

/* Three problems: a parametric space under grid search (its file next to
 * the campaign), a random search, and a beam search with a race of 2. */
static const char three[] =
    "# three small problems\n"
    "- einsum: \"ab,bc->ac\"\n"
    "  shape: a=16,b=16,c=16\n"
    "  dtype: f32\n"
    "  space: spaces/tiled.yaml\n"
    "  budget: 4\n"
    "  search: grid\n"
    "- einsum: \"ij->i\"\n"
    "  shape: {i: 64, j: 32}\n"
    "  dtype: f32\n"
    "  budget: 4\n"
    "  search: random\n"
    "  seed: 3\n"
    "- {einsum: \"xik,kj->xij\", shape: \"x=8,i=8,k=8,j=8\", dtype: f32,\n"
    "   budget: 4, race: 2}\n";

static const char tiled[] =
    "name: tiled\n"
    "einsum: \"ik,kj->ij\"\n"
    "params:\n"
    "  tile_j: {pow2: [1, 8]}\n"
    "  unroll_k: {values: [1, 2]}\n"
    "constraints:\n"
    "  - j % tile_j == 0\n"
    "transforms:\n"
    "  - {op: UPCAST, axis: j, amt: tile_j, when: tile_j > 1}\n"
    "  - {op: UNROLL, axis: k, amt: unroll_k, when: unroll_k > 1}\n";

static void test_run_and_resume(void **state)
{
    (void)state;
    write_file("three.yaml", three);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/spaces", g_dir);
    assert_int_equal(system(cmd), 0);
    write_file("spaces/tiled.yaml", tiled);

    assert_int_equal(campaign("first", "three.yaml", "c.db", NULL), 0);
    cJSON *a = json_of("first");
    assert_int_equal(total(a, "problems"), 3);
    assert_int_equal(total(a, "tuned"), 3);
    assert_int_equal(total(a, "from_database"), 0);
    for (int i = 0; i < 3; i++) {
        const cJSON *p = problem(a, i);
        assert_string_equal(pstr(p, "state"), "tuned");
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p, "found")));
        assert_true(cJSON_GetObjectItem(p, "evaluations")->valueint >= 1);
        assert_true(cJSON_GetObjectItem(p, "evaluations")->valueint <= 4);
    }
    assert_string_equal(pstr(problem(a, 0), "space"), "spaces/tiled.yaml");
    assert_int_equal(cJSON_GetObjectItem(problem(a, 2), "line")->valueint,
                     14);
    /* every trial, each problem's race and result in the database: the
     * grid's 4 points, the random draws and the beam's candidates */
    assert_int_equal(count("c.db", "SELECT count(*) FROM campaign_results"),
                     3);
    assert_int_equal(count("c.db", "SELECT count(DISTINCT einsum_id) FROM "
                                   "trials"), 3);
    int64_t trials = count("c.db", "SELECT count(*) FROM trials");
    assert_true(trials >= 9 && trials <= 12);
    /* a race per problem whose best was raced (a problem whose search
     * left nothing but the untransformed kernel has none to run) */
    int n_raced = 0;
    for (int i = 0; i < 3; i++) {
        const cJSON *bi = cJSON_GetObjectItem(problem(a, i), "best");
        n_raced += cJSON_IsObject(bi) &&
                   cJSON_IsTrue(cJSON_GetObjectItem(bi, "raced"));
    }
    assert_true(n_raced >= 2);
    int64_t races = count("c.db", "SELECT count(*) FROM races");
    assert_int_equal(races, n_raced);
    int64_t stamp = count("c.db", "SELECT sum(created_at) + sum(id) FROM "
                                  "trials");
    char *out = slurp("first.out");
    assert_non_null(strstr(out, "3 tuned in this run"));
    free(out);

    /* again: every problem answered from the database, nothing timed */
    assert_int_equal(campaign("again", "three.yaml", "c.db", NULL), 0);
    cJSON *b = json_of("again");
    assert_int_equal(total(b, "from_database"), 3);
    assert_int_equal(total(b, "tuned"), 0);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(pstr(problem(b, i), "state"), "database");
        assert_string_equal(best_opts(problem(a, i)),
                            best_opts(problem(b, i)));
        assert_true(cJSON_GetObjectItem(problem(b, i), "finished_at")
                        ->valuedouble > 0);
    }
    assert_int_equal(count("c.db", "SELECT count(*) FROM trials"), trials);
    assert_int_equal(count("c.db", "SELECT sum(created_at) + sum(id) FROM "
                                   "trials"), stamp);
    assert_int_equal(count("c.db", "SELECT count(*) FROM races"), races);
    char *err = slurp("again.err");
    assert_null(strstr(err, "trying"));
    assert_null(strstr(err, "final race"));
    free(err);
    cJSON_Delete(b);

    /* a longer campaign resumes: the three answered, the fourth tuned */
    char four[sizeof three + 200];
    snprintf(four, sizeof four, "%s- einsum: \"i,i->\"\n  shape: i=128\n"
             "  budget: 3\n", three);
    write_file("four.yaml", four);
    assert_int_equal(campaign("four", "four.yaml", "c.db", NULL), 0);
    cJSON *c = json_of("four");
    assert_int_equal(total(c, "from_database"), 3);
    assert_int_equal(total(c, "tuned"), 1);
    assert_string_equal(pstr(problem(c, 3), "state"), "tuned");
    assert_string_equal(pstr(problem(c, 3), "dtype"), "f64");
    assert_int_equal(count("c.db", "SELECT count(*) FROM campaign_results"),
                     4);
    /* its race ran unless it had too few candidates to race (with a
     * budget of 3 on a dot product, timing decides: the early cut may
     * leave none but the untransformed kernel) */
    const cJSON *b4 = cJSON_GetObjectItem(problem(c, 3), "best");
    int raced = cJSON_IsObject(b4) &&
                cJSON_IsTrue(cJSON_GetObjectItem(b4, "raced"));
    assert_int_equal(count("c.db", "SELECT count(*) FROM races"),
                     races + raced);
    cJSON_Delete(c);
    cJSON_Delete(a);
}

/* A bad file: exit 2, "FILE:LINE:COL: " + what (1-based), and the line
 * echoed with a caret under the column. */
static void bad(const char *text, const char *where, const char *what)
{
    write_file("bad.yaml", text);
    assert_int_equal(campaign("bad", "bad.yaml", "bad.db", NULL), 2);
    char *err = slurp("bad.err");
    assert_non_null(err);
    char want[256];
    snprintf(want, sizeof want, "bad.yaml:%s: ", where);
    if (!strstr(err, want) || !strstr(err, what))
        fail_msg("want '%s' and '%s' in:\n%s", want, what, err);
    free(err);
    /* nothing was tuned */
    char p[512];
    path_in(p, sizeof p, "bad.db");
    assert_int_not_equal(access(p, F_OK), 0);
}

static void test_bad_files(void **state)
{
    (void)state;
    bad("- einsum: [ij->i\n  shape: i=4\n", "2:8", "YAML syntax error");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  bogus: 1\n", "3:3",
        "unknown key 'bogus'");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  budget: -1\n", "3:11",
        "budget must be an integer in [1, 1000000]");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  search: sideways\n", "3:11",
        "search must be beam, random or grid");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n- einsum: ij->k\n  shape: "
        "i=4,j=4\n", "3:11", "");
    bad("- einsum: ij->i\n  dtype: f32\n", "1:3", "problem 1 has no shape");
    /* a tune-at size needs an open axis, and a size >= 1 */
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  tune_at: i=8\n", "3:12",
        "tune_at: ");
    bad("- einsum: xj->xj\n  shape: x=*,j=4\n  tune_at: x=0\n", "3:12",
        "tune_at: ");
    /* a batch spec checked at its value */
    bad("- einsum: xj,ij->xi\n  shape: x=4,i=2,j=2\n  batch: \"u,D; u\"\n",
        "3:10", "batch: row 1 names 1 operand");
    bad("einsum: ij->i\nshape: i=4\n", "1:1", "a campaign is a list");
    bad("", "1:1", "no problems");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  time-limit: 0\n", "3:15",
        "time-limit must be a positive number");
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  search: grid\n", "3:11",
        "grid search over an action pool");
    /* the caret under the column */
    char *err = slurp("bad.err");
    assert_non_null(strstr(err, "  search: grid\n            ^"));
    free(err);
    /* a space file that is not there, named at the value */
    bad("- einsum: ij->i\n  shape: i=4,j=4\n  space: nowhere.yaml\n", "3:10",
        "nowhere.yaml");
    /* a device that does not exist */
    write_file("ok.yaml", "- {einsum: ij->i, shape: \"i=4,j=4\", budget: 1}\n");
    char nodev[64];
    snprintf(nodev, sizeof nodev, "--device %s", td_missing());
    assert_int_equal(campaign("nodev", "ok.yaml", "nodev.db", nodev), 2);
    err = slurp("nodev.err");
    assert_non_null(strstr(err, td_is_opencl() ? "no OpenCL device 99"
                                               : "no CUDA device 99"));
    free(err);
}

/* A batched problem: tuned as the batched einsum, under its key. */
static void test_batched(void **state)
{
    (void)state;
    write_file("rows.yaml", "- {einsum: \"xj,ij->xi\", shape: "
                            "\"x=16,i=4,j=4\", dtype: f32, batch: \"u,Dr; "
                            "u,Ds; u,Dt\", budget: 2, race: 0}\n");
    assert_int_equal(campaign("rows", "rows.yaml", "rows.db", NULL), 0);
    cJSON *a = json_of("rows");
    const cJSON *p = problem(a, 0);
    assert_string_equal(pstr(p, "state"), "tuned");
    assert_string_equal(pstr(p, "einsum"), "xj,Rij->Rxi");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p, "found")));
    cJSON_Delete(a);
    assert_int_equal(count("rows.db", "SELECT count(*) FROM einsums WHERE "
                                      "canonical LIKE 'rows|%'"), 1);
}

int main(void)
{
    const char *b = getenv("ET_BUILD_DIR");
    char cwd[256];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(g_bin, sizeof g_bin, "%s/%s/eintune", b && *b ? "" : cwd,
             b && *b ? b : "build");
    if (b && *b && b[0] == '/')
        snprintf(g_bin, sizeof g_bin, "%s/eintune", b);
    else if (b && *b)
        snprintf(g_bin, sizeof g_bin, "%s/%s/eintune", cwd, b);
    snprintf(g_dir, sizeof g_dir, "/tmp/et_test_campaign_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", g_dir, g_dir);
    if (system(cmd) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_and_resume),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_batched),
    };
    int rc = cmocka_run_group_tests_name("campaign", tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
