/*
 * test_zpartial.c - the partial chunk's stored form (src/profile/
 * zpartial.h) inflates to exactly the records added and the zero tail,
 * whatever the pieces and the tail's length, and carries HDF5's
 * Fletcher-32; the incremental Fletcher-32 equals the one-shot one.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/checksum.h"
#include "profile/zpartial.h"

static unsigned char *random_bytes(size_t n, unsigned seed)
{
	unsigned char *b = malloc(n ? n : 1);
	size_t i;

	ck_assert_ptr_nonnull(b);
	srand(seed);
	for (i = 0; i < n; i++)
		/* records-like: runs of zeros among noise */
		b[i] = (i % 8) < 4 ? (unsigned char)rand() : 0;
	return b;
}

START_TEST(test_fletcher32_incremental)
{
	unsigned char *b = random_bytes(6000, 7);
	struct sh5_fletcher32_state st = { 0, 0, 0 };
	size_t len;

	for (len = 0; len <= 6000; len += 1 + len % 97) {
		sh5_fletcher32_advance(&st, b, len);
		ck_assert_uint_le(st.done, len);
		ck_assert_uint_eq(sh5_fletcher32_finish(&st, b, len),
				  sh5_fletcher32(b, len));
	}
	free(b);
}
END_TEST

/* Stored chunk of p: fletcher ok, inflates to data[0 .. added) and
 * zeros, exactly total bytes. */
static void check_chunk(struct sh5_zpartial *p, const unsigned char *data,
			size_t added, size_t total)
{
	size_t len = sh5_zpartial_chunk(p, total - added), i;
	unsigned char *out = malloc(total + 16);
	uLongf got = total + 16;

	ck_assert_uint_gt(len, 4);
	ck_assert_int_eq(sh5_fletcher32_ok(p->out, len), 1);
	ck_assert_int_eq(uncompress(out, &got, p->out, len - 4), Z_OK);
	ck_assert_uint_eq(got, total);
	ck_assert_int_eq(memcmp(out, data, added), 0);
	for (i = added; i < total; i++)
		ck_assert_uint_eq(out[i], 0);
	free(out);
}

static const size_t totals[] = { 17, 112, 300, 1033, 67200, 200000 };

START_TEST(test_zpartial_inflates)
{
	size_t total = totals[_i], added = 0;
	unsigned char *data = random_bytes(total, (unsigned)_i + 1);
	struct sh5_zpartial p;
	unsigned seed = 3;

	sh5_zpartial_init(&p);
	ck_assert_uint_eq(sh5_zpartial_chunk(&p, 0), 0);
	check_chunk(&p, data, 0, total);        /* nothing added yet */
	while (added < total) {
		size_t n = 1 + (size_t)rand_r(&seed) % (total / 3 + 1);

		if (n >= total - added)
			n = total - added - 1;  /* keep one zero at least */
		if (!n)
			break;
		ck_assert_int_eq(sh5_zpartial_add(&p, data + added, n), 0);
		added += n;
		check_chunk(&p, data, added, total);
	}
	/* every tail length from 1 to 1100 (the 258-byte runs, the
	 * remainders 1..257) */
	sh5_zpartial_reset(&p);
	if (total > 1100) {
		size_t z;

		ck_assert_int_eq(sh5_zpartial_add(&p, data, total - 1100), 0);
		for (z = 1100; z >= 1; z--) {
			if (z < 1100)
				ck_assert_int_eq(sh5_zpartial_add(
					&p, data + total - z - 1, 1), 0);
			check_chunk(&p, data, total - z, total);
		}
	}
	sh5_zpartial_free(&p);
	free(data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zpartial");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fletcher32_incremental);
	tcase_add_loop_test(tc, test_zpartial_inflates, 0,
			    (int)(sizeof(totals) / sizeof(totals[0])));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
