/*
 * cmd_devices.c - `eintune devices`: every OpenCL and CUDA device with
 * the limits the transforms check, as a table and optionally as JSON (an
 * array of device objects). Notes about absent backends go to stderr.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

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
    et_device_desc *devs = NULL;
    char *notes = NULL;
    int n = 0;
    et_diag d;
    et_status st = et_device_desc_list(&devs, &n, &notes, &d);
    if (st != ET_OK) {
        return cli_error("devices", EXIT_RUN, "%s",
                         st == ET_ERR_NOMEM ? "out of memory" : d.msg);
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
        et_device_desc_print(devs, n, out);
    }
    if (g_cli.json && cli_json_emit_api(et_device_desc_json(devs, n)) != 0)
        rc = EXIT_RUN;
    et_free(notes);
    et_free(devs);
    return rc;
}
