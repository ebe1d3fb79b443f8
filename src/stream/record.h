/*
 * record.h - a record of a profile series (src/profile/series.h) queued
 * on a stream as the plugin streams its samples.  The one place where the
 * series' types meet the stream's: the plugin and bench/sh5_replay call
 * it, so that the benchmark measures the plugin's own path.
 */
#ifndef SH5_STREAM_RECORD_H
#define SH5_STREAM_RECORD_H

#include "profile/series.h"
#include "stream/stream.h"

/*
 * Queue record rec of series s (its time slots, then its fields) on st:
 * the measurement is the series type ("Task", "Energy", ...; the dataset
 * name for generic series), the task id the dataset name of a Task series
 * (-1 for node-level series), the time EpochTimeNs, the fields all of s's
 * (at most SH5_STREAM_MAX_FIELDS, the rest left out).  Returns what
 * sh5_stream_push() returns (0, or -1 with errno); 0 without doing
 * anything when st is NULL or s has no field.
 */
int sh5_stream_push_record(struct sh5_stream *st, const struct sh5_series *s,
			   const union sh5_value *rec);

#endif /* SH5_STREAM_RECORD_H */
