/* sealcheck.c - the seals of the inputs (see merge_int.h, profile/seal.h,
 * doc/security.md "Sealed node-step files"). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/seal.h"
#include "merge/merge_int.h"

/* Inputs larger than this are checked in full (the bytes of a sealed
 * input are held in memory while it is copied). */
#define SEAL_IMAGE_MAX ((uint64_t)256 << 20)

/* Read the size bytes of fd into a new buffer, or NULL. */
static unsigned char *read_whole(int fd, uint64_t size)
{
	unsigned char *b = malloc((size_t)size);
	uint64_t off = 0;

	while (b && off < size) {
		ssize_t n = pread(fd, b + off, (size_t)(size - off),
				  (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(b);
			return NULL;
		}
		off += (uint64_t)n;
	}
	return b;
}

/* The size bytes of fd: read into a new buffer (the one-pass child: HDF5
 * will read these bytes, not the file), else mapped (*mapped set: a
 * checking child only looks, and checks the file in full).  NULL on
 * failure. */
static unsigned char *take_bytes(struct mstate *m, int fd, uint64_t size,
				 int *mapped)
{
	void *p;

	*mapped = 0;
	if (m->onepass)
		return read_whole(fd, size);
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
		 fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*mapped = 1;
	return p;
}

int mg_seal_read(struct mstate *m, struct finfo *f, unsigned char **img,
		 int *mapped)
{
	unsigned char t[SH5_SEAL_TRAILER], *b;
	struct sh5_seal_id id = { m->o->job, f->in->step_id, f->in->node,
				  f->in->file };
	struct stat st;
	uint64_t size, len = 0;
	uint32_t crc = 0;
	int fd;

	*img = NULL;
	*mapped = 0;
	f->seal = -1;
	if (!m->o->seal_key)
		return 0;
	if ((fd = open(f->in->path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0; /* the checks say why */
	f->seal = SH5_SEAL_NONE;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < SH5_SEAL_TRAILER ||
	    (uint64_t)st.st_size > SEAL_IMAGE_MAX) {
		close(fd);
		return 0;
	}
	size = (uint64_t)st.st_size;
	/* The trailer first: an unsealed file is not read whole. */
	if (pread(fd, t, sizeof(t), (off_t)(size - sizeof(t))) !=
		    (ssize_t)sizeof(t) || !sh5_seal_peek(t, size) ||
	    !(b = take_bytes(m, fd, size, mapped))) {
		close(fd);
		return 0;
	}
	close(fd);
	/* What is checked is what HDF5 will read: these bytes, not the
	 * file, which its owner may change. */
	f->seal = (int)sh5_seal_check(b, size, m->o->seal_key, &id, &len,
				      &crc);
	if (f->seal != SH5_SEAL_OK) {
		if (*mapped)
			munmap(b, (size_t)size);
		else
			free(b);
		*mapped = 0;
		return 0;
	}
	f->size = size;
	f->crc = crc;
	*img = b;
	return 1;
}

void mg_seal_note(struct mstate *m, const struct finfo *f)
{
	if (f->seal == SH5_SEAL_MISMATCH)
		mg_report(m, 0, f->in->path, "seal does not match (changed "
			  "since it was sealed, or not the node-step file it "
			  "is merged as): checked in full");
	else if (f->seal == SH5_SEAL_OTHER_KEY)
		mg_report(m, 0, f->in->path, "sealed with another key: "
			  "checked in full");
}
