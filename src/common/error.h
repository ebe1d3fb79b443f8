/*
 * error.h - error context for the sh5 library.
 *
 * Library functions never print.  On failure they return -1 (or NULL),
 * leave errno set, and, when given a non-NULL struct sh5_error, write a
 * one-line reason into it that names the object (file, dataset, field)
 * concerned.  The caller decides what to print and where.
 */
#ifndef SH5_ERROR_H
#define SH5_ERROR_H

#include <stddef.h>

struct sh5_error {
	char text[256];
};

/*
 * Format a reason into errp (which may be NULL).  errno is preserved.
 * Returns -1 so callers can write "return sh5_errprintf(errp, ...);".
 */
int sh5_errprintf(struct sh5_error *errp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Like sh5_errprintf(), then append ": " and the innermost message of
 * the current HDF5 error stack (if any).  Call it before any other HDF5
 * call: the next call clears the stack.  errno is preserved (set to EIO
 * when it was 0).  Returns -1.
 */
int sh5_errprintf_h5(struct sh5_error *errp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Turn off HDF5's automatic printing of error stacks to stderr for the
 * calling thread (the library reports errors through sh5_error).
 */
void sh5_error_h5_silence(void);

#endif /* SH5_ERROR_H */
