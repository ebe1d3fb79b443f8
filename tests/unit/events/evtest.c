/* evtest.c - see evtest.h */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "evtest.h"

char evtest_dir[64];

void evtest_setup(void)
{
	snprintf(evtest_dir, sizeof(evtest_dir), "/tmp/sh5evtest.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(evtest_dir));
}

void evtest_teardown(void)
{
	struct dirent *de;
	DIR *d = opendir(evtest_dir);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(evtest_dir);
}

static void set_or_unset(const char *var, const char *val)
{
	if (val)
		setenv(var, val, 1);
	else
		unsetenv(var);
}

void evtest_start(const char *buffer, const char *max)
{
	setenv("SH5_EVENTS_DIR", evtest_dir, 1);
	setenv("SH5_EVENTS_PREFIX", "t", 1);
	setenv("SLURM_PROCID", "3", 1);
	set_or_unset("SH5_EVENTS_BUFFER", buffer);
	set_or_unset("SH5_EVENTS_MAX", max);
	ck_assert_int_eq(sh5_evlog_open(), 1);
	ck_assert_int_eq(sh5_evlog_on(), 1);
}

int evtest_files(char *name)
{
	struct dirent *de;
	DIR *d = opendir(evtest_dir);
	size_t len;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (len > 6 && strcmp(de->d_name + len - 6, ".sh5ev") == 0) {
			n++;
			if (name)
				snprintf(name, 256, "%s", de->d_name);
		}
	}
	closedir(d);
	return n;
}

const char *evtest_path(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", evtest_dir, name);
	return path;
}

static void *grow(void *p, size_t n, size_t size)
{
	/* capacity: powers of two */
	if (n & (n - 1) && n > 0)
		return p;
	p = realloc(p, (n ? n * 2 : 1) * size);
	ck_assert_ptr_nonnull(p);
	return p;
}

static int on_region(void *arg, uint32_t id, uint16_t flags,
		     const char *name, struct sh5_error *errp)
{
	struct evtest_got *g = arg;
	struct evtest_region *r;

	(void)errp;
	g->regions = grow(g->regions, g->nregions, sizeof(*r));
	r = &g->regions[g->nregions++];
	r->id = id;
	r->flags = flags;
	ck_assert_uint_le(strlen(name), SH5EV_NAME_MAX);
	snprintf(r->name, sizeof(r->name), "%s", name);
	g->order++;
	return 0;
}

static int on_comm(void *arg, uint32_t local, uint64_t global, int32_t size,
		   int32_t myrank, const int32_t *members,
		   struct sh5_error *errp)
{
	struct evtest_got *g = arg;
	struct evtest_comm *c;

	(void)errp;
	g->comms = grow(g->comms, g->ncomms, sizeof(*c));
	c = &g->comms[g->ncomms++];
	c->local = local;
	c->global = global;
	c->size = size;
	c->rank = myrank;
	c->members = NULL;
	if (members) {
		c->members = malloc((size_t)size * sizeof(int32_t));
		ck_assert_ptr_nonnull(c->members);
		memcpy(c->members, members, (size_t)size * sizeof(int32_t));
	}
	g->order++;
	return 0;
}

static int on_events(void *arg, const struct sh5ev_rec *recs, size_t n,
		     struct sh5_error *errp)
{
	struct evtest_got *g = arg;
	size_t i;

	(void)errp;
	ck_assert_uint_gt(n, 0);
	for (i = 0; i < n; i++) {
		g->events = grow(g->events, g->nevents, sizeof(*recs));
		g->events[g->nevents++] = recs[i];
	}
	g->order++;
	return 0;
}

int evtest_read(const char *name, uint64_t max_bytes, struct evtest_got *got,
		struct sh5_evspill_info *info, struct sh5_error *errp)
{
	struct sh5_evspill_cb cb = { on_region, on_comm, on_events, got };
	int dfd, rc;

	memset(got, 0, sizeof(*got));
	dfd = open(evtest_dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	rc = sh5_evspill_read(dfd, name, getuid(), max_bytes, &cb, info,
			      errp);
	close(dfd);
	return rc;
}

void evtest_got_free(struct evtest_got *got)
{
	size_t i;

	for (i = 0; i < got->ncomms; i++)
		free(got->comms[i].members);
	free(got->regions);
	free(got->comms);
	free(got->events);
	memset(got, 0, sizeof(*got));
}

uint64_t evtest_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

void evtest_fix_header(const char *path)
{
	struct sh5ev_file_header h;
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &h, sizeof(h), 0), sizeof(h));
	h.checksum = sh5ev_checksum(&h, offsetof(struct sh5ev_file_header,
						 checksum));
	ck_assert_int_eq(pwrite(fd, &h, sizeof(h), 0), sizeof(h));
	close(fd);
}

void evtest_fix_blocks(const char *path)
{
	struct sh5ev_file_header h;
	struct sh5ev_block_header *bh;
	unsigned char *blk;
	uint32_t nrec;
	off_t off;
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &h, sizeof(h), 0), sizeof(h));
	blk = malloc(h.block_size);
	ck_assert_ptr_nonnull(blk);
	bh = (struct sh5ev_block_header *)blk;
	for (off = SH5EV_HEADER_SIZE;
	     pread(fd, blk, h.block_size, off) == (ssize_t)h.block_size;
	     off += h.block_size) {
		nrec = bh->nrec;
		if (nrec > sh5ev_block_capacity(h.block_size))
			continue;
		bh->checksum = sh5ev_checksum(blk + SH5EV_BLOCK_HEADER_SIZE,
					      (size_t)nrec * SH5EV_REC_SIZE);
		ck_assert_int_eq(pwrite(fd, blk, h.block_size, off),
				 h.block_size);
	}
	free(blk);
	close(fd);
}
