/* test_mpi_handles.c - the handle map of libsh5mpi (mpi/handles.c):
 * random puts, gets and deletes checked against a plain array, so the
 * backward-shift deletion keeps every remaining key findable. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../../mpi/wrap.h"

#define NKEYS 512

/* Keys shaped like handles: aligned pointers (many collide in low
 * bits) or small integers. */
static uint64_t key_of(int i, int shape)
{
	return shape ? (uint64_t)(i + 1) : 0x7f0000001000ull + (uint64_t)i * 64;
}

START_TEST(test_mpi_handles_random)
{
	struct sh5mpi_map m = { 0 };
	uint64_t ref[NKEYS] = { 0 }, v;
	int present[NKEYS] = { 0 }, i, k, n = 0;
	unsigned seed = 12345u + (unsigned)_i;

	for (k = 0; k < 200000; k++) {
		i = (int)(rand_r(&seed) % NKEYS);
		switch (rand_r(&seed) % 3) {
		case 0:
			v = (uint64_t)rand_r(&seed) << 16 | (uint64_t)k;
			ck_assert_int_eq(sh5mpi_map_put(&m, key_of(i, _i), v),
					 0);
			if (!present[i])
				n++;
			present[i] = 1;
			ref[i] = v;
			break;
		case 1:
			ck_assert_int_eq(sh5mpi_map_del(&m, key_of(i, _i), &v),
					 present[i]);
			if (present[i]) {
				ck_assert_uint_eq(v, ref[i]);
				n--;
			}
			present[i] = 0;
			break;
		default:
			ck_assert_int_eq(sh5mpi_map_get(&m, key_of(i, _i), &v),
					 present[i]);
			if (present[i])
				ck_assert_uint_eq(v, ref[i]);
		}
		ck_assert_uint_eq(m.n, (size_t)n);
	}
	for (i = 0; i < NKEYS; i++) {
		ck_assert_int_eq(sh5mpi_map_get(&m, key_of(i, _i), &v),
				 present[i]);
		if (present[i])
			ck_assert_uint_eq(v, ref[i]);
	}
	sh5mpi_map_clear(&m);
	ck_assert_int_eq(sh5mpi_map_get(&m, key_of(0, _i), &v), 0);
}
END_TEST

START_TEST(test_mpi_handles_zero_key)
{
	struct sh5mpi_map m = { 0 };
	uint64_t v;
	int h = 7;

	ck_assert_int_eq(sh5mpi_map_put(&m, 0, 1), -1);
	ck_assert_int_eq(sh5mpi_map_get(&m, 0, &v), 0);
	ck_assert_int_eq(sh5mpi_map_del(&m, 0, NULL), 0);
	ck_assert_uint_eq(SH5MPI_KEY(h), 7);
	sh5mpi_map_clear(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpi_handles");
	TCase *tc = tcase_create("map");
	SRunner *sr;
	int nf;

	tcase_add_loop_test(tc, test_mpi_handles_random, 0, 2);
	tcase_add_test(tc, test_mpi_handles_zero_key);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
