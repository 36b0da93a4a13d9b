/*
 * cache.c - the per-device peaks cache and the override file (see peaks.h
 * for the contract: key, layout, format).
 */
#include "roofline/peaks.h"
#include "roofline/report.h"

#include "base/cachedir.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- path and key ------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    h ^= 0xff; /* field separator */
    h *= 0x100000001b3ULL;
    return h;
}

/* Appends a file-name-safe form of s (at most max chars) to buf. */
static void append_safe(char *buf, size_t cap, const char *s, size_t max)
{
    size_t n = strlen(buf);
    for (size_t i = 0; s[i] && i < max && n + 1 < cap; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '.' || c == '+';
        buf[n++] = ok ? c : '_';
    }
    buf[n] = '\0';
}

static const char *backend_of(const et_device_info *info)
{
    return et_backend_name(info->target.backend);
}

et_status et_peaks_cache_path(const et_device_info *info, char *buf,
                              size_t cap, et_error *err)
{
    char dir[4096];
    et_status st = et_cache_dir_path(dir, sizeof(dir), err);
    if (st != ET_OK)
        return st;
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a(h, backend_of(info));
    h = fnv1a(h, info->name);
    h = fnv1a(h, info->driver_version);
    h = fnv1a(h, ET_VERSION);
    char bv[16];
    snprintf(bv, sizeof bv, "bench%d", ET_PEAKS_BENCH_VERSION);
    h = fnv1a(h, bv);
    char base[256] = "peaks-";
    append_safe(base, sizeof(base), backend_of(info), 16);
    append_safe(base, sizeof(base), "-", 1);
    append_safe(base, sizeof(base), info->name, 64);
    append_safe(base, sizeof(base), "-", 1);
    append_safe(base, sizeof(base), info->driver_version, 32);
    int n = snprintf(buf, cap, "%s/%s-%016" PRIx64 ".json", dir, base, h);
    if (n < 0 || (size_t)n >= cap)
        return et_errorf(err, ET_ERR_IO, "cache file path too long");
    return ET_OK;
}

/* ---- reading ------------------------------------------------------------ */

static char *slurp(const char *path, et_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        et_errorf(err, ET_ERR_IO, "cannot read %s: %s", path,
                  strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n + 1 < cap)
            break;
        if (cap >= (size_t)1 << 20) { /* a peaks file is tiny */
            free(buf);
            buf = NULL;
            et_errorf(err, ET_ERR_IO, "%s: file too large", path);
            fclose(f);
            return NULL;
        }
        char *q = realloc(buf, cap * 2);
        if (!q) {
            free(buf);
            buf = NULL;
        }
        buf = q;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        et_errorf(err, ET_ERR_IO, "cannot read %s", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static et_status bad_key(et_error *err, const char *path, const char *key,
                         const char *what)
{
    return et_errorf(err, ET_ERR_INPUT, "%s: \"%s\" %s", path, key, what);
}

/* A positive finite number at obj[key]; 1 found, 0 absent, -1 bad. */
static int get_rate(const cJSON *obj, const char *key, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x)
        return 0;
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
        !(x->valuedouble > 0))
        return -1;
    *v = x->valuedouble;
    return 1;
}

static void get_string(const cJSON *obj, const char *key, char *dst,
                       size_t cap)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsString(x) && x->valuestring)
        snprintf(dst, cap, "%s", x->valuestring);
}

/* {"runs", "min", "median", "max"}; absent or malformed -> runs 0. */
static et_spread get_spread(const cJSON *o)
{
    et_spread s = {0, 0, 0, 0};
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "runs");
    double mn, md, mx;
    if (cJSON_IsNumber(r) && r->valueint > 0 && get_rate(o, "min", &mn) == 1 &&
        get_rate(o, "median", &md) == 1 && get_rate(o, "max", &mx) == 1) {
        s.runs = r->valueint;
        s.min = mn;
        s.median = md;
        s.max = mx;
    }
    return s;
}

/* A positive integer at obj[key], else 0. */
static int get_int(const cJSON *obj, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(x) && x->valuedouble >= 1 &&
                   x->valuedouble <= 1e9
               ? (int)x->valuedouble
               : 0;
}

static et_bw_variant get_bw_variant(const cJSON *o)
{
    et_bw_variant v = {0, 0, 0, ET_BW_CHUNK};
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "variant");
    if (!cJSON_IsObject(x))
        return v;
    v.width = get_int(x, "width");
    v.per_item = get_int(x, "per_item");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(x, "local");
    v.local = cJSON_IsNumber(l) && l->valuedouble >= 0 &&
                      l->valuedouble <= 1e9
                  ? (int)l->valuedouble
                  : 0;
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(x, "pattern");
    for (int k = 0; cJSON_IsString(pat) && k < ET_BW_PATTERN_COUNT; k++)
        if (!strcmp(pat->valuestring, et_bw_pattern_name(k)))
            v.pattern = (et_bw_pattern)k;
    return v;
}

/* {"read": {"gbs", spread, "variant"}, "copy": {...}} into lv; -1 when a
 * figure is malformed, else the number of figures read. */
static int get_level_figures(const cJSON *o, et_level_bw *lv)
{
    int n = 0;
    for (int k = 0; k < ET_BW_COUNT; k++) {
        const cJSON *f =
            cJSON_GetObjectItemCaseSensitive(o, et_bw_kind_name(k));
        if (!f)
            continue;
        double v;
        if (!cJSON_IsObject(f) || get_rate(f, "gbs", &v) != 1)
            return -1;
        lv->gbs[k] = v;
        lv->spread[k] = get_spread(f);
        lv->variant[k] = get_bw_variant(f);
        n++;
    }
    return n;
}

/* "levels": [{"level": "L1", "capacity_bytes", "working_set_bytes",
 * "read": {...}, "copy": {...}}, ...]; 1 read, 0 absent, -1 bad. */
static int get_levels(const cJSON *doc, et_peaks *out)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(doc, "levels");
    if (!ls)
        return 0;
    if (!cJSON_IsArray(ls))
        return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, ls)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "level");
        int l = -1;
        for (int k = 0; cJSON_IsString(name) && k < ET_MEM_DRAM; k++)
            if (!strcmp(name->valuestring, et_mem_level_name(k)))
                l = k;
        double cap, ws = 0;
        if (l < 0 || get_rate(it, "capacity_bytes", &cap) != 1 ||
            get_rate(it, "working_set_bytes", &ws) < 0)
            return -1;
        et_level_bw *lv = &out->level[l];
        memset(lv, 0, sizeof *lv);
        lv->capacity_bytes = (int64_t)cap;
        lv->working_set_bytes = (int64_t)ws;
        if (get_level_figures(it, lv) <= 0)
            return -1;
    }
    return 1;
}

et_status et_peaks_read_file(const char *path, et_peaks *out, unsigned *given,
                             et_error *err)
{
    if (given)
        *given = 0;
    char *text = slurp(path, err);
    if (!text)
        return ET_ERR_IO;
    et_status st = et_peaks_parse(text, path, out, given, err);
    free(text);
    return st;
}

et_status et_peaks_parse(const char *text, const char *path, et_peaks *out,
                         unsigned *given, et_error *err)
{
    unsigned g = 0;
    if (given)
        *given = 0;
    cJSON *doc = cJSON_Parse(text);
    et_status st = ET_OK;
    if (!cJSON_IsObject(doc)) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *c = text; at && c < at && *c; c++)
            line += *c == '\n';
        st = et_errorf(err, ET_ERR_INPUT, "%s:%d: not a JSON object (expected "
                       "{\"gflops\": {\"f32\": ..}, \"bandwidth_gbs\": ..})",
                       path, line);
        goto out;
    }
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(doc, "device");
    if (dev && !cJSON_IsObject(dev)) {
        st = bad_key(err, path, "device", "must be an object");
        goto out;
    }
    if (dev) {
        get_string(dev, "name", out->device_name, sizeof(out->device_name));
        get_string(dev, "backend", out->backend, sizeof(out->backend));
        get_string(dev, "driver", out->driver, sizeof(out->driver));
    }
    get_string(doc, "eintune_version", out->eintune_version,
               sizeof(out->eintune_version));
    out->bench_version = get_int(doc, "bench_version");
    const cJSON *gf = cJSON_GetObjectItemCaseSensitive(doc, "gflops");
    if (gf && !cJSON_IsObject(gf)) {
        st = bad_key(err, path, "gflops", "must be an object of dtype: "
                     "GFLOP/s");
        goto out;
    }
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(doc, "gflops_spread");
    const cJSON *item;
    cJSON_ArrayForEach(item, gf)
    {
        et_dtype t;
        char key[64];
        snprintf(key, sizeof(key), "gflops.%s", item->string);
        if (et_dtype_parse(item->string, &t) != 0) {
            st = bad_key(err, path, key, "is not a dtype (f16, f32, f64)");
            goto out;
        }
        double v;
        if (get_rate(gf, item->string, &v) != 1) {
            st = bad_key(err, path, key, "must be a positive number");
            goto out;
        }
        out->gflops[t] = v;
        out->gflops_spread[t] =
            get_spread(cJSON_GetObjectItemCaseSensitive(gs, item->string));
        const cJSON *fv = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(doc, "fma_variants"),
            item->string);
        out->fma_variant[t].width = get_int(fv, "width");
        out->fma_variant[t].chains = get_int(fv, "chains");
        out->fma_variant[t].local = get_int(fv, "local");
        g |= 1u << t;
    }
    double bw;
    int r = get_rate(doc, "bandwidth_gbs", &bw);
    if (r < 0) {
        st = bad_key(err, path, "bandwidth_gbs", "must be a positive number");
        goto out;
    }
    if (r == 1) {
        out->bandwidth_gbs = bw;
        g |= 1u << ET_DTYPE_COUNT;
    }
    const cJSON *bwo = cJSON_GetObjectItemCaseSensitive(doc, "bandwidth");
    if (bwo) {
        et_level_bw d;
        memset(&d, 0, sizeof d);
        int n = cJSON_IsObject(bwo) ? get_level_figures(bwo, &d) : -1;
        if (n < 0) {
            st = bad_key(err, path, "bandwidth", "must be {\"read\": "
                         "{\"gbs\": ..}, \"copy\": {\"gbs\": ..}} with "
                         "positive figures");
            goto out;
        }
        if (n > 0) {
            d.capacity_bytes = 0;
            d.working_set_bytes = out->level[ET_MEM_DRAM].working_set_bytes;
            const cJSON *ws =
                cJSON_GetObjectItemCaseSensitive(bwo, "working_set_bytes");
            if (cJSON_IsNumber(ws) && ws->valuedouble > 0)
                d.working_set_bytes = (int64_t)ws->valuedouble;
            out->level[ET_MEM_DRAM] = d;
            g |= ET_PEAKS_GIVEN_DRAM;
        }
    }
    r = get_levels(doc, out);
    if (r < 0) {
        st = bad_key(err, path, "levels", "must be a list of {\"level\": "
                     "\"L1\"..\"L3\", \"capacity_bytes\": N, \"read\": "
                     "{\"gbs\": ..}, \"copy\": {\"gbs\": ..}}");
        goto out;
    }
    if (r > 0)
        g |= ET_PEAKS_GIVEN_LEVELS;
    if ((g & ~(ET_PEAKS_GIVEN_DRAM | ET_PEAKS_GIVEN_LEVELS)) == 0) {
        st = et_errorf(err, ET_ERR_INPUT, "%s: no figures (expected "
                       "\"gflops\": {\"f32\": ..} and/or \"bandwidth_gbs\": "
                       "..)", path);
    }
out:
    if (given)
        *given = g;
    cJSON_Delete(doc);
    return st;
}

et_status et_peaks_load(const et_device_info *info, et_peaks *out,
                        et_error *err)
{
    char path[4096];
    et_status st = et_peaks_cache_path(info, path, sizeof(path), err);
    if (st != ET_OK)
        return st;
    if (access(path, F_OK) != 0)
        return et_errorf(err, ET_ERR_IO, "no cached peaks (%s)", path);
    et_peaks p;
    memset(&p, 0, sizeof(p));
    unsigned given = 0;
    st = et_peaks_read_file(path, &p, &given, err);
    if (st != ET_OK)
        return st;
    if (strcmp(p.device_name, info->name) != 0 ||
        strcmp(p.backend, backend_of(info)) != 0 ||
        strcmp(p.driver, info->driver_version) != 0 ||
        strcmp(p.eintune_version, ET_VERSION) != 0) {
        return et_errorf(err, ET_ERR_IO, "cached peaks in %s are for another "
                         "device, driver or eintune version", path);
    }
    if (p.bench_version != ET_PEAKS_BENCH_VERSION)
        return et_errorf(err, ET_ERR_IO, "cached peaks in %s are from older "
                         "micro-benchmarks (version %d, now %d)", path,
                         p.bench_version, ET_PEAKS_BENCH_VERSION);
    if (!(given & (1u << ET_F32)) || !(given & (1u << ET_DTYPE_COUNT)))
        return et_errorf(err, ET_ERR_INPUT,
                         "cached peaks in %s lack f32 or bandwidth", path);
    p.source = ET_PEAKS_CACHED;
    *out = p;
    return ET_OK;
}

et_status et_peaks_store(const et_peaks *p, et_error *err)
{
    et_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.name, sizeof(info.name), "%s", p->device_name);
    snprintf(info.driver_version, sizeof(info.driver_version), "%s",
             p->driver);
    info.target.backend = strcmp(p->backend, "cuda") == 0
                              ? ET_BACKEND_CUDA
                              : ET_BACKEND_OPENCL;
    char path[4096], dir[4096], tmp[4200];
    et_status st = et_peaks_cache_path(&info, path, sizeof(path), err);
    if (st == ET_OK)
        st = et_cache_dir_make(dir, sizeof(dir), err);
    if (st != ET_OK)
        return st;

    et_peaks q = *p;
    snprintf(q.eintune_version, sizeof(q.eintune_version), "%s", ET_VERSION);
    q.bench_version = ET_PEAKS_BENCH_VERSION;
    cJSON *doc = et_peaks_to_json(&q);
    char *text = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    /* O_EXCL: never follow a symlink or reuse a file planted under the
     * temporary name; a stale one of ours (same pid, killed) goes first */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    st = ET_ERR_IO;
    if (fd < 0) {
        et_errorf(err, st, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int ok = done == len && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0)
        ok = 0;
    if (!ok) {
        et_errorf(err, st, "cannot write %s: %s", tmp, strerror(saved));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        et_errorf(err, st, "cannot rename %s to %s: %s", tmp, path,
                  strerror(errno));
        unlink(tmp);
        goto out;
    }
    st = ET_OK;
out:
    cJSON_free(text);
    return st;
}

/* ---- the peaks a command uses ------------------------------------------ */

static void say(const et_peaks_get_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(const et_peaks_get_opts *o, const char *fmt, ...)
{
    if (!o->measure.log)
        return;
    char msg[2300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    o->measure.log(o->measure.log_arg, msg);
}

static void set_device(et_peaks *p, const et_device_info *info)
{
    snprintf(p->device_name, sizeof(p->device_name), "%s", info->name);
    snprintf(p->backend, sizeof(p->backend), "%s", backend_of(info));
    snprintf(p->driver, sizeof(p->driver), "%s", info->driver_version);
    snprintf(p->eintune_version, sizeof(p->eintune_version), "%s",
             ET_VERSION);
}

void et_peaks_apply_bandwidth(et_peaks *out, const et_peaks *ov,
                              unsigned given)
{
    if (given & (1u << ET_DTYPE_COUNT)) {
        /* the DRAM copy figure, standing for every figure not given */
        memset(out->level, 0, sizeof out->level);
        out->bandwidth_gbs = ov->bandwidth_gbs;
        out->level[ET_MEM_DRAM].gbs[ET_BW_COPY] = ov->bandwidth_gbs;
        out->level[ET_MEM_DRAM].gbs[ET_BW_READ] = ov->bandwidth_gbs;
    }
    if (given & ET_PEAKS_GIVEN_DRAM) {
        const et_level_bw *d = &ov->level[ET_MEM_DRAM];
        for (int k = 0; k < ET_BW_COUNT; k++)
            if (d->gbs[k] > 0) {
                out->level[ET_MEM_DRAM].gbs[k] = d->gbs[k];
                out->level[ET_MEM_DRAM].spread[k] = d->spread[k];
                out->level[ET_MEM_DRAM].variant[k] = d->variant[k];
            }
        if (!(given & (1u << ET_DTYPE_COUNT)) && d->gbs[ET_BW_COPY] > 0)
            out->bandwidth_gbs = d->gbs[ET_BW_COPY];
    }
    if (given & ET_PEAKS_GIVEN_LEVELS)
        for (int l = 0; l < ET_MEM_DRAM; l++)
            out->level[l] = ov->level[l];
}

void et_peaks_keep_max(et_peaks *p, const et_peaks *old)
{
    if (strcmp(p->device_name, old->device_name) ||
        strcmp(p->backend, old->backend) ||
        p->bench_version != old->bench_version)
        return;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (old->gflops[t] > p->gflops[t]) {
            p->gflops[t] = old->gflops[t];
            p->gflops_spread[t] = old->gflops_spread[t];
            p->fma_variant[t] = old->fma_variant[t];
        }
    for (int l = 0; l < ET_MEM_LEVEL_COUNT; l++)
        for (int k = 0; k < ET_BW_COUNT; k++) {
            const et_level_bw *o = &old->level[l];
            et_level_bw *n = &p->level[l];
            /* a cache level's figure counts for the capacity measured */
            if (o->gbs[k] > n->gbs[k] &&
                (l == ET_MEM_DRAM || o->capacity_bytes == n->capacity_bytes)) {
                n->gbs[k] = o->gbs[k];
                n->spread[k] = o->spread[k];
                n->variant[k] = o->variant[k];
            }
        }
    if (p->level[ET_MEM_DRAM].gbs[ET_BW_COPY] > 0)
        p->bandwidth_gbs = p->level[ET_MEM_DRAM].gbs[ET_BW_COPY];
}

et_status et_peaks_get(et_device *dev, const et_peaks_get_opts *opts,
                       et_peaks *out, et_error *err)
{
    et_peaks_get_opts o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof(o));
    const et_device_info *info = &dev->info;
    const char *file = o.peaks_file;
    if (!file) {
        file = getenv("ET_PEAKS_FILE");
        if (file && !file[0])
            file = NULL;
    }
    err->msg[0] = '\0';

    et_peaks ov;
    unsigned given = 0;
    memset(&ov, 0, sizeof(ov));
    if (file) {
        et_status st = et_peaks_read_file(file, &ov, &given, err);
        if (st != ET_OK)
            return st == ET_ERR_IO ? ET_ERR_INPUT : st;
        if (ov.device_name[0] && !strcasestr(info->name, ov.device_name))
            return et_errorf(err, ET_ERR_INPUT,
                             "%s: peaks for device \"%s\", not for \"%s\"",
                             file, ov.device_name, info->name);
        unsigned need = 1u << ET_F32 | 1u << ET_DTYPE_COUNT;
        if (info->target.has_fp64)
            need |= 1u << ET_F64;
        if (info->target.has_fp16)
            need |= 1u << ET_F16;
        if ((given & need) == need) {
            memset(out, 0, sizeof(*out));
            set_device(out, info);
            for (int t = 0; t < ET_DTYPE_COUNT; t++)
                out->gflops[t] = ov.gflops[t];
            et_peaks_apply_bandwidth(out, &ov, given);
            out->source = ET_PEAKS_OVERRIDE;
            say(&o, "peaks from %s", file);
            return ET_OK;
        }
    }

    et_status st = ET_ERR_IO;
    if (!o.remeasure) {
        st = et_peaks_load(info, out, err);
        if (st == ET_OK)
            say(&o, "peaks from the cache");
        else
            say(&o, "%s; measuring", err->msg);
    }
    if (st != ET_OK) {
        et_peaks old;
        et_error lerr;
        lerr.msg[0] = '\0';
        bool have_old = o.remeasure && o.keep_max &&
                        et_peaks_load(info, &old, &lerr) == ET_OK;
        st = et_peaks_measure(dev, &o.measure, out, err);
        if (st != ET_OK)
            return st;
        if (have_old)
            et_peaks_keep_max(out, &old);
        et_error serr;
        serr.msg[0] = '\0';
        if (et_peaks_store(out, &serr) != ET_OK)
            say(&o, "peaks not cached: %s", serr.msg);
    }
    if (given) {
        for (int t = 0; t < ET_DTYPE_COUNT; t++)
            if (given & (1u << t)) {
                out->gflops[t] = ov.gflops[t];
                memset(&out->gflops_spread[t], 0, sizeof(et_spread));
            }
        et_peaks_apply_bandwidth(out, &ov, given);
        out->source = ET_PEAKS_OVERRIDE;
        say(&o, "peaks partly from %s", file);
    }
    return ET_OK;
}
