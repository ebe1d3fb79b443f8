/*
 * sh5_stream.h - the plugin's live streaming of samples (ProfileSH5Stream*).
 */
#ifndef SH5_PLUGIN_STREAM_H
#define SH5_PLUGIN_STREAM_H

#include "profile/series.h"
#include "stream/stream.h"

/* Log the stream's latest error, once per distinct error. */
void stream_log_error(struct sh5_stream *st);
/* Start streaming the step's samples when ProfileSH5StreamURL is set. */
void stream_start(stepd_step_rec_t *job);
/* Queue a record for streaming; state_lock held (shared). */
void stream_push(const struct sh5_series *s, const union sh5_value *rec);
/* Close the stream within its deadline; counters go to the file. */
void stream_stop(void);

#endif
