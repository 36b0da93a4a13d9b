/*
 * schema.c - the tuning database's schema, its migrations, and opening a
 * file (see db.h for the contract).
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
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
 * comment, and write what the readers and writers need (keys.c, trials.c,
 * races.c, queries.c). Never edit a step that was released: files out
 * there are at its version. A new column takes a DEFAULT (or is NULLable)
 * so that rows of older versions stay valid; a new et_outcome changes the
 * trials CHECK, which SQLite cannot ALTER: such a step rebuilds the trials
 * table.
 */
static const migration migrations[] = {
    {1, "devices, einsums, spaces, trials", schema_v1, NULL},
    {2, "device peaks in the database", schema_v2, NULL},
    {3, "final races and the machine's load", schema_v3, NULL},
    {4, "finished campaign problems", schema_v4, NULL},
    {5, "structure of einsums, sizes trials were tuned at", schema_v5,
     db_structure_fill},
};
static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
                  ET_DB_SCHEMA_VERSION,
              "one migration step per schema version");

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
    et_status s = db_query_int(db, "PRAGMA application_id", &k->app_id, err);
    if (s == ET_OK)
        s = db_query_int(db, "PRAGMA user_version", &k->version, err);
    if (s == ET_OK)
        s = db_query_int(db,
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
    db_copy_str(tmp.path, sizeof(tmp.path), path);
    char uri[3 * 4096 + 32];
    immutable_uri(path, uri, sizeof(uri));
    int rc = sqlite3_open_v2(uri, &tmp.c,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    et_status s;
    if (rc != SQLITE_OK) {
        s = db_sql_fail(&tmp, rc, "cannot open", err);
    } else {
        file_kind k;
        s = read_kind(&tmp, &k, err);
        if (s == ET_OK)
            s = classify(path, &k, err);
    }
    sqlite3_close(tmp.c);
    return s;
}

/* The steps from the file's version to the current one, inside migrate's
 * write transaction. */
static et_status migrate_tx(et_db *db, et_error *err)
{
    /* again under the write lock: another process may have got here */
    file_kind k;
    et_status s = read_kind(db, &k, err);
    if (s != ET_OK || (s = classify(db->path, &k, err)) != ET_OK)
        return s;
    for (int64_t v = k.version; v < ET_DB_SCHEMA_VERSION; v++) {
        const migration *m = &migrations[v];
        assert(m->to == v + 1);
        char what[128];
        snprintf(what, sizeof(what), "migrating to schema version %d (%s)",
                 m->to, m->what);
        int rc = m->sql ? sqlite3_exec(db->c, m->sql, NULL, NULL, NULL)
                        : SQLITE_OK;
        if (rc != SQLITE_OK)
            return db_sql_fail(db, rc, what, err);
        if (m->fn && (s = m->fn(db, err)) != ET_OK) {
            et_error_prefix(err, what);
            return s;
        }
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "INSERT OR REPLACE INTO schema_migrations VALUES "
                 "(%" PRId64 ", %" PRId64 ", '%s')",
                 v + 1, db_now(), ET_VERSION);
        if ((s = db_exec(db, sql, err)) != ET_OK)
            return s;
    }
    char sql[128];
    snprintf(sql, sizeof(sql),
             "PRAGMA application_id = %d; PRAGMA user_version = %d",
             ET_DB_APPLICATION_ID, ET_DB_SCHEMA_VERSION);
    return db_exec(db, sql, err);
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
    if ((s = db_begin(db, err)) != ET_OK)
        return s;
    return db_end(db, migrate_tx(db, err), err);
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
        db_copy_str(db->path, sizeof(db->path), path);
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
        s = et_errorf(err, db_status_of(rc),
                      "%s: cannot open the database: %s", db->path,
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
    if ((s = db_exec(db, "PRAGMA foreign_keys = ON", err)) != ET_OK)
        goto fail;

    /* WAL: readers and the writer do not block each other, and a commit
     * is atomic whatever kills the process. */
    sqlite3_stmt *st;
    if ((s = db_prep(db, "PRAGMA journal_mode = WAL", &st, err)) != ET_OK)
        goto fail;
    rc = sqlite3_step(st);
    char mode[16] = "";
    if (rc == SQLITE_ROW)
        db_col_text(st, 0, mode, sizeof(mode));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        s = db_sql_fail(db, rc, "setting WAL mode", err);
        goto fail;
    }
    if (strcmp(mode, "wal") != 0) {
        s = et_errorf(err, ET_ERR_IO,
                      "%s: cannot use WAL mode (journal mode is %s)", db->path,
                      mode);
        goto fail;
    }
    if ((s = db_exec(db, "PRAGMA synchronous = FULL", err)) != ET_OK)
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

