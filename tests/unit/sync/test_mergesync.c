/* test_mergesync.c - `sh5merge merge --sync`: SyncTimeNs from each node's
 * ClockOffsets (interpolation, constant shift, no measurement, filtered
 * measurements), totals on the corrected times, the record on the node
 * groups and /Merge, auto and none, clc without events refused. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "merge/merge.h"
#include "sync/mergesync.h"
#include "profile/reader.h"
#include "profile/series.h"
#include "profile/writer.h"

#define ROWS 20
#define T0 INT64_C(1700000000000000000)

static char tmpdir[256];
static int nwarn;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-test-msync-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	sh5_error_h5_silence();
	nwarn = 0;
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *const tnames[] = { "CPUTime", "RSS" };
static const enum sh5_ftype ttypes[] = { SH5_FT_DOUBLE, SH5_FT_U64 };

/* Node nodeN+1 of job 9 step 0, one task (id idx), ROWS samples at
 * EpochTimeNs = T0 + r s, and the given clock measurements. */
static void write_node(int idx, int nnodes, const struct sh5_clock_sample *c,
		       size_t nc)
{
	char path[512], node[32], name[16];
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	struct sh5_series *s;
	size_t i;
	int r, id;

	snprintf(node, sizeof(node), "node%d", idx + 1);
	snprintf(path, sizeof(path), "%s/9_0_%s.h5", tmpdir, node);
	w = sh5_writer_create(path, -1, node, NULL, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	sh5_writer_attr_int(w, "Node Index", idx, NULL);
	sh5_writer_attr_int(w, "Number of Tasks", 1, NULL);
	sh5_writer_attr_u32(w, "Job ID", 9, NULL);
	sh5_writer_attr_str(w, "Step ID", "0", NULL);
	sh5_writer_attr_u32(w, "Number of Nodes", (uint32_t)nnodes, NULL);
	snprintf(name, sizeof(name), "%d", idx);
	s = sh5_series_create("Tasks", name, tnames, ttypes, 2, &err);
	ck_assert_ptr_nonnull(s);
	id = sh5_writer_add_series(w, "Tasks", s, 1.0, &err);
	ck_assert_int_ge(id, 0);
	for (r = 0; r < ROWS; r++) {
		union sh5_value v[6] = { { 0 } };

		v[0].u = (uint64_t)r;
		v[1].u = (uint64_t)(T0 / 1000000000) + (uint64_t)r;
		v[2].i = T0 + (int64_t)r * 1000000000;
		v[3].d = r / 4.0;
		v[4].u = 1000 + (uint64_t)r;
		ck_assert_int_eq(sh5_writer_append(w, id, v), 0);
	}
	for (i = 0; i < nc; i++)
		ck_assert_int_eq(sh5_writer_add_clock(w, &c[i]), 0);
	ck_assert_int_eq(sh5_writer_close(w, &err), 0);
}

static void on_report(void *arg, int error, const char *file, const char *msg)
{
	(void)arg;
	(void)file;
	ck_assert_msg(!error, "unexpected problem: %s", msg);
	nwarn++;
}

/* Merge job 9 into tmpdir/job.h5 with the given method; returns the
 * merge's result. */
static int merge(enum sh5_sync_method method, struct sh5_mergesync_stats *st)
{
	struct sh5_merge_opts o;
	struct sh5_merge_hooks h;
	struct sh5_merge_stats mst;
	struct sh5_error err = { "" };
	struct sh5_mergesync *ms;
	char out[512];
	int rc;

	snprintf(out, sizeof(out), "%s/job.h5", tmpdir);
	memset(&o, 0, sizeof(o));
	o.dir = tmpdir;
	o.job = 9;
	o.output = out;
	o.force = 1;
	o.report = on_report;
	ms = sh5_mergesync_create(method, &o, on_report, NULL, &err);
	ck_assert_msg(ms != NULL, "%s", err.text);
	sh5_mergesync_hooks(ms, &h);
	o.hooks = &h;
	rc = sh5_merge_job(&o, &mst, &err);
	ck_assert_msg(rc == 0, "merge: %s", err.text);
	sh5_mergesync_stats(ms, st);
	sh5_mergesync_destroy(ms);
	return rc;
}

struct times {
	int64_t epoch, sync;
};

/* Read EpochTimeNs and SyncTimeNs of node's task; returns 1 when the
 * dataset has SyncTimeNs (stored as uint64). */
static int read_times(hid_t f, int idx, struct times *t)
{
	char p[128];
	hid_t d, ft, mt;
	int has, k;

	snprintf(p, sizeof(p), "/Steps/0/Nodes/node%d/Tasks/%d", idx + 1,
		 idx);
	ck_assert_int_ge(d = H5Dopen2(f, p, H5P_DEFAULT), 0);
	ft = H5Dget_type(d);
	has = H5Tget_member_index(ft, "SyncTimeNs") >= 0;
	if (has) {
		k = H5Tget_member_index(ft, "SyncTimeNs");
		hid_t mtk = H5Tget_member_type(ft, (unsigned)k);

		ck_assert_int_gt(H5Tequal(mtk, H5T_STD_U64LE), 0);
		H5Tclose(mtk);
	}
	mt = H5Tcreate(H5T_COMPOUND, sizeof(struct times));
	H5Tinsert(mt, "EpochTimeNs", HOFFSET(struct times, epoch),
		  H5T_NATIVE_INT64);
	if (has)
		H5Tinsert(mt, "SyncTimeNs", HOFFSET(struct times, sync),
			  H5T_NATIVE_INT64);
	memset(t, 0, ROWS * sizeof(*t));
	ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, t), 0);
	H5Tclose(mt);
	H5Tclose(ft);
	H5Dclose(d);
	return has;
}

static void first_last(hid_t f, const char *path, int64_t *a, int64_t *b)
{
	struct {
		int64_t first, last;
	} v;
	hid_t d, mt;

	ck_assert_int_ge(d = H5Dopen2(f, path, H5P_DEFAULT), 0);
	mt = H5Tcreate(H5T_COMPOUND, sizeof(v));
	H5Tinsert(mt, "FirstTimeNs", 0, H5T_NATIVE_INT64);
	H5Tinsert(mt, "LastTimeNs", 8, H5T_NATIVE_INT64);
	ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v), 0);
	*a = v.first;
	*b = v.last;
	H5Tclose(mt);
	H5Dclose(d);
}

static void merge_attr_str(hid_t f, const char *name, const char *want)
{
	char buf[256];
	hid_t g = H5Gopen2(f, "Merge", H5P_DEFAULT);

	ck_assert_int_ge(g, 0);
	ck_assert_int_eq(sh5_attr_get_str(g, name, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	H5Gclose(g);
}

static long long merge_attr_int(hid_t f, const char *name)
{
	long long v = -12345;
	hid_t g = H5Gopen2(f, "Merge", H5P_DEFAULT);

	ck_assert_int_eq(sh5_attr_get_int(g, name, &v), 0);
	H5Gclose(g);
	return v;
}

static hid_t open_job(void)
{
	char p[512];
	hid_t f;

	snprintf(p, sizeof(p), "%s/job.h5", tmpdir);
	f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	return f;
}

static void node_record(hid_t f, int idx, struct sh5_mergesync_node *nr)
{
	char p[64];
	hid_t g;

	snprintf(p, sizeof(p), "/Steps/0/Nodes/node%d", idx + 1);
	ck_assert_int_ge(g = H5Gopen2(f, p, H5P_DEFAULT), 0);
	ck_assert_int_eq(sh5_mergesync_node_read(g, nr), 0);
	H5Gclose(g);
}

/* node1: two measurements 10 s apart, offset +5 s drifting by +1000 ppm
 * (the reference runs faster); node2: one measurement (constant -2.5 s);
 * node3: none (kept as is, with a warning). */
START_TEST(test_mergesync_offset)
{
	const struct sh5_clock_sample c1[] = {
		{ T0, 5000000000, 200000, 2, 0 },
		{ T0 + 10000000000, 5010000000, 300000, 2, 2 },
	};
	const struct sh5_clock_sample c2[] = {
		{ T0 + 3000000000, -2500000000, 1000, 8, 0 },
	};
	struct sh5_mergesync_stats st;
	struct sh5_mergesync_node nr;
	struct times t[ROWS];
	int64_t a, b;
	hid_t f;
	int r;

	write_node(0, 3, c1, 2);
	write_node(1, 3, c2, 1);
	write_node(2, 3, NULL, 0);
	merge(SH5_SYNC_OFFSET, &st);
	ck_assert_int_eq(nwarn, 1);	/* node3 has no measurement */
	ck_assert_int_eq(st.method, SH5_SYNC_OFFSET);
	ck_assert_uint_eq(st.nodes, 3);
	ck_assert_uint_eq(st.corrected, 2);
	ck_assert_uint_eq(st.unmeasured, 1);
	ck_assert_uint_eq(st.measurements, 3);
	ck_assert_int_eq(st.error_bound_ns, 150000);
	/* Row 19 of node1: 19 s after the first point, the line (extended
	 * past the last point) gives 5 s + 19 ms. */
	ck_assert_int_eq(st.max_correction_ns, 5019000000);

	f = open_job();
	ck_assert_int_eq(read_times(f, 0, t), 1);
	for (r = 0; r < ROWS; r++) {
		ck_assert_int_eq(t[r].epoch, T0 + (int64_t)r * 1000000000);
		ck_assert_int_eq(t[r].sync, t[r].epoch + 5000000000 +
					    (int64_t)r * 1000000);
	}
	first_last(f, "/Steps/0/Nodes/node1/Totals/Tasks/0", &a, &b);
	ck_assert_int_eq(a, t[0].sync);
	ck_assert_int_eq(b, t[ROWS - 1].sync);
	node_record(f, 0, &nr);
	ck_assert_str_eq(nr.method, "offset");
	ck_assert_uint_eq(nr.measurements, 2);
	ck_assert_int_eq(nr.max_correction_ns, 5019000000);
	ck_assert_int_eq(nr.error_bound_ns, 150000);
	ck_assert(fabs(nr.drift_ppm - 1000.0) < 1e-6);

	ck_assert_int_eq(read_times(f, 1, t), 1);
	for (r = 0; r < ROWS; r++)
		ck_assert_int_eq(t[r].sync, t[r].epoch - 2500000000);
	node_record(f, 1, &nr);
	ck_assert_str_eq(nr.method, "offset");
	ck_assert_uint_eq(nr.measurements, 1);
	ck_assert_int_eq(nr.max_correction_ns, 2500000000);
	ck_assert_int_eq(nr.error_bound_ns, 500);
	ck_assert(isnan(nr.drift_ppm));

	ck_assert_int_eq(read_times(f, 2, t), 1);
	for (r = 0; r < ROWS; r++)
		ck_assert_int_eq(t[r].sync, t[r].epoch);
	node_record(f, 2, &nr);
	ck_assert_str_eq(nr.method, "none");
	ck_assert_uint_eq(nr.measurements, 0);
	ck_assert_int_eq(nr.max_correction_ns, 0);

	/* Step totals span the corrected times of every node. */
	first_last(f, "/Steps/0/Totals/AllTasks", &a, &b);
	ck_assert_int_eq(a, T0 - 2500000000);
	ck_assert_int_eq(b, T0 + 19000000000 + 5019000000);

	merge_attr_str(f, "Sync Requested", "offset");
	merge_attr_str(f, "Sync Method", "offset");
	ck_assert_int_eq(merge_attr_int(f, "Sync Nodes Corrected"), 2);
	ck_assert_int_eq(merge_attr_int(f, "Sync Nodes Unmeasured"), 1);
	ck_assert_int_eq(merge_attr_int(f, "Sync Max Correction ns"),
			 5019000000);
	ck_assert_int_eq(merge_attr_int(f, "Sync Error Bound ns"), 150000);
	H5Fclose(f);
}
END_TEST

/* Measurements from an unsynchronised server (stratum 0 or 16) or with a
 * negative round trip are left out, with a warning. */
START_TEST(test_mergesync_filter)
{
	const struct sh5_clock_sample c[] = {
		{ T0, 7000000000, 1000, 0, 0 },
		{ T0 + 1000000000, 1000000000, 2000, 3, 1 },
		{ T0 + 2000000000, 9000000000, -5, 3, 1 },
		{ T0 + 3000000000, 8000000000, 1000, 16, 2 },
	};
	struct sh5_mergesync_stats st;
	struct times t[ROWS];
	hid_t f;
	int r;

	write_node(0, 1, c, 4);
	merge(SH5_SYNC_AUTO, &st);
	ck_assert_int_eq(nwarn, 1);
	ck_assert_int_eq(st.method, SH5_SYNC_OFFSET);
	ck_assert_uint_eq(st.measurements, 1);
	f = open_job();
	ck_assert_int_eq(read_times(f, 0, t), 1);
	for (r = 0; r < ROWS; r++)
		ck_assert_int_eq(t[r].sync, t[r].epoch + 1000000000);
	merge_attr_str(f, "Sync Requested", "auto");
	merge_attr_str(f, "Sync Method", "offset");
	H5Fclose(f);
}
END_TEST

/* A measurement with a round trip far above the node's median is left
 * out (counted); the others define the map. */
START_TEST(test_mergesync_noisy)
{
	const struct sh5_clock_sample c[] = {
		{ T0, 1000000000, 1000, 3, 0 },
		{ T0 + 4000000000, 1004000000, 1200, 3, 1 },
		{ T0 + 6000000000, 1500000000, 500000, 3, 1 },
		{ T0 + 8000000000, 1008000000, 900, 3, 2 },
	};
	struct sh5_mergesync_stats st;
	struct sh5_mergesync_node nr;
	struct times t[ROWS];
	hid_t f;
	int r;

	write_node(0, 1, c, 4);
	merge(SH5_SYNC_OFFSET, &st);
	ck_assert_uint_eq(st.measurements, 3);
	ck_assert_uint_eq(st.dropped, 1);
	ck_assert_int_eq(st.error_bound_ns, 600);
	f = open_job();
	ck_assert_int_eq(read_times(f, 0, t), 1);
	for (r = 0; r < ROWS; r++)
		ck_assert_int_eq(t[r].sync, t[r].epoch + 1000000000 +
					    (int64_t)r * 1000000);
	node_record(f, 0, &nr);
	ck_assert_uint_eq(nr.measurements, 3);
	ck_assert_uint_eq(nr.dropped, 1);
	H5Fclose(f);
}
END_TEST

/* auto without measurements and none: no SyncTimeNs, recorded. */
START_TEST(test_mergesync_none)
{
	const struct sh5_clock_sample c[] = {
		{ T0, 7000000000, 1000, 3, 0 },
	};
	struct sh5_mergesync_stats st;
	struct times t[ROWS];
	hid_t f;
	int64_t a, b;
	char p[512];

	write_node(0, 2, NULL, 0);
	write_node(1, 2, NULL, 0);
	merge(SH5_SYNC_AUTO, &st);
	ck_assert_int_eq(st.method, SH5_SYNC_NONE);
	ck_assert_int_eq(nwarn, 0);
	f = open_job();
	ck_assert_int_eq(read_times(f, 0, t), 0);
	ck_assert_int_eq(read_times(f, 1, t), 0);
	first_last(f, "/Steps/0/Totals/AllTasks", &a, &b);
	ck_assert_int_eq(a, T0);
	merge_attr_str(f, "Sync Requested", "auto");
	merge_attr_str(f, "Sync Method", "none");
	H5Fclose(f);

	/* Measurements present but none asked for. */
	snprintf(p, sizeof(p), "%s/9_0_node2.h5", tmpdir);
	ck_assert_int_eq(unlink(p), 0);
	write_node(1, 2, c, 1);
	merge(SH5_SYNC_NONE, &st);
	f = open_job();
	ck_assert_int_eq(read_times(f, 1, t), 0);
	merge_attr_str(f, "Sync Method", "none");
	H5Fclose(f);
	/* auto picks offset when any file has one. */
	merge(SH5_SYNC_AUTO, &st);
	ck_assert_int_eq(st.method, SH5_SYNC_OFFSET);
	ck_assert_uint_eq(st.unmeasured, 1);
	f = open_job();
	ck_assert_int_eq(read_times(f, 0, t), 1);
	ck_assert_int_eq(t[3].sync, t[3].epoch);
	ck_assert_int_eq(read_times(f, 1, t), 1);
	ck_assert_int_eq(t[3].sync, t[3].epoch + 7000000000);
	H5Fclose(f);
}
END_TEST

START_TEST(test_mergesync_clc_needs_events)
{
	struct sh5_error err = { "" };
	enum sh5_sync_method m;
	struct sh5_mergesync *ms;
	struct sh5_merge_hooks h;

	/* Accepted now; refused by checked() when no input has events. */
	ms = sh5_mergesync_create(SH5_SYNC_CLC, NULL, NULL, NULL, &err);
	ck_assert_ptr_nonnull(ms);
	sh5_mergesync_hooks(ms, &h);
	errno = 0;
	ck_assert_int_eq(h.checked(h.arg, 1, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err.text, "events"));
	ck_assert_int_eq(h.checked(h.arg, 3, &err), 1);
	sh5_mergesync_destroy(ms);
	/* auto: clc with events, offset with measurements only. */
	ms = sh5_mergesync_create(SH5_SYNC_AUTO, NULL, NULL, NULL, &err);
	ck_assert_ptr_nonnull(ms);
	sh5_mergesync_hooks(ms, &h);
	ck_assert_int_eq(h.checked(h.arg, 2, &err), 1);
	{
		struct sh5_mergesync_stats st;

		sh5_mergesync_stats(ms, &st);
		ck_assert_int_eq(st.method, SH5_SYNC_CLC);
	}
	sh5_mergesync_destroy(ms);
	ck_assert_int_eq(sh5_sync_method_parse("clc", &m), 0);
	ck_assert_int_eq(m, SH5_SYNC_CLC);
	ck_assert_int_eq(sh5_sync_method_parse("offset", &m), 0);
	ck_assert_int_eq(m, SH5_SYNC_OFFSET);
	ck_assert_int_eq(sh5_sync_method_parse("linear", &m), -1);
	ck_assert_str_eq(sh5_sync_method_name(SH5_SYNC_AUTO), "auto");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mergesync");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_mergesync_offset);
	tcase_add_test(tc, test_mergesync_filter);
	tcase_add_test(tc, test_mergesync_noisy);
	tcase_add_test(tc, test_mergesync_none);
	tcase_add_test(tc, test_mergesync_clc_needs_events);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
