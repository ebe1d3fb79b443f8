/*
 * prefault.h - memory about to be written in full (the event arrays of
 * `sh5merge sync`, filled once, in order): its pages faulted in by one
 * call instead of one page fault per 4 KiB page as each is first
 * written.
 */
#ifndef SH5_PREFAULT_H
#define SH5_PREFAULT_H

#include <stddef.h>

/* Make the pages of [p, p + n) present and writable
 * (madvise(MADV_POPULATE_WRITE), Linux 5.14 and later); their contents
 * are not changed.  Where the kernel has no such call, or refuses,
 * nothing happens: the pages fault in as they are written. */
void sh5_prefault(void *p, size_t n);

#endif /* SH5_PREFAULT_H */
