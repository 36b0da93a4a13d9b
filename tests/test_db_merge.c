/*
 * test_db_merge.c - et_db_merge (`eintune db merge`): two databases that
 * share trials merge into one whose counts add up without duplicates;
 * a trial measured again later replaces the older one; results stay with
 * their device; best answers from the merge; peaks known only to the
 * input come along; final races and their entries (schema 3) come along
 * with their references renumbered, and best follows the latest race;
 * each trial's load and the campaigns' finished problems come along; a
 * table and a column that a later schema adds are merged too, references
 * renumbered; an input that is not a database is refused and changes
 * nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "db/db.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static et_device_info device(const char *name)
{
    et_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.driver_version, sizeof d.driver_version, "1.0");
    d.target.backend = ET_BACKEND_OPENCL;
    return d;
}

/* Records an ok trial of opts with median t at time `when`, the load
 * when/1000. */
static void trial(et_db *db, const et_einsum *e, const et_device_info *dev,
                  const char *opts, double t, int64_t when)
{
    et_error err = {{0}};
    int64_t eid = 0, did = 0;
    assert_int_equal(et_db_einsum_id(db, e, &eid, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, dev, &did, &err), ET_OK);
    et_db_trial tr;
    assert_int_equal(et_db_trial_init(&tr, eid, e, did, opts, opts, NULL,
                                      &err), ET_OK);
    tr.outcome = ET_OUTCOME_OK;
    tr.median_s = tr.low_s = tr.high_s = t;
    tr.runs = 6;
    tr.verify_trials = 3;
    tr.created_at = when;
    tr.load_1m = (double)when / 1000;
    assert_int_equal(et_db_trial_record(db, &tr, NULL, &err), ET_OK);
}

/* Records a final race at time `when` that chose opts over the
 * untransformed kernel (three rounds). */
static void race(et_db *db, const et_einsum *e, const et_device_info *dev,
                 const char *opts, int64_t when)
{
    et_error err = {{0}};
    et_db_race *r = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(et_db_einsum_id(db, e, &r->einsum_id, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, dev, &r->device_id, &err), ET_OK);
    snprintf(r->einsum_text, sizeof r->einsum_text, "%s", e->text);
    static const double times[] = {1e-3, 2e-3, 1.1e-3, 2.1e-3, 0.9e-3, 2e-3};
    r->rounds = 3;
    r->conf = 0.95;
    snprintf(r->verdict, sizeof r->verdict, "faster");
    snprintf(r->chosen_opts, sizeof r->chosen_opts, "%s", opts);
    r->faster_pct = 50;
    r->faster_lo = 40;
    r->faster_hi = 60;
    r->speedup = 2;
    r->speedup_lo = 1.8;
    r->speedup_hi = 2.2;
    r->load_1m = 0.5;
    r->created_at = when;
    r->n = 2;
    for (int i = 0; i < 2; i++) {
        et_db_race_entry *x = &r->e[i];
        snprintf(x->opts, sizeof x->opts, "%s", i ? "" : opts);
        snprintf(x->kernel_name, sizeof x->kernel_name, "k%d", i);
        snprintf(x->source_hash, sizeof x->source_hash, "%016d", i);
        x->untransformed = i == 1;
        x->chosen = i == 0;
        x->median_s = x->low_s = x->high_s = times[i];
        x->times = times + i;
        x->stride = 2;
    }
    assert_int_equal(et_db_race_record(db, r, NULL, &err), ET_OK);
    free(r);
}

static int64_t count(const char *file, const char *sql)
{
    sqlite3 *c;
    assert_int_equal(sqlite3_open(file, &c), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return n;
}

static void exec_sql(const char *file, const char *sql)
{
    sqlite3 *c;
    assert_int_equal(sqlite3_open(file, &c), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(c, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(c);
}

/* A later schema's additions, made by hand in a file: a column of trials
 * and a table referring to trials. */
static const char later_schema[] =
    "ALTER TABLE trials ADD COLUMN later_s REAL;"
    "CREATE TABLE later_marks (id INTEGER PRIMARY KEY, trial_id INTEGER NOT "
    "NULL REFERENCES trials(id), place INTEGER, UNIQUE (trial_id));";

static void test_merge_shared(void **state)
{
    (void)state;
    char a[300], b[300];
    path(a, sizeof a, "a.db");
    path(b, sizeof b, "b.db");
    et_einsum e;
    et_diag d;
    assert_int_equal(et_einsum_from_strings("ik,kj->ij", "i=8,k=8,j=8",
                                            "f32", &e, &d), ET_OK);
    et_device_info d1 = device("dev one"), d2 = device("dev two");
    et_db *A = NULL, *B = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(a, &A, &err), ET_OK);
    assert_int_equal(et_db_open(b, &B, &err), ET_OK);
    /* A: t1 t2 t3 on dev one; B: t2 again (later, faster), t4 on dev one,
     * and t1's opts on dev two (another device's result) */
    trial(A, &e, &d1, "UPCAST(i,2)", 3e-3, 1000);
    trial(A, &e, &d1, "UPCAST(j,2)", 2e-3, 1000);
    trial(A, &e, &d1, "UNROLL(k,2)", 4e-3, 1000);
    trial(B, &e, &d2, "UPCAST(i,2)", 9e-3, 2000);
    trial(B, &e, &d1, "UPCAST(j,2)", 1e-3, 2000);
    trial(B, &e, &d1, "LOCAL(i,4)", 5e-3, 2000);
    /* an einsum with an open axis, tuned at x=64, in B only */
    et_einsum eo;
    assert_int_equal(et_einsum_from_strings("xik,kj->xij", "x=*,i=4,k=4,j=4",
                                            "f32", &eo, &d), ET_OK);
    assert_int_equal(et_einsum_tune_at(&eo, "x=64", &d), ET_OK);
    trial(B, &eo, &d1, "LOCAL(x,4)", 6e-3, 2000);
    /* a race in each: B's is the later one; A's refers to einsum and
     * device rows whose ids differ from B's (dev two was made first) */
    race(A, &e, &d1, "UPCAST(i,2)", 1500);
    race(B, &e, &d1, "UPCAST(j,2)", 3000);
    int64_t did = 0, eid = 0;
    assert_int_equal(et_db_device_id(B, &d1, &did, &err), ET_OK);
    /* a finished campaign problem in B (schema 4) */
    assert_int_equal(et_db_einsum_id(B, &e, &eid, &err), ET_OK);
    assert_int_equal(et_db_campaign_record(B, eid, did, "budget=4",
                                           "{\"found\": true}", &err),
                     ET_OK);
    assert_int_equal(et_db_peaks_store(B, did, "{\"peaks\": 1}", 2000, &err),
                     ET_OK);
    et_db_close(B);
    et_db_close(A);
    exec_sql(a, later_schema);
    exec_sql(b, later_schema);
    exec_sql(b, "UPDATE trials SET later_s = 0.5 WHERE opts = 'LOCAL(i,4)';"
                "INSERT INTO later_marks (trial_id, place) SELECT id, 1 FROM "
                "trials WHERE opts = 'LOCAL(i,4)';");

    assert_int_equal(et_db_open(a, &A, &err), ET_OK);
    et_db_merge_stats ms;
    assert_int_equal(et_db_merge(A, b, &ms, &err), ET_OK);
    /* 3 + 4 - 1 shared */
    assert_int_equal(count(a, "SELECT count(*) FROM trials"), 6);
    assert_int_equal(count(a, "SELECT count(*) FROM (SELECT DISTINCT "
                              "einsum_id, device_id, opts FROM trials)"), 6);
    assert_int_equal(count(a, "SELECT count(*) FROM devices"), 2);
    assert_int_equal(count(a, "SELECT count(*) FROM einsums"), 2);
    /* the open einsum keeps its structure form, its trial the size it was
     * tuned at */
    assert_int_equal(count(a, "SELECT count(*) FROM einsums WHERE "
                              "canonical LIKE '%*%' AND structure <> '' AND "
                              "sizes LIKE '%x=*%'"), 1);
    assert_int_equal(count(a, "SELECT count(*) FROM einsums WHERE "
                              "structure = ''"), 0);
    assert_int_equal(count(a, "SELECT count(*) FROM trials t JOIN einsums e "
                              "ON e.id = t.einsum_id WHERE t.opts = "
                              "'LOCAL(x,4)' AND t.tuned_at = 'x=64' AND "
                              "e.canonical LIKE '%*%'"), 1);
    assert_int_equal(count(a, "SELECT count(*) FROM trials WHERE tuned_at "
                              "<> ''"), 1);
    bool trials_seen = false;
    for (int i = 0; i < ms.n_tables; i++)
        if (!strcmp(ms.table[i].name, "trials")) {
            trials_seen = true;
            assert_int_equal(ms.table[i].added, 3);
            assert_int_equal(ms.table[i].replaced, 1);
            assert_int_equal(ms.table[i].same, 0);
        }
    assert_true(trials_seen);
    /* per device: dev two's trial stays on dev two */
    assert_int_equal(count(a, "SELECT count(*) FROM trials t JOIN devices d "
                              "ON d.id = t.device_id WHERE d.name = 'dev "
                              "two' AND t.opts = 'UPCAST(i,2)' AND "
                              "t.median_s = 9e-3"), 1);
    /* the newer measurement of the shared trial won */
    assert_int_equal(count(a, "SELECT count(*) FROM trials WHERE opts = "
                              "'UPCAST(j,2)' AND median_s = 1e-3 AND "
                              "created_at = 2000"), 1);
    /* peaks only B knew came along */
    assert_int_equal(count(a, "SELECT count(*) FROM devices WHERE name = "
                              "'dev one' AND peaks_json IS NOT NULL"), 1);
    /* each trial's load came with it */
    assert_int_equal(count(a, "SELECT count(*) FROM trials WHERE opts = "
                              "'LOCAL(i,4)' AND load_1m = 2.0"), 1);
    assert_int_equal(count(a, "SELECT count(*) FROM trials WHERE opts = "
                              "'UNROLL(k,2)' AND load_1m = 1.0"), 1);
    /* both races, each with its two entries, on the right einsum and
     * device */
    assert_int_equal(count(a, "SELECT count(*) FROM races"), 2);
    assert_int_equal(count(a, "SELECT count(*) FROM race_entries"), 4);
    assert_int_equal(count(a, "SELECT count(*) FROM race_entries x JOIN "
                              "races r ON r.id = x.race_id JOIN devices d "
                              "ON d.id = r.device_id JOIN einsums e ON "
                              "e.id = r.einsum_id WHERE d.name = 'dev one' "
                              "AND r.chosen_opts = 'UPCAST(j,2)' AND "
                              "r.created_at = 3000 AND x.times_json IS NOT "
                              "NULL"), 2);
    assert_int_equal(count(a, "SELECT count(*) FROM race_entries x JOIN "
                              "races r ON r.id = x.race_id WHERE x.chosen "
                              "AND x.opts = r.chosen_opts"), 2);
    /* the campaign's finished problem, on dev one's row of the output */
    assert_int_equal(count(a, "SELECT count(*) FROM campaign_results c "
                              "JOIN devices d ON d.id = c.device_id WHERE "
                              "d.name = 'dev one' AND c.problem_key = "
                              "'budget=4'"), 1);
    /* the later schema's column and table, renumbered */
    assert_int_equal(count(a, "SELECT count(*) FROM trials WHERE later_s = "
                              "0.5 AND opts = 'LOCAL(i,4)'"), 1);
    assert_int_equal(count(a, "SELECT count(*) FROM later_marks r JOIN "
                              "trials t ON t.id = r.trial_id WHERE t.opts = "
                              "'LOCAL(i,4)'"), 1);
    /* best answers from the merge: the latest race's choice (B's), with
     * B's newer measurement of that shared trial */
    et_db_trial best;
    bool found = false;
    assert_int_equal(et_db_best(A, &e, &d1, &best, &found, &err), ET_OK);
    assert_true(found);
    assert_string_equal(best.opts, "UPCAST(j,2)");
    assert_true(fabs(best.median_s - 1e-3) < 1e-12);

    /* merging the same file again adds nothing */
    assert_int_equal(et_db_merge(A, b, &ms, &err), ET_OK);
    assert_int_equal(count(a, "SELECT count(*) FROM trials"), 6);
    assert_int_equal(count(a, "SELECT count(*) FROM einsums"), 2);
    assert_int_equal(count(a, "SELECT count(*) FROM races"), 2);
    assert_int_equal(count(a, "SELECT count(*) FROM race_entries"), 4);
    assert_int_equal(count(a, "SELECT count(*) FROM later_marks"), 1);
    assert_int_equal(count(a, "SELECT count(*) FROM campaign_results"), 1);

    /* a file that is not a database: refused, nothing changed */
    char junk[300];
    path(junk, sizeof junk, "junk.db");
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("not a database at all, long enough to be looked at\n", f);
    fclose(f);
    memset(&err, 0, sizeof err);
    assert_int_equal(et_db_merge(A, junk, &ms, &err), ET_ERR_INPUT);
    assert_true(err.msg[0] != 0);
    assert_int_equal(count(a, "SELECT count(*) FROM trials"), 6);
    et_db_close(A);
}

/* An input with a column the output lacks (a newer eintune) is refused
 * and nothing is merged. */
static void test_merge_newer_refused(void **state)
{
    (void)state;
    char a[300], b[300];
    path(a, sizeof a, "n_a.db");
    path(b, sizeof b, "n_b.db");
    et_einsum e;
    et_diag d;
    assert_int_equal(et_einsum_from_strings("ij->i", "i=8,j=8", "f32", &e,
                                            &d), ET_OK);
    et_device_info d1 = device("dev one");
    et_db *A = NULL, *B = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(a, &A, &err), ET_OK);
    assert_int_equal(et_db_open(b, &B, &err), ET_OK);
    trial(B, &e, &d1, "UPCAST(i,2)", 3e-3, 1000);
    et_db_close(B);
    exec_sql(b, "ALTER TABLE trials ADD COLUMN extra REAL;");
    et_db_merge_stats ms;
    assert_int_equal(et_db_merge(A, b, &ms, &err), ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "extra"));
    assert_int_equal(count(a, "SELECT count(*) FROM trials"), 0);
    et_db_close(A);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/et_test_db_merge_%d", (int)getpid());
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    if (system(cmd) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_shared),
        cmocka_unit_test(test_merge_newer_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
