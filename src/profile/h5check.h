/*
 * h5check.h - sanity of datatypes a file declares, attribute helpers,
 * step names.
 */
#ifndef SH5_H5CHECK_H
#define SH5_H5CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>

/*
 * Is t a datatype HDF5 can convert without reading out of bounds?  HDF5
 * 1.10 trusts the sizes, precisions and offsets a file declares; a damaged
 * type message makes its conversions read past their buffers.  Checks
 * them, recursively.  1 sane, 0 not.
 */
int sh5_type_sane(hid_t t);

/* The attribute's type and space are sane: 1, else 0. */
int sh5_attr_sane(hid_t a);

/* Attribute helpers: 0 or -1 (absent, unreadable or of an insane type). */
int sh5_attr_get_int(hid_t obj, const char *name, long long *out);
int sh5_attr_get_str(hid_t obj, const char *name, char *buf, size_t len);

/* Readable step name for a step id from a file name: "batch", "extern",
 * "interactive", "pending" for Slurm's special numbers, else the id. */
const char *sh5_step_name(const char *id, char *buf, size_t len);

/* Rows of a one-dimensional dataset (0 if it is not one). */
uint64_t sh5_dset_rows(hid_t d);

#endif /* SH5_H5CHECK_H */
