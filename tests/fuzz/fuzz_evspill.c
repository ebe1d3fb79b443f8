/* fuzz_evspill.c - libFuzzer target: the spill-file reader slurmstepd
 * runs as root on what a task wrote (sh5_evspill_read).  Each input is
 * written to a spill file in a private directory and read back. */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/evspill.h"

static char dir[64];
static int dirfd_ = -1;

static int on_region(void *arg, uint32_t id, uint16_t flags,
		     const char *name, struct sh5_error *errp)
{
	(void)errp;
	(void)id;
	(void)flags;
	*(size_t *)arg += strlen(name);
	return 0;
}

static int on_comm(void *arg, uint32_t local, uint64_t global, int32_t size,
		   int32_t myrank, const int32_t *members,
		   struct sh5_error *errp)
{
	int32_t i;

	(void)local;
	(void)global;
	(void)myrank;
	(void)errp;
	for (i = 0; members && i < size; i++)
		*(size_t *)arg += (size_t)members[i];
	return 0;
}

static int on_events(void *arg, const struct sh5ev_rec *recs, size_t n,
		     struct sh5_error *errp)
{
	size_t i;

	(void)errp;
	for (i = 0; i < n; i++)
		*(size_t *)arg += recs[i].kind;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/fuzz_evspill.XXXXXX");
	if (!mkdtemp(dir) || (dirfd_ = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "sh5ev.3.4242.sh5ev";
	struct sh5_evspill_cb cb = { on_region, on_comm, on_events, NULL };
	struct sh5_evspill_info info;
	struct sh5_error err;
	size_t sink = 0;
	int fd;

	cb.arg = &sink;
	unlinkat(dirfd_, name, 0);
	fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	sh5_evspill_read(dirfd_, name, getuid(), 1 << 22, &cb, &info, &err);
	return 0;
}
