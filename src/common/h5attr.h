/*
 * h5attr.h - scalar HDF5 attributes, written the one way sh5 writes them.
 *
 * Each function replaces an existing attribute of the same name.  They
 * return 0, or -1 with the HDF5 error stack set (callers that report use
 * sh5_errprintf_h5()).  No handle is kept.
 */
#ifndef SH5_H5ATTR_H
#define SH5_H5ATTR_H

#include <stdint.h>
#include <hdf5.h>

/* A number: val in memory type mtype, stored as file type ftype. */
int sh5_h5attr_put(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
		   const void *val);

/* Like sh5_h5attr_put on an object known to lack the attribute (no
 * lookup, which HDF5's create repeats anyway): a freshly created one.
 * scalar: a scalar dataspace to use (several attributes can share one),
 * or -1. */
int sh5_h5attr_add(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
		   const void *val, hid_t scalar);

/* The type of a fixed-length, NUL-terminated string val (close it). */
hid_t sh5_h5attr_str_type(const char *val);

/* A fixed-length, NUL-terminated string (as Slurm's stock plugin writes
 * them, so sh5util reads them). */
int sh5_h5attr_put_str(hid_t obj, const char *name, const char *val);

/* Shorthands: int32, uint32, int64, float64 little-endian. */
int sh5_h5attr_put_int(hid_t obj, const char *name, int val);
int sh5_h5attr_put_u32(hid_t obj, const char *name, uint32_t val);
int sh5_h5attr_put_i64(hid_t obj, const char *name, int64_t val);
int sh5_h5attr_put_u64(hid_t obj, const char *name, uint64_t val);
int sh5_h5attr_put_f64(hid_t obj, const char *name, double val);

#endif /* SH5_H5ATTR_H */
