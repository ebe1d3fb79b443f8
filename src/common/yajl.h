/* yajl.h - the functions of yajl's generator that json.c uses, looked up
 * at run time.
 *
 * libyajl (Debian libyajl2) is opened on the first JSON writer, not linked
 * into the slurmstepd plugin: a step without JSON streaming then does not
 * map it (40 KiB of resident memory in every slurmstepd).  sh5merge links
 * it as before; the lookup then finds the library already loaded.
 */
#ifndef SH5_COMMON_YAJL_H
#define SH5_COMMON_YAJL_H

#include <stddef.h>

#include <yajl/yajl_gen.h>

struct sh5_yajl {
	yajl_gen (*alloc)(const yajl_alloc_funcs *afs);
	int (*config)(yajl_gen g, yajl_gen_option opt, ...);
	void (*free)(yajl_gen g);
	yajl_gen_status (*map_open)(yajl_gen g);
	yajl_gen_status (*map_close)(yajl_gen g);
	yajl_gen_status (*array_open)(yajl_gen g);
	yajl_gen_status (*array_close)(yajl_gen g);
	yajl_gen_status (*null)(yajl_gen g);
	yajl_gen_status (*bool_)(yajl_gen g, int b);
	yajl_gen_status (*number)(yajl_gen g, const char *s, size_t len);
	yajl_gen_status (*string)(yajl_gen g, const unsigned char *s,
				  size_t len);
};

/* yajl's functions from libyajl.so.2, looked up on the first call (thread
 * safe); NULL when the library or one of them cannot be found, the
 * loader's reason then in why (static text, may be NULL).  Lives as long
 * as the process. */
const struct sh5_yajl *sh5_yajl(const char **why);

#endif
