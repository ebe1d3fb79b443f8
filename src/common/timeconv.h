/*
 * timeconv.h - EpochTime (seconds, uint64 in the files) to nanoseconds
 * without undefined behaviour.  The readers reject times past 2262
 * (reader.c: the series ends there as damage; jobread.c: an error); this
 * is the formatting paths' guard: the product is computed unsigned
 * (defined wrap-around) instead of as a signed overflow.
 */
#ifndef SH5_TIMECONV_H
#define SH5_TIMECONV_H

#include <stdint.h>

/* Largest EpochTime whose nanoseconds fit int64 (the year 2262). */
#define SH5_EPOCH_S_MAX ((uint64_t)(INT64_MAX / 1000000000))

static inline int64_t sh5_epoch_to_ns(uint64_t s)
{
	return (int64_t)(s * UINT64_C(1000000000));
}

#endif /* SH5_TIMECONV_H */
