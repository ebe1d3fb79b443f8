/* test_stream_format.c - InfluxDB line formatting and option words of
 * the stream module (no server needed). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "stream/stream.h"

static const struct sh5_stream_tags tags = { "1234", "0", "n1" };

START_TEST(test_stream_line_all_fields_one_line)
{
	const char *names[] = { "CPUTime", "CPUUtilization", "RSS" };
	enum sh5_stream_type types[] = { SH5_STREAM_U64, SH5_STREAM_DOUBLE,
					 SH5_STREAM_U64 };
	union sh5_stream_value v[3];
	char buf[512];
	long n;

	v[0].u = 42;
	v[1].d = 12.5;
	v[2].u = 1ULL << 40;
	n = sh5_stream_format_line(buf, sizeof(buf), "Task", &tags, 3, names,
				   types, v, 3, 1700000000123456789LL);
	ck_assert_int_eq(n, (long)strlen(buf));
	ck_assert_str_eq(buf,
			 "Task,job=1234,node=n1,series=Task,step=0,task=3 "
			 "CPUTime=42i,CPUUtilization=12.5,RSS=1099511627776i "
			 "1700000000123456789\n");
}
END_TEST

START_TEST(test_stream_line_node_series_has_no_task_tag)
{
	const char *names[] = { "Power" };
	enum sh5_stream_type types[] = { SH5_STREAM_U64 };
	union sh5_stream_value v[1] = { { .u = 0 } };
	char buf[256];

	ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "Energy",
						&tags, -1, names, types, v, 1,
						5),
			 0);
	ck_assert_str_eq(buf,
			 "Energy,job=1234,node=n1,series=Energy,step=0 "
			 "Power=0i 5\n");
}
END_TEST

START_TEST(test_stream_line_escaping)
{
	const struct sh5_stream_tags t = { "1 2", "a,b", "x=y" };
	const char *names[] = { "Read MB", "a,b=c" };
	enum sh5_stream_type types[] = { SH5_STREAM_DOUBLE, SH5_STREAM_U64 };
	union sh5_stream_value v[2];
	char buf[512];

	v[0].d = -0.25;
	v[1].u = 7;
	ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "My Series,1",
						&t, 0, names, types, v, 2, -1),
			 0);
	ck_assert_str_eq(buf,
			 "My\\ Series\\,1,job=1\\ 2,node=x\\=y,"
			 "series=My\\ Series\\,1,step=a\\,b,task=0 "
			 "Read\\ MB=-0.25,a\\,b\\=c=7i -1\n");
}
END_TEST

START_TEST(test_stream_line_doubles_round_trip)
{
	const double vals[] = { 0.1, 1.0 / 3.0, 1e300, -2.5e-310, 123456789.0,
				5e-324, 0.0 };
	const char *names[] = { "x" };
	enum sh5_stream_type types[] = { SH5_STREAM_DOUBLE };
	union sh5_stream_value v[1];
	char buf[256], *eq, *end;
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		v[0].d = vals[i];
		ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "S",
							NULL, -1, names, types,
							v, 1, 1),
				 0);
		eq = strstr(buf, " x=");
		ck_assert_ptr_nonnull(eq);
		ck_assert(strtod(eq + 3, &end) == vals[i]);
		ck_assert_str_eq(end, " 1\n");
		/* a float never carries the integer suffix */
		ck_assert_ptr_null(strchr(eq + 3, 'i'));
	}
}
END_TEST

START_TEST(test_stream_line_skips_unrepresentable_values)
{
	const char *names[] = { "a", "b", "c" };
	enum sh5_stream_type types[] = { SH5_STREAM_U64, SH5_STREAM_DOUBLE,
					 SH5_STREAM_U64 };
	union sh5_stream_value v[3];
	char buf[256];

	v[0].u = UINT64_MAX - 1; /* Slurm's NO_VAL64 */
	v[1].d = NAN;
	v[2].u = (uint64_t)INT64_MAX;
	ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "S", NULL,
						-1, names, types, v, 3, 9),
			 0);
	ck_assert_str_eq(buf, "S,series=S c=9223372036854775807i 9\n");
	v[2].u = UINT64_MAX;
	ck_assert_int_eq(sh5_stream_format_line(buf, sizeof(buf), "S", NULL,
						-1, names, types, v, 3, 9),
			 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* The value of field x in line as the line protocol has always written
 * it: "%.15g" when that reads back, else "%.17g"; uint64 "%" PRIu64 "i". */
static void expect_value(const char *line, const char *want)
{
	const char *eq = strstr(line, " x=");
	char got[64];
	size_t n;

	ck_assert_ptr_nonnull(eq);
	n = strcspn(eq + 3, " ");
	ck_assert_uint_lt(n, sizeof(got));
	memcpy(got, eq + 3, n);
	got[n] = '\0';
	ck_assert_str_eq(got, want);
}

static double next_double(uint64_t *seed, int kind)
{
	uint64_t r, bits;
	double d;

	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	r = *seed >> 11;
	switch (kind) {
	case 0: /* any finite bit pattern */
		bits = *seed ^ (r << 7);
		memcpy(&d, &bits, sizeof(d));
		return isfinite(d) ? d : 1.5;
	case 1: /* few decimals, as Slurm's counters */
		return (double)(int64_t)(r % 100000000) /
		       pow(10.0, (double)(r % 9)) * ((r >> 40) & 1 ? -1 : 1);
	case 2: /* ratios */
		return (double)(r % 1000003) / (double)(r % 97 + 1);
	default: /* integers around the plain/exponent limits */
		return (double)(r % 2000000000000000ULL) *
		       pow(10.0, (double)((int)(r % 30) - 20));
	}
}

START_TEST(test_stream_line_numbers_as_printf)
{
	const char *names[] = { "x" };
	enum sh5_stream_type types[] = { SH5_STREAM_DOUBLE };
	static const double edge[] = { 0.0, -0.0, 1e-4, -1e-4, 9.9999e-5,
				       1e15, 999999999999999.0, 1e15 - 0.5,
				       123456789.123456, 0.1, 1.0 / 3,
				       2400000.0, 97.5, 5e-324, 1.7e308 };
	union sh5_stream_value v[1];
	char buf[512], want[64];
	uint64_t seed = 42;
	size_t i;

	for (i = 0; i < 60000; i++) {
		double d = i < sizeof(edge) / sizeof(edge[0]) ?
				   edge[i] :
				   next_double(&seed, (int)(i % 4));

		v[0].d = d;
		snprintf(want, sizeof(want), "%.15g", d);
		if (strtod(want, NULL) != d)
			snprintf(want, sizeof(want), "%.17g", d);
		ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "S",
							NULL, -1, names, types,
							v, 1, 1),
				 0);
		expect_value(buf, want);
	}
	types[0] = SH5_STREAM_U64;
	for (i = 0; i < 20000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		v[0].u = (seed >> 1) >> (seed % 63);
		snprintf(want, sizeof(want), "%" PRIu64 "i", v[0].u);
		ck_assert_int_gt(sh5_stream_format_line(buf, sizeof(buf), "S",
							NULL, (int)(i % 3) - 1,
							names, types, v, 1,
							(int64_t)seed),
				 0);
		expect_value(buf, want);
	}
}
END_TEST

START_TEST(test_stream_line_buffer_too_small)
{
	const char *names[] = { "value" };
	enum sh5_stream_type types[] = { SH5_STREAM_U64 };
	union sh5_stream_value v[1] = { { .u = 1 } };
	char buf[256];
	long full;
	size_t size;

	full = sh5_stream_format_line(buf, sizeof(buf), "Series", &tags, 1,
				      names, types, v, 1, 123);
	ck_assert_int_gt(full, 0);
	/* every size short of length + NUL fails cleanly with ENOBUFS */
	for (size = 1; size <= (size_t)full; size++) {
		errno = 0;
		ck_assert_int_eq(sh5_stream_format_line(buf, size, "Series",
							&tags, 1, names, types,
							v, 1, 123),
				 -1);
		ck_assert_int_eq(errno, ENOBUFS);
		ck_assert_str_eq(buf, "");
	}
	ck_assert_int_eq(sh5_stream_format_line(buf, (size_t)full + 1,
						"Series", &tags, 1, names,
						types, v, 1, 123),
			 full);
}
END_TEST

START_TEST(test_stream_format_words)
{
	ck_assert_int_eq(sh5_stream_format_from_string("influx1"),
			 SH5_STREAM_INFLUX1);
	ck_assert_int_eq(sh5_stream_format_from_string("INFLUX2"),
			 SH5_STREAM_INFLUX2);
	ck_assert_int_eq(sh5_stream_format_from_string("json"),
			 SH5_STREAM_JSON);
	errno = 0;
	ck_assert_int_eq(sh5_stream_format_from_string("influx"), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_stream_format_from_string(NULL), -1);
	ck_assert_str_eq(sh5_stream_format_name(SH5_STREAM_INFLUX2),
			 "influx2");
	ck_assert_str_eq(sh5_stream_format_name(99), "unknown");
}
END_TEST

START_TEST(test_stream_create_rejects_bad_conf)
{
	struct sh5_stream_conf conf;
	struct sh5_error err = { "" };

	sh5_stream_conf_init(&conf);
	conf.format = SH5_STREAM_INFLUX1;
	errno = 0;
	ck_assert_ptr_null(sh5_stream_create(&conf, &tags, &err));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(err.text, "stream: no URL configured");

	conf.url = "ftp://127.0.0.1/write";
	ck_assert_ptr_null(sh5_stream_create(&conf, &tags, &err));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err.text, "not http or https"));

	conf.url = "http://u:secret@127.0.0.1:1/write?db=x&precision=s";
	ck_assert_ptr_null(sh5_stream_create(&conf, &tags, &err));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err.text, "precision=ns"));
	ck_assert_ptr_null(strstr(err.text, "secret"));

	{
		const struct sh5_stream_tags bad = { "1\n2", "0", "n1" };

		conf.url = "http://127.0.0.1:1/write";
		errno = 0;
		ck_assert_ptr_null(sh5_stream_create(&conf, &bad, &err));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_ptr_nonnull(strstr(err.text, "tag job"));
	}
	conf.url = "http://127.0.0.1:1/write";
	conf.format = 0;
	ck_assert_ptr_null(sh5_stream_create(&conf, &tags, &err));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_stream_memory_bound_grows_with_queue)
{
	struct sh5_stream_conf conf;
	size_t small, big;

	sh5_stream_conf_init(&conf);
	conf.batch_max = 50;
	conf.queue_max = 100;
	small = sh5_stream_memory_bound(&conf);
	conf.queue_max = 10100;
	big = sh5_stream_memory_bound(&conf);
	ck_assert_uint_eq(big - small, 10000 * SH5_STREAM_SLOT_BYTES);
	ck_assert_uint_ge(SH5_STREAM_SLOT_BYTES,
			  SH5_STREAM_MAX_FIELDS * sizeof(uint64_t));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stream_format");
	TCase *tc = tcase_create("line");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_stream_line_all_fields_one_line);
	tcase_add_test(tc, test_stream_line_node_series_has_no_task_tag);
	tcase_add_test(tc, test_stream_line_escaping);
	tcase_add_test(tc, test_stream_line_doubles_round_trip);
	tcase_add_test(tc, test_stream_line_skips_unrepresentable_values);
	tcase_add_test(tc, test_stream_line_numbers_as_printf);
	tcase_add_test(tc, test_stream_line_buffer_too_small);
	tcase_add_test(tc, test_stream_format_words);
	tcase_add_test(tc, test_stream_create_rejects_bad_conf);
	tcase_add_test(tc, test_stream_memory_bound_grows_with_queue);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
