/*
 * test_zinc.c - the incremental coder's chunk (src/profile/zinc.h) is, at
 * every record count, what HDF5's shuffle + deflate + fletcher32 filters
 * would read back: zlib inflates it (Adler-32 checked) to exactly the
 * shuffled, zero-padded chunk; its Fletcher-32 holds; HDF5 reads it back
 * through H5Dread with every filter.  Random, run-heavy and sample-like
 * records, chunks over 64 KiB.  Also src/common/checksum.h's Fletcher-32
 * against HDF5's own code, and the incremental one against the one-shot.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>
#include <zlib.h>

#include "common/checksum.h"
#include "profile/zinc.h"
#include "profile/zrecode.h"

enum { RANDOM, SAMPLES, RUNS, ZEROS, NMODES };

/* Record i of a chunk of records of s bytes. */
static void make_record(unsigned char *rec, size_t s, size_t i, int mode,
			unsigned *seed)
{
	size_t j;

	for (j = 0; j < s; j++) {
		size_t f = j / 8, b = j % 8;
		uint64_t v;

		switch (mode) {
		case RANDOM:
			rec[j] = (unsigned char)rand_r(seed);
			continue;
		case SAMPLES: /* times, counters, gauges, constants */
			v = f == 0 ? i : f == 1 ? 1700000000 + i :
			    f % 3 == 0 ? i * (37 * f) + (rand_r(seed) & 7) :
			    f % 3 == 1 ? (uint64_t)(rand_r(seed) % 100) : 0;
			break;
		case RUNS: /* runs of 1 .. ~1000, across 258 */
			v = (i / (1 + (f * 97 + b * 31) % 1000)) * 0x0101 + f;
			break;
		default:
			v = 0;
			break;
		}
		rec[j] = (unsigned char)(v >> (8 * b));
	}
}

/* c (len bytes) is a stored chunk of exactly want (n bytes). */
static void check_stored(const unsigned char *c, size_t len,
			 const unsigned char *want, size_t n)
{
	unsigned char *out = malloc(n + 16);
	uLongf got = n + 16;

	ck_assert_ptr_nonnull(out);
	ck_assert_uint_gt(len, 10);
	ck_assert_int_eq(sh5_fletcher32_ok(c, len), 1);
	ck_assert_int_eq(uncompress(out, &got, c, len - 4), Z_OK);
	ck_assert_uint_eq(got, n);
	ck_assert_int_eq(memcmp(out, want, n), 0);
	free(out);
}

/* The stored chunk of z holds exactly want (n bytes) and fletcher32; so
 * does its re-coded form (zrecode.h), shorter, when there is one.
 * Returns the re-coded length (0: none). */
static size_t check_chunk(struct sh5_zinc *z, const unsigned char *want,
			  size_t n)
{
	size_t len, rlen;
	const unsigned char *c = sh5_zinc_chunk(z, &len);
	unsigned char *r;

	ck_assert_ptr_nonnull(c);
	check_stored(c, len, want, n);
	ck_assert_uint_ge(sh5_zinc_bound(z), len);
	ck_assert_ptr_nonnull(r = malloc(sh5_zinc_bound(z)));
	errno = 0;
	rlen = sh5_zinc_recode(z, r, len - 1);
	/* with room to spare: still only when shorter than zinc's form */
	ck_assert_uint_eq(sh5_zinc_recode(z, r, sh5_zinc_bound(z)), rlen);
	if (rlen) {
		ck_assert_uint_lt(rlen, len);
		check_stored(r, rlen, want, n);
		/* no room: refused */
		ck_assert_uint_eq(sh5_zinc_recode(z, r, rlen - 1), 0);
		ck_assert_int_eq(errno, ENOSPC);
		/* sh5_zinc_chunk()'s form stays valid */
		check_stored(c, len, want, n);
	} else {
		ck_assert_int_eq(errno, ENOSPC);
	}
	free(r);
	return rlen;
}

struct shape {
	size_t s, rows, step; /* record size, chunk rows, checked every */
};

static const struct shape shapes[] = {
	{ 1, 40, 1 }, { 3, 300, 1 }, { 24, 600, 1 }, { 112, 600, 1 },
	{ 40, 4096, 97 }, { 200, 600, 13 },
};

/* Every mode, record counts 1 .. rows (every step-th, and rows), then
 * the coder reset and used again. */
START_TEST(test_zinc_inflates)
{
	const struct shape *sh = &shapes[_i / NMODES];
	int mode = _i % NMODES;
	size_t s = sh->s, rows = sh->rows, i, j, round;
	unsigned char *want = calloc(rows, s), *rec = malloc(s);
	struct sh5_zinc *z = sh5_zinc_create(s, rows);
	unsigned seed = (unsigned)_i + 1;

	ck_assert_ptr_nonnull(z);
	ck_assert_ptr_nonnull(want);
	for (round = 0; round < 2; round++) {
		memset(want, 0, rows * s);
		check_chunk(z, want, rows * s); /* no record yet */
		for (i = 0; i < rows; i++) {
			make_record(rec, s, i + round * 7, mode, &seed);
			for (j = 0; j < s; j++)
				want[j * rows + i] = rec[j];
			ck_assert_int_eq(sh5_zinc_add(z, rec), 0);
			ck_assert_uint_eq(sh5_zinc_rows(z), i + 1);
			if ((i + 1) % sh->step == 0)
				check_chunk(z, want, rows * s);
		}
		/* a whole chunk of samples is smaller re-coded */
		if (check_chunk(z, want, rows * s) == 0)
			ck_assert(mode == RANDOM || rows * s < 4096);
		ck_assert_int_eq(sh5_zinc_add(z, rec), -1); /* full */
		sh5_zinc_reset(z);
	}
	sh5_zinc_destroy(z);
	free(want);
	free(rec);
}
END_TEST

START_TEST(test_zinc_bad_args)
{
	ck_assert_ptr_null(sh5_zinc_create(0, 10));
	ck_assert_ptr_null(sh5_zinc_create(8, 0));
	ck_assert_ptr_null(sh5_zinc_create(8, (size_t)1 << 25));
	sh5_zinc_destroy(NULL);
}
END_TEST

/* sh5_zrecode() refuses values that are no symbol (a match of 2, past
 * 258) and codes the symbols of several segments as one stream. */
START_TEST(test_zrecode_symbols)
{
	static const uint16_t bad1[] = { 7, 256 + 2 }, bad2[] = { 256 + 259 };
	uint16_t one[] = { 5 }, run[] = { 256 + 258, 256 + 41 };
	struct sh5_zsyms seg[2] = { { bad1, 2 }, { bad2, 1 } };
	unsigned char r[256], want[300], out[400];
	uLongf got = sizeof(out);
	size_t len;

	errno = 0;
	ck_assert_uint_eq(sh5_zrecode(seg, 1, NULL, 1, r, sizeof(r)), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_uint_eq(sh5_zrecode(seg + 1, 1, NULL, 1, r, sizeof(r)), 0);
	ck_assert_int_eq(errno, EINVAL);
	/* 5, then 299 more 5s (matches at distance 1) */
	memset(want, 5, sizeof(want));
	seg[0].sym = one;
	seg[0].n = 1;
	seg[1].sym = run;
	seg[1].n = 2;
	len = sh5_zrecode(seg, 2, NULL, (uint32_t)adler32(1, want, sizeof(want)),
			  r, sizeof(r));
	ck_assert_uint_gt(len, 8);
	ck_assert_int_eq(sh5_fletcher32_ok(r, len), 1);
	ck_assert_int_eq(uncompress(out, &got, r, len - 4), Z_OK);
	ck_assert_uint_eq(got, sizeof(want));
	ck_assert_int_eq(memcmp(out, want, sizeof(want)), 0);
	errno = 0;
	ck_assert_uint_eq(sh5_zrecode(seg, 2, NULL, 1, r, len - 1), 0);
	ck_assert_int_eq(errno, ENOSPC);
}
END_TEST

/* HDF5 reads the chunks through its own pipeline (shuffle, deflate,
 * fletcher32 checked), at every record count of the last chunk. */
START_TEST(test_zinc_hdf5_reads)
{
	enum { S = 24, ROWS = 50 };
	char path[] = "/tmp/test_zinc.XXXXXX";
	int fd = mkstemp(path);
	hsize_t dim = 0, maxdim = H5S_UNLIMITED, chunk = ROWS, off;
	hid_t f, sp, dcpl, type, d;
	struct sh5_zinc *z = sh5_zinc_create(S, ROWS);
	unsigned char rec[S], all[2 * ROWS][S], back[2 * ROWS][S];
	unsigned char rc[2 * ROWS * S];
	unsigned seed = 5;
	size_t i, len, rlen, recoded = 0;

	ck_assert_int_ge(fd, 0);
	close(fd);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	sp = H5Screate_simple(1, &dim, &maxdim);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	type = H5Tcreate(H5T_OPAQUE, S);
	ck_assert_int_ge(H5Pset_chunk(dcpl, 1, &chunk), 0);
	ck_assert_int_ge(H5Pset_shuffle(dcpl), 0);
	ck_assert_int_ge(H5Pset_deflate(dcpl, 4), 0);
	ck_assert_int_ge(H5Pset_fletcher32(dcpl), 0);
	d = H5Dcreate2(f, "d", type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	ck_assert_int_ge(d, 0);
	for (i = 0; i < 2 * ROWS; i++) {
		const void *c;

		make_record(rec, S, i, i < ROWS ? SAMPLES : RANDOM, &seed);
		memcpy(all[i], rec, S);
		ck_assert_int_eq(sh5_zinc_add(z, rec), 0);
		dim = i + 1;
		off = i / ROWS * ROWS;
		ck_assert_int_ge(H5Dset_extent(d, &dim), 0);
		ck_assert_ptr_nonnull(c = sh5_zinc_chunk(z, &len));
		/* every other count re-coded (zinc.h) when shorter */
		if (i % 2 && (rlen = sh5_zinc_recode(z, rc, len - 1))) {
			c = rc;
			len = rlen;
			recoded++;
		}
		ck_assert_int_ge(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &off, len,
						c), 0);
		memset(back, 0xaa, sizeof(back));
		ck_assert_int_ge(H5Dread(d, type, H5S_ALL, H5S_ALL,
					 H5P_DEFAULT, back), 0);
		ck_assert_int_eq(memcmp(back, all, (i + 1) * S), 0);
		if (i + 1 == ROWS)
			sh5_zinc_reset(z);
	}
	ck_assert_uint_gt(recoded, ROWS / 4);
	H5Dclose(d);
	H5Tclose(type);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Fclose(f);
	unlink(path);
	sh5_zinc_destroy(z);
}
END_TEST

/* HDF5 1.10's H5_checksum_fletcher32, as it is. */
static uint32_t ref_fletcher32(const unsigned char *data, size_t _len)
{
	size_t len = _len / 2;
	uint32_t sum1 = 0, sum2 = 0;

	while (len) {
		size_t tlen = len > 360 ? 360 : len;

		len -= tlen;
		do {
			sum1 += (uint32_t)(((uint16_t)data[0]) << 8) |
				((uint16_t)data[1]);
			data += 2;
			sum2 += sum1;
		} while (--tlen);
		sum1 = (sum1 & 0xffff) + (sum1 >> 16);
		sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	}
	if (_len % 2) {
		sum1 += (uint32_t)(((uint16_t)*data) << 8);
		sum2 += sum1;
		sum1 = (sum1 & 0xffff) + (sum1 >> 16);
		sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	}
	sum1 = (sum1 & 0xffff) + (sum1 >> 16);
	sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	return (sum2 << 16) | sum1;
}

/* sh5_fletcher32 is HDF5's, bit for bit: random, all-0xff (the largest
 * sums), all-zero buffers, every length to 3000 and long ones. */
START_TEST(test_fletcher32_hdf5)
{
	size_t big = 200000, len, i;
	unsigned char *b = malloc(big);
	unsigned seed = 11;
	int kind;

	ck_assert_ptr_nonnull(b);
	for (kind = 0; kind < 3; kind++) {
		for (i = 0; i < big; i++)
			b[i] = kind == 0 ? (unsigned char)rand_r(&seed) :
			       kind == 1 ? 0xff : 0;
		for (len = 0; len <= 3000; len++)
			ck_assert_uint_eq(sh5_fletcher32(b + len % 8, len),
					  ref_fletcher32(b + len % 8, len));
		for (len = 3001; len < big; len = len * 3 + 7)
			ck_assert_uint_eq(sh5_fletcher32(b, len),
					  ref_fletcher32(b, len));
		ck_assert_uint_eq(sh5_fletcher32(b, big),
				  ref_fletcher32(b, big));
	}
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zinc");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_zinc_inflates, 0,
			    (int)(sizeof(shapes) / sizeof(shapes[0])) * NMODES);
	tcase_add_test(tc, test_zinc_bad_args);
	tcase_add_test(tc, test_zrecode_symbols);
	tcase_add_test(tc, test_zinc_hdf5_reads);
	tcase_add_test(tc, test_fletcher32_hdf5);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
