/*
 * sh5_clock.c - the plugin's clock-offset thread: NTP measurements into
 * the file.
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif

#include "common/error.h"
#include "profile/ntp.h"
#include "profile/writer.h"
#include "sh5_clock.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"

/*
 * Clock-offset thread: one measurement at step start, one every
 * ProfileSH5ClockInterval, one at step end (only if the server answered
 * the one before: a dead server costs the step nothing).  Each is bounded
 * by ProfileSH5ClockTimeout; failures are logged once per step.
 */
atomic_int logged_clock;

static bool clock_measure(uint32_t phase)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };
	struct sh5_clock_sample c;

	if (sh5_ntp_measure_addr((struct sockaddr *)&clock_addr, clock_addrlen,
				 (int)cfg.clock_samples, (int)cfg.clock_timeout,
				 &r, &err) < 0) {
		if (!atomic_exchange(&logged_clock, 1))
			error("%s: clock offset to %s not measured: %s",
			      plugin_type, cfg.clock_server, err.text);
		return false;
	}
	c.local_ns = r.local_ns;
	c.offset_ns = r.offset_ns;
	c.rtt_ns = r.rtt_ns;
	c.stratum = (uint32_t)r.stratum;
	c.phase = phase;
	pthread_rwlock_rdlock(&state_lock);
	if (writer)
		sh5_writer_add_clock(writer, &c);
	pthread_rwlock_unlock(&state_lock);
	log_flag(PROFILE, "%s: clock offset %" PRId64 " ns (rtt %" PRId64
		 " ns, stratum %d)", plugin_type, r.offset_ns, r.rtt_ns,
		 r.stratum);
	return true;
}

/* Clock worker: at start, periodically, and at the end if the server
 * answered the last time. */
static bool clock_ok;

static void clock_tick(int phase)
{
	if (phase < 2 || clock_ok)
		clock_ok = clock_measure((uint32_t)phase);
}

struct worker clock_worker = { .tick = clock_tick };
