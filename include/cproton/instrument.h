/* cproton/instrument.h -- intra-kernel instrumentation: the PTX pass and the
 * profile-buffer decoder. Included by <cproton/cproton.h>. */
#ifndef CPROTON_INSTRUMENT_H
#define CPROTON_INSTRUMENT_H
#endif
