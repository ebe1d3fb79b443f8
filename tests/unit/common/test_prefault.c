/* test_prefault.c - sh5_prefault() makes pages present, keeps their
 * contents, and is harmless on odd ranges */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <check.h>

#include "common/prefault.h"

/* Pages of [p, p + n) resident now (mincore). */
static size_t resident(void *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), k, r = 0;
	unsigned char *v = calloc(n / pg + 1, 1);

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(mincore(p, n, v), 0);
	for (k = 0; k < n / pg; k++)
		r += v[k] & 1;
	free(v);
	return r;
}

/* Linux 5.14 or later (MADV_POPULATE_WRITE). */
static int kernel_has_populate(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) < 2)
		return 0;
	return major > 5 || (major == 5 && minor >= 14);
}

START_TEST(test_fresh_pages_present)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = 256 * pg;
	unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t k;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_uint_eq(resident(p, n), 0);
	/* Half of it, from inside a page to inside another. */
	sh5_prefault(p + pg / 2, 128 * pg);
	if (kernel_has_populate()) {
		ck_assert_uint_eq(resident(p, n), 129);
		ck_assert_uint_eq(resident(p + 129 * pg, 127 * pg), 0);
	}
	/* Zero pages, writable. */
	for (k = 0; k < n; k++)
		ck_assert_uint_eq(p[k], 0);
	p[0] = 1;
	p[n - 1] = 2;
	munmap(p, n);
}
END_TEST

START_TEST(test_contents_kept)
{
	size_t n = (size_t)3 << 20, k;
	unsigned char *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	for (k = 0; k < n; k++)
		p[k] = (unsigned char)(k * 131 + 7);
	sh5_prefault(p, n);
	sh5_prefault(p + 1, n - 2);
	for (k = 0; k < n; k++)
		ck_assert_uint_eq(p[k], (unsigned char)(k * 131 + 7));
	free(p);
}
END_TEST

START_TEST(test_nothing)
{
	char c = 'x';

	sh5_prefault(NULL, 4096);
	sh5_prefault(&c, 0);
	sh5_prefault(&c, 1);
	ck_assert_int_eq(c, 'x');
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefault");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_fresh_pages_present);
	tcase_add_test(tc, test_contents_kept);
	tcase_add_test(tc, test_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
