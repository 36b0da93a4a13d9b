/*
 * install_dir.c - the directory `make install` puts the device worker in
 * (make's LIBEXECDIR), compiled in for programs linked with the static
 * library, which cannot find the worker from the library's own location
 * (measure/remote.h says where the worker is looked for).
 *
 * Alone in its object file on purpose: `make install` compiles this file
 * again with the LIBEXECDIR of that installation and replaces the member
 * install_dir.o of the installed libeintune.a, so the archive names its
 * own PREFIX however the build tree was configured.
 */
#include "measure/remote.h"

#ifndef ET_LIBEXECDIR
#define ET_LIBEXECDIR "/usr/local/libexec/eintune"
#endif

const char et_remote_libexecdir[] = ET_LIBEXECDIR;
