/* zpartial.c - see zpartial.h */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile/zpartial.h"

void sh5_zpartial_init(struct sh5_zpartial *p)
{
	memset(p, 0, sizeof(*p));
	p->adler = 1;
}

static int grow(struct sh5_zpartial *p, size_t need)
{
	size_t nc = p->cap ? p->cap : 4096;
	unsigned char *n;

	if (p->len + need <= p->cap)
		return 0;
	while (nc < p->len + need)
		nc *= 2;
	if (!(n = realloc(p->out, nc)))
		return -1;
	p->out = n;
	p->cap = nc;
	return 0;
}

int sh5_zpartial_add(struct sh5_zpartial *p, const void *data, size_t len)
{
	const unsigned char *d = data;

	if (grow(p, 2 + len + 5 * (len / 65535 + 1)) < 0)
		return -1;
	if (!p->len) {
		/* zlib header: deflate, 32 KiB window, no dictionary. */
		p->out[p->len++] = 0x78;
		p->out[p->len++] = 0x01;
	}
	while (len) {
		size_t n = len > 65535 ? 65535 : len;
		unsigned char *o = p->out + p->len;

		/* Stored block, not final (byte-aligned: 3 header bits
		 * padded), LEN and its complement, little-endian. */
		o[0] = 0;
		o[1] = (unsigned char)n;
		o[2] = (unsigned char)(n >> 8);
		o[3] = (unsigned char)~n;
		o[4] = (unsigned char)(~n >> 8);
		memcpy(o + 5, d, n);
		p->adler = (uint32_t)adler32(p->adler, d, (uInt)n);
		p->len += 5 + n;
		d += n;
		len -= n;
	}
	sh5_fletcher32_advance(&p->fl, p->out, p->len);
	return 0;
}

/* Bits into a byte buffer, least significant first (deflate's order);
 * fewer than 8 bits held between calls. */
struct bitw {
	unsigned char *p;
	uint64_t acc;
	int n;
};

static void put_bits(struct bitw *b, uint64_t v, int n)
{
	b->acc |= v << b->n;
	b->n += n;
	while (b->n >= 8) {
		*b->p++ = (unsigned char)b->acc;
		b->acc >>= 8;
		b->n -= 8;
	}
}

/* A Huffman code goes out most significant bit first. */
static void put_code(struct bitw *b, uint32_t code, int n)
{
	uint32_t r = 0;
	int i;

	for (i = 0; i < n; i++)
		r |= ((code >> i) & 1) << (n - 1 - i);
	put_bits(b, r, n);
}

/* Length 3..257 with distance 1 in the fixed code (RFC 1951 3.2.6). */
static void put_match(struct bitw *b, unsigned len)
{
	static const unsigned short base[28] = {
		3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
		35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227 };
	static const unsigned char extra[28] = {
		0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
		3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5 };
	unsigned i = 27, sym;

	while (base[i] > len)
		i--;
	sym = 257 + i;
	if (sym < 280)
		put_code(b, sym - 256, 7);
	else
		put_code(b, 0xc0 + (sym - 280), 8);
	put_bits(b, len - base[i], extra[i]);
	put_bits(b, 0, 5); /* distance code 0: distance 1 */
}

/*
 * Length 258 (symbol 285, fixed code 11000101) at distance 1 (distance
 * code 0, five zero bits): 13 bits, 0xa3 in stream order; four of them
 * in one go.
 */
#define RUN258 UINT64_C(0xa3)
#define RUN258X4 (RUN258 | RUN258 << 13 | RUN258 << 26 | RUN258 << 39)

/* A final fixed-code block of `zeros` (>= 1) zero bytes; byte-aligned
 * end.  At most zeros / 158 + 8 bytes. */
static unsigned char *zero_block(unsigned char *out, size_t zeros)
{
	struct bitw b = { out, 0, 0 };
	size_t left = zeros - 1;

	put_bits(&b, 1, 1);          /* BFINAL */
	put_bits(&b, 1, 2);          /* BTYPE 01: fixed codes */
	put_code(&b, 0x30, 8);       /* literal 0 */
	for (; left >= 4 * 258; left -= 4 * 258)
		put_bits(&b, RUN258X4, 52);
	for (; left >= 258; left -= 258)
		put_bits(&b, RUN258, 13);
	if (left >= 3)
		put_match(&b, (unsigned)left);
	else
		for (; left; left--)
			put_code(&b, 0x30, 8);
	put_code(&b, 0, 7);          /* end of block */
	if (b.n)
		put_bits(&b, 0, 8 - b.n);
	return b.p;
}

size_t sh5_zpartial_chunk(struct sh5_zpartial *p, size_t zeros)
{
	unsigned char *e;
	uint32_t adler, c;
	size_t len;

	if (!zeros || grow(p, 2 + zeros / 158 + 16 + 8) < 0)
		return 0;
	e = p->out + p->len;
	if (!p->len) {
		*e++ = 0x78;
		*e++ = 0x01;
	}
	e = zero_block(e, zeros);
	/* Adler-32 of the zeros: a = 1, b = zeros (mod 65521). */
	adler = (uint32_t)adler32_combine(p->adler,
					  (uLong)(zeros % 65521) << 16 | 1,
					  (z_off_t)zeros);
	*e++ = (unsigned char)(adler >> 24);
	*e++ = (unsigned char)(adler >> 16);
	*e++ = (unsigned char)(adler >> 8);
	*e++ = (unsigned char)adler;
	len = (size_t)(e - p->out);
	c = sh5_fletcher32_finish(&p->fl, p->out, len);
	*e++ = (unsigned char)c;
	*e++ = (unsigned char)(c >> 8);
	*e++ = (unsigned char)(c >> 16);
	*e++ = (unsigned char)(c >> 24);
	return len + 4;
}

void sh5_zpartial_reset(struct sh5_zpartial *p)
{
	unsigned char *out = p->out;
	size_t cap = p->cap;

	sh5_zpartial_init(p);
	p->out = out;
	p->cap = cap;
}

void sh5_zpartial_free(struct sh5_zpartial *p)
{
	free(p->out);
	sh5_zpartial_init(p);
}
