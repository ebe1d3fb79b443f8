/* test_runstats.c - one-pass mergeable moments against independent values */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "common/runstats.h"

/* Relative closeness with an absolute floor for values near zero. */
static int close_to(double got, double want, double rel)
{
	double tol = rel * fmax(1.0, fabs(want));

	return fabs(got - want) <= tol;
}

#define ck_close(got, want, rel) \
	ck_assert_msg(close_to((got), (want), (rel)), \
		      "%s = %.17g, expected %.17g", #got, (double)(got), \
		      (double)(want))

/* Textbook two-pass statistics, a different algorithm from the module's. */
struct naive {
	double n, sum, min, max, mean, sd, skew, kurt;
};

static void naive_stats(const double *x, size_t n, struct naive *r)
{
	double m2 = 0, m3 = 0, m4 = 0, d;
	size_t i;

	r->n = (double)n;
	r->sum = 0;
	r->min = x[0];
	r->max = x[0];
	for (i = 0; i < n; i++) {
		r->sum += x[i];
		r->min = fmin(r->min, x[i]);
		r->max = fmax(r->max, x[i]);
	}
	r->mean = r->sum / (double)n;
	for (i = 0; i < n; i++) {
		d = x[i] - r->mean;
		m2 += d * d;
		m3 += d * d * d;
		m4 += d * d * d * d;
	}
	r->sd = sqrt(m2 / ((double)n - 1));
	r->skew = sqrt((double)n) * m3 / pow(m2, 1.5);
	r->kurt = (double)n * m4 / (m2 * m2) - 3;
}

static void fill(double *x, size_t n, unsigned seed)
{
	size_t i;

	srand(seed);
	/* skewed, offset data: exp-like values around 1000 */
	for (i = 0; i < n; i++) {
		double u = (rand() + 1.0) / (RAND_MAX + 2.0);

		x[i] = 1000.0 - 50.0 * log(u) + (i % 7);
	}
}

static void check_against_naive(const struct sh5_runstats *rs,
				const double *x, size_t n)
{
	struct naive w;

	naive_stats(x, n, &w);
	ck_assert_uint_eq(sh5_runstats_count(rs), n);
	ck_close(sh5_runstats_accumulate(rs), w.sum, 1e-12);
	ck_assert(sh5_runstats_min(rs) == w.min);
	ck_assert(sh5_runstats_max(rs) == w.max);
	ck_close(sh5_runstats_mean(rs), w.mean, 1e-12);
	ck_close(sh5_runstats_stddev(rs), w.sd, 1e-9);
	ck_close(sh5_runstats_skewness(rs), w.skew, 1e-7);
	ck_close(sh5_runstats_kurtosis(rs), w.kurt, 1e-7);
}

/* Values worked out by hand: 2 4 4 4 5 5 7 9. mean 5, M2 32, M3 42,
 * M4 356: stddev sqrt(32/7), skewness sqrt(8)*42/32^1.5 = 0.65625,
 * kurtosis 8*356/32^2 - 3 = -0.21875. */
START_TEST(test_runstats_known_values)
{
	static const double x[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct sh5_runstats rs;
	size_t i;

	sh5_runstats_init(&rs);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(sh5_runstats_push(&rs, x[i]), 0);
	ck_assert_uint_eq(sh5_runstats_count(&rs), 8);
	ck_close(sh5_runstats_accumulate(&rs), 40.0, 1e-15);
	ck_close(sh5_runstats_min(&rs), 2.0, 0);
	ck_close(sh5_runstats_max(&rs), 9.0, 0);
	ck_close(sh5_runstats_mean(&rs), 5.0, 1e-15);
	ck_close(sh5_runstats_stddev(&rs), sqrt(32.0 / 7.0), 1e-14);
	ck_close(sh5_runstats_skewness(&rs), 0.65625, 1e-13);
	ck_close(sh5_runstats_kurtosis(&rs), -0.21875, 1e-13);
}
END_TEST

START_TEST(test_runstats_empty_and_single)
{
	struct sh5_runstats rs;
	double score = -1;

	sh5_runstats_init(&rs);
	ck_assert_uint_eq(sh5_runstats_count(&rs), 0);
	ck_assert(sh5_runstats_mean(&rs) == 0 && sh5_runstats_min(&rs) == 0 &&
		  sh5_runstats_max(&rs) == 0 &&
		  sh5_runstats_stddev(&rs) == 0);
	sh5_runstats_push(&rs, -3.5);
	ck_assert(sh5_runstats_mean(&rs) == -3.5);
	ck_assert(sh5_runstats_min(&rs) == -3.5 &&
		  sh5_runstats_max(&rs) == -3.5);
	ck_assert(sh5_runstats_stddev(&rs) == 0);
	ck_assert(sh5_runstats_skewness(&rs) == 0);
	ck_assert(sh5_runstats_kurtosis(&rs) == 0);
	/* one value is no model: nothing is an outlier */
	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, 1e9, 6, &score), 0);
	ck_assert(score == 0);
}
END_TEST

START_TEST(test_runstats_constant_has_zero_shape)
{
	struct sh5_runstats rs;
	int i;

	sh5_runstats_init(&rs);
	for (i = 0; i < 1000; i++)
		sh5_runstats_push(&rs, 0.1);
	ck_assert(sh5_runstats_stddev(&rs) < 1e-15);
	ck_assert(sh5_runstats_skewness(&rs) == 0);
	ck_assert(sh5_runstats_kurtosis(&rs) == 0);
	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, 0.1, 6, NULL), 0);
}
END_TEST

START_TEST(test_runstats_nonfinite_ignored)
{
	struct sh5_runstats rs;

	sh5_runstats_init(&rs);
	sh5_runstats_push(&rs, 1);
	ck_assert_int_eq(sh5_runstats_push(&rs, NAN), -1);
	ck_assert_int_eq(sh5_runstats_push(&rs, INFINITY), -1);
	sh5_runstats_push(&rs, 3);
	ck_assert_uint_eq(sh5_runstats_count(&rs), 2);
	ck_assert(sh5_runstats_mean(&rs) == 2);
}
END_TEST

/* One pass over n random values, compared with the two-pass formulas. */
START_TEST(test_runstats_single_pass_matches_naive)
{
	size_t n = (size_t)_i;
	double *x = malloc(n * sizeof(*x));
	struct sh5_runstats rs;
	size_t i;

	ck_assert_ptr_nonnull(x);
	fill(x, n, 42u + (unsigned)n);
	sh5_runstats_init(&rs);
	for (i = 0; i < n; i++)
		sh5_runstats_push(&rs, x[i]);
	check_against_naive(&rs, x, n);
	free(x);
}
END_TEST

/* Split the data into k uneven parts ("nodes"), merge: same as one pass. */
START_TEST(test_runstats_merge_equals_single_pass)
{
	size_t n = 10007, i, k, parts = (size_t)_i, start, end;
	double *x = malloc(n * sizeof(*x));
	struct sh5_runstats all, merged, part;

	ck_assert_ptr_nonnull(x);
	fill(x, n, 7u);
	/* make each part differ in level so the merge terms matter */
	for (i = 0; i < n; i++)
		x[i] += (double)((i * parts / n) * 300);
	sh5_runstats_init(&all);
	for (i = 0; i < n; i++)
		sh5_runstats_push(&all, x[i]);
	sh5_runstats_init(&merged);
	for (k = 0; k < parts; k++) {
		/* uneven boundaries: part k gets a quadratic share */
		start = n * k * k / (parts * parts);
		end = n * (k + 1) * (k + 1) / (parts * parts);
		sh5_runstats_init(&part);
		for (i = start; i < end; i++)
			sh5_runstats_push(&part, x[i]);
		sh5_runstats_merge(&merged, &part);
	}
	check_against_naive(&merged, x, n);
	ck_assert_uint_eq(merged.n, all.n);
	ck_close(merged.mean, all.mean, 1e-13);
	ck_close(sh5_runstats_stddev(&merged), sh5_runstats_stddev(&all),
		 1e-10);
	ck_close(sh5_runstats_skewness(&merged), sh5_runstats_skewness(&all),
		 1e-8);
	ck_close(sh5_runstats_kurtosis(&merged), sh5_runstats_kurtosis(&all),
		 1e-8);
	free(x);
}
END_TEST

START_TEST(test_runstats_merge_with_empty_and_self)
{
	struct sh5_runstats a, e, twice;
	static const double x[] = { 1, 2, 3, 10 };
	double y[8];
	size_t i;

	sh5_runstats_init(&a);
	sh5_runstats_init(&e);
	for (i = 0; i < 4; i++)
		sh5_runstats_push(&a, x[i]);
	twice = a;
	sh5_runstats_merge(&twice, &e);
	ck_assert(twice.n == a.n && twice.mean == a.mean && twice.m2 == a.m2);
	sh5_runstats_merge(&e, &a);
	ck_assert(e.n == a.n && e.mean == a.mean && e.m4 == a.m4);
	/* merging with itself equals the data repeated */
	sh5_runstats_merge(&twice, &twice);
	for (i = 0; i < 8; i++)
		y[i] = x[i % 4];
	check_against_naive(&twice, y, 8);
}
END_TEST

START_TEST(test_runstats_sstd_outlier)
{
	struct sh5_runstats rs;
	double score;
	int i;

	/* values 0,1,...,9 repeated: mean 4.5 */
	sh5_runstats_init(&rs);
	for (i = 0; i < 100; i++)
		sh5_runstats_push(&rs, i % 10);
	double sd = sh5_runstats_stddev(&rs);

	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, 4.5 + 2.9 * sd, 3,
						 &score), 0);
	ck_close(score, 2.9, 1e-12);
	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, 4.5 - 3.1 * sd, 3,
						 &score), 1);
	ck_close(score, 3.1, 1e-12);
	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, 4.5 + 6.5 * sd, 6,
						 &score), 1);
	ck_assert_int_eq(sh5_runstats_is_outlier(&rs, NAN, 6, &score), 0);
}
END_TEST

static Suite *runstats_suite(void)
{
	Suite *s = suite_create("runstats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_runstats_known_values);
	tcase_add_test(tc, test_runstats_empty_and_single);
	tcase_add_test(tc, test_runstats_constant_has_zero_shape);
	tcase_add_test(tc, test_runstats_nonfinite_ignored);
	tcase_add_loop_test(tc, test_runstats_single_pass_matches_naive, 2,
			    5);
	tcase_add_loop_test(tc, test_runstats_single_pass_matches_naive,
			    1000, 1001);
	tcase_add_loop_test(tc, test_runstats_single_pass_matches_naive,
			    100000, 100001);
	tcase_add_loop_test(tc, test_runstats_merge_equals_single_pass, 1, 9);
	tcase_add_test(tc, test_runstats_merge_with_empty_and_self);
	tcase_add_test(tc, test_runstats_sstd_outlier);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runstats_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
