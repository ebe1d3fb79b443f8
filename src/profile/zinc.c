/* zinc.c - incremental Huffman deflate of a shuffled chunk (zinc.h) */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "profile/zcode.h"
#include "profile/zinc.h"

#define ADLER_MOD 65521u
#define MAX_MATCH SH5_ZCODE_MAX_MATCH
#define NO_BYTE 256u
#define MAX_ROWS ((size_t)1 << 24) /* the plane sums stay below 2^64 */

/* A bit string, deflate order (least significant bit first). */
struct bits {
	uint64_t *w;       /* whole words */
	size_t nw, cap;
	uint64_t acc;      /* then fill (< 64) more bits */
	unsigned fill;
	int err;           /* a word could not be stored (out of memory) */
};

/* A byte plane: its symbols so far, its open run, its Adler-32 sums. */
struct plane {
	struct bits b;
	unsigned run;      /* repeats of v after the coded bytes */
	unsigned v;        /* the last byte; NO_BYTE before the first */
	uint64_t a, s;     /* Adler-32 sums (a from 1), not reduced */
};

struct sh5_zinc {
	size_t size, rows, n; /* record size, chunk rows, rows added */
	struct plane *p;
	struct bits out;
	/* the zero padding of a plane that does not end with a zero: a
	 * literal 0 and a run (a few pieces of < 64 bits) */
	uint64_t *zcode;
	uint8_t *zlen;
	size_t zpieces;
};

/* The code (profile/zcode.h), set by the first sh5_zinc_create(). */
static const struct sh5_zcode *zc;
static pthread_once_t zc_once = PTHREAD_ONCE_INIT;

static void zc_init(void)
{
	zc = sh5_zcode();
}

static int bits_grow(struct bits *b)
{
	size_t nc = b->cap ? 2 * b->cap : 16;
	uint64_t *nw = realloc(b->w, nc * sizeof(*nw));

	if (!nw)
		return -1;
	b->w = nw;
	b->cap = nc;
	return 0;
}

/* Append len (< 64) bits; code has no bits above len. */
static inline void put(struct bits *b, uint64_t code, unsigned len)
{
	b->acc |= code << b->fill;
	b->fill += len;
	if (b->fill < 64)
		return;
	b->fill -= 64;
	if (b->nw < b->cap || bits_grow(b) == 0)
		b->w[b->nw++] = b->acc;
	else
		b->err = 1;
	b->acc = code >> (len - b->fill);
}

/* Append n whole words (room reserved). */
static void put_words(struct bits *o, const uint64_t *w, size_t n)
{
	unsigned f = o->fill;
	uint64_t *d = o->w + o->nw, acc = o->acc;
	size_t i;

	o->nw += n;
	if (!f) {
		memcpy(d, w, n * sizeof(*w));
		return;
	}
	for (i = 0; i < n; i++) {
		d[i] = acc | w[i] << f;
		acc = w[i] >> (64 - f);
	}
	o->acc = acc;
}

/* Code r repeats of byte v that follows a byte v. */
static void put_run(struct bits *b, unsigned v, size_t r)
{
	const uint64_t m = zc->match[MAX_MATCH];
	const unsigned ml = zc->match_len[MAX_MATCH];

	while (r >= 4 * MAX_MATCH) {
		put(b, m | m << ml | m << 2 * ml | m << 3 * ml, 4 * ml);
		r -= 4 * MAX_MATCH;
	}
	for (; r >= MAX_MATCH; r -= MAX_MATCH)
		put(b, m, ml);
	if (r >= 3) {
		put(b, zc->match[r], zc->match_len[r]);
		return;
	}
	while (r--)
		put(b, zc->lit[v], zc->lit_len[v]);
}

static void plane_reset(struct plane *p)
{
	p->b.nw = 0;
	p->b.acc = 0;
	p->b.fill = 0;
	p->b.err = 0;
	p->run = 0;
	p->v = NO_BYTE;
	p->a = 1;
	p->s = 0;
}

struct sh5_zinc *sh5_zinc_create(size_t rec_size, size_t rows)
{
	struct sh5_zinc *z;
	size_t j;

	if (!rec_size || rec_size > 65536 || !rows || rows > MAX_ROWS) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&zc_once, zc_init);
	if (!(z = calloc(1, sizeof(*z))) ||
	    !(z->p = calloc(rec_size, sizeof(*z->p))) ||
	    !(z->zcode = malloc((rows / MAX_MATCH + 4) * sizeof(uint64_t))) ||
	    !(z->zlen = malloc(rows / MAX_MATCH + 4))) {
		sh5_zinc_destroy(z);
		errno = ENOMEM;
		return NULL;
	}
	z->size = rec_size;
	z->rows = rows;
	for (j = 0; j < rec_size; j++)
		plane_reset(&z->p[j]);
	return z;
}

/* A byte that does not continue the plane's open run, or a run that
 * reached the longest match.  The plane's out-of-memory flag. */
static int plane_break(struct plane *p, unsigned x)
{
	if (x == p->v) {
		put(&p->b, zc->match[MAX_MATCH], zc->match_len[MAX_MATCH]);
		p->run = 1;
		return p->b.err;
	}
	if (p->run >= 3)
		put(&p->b, zc->match[p->run], zc->match_len[p->run]);
	else
		while (p->run) {
			put(&p->b, zc->lit[p->v], zc->lit_len[p->v]);
			p->run--;
		}
	put(&p->b, zc->lit[x], zc->lit_len[x]);
	p->v = x;
	p->run = 0;
	return p->b.err;
}

int sh5_zinc_add(struct sh5_zinc *z, const unsigned char *rec)
{
	struct plane *p = z->p, *end = z->p + z->size;
	int err = 0;

	if (z->n >= z->rows) {
		errno = EINVAL;
		return -1;
	}
	for (; p < end; p++, rec++) {
		unsigned x = *rec;
		uint64_t a = p->a + x;

		p->a = a;
		p->s += a;
		if (x == p->v && p->run < MAX_MATCH)
			p->run++;
		else
			err |= plane_break(p, x);
	}
	z->n++;
	if (err) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

size_t sh5_zinc_rows(const struct sh5_zinc *z)
{
	return z->n;
}

/* Room in z->out for the whole stream; -1 if out of memory. */
static int reserve(struct sh5_zinc *z)
{
	size_t j, words = 4 + SH5_ZCODE_HEAD_PIECES, need;

	for (j = 0; j < z->size; j++)
		words += z->p[j].b.nw + 3;
	words += z->size * (z->rows / (4 * MAX_MATCH) + 1);
	need = words + 2; /* the last bits, the trailers */
	while (z->out.cap < need)
		if (bits_grow(&z->out) < 0)
			return -1;
	z->out.nw = 0;
	z->out.acc = 0;
	z->out.fill = 0;
	return 0;
}

/* The zero padding of a plane not ending with 0 (a literal 0, then a
 * run of zeros), in pieces of up to 58 bits: the same for every such
 * plane, coded once per chunk written. */
static void zero_tail(struct sh5_zinc *z, size_t zeros)
{
	uint64_t code = zc->lit[0];
	unsigned len = zc->lit_len[0];
	size_t r = zeros - 1;

	z->zpieces = 0;
	if (!zeros)
		return;
	while (r) {
		size_t take = r >= MAX_MATCH ? MAX_MATCH : r >= 3 ? r : 1;
		uint64_t c = take > 1 ? zc->match[take] : zc->lit[0];
		unsigned l = take > 1 ? zc->match_len[take] : zc->lit_len[0];

		if (len + l > 58) {
			z->zcode[z->zpieces] = code;
			z->zlen[z->zpieces++] = (uint8_t)len;
			code = 0;
			len = 0;
		}
		code |= c << len;
		len += l;
		r -= take;
	}
	z->zcode[z->zpieces] = code;
	z->zlen[z->zpieces++] = (uint8_t)len;
}

/* Code plane p, then its zero padding. */
static void put_plane(struct sh5_zinc *z, const struct plane *p,
		      size_t zeros)
{
	struct bits *o = &z->out;
	size_t i;

	put_words(o, p->b.w, p->b.nw);
	put(o, p->b.acc, p->b.fill);
	if (p->v == 0) {
		put_run(o, 0, p->run + zeros);
		return;
	}
	if (p->v != NO_BYTE)
		put_run(o, p->v, p->run);
	for (i = 0; i < z->zpieces; i++)
		put(o, z->zcode[i], z->zlen[i]);
}

const void *sh5_zinc_chunk(struct sh5_zinc *z, size_t *len)
{
	struct bits *o = &z->out;
	uint64_t sa = 1, sb = 0, rows = z->rows % ADLER_MOD;
	uint64_t zeros = (z->rows - z->n) % ADLER_MOD;
	uint32_t adler, fl;
	unsigned char *c;
	size_t j, n;

	if (reserve(z) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	zero_tail(z, z->rows - z->n);
	put(o, 0x0178, 16);     /* zlib header: deflate, 32 KiB window */
	for (j = 0; j < zc->nhead; j++) /* the block header and code */
		put(o, zc->head[j], zc->head_len[j]);
	for (j = 0; j < z->size; j++) {
		const struct plane *p = &z->p[j];

		put_plane(z, p, z->rows - z->n);
		/* Adler-32: this plane's sums over its N bytes, zeros
		 * included (a zero adds a to s), after the planes before
		 * it (s + N (A - 1), A + a - 1: zlib's adler32_combine);
		 * below 2^64 over 64 planes, then reduced. */
		sb += p->s + zeros * p->a + rows * (sa + ADLER_MOD - 1);
		sa += p->a - 1;
		if ((j & 63) == 63) {
			sa %= ADLER_MOD;
			sb %= ADLER_MOD;
		}
	}
	sa %= ADLER_MOD;
	sb %= ADLER_MOD;
	put(o, zc->eob, zc->eob_len);
	n = o->nw * 8 + (o->fill + 7) / 8;
	o->w[o->nw] = o->acc;
#if __BYTE_ORDER != __LITTLE_ENDIAN
	for (j = 0; j <= o->nw; j++)
		o->w[j] = htole64(o->w[j]);
#endif
	c = (unsigned char *)o->w;
	adler = (uint32_t)(sb << 16 | sa);
	c[n++] = (unsigned char)(adler >> 24);
	c[n++] = (unsigned char)(adler >> 16);
	c[n++] = (unsigned char)(adler >> 8);
	c[n++] = (unsigned char)adler;
	fl = sh5_fletcher32(c, n);
	c[n++] = (unsigned char)fl;
	c[n++] = (unsigned char)(fl >> 8);
	c[n++] = (unsigned char)(fl >> 16);
	c[n++] = (unsigned char)(fl >> 24);
	*len = n;
	return c;
}

void sh5_zinc_reset(struct sh5_zinc *z)
{
	size_t j;

	for (j = 0; j < z->size; j++)
		plane_reset(&z->p[j]);
	z->n = 0;
}

void sh5_zinc_destroy(struct sh5_zinc *z)
{
	size_t j;

	if (!z)
		return;
	for (j = 0; j < z->size; j++)
		free(z->p[j].b.w);
	free(z->p);
	free(z->out.w);
	free(z->zcode);
	free(z->zlen);
	free(z);
}
