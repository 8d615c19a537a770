/* core/cct.h -- the process-wide calling-context tree (cp_cct_*).
 *
 * Every context path ever entered (scopes, states, Python frames, kernel
 * names) is one node here, shared by all sessions; a session's data only
 * says which nodes it saw and what it measured on them. Nodes live until
 * the last session ends and nothing holds one (cp_cct_reset), so a pointer
 * taken at a kernel launch stays valid until its record arrives. */
#ifndef CP_CORE_CCT_H
#define CP_CORE_CCT_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/sohash.h"

typedef struct cp_node {
  uint32_t id;    /* dense, 0 = ROOT; creation order */
  uint32_t name;  /* strtab id; 0 for ROOT */
  uint32_t depth; /* ROOT = 0 */
  struct cp_node *parent;
  cp_solink link;                          /* in the (parent, name) index */
  _Atomic(struct cp_node *) first_child;   /* newest first */
  struct cp_node *next_sibling;            /* set before publication */
  _Atomic(struct cp_node *) hint;          /* last child looked up */
} cp_node;

/* The root node ("ROOT"). Never NULL. */
cp_node *cp_cct_root(void);

/* The child of `parent` named `name` (a strtab id), created on first use.
 * Lock-free for existing children; NULL only when out of memory (message
 * set). Hot path: no allocation or lock when the child exists. */
cp_node *cp_cct_child(cp_node *parent, uint32_t name);

/* Like cp_cct_child with a string name (interned first). */
cp_node *cp_cct_child_str(cp_node *parent, const char *name);

/* The node with id `id`, or NULL. Lock-free. */
cp_node *cp_cct_node(uint32_t id);

/* Number of nodes created so far (ids are < this). */
uint32_t cp_cct_count(void);

/* The (parent, name) index as a walk finds it (tests, benchmarks); no
 * thread may add nodes meanwhile. */
void cp_cct_stats(cp_sohash_stats *out);

/* Frees every node but ROOT; ids start again at 1. The caller guarantees
 * that no thread uses the tree and that no node pointer or id survives in
 * a thread's stack, a launch site or a session's store (core/session.c). */
void cp_cct_reset(void);

#endif
