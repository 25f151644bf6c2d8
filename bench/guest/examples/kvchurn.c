/*
 * kvchurn: a workload of a user's own for `run-guest --workload-bin` (an example of the
 * marker protocol, bench/guest/run-guest --help).  A key-value store's churn: per round a
 * hash table is filled with values of 32 B to 128 KiB (glibc malloc: small ones from its
 * heap, the largest mmapped), half of them replaced by small ones, a sort buffer mmapped,
 * filled and sorted; then everything is freed (the last round keeps 1 value in 8 until
 * exit) and malloc_trim gives the heap back.
 *
 *   cc -O2 -static -o kvchurn kvchurn.c
 *   bench/guest/run-guest --out DIR --workload-bin kvchurn --workload-args MIB,ROUNDS,IDLE_S
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int marker_fd = -1;

/* "bh: NAME R" to trace_marker (the trace's clock) and "@@bh: NAME R" to the console. */
static void mark(const char *name, int round) {
  char buf[96], line[128];
  int n = snprintf(buf, sizeof(buf), "bh: %s %d\n", name, round);
  if (marker_fd >= 0 && write(marker_fd, buf, (size_t)n) < 0)
    perror("kvchurn: trace_marker");
  int m = snprintf(line, sizeof(line), "@@%s", buf);
  if (write(STDOUT_FILENO, line, (size_t)m) < 0)
    _exit(3);
}

static unsigned long long rng = 88172645463325252ULL;

static unsigned long long next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* 60 % of 32-511 B, 30 % of 512 B-8 KiB, 10 % of 8-128 KiB */
static size_t value_size(void) {
  unsigned long long r = next() % 100;
  if (r < 60)
    return 32 + next() % 480;
  if (r < 90)
    return 512 + next() % 7680;
  return 8192 + next() % (120 * 1024);
}

static int cmp(const void *a, const void *b) {
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 160;
  int rounds = argc > 2 ? atoi(argv[2]) : 3, idle = argc > 3 ? atoi(argv[3]) : 15;
  enum { SLOTS = 1 << 16 };
  char **table = calloc(SLOTS, sizeof(*table));
  if (!table || !mib || rounds < 1 || idle < 0) {
    fprintf(stderr, "usage: kvchurn [MIB [ROUNDS [IDLE_S]]]\n");
    return 2;
  }
  marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  mark("start", 0);
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    size_t used = 0, tries = 0;
    while (used < mib << 20 && tries++ < 64 * (size_t)SLOTS) {
      size_t h = next() % SLOTS;
      if (table[h])
        continue;
      size_t z = value_size();
      if (!(table[h] = malloc(z)))
        continue;
      memset(table[h], (int)h, z);
      used += z;
    }
    for (size_t i = 0; i < SLOTS; i++) /* half replaced by small values */
      if (table[i] && (next() & 1)) {
        free(table[i]);
        if ((table[i] = malloc(32 + next() % 992)))
          memset(table[i], 1, 32);
      }
    size_t n = (mib << 20) / 8 / sizeof(unsigned);
    unsigned *sorted =
        mmap(NULL, n * sizeof(*sorted), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sorted == MAP_FAILED)
      return 1;
    for (size_t i = 0; i < n; i++)
      sorted[i] = (unsigned)next();
    qsort(sorted, n, sizeof(*sorted), cmp);
    mark("free", r);
    munmap(sorted, n * sizeof(*sorted));
    for (size_t i = 0; i < SLOTS; i++)
      if (table[i] && (r < rounds || next() % 8)) {
        free(table[i]);
        table[i] = NULL;
      }
    malloc_trim(0);
    mark("idle", r);
    sleep((unsigned)idle);
  }
  mark("end", 0);
  return 0;
}
