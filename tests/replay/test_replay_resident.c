/*
 * The sim backing's resident count is kept as the bitmaps change (pages written, counted by
 * the replay; pages written and discarded, counted by the core), not recounted at each sample.
 * With BH_REPLAY_CHECK_RESIDENT set, every count the replay takes (each sample, each worker
 * step, every 65536 events, the end) is also recounted by a full pass over both bitmaps, and
 * the first difference fails the run with a message that says where.
 *
 * Here: the project's traces, generated and recorded (the recorded ones in their machine's
 * shape, with its start state), under the three strategies, with compaction off, at Linux's
 * default (the recorded traces) and at its most eager, and with samples every 50 ms on the
 * generated traces.  Each run
 * must succeed: a count that drifted from the bitmaps once fails it.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

#define TRACES BH_SOURCE_DIR "/traces/"

struct run {
  const char *trace;
  const char *strategy;
  unsigned proactiveness;
  uint64_t sample_ns;
  enum bh_touch touch;
};

static void replay_checked(const struct run *c) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = c->trace;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = c->strategy;
  cfg.compaction_proactiveness = c->proactiveness;
  if (c->sample_ns)
    cfg.sample_ns = c->sample_ns;
  cfg.touch = c->touch;
  FILE *timeline = tmpfile(); /* its discarded_bytes column comes from the kept count too */
  assert_non_null(timeline);
  cfg.timeline = timeline;
  bh_replay_summary_t s;
  char err[256];
  int rc = bh_replay_run(&cfg, &s, err, sizeof(err));
  fclose(timeline);
  if (rc)
    fail_msg("%s, %s, proactiveness %u: %s", c->trace, c->strategy, c->proactiveness, err);
  assert_true(s.events > 0);
  if (c->touch != BH_TOUCH_NONE)
    assert_true(s.rss_peak_bytes > 0);
}

static void test_generated(void **state) {
  (void)state;
  static const char *const traces[] = {"gen-memhog-256M", "gen-frag-stress-256M", "gen-guests-256M",
                                       "gen-page-fault1-small"};
  static const char *const strategies[] = {"none", "bitmap", "bubble"};
  static const unsigned proactiveness[] = {0, 100}; /* the recorded traces run at 20 */
  char path[512];
  for (size_t t = 0; t < sizeof(traces) / sizeof(traces[0]); t++) {
    snprintf(path, sizeof(path), TRACES "%s.bht.zst", traces[t]);
    for (size_t s = 0; s < 3; s++)
      for (size_t p = 0; p < 2; p++)
        replay_checked(
            &(struct run){path, strategies[s], proactiveness[p], 50 * 1000 * 1000, BH_TOUCH_PAGE});
  }
  /* nothing written: nothing resident, whatever is discarded */
  snprintf(path, sizeof(path), TRACES "gen-memhog-256M.bht.zst");
  replay_checked(&(struct run){path, "bubble", 20, 0, BH_TOUCH_NONE});
}

static void test_recorded(void **state) {
  (void)state;
  static const char *const traces[] = {"real-bursts", "real-pyservice", "real-thp-256M"};
  static const char *const strategies[] = {"none", "bitmap", "bubble"};
  char path[512];
  for (size_t t = 0; t < sizeof(traces) / sizeof(traces[0]); t++) {
    snprintf(path, sizeof(path), TRACES "%s.bht.zst", traces[t]);
    for (size_t s = 0; s < 3; s++)
      replay_checked(&(struct run){path, strategies[s], 20, 0, BH_TOUCH_PAGE});
  }
  snprintf(path, sizeof(path), TRACES "real-bursts.bht.zst");
  replay_checked(&(struct run){path, "bubble", 100, 0, BH_TOUCH_FULL});
}

int main(void) {
  setenv("BH_REPLAY_CHECK_RESIDENT", "1", 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_generated),
                                     cmocka_unit_test(test_recorded)};
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
