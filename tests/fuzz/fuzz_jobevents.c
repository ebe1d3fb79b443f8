/* fuzz_jobevents.c - libFuzzer target: the job-file event reader
 * (sh5_evstep_read) and its CSV writer on hostile event data.  The input
 * is not an HDF5 file image (that would fuzz libhdf5's parser, whose
 * crashes sh5merge contains in child processes): it is cut into the
 * contents of a step's event datasets, which are written to an
 * in-memory HDF5 file in the layout of evstore.h and read back. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "events/evstore.h"
#include "sync/jobevents.h"

struct in {
	const uint8_t *p;
	size_t n;
};

/* The next len bytes (zeros past the end). */
static void take(struct in *in, void *dst, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memset(dst, 0, len);
	memcpy(dst, in->p, k);
	in->p += k;
	in->n -= k;
}

static unsigned take_u8(struct in *in)
{
	uint8_t v;

	take(in, &v, 1);
	return v;
}

static int put(hid_t g, const char *name, hid_t type, size_t rows,
	       const void *buf)
{
	hsize_t d[1] = { rows };
	hid_t sp = H5Screate_simple(1, d, NULL), ds;
	int rc = -1;

	if (sp < 0)
		return -1;
	ds = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, H5P_DEFAULT,
			H5P_DEFAULT);
	if (ds >= 0) {
		rc = rows ? H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				     buf) : 0;
		H5Dclose(ds);
	}
	H5Sclose(sp);
	return rc;
}

static void attr_i32(hid_t o, const char *name, int32_t v)
{
	hid_t sp = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(o, name, H5T_STD_I32LE, sp, H5P_DEFAULT,
			     H5P_DEFAULT);

	if (a >= 0) {
		H5Awrite(a, H5T_NATIVE_INT32, &v);
		H5Aclose(a);
	}
	H5Sclose(sp);
}

/* rows of elem bytes: count from the input, contents from the input */
static void *table(struct in *in, size_t elem, size_t max, size_t *rows)
{
	void *b;

	*rows = take_u8(in) % (max + 1);
	if (!(b = calloc(*rows ? *rows : 1, elem)))
		abort();
	take(in, b, *rows * elem);
	return b;
}

static void build(hid_t f, struct in *in)
{
	hid_t rt = sh5_evstore_rec_type(), gt = sh5_evstore_region_type(),
	      ct = sh5_evstore_comm_type(), mt = sh5_evstore_member_type();
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), ev;
	unsigned nt = 1 + take_u8(in) % 3, k;
	size_t rows;
	void *b;

	H5Pset_create_intermediate_group(lcpl, 1);
	ev = H5Gcreate2(f, "/Steps/0/Nodes/n1/Events", lcpl, H5P_DEFAULT,
			H5P_DEFAULT);
	if (ev < 0)
		abort();
	attr_i32(ev, "Events Format Version", 1);
	for (k = 0; k < nt; k++) {
		char name[16];
		hid_t d;
		int32_t v[3];

		snprintf(name, sizeof(name), "%u", take_u8(in) % 8);
		b = table(in, sizeof(struct sh5ev_rec), 64, &rows);
		take(in, v, sizeof(v));
		if (H5Lexists(ev, name, H5P_DEFAULT) <= 0 &&
		    put(ev, name, rt, rows, b) == 0 &&
		    (d = H5Dopen2(ev, name, H5P_DEFAULT)) >= 0) {
			attr_i32(d, "Task", v[0] & 7);
			attr_i32(d, "World Rank", v[1] % 9);
			attr_i32(d, "World Size", v[2] % 9);
			H5Dclose(d);
		}
		free(b);
	}
	b = table(in, sizeof(struct sh5_evstore_region), 16, &rows);
	put(ev, "Regions", gt, rows, b);
	free(b);
	b = table(in, sizeof(struct sh5_evstore_comm), 8, &rows);
	put(ev, "Comms", ct, rows, b);
	free(b);
	b = table(in, sizeof(struct sh5_evstore_member), 32, &rows);
	put(ev, "CommMembers", mt, rows, b);
	free(b);
	H5Gclose(ev);
	H5Pclose(lcpl);
	H5Tclose(rt);
	H5Tclose(gt);
	H5Tclose(ct);
	H5Tclose(mt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct sh5_error err;
	struct sh5_evstep *s;
	hid_t fapl, f, step;
	FILE *null;

	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_fapl_core(fapl, 1 << 16, 0);	/* memory only */
	f = H5Fcreate("fuzz_jobevents.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	if (f < 0)
		abort();
	build(f, &in);
	step = H5Gopen2(f, "/Steps/0", H5P_DEFAULT);
	s = sh5_evstep_read(step, "0", &err);
	if (s) {
		null = fopen("/dev/null", "w");
		if (null) {
			sh5_evstep_write_csv(s, null, "/dev/null", 1, &err);
			sh5_evstep_write_csv(s, null, "/dev/null", 0, &err);
			fclose(null);
		}
		sh5_evstep_free(s);
	}
	H5Gclose(step);
	H5Fclose(f);
	return 0;
}
