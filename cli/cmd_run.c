/* cmd_run.c - placeholder until the command lands. */
#include "cli/cli.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eintune run: not built yet\n");
    return EXIT_RUN;
}
