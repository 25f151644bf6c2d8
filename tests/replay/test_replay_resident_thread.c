/*
 * The resident count's bitmaps under two threads: a replay paced by the wall clock runs the
 * hinting worker on a thread of its own, which marks reported pages discarded (and reads the
 * replay's written-page bitmap to keep the count of pages both written and discarded) while the
 * replay thread writes that bitmap and allocates.  Run under ThreadSanitizer ("thread" in the
 * name), a plain access to either bitmap from both threads is a reported race.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

static void test_paced_bubble(void **state) {
  (void)state;
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = BH_SOURCE_DIR "/traces/gen-memhog-256M.bht.zst";
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = "bubble";
  /* 16 s of virtual time in 3.2 s of wall clock, at least: the worker reports after its
   * delay of 2 s (page_reporting's, counted on the wall clock when pacing) */
  cfg.speed = 5;
  cfg.idle_ns = 10ull * BH_NS_PER_SEC;
  cfg.sample_ns = 100 * 1000 * 1000;
  bh_replay_summary_t s;
  char err[256];
  int rc = bh_replay_run(&cfg, &s, err, sizeof(err));
  if (rc)
    fail_msg("paced replay: %s", err);
  assert_true(s.reported_bytes > 0); /* the worker thread did mark pages */
  assert_true(s.rss_peak_bytes > 0);
  /* resident memory is written memory: never more than the arena */
  assert_true(s.rss_final_bytes <= s.memory_bytes);
}

/*
 * The same in a recorded machine's shape, where the replay also reads the arena's blocks for
 * placement agreement (where the kernel's block is) and the start state's reported blocks are
 * put back at the tail of their lists, while the worker isolates and reports.
 */
static void test_paced_bubble_in_shape(void **state) {
  (void)state;
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = BH_SOURCE_DIR "/traces/real-thp-256M.bht.zst";
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = "bubble";
  /* 62 s of trace in about 0.6 s, then 10 s of idle after it: a ThreadSanitizer build plays
   * the trace several times slower, and the worker reports 2 s (of the wall clock) after the
   * free that reached the reporting order (it did not get to it in 4 s, once) */
  cfg.speed = 100;
  cfg.idle_ns = 10ull * BH_NS_PER_SEC * 100;
  bh_replay_summary_t s;
  char err[256];
  int rc = bh_replay_run(&cfg, &s, err, sizeof(err));
  if (rc)
    fail_msg("paced replay in the machine's shape: %s", err);
  assert_string_equal(s.layout, "machine");
  assert_true(s.agreement.present && s.agreement.allocs > 0);
  assert_true(s.reported_bytes > 0);
  assert_int_equal(s.check_violations, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_paced_bubble),
                                     cmocka_unit_test(test_paced_bubble_in_shape)};
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
