/*
 * sh5ev.c - the public event API (sh5ev.h) on top of the event log.
 *
 * The log is opened at the first call that needs it (sh5_ev_region(),
 * sh5_ev_phase(), sh5_ev_object()); enter and exit take an id that only
 * sh5_ev_region() hands out, so the log is open by then.
 */
#include "config.h"

#include "events/evlog.h"
#include "events/sh5ev.h"

int sh5_ev_region(const char *name)
{
	sh5_evlog_open();
	return sh5_evlog_region(name, 0);
}

void sh5_ev_enter(int region)
{
	if (region < 0)
		return;
	sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)region, 0, 0, 0, 0);
}

void sh5_ev_exit(int region)
{
	if (region < 0)
		return;
	sh5_evlog_event(SH5EV_K_EXIT, 0, 0, (uint32_t)region, 0, 0, 0, 0);
}

void sh5_ev_phase(void)
{
	sh5_evlog_open();
	sh5_evlog_phase(-1, 0);
}

void sh5_ev_object(uint64_t id, double load_seconds)
{
	struct sh5ev_rec r;

	sh5_evlog_open();
	if (!sh5_evlog_on()) {
		/* counted as lost when another thread records */
		sh5_evlog_event(SH5EV_K_OBJECT, 0, 0, 0, 0, 0, id, 0);
		return;
	}
	r.time_ns = sh5_evlog_now();
	r.kind = SH5EV_K_OBJECT;
	r.op = 0;
	r.flags = 0;
	r.id = sh5_evlog_current_phase();
	r.peer = 0;
	r.tag = 0;
	r.bytes = id;
	r.value = load_seconds;
	sh5_evlog_put(&r);
}
