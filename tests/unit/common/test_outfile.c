/* test_outfile.c - common/outfile: the output discipline and input
 * checks shared by every sh5merge command; sh5_errprintf's long texts. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outfile.h"
#include "common/sort.h"
#include "common/error.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_outfile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int nfiles(void)
{
	char cmd[128];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

START_TEST(test_outfile_commit_renames)
{
	struct sh5_outfile o;
	struct sh5_error err = { "" };
	char path[128], buf[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/out.txt", dir);
	ck_assert_int_eq(sh5_outfile_open(&o, path, NULL, 0, &err), 0);
	ck_assert_ptr_nonnull(o.tmp);
	ck_assert_int_eq(access(path, F_OK), -1); /* not before commit */
	fputs("hello", sh5_outfile_fp(&o));
	ck_assert_int_eq(sh5_outfile_commit(&o, &err), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(nfiles(), 1);
}
END_TEST

START_TEST(test_outfile_abort_leaves_nothing)
{
	struct sh5_outfile o;
	struct sh5_error err = { "" };
	char path[128];

	snprintf(path, sizeof(path), "%s/out.txt", dir);
	ck_assert_int_eq(sh5_outfile_open(&o, path, NULL, 0, &err), 0);
	fputs("partial", sh5_outfile_fp(&o));
	sh5_outfile_abort(&o);
	sh5_outfile_abort(&o); /* idempotent */
	ck_assert_int_eq(nfiles(), 0);
}
END_TEST

START_TEST(test_outfile_refuses_its_input)
{
	struct sh5_outfile o;
	struct sh5_error err = { "" };
	char path[128], alias[160];
	const char *in = path;
	FILE *f;

	snprintf(path, sizeof(path), "%s/in.txt", dir);
	snprintf(alias, sizeof(alias), "%s/./in.txt", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("keep", f);
	fclose(f);
	ck_assert_int_eq(sh5_outfile_open(&o, alias, &in, 1, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "also an input"));
	ck_assert_int_eq(nfiles(), 1);
}
END_TEST

START_TEST(test_outfile_device_in_place)
{
	struct sh5_outfile o;
	struct sh5_error err = { "" };
	struct stat st;

	/* /dev/full: written in place, the write error names it. */
	ck_assert_int_eq(sh5_outfile_open(&o, "/dev/full", NULL, 0, &err), 0);
	ck_assert_ptr_null(o.tmp);
	fputs("x", sh5_outfile_fp(&o));
	ck_assert_int_eq(sh5_outfile_commit(&o, &err), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_ptr_nonnull(strstr(err.text, "/dev/full: write failed: "));
	ck_assert_int_eq(stat("/dev/full", &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_int_eq(sh5_outfile_open(&o, "/dev/null", NULL, 0, &err), 0);
	fputs("x", sh5_outfile_fp(&o));
	ck_assert_int_eq(sh5_outfile_commit(&o, &err), 0);
}
END_TEST

START_TEST(test_infile_check_kinds)
{
	struct sh5_error err = { "" };
	char path[128];

	ck_assert_int_eq(sh5_infile_check(dir, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "is a directory"));
	ck_assert_int_eq(sh5_infile_check("/dev/null", &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "character device"));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(sh5_infile_check(path, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "is a FIFO"));
	ck_assert_int_eq(sh5_infile_check("", &err), -1);
}
END_TEST

START_TEST(test_errprintf_long_keeps_reason)
{
	struct sh5_error err;
	char *p = malloc(9000);

	memset(p, 'a', 8999);
	p[8999] = '\0';
	sh5_errprintf(&err, "%s: %s", p, "the reason");
	ck_assert_uint_eq(strlen(err.text), sizeof(err.text) - 1);
	ck_assert_ptr_nonnull(strstr(err.text, "..."));
	ck_assert_ptr_nonnull(strstr(err.text, ": the reason"));
	/* errp->text as an argument of its own message */
	snprintf(err.text, sizeof(err.text), "inner");
	sh5_errprintf(&err, "outer: %s", err.text);
	ck_assert_str_eq(err.text, "outer: inner");
	free(p);
}
END_TEST

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

START_TEST(test_qsort_null_empty)
{
	int v[3] = { 3, 1, 2 };

	sh5_qsort(NULL, 0, sizeof(int), cmp_int); /* no UB, no crash */
	sh5_qsort(v, 3, sizeof(int), cmp_int);
	ck_assert_int_eq(v[0], 1);
	ck_assert_int_eq(v[2], 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outfile");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_outfile_commit_renames);
	tcase_add_test(tc, test_outfile_abort_leaves_nothing);
	tcase_add_test(tc, test_outfile_refuses_its_input);
	tcase_add_test(tc, test_outfile_device_in_place);
	tcase_add_test(tc, test_infile_check_kinds);
	tcase_add_test(tc, test_errprintf_long_keeps_reason);
	tcase_add_test(tc, test_qsort_null_empty);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
