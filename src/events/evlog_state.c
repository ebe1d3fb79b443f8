/*
 * evlog_state.c - the event log's state, shared by its files (see
 * evlog_int.h), and its error report.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "events/evlog_int.h"

struct evlog L = { .fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
		    .cv = PTHREAD_COND_INITIALIZER };
int g_recording;		/* 1 from open until stop/close/fork */
static int g_reported;
uint64_t g_lost_other;		/* atomic: calls from other threads */
TLS int tl_on;			/* owner thread, recording, not capped */
TLS int tl_owner;		/* owner thread */

/* ---------------------------------------------------------------- misc */

/* Report once on stderr (write(2): no stdio locks, safe at exit). */
void report(const char *what, const char *reason)
{
	char buf[PATH_MAX + 256];
	int len;

	if (g_reported)
		return;
	g_reported = 1;
	len = snprintf(buf, sizeof(buf), "sh5ev: %s: %s\n", what, reason);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(buf))
		len = sizeof(buf) - 1;
	if (write(STDERR_FILENO, buf, (size_t)len) < 0)
		return;
}

/* Recording stops for good (error, close, forked child). */
void stop(void)
{
	__atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
	tl_on = 0;
}
