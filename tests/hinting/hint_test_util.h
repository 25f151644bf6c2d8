/*
 * Helpers shared by the hinting tests: small arenas, reading a strategy's named counters,
 * the arena's event counters, the reporter's `discarded` bitmap, a seeded RNG and the
 * sanitizer switch that scales the long tests down.
 */
#ifndef BH_TEST_HINT_UTIL_H
#define BH_TEST_HINT_UTIL_H

#include "buddy/internal.h"
#include "test_rng.h"

#include <buddyhint.h>
#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1ull << 20)
#define CHUNK_ORDER 9
#define CHUNK_PAGES (1ull << CHUNK_ORDER)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HT_SANITIZED 1
#endif
#endif
#ifndef HT_SANITIZED
#define HT_SANITIZED 0
#endif

/* The arena every crafted-state test uses: zones given in MiB per node (0 = absent). */
typedef struct ht_arena_spec {
  uint64_t dma32_mib, normal_mib;
  unsigned nodes, max_order;
  bool pcp;
  enum bh_backing backing;
} ht_arena_spec_t;

static inline bh_arena_t *ht_arena(const ht_arena_spec_t *s) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = s->backing;
  cfg.nr_nodes = s->nodes ? s->nodes : 1;
  cfg.zone_bytes[BH_ZONE_DMA] = 0;
  cfg.zone_bytes[BH_ZONE_DMA32] = s->dma32_mib * MiB;
  cfg.zone_bytes[BH_ZONE_NORMAL] = s->normal_mib * MiB;
  cfg.zone_bytes[BH_ZONE_MOVABLE] = 0;
  if (s->max_order) {
    cfg.max_order = s->max_order;
    if (cfg.pageblock_order > cfg.max_order)
      cfg.pageblock_order = cfg.max_order;
  }
  cfg.pcp = s->pcp;
  bh_arena_t *a = NULL;
  const char *why = NULL;
  int err = bh_config_validate(&cfg, &why);
  if (err) {
    fprintf(stderr, "ht_arena: bad config: %s\n", why ? why : "?");
    abort();
  }
  err = bh_arena_create(&cfg, &a);
  if (err) {
    fprintf(stderr, "ht_arena: bh_arena_create: %s\n", bh_strerror(err));
    abort();
  }
  return a;
}

/* Attaches a strategy in the virtual clock with the arena's default report mode. */
static inline int ht_attach(bh_arena_t *a, const char *strategy, const bh_opt_t *opts, size_t nopts,
                            bh_clock_mode_t clock, bh_hint_t **h) {
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = strategy;
  hc.opts = opts;
  hc.nopts = nopts;
  hc.clock = clock;
  return bh_hint_attach(a, &hc, h);
}

/* ---- a strategy's named counters ---- */

struct ht_stat_query {
  const char *name;
  double value;
  int found;
};

static inline void ht_stat_emit(void *ctx, const char *name, double value) {
  struct ht_stat_query *q = ctx;
  if (!strcmp(name, q->name)) {
    q->value = value;
    q->found++;
  }
}

/* The strategy counter `name`; aborts if the strategy does not emit it exactly once. */
static inline uint64_t ht_sstat(const bh_hint_t *h, const char *name) {
  struct ht_stat_query q = {name, 0, 0};
  bh_hint_strategy_stats(h, ht_stat_emit, &q);
  if (q.found != 1) {
    fprintf(stderr, "strategy counter '%s' emitted %d times\n", name, q.found);
    abort();
  }
  return (uint64_t)q.value;
}

/* One of the arena's event counters. */
static inline uint64_t ht_astat(const bh_arena_t *a, int stat) {
  uint64_t v[BH_NR_STATS];
  bh_stats_read(a, v);
  return v[stat];
}

static inline bh_hint_stats_t ht_hstats(const bh_hint_t *h) {
  bh_hint_stats_t s;
  bh_hint_stats(h, &s);
  return s;
}

/* ---- the reporter's discarded bitmap (internal) ---- */

static inline bool ht_discarded(const bh_arena_t *a, uint64_t pfn) {
  return a->discarded &&
         (atomic_load_explicit(&a->discarded[pfn >> 6], memory_order_relaxed) >> (pfn & 63)) & 1;
}

static inline uint64_t ht_discarded_range(const bh_arena_t *a, uint64_t pfn, uint64_t n) {
  uint64_t c = 0;
  for (uint64_t i = 0; i < n; i++)
    c += ht_discarded(a, pfn + i);
  return c;
}

static inline uint64_t ht_resident(const bh_arena_t *a, uint64_t pfn, uint64_t n) {
  uint64_t r = UINT64_MAX;
  int err = bh_arena_resident_range(a, pfn, n, &r);
  if (err) {
    fprintf(stderr, "bh_arena_resident_range: %s\n", bh_strerror(err));
    abort();
  }
  return r;
}

/* Runs the checker and prints what it found. */
static inline long ht_check(bh_arena_t *a) {
  long v = bh_arena_check(a, stderr, 20);
  if (v)
    fprintf(stderr, "bh_arena_check: %ld violation(s)\n", v);
  return v;
}

/* ---- seeded RNG (splitmix64) ---- */

typedef struct ht_rng {
  uint64_t s;
} ht_rng_t;

static inline uint64_t ht_rnd(ht_rng_t *r) { return test_splitmix64(&r->s); }

static inline uint64_t ht_below(ht_rng_t *r, uint64_t n) { return n ? ht_rnd(r) % n : 0; }

/* BH_TEST_SEED if set, else a fresh seed from the clock; printed so a failure can be rerun. */
static inline uint64_t ht_seed(const char *test) {
  const char *env = getenv("BH_TEST_SEED");
  uint64_t seed;
  if (env && *env) {
    seed = strtoull(env, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
  }
  printf("%s: seed %llu (rerun with BH_TEST_SEED=%llu)\n", test, (unsigned long long)seed,
         (unsigned long long)seed);
  fflush(stdout);
  return seed;
}

static inline double ht_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
