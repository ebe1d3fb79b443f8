/*
 * dwrite.h - large blocks appended to a regular file without the page
 * cache (O_DIRECT), written by a thread of their own while the caller
 * fills the next block.
 *
 * Copying a block into the page cache costs the kernel about as much
 * CPU as writing it to the disk does: for sh5merge extract's 25 MB of
 * CSV, 3-4 ms of a 50 ms run (doc/performance.md).  A direct write has
 * the disk read the caller's memory instead; done in the writer thread
 * it costs no wall time either.  Whatever the file refuses (O_DIRECT,
 * alignment) is written the ordinary way: the bytes in the file are the
 * same either way, and the caller's fsync makes them durable as before.
 */
#ifndef SH5_DWRITE_H
#define SH5_DWRITE_H

#include <stddef.h>

struct sh5_dwrite;

/* Offsets and lengths of direct writes are multiples of this, and the
 * blocks start at such an address. */
#define SH5_DWRITE_ALIGN 4096u

/* Start appending to fd at its current offset, with two blocks of cap
 * bytes (cap > SH5_DWRITE_ALIGN).  Nothing may write to fd by other ways
 * until sh5_dwrite_finish, and O_DIRECT is set on fd's open file
 * description until then: give it a file no other process shares (a
 * temporary file of one's own).  *buf is the first block to fill and *len the
 * bytes already in it (the file's last partial aligned block, read back:
 * fill on after them).  Returns the writer, or NULL with errno set when
 * fd is no regular file, refuses O_DIRECT, or there is no memory or
 * thread for it (then nothing has changed: write as before). */
struct sh5_dwrite *sh5_dwrite_start(int fd, size_t cap, char **buf,
				    size_t *len);

/* Hand over the *len bytes of block *buf (the one sh5_dwrite_start or
 * the last call gave): its whole aligned blocks are written in the
 * background, and *buf, *len become the other block with the rest (fewer
 * than SH5_DWRITE_ALIGN bytes) copied to its start.  Waits until that
 * block's own write has ended.  0, or -1 with errno of a failed write
 * (this or an earlier one; *buf and *len are then valid but nothing more
 * is written). */
int sh5_dwrite_submit(struct sh5_dwrite *w, char **buf, size_t *len);

/* Write the len bytes of buf (the current block) and wait for every
 * write, leave fd's offset at the end of the data and fd as it was
 * (without O_DIRECT), free w and its blocks (buf among them).  0, or -1
 * with errno of the first failed write.  NULL w: 0. */
int sh5_dwrite_finish(struct sh5_dwrite *w, const char *buf, size_t len);

#endif /* SH5_DWRITE_H */
