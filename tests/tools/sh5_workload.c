/*
 * sh5_workload - a job step that uses CPU, memory and file I/O for a
 * given time, so that profile samples have something to show.
 *
 *   sh5_workload SECONDS MEM_MB IO_MB DIR [EXIT_CODE]
 *
 * Touches MEM_MB of memory, writes and fsyncs IO_MB to a file in DIR
 * (removed afterwards) spread over the run, burns CPU the rest of the
 * time, and exits with EXIT_CODE (default 0).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs, t0, x = 1.0;
	long mem_mb, io_mb, written = 0, i;
	char path[4096], *mem, block[1 << 16];
	int fd, code = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: %s SECONDS MEM_MB IO_MB DIR [EXIT]\n",
			argv[0]);
		return 2;
	}
	secs = strtod(argv[1], NULL);
	mem_mb = strtol(argv[2], NULL, 10);
	io_mb = strtol(argv[3], NULL, 10);
	if (argc > 5)
		code = (int)strtol(argv[5], NULL, 10);
	mem = malloc((size_t)mem_mb << 20);
	if (!mem)
		return 3;
	for (i = 0; i < mem_mb << 20; i += 4096)
		mem[i] = (char)i;
	snprintf(path, sizeof(path), "%s/sh5-workload.%d", argv[4],
		 (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		return 3;
	}
	memset(block, 'x', sizeof(block));
	t0 = now();
	while (now() - t0 < secs) {
		double frac = (now() - t0) / secs;

		/* Write in proportion to elapsed time. */
		while (written < (long)(frac * (io_mb << 20)) &&
		       write(fd, block, sizeof(block)) == (ssize_t)sizeof(block))
			written += sizeof(block);
		fdatasync(fd);
		for (i = 0; i < 2000000; i++)
			x = x * 1.0000001 + 1e-9;
	}
	close(fd);
	unlink(path);
	free(mem);
	return x > 0 ? code : 4;
}
