/*
 * returned_bytes: of the memory the reports discarded, the resident memory they took back,
 * with one meaning of resident in both backings (pages written by the workload and not
 * discarded since): the sim backing's written-page model and, for real memory, mincore before
 * and after each madvise.
 *
 * A 256 MiB arena, bubble (free page reporting, page_reporting_order 9): an order-0 page is
 * allocated (its order-10 block is split, and the order-9 half without it is free and never
 * written), then an order-10 block is allocated, written page by page (--touch page) and
 * freed.  Free page reporting reports every free block of order >= 9 once its delay has
 * passed (the first pass 2 s after registration, mm/page_reporting.c:50 and :386; the zone
 * passes the low watermark + 32 << 9 pages check of mm/page_reporting.c:269), so it reports
 * nearly the whole arena, and of it exactly the freed 1024 pages were resident: returned_bytes
 * is 4 MiB.  Everything else it reports was never written and returns nothing.  With a
 * second allocate-write-free cycle after the first reports, that block is resident again and
 * reported again: 8 MiB.  With --touch none nothing was written and nothing is returned.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

static const char one_cycle[] = "# buddyhint-trace 1\n"
                                "1000000000000 A 0x20000 0 gfp=GFP_KERNEL\n"
                                "1000100000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
                                "1000500000000 F 0x10000 10\n";

/* The same, and once more after the reports of the first free (at 1002.5 s and later). */
static const char two_cycles[] = "# buddyhint-trace 1\n"
                                 "1000000000000 A 0x20000 0 gfp=GFP_KERNEL\n"
                                 "1000100000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
                                 "1000500000000 F 0x10000 10\n"
                                 "1010000000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
                                 "1010500000000 F 0x10000 10\n";

#define BLOCK_BYTES (1024ull * 4096) /* an order-10 block */

static void run(const char *text, enum bh_backing backing, enum bh_touch touch,
                bh_replay_summary_t *s) {
  const char *trace = tt_write_str("returned.txt", text);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = trace;
  cfg.arena.backing = backing;
  cfg.memory_bytes = 256ull << 20;
  cfg.idle_ns = 30 * BH_NS_PER_SEC;
  cfg.touch = touch;
  cfg.hint.strategy = "bubble";
  char err[512] = "";
  if (bh_replay_run(&cfg, s, err, sizeof(err)))
    fail_msg("replay: %s", err);
  print_message("%s: reported %lu, returned %lu bytes\n", s->backing,
                (unsigned long)s->reported_bytes, (unsigned long)s->returned_bytes);
}

/* Nearly the whole arena reported, one block of it returned; and nothing resident is left but
 * the order-0 page and what the pcp lists hold allocated (never written). */
static void check_one_cycle(enum bh_backing backing) {
  bh_replay_summary_t s;
  run(one_cycle, backing, BH_TOUCH_PAGE, &s);
  assert_true(s.reported_bytes >= s.memory_bytes / 2);
  assert_int_equal(s.returned_bytes, BLOCK_BYTES);
  assert_int_equal(s.rss_final_bytes, 4096);
  assert_int_equal(s.refaults, 0);
}

static void test_one_cycle_sim(void **state) {
  (void)state;
  check_one_cycle(BH_BACKING_SIM);
}

static void test_one_cycle_mmap(void **state) {
  (void)state;
  check_one_cycle(BH_BACKING_MMAP);
}

/* The same trace gives the same figures in both backings, and a second cycle returns its
 * block again. */
static void test_two_cycles(void **state) {
  (void)state;
  bh_replay_summary_t sim, mm;
  run(two_cycles, BH_BACKING_SIM, BH_TOUCH_PAGE, &sim);
  run(two_cycles, BH_BACKING_MMAP, BH_TOUCH_PAGE, &mm);
  assert_int_equal(sim.returned_bytes, 2 * BLOCK_BYTES);
  assert_int_equal(mm.returned_bytes, 2 * BLOCK_BYTES);
  assert_int_equal(sim.reported_bytes, mm.reported_bytes);
  assert_int_equal(sim.refaults, mm.refaults);
}

/* Nothing written: reports return nothing, in either backing. */
static void test_untouched_returns_nothing(void **state) {
  (void)state;
  bh_replay_summary_t sim, mm;
  run(one_cycle, BH_BACKING_SIM, BH_TOUCH_NONE, &sim);
  run(one_cycle, BH_BACKING_MMAP, BH_TOUCH_NONE, &mm);
  assert_true(sim.reported_bytes >= sim.memory_bytes / 2);
  assert_int_equal(sim.reported_bytes, mm.reported_bytes);
  assert_int_equal(sim.returned_bytes, 0);
  assert_int_equal(mm.returned_bytes, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_cycle_sim),
      cmocka_unit_test(test_one_cycle_mmap),
      cmocka_unit_test(test_two_cycles),
      cmocka_unit_test(test_untouched_returns_nothing),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
