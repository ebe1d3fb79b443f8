/* fmtdouble.c - sh5_fmt_double (see csvfmt.h) */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/csvfmt.h"
#include "common/digits.h"
#include "common/fmtfast.h"

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
 * is normal: 1e-6 <= a < 1e15), lg = floor(log10(a)): the digits *dp
 * with a point *pp digits from the right, or 0. */
static int sig_digits(double a, int lg, uint64_t *dp, int *pp)
{
	uint64_t bits, m;
	int s, p15, p17;
	unsigned __int128 d;

	memcpy(&bits, &a, sizeof(bits));
	m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	s = 1075 - (int)(bits >> 52);
	p15 = 14 - lg;
	p17 = 16 - lg;
	if (p15 >= 0 && p15 <= 22) {
		d = scaled_round(m, s, p15);
		if (d < ((unsigned __int128)1 << 53) &&
		    (double)(uint64_t)d / pow10tab[p15] == a) {
			*dp = (uint64_t)d;
			*pp = p15;
			return 1;
		}
	}
	if (p17 >= 0 && p17 <= 21) {
		/* log10() may be off by one near a power of ten: keep at
		 * least 17 significant digits. */
		d = scaled_round(m, s, p17);
		if (d < (unsigned __int128)10000000000000000ULL) {
			p17++;
			d = scaled_round(m, s, p17);
		}
		if (d < ((unsigned __int128)1 << 64)) {
			*dp = (uint64_t)d;
			*pp = p17;
			return 1;
		}
	}
	return 0;
}

/* lg = floor(log10(a)) as the reference computes it (log10, corrected
 * down by one comparison above 10). */
static __attribute__((noinline)) size_t significant(char *buf, double v,
						 double a)
{
	int lg = (int)floor(log10(a)), p;
	uint64_t d;

	if (a < pow10tab[lg < 0 ? 0 : lg] && lg > 0)
		lg--;
	if (!sig_digits(a, lg, &d, &p))
		return 0;
	return put_fixed(buf, v < 0, d, p);
}

size_t sh5_fmt_double_ref(char *buf, double v)
{
	double a = fabs(v);
	size_t len;

	if (!isfinite(v) || a >= 1e15 || (a < 1e-6 && a != 0))
		return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
	if ((len = fixed9(buf, v, a)) || (len = significant(buf, v, a)))
		return len;
	return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
}

/*
 * The fast path (fmtfast.h: fixed9 by one test; here: the rest) gives
 * the reference's output by exact integer arithmetic for 2^-8 <= |v| <
 * 2^19; every other value goes to the reference itself.
 *
 * significant() needs floor(log10 a): exact from the exponent and one
 * comparison, where a is at least 1e-9 (relative) away from a power of
 * ten (the reference's log10 can then not be off either); nearer, the
 * reference's own computation.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* put_fixed(buf, neg, d, p) for d > 0 below 10^17, 9 <= p <= 19: every
 * digit written at once (after 20 zeros, when the point comes first),
 * the point put in by moving the integer part, trailing zeros cut from
 * the text.  No division by a variable power of ten. */
static size_t put_sig(char *buf, int neg, uint64_t d, int p)
{
	size_t n = ndigits(d), pn = (size_t)p, i;
	char *q = buf + neg, *e;

	buf[0] = '-';
	if (pn >= n) {
		q[0] = '0';
		q[1] = '.';
		memcpy(q + 2, "00000000000000000000", 20);
		put_left(q + 2 + pn - n, d, n);
		e = q + 2 + pn;
	} else {
		put_left(q + 1, d, n);
		for (i = 0; i < n - pn; i++) { /* a few bytes: no call */
			q[i] = q[i + 1];
			__asm__("" : : : "memory"); /* (not a memmove) */
		}
		q[n - pn] = '.';
		e = q + n + 1;
	}
	while (e[-1] == '0')
		e--;
	if (e[-1] == '.')
		e--;
	*e = '\0';
	return (size_t)(e - buf);
}

/* scaled_round(m, s, p) for 34 <= s <= 60, p <= 19: round(m 10^p 2^-s)
 * half to even, the remainder in 64 bits. */
static inline uint64_t round_scaled(uint64_t m, int s, int p)
{
	unsigned __int128 n = (unsigned __int128)m * pow10u[p];
	uint64_t d = (uint64_t)(n >> s);
	uint64_t rem = (uint64_t)n & ((UINT64_C(1) << s) - 1);
	uint64_t half = UINT64_C(1) << (s - 1);

	return d + (rem > half || (rem == half && (d & 1)));
}

/* 10^lg (1 + 1e-9) and 10^(lg+1) (1 - 1e-9), lg = -3..6 */
#define LG_GUARDS(p) { (p) * (1 + 1e-9), (p) * 10 * (1 - 1e-9) }
static const double lg_guard[10][2] = { LG_GUARDS(1e-3), LG_GUARDS(1e-2),
	LG_GUARDS(1e-1), LG_GUARDS(1.0), LG_GUARDS(1e1), LG_GUARDS(1e2),
	LG_GUARDS(1e3), LG_GUARDS(1e4), LG_GUARDS(1e5), LG_GUARDS(1e6) };

/* put_point9's digits of g < 10^15 with 10 decimals, the last of them
 * not a trailing zero unless the first nine are (then cut like the rest). */
static size_t put_point10(char *buf, int neg, uint64_t g)
{
	uint64_t ip = g / 10000000000, fr = g - ip * 10000000000, x, z;
	uint32_t d2, rest;
	char *q = buf;
	size_t n;

	*q = '-';
	q += neg;
	if (ip < 10) {
		*q++ = (char)('0' + ip);
	} else {
		n = ndigits(ip);
		put_left(q, ip, n);
		q += n;
	}
	d2 = (uint32_t)(fr / 100000000);
	rest = (uint32_t)(fr - (uint64_t)d2 * 100000000);
	q[0] = '.';
	memcpy(q + 1, digits2 + d2 * 2, 2);
	x = swar8(rest);
	memcpy(q + 3, &x, 8);
	z = x - UINT64_C(0x3030303030303030);
	if (z)
		q += 3 + 8 - (size_t)(__builtin_clzll(z) >> 3);
	else if (d2)
		q += 3 - (d2 % 10 == 0);
	/* fr == 0: no point (fixed9 takes such values first) */
	*q = '\0';
	return (size_t)(q - buf);
}

/*
 * significant() for a that fixed9 leaves, when exactly 10 decimals read
 * back as a, lg exact (guards) and lg <= 4 (p15 = 14 - lg >= 10).
 * fmtfast.h's one test at k = 10: a = m 2^-s, s >= 34, h = 10^10
 * 2^-(s+1) < 1 / 2, so at most one integer g, the one nearest to m
 * 10^10 2^-s, has D = g 10^-10 in a's rounding interval.  If one has,
 * significant() rounds a 10^p15 to D 10^p15 (an integer: p15 >= 10; a
 * is within 2^-(s+1) 10^p15 <= a 10^p15 2^-53 < 10^15 2^-53 < 1/2 of
 * it), which reads back (D rounds to a) and is below 10^15 < 2^53: its
 * digits with p15 decimals, trailing zeros cut, are D's with 10.  0 if
 * no g.  (The bounds' ties cannot happen here, 2 F = 10^10 would need F
 * = 2^9 5^10 where m 10^10 mod 2^s is a multiple of 2^10, nor can the
 * half gap below a power of two matter, those having at most 8
 * decimals in this range: the exact test is kept all the same.)
 */
static size_t fixed10(char *buf, int neg, uint64_t m, int s)
{
	uint64_t g;

	if (!sh5_fixed_nearest(m, s, 10000000000, &g))
		return 0;
	return put_point10(buf, neg, g);
}

/* The values sh5_fixed9 (fmtfast.h) and fixed10 do not take:
 * significant(), with lg (exact if exact, when a is not near a power of
 * ten) from sh5_fmt_double_rest, else "%.17g" (never, in range); out of
 * line, so that the common path stays light. */
static __attribute__((noinline)) size_t fast_rest(char *buf, double v,
						  double a, int e, int lg,
						  int exact)
{
	int p, s = 1075 - e;
	uint64_t bits, m, d;
	size_t len;

	memcpy(&bits, &a, sizeof(bits));
	m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	if (exact) {
		/* sig_digits with p in 9..19: 15 digits, else 17 (at least
		 * 10^16 with lg exact; the reference's way if not) */
		p = 14 - lg;
		d = round_scaled(m, s, p);
		if ((double)d / pow10tab[p] != a) {
			p = 16 - lg;
			d = round_scaled(m, s, p);
		}
		if (p == 14 - lg || d >= UINT64_C(10000000000000000))
			return put_sig(buf, v < 0, d, p);
	}
	if ((len = significant(buf, v, a)))
		return len;
	return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
}

size_t sh5_fmt_double_rest(char *buf, double v)
{
	double a = fabs(v);
	uint64_t bits;
	unsigned e;
	int lg, exact;
	size_t len;

	memcpy(&bits, &a, sizeof(bits));
	e = (unsigned)(bits >> 52);
	if (e - SH5_FAST_EMIN > SH5_FAST_EMAX - SH5_FAST_EMIN)
		return sh5_fmt_double_ref(buf, v);
	/* floor((e - 1023) log10 2): 1233 / 4096 is log10 2 within 5e-6,
	 * exact for |e - 1023| <= 20; lg is this or one more.  Then lg is
	 * exact when a lies between its guards. */
	lg = (((int)e - 1023) * 1233) >> 12;
	if (a > lg_guard[lg + 3][1])
		lg++;
	exact = a >= lg_guard[lg + 3][0] && a <= lg_guard[lg + 3][1];
	/* Here, not in fast_rest: no call for the 10 decimals. */
	if (exact && lg <= 4 &&
	    (len = fixed10(buf, v < 0,
			   (bits & ((UINT64_C(1) << 52) - 1)) |
				   (UINT64_C(1) << 52),
			   1075 - (int)e)))
		return len;
	return fast_rest(buf, v, a, (int)e, lg, exact);
}
#else
size_t sh5_fmt_double_rest(char *buf, double v)
{
	return sh5_fmt_double_ref(buf, v);
}
#endif

size_t sh5_fmt_double(char *buf, double v)
{
	return sh5_fmt_double_fast(buf, v);
}
