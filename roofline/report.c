/* report.c - roofline tables and JSON (see report.h). */
#include "roofline/report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- peaks -------------------------------------------------------------- */

static cJSON *spread_json(const et_spread *s, const char *value_key,
                          double value)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (value_key)
        cJSON_AddNumberToObject(o, value_key, value);
    cJSON_AddNumberToObject(o, "runs", s->runs);
    cJSON_AddNumberToObject(o, "min", s->min);
    cJSON_AddNumberToObject(o, "median", s->median);
    cJSON_AddNumberToObject(o, "max", s->max);
    return o;
}

static void add_bw_variant(cJSON *o, const et_bw_variant *v)
{
    if (!o || v->width <= 0)
        return;
    cJSON *x = cJSON_AddObjectToObject(o, "variant");
    if (!x)
        return;
    cJSON_AddNumberToObject(x, "width", v->width);
    cJSON_AddNumberToObject(x, "per_item", v->per_item);
    cJSON_AddStringToObject(x, "pattern", et_bw_pattern_name(v->pattern));
    cJSON_AddNumberToObject(x, "local", v->local);
}

/* {"read": {"gbs", spread, "variant"}, "copy": {...}} of one level. */
static void add_level_figures(cJSON *o, const et_level_bw *lv)
{
    for (int k = 0; k < ET_BW_COUNT; k++) {
        if (!(lv->gbs[k] > 0))
            continue;
        cJSON *f = spread_json(&lv->spread[k], "gbs", lv->gbs[k]);
        add_bw_variant(f, &lv->variant[k]);
        cJSON_AddItemToObject(o, et_bw_kind_name((et_bw_kind)k), f);
    }
}

cJSON *et_peaks_to_json(const et_peaks *p)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *dev = cJSON_CreateObject();
    cJSON *gf = cJSON_CreateObject();
    cJSON *gs = cJSON_CreateObject();
    cJSON *fv = cJSON_CreateObject();
    cJSON *bw = cJSON_CreateObject();
    cJSON *lv = cJSON_CreateArray();
    if (!doc || !dev || !gf || !gs || !fv || !bw || !lv) {
        cJSON_Delete(doc);
        cJSON_Delete(dev);
        cJSON_Delete(gf);
        cJSON_Delete(gs);
        cJSON_Delete(fv);
        cJSON_Delete(bw);
        cJSON_Delete(lv);
        return NULL;
    }
    cJSON_AddStringToObject(dev, "name", p->device_name);
    cJSON_AddStringToObject(dev, "backend", p->backend);
    cJSON_AddStringToObject(dev, "driver", p->driver);
    cJSON_AddItemToObject(doc, "device", dev);
    cJSON_AddStringToObject(doc, "eintune_version", p->eintune_version);
    cJSON_AddNumberToObject(doc, "bench_version", p->bench_version);
    cJSON_AddStringToObject(doc, "source", et_peaks_source_name(p->source));
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(p->gflops[t] > 0))
            continue;
        const char *n = et_dtype_name((et_dtype)t);
        cJSON_AddNumberToObject(gf, n, p->gflops[t]);
        if (p->gflops_spread[t].runs > 0)
            cJSON_AddItemToObject(gs, n,
                                  spread_json(&p->gflops_spread[t], NULL, 0));
        const et_fma_variant *v = &p->fma_variant[t];
        cJSON *x = v->width > 0 ? cJSON_AddObjectToObject(fv, n) : NULL;
        if (x) {
            cJSON_AddNumberToObject(x, "width", v->width);
            cJSON_AddNumberToObject(x, "chains", v->chains);
            cJSON_AddNumberToObject(x, "local", v->local);
        }
    }
    cJSON_AddItemToObject(doc, "gflops", gf);
    cJSON_AddNumberToObject(doc, "bandwidth_gbs", p->bandwidth_gbs);
    cJSON_AddItemToObject(doc, "gflops_spread", gs);
    cJSON_AddItemToObject(doc, "fma_variants", fv);
    const et_level_bw *d = &p->level[ET_MEM_DRAM];
    add_level_figures(bw, d);
    if (d->working_set_bytes > 0)
        cJSON_AddNumberToObject(bw, "working_set_bytes",
                                (double)d->working_set_bytes);
    cJSON_AddItemToObject(doc, "bandwidth", bw);
    for (int l = 0; l < ET_MEM_DRAM; l++) {
        const et_level_bw *c = &p->level[l];
        if (c->capacity_bytes <= 0 ||
            !(c->gbs[ET_BW_READ] > 0 || c->gbs[ET_BW_COPY] > 0))
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddStringToObject(o, "level", et_mem_level_name(l));
        cJSON_AddNumberToObject(o, "capacity_bytes",
                                (double)c->capacity_bytes);
        cJSON_AddNumberToObject(o, "working_set_bytes",
                                (double)c->working_set_bytes);
        add_level_figures(o, c);
        cJSON_AddItemToArray(lv, o);
    }
    cJSON_AddItemToObject(doc, "levels", lv);
    return doc;
}

static void spread_cols(FILE *f, const et_spread *s)
{
    if (s->runs > 0)
        fprintf(f, " %10.1f %10.1f %10.1f %5d", s->min, s->median, s->max,
                s->runs);
    else
        fprintf(f, " %10s %10s %10s %5s", "-", "-", "-", "-");
}

/* "4 KiB", "1 MiB", "32 MiB". */
static void human(char *buf, size_t cap, int64_t b)
{
    if (b >= (int64_t)1 << 30 && b % ((int64_t)1 << 30) == 0)
        snprintf(buf, cap, "%lld GiB", (long long)(b >> 30));
    else if (b >= (int64_t)1 << 20)
        snprintf(buf, cap, "%.4g MiB", (double)b / (1 << 20));
    else
        snprintf(buf, cap, "%.4g KiB", (double)b / 1024);
}

static void bw_variant_text(char *buf, size_t cap, const et_bw_variant *v)
{
    if (v->width <= 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "w%d x%d %s wg%s%.0d", v->width, v->per_item,
                 et_bw_pattern_name(v->pattern), v->local ? "" : "-",
                 v->local);
}

void et_peaks_print(FILE *f, const et_peaks *p)
{
    fprintf(f, "device:  %s (%s, driver %s)\n", p->device_name, p->backend,
            p->driver);
    fprintf(f, "source:  %s", et_peaks_source_name(p->source));
    if (p->bench_version > 0)
        fprintf(f, " (micro-benchmarks version %d)", p->bench_version);
    fprintf(f, "\n\n%-16s %12s %10s %10s %10s %5s  %s\n", "peak", "best",
            "min", "median", "max", "runs", "variant");
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(p->gflops[t] > 0))
            continue;
        char label[32], var[64] = "-";
        snprintf(label, sizeof(label), "%s FMA", et_dtype_name((et_dtype)t));
        const et_fma_variant *v = &p->fma_variant[t];
        if (v->width > 0)
            snprintf(var, sizeof var, "w%d, %d chains, wg%d", v->width,
                     v->chains, v->local);
        fprintf(f, "%-16s %7.1f GF/s", label, p->gflops[t]);
        spread_cols(f, &p->gflops_spread[t]);
        fprintf(f, "  %s\n", var);
    }
    for (int l = 0; l < ET_MEM_LEVEL_COUNT; l++) {
        const et_level_bw *lv = &p->level[l];
        for (int k = 0; k < ET_BW_COUNT; k++) {
            if (!(lv->gbs[k] > 0) ||
                (l < ET_MEM_DRAM && lv->capacity_bytes <= 0))
                continue;
            char label[32], var[64];
            snprintf(label, sizeof(label), "%s %s",
                     et_mem_level_name((et_mem_level)l),
                     et_bw_kind_name((et_bw_kind)k));
            bw_variant_text(var, sizeof var, &lv->variant[k]);
            fprintf(f, "%-16s %7.1f GB/s", label, lv->gbs[k]);
            spread_cols(f, &lv->spread[k]);
            fprintf(f, "  %s\n", var);
        }
    }
    fprintf(f, "\nroofline uses: ");
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p->gflops[t] > 0)
            fprintf(f, "%s %.1f GFLOP/s, ", et_dtype_name((et_dtype)t),
                    p->gflops[t]);
    double rd = 0, cp = 0;
    et_peaks_level_for(p, INT64_MAX, &rd, &cp);
    fprintf(f, "DRAM read %.1f / copy %.1f GB/s", rd, cp);
    for (int l = 0; l < ET_MEM_DRAM; l++) {
        const et_level_bw *lv = &p->level[l];
        if (lv->capacity_bytes <= 0)
            continue;
        char cap[32];
        human(cap, sizeof cap, lv->capacity_bytes);
        et_peaks_level_for(p, lv->capacity_bytes, &rd, &cp);
        fprintf(f, ",\n               %s read %.1f / copy %.1f GB/s for a "
                "problem's bytes up to %s", et_mem_level_name(l), rd, cp,
                cap);
    }
    fprintf(f, "\n");
}

/* ---- one einsum --------------------------------------------------------- */

cJSON *et_roofline_gops_json(const et_roofline *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            cJSON_AddNumberToObject(o, et_dtype_name((et_dtype)t),
                                    r->gops[t]);
    return o;
}

cJSON *et_measured_gops_json(const et_roofline *r, double measured_s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            cJSON_AddNumberToObject(
                o, et_dtype_name((et_dtype)t),
                et_roofline_measured_gops(r, (et_dtype)t, measured_s));
    return o;
}

cJSON *et_roofline_to_json(const et_roofline *r, const et_peaks *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pk = cJSON_CreateObject();
    cJSON *gf = cJSON_CreateObject();
    cJSON *rg = et_roofline_gops_json(r);
    if (!o || !pk || !gf || !rg) {
        cJSON_Delete(o);
        cJSON_Delete(pk);
        cJSON_Delete(gf);
        cJSON_Delete(rg);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "roofline_s", r->time_s);
    cJSON_AddStringToObject(o, "bound", et_bound_name(r->bound));
    cJSON_AddNumberToObject(o, "compute_s", r->compute_s);
    cJSON_AddNumberToObject(o, "memory_s", r->memory_s);
    cJSON_AddItemToObject(o, "roofline_gops", rg);
    cJSON *mem = et_roofline_memory_json(r);
    if (mem)
        cJSON_AddItemToObject(o, "memory", mem);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p->gflops[t] > 0)
            cJSON_AddNumberToObject(gf, et_dtype_name((et_dtype)t),
                                    p->gflops[t]);
    cJSON_AddItemToObject(pk, "gflops", gf);
    cJSON_AddNumberToObject(pk, "bandwidth_gbs", p->bandwidth_gbs);
    cJSON_AddItemToObject(o, "peaks", pk);
    return o;
}

cJSON *et_roofline_memory_json(const et_roofline *r)
{
    cJSON *m = cJSON_CreateObject();
    if (!m)
        return NULL;
    char label[96];
    cJSON_AddStringToObject(m, "level", et_mem_level_name(r->level));
    cJSON_AddNumberToObject(m, "read_bytes", (double)r->read_bytes);
    cJSON_AddNumberToObject(m, "write_bytes", (double)r->write_bytes);
    cJSON_AddNumberToObject(m, "read_gbs", r->read_gbs);
    cJSON_AddNumberToObject(m, "copy_gbs", r->copy_gbs);
    cJSON_AddNumberToObject(m, "closer_bytes", (double)r->closer_bytes);
    cJSON_AddNumberToObject(m, "bandwidth_gbs", r->bandwidth_gbs);
    cJSON_AddStringToObject(m, "label",
                            et_roofline_bandwidth_label(r, label,
                                                        sizeof label));
    return m;
}

int et_report_add_gops(cJSON *obj, const et_roofline *r, double measured_s)
{
    cJSON *m = et_measured_gops_json(r, measured_s);
    cJSON *g = et_roofline_gops_json(r);
    if (!m || !g) {
        cJSON_Delete(m);
        cJSON_Delete(g);
        return -1;
    }
    cJSON_AddItemToObject(obj, "gops", m);
    cJSON_AddItemToObject(obj, "roofline_gops", g);
    cJSON *mem = et_roofline_memory_json(r);
    if (!mem)
        return -1;
    cJSON_AddItemToObject(obj, "roofline_memory", mem);
    if (!cJSON_AddNumberToObject(obj, "roofline_fraction",
                                 et_roofline_ratio(r, measured_s)))
        return -1;
    return 0;
}

static void rule(FILE *f)
{
    fprintf(f, "------+-----------------+-----------------+--------------\n");
}

void et_roofline_table(FILE *f, const et_roofline *r, double measured_s)
{
    double ratio = et_roofline_ratio(r, measured_s);
    fprintf(f, "Dtype | Measured GOps/s | Roofline GOps/s | %% of roofline\n");
    rule(f);
    int rows = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (r->ops[t] <= 0)
            continue;
        fprintf(f, "%-5s | %15.3f | %15.3f | %12.1f\n",
                et_dtype_name((et_dtype)t),
                et_roofline_measured_gops(r, (et_dtype)t, measured_s),
                r->gops[t], 100.0 * ratio);
        rows++;
    }
    if (rows == 0)
        fprintf(f, "%-5s | %15s | %15s | %12.1f\n", "-", "0 ops", "0 ops",
                100.0 * ratio);
    double eff = measured_s > 0 ? (double)r->bytes / measured_s / 1e9 : 0;
    char label[96];
    fprintf(f,
            "%s-bound, intensity %.3g ops/byte; time %.4g ms (roofline "
            "%.4g ms); %.2f GB/s moved (bandwidth %s)\n",
            et_bound_name(r->bound), r->intensity, measured_s * 1e3,
            r->time_s * 1e3, eff,
            et_roofline_bandwidth_label(r, label, sizeof label));
    if (ratio > 1.05)
        fprintf(f,
                "note: %.0f %% of the roofline: the peaks are lower than this "
                "device reaches (measured while it was busy? `eintune peaks "
                "--remeasure` on an idle device)\n",
                100.0 * ratio);
}

void et_roofline_print(FILE *f, const et_roofline *r, const et_peaks *p)
{
    fprintf(f, "roofline: %.4g ms, %s-bound (compute %.4g ms, memory %.4g "
            "ms)\n",
            r->time_s * 1e3, et_bound_name(r->bound), r->compute_s * 1e3,
            r->memory_s * 1e3);
    fprintf(f, "  roofs (%s peaks of %s):", et_peaks_source_name(p->source),
            p->device_name);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            fprintf(f, " %s peak %.1f GFLOP/s, roofline %.3f GOps/s;",
                    et_dtype_name((et_dtype)t), r->peak_gflops[t],
                    r->gops[t]);
    char label[96];
    fprintf(f, " bandwidth %s\n",
            et_roofline_bandwidth_label(r, label, sizeof label));
}
