/*
 * db.c - the tuning database on SQLite (see db.h for the contract).
 *
 * Opening goes in three steps so that nothing is written to a file that is
 * not ours: (1) the first 16 bytes must be SQLite's magic (or the file is
 * empty or absent); (2) a read-only connection reads application_id,
 * user_version and the number of schema objects and classifies the file;
 * (3) only then a read-write connection sets WAL and migrates, re-checking
 * the classification inside its write transaction (another process may
 * have created the schema in between).
 *
 * Migrations: a table of steps, migrations[v] taking a file from schema
 * version v to v + 1 (version 0 is an empty file); see "schema" below for
 * how to add one. Each step applied is recorded in schema_migrations; all
 * steps of one open run in one transaction, so a step that fails leaves
 * the file at the version it had.
 */
#include "db/db.h"
#include "db/db_impl.h"

#include "base/cachedir.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct et_db {
    sqlite3 *c;
    char path[4096];
};

sqlite3 *et_db_handle(et_db *db)
{
    return db->c;
}

/* ---- errors ------------------------------------------------------------- */

/* The status an SQLite result code stands for. */
static et_status status_of(int rc)
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

/* Fills err with "PATH: what: sqlite's message" and returns the status. */
static et_status sql_fail(et_db *db, int rc, const char *what, et_error *err)
{
    const char *msg = db && db->c ? sqlite3_errmsg(db->c) : sqlite3_errstr(rc);
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
        return et_errorf(err, status_of(rc),
                         "%s: %s: file is not a database or is corrupt (%s)",
                         db ? db->path : "?", what, msg);
    return et_errorf(err, status_of(rc), "%s: %s: %s", db ? db->path : "?",
                     what, msg);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---- schema ------------------------------------------------------------- */

static_assert(ET_OUTCOME_COUNT == 8,
              "a new outcome needs the trials CHECK and a migration");

static const char schema_v1[] =
    "CREATE TABLE schema_migrations ("
    "  version INTEGER PRIMARY KEY,"
    "  applied_at INTEGER NOT NULL,"
    "  eintune_version TEXT NOT NULL);"
    "CREATE TABLE devices ("
    "  id INTEGER PRIMARY KEY,"
    "  backend TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  driver_version TEXT NOT NULL,"
    "  vendor TEXT NOT NULL DEFAULT '',"
    "  device_version TEXT NOT NULL DEFAULT '',"
    "  limits_json TEXT NOT NULL DEFAULT '{}',"
    "  first_seen INTEGER NOT NULL,"
    "  last_seen INTEGER NOT NULL,"
    "  UNIQUE (backend, name, driver_version));"
    "CREATE TABLE einsums ("
    "  id INTEGER PRIMARY KEY,"
    "  canonical TEXT NOT NULL UNIQUE,"
    "  text TEXT NOT NULL,"
    "  sizes TEXT NOT NULL,"
    "  dtypes TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE spaces ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  content_hash TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (name, content_hash));"
    "CREATE TABLE trials ("
    "  id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  einsum_text TEXT NOT NULL,"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  opts TEXT NOT NULL,"
    "  renderer_version INTEGER NOT NULL,"
    "  source_hash TEXT NOT NULL,"
    "  space_id INTEGER REFERENCES spaces(id),"
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
    "  created_at INTEGER NOT NULL,"
    "  eintune_version TEXT NOT NULL);"
    "CREATE UNIQUE INDEX trials_key ON trials (einsum_id, device_id,"
    "  einsum_text, opts, renderer_version, source_hash);"
    "CREATE INDEX trials_best ON trials (einsum_id, device_id, outcome,"
    "  median_s);"
    "CREATE INDEX trials_space ON trials (space_id);";

/* Version 2: the device peaks move from their cache file into the
 * database. */
static const char schema_v2[] =
    "ALTER TABLE devices ADD COLUMN peaks_json TEXT;"
    "ALTER TABLE devices ADD COLUMN peaks_measured_at INTEGER;"
    "ALTER TABLE devices ADD COLUMN peaks_eintune_version TEXT;";

/* Version 3: the final race of each run (races, race_entries) and the
 * machine's 1-minute load average with each trial. */
static const char schema_v3[] =
    "ALTER TABLE trials ADD COLUMN load_1m REAL;"
    "CREATE TABLE races ("
    "  id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  einsum_text TEXT NOT NULL,"
    "  rounds INTEGER NOT NULL,"
    "  conf REAL NOT NULL,"
    "  verdict TEXT NOT NULL CHECK (verdict IN ('faster', 'tied', 'alone')),"
    "  chosen_opts TEXT NOT NULL,"
    "  runner_up_opts TEXT,"
    "  faster_pct REAL, faster_lo REAL, faster_hi REAL,"
    "  speedup REAL, speedup_lo REAL, speedup_hi REAL,"
    "  load_1m REAL,"
    "  created_at INTEGER NOT NULL,"
    "  eintune_version TEXT NOT NULL);"
    "CREATE INDEX races_key ON races (einsum_id, device_id, created_at);"
    "CREATE TABLE race_entries ("
    "  race_id INTEGER NOT NULL REFERENCES races(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL,"
    "  opts TEXT NOT NULL,"
    "  kernel_name TEXT NOT NULL,"
    "  source_hash TEXT NOT NULL,"
    "  untransformed INTEGER NOT NULL,"
    "  chosen INTEGER NOT NULL,"
    "  tied INTEGER NOT NULL,"
    "  median_s REAL, low_s REAL, high_s REAL, cv REAL,"
    "  times_json TEXT NOT NULL,"
    "  PRIMARY KEY (race_id, position));";

/* Version 4: the finished problems of campaigns (`eintune campaign`), so
 * that a campaign run again answers them without timing anything. */
static const char schema_v4[] =
    "CREATE TABLE campaign_results ("
    "  id INTEGER PRIMARY KEY,"
    "  einsum_id INTEGER NOT NULL REFERENCES einsums(id),"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  problem_key TEXT NOT NULL,"
    "  result_json TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  eintune_version TEXT NOT NULL,"
    "  UNIQUE (einsum_id, device_id, problem_key));";

/* Version 5: open axes and sizes never tuned. einsums.structure is the
 * structure form (et_einsum_structure: no sizes), which finds the other
 * sizes of an einsum; trials.tuned_at says at which sizes a trial of an
 * einsum with an open axis was measured ("x=4096"; "" otherwise). */
static const char schema_v5[] =
    "ALTER TABLE einsums ADD COLUMN structure TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE trials ADD COLUMN tuned_at TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX einsums_structure ON einsums (structure);";

static et_status structure_fill(et_db *db, et_error *err);

/*
 * One migration step: takes a file from version `to` - 1 to `to`, inside
 * the open's write transaction. `sql` runs first (a script of statements;
 * NULL for none), then `fn` (NULL for none) for what SQL alone cannot do,
 * e.g. rewriting values in C. A step never commits, never changes
 * user_version and never writes schema_migrations: migrate() does.
 */
typedef struct migration {
    int to;
    const char *what; /* for error messages: "migrating to version 2 (...)" */
    const char *sql;
    et_status (*fn)(et_db *db, et_error *err);
} migration;

/*
 * The steps, in order: migrations[v].to == v + 1.
 *
 * To change the schema (a new column, table, index or CHECK): append one
 * entry here (its SQL in a schema_v<n> text above, or a function), bump
 * ET_DB_SCHEMA_VERSION in db.h, describe the version in db.h's header
 * comment, and write what the readers and writers below need. Never edit
 * a step that was released: files out there are at its version. A new
 * column takes a DEFAULT (or is NULLable) so that rows of older versions
 * stay valid; a new et_outcome changes the trials CHECK, which SQLite
 * cannot ALTER: such a step rebuilds the trials table.
 */
static const migration migrations[] = {
    {1, "devices, einsums, spaces, trials", schema_v1, NULL},
    {2, "device peaks in the database", schema_v2, NULL},
    {3, "final races and the machine's load", schema_v3, NULL},
    {4, "finished campaign problems", schema_v4, NULL},
    {5, "structure of einsums, sizes trials were tuned at", schema_v5,
     structure_fill},
};
static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
                  ET_DB_SCHEMA_VERSION,
              "one migration step per schema version");

/* ---- small SQL helpers -------------------------------------------------- */

static et_status exec(et_db *db, const char *sql, et_error *err)
{
    int rc = sqlite3_exec(db->c, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db, rc, sql, err);
    return ET_OK;
}

static et_status prep(et_db *db, const char *sql, sqlite3_stmt **st,
                      et_error *err)
{
    int rc = sqlite3_prepare_v2(db->c, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return sql_fail(db, rc, "preparing a query", err);
    }
    return ET_OK;
}

/* Runs a one-value integer query (a PRAGMA, a count). */
static et_status query_int(et_db *db, const char *sql, int64_t *v,
                           et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db, sql, &st, err);
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
        s = sql_fail(db, rc, sql, err);
    sqlite3_finalize(st);
    return s;
}

static void rollback(et_db *db)
{
    sqlite3_exec(db->c, "ROLLBACK", NULL, NULL, NULL);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

/* NaN is stored as NULL (SQLite has no NaN). */
static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static double col_real(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(st, i);
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    copy_str(dst, cap, s ? (const char *)s : "");
}

/* ---- opening ------------------------------------------------------------ */

et_status et_db_default_path(char *buf, size_t cap, et_error *err)
{
    char dir[4000];
    et_status st = et_cache_dir_path(dir, sizeof(dir), err);
    if (st != ET_OK) {
        et_error_append(err, " (use --db FILE)");
        return st;
    }
    int n = snprintf(buf, cap, "%s/tuning.db", dir);
    if (n < 0 || (size_t)n >= cap)
        return et_errorf(err, ET_ERR_IO, "database path too long");
    return ET_OK;
}

/* Step 1: absent (*exists 0), empty, or SQLite's magic; anything else is
 * refused before SQLite sees it. */
static et_status check_magic(const char *path, bool *exists, et_error *err)
{
    static const char magic[16] = "SQLite format 3";
    struct stat sb;
    *exists = false;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT)
            return ET_OK;
        return et_errorf(err, ET_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (S_ISDIR(sb.st_mode))
        return et_errorf(err, ET_ERR_INPUT,
                         "%s: is a directory, not a database file", path);
    *exists = true;
    if (sb.st_size == 0)
        return ET_OK;
    FILE *f = fopen(path, "rb");
    if (!f)
        return et_errorf(err, ET_ERR_IO, "%s: %s", path, strerror(errno));
    char head[16];
    size_t n = fread(head, 1, sizeof(head), f);
    fclose(f);
    if (n != sizeof(head) || memcmp(head, magic, sizeof(head)) != 0)
        return et_errorf(err, ET_ERR_INPUT, "%s: file is not a database (not "
                         "an SQLite file); not an eintune database", path);
    return ET_OK;
}

/* What a file holds, as far as opening cares. */
typedef struct file_kind {
    int64_t app_id, version, objects;
} file_kind;

static et_status read_kind(et_db *db, file_kind *k, et_error *err)
{
    et_status s = query_int(db, "PRAGMA application_id", &k->app_id, err);
    if (s == ET_OK)
        s = query_int(db, "PRAGMA user_version", &k->version, err);
    if (s == ET_OK)
        s = query_int(db,
                      "SELECT count(*) FROM sqlite_master "
                      "WHERE name NOT LIKE 'sqlite_%'",
                      &k->objects, err);
    return s;
}

/* Ours (any version we can read), or empty: ET_OK; else why not. */
static et_status classify(const char *path, const file_kind *k,
                          et_error *err)
{
    if (k->app_id == ET_DB_APPLICATION_ID) {
        if (k->version > ET_DB_SCHEMA_VERSION)
            return et_errorf(err, ET_ERR_INPUT, "%s: written by a newer "
                             "eintune (database schema version %" PRId64 "; "
                             "this eintune %s reads up to version %d): "
                             "upgrade eintune or use another --db", path,
                             k->version, ET_VERSION, ET_DB_SCHEMA_VERSION);
        if (k->version < 0 || (k->version == 0 && k->objects > 0))
            return et_errorf(err, ET_ERR_INPUT, "%s: not an eintune database "
                             "(schema version %" PRId64 " with %" PRId64 " "
                             "tables)", path, k->version, k->objects);
        return ET_OK;
    }
    if (k->app_id == 0 && k->version == 0 && k->objects == 0)
        return ET_OK; /* an empty SQLite file */
    if (k->app_id != 0)
        return et_errorf(err, ET_ERR_INPUT,
                         "%s: not an eintune database (an SQLite file of "
                         "another program: application id 0x%08" PRIx64 ")",
                         path, (uint64_t)k->app_id & 0xffffffffu);
    return et_errorf(err, ET_ERR_INPUT,
                     "%s: not an eintune database (an SQLite file with %" PRId64
                     " schema objects of another program)",
                     path, k->objects);
}

/* "file:" URI of path with ?immutable=1: SQLite then reads the main file
 * alone, takes no locks and creates no -wal or -shm beside it. */
static void immutable_uri(const char *path, char *buf, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = (size_t)snprintf(buf, cap, "file:");
    for (const unsigned char *p = (const unsigned char *)path;
         *p && n + 4 < cap; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("/._-~", *p)) {
            buf[n++] = (char)*p;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
        }
    }
    snprintf(buf + n, cap - n, "?immutable=1");
}

/*
 * Step 2, for a file without a -wal beside it (so the main file holds
 * every committed change): read through an immutable read-only
 * connection, which writes nothing anywhere, not even a rollback of a
 * foreign program's hot journal. With a -wal (a database in use, or one
 * whose writer was killed) the main file alone may be mid-checkpoint, so
 * the read-write connection classifies it instead, before writing (see
 * et_db_open).
 */
static et_status probe(const char *path, et_error *err)
{
    et_db tmp;
    memset(&tmp, 0, sizeof(tmp));
    copy_str(tmp.path, sizeof(tmp.path), path);
    char uri[3 * 4096 + 32];
    immutable_uri(path, uri, sizeof(uri));
    int rc = sqlite3_open_v2(uri, &tmp.c,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    et_status s;
    if (rc != SQLITE_OK) {
        s = sql_fail(&tmp, rc, "cannot open", err);
    } else {
        file_kind k;
        s = read_kind(&tmp, &k, err);
        if (s == ET_OK)
            s = classify(path, &k, err);
    }
    sqlite3_close(tmp.c);
    return s;
}

/* Step 3: bring the schema to the current version. */
static et_status migrate(et_db *db, et_error *err)
{
    file_kind k;
    et_status s = read_kind(db, &k, err);
    if (s != ET_OK)
        return s;
    if ((s = classify(db->path, &k, err)) != ET_OK)
        return s;
    if (k.app_id == ET_DB_APPLICATION_ID &&
        k.version == ET_DB_SCHEMA_VERSION)
        return ET_OK;
    if ((s = exec(db, "BEGIN IMMEDIATE", err)) != ET_OK)
        return s;
    /* again under the write lock: another process may have got here */
    if ((s = read_kind(db, &k, err)) != ET_OK ||
        (s = classify(db->path, &k, err)) != ET_OK)
        goto fail;
    for (int64_t v = k.version; v < ET_DB_SCHEMA_VERSION; v++) {
        const migration *m = &migrations[v];
        assert(m->to == v + 1);
        char what[128];
        snprintf(what, sizeof(what), "migrating to schema version %d (%s)",
                 m->to, m->what);
        int rc = m->sql ? sqlite3_exec(db->c, m->sql, NULL, NULL, NULL)
                        : SQLITE_OK;
        if (rc != SQLITE_OK) {
            s = sql_fail(db, rc, what, err);
            goto fail;
        }
        if (m->fn && (s = m->fn(db, err)) != ET_OK) {
            et_error_prefix(err, what);
            goto fail;
        }
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "INSERT OR REPLACE INTO schema_migrations VALUES "
                 "(%" PRId64 ", %" PRId64 ", '%s')",
                 v + 1, now_s(), ET_VERSION);
        if ((s = exec(db, sql, err)) != ET_OK)
            goto fail;
    }
    char sql[128];
    snprintf(sql, sizeof(sql),
             "PRAGMA application_id = %d; PRAGMA user_version = %d",
             ET_DB_APPLICATION_ID, ET_DB_SCHEMA_VERSION);
    if ((s = exec(db, sql, err)) != ET_OK)
        goto fail;
    if ((s = exec(db, "COMMIT", err)) != ET_OK)
        goto fail;
    return ET_OK;
fail:
    rollback(db);
    return s;
}

et_status et_db_open(const char *path, et_db **out, et_error *err)
{
    *out = NULL;
    et_db *db = calloc(1, sizeof(*db));
    if (!db)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status s = ET_OK;
    if (!path || !path[0]) {
        char dir[4000];
        if ((s = et_cache_dir_make(dir, sizeof(dir), err)) != ET_OK ||
            (s = et_db_default_path(db->path, sizeof(db->path), err)) !=
                ET_OK)
            goto fail;
    } else if (strlen(path) >= sizeof(db->path)) {
        s = et_errorf(err, ET_ERR_INPUT, "database path too long");
        goto fail;
    } else {
        copy_str(db->path, sizeof(db->path), path);
    }

    bool exists;
    if ((s = check_magic(db->path, &exists, err)) != ET_OK)
        goto fail;
    char wal[4200];
    snprintf(wal, sizeof(wal), "%s-wal", db->path);
    struct stat sb;
    bool has_wal = stat(wal, &sb) == 0;
    if (exists && !has_wal && (s = probe(db->path, err)) != ET_OK)
        goto fail;

    int rc = sqlite3_open_v2(db->path, &db->c,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    if (rc != SQLITE_OK) {
        const char *why = exists ? sqlite3_errstr(rc) : strerror(errno);
        s = et_errorf(err, status_of(rc), "%s: cannot open the database: %s",
                      db->path,
                      rc == SQLITE_CANTOPEN && !exists
                          ? "no such directory or no permission"
                          : why);
        goto fail;
    }
    sqlite3_busy_timeout(db->c, ET_DB_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db->c, 1);
    /* Until the file is known to be ours, closing must not checkpoint a
     * -wal into it; reading (WAL recovery included) touches only the
     * -shm. */
    sqlite3_db_config(db->c, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    file_kind k;
    if ((s = read_kind(db, &k, err)) != ET_OK ||
        (s = classify(db->path, &k, err)) != ET_OK)
        goto fail;
    sqlite3_db_config(db->c, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
    if ((s = exec(db, "PRAGMA foreign_keys = ON", err)) != ET_OK)
        goto fail;

    /* WAL: readers and the writer do not block each other, and a commit
     * is atomic whatever kills the process. */
    sqlite3_stmt *st;
    if ((s = prep(db, "PRAGMA journal_mode = WAL", &st, err)) != ET_OK)
        goto fail;
    rc = sqlite3_step(st);
    char mode[16] = "";
    if (rc == SQLITE_ROW)
        col_text(st, 0, mode, sizeof(mode));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        s = sql_fail(db, rc, "setting WAL mode", err);
        goto fail;
    }
    if (strcmp(mode, "wal") != 0) {
        s = et_errorf(err, ET_ERR_IO,
                      "%s: cannot use WAL mode (journal mode is %s)", db->path,
                      mode);
        goto fail;
    }
    if ((s = exec(db, "PRAGMA synchronous = FULL", err)) != ET_OK)
        goto fail;
    if ((s = migrate(db, err)) != ET_OK)
        goto fail;
    *out = db;
    return ET_OK;
fail:
    et_db_close(db);
    return s;
}

void et_db_close(et_db *db)
{
    if (!db)
        return;
    if (db->c)
        sqlite3_close(db->c);
    free(db);
}

const char *et_db_path(const et_db *db)
{
    return db->path;
}

/* ---- devices, einsums, spaces ------------------------------------------ */

static const char *backend_of(const et_device_info *info)
{
    return et_backend_name(info->target.backend);
}

static void limits_json(const et_target *t, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "{\"backend\": \"%s\", \"max_work_group_size\": %" PRId64 ", "
             "\"max_work_item_sizes\": [%" PRId64 ", %" PRId64 ", %" PRId64
             "], \"local_mem_bytes\": %" PRId64 ", \"has_fp64\": %s, "
             "\"has_fp16\": %s, \"mem_base_addr_align\": %" PRId64 ", "
             "\"compute_units\": %d, \"global_mem_bytes\": %" PRId64 ", "
             "\"preferred_vector_width\": {\"f16\": %d, \"f32\": %d, "
             "\"f64\": %d}}",
             et_backend_name(t->backend), t->max_work_group_size,
             t->max_work_item_sizes[0], t->max_work_item_sizes[1],
             t->max_work_item_sizes[2], t->local_mem_bytes,
             t->has_fp64 ? "true" : "false", t->has_fp16 ? "true" : "false",
             t->mem_base_addr_align, t->compute_units, t->global_mem_bytes,
             t->preferred_vector_width[ET_F16],
             t->preferred_vector_width[ET_F32],
             t->preferred_vector_width[ET_F64]);
}

/* Steps a statement expected to give at most one row with an id in
 * column 0. */
static et_status step_id(et_db *db, sqlite3_stmt *st, int64_t *id,
                         bool *found, const char *what, et_error *err)
{
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    *id = *found ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(db, rc, what, err);
    return ET_OK;
}

et_status et_db_device_find(et_db *db, const et_device_info *info,
                            int64_t *id, bool *found, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "SELECT id FROM devices WHERE backend = ?1 AND "
                       "name = ?2 AND driver_version = ?3",
                       &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, backend_of(info));
    bind_text(st, 2, info->name);
    bind_text(st, 3, info->driver_version);
    s = step_id(db, st, id, found, "looking up a device", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_device_id(et_db *db, const et_device_info *info, int64_t *id,
                          et_error *err)
{
    char limits[1024];
    limits_json(&info->target, limits, sizeof(limits));
    sqlite3_stmt *st;
    et_status s = prep(
        db,
        "INSERT INTO devices (backend, name, driver_version, vendor, "
        "device_version, limits_json, first_seen, last_seen) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) "
        "ON CONFLICT (backend, name, driver_version) DO UPDATE SET "
        "vendor = excluded.vendor, device_version = excluded.device_version, "
        "limits_json = excluded.limits_json, last_seen = excluded.last_seen",
        &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, backend_of(info));
    bind_text(st, 2, info->name);
    bind_text(st, 3, info->driver_version);
    bind_text(st, 4, info->vendor);
    bind_text(st, 5, info->device_version);
    bind_text(st, 6, limits);
    sqlite3_bind_int64(st, 7, now_s());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(db, rc, "recording a device", err);
    /* devices are never deleted, so the row is there now */
    bool found;
    if ((s = et_db_device_find(db, info, id, &found, err)) != ET_OK)
        return s;
    if (!found)
        return et_errorf(err, ET_ERR_INTERNAL,
                         "%s: device row vanished after insert", db->path);
    return ET_OK;
}

static void einsum_sizes(const et_einsum *e, char *buf, size_t cap)
{
    et_einsum_sizes_str(e, true, buf, cap);
}

/* Migration to version 3: the structure form of every einsum recorded,
 * rebuilt from its canonical form. A row that cannot be rebuilt keeps ''
 * (it then takes no part in answers for other sizes). */
static et_status structure_fill(et_db *db, et_error *err)
{
    sqlite3_stmt *sel = NULL, *upd = NULL;
    et_status s = prep(db, "SELECT id, canonical FROM einsums", &sel, err);
    if (s != ET_OK)
        return s;
    if ((s = prep(db, "UPDATE einsums SET structure = ?1 WHERE id = ?2",
                  &upd, err)) != ET_OK)
        goto done;
    et_einsum *e = malloc(sizeof *e);
    if (!e) {
        s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *canon = (const char *)sqlite3_column_text(sel, 1);
        et_diag d;
        memset(&d, 0, sizeof d);
        if (!canon || et_einsum_from_canonical(canon, e, &d) != ET_OK)
            continue;
        char structure[ET_DB_CANON_LEN];
        et_einsum_structure(e, structure, sizeof structure);
        sqlite3_reset(upd);
        bind_text(upd, 1, structure);
        sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
        int rc2 = sqlite3_step(upd);
        if (rc2 != SQLITE_DONE) {
            s = sql_fail(db, rc2, "writing an einsum's structure", err);
            break;
        }
    }
    if (s == ET_OK && rc != SQLITE_DONE)
        s = sql_fail(db, rc, "reading the einsums", err);
    free(e);
done:
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return s;
}

static void einsum_dtypes(const et_einsum *e, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < e->n_ops && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", k ? "," : "",
                              et_dtype_name(e->op[k].dtype));
    if (n < cap)
        snprintf(buf + n, cap - n, "->%s", et_dtype_name(e->out.dtype));
}

static et_status einsum_lookup(et_db *db, const char *canon, int64_t *id,
                               bool *found, et_error *err)
{
    sqlite3_stmt *st;
    et_status s =
        prep(db, "SELECT id FROM einsums WHERE canonical = ?1", &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, canon);
    s = step_id(db, st, id, found, "looking up an einsum", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_einsum_find(et_db *db, const et_einsum *e, int64_t *id,
                            bool *found, et_error *err)
{
    char canon[ET_DB_CANON_LEN];
    et_einsum_canonical(e, canon, sizeof(canon));
    return einsum_lookup(db, canon, id, found, err);
}

static et_status einsum_id_tx(et_db *db, const et_einsum *e, int64_t *id,
                              et_error *err)
{
    char canon[ET_DB_CANON_LEN], sizes[4096], dtypes[256];
    char structure[ET_DB_CANON_LEN];
    et_einsum_canonical(e, canon, sizeof(canon));
    et_einsum_structure(e, structure, sizeof(structure));
    einsum_sizes(e, sizes, sizeof(sizes));
    einsum_dtypes(e, dtypes, sizeof(dtypes));
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "INSERT INTO einsums (canonical, text, sizes, dtypes, "
                       "created_at, structure) VALUES (?1, ?2, ?3, ?4, ?5, "
                       "?6) ON CONFLICT (canonical) DO NOTHING",
                       &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, canon);
    bind_text(st, 2, e->text);
    bind_text(st, 3, sizes);
    bind_text(st, 4, dtypes);
    sqlite3_bind_int64(st, 5, now_s());
    bind_text(st, 6, structure);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(db, rc, "recording an einsum", err);
    bool found;
    if ((s = einsum_lookup(db, canon, id, &found, err)) != ET_OK)
        return s;
    if (!found)
        return et_errorf(err, ET_ERR_INTERNAL,
                         "%s: einsum row vanished after insert", db->path);
    return ET_OK;
}

static et_status space_id_tx(et_db *db, const char *name,
                             const char *content_hash, int64_t *id,
                             et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "INSERT INTO spaces (name, content_hash, created_at) "
                       "VALUES (?1, ?2, ?3) "
                       "ON CONFLICT (name, content_hash) DO NOTHING",
                       &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, name);
    bind_text(st, 2, content_hash);
    sqlite3_bind_int64(st, 3, now_s());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(db, rc, "recording a space", err);
    if ((s = prep(db,
                  "SELECT id FROM spaces WHERE name = ?1 AND "
                  "content_hash = ?2",
                  &st, err)) != ET_OK)
        return s;
    bind_text(st, 1, name);
    bind_text(st, 2, content_hash);
    bool found;
    s = step_id(db, st, id, &found, "looking up a space", err);
    sqlite3_finalize(st);
    if (s == ET_OK && !found) {
        s = et_errorf(err, ET_ERR_INTERNAL,
                      "%s: space row vanished after insert", db->path);
    }
    return s;
}

/* Runs an insert-then-select in one write transaction, so that a
 * concurrent prune cannot delete the row in between. */
static et_status end_tx(et_db *db, et_status s, et_error *err)
{
    if (s != ET_OK) {
        rollback(db);
        return s;
    }
    s = exec(db, "COMMIT", err);
    if (s != ET_OK)
        rollback(db);
    return s;
}

et_status et_db_einsum_id(et_db *db, const et_einsum *e, int64_t *id,
                          et_error *err)
{
    et_status s = exec(db, "BEGIN IMMEDIATE", err);
    if (s != ET_OK)
        return s;
    return end_tx(db, einsum_id_tx(db, e, id, err), err);
}

et_status et_db_space_id(et_db *db, const char *name,
                         const char *content_hash, int64_t *id,
                         et_error *err)
{
    et_status s = exec(db, "BEGIN IMMEDIATE", err);
    if (s != ET_OK)
        return s;
    return end_tx(db, space_id_tx(db, name, content_hash, id, err), err);
}

/* ---- hashes ------------------------------------------------------------- */

uint64_t et_db_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void hex64(uint64_t h, char out[ET_DB_HASH_LEN])
{
    snprintf(out, ET_DB_HASH_LEN, "%016" PRIx64, h);
}

void et_db_hash_hex(const void *data, size_t n, char out[ET_DB_HASH_LEN])
{
    hex64(et_db_fnv1a64(ET_DB_FNV_INIT, data, n), out);
}

void et_db_source_hash(const char *source, const et_launch *geom,
                       char out[ET_DB_HASH_LEN])
{
    uint64_t h = ET_DB_FNV_INIT;
    h = et_db_fnv1a64(h, source, strlen(source));
    /* geometry as text: the same hash on every machine */
    char g[256] = "|no launch";
    if (geom)
        snprintf(g, sizeof(g),
                 "|ndim=%d|global=%" PRId64 ",%" PRId64 ",%" PRId64
                 "|local=%" PRId64 ",%" PRId64 ",%" PRId64 "|has_local=%d",
                 geom->ndim, geom->global[0], geom->global[1],
                 geom->global[2], geom->local[0], geom->local[1],
                 geom->local[2], geom->has_local ? 1 : 0);
    h = et_db_fnv1a64(h, g, strlen(g));
    hex64(h, out);
}

/* ---- trials ------------------------------------------------------------- */

et_status et_db_trial_init(et_db_trial *t, int64_t einsum_id,
                           const et_einsum *e, int64_t device_id,
                           const char *opts, const char *source,
                           const et_launch *geom, et_error *err)
{
    memset(t, 0, sizeof(*t));
    t->p_value = NAN;
    t->load_1m = NAN;
    t->max_norm_err = NAN;
    t->einsum_id = einsum_id;
    copy_str(t->einsum_text, sizeof(t->einsum_text), e->text);
    t->device_id = device_id;
    if (opts && strlen(opts) >= sizeof(t->opts))
        return et_errorf(err, ET_ERR_INPUT, "opt list too long for the "
                         "database (%zu bytes, at most %zu)", strlen(opts),
                         sizeof(t->opts) - 1);
    copy_str(t->opts, sizeof(t->opts), opts);
    t->renderer_version = ET_RENDERER_VERSION;
    if (source)
        et_db_source_hash(source, geom, t->source_hash);
    int oa = et_einsum_open_axis(e);
    if (oa >= 0)
        snprintf(t->tuned_at, sizeof(t->tuned_at), "%s=%" PRId64,
                 e->idx[oa].name, e->idx[oa].size);
    return ET_OK;
}

void et_db_trial_set_evaluation(et_db_trial *t, const et_einsum *e,
                                const et_evaluation *ev)
{
    t->outcome = ev->result.outcome;
    copy_str(t->reason, sizeof(t->reason), ev->result.reason);
    t->compile_s = ev->build_s;
    if (ev->verified) {
        t->verify_trials = ev->verify.trials;
        t->max_norm_err = ev->verify.max_norm_err;
        t->p_value = ev->verify.p_value;
    }
    if (ev->timed) {
        t->median_s = ev->timing.median_s;
        t->low_s = ev->timing.low_s;
        t->high_s = ev->timing.high_s;
        t->cv = ev->timing.cv;
        t->runs = ev->timing.runs;
        int64_t ops[ET_DTYPE_COUNT];
        et_einsum_ops(e, ops);
        double total = 0;
        for (int d = 0; d < ET_DTYPE_COUNT; d++)
            total += (double)ops[d];
        t->gops = t->median_s > 0 ? total / t->median_s / 1e9 : 0;
    }
}

#define TRIAL_COLS                                                          \
    "t.id, t.einsum_id, t.einsum_text, t.device_id, t.opts, "             \
    "t.renderer_version, t.source_hash, t.space_id, t.params_json, "       \
    "t.kernel_name, t.outcome, t.reason, t.median_s, t.low_s, t.high_s, "  \
    "t.cv, t.runs, t.verify_trials, t.max_norm_err, t.p_value, t.gops, "   \
    "t.compile_s, t.created_at, t.eintune_version, t.load_1m, t.tuned_at"
#define TRIAL_NCOLS 26

static void read_trial(sqlite3_stmt *st, et_db_trial *t)
{
    memset(t, 0, sizeof(*t));
    t->id = sqlite3_column_int64(st, 0);
    t->einsum_id = sqlite3_column_int64(st, 1);
    col_text(st, 2, t->einsum_text, sizeof(t->einsum_text));
    t->device_id = sqlite3_column_int64(st, 3);
    col_text(st, 4, t->opts, sizeof(t->opts));
    t->renderer_version = sqlite3_column_int(st, 5);
    col_text(st, 6, t->source_hash, sizeof(t->source_hash));
    t->space_id = sqlite3_column_int64(st, 7);
    col_text(st, 8, t->params_json, sizeof(t->params_json));
    col_text(st, 9, t->kernel_name, sizeof(t->kernel_name));
    char name[32];
    col_text(st, 10, name, sizeof(name));
    et_outcome o = ET_OUTCOME_CRASH;
    if (et_outcome_parse(name, &o) != 0)
        o = ET_OUTCOME_CRASH; /* the CHECK constraint makes this moot */
    t->outcome = o;
    col_text(st, 11, t->reason, sizeof(t->reason));
    t->median_s = col_real(st, 12);
    t->low_s = col_real(st, 13);
    t->high_s = col_real(st, 14);
    t->cv = col_real(st, 15);
    t->runs = sqlite3_column_int(st, 16);
    t->verify_trials = sqlite3_column_int(st, 17);
    t->max_norm_err = col_real(st, 18);
    t->p_value = col_real(st, 19);
    t->gops = col_real(st, 20);
    t->compile_s = col_real(st, 21);
    t->created_at = sqlite3_column_int64(st, 22);
    col_text(st, 23, t->eintune_version, sizeof(t->eintune_version));
    t->load_1m = col_real(st, 24);
    col_text(st, 25, t->tuned_at, sizeof(t->tuned_at));
}

/* Steps a query of TRIAL_COLS for at most one row. */
static et_status step_trial(et_db *db, sqlite3_stmt *st, et_db_trial *out,
                            bool *found, const char *what, et_error *err)
{
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW)
        read_trial(st, out);
    else if (rc != SQLITE_DONE)
        return sql_fail(db, rc, what, err);
    return ET_OK;
}

et_status et_db_trial_lookup(et_db *db, const et_db_trial *key,
                             et_db_trial *out, bool *found, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "SELECT " TRIAL_COLS " FROM trials t WHERE "
                       "einsum_id = ?1 AND device_id = ?2 AND "
                       "einsum_text = ?3 AND opts = ?4 AND "
                       "renderer_version = ?5 AND source_hash = ?6",
                       &st, err);
    if (s != ET_OK)
        return s;
    /* bound as copies: out may be key */
    sqlite3_bind_int64(st, 1, key->einsum_id);
    sqlite3_bind_int64(st, 2, key->device_id);
    sqlite3_bind_text(st, 3, key->einsum_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, key->opts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, key->renderer_version);
    sqlite3_bind_text(st, 6, key->source_hash, -1, SQLITE_TRANSIENT);
    s = step_trial(db, st, out, found, "looking up a trial", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_trial_record(et_db *db, const et_db_trial *t, int64_t *id,
                             et_error *err)
{
    if ((unsigned)t->outcome >= ET_OUTCOME_COUNT)
        return et_errorf(err, ET_ERR_INPUT, "trial with an invalid outcome %d",
                         (int)t->outcome);
    sqlite3_stmt *st;
    et_status s = prep(
        db,
        "INSERT INTO trials (einsum_id, device_id, einsum_text, opts, "
        "renderer_version, source_hash, space_id, params_json, kernel_name, "
        "outcome, reason, median_s, low_s, high_s, cv, runs, verify_trials, "
        "max_norm_err, p_value, gops, compile_s, created_at, "
        "eintune_version, load_1m, tuned_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
        "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
        "?21, ?22, ?23, ?24, ?25) "
        "ON CONFLICT (einsum_id, device_id, einsum_text, opts, "
        "renderer_version, source_hash) DO UPDATE SET "
        "space_id = excluded.space_id, params_json = excluded.params_json, "
        "kernel_name = excluded.kernel_name, outcome = excluded.outcome, "
        "reason = excluded.reason, median_s = excluded.median_s, "
        "low_s = excluded.low_s, high_s = excluded.high_s, cv = excluded.cv, "
        "runs = excluded.runs, verify_trials = excluded.verify_trials, "
        "max_norm_err = excluded.max_norm_err, "
        "p_value = excluded.p_value, gops = excluded.gops, "
        "compile_s = excluded.compile_s, created_at = excluded.created_at, "
        "eintune_version = excluded.eintune_version, "
        "load_1m = excluded.load_1m, tuned_at = excluded.tuned_at",
        &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, t->einsum_id);
    sqlite3_bind_int64(st, 2, t->device_id);
    bind_text(st, 3, t->einsum_text);
    bind_text(st, 4, t->opts);
    sqlite3_bind_int(st, 5, t->renderer_version);
    bind_text(st, 6, t->source_hash);
    if (t->space_id > 0)
        sqlite3_bind_int64(st, 7, t->space_id);
    else
        sqlite3_bind_null(st, 7);
    bind_text(st, 8, t->params_json);
    bind_text(st, 9, t->kernel_name);
    bind_text(st, 10, et_outcome_name(t->outcome));
    bind_text(st, 11, t->reason);
    bind_real(st, 12, t->median_s);
    bind_real(st, 13, t->low_s);
    bind_real(st, 14, t->high_s);
    bind_real(st, 15, t->cv);
    sqlite3_bind_int(st, 16, t->runs);
    sqlite3_bind_int(st, 17, t->verify_trials);
    bind_real(st, 18, t->max_norm_err);
    bind_real(st, 19, t->p_value);
    bind_real(st, 20, t->gops);
    bind_real(st, 21, t->compile_s);
    sqlite3_bind_int64(st, 22, t->created_at ? t->created_at : now_s());
    bind_text(st, 23, t->eintune_version[0] ? t->eintune_version
                                            : ET_VERSION);
    bind_real(st, 24, t->load_1m);
    bind_text(st, 25, t->tuned_at);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            return et_errorf(err, ET_ERR_INPUT, "%s: trial refers to an "
                             "einsum, device or space that is not recorded "
                             "(ids %" PRId64 ", %" PRId64 ", %" PRId64 ")",
                             db->path, t->einsum_id, t->device_id, t->space_id);
        return sql_fail(db, rc, "recording a trial", err);
    }
    if (!id)
        return ET_OK;
    bool found;
    et_db_trial got;
    if ((s = et_db_trial_lookup(db, t, &got, &found, err)) != ET_OK)
        return s;
    *id = found ? got.id : 0;
    return ET_OK;
}

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

et_status et_db_race_record(et_db *db, const et_db_race *r, int64_t *id,
                            et_error *err)
{
    if (r->n < 1 || r->n > ET_DB_RACE_MAX)
        return et_errorf(err, ET_ERR_INPUT, "a race of %d kernels", r->n);
    et_status s = exec(db, "BEGIN IMMEDIATE", err);
    if (s != ET_OK)
        return s;
    sqlite3_stmt *st = NULL;
    int rc;
    s = prep(db,
             "INSERT INTO races (einsum_id, device_id, einsum_text, rounds, "
             "conf, verdict, chosen_opts, runner_up_opts, faster_pct, "
             "faster_lo, faster_hi, speedup, speedup_lo, speedup_hi, "
             "load_1m, created_at, eintune_version) VALUES (?1, ?2, ?3, ?4, "
             "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
             &st, err);
    if (s != ET_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, r->einsum_id);
    sqlite3_bind_int64(st, 2, r->device_id);
    bind_text(st, 3, r->einsum_text);
    sqlite3_bind_int(st, 4, r->rounds);
    bind_real(st, 5, r->conf);
    bind_text(st, 6, r->verdict);
    bind_text(st, 7, r->chosen_opts);
    if (r->runner_up_opts[0] || r->n > 1)
        bind_text(st, 8, r->runner_up_opts);
    else
        sqlite3_bind_null(st, 8);
    bind_real(st, 9, r->faster_pct);
    bind_real(st, 10, r->faster_lo);
    bind_real(st, 11, r->faster_hi);
    bind_real(st, 12, r->speedup);
    bind_real(st, 13, r->speedup_lo);
    bind_real(st, 14, r->speedup_hi);
    bind_real(st, 15, r->load_1m);
    sqlite3_bind_int64(st, 16, r->created_at ? r->created_at : now_s());
    bind_text(st, 17, ET_VERSION);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE) {
        s = rc == SQLITE_CONSTRAINT_FOREIGNKEY
                ? et_errorf(err, ET_ERR_INPUT, "%s: race refers to an einsum "
                            "or device that is not recorded", db->path)
                : sql_fail(db, rc, "recording a race", err);
        goto fail;
    }
    int64_t race_id = sqlite3_last_insert_rowid(db->c);
    s = prep(db,
             "INSERT INTO race_entries (race_id, position, opts, kernel_name, "
             "source_hash, untransformed, chosen, tied, median_s, low_s, "
             "high_s, cv, times_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
             "?8, ?9, ?10, ?11, ?12, ?13)",
             &st, err);
    if (s != ET_OK)
        goto fail;
    for (int i = 0; i < r->n; i++) {
        const et_db_race_entry *e = &r->e[i];
        char *tj = times_json(e, r->rounds);
        if (!tj) {
            s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            goto fail;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, race_id);
        sqlite3_bind_int(st, 2, i);
        bind_text(st, 3, e->opts);
        bind_text(st, 4, e->kernel_name);
        bind_text(st, 5, e->source_hash);
        sqlite3_bind_int(st, 6, e->untransformed);
        sqlite3_bind_int(st, 7, e->chosen);
        sqlite3_bind_int(st, 8, e->tied);
        bind_real(st, 9, e->median_s);
        bind_real(st, 10, e->low_s);
        bind_real(st, 11, e->high_s);
        bind_real(st, 12, e->cv);
        sqlite3_bind_text(st, 13, tj, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        free(tj);
        if (rc != SQLITE_DONE) {
            s = sql_fail(db, rc, "recording a race", err);
            goto fail;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if ((s = exec(db, "COMMIT", err)) != ET_OK)
        goto fail;
    if (id)
        *id = race_id;
    return ET_OK;
fail:
    if (st)
        sqlite3_finalize(st);
    rollback(db);
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
    et_status s = prep(db,
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
        col_text(st, 1, text, sizeof text);
        col_text(st, 2, opts, sizeof opts);
        double median = col_real(st, 6);
        if (!strcmp(text, t->einsum_text) && !strcmp(opts, t->opts) &&
            median > 0) {
            *found = true;
            out->race_id = sqlite3_column_int64(st, 0);
            out->rounds = sqlite3_column_int(st, 3);
            col_text(st, 4, out->verdict, sizeof out->verdict);
            out->created_at = sqlite3_column_int64(st, 5);
            out->median_s = median;
            out->low_s = col_real(st, 7);
            out->high_s = col_real(st, 8);
            out->cv = col_real(st, 9);
        }
    } else if (rc != SQLITE_DONE) {
        s = sql_fail(db, rc, "looking up the final race", err);
    }
    sqlite3_finalize(st);
    return s;
}

et_status et_db_best_ids(et_db *db, int64_t einsum_id, int64_t device_id,
                         et_db_trial *out, bool *found, et_error *err)
{
    sqlite3_stmt *st;
    /* the choice of the latest final race, when its trial still stands */
    et_status s = prep(db,
                       "SELECT " TRIAL_COLS " FROM races r JOIN trials t ON "
                       "t.einsum_id = r.einsum_id AND "
                       "t.device_id = r.device_id AND "
                       "t.einsum_text = r.einsum_text AND "
                       "t.opts = r.chosen_opts WHERE "
                       "r.einsum_id = ?1 AND r.device_id = ?2 AND "
                       "t.outcome = 'ok' AND t.renderer_version = ?3 AND "
                       "t.median_s IS NOT NULL "
                       "ORDER BY r.created_at DESC, r.id DESC, "
                       "t.created_at DESC LIMIT 1",
                       &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, einsum_id);
    sqlite3_bind_int64(st, 2, device_id);
    sqlite3_bind_int(st, 3, ET_RENDERER_VERSION);
    s = step_trial(db, st, out, found, "looking up the best trial", err);
    sqlite3_finalize(st);
    if (s != ET_OK || *found)
        return s;
    s = prep(db,
             "SELECT " TRIAL_COLS " FROM trials t WHERE "
             "einsum_id = ?1 AND device_id = ?2 AND "
             "outcome = 'ok' AND renderer_version = ?3 AND "
             "median_s IS NOT NULL "
             "ORDER BY median_s ASC, id ASC LIMIT 1",
             &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, einsum_id);
    sqlite3_bind_int64(st, 2, device_id);
    sqlite3_bind_int(st, 3, ET_RENDERER_VERSION);
    s = step_trial(db, st, out, found, "looking up the best trial", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_best(et_db *db, const et_einsum *e,
                     const et_device_info *info, et_db_trial *out,
                     bool *found, et_error *err)
{
    int64_t eid, did;
    *found = false;
    et_status s = et_db_einsum_find(db, e, &eid, found, err);
    if (s != ET_OK || !*found)
        return s;
    if ((s = et_db_device_find(db, info, &did, found, err)) != ET_OK ||
        !*found)
        return s;
    return et_db_best_ids(db, eid, did, out, found, err);
}

et_status et_db_einsums_like(et_db *db, const et_einsum *e,
                             et_db_einsum_fn fn, void *arg, et_error *err)
{
    char structure[ET_DB_CANON_LEN];
    et_einsum_structure(e, structure, sizeof(structure));
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "SELECT id, canonical, text, sizes FROM einsums "
                       "WHERE structure = ?1 ORDER BY id",
                       &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, structure);
    et_db_einsum_row *row = malloc(sizeof *row);
    if (!row) {
        sqlite3_finalize(st);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        memset(row, 0, sizeof *row);
        row->id = sqlite3_column_int64(st, 0);
        col_text(st, 1, row->canonical, sizeof(row->canonical));
        col_text(st, 2, row->text, sizeof(row->text));
        col_text(st, 3, row->sizes, sizeof(row->sizes));
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = sql_fail(db, rc, "listing the sizes of an einsum", err);
    free(row);
    sqlite3_finalize(st);
    return s;
}

/* ---- peaks -------------------------------------------------------------- */

et_status et_db_peaks_store(et_db *db, int64_t device_id, const char *json,
                            int64_t measured_at, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "UPDATE devices SET peaks_json = ?1, "
                       "peaks_measured_at = ?2, peaks_eintune_version = ?3 "
                       "WHERE id = ?4",
                       &st, err);
    if (s != ET_OK)
        return s;
    bind_text(st, 1, json);
    sqlite3_bind_int64(st, 2, measured_at ? measured_at : now_s());
    bind_text(st, 3, ET_VERSION);
    sqlite3_bind_int64(st, 4, device_id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(db, rc, "storing peaks", err);
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
    et_status s = prep(db,
                       "SELECT peaks_json, peaks_measured_at FROM devices "
                       "WHERE id = ?1 AND peaks_json IS NOT NULL AND "
                       "peaks_eintune_version = ?2",
                       &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, device_id);
    bind_text(st, 2, ET_VERSION);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        *json = strdup(text ? text : "");
        if (!*json) {
            s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        } else {
            *found = true;
            if (measured_at)
                *measured_at = sqlite3_column_int64(st, 1);
        }
    } else if (rc != SQLITE_DONE) {
        s = sql_fail(db, rc, "loading peaks", err);
    }
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
    et_status s = exec(db, "BEGIN", err);
    if (s != ET_OK)
        return s;
    int64_t v = 0;
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM trials WHERE renderer_version <> %d",
             ET_RENDERER_VERSION);
    if ((s = query_int(db, "PRAGMA user_version", &v, err)) != ET_OK ||
        (s = query_int(db, "SELECT count(*) FROM devices", &out->devices,
                       err)) != ET_OK ||
        (s = query_int(db, "SELECT count(*) FROM einsums", &out->einsums,
                       err)) != ET_OK ||
        (s = query_int(db, "SELECT count(*) FROM spaces", &out->spaces,
                       err)) != ET_OK ||
        (s = query_int(db, "SELECT count(*) FROM trials", &out->trials,
                       err)) != ET_OK ||
        (s = query_int(db, "SELECT count(*) FROM races", &out->races,
                       err)) != ET_OK ||
        (s = query_int(db, sql, &out->old_renderer, err)) != ET_OK ||
        (s = query_int(db, "SELECT coalesce(min(created_at), 0) FROM trials",
                       &out->oldest, err)) != ET_OK ||
        (s = query_int(db, "SELECT coalesce(max(created_at), 0) FROM trials",
                       &out->newest, err)) != ET_OK)
        goto done;
    out->schema_version = (int)v;
    sqlite3_stmt *st;
    if ((s = prep(db, "SELECT outcome, count(*) FROM trials GROUP BY outcome",
                  &st, err)) != ET_OK)
        goto done;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char name[32];
        col_text(st, 0, name, sizeof(name));
        et_outcome o;
        if (et_outcome_parse(name, &o) == 0)
            out->by_outcome[o] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        s = sql_fail(db, rc, "counting outcomes", err);
done:
    exec(db, "COMMIT", NULL);
    char wal[4200];
    snprintf(wal, sizeof(wal), "%s-wal", db->path);
    out->file_bytes = file_size(db->path) + file_size(wal);
    return s;
}

et_status et_db_integrity(et_db *db, char *msg, size_t cap, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db, "PRAGMA integrity_check(1)", &st, err);
    if (s != ET_OK)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        col_text(st, 0, msg, cap);
        if (strcmp(msg, "ok") != 0) {
            s = et_errorf(err, ET_ERR_INPUT, "%s: integrity check failed: %s",
                          db->path, msg);
        }
    } else {
        s = sql_fail(db, rc, "integrity check", err);
        copy_str(msg, cap, err ? err->msg : "failed");
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
    et_status s = prep(db, sql, &st, err);
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
        col_text(st, c++, row->einsum_text, sizeof(row->einsum_text));
        col_text(st, c++, row->einsum, sizeof(row->einsum));
        col_text(st, c++, row->sizes, sizeof(row->sizes));
        col_text(st, c++, row->dtypes, sizeof(row->dtypes));
        col_text(st, c++, row->tuned_at, sizeof(row->tuned_at));
        col_text(st, c++, row->opts, sizeof(row->opts));
        row->median_s = col_real(st, c++);
        row->base_s = col_real(st, c++);
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = sql_fail(db, rc, "reading the trials a model learns from", err);
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
             "SELECT " TRIAL_COLS ", e.canonical, e.text, e.sizes, "
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
    et_status s = prep(db, sql, &st, err);
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
        read_trial(st, &row->trial);
        int c = TRIAL_NCOLS;
        col_text(st, c++, row->canonical, sizeof(row->canonical));
        col_text(st, c++, row->einsum, sizeof(row->einsum));
        col_text(st, c++, row->sizes, sizeof(row->sizes));
        col_text(st, c++, row->dtypes, sizeof(row->dtypes));
        col_text(st, c++, row->device_name, sizeof(row->device_name));
        col_text(st, c++, row->backend, sizeof(row->backend));
        col_text(st, c++, row->driver_version, sizeof(row->driver_version));
        col_text(st, c++, row->space_name, sizeof(row->space_name));
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = sql_fail(db, rc, "listing trials", err);
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
            now_s() - (int64_t)(o->older_than_days * 86400.0));
    if (o->renderer_old)
        snprintf(where + n, sizeof(where) - n,
                 " AND renderer_version <> %d", ET_RENDERER_VERSION);
    char sql[1024];
    if (o->dry_run) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM trials WHERE %s",
                 where);
        int64_t count = 0;
        et_status s = query_int(db, sql, &count, err);
        if (deleted)
            *deleted = count;
        return s;
    }
    et_status s = exec(db, "BEGIN IMMEDIATE", err);
    if (s != ET_OK)
        return s;
    snprintf(sql, sizeof(sql), "DELETE FROM trials WHERE %s", where);
    if ((s = exec(db, sql, err)) != ET_OK)
        goto fail;
    int64_t count = sqlite3_changes(db->c);
    if ((s = exec(db, "COMMIT", err)) != ET_OK)
        goto fail;
    if (deleted)
        *deleted = count;
    return ET_OK;
fail:
    rollback(db);
    return s;
}

/* ---- campaigns ---------------------------------------------------------- */

et_status et_db_campaign_lookup(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                char **json, int64_t *created_at,
                                bool *found, et_error *err)
{
    *found = false;
    *json = NULL;
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "SELECT result_json, created_at FROM campaign_results "
                       "WHERE einsum_id = ?1 AND device_id = ?2 AND "
                       "problem_key = ?3",
                       &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, einsum_id);
    sqlite3_bind_int64(st, 2, device_id);
    bind_text(st, 3, key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        *json = strdup(t ? t : "{}");
        if (created_at)
            *created_at = sqlite3_column_int64(st, 1);
        *found = *json != NULL;
        if (!*json)
            s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
    } else if (rc != SQLITE_DONE) {
        s = sql_fail(db, rc, "looking up a campaign problem", err);
    }
    sqlite3_finalize(st);
    return s;
}

et_status et_db_campaign_record(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                const char *json, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = prep(db,
                       "INSERT INTO campaign_results (einsum_id, device_id, "
                       "problem_key, result_json, created_at, "
                       "eintune_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                       "ON CONFLICT (einsum_id, device_id, problem_key) DO "
                       "UPDATE SET result_json = excluded.result_json, "
                       "created_at = excluded.created_at, eintune_version = "
                       "excluded.eintune_version",
                       &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, einsum_id);
    sqlite3_bind_int64(st, 2, device_id);
    bind_text(st, 3, key);
    bind_text(st, 4, json);
    sqlite3_bind_int64(st, 5, now_s());
    bind_text(st, 6, ET_VERSION);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return et_errorf(err, ET_ERR_INPUT, "%s: a campaign result refers to "
                         "an einsum or device that is not recorded",
                         db->path);
    if (rc != SQLITE_DONE)
        return sql_fail(db, rc, "recording a campaign problem", err);
    return ET_OK;
}
