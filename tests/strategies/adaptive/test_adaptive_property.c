/*
 * Property test of adaptive hinting in the virtual clock: seeded random allocations and frees
 * (orders 0..10, several zones and mobilities, pcp on or off, now and then a pcp drain) with
 * the clock advanced after every operation, mostly by little and now and then by a long idle,
 * and the invariant checker run after every worker step.  Every block carries a tag in its
 * first and last word, read back before it is freed: a report that discarded allocated memory
 * zeroes it.  Each round draws the strategy's options (ages, growth, lowest order, reporting
 * order, rate cap, runs, capacity), the pcp setting and the host side (mmap with
 * MADV_DONTNEED or MADV_FREE, memfd with PUNCH_HOLE, sim) from the seed.  At the end of a
 * round everything is freed and the worker given time: every free block at or above the
 * lowest aging order must then be reported.
 *
 * The seed is printed; BH_TEST_SEED=N reruns it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hinting/hint_test_util.h"

#if HT_SANITIZED
#define OPS_PER_ROUND 15000
#else
#define OPS_PER_ROUND 40000
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
  unsigned gfp = ht_below(r, 100) < 25 ? BH_GFP_DMA32 : 0, x = (unsigned)ht_below(r, 100);
  if (x < 60)
    gfp |= BH_GFP_MOVABLE;
  else if (x < 75)
    gfp |= BH_GFP_RECLAIMABLE;
  return gfp;
}

static uint64_t *word(bh_arena_t *a, uint64_t pfn, unsigned order, bool last) {
  uint64_t *base = bh_pfn_to_addr(a, pfn);
  return last ? base + ((BH_PAGE_SIZE << order) / 8 - 1) : base;
}

struct totals {
  uint64_t ops, steps, checks, violations, bad_tags, errors, aged_blocks, reported_blocks,
      unreported_end, refaults;
};

static const char *const optsets[] = {
    "",
    "age=0 growth=1 interval=50ms",
    "age=20ms growth=2 interval=20ms low=0",
    "age=50ms growth=1.5 interval=40ms rate=0",
    "age=10ms growth=4 interval=30ms rate=2 capacity=4",
    "age=5ms interval=25ms runs=0 capacity=1",
    "order=6 low=1 age=10ms interval=20ms",
    "order=10 low=5 age=30ms growth=1.25 interval=50ms delay=100ms",
    "low=9 delay=50ms",
};

static void parse_opts(const char *s, char *buf, size_t len, bh_opt_t *o, size_t *n) {
  snprintf(buf, len, "%s", s);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok && *n < 8;
       tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    *eq = 0;
    o[*n].key = tok;
    o[*n].value = eq + 1;
    (*n)++;
  }
}

static bool tags_ok(bh_arena_t *a, const struct blk *b) {
  return *word(a, b->pfn, b->order, false) == b->tag && *word(a, b->pfn, b->order, true) == ~b->tag;
}

static unsigned opt_value(const char *opts, const char *key, unsigned dflt) {
  const char *p = strstr(opts, key);
  return p ? (unsigned)atoi(p + strlen(key)) : dflt;
}

/*
 * Free pages the strategy should have reported by now and did not: in every zone, blocks of
 * orders [low, order) if the zone has room for a batch of order - 1 blocks (the aging part's
 * watermark gate), and of orders >= order if it has room for a batch at order (page
 * reporting's gate).
 */
static uint64_t unreported(bh_arena_t *a, const char *opts) {
  unsigned order = opt_value(opts, "order=", 9), low = opt_value(opts, "low=", 3);
  uint64_t capacity = opt_value(opts, "capacity=", 32), n = 0;
  if (low > order)
    low = order;
  for (int i = 0; i < bh_arena_zone_count(a); i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    bh_zone_lock(z);
    bool aging_room = low < order && bh_zone_low_wmark_ok(z, capacity << (order - 1));
    bool room = bh_zone_low_wmark_ok(z, capacity << order);
    for (unsigned o = low; o <= bh_arena_max_order(a); o++) {
      if (!(o < order ? aging_room : room))
        continue;
      for (int mt = 0; mt < BH_MT_TYPES; mt++)
        for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
             p = bh_free_list_next(z, o, mt, p))
          if (!bh_block_reported(z, p))
            n += 1ull << o;
    }
    bh_zone_unlock(z);
  }
  return n;
}

static void run_round(uint64_t seed, int round, struct totals *t) {
  ht_rng_t rng = {seed ^ ((uint64_t)round * 0xd1b54a32d192ed03ull)};
  const char *opts_s = optsets[ht_below(&rng, sizeof(optsets) / sizeof(optsets[0]))];
  char buf[256];
  bh_opt_t opts[8];
  size_t nopts;
  parse_opts(opts_s, buf, sizeof buf, opts, &nopts);
  bool pcp = ht_below(&rng, 3) != 0;
  int nslots = (int[]){64, 256, 1024}[ht_below(&rng, 3)];
  static const struct {
    enum bh_backing backing;
    bh_report_mode_t mode;
  } hosts[] = {{BH_BACKING_MMAP, BH_REPORT_DONTNEED},
               {BH_BACKING_MMAP, BH_REPORT_DONTNEED},
               {BH_BACKING_MMAP, BH_REPORT_FREE},
               {BH_BACKING_MEMFD, BH_REPORT_PUNCH},
               {BH_BACKING_SIM, BH_REPORT_NONE}};
  int host = (int)ht_below(&rng, 5);
  /* zones large enough for the watermark gates (low + capacity << order free) once idle */
  ht_arena_spec_t spec = {
      .dma32_mib = 96, .normal_mib = 128, .pcp = pcp, .backing = hosts[host].backing};
  bh_arena_t *a = ht_arena(&spec);
  bool data = bh_arena_base(a) != NULL;
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "adaptive";
  hc.opts = opts;
  hc.nopts = nopts;
  hc.report = hosts[host].mode;
  bh_hint_t *h;
  assert_int_equal(bh_hint_attach(a, &hc, &h), BH_OK);
  printf("  round %d: %s, %d slots, pcp=%d, options '%s'\n", round, bh_report_mode_name(hc.report),
         nslots, pcp, opts_s);

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
      if (err && err != BH_ENOSPC)
        t->errors++;
      if (!err) {
        b->live = true;
        b->order = order;
        b->tag = next_tag++;
        if (data) {
          *word(a, b->pfn, order, false) = b->tag;
          *word(a, b->pfn, order, true) = ~b->tag;
        }
      }
    } else {
      if (data && !tags_ok(a, b))
        t->bad_tags++;
      if (bh_free_pfn(a, b->pfn, b->order, cpu) != BH_OK)
        t->errors++;
      b->live = false;
    }
    if (ht_below(&rng, 1000) == 0)
      bh_drain_pcp(a);
    now += ht_below(&rng, 500) == 0 ? ht_below(&rng, 3 * BH_NS_PER_SEC) : ht_below(&rng, 200000);
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
  /* free everything but a scattered few (so that small free blocks stay), then idle */
  for (int i = 0; i < SLOTS; i++)
    if (slot[i].live && (i % 8 || slot[i].order > 2)) {
      if (data && !tags_ok(a, &slot[i]))
        t->bad_tags++;
      if (bh_free_pfn(a, slot[i].pfn, slot[i].order, 0) != BH_OK)
        t->errors++;
      slot[i].live = false;
    }
  bh_drain_pcp(a);
  for (int k = 0; k < 200; k++) {
    now += 100 * 1000000ull;
    if (bh_hint_advance(h, now) > 0)
      t->violations += (uint64_t)ht_check(a);
  }
  now += 1200 * BH_NS_PER_SEC; /* longer than any age drawn above, and bubble's ~16 passes */
  for (int k = 0; k < 40; k++)
    bh_hint_advance(h, now + (uint64_t)k * 2 * BH_NS_PER_SEC);
  for (int i = 0; i < SLOTS; i++)
    if (slot[i].live && data && !tags_ok(a, &slot[i]))
      t->bad_tags++;
  t->violations += (uint64_t)ht_check(a);
  /* everything at and above the lowest aging order is reported by now, in the zones that
   * pass the watermark gates */
  uint64_t left = unreported(a, opts_s);
  if (left)
    fprintf(stderr, "round %d: %llu free pages not reported\n", round, (unsigned long long)left);
  t->unreported_end += left;
  t->aged_blocks += ht_sstat(h, "aged_blocks_reported");
  t->reported_blocks += ht_sstat(h, "blocks_reported");
  bh_hint_stats_t hs = ht_hstats(h);
  t->refaults += hs.refault_pages;
  if (hs.report.errors || ht_sstat(h, "report_errors"))
    t->errors++;
  bh_hint_detach(h);
  t->violations += (uint64_t)ht_check(a);
  for (int i = 0; i < SLOTS; i++)
    if (slot[i].live)
      bh_free_pfn(a, slot[i].pfn, slot[i].order, 0);
  t->violations += (uint64_t)ht_check(a);
  bh_arena_destroy(a);
}

static void test_property(void **state) {
  (void)state;
  uint64_t seed = ht_seed("test_adaptive_property");
  struct totals t;
  memset(&t, 0, sizeof(t));
  double t0 = ht_mono_s();
  for (int r = 0; r < ROUNDS; r++) {
    run_round(seed, r, &t);
    if (t.violations || t.bad_tags || t.errors)
      break;
  }
  printf("%llu ops in %.1f s; %llu worker steps, %llu checks; %llu blocks reported, %llu of "
         "them below the reporting order; %llu refaults\n",
         (unsigned long long)t.ops, ht_mono_s() - t0, (unsigned long long)t.steps,
         (unsigned long long)t.checks, (unsigned long long)t.reported_blocks,
         (unsigned long long)t.aged_blocks, (unsigned long long)t.refaults);
  assert_int_equal(t.violations, 0);
  assert_int_equal(t.bad_tags, 0);
  assert_int_equal(t.errors, 0);
  assert_int_equal(t.unreported_end, 0);
  assert_int_equal(t.ops, (uint64_t)ROUNDS * OPS_PER_ROUND);
  assert_true(t.checks > 0);
  assert_true(t.aged_blocks > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_property),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
