/*
 * fmtfast.h - csvfmt.h's formatters for loops over many values (the
 * rows of a CSV): their common cases inline, the same output.
 */
#ifndef SH5_FMTFAST_H
#define SH5_FMTFAST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/csvfmt.h"
#include "common/digits.h"

/* sh5_fmt_double for the values sh5_fmt_double_fast leaves (fmtdouble.c) */
size_t sh5_fmt_double_rest(char *buf, double v);

static inline __attribute__((always_inline)) size_t
sh5_fmt_u64_fast(char *buf, uint64_t v)
{
	size_t n;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (v < 10000) {
		/* four digits, the leading zeros (the low bytes) shifted
		 * out; 0 keeps its last */
		uint32_t x = swar4((uint32_t)v), z = x - 0x30303030;
		unsigned lead = z ? (unsigned)__builtin_ctz(z) >> 3 : 3;

		x >>= 8 * lead;
		memcpy(buf, &x, 4);
		buf[4 - lead] = '\0';
		return 4 - lead;
	}
	if (v < 100000000) {
		/* the same with eight digits (v >= 10^4: at most 3 lead) */
		uint64_t y = swar8((uint32_t)v);
		unsigned lead8 = (unsigned)__builtin_ctzll(
			y - UINT64_C(0x3030303030303030)) >> 3;

		y >>= 8 * lead8;
		memcpy(buf, &y, 8);
		buf[8 - lead8] = '\0';
		return 8 - lead8;
	}
#endif
	n = ndigits(v);
	put_left(buf, v, n);
	buf[n] = '\0';
	return n;
}

/*
 * sh5_fmt_double_fast: sh5_fmt_double_ref's output by exact integer
 * arithmetic, for 2^-8 <= |v| < 2^19 (biased exponents SH5_FAST_EMIN..
 * SH5_FAST_EMAX) when the reference's fixed9 takes v (the common case:
 * up to 9 decimals); sh5_fmt_double_rest (fmtdouble.c) else.
 *
 * fixed9 takes the first k in 0..9 for which r = (long long)(x + 0.5),
 * x = a 10^k rounded, reads back as a: r 10^-k within a's rounding
 * interval.  Here a = m 2^-s (34 <= s <= 60) and x < 2^49: the interval
 * is a 10^k +- h, h = 10^k 2^-(s+1) < 1/8 (in units of 10^-k), and x is
 * within x 2^-53 < 1/8 of a 10^k; so r is the integer nearest a 10^k
 * whenever that one is inside the interval, and no r is when it is not:
 * fixed9 passes at k exactly when the distance of N = m 10^k to the
 * nearest multiple of 2^s is at most 10^k / 2 (below a: 10^k / 4 when m
 * is 2^52, the gap below a power of two being half; the bound itself
 * only when m is even, as the division rounds half to even).  With F = N
 * mod 2^s: 2 F <= 10^k (r = N >> s) or 2 (2^s - F) <= 10^k (r = (N >>
 * s) + 1).  No x reaches 2^53: the reference's early exit never happens.
 */
#define SH5_FAST_EMIN 1015 /* 2^-8 */
#define SH5_FAST_EMAX 1041 /* below 2^19 */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* put_point(buf, neg, g, 9) for g < 2^49: the integer part (below
 * 10^6), then the first decimal and the other eight by one swar8, their
 * trailing zeros counted in the word (the last digit in its top byte). */
static inline __attribute__((always_inline)) size_t
put_point9(char *buf, int neg, uint64_t g)
{
	uint64_t ip = g / 1000000000, fr = g - ip * 1000000000, x, z;
	uint32_t d0, rest, f4;
	char *q = buf;
	size_t n;

	*q = '-';
	q += neg;
	if (ip < 10) {
		*q++ = (char)('0' + ip);
	} else if (ip < 100) {
		memcpy(q, digits2 + ip * 2, 2);
		q += 2;
	} else {
		n = ndigits(ip);
		put_left(q, ip, n);
		q += n;
	}
	if (!fr) {
		*q = '\0';
		return (size_t)(q - buf);
	}
	f4 = (uint32_t)(fr / 100000);
	if (fr == (uint64_t)f4 * 100000) {
		/* at most 4 decimals (the common case): one swar4 */
		uint32_t y = swar4(f4), zy = y - 0x30303030;

		q[0] = '.';
		memcpy(q + 1, &y, 4);
		q += 5 - (size_t)(__builtin_clz(zy) >> 3);
		*q = '\0';
		return (size_t)(q - buf);
	}
	d0 = (uint32_t)(fr / 100000000);
	rest = (uint32_t)fr - d0 * 100000000;
	q[0] = '.';
	q[1] = (char)('0' + d0);
	x = swar8(rest);
	memcpy(q + 2, &x, 8);
	z = x - UINT64_C(0x3030303030303030);
	q += 2 + (z ? 8 - (size_t)(__builtin_clzll(z) >> 3) : 0);
	*q = '\0';
	return (size_t)(q - buf);
}

/* The one integer g that can lie in a's rounding interval at k (p10 =
 * 10^k, the interval's half width below 1/2 in units of 10^-k), a = m
 * 2^-s, 34 <= s <= 60, k <= 10: the integer nearest m 10^k 2^-s, in *g
 * if it lies there (1), else 0: the test that the comment above
 * sh5_fmt_double_fast explains (k = 9; fmtdouble.c's fixed10: k = 10). */
static inline __attribute__((always_inline)) int
sh5_fixed_nearest(uint64_t m, int s, uint64_t p10, uint64_t *g)
{
	unsigned __int128 n = (unsigned __int128)m * p10;
	uint64_t mask = (UINT64_C(1) << s) - 1, f = (uint64_t)n & mask;
	uint64_t t = p10 - (m & 1);

	*g = (uint64_t)(n >> s);
	if ((f << (m == (UINT64_C(1) << 52) ? 2 : 1)) > t) {
		if ((mask + 1 - f) * 2 > t)
			return 0;
		++*g;
	}
	return 1;
}

/* fixed9 by one test: at most one integer, g, lies in a's interval at
 * k = 9 (h < 1/8); an integer of the interval at a smaller k, times
 * 10^(9-k), is one at k = 9: g itself.  So fixed9 passes at some k iff
 * g is inside, first at the k of g's trailing zeros, and put_fixed of
 * g 10^(k-9) with k decimals writes what put_fixed(g, 9) writes. */
static inline __attribute__((always_inline)) size_t
sh5_fixed9(char *buf, double v, uint64_t bits)
{
	uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	uint64_t g;

	/* one put_point9 (inline: once, not twice) */
	if (!sh5_fixed_nearest(m, 1075 - (int)(bits >> 52), 1000000000, &g))
		return 0;
	return put_point9(buf, v < 0, g);
}

static inline __attribute__((always_inline)) size_t
sh5_fmt_double_fast(char *buf, double v)
{
	double a = fabs(v);
	uint64_t bits;
	unsigned e;
	size_t len;

	memcpy(&bits, &a, sizeof(bits));
	e = (unsigned)(bits >> 52);
	if (e - SH5_FAST_EMIN <= SH5_FAST_EMAX - SH5_FAST_EMIN &&
	    (len = sh5_fixed9(buf, v, bits)))
		return len;
	return sh5_fmt_double_rest(buf, v);
}
#else
static inline size_t sh5_fmt_double_fast(char *buf, double v)
{
	return sh5_fmt_double_rest(buf, v);
}
#endif


#endif /* SH5_FMTFAST_H */
