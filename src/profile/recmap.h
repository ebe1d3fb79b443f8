/*
 * recmap.h - member-by-member record copies between compound layouts.
 */
#ifndef SH5_RECMAP_H
#define SH5_RECMAP_H

#include <stddef.h>
#include <hdf5.h>

/*
 * Copy records between two compound layouts member by member (by name).
 * HDF5's compound conversion costs about a microsecond per record; a map
 * built once per series copies 8-byte members directly.  Built only when
 * every member of src that dst also has is 8 bytes wide and of the same
 * class (integer or float) in both; else NULL (use HDF5's conversion).
 * Members of dst that src lacks are zeroed.
 */
struct sh5_recmap;
struct sh5_recmap *sh5_recmap_build(hid_t src, hid_t dst);
void sh5_recmap_apply(const struct sh5_recmap *m, const void *src, void *dst,
		      size_t n);
void sh5_recmap_free(struct sh5_recmap *m);
/* A copy of m (NULL out of memory). */
struct sh5_recmap *sh5_recmap_dup(const struct sh5_recmap *m);
/* Does m copy a source record whole, its first at bytes to the same
 * place and the rest gap bytes further (nothing else)? */
int sh5_recmap_is_shift(const struct sh5_recmap *m, size_t at, size_t gap);

#endif /* SH5_RECMAP_H */
