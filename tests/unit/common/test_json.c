/* test_json.c - streaming JSON writer: typing, streaming, errors */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <yajl/yajl_tree.h>

#include "common/json.h"
#include "common/runstats.h"

/* A growing memory sink that also counts the calls it gets. */
struct mem {
	char *buf;
	size_t len, cap;
	int calls;
	int fail_after; /* fail on call number fail_after (0: never) */
};

static int mem_write(void *arg, const void *buf, size_t len)
{
	struct mem *m = arg;

	m->calls++;
	if (m->fail_after && m->calls >= m->fail_after) {
		errno = ENOSPC;
		return -1;
	}
	if (m->len + len + 1 > m->cap) {
		m->cap = (m->len + len + 1) * 2;
		m->buf = realloc(m->buf, m->cap);
		ck_assert_ptr_nonnull(m->buf);
	}
	memcpy(m->buf + m->len, buf, len);
	m->len += len;
	m->buf[m->len] = '\0';
	return 0;
}

/* yajl's tree marks "7.0" integer-valid too: judge the number's text. */
static int is_float_text(yajl_val v)
{
	return YAJL_IS_NUMBER(v) && YAJL_IS_DOUBLE(v) &&
	       strpbrk(YAJL_GET_NUMBER(v), ".eE") != NULL;
}

static const char *fmt(double v)
{
	static char b[64];

	ck_assert_int_gt(sh5_json_format_double(b, sizeof(b), v), 0);
	return b;
}

START_TEST(test_json_double_always_float)
{
	ck_assert_str_eq(fmt(1.0), "1.0");
	ck_assert_str_eq(fmt(0.0), "0.0");
	ck_assert_str_eq(fmt(-0.0), "-0.0");
	ck_assert_str_eq(fmt(-3.0), "-3.0");
	ck_assert_str_eq(fmt(0.1), "0.1");
	ck_assert_str_eq(fmt(2.5e-7), "2.5e-07");
	ck_assert_str_eq(fmt(1e300), "1e+300");
	ck_assert_str_eq(fmt(9007199254740992.0), "9007199254740992.0");
	ck_assert_str_eq(fmt(1e20), "1e+20");
	ck_assert_str_eq(fmt(123456.0), "123456.0");
	ck_assert_str_eq(fmt(0.00031375000025946065),
			 "0.00031375000025946065");
}
END_TEST

/* Significant digits of a formatted number (mantissa only). */
static int sig_digits(const char *s)
{
	int n = 0, started = 0, zeros = 0;

	for (; *s && *s != 'e' && *s != 'E'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (*s != '0')
			started = 1;
		if (started)
			n++;
		zeros = *s == '0' ? zeros + 1 : 0;
	}
	/* trailing zeros ("1.50", "100.0") are not significant */
	return started ? n - zeros : 0;
}

static int shortest_printf(double v)
{
	char b[40];
	int p;

	for (p = 1; p <= 17; p++) {
		snprintf(b, sizeof(b), "%.*g", p, v);
		if (strtod(b, NULL) == v)
			return p;
	}
	return 17;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t xorshift(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Every formatted double reads back bit for bit, is typed float, and is
 * (almost always) as short as the shortest printf precision. */
START_TEST(test_json_double_roundtrip)
{
	static const double special[] = {
		4.9406564584124654e-324, 2.2250738585072014e-308,
		2.2250738585072009e-308, 1.7976931348623157e308, 0.1, 0.2,
		0.30000000000000004, 1e-5, 1e-4, 1e16, 1e17, 1e21, 1e22,
		123456789012345680.0, 5e-324, 9007199254740993.0,
		1700000000.2594073, 0.5, 2.5, 1.0 / 3.0, 2.0 / 3.0,
		4503599627370496.5, 72057594037927936.0, 1e23,
	};
	unsigned i, longer = 0, total = 0;
	uint64_t bits;
	double v, back;
	const char *s;
	char b[64];

	for (i = 0; i < sizeof(special) / sizeof(special[0]) * 2; i++) {
		v = special[i / 2] * (i % 2 ? -1 : 1);
		s = fmt(v);
		back = strtod(s, NULL);
		ck_assert_msg(memcmp(&back, &v, sizeof(v)) == 0, "%.17g -> %s",
			      v, s);
		ck_assert(strpbrk(s, ".e") != NULL);
	}
	for (i = 0; i < 400000; i++) {
		bits = xorshift();
		if (i % 4 == 1)	/* moderate exponents, like real data */
			bits = (bits & 0x800fffffffffffffULL) |
			       ((uint64_t)(1000 + xorshift() % 100) << 52);
		if (i % 4 == 2)	/* short decimals */
			v = (double)(int64_t)(xorshift() % 2000000 - 1000000) /
			    1000.0;
		else
			memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		s = fmt(v);
		snprintf(b, sizeof(b), "%s", s);
		back = strtod(b, NULL);
		ck_assert_msg(memcmp(&back, &v, sizeof(v)) == 0,
			      "%.17g -> %s -> %.17g", v, b, back);
		ck_assert_msg(strpbrk(b, ".e") != NULL, "%s not a float", b);
		if (v != trunc(v) || fabs(v) >= 9007199254740992.0) {
			total++;
			if (sig_digits(b) > shortest_printf(v))
				longer++;
		}
	}
	/* Grisu2 is one digit longer than the shortest in rare cases */
	ck_assert_msg(longer * 100 < total, "%u of %u longer than shortest",
		      longer, total);
	printf("grisu2: %u of %u one digit longer than shortest\n", longer,
	       total);
}
END_TEST

START_TEST(test_json_nonfinite_is_error)
{
	struct mem m = { 0 };
	struct sh5_error err = { "" };
	struct sh5_json *j = sh5_json_create_cb(mem_write, &m, 0, &err);
	char b[64];

	ck_assert_int_eq(sh5_json_format_double(b, sizeof(b), NAN), -1);
	ck_assert_int_eq(errno, EDOM);
	ck_assert_ptr_nonnull(j);
	sh5_json_array_open(j);
	ck_assert_int_eq(sh5_json_double(j, INFINITY), -1);
	/* sticky: later calls fail too, finish reports the first error */
	ck_assert_int_eq(sh5_json_array_close(j), -1);
	ck_assert_int_eq(sh5_json_finish(j, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "NaN or infinity"));
	sh5_json_destroy(j);
	free(m.buf);
}
END_TEST

/* The typed values parse back with the JSON types we meant. */
START_TEST(test_json_types_parse_back)
{
	struct mem m = { 0 };
	struct sh5_error err = { "" };
	struct sh5_json *j = sh5_json_create_cb(mem_write, &m, _i, &err);
	char ebuf[128];
	yajl_val root, v;
	const char *p_int[] = { "i", NULL }, *p_u[] = { "u", NULL },
		   *p_d[] = { "d", NULL }, *p_s[] = { "s", NULL },
		   *p_b[] = { "b", NULL }, *p_a[] = { "a", NULL };

	ck_assert_ptr_nonnull(j);
	sh5_json_object_open(j);
	sh5_json_kv_int(j, "i", -42);
	sh5_json_kv_uint(j, "u", UINT64_MAX);
	sh5_json_kv_double(j, "d", 7.0);
	sh5_json_kv_string(j, "s", "quote\" back\\ nl\n tab\t é");
	sh5_json_kv_bool(j, "b", 1);
	sh5_json_key(j, "a");
	sh5_json_array_open(j);
	sh5_json_null(j);
	sh5_json_array_close(j);
	sh5_json_object_close(j);
	ck_assert_msg(sh5_json_finish(j, &err) == 0, "%s", err.text);
	ck_assert_uint_eq(sh5_json_bytes(j), m.len);
	sh5_json_destroy(j);

	root = yajl_tree_parse(m.buf, ebuf, sizeof(ebuf));
	ck_assert_msg(root != NULL, "%s: %s", ebuf, m.buf);
	v = yajl_tree_get(root, p_int, yajl_t_number);
	ck_assert(v && !is_float_text(v));
	ck_assert_int_eq(YAJL_GET_INTEGER(v), -42);
	v = yajl_tree_get(root, p_u, yajl_t_number);
	ck_assert(v);
	ck_assert_str_eq(YAJL_GET_NUMBER(v), "18446744073709551615");
	v = yajl_tree_get(root, p_d, yajl_t_number);
	ck_assert(v && is_float_text(v));
	ck_assert(YAJL_GET_DOUBLE(v) == 7.0);
	v = yajl_tree_get(root, p_s, yajl_t_string);
	ck_assert(v);
	ck_assert_str_eq(YAJL_GET_STRING(v), "quote\" back\\ nl\n tab\t é");
	v = yajl_tree_get(root, p_b, yajl_t_true);
	ck_assert(v && YAJL_IS_TRUE(v));
	v = yajl_tree_get(root, p_a, yajl_t_array);
	ck_assert(v && YAJL_GET_ARRAY(v)->len == 1 &&
		  YAJL_IS_NULL(YAJL_GET_ARRAY(v)->values[0]));
	yajl_tree_free(root);
	free(m.buf);
}
END_TEST

/* RunStats object: exactly Chimbuko's eight keys, in order, all doubles. */
START_TEST(test_json_runstats_keys)
{
	static const char *keys[] = { "count", "accumulate", "minimum",
				      "maximum", "mean", "stddev",
				      "skewness", "kurtosis" };
	struct mem m = { 0 };
	struct sh5_error err = { "" };
	struct sh5_json *j = sh5_json_create_cb(mem_write, &m, 0, &err);
	struct sh5_runstats rs;
	char ebuf[128];
	yajl_val root, v;
	double want[8];
	size_t i;

	sh5_runstats_init(&rs);
	for (i = 1; i <= 4; i++)
		sh5_runstats_push(&rs, (double)(i * i));	/* 1 4 9 16 */
	want[0] = 4;
	want[1] = 30;
	want[2] = 1;
	want[3] = 16;
	want[4] = 7.5;
	want[5] = sqrt(((1 - 7.5) * (1 - 7.5) + (4 - 7.5) * (4 - 7.5) +
			(9 - 7.5) * (9 - 7.5) + (16 - 7.5) * (16 - 7.5)) / 3);
	want[6] = sh5_runstats_skewness(&rs);
	want[7] = sh5_runstats_kurtosis(&rs);
	ck_assert_int_eq(sh5_json_runstats(j, &rs), 0);
	ck_assert_int_eq(sh5_json_finish(j, &err), 0);
	sh5_json_destroy(j);
	root = yajl_tree_parse(m.buf, ebuf, sizeof(ebuf));
	ck_assert_msg(root && YAJL_IS_OBJECT(root), "%s", m.buf);
	ck_assert_uint_eq(YAJL_GET_OBJECT(root)->len, 8);
	for (i = 0; i < 8; i++) {
		ck_assert_str_eq(YAJL_GET_OBJECT(root)->keys[i], keys[i]);
		v = YAJL_GET_OBJECT(root)->values[i];
		ck_assert_msg(is_float_text(v),
			      "%s is not a double in %s", keys[i], m.buf);
		ck_assert_msg(fabs(YAJL_GET_DOUBLE(v) - want[i]) <=
				      1e-12 * fmax(1, fabs(want[i])),
			      "%s", keys[i]);
	}
	ck_assert_ptr_nonnull(strstr(m.buf, "\"count\":4.0"));
	yajl_tree_free(root);
	free(m.buf);
}
END_TEST

/* A document much larger than the buffer reaches the sink in pieces,
 * the concatenation is the whole document, memory stays bounded. */
START_TEST(test_json_streams_in_chunks)
{
	struct mem m = { 0 };
	struct sh5_error err = { "" };
	struct sh5_json *j = sh5_json_create_cb(mem_write, &m, 0, &err);
	char ebuf[128];
	yajl_val root;
	int i;

	sh5_json_array_open(j);
	for (i = 0; i < 200000; i++)
		sh5_json_double(j, i + 0.5);
	sh5_json_array_close(j);
	/* before the final flush, several chunks were already written */
	ck_assert_int_gt(m.calls, 10);
	ck_assert_int_eq(sh5_json_finish(j, &err), 0);
	sh5_json_destroy(j);
	root = yajl_tree_parse(m.buf, ebuf, sizeof(ebuf));
	ck_assert(root && YAJL_IS_ARRAY(root));
	ck_assert_uint_eq(YAJL_GET_ARRAY(root)->len, 200000);
	ck_assert(YAJL_GET_DOUBLE(YAJL_GET_ARRAY(root)->values[199999]) ==
		  199999.5);
	yajl_tree_free(root);
	free(m.buf);
}
END_TEST

START_TEST(test_json_file_sink)
{
	struct sh5_error err = { "" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct sh5_json *j = sh5_json_create_file(f, 0, &err);

	sh5_json_object_open(j);
	sh5_json_kv_double(j, "time", 2.0);
	sh5_json_object_close(j);
	ck_assert_int_eq(sh5_json_finish(j, &err), 0);
	sh5_json_destroy(j);
	fclose(f);
	ck_assert_str_eq(buf, "{\"time\":2.0}");
	free(buf);
}
END_TEST

START_TEST(test_json_errors)
{
	struct mem m = { 0 };
	struct sh5_error err = { "" };
	struct sh5_json *j;

	/* incomplete document */
	j = sh5_json_create_cb(mem_write, &m, 0, &err);
	sh5_json_object_open(j);
	ck_assert_int_eq(sh5_json_finish(j, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "incomplete"));
	sh5_json_destroy(j);
	/* non-string key */
	j = sh5_json_create_cb(mem_write, &m, 0, &err);
	sh5_json_object_open(j);
	ck_assert_int_eq(sh5_json_int(j, 1), -1);
	ck_assert_int_eq(sh5_json_finish(j, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "key"));
	sh5_json_destroy(j);
	/* sink failure is reported */
	free(m.buf);
	memset(&m, 0, sizeof(m));
	m.fail_after = 1;
	j = sh5_json_create_cb(mem_write, &m, 0, &err);
	sh5_json_array_open(j);
	sh5_json_array_close(j);
	ck_assert_int_eq(sh5_json_finish(j, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "write failed"));
	sh5_json_destroy(j);
	ck_assert_ptr_null(sh5_json_create_cb(NULL, NULL, 0, &err));
	sh5_json_destroy(NULL);
	free(m.buf);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_json_double_always_float);
	tcase_add_test(tc, test_json_double_roundtrip);
	tcase_add_test(tc, test_json_nonfinite_is_error);
	tcase_add_loop_test(tc, test_json_types_parse_back, 0, 2);
	tcase_add_test(tc, test_json_runstats_keys);
	tcase_add_test(tc, test_json_streams_in_chunks);
	tcase_add_test(tc, test_json_file_sink);
	tcase_add_test(tc, test_json_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(json_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
