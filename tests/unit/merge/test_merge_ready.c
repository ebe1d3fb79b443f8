/* test_merge_ready.c - sh5_merge_ready (src/merge/ready.h): a job's
 * node-step files are complete when every file was closed by its writer
 * and every step has the files of all its nodes.  The file still being
 * written is held open (flushed) by a writer in another process. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "merge/ready.h"
#include "profile/series.h"
#include "profile/writer.h"

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-test-ready-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	sh5_error_h5_silence();
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *const tnames[] = { "CPUTime", "RSS" };
static const enum sh5_ftype ttypes[] = { SH5_FT_DOUBLE, SH5_FT_U64 };

/* A writer of job 9, step 0, node "node<idx+1>" of nnodes, 5 samples of
 * one task, flushed.  NULL on failure (message on stderr). */
static struct sh5_writer *open_node(int idx, int nnodes)
{
	char path[512], node[32];
	struct sh5_error err = { "" };
	struct sh5_series *s;
	struct sh5_writer *w;
	int id, r;

	snprintf(node, sizeof(node), "node%d", idx + 1);
	snprintf(path, sizeof(path), "%s/9_0_%s.h5", tmpdir, node);
	if (!(w = sh5_writer_create(path, -1, node, NULL, &err)))
		goto error;
	sh5_writer_attr_int(w, "Node Index", idx, NULL);
	sh5_writer_attr_int(w, "Number of Tasks", 1, NULL);
	sh5_writer_attr_u32(w, "Job ID", 9, NULL);
	sh5_writer_attr_str(w, "Step ID", "0", NULL);
	sh5_writer_attr_u32(w, "Number of Nodes", (uint32_t)nnodes, NULL);
	if (!(s = sh5_series_create("Tasks", "0", tnames, ttypes, 2, &err)) ||
	    (id = sh5_writer_add_series(w, "Tasks", s, 1.0, &err)) < 0)
		goto error;
	for (r = 0; r < 5; r++) {
		union sh5_value v[6] = { { 0 } };

		v[0].u = (uint64_t)r;
		v[1].u = 1700000000 + (uint64_t)r;
		v[2].i = (int64_t)v[1].u * 1000000000;
		v[3].d = r / 4.0;
		v[4].u = (uint64_t)r;
		if (sh5_writer_append(w, id, v) < 0)
			goto error;
	}
	if (sh5_writer_flush(w, &err) < 0)
		goto error;
	return w;
error:
	fprintf(stderr, "writer of node %d: %s\n", idx + 1, err.text);
	return NULL;
}

/* Another process writes node idx and keeps the file open (flushed)
 * until a byte arrives on *tell; then it closes it (Totals) and exits. */
static pid_t writer_process(int idx, int nnodes, int *tell)
{
	int go[2], ready[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sh5_writer *w = open_node(idx, nnodes);

		close(go[1]);
		close(ready[0]);
		if (!w || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(sh5_writer_close(w, NULL) < 0 ? 1 : 0);
	}
	close(go[0]);
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*tell = go[1];
	return pid;
}

START_TEST(test_merge_ready_states)
{
	struct sh5_error err = { "" };
	struct sh5_ready r;
	char p[600];
	int tell, st;
	pid_t pid;
	FILE *f;

	/* No files yet. */
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 9, NULL, 0, &r, &err), 0);
	ck_assert_uint_eq(r.files, 0);
	ck_assert_ptr_nonnull(strstr(r.why, "no node-step files of job 9"));

	/* node1 closed, node2 still open in its writer. */
	ck_assert_int_eq(sh5_writer_close(open_node(0, 2), &err), 0);
	pid = writer_process(1, 2, &tell);
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 9, NULL, 0, &r, &err), 0);
	ck_assert_uint_eq(r.files, 2);
	ck_assert_uint_eq(r.complete, 1);
	ck_assert_msg(strstr(r.why, "9_0_node2.h5: not closed by its writer "
			     "yet (no /node2/Totals)"), "%s", r.why);

	/* The writer closes it: ready. */
	ck_assert_int_eq(write(tell, "c", 1), 1);
	close(tell);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 9, NULL, 0, &r, &err), 1);
	ck_assert_uint_eq(r.files, 2);
	ck_assert_uint_eq(r.complete, 2);
	ck_assert_str_eq(r.why, "");
	/* Another job's files are not looked at. */
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 99, NULL, 0, &r, &err), 0);
	ck_assert_uint_eq(r.files, 0);

	/* A node file missing: the step says it runs on 2 nodes. */
	snprintf(p, sizeof(p), "%s/9_0_node2.h5", tmpdir);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 9, NULL, 0, &r, &err), 0);
	ck_assert_msg(strstr(r.why, "step 0: 1 of 2 node files"), "%s",
		      r.why);

	/* Not HDF5: named, not ready. */
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs("not hdf5\n", f);
	fclose(f);
	ck_assert_int_eq(sh5_merge_ready(tmpdir, 9, NULL, 0, &r, &err), 0);
	ck_assert_uint_eq(r.complete, 1);
	ck_assert_msg(strstr(r.why, "9_0_node2.h5"), "%s", r.why);

	/* A directory that cannot be read. */
	ck_assert_int_eq(sh5_merge_ready("/nonexistent/x", 9, NULL, 0, &r,
					 &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/x"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("merge_ready");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_merge_ready_states);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
