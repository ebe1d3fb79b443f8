/* test_series.c - series ops tables and the node-step writer, through
 * real HDF5 files. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "profile/layout.h"
#include "profile/series.h"
#include "profile/totals.h"
#include "profile/writer.h"

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-test-series-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

struct kind {
	const char *parent, *name, *ops;
	const char *fields[8];
	enum sh5_ftype types[8];
	size_t n;
};

static const struct kind kinds[] = {
	{ "Tasks", "3", "Task",
	  { "CPUFrequency", "CPUTime", "CPUUtilization", "RSS", "VMSize",
	    "Pages", "ReadMB", "WriteMB" },
	  { SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_U64,
	    SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_DOUBLE }, 8 },
	{ NULL, "Energy", "Energy", { "Power", "CPUFrequency" },
	  { SH5_FT_U64, SH5_FT_U64 }, 2 },
	{ NULL, "Filesystem", "Filesystem",
	  { "Reads", "ReadMB", "Writes", "WriteMB" },
	  { SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_DOUBLE }, 4 },
	{ NULL, "Network", "Network",
	  { "PacketsIn", "PacketsOut", "InMB", "OutMB" },
	  { SH5_FT_U64, SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_DOUBLE }, 4 },
	{ NULL, "GPU", "Generic", { "Util", "Mem" },
	  { SH5_FT_DOUBLE, SH5_FT_U64 }, 2 },
	{ "Sensors", "Fan1", "Generic", { "RPM" }, { SH5_FT_U64 }, 1 },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* A value for row r, field i that round-trips exactly. */
static void fill(const struct sh5_series *s, union sh5_value *rec, size_t r)
{
	size_t i;

	rec[0].u = r;
	rec[1].u = 1700000000 + r;
	rec[2].i = (int64_t)(1700000000 + r) * 1000000000 + 123456789;
	for (i = 0; i < s->nfields; i++) {
		if (s->fields[i].type == SH5_FT_DOUBLE)
			rec[SH5_TIME_SLOTS + i].d = r * 0.5 + i;
		else
			rec[SH5_TIME_SLOTS + i].u = r * 10 + i;
	}
}

static void write_file(const char *path, const struct kind *k, size_t rows,
		       int flush_every)
{
	struct sh5_error err = { "" };
	struct sh5_writer *w = sh5_writer_create(path, -1, "node1", NULL, &err);
	struct sh5_series *s;
	union sh5_value rec[32];
	int id;
	size_t r;

	ck_assert_msg(w != NULL, "%s", err.text);
	s = sh5_series_create(k->parent, k->name, k->fields, k->types, k->n,
			      &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_str_eq(s->ops->name, k->ops);
	id = sh5_writer_add_series(w, k->parent, s, 1.0, &err);
	ck_assert_msg(id >= 0, "%s", err.text);
	for (r = 0; r < rows; r++) {
		fill(s, rec, r);
		ck_assert_int_eq(sh5_writer_append(w, id, rec), 0);
		if (flush_every && r % flush_every == 0)
			ck_assert_msg(sh5_writer_flush(w, &err) == 0, "%s",
				      err.text);
	}
	ck_assert_int_eq(sh5_writer_attr_int(w, "Node Index", 7, &err), 0);
	ck_assert_int_eq(sh5_writer_attr_str(w, "Node Name", "node1", &err), 0);
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
}

static hid_t open_dset(hid_t f, const struct kind *k)
{
	char p[256];

	snprintf(p, sizeof(p), "/node1/%s%s%s", k->parent ? k->parent : "",
		 k->parent ? "/" : "", k->name);
	return H5Dopen2(f, p, H5P_DEFAULT);
}

/* Each ops table round-trips samples through a real file. */
START_TEST(test_series_roundtrip)
{
	const size_t sizes[] = { 0, 1, 31, 32, 33, 1000 };
	const struct kind *k = &kinds[_i % NKINDS];
	size_t rows = sizes[_i / NKINDS], r, i;
	char path[300];
	struct sh5_error err = { "" };
	struct sh5_series *s;
	hid_t f, d, sp, mt;
	union sh5_value *buf, want[32];

	snprintf(path, sizeof(path), "%s/rt.h5", tmpdir);
	write_file(path, k, rows, _i % 2 ? 7 : 0);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	d = open_dset(f, k);
	ck_assert_int_ge(d, 0);
	s = sh5_series_from_dataset(k->parent, k->name, d, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_str_eq(s->ops->name, k->ops);
	ck_assert_uint_eq(s->nfields, k->n);
	ck_assert(s->has_time_ns);
	sp = H5Dget_space(d);
	ck_assert_int_eq(H5Sget_simple_extent_npoints(sp), (hssize_t)rows);
	buf = calloc(rows + 1, s->ops->record_size(s));
	mt = s->ops->mem_type(s);
	if (rows)
		ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT,
					 buf), 0);
	for (r = 0; r < rows; r++) {
		union sh5_value *got = sh5_record_slot(s, buf, r, 0);

		fill(s, want, r);
		for (i = 0; i < SH5_TIME_SLOTS + s->nfields; i++)
			ck_assert_msg(got[i].u == want[i].u,
				      "%s row %zu slot %zu", k->name, r, i);
	}
	free(buf);
	H5Tclose(mt);
	H5Sclose(sp);
	sh5_series_destroy(s);
	H5Dclose(d);
	H5Fclose(f);
}
END_TEST

/* Attributes: format version, node attrs, Series, kinds and units. */
START_TEST(test_series_attributes)
{
	char path[300], sname[32] = "";
	struct sh5_error err;
	struct sh5_series *s;
	hid_t f, d, a, st;
	int32_t ver = 0;
	int idx = 0;

	snprintf(path, sizeof(path), "%s/attr.h5", tmpdir);
	write_file(path, &kinds[0], 5, 0);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	a = H5Aopen(f, "sh5 Format Version", H5P_DEFAULT);
	ck_assert_int_ge(a, 0);
	H5Aread(a, H5T_NATIVE_INT32, &ver);
	H5Aclose(a);
	ck_assert_int_eq(ver, SH5_FORMAT_VERSION);
	a = H5Aopen_by_name(f, "/node1", "Node Index", H5P_DEFAULT,
			    H5P_DEFAULT);
	H5Aread(a, H5T_NATIVE_INT, &idx);
	H5Aclose(a);
	ck_assert_int_eq(idx, 7);
	d = open_dset(f, &kinds[0]);
	a = H5Aopen(d, "Series", H5P_DEFAULT);
	st = H5Aget_type(a);
	H5Aread(a, st, sname);
	H5Tclose(st);
	H5Aclose(a);
	ck_assert_str_eq(sname, "Task");
	s = sh5_series_from_dataset("Tasks", "3", d, &err);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(s->fields[sh5_series_field_index(s, "CPUTime")].kind,
			 SH5_FK_DELTA);
	ck_assert_int_eq(s->fields[sh5_series_field_index(s, "RSS")].kind,
			 SH5_FK_LEVEL);
	ck_assert_str_eq(s->fields[sh5_series_field_index(s, "RSS")].unit,
			 "KiB");
	sh5_series_destroy(s);
	H5Dclose(d);
	H5Fclose(f);
}
END_TEST

/* Chunked by the sampling rate, shuffle + deflate at the chosen level. */
START_TEST(test_series_chunk_and_compression)
{
	char path[300];
	hid_t f, d, dcpl;
	hsize_t chunk = 0;
	unsigned flags, cd[4];
	size_t ncd = 4;
	int nf, i, have_shuffle = 0, level = -1;

	ck_assert_uint_eq(sh5_writer_chunk_rows(1.0), 600);
	ck_assert_uint_eq(sh5_writer_chunk_rows(2.0), 1200);
	ck_assert_uint_eq(sh5_writer_chunk_rows(1.0 / 30), 512);
	ck_assert_uint_eq(sh5_writer_chunk_rows(0.0), 600);
	ck_assert_uint_eq(sh5_writer_chunk_rows(1000.0), 4096);
	snprintf(path, sizeof(path), "%s/chunk.h5", tmpdir);
	write_file(path, &kinds[1], 2000, 0);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	d = open_dset(f, &kinds[1]);
	dcpl = H5Dget_create_plist(d);
	ck_assert_int_eq(H5Pget_layout(dcpl), H5D_CHUNKED);
	H5Pget_chunk(dcpl, 1, &chunk);
	ck_assert_uint_eq(chunk, 600);
	nf = H5Pget_nfilters(dcpl);
	for (i = 0; i < nf; i++) {
		H5Z_filter_t fl;

		ncd = 4;
		fl = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0,
				    NULL, NULL);
		if (fl == H5Z_FILTER_SHUFFLE)
			have_shuffle = 1;
		if (fl == H5Z_FILTER_DEFLATE)
			level = (int)cd[0];
	}
	ck_assert(have_shuffle);
	ck_assert_int_eq(level, 4);
	/* 2000 regular samples must compress well below their raw size. */
	ck_assert_uint_lt(H5Dget_storage_size(d), 2000 * 40 / 2);
	H5Pclose(dcpl);
	H5Dclose(d);
	H5Fclose(f);
}
END_TEST

/* Small B-tree nodes (file creation properties) and fixed-length string
 * arrays for Field Kinds/Units: no global heap in the file. */
START_TEST(test_series_file_settings)
{
	char path[300];
	hid_t f, fcpl, d, a, t;
	unsigned ik = 0, sym_ik = 0, sym_lk = 0;
	H5F_info2_t fi;

	snprintf(path, sizeof(path), "%s/settings.h5", tmpdir);
	write_file(path, &kinds[0], 700, 100);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	fcpl = H5Fget_create_plist(f);
	ck_assert_int_ge(H5Pget_istore_k(fcpl, &ik), 0);
	ck_assert_int_ge(H5Pget_sym_k(fcpl, &sym_ik, &sym_lk), 0);
	ck_assert_uint_eq(ik, 4);
	ck_assert_uint_eq(sym_ik, 4);
	ck_assert_uint_eq(sym_lk, 4);
	H5Pclose(fcpl);
	/* superblock 0 or 1: any HDF5 since 1.6 opens it */
	ck_assert_int_ge(H5Fget_info2(f, &fi), 0);
	ck_assert_uint_le(fi.super.version, 1);
	d = open_dset(f, &kinds[0]);
	a = H5Aopen(d, "Field Units", H5P_DEFAULT);
	t = H5Aget_type(a);
	ck_assert_int_eq(H5Tget_class(t), H5T_STRING);
	ck_assert_int_eq(H5Tis_variable_str(t), 0);
	H5Tclose(t);
	H5Aclose(a);
	H5Dclose(d);
	H5Fclose(f);
}
END_TEST

/* Put a string array attribute, variable-length or fixed-length. */
static void put_strings(hid_t obj, const char *name, const char *const *v,
			size_t n, int vlen)
{
	hsize_t dim = n;
	hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate_simple(1, &dim, NULL), a;
	char buf[8][8];
	size_t i;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < n; i++)
		snprintf(buf[i], sizeof(buf[i]), "%s", v[i]);
	H5Tset_size(t, vlen ? H5T_VARIABLE : sizeof(buf[0]));
	a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(H5Awrite(a, t, vlen ? (const void *)v : buf), 0);
	H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(t);
}

/* Field Kinds/Units are read in both string forms (variable-length ones
 * come from files of earlier builds) and override built-in knowledge. */
START_TEST(test_series_attr_string_forms)
{
	const char *kinds_v[] = { "time", "time", "delta" };
	const char *units_v[] = { "s", "s", "W" };
	char path[300];
	struct sh5_error err;
	struct sh5_series *s;
	hid_t f, t, sp, d;
	hsize_t dim = 0, maxdim = H5S_UNLIMITED;
	int vlen;

	snprintf(path, sizeof(path), "%s/forms.h5", tmpdir);
	for (vlen = 0; vlen <= 1; vlen++) {
		f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		t = H5Tcreate(H5T_COMPOUND, 24);
		H5Tinsert(t, "ElapsedTime", 0, H5T_STD_U64LE);
		H5Tinsert(t, "EpochTime", 8, H5T_STD_U64LE);
		H5Tinsert(t, "Fan", 16, H5T_STD_U64LE);
		sp = H5Screate_simple(1, &dim, &maxdim);
		{
			hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
			hsize_t ch = 16;

			H5Pset_chunk(dcpl, 1, &ch);
			d = H5Dcreate2(f, "Sensors", t, sp, H5P_DEFAULT, dcpl,
				       H5P_DEFAULT);
			H5Pclose(dcpl);
		}
		ck_assert_int_ge(d, 0);
		put_strings(d, "Field Kinds", kinds_v, 3, vlen);
		put_strings(d, "Field Units", units_v, 3, vlen);
		s = sh5_series_from_dataset(NULL, "Sensors", d, &err);
		ck_assert_msg(s != NULL, "%s", err.text);
		ck_assert_uint_eq(s->nfields, 1);
		ck_assert_int_eq(s->fields[0].kind, SH5_FK_DELTA);
		ck_assert_str_eq(s->fields[0].unit, "W");
		sh5_series_destroy(s);
		H5Dclose(d);
		H5Sclose(sp);
		H5Tclose(t);
		H5Fclose(f);
	}
}
END_TEST

/* Odd field sets: none, many, bad names, duplicates, time-member names. */
START_TEST(test_series_odd_fields)
{
	struct sh5_error err;
	const char *many[100];
	enum sh5_ftype types[100];
	char names[100][16];
	const char *dup[] = { "A", "A" };
	const char *bad[] = { "ElapsedTime" };
	const char *dot[] = { "a.b" };
	enum sh5_ftype t2[] = { SH5_FT_U64, SH5_FT_U64 };
	struct sh5_series *s;
	int i;

	s = sh5_series_create(NULL, "Empty", NULL, NULL, 0, &err);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->nfields, 0);
	ck_assert_str_eq(s->ops->name, "Generic");
	sh5_series_destroy(s);
	for (i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "F%d", i);
		many[i] = names[i];
		types[i] = i % 2 ? SH5_FT_DOUBLE : SH5_FT_U64;
	}
	s = sh5_series_create(NULL, "Many", many, types, 100, &err);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->ops->record_size(s), (SH5_TIME_SLOTS + 101) * 8);
	sh5_series_destroy(s);
	errno = 0;
	ck_assert_ptr_null(sh5_series_create(NULL, "D", dup, t2, 2, &err));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err.text, "duplicate"));
	ck_assert_ptr_null(sh5_series_create(NULL, "B", bad, t2, 1, &err));
	ck_assert_ptr_null(sh5_series_create(NULL, "B", dot, t2, 1, &err));
	ck_assert_ptr_null(sh5_series_create(NULL, "", dot, t2, 0, &err));
	ck_assert_ptr_null(sh5_series_create(NULL, "a/b", NULL, t2, 0, &err));
}
END_TEST

/* Totals: sums for deltas, min/max/mean for levels, merge. */
START_TEST(test_series_totals)
{
	struct sh5_error err;
	const struct kind *k = &kinds[0];
	struct sh5_series *s = sh5_series_create(k->parent, k->name, k->fields,
						 k->types, k->n, &err);
	union sh5_value recs[10][SH5_TIME_SLOTS + 9];
	void *t1 = malloc(s->ops->total_size(s));
	void *t2 = malloc(s->ops->total_size(s));
	int cpu = sh5_series_field_index(s, "CPUTime");
	int rss = sh5_series_field_index(s, "RSS");
	size_t r;

	for (r = 0; r < 10; r++)
		fill(s, recs[r], r);
	s->ops->total_init(s, t1);
	s->ops->total_add(s, t1, recs, 4);
	s->ops->total_init(s, t2);
	s->ops->total_add(s, t2, recs[4], 6);
	s->ops->total_merge(s, t1, t2);
	ck_assert_uint_eq(sh5_total_head(t1)->samples, 10);
	/* CPUTime = r*0.5 + 1: sum 0.5*45 + 10 */
	ck_assert_double_eq_tol(sh5_total_field(t1, cpu)->sum, 32.5, 1e-9);
	/* RSS = r*10 + 3 */
	ck_assert_double_eq(sh5_total_field(t1, rss)->min, 3);
	ck_assert_double_eq(sh5_total_field(t1, rss)->max, 93);
	ck_assert_double_eq_tol(sh5_total_field(t1, rss)->mean, 48, 1e-9);
	ck_assert_int_eq(sh5_total_head(t1)->first_ns, recs[0][2].i);
	ck_assert_int_eq(sh5_total_head(t1)->last_ns, recs[9][2].i);
	free(t1);
	free(t2);
	sh5_series_destroy(s);
}
END_TEST

/* The packed file form of a total is what HDF5's conversion to the total
 * file type gives, and a total written with it reads back the same. */
START_TEST(test_series_total_pack)
{
	struct sh5_error err;
	char path[300];
	size_t ki, r;
	hid_t f;

	snprintf(path, sizeof(path), "%s/totals.h5", tmpdir);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	for (ki = 0; ki < NKINDS; ki++) {
		const struct kind *k = &kinds[ki];
		struct sh5_series *s = sh5_series_create(k->parent, k->name,
							 k->fields, k->types,
							 k->n, &err);
		size_t tsize = s->ops->total_size(s);
		size_t fsize = sh5_total_pack(s, NULL, NULL);
		union sh5_value recs[10][SH5_TIME_SLOTS + 9];
		unsigned char *t = malloc(tsize), *back = malloc(tsize);
		unsigned char *conv = calloc(1, tsize + 4096);
		unsigned char *bkg = calloc(1, tsize + 4096);
		unsigned char *p1 = malloc(fsize), *p2 = malloc(fsize);
		hid_t mt = s->ops->total_mem_type(s);
		hid_t ft = s->ops->total_file_type(s);
		char tp[64];

		for (r = 0; r < 10; r++)
			fill(s, recs[r], r);
		s->ops->total_init(s, t);
		s->ops->total_add(s, t, recs, 10);
		ck_assert_uint_eq(H5Tget_size(ft), fsize);
		ck_assert_uint_eq(sh5_total_pack(s, t, p1), fsize);
		memcpy(conv, t, tsize);
		ck_assert_int_ge(H5Tconvert(mt, ft, 1, conv, bkg,
					    H5P_DEFAULT), 0);
		ck_assert_int_eq(memcmp(conv, p1, fsize), 0);
		snprintf(tp, sizeof(tp), "Totals/K%zu/%s", ki, k->name);
		ck_assert_int_eq(sh5_total_write(f, tp, s, t, 2, 10, -1), 0);
		s->ops->total_init(s, back);
		ck_assert_int_eq(sh5_total_read(f, tp, s, back), 0);
		sh5_total_pack(s, back, p2);
		ck_assert_int_eq(memcmp(p1, p2, fsize), 0);
		H5Tclose(mt);
		H5Tclose(ft);
		free(t);
		free(back);
		free(conv);
		free(bkg);
		free(p1);
		free(p2);
		sh5_series_destroy(s);
	}
	H5Fclose(f);
}
END_TEST

/* A node attribute written twice is replaced, not duplicated. */
START_TEST(test_writer_attr_replaced)
{
	struct sh5_error err = { "" };
	char path[300];
	struct sh5_writer *w;
	hid_t f, g, a;
	int v = 0;

	snprintf(path, sizeof(path), "%s/attrs.h5", tmpdir);
	w = sh5_writer_create(path, -1, "node1", NULL, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	ck_assert_int_eq(sh5_writer_attr_int(w, "Node Index", 1, &err), 0);
	ck_assert_int_eq(sh5_writer_attr_str(w, "User", "a", &err), 0);
	ck_assert_int_eq(sh5_writer_attr_int(w, "Node Index", 7, &err), 0);
	ck_assert_int_eq(sh5_writer_attr_str(w, "User", "bob", &err), 0);
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	g = H5Gopen2(f, "node1", H5P_DEFAULT);
	a = H5Aopen(g, "Node Index", H5P_DEFAULT);
	ck_assert_int_ge(H5Aread(a, H5T_NATIVE_INT, &v), 0);
	ck_assert_int_eq(v, 7);
	H5Aclose(a);
	a = H5Aopen(g, "User", H5P_DEFAULT);
	{
		hid_t at = H5Aget_type(a);

		ck_assert_int_eq(H5Tget_size(at), 4);
		H5Tclose(at);
	}
	H5Aclose(a);
	{
		H5G_info_t gi;
		H5O_info_t oi;

		ck_assert_int_ge(H5Gget_info(g, &gi), 0);
		ck_assert_int_ge(H5Oget_info(g, &oi), 0);
		ck_assert_int_eq(oi.num_attrs, 2);
	}
	H5Gclose(g);
	H5Fclose(f);
}
END_TEST

/* Series with the same fields share one committed file type (and those
 * with others get their own); no modification times on the series
 * datasets and the groups; the records read back through it. */
START_TEST(test_writer_types_shared)
{
	struct sh5_error err = { "" };
	const char *fields[] = { "Id", "Value" }, *other[] = { "Id" };
	enum sh5_ftype types[] = { SH5_FT_U64, SH5_FT_DOUBLE };
	const char *paths[] = { "n/Tasks/0", "n/Tasks/1", "n/Other" };
	/* A record's slots (sh5_record_slots): the times, the two fields
	 * and the SyncTimeNs slot after them. */
	union sh5_value rec[SH5_TIME_SLOTS + 2 + 1];
	char path[300];
	struct sh5_writer *w;
	haddr_t addr[3];
	hid_t f, mt;
	uint64_t id;
	int i, ids[3];

	snprintf(path, sizeof(path), "%s/types.h5", tmpdir);
	w = sh5_writer_create(path, -1, "n", NULL, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	ids[0] = sh5_writer_add_series(w, "Tasks", sh5_series_create(
		"Tasks", "0", fields, types, 2, &err), 1.0, &err);
	ids[1] = sh5_writer_add_series(w, "Tasks", sh5_series_create(
		"Tasks", "1", fields, types, 2, &err), 1.0, &err);
	ids[2] = sh5_writer_add_series(w, NULL, sh5_series_create(
		NULL, "Other", other, types, 1, &err), 1.0, &err);
	for (i = 0; i < 3; i++) {
		ck_assert_msg(ids[i] >= 0, "%s", err.text);
		memset(rec, 0, sizeof(rec));
		rec[0].u = 1;
		rec[SH5_TIME_SLOTS].u = 40 + (uint64_t)i;
		ck_assert_int_eq(sh5_writer_append(w, ids[i], rec), 0);
	}
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	mt = H5Tcreate(H5T_COMPOUND, sizeof(id));
	H5Tinsert(mt, "Id", 0, H5T_NATIVE_UINT64);
	for (i = 0; i < 3; i++) {
		hid_t d = H5Dopen2(f, paths[i], H5P_DEFAULT);
		hid_t t = H5Dget_type(d);
		H5O_info_t oi;

		ck_assert_int_ge(d, 0);
		ck_assert_int_gt(H5Tcommitted(t), 0);
		ck_assert_int_ge(H5Oget_info(t, &oi), 0);
		addr[i] = oi.addr;
		ck_assert_int_ge(H5Oget_info(d, &oi), 0);
		ck_assert_int_eq(oi.mtime, 0);
		ck_assert_int_ge(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT,
					 &id), 0);
		ck_assert_uint_eq(id, 40 + (uint64_t)i);
		H5Tclose(t);
		H5Dclose(d);
	}
	ck_assert(addr[0] == addr[1]);
	ck_assert(addr[2] != addr[0]);
	{
		H5O_info_t oi;
		hid_t g = H5Gopen2(f, "n/Tasks", H5P_DEFAULT);

		ck_assert_int_ge(H5Oget_info(g, &oi), 0);
		ck_assert_int_eq(oi.mtime, 0);
		H5Gclose(g);
	}
	H5Tclose(mt);
	H5Fclose(f);
}
END_TEST

/* Slurm 23.02 and later: the Task series has GPU fields (in Slurm's
 * order) that get units and kinds like the others. */
START_TEST(test_series_task_gpu_fields)
{
	static const char *const names[] = {
		"CPUFrequency", "CPUTime", "CPUUtilization", "GPUMemMB",
		"GPUUtilization", "RSS", "VMSize", "Pages", "ReadMB", "WriteMB"
	};
	static const enum sh5_ftype types[] = {
		SH5_FT_U64, SH5_FT_DOUBLE, SH5_FT_DOUBLE, SH5_FT_U64,
		SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_U64, SH5_FT_U64,
		SH5_FT_DOUBLE, SH5_FT_DOUBLE
	};
	struct sh5_error err = { "" };
	struct sh5_series *s = sh5_series_create("Tasks", "0", names, types,
						 10, &err);
	int mem, util;

	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_str_eq(s->ops->name, "Task");
	mem = sh5_series_field_index(s, "GPUMemMB");
	util = sh5_series_field_index(s, "GPUUtilization");
	ck_assert_int_eq(mem, 3);
	ck_assert_int_eq(util, 4);
	ck_assert_str_eq(s->fields[mem].unit, "MiB");
	ck_assert_str_eq(s->fields[util].unit, "%");
	ck_assert_int_eq(s->fields[mem].kind, SH5_FK_LEVEL);
	ck_assert_int_eq(s->fields[util].kind, SH5_FK_LEVEL);
	ck_assert_str_eq(s->fields[sh5_series_field_index(s, "RSS")].unit,
			 "KiB");
	sh5_series_destroy(s);
}
END_TEST

/* Safe creation: modes, owner, symlinks refused. */
START_TEST(test_layout_safe_create)
{
	char dir[300], p[400], name[64];
	struct sh5_error err;
	struct stat st;
	int fd;

	snprintf(dir, sizeof(dir), "%s/prof", tmpdir);
	ck_assert_int_eq(sh5_layout_file_name(12, SH5_STEP_BATCH, "n1", name,
					      sizeof(name)), 0);
	ck_assert_str_eq(name, "12_batch_n1.h5");
	ck_assert_int_eq(sh5_layout_file_name(12, SH5_STEP_EXTERN, "n1", name,
					      sizeof(name)), 0);
	ck_assert_str_eq(name, "12_extern_n1.h5");
	fd = sh5_layout_open_node_file(dir, "alice", getuid(), getgid(), name,
				       &err);
	ck_assert_msg(fd >= 0, "%s", err.text);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	close(fd);
	snprintf(p, sizeof(p), "%s/alice", dir);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	/* Same file again (requeue): replaced. */
	fd = sh5_layout_open_node_file(dir, "alice", getuid(), getgid(), name,
				       &err);
	ck_assert_msg(fd >= 0, "%s", err.text);
	close(fd);
	/* A symlink where the file would go: refused, target untouched. */
	snprintf(p, sizeof(p), "%s/alice/13_0_n1.h5", dir);
	ck_assert_int_eq(symlink("/etc/passwd", p), 0);
	fd = sh5_layout_open_node_file(dir, "alice", getuid(), getgid(),
				       "13_0_n1.h5", &err);
	ck_assert_int_lt(fd, 0);
	ck_assert_ptr_nonnull(strstr(err.text, "symlink"));
	/* A symlinked user directory: refused. */
	snprintf(p, sizeof(p), "%s/bob", dir);
	ck_assert_int_eq(symlink(tmpdir, p), 0);
	fd = sh5_layout_open_node_file(dir, "bob", getuid(), getgid(),
				       "1_0_n1.h5", &err);
	ck_assert_int_lt(fd, 0);
	ck_assert_ptr_nonnull(strstr(err.text, "refused"));
}
END_TEST

/* Two steps of a user starting together on a shared directory: one made
 * the user directory and has not chowned it yet; the other waits for it
 * (as root, the way slurmstepd runs) instead of refusing.  A directory
 * of anyone else is refused at once. */
START_TEST(test_layout_concurrent_mkdir)
{
	char dir[300], p[400];
	struct sh5_error err;
	pid_t pid;
	int fd, st;

	if (geteuid() != 0)
		return; /* chown needs root; CI runs as root */
	snprintf(dir, sizeof(dir), "%s/shared", tmpdir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/carol", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0); /* root's, for now */
	if ((pid = fork()) == 0) {
		usleep(30000);
		_exit(chown(p, 12345, 12345) == 0 ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	fd = sh5_layout_open_node_file(dir, "carol", 12345, 12345,
				       "7_0_n2.h5", &err);
	ck_assert_msg(fd >= 0, "%s", err.text);
	close(fd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(p, sizeof(p), "%s/dave", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_eq(chown(p, 4321, 4321), 0);
	fd = sh5_layout_open_node_file(dir, "dave", 12345, 12345,
				       "7_0_n2.h5", &err);
	ck_assert_int_lt(fd, 0);
	ck_assert_ptr_nonnull(strstr(err.text, "not owned"));
}
END_TEST

/* Writer through an fd, failure after close, unknown ids. */
START_TEST(test_writer_errors)
{
	struct sh5_error err;
	char path[300];
	struct sh5_writer *w;
	union sh5_value rec[8] = { { 0 } };
	int fd;

	snprintf(path, sizeof(path), "%s/fd.h5", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	w = sh5_writer_create(path, fd, "n", NULL, &err);
	close(fd);
	ck_assert_msg(w != NULL, "%s", err.text);
	errno = 0;
	ck_assert_int_eq(sh5_writer_append(w, 5, rec), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_writer_close(w, &err), 0);
	ck_assert_ptr_null(sh5_writer_create("/nonexistent/dir/x.h5", -1, "n",
					     NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/dir/x.h5"));
	ck_assert_ptr_null(sh5_writer_create(path, -1, "a/b", NULL, &err));
}
END_TEST

/* With defer_file the HDF5 file is made at the first write to it (here an
 * attribute), on the descriptor given to create (the path was renamed
 * meanwhile), holding the series and samples taken before; a deferred
 * file that cannot be created fails the first write, naming the file. */
START_TEST(test_writer_deferred_file)
{
	struct sh5_writer_opts o;
	struct sh5_error err = { "" };
	char path[300], moved[300];
	struct sh5_writer *w;
	struct sh5_series *s;
	union sh5_value rec[32];
	struct stat st;
	hid_t f, d, sp;
	int fd, id, v = 0;
	size_t r;

	snprintf(path, sizeof(path), "%s/deferred.h5", tmpdir);
	snprintf(moved, sizeof(moved), "%s/moved.h5", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	sh5_writer_opts_init(&o);
	o.defer_file = 1;
	w = sh5_writer_create(path, fd, "node1", &o, &err);
	close(fd);
	ck_assert_msg(w != NULL, "%s", err.text);
	s = sh5_series_create(kinds[0].parent, kinds[0].name, kinds[0].fields,
			      kinds[0].types, kinds[0].n, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	id = sh5_writer_add_series(w, kinds[0].parent, s, 1.0, &err);
	ck_assert_msg(id >= 0, "%s", err.text);
	for (r = 0; r < 5; r++) {
		fill(s, rec, r);
		ck_assert_int_eq(sh5_writer_append(w, id, rec), 0);
	}
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0); /* nothing written yet */
	ck_assert_int_eq(rename(path, moved), 0);
	ck_assert_int_eq(sh5_writer_attr_int(w, "Node Index", 3, &err), 0);
	ck_assert_int_eq(stat(moved, &st), 0);
	ck_assert_int_gt(st.st_size, 0);
	ck_assert_msg(sh5_writer_flush(w, &err) == 0, "%s", err.text);
	for (r = 5; r < 9; r++) {
		fill(s, rec, r);
		ck_assert_int_eq(sh5_writer_append(w, id, rec), 0);
	}
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	ck_assert_int_ne(access(path, F_OK), 0);
	f = H5Fopen(moved, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	d = open_dset(f, &kinds[0]);
	ck_assert_int_ge(d, 0);
	sp = H5Dget_space(d);
	ck_assert_int_eq(H5Sget_simple_extent_npoints(sp), 9);
	H5Sclose(sp);
	H5Dclose(d);
	{
		hid_t g = H5Gopen2(f, "node1", H5P_DEFAULT);
		hid_t a = H5Aopen(g, "Node Index", H5P_DEFAULT);

		ck_assert_int_ge(H5Aread(a, H5T_NATIVE_INT, &v), 0);
		ck_assert_int_eq(v, 3);
		H5Aclose(a);
		H5Gclose(g);
	}
	H5Fclose(f);

	/* Deferred and impossible: create succeeds, the first write fails
	 * naming the file, and so does every later one. */
	w = sh5_writer_create("/nonexistent/dir/x.h5", -1, "n", &o, &err);
	ck_assert_msg(w != NULL, "%s", err.text);
	err.text[0] = '\0';
	ck_assert_int_eq(sh5_writer_flush(w, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/dir/x.h5"));
	ck_assert_int_eq(sh5_writer_attr_int(w, "Node Index", 3, &err), -1);
	ck_assert_int_eq(errno, EIO);
	sh5_writer_close(w, NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("series");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_series_roundtrip, 0, NKINDS * 6);
	tcase_add_test(tc, test_series_attributes);
	tcase_add_test(tc, test_series_chunk_and_compression);
	tcase_add_test(tc, test_series_file_settings);
	tcase_add_test(tc, test_series_attr_string_forms);
	tcase_add_test(tc, test_series_odd_fields);
	tcase_add_test(tc, test_series_totals);
	tcase_add_test(tc, test_series_total_pack);
	tcase_add_test(tc, test_writer_attr_replaced);
	tcase_add_test(tc, test_writer_types_shared);
	tcase_add_test(tc, test_series_task_gpu_fields);
	tcase_add_test(tc, test_layout_safe_create);
	tcase_add_test(tc, test_layout_concurrent_mkdir);
	tcase_add_test(tc, test_writer_errors);
	tcase_add_test(tc, test_writer_deferred_file);
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
