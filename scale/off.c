/*
 * off.c - scale.h's functions when eintune is built without MPI (no
 * ET_HAVE_MPI): et_scale_available is false and every other function
 * says that scale-out is off (ET_ERR_UNSUPPORTED). The environment is
 * still read (env.c), so that a run under mpirun can say so.
 */
#include "scale/scale.h"

#ifndef ET_HAVE_MPI

#include <stdio.h>
#include <string.h>

#define OFF_MSG "scale-out is off: eintune was built without MPI " \
                "(install libopenmpi-dev, e.g. with make deps, and rebuild)"

bool et_scale_available(void)
{
    return false;
}

et_status et_scale_join(void *comm, et_scale **out, et_error *err)
{
    *out = NULL;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

void et_scale_free(et_scale *s)
{
    (void)s;
}

int et_scale_rank_of(const et_scale *s)
{
    (void)s;
    return 0;
}

int et_scale_size(const et_scale *s)
{
    (void)s;
    return 1;
}

void et_scale_local(const et_scale *s, int *index, int *count)
{
    (void)s;
    *index = 0;
    *count = 0;
}

et_status et_scale_serve(et_scale *s, const et_scale_serve_opts *o,
                         et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_master_start(et_scale *s, et_tune_exec *x,
                                et_scale_rank *ranks, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

void et_scale_master_stop(et_scale *s, et_scale_rank *ranks,
                          et_scale_figures *fig)
{
}

void et_scale_campaign_device(et_scale *s, const char *list, char *spec,
                              size_t spec_cap, char *cpus, size_t cpus_cap,
                              void (*log)(void *arg, et_tune_level lvl,
                                          const char *msg),
                              void *arg)
{
    snprintf(spec, spec_cap, "%s", list ? list : "");
    if (cpus_cap)
        cpus[0] = '\0';
}

et_status et_scale_campaign_hello(et_scale *s, et_status st,
                                  const et_error *why, const char *spec,
                                  const char *cpus,
                                  const et_device_info *info, bool *go,
                                  et_error *err)
{
    *go = false;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_ask(et_scale *s, int *problem, et_error *err)
{
    *problem = -1;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_lookup(et_scale *s, int problem,
                                   const et_db_trial *key, et_db_trial *out,
                                   bool *found, et_error *err)
{
    *found = false;
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_record(et_scale *s, int problem,
                                   const et_db_trial *tr, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_race(et_scale *s, int problem,
                                 const et_db_race *r, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_done(et_scale *s, int problem, et_status st,
                                 const char *msg, const char *text,
                                 et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_start(et_scale *s, et_scale_rank *ranks,
                                  et_device_info *info, et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_next(et_scale *s, et_scale_cmsg *m,
                                 et_error *err)
{
    memset(m, 0, sizeof *m);
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_give(et_scale *s, int rank, int problem,
                                 et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}

et_status et_scale_campaign_answer(et_scale *s, int rank,
                                   const et_db_trial *out, bool found,
                                   et_error *err)
{
    return et_errorf(err, ET_ERR_UNSUPPORTED, "%s", OFF_MSG);
}
#endif
