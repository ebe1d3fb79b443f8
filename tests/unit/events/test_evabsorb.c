/*
 * test_evabsorb.c - the absorption of spill files (evabsorb) into the
 * node-step file on crafted, partly hostile spill files: good, symlink,
 * FIFO, other owner, torn tail, bad block checksum, version mismatch,
 * beyond the cap, duplicate task, foreign task, header not matching its
 * name.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "events/evabsorb.h"
#include "events/evformat.h"
#include "events/evstore.h"
#include "profile/writer.h"

#include "evstoretest.h"

/* Absorb everything in tmpdir into a fresh file; returns the results. */
static struct sh5_evabsorb_file *absorb(const char *h5, uint64_t max,
					const uint32_t *tasks, size_t ntasks,
					size_t *n, hid_t *fp, hid_t *nodep)
{
	struct sh5_evabsorb_params p;
	struct sh5_evabsorb_file *files = NULL;
	struct sh5_error err = { "" };
	struct sh5_evstore *es;
	size_t ignored = 99;

	*fp = new_file(h5, nodep);
	es = sh5_evstore_open(*nodep, 4, &err);
	ck_assert_msg(es, "%s", err.text);
	memset(&p, 0, sizeof(p));
	p.dirfd = open(tmpdir, O_DIRECTORY | O_RDONLY);
	ck_assert(p.dirfd >= 0);
	p.prefix = PREFIX;
	p.uid = geteuid();
	p.gid = getegid();
	p.max_bytes = max;
	p.tasks = tasks;
	p.ntasks = ntasks;
	ck_assert_msg(sh5_evabsorb(&p, es, &files, n, &ignored, &err) == 0,
		      "%s", err.text);
	ck_assert_uint_eq(ignored, 0);
	close(p.dirfd);
	sh5_evstore_close(es);
	return files;
}

static const struct sh5_evabsorb_file *
find(const struct sh5_evabsorb_file *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	ck_abort_msg("no result for %s", name);
	return NULL;
}

START_TEST(test_evabsorb_good_files_removed)
{
	struct sh5_evabsorb_file *v;
	size_t n, ev0, ev1;
	char line[512];
	hid_t f, node;

	ev0 = make_spill(tmpdir, 0, 100, 300, NULL); /* several blocks */
	ev1 = make_spill(tmpdir, 1, 101, 3, NULL);
	/* Not ours: another step's, another node's (whose name starts
	 * like ours), unrelated names. */
	{
		const char *others[] = { "43_0_node1.0.100.sh5ev",
					 "42_0_node10.0.100.sh5ev",
					 PREFIX ".0.100.sh5ev.tmp", "x.h5" };
		char p[512];
		size_t i;
		int fd;

		for (i = 0; i < 4; i++) {
			snprintf(p, sizeof(p), "%s/%s", tmpdir, others[i]);
			fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0600);
			ck_assert(fd >= 0);
			close(fd);
		}
	}
	v = absorb("good.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].name, PREFIX ".0.100.sh5ev");
	ck_assert_int_eq(v[0].status, SH5_EVABSORB_REMOVED);
	ck_assert_int_eq(v[1].status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(v[0].records, ev0);
	ck_assert_uint_eq(v[1].records, ev1);
	ck_assert(!sh5_evabsorb_notable(&v[0]));
	sh5_evabsorb_describe(&v[0], line, sizeof(line));
	ck_assert_msg(strstr(line, "events absorbed") &&
		      strstr(line, "removed"), "%s", line);
	ck_assert(!file_exists(v[0].name) && !file_exists(v[1].name));
	ck_assert(file_exists("42_0_node10.0.100.sh5ev") &&
		  file_exists("43_0_node1.0.100.sh5ev"));
	ck_assert_uint_eq(rows(node, "Events/0"), ev0);
	ck_assert_uint_eq(rows(node, "Events/1"), ev1);
	ck_assert_uint_eq(rows(node, "Events/Regions"), 4);
	ck_assert_uint_eq(rows(node, "Events/Comms"), 2);
	ck_assert_uint_eq(rows(node, "Events/CommMembers"), 6);
	ck_assert_int_eq(attr_i64(node, "Events/1", "World Rank"), 1);
	ck_assert_int_eq(attr_i64(node, "Events/1", "World Size"), 128);
	ck_assert_int_eq(attr_i64(node, "Events/0", "Blocks"),
			 (int64_t)v[0].info.blocks);
	ck_assert_int_gt(v[0].info.blocks, 10);
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

START_TEST(test_evabsorb_no_files_no_group)
{
	struct sh5_evabsorb_file *v;
	size_t n;
	hid_t f, node;
	char path[512];
	int fd;

	/* A name of the right shape that is no spill file, refused. */
	snprintf(path, sizeof(path), "%s/%s.0.5.sh5ev", tmpdir, PREFIX);
	fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	ck_assert_int_eq(write(fd, "garbage", 7), 7);
	close(fd);
	v = absorb("none.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(v[0].status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(v[0].name));
	ck_assert(!exists(node, "Events"));
	free(v);
	unlink(path);
	H5Gclose(node);
	H5Fclose(f);
	v = absorb("empty.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 0);
	ck_assert(!exists(node, "Events"));
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

/* The scan that lets a step without events skip the absorption: only
 * names of this step's spill files count. */
START_TEST(test_evabsorb_pending)
{
	struct sh5_evabsorb_params p;
	struct sh5_error err = { "" };
	const char *others[] = { "43_0_node1.0.100.sh5ev",
				 "42_0_node10.0.100.sh5ev",
				 PREFIX ".0.100.sh5ev.tmp", "x.h5" };
	char path[512];
	size_t i;
	int fd;

	memset(&p, 0, sizeof(p));
	p.dirfd = open(tmpdir, O_DIRECTORY | O_RDONLY);
	ck_assert(p.dirfd >= 0);
	p.prefix = PREFIX;
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 0);
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, others[i]);
		fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
		ck_assert(fd >= 0);
		close(fd);
	}
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 0);
	snprintf(path, sizeof(path), "%s/%s.3.77.sh5ev", tmpdir, PREFIX);
	fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 1);
	close(p.dirfd);
	p.dirfd = -1;
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), -1);
	ck_assert(err.text[0]);
}
END_TEST

/* The hostile spill files of test_evabsorb_hostile_files (tasks 0-8 and
 * 99); returns the event records of task 0, those of 4 and 5 in *ev4,
 * *ev5. */
static size_t make_hostile_files(int root, size_t *ev4, size_t *ev5)
{
	char path[512], target[512];
	struct craft c;
	size_t ev0;
	int fd;

	ev0 = make_spill(tmpdir, 0, 100, 10, NULL);
	/* A second file for task 0 (sorts after pid 100). */
	make_spill(tmpdir, 0, 200, 10, NULL);
	/* A symlink to a root-only file. */
	snprintf(target, sizeof(target), "%s/secret", tmpdir);
	fd = open(target, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/%s.1.101%s", tmpdir, PREFIX,
		 SH5EV_SUFFIX);
	ck_assert_int_eq(symlink(target, path), 0);
	/* A FIFO: must not block. */
	snprintf(path, sizeof(path), "%s/%s.2.102%s", tmpdir, PREFIX,
		 SH5EV_SUFFIX);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	/* Another owner's file. */
	make_spill(tmpdir, 3, 103, 3, NULL);
	if (root) {
		snprintf(path, sizeof(path), "%s/%s.3.103%s", tmpdir, PREFIX,
			 SH5EV_SUFFIX);
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
	}
	/* Torn tail: a killed task. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 4, 104, -1, 1000 };
	*ev4 = make_spill(tmpdir, 4, 104, 100, &c);
	/* A damaged block among good ones. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 5, 105, 1, 0 };
	*ev5 = make_spill(tmpdir, 5, 105, 100, &c);
	/* Another format version. */
	c = (struct craft){ SH5EV_FORMAT_VERSION + 1, 6, 106, -1, 0 };
	make_spill(tmpdir, 6, 106, 3, &c);
	/* Far beyond the cap (8 blocks of 4 KiB + header). */
	make_spill(tmpdir, 7, 107, 1000, NULL);
	/* A header that is not of its name's task. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 2, 108, -1, 0 };
	make_spill(tmpdir, 8, 108, 3, &c);
	/* A task of another node. */
	make_spill(tmpdir, 99, 199, 3, NULL);
	return ev0;
}

/* The absorbed but damaged files of test_evabsorb_hostile_files: torn
 * tail (task 4, ev4 records), bad block (5, ev5), beyond the cap (7). */
static void assert_damaged(const struct sh5_evabsorb_file *v, size_t n,
			   hid_t node, size_t ev4, size_t ev5)
{
	const struct sh5_evabsorb_file *r;
	char line[512];

	r = find(v, n, PREFIX ".4.104.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_int_eq(r->info.torn_tail, 1);
	ck_assert(sh5_evabsorb_notable(r));
	ck_assert_msg(r->records == ev4, "%lu of %zu: rejected %lu: %s",
		      (unsigned long)r->records, ev4,
		      (unsigned long)r->info.rejected, r->info.first_problem);
	ck_assert_int_eq(attr_i64(node, "Events/4", "Torn Tail"), 1);

	r = find(v, n, PREFIX ".5.105.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(r->info.blocks_bad, 1);
	ck_assert_uint_lt(r->records, ev5);
	ck_assert_uint_gt(r->records, ev5 / 2);
	ck_assert_uint_eq(rows(node, "Events/5"), r->records);
	ck_assert_int_eq(attr_i64(node, "Events/5", "Blocks Dropped"), 1);
	sh5_evabsorb_describe(r, line, sizeof(line));
	ck_assert_msg(strstr(line, "1 blocks dropped"), "%s", line);

	r = find(v, n, PREFIX ".6.106.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name));
	ck_assert(!exists(node, "Events/6"));

	r = find(v, n, PREFIX ".7.107.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_KEPT);
	ck_assert_int_eq(r->info.truncated, 1);
	ck_assert_uint_le(r->info.blocks, 8);
	ck_assert_uint_gt(r->records, 0);
	ck_assert_uint_le(r->records, 8 * sh5ev_block_capacity(BLOCK));
	ck_assert(file_exists(r->name));
	ck_assert_int_eq(attr_i64(node, "Events/7", "Truncated"), 1);
}

START_TEST(test_evabsorb_hostile_files)
{
	const uint32_t tasks[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct sh5_evabsorb_file *v;
	const struct sh5_evabsorb_file *r;
	char line[512];
	size_t n, ev4, ev5, ev0;
	hid_t f, node;
	int root = geteuid() == 0;

	ev0 = make_hostile_files(root, &ev4, &ev5);

	alarm(60);	/* a FIFO opened blocking would hang here */
	v = absorb("hostile.h5", SH5EV_HEADER_SIZE + 8 * BLOCK, tasks, 10, &n,
		   &f, &node);
	alarm(0);
	ck_assert_uint_eq(n, 11);

	r = find(v, n, PREFIX ".0.100.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(rows(node, "Events/0"), ev0);
	r = find(v, n, PREFIX ".0.200.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name));
	sh5_evabsorb_describe(r, line, sizeof(line));
	ck_assert_msg(strstr(line, "refused") && strstr(line, "kept") &&
		      strstr(line, r->name), "%s", line);

	r = find(v, n, PREFIX ".1.101.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name) && file_exists("secret"));
	ck_assert(!exists(node, "Events/1"));
	r = find(v, n, PREFIX ".2.102.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/2"));
	r = find(v, n, PREFIX ".3.103.sh5ev");
	if (root) {
		ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
		ck_assert(file_exists(r->name));
		ck_assert(!exists(node, "Events/3"));
	}

	assert_damaged(v, n, node, ev4, ev5);

	r = find(v, n, PREFIX ".8.108.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/8"));
	ck_assert(!exists(node, "Events/2"));
	r = find(v, n, PREFIX ".99.199.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/99"));

	/* The refused files left no rows behind: 2 regions per task
	 * absorbed (0, 4, 5, 7). */
	ck_assert_uint_eq(rows(node, "Events/Regions"), 8);
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

START_TEST(test_evabsorb_open_dir_refuses_symlink)
{
	struct sh5_error err = { "" };
	char path[512], other[512];
	int fd;

	snprintf(path, sizeof(path), "%s/user", tmpdir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	fd = sh5_evabsorb_open_dir(tmpdir, "user", geteuid(), &err);
	ck_assert_msg(fd >= 0, "%s", err.text);
	close(fd);
	ck_assert_int_eq(sh5_evabsorb_open_dir(tmpdir, "user", geteuid() + 1,
					       &err), -1);
	ck_assert_msg(strstr(err.text, "not owned"), "%s", err.text);
	snprintf(other, sizeof(other), "%s/link", tmpdir);
	ck_assert_int_eq(symlink(path, other), 0);
	ck_assert_int_eq(sh5_evabsorb_open_dir(tmpdir, "link", geteuid(),
					       &err), -1);
	ck_assert_msg(strstr(err.text, "symlink"), "%s", err.text);
}
END_TEST

/* sh5_writer_call: the absorption runs on the writer's node group, and
 * the writer closes the file as always (totals after the events). */
struct call_arg {
	int dirfd;
	struct sh5_evabsorb_file *files;
	size_t n;
};

static int call_absorb(hid_t node, void *arg, struct sh5_error *errp)
{
	struct call_arg *a = arg;
	struct sh5_evabsorb_params p;
	struct sh5_evstore *es = sh5_evstore_open(node, 4, errp);
	int rc;

	if (!es)
		return -1;
	memset(&p, 0, sizeof(p));
	p.dirfd = a->dirfd;
	p.prefix = PREFIX;
	p.uid = geteuid();
	p.gid = getegid();
	rc = sh5_evabsorb(&p, es, &a->files, &a->n, NULL, errp);
	sh5_evstore_close(es);
	return rc;
}

START_TEST(test_writer_call_absorbs_before_close)
{
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	struct call_arg a = { -1, NULL, 0 };
	char h5[512], spool[512];
	size_t ev;
	hid_t f;

	snprintf(spool, sizeof(spool), "%s/spool", tmpdir);
	ck_assert_int_eq(mkdir(spool, 0700), 0);
	ev = make_spill(spool, 2, 300, 20, NULL);
	snprintf(h5, sizeof(h5), "%s/w.h5", tmpdir);
	w = sh5_writer_create(h5, -1, "node1", NULL, &err);
	ck_assert_msg(w, "%s", err.text);
	a.dirfd = open(spool, O_DIRECTORY | O_RDONLY);
	ck_assert(a.dirfd >= 0);
	ck_assert_msg(sh5_writer_call(w, call_absorb, &a, &err) == 0, "%s",
		      err.text);
	close(a.dirfd);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_int_eq(a.files[0].status, SH5_EVABSORB_REMOVED);
	free(a.files);
	ck_assert_int_eq(sh5_writer_attr_int(w, "After", 1, &err), 0);
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert(f >= 0);
	ck_assert_uint_eq(rows(f, "node1/Events/2"), ev);
	ck_assert(exists(f, "node1/Totals"));
	ck_assert_int_eq(attr_i64(f, "node1", "After"), 1);
	H5Fclose(f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("evabsorb");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_evabsorb_good_files_removed);
	tcase_add_test(tc, test_evabsorb_no_files_no_group);
	tcase_add_test(tc, test_evabsorb_pending);
	tcase_add_test(tc, test_evabsorb_hostile_files);
	tcase_add_test(tc, test_evabsorb_open_dir_refuses_symlink);
	tcase_add_test(tc, test_writer_call_absorbs_before_close);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
