/*
 * sh5ev_task - a task of tests/e2e/plugin_events.sh: records events
 * through the public API (sh5ev.h, libsh5ev) or plays a hostile user.
 *
 *   sh5ev_task MODE0 [MODE1 ...] [-- TARGET]
 *
 * Task SLURM_PROCID takes MODE<procid> (the last one when there are
 * fewer).  Modes:
 *   normal  regions "solve" and "io", 50 phases, each: phase, enter
 *           solve, object (id procid*1000+i, load i/1000 s), exit solve,
 *           enter io, exit io (300 events); exits 0
 *   kill    region "work", 500 enter/exit pairs (1000 events), then
 *           SIGKILL to itself: only its full blocks reach the file
 *   none    records nothing; prints its SH5_EVENTS_* environment
 *   hostile records nothing itself; writes into $SH5_EVENTS_DIR, named
 *           as spill files of its own task with pids 4000001..: a
 *           symlink to TARGET, a FIFO, a file cut inside its header, a
 *           file whose block 1 of 3 is damaged, a file of format
 *           version 99; exits 0
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/evformat.h"
#include "events/sh5ev.h"

static void normal(unsigned procid)
{
	int solve = sh5_ev_region("solve"), io = sh5_ev_region("io");
	int i;

	for (i = 0; i < 50; i++) {
		sh5_ev_phase();
		sh5_ev_enter(solve);
		sh5_ev_object((uint64_t)procid * 1000 + (uint64_t)i,
			      i / 1000.0);
		sh5_ev_exit(solve);
		sh5_ev_enter(io);
		sh5_ev_exit(io);
	}
}

static void kill_self(void)
{
	int work = sh5_ev_region("work");
	int i;

	for (i = 0; i < 500; i++) {
		sh5_ev_enter(work);
		sh5_ev_exit(work);
	}
	fflush(NULL);
	kill(getpid(), SIGKILL);
}

static void spill_name(char *buf, size_t len, const char *dir,
		       const char *prefix, unsigned task, unsigned pid)
{
	snprintf(buf, len, "%s/%s.%u.%u%s", dir, prefix, task, pid,
		 SH5EV_SUFFIX);
}

/* A spill file of nblocks blocks of ENTER/EXIT records (region 1 "evil"
 * defined first); block `bad` gets a record changed after its checksum;
 * version as given; cut after `cut` bytes when cut > 0. */
static int craft(const char *path, unsigned task, unsigned pid,
		 const char *prefix, uint32_t version, int nblocks, int bad,
		 size_t cut)
{
	const uint32_t bs = SH5EV_BLOCK_MIN;
	uint32_t cap = sh5ev_block_capacity(bs), i;
	struct sh5ev_file_header h;
	unsigned char *blk = calloc(1, bs);
	int64_t t = 1700000000000000000LL;
	size_t total = 0;
	int fd, b;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || !blk)
		return -1;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SH5EV_MAGIC, sizeof(h.magic));
	h.byte_order = SH5EV_BYTE_ORDER;
	h.version = version;
	h.header_size = SH5EV_HEADER_SIZE;
	h.block_size = bs;
	h.rec_size = SH5EV_REC_SIZE;
	h.task = task;
	h.pid = pid;
	h.created_ns = t;
	snprintf(h.prefix, sizeof(h.prefix), "%s", prefix);
	snprintf(h.lib_version, sizeof(h.lib_version), "hostile");
	h.checksum = sh5ev_checksum(&h, offsetof(struct sh5ev_file_header,
						 checksum));
	if (cut && cut < sizeof(h)) {
		total = write(fd, &h, cut) == (ssize_t)cut ? cut : 0;
		close(fd);
		free(blk);
		return total ? 0 : -1;
	}
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		goto error;
	for (b = 0; b < nblocks; b++) {
		struct sh5ev_block_header *bh = (void *)blk;
		struct sh5ev_rec *r = (void *)(blk + SH5EV_BLOCK_HEADER_SIZE);

		memset(blk, 0, bs);
		for (i = 0; i < cap; i++) {
			r[i].time_ns = t;
			t += 1000;
			if (b == 0 && i == 0) {
				r[i].kind = SH5EV_K_DEFREGION;
				r[i].id = 1;
				r[i].bytes = 4;
			} else if (b == 0 && i == 1) {
				memset(&r[i], 0, sizeof(r[i]));
				memcpy(&r[i], "evil", 4);
			} else {
				r[i].kind = i % 2 ? SH5EV_K_EXIT :
						    SH5EV_K_ENTER;
				r[i].id = 1;
				bh->last_ns = r[i].time_ns;
			}
		}
		bh->magic = SH5EV_BLOCK_MAGIC;
		bh->seq = (uint32_t)b;
		bh->nrec = cap;
		bh->checksum = sh5ev_checksum(r, (size_t)cap * SH5EV_REC_SIZE);
		if (b == bad)
			r[cap / 2].id = 7777;
		if (write(fd, blk, bs) != (ssize_t)bs)
			goto error;
	}
	free(blk);
	return close(fd);
error:
	free(blk);
	close(fd);
	return -1;
}

static int hostile(unsigned procid, const char *target)
{
	const char *dir = getenv(SH5EV_ENV_DIR);
	const char *prefix = getenv(SH5EV_ENV_PREFIX);
	char p[4096];
	int rc = 0;

	if (!dir || !prefix || !target) {
		fprintf(stderr, "sh5ev_task: hostile: no %s, %s or target\n",
			SH5EV_ENV_DIR, SH5EV_ENV_PREFIX);
		return 1;
	}
	spill_name(p, sizeof(p), dir, prefix, procid, 4000001);
	rc |= symlink(target, p);
	spill_name(p, sizeof(p), dir, prefix, procid, 4000002);
	rc |= mkfifo(p, 0600);
	spill_name(p, sizeof(p), dir, prefix, procid, 4000003);
	rc |= craft(p, procid, 4000003, prefix, SH5EV_FORMAT_VERSION, 1, -1,
		    100);
	spill_name(p, sizeof(p), dir, prefix, procid, 4000004);
	rc |= craft(p, procid, 4000004, prefix, SH5EV_FORMAT_VERSION, 3, 1,
		    0);
	spill_name(p, sizeof(p), dir, prefix, procid, 4000005);
	rc |= craft(p, procid, 4000005, prefix, 99, 1, -1, 0);
	if (rc)
		fprintf(stderr, "sh5ev_task: hostile: %s\n", strerror(errno));
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *s = getenv("SLURM_PROCID"), *mode, *target = NULL;
	unsigned procid = s ? (unsigned)strtoul(s, NULL, 10) : 0;
	int nmodes = argc - 1, i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nmodes = i - 1;
			target = i + 1 < argc ? argv[i + 1] : NULL;
			break;
		}
	if (nmodes < 1) {
		fprintf(stderr, "usage: sh5ev_task MODE... [-- TARGET]\n");
		return 2;
	}
	mode = argv[1 + (procid < (unsigned)nmodes ? procid :
			 (unsigned)nmodes - 1)];
	if (!strcmp(mode, "normal")) {
		normal(procid);
	} else if (!strcmp(mode, "kill")) {
		kill_self();
	} else if (!strcmp(mode, "none")) {
		printf("task %u dir=%s prefix=%s max=%s\n", procid,
		       getenv(SH5EV_ENV_DIR) ? getenv(SH5EV_ENV_DIR) : "",
		       getenv(SH5EV_ENV_PREFIX) ? getenv(SH5EV_ENV_PREFIX) : "",
		       getenv(SH5EV_ENV_MAX) ? getenv(SH5EV_ENV_MAX) : "");
	} else if (!strcmp(mode, "hostile")) {
		return hostile(procid, target);
	} else {
		fprintf(stderr, "sh5ev_task: unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
