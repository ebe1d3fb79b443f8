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

/*
 * Every attribute of obj read whole, as a copy of it would read it, in one
 * pass over the object's attributes; those named in want[] are also
 * returned, as by the helpers above: an integer into *iv, or a string into
 * sv (svlen > 0; "" when absent), with found set to 1 when it was read.
 * Returns how many attributes cannot be read (a copy leaves those out).
 */
struct sh5_attr_want {
	const char *name;
	long long *iv;         /* an integer attribute, or NULL */
	char *sv;              /* a string attribute: a buffer of svlen */
	size_t svlen;
	int found;
};
unsigned sh5_attrs_read(hid_t obj, struct sh5_attr_want *want,
			size_t nwant);

/* Readable step name for a step id from a file name: "batch", "extern",
 * "interactive", "pending" for Slurm's special numbers, else the id. */
const char *sh5_step_name(const char *id, char *buf, size_t len);

/* Rows of a one-dimensional dataset (0 if it is not one). */
uint64_t sh5_dset_rows(hid_t d);

#endif /* SH5_H5CHECK_H */
