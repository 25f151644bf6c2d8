/*
 * Property test of bitmap hinting in the virtual clock: seeded random allocations and frees
 * (orders 0..10, several zones and mobilities, both pcp slots, now and then a pcp drain) on a
 * 64 MiB mmap arena, the clock advanced by a random step after every operation, and the
 * invariant checker run after every worker step (whenever bh_hint_advance returns > 0).  Each
 * block carries a tag in its first and last word, read back before it is freed: a report that
 * discarded allocated memory zeroes it.  Several rounds, each with its own bitmap options
 * (threshold, batch, chunk order, clear_on_alloc, recheck), pcp setting and host side (mmap
 * with MADV_DONTNEED or MADV_FREE, memfd with PUNCH_HOLE, sim) drawn from the seed.
 *
 * The seed is printed; BH_TEST_SEED=N reruns it.  8 rounds of 150k operations (50k under a
 * sanitizer): 1.2M operations (400k) in a few seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hint_test_util.h"

#if HT_SANITIZED
#define OPS_PER_ROUND 50000
#else
#define OPS_PER_ROUND 150000
#endif
#define ROUNDS 8
#define SLOTS 1024

struct blk {
  uint64_t pfn;
  unsigned order;
  uint64_t tag;
  bool live;
};

static const unsigned order_weight[] = {45, 12, 10, 8, 4, 4, 4, 4, 4, 3, 2};

static unsigned pick_order(ht_rng_t *r) {
  unsigned x = (unsigned)ht_below(r, 100), order = 0;
  while (x >= order_weight[order]) {
    x -= order_weight[order];
    order++;
  }
  return order;
}

static unsigned pick_gfp(ht_rng_t *r) {
  unsigned gfp = 0, x = (unsigned)ht_below(r, 100);
  if (x < 25)
    gfp |= BH_GFP_DMA32;
  x = (unsigned)ht_below(r, 100);
  if (x < 60)
    gfp |= BH_GFP_MOVABLE;
  else if (x < 75)
    gfp |= BH_GFP_RECLAIMABLE;
  if (ht_below(r, 50) == 0)
    gfp |= BH_GFP_HIGH;
  return gfp;
}

static uint64_t *word(bh_arena_t *a, uint64_t pfn, unsigned order, bool last) {
  uint64_t *base = bh_pfn_to_addr(a, pfn);
  return last ? base + ((BH_PAGE_SIZE << order) / 8 - 1) : base;
}

struct totals {
  uint64_t ops, allocs, frees, enospc, steps, checks, violations, bad_tags, errors;
  uint64_t reported_blocks, stale, report_calls, refaults;
};

static void run_round(uint64_t seed, int round, struct totals *t) {
  ht_rng_t rng = {seed ^ ((uint64_t)round * 0xd1b54a32d192ed03ull)};
  static const char *const thresholds[] = {"1", "2", "4", "16", "16", "64"};
  static const char *const batches[] = {"1", "3", "16", "16", "32"};
  static const char *const orders[] = {"9", "9", "8", "10"};
  bh_opt_t opts[5] = {
      {"threshold", thresholds[ht_below(&rng, 6)]},
      {"batch", batches[ht_below(&rng, 5)]},
      {"order", orders[ht_below(&rng, 4)]},
      {"clear_on_alloc", ht_below(&rng, 2) ? "1" : "0"},
      {"recheck", ht_below(&rng, 2) ? "1" : "0"},
  };
  bool pcp = ht_below(&rng, 3) != 0;
  static const int nslots_choice[] = {64, 256, 1024};
  int nslots = nslots_choice[ht_below(&rng, 3)]; /* fewer live blocks: more high-order merges */
  /* the host side: mostly private anonymous memory with MADV_DONTNEED */
  static const struct {
    enum bh_backing backing;
    bh_report_mode_t mode;
  } hosts[] = {{BH_BACKING_MMAP, BH_REPORT_DONTNEED},
               {BH_BACKING_MMAP, BH_REPORT_DONTNEED},
               {BH_BACKING_MMAP, BH_REPORT_FREE},
               {BH_BACKING_MEMFD, BH_REPORT_PUNCH},
               {BH_BACKING_SIM, BH_REPORT_NONE}};
  int host = (int)ht_below(&rng, 5);
  ht_arena_spec_t spec = {
      .dma32_mib = 16, .normal_mib = 48, .pcp = pcp, .backing = hosts[host].backing};
  bh_arena_t *a = ht_arena(&spec);
  bool data = bh_arena_base(a) != NULL;
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "bitmap";
  hc.opts = opts;
  hc.nopts = 5;
  hc.report = hosts[host].mode;
  bh_hint_t *h;
  assert_int_equal(bh_hint_attach(a, &hc, &h), BH_OK);
  printf("  round %d: %s/%s, %d slots, pcp=%d threshold=%s batch=%s order=%s clear_on_alloc=%s "
         "recheck=%s\n",
         round,
         hosts[host].backing == BH_BACKING_MMAP    ? "mmap"
         : hosts[host].backing == BH_BACKING_MEMFD ? "memfd"
                                                   : "sim",
         bh_report_mode_name(hc.report), nslots, pcp, opts[0].value, opts[1].value, opts[2].value,
         opts[3].value, opts[4].value);

  static struct blk slot[SLOTS];
  memset(slot, 0, sizeof(slot));
  uint64_t now = 0, next_tag = 1;
  for (int op = 0; op < OPS_PER_ROUND; op++) {
    struct blk *b = &slot[ht_below(&rng, (uint64_t)nslots)];
    int cpu = (int)ht_below(&rng, 2);
    t->ops++;
    if (!b->live) {
      unsigned order = pick_order(&rng);
      int err = bh_alloc_pfn(a, pick_gfp(&rng), order, cpu, &b->pfn);
      if (err == BH_ENOSPC) {
        t->enospc++;
      } else if (err) {
        t->errors++;
      } else {
        b->live = true;
        b->order = order;
        b->tag = next_tag++;
        if (data) {
          *word(a, b->pfn, order, false) = b->tag;
          *word(a, b->pfn, order, true) = ~b->tag;
        }
        t->allocs++;
      }
    } else {
      if (data && (*word(a, b->pfn, b->order, false) != b->tag ||
                   *word(a, b->pfn, b->order, true) != ~b->tag))
        t->bad_tags++;
      if (bh_free_pfn(a, b->pfn, b->order, cpu) != BH_OK)
        t->errors++;
      b->live = false;
      t->frees++;
    }
    if (ht_below(&rng, 1000) == 0)
      bh_drain_pcp(a);
    /* mostly small steps; now and then a long idle period */
    now += ht_below(&rng, 100) == 0 ? ht_below(&rng, 10 * BH_NS_PER_SEC) : ht_below(&rng, 2000000);
    long steps = bh_hint_advance(h, now);
    if (steps < 0)
      t->errors++;
    if (steps > 0) {
      t->steps += (uint64_t)steps;
      t->checks++;
      long v = ht_check(a);
      if (v) {
        fprintf(stderr, "round %d op %d: %ld violation(s) after a worker step\n", round, op, v);
        t->violations += (uint64_t)v;
        break;
      }
    }
  }
  /* free everything, drain, let the worker finish, check once more */
  for (int i = 0; i < SLOTS; i++)
    if (slot[i].live) {
      if (data && (*word(a, slot[i].pfn, slot[i].order, false) != slot[i].tag ||
                   *word(a, slot[i].pfn, slot[i].order, true) != ~slot[i].tag))
        t->bad_tags++;
      if (bh_free_pfn(a, slot[i].pfn, slot[i].order, 0) != BH_OK)
        t->errors++;
    }
  bh_drain_pcp(a);
  long steps = bh_hint_advance(h, now + 60 * BH_NS_PER_SEC);
  if (steps > 0)
    t->steps += (uint64_t)steps;
  t->violations += (uint64_t)ht_check(a);
  bh_hint_stats_t hs = ht_hstats(h);
  t->reported_blocks += ht_sstat(h, "reported_blocks");
  t->stale += ht_sstat(h, "stale_bits");
  t->report_calls += hs.report.calls;
  t->refaults += hs.refault_pages;
  if (hs.report.errors)
    t->errors++;
  if (hs.steps != ht_sstat(h, "passes"))
    t->errors++;
  bh_hint_detach(h);
  t->violations += (uint64_t)ht_check(a);
  bh_arena_destroy(a);
}

static void test_property(void **state) {
  (void)state;
  uint64_t seed = ht_seed("test_hinting_property");
  struct totals t;
  memset(&t, 0, sizeof(t));
  double t0 = ht_mono_s();
  for (int r = 0; r < ROUNDS; r++) {
    run_round(seed, r, &t);
    if (t.violations || t.bad_tags || t.errors)
      break;
  }
  printf("%llu ops (%llu allocs, %llu frees, %llu ENOSPC) in %.1f s; %llu worker steps, %llu "
         "checks; %llu blocks reported, %llu stale bits, %llu madvise calls, %llu refaults\n",
         (unsigned long long)t.ops, (unsigned long long)t.allocs, (unsigned long long)t.frees,
         (unsigned long long)t.enospc, ht_mono_s() - t0, (unsigned long long)t.steps,
         (unsigned long long)t.checks, (unsigned long long)t.reported_blocks,
         (unsigned long long)t.stale, (unsigned long long)t.report_calls,
         (unsigned long long)t.refaults);
  assert_int_equal(t.violations, 0);
  assert_int_equal(t.bad_tags, 0);
  assert_int_equal(t.errors, 0);
  assert_int_equal(t.ops, (uint64_t)ROUNDS * OPS_PER_ROUND);
  assert_true(t.steps > 0);
  assert_true(t.reported_blocks > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_property),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
