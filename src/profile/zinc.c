/* zinc.c - incremental Huffman deflate of a shuffled chunk (zinc.h) */
#include "config.h"

#include <endian.h>
#include <errno.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "profile/zcode.h"
#include "profile/zinc.h"
#include "profile/zrecode.h"

#define ADLER_MOD 65521u
#define MAX_MATCH SH5_ZCODE_MAX_MATCH
#define RUN_NONE 300 /* >= MAX_MATCH: never continued */
#define MAX_ROWS ((size_t)1 << 24) /* the plane sums stay below 2^64 */
#define MATCH(len) (256 + (len)) /* a match's symbol value (zrecode.h) */
/* symbols of a plane's open run and zero padding, at most */
#define TAIL_MAX(rows) ((rows) / MAX_MATCH + 8)
/* symbols a plane keeps in the coder's pool before it needs its own
 * array (one allocation for all planes: sample planes have few) */
#define POOL 16

/* A bit string, deflate order (least significant bit first). */
struct bits {
	uint64_t *w;       /* whole words */
	size_t nw, cap;
	uint64_t acc;      /* then fill (< 64) more bits */
	unsigned fill;
	uint16_t err;      /* a word could not be stored (out of memory) */
	uint16_t own;      /* sym is malloc'ed, not in the coder's pool */
	/* a plane's: the same symbols as values (zrecode.h), for the
	 * re-coding: no decoding of the bits */
	uint16_t *sym;
	size_t ns, scap;
};

/*
 * Per byte plane j: its symbols so far (b[j]), its last byte (v[j]), the
 * repeats of it after the coded bytes (run[j], RUN_NONE before the first
 * byte).  Arrays, so that a record updates 16 planes at a time.
 */
struct sh5_zinc {
	size_t size, rows, n; /* record size, chunk rows, rows added */
	struct bits *b;
	uint8_t *v;
	uint16_t *run;
	/* Adler-32's terms of the chunk (zinc.c adler_sums()), modulo
	 * 65521: the planes' byte sums added up, the sum of that total
	 * after each record, the byte sums weighted S - 1 - j */
	uint64_t t1, t2, t3;
	struct bits out;
	/* the zero padding of a plane that does not end with a zero: a
	 * literal 0 and a run (a few pieces of < 64 bits) */
	uint64_t *zcode;
	uint8_t *zlen;
	size_t zpieces;
	/* the last run of zeros after a zero coded (zrun repeats), the
	 * same way */
	uint64_t *zrcode;
	uint8_t *zrlen;
	size_t zrpieces, zrun;
	/* the re-coding's: each plane's open run and zero padding as
	 * symbol values (TAIL_MAX a plane), the segments of symbols */
	uint16_t *tail;
	struct sh5_zsyms *seg;
	/* the literal/length counts of the planes' kept symbols */
	uint32_t freq[SH5_ZCODE_NLIT];
};

/* The code (profile/zcode.h), set by the first sh5_zinc_create(). */
static const struct sh5_zcode *zc;
/* its literals: code | length << 24 */
static uint32_t litc[256];
static pthread_once_t zc_once = PTHREAD_ONCE_INIT;

#ifdef __SSE2__
/* put_words()'s loop from word 1, four words at a time; returns the next
 * word. */
__attribute__((target("avx2")))
static size_t shift_words4(uint64_t *d, const uint64_t *w, size_t n,
			   unsigned f)
{
	const __m128i sl = _mm_cvtsi32_si128((int)f);
	const __m128i sr = _mm_cvtsi32_si128((int)(64 - f));
	size_t i;

	for (i = 1; i + 4 <= n; i += 4) {
		__m256i c = _mm256_loadu_si256((const __m256i *)
					       (const void *)(w + i));
		__m256i p = _mm256_loadu_si256((const __m256i *)
					       (const void *)(w + i - 1));

		_mm256_storeu_si256((__m256i *)(void *)(d + i),
				    _mm256_or_si256(_mm256_sll_epi64(c, sl),
						    _mm256_srl_epi64(p, sr)));
	}
	return i;
}

static size_t (*shift_words_avx2)(uint64_t *, const uint64_t *, size_t,
				  unsigned);
#endif

static void zc_init(void)
{
	unsigned x;

	zc = sh5_zcode();
	for (x = 0; x < 256; x++)
		litc[x] = zc->lit[x] | (uint32_t)zc->lit_len[x] << 24;
#ifdef __SSE2__
	if (__builtin_cpu_supports("avx2"))
		shift_words_avx2 = shift_words4;
#endif
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

/* A plane's symbols (at most one a byte: rows) out of the pool: room for
 * a quarter of the chunk, then all of it (two reallocations at most). */
static int syms_grow(struct bits *b, size_t rows)
{
	size_t nc = 2 * b->scap; /* (past rows only if they were wrong) */

	if (b->own && nc < rows)
		nc = rows;
	else if (!b->own && nc < rows / 4)
		nc = rows / 4;
	uint16_t *ns = b->own ? realloc(b->sym, nc * sizeof(*ns)) :
				malloc(nc * sizeof(*ns));

	if (!ns)
		return -1;
	if (!b->own)
		memcpy(ns, b->sym, b->ns * sizeof(*ns));
	b->sym = ns;
	b->scap = nc;
	b->own = 1;
	return 0;
}

/* Keep symbol value s (literal/length symbol ls) of a plane. */
static inline void keep(struct sh5_zinc *z, struct bits *b, unsigned s,
			unsigned ls)
{
	z->freq[ls]++;
	if (b->ns < b->scap || syms_grow(b, z->rows) == 0)
		b->sym[b->ns++] = (uint16_t)s;
	else
		b->err = 1;
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

/* Append n whole words (room reserved): output word i is w[i] shifted
 * up by the fill, or'ed with the top of w[i - 1]. */
static void put_words(struct bits *o, const uint64_t *w, size_t n)
{
	unsigned f = o->fill;
	uint64_t *d = o->w + o->nw;
	size_t i;

	o->nw += n;
	if (!n)
		return;
	if (!f) {
		memcpy(d, w, n * sizeof(*w));
		return;
	}
	d[0] = o->acc | w[0] << f;
	i = 1;
#ifdef __SSE2__
	if (shift_words_avx2) {
		i = shift_words_avx2(d, w, n, f);
	} else {
		const __m128i sl = _mm_cvtsi32_si128((int)f);
		const __m128i sr = _mm_cvtsi32_si128((int)(64 - f));

		for (; i + 2 <= n; i += 2) {
			__m128i c = _mm_loadu_si128((const __m128i *)
						    (const void *)(w + i));
			__m128i p = _mm_loadu_si128((const __m128i *)
						    (const void *)(w + i - 1));

			_mm_storeu_si128((__m128i *)(void *)(d + i),
					 _mm_or_si128(_mm_sll_epi64(c, sl),
						      _mm_srl_epi64(p, sr)));
		}
	}
#endif
	for (; i < n; i++)
		d[i] = w[i] << f | w[i - 1] >> (64 - f);
	o->acc = w[n - 1] >> (64 - f);
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

static void plane_reset(struct sh5_zinc *z, size_t j)
{
	z->b[j].nw = 0;
	z->b[j].acc = 0;
	z->b[j].fill = 0;
	z->b[j].err = 0;
	z->b[j].ns = 0;
	z->v[j] = 0;
	z->run[j] = RUN_NONE;
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
	    !(z->b = calloc(rec_size, sizeof(*z->b))) ||
	    !(z->v = malloc(rec_size)) ||
	    !(z->run = malloc(rec_size * sizeof(*z->run))) ||
	    !(z->zcode = malloc((rows / MAX_MATCH + 4) * sizeof(uint64_t))) ||
	    !(z->zlen = malloc(rows / MAX_MATCH + 4)) ||
	    !(z->zrcode = malloc((rows / MAX_MATCH + 4) * sizeof(uint64_t))) ||
	    !(z->zrlen = malloc(rows / MAX_MATCH + 4)) ||
	    !(z->tail = malloc(rec_size * (TAIL_MAX(rows) + POOL) *
			       sizeof(*z->tail))) ||
	    !(z->seg = malloc(2 * rec_size * sizeof(*z->seg)))) {
		sh5_zinc_destroy(z);
		errno = ENOMEM;
		return NULL;
	}
	z->size = rec_size;
	z->rows = rows;
	z->zrun = SIZE_MAX; /* none coded yet */
	for (j = 0; j < rec_size; j++) {
		/* the pool after the tails */
		z->b[j].sym = z->tail + rec_size * TAIL_MAX(rows) + j * POOL;
		z->b[j].scap = POOL;
		plane_reset(z, j);
	}
	return z;
}

/* Byte x of plane j does not continue its open run, or the run reached
 * the longest match.  The plane's out-of-memory flag. */
static __attribute__((noinline)) void plane_break_run(struct sh5_zinc *z,
						      size_t j, unsigned x)
{
	struct bits *b = &z->b[j];
	unsigned run = z->run[j], v = z->v[j];

	if (run != RUN_NONE) {
		if (x == v) { /* run == MAX_MATCH */
			put(b, zc->match[MAX_MATCH], zc->match_len[MAX_MATCH]);
			keep(z, b, MATCH(MAX_MATCH), zc->len_sym[MAX_MATCH]);
			z->run[j] = 1;
			return;
		}
		if (run >= 3) {
			put(b, zc->match[run], zc->match_len[run]);
			keep(z, b, MATCH(run), zc->len_sym[run]);
		} else {
			for (; run; run--) {
				put(b, zc->lit[v], zc->lit_len[v]);
				keep(z, b, v, v);
			}
		}
	}
	put(b, zc->lit[x], zc->lit_len[x]);
	keep(z, b, x, x);
	z->run[j] = 0;
}

/* The same, the common case inline: a literal after a literal. */
static inline void plane_break(struct sh5_zinc *z, size_t j, unsigned x)
{
	struct bits *b = &z->b[j];

	uint32_t c = litc[x];

	if (z->run[j]) {
		plane_break_run(z, j, x);
		return;
	}
	put(b, c & 0xffffff, c >> 24);
	keep(z, b, x, x);
}

#ifdef __SSE2__
/* Planes j .. j + 15: sums, open runs continued (a byte equal to the last
 * one, a run shorter than the longest match); the others broken. */
static void add16(struct sh5_zinc *z, size_t j, const unsigned char *rec)
{
	const __m128i lim = _mm_set1_epi16(MAX_MATCH);
	__m128i r = _mm_loadu_si128((const __m128i *)(const void *)(rec + j));
	__m128i eq = _mm_cmpeq_epi8(r, _mm_loadu_si128(
				    (const __m128i *)(const void *)(z->v + j)));
	__m128i *run = (__m128i *)(void *)(z->run + j), r0, r1, ok0, ok1;
	unsigned bad, k;

	r0 = _mm_loadu_si128(run);
	r1 = _mm_loadu_si128(run + 1);
	ok0 = _mm_and_si128(_mm_unpacklo_epi8(eq, eq),
			    _mm_cmplt_epi16(r0, lim));
	ok1 = _mm_and_si128(_mm_unpackhi_epi8(eq, eq),
			    _mm_cmplt_epi16(r1, lim));
	_mm_storeu_si128(run, _mm_sub_epi16(r0, ok0));
	_mm_storeu_si128(run + 1, _mm_sub_epi16(r1, ok1));
	bad = ~(unsigned)_mm_movemask_epi8(_mm_packs_epi16(ok0, ok1)) & 0xffff;
	while (bad) {
		k = (unsigned)__builtin_ctz(bad);
		bad &= bad - 1;
		plane_break(z, j + k, rec[j + k]);
	}
	_mm_storeu_si128((__m128i *)(void *)(z->v + j), r);
}

/* The same for planes j .. j + 7. */
static void add8(struct sh5_zinc *z, size_t j, const unsigned char *rec)
{
	const __m128i lim = _mm_set1_epi16(MAX_MATCH);
	const __m128i zero = _mm_setzero_si128();
	__m128i r = _mm_loadl_epi64((const __m128i *)(const void *)(rec + j));
	__m128i eq = _mm_cmpeq_epi8(r, _mm_loadl_epi64(
				    (const __m128i *)(const void *)(z->v + j)));
	__m128i *run = (__m128i *)(void *)(z->run + j), r0, ok;
	unsigned bad, k;

	r0 = _mm_loadu_si128(run);
	ok = _mm_and_si128(_mm_unpacklo_epi8(eq, eq), _mm_cmplt_epi16(r0, lim));
	_mm_storeu_si128(run, _mm_sub_epi16(r0, ok));
	bad = ~(unsigned)_mm_movemask_epi8(_mm_packs_epi16(ok, zero)) & 0xff;
	while (bad) {
		k = (unsigned)__builtin_ctz(bad);
		bad &= bad - 1;
		plane_break(z, j + k, rec[j + k]);
	}
	_mm_storel_epi64((__m128i *)(void *)(z->v + j), r);
}
#endif

/* The byte sum of a record of s bytes (*bs) and the sum of its bytes
 * weighted by their index (*js). */
static void rec_sums(const unsigned char *rec, size_t s, uint64_t *bs,
		     uint64_t *js)
{
	uint64_t b = 0, w = 0;
	size_t j = 0;
#ifdef __SSE2__
	const __m128i zero = _mm_setzero_si128();
	const __m128i i0 = _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7);
	const __m128i i8 = _mm_setr_epi16(8, 9, 10, 11, 12, 13, 14, 15);
	__m128i ab = zero, aw = zero, aj = zero, j0 = zero;
	const __m128i step = _mm_set_epi32(0, 16, 0, 16);
	uint64_t l[2];
	uint32_t m[4];

	/* per 16 bytes from j0: their sum (two halves, psadbw), j0 times
	 * it, and the bytes weighted 0 .. 15; the lanes stay below 2^32
	 * (s <= 65536) */
	for (; j + 16 <= s; j += 16) {
		__m128i r = _mm_loadu_si128((const __m128i *)(const void *)
					    (rec + j));
		__m128i sad = _mm_sad_epu8(r, zero);

		ab = _mm_add_epi64(ab, sad);
		aj = _mm_add_epi64(aj, _mm_mul_epu32(sad, j0));
		aw = _mm_add_epi32(aw, _mm_add_epi32(
			_mm_madd_epi16(_mm_unpacklo_epi8(r, zero), i0),
			_mm_madd_epi16(_mm_unpackhi_epi8(r, zero), i8)));
		j0 = _mm_add_epi32(j0, step);
	}
	_mm_storeu_si128((__m128i *)(void *)l, ab);
	b = l[0] + l[1];
	_mm_storeu_si128((__m128i *)(void *)l, aj);
	w = l[0] + l[1];
	_mm_storeu_si128((__m128i *)(void *)m, aw);
	w += (uint64_t)m[0] + m[1] + m[2] + m[3];
#endif
	for (; j < s; j++) {
		b += rec[j];
		w += (uint64_t)j * rec[j];
	}
	*bs = b;
	*js = w;
}

int sh5_zinc_add(struct sh5_zinc *z, const unsigned char *rec)
{
	uint64_t bs, js;
	size_t j = 0;

	if (z->n >= z->rows) {
		errno = EINVAL;
		return -1;
	}
#ifdef __SSE2__
	for (; j + 16 <= z->size; j += 16)
		add16(z, j, rec);
	if (j + 8 <= z->size) {
		add8(z, j, rec);
		j += 8;
	}
#endif
	for (; j < z->size; j++) {
		unsigned x = rec[j];

		if (x == z->v[j] && z->run[j] < MAX_MATCH)
			z->run[j]++;
		else
			plane_break(z, j, x);
		z->v[j] = (uint8_t)x;
	}
	rec_sums(rec, z->size, &bs, &js);
	z->t1 = (z->t1 + bs) % ADLER_MOD;
	z->t2 = (z->t2 + z->t1) % ADLER_MOD;
	z->t3 = (z->t3 + (z->size - 1) * bs - js) % ADLER_MOD;
	z->n++;
	return 0;
}

size_t sh5_zinc_rows(const struct sh5_zinc *z)
{
	return z->n;
}

/* Room in z->out for the whole stream; -1 if out of memory. */
static size_t bound_words(const struct sh5_zinc *z)
{
	size_t j, words = 4 + SH5_ZCODE_HEAD_PIECES;

	for (j = 0; j < z->size; j++)
		words += z->b[j].nw + 3;
	words += z->size * (z->rows / (4 * MAX_MATCH) + 1);
	return words + 2; /* the last bits, the trailers */
}

size_t sh5_zinc_bound(const struct sh5_zinc *z)
{
	return bound_words(z) * sizeof(uint64_t);
}

static int reserve(struct sh5_zinc *z)
{
	size_t need = bound_words(z);

	while (z->out.cap < need)
		if (bits_grow(&z->out) < 0)
			return -1;
	z->out.nw = 0;
	z->out.acc = 0;
	z->out.fill = 0;
	return 0;
}

/* The codes of a literal 0 (if lead), then r repeats of 0 after a 0 (as
 * put_run() codes them), in pieces of up to 58 bits into code/len; their
 * count. */
static size_t zero_pieces(uint64_t *pcode, uint8_t *plen, int lead,
			  size_t r)
{
	uint64_t code = lead ? zc->lit[0] : 0;
	unsigned len = lead ? zc->lit_len[0] : 0;
	size_t n = 0;

	while (r) {
		size_t take = r >= MAX_MATCH ? MAX_MATCH : r >= 3 ? r : 1;
		uint64_t c = take > 1 ? zc->match[take] : zc->lit[0];
		unsigned l = take > 1 ? zc->match_len[take] : zc->lit_len[0];

		if (len + l > 58) {
			pcode[n] = code;
			plen[n++] = (uint8_t)len;
			code = 0;
			len = 0;
		}
		code |= c << len;
		len += l;
		r -= take;
	}
	pcode[n] = code;
	plen[n++] = (uint8_t)len;
	return n;
}

/* The zero padding of a plane not ending with 0 (a literal 0, then a
 * run of zeros): the same for every such plane, coded once per chunk
 * written. */
static void zero_tail(struct sh5_zinc *z, size_t zeros)
{
	z->zpieces = zeros ? zero_pieces(z->zcode, z->zlen, 1, zeros - 1) : 0;
}

/* Code plane j, then its zero padding. */
static void put_plane(struct sh5_zinc *z, size_t j, size_t zeros)
{
	struct bits *o = &z->out;
	const struct bits *b = &z->b[j];
	unsigned run = z->run[j], v = z->v[j];
	size_t i;

	put_words(o, b->w, b->nw);
	put(o, b->acc, b->fill);
	if (run != RUN_NONE) {
		if (v == 0) { /* mostly whole zero planes: one length */
			if (run + zeros != z->zrun) {
				z->zrun = run + zeros;
				z->zrpieces = zero_pieces(z->zrcode, z->zrlen,
							  0, z->zrun);
			}
			for (i = 0; i < z->zrpieces; i++)
				put(o, z->zrcode[i], z->zrlen[i]);
			return;
		}
		if (run)
			put_run(o, v, run);
	}
	for (i = 0; i < z->zpieces; i++)
		put(o, z->zcode[i], z->zlen[i]);
}

/*
 * The Adler-32 sums of the whole shuffled chunk.  Plane j's own over its
 * N bytes: a_j = 1 + sa[j], s_j = n + ss[j] + zeros a_j (a zero adds a
 * to s).  After the planes before it (zlib's adler32_combine): A += a_j
 * - 1, B += s_j + N (A - 1).  Summed over the planes: A = 1 + sum sa[j],
 * B = S n + sum ss[j] + zeros (S + sum sa[j]) + N sum (S - 1 - j) sa[j]
 * (each sa[k] is in the A - 1 of the S - 1 - k planes after it), where
 * sa[j] is plane j's byte sum and ss[j] the sum of its running byte
 * sums: the three sums over the planes are kept per record (t1, t2, t3),
 * from the record's byte sum and its bytes weighted by their index.
 */
static void adler_sums(const struct sh5_zinc *z, uint64_t *pa, uint64_t *pb)
{
	uint64_t S = z->size, asum = z->t1;
	uint64_t rows = z->rows % ADLER_MOD;
	uint64_t zeros = (z->rows - z->n) % ADLER_MOD;

	*pa = (1 + asum) % ADLER_MOD;
	*pb = (S % ADLER_MOD * (z->n % ADLER_MOD) + z->t2 +
	       zeros * ((S + asum) % ADLER_MOD) +
	       rows * z->t3) % ADLER_MOD;
}

const void *sh5_zinc_chunk(struct sh5_zinc *z, size_t *len)
{
	struct bits *o = &z->out;
	uint64_t sa, sb;
	uint32_t adler, fl;
	unsigned char *c;
	size_t j, n;
	int err = 0;

	if (reserve(z) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	zero_tail(z, z->rows - z->n);
	put(o, 0x0178, 16);     /* zlib header: deflate, 32 KiB window */
	for (j = 0; j < zc->nhead; j++) /* the block header and code */
		put(o, zc->head[j], zc->head_len[j]);
	for (j = 0; j < z->size; j++) {
		err |= z->b[j].err; /* a record's symbols not all kept */
		put_plane(z, j, z->rows - z->n);
	}
	if (err) {
		errno = ENOMEM;
		return NULL;
	}
	adler_sums(z, &sa, &sb);
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

/* The symbol values of put_run(v, r) (r repeats of v after a v) into t;
 * their count. */
static size_t run_syms(uint16_t *t, unsigned v, size_t r)
{
	size_t k = 0;

	for (; r >= MAX_MATCH; r -= MAX_MATCH)
		t[k++] = MATCH(MAX_MATCH);
	if (r >= 3) {
		t[k++] = (uint16_t)MATCH(r);
		return k;
	}
	while (r--)
		t[k++] = (uint16_t)v;
	return k;
}

/* Plane j's open run and its zero padding, as put_plane() codes them,
 * into t (TAIL_MAX); their count. */
static size_t tail_syms(const struct sh5_zinc *z, size_t j, size_t zeros,
			uint16_t *t)
{
	unsigned run = z->run[j], v = z->v[j];
	size_t k = 0;

	if (run != RUN_NONE) {
		if (v == 0)
			return run_syms(t, 0, run + zeros);
		if (run)
			k = run_syms(t, v, run);
	}
	if (zeros) {
		t[k++] = 0;
		k += run_syms(t + k, 0, zeros - 1);
	}
	return k;
}

size_t sh5_zinc_recode(struct sh5_zinc *z, void *out, size_t cap)
{
	size_t j, zeros = z->rows - z->n;
	uint16_t *t = z->tail;
	uint32_t freq[SH5_ZCODE_NLIT];
	uint64_t sa, sb, bits = 16 + zc->eob_len; /* zinc's form's */
	size_t i;

	for (i = 0; i < zc->nhead; i++)
		bits += zc->head_len[i];
	memcpy(freq, z->freq, sizeof(freq));
	for (j = 0; j < z->size; j++) {
		struct sh5_zsyms *g = &z->seg[2 * j];

		if (z->b[j].err) {
			errno = ENOMEM;
			return 0;
		}
		g[0].sym = z->b[j].sym;
		g[0].n = z->b[j].ns;
		g[1].sym = t;
		g[1].n = tail_syms(z, j, zeros, t);
		bits += 64 * z->b[j].nw + z->b[j].fill;
		for (i = 0; i < g[1].n; i++) {
			unsigned v = t[i];

			freq[v < 256 ? v : zc->len_sym[v - 256]]++;
			bits += v < 256 ? zc->lit_len[v] : zc->match_len[v - 256];
		}
		t += g[1].n;
	}
	/* shorter than zinc's form (its two checksums included), or not */
	if (cap >= (bits + 7) / 8 + 8)
		cap = (size_t)(bits + 7) / 8 + 7;
	adler_sums(z, &sa, &sb);
	return sh5_zrecode(z->seg, 2 * z->size, freq,
			   (uint32_t)(sb << 16 | sa), out, cap);
}

void sh5_zinc_reset(struct sh5_zinc *z)
{
	size_t j;

	for (j = 0; j < z->size; j++)
		plane_reset(z, j);
	z->n = 0;
	z->t1 = z->t2 = z->t3 = 0;
	memset(z->freq, 0, sizeof(z->freq));
}

void sh5_zinc_destroy(struct sh5_zinc *z)
{
	size_t j;

	if (!z)
		return;
	if (z->b)
		for (j = 0; j < z->size; j++) {
			free(z->b[j].w);
			if (z->b[j].own)
				free(z->b[j].sym);
		}
	free(z->b);
	free(z->v);
	free(z->run);
	free(z->out.w);
	free(z->zcode);
	free(z->zlen);
	free(z->zrcode);
	free(z->zrlen);
	free(z->tail);
	free(z->seg);
	free(z);
}
