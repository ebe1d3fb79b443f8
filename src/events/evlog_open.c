/*
 * evlog_open.c - the event log's life: configuration from the
 * environment, open, fork, close and statistics.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/evlog.h"
#include "events/evlog_int.h"

static int g_result;		/* sh5_evlog_open()'s answer */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ---------------------------------------------------------------- open */

/* A size: decimal digits with an optional k/K, m/M or g/G (binary)
 * suffix.  Returns -1 when not one. */
static int parse_size(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || x > (UINT64_MAX >> shift))
		return -1;
	*v = (uint64_t)x << shift;
	return 0;
}

static int config(void)
{
	const char *dir = getenv(SH5EV_ENV_DIR);
	const char *prefix = getenv(SH5EV_ENV_PREFIX);
	const char *s;
	char cwd[PATH_MAX];
	uint64_t v, bs;
	int len;

	if (!dir || !*dir)
		return 0;
	if (!prefix || !*prefix)
		prefix = "events";
	if (strlen(prefix) >= sizeof(L.prefix) || strchr(prefix, '/') ||
	    prefix[0] == '.') {
		report(SH5EV_ENV_PREFIX, "not a file name prefix");
		return -1;
	}
	snprintf(L.prefix, sizeof(L.prefix), "%s", prefix);
	L.task = 0;
	s = getenv(SH5EV_ENV_TASK);
	if (s && *s) {
		if (parse_size(s, &v) < 0 || v > UINT32_MAX) {
			report(SH5EV_ENV_TASK, "not a task number");
			return -1;
		}
		L.task = (uint32_t)v;
	}
	bs = SH5EV_BLOCK_DEFAULT;
	s = getenv(SH5EV_ENV_BUFFER);
	if (s && *s) {
		if (parse_size(s, &v) < 0) {
			report(SH5EV_ENV_BUFFER, "not a size in bytes");
			return -1;
		}
		for (bs = SH5EV_BLOCK_MIN; bs < v && bs < SH5EV_BLOCK_MAX;)
			bs <<= 1;
	}
	L.block_size = (uint32_t)bs;
	L.cap = sh5ev_block_capacity(L.block_size);
	v = MAX_DEFAULT;
	s = getenv(SH5EV_ENV_MAX);
	if (s && *s && parse_size(s, &v) < 0) {
		report(SH5EV_ENV_MAX, "not a size in bytes");
		return -1;
	}
	/* 0: no cap; otherwise at least one block */
	L.max_blocks = v ? (v > SH5EV_HEADER_SIZE ?
			    (v - SH5EV_HEADER_SIZE) / bs : 0) : UINT32_MAX;
	if (L.max_blocks < 1)
		L.max_blocks = 1;
	if (L.max_blocks > UINT32_MAX)
		L.max_blocks = UINT32_MAX;
	s = getenv(SH5EV_ENV_WRITER);
	if (s && *s && strcmp(s, "thread") != 0 && strcmp(s, "sync") != 0 &&
	    strcmp(s, "map") != 0) {
		report(SH5EV_ENV_WRITER,
		       "not \"map\", \"sync\" or \"thread\"");
		return -1;
	}
	L.use_thread = s && strcmp(s, "thread") == 0;
	L.use_map = !s || !*s || strcmp(s, "map") == 0;
	L.pid = getpid();
	/* the file is made later: a relative directory is taken from the
	 * working directory of now, not of then */
	cwd[0] = '\0';
	if (dir[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		report(SH5EV_ENV_DIR, strerror(errno));
		return -1;
	}
	len = snprintf(L.path, sizeof(L.path), "%s%s%s/%s.%u.%ld%s", cwd,
		       cwd[0] ? "/" : "", dir, L.prefix, L.task, (long)L.pid,
		       SH5EV_SUFFIX);
	if (len < 0 || (size_t)len >= sizeof(L.path)) {
		report(SH5EV_ENV_DIR, "path too long");
		return -1;
	}
	return 1;
}

/* A forked child never writes into its parent's file. */
static void atfork_child(void)
{
	stop();
	tl_owner = 0;
	L.thread_on = 0;	/* the writer stayed in the parent */
	L.use_thread = 0;
	L.use_map = 0;
	L.extended = 0;		/* the parent's file: never truncated here */
	map_drop();
	if (L.fd >= 0)
		close(L.fd);
	L.fd = -1;
}

static void open_once(void)
{
	int rc = config(), i;

	if (rc <= 0)
		return;
	for (i = 0; i < (L.use_thread ? RING : 1); i++) {
		L.ring[i] = aligned_alloc(64, L.block_size);
		if (!L.ring[i]) {
			report(L.path, strerror(errno));
			return;
		}
		memset(L.ring[i], 0, L.block_size);
	}
	L.block = L.ring[0];
	L.recs = (struct sh5ev_rec *)(L.block + SH5EV_BLOCK_HEADER_SIZE);
	L.limit = L.max_blocks == 1 ? L.cap - 1 : L.cap;
	if (pthread_atfork(NULL, NULL, atfork_child) != 0 ||
	    atexit(sh5_evlog_close) != 0) {
		report(L.path, "cannot register fork and exit handlers");
		return;
	}
#ifdef HAVE_TSC
	tsc_init();
#endif
	tl_owner = 1;
	tl_on = 1;
	g_result = 1;
	__atomic_store_n(&g_recording, 1, __ATOMIC_RELEASE);
}

int sh5_evlog_open(void)
{
	pthread_once(&g_once, open_once);
	return g_result;
}

int sh5_evlog_on(void)
{
	return tl_on;
}

/* ---------------------------------------------------------------- close */

void sh5_evlog_close(void)
{
	uint64_t lost;
	struct sh5ev_rec r;

	if (!__atomic_load_n(&g_recording, __ATOMIC_ACQUIRE))
		return;
	if (getpid() == L.pid)
		stop_writer();	/* every queued block written first */
	L.use_thread = 0;
	if (__atomic_load_n(&L.werr, __ATOMIC_ACQUIRE)) {
		L.lost_err += L.n;	/* reported by the writer */
		L.n = 0;
	}
	lost = L.lost_cap + L.lost_err + L.lost_async +
	       __atomic_load_n(&g_lost_other, __ATOMIC_RELAXED);
	if (lost > 0 && L.n < L.cap) {
		memset(&r, 0, sizeof(r));
		r.time_ns = sh5_evlog_now();
		if (r.time_ns < L.last_ns)
			r.time_ns = L.last_ns;
		r.kind = SH5EV_K_LOST;
		r.bytes = lost;
		L.recs[L.n++] = r;
		L.last_ns = r.time_ns;
	}
	if (L.n > 0)
		write_block(0);
	stop();
	if (L.map && getpid() == L.pid)
		map_drop();
	/* the space extended ahead and not used goes */
	if (L.extended && L.fd >= 0 && getpid() == L.pid &&
	    ftruncate(L.fd, (off_t)SH5EV_HEADER_SIZE +
				(off_t)L.seq * L.block_size) < 0)
		report(L.path, strerror(errno));
	if (L.fd >= 0 && close(L.fd) < 0)
		report(L.path, strerror(errno));
	L.fd = -1;
}

void sh5_evlog_stats(struct sh5_evlog_stats *st)
{
	st->recorded = L.recorded;
	st->lost = L.lost_cap + L.lost_err +
		   __atomic_load_n(&L.lost_async, __ATOMIC_RELAXED) +
		   __atomic_load_n(&g_lost_other, __ATOMIC_RELAXED);
	st->blocks = __atomic_load_n(&L.blocks, __ATOMIC_RELAXED);
}
