/* fmtdouble.c - sh5_fmt_double (see csvfmt.h) */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/csvfmt.h"
#include "common/digits.h"

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
 * The fast path: the reference's output by exact integer arithmetic, for
 * 2^-8 <= |v| < 2^19 (biased exponents FAST_EMIN..FAST_EMAX); every other
 * value goes to the reference itself.
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
 * mod 2^s (F = 10 F mod 2^s from k to k + 1, below 2^64 for s <= 60):
 * 2 F <= 10^k (r = N >> s) or 2 (2^s - F) <= 10^k (r = (N >> s) + 1).
 * No x reaches 2^53: the reference's early exit never happens.
 *
 * significant() needs floor(log10 a): exact from the exponent and one
 * comparison, where a is at least 1e-9 (relative) away from a power of
 * ten (the reference's log10 can then not be off either); nearer, the
 * reference's own computation.
 */
#define FAST_EMIN 1015 /* 2^-8 */
#define FAST_EMAX 1041 /* below 2^19 */

/* d with a point p (1..19) digits from the right, trailing fraction
 * zeros dropped: put_fixed's output, the fraction's digits written at
 * once and the zeros counted after. */
static size_t put_point(char *buf, int neg, uint64_t d, int p)
{
	uint64_t ip = d / pow10u[p], fr = d - ip * pow10u[p];
	char *q = buf;
	size_t n = ndigits(ip);

	*q = '-';
	q += neg;
	put_left(q, ip, n);
	q += n;
	if (fr) {
		*q++ = '.';
		put_left(q, fr, (size_t)p);
		q += p;
		while (q[-1] == '0')
			q--;
	}
	*q = '\0';
	return (size_t)(q - buf);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* put_point(buf, neg, g, 9) for g < 2^49: the integer part (below
 * 10^6), then the first decimal and the other eight by one swar8, their
 * trailing zeros counted in the word (the last digit in its top byte). */
static inline __attribute__((always_inline)) size_t
put_point9(char *buf, int neg, uint64_t g)
{
	uint64_t ip = g / 1000000000, fr = g - ip * 1000000000, x, z;
	uint32_t d0, rest;
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
#else
#define put_point9(buf, neg, g) put_point((buf), (neg), (g), 9)
#endif

/* fixed9 by one test: at most one integer, g, lies in a's interval at
 * k = 9 (h < 1/8); an integer of the interval at a smaller k, times
 * 10^(9-k), is one at k = 9: g itself.  So fixed9 passes at some k iff
 * g is inside, first at the k of g's trailing zeros, and put_fixed of
 * g 10^(k-9) with k decimals writes what put_fixed(g, 9) writes. */
static inline __attribute__((always_inline)) size_t
fast_fixed9(char *buf, double v, uint64_t bits)
{
	int s = 1075 - (int)(bits >> 52);
	uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
	unsigned __int128 n = (unsigned __int128)m * 1000000000;
	uint64_t mask = (UINT64_C(1) << s) - 1, f = (uint64_t)n & mask;
	uint64_t t = 1000000000 - (m & 1), g = (uint64_t)(n >> s);

	if ((f << (m == (UINT64_C(1) << 52) ? 2 : 1)) <= t)
		return put_point9(buf, v < 0, g);
	if ((mask + 1 - f) * 2 <= t)
		return put_point9(buf, v < 0, g + 1);
	return 0;
}

/* 10^lg (1 + 1e-9) and 10^(lg+1) (1 - 1e-9), lg = -3..6 */
#define LG_GUARDS(p) { (p) * (1 + 1e-9), (p) * 10 * (1 - 1e-9) }
static const double lg_guard[10][2] = { LG_GUARDS(1e-3), LG_GUARDS(1e-2),
	LG_GUARDS(1e-1), LG_GUARDS(1.0), LG_GUARDS(1e1), LG_GUARDS(1e2),
	LG_GUARDS(1e3), LG_GUARDS(1e4), LG_GUARDS(1e5), LG_GUARDS(1e6) };

/* The values fast_fixed9 does not take: significant(), with lg exact
 * unless a is near a power of ten, else "%.17g" (never, in range); out
 * of line, so that the common path stays light. */
static __attribute__((noinline)) size_t fast_rest(char *buf, double v,
						  double a, int e)
{
	/* floor((e - 1023) log10 2): 1233 / 4096 is log10 2 within 5e-6,
	 * exact for |e - 1023| <= 20; lg is this or one more. */
	int lg = ((e - 1023) * 1233) >> 12, p;
	uint64_t d;
	size_t len;

	if (a > lg_guard[lg + 3][1])
		lg++;
	if (a < lg_guard[lg + 3][0] || a > lg_guard[lg + 3][1]) {
		if ((len = significant(buf, v, a)))
			return len;
	} else if (sig_digits(a, lg, &d, &p)) {
		return put_point(buf, v < 0, d, p);
	}
	return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
}

size_t sh5_fmt_double(char *buf, double v)
{
	double a = fabs(v);
	uint64_t bits;
	unsigned e;
	size_t len;

	memcpy(&bits, &a, sizeof(bits));
	e = (unsigned)(bits >> 52);
	if (e - FAST_EMIN > FAST_EMAX - FAST_EMIN)
		return sh5_fmt_double_ref(buf, v);
	if ((len = fast_fixed9(buf, v, bits)))
		return len;
	return fast_rest(buf, v, a, (int)e);
}
