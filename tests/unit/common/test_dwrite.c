/* test_dwrite.c - common/dwrite: blocks appended without the page cache
 * give the file the same bytes as ordinary writes, leave the descriptor
 * as it was, refuse what they cannot write, and report failed writes. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dwrite.h"

#define CAP (64u << 10)

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_dwrite.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The whole file at path (malloc'd), its size in *n. */
static char *slurp(const char *path, size_t *n)
{
	struct stat st;
	char *b;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*n = (size_t)st.st_size;
	b = malloc(*n + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(pread(fd, b, *n, 0), (ssize_t)*n);
	close(fd);
	return b;
}

/* A file of head bytes written the ordinary way, then total bytes
 * through dwrite in pieces of up to step bytes, submitted whenever the
 * block has no room for the next (a piece cut to the room left): the file must hold exactly these
 * bytes, fd's offset be at the end and O_DIRECT be off again. */
static void roundtrip(const char *d, size_t head, size_t total, size_t step)
{
	char path[128], *buf, *want, *got;
	size_t len, done = 0, n, i;
	struct sh5_dwrite *w;
	int fd;

	snprintf(path, sizeof(path), "%s/f.%zu.%zu.%zu", d, head, total,
		 step);
	want = malloc(head + total);
	ck_assert_ptr_nonnull(want);
	for (i = 0; i < head + total; i++)
		want[i] = (char)('a' + (i * 7 + i / 4093) % 26);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, want, head), (ssize_t)head);
	w = sh5_dwrite_start(fd, CAP, &buf, &len);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(len, head % SH5_DWRITE_ALIGN);
	ck_assert_int_eq(memcmp(buf, want + head - len, len), 0);
	ck_assert_uint_eq((unsigned long)buf % SH5_DWRITE_ALIGN, 0);
	while (done < total) {
		n = total - done < step ? total - done : step;
		if (CAP - len < n) {
			ck_assert_int_eq(sh5_dwrite_submit(w, &buf, &len), 0);
			ck_assert_uint_lt(len, SH5_DWRITE_ALIGN);
		}
		if (n > CAP - len)
			n = CAP - len;
		memcpy(buf + len, want + head + done, n);
		len += n;
		done += n;
	}
	ck_assert_int_eq(sh5_dwrite_finish(w, buf, len), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), (off_t)(head + total));
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_DIRECT, 0);
	/* The descriptor writes on the ordinary way after it. */
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	close(fd);
	got = slurp(path, &n);
	ck_assert_uint_eq(n, head + total + 1);
	ck_assert_int_eq(memcmp(got, want, head + total), 0);
	ck_assert_int_eq(got[n - 1], '\n');
	free(got);
	free(want);
	unlink(path);
}

START_TEST(test_dwrite_same_bytes)
{
	static const size_t heads[] = { 0, 1, 120, 4095, 4096, 4097, 70000 };
	static const size_t steps[] = { 1, 100, 4096, 5000, CAP };
	static const size_t totals[] = { 0, 1, 4095, 4096, 200000, 1 << 20 };
	size_t h, s, t;

	for (h = 0; h < sizeof(heads) / sizeof(heads[0]); h++)
		for (t = 0; t < sizeof(totals) / sizeof(totals[0]); t++)
			for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
				if (steps[s] > 1 || totals[t] <= 200000)
					roundtrip(dir, heads[h], totals[t],
						  steps[s]);
}
END_TEST

/* tmpfs: direct writes, or the ordinary way where it refuses them. */
START_TEST(test_dwrite_tmpfs)
{
	char d[64];

	snprintf(d, sizeof(d), "/dev/shm/test_dwrite.XXXXXX");
	if (!mkdtemp(d))
		return; /* no /dev/shm here */
	roundtrip(d, 120, 300000, 5000);
	roundtrip(d, 0, 4096 * 3, 4096);
	ck_assert_int_eq(rmdir(d), 0);
}
END_TEST

START_TEST(test_dwrite_refuses)
{
	char path[128], *buf = NULL;
	size_t len = 7;
	int p[2], fd;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_ptr_null(sh5_dwrite_start(p[1], CAP, &buf, &len));
	close(p[0]);
	close(p[1]);
	snprintf(path, sizeof(path), "%s/wo", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_ptr_null(sh5_dwrite_start(fd, CAP, &buf, &len));
	close(fd);
	fd = open(path, O_RDWR | O_APPEND);
	ck_assert_ptr_null(sh5_dwrite_start(fd, CAP, &buf, &len));
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_DIRECT, 0);
	close(fd);
	fd = open(path, O_RDWR);
	ck_assert_ptr_null(sh5_dwrite_start(fd, SH5_DWRITE_ALIGN, &buf, &len));
	close(fd);
	ck_assert_ptr_null(buf);
	ck_assert_uint_eq(len, 7);
	ck_assert_int_eq(sh5_dwrite_finish(NULL, NULL, 0), 0);
}
END_TEST

/* A write the file refuses (past RLIMIT_FSIZE: EFBIG) is reported by
 * the next call, and finish reports it again. */
START_TEST(test_dwrite_reports_failure)
{
	struct rlimit old, lim;
	char path[128], *buf;
	size_t len, i;
	struct sh5_dwrite *w;
	int fd, failed = 0;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 3 * CAP;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	snprintf(path, sizeof(path), "%s/big", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	w = sh5_dwrite_start(fd, CAP, &buf, &len);
	ck_assert_ptr_nonnull(w);
	for (i = 0; i < 16 && !failed; i++) {
		memset(buf + len, 'x', CAP - len);
		len = CAP;
		errno = 0;
		if (sh5_dwrite_submit(w, &buf, &len) < 0) {
			ck_assert_int_eq(errno, EFBIG);
			failed = 1;
		}
	}
	ck_assert_int_eq(failed, 1);
	errno = 0;
	ck_assert_int_eq(sh5_dwrite_finish(w, buf, len), -1);
	ck_assert_int_eq(errno, EFBIG);
	close(fd);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dwrite");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dwrite_same_bytes);
	tcase_add_test(tc, test_dwrite_tmpfs);
	tcase_add_test(tc, test_dwrite_refuses);
	tcase_add_test(tc, test_dwrite_reports_failure);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
