/*
 * zrecode.h - a chunk's deflate symbols (those zinc.h keeps per byte
 * plane: literals, matches at distance 1) coded with a Huffman code built
 * from their own counts: one zlib stream of one dynamic block (code
 * lengths of at most 15 bits), its Adler-32 given, then HDF5's
 * Fletcher-32.  Smaller than zinc's constant-code form (zcode.h), whose
 * code fits no chunk in particular, at one code per symbol, not per byte.
 */
#ifndef SH5_PROFILE_ZRECODE_H
#define SH5_PROFILE_ZRECODE_H

#include <stddef.h>
#include <stdint.h>

/* n symbol values: a literal byte (0-255) or 256 + a match length
 * (3-258) at distance 1. */
struct sh5_zsyms {
	const uint16_t *sym;
	size_t n;
};

/*
 * Code the symbols of seg[0 .. nseg) in that order, which must inflate
 * to the data whose Adler-32 is adler, into out (cap bytes): zlib
 * stream, then Fletcher-32 (little-endian).  freq: the counts of their
 * literal/length symbols (SH5_ZCODE_NLIT, zcode.h; the end of block's
 * 0), kept by the caller as it made them, or NULL: counted here.
 * Returns its length, or 0 with errno EINVAL (a value is no symbol,
 * checked when freq is NULL) or ENOSPC (it does not fit in cap).
 */
size_t sh5_zrecode(const struct sh5_zsyms *seg, size_t nseg,
		   const uint32_t *freq, uint32_t adler, void *out,
		   size_t cap);

#endif
