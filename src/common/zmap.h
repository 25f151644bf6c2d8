/*
 * Per-page arrays from fresh anonymous memory: zeroed without a memset (calloc clears a reused
 * heap block byte by byte), reserved without swap accounting, and backed only where written,
 * so an array over a whole recorded machine costs what its events touch.
 */
#ifndef BH_COMMON_ZMAP_H
#define BH_COMMON_ZMAP_H

#include <stddef.h>
#include <sys/mman.h>

/* bytes of zeroed memory (at least one), or NULL. */
static inline void *bh__zmap(size_t bytes) {
  void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Gives back what bh__zmap(bytes) returned (NULL: nothing). */
static inline void bh__zunmap(void *p, size_t bytes) {
  if (p)
    munmap(p, bytes ? bytes : 1);
}

#endif
