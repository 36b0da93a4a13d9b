/* cmd_check.c - placeholder until the command lands. */
#include "cli/cli.h"

int cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eintune check: not built yet\n");
    return EXIT_RUN;
}
