/*
 * zcode.h - the one Huffman code src/profile/zinc.c writes every chunk
 * with, and the deflate block header that declares it.
 *
 * zinc codes a chunk incrementally, so its code cannot depend on the
 * chunk's statistics; deflate's fixed code spends 5 bits on the distance
 * of every match and 8 on the literal 0, the two most frequent symbols
 * of shuffled sample chunks (zero planes and runs, all at distance 1).
 * This code is constant too, declared by a dynamic block header (~40
 * bytes) sent with every chunk: one distance code (1 bit: distance 1),
 * literal 0 in 3 bits, the longest match (258) in 5, lengths 3-10 in 7,
 * other lengths in 8, literals 1-104 in 8 bits and the rest in 9.  On
 * real task samples its chunks are ~9 % smaller than the fixed code's.
 */
#ifndef SH5_PROFILE_ZCODE_H
#define SH5_PROFILE_ZCODE_H

#include <stdint.h>

#define SH5_ZCODE_MAX_MATCH 258
#define SH5_ZCODE_NLIT 286 /* deflate's literal/length symbols */
#define SH5_ZCODE_HEAD_PIECES 32

/* Codes bit-reversed for deflate's LSB-first stream.  A match is its
 * length code, extra bits and the distance code, in one. */
struct sh5_zcode {
	uint32_t lit[256];
	uint8_t lit_len[256];
	uint32_t match[SH5_ZCODE_MAX_MATCH + 1];
	uint8_t match_len[SH5_ZCODE_MAX_MATCH + 1];
	/* Deflate's length symbol (257-285) of a match length, its extra
	 * bits' value and their count (RFC 1951, 3.2.5). */
	uint16_t len_sym[SH5_ZCODE_MAX_MATCH + 1];
	uint16_t len_extra[SH5_ZCODE_MAX_MATCH + 1];
	uint8_t len_ebits[SH5_ZCODE_MAX_MATCH + 1];
	uint32_t eob;
	uint8_t eob_len;
	/* The block header (BFINAL 1, BTYPE 2, the code), in pieces of up
	 * to 58 bits. */
	uint64_t head[SH5_ZCODE_HEAD_PIECES];
	uint8_t head_len[SH5_ZCODE_HEAD_PIECES];
	unsigned nhead;
};

/* The code, built on the first call (thread-safe). */
const struct sh5_zcode *sh5_zcode(void);

/* The canonical codes (RFC 1951, 3.2.2) of n symbols of code lengths
 * len[] (0: unused) into out[], bit-reversed for deflate's LSB-first
 * stream; zrecode.c's per-chunk codes use it too. */
void sh5_zcode_canonical(const uint8_t *len, unsigned n, uint32_t *out);

#endif
