/*
 * zinc.h - a chunk that fills across flushes, stored at every flush as
 * HDF5's shuffle + deflate + fletcher32 pipeline would store it, at a
 * cost that does not grow with the chunk: an incremental deflate coder
 * of the shuffled chunk, with one constant Huffman code (zcode.h).
 *
 * The shuffled chunk of N records of S bytes is S byte planes of N
 * bytes (plane j: byte j of every record).  For each plane the coder
 * keeps the deflate symbols (literals, and run-length matches at
 * distance 1, as zlib's Z_RLE strategy) of the bytes added so far,
 * except the plane's open run (its last byte repeated, not yet coded,
 * so a run goes on across flushes), as bits and as symbol values (for
 * sh5_zinc_recode()); for the chunk, Adler-32's sums over the planes,
 * kept per record.
 *
 * sh5_zinc_chunk() writes one zlib stream of one final block: its
 * header (declaring zcode.h's code), every plane's symbols (shifted
 * into place a 64-bit word at a time), its open run and the run of
 * zeros padding it to N bytes, the end of block, the Adler-32 of the
 * whole shuffled chunk (those sums combined arithmetically with the
 * planes' zero padding), then HDF5's Fletcher-32 of the compressed bytes.
 * A flush thus costs its new records plus one pass over the compressed
 * chunk, where recompressing the partial chunk cost the whole raw chunk
 * at every flush.  The output is an ordinary final chunk (filter mask
 * 0) at every stage: a complete chunk, and the last one when the file
 * closes, are kept as they are.
 */
#ifndef SH5_PROFILE_ZINC_H
#define SH5_PROFILE_ZINC_H

#include <stddef.h>

struct sh5_zinc;

/* A coder of chunks of `rows` records (1 .. 2^24) of rec_size bytes
 * (1 .. 65536).  NULL with errno EINVAL or ENOMEM. */
struct sh5_zinc *sh5_zinc_create(size_t rec_size, size_t rows);

/* Add one record (its file bytes, unshuffled) to the chunk; the chunk
 * must not be full.  0, or -1 with errno EINVAL (full).  Memory that ran
 * out while coding it is reported by the next sh5_zinc_chunk() or
 * sh5_zinc_recode() (ENOMEM); the coder is then unusable until
 * sh5_zinc_reset(). */
int sh5_zinc_add(struct sh5_zinc *z, const unsigned char *rec);

/* Records in the chunk. */
size_t sh5_zinc_rows(const struct sh5_zinc *z);

/*
 * The stored chunk: the records so far, zero padded to the chunk's
 * length, shuffled, deflated (zlib stream) and followed by HDF5's
 * Fletcher-32 (little-endian).  Valid until the next call on z; *len set
 * to its length.  NULL with errno ENOMEM.  More records can be added
 * after it.
 */
const void *sh5_zinc_chunk(struct sh5_zinc *z, size_t *len);

/*
 * The same chunk coded with a Huffman code of its own symbols' counts
 * (zrecode.h; the planes' symbols are kept as values beside their
 * bits, so nothing is decoded): smaller than sh5_zinc_chunk()'s form
 * on sample data, the same bytes inflated, with its Fletcher-32.
 * Written into out (cap bytes); returns its length, or 0 with errno
 * ENOSPC (not shorter than sh5_zinc_chunk()'s form would be, or it does
 * not fit in cap) or ENOMEM (a record could not be added).
 */
size_t sh5_zinc_recode(struct sh5_zinc *z, void *out, size_t cap);

/* At least the length of sh5_zinc_chunk()'s form of the chunk as it
 * stands (so of sh5_zinc_recode()'s too). */
size_t sh5_zinc_bound(const struct sh5_zinc *z);

/* Start a new chunk (memory kept). */
void sh5_zinc_reset(struct sh5_zinc *z);

/* NULL is fine. */
void sh5_zinc_destroy(struct sh5_zinc *z);

#endif
