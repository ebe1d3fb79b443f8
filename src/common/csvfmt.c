/* csvfmt.c - see csvfmt.h */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/csvfmt.h"

static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

static const uint64_t pow10u[20] = { 1ULL, 10ULL, 100ULL, 1000ULL,
	10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
	1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL,
	10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
	10000000000000000000ULL };

/* Decimal digits of v (1 for 0): log10 from the bit length (1233/4096
 * is just above log10(2)), corrected by one comparison. */
static inline __attribute__((always_inline)) size_t
ndigits(uint64_t v)
{
	unsigned t;

	if (!v)
		return 1;
	t = ((64u - (unsigned)__builtin_clzll(v)) * 1233u) >> 12;
	return t - (v < pow10u[t]) + 1;
}

/* Write exactly n digits of v < 10^n (with leading zeros) ending before
 * end.  Eight digits at a time with one 64-bit division, the rest in
 * 32-bit arithmetic (cheaper divisions by constants). */
static inline __attribute__((always_inline, unused)) void
put_digits(char *end, uint64_t v, size_t n)
{
	uint32_t w;

	while (n > 8) {
		uint64_t q = v / 100000000;
		uint32_t r = (uint32_t)(v - q * 100000000);
		uint32_t hi = r / 10000, lo = r - hi * 10000;
		unsigned a = lo / 100, b = lo - a * 100;
		unsigned c = hi / 100, d = hi - c * 100;

		end -= 8;
		memcpy(end + 6, digits2 + b * 2, 2);
		memcpy(end + 4, digits2 + a * 2, 2);
		memcpy(end + 2, digits2 + d * 2, 2);
		memcpy(end, digits2 + c * 2, 2);
		v = q;
		n -= 8;
	}
	w = (uint32_t)v;
	while (n >= 4) {
		uint32_t q = w / 10000, r = w - q * 10000;
		unsigned a = r / 100, b = r - a * 100;

		end -= 4;
		memcpy(end + 2, digits2 + b * 2, 2);
		memcpy(end, digits2 + a * 2, 2);
		w = q;
		n -= 4;
	}
	if (n >= 2) {
		uint32_t q = w / 100;

		end -= 2;
		memcpy(end, digits2 + (w - q * 100) * 2, 2);
		w = q;
		n -= 2;
	}
	if (n)
		*--end = (char)('0' + w);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The 8 digits of v < 10^8 as ASCII, the first in the lowest byte: both
 * halves of four digits side by side in one word, then two digits, then
 * one per lane, each split by multiplying with a reciprocal (exact in
 * these ranges: x 10486 >> 20 is x / 100 below 43699, x 103 >> 10 is
 * x / 10 below 179). */
static inline uint64_t swar8(uint32_t v)
{
	uint64_t hi = v / 10000, lo = v - hi * 10000;
	uint64_t x = hi | (lo << 32), t;

	t = ((x * 10486) >> 20) & UINT64_C(0x0000007F0000007F);
	x = ((x - t * 100) << 16) | t;
	t = ((x * 103) >> 10) & UINT64_C(0x000F000F000F000F);
	x = ((x - t * 10) << 8) | t;
	return x | UINT64_C(0x3030303030303030);
}

/* Exactly n digits of v < 10^n (1 <= n <= 20) from p on, left to right;
 * may write junk up to p + 8 beyond them (overwritten by what follows:
 * callers' buffers leave that room). */
static inline __attribute__((always_inline)) void put_left(char *p,
							 uint64_t v, size_t n)
{
	uint64_t x;

	if (n > 16) {
		uint64_t top = v / UINT64_C(10000000000000000);

		x = swar8((uint32_t)top) >> (8 * (24 - n));
		memcpy(p, &x, 8);
		p += n - 16;
		v -= top * UINT64_C(10000000000000000);
		n = 16;
	}
	if (n > 8) {
		uint64_t hi = v / 100000000;

		x = swar8((uint32_t)hi) >> (8 * (16 - n));
		memcpy(p, &x, 8);
		x = swar8((uint32_t)(v - hi * 100000000));
		memcpy(p + n - 8, &x, 8);
		return;
	}
	x = swar8((uint32_t)v) >> (8 * (8 - n));
	memcpy(p, &x, 8);
}
#else
static inline void put_left(char *p, uint64_t v, size_t n)
{
	put_digits(p + n, v, n);
}
#endif

size_t sh5_fmt_u64(char *buf, uint64_t v)
{
	size_t n = ndigits(v);

	put_left(buf, v, n);
	buf[n] = '\0';
	return n;
}

size_t sh5_fmt_i64(char *buf, int64_t v)
{
	if (v < 0) {
		buf[0] = '-';
		return 1 + sh5_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
	}
	return sh5_fmt_u64(buf, (uint64_t)v);
}

static const double pow10tab[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
	1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
	1e20, 1e21, 1e22 };

/* Digits of d with a decimal point p digits from the right, trailing
 * fraction zeros dropped.  The digits are written in place (no
 * intermediate string): this runs for every double of a CSV export. */
static size_t put_fixed(char *buf, int neg, uint64_t d, int p)
{
	size_t n, pos = 0, intlen, i;

	while (p > 0 && d && d % 10 == 0) {
		d /= 10;
		p--;
	}
	n = ndigits(d);
	if (neg)
		buf[pos++] = '-';
	if (p <= 0) {
		put_left(buf + pos, d, n);
		pos += n;
	} else if ((size_t)p >= n) {
		buf[pos++] = '0';
		buf[pos++] = '.';
		while ((size_t)p > n) {
			buf[pos++] = '0';
			p--;
		}
		put_left(buf + pos, d, n);
		pos += n;
	} else {
		/* All n digits one place to the right, then the integer
		 * part back one place and the point between: no division
		 * by a variable power of ten. */
		char *q = buf + pos;

		intlen = n - (size_t)p;
		put_left(q + 1, d, n);
		for (i = 0; i < intlen; i++) { /* a few bytes: no call */
			q[i] = q[i + 1];
			__asm__("" : : : "memory"); /* (not a memmove) */
		}
		q[intlen] = '.';
		pos += n + 1;
	}
	buf[pos] = '\0';
	return pos;
}

/* round(a * 10^p) exactly, for a = m * 2^-s (m < 2^53, s <= 100,
 * 10^p < 2^74): round half to even. */
static unsigned __int128 scaled_round(uint64_t m, int s, int p)
{
	unsigned __int128 t, n, d, rem, half;

	t = p < 20 ? pow10u[p] : (unsigned __int128)pow10u[19] * pow10u[p - 19];
	n = (unsigned __int128)m * t;
	if (s <= 0)
		return n << -s;
	if (s >= 127)
		return 0;
	d = n >> s;
	rem = n - (d << s);
	half = (unsigned __int128)1 << (s - 1);
	if (rem > half || (rem == half && (d & 1)))
		d++;
	return d;
}

/* One k of fixed9: x = a 10^k, r = (long long)(x + 0.5), then r / 10^k
 * must round to a.  The length written; 0 no; -1 no, nor any larger k
 * (x >= 2^53). */
static long fixed_k(char *buf, double v, double a, size_t k)
{
	double x = a * pow10tab[k];
	unsigned long long r;

	if (x >= 9007199254740992.0) /* 2^53 */
		return -1;
	r = (unsigned long long)(long long)(x + 0.5);
	/* If r / 10^k rounds to a, then |x - r| <= x 2^-52 (1 + 2^-52):
	 * further away, skip the division, it would fail. */
	if (fabs(x - (double)r) > x * 0x1p-50)
		return 0;
	if ((double)r / pow10tab[k] == a)
		return (long)put_fixed(buf, v < 0, r, (int)k);
	return 0;
}

/* Slack of the fraction test below, in units of 2^-s: 16 10^k + 1. */
static const uint64_t frac_slack[10] = { 17, 161, 1601, 16001, 160001,
	1600001, 16000001, 160000001, 1600000001, 16000000001 };

/* Up to 9 decimals with a 53-bit integer, when that reads back exactly:
 * the length written, or 0.  The check is exact, as both operands are
 * exact doubles and division rounds correctly, like strtod.  Worked on
 * a = |v|: rounding is symmetric, so x, r and the check are those of v
 * with the sign dropped.
 *
 * Most k fail fixed_k's first test (x near an integer); a cheaper test
 * that lets through everything that could pass skips them.  With a = m
 * 2^-s exactly, the fraction of a 10^k is F = m 10^k mod 2^s (units of
 * 2^-s), kept by F = 10 F mod 2^s (s <= 60: no overflow).  Passing
 * needs |x - r| <= x 2^-50, and |a 10^k - x| <= x 2^-53, so the
 * distance of F to an integer is below m 10^k 2^-49 < 16 10^k units. */
static size_t fixed9(char *buf, double v, double a)
{
	uint64_t bits, m, mask, f;
	int s;
	size_t k;
	long len;

	memcpy(&bits, &a, sizeof(bits));
	s = 1075 - (int)(bits >> 52);
	m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	if (a == 0 || s > 60 || s < 1)
		s = 0; /* no skipping */
	mask = s ? (UINT64_C(1) << s) - 1 : 0;
	f = m & mask;
#pragma GCC unroll 10
	for (k = 0; k <= 9; k++, f = (f * 10) & mask) {
		/* F within the slack of 0 mod 2^s */
		if (s && ((f + frac_slack[k]) & mask) > 2 * frac_slack[k])
			continue;
		if ((len = fixed_k(buf, v, a, k)) < 0)
			break;
		if (len > 0)
			return (size_t)len;
	}
	return 0;
}

/* 15 significant digits when they read back exactly, else 17 (always
 * enough), both rounded exactly from the binary value a = m * 2^-s (a
 * is normal: 1e-6 <= a < 1e15).  The length written, or 0. */
static __attribute__((noinline)) size_t significant(char *buf, double v,
						 double a)
{
	uint64_t bits, m;
	int s, lg, p15, p17;
	unsigned __int128 d;

	memcpy(&bits, &a, sizeof(bits));
	m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	s = 1075 - (int)(bits >> 52);
	lg = (int)floor(log10(a));
	if (a < pow10tab[lg < 0 ? 0 : lg] && lg > 0)
		lg--;
	p15 = 14 - lg;
	p17 = 16 - lg;
	if (p15 >= 0 && p15 <= 22) {
		d = scaled_round(m, s, p15);
		if (d < ((unsigned __int128)1 << 53) &&
		    (double)(uint64_t)d / pow10tab[p15] == a)
			return put_fixed(buf, v < 0, (uint64_t)d, p15);
	}
	if (p17 >= 0 && p17 <= 21) {
		/* log10() may be off by one near a power of ten: keep at
		 * least 17 significant digits. */
		d = scaled_round(m, s, p17);
		if (d < (unsigned __int128)10000000000000000ULL) {
			p17++;
			d = scaled_round(m, s, p17);
		}
		if (d < ((unsigned __int128)1 << 64))
			return put_fixed(buf, v < 0, (uint64_t)d, p17);
	}
	return 0;
}

size_t sh5_fmt_double(char *buf, double v)
{
	double a = fabs(v);
	size_t len;

	if (!isfinite(v) || a >= 1e15 || (a < 1e-6 && a != 0))
		return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
	if ((len = fixed9(buf, v, a)) || (len = significant(buf, v, a)))
		return len;
	return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
}
