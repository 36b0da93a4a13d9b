/*
 * db_impl.h - db/'s internals shared between its files (not for other
 * layers): the SQLite connection behind an et_db handle.
 */
#ifndef ET_DB_IMPL_H
#define ET_DB_IMPL_H

#include "db/db.h"

#include <sqlite3.h>

/* The handle's connection (owned by db). */
sqlite3 *et_db_handle(et_db *db);

#endif
