/*
 * sh5_fakeclock - what a process under libfaketime sees, against the real
 * clock, to check the model the multi-node sync test uses for its truth.
 *
 *   sh5_fakeclock N INTERVAL_MS
 *
 * Prints "start NS": the real CLOCK_REALTIME at which this process was
 * created (from /proc/self/stat's start time in clock ticks since boot,
 * plus real CLOCK_REALTIME - CLOCK_BOOTTIME), then N lines
 * "REAL_NS FAKED_NS BRACKET_NS": REAL_NS is the middle of two raw
 * clock_gettime system calls (libfaketime intercepts the library
 * function, not the system call) around the library's clock_gettime
 * (FAKED_NS), BRACKET_NS the time between the two.  Sleeps with the raw
 * system call (libfaketime scales library sleeps by its rate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long raw(clockid_t id)
{
	struct timespec t;

	syscall(SYS_clock_gettime, id, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long start_ticks(void)
{
	char buf[2048], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;
	int k;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command name (which may hold blanks). */
	if (!(p = strrchr(buf, ')')))
		return -1;
	p += 2;
	for (k = 3; k < 22 && p; k++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoll(p, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	long long ticks, hz = sysconf(_SC_CLK_TCK), boot;
	struct timespec pause;
	char *end;
	long n, ms, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s N INTERVAL_MS\n", argv[0]);
		return 2;
	}
	n = strtol(argv[1], &end, 10);
	ms = strtol(argv[2], &end, 10);
	ticks = start_ticks();
	if (ticks < 0 || hz <= 0) {
		fprintf(stderr, "sh5_fakeclock: cannot read /proc/self/stat\n");
		return 1;
	}
	boot = raw(CLOCK_REALTIME) - raw(CLOCK_BOOTTIME);
	printf("start %lld\n", boot + ticks * (1000000000LL / hz));
	pause.tv_sec = ms / 1000;
	pause.tv_nsec = (ms % 1000) * 1000000L;
	for (i = 0; i < n; i++) {
		struct timespec f;
		long long a, b;

		a = raw(CLOCK_REALTIME);
		clock_gettime(CLOCK_REALTIME, &f);
		b = raw(CLOCK_REALTIME);
		printf("%lld %lld %lld\n", (a + b) / 2,
		       f.tv_sec * 1000000000LL + f.tv_nsec, b - a);
		if (i + 1 < n)
			syscall(SYS_nanosleep, &pause, NULL);
	}
	return 0;
}
