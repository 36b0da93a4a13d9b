/*
 * db_impl.h - db/'s internals shared between its files (not for other
 * layers): the handle behind an et_db, the SQL helpers every file uses
 * (sql.c), the one way a keyed row is recorded and its id found
 * (db_insert_or_find), the trials' columns (trials.c) and the migration
 * step written in C (keys.c).
 *
 * Files: sql.c (errors, statements, values, insert-or-find), schema.c
 * (schema, migrations, opening), keys.c (devices, einsums, spaces, hashes),
 * trials.c (trials and the best of them), races.c (final races, campaign
 * results), queries.c (peaks, stats, integrity, samples, list, prune),
 * merge.c (merging files). db.h stays the interface for everyone else.
 */
#ifndef ET_DB_IMPL_H
#define ET_DB_IMPL_H

#include "db/db.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct et_db {
    sqlite3 *c;
    char path[4096];
};

/* The handle's connection (owned by db). */
sqlite3 *et_db_handle(et_db *db);

/* ---- errors and small SQL helpers (sql.c) ------------------------------ */

/* Fills err with "PATH: what: sqlite's message" and returns the status
 * the SQLite result code stands for. db may be NULL. */
et_status db_sql_fail(et_db *db, int rc, const char *what, et_error *err);

/* The status an SQLite result code stands for. */
et_status db_status_of(int rc);

/* src (NULL: "") into dst, cut to fit. */
void db_copy_str(char *dst, size_t cap, const char *src);

/* Unix seconds, the time stamps of every table. */
int64_t db_now(void);

/* Runs a script of statements. */
et_status db_exec(et_db *db, const char *sql, et_error *err);

/* Prepares one statement (*st NULL on failure). */
et_status db_prep(et_db *db, const char *sql, sqlite3_stmt **st,
                  et_error *err);

/* Runs a one-value integer query (a PRAGMA, a count); 0 for no row. */
et_status db_query_int(et_db *db, const char *sql, int64_t *v,
                       et_error *err);

/* BEGIN IMMEDIATE: the write lock now, not at the first write, so that
 * what a transaction reads stays true until it commits. */
et_status db_begin(et_db *db, et_error *err);

/* Ends a transaction begun with db_begin: COMMIT when s is ET_OK (and
 * ROLLBACK when that fails), else ROLLBACK; returns the outcome. */
et_status db_end(et_db *db, et_status s, et_error *err);

void db_rollback(et_db *db);

/* "" for NULL; the text is bound without a copy (it must outlive the
 * statement's step). */
void db_bind_text(sqlite3_stmt *st, int i, const char *s);

/* NaN is stored as NULL (SQLite has no NaN). */
void db_bind_real(sqlite3_stmt *st, int i, double v);

/* NULL reads back as NaN. */
double db_col_real(sqlite3_stmt *st, int i);

/* NULL reads back as "". */
void db_col_text(sqlite3_stmt *st, int i, char *dst, size_t cap);

/* Steps a statement that gives at most one row of (text, Unix time): on
 * a row, *text gets the text malloc'ed (dflt for NULL), *at (may be NULL)
 * the time and *found true. *text NULL and *found false otherwise. */
et_status db_step_text(et_db *db, sqlite3_stmt *st, const char *dflt,
                       char **text, int64_t *at, bool *found,
                       const char *what, et_error *err);

/* ---- insert-or-find (sql.c) --------------------------------------------- */

/*
 * A row with a key of its own (a device, an einsum, a space, a trial),
 * recorded when new and its id found either way. An upsert that finds its
 * key leaves last_insert_rowid at some older insert's id, so a second
 * statement looks the key up.
 *
 * The key's values are the parameters ?1..?k of both statements: bind_key
 * binds them in each, bind_rest binds the insert's others (?k+1...).
 */
typedef struct db_keyed {
    const char *insert;     /* INSERT ... ON CONFLICT (key) DO ... */
    const char *find;       /* SELECT id FROM ... WHERE key = ?1..?k */
    void (*bind_key)(sqlite3_stmt *st, const void *row);
    void (*bind_rest)(sqlite3_stmt *st, const void *row); /* NULL: none */
    const void *row;        /* what the bind functions read */
    const char *recording;  /* "recording a device": the insert's errors */
    const char *looking_up; /* "looking up a device": the find's errors */
    const char *vanished;   /* "device": see db_insert_or_find */
    /* the error for an insert that a foreign key refuses (NULL: SQLite's
     * message); returns its status */
    et_status (*dangling)(et_db *db, const void *row, et_error *err);
    bool tx;                /* insert and find in one write transaction */
} db_keyed;

/*
 * Runs k's insert, then its find into *id (id NULL: the insert alone). A
 * key the find does not see after the insert (deleted in between, when
 * not k->tx) is ET_ERR_INTERNAL "PATH: device row vanished after insert",
 * or *id 0 when k->vanished is NULL.
 */
et_status db_insert_or_find(et_db *db, const db_keyed *k, int64_t *id,
                            et_error *err);

/* k's find alone: *found false and *id 0 when the key has no row. */
et_status db_find_id(et_db *db, const db_keyed *k, int64_t *id, bool *found,
                     et_error *err);

/* ---- trials' columns (trials.c) ----------------------------------------- */

/* The columns db_read_trial reads, of a trials table aliased t. */
#define DB_TRIAL_COLS                                                       \
    "t.id, t.einsum_id, t.einsum_text, t.device_id, t.opts, "             \
    "t.renderer_version, t.source_hash, t.space_id, t.params_json, "       \
    "t.kernel_name, t.outcome, t.reason, t.median_s, t.low_s, t.high_s, "  \
    "t.cv, t.runs, t.verify_trials, t.max_norm_err, t.p_value, t.gops, "   \
    "t.compile_s, t.created_at, t.eintune_version, t.load_1m, t.tuned_at"
#define DB_TRIAL_NCOLS 26

/* A row's DB_TRIAL_COLS (its first DB_TRIAL_NCOLS columns) into t. */
void db_read_trial(sqlite3_stmt *st, et_db_trial *t);

/* ---- migration steps written in C (keys.c) ------------------------------ */

/* Version 5: the structure form of every einsum recorded. */
et_status db_structure_fill(et_db *db, et_error *err);

#endif
