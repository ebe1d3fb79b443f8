/* test_jobevents.c - the job-file event reader (sync/jobevents.h) and
 * its event-trace CSV: a small job file written here with HDF5 calls in
 * the layout of events/evstore.h, read back, written as CSV and compared
 * with the exact text; damaged content fails naming the dataset. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync/jobevents.h"

static char path[64];

static hid_t rec_type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct sh5ev_rec));

	H5Tinsert(t, "TimeNs", HOFFSET(struct sh5ev_rec, time_ns),
		  H5T_NATIVE_INT64);
	H5Tinsert(t, "Kind", HOFFSET(struct sh5ev_rec, kind), H5T_NATIVE_UINT8);
	H5Tinsert(t, "Op", HOFFSET(struct sh5ev_rec, op), H5T_NATIVE_UINT8);
	H5Tinsert(t, "Flags", HOFFSET(struct sh5ev_rec, flags),
		  H5T_NATIVE_UINT16);
	H5Tinsert(t, "Id", HOFFSET(struct sh5ev_rec, id), H5T_NATIVE_UINT32);
	H5Tinsert(t, "Peer", HOFFSET(struct sh5ev_rec, peer), H5T_NATIVE_INT32);
	H5Tinsert(t, "Tag", HOFFSET(struct sh5ev_rec, tag), H5T_NATIVE_INT32);
	H5Tinsert(t, "Bytes", HOFFSET(struct sh5ev_rec, bytes),
		  H5T_NATIVE_UINT64);
	H5Tinsert(t, "Value", HOFFSET(struct sh5ev_rec, value),
		  H5T_NATIVE_DOUBLE);
	return t;
}

static void put(hid_t loc, const char *name, hid_t type, const void *buf,
		hsize_t n)
{
	hid_t sp = H5Screate_simple(1, &n, NULL);
	hid_t d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT,
			     H5P_DEFAULT);

	ck_assert_int_ge(d, 0);
	if (n)
		ck_assert_int_ge(H5Dwrite(d, type, H5S_ALL, H5S_ALL,
					  H5P_DEFAULT, buf), 0);
	H5Dclose(d);
	H5Sclose(sp);
}

#define R(t, k, o, id, p, tag, b) \
	{ (t), (k), (o), 0, (id), (p), (tag), (b), 0.0 }

/* Damage variants. */
enum { OK, BAD_TYPE, BAD_REGION, BAD_MEMBERS, HUGE, BAD_KIND, SYNC_SHORT,
       SYNC_OK, DUP_RANK };

/*
 * Node "a" (index 0): task 0 (world rank 1); node "b" (index 1): task 1
 * (world rank 0), so ranks and tasks differ.  Task 0 sends 8 bytes to
 * world rank 0 (task 1), both take part in a barrier and a bcast rooted
 * at world rank 0 and a barrier on a sub-communicator of both.
 */
static void make(int damage)
{
	hid_t f, n, e, rt;
	struct sh5ev_rec r0[] = {
		R(1000, SH5EV_K_RANK, 0, 2, 1, 0, 0),
		R(1100, SH5EV_K_ENTER, 0, 7, -1, 0, 0),
		R(1200, SH5EV_K_SEND, 0, 0, 0, 5, 8),
		R(1300, SH5EV_K_EXIT, 0, 7, -1, 0, 0),
		R(1400, SH5EV_K_CBEGIN, SH5EV_OP_BARRIER, 0, -1, 0, 0),
		R(1500, SH5EV_K_CEND, SH5EV_OP_BARRIER, 0, -1, 0, 0),
		R(1600, SH5EV_K_CBEGIN, SH5EV_OP_BCAST, 0, 0, 0, 4),
		R(1700, SH5EV_K_CEND, SH5EV_OP_BCAST, 0, 0, 0, 4),
		R(1800, SH5EV_K_CBEGIN, SH5EV_OP_BARRIER, 2, -1, 0, 0),
		R(1900, SH5EV_K_CEND, SH5EV_OP_BARRIER, 2, -1, 0, 0),
	};
	struct sh5ev_rec r1[] = {
		R(500, SH5EV_K_RANK, 0, 2, 0, 0, 0),
		R(600, SH5EV_K_PHASE, 0, 1, 0, -1, 0),
		R(700, SH5EV_K_RECV, 0, 0, 1, 5, 8),
		R(800, SH5EV_K_CBEGIN, SH5EV_OP_BARRIER, 0, -1, 0, 0),
		R(900, SH5EV_K_CEND, SH5EV_OP_BARRIER, 0, -1, 0, 0),
		R(950, SH5EV_K_CBEGIN, SH5EV_OP_BCAST, 0, 0, 0, 4),
		R(990, SH5EV_K_CEND, SH5EV_OP_BCAST, 0, 0, 0, 4),
		R(995, SH5EV_K_CBEGIN, SH5EV_OP_BARRIER, 2, -1, 0, 0),
		R(999, SH5EV_K_CEND, SH5EV_OP_BARRIER, 2, -1, 0, 0),
	};
	struct sh5_evstore_region reg = { 0, 7, SH5EV_F_MPI, "MPI_Send" };
	/* sub-communicator: global (1 + 1) << 32 | 1, rank 0 = world 1 */
	uint64_t sub = (UINT64_C(2) << 32) | 1;
	struct sh5_evstore_comm c0[] = { { 0, 2, sub, 2, 0 } };
	struct sh5_evstore_comm c1[] = { { 1, 2, sub, 2, 1 } };
	struct sh5_evstore_member m[] = { { sub, 0, 1 }, { sub, 1, 0 },
					  { sub, 2, 0 } };
	struct {
		int64_t l, o, rtt;
		uint32_t s, p;
	} off[] = { { 1050, 100, 20, 2, 0 }, { 1650, 110, 20, 2, 1 } };
	hid_t regt, comt, memt, offt, s;

	regt = H5Tcreate(H5T_COMPOUND, sizeof(reg));
	s = H5Tcopy(H5T_C_S1);
	H5Tset_size(s, SH5EV_NAME_MAX + 1);
	H5Tinsert(regt, "Task", 0, H5T_NATIVE_UINT32);
	H5Tinsert(regt, "Region", 4, H5T_NATIVE_UINT32);
	H5Tinsert(regt, "Flags", 8, H5T_NATIVE_UINT32);
	H5Tinsert(regt, "Name", 12, s);
	comt = H5Tcreate(H5T_COMPOUND, sizeof(c0[0]));
	H5Tinsert(comt, "Task", 0, H5T_NATIVE_UINT32);
	H5Tinsert(comt, "Local", 4, H5T_NATIVE_UINT32);
	H5Tinsert(comt, "Global", 8, H5T_NATIVE_UINT64);
	H5Tinsert(comt, "Size", 16, H5T_NATIVE_INT32);
	H5Tinsert(comt, "Rank", 20, H5T_NATIVE_INT32);
	memt = H5Tcreate(H5T_COMPOUND, sizeof(m[0]));
	H5Tinsert(memt, "Global", 0, H5T_NATIVE_UINT64);
	H5Tinsert(memt, "Rank", 8, H5T_NATIVE_INT32);
	H5Tinsert(memt, "WorldRank", 12, H5T_NATIVE_INT32);
	offt = H5Tcreate(H5T_COMPOUND, sizeof(off[0]));
	H5Tinsert(offt, "LocalTimeNs", 0, H5T_NATIVE_INT64);
	H5Tinsert(offt, "OffsetNs", 8, H5T_NATIVE_INT64);
	H5Tinsert(offt, "RoundTripNs", 16, H5T_NATIVE_INT64);
	H5Tinsert(offt, "Stratum", 24, H5T_NATIVE_UINT32);
	H5Tinsert(offt, "Phase", 28, H5T_NATIVE_UINT32);
	rt = rec_type();
	if (damage == BAD_REGION)
		r0[1].id = 9;
	if (damage == BAD_KIND)
		r1[1].kind = 77;
	if (damage == DUP_RANK)
		r1[0].peer = 1;

	snprintf(path, sizeof(path), "/tmp/test_jobevents.%d.h5", (int)getpid());
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	{
		hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);

		H5Pset_create_intermediate_group(lcpl, 1);
		n = H5Gcreate2(f, "/Steps/0/Nodes/a", lcpl, H5P_DEFAULT,
			       H5P_DEFAULT);
		H5Pclose(lcpl);
	}
	e = H5Gcreate2(n, "Events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (damage == BAD_TYPE) {
		int x[3] = { 1, 2, 3 };

		put(e, "0", H5T_NATIVE_INT, x, 3);
	} else if (damage == HUGE) {
		hsize_t dims = (hsize_t)1 << 40, ch = 4096;
		hid_t sp = H5Screate_simple(1, &dims, NULL);
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);

		H5Pset_chunk(dcpl, 1, &ch);
		H5Dclose(H5Dcreate2(e, "0", rt, sp, H5P_DEFAULT, dcpl,
				    H5P_DEFAULT));
		H5Pclose(dcpl);
		H5Sclose(sp);
	} else {
		put(e, "0", rt, r0, sizeof(r0) / sizeof(r0[0]));
	}
	put(e, "Regions", regt, &reg, 1);
	put(e, "Comms", comt, c0, 1);
	put(e, "CommMembers", memt, m, damage == BAD_MEMBERS ? 3 : 2);
	put(n, "ClockOffsets", offt, off, 2);
	if (damage == SYNC_OK || damage == SYNC_SHORT) {
		int64_t st[10];
		int i;
		hid_t sg = H5Gcreate2(e, "SyncTimeNs", H5P_DEFAULT,
				      H5P_DEFAULT, H5P_DEFAULT);

		for (i = 0; i < 10; i++)
			st[i] = 5000 + i;
		put(sg, "0", H5T_NATIVE_INT64, st, damage == SYNC_OK ? 10 : 9);
		H5Gclose(sg);
	}
	H5Gclose(e);
	H5Gclose(n);
	n = H5Gcreate2(f, "/Steps/0/Nodes/b", H5P_DEFAULT, H5P_DEFAULT,
		       H5P_DEFAULT);
	{
		int32_t idx = 1;
		hid_t sp = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(n, "Node Index", H5T_STD_I32LE, sp,
				     H5P_DEFAULT, H5P_DEFAULT);

		H5Awrite(a, H5T_NATIVE_INT32, &idx);
		H5Aclose(a);
		H5Sclose(sp);
	}
	e = H5Gcreate2(n, "Events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	put(e, "1", rt, r1, sizeof(r1) / sizeof(r1[0]));
	put(e, "Comms", comt, c1, 1);
	put(e, "CommMembers", memt, m, 2);
	if (damage == SYNC_OK) {
		int64_t st[9];
		int i;
		hid_t sg = H5Gcreate2(e, "SyncTimeNs", H5P_DEFAULT,
				      H5P_DEFAULT, H5P_DEFAULT);

		for (i = 0; i < 9; i++)
			st[i] = 6000 + i;
		put(sg, "1", H5T_NATIVE_INT64, st, 9);
		H5Gclose(sg);
	}
	H5Gclose(e);
	H5Gclose(n);
	H5Tclose(rt);
	H5Tclose(regt);
	H5Tclose(comt);
	H5Tclose(memt);
	H5Tclose(offt);
	H5Tclose(s);
	H5Fclose(f);
}

static struct sh5_evstep *load(struct sh5_error *err)
{
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t g = H5Gopen2(f, "/Steps/0", H5P_DEFAULT);
	struct sh5_evstep *s = sh5_evstep_read(g, "0", err);

	H5Gclose(g);
	H5Fclose(f);
	return s;
}

static char *csv(const struct sh5_evstep *s, int sync, int *rc)
{
	struct sh5_error err = { "" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*rc = sh5_evstep_write_csv(s, f, "mem", sync, &err);
	fclose(f);
	return buf;
}

START_TEST(test_jobevents_read)
{
	struct sh5_error err = { "" };
	struct sh5_evstep *s;
	uint32_t fl;

	sh5_error_h5_silence();
	make(OK);
	s = load(&err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_uint_eq(s->ntasks, 2);
	ck_assert_uint_eq(s->nnodes, 2);
	ck_assert_uint_eq(s->nev, 19);
	ck_assert_int_eq(s->synced, 0);
	ck_assert_int_eq(s->tasks[0].world_rank, 1);
	ck_assert_int_eq(s->tasks[1].world_rank, 0);
	ck_assert_int_eq(sh5_evstep_loc(s, 0), 1);
	ck_assert_int_eq(sh5_evstep_loc(s, 1), 0);
	ck_assert_int_eq(sh5_evstep_loc(s, -1), -1);
	ck_assert_str_eq(sh5_evstep_region(&s->tasks[0], 7, &fl), "MPI_Send");
	ck_assert_uint_eq(fl, SH5EV_F_MPI);
	ck_assert_str_eq(sh5_evstep_region(&s->tasks[0], 8, NULL), "?");
	ck_assert_uint_eq(sh5_evstep_comm(&s->tasks[0], 2),
			  (UINT64_C(2) << 32) | 1);
	ck_assert_uint_eq(sh5_evstep_comm(&s->tasks[0], 0), 0);
	ck_assert_uint_eq(sh5_evstep_comm(&s->tasks[0], 5), UINT64_MAX);
	ck_assert_uint_eq(s->nodes[0].noff, 2);
	ck_assert_str_eq(s->tasks[0].path, "/Steps/0/Nodes/a/Events/0");
	sh5_evstep_free(s);
	unlink(path);
}
END_TEST

START_TEST(test_jobevents_csv)
{
	static const char want[] =
		"#sh5-trace 1\n"
		"#comm 0 1 0\n"
		"#comm 8589934593 0 1\n"
		"#node 0 0\n"
		"#node 1 1\n"
		"0,1000,INT,,,,,\n"
		"0,1050,OFFSET,100,20,,,\n"
		"0,1100,INT,,,,,\n"
		"0,1200,SEND,1,5,0,,8\n"
		"0,1300,INT,,,,,\n"
		"0,1400,CBEGIN,BARRIER,,0,,0\n"
		"0,1500,CEND,BARRIER,,0,,0\n"
		"0,1600,CBEGIN,BCAST,,0,1,4\n"
		"0,1650,OFFSET,110,20,,,\n"
		"0,1700,CEND,BCAST,,0,1,4\n"
		"0,1800,CBEGIN,BARRIER,,8589934593,,0\n"
		"0,1900,CEND,BARRIER,,8589934593,,0\n"
		"1,500,INT,,,,,\n"
		"1,600,INT,,,,,\n"
		"1,700,RECV,0,5,0,,8\n"
		"1,800,CBEGIN,BARRIER,,0,,0\n"
		"1,900,CEND,BARRIER,,0,,0\n"
		"1,950,CBEGIN,BCAST,,0,1,4\n"
		"1,990,CEND,BCAST,,0,1,4\n"
		"1,995,CBEGIN,BARRIER,,8589934593,,0\n"
		"1,999,CEND,BARRIER,,8589934593,,0\n";
	struct sh5_error err = { "" };
	struct sh5_evstep *s;
	char *text;
	int rc;

	sh5_error_h5_silence();
	make(OK);
	s = load(&err);
	ck_assert_msg(s != NULL, "%s", err.text);
	text = csv(s, 0, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(text, want);
	free(text);
	/* no SyncTimeNs: EINVAL */
	errno = 0;
	text = csv(s, 1, &rc);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(errno, EINVAL);
	free(text);
	sh5_evstep_free(s);
	/* with SyncTimeNs: the same lines, event times replaced */
	make(SYNC_OK);
	s = load(&err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_int_eq(s->synced, 1);
	text = csv(s, 1, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(text, "\n0,5000,INT,,,,,\n"
					  "0,1050,OFFSET,100,20,,,\n"
					  "0,5001,INT,,,,,\n"));
	ck_assert_ptr_nonnull(strstr(text, "\n1,6008,CEND,BARRIER,"
					  ",8589934593,,0\n"));
	free(text);
	sh5_evstep_free(s);
	unlink(path);
}
END_TEST

static const struct {
	int damage;
	const char *want;
} bad[] = {
	{ BAD_TYPE, "/Steps/0/Nodes/a/Events/0: wrong type" },
	{ BAD_REGION, "/Steps/0/Nodes/a/Events/0: record 1" },
	{ BAD_MEMBERS, "/Steps/0/Nodes/a/Events/CommMembers: " },
	{ HUGE, "/Steps/0/Nodes/a/Events/0: claims 1099511627776 rows" },
	{ BAD_KIND, "/Steps/0/Nodes/b/Events/1: record 1 (kind 77" },
	{ DUP_RANK, "/Steps/0/Nodes/b/Events/1: world rank 1 is also task "
		    "0's" },
	{ SYNC_SHORT, "/Steps/0/Nodes/a/Events/SyncTimeNs/0: 9 times for "
		      "10 records" },
};

START_TEST(test_jobevents_damage)
{
	struct sh5_error err = { "" };

	sh5_error_h5_silence();
	make(bad[_i].damage);
	errno = 0;
	ck_assert_ptr_null(load(&err));
	ck_assert_int_ne(errno, 0);
	ck_assert_msg(strstr(err.text, bad[_i].want) != NULL,
		      "got '%s', want '%s'", err.text, bad[_i].want);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jobevents");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_jobevents_read);
	tcase_add_test(tc, test_jobevents_csv);
	tcase_add_loop_test(tc, test_jobevents_damage, 0,
			    sizeof(bad) / sizeof(bad[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
