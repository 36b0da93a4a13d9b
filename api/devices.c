/*
 * devices.c - the public device list (et_device_desc_*): every OpenCL and
 * CUDA device with the limits kernels must respect, as a table and as
 * JSON, with notes about absent backends.
 */
#include "api/api_impl.h"

#include "measure/backend.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEVICES = 64, NOTES_CAP = 4096 };

static void desc_fill(const et_device_info *d, et_device_desc *o)
{
    const et_target *t = &d->target;
    memset(o, 0, sizeof *o);
    snprintf(o->spec, sizeof o->spec, "%s", d->spec);
    o->backend = t->backend;
    snprintf(o->name, sizeof o->name, "%s", d->name);
    snprintf(o->vendor, sizeof o->vendor, "%s", d->vendor);
    snprintf(o->driver, sizeof o->driver, "%s", d->driver_version);
    snprintf(o->version, sizeof o->version, "%s", d->device_version);
    o->max_work_group_size = t->max_work_group_size;
    for (int i = 0; i < 3; i++)
        o->max_work_item_sizes[i] = t->max_work_item_sizes[i];
    o->local_mem_bytes = t->local_mem_bytes;
    o->compute_units = t->compute_units;
    o->global_mem_bytes = t->global_mem_bytes;
    o->mem_base_addr_align = t->mem_base_addr_align;
    o->fp64 = t->has_fp64;
    o->fp16 = t->has_fp16;
    for (int k = 0; k < ET_DTYPE_COUNT; k++)
        o->preferred_vector_width[k] = t->preferred_vector_width[k];
}

et_status et_device_desc_list(et_device_desc **out, int *n, char **notes,
                              et_diag *diag)
{
    api_diag_clear(diag);
    if (notes)
        *notes = NULL;
    if (n)
        *n = 0;
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, n, "n");
    et_device_info *infos = calloc(MAX_DEVICES, sizeof *infos);
    char text[NOTES_CAP] = "";
    et_status st = ET_OK;
    int count = 0;
    if (!infos) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    if (et_device_list(infos, MAX_DEVICES, &count, text, sizeof text) !=
        ET_OK) {
        st = api_fail(diag, ET_ERR_DEVICE, ET_INPUT_NONE, "listing failed");
        goto out;
    }
    if (count > 0) {
        *out = calloc((size_t)count, sizeof **out);
        if (!*out) {
            st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
            goto out;
        }
        for (int i = 0; i < count; i++)
            desc_fill(&infos[i], &(*out)[i]);
    }
    *n = count;
    if (notes && !(*notes = strdup(text))) {
        free(*out);
        *out = NULL;
        *n = 0;
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
out:
    free(infos);
    return st;
}

/* "512 KiB", "7.6 GiB": a byte count people can read. */
static void human_bytes(int64_t bytes, char *out, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0 || v >= 100 || v == (double)(int64_t)v)
        snprintf(out, cap, "%.0f %s", v, units[u]);
    else
        snprintf(out, cap, "%.1f %s", v, units[u]);
}

enum {
    COL_SPEC,
    COL_NAME,
    COL_VENDOR,
    COL_DRIVER,
    COL_WG,
    COL_ITEMS,
    COL_LOCAL,
    COL_CU,
    COL_GLOBAL,
    COL_ALIGN,
    COL_FP64,
    COL_FP16,
    COL_VEC,
    COL_COUNT
};

static const char *const col_titles[COL_COUNT] = {
    "SPEC",  "NAME", "VENDOR", "DRIVER", "MAX WG", "WORK-ITEM SIZES",
    "LOCAL", "CUs",  "GLOBAL", "ALIGN",  "FP64",   "FP16",
    "VEC f16/f32/f64",
};

typedef struct row {
    char cell[COL_COUNT][300];
} row;

static void fill_row(const et_device_desc *d, row *r)
{
    snprintf(r->cell[COL_SPEC], sizeof r->cell[0], "%s", d->spec);
    snprintf(r->cell[COL_NAME], sizeof r->cell[0], "%s", d->name);
    snprintf(r->cell[COL_VENDOR], sizeof r->cell[0], "%s", d->vendor);
    snprintf(r->cell[COL_DRIVER], sizeof r->cell[0], "%s", d->driver);
    snprintf(r->cell[COL_WG], sizeof r->cell[0], "%" PRId64,
             d->max_work_group_size);
    snprintf(r->cell[COL_ITEMS], sizeof r->cell[0],
             "%" PRId64 " x %" PRId64 " x %" PRId64, d->max_work_item_sizes[0],
             d->max_work_item_sizes[1], d->max_work_item_sizes[2]);
    human_bytes(d->local_mem_bytes, r->cell[COL_LOCAL], sizeof r->cell[0]);
    snprintf(r->cell[COL_CU], sizeof r->cell[0], "%d", d->compute_units);
    human_bytes(d->global_mem_bytes, r->cell[COL_GLOBAL], sizeof r->cell[0]);
    snprintf(r->cell[COL_ALIGN], sizeof r->cell[0], "%" PRId64 " B",
             d->mem_base_addr_align);
    snprintf(r->cell[COL_FP64], sizeof r->cell[0], "%s",
             d->fp64 ? "yes" : "no");
    snprintf(r->cell[COL_FP16], sizeof r->cell[0], "%s",
             d->fp16 ? "yes" : "no");
    snprintf(r->cell[COL_VEC], sizeof r->cell[0], "%d/%d/%d",
             d->preferred_vector_width[ET_F16],
             d->preferred_vector_width[ET_F32],
             d->preferred_vector_width[ET_F64]);
}

void et_device_desc_print(const et_device_desc *d, int n, FILE *f)
{
    if (!f || (!d && n > 0))
        return;
    row *rows = n > 0 ? calloc((size_t)n, sizeof *rows) : NULL;
    if (n > 0 && !rows)
        return;
    for (int i = 0; i < n; i++)
        fill_row(&d[i], &rows[i]);
    size_t width[COL_COUNT];
    for (int c = 0; c < COL_COUNT; c++) {
        width[c] = strlen(col_titles[c]);
        for (int i = 0; i < n; i++)
            if (strlen(rows[i].cell[c]) > width[c])
                width[c] = strlen(rows[i].cell[c]);
    }
    for (int i = -1; i < n; i++) {
        for (int c = 0; c < COL_COUNT; c++) {
            const char *text = i < 0 ? col_titles[c] : rows[i].cell[c];
            if (c + 1 < COL_COUNT)
                fprintf(f, "%-*s  ", (int)width[c], text);
            else
                fprintf(f, "%s\n", text); /* no trailing blanks */
        }
    }
    free(rows);
}

static cJSON *device_json(const et_device_desc *d)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "spec", d->spec);
    cJSON_AddStringToObject(o, "backend", et_backend_name(d->backend));
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddStringToObject(o, "driver", d->driver);
    cJSON_AddStringToObject(o, "device_version", d->version);
    cJSON_AddNumberToObject(o, "max_work_group_size",
                            (double)d->max_work_group_size);
    cJSON *sizes = cJSON_AddArrayToObject(o, "max_work_item_sizes");
    for (int i = 0; sizes && i < 3; i++)
        cJSON_AddItemToArray(
            sizes, cJSON_CreateNumber((double)d->max_work_item_sizes[i]));
    cJSON_AddNumberToObject(o, "local_mem_bytes", (double)d->local_mem_bytes);
    cJSON_AddNumberToObject(o, "compute_units", d->compute_units);
    cJSON_AddNumberToObject(o, "global_mem_bytes",
                            (double)d->global_mem_bytes);
    cJSON_AddNumberToObject(o, "mem_base_addr_align",
                            (double)d->mem_base_addr_align);
    cJSON_AddBoolToObject(o, "fp64", d->fp64);
    cJSON_AddBoolToObject(o, "fp16", d->fp16);
    cJSON *vec = cJSON_AddObjectToObject(o, "preferred_vector_width");
    for (int k = 0; vec && k < ET_DTYPE_COUNT; k++)
        cJSON_AddNumberToObject(vec, et_dtype_name((et_dtype)k),
                                d->preferred_vector_width[k]);
    return o;
}

char *et_device_desc_json(const et_device_desc *d, int n)
{
    if (!d && n > 0)
        return NULL;
    cJSON *doc = cJSON_CreateArray();
    if (!doc)
        return NULL;
    for (int i = 0; i < n; i++) {
        cJSON *o = device_json(&d[i]);
        if (o)
            cJSON_AddItemToArray(doc, o);
    }
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}
