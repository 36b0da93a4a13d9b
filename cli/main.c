/* main.c - the eintune command: dispatches to a subcommand. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"devices", cmd_devices, "list OpenCL and CUDA devices with their limits"},
    {"check", cmd_check, "parse an einsum: roles, op and byte counts"},
    {"codegen", cmd_codegen, "print the kernel for an einsum and opts"},
    {"run", cmd_run, "run an einsum on .npy inputs, write a .npy output"},
    {"tune", cmd_tune, "search a transform space for the fastest kernel"},
    {"campaign", cmd_campaign, "tune a list of problems (one per MPI rank)"},
    {"peaks", cmd_peaks, "the device's peak GFLOP/s per dtype and bandwidth"},
    {"db", cmd_db, "the tuning database: stats, list, prune"},
    {"best", cmd_best, "the fastest known kernel for an einsum on a device"},
    {"export", cmd_export, "write the best kernel's source and a C header"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune COMMAND [ARGS] [--help]\n"
            "       eintune help [COMMAND]\n\n"
            "eintune tunes einsum kernels for OpenCL and CUDA devices.\n\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nflags common to all commands: --device D, --db FILE,\n"
            "  --json FILE ('-' = stdout), --quiet, --verbose, --help\n"
            "exit status: 0 success, 1 run could not complete, 2 bad input\n"
            "  (a file a command would write, in a missing or read-only\n"
            "  directory, is bad input, found before anything runs)\n"
            "with --json -, a failed command writes {\"error\": {\"status\",\n"
            "  \"exit\", \"message\", \"input\", \"pos\"}} to stdout instead\n");
}

/* --json FILE of any command (FILE other than '-') is checked before the
 * command runs: its directory must exist and be writable. */
static int check_json_arg(const char *cmd, int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(argv[i], "--json=", 7))
            v = argv[i] + 7;
        if (v && strcmp(v, "-") != 0 &&
            cli_check_output(cmd, "--json", v, NULL, 0))
            return EXIT_INPUT;
        if (v && !strcmp(v, "-"))
            g_cli.json = v; /* for the JSON error object of a usage error */
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (!strcmp(argv[1], "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "help")) {
        /* `eintune help CMD` is `eintune CMD --help` */
        if (argc > 3) {
            fprintf(stderr, "eintune help: one command at most, not '%s' "
                            "(see 'eintune --help')\n", argv[3]);
            return EXIT_INPUT;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
            if (strcmp(argv[2], commands[i].name) == 0) {
                char *hargv[] = {argv[2], (char *)"--help", NULL};
                cli_getopt_reset();
                return commands[i].fn(2, hargv);
            }
        }
        fprintf(stderr, "eintune help: unknown command '%s'\n", argv[2]);
        usage(stderr);
        return EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("eintune %s\n", ET_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            cli_getopt_reset();
            int status = check_json_arg(commands[i].name, argc, argv);
            if (!status)
                status = commands[i].fn(argc - 1, argv + 1);
            cli_json_error(commands[i].name, status);
            return status;
        }
    }
    cli_error("", EXIT_INPUT, "unknown command '%s'", argv[1]);
    usage(stderr);
    if (check_json_arg("", argc, argv) == 0)
        cli_json_error(argv[1], EXIT_INPUT);
    return EXIT_INPUT;
}
