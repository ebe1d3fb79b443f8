/* error.c - see error.h */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hdf5.h>

#include "error.h"

int sh5_errprintf(struct sh5_error *errp, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (errp) {
		va_start(ap, fmt);
		vsnprintf(errp->text, sizeof(errp->text), fmt, ap);
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
	size_t len;

	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &st);
	if (errp) {
		va_start(ap, fmt);
		vsnprintf(errp->text, sizeof(errp->text), fmt, ap);
		va_end(ap);
		len = strlen(errp->text);
		if (st.msg[0] && len < sizeof(errp->text) - 3)
			snprintf(errp->text + len, sizeof(errp->text) - len,
				 ": %s", st.msg);
	}
	errno = saved;
	return -1;
}

void sh5_error_h5_silence(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
