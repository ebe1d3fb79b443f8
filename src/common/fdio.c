/* fdio.c - see fdio.h */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "common/fdio.h"

int sh5_fd_write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t w = write(fd, c, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

int sh5_fd_read_all(int fd, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t r = read(fd, c, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		len -= (size_t)r;
	}
	return 0;
}
