/* evstore.c - see evstore.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/h5attr.h"
#include "events/evstore.h"

#define FORMAT_VERSION 1
/* Rows per chunk of Regions, Comms and CommMembers: a few per task, so
 * smaller chunks than the events' (a partial chunk is stored whole). */
#define TABLE_CHUNK 512

/* One appendable dataset and the rows buffered for it. */
struct table {
	const char *name;	/* "Regions", ..., or the task's number */
	char namebuf[16];
	hid_t dset;		/* -1 when not open */
	size_t rec_size;
	size_t chunk;		/* rows per chunk and per write */
	hsize_t rows;		/* rows in the file */
	hsize_t mark;		/* rows when the open task began */
	unsigned char *buf;	/* chunk rows */
	size_t n;
};

struct sh5_evstore {
	hid_t node, grp;	/* grp -1 until the first task begins */
	int compression;
	int made_group;		/* this store created Events */
	unsigned committed;	/* tasks ended */
	char gname[256];	/* node group path, for messages */
	struct table regions, comms, members;
	struct table ev;	/* the open task's events, dset -1: none */
	int open;
	uint32_t task;
	int have_rank;
	int32_t world_rank, world_size;
	hid_t rec_type, region_type, comm_type, member_type;
};

#define F(st, m, nm, nat, fil, cl) \
	{ nm, offsetof(st, m), nat, fil, 0, cl }
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const struct sh5_evstore_field *sh5_evstore_rec_fields(size_t *n)
{
	static struct sh5_evstore_field f[9];

	if (!f[0].name) {
		struct sh5_evstore_field t[] = {
			F(struct sh5ev_rec, time_ns, "TimeNs",
			  H5T_NATIVE_INT64, H5T_STD_I64LE, H5T_INTEGER),
			F(struct sh5ev_rec, kind, "Kind", H5T_NATIVE_UINT8,
			  H5T_STD_U8LE, H5T_INTEGER),
			F(struct sh5ev_rec, op, "Op", H5T_NATIVE_UINT8,
			  H5T_STD_U8LE, H5T_INTEGER),
			F(struct sh5ev_rec, flags, "Flags", H5T_NATIVE_UINT16,
			  H5T_STD_U16LE, H5T_INTEGER),
			F(struct sh5ev_rec, id, "Id", H5T_NATIVE_UINT32,
			  H5T_STD_U32LE, H5T_INTEGER),
			F(struct sh5ev_rec, peer, "Peer", H5T_NATIVE_INT32,
			  H5T_STD_I32LE, H5T_INTEGER),
			F(struct sh5ev_rec, tag, "Tag", H5T_NATIVE_INT32,
			  H5T_STD_I32LE, H5T_INTEGER),
			F(struct sh5ev_rec, bytes, "Bytes", H5T_NATIVE_UINT64,
			  H5T_STD_U64LE, H5T_INTEGER),
			F(struct sh5ev_rec, value, "Value", H5T_NATIVE_DOUBLE,
			  H5T_IEEE_F64LE, H5T_FLOAT),
		};

		memcpy(f, t, sizeof(f));
	}
	*n = NELEM(f);
	return f;
}

const struct sh5_evstore_field *sh5_evstore_region_fields(size_t *n)
{
	static struct sh5_evstore_field f[4];

	if (!f[0].name) {
		struct sh5_evstore_field t[] = {
			F(struct sh5_evstore_region, task, "Task",
			  H5T_NATIVE_UINT32, H5T_STD_U32LE, H5T_INTEGER),
			F(struct sh5_evstore_region, region, "Region",
			  H5T_NATIVE_UINT32, H5T_STD_U32LE, H5T_INTEGER),
			F(struct sh5_evstore_region, flags, "Flags",
			  H5T_NATIVE_UINT32, H5T_STD_U32LE, H5T_INTEGER),
			{ "Name", offsetof(struct sh5_evstore_region, name), 0,
			  0, SH5EV_NAME_MAX + 1, H5T_STRING },
		};

		memcpy(f, t, sizeof(f));
	}
	*n = NELEM(f);
	return f;
}

const struct sh5_evstore_field *sh5_evstore_comm_fields(size_t *n)
{
	static struct sh5_evstore_field f[5];

	if (!f[0].name) {
		struct sh5_evstore_field t[] = {
			F(struct sh5_evstore_comm, task, "Task",
			  H5T_NATIVE_UINT32, H5T_STD_U32LE, H5T_INTEGER),
			F(struct sh5_evstore_comm, local, "Local",
			  H5T_NATIVE_UINT32, H5T_STD_U32LE, H5T_INTEGER),
			F(struct sh5_evstore_comm, global, "Global",
			  H5T_NATIVE_UINT64, H5T_STD_U64LE, H5T_INTEGER),
			F(struct sh5_evstore_comm, size, "Size",
			  H5T_NATIVE_INT32, H5T_STD_I32LE, H5T_INTEGER),
			F(struct sh5_evstore_comm, rank, "Rank",
			  H5T_NATIVE_INT32, H5T_STD_I32LE, H5T_INTEGER),
		};

		memcpy(f, t, sizeof(f));
	}
	*n = NELEM(f);
	return f;
}

const struct sh5_evstore_field *sh5_evstore_member_fields(size_t *n)
{
	static struct sh5_evstore_field f[3];

	if (!f[0].name) {
		struct sh5_evstore_field t[] = {
			F(struct sh5_evstore_member, global, "Global",
			  H5T_NATIVE_UINT64, H5T_STD_U64LE, H5T_INTEGER),
			F(struct sh5_evstore_member, rank, "Rank",
			  H5T_NATIVE_INT32, H5T_STD_I32LE, H5T_INTEGER),
			F(struct sh5_evstore_member, world_rank, "WorldRank",
			  H5T_NATIVE_INT32, H5T_STD_I32LE, H5T_INTEGER),
		};

		memcpy(f, t, sizeof(f));
	}
	*n = NELEM(f);
	return f;
}

/* A NUL-padded fixed string type of len bytes, or H5I_INVALID_HID. */
static hid_t str_type(size_t len)
{
	hid_t s = H5Tcopy(H5T_C_S1);

	if (s < 0)
		return H5I_INVALID_HID;
	if (H5Tset_size(s, len) < 0 ||
	    H5Tset_strpad(s, H5T_STR_NULLPAD) < 0) {
		H5Tclose(s);
		return H5I_INVALID_HID;
	}
	return s;
}

/* The compound of n fields in a struct of size bytes: with their file
 * types (file != 0) or their native ones. */
hid_t sh5_evstore_compound(size_t size, const struct sh5_evstore_field *f,
			   size_t n, int file)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, size);
	size_t i;

	if (t < 0)
		return H5I_INVALID_HID;
	for (i = 0; i < n; i++) {
		hid_t mt = f[i].native ? (file ? f[i].file : f[i].native) :
					 str_type(f[i].size);
		herr_t rc = mt < 0 ? -1 : H5Tinsert(t, f[i].name, f[i].off, mt);

		if (!f[i].native && mt >= 0)
			H5Tclose(mt);
		if (rc < 0) {
			H5Tclose(t);
			return H5I_INVALID_HID;
		}
	}
	return t;
}

hid_t sh5_evstore_rec_type(void)
{
	size_t n;
	const struct sh5_evstore_field *f = sh5_evstore_rec_fields(&n);

	return sh5_evstore_compound(sizeof(struct sh5ev_rec), f, n, 1);
}

hid_t sh5_evstore_region_type(void)
{
	size_t n;
	const struct sh5_evstore_field *f = sh5_evstore_region_fields(&n);

	return sh5_evstore_compound(sizeof(struct sh5_evstore_region), f, n,
				    1);
}

hid_t sh5_evstore_comm_type(void)
{
	size_t n;
	const struct sh5_evstore_field *f = sh5_evstore_comm_fields(&n);

	return sh5_evstore_compound(sizeof(struct sh5_evstore_comm), f, n, 1);
}

hid_t sh5_evstore_member_type(void)
{
	size_t n;
	const struct sh5_evstore_field *f = sh5_evstore_member_fields(&n);

	return sh5_evstore_compound(sizeof(struct sh5_evstore_member), f, n,
				    1);
}

static void table_init(struct table *t, const char *name, size_t rec_size,
		       size_t chunk)
{
	t->name = name;
	t->dset = -1;
	t->rec_size = rec_size;
	t->chunk = chunk;
	t->rows = t->mark = 0;
	t->buf = NULL;
	t->n = 0;
}

static void table_close(struct table *t)
{
	if (t->dset >= 0)
		H5Dclose(t->dset);
	t->dset = -1;
	free(t->buf);
	t->buf = NULL;
	t->n = 0;
}

/* Create t under grp: chunked, shuffle (+ deflate) + fletcher32, as the
 * series of the writer (writer.c). */
static int table_create(struct sh5_evstore *es, struct table *t, hid_t type,
			const char *path, struct sh5_error *errp)
{
	hsize_t dim = 0, maxdim = H5S_UNLIMITED, chunk = t->chunk;
	hid_t sp = -1, dcpl = -1;
	int rc = -1;

	if ((sp = H5Screate_simple(1, &dim, &maxdim)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
	    H5Pset_chunk(dcpl, 1, &chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
	    (es->compression > 0 &&
	     H5Pset_deflate(dcpl, (unsigned)es->compression) < 0) ||
	    H5Pset_fletcher32(dcpl) < 0 ||
	    (t->dset = H5Dcreate2(es->grp, t->name, type, sp, H5P_DEFAULT,
				  dcpl, H5P_DEFAULT)) < 0) {
		sh5_errprintf_h5(errp, "%s/%s: cannot create the dataset",
				 path, t->name);
		goto out;
	}
	t->rows = t->mark = 0;
	rc = 0;
out:
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

/* Open an existing table t under grp and learn its length. */
static int table_open(struct sh5_evstore *es, struct table *t,
		      const char *path, struct sh5_error *errp)
{
	hid_t sp = -1;
	hsize_t dim = 0;
	int rc = -1;

	if ((t->dset = H5Dopen2(es->grp, t->name, H5P_DEFAULT)) < 0 ||
	    (sp = H5Dget_space(t->dset)) < 0 ||
	    H5Sget_simple_extent_ndims(sp) != 1 ||
	    H5Sget_simple_extent_dims(sp, &dim, NULL) < 0) {
		sh5_errprintf_h5(errp, "%s/%s: cannot open the dataset", path,
				 t->name);
		goto out;
	}
	t->rows = t->mark = dim;
	rc = 0;
out:
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

/* Append the buffered rows of t to its dataset. */
static int table_write(struct sh5_evstore *es, struct table *t, hid_t type,
		       struct sh5_error *errp)
{
	hsize_t start = t->rows, count = t->n, newdim = t->rows + t->n;
	hid_t fsp = -1, msp = -1;
	int rc = -1;

	if (!t->n)
		return 0;
	if (H5Dset_extent(t->dset, &newdim) < 0 ||
	    (fsp = H5Dget_space(t->dset)) < 0 ||
	    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &count,
				NULL) < 0 ||
	    (msp = H5Screate_simple(1, &count, NULL)) < 0 ||
	    H5Dwrite(t->dset, type, msp, fsp, H5P_DEFAULT, t->buf) < 0) {
		sh5_errprintf_h5(errp, "%s/%s/%s: cannot append %zu rows",
				 es->gname, SH5_EVSTORE_GROUP, t->name, t->n);
		goto out;
	}
	t->rows = newdim;
	t->n = 0;
	rc = 0;
out:
	if (msp >= 0)
		H5Sclose(msp);
	if (fsp >= 0)
		H5Sclose(fsp);
	return rc;
}

/* Add one row to t, writing a full buffer first. */
static int table_add(struct sh5_evstore *es, struct table *t, hid_t type,
		     const void *row, struct sh5_error *errp)
{
	if (!t->buf && !(t->buf = malloc(t->chunk * t->rec_size))) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s/%s/%s: out of memory",
				     es->gname, SH5_EVSTORE_GROUP, t->name);
	}
	if (t->n == t->chunk && table_write(es, t, type, errp) < 0)
		return -1;
	memcpy(t->buf + t->n * t->rec_size, row, t->rec_size);
	t->n++;
	return 0;
}

/* Cut t back to the rows it had when the task began. */
static void table_rewind(struct table *t)
{
	t->n = 0;
	if (t->dset >= 0 && t->rows > t->mark &&
	    H5Dset_extent(t->dset, &t->mark) >= 0)
		t->rows = t->mark;
}

static struct table *tables(struct sh5_evstore *es, size_t i)
{
	struct table *ts[] = { &es->regions, &es->comms, &es->members };

	return i < 3 ? ts[i] : NULL;
}

static hid_t table_type(struct sh5_evstore *es, size_t i)
{
	return i == 0 ? es->region_type : i == 1 ? es->comm_type :
					       es->member_type;
}

struct sh5_evstore *sh5_evstore_open(hid_t node_group, int compression,
				     struct sh5_error *errp)
{
	struct sh5_evstore *es;
	char path[300];
	size_t i;
	htri_t ex;

	if (node_group < 0 || compression < 0 || compression > 9) {
		errno = EINVAL;
		sh5_errprintf(errp, "events: invalid node group or deflate "
			      "level %d", compression);
		return NULL;
	}
	if (!(es = calloc(1, sizeof(*es)))) {
		sh5_errprintf(errp, "events: out of memory");
		return NULL;
	}
	es->node = node_group;
	es->grp = -1;
	es->compression = compression;
	if (H5Iget_name(node_group, es->gname, sizeof(es->gname)) <= 0)
		snprintf(es->gname, sizeof(es->gname), "(node group)");
	table_init(&es->regions, "Regions", sizeof(struct sh5_evstore_region),
		   TABLE_CHUNK);
	table_init(&es->comms, "Comms", sizeof(struct sh5_evstore_comm),
		   TABLE_CHUNK);
	table_init(&es->members, "CommMembers",
		   sizeof(struct sh5_evstore_member), TABLE_CHUNK);
	table_init(&es->ev, "", sizeof(struct sh5ev_rec), SH5_EVSTORE_CHUNK);
	es->rec_type = sh5_evstore_rec_type();
	es->region_type = sh5_evstore_region_type();
	es->comm_type = sh5_evstore_comm_type();
	es->member_type = sh5_evstore_member_type();
	if (es->rec_type < 0 || es->region_type < 0 || es->comm_type < 0 ||
	    es->member_type < 0) {
		sh5_errprintf_h5(errp, "events: cannot make the HDF5 types");
		goto error;
	}
	snprintf(path, sizeof(path), "%s/%s", es->gname, SH5_EVSTORE_GROUP);
	ex = H5Lexists(node_group, SH5_EVSTORE_GROUP, H5P_DEFAULT);
	if (ex > 0) {
		/* Events of an earlier store: append to them. */
		if ((es->grp = H5Gopen2(node_group, SH5_EVSTORE_GROUP,
					H5P_DEFAULT)) < 0) {
			sh5_errprintf_h5(errp, "%s: cannot open the group",
					 path);
			goto error;
		}
		for (i = 0; i < 3; i++)
			if (table_open(es, tables(es, i), path, errp) < 0)
				goto error;
	} else if (ex < 0) {
		sh5_errprintf_h5(errp, "%s: cannot look up the group", path);
		goto error;
	}
	return es;
error:
	sh5_evstore_close(es);
	return NULL;
}

/* Create Events and its tables at the first task. */
static int make_group(struct sh5_evstore *es, struct sh5_error *errp)
{
	char path[300];
	int32_t ver = FORMAT_VERSION;
	size_t i;

	if (es->grp >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", es->gname, SH5_EVSTORE_GROUP);
	if ((es->grp = H5Gcreate2(es->node, SH5_EVSTORE_GROUP, H5P_DEFAULT,
				  H5P_DEFAULT, H5P_DEFAULT)) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot create the group", path);
		return -1;
	}
	es->made_group = 1;
	if (sh5_h5attr_put(es->grp, "Events Format Version", H5T_STD_I32LE,
			   H5T_NATIVE_INT32, &ver) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot write its version", path);
		goto error;
	}
	for (i = 0; i < 3; i++)
		if (table_create(es, tables(es, i), table_type(es, i), path,
				 errp) < 0)
			goto error;
	return 0;
error:
	/* Leave no half-made group. */
	for (i = 0; i < 3; i++)
		table_close(tables(es, i));
	H5Gclose(es->grp);
	es->grp = -1;
	H5Ldelete(es->node, SH5_EVSTORE_GROUP, H5P_DEFAULT);
	es->made_group = 0;
	return -1;
}

int sh5_evstore_task_begin(struct sh5_evstore *es, uint32_t task,
			   struct sh5_error *errp)
{
	char name[16], path[300];
	htri_t ex;
	size_t i;

	snprintf(name, sizeof(name), "%" PRIu32, task);
	snprintf(path, sizeof(path), "%s/%s", es->gname, SH5_EVSTORE_GROUP);
	if (es->open) {
		errno = EBUSY;
		return sh5_errprintf(errp, "%s/%s: task %" PRIu32 " is still "
				     "open", path, name, es->task);
	}
	if (es->grp >= 0) {
		ex = H5Lexists(es->grp, name, H5P_DEFAULT);
		if (ex > 0) {
			errno = EEXIST;
			return sh5_errprintf(errp, "%s/%s: the task has events "
					     "already", path, name);
		}
		if (ex < 0)
			return sh5_errprintf_h5(errp, "%s/%s: cannot look it "
						"up", path, name);
	}
	if (make_group(es, errp) < 0)
		return -1;
	for (i = 0; i < 3; i++)
		tables(es, i)->mark = tables(es, i)->rows;
	table_init(&es->ev, NULL, sizeof(struct sh5ev_rec), SH5_EVSTORE_CHUNK);
	snprintf(es->ev.namebuf, sizeof(es->ev.namebuf), "%s", name);
	es->ev.name = es->ev.namebuf;
	es->open = 1;
	es->task = task;
	es->have_rank = 0;
	es->world_rank = -1;
	es->world_size = 0;
	if (table_create(es, &es->ev, es->rec_type, path, errp) < 0) {
		sh5_evstore_task_abort(es);
		return -1;
	}
	return 0;
}

static int need_open(struct sh5_evstore *es, struct sh5_error *errp)
{
	if (es->open)
		return 0;
	errno = EINVAL;
	return sh5_errprintf(errp, "%s/%s: no task is open", es->gname,
			     SH5_EVSTORE_GROUP);
}

int sh5_evstore_region(struct sh5_evstore *es, uint32_t id, uint16_t flags,
		       const char *name, struct sh5_error *errp)
{
	struct sh5_evstore_region r;
	size_t len;

	if (need_open(es, errp) < 0)
		return -1;
	memset(&r, 0, sizeof(r));
	r.task = es->task;
	r.region = id;
	r.flags = flags;
	len = name ? strnlen(name, SH5EV_NAME_MAX) : 0;
	memcpy(r.name, name ? name : "", len);
	return table_add(es, &es->regions, es->region_type, &r, errp);
}

int sh5_evstore_comm(struct sh5_evstore *es, uint32_t local, uint64_t global,
		     int32_t size, int32_t myrank, const int32_t *members,
		     struct sh5_error *errp)
{
	struct sh5_evstore_comm c;
	struct sh5_evstore_member m;
	int32_t i;

	if (need_open(es, errp) < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.task = es->task;
	c.local = local;
	c.global = global;
	c.size = size;
	c.rank = myrank;
	if (table_add(es, &es->comms, es->comm_type, &c, errp) < 0)
		return -1;
	for (i = 0; members && i < size; i++) {
		memset(&m, 0, sizeof(m));
		m.global = global;
		m.rank = i;
		m.world_rank = members[i];
		if (table_add(es, &es->members, es->member_type, &m, errp) < 0)
			return -1;
	}
	return 0;
}

int sh5_evstore_events(struct sh5_evstore *es, const struct sh5ev_rec *recs,
		       size_t n, struct sh5_error *errp)
{
	size_t i;

	if (need_open(es, errp) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (recs[i].kind == SH5EV_K_RANK && !es->have_rank) {
			es->have_rank = 1;
			es->world_rank = recs[i].peer;
			es->world_size = (int32_t)recs[i].id;
		}
		if (table_add(es, &es->ev, es->rec_type, &recs[i], errp) < 0)
			return -1;
	}
	return 0;
}

uint64_t sh5_evstore_task_records(const struct sh5_evstore *es)
{
	return es->open ? (uint64_t)(es->ev.rows + es->ev.n) : 0;
}

/* Copy an untrusted string, printable ASCII only. */
static void clean_copy(char *dst, size_t size, const char *src, size_t max)
{
	size_t i, n = strnlen(src, max < size ? max : size - 1);

	for (i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[n] = '\0';
}

static int task_attrs(struct sh5_evstore *es,
		      const struct sh5_evspill_info *info,
		      const char *spill_file)
{
	hid_t d = es->ev.dset;
	char lib[sizeof(info->lib_version)];
	char problem[sizeof(info->first_problem)];
	char spill[256];
	int rc = 0;

	clean_copy(lib, sizeof(lib), info->lib_version,
		   sizeof(info->lib_version));
	clean_copy(problem, sizeof(problem), info->first_problem,
		   sizeof(info->first_problem));
	clean_copy(spill, sizeof(spill), spill_file ? spill_file : "",
		   sizeof(spill) - 1);
	rc |= sh5_h5attr_put_u32(d, "Task", es->task);
	rc |= sh5_h5attr_put_u32(d, "Pid", info->pid);
	rc |= sh5_h5attr_put_int(d, "World Rank", es->world_rank);
	rc |= sh5_h5attr_put_int(d, "World Size", es->world_size);
	rc |= sh5_h5attr_put_str(d, "Library Version", lib);
	rc |= sh5_h5attr_put_str(d, "Spill File", spill);
	rc |= sh5_h5attr_put_u32(d, "Blocks", info->blocks);
	rc |= sh5_h5attr_put_u32(d, "Blocks Dropped", info->blocks_bad);
	rc |= sh5_h5attr_put(d, "Records Rejected", H5T_STD_U64LE,
			     H5T_NATIVE_UINT64, &info->rejected);
	rc |= sh5_h5attr_put(d, "Events Lost", H5T_STD_U64LE,
			     H5T_NATIVE_UINT64, &info->lost);
	rc |= sh5_h5attr_put_int(d, "Torn Tail", info->torn_tail ? 1 : 0);
	rc |= sh5_h5attr_put_int(d, "Truncated", info->truncated ? 1 : 0);
	rc |= sh5_h5attr_put_str(d, "Problem", problem);
	return rc ? -1 : 0;
}

int sh5_evstore_task_end(struct sh5_evstore *es,
			 const struct sh5_evspill_info *info,
			 const char *spill_file, struct sh5_error *errp)
{
	size_t i;

	if (need_open(es, errp) < 0)
		return -1;
	if (table_write(es, &es->ev, es->rec_type, errp) < 0)
		goto error;
	for (i = 0; i < 3; i++)
		if (table_write(es, tables(es, i), table_type(es, i),
				errp) < 0)
			goto error;
	if (task_attrs(es, info, spill_file) < 0) {
		sh5_errprintf_h5(errp, "%s/%s/%s: cannot write the attributes",
				 es->gname, SH5_EVSTORE_GROUP, es->ev.name);
		goto error;
	}
	table_close(&es->ev);
	for (i = 0; i < 3; i++)
		tables(es, i)->mark = tables(es, i)->rows;
	es->open = 0;
	es->committed++;
	return 0;
error:
	sh5_evstore_task_abort(es);
	return -1;
}

void sh5_evstore_task_abort(struct sh5_evstore *es)
{
	size_t i;

	if (!es || !es->open)
		return;
	if (es->ev.dset >= 0) {
		table_close(&es->ev);
		H5Ldelete(es->grp, es->ev.name, H5P_DEFAULT);
	}
	for (i = 0; i < 3; i++)
		table_rewind(tables(es, i));
	es->open = 0;
	if (es->made_group && !es->committed && es->grp >= 0) {
		/* Nothing of ours is left in it: as if never made. */
		for (i = 0; i < 3; i++)
			table_close(tables(es, i));
		H5Gclose(es->grp);
		es->grp = -1;
		H5Ldelete(es->node, SH5_EVSTORE_GROUP, H5P_DEFAULT);
		es->made_group = 0;
	}
}

int sh5_evstore_flush(struct sh5_evstore *es, struct sh5_error *errp)
{
	if (H5Fflush(es->node, H5F_SCOPE_GLOBAL) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot flush the file",
					es->gname);
	return 0;
}

unsigned sh5_evstore_tasks(const struct sh5_evstore *es)
{
	return es->committed;
}

void sh5_evstore_close(struct sh5_evstore *es)
{
	size_t i;

	if (!es)
		return;
	sh5_evstore_task_abort(es);
	for (i = 0; i < 3; i++)
		table_close(tables(es, i));
	if (es->grp >= 0)
		H5Gclose(es->grp);
	if (es->rec_type >= 0)
		H5Tclose(es->rec_type);
	if (es->region_type >= 0)
		H5Tclose(es->region_type);
	if (es->comm_type >= 0)
		H5Tclose(es->comm_type);
	if (es->member_type >= 0)
		H5Tclose(es->member_type);
	free(es);
}
