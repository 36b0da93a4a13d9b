/*
 * remote_proto.h - the wire format between remote.c (parent) and the
 * device worker (measure/worker/worker_main.c). Internal to measure/.
 * Both ends are built from the same tree, so these structs travel as raw
 * bytes.
 */
#ifndef ET_REMOTE_PROTO_H
#define ET_REMOTE_PROTO_H

#include "transforms/target.h"

#include <stdint.h>

/* The worker's end of the socket pair is this fd after exec. */
#define ET_WORKER_FD 3
/* Most kernel arguments in one launch request. */
#define ET_WIRE_MAX_ARGS 64

typedef enum et_wire_op {
    ET_WIRE_OPEN = 0, /* payload: spec text -> payload et_device_info */
    ET_WIRE_ALLOC,    /* a = bytes -> a = handle */
    ET_WIRE_WRITE,    /* a = handle, b = offset, payload = data */
    ET_WIRE_READ,     /* a = handle, b = offset, c = bytes -> payload */
    ET_WIRE_FREE,     /* a = handle */
    ET_WIRE_BUILD,    /* payload: name '\0' source -> a = handle */
    ET_WIRE_PFREE,    /* a = handle */
    ET_WIRE_LAUNCH,   /* a = program, b = nargs, c = timed, payload
                       * et_wire_launch -> seconds */
    ET_WIRE_HOOK,     /* a = et_remote_hook */
    ET_WIRE_CLOSE,    /* closes the device; the worker exits */
    ET_WIRE_FILL,     /* a = handle, b = offset, c = bytes, payload =
                       * the pattern (1 to 16 bytes) */
    ET_WIRE_OP_COUNT
} et_wire_op;

typedef struct et_wire_req {
    uint64_t op;
    uint64_t a, b, c;
    uint64_t len; /* payload bytes */
} et_wire_req;

typedef struct et_wire_ans {
    int64_t status; /* et_status */
    uint64_t a;
    double seconds;
    uint64_t len;   /* payload bytes: data, or the error text */
} et_wire_ans;

typedef struct et_wire_launch {
    et_launch geom;
    uint64_t arg[ET_WIRE_MAX_ARGS];
    uint64_t off[ET_WIRE_MAX_ARGS];
} et_wire_launch;

#endif
