/* yajl.c - see yajl.h */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "common/yajl.h"

static struct sh5_yajl yl;
static int yl_ok;
static char yl_why[256];
static pthread_once_t yl_once = PTHREAD_ONCE_INIT;

/* Look name up in h into *fp; 0, or -1 with yl_why set. */
static int sym(void *h, const char *name, void *fp)
{
	void *p = dlsym(h, name);

	if (!p) {
		snprintf(yl_why, sizeof(yl_why), "libyajl.so.2: no %s", name);
		return -1;
	}
	*(void **)fp = p;
	return 0;
}

static void yl_init(void)
{
	const char *e;
	void *h = dlopen("libyajl.so.2", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		e = dlerror();
		snprintf(yl_why, sizeof(yl_why), "%s",
			 e ? e : "libyajl.so.2: cannot be loaded");
		return;
	}
	if (sym(h, "yajl_gen_alloc", &yl.alloc) < 0 ||
	    sym(h, "yajl_gen_config", &yl.config) < 0 ||
	    sym(h, "yajl_gen_free", &yl.free) < 0 ||
	    sym(h, "yajl_gen_map_open", &yl.map_open) < 0 ||
	    sym(h, "yajl_gen_map_close", &yl.map_close) < 0 ||
	    sym(h, "yajl_gen_array_open", &yl.array_open) < 0 ||
	    sym(h, "yajl_gen_array_close", &yl.array_close) < 0 ||
	    sym(h, "yajl_gen_null", &yl.null) < 0 ||
	    sym(h, "yajl_gen_bool", &yl.bool_) < 0 ||
	    sym(h, "yajl_gen_number", &yl.number) < 0 ||
	    sym(h, "yajl_gen_string", &yl.string) < 0) {
		dlclose(h);
		return;
	}
	yl_ok = 1;
}

const struct sh5_yajl *sh5_yajl(const char **why)
{
	pthread_once(&yl_once, yl_init);
	if (why)
		*why = yl_ok ? NULL : yl_why;
	return yl_ok ? &yl : NULL;
}
