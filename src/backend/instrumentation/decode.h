/* backend/instrumentation/decode.h -- the profile-buffer decoder behind
 * cproton_buffer_decode (cp_decode_*). The public API is in
 * <cproton/instrument.h>; this header only names the limits. */
#ifndef CP_BACKEND_INSTRUMENTATION_DECODE_H
#define CP_BACKEND_INSTRUMENTATION_DECODE_H

/* Open scopes tracked per unit while pairing; deeper starts are unpaired. */
#define CP_DECODE_MAX_DEPTH 64

/* Largest buffer accepted (bytes). */
#define CP_DECODE_MAX_BYTES (1ull << 36)

#endif
