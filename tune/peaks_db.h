/*
 * peaks_db.h - device peaks kept in the tuning database.
 *
 * The roofline's peaks (roofline/peaks.h) live in the devices table of the
 * tuning database (db/db.h: peaks_json, the et_peaks_to_json form,
 * tagged with the eintune version that measured them, and carrying the
 * micro-benchmarks' version, "bench_version": peaks from another version
 * are a miss and get measured again). The device key is
 * the database's: backend, name and driver version, so a new driver is a
 * miss. The per-device cache file of roofline/ stays as a second level:
 * peaks found there (or measured) are copied into the database, so a
 * database carried to another machine brings its peaks along.
 *
 * An override file (--peaks-file, $ET_PEAKS_FILE) bypasses the database:
 * et_peaks_get answers as it always did and nothing is stored, since
 * vendor figures are not measurements of this device.
 */
#ifndef ET_TUNE_PEAKS_DB_H
#define ET_TUNE_PEAKS_DB_H

#include "measure/backend.h"
#include "db/db.h"
#include "roofline/peaks.h"

/*
 * The peaks stored in db for the device info describes, into out (source
 * ET_PEAKS_CACHED). Reads only. ET_OK on a hit; ET_ERR_IO on a miss (no
 * device row, no peaks, peaks of another eintune version, or without f32
 * or bandwidth figures); ET_ERR_INPUT when the stored JSON is malformed;
 * the database's errors otherwise.
 */
et_status et_peaks_db_load(et_db *db, const et_device_info *info,
                           et_peaks *out, et_error *err);

/*
 * As et_peaks_get (opts may be NULL), with the database first: unless
 * opts->remeasure or an override file is given, a hit in db answers; on a
 * miss et_peaks_get answers (cache file or measurement) and its figures
 * are stored in db. db may be NULL (then this is et_peaks_get). A failure
 * to store is not an error.
 */
et_status et_peaks_get_db(et_device *dev, et_db *db,
                          const et_peaks_get_opts *opts, et_peaks *out,
                          et_error *err);

#endif /* ET_TUNE_PEAKS_DB_H */
