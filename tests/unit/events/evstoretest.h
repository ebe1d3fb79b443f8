/*
 * evstoretest.h - helpers of the evstore and evabsorb unit tests
 * (test_evstore.c, test_evabsorb.c): crafted spill files, a scratch
 * directory, HDF5 look-ups.
 */
#ifndef SH5_EVSTORETEST_H
#define SH5_EVSTORETEST_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "events/evformat.h"

#define PREFIX "42_0_node1"
#define BLOCK 4096u

/* A record stream under construction; payload[i]: continues a def. */
struct stream {
	struct sh5ev_rec *r;
	unsigned char *payload;
	size_t n, cap;
	int64_t t;
};

struct craft {
	uint32_t version;	/* header version */
	uint32_t hdr_task;	/* task in the header */
	uint32_t pid;
	int bad_block;		/* damage this block's records (-1: none) */
	size_t torn;		/* bytes of one more block appended */
};

extern char tmpdir[64];

struct sh5ev_rec *push(struct stream *s, uint8_t kind, int payload);

void def_region(struct stream *s, uint32_t id, const char *name);

void def_comm(struct stream *s, uint32_t local, uint64_t global,
	      int32_t size, int32_t myrank, const int32_t *members);

/* A typical task: RANK, two regions, a communicator, iters phases with
 * an enter/exit, a send and an object each.  Returns the event records
 * (kinds ENTER..LOST) in it. */
size_t typical(struct stream *s, uint32_t task, int iters);

void write_spill(const char *path, const struct stream *s,
		 const struct craft *c);

void free_stream(struct stream *s);

/* A spill file of task in dir; returns its event records. */
size_t make_spill(const char *dir, uint32_t task, uint32_t pid,
		  int iters, const struct craft *over);

void setup(void);

void teardown(void);

/* A fresh HDF5 file with a node group. */
hid_t new_file(const char *name, hid_t *node);

hsize_t rows(hid_t loc, const char *path);

int exists(hid_t loc, const char *path);

int64_t attr_i64(hid_t loc, const char *obj, const char *name);

void attr_str(hid_t loc, const char *obj, const char *name,
	      char *buf, size_t len);

int file_exists(const char *name);

#endif /* SH5_EVSTORETEST_H */
