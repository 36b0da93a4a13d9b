/*
 * races.c - what a run decides at its end: its final race (races and
 * race_entries, written in one transaction), the race that chose a trial,
 * and the finished problems of campaigns (campaign_results).
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- races -------------------------------------------------------------- */

/* [r0, r1, ...] of a race entry's times. */
static char *times_json(const et_db_race_entry *e, int rounds)
{
    size_t cap = (size_t)rounds * 26 + 4;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    size_t n = 0;
    buf[n++] = '[';
    for (int r = 0; r < rounds && e->times; r++) {
        int w = snprintf(buf + n, cap - n, "%s%.9g", r ? ", " : "",
                         e->times[(size_t)r * (size_t)e->stride]);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
    snprintf(buf + n, cap - n, "]");
    return buf;
}

/* The race's row; its id into *race_id. */
static et_status race_insert(et_db *db, const et_db_race *r,
                             int64_t *race_id, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(
        db,
        "INSERT INTO races (einsum_id, device_id, einsum_text, rounds, "
        "conf, verdict, chosen_opts, runner_up_opts, faster_pct, "
        "faster_lo, faster_hi, speedup, speedup_lo, speedup_hi, "
        "load_1m, created_at, eintune_version) VALUES (?1, ?2, ?3, ?4, "
        "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, r->einsum_id);
    sqlite3_bind_int64(st, 2, r->device_id);
    db_bind_text(st, 3, r->einsum_text);
    sqlite3_bind_int(st, 4, r->rounds);
    db_bind_real(st, 5, r->conf);
    db_bind_text(st, 6, r->verdict);
    db_bind_text(st, 7, r->chosen_opts);
    if (r->runner_up_opts[0] || r->n > 1)
        db_bind_text(st, 8, r->runner_up_opts);
    else
        sqlite3_bind_null(st, 8);
    db_bind_real(st, 9, r->faster_pct);
    db_bind_real(st, 10, r->faster_lo);
    db_bind_real(st, 11, r->faster_hi);
    db_bind_real(st, 12, r->speedup);
    db_bind_real(st, 13, r->speedup_lo);
    db_bind_real(st, 14, r->speedup_hi);
    db_bind_real(st, 15, r->load_1m);
    sqlite3_bind_int64(st, 16, r->created_at ? r->created_at : db_now());
    db_bind_text(st, 17, ET_VERSION);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return et_errorf(err, ET_ERR_INPUT, "%s: race refers to an einsum "
                         "or device that is not recorded", db->path);
    if (rc != SQLITE_DONE)
        return db_sql_fail(db, rc, "recording a race", err);
    *race_id = sqlite3_last_insert_rowid(db->c);
    return ET_OK;
}

/* The race's entries, in their order. */
static et_status entries_insert(et_db *db, const et_db_race *r,
                                int64_t race_id, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(
        db,
        "INSERT INTO race_entries (race_id, position, opts, kernel_name, "
        "source_hash, untransformed, chosen, tied, median_s, low_s, "
        "high_s, cv, times_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
        "?8, ?9, ?10, ?11, ?12, ?13)",
        &st, err);
    if (s != ET_OK)
        return s;
    for (int i = 0; i < r->n && s == ET_OK; i++) {
        const et_db_race_entry *e = &r->e[i];
        char *tj = times_json(e, r->rounds);
        if (!tj) {
            s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            break;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, race_id);
        sqlite3_bind_int(st, 2, i);
        db_bind_text(st, 3, e->opts);
        db_bind_text(st, 4, e->kernel_name);
        db_bind_text(st, 5, e->source_hash);
        sqlite3_bind_int(st, 6, e->untransformed);
        sqlite3_bind_int(st, 7, e->chosen);
        sqlite3_bind_int(st, 8, e->tied);
        db_bind_real(st, 9, e->median_s);
        db_bind_real(st, 10, e->low_s);
        db_bind_real(st, 11, e->high_s);
        db_bind_real(st, 12, e->cv);
        sqlite3_bind_text(st, 13, tj, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        free(tj);
        if (rc != SQLITE_DONE)
            s = db_sql_fail(db, rc, "recording a race", err);
    }
    sqlite3_finalize(st);
    return s;
}

et_status et_db_race_record(et_db *db, const et_db_race *r, int64_t *id,
                            et_error *err)
{
    if (r->n < 1 || r->n > ET_DB_RACE_MAX)
        return et_errorf(err, ET_ERR_INPUT, "a race of %d kernels", r->n);
    et_status s = db_begin(db, err);
    if (s != ET_OK)
        return s;
    int64_t race_id = 0;
    s = race_insert(db, r, &race_id, err);
    if (s == ET_OK)
        s = entries_insert(db, r, race_id, err);
    if ((s = db_end(db, s, err)) == ET_OK && id)
        *id = race_id;
    return s;
}

et_status et_db_race_pick_of(et_db *db, const et_db_trial *t,
                             et_db_race_pick *out, bool *found,
                             et_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    sqlite3_stmt *st;
    /* the latest race of the einsum on the device, whatever it chose */
    et_status s = db_prep(
        db,
        "SELECT r.id, r.einsum_text, r.chosen_opts, r.rounds, "
        "r.verdict, r.created_at, e.median_s, e.low_s, "
        "e.high_s, e.cv FROM races r LEFT JOIN race_entries e "
        "ON e.race_id = r.id AND e.chosen = 1 WHERE "
        "r.einsum_id = ?1 AND r.device_id = ?2 "
        "ORDER BY r.created_at DESC, r.id DESC LIMIT 1",
        &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, t->einsum_id);
    sqlite3_bind_int64(st, 2, t->device_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        char text[ET_MAX_TEXT], opts[ET_DB_OPTS_LEN];
        db_col_text(st, 1, text, sizeof text);
        db_col_text(st, 2, opts, sizeof opts);
        double median = db_col_real(st, 6);
        if (!strcmp(text, t->einsum_text) && !strcmp(opts, t->opts) &&
            median > 0) {
            *found = true;
            out->race_id = sqlite3_column_int64(st, 0);
            out->rounds = sqlite3_column_int(st, 3);
            db_col_text(st, 4, out->verdict, sizeof out->verdict);
            out->created_at = sqlite3_column_int64(st, 5);
            out->median_s = median;
            out->low_s = db_col_real(st, 7);
            out->high_s = db_col_real(st, 8);
            out->cv = db_col_real(st, 9);
        }
    } else if (rc != SQLITE_DONE) {
        s = db_sql_fail(db, rc, "looking up the final race", err);
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- campaigns ---------------------------------------------------------- */

/* Prepares sql with the problem's key bound as ?1..?3. */
static et_status campaign_prep(et_db *db, const char *sql, int64_t einsum_id,
                               int64_t device_id, const char *key,
                               sqlite3_stmt **st, et_error *err)
{
    et_status s = db_prep(db, sql, st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(*st, 1, einsum_id);
    sqlite3_bind_int64(*st, 2, device_id);
    db_bind_text(*st, 3, key);
    return ET_OK;
}

et_status et_db_campaign_lookup(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                char **json, int64_t *created_at,
                                bool *found, et_error *err)
{
    *found = false;
    *json = NULL;
    sqlite3_stmt *st;
    et_status s = campaign_prep(db,
                                "SELECT result_json, created_at FROM "
                                "campaign_results WHERE einsum_id = ?1 AND "
                                "device_id = ?2 AND problem_key = ?3",
                                einsum_id, device_id, key, &st, err);
    if (s != ET_OK)
        return s;
    s = db_step_text(db, st, "{}", json, created_at, found,
                     "looking up a campaign problem", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_campaign_record(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                const char *json, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = campaign_prep(
        db,
        "INSERT INTO campaign_results (einsum_id, device_id, "
        "problem_key, result_json, created_at, "
        "eintune_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
        "ON CONFLICT (einsum_id, device_id, problem_key) DO "
        "UPDATE SET result_json = excluded.result_json, "
        "created_at = excluded.created_at, eintune_version = "
        "excluded.eintune_version",
        einsum_id, device_id, key, &st, err);
    if (s != ET_OK)
        return s;
    db_bind_text(st, 4, json);
    sqlite3_bind_int64(st, 5, db_now());
    db_bind_text(st, 6, ET_VERSION);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return et_errorf(err, ET_ERR_INPUT, "%s: a campaign result refers to "
                         "an einsum or device that is not recorded",
                         db->path);
    if (rc != SQLITE_DONE)
        return db_sql_fail(db, rc, "recording a campaign problem", err);
    return ET_OK;
}
