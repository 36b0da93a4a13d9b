/*
 * queries.c - reading and tidying the database as a whole: a device's
 * peaks, the counts of `eintune db stats`, the integrity check, the
 * trials a cost model learns from, the listing of `eintune db list`, and
 * pruning.
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- peaks -------------------------------------------------------------- */

et_status et_db_peaks_store(et_db *db, int64_t device_id, const char *json,
                            int64_t measured_at, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db,
                          "UPDATE devices SET peaks_json = ?1, "
                          "peaks_measured_at = ?2, peaks_eintune_version = ?3 "
                          "WHERE id = ?4",
                          &st, err);
    if (s != ET_OK)
        return s;
    db_bind_text(st, 1, json);
    sqlite3_bind_int64(st, 2, measured_at ? measured_at : db_now());
    db_bind_text(st, 3, ET_VERSION);
    sqlite3_bind_int64(st, 4, device_id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_sql_fail(db, rc, "storing peaks", err);
    if (sqlite3_changes(db->c) != 1)
        return et_errorf(err, ET_ERR_INPUT,
                         "%s: no device with id %" PRId64 " to store peaks for",
                         db->path, device_id);
    return ET_OK;
}

et_status et_db_peaks_load(et_db *db, int64_t device_id, char **json,
                           int64_t *measured_at, bool *found,
                           et_error *err)
{
    *json = NULL;
    *found = false;
    sqlite3_stmt *st;
    et_status s = db_prep(db,
                          "SELECT peaks_json, peaks_measured_at FROM devices "
                          "WHERE id = ?1 AND peaks_json IS NOT NULL AND "
                          "peaks_eintune_version = ?2",
                          &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, device_id);
    db_bind_text(st, 2, ET_VERSION);
    s = db_step_text(db, st, "", json, measured_at, found, "loading peaks",
                     err);
    sqlite3_finalize(st);
    return s;
}

/* ---- stats, integrity, list, prune -------------------------------------- */

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

et_status et_db_stats_get(et_db *db, et_db_stats *out, et_error *err)
{
    memset(out, 0, sizeof(*out));
    /* one read transaction: the counts agree with each other */
    et_status s = db_exec(db, "BEGIN", err);
    if (s != ET_OK)
        return s;
    int64_t v = 0;
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM trials WHERE renderer_version <> %d",
             ET_RENDERER_VERSION);
    if ((s = db_query_int(db, "PRAGMA user_version", &v, err)) != ET_OK ||
        (s = db_query_int(db, "SELECT count(*) FROM devices", &out->devices,
                          err)) != ET_OK ||
        (s = db_query_int(db, "SELECT count(*) FROM einsums", &out->einsums,
                          err)) != ET_OK ||
        (s = db_query_int(db, "SELECT count(*) FROM spaces", &out->spaces,
                          err)) != ET_OK ||
        (s = db_query_int(db, "SELECT count(*) FROM trials", &out->trials,
                          err)) != ET_OK ||
        (s = db_query_int(db, "SELECT count(*) FROM races", &out->races,
                          err)) != ET_OK ||
        (s = db_query_int(db, sql, &out->old_renderer, err)) != ET_OK ||
        (s = db_query_int(db,
                          "SELECT coalesce(min(created_at), 0) FROM trials",
                          &out->oldest, err)) != ET_OK ||
        (s = db_query_int(db,
                          "SELECT coalesce(max(created_at), 0) FROM trials",
                          &out->newest, err)) != ET_OK)
        goto done;
    out->schema_version = (int)v;
    sqlite3_stmt *st;
    if ((s = db_prep(db,
                     "SELECT outcome, count(*) FROM trials GROUP BY outcome",
                     &st, err)) != ET_OK)
        goto done;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char name[32];
        db_col_text(st, 0, name, sizeof(name));
        et_outcome o;
        if (et_outcome_parse(name, &o) == 0)
            out->by_outcome[o] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, "counting outcomes", err);
done:
    db_exec(db, "COMMIT", NULL);
    char wal[4200];
    snprintf(wal, sizeof(wal), "%s-wal", db->path);
    out->file_bytes = file_size(db->path) + file_size(wal);
    return s;
}

et_status et_db_integrity(et_db *db, char *msg, size_t cap, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db, "PRAGMA integrity_check(1)", &st, err);
    if (s != ET_OK)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        db_col_text(st, 0, msg, cap);
        if (strcmp(msg, "ok") != 0) {
            s = et_errorf(err, ET_ERR_INPUT, "%s: integrity check failed: %s",
                          db->path, msg);
        }
    } else {
        s = db_sql_fail(db, rc, "integrity check", err);
        db_copy_str(msg, cap, err ? err->msg : "failed");
    }
    sqlite3_finalize(st);
    return s;
}

et_status et_db_samples(et_db *db, int64_t device_id, int64_t limit,
                        et_db_sample_fn fn, void *arg, et_error *err)
{
    static const char sql[] =
        "SELECT * FROM (SELECT t.id, t.einsum_id, t.einsum_text, e.text, "
        "e.sizes, e.dtypes, t.tuned_at, t.opts, t.median_s, "
        "(SELECT min(b.median_s) FROM trials b WHERE "
        "b.einsum_id = t.einsum_id AND b.device_id = t.device_id AND "
        "b.opts = '' AND b.outcome = 'ok' AND b.renderer_version = ?2 AND "
        "b.tuned_at = t.tuned_at AND b.median_s > 0) AS base "
        "FROM trials t JOIN einsums e ON e.id = t.einsum_id "
        "WHERE t.device_id = ?1 AND t.outcome = 'ok' AND "
        "t.renderer_version = ?2 AND t.median_s > 0 "
        "ORDER BY t.id DESC LIMIT ?3) WHERE base IS NOT NULL "
        "ORDER BY einsum_id, id";
    sqlite3_stmt *st;
    et_status s = db_prep(db, sql, &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_int(st, 2, ET_RENDERER_VERSION);
    sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
    et_db_sample *row = malloc(sizeof(*row));
    if (!row) {
        sqlite3_finalize(st);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int c = 0;
        row->trial_id = sqlite3_column_int64(st, c++);
        row->einsum_id = sqlite3_column_int64(st, c++);
        db_col_text(st, c++, row->einsum_text, sizeof(row->einsum_text));
        db_col_text(st, c++, row->einsum, sizeof(row->einsum));
        db_col_text(st, c++, row->sizes, sizeof(row->sizes));
        db_col_text(st, c++, row->dtypes, sizeof(row->dtypes));
        db_col_text(st, c++, row->tuned_at, sizeof(row->tuned_at));
        db_col_text(st, c++, row->opts, sizeof(row->opts));
        row->median_s = db_col_real(st, c++);
        row->base_s = db_col_real(st, c++);
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, "reading the trials a model learns from", err);
    free(row);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_list(et_db *db, const et_db_filter *f, et_db_list_fn fn,
                     void *arg, et_error *err)
{
    et_db_filter none;
    memset(&none, 0, sizeof(none));
    if (!f)
        f = &none;
    char in[512] = "";
    if (f->outcome_mask) {
        size_t n = (size_t)snprintf(in, sizeof(in), " AND t.outcome IN (");
        int k = 0;
        for (int o = 0; o < ET_OUTCOME_COUNT; o++)
            if (f->outcome_mask & (1u << o))
                n += (size_t)snprintf(in + n, sizeof(in) - n, "%s'%s'",
                                      k++ ? ", " : "",
                                      et_outcome_name((et_outcome)o));
        snprintf(in + n, sizeof(in) - n, ")");
    }
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "SELECT " DB_TRIAL_COLS ", e.canonical, e.text, e.sizes, "
             "e.dtypes, d.name, "
             "d.backend, d.driver_version, coalesce(s.name, '') "
             "FROM trials t JOIN einsums e ON e.id = t.einsum_id "
             "JOIN devices d ON d.id = t.device_id "
             "LEFT JOIN spaces s ON s.id = t.space_id "
             "WHERE (?1 = 0 OR t.einsum_id = ?1) AND "
             "(?2 = 0 OR t.device_id = ?2)%s "
             "ORDER BY t.einsum_id, t.device_id, t.outcome <> 'ok', "
             "CASE WHEN t.outcome = 'ok' THEN t.median_s "
             "ELSE -t.created_at END, "
             "CASE WHEN t.outcome = 'ok' THEN t.id ELSE -t.id END "
             "LIMIT ?3",
             in);
    sqlite3_stmt *st;
    et_status s = db_prep(db, sql, &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, f->einsum_id);
    sqlite3_bind_int64(st, 2, f->device_id);
    sqlite3_bind_int64(st, 3, f->limit > 0 ? f->limit : -1);
    et_db_row *row = malloc(sizeof(*row));
    if (!row) {
        sqlite3_finalize(st);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        db_read_trial(st, &row->trial);
        int c = DB_TRIAL_NCOLS;
        db_col_text(st, c++, row->canonical, sizeof(row->canonical));
        db_col_text(st, c++, row->einsum, sizeof(row->einsum));
        db_col_text(st, c++, row->sizes, sizeof(row->sizes));
        db_col_text(st, c++, row->dtypes, sizeof(row->dtypes));
        db_col_text(st, c++, row->device_name, sizeof(row->device_name));
        db_col_text(st, c++, row->backend, sizeof(row->backend));
        db_col_text(st, c++, row->driver_version, sizeof(row->driver_version));
        db_col_text(st, c++, row->space_name, sizeof(row->space_name));
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, "listing trials", err);
    free(row);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_prune(et_db *db, const et_db_prune_opts *o, int64_t *deleted,
                      et_error *err)
{
    if (deleted)
        *deleted = 0;
    if (!o->failed && !(o->older_than_days > 0) && !o->renderer_old)
        return et_errorf(err, ET_ERR_INPUT, "prune needs at least one "
                         "criterion (failed, older than, old renderer)");
    char where[512];
    size_t n = (size_t)snprintf(where, sizeof(where), "1");
    if (o->failed)
        n += (size_t)snprintf(where + n, sizeof(where) - n,
                              " AND outcome <> 'ok'");
    if (o->older_than_days > 0)
        n += (size_t)snprintf(
            where + n, sizeof(where) - n, " AND created_at < %" PRId64,
            db_now() - (int64_t)(o->older_than_days * 86400.0));
    if (o->renderer_old)
        snprintf(where + n, sizeof(where) - n,
                 " AND renderer_version <> %d", ET_RENDERER_VERSION);
    char sql[1024];
    if (o->dry_run) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM trials WHERE %s",
                 where);
        int64_t count = 0;
        et_status s = db_query_int(db, sql, &count, err);
        if (deleted)
            *deleted = count;
        return s;
    }
    et_status s = db_begin(db, err);
    if (s != ET_OK)
        return s;
    snprintf(sql, sizeof(sql), "DELETE FROM trials WHERE %s", where);
    int64_t count = 0;
    if ((s = db_exec(db, sql, err)) == ET_OK)
        count = sqlite3_changes(db->c);
    if ((s = db_end(db, s, err)) == ET_OK && deleted)
        *deleted = count;
    return s;
}

