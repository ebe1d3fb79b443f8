/*
 * test_evstore.c - the HDF5 layout of events (evstore) and the absorption
 * of spill files (evabsorb) on crafted, partly hostile spill files: good,
 * symlink, FIFO, other owner, torn tail, bad block checksum, version
 * mismatch, beyond the cap, duplicate task, foreign task, header not
 * matching its name.
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

#define PREFIX "42_0_node1"
#define BLOCK 4096u

/* ------------------------------------------------------ crafting files */

/* A record stream under construction; payload[i]: continues a def. */
struct stream {
	struct sh5ev_rec *r;
	unsigned char *payload;
	size_t n, cap;
	int64_t t;
};

static struct sh5ev_rec *push(struct stream *s, uint8_t kind, int payload)
{
	struct sh5ev_rec *r;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->r = realloc(s->r, s->cap * sizeof(*s->r));
		s->payload = realloc(s->payload, s->cap);
		ck_assert(s->r && s->payload);
	}
	r = &s->r[s->n];
	memset(r, 0, sizeof(*r));
	s->payload[s->n++] = (unsigned char)payload;
	if (!payload) {
		r->time_ns = s->t;
		s->t += 1000;
		r->kind = kind;
	}
	return r;
}

static void def_region(struct stream *s, uint32_t id, const char *name)
{
	struct sh5ev_rec *r = push(s, SH5EV_K_DEFREGION, 0);
	size_t len = strlen(name), i;

	r->id = id;
	r->bytes = len;
	for (i = 0; i < sh5ev_name_recs((uint32_t)len); i++) {
		size_t k = len - i * SH5EV_REC_SIZE;

		r = push(s, 0, 1);
		memcpy(r, name + i * SH5EV_REC_SIZE,
		       k < SH5EV_REC_SIZE ? k : SH5EV_REC_SIZE);
	}
}

static void def_comm(struct stream *s, uint32_t local, uint64_t global,
		     int32_t size, int32_t myrank, const int32_t *members)
{
	struct sh5ev_rec *r = push(s, SH5EV_K_DEFCOMM, 0);
	uint32_t i;

	r->id = local;
	r->peer = size;
	r->tag = myrank;
	r->bytes = global;
	r->flags = SH5EV_F_MEMBERS;
	for (i = 0; i < sh5ev_member_recs((uint32_t)size); i++) {
		int32_t k = size - (int32_t)i * 10;

		r = push(s, 0, 1);
		memcpy(r, members + i * 10,
		       (size_t)(k < 10 ? k : 10) * sizeof(int32_t));
	}
}

/* A typical task: RANK, two regions, a communicator, iters phases with
 * an enter/exit, a send and an object each.  Returns the event records
 * (kinds ENTER..LOST) in it. */
static size_t typical(struct stream *s, uint32_t task, int iters)
{
	const int32_t members[3] = { 0, 1, 2 };
	struct sh5ev_rec *r;
	size_t events = 0;
	int i;

	s->t = 1700000000000000000LL;
	r = push(s, SH5EV_K_RANK, 0);
	r->id = 128;
	r->peer = (int32_t)task;
	events++;
	def_region(s, 1, "solve");
	def_region(s, 2, "a_region_name_longer_than_forty_bytes_for_two_"
			 "payload_records");
	def_comm(s, 2, (1ULL << 32) | 1, 3, 1, members);
	for (i = 0; i < iters; i++) {
		r = push(s, SH5EV_K_PHASE, 0);
		r->id = (uint32_t)i + 1;
		r->tag = -1;
		r = push(s, SH5EV_K_ENTER, 0);
		r->id = 1 + (uint32_t)(i & 1);
		r = push(s, SH5EV_K_SEND, 0);
		r->peer = 0;
		r->tag = 7;
		r->bytes = 800;
		r = push(s, SH5EV_K_EXIT, 0);
		r->id = 1 + (uint32_t)(i & 1);
		r = push(s, SH5EV_K_OBJECT, 0);
		r->id = (uint32_t)i + 1;
		r->bytes = 1000 + (uint64_t)i;
		r->value = 0.25;
		events += 5;
	}
	return events;
}

struct craft {
	uint32_t version;	/* header version */
	uint32_t hdr_task;	/* task in the header */
	uint32_t pid;
	int bad_block;		/* damage this block's records (-1: none) */
	size_t torn;		/* bytes of one more block appended */
};

static void write_spill(const char *path, const struct stream *s,
			const struct craft *c)
{
	struct sh5ev_file_header h;
	uint32_t cap = sh5ev_block_capacity(BLOCK), seq = 0;
	unsigned char *blk = calloc(1, BLOCK);
	size_t i = 0;
	FILE *f = fopen(path, "wx");

	ck_assert_msg(f && blk, "cannot create %s", path);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SH5EV_MAGIC, sizeof(h.magic));
	h.byte_order = SH5EV_BYTE_ORDER;
	h.version = c->version;
	h.header_size = SH5EV_HEADER_SIZE;
	h.block_size = BLOCK;
	h.rec_size = SH5EV_REC_SIZE;
	h.task = c->hdr_task;
	h.pid = c->pid;
	h.created_ns = 1700000000000000000LL;
	snprintf(h.prefix, sizeof(h.prefix), "%s", PREFIX);
	snprintf(h.lib_version, sizeof(h.lib_version), "test");
	h.checksum = sh5ev_checksum(&h, offsetof(struct sh5ev_file_header,
						 checksum));
	ck_assert_uint_eq(fwrite(&h, sizeof(h), 1, f), 1);
	while (i < s->n) {
		struct sh5ev_block_header *bh = (void *)blk;
		struct sh5ev_rec *recs =
			(void *)(blk + SH5EV_BLOCK_HEADER_SIZE);
		uint32_t n = 0, cont = 0;

		memset(blk, 0, BLOCK);
		while (n < cap && i < s->n) {
			if (s->payload[i] && n == cont)
				cont++;
			if (!s->payload[i] && s->r[i].kind < SH5EV_K_DEFREGION)
				bh->last_ns = s->r[i].time_ns;
			recs[n++] = s->r[i++];
		}
		bh->magic = SH5EV_BLOCK_MAGIC;
		bh->seq = seq;
		bh->nrec = n;
		bh->cont = cont;
		bh->checksum = sh5ev_checksum(recs, (size_t)n * SH5EV_REC_SIZE);
		if ((int)seq == c->bad_block)
			recs[n / 2].bytes ^= 0x5a5a;
		ck_assert_uint_eq(fwrite(blk, BLOCK, 1, f), 1);
		seq++;
	}
	if (c->torn) {
		memset(blk, 0x11, BLOCK);
		ck_assert_uint_eq(fwrite(blk, c->torn, 1, f), 1);
	}
	ck_assert_int_eq(fclose(f), 0);
	free(blk);
}

static void free_stream(struct stream *s)
{
	free(s->r);
	free(s->payload);
	memset(s, 0, sizeof(*s));
}

/* A spill file of task in dir; returns its event records. */
static size_t make_spill(const char *dir, uint32_t task, uint32_t pid,
			 int iters, const struct craft *over)
{
	struct craft c = { SH5EV_FORMAT_VERSION, task, pid, -1, 0 };
	struct stream s = { 0 };
	char path[512];
	size_t ev;

	if (over)
		c = *over;
	snprintf(path, sizeof(path), "%s/%s.%u.%u%s", dir, PREFIX, task, pid,
		 SH5EV_SUFFIX);
	ev = typical(&s, task, iters);
	write_spill(path, &s, &c);
	free_stream(&s);
	return ev;
}

/* ------------------------------------------------------------- helpers */

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-evstore-XXXXXX");
	ck_assert(mkdtemp(tmpdir));
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A fresh HDF5 file with a node group. */
static hid_t new_file(const char *name, hid_t *node)
{
	char path[512];
	hid_t f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert(f >= 0);
	*node = H5Gcreate2(f, "node1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	ck_assert(*node >= 0);
	return f;
}

static hsize_t rows(hid_t loc, const char *path)
{
	hid_t d = H5Dopen2(loc, path, H5P_DEFAULT), sp;
	hsize_t n = 0;

	ck_assert_msg(d >= 0, "no dataset %s", path);
	sp = H5Dget_space(d);
	H5Sget_simple_extent_dims(sp, &n, NULL);
	H5Sclose(sp);
	H5Dclose(d);
	return n;
}

static int exists(hid_t loc, const char *path)
{
	return H5Lexists(loc, path, H5P_DEFAULT) > 0;
}

static int64_t attr_i64(hid_t loc, const char *obj, const char *name)
{
	int64_t v = -12345;
	hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);

	ck_assert_msg(a >= 0, "no attribute %s of %s", name, obj);
	ck_assert(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
	return v;
}

static void attr_str(hid_t loc, const char *obj, const char *name,
		     char *buf, size_t len)
{
	hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);
	hid_t t;

	ck_assert_msg(a >= 0, "no attribute %s of %s", name, obj);
	t = H5Aget_type(a);
	ck_assert_uint_lt(H5Tget_size(t), len);
	memset(buf, 0, len);
	ck_assert(H5Aread(a, t, buf) >= 0);
	H5Tclose(t);
	H5Aclose(a);
}

static int file_exists(const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return lstat(path, &st) == 0;
}

/* --------------------------------------------------------------- tests */

START_TEST(test_evstore_roundtrip)
{
	struct sh5_error err = { "" };
	struct sh5_evspill_info info;
	struct sh5_evstore *es;
	struct sh5ev_rec recs[5000];
	const int32_t members[4] = { 3, 2, 1, 0 };
	char path[512], cmd[2048], buf[64];
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

	/* What h5py (sh5merge's tests, users) sees. */
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

/* Absorb everything in tmpdir into a fresh file; returns the results. */
static struct sh5_evabsorb_file *absorb(const char *h5, uint64_t max,
					const uint32_t *tasks, size_t ntasks,
					size_t *n, hid_t *fp, hid_t *nodep)
{
	struct sh5_evabsorb_params p;
	struct sh5_evabsorb_file *files = NULL;
	struct sh5_error err = { "" };
	struct sh5_evstore *es;
	size_t ignored = 99;

	*fp = new_file(h5, nodep);
	es = sh5_evstore_open(*nodep, 4, &err);
	ck_assert_msg(es, "%s", err.text);
	memset(&p, 0, sizeof(p));
	p.dirfd = open(tmpdir, O_DIRECTORY | O_RDONLY);
	ck_assert(p.dirfd >= 0);
	p.prefix = PREFIX;
	p.uid = geteuid();
	p.gid = getegid();
	p.max_bytes = max;
	p.tasks = tasks;
	p.ntasks = ntasks;
	ck_assert_msg(sh5_evabsorb(&p, es, &files, n, &ignored, &err) == 0,
		      "%s", err.text);
	ck_assert_uint_eq(ignored, 0);
	close(p.dirfd);
	sh5_evstore_close(es);
	return files;
}

static const struct sh5_evabsorb_file *
find(const struct sh5_evabsorb_file *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	ck_abort_msg("no result for %s", name);
	return NULL;
}

START_TEST(test_evabsorb_good_files_removed)
{
	struct sh5_evabsorb_file *v;
	size_t n, ev0, ev1;
	char line[512];
	hid_t f, node;

	ev0 = make_spill(tmpdir, 0, 100, 300, NULL); /* several blocks */
	ev1 = make_spill(tmpdir, 1, 101, 3, NULL);
	/* Not ours: another step's, another node's (whose name starts
	 * like ours), unrelated names. */
	{
		const char *others[] = { "43_0_node1.0.100.sh5ev",
					 "42_0_node10.0.100.sh5ev",
					 PREFIX ".0.100.sh5ev.tmp", "x.h5" };
		char p[512];
		size_t i;
		int fd;

		for (i = 0; i < 4; i++) {
			snprintf(p, sizeof(p), "%s/%s", tmpdir, others[i]);
			fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0600);
			ck_assert(fd >= 0);
			close(fd);
		}
	}
	v = absorb("good.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].name, PREFIX ".0.100.sh5ev");
	ck_assert_int_eq(v[0].status, SH5_EVABSORB_REMOVED);
	ck_assert_int_eq(v[1].status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(v[0].records, ev0);
	ck_assert_uint_eq(v[1].records, ev1);
	ck_assert(!sh5_evabsorb_notable(&v[0]));
	sh5_evabsorb_describe(&v[0], line, sizeof(line));
	ck_assert_msg(strstr(line, "events absorbed") &&
		      strstr(line, "removed"), "%s", line);
	ck_assert(!file_exists(v[0].name) && !file_exists(v[1].name));
	ck_assert(file_exists("42_0_node10.0.100.sh5ev") &&
		  file_exists("43_0_node1.0.100.sh5ev"));
	ck_assert_uint_eq(rows(node, "Events/0"), ev0);
	ck_assert_uint_eq(rows(node, "Events/1"), ev1);
	ck_assert_uint_eq(rows(node, "Events/Regions"), 4);
	ck_assert_uint_eq(rows(node, "Events/Comms"), 2);
	ck_assert_uint_eq(rows(node, "Events/CommMembers"), 6);
	ck_assert_int_eq(attr_i64(node, "Events/1", "World Rank"), 1);
	ck_assert_int_eq(attr_i64(node, "Events/1", "World Size"), 128);
	ck_assert_int_eq(attr_i64(node, "Events/0", "Blocks"),
			 (int64_t)v[0].info.blocks);
	ck_assert_int_gt(v[0].info.blocks, 10);
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

START_TEST(test_evabsorb_no_files_no_group)
{
	struct sh5_evabsorb_file *v;
	size_t n;
	hid_t f, node;
	char path[512];
	int fd;

	/* A name of the right shape that is no spill file, refused. */
	snprintf(path, sizeof(path), "%s/%s.0.5.sh5ev", tmpdir, PREFIX);
	fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	ck_assert_int_eq(write(fd, "garbage", 7), 7);
	close(fd);
	v = absorb("none.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(v[0].status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(v[0].name));
	ck_assert(!exists(node, "Events"));
	free(v);
	unlink(path);
	H5Gclose(node);
	H5Fclose(f);
	v = absorb("empty.h5", 1 << 20, NULL, 0, &n, &f, &node);
	ck_assert_uint_eq(n, 0);
	ck_assert(!exists(node, "Events"));
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

/* The scan that lets a step without events skip the absorption: only
 * names of this step's spill files count. */
START_TEST(test_evabsorb_pending)
{
	struct sh5_evabsorb_params p;
	struct sh5_error err = { "" };
	const char *others[] = { "43_0_node1.0.100.sh5ev",
				 "42_0_node10.0.100.sh5ev",
				 PREFIX ".0.100.sh5ev.tmp", "x.h5" };
	char path[512];
	size_t i;
	int fd;

	memset(&p, 0, sizeof(p));
	p.dirfd = open(tmpdir, O_DIRECTORY | O_RDONLY);
	ck_assert(p.dirfd >= 0);
	p.prefix = PREFIX;
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 0);
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, others[i]);
		fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
		ck_assert(fd >= 0);
		close(fd);
	}
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 0);
	snprintf(path, sizeof(path), "%s/%s.3.77.sh5ev", tmpdir, PREFIX);
	fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), 1);
	close(p.dirfd);
	p.dirfd = -1;
	ck_assert_int_eq(sh5_evabsorb_pending(&p, &err), -1);
	ck_assert(err.text[0]);
}
END_TEST

START_TEST(test_evabsorb_hostile_files)
{
	const uint32_t tasks[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct craft c;
	struct sh5_evabsorb_file *v;
	const struct sh5_evabsorb_file *r;
	char path[512], target[512], line[512];
	size_t n, ev4, ev5, ev0;
	hid_t f, node;
	int fd, root = geteuid() == 0;

	ev0 = make_spill(tmpdir, 0, 100, 10, NULL);
	/* A second file for task 0 (sorts after pid 100). */
	make_spill(tmpdir, 0, 200, 10, NULL);
	/* A symlink to a root-only file. */
	snprintf(target, sizeof(target), "%s/secret", tmpdir);
	fd = open(target, O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/%s.1.101%s", tmpdir, PREFIX,
		 SH5EV_SUFFIX);
	ck_assert_int_eq(symlink(target, path), 0);
	/* A FIFO: must not block. */
	snprintf(path, sizeof(path), "%s/%s.2.102%s", tmpdir, PREFIX,
		 SH5EV_SUFFIX);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	/* Another owner's file. */
	make_spill(tmpdir, 3, 103, 3, NULL);
	if (root) {
		snprintf(path, sizeof(path), "%s/%s.3.103%s", tmpdir, PREFIX,
			 SH5EV_SUFFIX);
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
	}
	/* Torn tail: a killed task. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 4, 104, -1, 1000 };
	ev4 = make_spill(tmpdir, 4, 104, 100, &c);
	/* A damaged block among good ones. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 5, 105, 1, 0 };
	ev5 = make_spill(tmpdir, 5, 105, 100, &c);
	/* Another format version. */
	c = (struct craft){ SH5EV_FORMAT_VERSION + 1, 6, 106, -1, 0 };
	make_spill(tmpdir, 6, 106, 3, &c);
	/* Far beyond the cap (8 blocks of 4 KiB + header). */
	make_spill(tmpdir, 7, 107, 1000, NULL);
	/* A header that is not of its name's task. */
	c = (struct craft){ SH5EV_FORMAT_VERSION, 2, 108, -1, 0 };
	make_spill(tmpdir, 8, 108, 3, &c);
	/* A task of another node. */
	make_spill(tmpdir, 99, 199, 3, NULL);

	alarm(60);	/* a FIFO opened blocking would hang here */
	v = absorb("hostile.h5", SH5EV_HEADER_SIZE + 8 * BLOCK, tasks, 10, &n,
		   &f, &node);
	alarm(0);
	ck_assert_uint_eq(n, 11);

	r = find(v, n, PREFIX ".0.100.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(rows(node, "Events/0"), ev0);
	r = find(v, n, PREFIX ".0.200.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name));
	sh5_evabsorb_describe(r, line, sizeof(line));
	ck_assert_msg(strstr(line, "refused") && strstr(line, "kept") &&
		      strstr(line, r->name), "%s", line);

	r = find(v, n, PREFIX ".1.101.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name) && file_exists("secret"));
	ck_assert(!exists(node, "Events/1"));
	r = find(v, n, PREFIX ".2.102.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/2"));
	r = find(v, n, PREFIX ".3.103.sh5ev");
	if (root) {
		ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
		ck_assert(file_exists(r->name));
		ck_assert(!exists(node, "Events/3"));
	}

	r = find(v, n, PREFIX ".4.104.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_int_eq(r->info.torn_tail, 1);
	ck_assert(sh5_evabsorb_notable(r));
	ck_assert_msg(r->records == ev4, "%lu of %zu: rejected %lu: %s",
		      (unsigned long)r->records, ev4,
		      (unsigned long)r->info.rejected, r->info.first_problem);
	ck_assert_int_eq(attr_i64(node, "Events/4", "Torn Tail"), 1);

	r = find(v, n, PREFIX ".5.105.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REMOVED);
	ck_assert_uint_eq(r->info.blocks_bad, 1);
	ck_assert_uint_lt(r->records, ev5);
	ck_assert_uint_gt(r->records, ev5 / 2);
	ck_assert_uint_eq(rows(node, "Events/5"), r->records);
	ck_assert_int_eq(attr_i64(node, "Events/5", "Blocks Dropped"), 1);
	sh5_evabsorb_describe(r, line, sizeof(line));
	ck_assert_msg(strstr(line, "1 blocks dropped"), "%s", line);

	r = find(v, n, PREFIX ".6.106.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(file_exists(r->name));
	ck_assert(!exists(node, "Events/6"));

	r = find(v, n, PREFIX ".7.107.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_KEPT);
	ck_assert_int_eq(r->info.truncated, 1);
	ck_assert_uint_le(r->info.blocks, 8);
	ck_assert_uint_gt(r->records, 0);
	ck_assert_uint_le(r->records, 8 * sh5ev_block_capacity(BLOCK));
	ck_assert(file_exists(r->name));
	ck_assert_int_eq(attr_i64(node, "Events/7", "Truncated"), 1);

	r = find(v, n, PREFIX ".8.108.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/8"));
	ck_assert(!exists(node, "Events/2"));
	r = find(v, n, PREFIX ".99.199.sh5ev");
	ck_assert_int_eq(r->status, SH5_EVABSORB_REFUSED);
	ck_assert(!exists(node, "Events/99"));

	/* The refused files left no rows behind: 2 regions per task
	 * absorbed (0, 4, 5, 7). */
	ck_assert_uint_eq(rows(node, "Events/Regions"), 8);
	free(v);
	H5Gclose(node);
	H5Fclose(f);
}
END_TEST

START_TEST(test_evabsorb_open_dir_refuses_symlink)
{
	struct sh5_error err = { "" };
	char path[512], other[512];
	int fd;

	snprintf(path, sizeof(path), "%s/user", tmpdir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	fd = sh5_evabsorb_open_dir(tmpdir, "user", geteuid(), &err);
	ck_assert_msg(fd >= 0, "%s", err.text);
	close(fd);
	ck_assert_int_eq(sh5_evabsorb_open_dir(tmpdir, "user", geteuid() + 1,
					       &err), -1);
	ck_assert_msg(strstr(err.text, "not owned"), "%s", err.text);
	snprintf(other, sizeof(other), "%s/link", tmpdir);
	ck_assert_int_eq(symlink(path, other), 0);
	ck_assert_int_eq(sh5_evabsorb_open_dir(tmpdir, "link", geteuid(),
					       &err), -1);
	ck_assert_msg(strstr(err.text, "symlink"), "%s", err.text);
}
END_TEST

/* sh5_writer_call: the absorption runs on the writer's node group, and
 * the writer closes the file as always (totals after the events). */
struct call_arg {
	int dirfd;
	struct sh5_evabsorb_file *files;
	size_t n;
};

static int call_absorb(hid_t node, void *arg, struct sh5_error *errp)
{
	struct call_arg *a = arg;
	struct sh5_evabsorb_params p;
	struct sh5_evstore *es = sh5_evstore_open(node, 4, errp);
	int rc;

	if (!es)
		return -1;
	memset(&p, 0, sizeof(p));
	p.dirfd = a->dirfd;
	p.prefix = PREFIX;
	p.uid = geteuid();
	p.gid = getegid();
	rc = sh5_evabsorb(&p, es, &a->files, &a->n, NULL, errp);
	sh5_evstore_close(es);
	return rc;
}

START_TEST(test_writer_call_absorbs_before_close)
{
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	struct call_arg a = { -1, NULL, 0 };
	char h5[512], spool[512];
	size_t ev;
	hid_t f;

	snprintf(spool, sizeof(spool), "%s/spool", tmpdir);
	ck_assert_int_eq(mkdir(spool, 0700), 0);
	ev = make_spill(spool, 2, 300, 20, NULL);
	snprintf(h5, sizeof(h5), "%s/w.h5", tmpdir);
	w = sh5_writer_create(h5, -1, "node1", NULL, &err);
	ck_assert_msg(w, "%s", err.text);
	a.dirfd = open(spool, O_DIRECTORY | O_RDONLY);
	ck_assert(a.dirfd >= 0);
	ck_assert_msg(sh5_writer_call(w, call_absorb, &a, &err) == 0, "%s",
		      err.text);
	close(a.dirfd);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_int_eq(a.files[0].status, SH5_EVABSORB_REMOVED);
	free(a.files);
	ck_assert_int_eq(sh5_writer_attr_int(w, "After", 1, &err), 0);
	ck_assert_msg(sh5_writer_close(w, &err) == 0, "%s", err.text);
	f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
	ck_assert(f >= 0);
	ck_assert_uint_eq(rows(f, "node1/Events/2"), ev);
	ck_assert(exists(f, "node1/Totals"));
	ck_assert_int_eq(attr_i64(f, "node1", "After"), 1);
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
	tcase_add_test(tc, test_evabsorb_good_files_removed);
	tcase_add_test(tc, test_evabsorb_no_files_no_group);
	tcase_add_test(tc, test_evabsorb_pending);
	tcase_add_test(tc, test_evabsorb_hostile_files);
	tcase_add_test(tc, test_evabsorb_open_dir_refuses_symlink);
	tcase_add_test(tc, test_writer_call_absorbs_before_close);
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
