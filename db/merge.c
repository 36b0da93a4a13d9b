/*
 * merge.c - merging tuning databases (`eintune db merge`, see db.h's
 * et_db_merge): databases tuned on different machines become one without
 * duplicates or lost trials.
 *
 * The merge reads the schema rather than knowing it, so that tables and
 * columns added by later schema versions come through without a change
 * here: the tables of the input (its sqlite_master), in an order where a
 * table comes after every table its foreign keys refer to; for each, the
 * columns both files have; the table's key, its first UNIQUE index or
 * constraint; its foreign keys, whose values are renumbered through the
 * ids the referred rows got in the output. A row whose key is in the
 * output already is the same thing (a device, an einsum, a trial): the
 * output keeps its row, filling the columns it has NULL from the
 * incoming row (peaks measured on one machine only); in a table of
 * measurements (one with created_at and references to other tables: the
 * trials) a newer incoming row replaces the output's values (a trial
 * measured again), as recording it again would, while the tables they
 * refer to (devices, einsums, spaces) keep what they first had. A row whose key is new is
 * inserted with a new id. A table without a key takes the rows it does
 * not hold already (equal in every common column). schema_migrations is
 * the output's own and is not merged.
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_COLS = 64, MAX_TABLES = ET_DB_MERGE_TABLES, NAME_LEN = 64 };

typedef struct table {
    char name[NAME_LEN];
    int n_cols;                    /* common columns but id */
    char cols[MAX_COLS][NAME_LEN];
    bool has_id;
    int n_key;                     /* its key's columns (indices in cols) */
    int key[MAX_COLS];
    int n_fk;
    int fk_col[MAX_COLS];          /* index in cols */
    int fk_table[MAX_COLS];        /* index in the table list */
    char fk_to[MAX_COLS][NAME_LEN];
    int created_at;                /* index in cols, -1 */
    bool done;
} table;

static et_status fail(sqlite3 *c, et_error *err, const char *what)
{
    return et_errorf(err, ET_ERR_IO, "merge: %s: %s", what,
                     sqlite3_errmsg(c));
}

/* Identifiers come from sqlite_master and PRAGMAs; quoted all the same. */
static void quoted(char *out, size_t cap, const char *name)
{
    size_t n = 0;
    if (cap < 3)
        return;
    out[n++] = '"';
    for (const char *p = name; *p && n + 3 < cap; p++) {
        if (*p == '"')
            out[n++] = '"';
        out[n++] = *p;
    }
    out[n++] = '"';
    out[n] = '\0';
}

static int col_index(const table *t, const char *name)
{
    for (int i = 0; i < t->n_cols; i++)
        if (strcmp(t->cols[i], name) == 0)
            return i;
    return -1;
}

/* The columns of schema.table into names (n of them). */
static et_status columns(sqlite3 *c, const char *schema, const char *tab,
                         char names[][NAME_LEN], int *n, et_error *err)
{
    char q[256], sql[512];
    quoted(q, sizeof q, tab);
    snprintf(sql, sizeof sql, "PRAGMA %s.table_info(%s)", schema, q);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(c, err, "reading a table's columns");
    *n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && *n < MAX_COLS)
        snprintf(names[(*n)++], NAME_LEN, "%.63s",
                 (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return ET_OK;
}

/* Fills t (columns both files have, key, foreign keys) for table name. */
static et_status describe(sqlite3 *c, const char *name, table *t,
                          et_error *err)
{
    char in_src[MAX_COLS][NAME_LEN], in_main[MAX_COLS][NAME_LEN];
    int ns = 0, nm = 0;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%.63s", name);
    t->created_at = -1;
    et_status s = columns(c, "src", name, in_src, &ns, err);
    if (s == ET_OK)
        s = columns(c, "main", name, in_main, &nm, err);
    if (s != ET_OK)
        return s;
    if (nm == 0)
        return et_errorf(err, ET_ERR_INPUT,
                         "merge: the input has a table '%s' that the "
                         "output has not (made by a newer eintune?)", name);
    for (int i = 0; i < ns; i++) {
        bool both = false;
        for (int j = 0; j < nm && !both; j++)
            both = strcmp(in_src[i], in_main[j]) == 0;
        if (!both)
            return et_errorf(err, ET_ERR_INPUT,
                             "merge: the input's column %s.%s is not in "
                             "the output (made by a newer eintune?)", name,
                             in_src[i]);
        if (strcmp(in_src[i], "id") == 0) {
            t->has_id = true;
            continue;
        }
        snprintf(t->cols[t->n_cols++], NAME_LEN, "%.63s", in_src[i]);
    }
    t->created_at = col_index(t, "created_at");
    /* the key: the first unique index of the output's table */
    char q[256], sql[512];
    quoted(q, sizeof q, name);
    snprintf(sql, sizeof sql, "PRAGMA main.index_list(%s)", q);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(c, err, "reading a table's indexes");
    char key_index[NAME_LEN] = "";
    while (!key_index[0] && sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_int(st, 2)) /* unique */
            snprintf(key_index, sizeof key_index, "%.63s",
                     (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    if (key_index[0]) {
        quoted(q, sizeof q, key_index);
        snprintf(sql, sizeof sql, "PRAGMA main.index_info(%s)", q);
        if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
            return fail(c, err, "reading a key");
        while (sqlite3_step(st) == SQLITE_ROW) {
            int k = col_index(t, (const char *)sqlite3_column_text(st, 2));
            if (k >= 0)
                t->key[t->n_key++] = k;
        }
        sqlite3_finalize(st);
    }
    quoted(q, sizeof q, name);
    snprintf(sql, sizeof sql, "PRAGMA main.foreign_key_list(%s)", q);
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(c, err, "reading foreign keys");
    while (sqlite3_step(st) == SQLITE_ROW && t->n_fk < MAX_COLS) {
        int k = col_index(t, (const char *)sqlite3_column_text(st, 3));
        if (k < 0)
            continue;
        t->fk_col[t->n_fk] = k;
        snprintf(t->fk_to[t->n_fk], NAME_LEN, "%.63s",
                 (const char *)sqlite3_column_text(st, 2));
        t->fk_table[t->n_fk] = -1;
        t->n_fk++;
    }
    sqlite3_finalize(st);
    return ET_OK;
}

/* The new id of table ti's old id (the map filled while merging it);
 * false when the referred row was not merged (a dangling reference). */
static bool map_id(sqlite3 *c, int ti, sqlite3_int64 old,
                   sqlite3_int64 *out)
{
    char sql[128];
    snprintf(sql, sizeof sql,
             "SELECT new FROM temp.et_merge_map WHERE tab = %d AND old = ?",
             ti);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, old);
    bool ok = sqlite3_step(st) == SQLITE_ROW;
    if (ok)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return ok;
}

/* Appends text to an SQL buffer. */
static void cat(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s", text);
}

/* The statements that merge one table's rows. */
typedef struct merge_sql {
    sqlite3_stmt *sel;   /* the input's rows: id (or NULL), then cols */
    sqlite3_stmt *find;  /* the output's row of the same key */
    sqlite3_stmt *ins;   /* a new row */
    sqlite3_stmt *upd;   /* a newer row's values over the output's */
    sqlite3_stmt *fill;  /* an older row's values into the output's NULLs */
    sqlite3_stmt *newer; /* whether the input's row is newer (or NULL) */
    sqlite3_stmt *map;   /* old id -> new id */
} merge_sql;

/* Writes t's statements' text (see merge_sql) into the buffers (cap
 * bytes each; newer is "" for a table that is not one of measurements). */
static void merge_text(const table *t, size_t cap, char *sel, char *find,
                       char *ins, char *upd, char *fill, char *newer)
{
    char q[256];
    quoted(q, sizeof q, t->name);
    snprintf(sel, cap, "SELECT %s", t->has_id ? "id" : "NULL");
    for (int i = 0; i < t->n_cols; i++) {
        char cq[256];
        quoted(cq, sizeof cq, t->cols[i]);
        cat(sel, cap, ", ");
        cat(sel, cap, cq);
    }
    cat(sel, cap, " FROM src.");
    cat(sel, cap, q);
    /* find: by the key, or by every column when there is none */
    snprintf(find, cap, "SELECT %s FROM main.%s WHERE 1",
             t->has_id ? "id" : "rowid", q);
    int n_match = t->n_key ? t->n_key : t->n_cols;
    for (int k = 0; k < n_match; k++) {
        char cq[256], part[400];
        quoted(cq, sizeof cq, t->cols[t->n_key ? t->key[k] : k]);
        snprintf(part, sizeof part, " AND %s IS ?%d", cq,
                 (t->n_key ? t->key[k] : k) + 1);
        cat(find, cap, part);
    }
    snprintf(ins, cap, "INSERT INTO main.%s (", q);
    for (int i = 0; i < t->n_cols; i++) {
        char cq[256];
        quoted(cq, sizeof cq, t->cols[i]);
        cat(ins, cap, i ? ", " : "");
        cat(ins, cap, cq);
    }
    cat(ins, cap, ") VALUES (");
    for (int i = 0; i < t->n_cols; i++) {
        char part[32];
        snprintf(part, sizeof part, "%s?%d", i ? ", " : "", i + 1);
        cat(ins, cap, part);
    }
    cat(ins, cap, ")");
    /* a newer row replaces the values; an older one fills NULLs */
    snprintf(upd, cap, "UPDATE main.%s SET ", q);
    snprintf(fill, cap, "UPDATE main.%s SET ", q);
    for (int i = 0; i < t->n_cols; i++) {
        char cq[256], part[600];
        quoted(cq, sizeof cq, t->cols[i]);
        snprintf(part, sizeof part, "%s%s = ?%d", i ? ", " : "", cq, i + 1);
        cat(upd, cap, part);
        snprintf(part, sizeof part, "%s%s = coalesce(%s, ?%d)",
                 i ? ", " : "", cq, cq, i + 1);
        cat(fill, cap, part);
    }
    char where[64];
    snprintf(where, sizeof where, " WHERE %s = ?%d",
             t->has_id ? "id" : "rowid", t->n_cols + 1);
    cat(upd, cap, where);
    cat(fill, cap, where);
    newer[0] = '\0';
    if (t->created_at >= 0 && t->n_fk > 0)
        snprintf(newer, cap,
                 "SELECT created_at < ?1 FROM main.%s WHERE %s = ?2", q,
                 t->has_id ? "id" : "rowid");
}

/* Prepares t's statements; false when SQLite refuses one. */
static bool merge_prepare(sqlite3 *c, const table *t, merge_sql *m)
{
    enum { CAP = 8192 };
    char sel[CAP], find[CAP], ins[CAP], upd[CAP], fill[CAP], newer[CAP];
    memset(m, 0, sizeof *m);
    merge_text(t, CAP, sel, find, ins, upd, fill, newer);
    return sqlite3_prepare_v2(c, sel, -1, &m->sel, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(c, find, -1, &m->find, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(c, ins, -1, &m->ins, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(c, upd, -1, &m->upd, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(c, fill, -1, &m->fill, NULL) == SQLITE_OK &&
           (!newer[0] ||
            sqlite3_prepare_v2(c, newer, -1, &m->newer, NULL) ==
                SQLITE_OK) &&
           sqlite3_prepare_v2(c, "INSERT INTO temp.et_merge_map VALUES "
                                 "(?1, ?2, ?3)", -1, &m->map, NULL) ==
               SQLITE_OK;
}

static void merge_finalize(merge_sql *m)
{
    sqlite3_finalize(m->sel);
    sqlite3_finalize(m->find);
    sqlite3_finalize(m->ins);
    sqlite3_finalize(m->upd);
    sqlite3_finalize(m->fill);
    sqlite3_finalize(m->newer);
    sqlite3_finalize(m->map);
}

/* Binds a row's values (vals) as ?1.. of find, ins, upd and fill, its
 * references renumbered; false when one refers to a row that was not
 * merged (a dangling reference). */
static bool merge_bind(sqlite3 *c, const table *t, merge_sql *m,
                       sqlite3_value **vals)
{
    sqlite3_stmt *binds[] = {m->find, m->ins, m->upd, m->fill};
    bool dangling = false;
    for (int b = 0; b < 4; b++) {
        sqlite3_reset(binds[b]);
        sqlite3_clear_bindings(binds[b]);
    }
    for (int i = 0; i < t->n_cols; i++) {
        int f = -1;
        for (int k = 0; k < t->n_fk; k++)
            if (t->fk_col[k] == i)
                f = k;
        bool bound = false;
        if (f >= 0 && t->fk_table[f] >= 0 &&
            sqlite3_value_type(vals[i]) != SQLITE_NULL) {
            sqlite3_int64 nw;
            if (!map_id(c, t->fk_table[f], sqlite3_value_int64(vals[i]),
                        &nw)) {
                dangling = true;
            } else {
                for (int b = 0; b < 4; b++)
                    sqlite3_bind_int64(binds[b], i + 1, nw);
                bound = true;
            }
        }
        if (!bound) {
            for (int b = 0; b < 4; b++)
                sqlite3_bind_value(binds[b], i + 1, vals[i]);
        }
    }
    return !dangling;
}

/* Merges one row of table ti, its values bound (merge_bind): the output's
 * row of the same key updated, or a new one, and its old id mapped. */
static et_status merge_row(sqlite3 *c, const table *t, int ti, merge_sql *m,
                           sqlite3_value **vals, sqlite3_int64 old,
                           et_db_merge_count *cnt, et_error *err)
{
    sqlite3_int64 id = 0;
    int frc = sqlite3_step(m->find);
    if (frc == SQLITE_ROW) {
        id = sqlite3_column_int64(m->find, 0);
        bool is_newer = false;
        if (m->newer) {
            sqlite3_reset(m->newer);
            sqlite3_bind_value(m->newer, 1, vals[t->created_at]);
            sqlite3_bind_int64(m->newer, 2, id);
            is_newer = sqlite3_step(m->newer) == SQLITE_ROW &&
                       sqlite3_column_int(m->newer, 0);
        }
        sqlite3_stmt *u = is_newer ? m->upd : m->fill;
        sqlite3_bind_int64(u, t->n_cols + 1, id);
        if (sqlite3_step(u) != SQLITE_DONE)
            return fail(c, err, t->name);
        if (is_newer)
            cnt->replaced++;
        else
            cnt->same++;
    } else if (frc == SQLITE_DONE) {
        if (sqlite3_step(m->ins) != SQLITE_DONE)
            return fail(c, err, t->name);
        id = sqlite3_last_insert_rowid(c);
        cnt->added++;
    } else {
        return fail(c, err, t->name);
    }
    if (t->has_id) {
        sqlite3_reset(m->map);
        sqlite3_bind_int(m->map, 1, ti);
        sqlite3_bind_int64(m->map, 2, old);
        sqlite3_bind_int64(m->map, 3, id);
        if (sqlite3_step(m->map) != SQLITE_DONE)
            return fail(c, err, "renumbering");
    }
    return ET_OK;
}

/* Merges one table (see the header comment). */
static et_status merge_table(sqlite3 *c, table *tabs, int ti,
                             et_db_merge_count *cnt, et_error *err)
{
    table *t = &tabs[ti];
    merge_sql m;
    et_status st = ET_OK;
    if (!merge_prepare(c, t, &m)) {
        st = fail(c, err, t->name);
        goto out;
    }
    sqlite3_value *vals[MAX_COLS];
    int rc = SQLITE_DONE;
    while (st == ET_OK && (rc = sqlite3_step(m.sel)) == SQLITE_ROW) {
        for (int i = 0; i < t->n_cols; i++)
            vals[i] = sqlite3_value_dup(sqlite3_column_value(m.sel, i + 1));
        sqlite3_int64 old = sqlite3_column_int64(m.sel, 0);
        if (merge_bind(c, t, &m, vals))
            st = merge_row(c, t, ti, &m, vals, old, cnt, err);
        else
            cnt->skipped++;
        for (int i = 0; i < t->n_cols; i++)
            sqlite3_value_free(vals[i]);
    }
    if (st == ET_OK && rc != SQLITE_DONE)
        st = fail(c, err, t->name);
out:
    merge_finalize(&m);
    return st;
}

et_status et_db_merge(et_db *out, const char *in_path, et_db_merge_stats *ms,
                      et_error *err)
{
    memset(ms, 0, sizeof *ms);
    /* the input must be an eintune database this build reads: opening it
     * checks (and brings an older schema up to date) */
    et_db *in = NULL;
    et_status st = et_db_open(in_path, &in, err);
    if (st != ET_OK)
        return st;
    et_db_close(in);
    sqlite3 *c = et_db_handle(out);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c, "ATTACH DATABASE ?1 AS src", -1, &s, NULL) !=
        SQLITE_OK)
        return fail(c, err, "attaching the input");
    sqlite3_bind_text(s, 1, in_path, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return fail(c, err, in_path);
    table *tabs = calloc(MAX_TABLES, sizeof *tabs);
    int n = 0;
    if (!tabs) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto detach;
    }
    if (sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        st = fail(c, err, "starting the merge");
        goto detach;
    }
    if (sqlite3_exec(c, "CREATE TEMP TABLE et_merge_map (tab INTEGER, "
                        "old INTEGER, new INTEGER, PRIMARY KEY (tab, old))",
                     NULL, NULL, NULL) != SQLITE_OK) {
        st = fail(c, err, "renumbering");
        goto rollback;
    }
    if (sqlite3_prepare_v2(c, "SELECT name FROM src.sqlite_master WHERE "
                              "type = 'table' AND name NOT LIKE 'sqlite_%' "
                              "AND name != 'schema_migrations' ORDER BY "
                              "name", -1, &s, NULL) != SQLITE_OK) {
        st = fail(c, err, "listing the input's tables");
        goto rollback;
    }
    char names[MAX_TABLES][NAME_LEN];
    while (sqlite3_step(s) == SQLITE_ROW && n < MAX_TABLES)
        snprintf(names[n++], NAME_LEN, "%.63s",
                 (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    for (int i = 0; i < n && st == ET_OK; i++)
        st = describe(c, names[i], &tabs[i], err);
    if (st != ET_OK)
        goto rollback;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < tabs[i].n_fk; k++)
            for (int j = 0; j < n; j++)
                if (strcmp(tabs[j].name, tabs[i].fk_to[k]) == 0)
                    tabs[i].fk_table[k] = j;
    /* referred tables first */
    for (int done = 0; done < n;) {
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++) {
            if (tabs[i].done)
                continue;
            bool ready = true;
            for (int k = 0; k < tabs[i].n_fk; k++) {
                int j = tabs[i].fk_table[k];
                if (j >= 0 && j != i && !tabs[j].done)
                    ready = false;
            }
            if (ready)
                pick = i;
        }
        if (pick < 0) {
            st = et_errorf(err, ET_ERR_INTERNAL,
                           "merge: the tables' references form a cycle");
            goto rollback;
        }
        et_db_merge_count *cnt = &ms->table[ms->n_tables++];
        snprintf(cnt->name, sizeof cnt->name, "%.63s", tabs[pick].name);
        st = merge_table(c, tabs, pick, cnt, err);
        if (st != ET_OK)
            goto rollback;
        tabs[pick].done = true;
        done++;
    }
    sqlite3_exec(c, "DROP TABLE temp.et_merge_map", NULL, NULL, NULL);
    if (sqlite3_exec(c, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = fail(c, err, "committing the merge");
        goto rollback;
    }
    goto detach;
rollback:
    sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(c, "DROP TABLE IF EXISTS temp.et_merge_map", NULL, NULL,
                 NULL);
detach:
    sqlite3_exec(c, "DETACH DATABASE src", NULL, NULL, NULL);
    free(tabs);
    return st;
}
