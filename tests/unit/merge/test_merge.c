/* test_merge.c - discovery, merge with totals, partial merges, salvage of
 * unwritten chunks, CSV formatting and extraction. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>
#include <zlib.h>

#include "common/checksum.h"
#include "common/csvfmt.h"
#include "merge/merge.h"
#include "profile/reader.h"
#include "profile/series.h"
#include "profile/writer.h"

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-test-merge-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	sh5_error_h5_silence();
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void touch(const char *name)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fclose(f);
}

START_TEST(test_merge_discover)
{
	static const char *const files[] = {
		"12_0_n1.h5", "12_batch_n1.h5", "12_4294967292_n2.h5",
		"123_0_n1.h5", "12_0_n10.h5", "12_0_n2.h5", ".12_0_x.h5",
		"12_0.h5", "12_1_n1.txt", "x12_0_n1.h5", "12_3_n_with_us.h5",
	};
	static const char *const want[][2] = {
		{ "batch", "n1" }, { "extern", "n2" }, { "0", "n1" },
		{ "0", "n2" },     { "0", "n10" },     { "3", "n_with_us" },
	};
	const char *sel_ext[] = { "4294967292" }, *sel_0[] = { "0", "batch" };
	struct sh5_input *v;
	struct sh5_error err;
	size_t n, i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		touch(files[i]);
	ck_assert_int_eq(sh5_merge_discover(tmpdir, 12, NULL, 0, &v, &n,
					    &err), 0);
	ck_assert_uint_eq(n, 6);
	for (i = 0; i < n; i++) {
		ck_assert_str_eq(v[i].step, want[i][0]);
		ck_assert_str_eq(v[i].node, want[i][1]);
		ck_assert_uint_eq(v[i].job, 12);
	}
	ck_assert_str_eq(v[1].step_id, "4294967292");
	ck_assert_str_eq(v[1].file, "12_4294967292_n2.h5");
	sh5_inputs_free(v, n);
	ck_assert_int_eq(sh5_merge_discover(tmpdir, 12, sel_ext, 1, &v, &n,
					    &err), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].step, "extern");
	sh5_inputs_free(v, n);
	ck_assert_int_eq(sh5_merge_discover(tmpdir, 12, sel_0, 2, &v, &n,
					    &err), 0);
	ck_assert_uint_eq(n, 4);
	sh5_inputs_free(v, n);
	ck_assert_int_eq(sh5_merge_discover("/nonexistent/x", 12, NULL, 0, &v,
					    &n, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/x"));
	ck_assert_int_lt(sh5_step_cmp("batch", "extern"), 0);
	ck_assert_int_lt(sh5_step_cmp("extern", "2"), 0);
	ck_assert_int_lt(sh5_step_cmp("2", "10"), 0);
}
END_TEST

static const char *const tnames[] = { "CPUTime", "RSS" };
static const enum sh5_ftype ttypes[] = { SH5_FT_DOUBLE, SH5_FT_U64 };

/* Our node-step file of job 9, step 0: node nodeN (index idx) with tasks
 * first.. first+ntasks-1, `rows` samples each: CPUTime = task + r/4,
 * RSS = 1000 * task + r. */
static void write_node(int idx, int first, int ntasks, int rows, int nnodes)
{
	char path[512], node[32], name[16];
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	int t, r;

	snprintf(node, sizeof(node), "node%d", idx + 1);
	snprintf(path, sizeof(path), "%s/9_0_%s.h5", tmpdir, node);
	w = sh5_writer_create(path, -1, node, NULL, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	sh5_writer_attr_int(w, "Node Index", idx, NULL);
	sh5_writer_attr_int(w, "Number of Tasks", ntasks, NULL);
	sh5_writer_attr_u32(w, "Job ID", 9, NULL);
	sh5_writer_attr_str(w, "Step ID", "0", NULL);
	sh5_writer_attr_u32(w, "Number of Nodes", (uint32_t)nnodes, NULL);
	for (t = 0; t < ntasks; t++) {
		struct sh5_series *s;
		int id;

		snprintf(name, sizeof(name), "%d", first + t);
		s = sh5_series_create("Tasks", name, tnames, ttypes, 2, &err);
		ck_assert_ptr_nonnull(s);
		id = sh5_writer_add_series(w, "Tasks", s, 1.0, &err);
		ck_assert_int_ge(id, 0);
		for (r = 0; r < rows; r++) {
			union sh5_value v[6] = { { 0 } };

			v[0].u = (uint64_t)r;
			v[1].u = 1700000000 + (uint64_t)r;
			v[2].i = (int64_t)v[1].u * 1000000000 + idx;
			v[3].d = first + t + r / 4.0;
			v[4].u = 1000 * (uint64_t)(first + t) + (uint64_t)r;
			ck_assert_int_eq(sh5_writer_append(w, id, v), 0);
		}
	}
	ck_assert_int_eq(sh5_writer_close(w, &err), 0);
}

/* Read a total dataset through the ops of a series of the same fields. */
static void read_total(hid_t f, const char *path, void *total,
		       const struct sh5_series *s)
{
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT), mt;

	ck_assert_msg(d >= 0, "no %s", path);
	mt = s->ops->total_mem_type(s);
	s->ops->total_init(s, total);
	ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, total),
			 0);
	H5Tclose(mt);
	H5Dclose(d);
}

static void expect_task_total(const void *total, int task, int rows)
{
	const struct sh5_total_head *h = total;
	double cpu_sum = task * (double)rows + (rows - 1) * rows / 8.0;

	ck_assert_uint_eq(h->samples, (uint64_t)rows);
	/* CPUTime: a delta; RSS: a level. */
	ck_assert_double_eq_tol(sh5_total_field((void *)total, 0)->sum,
				cpu_sum, 1e-9);
	ck_assert_double_eq(sh5_total_field((void *)total, 0)->min, task);
	ck_assert_double_eq(sh5_total_field((void *)total, 1)->min,
			    1000.0 * task);
	ck_assert_double_eq(sh5_total_field((void *)total, 1)->max,
			    1000.0 * task + rows - 1);
	ck_assert_double_eq_tol(sh5_total_field((void *)total, 1)->mean,
				1000.0 * task + (rows - 1) / 2.0, 1e-9);
}

START_TEST(test_merge_totals)
{
	struct sh5_merge_opts o;
	struct sh5_merge_stats st;
	struct sh5_error err = { "" };
	struct sh5_series *s;
	char out[512], path[256];
	void *total;
	hid_t f;
	long long v;
	int t;

	write_node(0, 0, 2, 30, 2);
	write_node(1, 2, 2, 20, 2);
	snprintf(out, sizeof(out), "%s/job.h5", tmpdir);
	memset(&o, 0, sizeof(o));
	o.dir = tmpdir;
	o.job = 9;
	o.output = out;
	o.buffer_bytes = 4096; /* several blocks per series */
	ck_assert_msg(sh5_merge_job(&o, &st, &err) == 0, "%s", err.text);
	ck_assert_uint_eq(st.merged, 2);
	ck_assert_uint_eq(st.samples, 100);
	ck_assert_uint_eq(st.problems, 0);
	/* Intact files of the writer: their node groups copied whole. */
	ck_assert_uint_eq(st.whole, 2);
	s = sh5_series_create("Tasks", "0", tnames, ttypes, 2, &err);
	ck_assert_ptr_nonnull(total = malloc(s->ops->total_size(s)));
	/* The writer's own totals, in the node-step file. */
	snprintf(out, sizeof(out), "%s/9_0_node2.h5", tmpdir);
	ck_assert_int_ge(f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), 0);
	read_total(f, "/node2/Totals/Tasks/3", total, s);
	expect_task_total(total, 3, 20);
	read_total(f, "/node2/Totals/AllTasks", total, s);
	ck_assert_uint_eq(sh5_total_head(total)->samples, 40);
	H5Fclose(f);
	snprintf(out, sizeof(out), "%s/job.h5", tmpdir);
	ck_assert_int_ge(f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), 0);
	ck_assert_int_eq(sh5_attr_get_int(f, "Number of Steps", &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(sh5_attr_get_int(f, "Job ID", &v), 0);
	ck_assert_int_eq(v, 9);
	for (t = 0; t < 4; t++) {
		snprintf(path, sizeof(path), "/Steps/0/Nodes/node%d/Totals/"
			 "Tasks/%d", t / 2 + 1, t);
		read_total(f, path, total, s);
		expect_task_total(total, t, t < 2 ? 30 : 20);
	}
	/* Node total of node2: tasks 2 and 3. */
	read_total(f, "/Steps/0/Nodes/node2/Totals/AllTasks", total, s);
	ck_assert_uint_eq(sh5_total_head(total)->samples, 40);
	ck_assert_double_eq(sh5_total_field(total, 1)->min, 2000);
	ck_assert_double_eq(sh5_total_field(total, 1)->max, 3019);
	ck_assert_double_eq_tol(sh5_total_field(total, 1)->mean, 2509.5, 1e-9);
	/* Step total: all four tasks; time stamps never summed. */
	read_total(f, "/Steps/0/Totals/AllTasks", total, s);
	ck_assert_uint_eq(sh5_total_head(total)->samples, 100);
	ck_assert_int_eq(sh5_total_head(total)->first_ns,
			 1700000000LL * 1000000000);
	ck_assert_int_eq(sh5_total_head(total)->last_ns,
			 1700000029LL * 1000000000);
	ck_assert_double_eq_tol(sh5_total_field(total, 0)->sum,
				(0 * 30 + 29 * 30 / 8.0) + (30 + 29 * 30 / 8.0) +
				(2 * 20 + 19 * 20 / 8.0) +
				(3 * 20 + 19 * 20 / 8.0), 1e-9);
	ck_assert_double_eq(sh5_total_field(total, 1)->max, 3019);
	H5Fclose(f);
	/* The output exists now: refused without force. */
	ck_assert_int_eq(sh5_merge_job(&o, &st, &err), -1);
	ck_assert_int_eq(errno, EEXIST);
	o.force = 1;
	ck_assert_msg(sh5_merge_job(&o, &st, &err) == 0, "%s", err.text);
	free(total);
	sh5_series_destroy(s);
}
END_TEST

/* Our Fletcher-32 accepts exactly the chunks HDF5's filter wrote (every
 * length, odd ones too) and rejects a changed byte; our CRC-32 is zlib's. */
START_TEST(test_checksums)
{
	char path[512];
	unsigned char data[4096], raw[4200];
	hid_t f, sp, dcpl, d;
	hsize_t dim, chunk, off[1];
	size_t len, i;
	uint32_t mask;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 131 + (i >> 3) * 7);
	snprintf(path, sizeof(path), "%s/fl.h5", tmpdir);
	ck_assert_int_ge(f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT,
				       H5P_DEFAULT), 0);
	for (len = 1; len <= 4096; len = len < 40 ? len + 1 : len * 3 - 1) {
		char name[32];
		hsize_t size = 0;

		dim = len;
		chunk = len;
		snprintf(name, sizeof(name), "d%zu", len);
		ck_assert_int_ge(sp = H5Screate_simple(1, &dim, NULL), 0);
		ck_assert_int_ge(dcpl = H5Pcreate(H5P_DATASET_CREATE), 0);
		H5Pset_chunk(dcpl, 1, &chunk);
		if (len % 3 == 0)
			H5Pset_deflate(dcpl, 1);
		H5Pset_fletcher32(dcpl);
		ck_assert_int_ge(d = H5Dcreate2(f, name, H5T_NATIVE_UCHAR, sp,
						H5P_DEFAULT, dcpl, H5P_DEFAULT), 0);
		ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL,
					  H5P_DEFAULT, data), 0);
		H5Dflush(d);
		off[0] = 0;
		ck_assert_int_ge(H5Dget_chunk_storage_size(d, off, &size), 0);
		ck_assert_uint_le(size, sizeof(raw));
		ck_assert_int_ge(H5Dread_chunk(d, H5P_DEFAULT, off, &mask, raw),
				 0);
		ck_assert_msg(sh5_fletcher32_ok(raw, (size_t)size),
			      "length %zu: HDF5's checksum not recognised", len);
		raw[size / 2] ^= 0x10;
		ck_assert_msg(!sh5_fletcher32_ok(raw, (size_t)size),
			      "length %zu: a changed byte passes", len);
		H5Dclose(d);
		H5Pclose(dcpl);
		H5Sclose(sp);
	}
	H5Fclose(f);
	ck_assert(!sh5_fletcher32_ok(raw, 3));
	for (len = 0; len <= sizeof(data); len += 517)
		ck_assert_uint_eq(sh5_crc32(0, data, len),
				  (uint32_t)crc32(0L, data, (uInt)len));
	ck_assert_uint_eq(sh5_crc32(sh5_crc32(0, data, 100), data + 100, 900),
			  (uint32_t)crc32(0L, data, 1000));
}
END_TEST

/* Hooks that synchronize every node (SyncTimeNs = EpochTimeNs + 1)
 * although they claim never to (never_sync): the reader child then sends
 * only totals and packed records, which the merge cannot use for a
 * synchronized series; it must read that series itself. */
static int lie_node_begin(void *arg, const struct sh5_input *in,
			  hid_t in_node, hid_t out_node,
			  struct sh5_error *errp)
{
	(void)arg;
	(void)in;
	(void)in_node;
	(void)out_node;
	(void)errp;
	return 1;
}

static void lie_sync_rows(void *arg, const struct sh5_series *s, void *recs,
			  size_t n)
{
	size_t i, slots = sh5_record_slots(s), sync = SH5_SLOT_SYNC(s);
	union sh5_value *v = recs;

	(*(size_t *)arg) += n;
	for (i = 0; i < n; i++)
		v[i * slots + sync].i = v[i * slots + 2].i + 1;
}

START_TEST(test_merge_totals_sync_local)
{
	struct sh5_merge_opts o;
	struct sh5_merge_hooks h;
	struct sh5_merge_stats st;
	struct sh5_error err = { "" };
	struct sh5_series *s;
	char out[512], path[256];
	size_t synced = 0;
	void *total;
	int64_t ts[30];
	hid_t f, d, mt;
	int t;

	write_node(0, 0, 2, 30, 2);
	write_node(1, 2, 2, 20, 2);
	snprintf(out, sizeof(out), "%s/job.h5", tmpdir);
	memset(&h, 0, sizeof(h));
	h.node_begin = lie_node_begin;
	h.sync_rows = lie_sync_rows;
	h.arg = &synced;
	h.never_sync = 1;
	memset(&o, 0, sizeof(o));
	o.dir = tmpdir;
	o.job = 9;
	o.output = out;
	o.buffer_bytes = 4096;
	o.hooks = &h;
	ck_assert_msg(sh5_merge_job(&o, &st, &err) == 0, "%s", err.text);
	ck_assert_uint_eq(st.samples, 100);
	/* Every record went through sync_rows, in this process. */
	ck_assert_uint_eq(synced, 100);
	s = sh5_series_create("Tasks", "0", tnames, ttypes, 2, &err);
	ck_assert_ptr_nonnull(total = malloc(s->ops->total_size(s)));
	ck_assert_int_ge(f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), 0);
	for (t = 0; t < 4; t++) {
		snprintf(path, sizeof(path), "/Steps/0/Nodes/node%d/Totals/"
			 "Tasks/%d", t / 2 + 1, t);
		read_total(f, path, total, s);
		expect_task_total(total, t, t < 2 ? 30 : 20);
	}
	/* The synchronized times were written. */
	ck_assert_int_ge(d = H5Dopen2(f, "/Steps/0/Nodes/node1/Tasks/1",
				      H5P_DEFAULT), 0);
	mt = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
	H5Tinsert(mt, "SyncTimeNs", 0, H5T_NATIVE_INT64);
	ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ts), 0);
	ck_assert_int_eq(ts[29], 1700000029LL * 1000000000 + 0 + 1);
	H5Tclose(mt);
	H5Dclose(d);
	H5Fclose(f);
	free(total);
	sh5_series_destroy(s);
}
END_TEST

struct rep {
	int errors, warnings;
	char last[512];
};

static void on_report(void *arg, int error, const char *file,
		      const char *msg)
{
	struct rep *r = arg;

	if (error)
		r->errors++;
	else
		r->warnings++;
	snprintf(r->last, sizeof(r->last), "%s: %s", file, msg);
}

START_TEST(test_merge_partial)
{
	struct sh5_merge_opts o;
	struct sh5_merge_stats st;
	struct sh5_error err = { "" };
	struct rep rep = { 0, 0, "" };
	char out[512], p[512];
	hid_t f, g;
	long long v;

	write_node(0, 0, 2, 10, 3);
	write_node(2, 4, 2, 10, 3); /* node index 1 is missing */
	/* A foreign HDF5 file under a node-step name. */
	snprintf(p, sizeof(p), "%s/9_0_node7.h5", tmpdir);
	f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(H5Gcreate2(f, "other", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	H5Fclose(f);
	snprintf(out, sizeof(out), "%s/job.h5", tmpdir);
	memset(&o, 0, sizeof(o));
	o.dir = tmpdir;
	o.job = 9;
	o.output = out;
	o.report = on_report;
	o.arg = &rep;
	ck_assert_int_eq(sh5_merge_job(&o, &st, &err), 1);
	ck_assert_int_eq(access(out, F_OK), -1);
	ck_assert_int_eq(rep.errors, 3); /* foreign, node index, tasks */
	ck_assert_uint_eq(st.problems, 3);
	o.allow_partial = 1;
	ck_assert_int_eq(sh5_merge_job(&o, &st, &err), 1);
	ck_assert_int_eq(access(out, F_OK), 0);
	ck_assert_uint_eq(st.merged, 2);
	ck_assert_uint_eq(st.skipped, 1);
	ck_assert_int_ge(f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), 0);
	ck_assert_int_ge(g = H5Gopen2(f, "Merge", H5P_DEFAULT), 0);
	ck_assert_int_eq(sh5_attr_get_int(g, "Partial", &v), 0);
	ck_assert_int_eq(v, 1);
	H5Gclose(g);
	ck_assert_int_gt(H5Lexists(f, "/Steps/0/Nodes/node3/Tasks/5",
				   H5P_DEFAULT), 0);
	ck_assert_int_gt(H5Lexists(f, "/Merge/Missing", H5P_DEFAULT), 0);
	H5Fclose(f);
}
END_TEST

/* A chunk never written reads as zeros: the cursor stops there. */
START_TEST(test_reader_unwritten_chunk)
{
	struct sh5_error err = { "" };
	struct sh5_series *s = sh5_series_create("Tasks", "1", tnames, ttypes,
						 2, &err);
	hsize_t dims[1] = { 10 }, maxd[1] = { H5S_UNLIMITED }, chunk[1] = { 4 };
	hid_t f, sp, dcpl, d, ft, mt;
	union sh5_value recs[10 * 6], got[10 * 6];
	struct sh5_cursor c;
	char p[512];
	size_t i, n;

	snprintf(p, sizeof(p), "%s/z.h5", tmpdir);
	memset(recs, 0, sizeof(recs));
	for (i = 0; i < 4; i++) {
		recs[i * 6 + 0].u = i + 1;
		recs[i * 6 + 1].u = 1700000000 + i;
		recs[i * 6 + 2].i = 5;
		recs[i * 6 + 3].d = 0.5 * (double)i;
		recs[i * 6 + 4].u = 7 * i;
	}
	f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	sp = H5Screate_simple(1, dims, maxd);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, 1, chunk);
	ft = s->ops->file_type(s);
	mt = s->ops->mem_type(s);
	d = H5Dcreate2(f, "t", ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	/* Only the first chunk is written; 6 rows claimed but never stored. */
	{
		hsize_t st[1] = { 0 }, cnt[1] = { 4 };
		hid_t ms = H5Screate_simple(1, cnt, NULL);

		H5Sselect_hyperslab(sp, H5S_SELECT_SET, st, NULL, cnt, NULL);
		ck_assert_int_ge(H5Dwrite(d, mt, ms, sp, H5P_DEFAULT, recs), 0);
		H5Sclose(ms);
	}
	ck_assert_int_eq(sh5_cursor_open(&c, d, s, 0, &err), 0);
	ck_assert_uint_eq(c.nrows, 10);
	n = sh5_cursor_read(&c, got, 10);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(c.damaged, 1);
	ck_assert_uint_eq(sh5_cursor_lost(&c), 6);
	ck_assert_ptr_nonnull(strstr(c.reason, "never written"));
	ck_assert_uint_eq(sh5_cursor_read(&c, got, 10), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(got[i * 6 + 1].u, 1700000000 + i);
		ck_assert_double_eq(got[i * 6 + 3].d, 0.5 * (double)i);
		ck_assert_uint_eq(got[i * 6 + 4].u, 7 * i);
	}
	sh5_cursor_close(&c);
	H5Tclose(ft);
	H5Tclose(mt);
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Fclose(f);
	sh5_series_destroy(s);
}
END_TEST

START_TEST(test_csvfmt_roundtrip)
{
	char buf[SH5_FMT_MAX], ref[64];
	uint64_t x = 88172645463325252ULL;
	size_t i;
	static const double fixed[] = { 0, 1, -1, 0.5, 0.1, 0.05, 100.25,
		-3.125, 1e-7, 123456789.123, 1e15, 1e300, 5e-324,
		9007199254740993.0, 0.3333333333333333 };

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		sh5_fmt_double(buf, fixed[i]);
		ck_assert_msg(strtod(buf, NULL) == fixed[i], "%s", buf);
	}
	sh5_fmt_double(buf, 0.05);
	ck_assert_str_eq(buf, "0.05");
	sh5_fmt_double(buf, -3.125);
	ck_assert_str_eq(buf, "-3.125");
	sh5_fmt_double(buf, 42);
	ck_assert_str_eq(buf, "42");
	/* Binary fractions (Slurm's MB = bytes / 2^20) and neighbours of
	 * powers of ten (where log10() may be off by one). */
	for (i = 0; i < 100000; i++) {
		double d = (double)(i * 7919) / 1048576.0;
		double e = nextafter(pow(10.0, (double)(i % 30) - 8.0),
				     i & 1 ? 0.0 : 1e300);

		sh5_fmt_double(buf, d);
		ck_assert_msg(strtod(buf, NULL) == d, "%s != %.17g", buf, d);
		sh5_fmt_double(buf, e);
		ck_assert_msg(strtod(buf, NULL) == e, "%s != %.17g", buf, e);
		sh5_fmt_double(buf, -d / 3.0);
		ck_assert_msg(strtod(buf, NULL) == -d / 3.0, "%s", buf);
	}
	for (i = 0; i < 200000; i++) {
		double d;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Decimal-looking values and arbitrary bit patterns. */
		d = i & 1 ? (double)(x % 100000000) / 1000.0 :
			    (double)(int64_t)x / (double)(x >> 11 | 1);
		sh5_fmt_double(buf, d);
		ck_assert_msg(strtod(buf, NULL) == d, "%s != %.17g", buf, d);
		sh5_fmt_u64(buf, x);
		snprintf(ref, sizeof(ref), "%llu", (unsigned long long)x);
		ck_assert_str_eq(buf, ref);
		sh5_fmt_i64(buf, (int64_t)x);
		snprintf(ref, sizeof(ref), "%lld", (long long)(int64_t)x);
		ck_assert_str_eq(buf, ref);
	}
}
END_TEST

START_TEST(test_extract_csv_rows)
{
	struct sh5_error err = { "" };
	struct sh5_series *s = sh5_series_create("Tasks", "1", tnames, ttypes,
						 2, &err);
	union sh5_value r[2 * 6];
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	memset(r, 0, sizeof(r));
	r[0].u = 1;
	r[1].u = 1700000001;
	r[2].i = 1700000001000000007LL;
	r[3].d = 0.25;
	r[4].u = 123;
	r[6].u = 2;
	r[7].u = 1700000002;
	r[8].i = 1700000002000000008LL;
	r[9].d = 1.0 / 3.0;
	r[10].u = 18446744073709551615ULL;
	ck_assert_int_eq(s->ops->extract_series(s, m, 1, "", NULL, 0), 0);
	ck_assert_int_eq(s->ops->extract_series(s, m, 0, "0,n1,1,", r, 2), 0);
	fclose(m);
	ck_assert_str_eq(buf, "ElapsedTime,EpochTime,EpochTimeNs,CPUTime,RSS\n"
		"0,n1,1,1,1700000001,1700000001000000007,0.25,123\n"
		"0,n1,1,2,1700000002,1700000002000000008,"
		"0.33333333333333331,18446744073709551615\n");
	free(buf);
	sh5_series_destroy(s);
}
END_TEST

/* Our file vs a stock one, the job check, and a file cut short. */
/* An empty Energy dataset of the stock plugin's layout in group g. */
static void stock_energy(hid_t g)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, 24), s1, d;
	hsize_t dim[1] = { 0 };

	H5Tinsert(t, "ElapsedTime", 0, H5T_NATIVE_UINT64);
	H5Tinsert(t, "EpochTime", 8, H5T_NATIVE_UINT64);
	H5Tinsert(t, "Power", 16, H5T_NATIVE_UINT64);
	s1 = H5Screate_simple(1, dim, NULL);
	d = H5Dcreate2(g, "Energy", t, s1, H5P_DEFAULT, H5P_DEFAULT,
		       H5P_DEFAULT);
	ck_assert_int_ge(d, 0);
	H5Dclose(d);
	H5Sclose(s1);
	H5Tclose(t);
}

START_TEST(test_reader_open)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	struct sh5_cursor c;
	struct stat st;
	char p[512], sp[512];
	uint64_t kept = 0, lost = 0;
	size_t i;
	hid_t f, g, d;

	write_node(0, 0, 2, 3000, 1);
	snprintf(p, sizeof(p), "%s/9_0_node1.h5", tmpdir);
	ns = sh5_nodestep_open(p, "node1", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->kind, SH5_NODESTEP_OURS);
	ck_assert_int_eq(ns->job_id, 9);
	ck_assert_int_eq(ns->nnodes, 1);
	ck_assert_uint_eq(ns->nseries, 2);
	ck_assert_str_eq(ns->series[0].path, "Tasks/0");
	ck_assert_uint_eq(ns->series[1].nrows, 3000);
	ck_assert_int_eq(ns->salvaged, 0);
	/* By path: no handle kept (other readers open with their own
	 * access lists). */
	ck_assert_int_eq(ns->series[0].dset, -1);
	ck_assert_int_eq(ns->series[1].dset, -1);
	sh5_nodestep_close(ns);
	/* Another job, another step, another node. */
	ck_assert_ptr_null(sh5_nodestep_open(p, "node1", 10, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "belongs to job 9, not 10"));
	ck_assert_ptr_null(sh5_nodestep_open(p, "node1", 9, "batch", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "holds step 0"));
	ck_assert_ptr_null(sh5_nodestep_open(p, "node2", 9, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "no group /node2"));
	/* A stock-like file: no root attribute. */
	snprintf(sp, sizeof(sp), "%s/9_0_n5.h5", tmpdir);
	f = H5Fcreate(sp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	g = H5Gcreate2(f, "n5", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	stock_energy(g);
	H5Gclose(g);
	H5Fclose(f);
	ck_assert_ptr_nonnull(ns = sh5_nodestep_open(sp, "n5", 9, "0", &err));
	ck_assert_int_eq(ns->kind, SH5_NODESTEP_STOCK);
	ck_assert_uint_eq(ns->nseries, 1);
	ck_assert_int_eq(ns->series[0].series->has_time_ns, 0);
	ck_assert_str_eq(ns->series[0].series->ops->name, "Energy");
	sh5_nodestep_close(ns);
	/* Cut short: what remains is salvaged, the rest counted lost. */
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(truncate(p, st.st_size * 8 / 10), 0);
	ns = sh5_nodestep_open(p, "node1", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->salvaged, 1);
	ck_assert_ptr_nonnull(strstr(ns->damage, "truncated"));
	for (i = 0; i < ns->nseries; i++) {
		union sh5_value buf[6 * 512];
		size_t n, row = 0;

		d = H5Dopen2(ns->node, ns->series[i].path, H5P_DEFAULT);
		if (d < 0) {
			lost += 3000;
			continue;
		}
		ck_assert_int_eq(sh5_cursor_open(&c, d, ns->series[i].series,
						 ns->real_eof, &err), 0);
		while ((n = sh5_cursor_read(&c, buf, 512)) > 0) {
			size_t r;

			for (r = 0; r < n; r++)
				ck_assert_uint_eq(buf[r * 6 + 1].u,
						  1700000000 + row + r);
			row += n;
			kept += n;
		}
		lost += sh5_cursor_lost(&c);
		sh5_cursor_close(&c);
		H5Dclose(d);
	}
	ck_assert_uint_gt(kept, 0);
	ck_assert_uint_gt(lost, 0);
	ck_assert_uint_eq(kept + lost, 6000);
	sh5_nodestep_close(ns);
	/* Not HDF5, empty. */
	touch("9_0_x.h5");
	snprintf(p, sizeof(p), "%s/9_0_x.h5", tmpdir);
	ck_assert_ptr_null(sh5_nodestep_open(p, "x", 9, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "empty file"));
}
END_TEST

/* Set attribute name of group g to one value of type t. */
static void set_attr(hid_t g, const char *name, hid_t t, const void *v)
{
	hid_t sp = H5Screate(H5S_SCALAR), a;

	if (H5Aexists(g, name) > 0)
		ck_assert_int_ge(H5Adelete(g, name), 0);
	a = H5Acreate2(g, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(H5Awrite(a, t, v), 0);
	H5Aclose(a);
	H5Sclose(sp);
}

/* The node group's attributes, read in one pass as the file opens: the
 * wanted ones by name and type (one of another type is not taken, nor
 * counted unreadable), User and Cluster of ours only. */
START_TEST(test_reader_node_attrs)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	char p[512];
	long long start = 1700000000123456789LL;
	double x = 2.5;
	hid_t f, g, st;

	write_node(1, 0, 1, 5, 2);
	snprintf(p, sizeof(p), "%s/9_0_node2.h5", tmpdir);
	f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	ck_assert_int_ge(g = H5Gopen2(f, "node2", H5P_DEFAULT), 0);
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, H5T_VARIABLE);
	set_attr(g, "Start Time ns", H5T_NATIVE_LLONG, &start);
	{
		const char *u = "alice", *c = "c1";

		set_attr(g, "User", st, &u);
		set_attr(g, "Cluster", st, &c);
	}
	set_attr(g, "Extra", H5T_NATIVE_DOUBLE, &x);
	H5Gclose(g);
	H5Fclose(f);
	ns = sh5_nodestep_open(p, "node2", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->kind, SH5_NODESTEP_OURS);
	ck_assert_int_eq(ns->node_index, 1);
	ck_assert_int_eq(ns->ntasks, 1);
	ck_assert_int_eq(ns->nnodes, 2);
	ck_assert_str_eq(ns->step, "0");
	ck_assert_int_eq(ns->has_start, 1);
	ck_assert(ns->start_ns == start);
	ck_assert_str_eq(ns->user, "alice");
	ck_assert_str_eq(ns->cluster, "c1");
	ck_assert_uint_eq(ns->bad_attrs, 0);
	sh5_nodestep_close(ns);
	/* Node Index as a string: not taken, the file still whole. */
	f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
	ck_assert_int_ge(g = H5Gopen2(f, "node2", H5P_DEFAULT), 0);
	{
		const char *s = "1";

		set_attr(g, "Node Index", st, &s);
		ck_assert_int_ge(H5Adelete(g, "Start Time ns"), 0);
	}
	H5Gclose(g);
	H5Fclose(f);
	ns = sh5_nodestep_open(p, "node2", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->node_index, -1);
	ck_assert_int_eq(ns->has_start, 0);
	ck_assert_uint_eq(ns->bad_attrs, 0);
	sh5_nodestep_close(ns);
	/* A stock-like file: its start is taken, its User is not ours. */
	snprintf(p, sizeof(p), "%s/9_0_n6.h5", tmpdir);
	f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	g = H5Gcreate2(f, "n6", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	set_attr(g, "Start Time ns", H5T_NATIVE_LLONG, &start);
	{
		const char *u = "bob";

		set_attr(g, "User", st, &u);
	}
	stock_energy(g);
	H5Gclose(g);
	H5Fclose(f);
	H5Tclose(st);
	ns = sh5_nodestep_open(p, "n6", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->kind, SH5_NODESTEP_STOCK);
	ck_assert_int_eq(ns->has_start, 1);
	ck_assert_str_eq(ns->user, "");
	ck_assert_uint_eq(ns->bad_attrs, 0);
	sh5_nodestep_close(ns);
}
END_TEST

/* An entry a task planted in its profile directory: the reader opens the
 * entry itself, a regular file only, and never blocks (a FIFO without a
 * writer blocked the open for ever; a symlink was followed, as root). */
START_TEST(test_reader_open_planted)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	char p[512], l[512];

	write_node(0, 0, 2, 10, 1);
	snprintf(p, sizeof(p), "%s/9_0_node1.h5", tmpdir);
	snprintf(l, sizeof(l), "%s/9_0_node2.h5", tmpdir);
	/* A symlink to a valid node-step file: refused, not read. */
	ck_assert_int_eq(symlink(p, l), 0);
	ck_assert_ptr_null(sh5_nodestep_open(l, NULL, 9, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "9_0_node2.h5: is a symbolic "
					       "link (not followed)"));
	ck_assert_int_eq(unlink(l), 0);
	/* A FIFO nobody writes: an error at once. */
	ck_assert_int_eq(mkfifo(l, 0600), 0);
	ck_assert_ptr_null(sh5_nodestep_open(l, NULL, 9, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "is a FIFO, not a regular "
					       "file"));
	ck_assert_int_eq(unlink(l), 0);
	/* A directory. */
	ck_assert_int_eq(mkdir(l, 0700), 0);
	ck_assert_ptr_null(sh5_nodestep_open(l, NULL, 9, "0", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "is a directory"));
	ck_assert_int_eq(rmdir(l), 0);
	/* The file itself still opens (HDF5 by the name of the checked
	 * descriptor). */
	ns = sh5_nodestep_open(p, "node1", 9, "0", &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_uint_eq(ns->nseries, 2);
	ck_assert_uint_eq(ns->series[1].nrows, 10);
	sh5_nodestep_close(ns);
}
END_TEST

/* Opened from the caller's image of the file: the same series and rows as
 * by its path, the image neither changed nor freed; an image cut short
 * is opened by path (salvaged as there), one that is not HDF5 too. */
START_TEST(test_reader_open_image)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	struct sh5_cursor c;
	char p[512];
	unsigned char *img, *copy;
	size_t len, i;
	FILE *fp;
	hid_t d;

	write_node(0, 0, 2, 3000, 1);
	snprintf(p, sizeof(p), "%s/9_0_node1.h5", tmpdir);
	ck_assert_ptr_nonnull(fp = fopen(p, "rb"));
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	len = (size_t)ftell(fp);
	rewind(fp);
	ck_assert_ptr_nonnull(img = malloc(len));
	ck_assert_ptr_nonnull(copy = malloc(len));
	ck_assert_uint_eq(fread(img, 1, len, fp), len);
	fclose(fp);
	memcpy(copy, img, len);
	/* The file gone: only the image is read. */
	ck_assert_int_eq(unlink(p), 0);
	ns = sh5_nodestep_open_image(p, "node1", 9, "0", img, len, &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->file_image, 1);
	ck_assert_int_eq(ns->kind, SH5_NODESTEP_OURS);
	ck_assert_uint_eq(ns->size, len);
	ck_assert_uint_eq(ns->nseries, 2);
	ck_assert_int_eq(ns->salvaged, 0);
	for (i = 0; i < ns->nseries; i++) {
		union sh5_value buf[6 * 512];
		size_t n, row = 0, r;

		ck_assert_uint_eq(ns->series[i].nrows, 3000);
		/* The walk's handle kept for the checks: the same object. */
		ck_assert_int_gt(H5Iis_valid(ns->series[i].dset), 0);
		d = H5Dopen2(ns->node, ns->series[i].path, H5P_DEFAULT);
		ck_assert_int_ge(d, 0);
		{
			H5O_info_t a, b;

			ck_assert_int_ge(H5Oget_info2(d, &a, H5O_INFO_BASIC),
					 0);
			ck_assert_int_ge(H5Oget_info2(ns->series[i].dset, &b,
						      H5O_INFO_BASIC), 0);
			ck_assert_uint_eq(a.addr, b.addr);
		}
		ck_assert_int_eq(sh5_cursor_open(&c, d, ns->series[i].series,
						 ns->real_eof, &err), 0);
		while ((n = sh5_cursor_read(&c, buf, 512)) > 0) {
			for (r = 0; r < n; r++)
				ck_assert_uint_eq(buf[r * 6 + 1].u,
						  1700000000 + row + r);
			row += n;
		}
		ck_assert_uint_eq(row, 3000);
		ck_assert_uint_eq(sh5_cursor_lost(&c), 0);
		sh5_cursor_close(&c);
		H5Dclose(d);
	}
	/* Another job: refused as by path. */
	ck_assert_ptr_null(sh5_nodestep_open_image(p, "node1", 10, "0", img,
						   len, &err));
	ck_assert_ptr_nonnull(strstr(err.text, "belongs to job 9, not 10"));
	sh5_nodestep_close(ns);
	ck_assert_int_eq(memcmp(img, copy, len), 0);
	/* The file back, cut short, and its image cut alike: HDF5 cannot
	 * open the image; opened by path and salvaged. */
	ck_assert_ptr_nonnull(fp = fopen(p, "wb"));
	ck_assert_uint_eq(fwrite(img, 1, len * 8 / 10, fp), len * 8 / 10);
	fclose(fp);
	ns = sh5_nodestep_open_image(p, "node1", 9, "0", img, len * 8 / 10,
				     &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->file_image, 0);
	ck_assert_int_eq(ns->salvaged, 1);
	ck_assert_ptr_nonnull(strstr(ns->damage, "truncated"));
	sh5_nodestep_close(ns);
	/* An image that is not HDF5: by path (the cut file, salvaged),
	 * then a path that is empty, which says so. */
	memset(img, 'x', 64);
	ns = sh5_nodestep_open_image(p, "node1", 9, "0", img, 64, &err);
	ck_assert_msg(ns != NULL, "%s", err.text);
	ck_assert_int_eq(ns->file_image, 0);
	ck_assert_int_eq(ns->salvaged, 1);
	sh5_nodestep_close(ns);
	touch("9_0_x.h5");
	snprintf(p, sizeof(p), "%s/9_0_x.h5", tmpdir);
	ck_assert_ptr_null(sh5_nodestep_open_image(p, "x", 9, "0", img, 64,
						   &err));
	ck_assert_ptr_nonnull(strstr(err.text, "empty file"));
	free(img);
	free(copy);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("merge");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_merge_discover);
	tcase_add_test(tc, test_merge_totals);
	tcase_add_test(tc, test_checksums);
	tcase_add_test(tc, test_merge_totals_sync_local);
	tcase_add_test(tc, test_merge_partial);
	tcase_add_test(tc, test_reader_unwritten_chunk);
	tcase_add_test(tc, test_reader_open);
	tcase_add_test(tc, test_reader_node_attrs);
	tcase_add_test(tc, test_reader_open_planted);
	tcase_add_test(tc, test_reader_open_image);
	tcase_add_test(tc, test_csvfmt_roundtrip);
	tcase_add_test(tc, test_extract_csv_rows);
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
