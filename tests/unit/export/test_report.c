/* test_report.c - the HTML report (export/report.h) on a small job file
 * written here with HDF5 calls: one step, one node whose name tries to
 * end the data block, one task with 50 samples.  The page is complete,
 * names are escaped (exactly two "</script>"), the counters and the
 * series are in the data, what is missing (events, clock offsets, one
 * node) is listed; a missing file and an unknown step fail with the
 * name in the error. */
#include "config.h"

#include <check.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/report.h"

static char path[64];

struct row {
	uint64_t elapsed, epoch;
	double cpu;
	uint64_t rss, ns;
};

static void str_attr(hid_t o, const char *name, const char *v)
{
	hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR), a;

	H5Tset_size(t, strlen(v) + 1);
	a = H5Acreate2(o, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(H5Awrite(a, t, v), 0);
	H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(t);
}

static void int_attr(hid_t o, const char *name, int v)
{
	hid_t sp = H5Screate(H5S_SCALAR), a;

	a = H5Acreate2(o, name, H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(H5Awrite(a, H5T_NATIVE_INT, &v), 0);
	H5Aclose(a);
	H5Sclose(sp);
}

static void make_job(void)
{
	struct row r[50];
	hid_t f, g, t, sp, d;
	hsize_t n = 50;
	int i;

	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	snprintf(path, sizeof(path), "/tmp/test_report.%d.h5", (int)getpid());
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(f, 0);
	int_attr(f, "Job ID", 99);
	g = H5Gcreate2(f, "/Steps/0/Nodes/n1/Tasks", H5P_DEFAULT, H5P_DEFAULT,
		       H5P_DEFAULT);
	if (g < 0) {	/* no intermediate groups by default */
		H5Gclose(H5Gcreate2(f, "/Steps", 0, 0, 0));
		H5Gclose(H5Gcreate2(f, "/Steps/0", 0, 0, 0));
		H5Gclose(H5Gcreate2(f, "/Steps/0/Nodes", 0, 0, 0));
		d = H5Gcreate2(f, "/Steps/0/Nodes/n1", 0, 0, 0);
		int_attr(d, "Node Index", 0);
		str_attr(d, "Node Name", "</script><b>x");
		H5Gclose(d);
		g = H5Gcreate2(f, "/Steps/0/Nodes/n1/Tasks", 0, 0, 0);
	}
	ck_assert_int_ge(g, 0);
	t = H5Tcreate(H5T_COMPOUND, sizeof(struct row));
	H5Tinsert(t, "ElapsedTime", HOFFSET(struct row, elapsed),
		  H5T_NATIVE_UINT64);
	H5Tinsert(t, "EpochTime", HOFFSET(struct row, epoch),
		  H5T_NATIVE_UINT64);
	H5Tinsert(t, "CPUUtilization", HOFFSET(struct row, cpu),
		  H5T_NATIVE_DOUBLE);
	H5Tinsert(t, "RSS", HOFFSET(struct row, rss), H5T_NATIVE_UINT64);
	H5Tinsert(t, "EpochTimeNs", HOFFSET(struct row, ns),
		  H5T_NATIVE_UINT64);
	for (i = 0; i < 50; i++) {
		r[i].elapsed = (uint64_t)i;
		r[i].epoch = 1700000000u + (uint64_t)i;
		r[i].cpu = i == 40 ? 1000 : 50 + i % 3;
		r[i].rss = 1000 + (uint64_t)i;
		r[i].ns = r[i].epoch * 1000000000ull;
	}
	sp = H5Screate_simple(1, &n, NULL);
	d = H5Dcreate2(g, "0", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert_int_ge(d, 0);
	ck_assert_int_ge(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r), 0);
	H5Dclose(d);
	H5Sclose(sp);
	H5Tclose(t);
	H5Gclose(g);
	H5Fclose(f);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

START_TEST(test_report_page)
{
	struct sh5_report_result res;
	struct sh5_error err = { "" };
	struct sh5_report_opts o = { .sigma = 3 };
	char *buf = NULL;
	size_t len = 0, i;
	FILE *m;
	int found = 0;

	make_job();
	m = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(sh5_report_write(path, m, "mem", &o, &res, &err) == 0,
		      "%s", err.text);
	fclose(m);
	ck_assert(!strncmp(buf, "<!DOCTYPE html>", 15));
	ck_assert_ptr_nonnull(strstr(buf, "</body></html>\n"));
	ck_assert_uint_eq(count(buf, "</script>"), 2);
	ck_assert_ptr_nonnull(strstr(buf, "\\u003c/script>\\u003cb>x"));
	ck_assert_ptr_nonnull(strstr(buf, "\"f\":\"CPUUtilization\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"f\":\"RSS\""));
	/* no address but the SVG namespace */
	ck_assert_uint_eq(count(buf, "http:"),
			  count(buf, "\"http://www.w3.org/2000/svg\""));
	ck_assert_uint_eq(count(buf, "https:"), 0);
	ck_assert_uint_eq(res.nsteps, 1);
	ck_assert_uint_eq(res.nnodes, 1);
	ck_assert_uint_eq(res.ntasks, 1);
	ck_assert_uint_eq(res.nseries, 2);
	ck_assert_uint_eq(res.samples, 50);
	ck_assert_uint_eq(res.events, 0);
	for (i = 0; i < res.nmissing && i < 16; i++)
		if (strstr(res.missing[i], "no application events"))
			found |= 1;
		else if (strstr(res.missing[i], "no clock offsets"))
			found |= 2;
		else if (strstr(res.missing[i], "one node"))
			found |= 4;
	ck_assert_int_eq(found, 7);
	/* the spike at sample 40 is an anomaly at 3 sigma */
	ck_assert_ptr_nonnull(strstr(buf, "\"Task.CPUUtilization\",1000.0"));
	free(buf);
	unlink(path);
}
END_TEST

START_TEST(test_report_errors)
{
	struct sh5_error err = { "" };
	struct sh5_report_opts o = { .step = "7" };
	FILE *m = fopen("/dev/null", "w");

	ck_assert_int_eq(sh5_report_write("/nonexistent/x.h5", m, "n", NULL,
					  NULL, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/x.h5"));
	make_job();
	ck_assert_int_eq(sh5_report_write(path, m, "n", &o, NULL, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "no step 7"));
	fclose(m);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_report_page);
	tcase_add_test(tc, test_report_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
