/*
 * checksum.h - HDF5's Fletcher-32 chunk checksum, computed and checked
 * without HDF5's filter pipeline (on chunks read raw).
 */
#ifndef SH5_CHECKSUM_H
#define SH5_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The checksum HDF5's fletcher32 filter computes over len bytes (16-bit
 * big-endian words, an odd last byte as the high half of a word). */
uint32_t sh5_fletcher32(const void *data, size_t len);

/*
 * Does a stored chunk of len bytes end with the fletcher32 filter's
 * checksum of the bytes before it?  (Stored little-endian; the byte-swapped
 * form older HDF5 releases wrote is accepted, as HDF5 does.)  1 or 0.
 */
int sh5_fletcher32_ok(const void *chunk, size_t len);

/* zlib's CRC-32 (the one gzip and the /Merge record use), continued
 * from crc (0 to start). */
uint32_t sh5_crc32(uint32_t crc, const void *data, size_t len);

#endif
