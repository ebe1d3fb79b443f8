/* discover.c - the node-step files of a job in a directory, in merge
 * order (see merge.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge/merge.h"
#include "profile/reader.h"
#include "common/sort.h"

static int step_rank(const char *s)
{
	static const char *const special[] = { "batch", "extern",
					       "interactive", "pending" };
	size_t i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, special[i]))
			return (int)i;
	if (s[0] && strspn(s, "0123456789") == strlen(s))
		return 4;
	return 5;
}

int sh5_step_cmp(const char *a, const char *b)
{
	int ra = step_rank(a), rb = step_rank(b);

	if (ra != rb)
		return ra - rb;
	if (ra == 4) {
		unsigned long long x = strtoull(a, NULL, 10),
				   y = strtoull(b, NULL, 10);

		return x < y ? -1 : x > y;
	}
	return strcmp(a, b);
}

/* Node names: natural order (n2 before n10). */
int sh5_natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			unsigned long long x = strtoull(a, (char **)&a, 10);
			unsigned long long y = strtoull(b, (char **)&b, 10);

			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

static int input_cmp(const void *pa, const void *pb)
{
	const struct sh5_input *a = pa, *b = pb;
	int c = sh5_step_cmp(a->step, b->step);

	return c ? c : sh5_natural_cmp(a->node, b->node);
}

void sh5_inputs_free(struct sh5_input *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

/* Parse <job>_<step>_<node>.h5; 0 if it matches job. */
static int parse_name(const char *name, uint32_t job, struct sh5_input *in)
{
	const char *p = name, *u1, *u2;
	size_t len = strlen(name), sl, nl;
	char *end;
	unsigned long long j;

	if (len < 8 || strcmp(name + len - 3, ".h5") ||
	    !isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	j = strtoull(p, &end, 10);
	if (errno || *end != '_' || j != job)
		return -1;
	u1 = end;
	if (!(u2 = strchr(u1 + 1, '_')))
		return -1;
	sl = (size_t)(u2 - u1 - 1);
	nl = (size_t)(name + len - 3 - u2 - 1);
	if (!sl || sl >= sizeof(in->step_id) || !nl || nl >= sizeof(in->node))
		return -1;
	in->job = (uint32_t)j;
	memcpy(in->step_id, u1 + 1, sl);
	in->step_id[sl] = '\0';
	memcpy(in->node, u2 + 1, nl);
	in->node[nl] = '\0';
	sh5_step_name(in->step_id, in->step, sizeof(in->step));
	return 0;
}

int sh5_merge_discover(const char *dir, uint32_t job,
		       const char *const *steps, size_t nsteps,
		       struct sh5_input **out, size_t *n,
		       struct sh5_error *errp)
{
	/* The user's directory itself, not what a symlink there names
	 * (the plugin never writes through one; in a profile directory
	 * others can write, one may have been put in its place). */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = NULL;
	struct dirent *de;
	struct sh5_input *v = NULL, in;
	struct stat lst;
	size_t cnt = 0, cap = 0, i;

	*out = NULL;
	*n = 0;
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
	    lstat(dir, &lst) == 0 &&
	    S_ISLNK(lst.st_mode)) {
		errno = ELOOP;
		return sh5_errprintf(errp, "%s: is a symbolic link (not "
				     "followed)", dir);
	}
	if (fd < 0 || !(d = fdopendir(fd))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		errno = e;
		return sh5_errprintf(errp, "%s: %s", dir, strerror(e));
	}
	while ((de = readdir(d))) {
		int want = nsteps == 0;

		if (de->d_name[0] == '.')
			continue;
		memset(&in, 0, sizeof(in));
		if (parse_name(de->d_name, job, &in) < 0)
			continue;
		for (i = 0; i < nsteps && !want; i++) {
			char b[32];

			want = !strcmp(sh5_step_name(steps[i], b, sizeof(b)),
				       in.step);
		}
		if (!want)
			continue;
		if (cnt == cap) {
			struct sh5_input *nv;

			cap = cap ? 2 * cap : 64;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				goto oom;
			v = nv;
		}
		if (!(in.path = malloc(strlen(dir) + strlen(de->d_name) + 2)))
			goto oom;
		snprintf(in.path, strlen(dir) + strlen(de->d_name) + 2,
			 "%s/%s", dir, de->d_name);
		in.file = in.path + strlen(dir) + 1;
		v[cnt++] = in;
	}
	closedir(d);
	if (cnt > 1)
		sh5_qsort(v, cnt, sizeof(*v), input_cmp);
	*out = v;
	*n = cnt;
	return 0;
oom:
	closedir(d);
	sh5_inputs_free(v, cnt);
	errno = ENOMEM;
	return sh5_errprintf(errp, "%s: out of memory", dir);
}
