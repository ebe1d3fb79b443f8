/*
 * test_evstore.c - the HDF5 layout of events (evstore): a round trip of
 * crafted spill files' records, an aborted task leaving nothing (the
 * absorption of spill files: test_evabsorb.c).
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

/* --------------------------------------------------------------- tests */

/* test_evstore_roundtrip's file (tmpdir/rt.h5) as h5py (sh5merge's
 * tests, users) sees it. */
static void assert_h5py_view(void)
{
	char path[512], cmd[2048];

	if (access("/usr/bin/python3", X_OK) != 0)
		return;
	snprintf(path, sizeof(path), "%s/rt.h5", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c '\n"
		 "import sys, h5py, numpy as np\n"
		 "g = h5py.File(sys.argv[1], \"r\")[\"node1/Events\"]\n"
		 "d = g[\"3\"]\n"
		 "assert d.dtype.names == (\"TimeNs\", \"Kind\", \"Op\", "
		 "\"Flags\", \"Id\", \"Peer\", \"Tag\", \"Bytes\", \"Value\")\n"
		 "assert d.dtype.itemsize == 40 and d.chunks == (4096,)\n"
		 "assert d.compression == \"gzip\" and d.shuffle and "
		 "d.fletcher32\n"
		 "assert np.all(np.diff(d[\"TimeNs\"]) == 1)\n"
		 "assert d[4999][\"Value\"] == 4999 / 4\n"
		 "assert d.attrs[\"Torn Tail\"] == 1 and "
		 "d.attrs[\"Problem\"] == b\"block 4\"\n"
		 "r = g[\"Regions\"][0]\n"
		 "assert r[\"Name\"] == b\"MPI_Send\" and r[\"Task\"] == 3\n"
		 "m = g[\"CommMembers\"][:]\n"
		 "assert list(m[\"WorldRank\"]) == [3, 2, 1, 0]\n"
		 "assert list(g[\"Comms\"][\"Global\"]) == [77, 78]\n"
		 "' '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_evstore_roundtrip)
{
	struct sh5_error err = { "" };
	struct sh5_evspill_info info;
	struct sh5_evstore *es;
	struct sh5ev_rec recs[5000];
	const int32_t members[4] = { 3, 2, 1, 0 };
	char buf[64];
	hid_t f, node;
	size_t i;

	f = new_file("rt.h5", &node);
	es = sh5_evstore_open(node, 4, &err);
	ck_assert_msg(es, "%s", err.text);
	ck_assert_int_eq(sh5_evstore_task_begin(es, 3, &err), 0);
	ck_assert_int_eq(sh5_evstore_region(es, 1, SH5EV_F_MPI, "MPI_Send",
					    &err), 0);
	ck_assert_int_eq(sh5_evstore_comm(es, 2, 77, 4, 1, members, &err), 0);
	ck_assert_int_eq(sh5_evstore_comm(es, 3, 78, 2, 0, NULL, &err), 0);
	memset(recs, 0, sizeof(recs));
	for (i = 0; i < 5000; i++) {
		recs[i].time_ns = 1000 + (int64_t)i;
		recs[i].kind = i ? SH5EV_K_ENTER + i % 2 : SH5EV_K_RANK;
		recs[i].id = i ? 1 : 8;
		recs[i].peer = i ? 0 : 5;
		recs[i].bytes = i;
		recs[i].value = (double)i / 4;
	}
	ck_assert_int_eq(sh5_evstore_events(es, recs, 1234, &err), 0);
	ck_assert_int_eq(sh5_evstore_events(es, recs + 1234, 5000 - 1234,
					    &err), 0);
	ck_assert_uint_eq(sh5_evstore_task_records(es), 5000);
	/* One task at a time; no second dataset for a task. */
	ck_assert_int_eq(sh5_evstore_task_begin(es, 4, &err), -1);
	ck_assert_int_eq(errno, EBUSY);
	memset(&info, 0, sizeof(info));
	info.task = 3;
	info.pid = 999;
	info.blocks = 12;
	info.blocks_bad = 1;
	info.torn_tail = 1;
	info.rejected = 2;
	info.lost = 5;
	snprintf(info.lib_version, sizeof(info.lib_version), "0.9\x01");
	snprintf(info.first_problem, sizeof(info.first_problem), "block 4");
	ck_assert_int_eq(sh5_evstore_task_end(es, &info, PREFIX ".3.999.sh5ev",
					      &err), 0);
	ck_assert_int_eq(sh5_evstore_task_begin(es, 3, &err), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_msg(strstr(err.text, "/node1/Events/3"), "%s", err.text);
	ck_assert_uint_eq(sh5_evstore_tasks(es), 1);
	ck_assert_int_eq(sh5_evstore_flush(es, &err), 0);
	sh5_evstore_close(es);

	ck_assert_uint_eq(rows(node, "Events/3"), 5000);
	ck_assert_uint_eq(rows(node, "Events/Regions"), 1);
	ck_assert_uint_eq(rows(node, "Events/Comms"), 2);
	ck_assert_uint_eq(rows(node, "Events/CommMembers"), 4);
	ck_assert_int_eq(attr_i64(node, "Events", "Events Format Version"), 1);
	ck_assert_int_eq(attr_i64(node, "Events/3", "World Rank"), 5);
	ck_assert_int_eq(attr_i64(node, "Events/3", "World Size"), 8);
	ck_assert_int_eq(attr_i64(node, "Events/3", "Pid"), 999);
	ck_assert_int_eq(attr_i64(node, "Events/3", "Events Lost"), 5);
	attr_str(node, "Events/3", "Library Version", buf, sizeof(buf));
	ck_assert_str_eq(buf, "0.9?");
	H5Gclose(node);
	H5Fclose(f);

	assert_h5py_view();
}
END_TEST

START_TEST(test_evstore_abort_leaves_nothing)
{
	struct sh5_error err = { "" };
	struct sh5_evspill_info info;
	struct sh5_evstore *es;
	struct sh5ev_rec r;
	hid_t f, node;

	memset(&r, 0, sizeof(r));
	r.kind = SH5EV_K_PHASE;
	memset(&info, 0, sizeof(info));
	f = new_file("abort.h5", &node);
	es = sh5_evstore_open(node, 0, &err);
	ck_assert_msg(es, "%s", err.text);
	/* The only task aborted: no Events group at all. */
	ck_assert_int_eq(sh5_evstore_task_begin(es, 1, &err), 0);
	ck_assert_int_eq(sh5_evstore_region(es, 1, 0, "x", &err), 0);
	ck_assert_int_eq(sh5_evstore_events(es, &r, 1, &err), 0);
	sh5_evstore_task_abort(es);
	ck_assert(!exists(node, "Events"));
	/* One kept, the next aborted: its rows and dataset go. */
	ck_assert_int_eq(sh5_evstore_task_begin(es, 1, &err), 0);
	ck_assert_int_eq(sh5_evstore_region(es, 1, 0, "kept", &err), 0);
	ck_assert_int_eq(sh5_evstore_events(es, &r, 1, &err), 0);
	ck_assert_int_eq(sh5_evstore_task_end(es, &info, "a", &err), 0);
	ck_assert_int_eq(sh5_evstore_task_begin(es, 2, &err), 0);
	ck_assert_int_eq(sh5_evstore_region(es, 1, 0, "gone", &err), 0);
	ck_assert_int_eq(sh5_evstore_comm(es, 2, 5, 1, 0, NULL, &err), 0);
	sh5_evstore_close(es);	/* aborts the open task */
	ck_assert(exists(node, "Events/1"));
	ck_assert(!exists(node, "Events/2"));
	ck_assert_uint_eq(rows(node, "Events/Regions"), 1);
	ck_assert_uint_eq(rows(node, "Events/Comms"), 0);
	/* A second store appends to the first one's group. */
	es = sh5_evstore_open(node, 0, &err);
	ck_assert_msg(es, "%s", err.text);
	ck_assert_int_eq(sh5_evstore_task_begin(es, 1, &err), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(sh5_evstore_task_begin(es, 2, &err), 0);
	ck_assert_int_eq(sh5_evstore_region(es, 1, 0, "two", &err), 0);
	ck_assert_int_eq(sh5_evstore_task_end(es, &info, "b", &err), 0);
	sh5_evstore_close(es);
	ck_assert_uint_eq(rows(node, "Events/Regions"), 2);
	ck_assert_uint_eq(rows(node, "Events/2"), 0);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("evstore");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_evstore_roundtrip);
	tcase_add_test(tc, test_evstore_abort_leaves_nothing);
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
