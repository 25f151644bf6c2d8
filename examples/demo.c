/*
 * demo: a seeded, mixed workload on the default arena (1 GiB: DMA, DMA32 and Normal zones).
 *
 * About a million operations pick one of NR_SLOTS slots at random: an empty slot gets a new
 * block (order 0..10, a zone through GFP_DMA / GFP_DMA32 / neither, one of the three
 * mobilities, now and then __GFP_ZERO), a full one is freed.  Every page of a block gets a tag
 * in its first and last words when it is handed out, and the tags are read back before the
 * block is freed: a page handed out twice, or touched by the allocator while in use, shows up
 * as corrupt data.  The invariant checker runs every CHECK_EVERY operations.  At the end the
 * arena is printed in the kernel's formats (with the workload's blocks still allocated), then
 * everything is freed and checked once more.
 *
 * usage: demo [SEED [OPS]]
 * Exits 0 only if every check passed and no data was corrupt.
 */
#include <buddyhint.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_SLOTS 2048
#define CHECK_EVERY 100000
#define DEFAULT_OPS 1000000
#define DEFAULT_SEED 1
#define WORDS_PER_PAGE (BH_PAGE_SIZE / sizeof(uint64_t))

struct block {
  unsigned char *addr; /* NULL: the slot is empty */
  unsigned order;
  unsigned gfp;
  uint64_t tag; /* 1, 2, 3, ... in allocation order */
};

struct totals {
  uint64_t allocs, frees, enospc, errors, zeroed;
  uint64_t corrupt_pages, violations, checks;
  uint64_t live_blocks, live_pages;
};

static uint64_t rng_state;

/* splitmix64: small, fast and good enough to drive a workload. */
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Percent weights of orders 0..10: mostly small blocks, a few pageblock and MAX_PAGE_ORDER ones. */
static const unsigned order_weight[] = {40, 15, 10, 10, 4, 4, 4, 4, 4, 3, 2};

static unsigned pick_order(void) {
  unsigned r = (unsigned)(rnd() % 100);
  unsigned order = 0;
  while (r >= order_weight[order]) {
    r -= order_weight[order];
    order++;
  }
  return order;
}

/* Zone: 3 % DMA, 25 % DMA32, the rest Normal.  Mobility: 60 % movable, 15 % reclaimable. */
static unsigned pick_gfp(void) {
  unsigned gfp = 0, r = (unsigned)(rnd() % 100);
  if (r < 3)
    gfp |= BH_GFP_DMA;
  else if (r < 28)
    gfp |= BH_GFP_DMA32;
  r = (unsigned)(rnd() % 100);
  if (r < 60)
    gfp |= BH_GFP_MOVABLE;
  else if (r < 75)
    gfp |= BH_GFP_RECLAIMABLE;
  if (rnd() % 20 == 0)
    gfp |= BH_GFP_ZERO;
  return gfp;
}

static uint64_t page_word(uint64_t tag, uint64_t page) { return tag << 32 | page; }

/* Checks that a __GFP_ZERO block reads zero, then tags every page.  Returns the bad pages. */
static uint64_t fill(const struct block *b) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < (1ull << b->order); i++) {
    uint64_t *w = (uint64_t *)(b->addr + i * BH_PAGE_SIZE);
    if ((b->gfp & BH_GFP_ZERO) && (w[0] || w[WORDS_PER_PAGE - 1]))
      bad++;
    w[0] = page_word(b->tag, i);
    w[WORDS_PER_PAGE - 1] = ~page_word(b->tag, i);
  }
  return bad;
}

/* Reads the tags back.  Returns the number of pages whose tags changed. */
static uint64_t verify(const struct block *b) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < (1ull << b->order); i++) {
    const uint64_t *w = (const uint64_t *)(b->addr + i * BH_PAGE_SIZE);
    if (w[0] != page_word(b->tag, i) || w[WORDS_PER_PAGE - 1] != ~page_word(b->tag, i)) {
      if (!bad)
        fprintf(stderr,
                "demo: block %" PRIu64 " (order %u) page %" PRIu64 " corrupt: %#" PRIx64
                " %#" PRIx64 "\n",
                b->tag, b->order, i, w[0], w[WORDS_PER_PAGE - 1]);
      bad++;
    }
  }
  return bad;
}

static void free_block(bh_arena_t *arena, struct block *b, struct totals *t) {
  t->corrupt_pages += verify(b);
  int err = bh_free_pages(arena, b->addr, b->order);
  if (err) {
    fprintf(stderr, "demo: bh_free_pages(order %u): %s\n", b->order, bh_strerror(err));
    t->errors++;
  }
  t->frees++;
  t->live_blocks--;
  t->live_pages -= 1ull << b->order;
  b->addr = NULL;
}

static void alloc_block(bh_arena_t *arena, struct block *b, struct totals *t) {
  int err;
  b->order = pick_order();
  b->gfp = pick_gfp();
  b->addr = bh_alloc_pages(arena, b->gfp, b->order, &err);
  if (!b->addr) {
    if (err == BH_ENOSPC) {
      t->enospc++; /* the zone is full: expected now and then, as on a machine without swap */
    } else {
      fprintf(stderr, "demo: bh_alloc_pages(gfp %#x, order %u): %s\n", b->gfp, b->order,
              bh_strerror(err));
      t->errors++;
    }
    return;
  }
  b->tag = ++t->allocs;
  t->zeroed += (b->gfp & BH_GFP_ZERO) != 0;
  t->corrupt_pages += fill(b);
  t->live_blocks++;
  t->live_pages += 1ull << b->order;
}

static void check(bh_arena_t *arena, struct totals *t, const char *when) {
  long v = bh_arena_check(arena, stderr, 20);
  t->checks++;
  t->violations += (uint64_t)(v > 0 ? v : 0);
  printf("%-14s live %5" PRIu64 " blocks %7" PRIu64 " pages   check: %ld violations\n", when,
         t->live_blocks, t->live_pages, v);
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  *out = strtoull(s, &end, 0);
  return *s && !*end && *s != '-';
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  uint64_t seed = DEFAULT_SEED, ops = DEFAULT_OPS;
  if (argc > 3 || (argc > 1 && !parse_u64(argv[1], &seed)) ||
      (argc > 2 && !parse_u64(argv[2], &ops))) {
    fprintf(stderr, "usage: %s [SEED [OPS]]\n", argv[0]);
    return 2;
  }
  rng_state = seed;

  bh_arena_t *arena;
  int err = bh_arena_create(NULL, &arena);
  if (err) {
    fprintf(stderr, "demo: bh_arena_create: %s\n", bh_strerror(err));
    return 1;
  }
  printf("libbuddyhint %s demo: seed %" PRIu64 ", %" PRIu64 " operations on a %" PRIu64
         " MiB arena\n",
         bh_version(), seed, ops, bh_arena_pages(arena) * BH_PAGE_SIZE >> 20);

  static struct block slots[NR_SLOTS];
  struct totals t = {0};
  double start = now();
  for (uint64_t op = 1; op <= ops; op++) {
    struct block *b = &slots[rnd() % NR_SLOTS];
    if (b->addr)
      free_block(arena, b, &t);
    else
      alloc_block(arena, b, &t);
    if (op % CHECK_EVERY == 0 || op == ops) {
      char when[32];
      snprintf(when, sizeof(when), "ops %" PRIu64 ":", op);
      check(arena, &t, when);
    }
  }
  double elapsed = now() - start;

  printf("\n/proc/buddyinfo\n");
  bh_dump_buddyinfo(arena, stdout);
  printf("\n/proc/pagetypeinfo\n");
  bh_dump_pagetypeinfo(arena, stdout);
  printf("\n/proc/zoneinfo (watermarks)\n");
  bh_dump_zoneinfo(arena, stdout);
  printf("\n/proc/vmstat\n");
  bh_dump_vmstat(arena, stdout);
  printf("\n");

  for (unsigned i = 0; i < NR_SLOTS; i++)
    if (slots[i].addr)
      free_block(arena, &slots[i], &t);
  bh_drain_pcp(arena);
  check(arena, &t, "all freed:");
  bh_arena_destroy(arena);

  int ok = !t.violations && !t.corrupt_pages && !t.errors;
  printf("demo: seed %" PRIu64 ", %" PRIu64 " ops in %.2f s: %" PRIu64 " allocs (%" PRIu64
         " zeroed), %" PRIu64 " frees, %" PRIu64 " ENOSPC, %" PRIu64 " errors, %" PRIu64
         " checks, %" PRIu64 " violations, %" PRIu64 " corrupt pages: %s\n",
         seed, ops, elapsed, t.allocs, t.zeroed, t.frees, t.enospc, t.errors, t.checks,
         t.violations, t.corrupt_pages, ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
