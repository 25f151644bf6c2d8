/* Maps N MiB (default 256) 2 MiB-aligned, madvise(MADV_HUGEPAGE), touches it, unmaps it. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 256, n = mb << 20, huge = 2u << 20;
  char *raw = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return 1;
  char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
  if (madvise(p, n, MADV_HUGEPAGE)) { perror("madvise"); return 1; }
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  munmap(raw, n + huge);
  return 0;
}
