/*
 * A hand-made struct bh_arena with only what the reporter and memstat read: base, nr_pages,
 * map_bytes, memfd, cfg.backing, discarded and the refault counters.  Keeps these tests
 * independent of bh_arena_create.  The data mapping is aligned to 4 MiB, as the arena's is.
 */
#ifndef BH_TEST_FAKE_ARENA_H
#define BH_TEST_FAKE_ARENA_H

#include "buddy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_ALIGN (4UL << 20)

/* The helpers never return NULL: a test cannot run without its arena. */
__attribute__((noreturn)) static inline void fake_die(const char *what) {
  perror(what);
  abort();
}

/* Reserves bytes of address space at a FAKE_ALIGN boundary; the rest is unmapped. */
static inline uint8_t *fake_reserve(size_t bytes) {
  uint8_t *p =
      mmap(NULL, bytes + FAKE_ALIGN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fake_die("fake arena: reserve");
  uint8_t *base = (uint8_t *)(((uintptr_t)p + FAKE_ALIGN - 1) & ~(uintptr_t)(FAKE_ALIGN - 1));
  if (base > p)
    munmap(p, (size_t)(base - p));
  size_t tail = (size_t)(p + bytes + FAKE_ALIGN - (base + bytes));
  if (tail)
    munmap(base + bytes, tail);
  return base;
}

static inline struct bh_arena *fake_new(enum bh_backing backing, uint64_t bytes) {
  struct bh_arena *a = calloc(1, sizeof *a);
  if (a == NULL)
    fake_die("fake arena: calloc");
  a->cfg.backing = backing;
  a->nr_pages = bytes >> BH_PAGE_SHIFT;
  a->map_bytes = backing == BH_BACKING_SIM ? 0 : (size_t)bytes;
  a->memfd = -1;
  return a;
}

/* Private anonymous arena; madv_thp is 0, MADV_HUGEPAGE or MADV_NOHUGEPAGE. */
static inline struct bh_arena *fake_arena_mmap(uint64_t bytes, int madv_thp) {
  struct bh_arena *a = fake_new(BH_BACKING_MMAP, bytes);
  uint8_t *base = fake_reserve((size_t)bytes);
  if (mmap(base, (size_t)bytes, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
    fake_die("fake arena: mmap");
  if (madv_thp)
    madvise(base, (size_t)bytes, madv_thp);
  a->base = base;
  return a;
}

/* memfd arena: the memfd mapped shared from offset 0. */
static inline struct bh_arena *fake_arena_memfd(uint64_t bytes) {
  struct bh_arena *a = fake_new(BH_BACKING_MEMFD, bytes);
  uint8_t *base = fake_reserve((size_t)bytes);
  int fd = memfd_create("bh-test-arena", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0 ||
      mmap(base, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
          MAP_FAILED)
    fake_die("fake arena: memfd");
  a->base = base;
  a->memfd = fd;
  return a;
}

static inline struct bh_arena *fake_arena_sim(uint64_t bytes) {
  return fake_new(BH_BACKING_SIM, bytes);
}

static inline void fake_arena_free(struct bh_arena *a) {
  if (a == NULL)
    return;
  if (a->base)
    munmap(a->base, a->map_bytes);
  if (a->memfd >= 0)
    close(a->memfd);
  free((void *)a->discarded);
  free(a);
}

static inline uint8_t *fake_page(struct bh_arena *a, uint64_t pfn) {
  return a->base + (pfn << BH_PAGE_SHIFT);
}

/* Fills pages [pfn, pfn + n) with a byte that depends on the page. */
static inline void fake_fill(struct bh_arena *a, uint64_t pfn, uint64_t n) {
  for (uint64_t p = pfn; p < pfn + n; p++)
    memset(fake_page(a, p), (int)((p * 7 + 1) & 0xff) | 1, BH_PAGE_SIZE);
}

/* Number of pages in [pfn, pfn + n) that still hold what fake_fill wrote. */
static inline uint64_t fake_intact(struct bh_arena *a, uint64_t pfn, uint64_t n) {
  uint64_t ok = 0;
  for (uint64_t p = pfn; p < pfn + n; p++) {
    const uint8_t *d = fake_page(a, p);
    uint8_t want = (uint8_t)(((p * 7 + 1) & 0xff) | 1);
    bool same = true;
    for (size_t i = 0; i < BH_PAGE_SIZE && same; i++)
      same = d[i] == want;
    ok += same;
  }
  return ok;
}

/* Number of pages in [pfn, pfn + n) that read back as all zero. */
static inline uint64_t fake_zero(struct bh_arena *a, uint64_t pfn, uint64_t n) {
  uint64_t z = 0;
  for (uint64_t p = pfn; p < pfn + n; p++) {
    const uint8_t *d = fake_page(a, p);
    bool zero = true;
    for (size_t i = 0; i < BH_PAGE_SIZE && zero; i++)
      zero = d[i] == 0;
    z += zero;
  }
  return z;
}

#endif
