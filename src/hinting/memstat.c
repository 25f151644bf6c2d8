/*
 * Measuring memory, so that what a report gave back is observed rather than claimed.
 *
 * The arena's resident pages come from mincore(2), which reports for each host page of a
 * mapping whether it is in memory: for a private anonymous mapping, whether a page is mapped
 * (a MADV_FREE page stays resident until the host reclaims it); for a memfd, whether the page
 * is in its page cache (MADV_DONTNEED on a shared mapping leaves it there, a punched hole does
 * not).  The vector is filled in chunks so that a large arena costs no large allocation.
 *
 * The process as a whole is read from /proc/self/smaps_rollup (Rss, LazyFree, Anonymous) and
 * its page faults from getrusage(2).
 */
#include "buddy/internal.h"

#include <buddyhint/report.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define BH__MINCORE_CHUNK (64u * 1024u) /* vector entries per mincore call */

/* Resident bytes of [off, off + len) of the data mapping, counted per host page and clipped
 * to the range.  Returns 0, BH_ENOMEM or BH_ESYS. */
static int bh__mincore_bytes(const bh_arena_t *a, uint64_t off, uint64_t len, uint64_t *out) {
  uint64_t hps = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t first = off / hps * hps, end = off + len;
  unsigned char *vec = malloc(BH__MINCORE_CHUNK);
  if (vec == NULL)
    return BH_ENOMEM;
  uint64_t sum = 0;
  for (uint64_t at = first; at < end;) {
    uint64_t npg = (end - at + hps - 1) / hps;
    if (npg > BH__MINCORE_CHUNK)
      npg = BH__MINCORE_CHUNK;
    if (mincore(a->base + at, (size_t)(npg * hps), vec) != 0) {
      free(vec);
      return BH_ESYS;
    }
    for (uint64_t i = 0; i < npg; i++, at += hps) {
      if (!(vec[i] & 1))
        continue;
      uint64_t lo = at < off ? off : at, hi = at + hps < end ? at + hps : end;
      sum += hi - lo;
    }
  }
  free(vec);
  *out = sum;
  return 0;
}

int bh_arena_resident_range(const bh_arena_t *a, uint64_t pfn, uint64_t npages,
                            uint64_t *resident_pages) {
  if (a == NULL || resident_pages == NULL)
    return BH_EINVAL;
  if (pfn > a->nr_pages || npages > a->nr_pages - pfn)
    return BH_EFAULT;
  *resident_pages = 0;
  if (a->cfg.backing == BH_BACKING_SIM || a->base == NULL || npages == 0)
    return 0;
  uint64_t bytes;
  int err = bh__mincore_bytes(a, pfn << BH_PAGE_SHIFT, npages << BH_PAGE_SHIFT, &bytes);
  if (err)
    return err;
  *resident_pages = bytes >> BH_PAGE_SHIFT;
  return 0;
}

int bh_arena_resident(const bh_arena_t *a, uint64_t *bytes) {
  if (a == NULL || bytes == NULL)
    return BH_EINVAL;
  uint64_t pages;
  int err = bh_arena_resident_range(a, 0, a->nr_pages, &pages);
  if (err)
    return err;
  *bytes = pages << BH_PAGE_SHIFT;
  return 0;
}

/* Stores a "Key:  N kB" line of smaps_rollup into the matching field of *out. */
static void bh__procmem_line(const char *line, bh_procmem_t *out) {
  const struct {
    const char *key;
    uint64_t *dst;
  } keys[] = {
      {"Rss", &out->rss_bytes},
      {"LazyFree", &out->lazyfree_bytes},
      {"Anonymous", &out->anon_bytes},
  };
  char key[32];
  unsigned long long kb;
  if (sscanf(line, "%31[^:]: %llu kB", key, &kb) != 2)
    return;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (strcmp(key, keys[i].key) == 0)
      *keys[i].dst = (uint64_t)kb * 1024;
  }
}

int bh_procmem_read(bh_procmem_t *out) {
  if (out == NULL)
    return BH_EINVAL;
  memset(out, 0, sizeof *out);
  FILE *f = fopen("/proc/self/smaps_rollup", "re");
  if (f == NULL)
    return BH_ESYS;
  char line[256];
  while (fgets(line, sizeof line, f) != NULL)
    bh__procmem_line(line, out);
  bool failed = ferror(f);
  fclose(f);
  if (failed)
    return BH_ESYS;
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return BH_ESYS;
  out->minflt = (uint64_t)ru.ru_minflt;
  out->majflt = (uint64_t)ru.ru_majflt;
  return 0;
}
