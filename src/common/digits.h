/*
 * digits.h - decimal digit writers shared by csvfmt.c (integers) and
 * fmtdouble.c (doubles), inline in fmtfast.h: not an interface.
 */
#ifndef SH5_DIGITS_H
#define SH5_DIGITS_H

#include <stdint.h>
#include <string.h>

static const char digits2[] __attribute__((unused)) =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

static const uint64_t pow10u[20] __attribute__((unused)) = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
	10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
	100000000000ULL, 1000000000000ULL, 10000000000000ULL,
	100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL,
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

/* The 4 digits of v < 10^4 as ASCII, the first in the lowest byte:
 * swar8's last two steps on two halves of two digits (x 5243 >> 19 is
 * x / 100 below 43699). */
static inline uint32_t swar4(uint32_t v)
{
	uint32_t hi = (v * 5243) >> 19, x = hi | ((v - hi * 100) << 16), t;

	t = ((x * 103) >> 10) & 0x000F000F;
	x = ((x - t * 10) << 8) | t;
	return x | 0x30303030;
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

#endif /* SH5_DIGITS_H */
