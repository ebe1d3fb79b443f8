/* stamp.c - an input that changes while the merge reads it (a writer
 * still at work, a clean-up, a replaced file) is told apart from a
 * damaged one: each input's identity, size and modification time are
 * noted before any is read and compared when a reader dies and before
 * the job file is named (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge/merge_int.h"

int mg_stamp_inputs(struct mstate *m)
{
	struct stat sb;
	size_t i;

	if (!(m->stamp = calloc(m->nin ? m->nin : 1, sizeof(*m->stamp))))
		return -1;
	m->dir_uid = stat(m->o->dir, &sb) == 0 ? (long)sb.st_uid : -1;
	for (i = 0; i < m->nin; i++) {
		struct mg_stamp *s = &m->stamp[i];

		if (lstat(m->in[i].path, &sb) < 0)
			continue;
		s->dev = sb.st_dev;
		s->ino = sb.st_ino;
		s->size = sb.st_size;
		s->mtime = sb.st_mtim;
		s->ctime = sb.st_ctim;
		s->ok = 1;
	}
	return 0;
}

int mg_changed(const struct mstate *m, size_t i, char *why, size_t len)
{
	const struct mg_stamp *s;
	struct stat sb;
	intmax_t was, now;

	if (!m->stamp || i >= m->nin || !m->stamp[i].ok)
		return 0;
	s = &m->stamp[i];
	was = (intmax_t)s->size;
	if (lstat(m->in[i].path, &sb) < 0) {
		snprintf(why, len, "changed while being read (%s: %jd bytes "
			 "when the merge began)", errno == ENOENT ? "removed" :
			 strerror(errno), was);
		return 1;
	}
	now = (intmax_t)sb.st_size;
	if (sb.st_dev != s->dev || sb.st_ino != s->ino)
		snprintf(why, len, "changed while being read (replaced by "
			 "another file: %jd bytes when the merge began, %jd "
			 "now)", was, now);
	else if (now < was)
		snprintf(why, len, "changed while being read (cut short: %jd "
			 "bytes when the merge began, %jd now)", was, now);
	else if (now > was)
		snprintf(why, len, "changed while being read (grew: %jd bytes "
			 "when the merge began, %jd now)", was, now);
	else if (sb.st_mtim.tv_sec != s->mtime.tv_sec ||
		 sb.st_mtim.tv_nsec != s->mtime.tv_nsec)
		snprintf(why, len, "changed while being read (rewritten: %jd "
			 "bytes, modified after the merge began)", was);
	else if (sb.st_ctim.tv_sec != s->ctime.tv_sec ||
		 sb.st_ctim.tv_nsec != s->ctime.tv_nsec)
		/* Its modification time put back (touch -r), or its mode,
		 * owner or links changed: what was read may not be what it
		 * holds. */
		snprintf(why, len, "changed while being read (its inode "
			 "changed after the merge began: %jd bytes, the same "
			 "modification time)", was);
	else
		return 0;
	return 1;
}

int mg_changed_path(const struct mstate *m, const char *file)
{
	char why[160];
	size_t i;

	for (i = 0; file && m->stamp && i < m->nin; i++)
		if (!strcmp(m->in[i].path, file))
			return mg_changed(m, i, why, sizeof(why));
	return 0;
}

int mg_any_changed(const struct mstate *m)
{
	char why[160];
	size_t i;

	for (i = 0; i < m->nin; i++)
		if (mg_changed(m, i, why, sizeof(why)))
			return 1;
	return 0;
}

void mg_test_hold(const char *path)
{
	const char *v = getenv("SH5MERGE_TEST_HOLD");
	const char *base = strrchr(path, '/');
	const char *colon;
	char f[4096];
	FILE *fp;
	int k;

	if (!v || !(colon = strchr(v, ':')))
		return;
	base = base ? base + 1 : path;
	if (strlen(base) != (size_t)(colon - v) ||
	    strncmp(base, v, (size_t)(colon - v)))
		return;
	snprintf(f, sizeof(f), "%s/held", colon + 1);
	if ((fp = fopen(f, "w")))
		fclose(fp);
	snprintf(f, sizeof(f), "%s/go", colon + 1);
	for (k = 0; k < 3000 && access(f, F_OK) < 0; k++)
		usleep(10000);
}
