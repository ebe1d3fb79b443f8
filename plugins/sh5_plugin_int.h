/*
 * sh5_plugin_int.h - the step state the plugin's files share (defined in
 * acct_gather_profile_sh5.c).
 */
#ifndef SH5_PLUGIN_INT_H
#define SH5_PLUGIN_INT_H

#include <pthread.h>

extern const char plugin_name[];
extern const char plugin_type[];

/*
 * Step state.  The rwlock guards the writer pointer: sample paths take it
 * shared, node_step_end exclusive to detach the writer before closing it.
 */
extern pthread_rwlock_t state_lock;
extern struct sh5_writer *writer;
extern struct sh5_stream *stream;  /* also guarded by state_lock */
extern char file_path[4096];

#endif
