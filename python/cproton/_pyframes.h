/* _pyframes.h -- the "python" context source of the cproton extension:
 * walks the calling thread's Python frames and gives interned
 * "file:line@function" ids (see _pyframes.c). */
#ifndef CPROTON_PY_PYFRAMES_H
#define CPROTON_PY_PYFRAMES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* Registers the unwinder with cproton_context_register("python", ...).
 * Returns 0 or a cproton status. Call with the GIL held. */
int cpy_frames_register(void);

/* Unregisters the unwinder (at interpreter exit). */
void cpy_frames_unregister(void);

/* Replaces the list of filename prefixes whose frames are dropped (a
 * sequence of str) and the list of functions whose callers are dropped
 * (str "file-prefix@function"; NULL: none). Returns 0, or -1 with a Python
 * exception set. GIL. */
int cpy_frames_set_skip(PyObject *prefixes, PyObject *caller_of);

/* The current thread's frames as a list of str, outermost first, after
 * dropping skipped frames (tests, context.depth). GIL. */
PyObject *cpy_frames_current(void);

/* The unwinder itself (cproton_unwind_fn). */
size_t cpy_frames_unwind(void *user, uint32_t *ids, size_t max);

/* The code objects of the autograd engine's entry (at most 4; a sequence
 * of code objects, references kept): in a backward pass the frames older
 * than the innermost one are backward()'s caller, the newer ones the
 * node's own (_pylink.h). And those of the node makers (at most 4;
 * autograd.Function.apply): a forward record made below one ends at the
 * frames older than it. Returns 0, or -1 with an exception. GIL. */
int cpy_frames_set_entries(PyObject *codes, PyObject *node_makers);

/* The frames of another thread inside backward() (one whose frames hold
 * an entry), older than its innermost entry frame: named and skipped as
 * the unwinder does, outermost first, at most `max`; their number, or
 * CPY_NO_ENTRY (_pylink.h) when no thread is inside backward(). GIL. */
size_t cpy_frames_before_entry(uint32_t *ids, size_t max);

#endif
