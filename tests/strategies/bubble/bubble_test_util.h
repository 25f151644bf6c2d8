/* Helpers shared by the bubble tests and the measurement program. */
#ifndef BH_TESTS_BUBBLE_UTIL_H
#define BH_TESTS_BUBBLE_UTIL_H

#include "buddy/internal.h"

#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000ull
#define MSEC 1000000ull
#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* An arena with one Normal zone of `bytes` (DMA and DMA32 absent). */
static inline bh_arena_t *bt_arena(enum bh_backing backing, uint64_t bytes, bool pcp,
                                   uint64_t min_free_kbytes) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = backing;
  memset(cfg.zone_bytes, 0, sizeof(cfg.zone_bytes));
  cfg.zone_bytes[BH_ZONE_NORMAL] = bytes;
  cfg.pcp = pcp;
  cfg.min_free_kbytes = min_free_kbytes;
  bh_arena_t *a = NULL;
  int err = bh_arena_create(&cfg, &a);
  if (err) {
    fprintf(stderr, "bh_arena_create: %s\n", bh_strerror(err));
    return NULL;
  }
  return a;
}

/* Attaches bubble with options given as "k=v k=v" (NULL: none). */
static inline bh_hint_t *bt_attach(bh_arena_t *a, bh_clock_mode_t clock, const char *opts) {
  static _Thread_local char buf[512];
  bh_opt_t o[16];
  size_t n = 0;
  snprintf(buf, sizeof buf, "%s", opts ? opts : "");
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok && n < 16;
       tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    if (eq)
      *eq = 0;
    o[n].key = tok;
    o[n].value = eq ? eq + 1 : "";
    n++;
  }
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "bubble";
  hc.opts = o;
  hc.nopts = n;
  hc.clock = clock;
  bh_hint_t *h = NULL;
  int err = bh_hint_attach(a, &hc, &h);
  if (err) {
    fprintf(stderr, "bh_hint_attach(%s): %s: %s\n", opts ? opts : "", bh_strerror(err),
            bh_hint_last_error());
    return NULL;
  }
  return h;
}

struct bt_stat_find {
  const char *name;
  double value;
  int found;
};

static inline void bt_emit_find(void *ctx, const char *name, double value) {
  struct bt_stat_find *f = ctx;
  if (!strcmp(f->name, name)) {
    f->value = value;
    f->found++;
  }
}

/* The strategy's counter `name` (-1 if it does not exist). */
static inline double bt_stat(bh_hint_t *h, const char *name) {
  struct bt_stat_find f = {name, -1, 0};
  bh_hint_strategy_stats(h, bt_emit_find, &f);
  return f.found == 1 ? f.value : -1;
}

static inline uint64_t bt_arena_stat(bh_arena_t *a, int stat) {
  uint64_t v[BH_NR_STATS];
  bh_stats_read(a, v);
  return v[stat];
}

static inline bool bt_reported(bh_arena_t *a, uint64_t pfn) {
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  bh_zone_lock(z);
  bool r = bh_block_reported(z, pfn);
  bh_zone_unlock(z);
  return r;
}

/* Free block at pfn: its order (or -1 if pfn does not head a free block on a list). */
static inline int bt_free_order(bh_arena_t *a, uint64_t pfn) {
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  unsigned order;
  bh_zone_lock(z);
  bool f = bh_zone_free_block(z, pfn, &order, NULL);
  bh_zone_unlock(z);
  return f ? (int)order : -1;
}

/* Free pages in blocks of order >= min_order over every zone, and how many are reported. */
static inline void bt_free_hi(bh_arena_t *a, unsigned min_order, uint64_t *total,
                              uint64_t *reported) {
  *total = *reported = 0;
  for (int i = 0; i < bh_arena_zone_count(a); i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    bh_zone_lock(z);
    for (unsigned o = min_order; o <= bh_arena_max_order(a); o++)
      for (int mt = 0; mt < BH_MT_TYPES; mt++)
        for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
             p = bh_free_list_next(z, o, mt, p)) {
          *total += 1ull << o;
          if (bh_block_reported(z, p))
            *reported += 1ull << o;
        }
    bh_zone_unlock(z);
  }
}

static inline uint64_t bt_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static inline int bt_cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/*
 * Allocates every Movable block of `order` the watermarks allow, then fills what is left with
 * smaller blocks, so that no free block of that order or above remains.  Returns the blocks
 * of `order`, sorted (caller frees the array); the smaller ones stay allocated.
 */
static inline uint64_t *bt_fill(bh_arena_t *a, unsigned order, size_t *n) {
  size_t cap = (size_t)(bh_arena_pages(a) >> order), k = 0;
  uint64_t *p = malloc(cap * sizeof(*p)), pfn;
  while (k < cap && bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, order, 0, &pfn) == 0)
    p[k++] = pfn;
  for (int o = (int)order - 1; o >= 0; o--)
    while (bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, (unsigned)o, 0, &pfn) == 0)
      ;
  qsort(p, k, sizeof(*p), bt_cmp_u64);
  *n = k;
  return p;
}

/*
 * After bt_fill(a, 8): frees the upper order-8 half of every odd order-9 region whose lower
 * half is allocated.  That is free memory for the watermarks that lies in no block of order
 * >= 9 (the lower halves stay allocated), so it neither notifies nor is reported.  Returns
 * the pages freed.
 */
static inline uint64_t bt_pad8(bh_arena_t *a, const uint64_t *p8, size_t n) {
  uint64_t pages = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = p8[i] >> 8;
    if ((r & 3) != 3)
      continue;
    uint64_t lower = p8[i] - 256;
    if (!bsearch(&lower, p8, n, sizeof(*p8), bt_cmp_u64))
      continue;
    if (bh_free_pfn(a, p8[i], 8, 0) == 0)
      pages += 256;
  }
  return pages;
}

/* xorshift64* */
static inline uint64_t bt_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* The test seed: BH_TEST_SEED if set, else the clock. */
static inline uint64_t bt_seed(void) {
  const char *e = getenv("BH_TEST_SEED");
  if (e && *e)
    return strtoull(e, NULL, 0);
  return bt_mono_ns() ^ ((uint64_t)getpid() << 32);
}

#endif
