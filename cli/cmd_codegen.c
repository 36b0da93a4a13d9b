/* cmd_codegen.c - placeholder until the command lands. */
#include "cli/cli.h"

int cmd_codegen(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eintune codegen: not built yet\n");
    return EXIT_RUN;
}
