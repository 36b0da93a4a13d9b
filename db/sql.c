/*
 * sql.c - the SQL helpers db/'s files share (db_impl.h): SQLite's errors
 * turned into et_error, statements, transactions, values bound and read
 * (NaN as NULL), and the one insert-or-find of a keyed row.
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

sqlite3 *et_db_handle(et_db *db)
{
    return db->c;
}

/* ---- errors ------------------------------------------------------------- */

et_status db_status_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
        return ET_ERR_INPUT;
    case SQLITE_NOMEM:
        return ET_ERR_NOMEM;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
        return ET_ERR_IO;
    default:
        return ET_ERR_INTERNAL;
    }
}

et_status db_sql_fail(et_db *db, int rc, const char *what, et_error *err)
{
    const char *msg = db && db->c ? sqlite3_errmsg(db->c) : sqlite3_errstr(rc);
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
        return et_errorf(err, db_status_of(rc),
                         "%s: %s: file is not a database or is corrupt (%s)",
                         db ? db->path : "?", what, msg);
    return et_errorf(err, db_status_of(rc), "%s: %s: %s",
                     db ? db->path : "?", what, msg);
}

void db_copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

int64_t db_now(void)
{
    return (int64_t)time(NULL);
}

/* ---- statements and transactions ---------------------------------------- */

et_status db_exec(et_db *db, const char *sql, et_error *err)
{
    int rc = sqlite3_exec(db->c, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return db_sql_fail(db, rc, sql, err);
    return ET_OK;
}

et_status db_prep(et_db *db, const char *sql, sqlite3_stmt **st,
                  et_error *err)
{
    int rc = sqlite3_prepare_v2(db->c, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return db_sql_fail(db, rc, "preparing a query", err);
    }
    return ET_OK;
}

et_status db_query_int(et_db *db, const char *sql, int64_t *v,
                       et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db, sql, &st, err);
    if (s != ET_OK)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        rc = SQLITE_DONE;
    } else if (rc == SQLITE_DONE) {
        *v = 0;
    }
    if (rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, sql, err);
    sqlite3_finalize(st);
    return s;
}

void db_rollback(et_db *db)
{
    sqlite3_exec(db->c, "ROLLBACK", NULL, NULL, NULL);
}

et_status db_begin(et_db *db, et_error *err)
{
    return db_exec(db, "BEGIN IMMEDIATE", err);
}

et_status db_end(et_db *db, et_status s, et_error *err)
{
    if (s != ET_OK) {
        db_rollback(db);
        return s;
    }
    s = db_exec(db, "COMMIT", err);
    if (s != ET_OK)
        db_rollback(db);
    return s;
}

/* ---- values ------------------------------------------------------------- */

void db_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

void db_bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

double db_col_real(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(st, i);
}

void db_col_text(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    db_copy_str(dst, cap, s ? (const char *)s : "");
}

et_status db_step_text(et_db *db, sqlite3_stmt *st, const char *dflt,
                       char **text, int64_t *at, bool *found,
                       const char *what, et_error *err)
{
    *text = NULL;
    *found = false;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return ET_OK;
    if (rc != SQLITE_ROW)
        return db_sql_fail(db, rc, what, err);
    const char *t = (const char *)sqlite3_column_text(st, 0);
    *text = strdup(t ? t : dflt);
    if (!*text)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    *found = true;
    if (at)
        *at = sqlite3_column_int64(st, 1);
    return ET_OK;
}


/* ---- insert-or-find ----------------------------------------------------- */

/* Steps a statement expected to give at most one row with an id in
 * column 0: *found, and *id (0 when not found). */
static et_status step_id(et_db *db, sqlite3_stmt *st, int64_t *id,
                         bool *found, const char *what, et_error *err)
{
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    *id = *found ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_sql_fail(db, rc, what, err);
    return ET_OK;
}

et_status db_find_id(et_db *db, const db_keyed *k, int64_t *id, bool *found,
                     et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db, k->find, &st, err);
    if (s != ET_OK)
        return s;
    k->bind_key(st, k->row);
    s = step_id(db, st, id, found, k->looking_up, err);
    sqlite3_finalize(st);
    return s;
}

static et_status insert_find(et_db *db, const db_keyed *k, int64_t *id,
                             et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db, k->insert, &st, err);
    if (s != ET_OK)
        return s;
    k->bind_key(st, k->row);
    if (k->bind_rest)
        k->bind_rest(st, k->row);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY && k->dangling)
        return k->dangling(db, k->row, err);
    if (rc != SQLITE_DONE)
        return db_sql_fail(db, rc, k->recording, err);
    if (!id)
        return ET_OK;
    bool found;
    if ((s = db_find_id(db, k, id, &found, err)) != ET_OK)
        return s;
    if (!found && k->vanished)
        return et_errorf(err, ET_ERR_INTERNAL,
                         "%s: %s row vanished after insert", db->path,
                         k->vanished);
    return ET_OK;
}

et_status db_insert_or_find(et_db *db, const db_keyed *k, int64_t *id,
                            et_error *err)
{
    if (!k->tx)
        return insert_find(db, k, id, err);
    /* one write transaction: nothing deletes the row between the two
     * statements */
    et_status s = db_begin(db, err);
    if (s != ET_OK)
        return s;
    return db_end(db, insert_find(db, k, id, err), err);
}
