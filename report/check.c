/*
 * check.c - a problem check's report (report.h, et_check_report_print
 * and et_check_report_json): the normalized einsum, its dtypes, the
 * indices with their sizes and roles, op and byte counts, intensity and
 * the roofline, or why it is missing.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

void report_check_print(const et_check_report *r, FILE *f)
{
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

char *report_check_json(const et_check_report *r)
{
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
