/* cli_util.c - see cli_util.h */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"

void cli_error(const char *file, const char *fmt, ...)
{
	va_list ap;

	fputs("sh5merge: ", stderr);
	if (file)
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn(const char *file, const char *fmt, ...)
{
	va_list ap;

	if (sh5merge_quiet)
		return;
	fputs("sh5merge: warning: ", stderr);
	if (file)
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	if (e - s >= 2 && ((s[0] == '"' && e[-1] == '"') ||
			   (s[0] == '\'' && e[-1] == '\''))) {
		e[-1] = '\0';
		s++;
	}
	return s;
}

int cli_profile_dir(char *buf, size_t len, char *conf_path, size_t clen)
{
	const char *sc = getenv("SLURM_CONF");
	char sh5[4096] = "", hdf5[4096] = "", line[4096];
	FILE *f;

	if (sc && sc[0] && strrchr(sc, '/')) {
		int dl = (int)(strrchr(sc, '/') - sc);

		snprintf(conf_path, clen, "%.*s/acct_gather.conf", dl, sc);
	} else {
		snprintf(conf_path, clen, "/etc/slurm/acct_gather.conf");
	}
	if (!(f = fopen(conf_path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *eq, *key, *val;

		if (hash)
			*hash = '\0';
		if (!(eq = strchr(line, '=')))
			continue;
		*eq = '\0';
		key = trim(line);
		val = trim(eq + 1);
		if (!strcasecmp(key, "ProfileSH5Dir"))
			snprintf(sh5, sizeof(sh5), "%s", val);
		else if (!strcasecmp(key, "ProfileHDF5Dir"))
			snprintf(hdf5, sizeof(hdf5), "%s", val);
	}
	fclose(f);
	if (sh5[0])
		snprintf(buf, len, "%s", sh5);
	else if (hdf5[0])
		snprintf(buf, len, "%s", hdf5);
	else
		return -1;
	return 0;
}

void cli_progress(const char *what, size_t done, size_t total)
{
	static struct timespec start;
	static int started, shown;
	struct timespec now;
	double el;

	if (sh5merge_quiet || !isatty(2))
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!started) {
		start = now;
		started = 1;
	}
	el = (double)(now.tv_sec - start.tv_sec) +
	     (double)(now.tv_nsec - start.tv_nsec) / 1e9;
	if (el < 1.0 && !shown)
		return;
	shown = 1;
	fprintf(stderr, "\r%s: %zu/%zu (%.0f%%) %.0fs ", what, done, total,
		total ? 100.0 * (double)done / (double)total : 100.0, el);
	if (done >= total) {
		fputc('\n', stderr);
		shown = 0;
	}
}
