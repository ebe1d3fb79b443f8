/* test_fmtdouble.c - sh5_fmt_double writes byte for byte what
 * sh5_fmt_double_ref (the first implementation) writes, over millions of
 * doubles of every shape, and what it writes reads back exactly.
 * FMTDOUBLE_N (environment) sets the random doubles per shape (default
 * 2,000,000 of each of 15 shapes). */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csvfmt.h"

static uint64_t x = 0x2545F4914F6CDD1DULL;

static uint64_t rnd(void)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static unsigned long nchecked;

/* v formatted by both, compared; finite values read back exactly. */
static void check(double v)
{
	char a[SH5_FMT_MAX], b[SH5_FMT_MAX];
	size_t na, nb;

	na = sh5_fmt_double(a, v);
	nb = sh5_fmt_double_ref(b, v);
	if (na != nb || memcmp(a, b, na + 1)) {
		uint64_t bits;

		memcpy(&bits, &v, sizeof(bits));
		ck_abort_msg("%.17g (bits %016llx): \"%s\", reference \"%s\"",
			     v, (unsigned long long)bits, a, b);
	}
	/* No ck_assert here: each one records its place (a write), and
	 * this runs for every double. */
	if (na >= SH5_FMT_MAX)
		ck_abort_msg("%.17g: %zu bytes", v, na);
	if (isfinite(v) && !(strtod(a, NULL) == v))
		ck_abort_msg("%.17g: \"%s\" does not read back", v, a);
	nchecked++;
}

/* v, its neighbours a few ulps away, and their negatives */
static void check_near(double v, int ulps)
{
	double up = v, down = v;
	int i;

	check(v);
	check(-v);
	for (i = 0; i < ulps; i++) {
		up = nextafter(up, INFINITY);
		down = nextafter(down, -INFINITY);
		check(up);
		check(down);
		check(-up);
	}
}

static double frombits(uint64_t b)
{
	double d;

	memcpy(&d, &b, sizeof(d));
	return d;
}

/* One random double of shape k. */
static double shape(int k)
{
	uint64_t r = rnd(), q = rnd();
	double d;

	switch (k) {
	case 0: /* any bits: NaN, inf, subnormals, huge */
		return frombits(r);
	case 1: /* random mantissa, exponent of the fast range and around */
		return frombits((r & ((UINT64_C(1) << 52) - 1)) |
				((uint64_t)(1010 + q % 37) << 52) |
				(q & (UINT64_C(1) << 63)));
	case 2: /* j decimals */
		return (double)(r % 100000000000ULL) /
		       pow(10.0, (double)(q % 13));
	case 3: /* j decimals, then a few ulps off */
		d = (double)(r % 1000000000ULL) / pow(10.0, (double)(q % 12));
		for (q = (q >> 8) % 4; q; q--)
			d = nextafter(d, r & 1 ? INFINITY : -INFINITY);
		return d;
	case 4: /* binary fractions (k/256, Slurm's k/1048576 MB) */
		return ldexp((double)(r % 100000000), -(int)(q % 40));
	case 5: /* the benchmark's k/1024 + 1e-9 j */
		return (double)(r % 4096) / 1024.0 + 1e-9 * (double)(q % 7);
	case 6: /* k/1000 with k up to 10^8 (gen_job's CPU values) */
		return (double)(r % 100000000) / 1000.0;
	case 7: /* floats widened */
		return (double)(float)((double)(r % 10000000) / 997.0);
	case 8: /* integers */
		return (double)(r % (UINT64_C(1) << (q % 54)));
	case 9: /* sums of decimals (0.1 + 0.2 kind) */
		return (double)(r % 1000) / 100.0 + (double)(q % 1000) / 1e4;
	case 10: /* products by powers of ten, to 15 digits */
		return (double)(r % 1000000000000000ULL) *
		       pow(10.0, -(double)(q % 22));
	case 12: /* exactly 10 decimals below 10^5 (fmtdouble.c's fixed10),
		  * then a few ulps off */
		d = (double)(r % 1000000000000000ULL) / 1e10;
		for (q = (q >> 8) % 4; q; q--)
			d = nextafter(d, r & 1 ? INFINITY : -INFINITY);
		return d;
	case 13: /* 10 decimals over powers of two (the half gap below) */
		d = ldexp(1.0, (int)(q % 27) - 8);
		d += (double)(r % 2000001 - 1000000) * 1e-10;
		return d;
	default: /* any mantissa near powers of two */
		return ldexp(1.0 + (double)(r % 64) * 0x1p-52,
			     (int)(q % 40) - 12);
	}
}

START_TEST(test_random_shapes)
{
	const char *env = getenv("FMTDOUBLE_N");
	long n = env ? atol(env) : 2000000, i;
	int k;

	for (k = 0; k < 15; k++)
		for (i = 0; i < n; i++)
			check(shape(k));
	ck_assert_uint_ge(nchecked, 15 * (unsigned long)n);
}
END_TEST

START_TEST(test_edges)
{
	int i;
	long k;

	check(0.0);
	check(-0.0);
	check(NAN);
	check(-NAN);
	check(INFINITY);
	check(-INFINITY);
	check_near(4.9406564584124654e-324, 3); /* smallest subnormal */
	check_near(2.2250738585072014e-308, 3); /* smallest normal */
	check_near(1.7976931348623157e308, 0);
	/* Powers of ten and of two with their neighbours: the guards of
	 * floor(log10), the half gap below a power of two. */
	for (i = -30; i <= 30; i++) {
		check_near(pow(10.0, i), 64);
		check_near(pow(10.0, i) * 5, 8);
		check_near(pow(10.0, i) * (1 + 1e-9), 8);
		check_near(pow(10.0, i) * (1 - 1e-9), 8);
	}
	for (i = -40; i <= 60; i++)
		check_near(ldexp(1.0, i), 64);
	/* The fast range's bounds and the reference's 1e-6 and 1e15. */
	check_near(0x1p-8, 256);
	check_near(0x1p19, 256);
	check_near(1e-6, 256);
	check_near(1e15, 256);
	/* fixed10's bound lg <= 4: 10 decimals on both sides of 10^5, and
	 * every power of two of the fast range plus or minus 10^-10 k. */
	for (k = -2000; k <= 2000; k++)
		check_near(1e5 + (double)k * 1e-10, 2);
	for (i = -8; i < 19; i++)
		for (k = -200; k <= 200; k++)
			check_near(ldexp(1.0, i) + (double)k * 1e-10, 2);
	/* Every k/10^j for small k, j. */
	for (i = 0; i <= 12; i++)
		for (k = 1; k <= 20000; k++)
			check_near((double)k / pow(10.0, i), 1);
	ck_assert_uint_gt(nchecked, 1000000);
}
END_TEST

START_TEST(test_known_outputs)
{
	static const struct {
		double v;
		const char *s;
	} c[] = {
		{ 10.843, "10.843" }, { 0.001, "0.001" }, { -120.5, "-120.5" },
		{ 0.30000000000000004, "0.30000000000000004" },
		{ 1.0 / 3, "0.33333333333333331" },
		{ 2.0 / 3, "0.66666666666666663" },
		{ 0.1, "0.1" }, { 0.0039, "0.0039" },
		{ 524287.999, "524287.999" },
		{ 3.5 + 1e-9, "3.500000001" }, { 3.5 + 2e-9, "3.500000002" },
		{ -0.0, "0" }, { 0.0, "0" }, { 1e15, "1000000000000000" },
		{ 3.0009765625, "3.0009765625" },
		{ -0.1064453145, "-0.1064453145" },
		{ 99999.0000000001, "99999.0000000001" },
		{ 0.0039062501, "0.0039062501" },
	};
	char buf[SH5_FMT_MAX];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		sh5_fmt_double(buf, c[i].v);
		ck_assert_str_eq(buf, c[i].s);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fmtdouble");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_known_outputs);
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_random_shapes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
