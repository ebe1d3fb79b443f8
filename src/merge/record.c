/* record.c - the merge record (/Merge) and the verification of the
 * written file (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/h5attr.h"
#include "merge/merge_int.h"

struct input_rec {
	const char *file, *step, *node, *kind, *status, *reason;
	uint64_t size, samples, written, lost;
	uint32_t crc32;
};

/* The compound type of /Merge/Inputs (strings of type st), or -1. */
static hid_t record_type(hid_t st)
{
	hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(struct input_rec));

	if (ct < 0)
		return -1;
#define S(n, mem) H5Tinsert(ct, n, HOFFSET(struct input_rec, mem), st)
#define U(n, mem, t) H5Tinsert(ct, n, HOFFSET(struct input_rec, mem), t)
	if (S("File", file) < 0 || S("Step", step) < 0 || S("Node", node) < 0 ||
	    S("Format", kind) < 0 || U("Size", size, H5T_NATIVE_UINT64) < 0 ||
	    U("CRC32", crc32, H5T_NATIVE_UINT32) < 0 ||
	    U("Samples", samples, H5T_NATIVE_UINT64) < 0 ||
	    U("Merged", written, H5T_NATIVE_UINT64) < 0 ||
	    U("Lost", lost, H5T_NATIVE_UINT64) < 0 ||
	    S("Status", status) < 0 || S("Reason", reason) < 0) {
		H5Tclose(ct);
		return -1;
	}
#undef S
#undef U
	return ct;
}

/* One row of /Merge/Inputs per input (pointing into m), or NULL. */
static struct input_rec *record_rows(struct mstate *m)
{
	struct input_rec *r = calloc(m->nin ? m->nin : 1, sizeof(*r));
	size_t i;

	for (i = 0; r && i < m->nin; i++) {
		struct finfo *f = &m->fi[i];

		r[i].file = f->in->path;
		r[i].step = f->in->step;
		r[i].node = f->in->node;
		r[i].kind = !f->usable && !f->kind ? "unknown" :
			    f->kind == SH5_NODESTEP_OURS ? "sh5" : "stock";
		r[i].status = f->status ? f->status : "skipped";
		r[i].reason = f->reason;
		r[i].size = f->size;
		r[i].crc32 = f->crc;
		r[i].samples = f->samples;
		r[i].written = f->written;
		r[i].lost = f->usable ? f->lost : f->samples;
	}
	return r;
}

int mg_write_merge_record(struct mstate *m, hid_t fout, int partial)
{
	hid_t g = -1, st = -1, ct = -1, sp = -1, d = -1;
	struct input_rec *r = NULL;
	hsize_t dim[1];
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	int rc = -1;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((g = mg_make_group(fout, "Merge")) < 0 ||
	    sh5_h5attr_put_str(g, "sh5merge Version", PACKAGE_VERSION) < 0 ||
	    sh5_h5attr_put_str(g, "Merge Time", now) < 0 ||
	    sh5_h5attr_put_str(g, "Profile Directory", m->o->dir) < 0 ||
	    sh5_h5attr_put_str(g, "Options",
			       m->o->options ? m->o->options : "") < 0 ||
	    sh5_h5attr_put_int(g, "Partial", partial) < 0 ||
	    sh5_h5attr_put_int(g, "Number of Problems",
			       (int)m->st->problems) < 0 ||
	    sh5_h5attr_put_str(g, "Checksum",
			       "CRC-32 (zlib) of the whole file") < 0)
		goto out;
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, H5T_VARIABLE);
	H5Tset_cset(st, H5T_CSET_UTF8);
	if ((ct = record_type(st)) < 0 || !(r = record_rows(m)))
		goto out;
	dim[0] = m->nin;
	if ((sp = H5Screate_simple(1, dim, NULL)) < 0 ||
	    (d = H5Dcreate2(g, "Inputs", ct, sp, H5P_DEFAULT, H5P_DEFAULT,
			    H5P_DEFAULT)) < 0 ||
	    (m->nin && H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) < 0))
		goto out;
	H5Dclose(d);
	H5Sclose(sp);
	d = sp = -1;
	dim[0] = m->nmissing;
	if ((sp = H5Screate_simple(1, dim, NULL)) < 0 ||
	    (d = H5Dcreate2(g, "Missing", st, sp, H5P_DEFAULT, H5P_DEFAULT,
			    H5P_DEFAULT)) < 0 ||
	    (m->nmissing && H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				     m->missing) < 0))
		goto out;
	rc = 0;
out:
	if (rc < 0)
		mg_h5err(m->errp, "%s: cannot write /Merge",
				 m->o->output);
	free(r);
	if (d >= 0)
		H5Dclose(d);
	if (sp >= 0)
		H5Sclose(sp);
	if (ct >= 0)
		H5Tclose(ct);
	if (st >= 0)
		H5Tclose(st);
	if (g >= 0)
		H5Gclose(g);
	return rc;
}

/* Reopen the written file and check every dataset's row count.  The
 * checks come node by node: each node group is opened once. */
int mg_verify(struct mstate *m, const char *tmp)
{
	hid_t f = H5Fopen(tmp, H5F_ACC_RDONLY, H5P_DEFAULT), g = -1;
	char gname[512] = "";
	long long v;
	size_t i;
	int rc = -1;

	if (f < 0)
		return mg_h5err(m->errp, "%s: verification: cannot reopen the "
			     "written file", tmp);
	if (sh5_attr_get_int(f, "Number of Steps", &v) < 0 ||
	    v != (long long)m->nsteps_written) {
		sh5_errprintf(m->errp, "%s: verification: wrong Number of "
			      "Steps", tmp);
		goto out;
	}
	for (i = 0; i < m->nchecks; i++) {
		const char *path = m->checks[i].path, *rel = path;
		const char *node = strstr(path, "/Nodes/");
		size_t glen = 0;
		hid_t d, sp;
		hsize_t dims[1] = { 0 };
		uint64_t n;

		/* /Steps/<s>/Nodes/<n>/<rel> */
		if (node && (rel = strchr(node + 7, '/')))
			glen = (size_t)(rel++ - path);
		else
			rel = path;
		if (glen && (glen >= sizeof(gname) ||
			     strncmp(gname, path, glen) || gname[glen])) {
			if (g >= 0)
				H5Gclose(g);
			g = -1;
			if (glen < sizeof(gname)) {
				memcpy(gname, path, glen);
				gname[glen] = '\0';
				g = H5Gopen2(f, gname, H5P_DEFAULT);
			}
		}
		d = H5Dopen2(glen && g >= 0 ? g : f,
			     glen && g >= 0 ? rel : path, H5P_DEFAULT);
		sp = d >= 0 ? H5Dget_space(d) : -1;
		if (sp < 0 || H5Sget_simple_extent_dims(sp, dims, NULL) != 1) {
			sh5_errprintf(m->errp, "%s: verification: %s missing",
				      tmp, path);
			if (sp >= 0)
				H5Sclose(sp);
			if (d >= 0)
				H5Dclose(d);
			goto out;
		}
		n = dims[0];
		H5Sclose(sp);
		H5Dclose(d);
		if (n != m->checks[i].rows) {
			sh5_errprintf(m->errp, "%s: verification: %s has %"
				      PRIu64 " rows, %" PRIu64 " written", tmp,
				      path, n, m->checks[i].rows);
			goto out;
		}
	}
	rc = 0;
out:
	if (g >= 0)
		H5Gclose(g);
	H5Fclose(f);
	return rc;
}
