/*
 * cmd_devices.c - `eintune devices`: every OpenCL and CUDA device with
 * the limits the transforms check, as a table and optionally as JSON (an
 * array of device objects). Notes about absent backends go to stderr.
 */
#include "cli/cli.h"
#include "measure/backend.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEVICES = 64 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune devices [--json FILE] [--quiet] [--verbose]\n\n"
            "Lists the OpenCL devices (over all platforms) and the CUDA\n"
            "devices with the spec that selects each (--device SPEC), its\n"
            "name, vendor, driver and the limits kernels must respect.\n"
            "Backends that are absent are noted on stderr.\n\n"
            "  --json FILE   also write the list as a JSON array ('-' = "
            "stdout)\n"
            "  --help        this text\n");
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

static void fill_row(const et_device_info *d, row *r)
{
    const et_target *t = &d->target;
    snprintf(r->cell[COL_SPEC], sizeof r->cell[0], "%s", d->spec);
    snprintf(r->cell[COL_NAME], sizeof r->cell[0], "%s", d->name);
    snprintf(r->cell[COL_VENDOR], sizeof r->cell[0], "%s", d->vendor);
    snprintf(r->cell[COL_DRIVER], sizeof r->cell[0], "%s", d->driver_version);
    snprintf(r->cell[COL_WG], sizeof r->cell[0], "%" PRId64,
             t->max_work_group_size);
    snprintf(r->cell[COL_ITEMS], sizeof r->cell[0],
             "%" PRId64 " x %" PRId64 " x %" PRId64, t->max_work_item_sizes[0],
             t->max_work_item_sizes[1], t->max_work_item_sizes[2]);
    human_bytes(t->local_mem_bytes, r->cell[COL_LOCAL], sizeof r->cell[0]);
    snprintf(r->cell[COL_CU], sizeof r->cell[0], "%d", t->compute_units);
    human_bytes(t->global_mem_bytes, r->cell[COL_GLOBAL], sizeof r->cell[0]);
    snprintf(r->cell[COL_ALIGN], sizeof r->cell[0], "%" PRId64 " B",
             t->mem_base_addr_align);
    snprintf(r->cell[COL_FP64], sizeof r->cell[0], "%s",
             t->has_fp64 ? "yes" : "no");
    snprintf(r->cell[COL_FP16], sizeof r->cell[0], "%s",
             t->has_fp16 ? "yes" : "no");
    snprintf(r->cell[COL_VEC], sizeof r->cell[0], "%d/%d/%d",
             t->preferred_vector_width[ET_F16],
             t->preferred_vector_width[ET_F32],
             t->preferred_vector_width[ET_F64]);
}

static void print_table(FILE *f, const row *rows, int n)
{
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
}

static cJSON *device_json(const et_device_info *d)
{
    const et_target *t = &d->target;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "spec", d->spec);
    cJSON_AddStringToObject(o, "backend", et_backend_name(t->backend));
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddStringToObject(o, "driver", d->driver_version);
    cJSON_AddStringToObject(o, "device_version", d->device_version);
    cJSON_AddNumberToObject(o, "max_work_group_size",
                            (double)t->max_work_group_size);
    cJSON *sizes = cJSON_AddArrayToObject(o, "max_work_item_sizes");
    for (int i = 0; sizes && i < 3; i++)
        cJSON_AddItemToArray(
            sizes, cJSON_CreateNumber((double)t->max_work_item_sizes[i]));
    cJSON_AddNumberToObject(o, "local_mem_bytes", (double)t->local_mem_bytes);
    cJSON_AddNumberToObject(o, "compute_units", t->compute_units);
    cJSON_AddNumberToObject(o, "global_mem_bytes",
                            (double)t->global_mem_bytes);
    cJSON_AddNumberToObject(o, "mem_base_addr_align",
                            (double)t->mem_base_addr_align);
    cJSON_AddBoolToObject(o, "fp64", t->has_fp64);
    cJSON_AddBoolToObject(o, "fp16", t->has_fp16);
    cJSON *vec = cJSON_AddObjectToObject(o, "preferred_vector_width");
    for (int k = 0; vec && k < ET_DTYPE_COUNT; k++)
        cJSON_AddNumberToObject(vec, et_dtype_name((et_dtype)k),
                                t->preferred_vector_width[k]);
    return o;
}

int cmd_devices(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
                                             {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (!cli_common_opt(opt, optarg))
            return cli_usage_error("devices", "unknown flag");
    }
    if (optind < argc)
        return cli_usage_error("devices", "unexpected argument '%s'",
                               argv[optind]);

    int rc = 0;
    et_device_info *infos = calloc(MAX_DEVICES, sizeof *infos);
    row *rows = calloc(MAX_DEVICES, sizeof *rows);
    cJSON *doc = NULL;
    char notes[4096] = "";
    int n = 0;
    if (!infos || !rows) {
        fprintf(stderr, "eintune devices: out of memory\n");
        rc = EXIT_RUN;
        goto cleanup;
    }
    if (et_device_list(infos, MAX_DEVICES, &n, notes, sizeof notes) !=
        ET_OK) {
        fprintf(stderr, "eintune devices: listing failed\n");
        rc = EXIT_RUN;
        goto cleanup;
    }
    for (char *line = notes; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        if (*line)
            cli_log(LOG_INFO, "devices", "%s", line);
        if (!end)
            break;
        line = end + 1;
    }

    FILE *out = cli_table_out();
    if (n == 0) {
        fprintf(out, "no devices found\n");
        rc = EXIT_RUN;
    } else {
        for (int i = 0; i < n; i++)
            fill_row(&infos[i], &rows[i]);
        print_table(out, rows, n);
    }

    if (g_cli.json) {
        doc = cJSON_CreateArray();
        if (!doc) {
            fprintf(stderr, "eintune devices: out of memory\n");
            rc = EXIT_RUN;
            goto cleanup;
        }
        for (int i = 0; i < n; i++) {
            cJSON *o = device_json(&infos[i]);
            if (o)
                cJSON_AddItemToArray(doc, o);
        }
        if (cli_json_emit(doc) != 0)
            rc = EXIT_RUN;
    }
cleanup:
    cJSON_Delete(doc);
    free(rows);
    free(infos);
    return rc;
}
