/*
 * test_writer_threads.c - the writer under the plugin's threading: several
 * gather threads append while a flush thread flushes and a late thread
 * keeps appending across close.  Run under helgrind by
 * tests/tools/writer_helgrind.sh as well.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <hdf5.h>

#include "profile/writer.h"

#define NTHREADS 4
#define PER_THREAD 2000

static struct sh5_writer *w;
static int ids[NTHREADS];
static atomic_int stop_flush;

static void *appender(void *arg)
{
	long k = (long)arg;
	/* Room for the whole record the writer copies (a Task series' has
	 * slots beyond its two fields: AddressSanitizer saw the copy read
	 * past a SH5_TIME_SLOTS + 2 array). */
	union sh5_value rec[SH5_TIME_SLOTS + 16] = { { 0 } };
	long i;

	for (i = 0; i < PER_THREAD; i++) {
		rec[0].u = i;
		rec[1].u = 1700000000 + i;
		rec[2].i = i;
		rec[3].u = k;
		rec[4].d = i * 0.25;
		ck_assert_int_eq(sh5_writer_append(w, ids[k], rec), 0);
	}
	return NULL;
}

static void *flusher(void *arg)
{
	struct sh5_error err;

	(void)arg;
	while (!atomic_load(&stop_flush)) {
		ck_assert_msg(sh5_writer_flush(w, &err) == 0, "%s", err.text);
		usleep(1000);
	}
	return NULL;
}

START_TEST(test_writer_concurrent_appends)
{
	char dir[] = "/tmp/sh5-test-threads-XXXXXX", path[64], name[8];
	const char *fields[] = { "Id", "Value" };
	enum sh5_ftype types[] = { SH5_FT_U64, SH5_FT_DOUBLE };
	struct sh5_error err;
	pthread_t th[NTHREADS], fl;
	struct sh5_writer_stats st;
	long k;
	hid_t f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.h5", dir);
	w = sh5_writer_create(path, -1, "n", NULL, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	for (k = 0; k < NTHREADS; k++) {
		snprintf(name, sizeof(name), "%ld", k);
		ids[k] = sh5_writer_add_series(
			w, "Tasks",
			sh5_series_create("Tasks", name, fields, types, 2, &err),
			1.0, &err);
		ck_assert_int_ge(ids[k], 0);
	}
	pthread_create(&fl, NULL, flusher, NULL);
	for (k = 0; k < NTHREADS; k++)
		pthread_create(&th[k], NULL, appender, (void *)k);
	for (k = 0; k < NTHREADS; k++)
		pthread_join(th[k], NULL);
	atomic_store(&stop_flush, 1);
	pthread_join(fl, NULL);
	sh5_writer_stats(w, &st);
	ck_assert_uint_eq(st.dropped, 0);
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	for (k = 0; k < NTHREADS; k++) {
		char p[32];
		hid_t d, sp;

		snprintf(p, sizeof(p), "/n/Tasks/%ld", k);
		d = H5Dopen2(f, p, H5P_DEFAULT);
		sp = H5Dget_space(d);
		ck_assert_int_eq(H5Sget_simple_extent_npoints(sp), PER_THREAD);
		H5Sclose(sp);
		H5Dclose(d);
	}
	H5Fclose(f);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("writer_threads");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_writer_concurrent_appends);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
