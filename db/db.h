/*
 * db.h - the tuning database (docs/database.md): every trial kept, runs
 * that resume, answers for `best`, `export` and `run --best`.
 *
 * File. One SQLite file: $XDG_CACHE_HOME/eintune/tuning.db by default
 * (~/.cache/eintune/tuning.db when XDG_CACHE_HOME is unset or relative;
 * directories made with mode 0700), or any path given (--db). The file
 * carries PRAGMA application_id = ET_DB_APPLICATION_ID ("ETDB") and PRAGMA
 * user_version = the schema version. Tables (schema version 5; [vN] marks
 * what version N added):
 *
 *   devices  (id, backend, name, driver_version  -- UNIQUE: the device key
 *             vendor, device_version, limits_json (et_target as JSON),
 *             first_seen, last_seen,
 *             [v2] peaks_json, peaks_measured_at, peaks_eintune_version
 *             (NULL until peaks are stored))
 *   einsums  (id, canonical UNIQUE (et_einsum_canonical: structure, sizes
 *             and dtypes; an open axis is "*"), text (normalized text
 *             first seen), sizes ("i=4,j=5" in that text's names, "x=*"
 *             for an open axis), dtypes ("f32,f32->f32"), created_at,
 *             [v5] structure (et_einsum_structure: the canonical form
 *             without sizes, indexed; '' for a row migrated from a form
 *             that could not be rebuilt))
 *   spaces   (id, name, content_hash -- UNIQUE (name, content_hash))
 *   trials   (id, einsum_id, einsum_text, device_id, opts,
 *             renderer_version, source_hash  -- UNIQUE: the trial key
 *             space_id (NULL: none), params_json, kernel_name, outcome
 *             (one of et_outcome_name's strings, CHECKed), reason,
 *             median_s, low_s, high_s, cv, runs, verify_trials,
 *             max_norm_err, p_value, gops, compile_s, created_at,
 *             eintune_version, [v3] load_1m (the machine's 1-minute load
 *             average; NULL unknown), [v5] tuned_at (the sizes a trial
 *             of an einsum with an open axis was measured at, "x=4096";
 *             ''))
 *   races    [v3] (id, einsum_id, device_id, einsum_text, rounds, conf,
 *             verdict ('faster', 'tied' or 'alone', CHECKed), chosen_opts,
 *             runner_up_opts, faster_pct/lo/hi, speedup/lo/hi, load_1m,
 *             created_at, eintune_version; indexed by (einsum_id,
 *             device_id, created_at)): a run's final race, keyed like its
 *             trials (an einsum with an open axis: the open einsum's row)
 *   race_entries [v3] (race_id (ON DELETE CASCADE), position, opts,
 *             kernel_name, source_hash, untransformed, chosen, tied,
 *             median_s, low_s, high_s, cv, times_json): its kernels
 *   campaign_results [v4] (id, einsum_id, device_id, problem_key,
 *             result_json, created_at, eintune_version -- UNIQUE
 *             (einsum_id, device_id, problem_key)): a campaign's finished
 *             problems
 *   schema_migrations (version, applied_at, eintune_version): one row per
 *             migration step applied to this file.
 *
 * Schema versions (each one step of schema.c's migrations table):
 *   1  the tables above without the [vN] columns and tables
 *   2  the device peaks move from their cache file into the database
 *   3  the final races (races, race_entries) and trials.load_1m
 *   4  campaign_results: a campaign's finished problems
 *   5  einsums.structure and trials.tuned_at (open axes, answers for
 *      sizes never tuned); existing einsums get their structure form
 *      rebuilt from their canonical form
 * A file at an older version is brought to ET_DB_SCHEMA_VERSION when it is
 * opened, one step after another in one transaction. To change the schema:
 * append a step to the migrations table in schema.c (SQL text or a
 * function), bump ET_DB_SCHEMA_VERSION, add the version to the list above
 * and mark its columns in the tables; test_db's migration tests open a
 * version-1 file, a version-3 file and a version-4 file written by hand
 * and check that everything comes through.
 *
 * Time stamps are Unix seconds (UTC). A NaN figure is stored as NULL and
 * read back as NaN.
 *
 * Trial key: (einsum canonical form -> einsum_id, einsum_text, device
 * (backend, name, driver version) -> device_id, opts (canonical text of
 * et_opts_format), renderer_version (ET_RENDERER_VERSION), source_hash
 * (et_db_source_hash of the rendered source and launch geometry; "" when
 * nothing was rendered, e.g. refused)). Everything that changes the kernel
 * or its timing is in it, so a changed driver, renderer, size or dtype is a
 * miss, never a stale answer. einsum_text (et_einsum.text, e.g.
 * "ik,kj->ij") is in the key because opts name axes by the einsum's
 * letters and operands by position: the same opt text on a renamed
 * equivalent can mean another kernel (or be refused there), which matters
 * for refused trials, which have no source hash. The space and params are
 * recorded but not part of the key: the same kernel reached from two
 * spaces is one trial. Recording a trial whose key exists replaces it
 * (`--retime`); its row id stays.
 *
 * Best: the kernel the latest final race of the einsum's canonical form
 * (renamed equivalents share it) on the device chose, when its trial is
 * still there with outcome ok and the current renderer version (a race
 * compares kernels in one run; the trials' medians come from different
 * moments); else, among trials of the canonical form on the device with
 * outcome ok and the current renderer version, the smallest median time. Its opts are written in the names of
 * its einsum_text: a caller whose einsum text differs maps them onto its
 * own names with the matcher (et_einsum_match of einsum_text onto its
 * einsum) before rendering.
 *
 * Durability: WAL journal, synchronous=FULL, and every write is one
 * transaction, committed when the call returns. A process killed at any
 * moment (SIGKILL included) loses at most the write in flight and never
 * leaves a corrupt file; FULL (an fsync of the WAL at each commit rather
 * than at checkpoints only, as NORMAL does) extends that to a power loss
 * or OS crash. One fsync costs about a millisecond, a trial seconds of
 * measurement, so the price is nil.
 *
 * Concurrency: any number of processes (and of handles in one process)
 * may open the same file: readers never block the writer nor the other
 * way round (WAL); writers take turns, each waiting up to
 * ET_DB_BUSY_TIMEOUT_MS for the lock. One et_db handle is for one thread
 * at a time; after fork() the child opens its own handle (SQLite forbids
 * using a parent's connection in the child).
 *
 * Opening is safe on foreign input: a file that is not SQLite, an SQLite
 * file of another program, a corrupt file, or one written by a newer
 * eintune (schema version > ET_DB_SCHEMA_VERSION) is refused with
 * ET_ERR_INPUT and a message saying which, and is not written to: it is
 * read through an immutable read-only connection first, or, when a -wal
 * file lies beside it (a database in use, or one whose writer was killed),
 * through the read-write connection before its first write, with the
 * checkpoint on close turned off. An older schema version is migrated in
 * one transaction (a new et_outcome value needs one: the outcome column
 * is CHECKed against the names). An empty file becomes a new database.
 *
 * Errors: ET_ERR_INPUT (not an eintune database, corrupt, too new, bad
 * argument), ET_ERR_IO (cannot open or write the file, lock wait timed
 * out, disk full), ET_ERR_NOMEM, ET_ERR_INTERNAL (an SQL error that should
 * not happen); err gets the path and SQLite's message.
 *
 * Ownership: et_db_open returns a handle closed with et_db_close. Trial
 * and row structures are plain values (fixed-size strings): copy them
 * freely, nothing to free. et_db_peaks_load returns malloc'ed text.
 */
#ifndef ET_DB_H
#define ET_DB_H

#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/outcome.h"
#include "measure/verify.h"

#include <stdbool.h>
#include <stdint.h>

/* Version of the kernel renderers: bump it whenever rendered code (or its
 * launch geometry) can change for the same einsum and opts, so that every
 * recorded trial becomes a miss. May move to transforms/ later. */
#define ET_RENDERER_VERSION 2

/* The number of steps in schema.c's migrations table (see above). */
#define ET_DB_SCHEMA_VERSION 5
#define ET_DB_APPLICATION_ID 0x45544442 /* "ETDB" */
#define ET_DB_BUSY_TIMEOUT_MS 15000

#define ET_DB_HASH_LEN 17     /* 16 hex digits + NUL */
#define ET_DB_OPTS_LEN 2048
#define ET_DB_PARAMS_LEN 4096
#define ET_DB_CANON_LEN 4096

typedef struct et_db et_db; /* opaque */

/* ---- opening ------------------------------------------------------------ */

/*
 * Path of the default database ($XDG_CACHE_HOME/eintune/tuning.db, see
 * above) into buf. ET_ERR_IO when neither XDG_CACHE_HOME nor HOME gives a
 * directory or the path does not fit.
 */
et_status et_db_default_path(char *buf, size_t cap, et_error *err);

/*
 * Opens (creating or migrating as needed) the database at path, or at the
 * default path when path is NULL or "" (its directories are then created,
 * mode 0700; an explicit path's directory must exist). See the header
 * comment for what is refused. *out is NULL on failure.
 */
et_status et_db_open(const char *path, et_db **out, et_error *err);

/* Closes the handle (NULL is fine). Every committed write is kept. */
void et_db_close(et_db *db);

/* The file's path (valid until et_db_close). */
const char *et_db_path(const et_db *db);

/* ---- rows the trials refer to ------------------------------------------ */

/*
 * Id of the device row for info (key: backend from info->target.backend,
 * name, driver_version), created when missing; vendor, device version and
 * limits are updated to info's.
 */
et_status et_db_device_id(et_db *db, const et_device_info *info, int64_t *id,
                          et_error *err);

/* As et_db_device_id without writing: *found false (and *id 0) when the
 * device was never recorded. */
et_status et_db_device_find(et_db *db, const et_device_info *info,
                            int64_t *id, bool *found, et_error *err);

/* Id of the einsum row of e's canonical form, created when missing (with
 * e's text, sizes and dtypes). */
et_status et_db_einsum_id(et_db *db, const et_einsum *e, int64_t *id,
                          et_error *err);

/* As et_db_einsum_id without writing. */
et_status et_db_einsum_find(et_db *db, const et_einsum *e, int64_t *id,
                            bool *found, et_error *err);

/* Id of the space (name, content_hash), created when missing. The content
 * hash is the caller's (e.g. et_db_hash_hex of the YAML text). */
et_status et_db_space_id(et_db *db, const char *name,
                         const char *content_hash, int64_t *id,
                         et_error *err);

/* ---- hashes ------------------------------------------------------------- */

#define ET_DB_FNV_INIT 0xcbf29ce484222325ULL

/* FNV-1a 64 of n bytes, continuing from h (start with ET_DB_FNV_INIT). */
uint64_t et_db_fnv1a64(uint64_t h, const void *data, size_t n);

/* 16 lower-case hex digits of FNV-1a 64 of n bytes into out. */
void et_db_hash_hex(const void *data, size_t n, char out[ET_DB_HASH_LEN]);

/*
 * The source hash of a trial key: FNV-1a 64 over the rendered source text
 * and the launch geometry (ndim, global, local, has_local), since the same
 * source launched with another work-group size is another measurement.
 * geom may be NULL (hashed as absent).
 */
void et_db_source_hash(const char *source, const et_launch *geom,
                       char out[ET_DB_HASH_LEN]);

/* ---- trials ------------------------------------------------------------- */

/* One trial: its key, then what was measured. Plain value. */
typedef struct et_db_trial {
    /* key */
    int64_t einsum_id;               /* et_db_einsum_id */
    char einsum_text[ET_MAX_TEXT];   /* et_einsum.text the opts name */
    int64_t device_id;               /* et_db_device_id */
    char opts[ET_DB_OPTS_LEN];       /* et_opts_format's canonical text */
    int renderer_version;            /* ET_RENDERER_VERSION */
    char source_hash[ET_DB_HASH_LEN];/* et_db_source_hash; "" if none */
    /* recorded */
    int64_t id;                      /* row id (set by lookup/best/list) */
    int64_t space_id;                /* 0: no space (--opts) */
    char params_json[ET_DB_PARAMS_LEN]; /* {"tile_j": 4, ...}; "" = none */
    char kernel_name[256];
    et_outcome outcome;
    char reason[1024];
    double median_s, low_s, high_s;  /* timing; 0 when not timed */
    double cv;
    int runs;
    int verify_trials;               /* 0 when not verified */
    double max_norm_err;
    double p_value;                  /* NaN without a baseline */
    double gops;                     /* ops / median / 1e9, 0 if untimed;
                                        all ops are booked to the
                                        accumulation dtype */
    double compile_s;                /* build time; 0 if unknown */
    int64_t created_at;              /* Unix seconds; 0 -> now on record */
    char eintune_version[32];        /* "" -> ET_VERSION on record */
    double load_1m;                  /* [v3] 1-minute load average; NaN
                                        unknown */
    char tuned_at[256];              /* [v5] an open einsum's trial: the
                                        sizes it was measured at, "x=4096"
                                        (set by et_db_trial_init); "" */
} et_db_trial;

/*
 * Clears t and fills its key: einsum_id, einsum_text = e->text,
 * device_id, opts (copied; "" for the untransformed kernel),
 * renderer_version = ET_RENDERER_VERSION and the source hash of source
 * and geom (source NULL: ""). p_value and load_1m start NaN. ET_ERR_INPUT
 * when opts
 * does not fit.
 */
et_status et_db_trial_init(et_db_trial *t, int64_t einsum_id,
                           const et_einsum *e, int64_t device_id,
                           const char *opts, const char *source,
                           const et_launch *geom, et_error *err);

/*
 * Fills t's outcome, reason, timing and verification figures from an
 * evaluation (et_evaluate_kernel), and gops from e's op count and the
 * median time.
 */
void et_db_trial_set_evaluation(et_db_trial *t, const et_einsum *e,
                                const et_evaluation *ev);

/*
 * Looks up the trial with key's key fields (the rest of key is ignored).
 * *found tells whether one exists; if so *out gets it (out may be key).
 * Failures are answers too: a resumed search takes them as they are.
 */
et_status et_db_trial_lookup(et_db *db, const et_db_trial *key,
                             et_db_trial *out, bool *found, et_error *err);

/*
 * Records t (one transaction, committed on return), replacing a trial with
 * the same key. ET_ERR_INPUT when einsum_id or device_id (or a non-zero
 * space_id) does not name a row. t->id is not read; *id (may be NULL)
 * gets the row id.
 */
et_status et_db_trial_record(et_db *db, const et_db_trial *t, int64_t *id,
                             et_error *err);

/*
 * The best verified trial for e (by canonical form, so renamed
 * equivalents count) on the device: the latest final race's choice, else
 * outcome ok, current renderer version, smallest median (ties: the
 * earliest); see "Best" above. Reads only. *found false when
 * there is none (or the einsum or device is unknown).
 */
et_status et_db_best(et_db *db, const et_einsum *e,
                     const et_device_info *info, et_db_trial *out,
                     bool *found, et_error *err);

/* As et_db_best by row ids. */
et_status et_db_best_ids(et_db *db, int64_t einsum_id, int64_t device_id,
                         et_db_trial *out, bool *found, et_error *err);

/* An einsum row (et_db_einsums_like). Plain value. */
typedef struct et_db_einsum_row {
    int64_t id;
    char canonical[ET_DB_CANON_LEN];
    char text[ET_MAX_TEXT];   /* the text first seen */
    char sizes[1024];         /* "x=*,i=35" in that text's names */
} et_db_einsum_row;

/* Called once per row; a non-zero return stops the listing. */
typedef int (*et_db_einsum_fn)(void *arg, const et_db_einsum_row *row);

/*
 * Every recorded einsum with e's structure form (et_einsum_structure: the
 * same einsum and dtypes up to names, operand order and sizes; e's own
 * canonical form included, open axes included), oldest first. Reads
 * only. The base of answers for sizes never tuned (tune/best.h).
 */
et_status et_db_einsums_like(et_db *db, const et_einsum *e,
                             et_db_einsum_fn fn, void *arg, et_error *err);

/* ---- races -------------------------------------------------------------- */

#define ET_DB_RACE_MAX 9

/* One kernel of a race. Plain value; times points at the caller's. */
typedef struct et_db_race_entry {
    char opts[ET_DB_OPTS_LEN];
    char kernel_name[256];
    char source_hash[ET_DB_HASH_LEN];
    bool untransformed, chosen, tied;
    double median_s, low_s, high_s, cv;
    const double *times;   /* times[r * stride] for r < rounds */
    int stride;
} et_db_race_entry;

/* A run's final race (see races above). Plain value. */
typedef struct et_db_race {
    int64_t einsum_id, device_id;
    char einsum_text[ET_MAX_TEXT];
    int rounds;
    double conf;
    char verdict[16];
    char chosen_opts[ET_DB_OPTS_LEN];
    char runner_up_opts[ET_DB_OPTS_LEN]; /* "" -> NULL: none */
    double faster_pct, faster_lo, faster_hi; /* NaN -> NULL */
    double speedup, speedup_lo, speedup_hi;
    double load_1m;
    int64_t created_at;    /* 0 -> now */
    int n;
    et_db_race_entry e[ET_DB_RACE_MAX];
} et_db_race;

/* Records a race and its entries in one transaction; *id (may be NULL)
 * gets its row id. ET_ERR_INPUT for ids that name no row or n outside
 * [1, ET_DB_RACE_MAX]. */
et_status et_db_race_record(et_db *db, const et_db_race *r, int64_t *id,
                            et_error *err);

/* The final race's figures of a kernel it chose. Plain value. */
typedef struct et_db_race_pick {
    int64_t race_id;
    double median_s, low_s, high_s, cv; /* the chosen entry's, over the
                                         * race's rounds */
    int rounds;
    char verdict[16];      /* "faster", "tied", "alone" */
    int64_t created_at;
} et_db_race_pick;

/*
 * Whether the latest final race of t's einsum (canonical form) on t's
 * device chose t (its einsum text and chosen opts are t's: the race
 * choice et_db_best answers first), and then its figures. A trial the
 * search timed but no race chose, or one an older race chose, is
 * *found false. Reads only.
 */
et_status et_db_race_pick_of(et_db *db, const et_db_trial *t,
                             et_db_race_pick *out, bool *found,
                             et_error *err);

/* ---- peaks -------------------------------------------------------------- */

/*
 * Stores peaks JSON text (the roofline's et_peaks_to_json form) for a
 * device, measured at measured_at (0: now), tagged with ET_VERSION.
 */
et_status et_db_peaks_store(et_db *db, int64_t device_id, const char *json,
                            int64_t measured_at, et_error *err);

/*
 * Loads a device's peaks: *found false when none were stored or they were
 * stored by another eintune version (the micro-benchmarks may differ).
 * On a hit *json is malloc'ed text the caller frees with free();
 * measured_at may be NULL.
 */
et_status et_db_peaks_load(et_db *db, int64_t device_id, char **json,
                           int64_t *measured_at, bool *found,
                           et_error *err);

/* ---- campaigns ---------------------------------------------------------- */

/*
 * A campaign's finished problem: its result (JSON text, the campaign's
 * own form) for the einsum on the device under problem_key (the rest of
 * what defines the problem: sizes, dtypes, space, search, budget...).
 * Lookup: *found false when none; on a hit *json is malloc'ed (free()),
 * created_at (may be NULL) when it was recorded. Record: inserts, or
 * replaces the result of the same key.
 */
et_status et_db_campaign_lookup(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                char **json, int64_t *created_at,
                                bool *found, et_error *err);
et_status et_db_campaign_record(et_db *db, int64_t einsum_id,
                                int64_t device_id, const char *key,
                                const char *json, et_error *err);

/* ---- looking and tidying ------------------------------------------------ */

typedef struct et_db_stats {
    int schema_version;
    int64_t devices, einsums, spaces, trials;
    int64_t races;         /* final races recorded */
    int64_t by_outcome[ET_OUTCOME_COUNT];
    int64_t old_renderer;  /* trials of another renderer version */
    int64_t oldest, newest;/* created_at range of trials; 0 if none */
    int64_t file_bytes;    /* the file and its -wal */
} et_db_stats;

et_status et_db_stats_get(et_db *db, et_db_stats *out, et_error *err);

/* PRAGMA integrity_check: ET_OK with msg "ok", or ET_ERR_INPUT with the
 * first problem in msg. */
et_status et_db_integrity(et_db *db, char *msg, size_t cap, et_error *err);

/* Which trials et_db_list shows; the zero value means all. */
typedef struct et_db_filter {
    int64_t einsum_id;     /* 0: every einsum */
    int64_t device_id;     /* 0: every device */
    unsigned outcome_mask; /* bit 1 << et_outcome; 0: every outcome */
    int64_t limit;         /* 0: no limit */
} et_db_filter;

/* A trial with the names of what it refers to. Plain value. */
typedef struct et_db_row {
    et_db_trial trial;
    char canonical[ET_DB_CANON_LEN];
    char einsum[ET_MAX_TEXT]; /* the einsum row's text (first seen) */
    char sizes[1024];      /* "i=4,j=5,k=6" in the names of `einsum` */
    char dtypes[256];      /* "f32,f32->f32" */
    char device_name[256];
    char backend[16];
    char driver_version[128];
    char space_name[256];  /* "" without a space */
} et_db_row;

/* Called once per row; a non-zero return stops the listing. */
typedef int (*et_db_list_fn)(void *arg, const et_db_row *row);

/*
 * Calls fn for the trials f selects (f may be NULL), ordered by einsum,
 * device, then ok trials fastest first, then the others newest first.
 * Reads only.
 */
et_status et_db_list(et_db *db, const et_db_filter *f, et_db_list_fn fn,
                     void *arg, et_error *err);

/* A verified trial with its problem's untransformed time: a sample a
 * cost model learns from (et_db_samples). Plain value. */
typedef struct et_db_sample {
    int64_t trial_id;
    int64_t einsum_id;
    char einsum_text[ET_MAX_TEXT]; /* the text the opts name */
    char einsum[ET_MAX_TEXT];      /* the einsum row's text (first seen) */
    char sizes[1024];              /* in that text's names, "x=*" open */
    char dtypes[256];              /* "f32,f32->f32" */
    char tuned_at[256];            /* an open einsum's trial: "x=4096" */
    char opts[ET_DB_OPTS_LEN];
    double median_s;
    double base_s;                 /* the untransformed kernel's median */
} et_db_sample;

typedef int (*et_db_sample_fn)(void *arg, const et_db_sample *s);

/*
 * Calls fn for the verified trials (outcome ok, the current renderer
 * version, a median) of every einsum on the device whose untransformed
 * kernel (opts "") has a verified trial too, at the same tuned_at sizes:
 * base_s is the smallest such median. The latest `limit` trials (0: all),
 * ordered by einsum then row id. Reads only.
 */
et_status et_db_samples(et_db *db, int64_t device_id, int64_t limit,
                        et_db_sample_fn fn, void *arg, et_error *err);

/*
 * What et_db_prune deletes: the trials that meet every criterion given
 * (at least one must be). Devices, einsums and spaces stay: they are
 * small, devices hold the peaks, and a run in another process may hold
 * their ids to record trials under.
 */
typedef struct et_db_prune_opts {
    bool failed;            /* outcome other than ok */
    double older_than_days; /* > 0: recorded more than this long ago */
    bool renderer_old;      /* renderer version other than the current */
    bool dry_run;           /* count only, delete nothing */
} et_db_prune_opts;

/* Deletes (one transaction) and sets *deleted (may be NULL) to the number
 * of trials deleted (or that would be, with dry_run). ET_ERR_INPUT when no
 * criterion is given. */
et_status et_db_prune(et_db *db, const et_db_prune_opts *o, int64_t *deleted,
                      et_error *err);

/* ---- merging ------------------------------------------------------------ */

#define ET_DB_MERGE_TABLES 32

/* What a merge did to one table. */
typedef struct et_db_merge_count {
    char name[64];
    int64_t added;      /* rows new to the output */
    int64_t same;       /* already there (NULL columns filled in) */
    int64_t replaced;   /* already there, replaced by a newer row
                           (trials and other measurements) */
    int64_t skipped;    /* referring to a row the input does not hold */
} et_db_merge_count;

typedef struct et_db_merge_stats {
    int n_tables;       /* in merge order (referred tables first) */
    et_db_merge_count table[ET_DB_MERGE_TABLES];
} et_db_merge_stats;

/*
 * Merges the database at in_path into out, in one transaction (merge.c's
 * header comment says how): a row whose key out holds already is not
 * duplicated (out keeps it and fills its NULL columns; a trial, or a row
 * of any table with created_at and references to other tables, takes the
 * incoming values when the incoming row is newer); every other row is added with new ids, references renumbered.
 * Tables and columns of later schema versions come through as long as
 * both files have them. The input is opened with et_db_open first (so a
 * file that is not an eintune database is refused with ET_ERR_INPUT, and
 * an older one is migrated). A failed merge changes nothing.
 */
et_status et_db_merge(et_db *out, const char *in_path, et_db_merge_stats *st,
                      et_error *err);

#endif /* ET_DB_H */
