/*
 * evstoretest.c - helpers of the evstore and evabsorb unit tests (see
 * evstoretest.h).
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

#include "evstoretest.h"

/* ------------------------------------------------------ crafting files */


struct sh5ev_rec *push(struct stream *s, uint8_t kind, int payload)
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

void def_region(struct stream *s, uint32_t id, const char *name)
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

void def_comm(struct stream *s, uint32_t local, uint64_t global,
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
size_t typical(struct stream *s, uint32_t task, int iters)
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


void write_spill(const char *path, const struct stream *s,
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

void free_stream(struct stream *s)
{
	free(s->r);
	free(s->payload);
	memset(s, 0, sizeof(*s));
}

/* A spill file of task in dir; returns its event records. */
size_t make_spill(const char *dir, uint32_t task, uint32_t pid,
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

char tmpdir[64];

void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sh5-evstore-XXXXXX");
	ck_assert(mkdtemp(tmpdir));
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A fresh HDF5 file with a node group. */
hid_t new_file(const char *name, hid_t *node)
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

hsize_t rows(hid_t loc, const char *path)
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

int exists(hid_t loc, const char *path)
{
	return H5Lexists(loc, path, H5P_DEFAULT) > 0;
}

int64_t attr_i64(hid_t loc, const char *obj, const char *name)
{
	int64_t v = -12345;
	hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);

	ck_assert_msg(a >= 0, "no attribute %s of %s", name, obj);
	ck_assert(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
	return v;
}

void attr_str(hid_t loc, const char *obj, const char *name,
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

int file_exists(const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return lstat(path, &st) == 0;
}
