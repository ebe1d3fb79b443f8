/*
 * fdio.h - whole reads and writes on file descriptors (pipes between
 * sh5merge's processes).
 */
#ifndef SH5_FDIO_H
#define SH5_FDIO_H

#include <stddef.h>

/* Write all len bytes, retrying on EINTR and short writes.  0, or -1
 * with errno set (a zero-byte write counts as an error). */
int sh5_fd_write_all(int fd, const void *p, size_t len);

/* Read exactly len bytes.  0, or -1 with errno set, or -1 with errno
 * unchanged at end of file before len bytes. */
int sh5_fd_read_all(int fd, void *p, size_t len);

#endif /* SH5_FDIO_H */
