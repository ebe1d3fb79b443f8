/*
 * test_evlog_proc.c - the task-side event log against its surroundings:
 * forks, kill -9, other threads, a file system without fallocate(), the
 * mapped window's size, bad environments, errors reported once.
 * Each test runs in a forked child of its own (a fresh log).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <dirent.h>

#include "events/sh5ev.h"
#include "evtest.h"

#define T0 1700000000000000000ll

/* A file system without fallocate(): this definition interposes libc's
 * for the library linked into this program while g_no_fallocate. */
static int g_no_fallocate;

int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (g_no_fallocate) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

/* ------------------------------------------------------ fork, threads */

START_TEST(test_evlog_forked_child_records_nothing)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char name[256];
	pid_t pid;
	int i, status;

	evtest_start("4096", NULL);
	for (i = 0; i < 150; i++)	/* one block written already */
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 1, 0, -1, 0, T0 + i);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ok = sh5_evlog_on() == 0 && sh5_ev_region("child") == -1;

		for (i = 0; i < 5000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 2, 0, -1, 0,
					T0 + 1000 + i);
		sh5_evlog_close();
		exit(ok ? 0 : 3);	/* atexit handlers run too */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < 10; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 3, 0, -1, 0, T0 + 500 + i);
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.pid, (uint32_t)getpid());
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_uint_eq(got.nevents, 160);
	for (i = 0; i < 160; i++)
		ck_assert_uint_eq(got.events[i].id, i < 150 ? 1 : 3);
	evtest_got_free(&got);
}
END_TEST

static off_t file_size(const char *name)
{
	struct stat st;

	ck_assert_int_eq(stat(evtest_path(name), &st), 0);
	return st.st_size;
}

/* kill -9 loses the current block only: the file holds whole blocks,
 * none damaged; with the default writer (map) followed by the unwritten
 * space the file was extended by, which the reader stops at; with sync,
 * nothing after them. */
START_TEST(test_evlog_kill9_loses_current_block)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096);
	char name[256];
	pid_t pid;
	int i, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (_i == 1)
			setenv("SH5_EVENTS_WRITER", "sync", 1);
		evtest_start("4096", NULL);
		for (i = 0; i < 1000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, (uint32_t)i, 0,
					-1, 0, T0 + i);
		raise(SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.blocks, 1000 / cap);
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_int_eq(info.torn_tail, 0);
	ck_assert_int_eq(info.truncated, 0);
	ck_assert_uint_eq(got.nevents, 1000 / cap * cap);
	for (i = 0; i < (int)got.nevents; i++)
		ck_assert_uint_eq(got.events[i].id, (uint32_t)i);
	if (_i == 0) {
		/* extended by the first window (1 MiB) past block 0 */
		ck_assert_int_eq(file_size(name),
				 SH5EV_HEADER_SIZE + (1 + 256) * 4096);
		ck_assert_uint_eq(info.unwritten,
				  (uint64_t)(256 + 1 - 1000 / cap) * 4096);
		ck_assert_ptr_nonnull(strstr(info.first_problem,
					     "unfinished block 9"));
	} else {
		ck_assert_int_eq(file_size(name),
				 SH5EV_HEADER_SIZE + 1000 / cap * 4096);
		ck_assert_uint_eq(info.unwritten, 0);
	}
	evtest_got_free(&got);
}
END_TEST

/* Where fallocate() fails the default writer falls back to pwrite():
 * whole blocks, nothing extended, a kill -9 loses the current block. */
START_TEST(test_evlog_map_fallback)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096);
	char name[256];
	pid_t pid;
	int i, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		g_no_fallocate = 1;
		evtest_start("4096", NULL);
		for (i = 0; i < 1000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, (uint32_t)i, 0,
					-1, 0, T0 + i);
		raise(SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(file_size(name),
			 SH5EV_HEADER_SIZE + 1000 / cap * 4096);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.blocks, 1000 / cap);
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_uint_eq(info.unwritten, 0);
	ck_assert_uint_eq(got.nevents, 1000 / cap * cap);
	for (i = 0; i < (int)got.nevents; i++)
		ck_assert_uint_eq(got.events[i].id, (uint32_t)i);
	evtest_got_free(&got);
}
END_TEST

/* The mapped file never grows past SH5_EVENTS_MAX, not even ahead, and
 * a normal close cuts it back to its whole blocks (LOST included); a
 * reader cap below the extended size does not mark a killed task's file
 * truncated when its data end before the cap. */
START_TEST(test_evlog_map_size)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096);
	char name[256];
	pid_t pid;
	int i, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		evtest_start("4096", "40000");	/* 9 blocks */
		for (i = 0; i < 1000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, (uint32_t)i, 0,
					-1, 0, T0 + i);
		ck_assert_int_eq(evtest_files(name), 1);
		ck_assert_int_eq(file_size(name), SH5EV_HEADER_SIZE +
						  9 * 4096);
		exit(0);	/* atexit: close */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(file_size(name), SH5EV_HEADER_SIZE + 9 * 4096);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.blocks, 9);
	ck_assert_uint_eq(info.unwritten, 0);
	ck_assert_uint_eq(got.nevents, 9 * cap - 1 + 1);
	ck_assert_uint_eq(got.events[got.nevents - 1].kind, SH5EV_K_LOST);
	ck_assert_uint_eq(got.events[got.nevents - 1].bytes,
			  1000 - (9 * cap - 1));
	evtest_got_free(&got);

	/* a killed task: windows of 256 and 512 blocks after block 0,
	 * 257 blocks of data, the reader's cap 2 MiB */
	ck_assert_int_eq(unlink(evtest_path(name)), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		evtest_start("4096", NULL);
		for (i = 0; i < 26000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, (uint32_t)i, 0,
					-1, 0, T0 + i);
		raise(SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(file_size(name), SH5EV_HEADER_SIZE +
					  (1 + 256 + 512) * 4096);
	ck_assert_msg(evtest_read(name, 2 << 20, &got, &info, &err) == 0,
		      "%s", err.text);
	ck_assert_int_eq(info.truncated, 0);
	ck_assert_uint_eq(info.blocks, 26000 / cap);
	ck_assert_uint_eq(info.unwritten,
			  (uint64_t)(1 + 256 + 512 - 26000 / cap) * 4096);
	ck_assert_uint_eq(got.nevents, 26000 / cap * cap);
	evtest_got_free(&got);
}
END_TEST

static void *other_thread(void *arg)
{
	int i;

	(void)arg;
	if (sh5_evlog_on() || sh5_ev_region("other") != -1)
		return (void *)1;
	for (i = 0; i < 100; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 9, 0, -1, 0, T0);
	return NULL;
}

START_TEST(test_evlog_other_thread_counted_lost)
{
	struct sh5_evspill_info info;
	struct sh5_evlog_stats st;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char name[256];
	pthread_t t;
	void *ret;
	int i;

	evtest_start(NULL, NULL);
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	for (i = 0; i < 10; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 1, 0, -1, 0, T0 + i);
	sh5_evlog_stats(&st);
	ck_assert_uint_eq(st.recorded, 10);
	ck_assert_uint_eq(st.lost, 100);
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(got.nevents, 11);
	ck_assert_uint_eq(got.events[10].kind, SH5EV_K_LOST);
	ck_assert_uint_eq(info.lost, 100);
	evtest_got_free(&got);
}
END_TEST

/* --------------------------------------------------------------- errors */

/* Run fn with stderr going to a file; return what it printed. */
static void capture_stderr(void (*fn)(void), char *out, size_t size)
{
	char path[128];
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stderr", evtest_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	saved = dup(2);
	dup2(fd, 2);
	fn();
	dup2(saved, 2);
	close(saved);
	n = pread(fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

static void record_into_missing_dir(void)
{
	int i;

	setenv("SH5_EVENTS_DIR", "/nonexistent/sh5ev", 1);
	unsetenv("SH5_EVENTS_PREFIX");
	unsetenv("SLURM_PROCID");
	setenv("SH5_EVENTS_BUFFER", "4096", 1);
	ck_assert_int_eq(sh5_evlog_open(), 1);
	for (i = 0; i < 1000; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 1, 0, -1, 0, T0 + i);
	ck_assert_int_eq(sh5_evlog_on(), 0);
	sh5_evlog_close();
}

START_TEST(test_evlog_error_reported_once)
{
	char out[1024], want[256];

	capture_stderr(record_into_missing_dir, out, sizeof(out));
	snprintf(want, sizeof(want),
		 "sh5ev: /nonexistent/sh5ev/events.0.%ld.sh5ev: "
		 "No such file or directory\n", (long)getpid());
	ck_assert_str_eq(out, want);
}
END_TEST

static void bad_buffer(void)
{
	setenv("SH5_EVENTS_DIR", evtest_dir, 1);
	setenv("SH5_EVENTS_BUFFER", "lots", 1);
	ck_assert_int_eq(sh5_evlog_open(), 0);
	ck_assert_int_eq(sh5_ev_region("x"), -1);
}

START_TEST(test_evlog_bad_environment)
{
	char out[1024];

	capture_stderr(bad_buffer, out, sizeof(out));
	ck_assert_str_eq(out,
			 "sh5ev: SH5_EVENTS_BUFFER: not a size in bytes\n");
	ck_assert_int_eq(evtest_files(NULL), 0);
}
END_TEST

/* An existing file of the same name (or a symlink) is never written
 * through: O_EXCL|O_NOFOLLOW. */
static void preexisting(void)
{
	char path[256];
	int i;

	snprintf(path, sizeof(path), "%s/t.3.%ld.sh5ev", evtest_dir,
		 (long)getpid());
	ck_assert_int_eq(symlink("/etc/passwd-not-here", path), 0);
	evtest_start("4096", NULL);
	for (i = 0; i < 200; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 1, 0, -1, 0, T0 + i);
	sh5_evlog_close();
}

START_TEST(test_evlog_never_follows_existing)
{
	char out[1024];
	struct stat sb;

	capture_stderr(preexisting, out, sizeof(out));
	ck_assert_msg(strstr(out, "File exists") != NULL, "%s", out);
	ck_assert_int_ne(stat("/etc/passwd-not-here", &sb), 0);
}
END_TEST

/* A relative SH5_EVENTS_DIR means the working directory of the open,
 * even when the process moves before the first block is written. */
START_TEST(test_evlog_relative_dir)
{
	char path[512];
	struct stat sb;
	int i;

	ck_assert_int_eq(chdir(evtest_dir), 0);
	ck_assert_int_eq(mkdir("sub", 0700), 0);
	setenv("SH5_EVENTS_DIR", "sub", 1);
	unsetenv("SH5_EVENTS_PREFIX");
	unsetenv("SLURM_PROCID");
	unsetenv("SH5_EVENTS_BUFFER");
	unsetenv("SH5_EVENTS_MAX");
	ck_assert_int_eq(sh5_evlog_open(), 1);
	ck_assert_int_eq(chdir("/"), 0);
	for (i = 0; i < 10; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, 1, 0, -1, 0, T0 + i);
	sh5_evlog_close();
	snprintf(path, sizeof(path), "%s/sub/events.0.%ld.sh5ev", evtest_dir,
		 (long)getpid());
	ck_assert_msg(stat(path, &sb) == 0, "%s", path);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(evtest_path("sub")), 0);
}
END_TEST

static void bad_writer(void)
{
	setenv("SH5_EVENTS_DIR", evtest_dir, 1);
	setenv("SH5_EVENTS_WRITER", "async", 1);
	ck_assert_int_eq(sh5_evlog_open(), 0);
}

START_TEST(test_evlog_writer_bad_value)
{
	char out[1024];

	capture_stderr(bad_writer, out, sizeof(out));
	ck_assert_str_eq(out, "sh5ev: SH5_EVENTS_WRITER: not \"map\", "
			      "\"sync\" or \"thread\"\n");
}
END_TEST

static Suite *evlog_proc_suite(void)
{
	Suite *s = suite_create("evlog_proc");
	TCase *tc = tcase_create("evlog_proc");

	tcase_add_checked_fixture(tc, evtest_setup, evtest_teardown);

	tcase_add_test(tc, test_evlog_forked_child_records_nothing);
	tcase_add_test(tc, test_evlog_other_thread_counted_lost);
	tcase_add_test(tc, test_evlog_error_reported_once);
	tcase_add_test(tc, test_evlog_bad_environment);
	tcase_add_test(tc, test_evlog_never_follows_existing);
	tcase_add_test(tc, test_evlog_relative_dir);
	tcase_add_loop_test(tc, test_evlog_kill9_loses_current_block, 0, 2);
	tcase_add_test(tc, test_evlog_map_size);
	tcase_add_test(tc, test_evlog_map_fallback);
	tcase_add_test(tc, test_evlog_writer_bad_value);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(evlog_proc_suite());
	int failed;

	/* one log per process: each test needs a fresh child */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
