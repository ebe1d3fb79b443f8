/*
 * sh5ev_write - write a spill file from a script, through the real event
 * library (for tests of the reader, the plugin and sh5merge).
 *
 * Usage: SH5_EVENTS_DIR=DIR [SH5_EVENTS_PREFIX=P SLURM_PROCID=N ...]
 *        sh5ev_write < SCRIPT
 *
 * One command a line (blank lines and lines starting with '#' skipped);
 * TIME is ns since 1970, or 0 for now:
 *
 *   region NAME [mpi]          define (prints "region NAME = ID")
 *   enter ID TIME | exit ID TIME
 *   phase [LEVEL]              sh5_evlog_phase(LEVEL or -1)
 *   object ID LOAD             sh5_ev_object()
 *   send COMM PEER TAG BYTES TIME | recv COMM PEER TAG BYTES TIME
 *   coll begin|end OP COMM ROOT BYTES TIME
 *   rank SIZE RANK
 *   comm LOCAL GLOBAL SIZE MYRANK [MEMBER ...]
 *   loop N TIME0 STEP          N enter/exit pairs of region 0 from
 *                              TIME0, STEP ns apart
 *   raw KIND OP FLAGS ID PEER TAG BYTES TIME   any record, unchecked
 *
 * Prints the spill file's path (the only *.sh5ev file of the directory
 * named after this pid) at the end, or nothing when none was made.
 * Exit 0, 1 on a bad script line (named), 2 when the log is not on.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/evlog.h"
#include "events/sh5ev.h"

#define MAXARGS 4100

static int num(const char *s, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

static int run(char **a, int n)
{
	long long v[12] = { 0 };
	int32_t *members;
	int i;

	for (i = 1; i < n && i < 12; i++)
		if (num(a[i], &v[i]) < 0 && strcmp(a[0], "region") != 0 &&
		    strcmp(a[0], "coll") != 0 && strcmp(a[0], "object") != 0)
			return -1;
	if (!strcmp(a[0], "region") && (n == 2 || n == 3)) {
		printf("region %s = %d\n", a[1],
		       sh5_evlog_region(a[1], n == 3 ? SH5EV_F_MPI : 0));
	} else if ((!strcmp(a[0], "enter") || !strcmp(a[0], "exit")) &&
		   n == 3) {
		sh5_evlog_event(a[0][1] == 'n' ? SH5EV_K_ENTER : SH5EV_K_EXIT,
				0, 0, (uint32_t)v[1], 0, 0, 0, v[2]);
	} else if (!strcmp(a[0], "phase") && n <= 2) {
		sh5_evlog_phase(n == 2 ? (int32_t)v[1] : -1,
				n == 2 ? SH5EV_F_PCONTROL : 0);
	} else if (!strcmp(a[0], "object") && n == 3) {
		char *end;
		double load = strtod(a[2], &end);

		if (num(a[1], &v[1]) < 0 || *end)
			return -1;
		sh5_ev_object((uint64_t)v[1], load);
	} else if ((!strcmp(a[0], "send") || !strcmp(a[0], "recv")) &&
		   n == 6) {
		sh5_evlog_event(a[0][0] == 's' ? SH5EV_K_SEND : SH5EV_K_RECV,
				0, 0, (uint32_t)v[1], (int32_t)v[2],
				(int32_t)v[3], (uint64_t)v[4], v[5]);
	} else if (!strcmp(a[0], "coll") && n == 7) {
		for (i = 2; i < 7; i++)
			if (num(a[i], &v[i]) < 0)
				return -1;
		sh5_evlog_event(!strcmp(a[1], "begin") ? SH5EV_K_CBEGIN
						       : SH5EV_K_CEND,
				(uint8_t)v[2], 0, (uint32_t)v[3],
				(int32_t)v[4], 0, (uint64_t)v[5], v[6]);
	} else if (!strcmp(a[0], "rank") && n == 3) {
		sh5_evlog_event(SH5EV_K_RANK, 0, 0, (uint32_t)v[1],
				(int32_t)v[2], 0, 0, 0);
	} else if (!strcmp(a[0], "comm") && n >= 5) {
		members = NULL;
		if (n > 5) {
			members = calloc((size_t)n - 5, sizeof(*members));
			if (!members)
				return -1;
			for (i = 5; i < n; i++) {
				long long m;

				if (num(a[i], &m) < 0) {
					free(members);
					return -1;
				}
				members[i - 5] = (int32_t)m;
			}
			if (n - 5 != v[3]) {
				free(members);
				return -1;
			}
		}
		sh5_evlog_comm((uint32_t)v[1], (uint64_t)v[2], (int32_t)v[3],
			       (int32_t)v[4], members);
		free(members);
	} else if (!strcmp(a[0], "loop") && n == 4) {
		for (i = 0; i < v[1]; i++) {
			sh5_evlog_event(SH5EV_K_ENTER, 0, 0, 0, 0, 0, 0,
					v[2] + 2 * i * v[3]);
			sh5_evlog_event(SH5EV_K_EXIT, 0, 0, 0, 0, 0, 0,
					v[2] + (2 * i + 1) * v[3]);
		}
	} else if (!strcmp(a[0], "raw") && n == 9) {
		struct sh5ev_rec r = { 0 };

		r.kind = (uint8_t)v[1];
		r.op = (uint8_t)v[2];
		r.flags = (uint16_t)v[3];
		r.id = (uint32_t)v[4];
		r.peer = (int32_t)v[5];
		r.tag = (int32_t)v[6];
		r.bytes = (uint64_t)v[7];
		r.time_ns = v[8] ? v[8] : sh5_evlog_now();
		sh5_evlog_put(&r);
	} else {
		return -1;
	}
	return 0;
}

int main(void)
{
	static char *args[MAXARGS];
	char *line = NULL, *p, *save;
	size_t cap = 0;
	unsigned long lineno = 0;
	const char *dir = getenv("SH5_EVENTS_DIR");
	const char *prefix = getenv("SH5_EVENTS_PREFIX");
	const char *task = getenv("SLURM_PROCID");
	char path[4096];
	struct stat st;
	int n;

	if (sh5_evlog_open() != 1) {
		fprintf(stderr, "sh5ev_write: the event log is not on "
				"(SH5_EVENTS_DIR?)\n");
		return 2;
	}
	while (getline(&line, &cap, stdin) > 0) {
		lineno++;
		n = 0;
		for (p = strtok_r(line, " \t\n", &save); p && n < MAXARGS;
		     p = strtok_r(NULL, " \t\n", &save))
			args[n++] = p;
		if (n == 0 || args[0][0] == '#')
			continue;
		if (run(args, n) < 0) {
			fprintf(stderr, "sh5ev_write: stdin:%lu: bad "
					"command\n", lineno);
			free(line);
			return 1;
		}
	}
	free(line);
	sh5_evlog_close();
	snprintf(path, sizeof(path), "%s/%s.%s.%ld.sh5ev", dir,
		 prefix && *prefix ? prefix : "events",
		 task && *task ? task : "0", (long)getpid());
	if (stat(path, &st) == 0)
		printf("%s\n", path);
	return 0;
}
