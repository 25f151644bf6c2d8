/*
 * Growing a heap array by doubling: the one helper for the arrays of unknown length that are
 * filled an element at a time.
 */
#ifndef BH_COMMON_GROW_H
#define BH_COMMON_GROW_H

#include <stddef.h>
#include <stdlib.h>

#include <buddyhint.h>

/* Room for one more of the n elements of size bytes at *v (*cap of them): doubled, from 256,
 * when full.  0 or BH_ENOMEM (nothing changed). */
static inline int bh__grow(void *v, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? *cap * 2 : 256;
  void *q = realloc(*(void **)v, c * size);
  if (!q)
    return BH_ENOMEM;
  *(void **)v = q;
  *cap = c;
  return 0;
}

#endif
