/*
 * zpartial.h - the stored form of a chunk that is still filling, built
 * up across flushes, so that a flush costs what its own records do
 * instead of compressing the whole chunk again.
 *
 * The stored form is what HDF5's deflate and fletcher32 filters would
 * read back (the caller skips the shuffle filter through the chunk's
 * filter mask): a zlib stream of stored (uncompressed) deflate blocks,
 * one or more per flush, appended as the records come; then one final
 * block coding the chunk's remaining zero bytes (fixed codes, a few
 * hundred bytes for any length), the zlib trailer (Adler-32 of the
 * whole chunk, zeros included), and HDF5's Fletcher-32 of all that.  It
 * inflates to exactly the chunk's size, as HDF5 expects.  Adler-32 and
 * Fletcher-32 are carried across flushes, so a flush reads only its own
 * bytes and the tail.  The chunk takes about the records' raw size
 * until the writer replaces it by the compressed final form.
 */
#ifndef SH5_PROFILE_ZPARTIAL_H
#define SH5_PROFILE_ZPARTIAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/checksum.h"

struct sh5_zpartial {
	unsigned char *out;    /* header and blocks so far; room after */
	size_t len, cap;
	uint32_t adler;        /* of the bytes added */
	struct sh5_fletcher32_state fl; /* over out[0 .. len) */
};

/* Zero the state (no allocation). */
void sh5_zpartial_init(struct sh5_zpartial *p);

/* Append len bytes of the chunk (stored blocks).  0, or -1 with errno
 * ENOMEM. */
int sh5_zpartial_add(struct sh5_zpartial *p, const void *data, size_t len);

/*
 * The stored chunk: the blocks so far, a final block of `zeros` (>= 1)
 * zero bytes, the Adler-32 trailer and the Fletcher-32 checksum (little-
 * endian, as HDF5's filter stores it), built in p->out from offset 0 and
 * valid until the next call.  Returns its length, 0 on failure (out of
 * memory, zeros == 0).  More bytes can be added after it.
 */
size_t sh5_zpartial_chunk(struct sh5_zpartial *p, size_t zeros);

/* Start a new chunk (memory kept). */
void sh5_zpartial_reset(struct sh5_zpartial *p);

/* Free everything; p can be used again. */
void sh5_zpartial_free(struct sh5_zpartial *p);

#endif
