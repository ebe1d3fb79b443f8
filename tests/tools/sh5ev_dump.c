/*
 * sh5ev_dump - print a spill file as text, read through sh5_evspill_read()
 * with uid = the file's owner (so the owner/type/link checks still run).
 *
 * Usage: sh5ev_dump [-m MAX_BYTES] FILE
 *
 * Output (stable: other tests parse it), one line each, fields separated
 * by one space, numbers in decimal:
 *
 *   FILE task=<task> pid=<pid> block_size=<bytes> created=<ns>
 *        prefix=<prefix> lib=<version>               (one line, first)
 *   REGION <id> <flags> <name>                       (name may hold spaces)
 *   COMM <local> <global> <size> <rank> [<member> ...]
 *   EV <time_ns> <kind> <op> <flags> <id> <peer> <tag> <bytes> <value>
 *   INFO blocks=<n> bad=<n> torn=0|1 truncated=0|1 events=<n>
 *        rejected=<n> lost=<n> problem=<text>        (one line, last)
 *
 * in file order.  <kind> is ENTER EXIT PHASE SEND RECV CBEGIN CEND
 * OBJECT RANK LOST; <value> is printed with %.17g; <problem> is the
 * reader's first_problem (empty when nothing was dropped).
 *
 * Exit 0 when the file was read (even with blocks or records dropped),
 * 1 with "sh5ev_dump: FILE: reason" on stderr when it could not be read
 * at all (the INFO line is still printed when the header was valid), 2
 * on a usage error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/evspill.h"

static const char *const kind_names[SH5EV_K_COUNT] = {
	[SH5EV_K_ENTER] = "ENTER",	 [SH5EV_K_EXIT] = "EXIT",
	[SH5EV_K_PHASE] = "PHASE",	 [SH5EV_K_SEND] = "SEND",
	[SH5EV_K_RECV] = "RECV",	 [SH5EV_K_CBEGIN] = "CBEGIN",
	[SH5EV_K_CEND] = "CEND",	 [SH5EV_K_OBJECT] = "OBJECT",
	[SH5EV_K_RANK] = "RANK",	 [SH5EV_K_LOST] = "LOST",
	[SH5EV_K_DEFREGION] = "DEFREGION", [SH5EV_K_DEFCOMM] = "DEFCOMM",
};

static const struct sh5_evspill_info *g_info;
static int g_head_done;

/* The FILE line, once, before anything else (the header is read before
 * the first callback). */
static void head(void)
{
	const struct sh5_evspill_info *i = g_info;

	if (g_head_done || !i->block_size)
		return;
	g_head_done = 1;
	printf("FILE task=%" PRIu32 " pid=%" PRIu32 " block_size=%" PRIu32
	       " created=%" PRId64 " prefix=%s lib=%s\n", i->task, i->pid,
	       i->block_size, i->created_ns, i->prefix, i->lib_version);
}

static int on_region(void *arg, uint32_t id, uint16_t flags,
		     const char *name, struct sh5_error *errp)
{
	(void)arg;
	(void)errp;
	head();
	printf("REGION %" PRIu32 " %u %s\n", id, flags, name);
	return 0;
}

static int on_comm(void *arg, uint32_t local, uint64_t global, int32_t size,
		   int32_t myrank, const int32_t *members,
		   struct sh5_error *errp)
{
	int32_t i;

	(void)arg;
	(void)errp;
	head();
	printf("COMM %" PRIu32 " %" PRIu64 " %" PRId32 " %" PRId32, local,
	       global, size, myrank);
	for (i = 0; members && i < size; i++)
		printf(" %" PRId32, members[i]);
	putchar('\n');
	return 0;
}

static int on_events(void *arg, const struct sh5ev_rec *r, size_t n,
		     struct sh5_error *errp)
{
	size_t i;

	(void)arg;
	(void)errp;
	head();
	for (i = 0; i < n; i++, r++)
		printf("EV %" PRId64 " %s %u %u %" PRIu32 " %" PRId32
		       " %" PRId32 " %" PRIu64 " %.17g\n",
		       r->time_ns,
		       r->kind < SH5EV_K_COUNT && kind_names[r->kind]
			       ? kind_names[r->kind] : "?",
		       r->op, r->flags, r->id, r->peer, r->tag, r->bytes,
		       r->value);
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

int main(int argc, char **argv)
{
	struct sh5_evspill_cb cb = { on_region, on_comm, on_events, NULL };
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	uint64_t max_bytes = 0;
	char *dcopy = NULL, *bcopy = NULL;
	const char *file, *base, *reason;
	struct stat st;
	int opt, dirfd = -1, rc;

	while ((opt = getopt(argc, argv, "m:")) != -1) {
		if (opt != 'm' || parse_u64(optarg, &max_bytes) < 0) {
			fprintf(stderr, "usage: sh5ev_dump [-m MAX_BYTES] "
					"FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: sh5ev_dump [-m MAX_BYTES] FILE\n");
		return 2;
	}
	file = argv[optind];
	if (lstat(file, &st) < 0) {
		fprintf(stderr, "sh5ev_dump: %s: %s\n", file, strerror(errno));
		return 1;
	}
	dcopy = strdup(file);
	bcopy = strdup(file);
	if (!dcopy || !bcopy) {
		fprintf(stderr, "sh5ev_dump: %s: out of memory\n", file);
		return 1;
	}
	dirfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fprintf(stderr, "sh5ev_dump: %s: %s\n", file, strerror(errno));
		return 1;
	}
	g_info = &info;
	base = basename(bcopy);
	rc = sh5_evspill_read(dirfd, base, st.st_uid, max_bytes,
			      &cb, &info, &err);
	head();
	if (info.block_size)
		printf("INFO blocks=%" PRIu32 " bad=%" PRIu32 " torn=%d "
		       "truncated=%d events=%" PRIu64 " rejected=%" PRIu64
		       " lost=%" PRIu64 " problem=%s\n",
		       info.blocks, info.blocks_bad, info.torn_tail,
		       info.truncated, info.events, info.rejected, info.lost,
		       info.first_problem);
	close(dirfd);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "sh5ev_dump: stdout: write error\n");
		return 1;
	}
	rc = rc < 0 ? 1 : 0;
	if (rc) {
		/* err starts with the base name: print the path given */
		reason = err.text;
		if (strncmp(reason, base, strlen(base)) == 0 &&
		    reason[strlen(base)] == ':')
			reason += strlen(base) + 2;
		fprintf(stderr, "sh5ev_dump: %s: %s\n", file,
			reason[0] ? reason : "unreadable");
	}
	free(dcopy);
	free(bcopy);
	return rc;
}
