/*
 * gcheap: a workload of a user's own for `run-guest --workload-bin` (an example of the marker
 * protocol, bench/guest/run-guest --help).  A copying collector's heap: per round a young
 * generation of anonymous regions of 64 KiB to 8 MiB is mapped and a quarter to all of each
 * written; 3 regions in 10 survive and are copied into a fresh to-space (its first half
 * MADV_HUGEPAGE); then the young regions go in random order, half with MADV_DONTNEED before
 * munmap, and the previous to-space is unmapped.
 *
 *   cc -O2 -static -o gcheap gcheap.c
 *   bench/guest/run-guest --out DIR --workload-bin gcheap --workload-args MIB,ROUNDS,IDLE_S
 */
#include <fcntl.h>
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
    perror("gcheap: trace_marker");
  int m = snprintf(line, sizeof(line), "@@%s", buf);
  if (write(STDOUT_FILENO, line, (size_t)m) < 0)
    _exit(3);
}

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;

static unsigned long long next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

struct region {
  char *p;
  size_t len, used;
};

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 160;
  int rounds = argc > 2 ? atoi(argv[2]) : 3, idle = argc > 3 ? atoi(argv[3]) : 15;
  enum { MAX_REGIONS = 4096 };
  static struct region young[MAX_REGIONS];
  if (!mib || rounds < 1 || idle < 0) {
    fprintf(stderr, "usage: gcheap [MIB [ROUNDS [IDLE_S]]]\n");
    return 2;
  }
  const size_t huge = 2u << 20;
  struct region old = {NULL, 0, 0};
  marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  mark("start", 0);
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    size_t total = 0;
    int n = 0;
    while (total < mib << 20 && n < MAX_REGIONS) {
      size_t len = (size_t)(64 << 10) << (next() % 8);
      char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        break;
      size_t used = len / 4 + next() % (len - len / 4);
      for (size_t i = 0; i < used; i += 4096)
        p[i] = (char)(i >> 12);
      young[n++] = (struct region){p, len, used};
      total += used;
    }
    size_t to_len = (total * 3 / 10 + huge) & ~(huge - 1), at = 0;
    char *to = mmap(NULL, to_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (to == MAP_FAILED)
      return 1;
    madvise(to, to_len / 2, MADV_HUGEPAGE);
    for (int i = 0; i < n; i++)
      if (next() % 10 < 3) {
        size_t k = young[i].used < to_len - at ? young[i].used : to_len - at;
        memcpy(to + at, young[i].p, k);
        at += k;
      }
    mark("free", r);
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(next() % (unsigned)(i + 1));
      struct region t = young[i];
      young[i] = young[j];
      young[j] = t;
    }
    for (int i = 0; i < n; i++) {
      if (next() & 1)
        madvise(young[i].p, young[i].len, MADV_DONTNEED);
      munmap(young[i].p, young[i].len);
    }
    if (old.p)
      munmap(old.p, old.len);
    old = (struct region){to, to_len, at};
    mark("idle", r);
    sleep((unsigned)idle);
  }
  mark("end", 0);
  return 0;
}
