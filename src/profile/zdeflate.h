/*
 * zdeflate.h - one buffer to a zlib stream (as HDF5's deflate filter
 * writes it), through libdeflate when its shared library is installed
 * (looked up at run time, no build dependency; about three times fewer
 * instructions than zlib at level 4 on shuffled sample chunks, and
 * smaller output), else zlib's compress2().
 */
#ifndef SH5_PROFILE_ZDEFLATE_H
#define SH5_PROFILE_ZDEFLATE_H

#include <stddef.h>

struct sh5_zdeflate;

/* A compressor at level (1..9).  NULL with errno ENOMEM.  Nothing is
 * allocated for libdeflate until the first sh5_zdeflate(). */
struct sh5_zdeflate *sh5_zdeflate_create(int level);

/* An upper bound of the output for len input bytes. */
size_t sh5_zdeflate_bound(size_t len);

/* Compress src[0 .. len) into dst (room for *dlen bytes); *dlen set to
 * the output length.  0, or -1 (no room, out of memory). */
int sh5_zdeflate(struct sh5_zdeflate *z, void *dst, size_t *dlen,
		 const void *src, size_t len);

/* NULL is fine. */
void sh5_zdeflate_destroy(struct sh5_zdeflate *z);

#endif
