/* exports_unbrotli.c - test helper: decompress one brotli stream from
 * stdin to stdout; exit 1 when the input is not exactly one stream. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <brotli/decode.h>

int main(void)
{
	BrotliDecoderState *d = BrotliDecoderCreateInstance(NULL, NULL, NULL);
	static uint8_t in[65536], out[65536];
	size_t avail_in = 0, avail_out;
	const uint8_t *next_in = in;
	uint8_t *next_out;
	BrotliDecoderResult r = BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT;

	for (;;) {
		if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
			avail_in = fread(in, 1, sizeof(in), stdin);
			next_in = in;
			if (avail_in == 0) {
				fprintf(stderr, "unbrotli: truncated stream\n");
				return 1;
			}
		}
		avail_out = sizeof(out);
		next_out = out;
		r = BrotliDecoderDecompressStream(d, &avail_in, &next_in,
						  &avail_out, &next_out, NULL);
		fwrite(out, 1, sizeof(out) - avail_out, stdout);
		if (r == BROTLI_DECODER_RESULT_SUCCESS)
			break;
		if (r == BROTLI_DECODER_RESULT_ERROR) {
			fprintf(stderr, "unbrotli: %s\n",
				BrotliDecoderErrorString(
					BrotliDecoderGetErrorCode(d)));
			return 1;
		}
	}
	BrotliDecoderDestroyInstance(d);
	if (avail_in || fread(in, 1, 1, stdin)) {
		fprintf(stderr, "unbrotli: data after the stream\n");
		return 1;
	}
	return 0;
}
