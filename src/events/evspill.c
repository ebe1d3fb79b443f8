/*
 * evspill.c - reading a task's spill file (see evspill.h).
 *
 * Everything in the file is untrusted: it is read as root.  Memory is
 * one block buffer, one output array of a block's records, bitmaps of
 * the defined ids and one pending definition (a name, or the members of
 * one communicator), all bounded.  Each loop is bounded by the file's
 * size (blocks) or a block's capacity (records).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/evspill.h"

/* Caps on what one file may define (the excess is rejected). */
#define IDS_MAX (1u << 20)	/* region ids and comm local ids: < this */
#define MEMBERS_MAX (1u << 20)	/* members of all communicators */

struct bitmap {
	uint8_t *bits;
	uint32_t nbytes;
};

struct pending {
	int active;
	uint8_t kind;		/* DEFREGION or DEFCOMM */
	struct sh5ev_rec head;
	uint32_t want;		/* payload records in all */
	uint32_t got;
	uint32_t len;		/* DEFREGION: name length */
	int drop;		/* consume the payload, deliver nothing */
	char name[SH5EV_NAME_MAX + 1];
	int32_t *members;	/* DEFCOMM: size entries */
};

struct reader {
	const char *name;
	const struct sh5_evspill_cb *cb;
	struct sh5_evspill_info *info;
	struct sh5_error *errp;
	struct bitmap regions;
	struct bitmap comms;
	uint32_t nregions;
	uint32_t ncomms;
	uint64_t nmembers;
	int64_t last_ns;
	int have_time;
	struct pending def;
	struct sh5ev_rec *out;	/* a block's valid events */
	size_t nout;
	uint32_t block;		/* index of the block being read */
};

/* ---------------------------------------------------------------- util */

static void problem(struct reader *rd, uint32_t rec, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Remember the first thing dropped. */
static void problem(struct reader *rd, uint32_t rec, const char *fmt, ...)
{
	char *p = rd->info->first_problem;
	size_t sz = sizeof(rd->info->first_problem);
	int len;
	va_list ap;

	if (p[0])
		return;
	if (rec == UINT32_MAX)
		len = snprintf(p, sz, "block %" PRIu32 ": ", rd->block);
	else
		len = snprintf(p, sz, "block %" PRIu32 " record %" PRIu32 ": ",
			       rd->block, rec);
	if (len < 0 || (size_t)len >= sz)
		return;
	va_start(ap, fmt);
	vsnprintf(p + len, sz - (size_t)len, fmt, ap);
	va_end(ap);
}

static int bit_test(const struct bitmap *b, uint32_t id)
{
	return id / 8 < b->nbytes && (b->bits[id / 8] >> (id % 8)) & 1;
}

/* id < IDS_MAX.  Returns -1 on allocation failure. */
static int bit_set(struct bitmap *b, uint32_t id)
{
	uint32_t need = id / 8 + 1, n;
	uint8_t *t;

	if (need > b->nbytes) {
		for (n = b->nbytes ? b->nbytes : 64; n < need; n *= 2)
			;
		t = realloc(b->bits, n);
		if (!t)
			return -1;
		memset(t + b->nbytes, 0, n - b->nbytes);
		b->bits = t;
		b->nbytes = n;
	}
	b->bits[id / 8] |= (uint8_t)(1u << (id % 8));
	return 0;
}

/* Read len bytes (fewer only at end of file).  Returns the count, or -1. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = read(fd, p + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Copy a NUL-terminated field of n bytes, replacing non-printable bytes;
 * returns -1 when it holds no NUL. */
static int copy_text(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && src[i]; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	if (i == n) {
		dst[0] = '\0';
		return -1;
	}
	dst[i] = '\0';
	return 0;
}

/* ---------------------------------------------------------------- open */

static int open_checked(int dirfd, const char *name, uid_t uid,
			struct stat *st, struct sh5_error *errp)
{
	struct stat st0;
	int fd;

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not a plain file name", name);
	}
	if (fstatat(dirfd, name, &st0, AT_SYMLINK_NOFOLLOW) < 0)
		return sh5_errprintf(errp, "%s: %s", name, strerror(errno));
	if (S_ISLNK(st0.st_mode)) {
		errno = ELOOP;
		return sh5_errprintf(errp, "%s: is a symbolic link", name);
	}
	if (!S_ISREG(st0.st_mode)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not a regular file", name);
	}
	fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sh5_errprintf(errp, "%s: %s", name, strerror(errno));
	if (fstat(fd, st) < 0) {
		sh5_errprintf(errp, "%s: %s", name, strerror(errno));
		goto error;
	}
	if (st->st_dev != st0.st_dev || st->st_ino != st0.st_ino) {
		errno = EAGAIN;
		sh5_errprintf(errp, "%s: replaced while being opened", name);
		goto error;
	}
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not a regular file", name);
		goto error;
	}
	if (st->st_uid != uid) {
		errno = EPERM;
		sh5_errprintf(errp, "%s: owned by uid %lu, not %lu", name,
			      (unsigned long)st->st_uid, (unsigned long)uid);
		goto error;
	}
	if (st->st_nlink != 1) {
		errno = EPERM;
		sh5_errprintf(errp, "%s: has %lu links, not 1", name,
			      (unsigned long)st->st_nlink);
		goto error;
	}
	return fd;
error:
	{
		int e = errno;

		close(fd);
		errno = e;
	}
	return -1;
}

static int check_header(struct reader *rd, const struct sh5ev_file_header *h,
			ssize_t got)
{
	struct sh5_evspill_info *info = rd->info;
	const char *name = rd->name;
	uint32_t bs = h->block_size;

	errno = EBADMSG;
	if (got < (ssize_t)sizeof(*h))
		return sh5_errprintf(rd->errp, "%s: %zd bytes, too short for "
				     "a spill-file header", name, got);
	if (memcmp(h->magic, SH5EV_MAGIC, sizeof(h->magic)) != 0)
		return sh5_errprintf(rd->errp, "%s: not a spill file (bad "
				     "magic)", name);
	if (h->byte_order != SH5EV_BYTE_ORDER) {
		errno = EPROTONOSUPPORT;
		return sh5_errprintf(rd->errp, "%s: byte-order mark "
				     "0x%08" PRIx32 ": written on a machine of another byte "
				     "order", name, h->byte_order);
	}
	if (h->version < SH5EV_FORMAT_VERSION_MIN ||
	    h->version > SH5EV_FORMAT_VERSION) {
		errno = EPROTONOSUPPORT;
		return sh5_errprintf(rd->errp, "%s: spill-file format version "
				     "%" PRIu32 ", this reader reads versions "
				     "%u to %u", name, h->version,
				     SH5EV_FORMAT_VERSION_MIN,
				     SH5EV_FORMAT_VERSION);
	}
	if (h->checksum != sh5ev_checksum(h, offsetof(struct sh5ev_file_header,
						      checksum)))
		return sh5_errprintf(rd->errp, "%s: header checksum mismatch",
				     name);
	if (h->header_size != SH5EV_HEADER_SIZE ||
	    h->rec_size != SH5EV_REC_SIZE)
		return sh5_errprintf(rd->errp, "%s: header size %" PRIu32
				     " or record size %" PRIu32 " is wrong",
				     name, h->header_size, h->rec_size);
	if (bs < SH5EV_BLOCK_MIN || bs > SH5EV_BLOCK_MAX || (bs & (bs - 1)))
		return sh5_errprintf(rd->errp, "%s: block size %" PRIu32
				     " is not a power of two in %u..%u", name,
				     bs, SH5EV_BLOCK_MIN, SH5EV_BLOCK_MAX);
	if (copy_text(info->prefix, h->prefix, sizeof(h->prefix)) < 0 ||
	    copy_text(info->lib_version, h->lib_version,
		      sizeof(h->lib_version)) < 0)
		return sh5_errprintf(rd->errp, "%s: header text field not "
				     "terminated", name);
	info->task = h->task;
	info->pid = h->pid;
	info->block_size = bs;
	info->flags = h->version >= 2 ? h->flags : 0;
	info->created_ns = h->created_ns;
	errno = 0;
	return 0;
}

/* ---------------------------------------------------------------- output */

static int flush_events(struct reader *rd)
{
	size_t n = rd->nout;

	rd->nout = 0;
	if (n == 0 || !rd->cb || !rd->cb->events)
		return 0;
	if (rd->cb->events(rd->cb->arg, rd->out, n, rd->errp) < 0)
		return -1;
	return 0;
}

static int deliver_def(struct reader *rd, uint32_t rec)
{
	struct pending *d = &rd->def;
	const struct sh5ev_rec *h = &d->head;
	const struct sh5_evspill_cb *cb = rd->cb;
	uint32_t i, n;
	int rc = 0;

	d->active = 0;
	if (d->drop)
		goto done;
	if (flush_events(rd) < 0)
		return -1;
	if (d->kind == SH5EV_K_DEFREGION) {
		d->name[d->len] = '\0';
		for (i = 0; i < d->len; i++) {
			unsigned char c = (unsigned char)d->name[i];

			if (c < 0x20 || c >= 0x7f)
				d->name[i] = '?';
		}
		if (bit_set(&rd->regions, h->id) < 0)
			goto nomem;
		rd->nregions++;
		if (cb && cb->region)
			rc = cb->region(cb->arg, h->id, h->flags, d->name,
					rd->errp);
	} else {
		n = (uint32_t)h->peer;
		for (i = 0; d->members && i < n; i++) {
			if (d->members[i] < 0) {
				rd->info->rejected++;
				problem(rd, rec, "communicator %" PRIu32
					" member %" PRIu32 " is rank %" PRId32,
					h->id, i, d->members[i]);
				goto done;
			}
		}
		if (bit_set(&rd->comms, h->id) < 0)
			goto nomem;
		rd->ncomms++;
		if (d->members)
			rd->nmembers += n;
		if (cb && cb->comm)
			rc = cb->comm(cb->arg, h->id, h->bytes, h->peer,
				      h->tag, d->members, rd->errp);
	}
done:
	free(d->members);
	d->members = NULL;
	return rc < 0 ? -1 : 0;
nomem:
	free(d->members);
	d->members = NULL;
	errno = ENOMEM;
	return sh5_errprintf(rd->errp, "%s: out of memory", rd->name);
}

/* The pending definition is cut (dropped block, end of file). */
static void cut_def(struct reader *rd, const char *why)
{
	if (!rd->def.active)
		return;
	if (!rd->def.drop) {
		rd->info->rejected++;
		problem(rd, UINT32_MAX, "definition of %s %" PRIu32 " %s",
			rd->def.kind == SH5EV_K_DEFREGION ? "region"
							   : "communicator",
			rd->def.head.id, why);
	}
	free(rd->def.members);
	rd->def.members = NULL;
	rd->def.active = 0;
}

/* ---------------------------------------------------------------- records */

/* A definition record: validate, and start collecting its payload.
 * Returns -1 on a callback's failure or no memory. */
static int start_def(struct reader *rd, const struct sh5ev_rec *r,
		     uint32_t rec)
{
	struct pending *d = &rd->def;
	uint32_t size;

	memset(d, 0, sizeof(*d));
	d->head = *r;
	d->kind = r->kind;
	if (r->kind == SH5EV_K_DEFREGION) {
		if (r->bytes < 1 || r->bytes > SH5EV_NAME_MAX) {
			rd->info->rejected++;
			problem(rd, rec, "region name length %" PRIu64,
				r->bytes);
			return 0;
		}
		d->len = (uint32_t)r->bytes;
		d->want = sh5ev_name_recs(d->len);
		if (r->id >= IDS_MAX || bit_test(&rd->regions, r->id)) {
			d->drop = 1;
			rd->info->rejected++;
			problem(rd, rec, "region %" PRIu32 " %s", r->id,
				r->id >= IDS_MAX ? "id too large"
						 : "defined twice");
		}
	} else {
		size = (uint32_t)r->peer;
		if (r->peer < 1 || r->tag < 0 || r->tag >= r->peer) {
			rd->info->rejected++;
			problem(rd, rec, "communicator size %" PRId32
				" rank %" PRId32, r->peer, r->tag);
			return 0;
		}
		if (r->flags & SH5EV_F_MEMBERS)
			d->want = sh5ev_member_recs(size);
		if (r->id < 2 || r->id >= IDS_MAX ||
		    bit_test(&rd->comms, r->id) ||
		    (d->want && rd->nmembers + size > MEMBERS_MAX)) {
			d->drop = 1;
			rd->info->rejected++;
			problem(rd, rec, "communicator %" PRIu32 ": %s", r->id,
				r->id < 2 || r->id >= IDS_MAX ? "bad local id"
				: bit_test(&rd->comms, r->id)
					? "defined twice"
					: "too many members");
		} else if (d->want) {
			d->members = malloc((size_t)d->want * SH5EV_REC_SIZE);
			if (!d->members) {
				errno = ENOMEM;
				return sh5_errprintf(rd->errp, "%s: out of "
						     "memory", rd->name);
			}
		}
	}
	d->active = 1;
	if (d->want == 0)
		return deliver_def(rd, rec);
	return 0;
}

/* One payload record of the pending definition. */
static int payload(struct reader *rd, const struct sh5ev_rec *r, uint32_t rec)
{
	struct pending *d = &rd->def;
	size_t off = (size_t)d->got * SH5EV_REC_SIZE;

	if (!d->drop) {
		if (d->kind == SH5EV_K_DEFREGION) {
			size_t n = d->len - off < SH5EV_REC_SIZE
					   ? d->len - off : SH5EV_REC_SIZE;

			memcpy(d->name + off, r, n);
		} else {
			memcpy((unsigned char *)d->members + off, r,
			       SH5EV_REC_SIZE);
		}
	}
	if (++d->got == d->want)
		return deliver_def(rd, rec);
	return 0;
}

static int comm_known(const struct reader *rd, uint32_t id)
{
	return id < 2 || bit_test(&rd->comms, id);
}

/* An event record: NULL when valid, else why not. */
static const char *check_event(struct reader *rd, const struct sh5ev_rec *r)
{
	switch (r->kind) {
	case SH5EV_K_ENTER:
	case SH5EV_K_EXIT:
		if (!bit_test(&rd->regions, r->id))
			return "undefined region";
		break;
	case SH5EV_K_SEND:
	case SH5EV_K_RECV:
		if (!comm_known(rd, r->id))
			return "undefined communicator";
		if (r->peer < 0)
			return "negative peer rank";
		break;
	case SH5EV_K_CBEGIN:
	case SH5EV_K_CEND:
		if (r->op == SH5EV_OP_NONE || r->op >= SH5EV_OP_COUNT)
			return "bad collective operation";
		if (!comm_known(rd, r->id))
			return "undefined communicator";
		if (r->peer < -1)
			return "bad root rank";
		break;
	case SH5EV_K_RANK:
		if (r->id < 1 || r->peer < 0 || (uint32_t)r->peer >= r->id)
			return "bad world rank or size";
		break;
	default:
		break;
	}
	if (rd->have_time && r->time_ns < rd->last_ns)
		return "time goes backwards";
	return NULL;
}

static int record(struct reader *rd, const struct sh5ev_rec *r, uint32_t rec)
{
	const char *why;

	if (r->kind == SH5EV_K_NONE || r->kind >= SH5EV_K_COUNT) {
		rd->info->rejected++;
		problem(rd, rec, "unknown kind %u", r->kind);
		return 0;
	}
	if (r->flags & ~SH5EV_F_ALL) {
		rd->info->rejected++;
		problem(rd, rec, "unknown flags 0x%x", r->flags);
		return 0;
	}
	if (r->kind == SH5EV_K_DEFREGION || r->kind == SH5EV_K_DEFCOMM)
		return start_def(rd, r, rec);
	why = check_event(rd, r);
	if (why) {
		rd->info->rejected++;
		problem(rd, rec, "%s", why);
		return 0;
	}
	rd->have_time = 1;
	rd->last_ns = r->time_ns;
	if (r->kind == SH5EV_K_LOST)
		rd->info->lost = r->bytes > UINT64_MAX - rd->info->lost
					 ? UINT64_MAX
					 : rd->info->lost + r->bytes;
	rd->info->events++;
	rd->out[rd->nout++] = *r;
	return 0;
}

/* ---------------------------------------------------------------- blocks */

/* Check a block; -1 (counted) when it is dropped. */
static int check_block(struct reader *rd, const unsigned char *blk,
		       uint32_t cap)
{
	const struct sh5ev_block_header *bh = (const void *)blk;
	const char *why = NULL;

	if (bh->magic != SH5EV_BLOCK_MAGIC)
		why = "bad block magic";
	else if (bh->seq != rd->block)
		why = "out of sequence";
	else if (bh->nrec > cap || bh->cont > bh->nrec)
		why = "bad record count";
	else if (bh->checksum !=
		 sh5ev_checksum(blk + SH5EV_BLOCK_HEADER_SIZE,
				(size_t)bh->nrec * SH5EV_REC_SIZE))
		why = "checksum mismatch";
	if (!why)
		return 0;
	rd->info->blocks_bad++;
	problem(rd, UINT32_MAX, "%s, block dropped", why);
	cut_def(rd, "cut by a dropped block");
	return -1;
}

static int read_block(struct reader *rd, const unsigned char *blk)
{
	const struct sh5ev_block_header *bh = (const void *)blk;
	const struct sh5ev_rec *recs =
		(const void *)(blk + SH5EV_BLOCK_HEADER_SIZE);
	struct pending *d = &rd->def;
	uint32_t i = 0;

	/* leading records continuing an earlier block's definition */
	if (d->active && bh->cont != (d->want - d->got < bh->nrec
					      ? d->want - d->got
					      : bh->nrec))
		cut_def(rd, "not continued");
	if (!d->active)
		i = bh->cont;
	for (; i < bh->nrec; i++) {
		struct sh5ev_rec r;

		memcpy(&r, &recs[i], sizeof(r));
		if (d->active ? payload(rd, &r, i) < 0 : record(rd, &r, i) < 0)
			return -1;
	}
	return flush_events(rd);
}

static int read_blocks(int fd, struct reader *rd, uint64_t limit)
{
	struct sh5_evspill_info *info = rd->info;
	uint32_t bs = info->block_size;
	uint64_t nblocks, b;
	unsigned char *blk = NULL;
	ssize_t got;

	nblocks = (limit - SH5EV_HEADER_SIZE) / bs;
	if (nblocks > UINT32_MAX)
		nblocks = UINT32_MAX;
	blk = malloc(bs);
	rd->out = malloc((size_t)sh5ev_block_capacity(bs) * SH5EV_REC_SIZE);
	if (!blk || !rd->out) {
		errno = ENOMEM;
		sh5_errprintf(rd->errp, "%s: out of memory", rd->name);
		goto error;
	}
	for (b = 0; b < nblocks; b++) {
		rd->block = (uint32_t)b;
		got = read_full(fd, blk, bs);
		if (got < 0) {
			sh5_errprintf(rd->errp, "%s: block %" PRIu64 ": %s",
				      rd->name, b, strerror(errno));
			goto error;
		}
		if ((size_t)got < bs) {	/* shrank since fstat() */
			info->torn_tail = 1;
			break;
		}
		if ((info->flags & SH5EV_HF_AHEAD) &&
		    ((const struct sh5ev_block_header *)blk)->magic == 0) {
			/* never finished: the end of the data (the space a
			 * killed task had extended its file by) */
			info->unwritten = info->file_bytes -
					  SH5EV_HEADER_SIZE - b * bs;
			info->truncated = 0;
			break;
		}
		if (check_block(rd, blk, sh5ev_block_capacity(bs)) < 0)
			continue;
		info->blocks++;
		if (read_block(rd, blk) < 0)
			goto error;
	}
	rd->block = (uint32_t)b;
	cut_def(rd, info->truncated ? "cut at the size limit"
				    : "cut at the end of the file");
	free(blk);
	return 0;
error:
	free(blk);
	return -1;
}

int sh5_evspill_read(int dirfd, const char *name, uid_t uid,
		     uint64_t max_bytes, const struct sh5_evspill_cb *cb,
		     struct sh5_evspill_info *info, struct sh5_error *errp)
{
	struct sh5_evspill_info dummy;
	struct sh5ev_file_header h;
	struct reader rd;
	struct stat st;
	uint64_t limit, rest;
	ssize_t got;
	int fd, rc = -1;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	memset(&rd, 0, sizeof(rd));
	rd.name = name;
	rd.cb = cb;
	rd.info = info;
	rd.errp = errp;
	fd = open_checked(dirfd, name, uid, &st, errp);
	if (fd < 0)
		return -1;
	info->file_bytes = (uint64_t)st.st_size;
	got = read_full(fd, &h, sizeof(h));
	if (got < 0) {
		sh5_errprintf(errp, "%s: %s", name, strerror(errno));
		goto out;
	}
	if (check_header(&rd, &h, got) < 0)
		goto out;
	limit = info->file_bytes;
	if (max_bytes && max_bytes < limit) {
		limit = max_bytes < SH5EV_HEADER_SIZE ? SH5EV_HEADER_SIZE
						      : max_bytes;
		info->truncated = 1;
	}
	rest = (info->file_bytes - SH5EV_HEADER_SIZE) % info->block_size;
	if (rest && !info->truncated)
		info->torn_tail = 1;
	if (read_blocks(fd, &rd, limit) < 0)
		goto out;
	if (info->unwritten && !info->first_problem[0])
		snprintf(info->first_problem, sizeof(info->first_problem),
			 "unfinished block %" PRIu32 " and %" PRIu64 " bytes "
			 "after its start dropped (task killed)", rd.block,
			 info->unwritten);
	if (info->torn_tail && !info->first_problem[0])
		snprintf(info->first_problem, sizeof(info->first_problem),
			 "torn block at the end of the file dropped");
	if (info->truncated && !info->first_problem[0])
		snprintf(info->first_problem, sizeof(info->first_problem),
			 "stopped at %" PRIu64 " bytes of %" PRIu64, limit,
			 info->file_bytes);
	rc = 0;
out:
	if (rc < 0 && errno == 0)
		errno = EIO;
	free(rd.out);
	free(rd.def.members);
	free(rd.regions.bits);
	free(rd.comms.bits);
	{
		int e = errno;

		close(fd);
		errno = e;
	}
	return rc;
}

/* Decimal digits of a uint32 without leading zeros, then `end`. */
static const char *parse_u32(const char *s, uint32_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		x = x * 10 + (uint64_t)(*p - '0');
		if (x > UINT32_MAX)
			return NULL;
	}
	*v = (uint32_t)x;
	return p;
}

int sh5_evspill_name_parse(const char *name, const char *prefix,
			   uint32_t *task, uint32_t *pid)
{
	size_t plen = strlen(prefix);
	uint32_t t, p;
	const char *s;

	if (strncmp(name, prefix, plen) != 0 || name[plen] != '.')
		return -1;
	s = parse_u32(name + plen + 1, &t);
	if (!s || *s != '.')
		return -1;
	s = parse_u32(s + 1, &p);
	if (!s || strcmp(s, SH5EV_SUFFIX) != 0)
		return -1;
	*task = t;
	*pid = p;
	return 0;
}
