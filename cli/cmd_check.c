/*
 * cmd_check.c - `eintune check EINSUM --shape .. [--dtype ..]`: parse and
 * resolve an einsum, print its normalized form, index table, op and byte
 * counts and arithmetic intensity. Bad input: the offending text echoed
 * with a caret on stderr, exit status 2, nothing on stdout.
 */
#include "cli/cli.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune check EINSUM --shape SPEC [--dtype SPEC] "
            "[--json FILE]\n\n"
            "Parses an einsum with its sizes and dtypes and prints the\n"
            "normalized explicit form, every index with its size and role\n"
            "(free, summed, batch), the op count per dtype, the compulsory\n"
            "bytes and the arithmetic intensity (ops per byte).\n\n"
            "  EINSUM          e.g. 'xik,kj->xij', 'ab,bc' (implicit output),\n"
            "                  'ii->i' (diagonal), '...ij,jk->...ik'\n"
            "  --shape SPEC    a size for every index: x=4096,i=35,k=35,j=35;\n"
            "                  ellipsis dimensions as ...=3x2\n"
            "  --dtype SPEC    f16, f32 or f64 for all operands, or one per\n"
            "                  operand: f32,f64 (default f64)\n"
            "  --json FILE     also write JSON (einsum, indices, ops, bytes,\n"
            "                  intensity); '-' = stdout, the table then goes\n"
            "                  to stderr\n"
            "  --device D      device whose peaks give the roofline (default:\n"
            "                  the first OpenCL device; peaks are measured\n"
            "                  once and cached)\n"
            "  --no-roofline   skip the roofline part (no device needed)\n"
            "  --quiet, --verbose, --help\n\n"
            "exit status: 0 success, 2 bad input\n");
}

static cJSON *json_int(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static int emit_json(const et_einsum *e, const int64_t ops[ET_DTYPE_COUNT],
                     int64_t bytes, double intensity, cJSON *roofline)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *indices = cJSON_CreateArray();
    cJSON *ops_obj = cJSON_CreateObject();
    int rc = 1;
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
    }
    cJSON_AddItemToObject(doc, "indices", indices);
    indices = NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (ops[t] != 0 || t == (int)e->acc_dtype)
            cJSON_AddItemToObject(ops_obj, et_dtype_name((et_dtype)t),
                                  json_int(ops[t]));
    cJSON_AddItemToObject(doc, "ops", ops_obj);
    ops_obj = NULL;
    cJSON_AddItemToObject(doc, "bytes", json_int(bytes));
    cJSON_AddNumberToObject(doc, "intensity", intensity);
    if (roofline) {
        cJSON_AddItemToObject(doc, "roofline", roofline);
        roofline = NULL;
    }
    rc = cli_json_emit(doc);
out:
    cJSON_Delete(roofline);
    if (rc && !doc)
        fprintf(stderr, "eintune check: out of memory\n");
    cJSON_Delete(indices);
    cJSON_Delete(ops_obj);
    cJSON_Delete(doc);
    return rc;
}

/*
 * The roofline part: the device's peaks (cached per device, measured on a
 * miss) and the model. A device that cannot be opened is not an error for
 * `check`: the part says why it is missing.
 */
static cJSON *roofline_part(FILE *f, const et_einsum *e)
{
    et_device *dev = NULL;
    et_error err = {{0}};
    et_peaks pk;
    et_roofline r;
    char why[256] = "";
    cJSON *j = NULL;
    if (et_device_open_isolated(g_cli.device, NULL, &dev, &err) != ET_OK) {
        fprintf(f, "roofline   n/a: %s\n", err.msg);
        return NULL;
    }
    et_peaks_get_opts po = {0};
    if (et_peaks_get(dev, &po, &pk, &err) != ET_OK) {
        fprintf(f, "roofline   n/a: %s\n", err.msg);
    } else if (et_roofline_compute(e, &pk, &r, why, sizeof why) != ET_OK) {
        fprintf(f, "roofline   n/a: %s\n", why);
    } else {
        fprintf(f, "\n");
        et_roofline_print(f, &r, &pk);
        j = et_roofline_to_json(&r, &pk);
    }
    et_device_close(dev);
    return j;
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"no-roofline", no_argument, 0, 'n'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL;
    int opt, roofline = 1;
    /* GNU getopt permutes, so EINSUM may stand before or after the flags;
     * an einsum starting with '-' ("->") goes after "--". */
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'n': roofline = 0; break;
        case 'h': usage(stdout); return 0;
        default: return cli_usage_error("check", "bad flag");
        }
    }
    const char *text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("check", "unexpected argument '%s'",
                               argv[optind]);
    if (!text)
        return cli_usage_error("check", "missing EINSUM");
    if (!shape)
        return cli_usage_error("check", "missing --shape");

    static et_subscripts s;
    static et_shape_spec sp;
    static et_einsum e;
    et_dtype dt[ET_MAX_OPERANDS];
    et_diag d;
    memset(&d, 0, sizeof(d));
    if (et_subscripts_parse(text, &s, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        return EXIT_INPUT;
    }
    if (et_shape_spec_parse(shape, &sp, &d) != ET_OK) {
        cli_diag("--shape", shape, &d);
        return EXIT_INPUT;
    }
    if (et_dtype_spec_parse(dtype, s.n_ops, dt, &d) != ET_OK) {
        cli_diag("--dtype", dtype, &d);
        return EXIT_INPUT;
    }
    if (et_einsum_resolve(&s, &sp, NULL, dt, &e, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        return EXIT_INPUT;
    }

    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(&e, ops);
    int64_t bytes = et_einsum_bytes(&e), total_ops = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        total_ops += ops[t];
    double intensity = (double)total_ops / (double)bytes;

    FILE *f = cli_table_out();
    fprintf(f, "einsum     %s\n", e.text);
    fprintf(f, "dtypes     ");
    for (int k = 0; k < e.n_ops; k++)
        fprintf(f, "%s%s", k ? "," : "", et_dtype_name(e.op[k].dtype));
    fprintf(f, " -> %s (accumulate in %s)\n", et_dtype_name(e.out.dtype),
            et_dtype_name(e.acc_dtype));
    fprintf(f, "\n%-6s %20s  %s\n", "index", "size", "role");
    for (int i = 0; i < e.n_idx; i++)
        fprintf(f, "%-6s %20" PRId64 "  %s\n", e.idx[i].name, e.idx[i].size,
                et_role_name(e.idx[i].role));
    fprintf(f, "\n");
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (ops[t] != 0 || t == (int)e.acc_dtype)
            fprintf(f, "ops %-6s %20" PRId64 "\n", et_dtype_name((et_dtype)t),
                    ops[t]);
    fprintf(f, "bytes      %20" PRId64 "\n", bytes);
    fprintf(f, "intensity  %20.4f ops/byte\n", intensity);
    cJSON *jroof = roofline ? roofline_part(f, &e) : NULL;
    fflush(f);
    return emit_json(&e, ops, bytes, intensity, jroof) ? EXIT_RUN : 0;
}
