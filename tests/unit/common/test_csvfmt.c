/* test_csvfmt.c - sh5_fmt_row writes exactly what the series ops'
 * extract_series writes, for every kind of series and value. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmtfast.h"
#include "profile/series_csv.h"
#include "profile/series.h"

static uint64_t x = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* A double of one of the shapes extraction meets. */
static double rnd_double(void)
{
	uint64_t r = rnd();
	double d;

	switch (r % 8) {
	case 0:
		memcpy(&d, &r, sizeof(d)); /* any bits: NaN, inf, tiny */
		return d;
	case 1:
		return (double)((r >> 20) % 100000000) / 1000.0;
	case 2:
		return (double)(r % 1000000007) / 1048576.0; /* Slurm's MB */
	case 3:
		return -(double)(float)((double)(r % 100000) / 997.0);
	case 4:
		return 0.0;
	case 5:
		return (double)(r % 1000);
	case 6:
		return ldexp((double)(r >> 11), -(int)(r % 90));
	default:
		return nextafter(pow(10.0, (double)(r % 30) - 10.0), 0.0);
	}
}

/* The rows of v as a file's records (ElapsedTime, EpochTime, fields: 8
 * bytes each) through sh5_fmt_rows_split, in batches of 1 to 64 rows:
 * the same bytes as extract_series' (ref). */
static void check_rows_split(const struct sh5_series *s, const char *prefix,
			     const union sh5_value *v, size_t rows,
			     const char *ref, size_t rlen)
{
	size_t slots = sh5_record_slots(s), w = 2 + s->nfields, r, i, k;
	size_t plen = strlen(prefix), mlen = 0;
	union sh5_value *flat = calloc(rows * w, sizeof(*flat));
	char *mine = malloc(rows * (plen + SH5_FMT_ROW_MAX(s->nfields)));
	struct sh5_fmt_memo memo;

	ck_assert_ptr_nonnull(flat);
	ck_assert_ptr_nonnull(mine);
	for (r = 0; r < rows; r++) {
		flat[r * w] = v[r * slots];
		flat[r * w + 1] = v[r * slots + 1];
		for (i = 0; i < s->nfields; i++)
			flat[r * w + 2 + i] = v[r * slots + SH5_TIME_SLOTS + i];
	}
	memo.len[0] = memo.len[1] = 0;
	for (r = 0; r < rows; r += k) {
		k = 1 + rnd() % 64;
		if (k > rows - r)
			k = rows - r;
		mlen += sh5_fmt_rows_split(mine + mlen, s, prefix, plen,
					   (const unsigned char *)(flat + r * w),
					   w * sizeof(*flat), k, &memo);
	}
	ck_assert_uint_eq(mlen, rlen);
	ck_assert_msg(!memcmp(mine, ref, rlen), "sh5_fmt_rows_split's rows "
		      "differ from extract_series");
	free(flat);
	free(mine);
}

static void check_series(struct sh5_series *s, const char *prefix)
{
	size_t slots = sh5_record_slots(s), rows = 2000, r, i;
	union sh5_value *v = calloc(rows * slots, sizeof(*v));
	char *ref = NULL, *mine = malloc(rows * (strlen(prefix) +
						 SH5_FMT_ROW_MAX(s->nfields)));
	size_t rlen = 0, mlen = 0;
	FILE *m = open_memstream(&ref, &rlen);
	struct sh5_fmt_memo memo;

	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(mine);
	ck_assert_ptr_nonnull(m);
	for (r = 0; r < rows; r++) {
		union sh5_value *p = v + r * slots;

		p[0].u = r % 3 ? rnd() % 100000 : rnd();
		p[1].u = r % 5 ? 1700000000 + r : rnd();
		/* Runs of slowly growing times (sh5_fmt_row_memo patches
		 * their last digits): steps 0..120, across carries, and
		 * runs of steps of 1 (the last digit incremented). */
		if (r % 7 > 1 && r) {
			p[0].u = p[-(long)slots].u + (r % 3 ? rnd() % 121 : 1);
			p[1].u = p[-(long)slots + 1].u +
				 (r % 5 < 2 ? rnd() % 121 : 1);
		}
		p[2].i = (int64_t)rnd();
		for (i = 0; i < s->nfields; i++) {
			if (s->fields[i].type == SH5_FT_DOUBLE)
				p[SH5_TIME_SLOTS + i].d = rnd_double();
			else
				p[SH5_TIME_SLOTS + i].u = r % 2 ? rnd() :
							  rnd() % 1000;
		}
		p[SH5_SLOT_SYNC(s)].i = (int64_t)rnd();
	}
	ck_assert_int_eq(s->ops->extract_series(s, m, 0, prefix, v, rows), 0);
	fclose(m);
	for (r = 0; r < rows; r++) {
		size_t n, plen = strlen(prefix);

		memcpy(mine + mlen, prefix, plen);
		n = sh5_fmt_row(mine + mlen + plen, s, v + r * slots);
		ck_assert_uint_le(n, SH5_FMT_ROW_MAX(s->nfields));
		mlen += plen + n;
	}
	ck_assert_uint_eq(mlen, rlen);
	ck_assert_msg(!memcmp(mine, ref, rlen), "rows differ from "
		      "extract_series");
	/* Again through one memo for all rows. */
	memo.len[0] = memo.len[1] = 0;
	for (r = 0, mlen = 0; r < rows; r++) {
		size_t n, plen = strlen(prefix);

		memcpy(mine + mlen, prefix, plen);
		n = sh5_fmt_row_memo(mine + mlen + plen, s, v + r * slots,
				     &memo);
		ck_assert_uint_le(n, SH5_FMT_ROW_MAX(s->nfields));
		mlen += plen + n;
	}
	ck_assert_uint_eq(mlen, rlen);
	ck_assert_msg(!memcmp(mine, ref, rlen), "memo rows differ from "
		      "extract_series");
	if (!s->has_time_ns && !s->has_sync_ns)
		check_rows_split(s, prefix, v, rows, ref, rlen);
	free(v);
	free(mine);
	free(ref);
}

START_TEST(test_fmt_row_matches_ops)
{
	static const char *const tn[] = { "CPUFrequency", "CPUTime",
		"CPUUtilization", "RSS", "VMSize", "Pages", "ReadMB",
		"WriteMB" };
	static const enum sh5_ftype tt[] = { SH5_FT_U64, SH5_FT_DOUBLE,
		SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_U64, SH5_FT_U64,
		SH5_FT_DOUBLE, SH5_FT_DOUBLE };
	static const char *const en[] = { "Power", "CPUFrequency" };
	static const enum sh5_ftype et[] = { SH5_FT_U64, SH5_FT_U64 };
	static const char *const gn[] = { "Temp", "Fan", "Volts" };
	static const enum sh5_ftype gt[] = { SH5_FT_DOUBLE, SH5_FT_U64,
		SH5_FT_DOUBLE };
	/* Eight fields of other types than a Task series' (the rows'
	 * types looked up, not taken as the Task pattern). */
	static const char *const g8n[] = { "a", "b", "c", "d", "e", "f", "g",
		"h" };
	static const enum sh5_ftype g8t[] = { SH5_FT_DOUBLE, SH5_FT_U64,
		SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_U64,
		SH5_FT_U64, SH5_FT_DOUBLE };
	struct sh5_error err = { "" };
	struct sh5_series *s[4];
	size_t k;
	int ns, sy;

	s[0] = sh5_series_create("Tasks", "3", tn, tt, 8, &err);
	s[1] = sh5_series_create(NULL, "Energy", en, et, 2, &err);
	s[2] = sh5_series_create("Sensors", "board", gn, gt, 3, &err);
	s[3] = sh5_series_create("Sensors", "eight", g8n, g8t, 8, &err);
	for (k = 0; k < 4; k++) {
		ck_assert_msg(s[k] != NULL, "%s", err.text);
		/* Stock files (no EpochTimeNs), job files (SyncTimeNs). */
		for (ns = 0; ns < 2; ns++)
			for (sy = 0; sy < 2; sy++) {
				s[k]->has_time_ns = ns;
				s[k]->has_sync_ns = sy;
				check_series(s[k], "");
				check_series(s[k], "batch,node12,3,");
				/* past the 32 bytes copied at once */
				check_series(s[k], "batch,node-with-a-long-name-"
					     "of-forty-bytes,3,");
			}
		sh5_series_destroy(s[k]);
	}
}
END_TEST

START_TEST(test_fmt_fixed_cases)
{
	char buf[SH5_FMT_MAX];

	/* Digits written in place: integer part, point, zero padding. */
	ck_assert_uint_eq(sh5_fmt_double(buf, 10.843), 6);
	ck_assert_str_eq(buf, "10.843");
	sh5_fmt_double(buf, 0.001);
	ck_assert_str_eq(buf, "0.001");
	sh5_fmt_double(buf, -120.5);
	ck_assert_str_eq(buf, "-120.5");
	sh5_fmt_double(buf, 1000000);
	ck_assert_str_eq(buf, "1000000");
	sh5_fmt_double(buf, 100.000001);
	ck_assert_str_eq(buf, "100.000001");
	sh5_fmt_double(buf, 0.1 + 0.2);
	ck_assert_str_eq(buf, "0.30000000000000004");
	ck_assert_uint_eq(sh5_fmt_u64(buf, 0), 1);
	ck_assert_str_eq(buf, "0");
	ck_assert_uint_eq(sh5_fmt_u64(buf, 10000000000000000000ULL), 20);
	ck_assert_str_eq(buf, "10000000000000000000");
	sh5_fmt_u64(buf, 99);
	ck_assert_str_eq(buf, "99");
	sh5_fmt_i64(buf, INT64_MIN);
	ck_assert_str_eq(buf, "-9223372036854775808");
}
END_TEST

static char buf_u64[SH5_FMT_MAX];

/* v by sh5_fmt_u64_fast (the rows' inline formatter: below 10^4 by one
 * swar4, below 10^8 by one swar8, each without ndigits) and sh5_fmt_u64,
 * against printf. */
static void check_u64(uint64_t v)
{
	char a[SH5_FMT_MAX], b[SH5_FMT_MAX], c[SH5_FMT_MAX];
	size_t na = sh5_fmt_u64_fast(a, v), nb = sh5_fmt_u64(b, v);
	int nc = snprintf(c, sizeof(c), "%llu", (unsigned long long)v);

	if (na != (size_t)nc || nb != (size_t)nc || strcmp(a, c) ||
	    strcmp(b, c))
		ck_abort_msg("%s: fast \"%s\", sh5_fmt_u64 \"%s\"", c, a, b);
}

START_TEST(test_fmt_u64_fast)
{
	uint64_t v, p;
	int i, k;

	for (v = 0; v <= 1000000; v++)
		check_u64(v);
	for (p = 1, i = 0; i < 20; i++, p *= 10)
		for (k = -3; k <= 3; k++)
			check_u64(p + (uint64_t)(int64_t)k);
	check_u64(UINT64_MAX);
	for (i = 0; i < 1000000; i++)
		check_u64(rnd() >> (rnd() % 64));
	sh5_fmt_u64_fast(buf_u64, 9999);
	ck_assert_str_eq(buf_u64, "9999");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("csvfmt");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fmt_row_matches_ops);
	tcase_add_test(tc, test_fmt_fixed_cases);
	tcase_add_test(tc, test_fmt_u64_fast);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
