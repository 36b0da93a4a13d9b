/* cmd_devices.c - placeholder until the command lands. */
#include "cli/cli.h"

int cmd_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "eintune devices: not built yet\n");
    return EXIT_RUN;
}
