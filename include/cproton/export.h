/* cproton/export.h -- CPROTON_API marks the symbols the shared library
 * exports; everything else is hidden (-fvisibility=hidden). */
#ifndef CPROTON_EXPORT_H
#define CPROTON_EXPORT_H

#if defined(CPROTON_BUILDING) && defined(__GNUC__)
#define CPROTON_API __attribute__((visibility("default")))
#else
#define CPROTON_API
#endif

#endif
