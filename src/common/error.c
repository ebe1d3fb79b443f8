/* error.c - see error.h */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "common/error.h"

/*
 * Copy a formatted text into errp->text.  A text too long for it (a path
 * of thousands of bytes) keeps its head and its tail around "...": the
 * reason, at the end, is never cut away.
 */
static void fit(struct sh5_error *errp, const char *t, size_t len)
{
	const size_t cap = sizeof(errp->text), head = 60;

	if (len < cap) {
		memcpy(errp->text, t, len + 1);
		return;
	}
	memcpy(errp->text, t, head);
	memcpy(errp->text + head, "...", 3);
	memcpy(errp->text + head + 3, t + len - (cap - head - 4),
	       cap - head - 4);
	errp->text[cap - 1] = '\0';
}

/* vsnprintf into a buffer of its own (errp->text may be an argument). */
static void vfit(struct sh5_error *errp, const char *suffix, const char *fmt,
		 va_list ap)
{
	char small[1024], *t = small;
	va_list ap2;
	int n;
	size_t sl = suffix ? strlen(suffix) : 0;

	va_copy(ap2, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n < 0) {
		va_end(ap2);
		snprintf(errp->text, sizeof(errp->text), "%s", fmt);
		return;
	}
	if ((size_t)n + sl + 1 > sizeof(small)) {
		t = malloc((size_t)n + sl + 1);
		if (t)
			vsnprintf(t, (size_t)n + 1, fmt, ap2);
		else {
			t = small;
			n = (int)strlen(small);
			sl = 0;
		}
	}
	va_end(ap2);
	if (sl)
		memcpy(t + n, suffix, sl + 1);
	fit(errp, t, (size_t)n + sl);
	if (t != small)
		free(t);
}

int sh5_errprintf(struct sh5_error *errp, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (errp) {
		va_start(ap, fmt);
		vfit(errp, NULL, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}

struct walk_state {
	char msg[160];
};

/* Keep the innermost (first) description with a message. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
	struct walk_state *st = data;

	if (n == 0 && e->desc && e->desc[0])
		snprintf(st->msg, sizeof(st->msg), "%s", e->desc);
	return 0;
}

int sh5_errprintf_h5(struct sh5_error *errp, const char *fmt, ...)
{
	int saved = errno ? errno : EIO;
	struct walk_state st = { "" };
	va_list ap;

	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &st);
	if (errp) {
		char suffix[sizeof(st.msg) + 3] = "";

		if (st.msg[0])
			snprintf(suffix, sizeof(suffix), ": %s", st.msg);
		va_start(ap, fmt);
		vfit(errp, suffix, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}

void sh5_error_h5_silence(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
