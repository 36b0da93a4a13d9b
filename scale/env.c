/*
 * env.c - what needs no MPI library: where the launcher says this process
 * stands (so that a build without MPI can still tell that it runs under
 * mpirun), and CPU sets as text for the log.
 */
#include "scale/scale.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first of the variables that is set, as an int; -1 when none is. */
static int env_int(const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (v && *v) {
            long x = strtol(v, &end, 10);
            if (!*end && x >= 0 && x < 1 << 30)
                return (int)x;
        }
    }
    return -1;
}

void et_scale_env_get(et_scale_env *out)
{
    static const char *const rank[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK", NULL};
    static const char *const size[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       NULL};
    static const char *const lrank[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", NULL};
    static const char *const lsize[] = {"OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "MPI_LOCALNRANKS", NULL};
    memset(out, 0, sizeof *out);
    int r = env_int(rank), n = env_int(size);
    out->launched = r >= 0;
    out->rank = r >= 0 ? r : 0;
    out->size = n > 0 ? n : 1;
    int lr = env_int(lrank), ln = env_int(lsize);
    out->local_rank = lr >= 0 ? lr : out->rank;
    out->local_size = ln > 0 ? ln : out->size;
}

void et_scale_cpus_text(const void *cpu_set, char *out, size_t cap)
{
    const cpu_set_t *set = cpu_set;
    size_t n = 0;
    if (!cap)
        return;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
            e++;
        int k = e == c ? snprintf(out + n, cap - n, "%s%d", n ? "," : "", c)
                       : snprintf(out + n, cap - n, "%s%d-%d", n ? "," : "",
                                  c, e);
        if (k < 0)
            break;
        n += (size_t)k;
        c = e;
    }
}
