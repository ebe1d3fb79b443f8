/*
 * evtest.h - helpers shared by the event unit tests (test_evlog.c,
 * test_evspill.c): a scratch directory, starting the event log on it,
 * and reading a spill file back into arrays.
 */
#ifndef SH5_EVTEST_H
#define SH5_EVTEST_H

#include <stddef.h>
#include <stdint.h>

#include "events/evlog.h"
#include "events/evspill.h"

/* The scratch directory (made by evtest_setup(), removed with its files
 * by evtest_teardown(); both run in each test's forked child). */
extern char evtest_dir[];
void evtest_setup(void);
void evtest_teardown(void);

/* Point the log at evtest_dir (prefix "t", task 3) with SH5_EVENTS_BUFFER
 * and SH5_EVENTS_MAX as given (NULL: unset), and open it. */
void evtest_start(const char *buffer, const char *max);

/* The number of *.sh5ev files in evtest_dir; name (may be NULL, size
 * 256) gets the last one's name. */
int evtest_files(char *name);

/* Path of name in evtest_dir (static buffer). */
const char *evtest_path(const char *name);

struct evtest_region {
	uint32_t id;
	uint16_t flags;
	char name[SH5EV_NAME_MAX + 1];
};
struct evtest_comm {
	uint32_t local;
	uint64_t global;
	int32_t size, rank;
	int32_t *members;	/* NULL when not given */
};
struct evtest_got {
	struct evtest_region *regions;
	size_t nregions;
	struct evtest_comm *comms;
	size_t ncomms;
	struct sh5ev_rec *events;
	size_t nevents;
	size_t order;		/* callbacks seen, to check file order */
};

/* Read evtest_dir/name (uid: ours) into got (zeroed first). */
int evtest_read(const char *name, uint64_t max_bytes, struct evtest_got *got,
		struct sh5_evspill_info *info, struct sh5_error *errp);
void evtest_got_free(struct evtest_got *got);

/* A deterministic pseudo-random sequence (xorshift64*). */
uint64_t evtest_rand(uint64_t *state);

/* Recompute the header checksum / every block's checksum of a file in
 * place (to make damaged content reach the record checks). */
void evtest_fix_header(const char *path);
void evtest_fix_blocks(const char *path);

#endif
