/*
 * check.c - what `eintune check` says about a problem (et_problem_check):
 * its normalized form, dtypes, indices with sizes and roles, op and byte
 * counts, intensity and, from the device's peaks, the roofline.
 */
#include "api/api_impl.h"

#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_check_report {
    et_einsum e;
    int64_t ops[ET_DTYPE_COUNT];
    int64_t ops_direct;   /* the loop nest's count, booked as ops are */
    int64_t bytes;
    double intensity;
    bool want_roof;       /* the roofline part was asked for */
    bool have_roof;
    char why[2048];       /* why it is missing */
    et_peaks peaks;
    et_roofline roof;
};

/*
 * The roofline part: the device's peaks (cached per device, measured on a
 * miss) and the model. A device that cannot be opened is not an error for
 * `check`: the report says why the roofline is missing.
 */
static void check_roofline(et_check_report *r, const char *device)
{
    et_device *dev = NULL;
    et_error err = {{0}};
    char why[256] = "";
    if (et_device_open_isolated(device, NULL, &dev, &err) != ET_OK) {
        snprintf(r->why, sizeof r->why, "%s", err.msg);
        return;
    }
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    if (et_peaks_get(dev, &po, &r->peaks, &err) != ET_OK)
        snprintf(r->why, sizeof r->why, "%s", err.msg);
    else if (et_roofline_compute(&r->e, &r->peaks, &r->roof, why,
                                 sizeof why) != ET_OK)
        snprintf(r->why, sizeof r->why, "%s", why);
    else
        r->have_roof = true;
    et_device_close(dev);
}

et_status et_problem_check(const et_problem *p, const char *device,
                           int roofline, et_check_report **out,
                           et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, p, "p");
    et_check_report *r = calloc(1, sizeof *r);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    r->e = p->e;
    et_einsum_ops(&r->e, r->ops);
    r->ops_direct = et_einsum_ops_direct(&r->e);
    r->bytes = et_einsum_bytes(&r->e);
    int64_t total_ops = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        total_ops += r->ops[t];
    r->intensity = (double)total_ops / (double)r->bytes;
    r->want_roof = roofline != 0;
    if (r->want_roof)
        check_roofline(r, device);
    *out = r;
    return ET_OK;
}

void et_check_report_free(et_check_report *r)
{
    free(r);
}

int et_check_report_has_roofline(const et_check_report *r)
{
    return r ? r->have_roof : 0;
}

double et_check_report_roofline_s(const et_check_report *r)
{
    return r && r->have_roof ? r->roof.time_s : 0;
}

void et_check_report_print(const et_check_report *r, FILE *f)
{
    if (!r || !f)
        return;
    const et_einsum *e = &r->e;
    fprintf(f, "einsum     %s\n", e->text);
    fprintf(f, "dtypes     ");
    for (int k = 0; k < e->n_ops; k++)
        fprintf(f, "%s%s", k ? "," : "", et_dtype_name(e->op[k].dtype));
    fprintf(f, " -> %s (accumulate in %s)\n", et_dtype_name(e->out.dtype),
            et_dtype_name(e->acc_dtype));
    fprintf(f, "\n%-6s %20s  %s\n", "index", "size", "role");
    for (int i = 0; i < e->n_idx; i++)
        fprintf(f, "%-6s %20" PRId64 "  %s%s\n", e->idx[i].name,
                e->idx[i].size, et_role_name(e->idx[i].role),
                e->idx[i].open ? ", open (the size it is worked at; kernels "
                                 "take it at launch)"
                               : "");
    fprintf(f, "\n");
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] != 0 || t == (int)e->acc_dtype)
            fprintf(f, "ops %-6s %20" PRId64 "\n", et_dtype_name((et_dtype)t),
                    r->ops[t]);
    if (r->ops_direct != r->ops[e->acc_dtype])
        fprintf(f, "ops direct %20" PRId64 "  (the loop nest's count)\n",
                r->ops_direct);
    fprintf(f, "bytes      %20" PRId64 "\n", r->bytes);
    fprintf(f, "intensity  %20.4f ops/byte\n", r->intensity);
    if (!r->want_roof)
        return;
    if (r->have_roof) {
        fprintf(f, "\n");
        et_roofline_print(f, &r->roof, &r->peaks);
    } else {
        fprintf(f, "roofline   n/a: %s\n", r->why);
    }
}

/* Integers as JSON numbers with every digit (a double would round the
 * op counts of large einsums). */
static cJSON *json_int(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

char *et_check_report_json(const et_check_report *r)
{
    if (!r)
        return NULL;
    const et_einsum *e = &r->e;
    cJSON *doc = cJSON_CreateObject();
    cJSON *indices = cJSON_CreateArray();
    cJSON *ops_obj = cJSON_CreateObject();
    char *text = NULL;
    if (!doc || !indices || !ops_obj)
        goto out;
    cJSON_AddStringToObject(doc, "einsum", e->text);
    for (int i = 0; i < e->n_idx; i++) {
        cJSON *x = cJSON_CreateObject();
        if (!x)
            goto out;
        cJSON_AddItemToArray(indices, x);
        cJSON_AddStringToObject(x, "name", e->idx[i].name);
        cJSON_AddItemToObject(x, "size", json_int(e->idx[i].size));
        cJSON_AddStringToObject(x, "role", et_role_name(e->idx[i].role));
        cJSON_AddBoolToObject(x, "open", e->idx[i].open);
    }
    cJSON_AddItemToObject(doc, "indices", indices);
    indices = NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] != 0 || t == (int)e->acc_dtype)
            cJSON_AddItemToObject(ops_obj, et_dtype_name((et_dtype)t),
                                  json_int(r->ops[t]));
    cJSON_AddItemToObject(doc, "ops", ops_obj);
    ops_obj = NULL;
    /* the loop nest's count, booked to the same dtype as ops */
    cJSON *direct = cJSON_AddObjectToObject(doc, "ops_direct");
    if (!direct)
        goto out;
    cJSON_AddItemToObject(direct, et_dtype_name(e->acc_dtype),
                          json_int(r->ops_direct));
    cJSON_AddItemToObject(doc, "bytes", json_int(r->bytes));
    cJSON_AddNumberToObject(doc, "intensity", r->intensity);
    if (r->have_roof) {
        cJSON *roof = et_roofline_to_json(&r->roof, &r->peaks);
        if (!roof)
            goto out;
        cJSON_AddItemToObject(doc, "roofline", roof);
    }
    text = cJSON_Print(doc);
out:
    cJSON_Delete(indices);
    cJSON_Delete(ops_obj);
    cJSON_Delete(doc);
    return text;
}
