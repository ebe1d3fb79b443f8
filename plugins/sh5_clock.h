/*
 * sh5_clock.h - the plugin's clock-offset thread (ProfileSH5Clock*).
 */
#ifndef SH5_PLUGIN_CLOCK_H
#define SH5_PLUGIN_CLOCK_H

#include <stdatomic.h>

#include "sh5_worker.h"

/* Measurements at step start, every ProfileSH5ClockInterval and at step
 * end, into the writer's ClockOffsets; failures logged once per step
 * (logged_clock, reset at step start). */
extern atomic_int logged_clock;
extern struct worker clock_worker;

#endif
