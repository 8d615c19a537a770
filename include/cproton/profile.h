/* cproton/profile.h -- reading Hatchet profiles (Proton's and cproton's).
 * Included by <cproton/cproton.h>; filled in by the io reader. */
#ifndef CPROTON_PROFILE_H
#define CPROTON_PROFILE_H
#endif
