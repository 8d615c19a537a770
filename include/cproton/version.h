/* cproton/version.h -- version macros of the cproton library. */
#ifndef CPROTON_VERSION_H
#define CPROTON_VERSION_H

#define CPROTON_VERSION_MAJOR 0
#define CPROTON_VERSION_MINOR 1
#define CPROTON_VERSION_PATCH 0
#define CPROTON_VERSION_STRING "0.1.0"
/* 0xMMmmpp: compare with >= to test for a minimum version. */
#define CPROTON_VERSION_HEX                                                    \
  ((CPROTON_VERSION_MAJOR << 16) | (CPROTON_VERSION_MINOR << 8) |              \
   CPROTON_VERSION_PATCH)

#endif
