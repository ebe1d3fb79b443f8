/*
 * stock_copy - rewrite the samples of an sh5 node-step file exactly as
 * Slurm 22.05's acct_gather_profile/hdf5 would have written them.
 *
 *   stock_copy IN.h5 OUT.h5
 *
 * The stock plugin (src/plugins/acct_gather_profile/hdf5/
 * acct_gather_profile_hdf5.c) creates the file with default property
 * lists, the node group (make_group: a look-up among the parent's links,
 * then H5Gcreate2) with five attributes (put_int_attribute,
 * put_string_attribute of its hdf5_api.c: one-element arrays, strings
 * fixed-length without the NUL), and one packet table per dataset with
 * H5PTcreate_fl(parent, name, type, 10, 0) (the type built with
 * H5Tcreate and one H5Tinsert per member): a chunked extendible dataset
 * of 10-record chunks with the deflate filter at level 0, a compound of
 * ElapsedTime, EpochTime (native uint64) and the gather plugin's fields
 * (native uint64 or double) in their order.  Every sample is appended on
 * its own (H5PTappend of one record) as it arrives; here the datasets'
 * rows are interleaved round-robin, which is how the gather threads feed
 * them.  EpochTimeNs, SyncTimeNs, ClockOffsets and our extra attributes
 * are dropped: the stock plugin has no such thing.
 *
 * Prints "SAMPLES DATASETS" (records copied, datasets) on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>
#include <hdf5_hl.h>

#define MAXDS 4096

struct ds {
	hid_t table;
	size_t size;   /* stock record size */
	hsize_t rows;
	unsigned char *data;
};

static struct ds dss[MAXDS];
static size_t nds;

static int die(const char *what)
{
	fprintf(stderr, "stock_copy: %s\n", what);
	exit(1);
}

/* The stock record type of a dataset, or -1 if it is not a series. */
static hid_t stock_type(hid_t dset, size_t *size)
{
	hid_t ft = H5Dget_type(dset), st;
	int i, n;
	size_t off = 16;

	if (H5Tget_class(ft) != H5T_COMPOUND ||
	    H5Tget_member_index(ft, "ElapsedTime") < 0 ||
	    H5Tget_member_index(ft, "EpochTime") < 0) {
		H5Tclose(ft);
		return -1;
	}
	n = H5Tget_nmembers(ft);
	/* first pass: size */
	for (i = 0; i < n; i++) {
		char *m = H5Tget_member_name(ft, (unsigned)i);

		if (strcmp(m, "ElapsedTime") && strcmp(m, "EpochTime") &&
		    strcmp(m, "EpochTimeNs") && strcmp(m, "SyncTimeNs"))
			off += 8;
		H5free_memory(m);
	}
	st = H5Tcreate(H5T_COMPOUND, off);
	H5Tinsert(st, "ElapsedTime", 0, H5T_NATIVE_UINT64);
	H5Tinsert(st, "EpochTime", 8, H5T_NATIVE_UINT64);
	off = 16;
	for (i = 0; i < n; i++) {
		char *m = H5Tget_member_name(ft, (unsigned)i);

		if (strcmp(m, "ElapsedTime") && strcmp(m, "EpochTime") &&
		    strcmp(m, "EpochTimeNs") && strcmp(m, "SyncTimeNs")) {
			H5Tinsert(st, m, off,
				  H5Tget_member_class(ft, (unsigned)i) ==
						  H5T_FLOAT ?
					  H5T_NATIVE_DOUBLE :
					  H5T_NATIVE_UINT64);
			off += 8;
		}
		H5free_memory(m);
	}
	H5Tclose(ft);
	*size = off;
	return st;
}

/* The stock plugin's make_group() (hdf5_api.c): its get_group() looks
 * the name up among the parent's links, by index, before creating it. */
static hid_t make_group(hid_t parent, const char *name)
{
	H5G_info_t gi;
	hsize_t i;
	char buf[1024];

	H5Gget_info(parent, &gi);
	for (i = 0; i < gi.nlinks; i++) {
		ssize_t len = H5Lget_name_by_idx(parent, ".", H5_INDEX_NAME,
						 H5_ITER_INC, i, buf,
						 sizeof(buf), H5P_DEFAULT);

		if (len > 0 && (size_t)len < sizeof(buf) && !strcmp(buf, name))
			return H5Gopen2(parent, name, H5P_DEFAULT);
	}
	return H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT,
			  H5P_DEFAULT);
}

/* Copy the series datasets of group in (recursing once into subgroups,
 * like Tasks/) to group out. */
static void copy_group(hid_t in, hid_t out, int depth)
{
	H5G_info_t gi;
	hsize_t i;

	if (H5Gget_info(in, &gi) < 0)
		die("cannot list a group");
	for (i = 0; i < gi.nlinks; i++) {
		char name[256];
		H5O_info_t oi;

		if (H5Lget_name_by_idx(in, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC,
				       i, name, sizeof(name), H5P_DEFAULT) < 0 &&
		    H5Lget_name_by_idx(in, ".", H5_INDEX_NAME, H5_ITER_INC, i,
				       name, sizeof(name), H5P_DEFAULT) < 0)
			die("cannot read a link name");
		if (H5Oget_info_by_name(in, name, &oi, H5P_DEFAULT) < 0)
			die("cannot stat an object");
		if (oi.type == H5O_TYPE_GROUP && depth == 0) {
			hid_t gi2 = H5Gopen2(in, name, H5P_DEFAULT);
			hid_t go = make_group(out, name);

			if (gi2 < 0 || go < 0)
				die("cannot copy a group");
			copy_group(gi2, go, 1);
			H5Gclose(go);
			H5Gclose(gi2);
		} else if (oi.type == H5O_TYPE_DATASET) {
			hid_t d = H5Dopen2(in, name, H5P_DEFAULT), st, sp;
			struct ds *x;
			size_t size;

			if (d < 0)
				die("cannot open a dataset");
			if ((st = stock_type(d, &size)) < 0) {
				H5Dclose(d);
				continue;
			}
			if (nds == MAXDS)
				die("too many datasets");
			x = &dss[nds++];
			x->size = size;
			sp = H5Dget_space(d);
			H5Sget_simple_extent_dims(sp, &x->rows, NULL);
			H5Sclose(sp);
			if (!(x->data = malloc(x->rows * size + 1)))
				die("out of memory");
			if (x->rows && H5Dread(d, st, H5S_ALL, H5S_ALL,
					       H5P_DEFAULT, x->data) < 0)
				die("cannot read a dataset");
			/* exactly the stock call */
			x->table = H5PTcreate_fl(out, name, st, 10, 0);
			if (x->table < 0)
				die("H5PTcreate_fl failed");
			H5Tclose(st);
			H5Dclose(d);
		}
	}
}

static void put_int(hid_t g, const char *name, int v)
{
	hsize_t one = 1;
	hid_t sp = H5Screate_simple(1, &one, NULL);
	hid_t a = H5Acreate2(g, name, H5T_NATIVE_INT, sp, H5P_DEFAULT,
			     H5P_DEFAULT);

	H5Awrite(a, H5T_NATIVE_INT, &v);
	H5Aclose(a);
	H5Sclose(sp);
}

static void put_str(hid_t g, const char *name, const char *v)
{
	hsize_t one = 1;
	hid_t ty = H5Tcopy(H5T_C_S1), sp, a;

	H5Tset_size(ty, strlen(v) ? strlen(v) : 1);
	H5Tset_strpad(ty, H5T_STR_NULLTERM);
	sp = H5Screate_simple(1, &one, NULL);
	a = H5Acreate2(g, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(a, ty, v);
	H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(ty);
}

static int get_int(hid_t g, const char *name)
{
	int v = 0;
	hid_t a = H5Aopen(g, name, H5P_DEFAULT);

	if (a >= 0) {
		H5Aread(a, H5T_NATIVE_INT, &v);
		H5Aclose(a);
	}
	return v;
}

static void get_str(hid_t g, const char *name, char *buf, size_t len)
{
	hid_t a = H5Aopen(g, name, H5P_DEFAULT), ty, mt;

	buf[0] = 0;
	if (a < 0)
		return;
	ty = H5Aget_type(a);
	if (H5Tis_variable_str(ty) <= 0 && H5Tget_size(ty) < len) {
		mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5Tget_size(ty) + 1);
		H5Aread(a, mt, buf);
		H5Tclose(mt);
	}
	H5Tclose(ty);
	H5Aclose(a);
}

int main(int argc, char **argv)
{
	hid_t in, out, nin, nout;
	char node[256], s[1024];
	hsize_t row, total = 0, maxrows = 0;
	size_t i;

	if (argc != 3) {
		fprintf(stderr, "usage: stock_copy IN.h5 OUT.h5\n");
		return 2;
	}
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if ((in = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
		die("cannot open the input");
	if (H5Lget_name_by_idx(in, ".", H5_INDEX_NAME, H5_ITER_INC, 0, node,
			       sizeof(node), H5P_DEFAULT) < 0 ||
	    (nin = H5Gopen2(in, node, H5P_DEFAULT)) < 0)
		die("no node group");
	if ((out = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT,
			     H5P_DEFAULT)) < 0)
		die("cannot create the output");
	nout = make_group(out, node);
	if (nout < 0)
		die("cannot create the node group");
	/* node_step_start's attributes, in its order */
	put_int(nout, "Node Index", get_int(nin, "Node Index"));
	get_str(nin, "Node Name", s, sizeof(s));
	put_str(nout, "Node Name", s);
	put_int(nout, "Number of Tasks", get_int(nin, "Number of Tasks"));
	put_int(nout, "CPUs per Task", get_int(nin, "CPUs per Task"));
	get_str(nin, "Start Time", s, sizeof(s));
	put_str(nout, "Start Time", s);
	copy_group(nin, nout, 0);
	for (i = 0; i < nds; i++)
		if (dss[i].rows > maxrows)
			maxrows = dss[i].rows;
	for (row = 0; row < maxrows; row++)
		for (i = 0; i < nds; i++)
			if (row < dss[i].rows) {
				if (H5PTappend(dss[i].table, 1,
					       dss[i].data +
						       row * dss[i].size) < 0)
					die("H5PTappend failed");
				total++;
			}
	for (i = 0; i < nds; i++) {
		H5PTclose(dss[i].table);
		free(dss[i].data);
	}
	H5Gclose(nout);
	H5Gclose(nin);
	if (H5Fclose(out) < 0)
		die("cannot close the output");
	H5Fclose(in);
	printf("%llu %zu\n", (unsigned long long)total, nds);
	return 0;
}
