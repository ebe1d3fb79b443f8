/* zcode.c - zinc's constant Huffman code and its block header (zcode.h) */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "profile/zcode.h"

#define NLIT 286   /* literal/length symbols sent (HLIT 29) */
#define NSEQ (NLIT + 1) /* then one distance code length */

static struct sh5_zcode code;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The low len (1 .. 16) bits of c reversed. */
static uint32_t reverse(uint32_t c, unsigned len)
{
	c = (c & 0x5555u) << 1 | (c >> 1 & 0x5555u);
	c = (c & 0x3333u) << 2 | (c >> 2 & 0x3333u);
	c = (c & 0x0f0fu) << 4 | (c >> 4 & 0x0f0fu);
	c = (c & 0x00ffu) << 8 | (c >> 8 & 0x00ffu);
	return c >> (16 - len);
}

void sh5_zcode_canonical(const uint8_t *len, unsigned n, uint32_t *out)
{
	unsigned count[16] = { 0 }, next[16], i, c = 0;

	for (i = 0; i < n; i++)
		count[len[i]]++;
	count[0] = 0;
	for (i = 1; i < 16; i++) {
		c = (c + count[i - 1]) << 1;
		next[i] = c;
	}
	for (i = 0; i < n; i++)
		out[i] = len[i] ? reverse(next[len[i]]++, len[i]) : 0;
}

/* Huffman code lengths of n (<= 19) weights (0: unused); at least two
 * used.  At most n - 1 bits deep. */
static void huffman(const unsigned *w, unsigned n, uint8_t *len)
{
	unsigned long weight[2 * 19];
	int parent[2 * 19], alive[2 * 19];
	unsigned i, nodes = n, k;

	for (i = 0; i < n; i++) {
		weight[i] = w[i];
		alive[i] = w[i] > 0;
		parent[i] = -1;
	}
	for (;;) {
		int a = -1, b = -1;

		for (k = 0; k < nodes; k++) {
			if (!alive[k])
				continue;
			if (a < 0 || weight[k] < weight[a]) {
				b = a;
				a = (int)k;
			} else if (b < 0 || weight[k] < weight[b]) {
				b = (int)k;
			}
		}
		if (b < 0)
			break;
		weight[nodes] = weight[a] + weight[b];
		alive[nodes] = 1;
		parent[nodes] = -1;
		alive[a] = alive[b] = 0;
		parent[a] = parent[b] = (int)nodes++;
	}
	for (i = 0; i < n; i++) {
		int p = (int)i;

		len[i] = 0;
		if (!w[i])
			continue;
		while (parent[p] >= 0) {
			len[i]++;
			p = parent[p];
		}
	}
}

/* Append len bits to the header pieces. */
static void head_put(uint64_t bits, unsigned len)
{
	struct sh5_zcode *c = &code;

	if (!c->nhead || c->head_len[c->nhead - 1] + len > 58) {
		c->head[c->nhead] = 0;
		c->head_len[c->nhead++] = 0;
	}
	c->head[c->nhead - 1] |= bits << c->head_len[c->nhead - 1];
	c->head_len[c->nhead - 1] = (uint8_t)(c->head_len[c->nhead - 1] +
					      len);
}

/* The code lengths run-length coded (RFC 1951, 3.2.7): symbols 0-15 and
 * 16 (repeat the previous 3-6 times, 2 extra bits).  Returns the count. */
static unsigned rle(const uint8_t *len, uint8_t *sym, uint8_t *extra)
{
	unsigned i = 0, n = 0;

	while (i < NSEQ) {
		unsigned run = 1, k;

		while (i + run < NSEQ && len[i + run] == len[i])
			run++;
		sym[n] = len[i];
		extra[n++] = 0;
		for (k = run - 1; k >= 3; ) {
			unsigned take = k > 6 ? 6 : k;

			sym[n] = 16;
			extra[n++] = (uint8_t)(take - 3);
			k -= take;
		}
		for (; k; k--) {
			sym[n] = len[i];
			extra[n++] = 0;
		}
		i += run;
	}
	return n;
}

/* BFINAL, BTYPE 2, HLIT, HDIST, HCLEN, the code length code, the code
 * lengths. */
static void build_head(const uint8_t *len)
{
	static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
					   11, 4, 12, 3, 13, 2, 14, 1, 15 };
	uint8_t sym[NSEQ], extra[NSEQ], cl_len[19];
	unsigned w[19] = { 0 }, n = rle(len, sym, extra), i, hclen = 19;
	uint32_t cl_code[19];

	for (i = 0; i < n; i++)
		w[sym[i]]++;
	huffman(w, 19, cl_len);
	sh5_zcode_canonical(cl_len, 19, cl_code);
	while (hclen > 4 && !cl_len[order[hclen - 1]])
		hclen--;
	head_put(1 | 2 << 1, 3);
	head_put(NLIT - 257, 5);
	head_put(0, 5);         /* one distance code */
	head_put(hclen - 4, 4);
	for (i = 0; i < hclen; i++)
		head_put(cl_len[order[i]], 3);
	for (i = 0; i < n; i++) {
		head_put(cl_code[sym[i]], cl_len[sym[i]]);
		if (sym[i] == 16)
			head_put(extra[i], 2);
	}
}

static void build(void)
{
	static const uint16_t base[29] = {
		3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
		35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
	static const uint8_t ebits[29] = {
		0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
		3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
	uint8_t len[NSEQ];
	uint32_t c[NLIT];
	unsigned s, l, i;

	/* Kraft: 1/8 + 104/256 + 152/512 + 8/128 + 20/256 + 1/32 = 1 */
	for (s = 0; s < NLIT; s++)
		len[s] = s == 0 ? 3 : s <= 104 ? 8 : s <= 256 ? 9 :
			 s <= 264 ? 7 : s <= 284 ? 8 : 5;
	len[NLIT] = 1;          /* distance code 0 (distance 1) */
	sh5_zcode_canonical(len, NLIT, c);
	for (s = 0; s < 256; s++) {
		code.lit[s] = c[s];
		code.lit_len[s] = len[s];
	}
	code.eob = c[256];
	code.eob_len = len[256];
	for (l = 3; l <= SH5_ZCODE_MAX_MATCH; l++) {
		for (i = 28; base[i] > l; i--)
			;
		code.len_sym[l] = (uint16_t)(257 + i);
		code.len_extra[l] = (uint16_t)(l - base[i]);
		code.len_ebits[l] = ebits[i];
		/* then the distance code 0: one zero bit */
		code.match[l] = c[257 + i] | (uint32_t)(l - base[i]) <<
					     len[257 + i];
		code.match_len[l] = (uint8_t)(len[257 + i] + ebits[i] + 1);
	}
	build_head(len);
}

const struct sh5_zcode *sh5_zcode(void)
{
	pthread_once(&once, build);
	return &code;
}
