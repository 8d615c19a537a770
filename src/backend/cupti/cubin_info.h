/* backend/cupti/cubin_info.h -- per-function facts of a cubin read from its
 * `.nv.info` section (cp_cubin_info_*): the stack frame each thread of a
 * kernel reserves in local memory (local arrays indexed at run time,
 * spilled registers). CUPTI's kernel record reports local memory without
 * the stack frame (`localMemoryPerThread` was 0 for a kernel with a
 * 128-byte frame on an H100, CUDA 13), so the advisor's local-memory facts
 * come from here.
 *
 * Layout read (little-endian): the ELF image's section `.nv.info` is a
 * sequence of attributes: u8 format | u8 attribute | then by format:
 * 0x01 nothing, 0x02 u8 + pad, 0x03 u16, 0x04 u16 size + size bytes.
 * Attribute 0x11 (frame size) with format 0x04 and size 8 holds u32 the
 * function's symbol index in `.symtab` | u32 bytes. Input is untrusted;
 * not a hot path (once per kept cubin). */
#ifndef CP_BACKEND_CUPTI_CUBIN_INFO_H
#define CP_BACKEND_CUPTI_CUBIN_INFO_H

#include <stddef.h>
#include <stdint.h>

/* Called per function with a frame size attribute; `name` is valid during
 * the call only. */
typedef void (*cp_cubin_frame_fn)(void *ctx, const char *name,
                                  uint32_t frame_bytes);

/* Calls `fn` for every function of the cubin whose frame size is recorded.
 * Returns how many, or -1 when the image is not a 64-bit little-endian ELF
 * image with `.nv.info` and `.symtab` sections inside its `size` bytes, or
 * an attribute runs past the section (the functions before it were
 * delivered). */
int cp_cubin_info_frames(const void *cubin, size_t size, cp_cubin_frame_fn fn,
                         void *ctx);

#endif
