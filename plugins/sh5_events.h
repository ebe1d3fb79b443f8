/*
 * sh5_events.h - the plugin's application events: the tasks' spill
 * files absorbed.
 */
#ifndef SH5_PLUGIN_EVENTS_H
#define SH5_PLUGIN_EVENTS_H


/* Tell the tasks of job where to spill their events (fname: the
 * node-step file's name). */
void events_start(stepd_step_rec_t *job, const char *fname);
/* Absorb the spill files into the node-step file (before it closes). */
void events_absorb(void);
/* Free what events_start() kept. */
void events_fini(void);

#endif
