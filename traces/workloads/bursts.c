/*
 * Bursts of allocation with idle gaps: ROUNDS (default 8) times, map and touch regions of
 * random sizes (4 KiB to 2 MiB, powers of two) until MIB (default 48) MiB are mapped in the
 * round, then unmap a random 60 % of every region still mapped, and sleep GAP_MS (default
 * 3000).  The survivors of earlier rounds stay among the freed memory, so free memory is
 * scattered below the pageblock order and the next round reuses part of it after an idle gap.
 * Everything is unmapped at the end.  Seeded (SEED, default 1) so that a run repeats its
 * sizes and choices.
 *
 *   gcc -O2 -o bursts traces/workloads/bursts.c
 *   ./bursts [ROUNDS [MIB [GAP_MS [SEED]]]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_REGIONS 65536

struct region {
  char *p;
  size_t len;
};

static uint64_t rng_state;

static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 8;
  size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 48;
  long gap_ms = argc > 3 ? atol(argv[3]) : 3000;
  rng_state = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
  if (rounds < 1 || mib < 1 || gap_ms < 0 || !rng_state) {
    fprintf(stderr, "usage: bursts [ROUNDS [MIB [GAP_MS [SEED]]]]\n");
    return 2;
  }
  static struct region live[MAX_REGIONS];
  size_t nlive = 0, page = (size_t)sysconf(_SC_PAGESIZE);
  for (int r = 0; r < rounds; r++) {
    size_t mapped = 0;
    while (mapped < (mib << 20) && nlive < MAX_REGIONS) {
      size_t len = page << (rnd() % 10);
      char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
      }
      for (size_t i = 0; i < len; i += page)
        p[i] = (char)i;
      live[nlive++] = (struct region){p, len};
      mapped += len;
    }
    for (size_t i = 0; i < nlive;) {
      if (rnd() % 100 < 60) {
        munmap(live[i].p, live[i].len);
        live[i] = live[--nlive];
      } else {
        i++;
      }
    }
    struct timespec ts = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  for (size_t i = 0; i < nlive; i++)
    munmap(live[i].p, live[i].len);
  return 0;
}
