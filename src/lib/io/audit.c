/* audit.c — the controller's state and audit log in SQLite (pflex/io/audit.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include <sqlite3.h>
#include "pflex/io/audit.h"

#define SCHEMA_VERSION 1

struct pflex_audit {
    sqlite3 *db;
    sqlite3_stmt *ins_target, *ins_period, *ins_cap, *ins_reading, *ins_obs, *ins_curve, *ins_note;
};

static const char *const SCHEMA =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS targets(id INTEGER PRIMARY KEY, t REAL NOT NULL, source TEXT NOT NULL,"
    "  name TEXT NOT NULL, start REAL NOT NULL, end REAL, value REAL NOT NULL,"
    "  unit TEXT NOT NULL CHECK (unit IN ('W', 'fraction')), ramp REAL NOT NULL, priority INTEGER NOT NULL,"
    "  seq INTEGER NOT NULL, withdrawn REAL,"
    "  UNIQUE (source, name, start, end, value, unit));"
    "CREATE TABLE IF NOT EXISTS periods(id INTEGER PRIMARY KEY, t REAL NOT NULL, limit_w REAL,"
    "  worst_w REAL NOT NULL, least_w REAL NOT NULL, site_power_w REAL, throughput REAL,"
    "  feasible INTEGER NOT NULL, floor_breaches INTEGER NOT NULL, held INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS caps(period INTEGER NOT NULL REFERENCES periods(id), gpu TEXT NOT NULL,"
    "  job TEXT, cap_w REAL NOT NULL, pushed INTEGER NOT NULL, enforced_w REAL);"
    "CREATE TABLE IF NOT EXISTS readings(t REAL NOT NULL, gpu TEXT NOT NULL, job TEXT, power_w REAL,"
    "  cap_w REAL, throughput REAL);"
    "CREATE TABLE IF NOT EXISTS observations(t REAL NOT NULL, job TEXT NOT NULL, cap_w REAL NOT NULL,"
    "  power_w REAL NOT NULL, throughput REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS curves(t REAL NOT NULL, job TEXT NOT NULL, n INTEGER NOT NULL,"
    "  p0_w REAL, t0 REAL, points TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS notes(t REAL NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS periods_t ON periods(t);"
    "CREATE INDEX IF NOT EXISTS caps_period ON caps(period);"
    "CREATE INDEX IF NOT EXISTS readings_t ON readings(t);"
    "CREATE INDEX IF NOT EXISTS observations_job ON observations(job, t);"
    "CREATE INDEX IF NOT EXISTS curves_job ON curves(job, t);";

static int db_error(pflex_audit_t *a, pflex_error_t *err, const char *what)
{
    return pflex_error_set(err, "audit: %s: %s", what, a && a->db ? sqlite3_errmsg(a->db) : "no database");
}

static int prep(pflex_audit_t *a, const char *sql, sqlite3_stmt **st, pflex_error_t *err)
{
    if (sqlite3_prepare_v2(a->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_error(a, err, "prepare");
    return 0;
}

int pflex_audit_open(const char *path, pflex_audit_t **out, pflex_error_t *err)
{
    *out = NULL;
    pflex_audit_t *a = calloc(1, sizeof *a);
    if (!a)
        return pflex_error_set(err, "out of memory");
    if (sqlite3_open_v2(path, &a->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        pflex_error_set(err, "audit: %s: %s", path, a->db ? sqlite3_errmsg(a->db) : "cannot open");
        pflex_audit_close(a);
        return -1;
    }
    sqlite3_busy_timeout(a->db, 5000);
    char *msg = NULL;
    /* FULL: each commit is on the disk when it returns (NORMAL's WAL commits
     * survive a process crash, not a power cut): an acknowledged target
     * must survive both */
    if (sqlite3_exec(a->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                     NULL, NULL, &msg) != SQLITE_OK
        || sqlite3_exec(a->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        pflex_error_set(err, "audit: %s: %s", path, msg ? msg : "schema");
        sqlite3_free(msg);
        pflex_audit_close(a);
        return -1;
    }
    /* The schema version: written once, checked on every open. */
    sqlite3_stmt *st;
    if (prep(a, "SELECT value FROM meta WHERE key = 'schema'", &st, err) < 0) {
        pflex_audit_close(a);
        return -1;
    }
    int version = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        version = atoi((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (version < 0) {
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO meta VALUES ('schema', '%d')", SCHEMA_VERSION);
        if (sqlite3_exec(a->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            db_error(a, err, path);
            pflex_audit_close(a);
            return -1;
        }
    } else if (version > SCHEMA_VERSION) {
        pflex_error_set(err, "audit: %s: schema version %d is newer than this pflex (%d)", path,
                        version, SCHEMA_VERSION);
        pflex_audit_close(a);
        return -1;
    }
    /* the same target again (a re-put, a VTN's event seen again) is the
     * same row, live again and as late as now */
    if (prep(a, "INSERT INTO targets(t, source, name, start, end, value, unit, ramp, priority, seq)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (source, name, start, end, value, unit) DO UPDATE SET t = excluded.t,"
                " ramp = excluded.ramp, priority = excluded.priority, seq = excluded.seq, withdrawn = NULL",
                &a->ins_target, err) < 0
        || prep(a, "INSERT INTO periods(t, limit_w, worst_w, least_w, site_power_w, throughput, feasible,"
                   " floor_breaches, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", &a->ins_period, err) < 0
        || prep(a, "INSERT INTO caps VALUES (?, ?, ?, ?, ?, ?)", &a->ins_cap, err) < 0
        || prep(a, "INSERT INTO readings VALUES (?, ?, ?, ?, ?, ?)", &a->ins_reading, err) < 0
        || prep(a, "INSERT INTO observations VALUES (?, ?, ?, ?, ?)", &a->ins_obs, err) < 0
        || prep(a, "INSERT INTO curves VALUES (?, ?, ?, ?, ?, ?)", &a->ins_curve, err) < 0
        || prep(a, "INSERT INTO notes VALUES (?, ?, ?)", &a->ins_note, err) < 0) {
        pflex_audit_close(a);
        return -1;
    }
    *out = a;
    return 0;
}

int pflex_audit_check(const char *path, char *why, size_t len, pflex_error_t *err)
{
    why[0] = '\0';
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
    /* the first row says ok, or the first of its findings */
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *msg = (const char *)sqlite3_column_text(st, 0);
        if (!msg || strcmp(msg, "ok"))
            snprintf(why, len, "quick_check: %s", msg ? msg : "no answer");
        rc = SQLITE_OK;
    }
    int code = db ? sqlite3_extended_errcode(db) & 0xff : rc;
    if (rc != SQLITE_OK && (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || rc == SQLITE_CORRUPT
                            || rc == SQLITE_NOTADB))
        snprintf(why, len, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    else if (rc != SQLITE_OK)
        pflex_error_set(err, "audit: %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_finalize(st);
    sqlite3_close(db);
    /* one line: its findings come a line each */
    for (char *q = why; *q; q++)
        if (*q == '\n')
            *q = ' ';
    if (why[0])
        return 1;
    return rc == SQLITE_OK ? 0 : -1;
}

int pflex_audit_set_aside(const char *path, double t, char *aside, size_t len, pflex_error_t *err)
{
    char stamp[32];
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if ((size_t)snprintf(aside, len, "%s.damaged-%s", path, stamp) >= len)
        return pflex_error_set(err, "audit: %s: name too long", path);
    /* the WAL and its index go with it, first: a WAL left beside a new
     * database would be replayed into it */
    static const char *const ext[] = {"-wal", "-shm", ""};
    for (size_t i = 0; i < 3; i++) {
        char from[4200], to[4300];
        snprintf(from, sizeof from, "%s%s", path, ext[i]);
        snprintf(to, sizeof to, "%s%s", aside, ext[i]);
        if (rename(from, to) < 0 && (!ext[i][0] || errno != ENOENT))
            return pflex_error_set(err, "audit: %s: cannot move it to %s: %s", from, to, strerror(errno));
    }
    return 0;
}

void pflex_audit_close(pflex_audit_t *a)
{
    if (!a)
        return;
    sqlite3_finalize(a->ins_target);
    sqlite3_finalize(a->ins_period);
    sqlite3_finalize(a->ins_cap);
    sqlite3_finalize(a->ins_reading);
    sqlite3_finalize(a->ins_obs);
    sqlite3_finalize(a->ins_curve);
    sqlite3_finalize(a->ins_note);
    sqlite3_close(a->db);
    free(a);
}

static int exec(pflex_audit_t *a, const char *sql, pflex_error_t *err)
{
    if (sqlite3_exec(a->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_error(a, err, sql);
    return 0;
}

int pflex_audit_begin(pflex_audit_t *a, pflex_error_t *err)
{
    return exec(a, "BEGIN IMMEDIATE", err);
}

int pflex_audit_commit(pflex_audit_t *a, pflex_error_t *err)
{
    return exec(a, "COMMIT", err);
}

int pflex_audit_rollback(pflex_audit_t *a)
{
    return sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* A real, or NULL for what JSON and the schema cannot hold (NaN, inf). */
static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static int run(pflex_audit_t *a, sqlite3_stmt *st, pflex_error_t *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return db_error(a, err, what);
    return 0;
}

int pflex_audit_target(pflex_audit_t *a, const struct pflex_audit_target *t, pflex_error_t *err)
{
    if (!t->source || !isfinite(t->start_s) || !isfinite(t->value))
        return pflex_error_set(err, "audit: a target needs a source, a start and a value");
    sqlite3_stmt *st = a->ins_target;
    bind_real(st, 1, t->t);
    bind_text(st, 2, t->source);
    bind_text(st, 3, t->name ? t->name : "");
    bind_real(st, 4, t->start_s);
    bind_real(st, 5, t->end_s);
    bind_real(st, 6, t->value);
    bind_text(st, 7, t->fraction ? "fraction" : "W");
    bind_real(st, 8, t->ramp_s);
    sqlite3_bind_int(st, 9, t->priority);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)t->seq);
    return run(a, st, err, "target");
}

/* Withdraws at t every target of source still in force that keep() does
 * not keep; keep() sees the row of sel (id, name, start, end, value, unit at
 * columns 0..5). */
static int withdraw_unkept(pflex_audit_t *a, double t, const char *source,
                           int (*keep)(sqlite3_stmt *sel, const void *ctx), const void *ctx,
                           pflex_error_t *err)
{
    sqlite3_stmt *sel, *upd;
    if (prep(a, "SELECT id, name, start, end, value, unit FROM targets WHERE source = ? AND withdrawn IS NULL",
             &sel, err) < 0)
        return -1;
    if (prep(a, "UPDATE targets SET withdrawn = ? WHERE id = ?", &upd, err) < 0) {
        sqlite3_finalize(sel);
        return -1;
    }
    bind_text(sel, 1, source);
    int rc = 0, s;
    while ((s = sqlite3_step(sel)) == SQLITE_ROW) {
        if (keep(sel, ctx))
            continue;
        bind_real(upd, 1, t);
        sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
        if (run(a, upd, err, "withdraw") < 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_error(a, err, "withdraw");
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return rc;
}

struct names {
    const char *const *keep;
    size_t n;
};

static int name_is_kept(sqlite3_stmt *sel, const void *ctx)
{
    const struct names *k = ctx;
    const char *name = (const char *)sqlite3_column_text(sel, 1);
    for (size_t i = 0; i < k->n; i++)
        if (name && k->keep[i] && !strcmp(name, k->keep[i]))
            return 1;
    return 0;
}

int pflex_audit_targets_withdraw(pflex_audit_t *a, double t, const char *source,
                                 const char *const *keep, size_t nkeep, pflex_error_t *err)
{
    struct names k = {keep, nkeep};
    return withdraw_unkept(a, t, source, name_is_kept, &k, err);
}

struct live {
    const struct pflex_audit_target *t;
    size_t n;
};

/* 1 when the row (name, start, end, value, unit at column 1..5 of sel)
 * is one of the live targets. */
static int row_is_live(sqlite3_stmt *sel, const void *ctx)
{
    const struct live *lv = ctx;
    const char *name = (const char *)sqlite3_column_text(sel, 1);
    double start = sqlite3_column_double(sel, 2), value = sqlite3_column_double(sel, 4);
    int no_end = sqlite3_column_type(sel, 3) == SQLITE_NULL;
    double end = sqlite3_column_double(sel, 3);
    int fraction = !strcmp((const char *)sqlite3_column_text(sel, 5), "fraction");
    for (size_t i = 0; i < lv->n; i++) {
        const struct pflex_audit_target *l = &lv->t[i];
        if (strcmp(name ? name : "", l->name ? l->name : "") || start != l->start_s || value != l->value
            || fraction != (l->fraction != 0) || no_end != !isfinite(l->end_s) || (!no_end && end != l->end_s))
            continue;
        return 1;
    }
    return 0;
}

int pflex_audit_targets_sync(pflex_audit_t *a, double t, const char *source,
                             const struct pflex_audit_target *live, size_t n, pflex_error_t *err)
{
    if (pflex_audit_begin(a, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (pflex_audit_target(a, &live[i], err) < 0) {
            pflex_audit_rollback(a);
            return -1;
        }
    struct live lv = {live, n};
    int rc = withdraw_unkept(a, t, source, row_is_live, &lv, err);
    if (rc == 0 && pflex_audit_commit(a, err) < 0)
        rc = -1;
    if (rc < 0)
        pflex_audit_rollback(a);
    return rc;
}

long long pflex_audit_targets_next_seq(pflex_audit_t *a, pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(a, "SELECT COALESCE(MAX(seq) + 1, 0) FROM targets", &st, err) < 0)
        return -1;
    long long n = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    else
        db_error(a, err, "targets' next seq");
    sqlite3_finalize(st);
    return n;
}

int pflex_audit_period(pflex_audit_t *a, const struct pflex_audit_period *p, long long *id,
                       pflex_error_t *err)
{
    sqlite3_stmt *st = a->ins_period;
    bind_real(st, 1, p->t);
    bind_real(st, 2, p->limit_w);
    bind_real(st, 3, p->worst_w);
    bind_real(st, 4, p->least_w);
    bind_real(st, 5, p->site_power_w);
    bind_real(st, 6, p->throughput);
    sqlite3_bind_int(st, 7, p->feasible);
    sqlite3_bind_int64(st, 8, p->floor_breaches);
    sqlite3_bind_int64(st, 9, p->held);
    if (run(a, st, err, "period") < 0)
        return -1;
    if (id)
        *id = (long long)sqlite3_last_insert_rowid(a->db);
    return 0;
}

int pflex_audit_cap(pflex_audit_t *a, long long period, const char *gpu, const char *job,
                    double cap_w, int pushed, double enforced_w, pflex_error_t *err)
{
    if (!gpu || !isfinite(cap_w))
        return pflex_error_set(err, "audit: a cap needs a GPU and a finite value");
    sqlite3_stmt *st = a->ins_cap;
    sqlite3_bind_int64(st, 1, period);
    bind_text(st, 2, gpu);
    bind_text(st, 3, job);
    bind_real(st, 4, cap_w);
    sqlite3_bind_int(st, 5, pushed);
    bind_real(st, 6, enforced_w);
    return run(a, st, err, "cap");
}

int pflex_audit_reading(pflex_audit_t *a, double t, const char *gpu, const char *job,
                        double power_w, double cap_w, double throughput, pflex_error_t *err)
{
    if (!gpu)
        return pflex_error_set(err, "audit: a reading needs a GPU");
    sqlite3_stmt *st = a->ins_reading;
    bind_real(st, 1, t);
    bind_text(st, 2, gpu);
    bind_text(st, 3, job);
    bind_real(st, 4, power_w);
    bind_real(st, 5, cap_w);
    bind_real(st, 6, throughput);
    return run(a, st, err, "reading");
}

int pflex_audit_observation(pflex_audit_t *a, double t, const char *job, double cap_w,
                            double power_w, double throughput, pflex_error_t *err)
{
    if (!job || !isfinite(cap_w) || !isfinite(power_w) || !isfinite(throughput))
        return pflex_error_set(err, "audit: an observation needs a job and finite values");
    sqlite3_stmt *st = a->ins_obs;
    bind_real(st, 1, t);
    bind_text(st, 2, job);
    bind_real(st, 3, cap_w);
    bind_real(st, 4, power_w);
    bind_real(st, 5, throughput);
    return run(a, st, err, "observation");
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int pflex_audit_curve(pflex_audit_t *a, double t, const char *job, size_t n, const double *x,
                      const double *loss, const double *sd, const double *cap_w, double p0_w,
                      double t0, pflex_error_t *err)
{
    if (!job)
        return pflex_error_set(err, "audit: a curve needs a job");
    json_t *pts = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(pts, json_pack("[o, o, o, o]", num(x[i]), num(loss[i]),
                                             sd ? num(sd[i]) : json_null(),
                                             cap_w ? num(cap_w[i]) : json_null()));
    char *s = json_dumps(pts, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(pts);
    if (!s)
        return pflex_error_set(err, "out of memory");
    sqlite3_stmt *st = a->ins_curve;
    bind_real(st, 1, t);
    bind_text(st, 2, job);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    bind_real(st, 4, p0_w);
    bind_real(st, 5, t0);
    bind_text(st, 6, s);
    free(s);
    return run(a, st, err, "curve");
}

int pflex_audit_note(pflex_audit_t *a, double t, const char *kind, const char *text,
                     pflex_error_t *err)
{
    sqlite3_stmt *st = a->ins_note;
    bind_real(st, 1, t);
    bind_text(st, 2, kind ? kind : "note");
    bind_text(st, 3, text ? text : "");
    return run(a, st, err, "note");
}

static double col_real(sqlite3_stmt *st, int i, double null_as)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? null_as : sqlite3_column_double(st, i);
}

int pflex_audit_load_targets(pflex_audit_t *a, double now,
                             int (*cb)(void *ud, const struct pflex_audit_target *t), void *ud,
                             pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(a, "SELECT t, source, name, start, end, value, unit, ramp, priority, seq FROM targets"
                " WHERE withdrawn IS NULL AND (end IS NULL OR end > ?) ORDER BY seq, id", &st, err) < 0)
        return -1;
    bind_real(st, 1, now);
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        struct pflex_audit_target t = {
            .t = col_real(st, 0, NAN), .source = (const char *)sqlite3_column_text(st, 1),
            .name = (const char *)sqlite3_column_text(st, 2), .start_s = col_real(st, 3, NAN),
            .end_s = col_real(st, 4, INFINITY), .value = col_real(st, 5, NAN),
            .fraction = !strcmp((const char *)sqlite3_column_text(st, 6), "fraction"),
            .ramp_s = col_real(st, 7, 0), .priority = sqlite3_column_int(st, 8),
            .seq = (unsigned long long)sqlite3_column_int64(st, 9),
        };
        if (cb(ud, &t) < 0) {
            rc = pflex_error_set(err, "audit: loading targets stopped by the caller");
            break;
        }
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_error(a, err, "load targets");
    sqlite3_finalize(st);
    return rc;
}

int pflex_audit_load_observations(pflex_audit_t *a, const char *job, size_t max,
                                  int (*cb)(void *ud, double t, double cap_w, double power_w,
                                            double throughput),
                                  void *ud, pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(a, "SELECT t, cap_w, power_w, throughput FROM (SELECT rowid AS r, * FROM observations"
                " WHERE job = ? ORDER BY t DESC, r DESC LIMIT ?) ORDER BY t, r", &st, err) < 0)
        return -1;
    bind_text(st, 1, job);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(max ? max : 1000000));
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(ud, col_real(st, 0, NAN), col_real(st, 1, NAN), col_real(st, 2, NAN),
               col_real(st, 3, NAN)) < 0) {
            rc = pflex_error_set(err, "audit: loading observations stopped by the caller");
            break;
        }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_error(a, err, "load observations");
    sqlite3_finalize(st);
    return rc;
}

int pflex_audit_last_caps(pflex_audit_t *a,
                          int (*cb)(void *ud, const char *gpu, const char *job, double cap_w),
                          void *ud, pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(a, "SELECT gpu, job, cap_w FROM caps WHERE period = (SELECT max(id) FROM periods)"
                " ORDER BY rowid", &st, err) < 0)
        return -1;
    int s, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(ud, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
               sqlite3_column_double(st, 2)) < 0) {
            rc = pflex_error_set(err, "audit: loading caps stopped by the caller");
            break;
        }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_error(a, err, "load caps");
    sqlite3_finalize(st);
    return rc;
}

/* ---- history ---- */

static json_t *row_json(sqlite3_stmt *st)
{
    json_t *o = json_object();
    for (int i = 0; i < sqlite3_column_count(st); i++) {
        const char *name = sqlite3_column_name(st, i);
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
            v = json_integer(sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT:
            v = num(sqlite3_column_double(st, i));
            break;
        case SQLITE_TEXT:
            if (!strcmp(name, "points")) {
                v = json_loads((const char *)sqlite3_column_text(st, i), 0, NULL);
                if (!v)
                    v = json_null();
            } else
                v = json_string((const char *)sqlite3_column_text(st, i));
            if (!v)
                v = json_null();
            break;
        default:
            v = json_null();
        }
        json_object_set_new(o, name, v);
    }
    return o;
}

static int table(pflex_audit_t *a, json_t *doc, const char *key, const char *select,
                 const char *time_col, int has_job, const struct pflex_audit_query *q, pflex_error_t *err)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT * FROM (%s WHERE %s >= ?1 AND (?2 IS NULL OR %s <= ?2)%s ORDER BY %s DESC LIMIT ?4)"
             " ORDER BY %s",
             select, time_col, time_col, has_job ? " AND (?3 IS NULL OR job = ?3)" : "", time_col, "t");
    sqlite3_stmt *st;
    if (prep(a, sql, &st, err) < 0)
        return -1;
    sqlite3_bind_double(st, 1, isfinite(q->from_s) ? q->from_s : -1e300);
    bind_real(st, 2, q->to_s);
    if (has_job)
        bind_text(st, 3, q->job);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)(q->limit ? q->limit : 1000));
    json_t *arr = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, row_json(st));
    sqlite3_finalize(st);
    if (s != SQLITE_DONE) {
        json_decref(arr);
        return db_error(a, err, key);
    }
    json_object_set_new(doc, key, arr);
    return 0;
}

char *pflex_audit_history(pflex_audit_t *a, const struct pflex_audit_query *q, pflex_error_t *err)
{
    static const struct {
        const char *key, *select, *tcol;
        int has_job;
    } tables[] = {
        {"targets", "SELECT t, source, name, start, end, value, unit, ramp, priority, seq, withdrawn FROM targets",
         "t", 0},
        {"periods", "SELECT id, t, limit_w, worst_w, least_w, site_power_w, throughput, feasible,"
                    " floor_breaches, held FROM periods", "t", 0},
        {"caps", "SELECT p.t AS t, c.period, c.gpu, c.job, c.cap_w, c.pushed, c.enforced_w FROM caps c"
                 " JOIN periods p ON p.id = c.period", "p.t", 1},
        {"readings", "SELECT t, gpu, job, power_w, cap_w, throughput FROM readings", "t", 1},
        {"observations", "SELECT t, job, cap_w, power_w, throughput FROM observations", "t", 1},
        {"curves", "SELECT t, job, n, p0_w, t0, points FROM curves", "t", 1},
        {"notes", "SELECT t, kind, text FROM notes", "t", 0},
    };
    int known = !q->what;
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
        known |= q->what && !strcmp(q->what, tables[i].key);
    if (!known)
        return pflex_error_set(err, "history: unknown table '%s' (targets, periods, caps, readings,"
                                    " observations, curves, notes)", q->what), NULL;
    json_t *doc = json_object();
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        if (q->what && strcmp(q->what, tables[i].key))
            continue;
        if (table(a, doc, tables[i].key, tables[i].select, tables[i].tcol, tables[i].has_job, q, err) < 0) {
            json_decref(doc);
            return NULL;
        }
    }
    char *s = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
    json_decref(doc);
    if (!s)
        pflex_error_set(err, "out of memory");
    return s;
}
