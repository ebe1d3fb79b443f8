/*
 * zrecode.h - a chunk zinc coded (zinc.h: one zlib stream of one block
 * in zcode.h's constant Huffman code, Adler-32, Fletcher-32) coded again
 * with a Huffman code built from its own symbols: the same symbols
 * (literals, matches at distance 1), a dynamic block header with code
 * lengths of at most 15 bits, the same Adler-32, a new Fletcher-32.
 * Smaller than zinc's form (its code fits no chunk in particular), at
 * one table look-up and one code per symbol, not per byte.
 */
#ifndef SH5_PROFILE_ZRECODE_H
#define SH5_PROFILE_ZRECODE_H

#include <stddef.h>

/*
 * Re-code the len bytes at in (as sh5_zinc_chunk() returned them) into
 * out (cap bytes).  Returns the new length, or 0 if in is not zinc's
 * form (errno EINVAL), the result does not fit in cap or is not shorter
 * than len (errno ENOSPC), or memory ran out (ENOMEM).
 */
size_t sh5_zrecode(const void *in, size_t len, void *out, size_t cap);

#endif
