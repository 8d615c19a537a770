/* fatbin_holder.c -- a shared library for backend_cupti_fatbin_test: the
 * build adds tests/data/pcs/chase_fatbin.o's `.nv_fatbin` section to it
 * with objcopy, so the test can dlopen an object that holds a cubin without
 * CUDA's runtime (an nvcc library would register its fat binary with it). */
int cp_fatbin_holder_marker(void) { return 42; }
