/* checksum.c - see checksum.h */
#include "config.h"

#include <endian.h>
#include <string.h>

#include <zlib.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

#include "common/checksum.h"
#include "common/libdeflate.h"

/* libdeflate's CRC-32 (carry-less multiplication where the CPU has it)
 * is several times faster than zlib's; zlib where it is not installed. */
uint32_t sh5_crc32(uint32_t crc, const void *data, size_t len)
{
	const struct sh5_libdeflate *ldf = sh5_libdeflate();
	const unsigned char *p = data;

	if (ldf->crc32)
		return ldf->crc32(crc, data, len);
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

#ifdef __SSE2__
static uint64_t hsum32(__m128i v)
{
	uint32_t l[4];

	_mm_storeu_si128((__m128i *)(void *)l, v);
	return (uint64_t)l[0] + l[1] + l[2] + l[3];
}

/*
 * The sums of n (<= 360) big-endian words at p: *sum = S (all words) and
 * *wsum = W (word i, from 0, times n - i), which is also the sum of the n
 * prefix sums.  Eight words a 16-byte load, their high and low bytes in
 * 16-bit lanes multiplied and added pairwise into 32-bit lanes
 * (pmaddwd): per load its words' sum and their sum weighted 8 .. 1; over
 * the loads the running sum and the sum of the running sums before each
 * load (at most 45 loads: no lane overflows).
 */
static void block_sums(const unsigned char *p, uint32_t n, uint64_t *sum,
		       uint64_t *wsum)
{
	const __m128i lo8 = _mm_set1_epi16(0xff), c1 = _mm_set1_epi16(1);
	const __m128i c256 = _mm_set1_epi16(256);
	const __m128i cw = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
	const __m128i cw256 = _mm_slli_epi16(cw, 8);
	__m128i acc = _mm_setzero_si128(), pre = acc, wt = acc;
	uint64_t tot, ws;
	uint32_t g = n / 8, i;

	for (i = 0; i < g; i++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)
					    (p + 16 * i));
		__m128i h = _mm_and_si128(v, lo8), l = _mm_srli_epi16(v, 8);

		pre = _mm_add_epi32(pre, acc);
		acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(h, c256),
						       _mm_madd_epi16(l, c1)));
		wt = _mm_add_epi32(wt, _mm_add_epi32(_mm_madd_epi16(h, cw256),
						     _mm_madd_epi16(l, cw)));
	}
	tot = hsum32(acc);
	ws = 8 * hsum32(pre) + hsum32(wt);
	p += 16 * g;
	for (i = 0; i < n % 8; i++) {
		tot += (uint32_t)p[2 * i] << 8 | p[2 * i + 1];
		ws += tot;
	}
	*sum = tot;
	*wsum = ws;
}

/* The 8 signed 32-bit lanes of v added up. */
__attribute__((target("avx2")))
static int64_t hsum32s(__m256i v)
{
	int32_t l[8];
	int64_t t = 0;
	unsigned i;

	_mm256_storeu_si256((__m256i *)(void *)l, v);
	for (i = 0; i < 8; i++)
		t += l[i];
	return t;
}

/*
 * The same, 16 words a 32-byte load, on CPUs with AVX2: each load's
 * bytes swapped into its 16 big-endian words, their top bit flipped
 * (word - 32768 as a signed 16-bit value, which pmaddwd multiplies as
 * such), then added pairwise (pmaddwd by 1) and weighted 16 .. 1
 * (pmaddwd by the weights) into 32-bit lanes; the 32768s taken off are
 * added back once at the end (16 words and the weights' sum 136 a
 * load).  At most 160 loads (2560 words): no lane overflows (|running
 * sums| < 65536 x 160 x 159 / 2 < 2^31).
 */
__attribute__((target("avx2")))
static void block_sums_avx2(const unsigned char *p, uint32_t n,
			    uint64_t *sum, uint64_t *wsum)
{
	const __m256i swap = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8,
					      11, 10, 13, 12, 15, 14, 1, 0,
					      3, 2, 5, 4, 7, 6, 9, 8, 11, 10,
					      13, 12, 15, 14);
	const __m256i flip = _mm256_set1_epi16((short)0x8000);
	const __m256i c1 = _mm256_set1_epi16(1);
	const __m256i cw = _mm256_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9,
					     8, 7, 6, 5, 4, 3, 2, 1);
	__m256i acc = _mm256_setzero_si256(), pre = acc, wt = acc;
	uint64_t tot, ws, g = n / 16;
	uint32_t i;

	for (i = 0; i < g; i++) {
		__m256i v = _mm256_xor_si256(_mm256_shuffle_epi8(
				_mm256_loadu_si256((const __m256i *)
						   (const void *)(p + 32 * i)),
				swap), flip);

		pre = _mm256_add_epi32(pre, acc);
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(v, c1));
		wt = _mm256_add_epi32(wt, _mm256_madd_epi16(v, cw));
	}
	/* the running sums before each load: 524288 i more (i = 0 .. g-1) */
	tot = (uint64_t)(hsum32s(acc) + (int64_t)(524288 * g));
	ws = (uint64_t)(16 * (hsum32s(pre) + (int64_t)(262144 * g * (g - 1)))
			+ hsum32s(wt) + (int64_t)(32768 * 136 * g));
	p += 32 * g;
	for (i = 0; i < n % 16; i++) {
		tot += (uint32_t)p[2 * i] << 8 | p[2 * i + 1];
		ws += tot;
	}
	*sum = tot;
	*wsum = ws;
}
#define HAVE_AVX2_SUMS 1
#else
/* The 16-bit lanes of v added up; weighted 4, 3, 2, 1 in *w. */
static inline uint64_t lanes(uint64_t v, uint64_t *w)
{
	uint64_t l0 = v & 0xffff, l1 = v >> 16 & 0xffff, l2 = v >> 32 & 0xffff;
	uint64_t l3 = v >> 48;

	*w = 4 * l0 + 3 * l1 + 2 * l2 + l3;
	return l0 + l1 + l2 + l3;
}

/*
 * The sums of n big-endian words at p: *sum = S (all words) and *wsum =
 * W (word i, from 0, times n - i), which is also the sum of the n prefix
 * sums.  Four words a 64-bit load, split into their high and low bytes
 * in 16-bit lanes; per lane, the running sum and the sum of the running
 * sums before each load (16 loads at most: the lanes stay below 2^16).
 */
static void block_sums(const unsigned char *p, uint32_t n, uint64_t *sum,
		       uint64_t *wsum)
{
	const uint64_t m = 0x00ff00ff00ff00ffull;
	uint64_t tot = 0, ws = 0;
	uint32_t g = n / 4, i;

	while (g) {
		uint32_t k = g > 16 ? 16 : g;
		uint64_t ah = 0, al = 0, ph = 0, pl = 0, wh, wl, x;
		uint64_t sa, sp, sw;

		for (i = 0; i < k; i++) {
			memcpy(&x, p + 8 * i, 8);
			x = le64toh(x);
			ph += ah;
			pl += al;
			ah += x & m;
			al += x >> 8 & m;
		}
		sa = 256 * lanes(ah, &wh) + lanes(al, &wl);
		sw = 256 * wh + wl;
		sp = 256 * lanes(ph, &wh) + lanes(pl, &wl);
		/* per group: 4 x (sum before it) + 4, 3, 2, 1 x its words */
		ws += 4 * (sp + k * tot) + sw;
		tot += sa;
		p += 8 * k;
		g -= k;
	}
	for (i = 0; i < n % 4; i++) {
		tot += (uint32_t)p[2 * i] << 8 | p[2 * i + 1];
		ws += tot;
	}
	*sum = tot;
	*wsum = ws;
}

#endif

/*
 * HDF5's algorithm folds both sums every 360 words ((x & 0xffff) +
 * (x >> 16), so that the second cannot overflow 32 bits) and twice at
 * the end: a fold keeps a sum's value modulo 65535 and keeps it above 0
 * if it was, and the last two leave it at most 65535.  So each of HDF5's
 * sums is the true sum modulo 65535, written 65535 where that is 0 but
 * the true sum is not, and 0 only when every word is 0 (then both true
 * sums are 0).  The true sums are computed here in blocks (the block
 * sums' lanes bound their length: 2560 words with AVX2, 360 without),
 * combined modulo 65535: over a block of n words of sums S and W, a
 * becomes a + S and b becomes b + n a + W.
 */
#define FL_MOD 65535u

static void fl_words(uint64_t *pa, uint64_t *pb, uint64_t *raw,
		     const unsigned char *p, size_t words)
{
	uint64_t a = *pa, b = *pb;
	uint32_t step = 360;
#ifdef HAVE_AVX2_SUMS
	int avx2 = words >= 64 && __builtin_cpu_supports("avx2");

	if (avx2)
		step = 2560; /* 160 loads of 32 bytes: no lane overflows */
#endif

	while (words) {
		uint32_t n = words > step ? step : (uint32_t)words;
		uint64_t sum, wsum;

#ifdef HAVE_AVX2_SUMS
		if (avx2)
			block_sums_avx2(p, n, &sum, &wsum);
		else
#endif
			block_sums(p, n, &sum, &wsum);
		b = (b + n * a + wsum) % FL_MOD;
		a = (a + sum) % FL_MOD;
		*raw += sum;
		p += 2 * n;
		words -= n;
	}
	*pa = a;
	*pb = b;
}

uint32_t sh5_fletcher32(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t a = 0, b = 0, raw = 0;

	fl_words(&a, &b, &raw, p, len / 2);
	p += len / 2 * 2;
	if (len & 1) {
		a = (a + ((uint32_t)p[0] << 8)) % FL_MOD;
		b = (b + a) % FL_MOD;
		raw += p[0];
	}
	if (!raw)
		return 0;
	if (!a)
		a = FL_MOD;
	if (!b)
		b = FL_MOD;
	return (uint32_t)(b << 16 | a);
}

int sh5_fletcher32_ok(const void *chunk, size_t len)
{
	const unsigned char *p = chunk;
	uint32_t want, got, swapped;

	if (len < 4)
		return 0;
	p += len - 4;
	want = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
	got = sh5_fletcher32(chunk, len - 4);
	swapped = (got & 0xff) << 24 | (got & 0xff00) << 8 |
		  (got & 0xff0000) >> 8 | got >> 24;
	return want == got || want == swapped;
}
