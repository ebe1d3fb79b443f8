/* zrecode.c - a zinc chunk's symbols coded with their own Huffman code
 * (zrecode.h) */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "profile/zcode.h"
#include "profile/zrecode.h"

#define NLIT SH5_ZCODE_NLIT
#define EOB 256
#define MAXBITS 15              /* deflate's longest literal/length code */

/* A symbol value's literal/length symbol (value: a literal, or 256 + a
 * match length). */
static uint16_t vsym[256 + SH5_ZCODE_MAX_MATCH + 1];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
	const struct sh5_zcode *zc = sh5_zcode();
	unsigned s, l;

	for (s = 0; s < 256; s++)
		vsym[s] = (uint16_t)s;
	for (l = 0; l < 3; l++)
		vsym[256 + l] = EOB; /* no match of that length: refused */
	for (l = 3; l <= SH5_ZCODE_MAX_MATCH; l++)
		vsym[256 + l] = zc->len_sym[l];
}

struct node {
	uint32_t w;
	int parent;
};

/* nd[0 .. n) sorted by weight, stably (ties keep their order): four
 * passes of a byte each through tmp. */
static void sort_weights(struct node *nd, unsigned n, struct node *tmp)
{
	unsigned pass, i;

	for (pass = 0; pass < 4; pass++) {
		unsigned count[257] = { 0 }, shift = 8 * pass;
		struct node *from = pass % 2 ? tmp : nd;
		struct node *to = pass % 2 ? nd : tmp;

		for (i = 0; i < n; i++)
			count[(from[i].w >> shift & 0xff) + 1]++;
		for (i = 1; i < 257; i++)
			count[i] += count[i - 1];
		for (i = 0; i < n; i++)
			to[count[from[i].w >> shift & 0xff]++] = from[i];
	}
}

/*
 * Huffman code lengths of n (<= NLIT) weights, at most limit bits (a
 * complete code: two symbols at least, an unused one given weight 1 if
 * needed).  Weights are halved until the code fits.
 */
static void lengths(const uint32_t *freq, unsigned n, unsigned limit,
		    uint8_t *len)
{
	struct node nd[2 * NLIT];
	uint16_t id[NLIT];
	uint32_t w[NLIT];
	unsigned i, used, shift = 0;

	for (;;) {
		unsigned leaf = 0, inner, next, k, max = 0;
		uint8_t depth[2 * NLIT];

		for (i = used = 0; i < n; i++) {
			w[i] = freq[i] ? (freq[i] >> shift) | 1 : 0;
			used += !!w[i];
		}
		for (i = 0; used < 2 && i < n; i++)
			if (!w[i]) {
				w[i] = 1;
				used++;
			}
		for (i = k = 0; i < n; i++)
			if (w[i]) {
				nd[k].w = w[i];
				nd[k].parent = (int)i; /* sorted with it */
				k++;
			}
		sort_weights(nd, used, nd + used);
		for (k = 0; k < used; k++) {
			id[k] = (uint16_t)nd[k].parent;
			nd[k].parent = -1;
		}
		/* Two queues: leaves nd[leaf ..), inner nodes nd[inner ..). */
		for (inner = next = used; next < 2 * used - 1; next++) {
			unsigned pick[2], j;

			for (j = 0; j < 2; j++)
				pick[j] = leaf < used && (inner == next ||
					  nd[leaf].w <= nd[inner].w) ?
					  leaf++ : inner++;
			nd[next].w = nd[pick[0]].w + nd[pick[1]].w;
			nd[next].parent = -1;
			nd[pick[0]].parent = nd[pick[1]].parent = (int)next;
		}
		depth[2 * used - 2] = 0;
		for (k = 2 * used - 2; k-- > 0;) {
			depth[k] = (uint8_t)(depth[nd[k].parent] + 1);
			if (k < used && depth[k] > max)
				max = depth[k];
		}
		if (max <= limit) {
			memset(len, 0, n);
			for (k = 0; k < used; k++)
				len[id[k]] = depth[k];
			return;
		}
		shift++;
	}
}

struct bw {
	unsigned char *p;
	size_t n, cap;
	uint64_t acc;
	unsigned fill;
	int over;
};

/* Append len (<= 32) bits: whole 32-bit words stored as they fill. */
static inline __attribute__((always_inline)) void put(struct bw *o,
						      uint32_t bits,
						      unsigned len)
{
	uint32_t w;

	o->acc |= (uint64_t)bits << o->fill;
	o->fill += len;
	if (o->fill < 32)
		return;
	if (o->n + 4 > o->cap) {
		o->over = 1;
	} else {
		w = htole32((uint32_t)o->acc);
		memcpy(o->p + o->n, &w, 4);
		o->n += 4;
	}
	o->acc >>= 32;
	o->fill -= 32;
}

/* The code lengths run-length coded (RFC 1951, 3.2.7) into sym/extra;
 * returns the count. */
static unsigned rle(const uint8_t *seq, unsigned n, uint8_t *sym,
		    uint8_t *extra)
{
	unsigned i = 0, k = 0;

	while (i < n) {
		unsigned v = seq[i], run = 1, t;

		while (i + run < n && seq[i + run] == v)
			run++;
		i += run;
		if (v) {
			sym[k] = (uint8_t)v;
			extra[k++] = 0;
			run--;
		}
		while (v && run >= 3) {
			t = run > 6 ? 6 : run;
			sym[k] = 16;
			extra[k++] = (uint8_t)(t - 3);
			run -= t;
		}
		while (!v && run >= 11) {
			t = run > 138 ? 138 : run;
			sym[k] = 18;
			extra[k++] = (uint8_t)(t - 11);
			run -= t;
		}
		if (!v && run >= 3) {
			sym[k] = 17;
			extra[k++] = (uint8_t)(run - 3);
			run = 0;
		}
		for (; run; run--) {
			sym[k] = (uint8_t)v;
			extra[k++] = 0;
		}
	}
	return k;
}

/* BFINAL, BTYPE 2, HLIT, HDIST (one distance code, 1 bit), HCLEN, the
 * code length code, the code lengths. */
static void put_head(struct bw *o, const uint8_t *llen, unsigned nlit)
{
	static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
					   11, 4, 12, 3, 13, 2, 14, 1, 15 };
	static const uint8_t xbits[19] = { [16] = 2, [17] = 3, [18] = 7 };
	uint8_t seq[NLIT + 1], sym[NLIT + 1], extra[NLIT + 1], cl_len[19];
	uint32_t w[19] = { 0 }, cl_code[19];
	unsigned n, i, hclen = 19;

	memcpy(seq, llen, nlit);
	seq[nlit] = 1;
	n = rle(seq, nlit + 1, sym, extra);
	for (i = 0; i < n; i++)
		w[sym[i]]++;
	lengths(w, 19, 7, cl_len);
	sh5_zcode_canonical(cl_len, 19, cl_code);
	while (hclen > 4 && !cl_len[order[hclen - 1]])
		hclen--;
	put(o, 1 | 2 << 1, 3);
	put(o, nlit - 257, 5);
	put(o, 0, 5);
	put(o, hclen - 4, 4);
	for (i = 0; i < hclen; i++)
		put(o, cl_len[order[i]], 3);
	for (i = 0; i < n; i++)
		put(o, cl_code[sym[i]] | (uint32_t)extra[i] << cl_len[sym[i]],
		    cl_len[sym[i]] + xbits[sym[i]]);
}

/* The symbols of the nseg segments in the code of lengths llen, then the
 * end of block, to a whole byte. */
static void put_symbols(struct bw *o, const struct sh5_zsyms *seg,
			size_t nseg, const uint8_t *llen)
{
	const struct sh5_zcode *zc = sh5_zcode();
	uint32_t code[NLIT], ecode[256 + SH5_ZCODE_MAX_MATCH + 1];
	uint8_t elen[256 + SH5_ZCODE_MAX_MATCH + 1];
	size_t i, k;
	unsigned v;

	sh5_zcode_canonical(llen, NLIT, code);
	/* every value's bits: a literal; a match's length code, extra
	 * bits and distance code 0 (one 0 bit) */
	for (v = 0; v < 256; v++) {
		ecode[v] = code[v];
		elen[v] = llen[v];
	}
	for (v = 3; v <= SH5_ZCODE_MAX_MATCH; v++) {
		unsigned s = zc->len_sym[v];

		ecode[256 + v] = code[s] | (uint32_t)zc->len_extra[v] << llen[s];
		elen[256 + v] = (uint8_t)(llen[s] + zc->len_ebits[v] + 1);
	}
	for (k = 0; k < nseg; k++) {
		const uint16_t *sym = seg[k].sym;

		for (i = 0; i < seg[k].n; i++)
			put(o, ecode[sym[i]], elen[sym[i]]);
	}
	put(o, code[EOB], llen[EOB]);
	for (i = 0; i < (o->fill + 7) / 8; i++) {
		if (o->n == o->cap)
			o->over = 1;
		else
			o->p[o->n++] = (unsigned char)(o->acc >> (8 * i));
	}
	o->acc = 0;
	o->fill = 0;
}

/* The literal/length counts of the segments' symbols into freq (NLIT,
 * zeroed); -1 if a value is no symbol. */
static int count(const struct sh5_zsyms *seg, size_t nseg, uint32_t *freq)
{
	size_t i, k;

	for (k = 0; k < nseg; k++) {
		const uint16_t *sym = seg[k].sym;

		for (i = 0; i < seg[k].n; i++) {
			if (sym[i] > 256 + SH5_ZCODE_MAX_MATCH)
				return -1;
			freq[vsym[sym[i]]]++;
		}
	}
	if (freq[EOB])
		return -1;
	freq[EOB] = 1;
	return 0;
}

size_t sh5_zrecode(const struct sh5_zsyms *seg, size_t nseg,
		   const uint32_t *kept, uint32_t adler, void *out,
		   size_t cap)
{
	unsigned char *p = out;
	uint32_t freq[NLIT] = { 0 }, fl;
	uint8_t llen[NLIT];
	struct bw o = { .p = out };
	unsigned nlit = NLIT;

	pthread_once(&once, build);
	if (kept) {
		memcpy(freq, kept, sizeof(freq));
		freq[EOB] = 1;
	} else if (count(seg, nseg, freq) < 0) {
		errno = EINVAL;
		return 0;
	}
	if (cap < 16) {
		errno = ENOSPC;
		return 0;
	}
	lengths(freq, NLIT, MAXBITS, llen);
	while (nlit > 257 && !llen[nlit - 1])
		nlit--;
	o.cap = cap - 8; /* room for the two checksums */
	put(&o, 0x0178, 16);    /* zlib header */
	put_head(&o, llen, nlit);
	put_symbols(&o, seg, nseg, llen);
	if (o.over) {
		errno = ENOSPC;
		return 0;
	}
	p[o.n++] = (unsigned char)(adler >> 24); /* zlib: big-endian */
	p[o.n++] = (unsigned char)(adler >> 16);
	p[o.n++] = (unsigned char)(adler >> 8);
	p[o.n++] = (unsigned char)adler;
	fl = sh5_fletcher32(p, o.n);
	p[o.n++] = (unsigned char)fl;
	p[o.n++] = (unsigned char)(fl >> 8);
	p[o.n++] = (unsigned char)(fl >> 16);
	p[o.n++] = (unsigned char)(fl >> 24);
	return o.n;
}
