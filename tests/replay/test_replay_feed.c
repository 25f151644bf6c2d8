/*
 * A replay fed its events as they happen (replay_feed.h, what buddyhint live runs), checked on
 * a recording: the events of traces/real-memhog-300M.bht.zst are fed in batches, from its
 * description's start snapshot, as live would feed the ring buffers' events.
 *
 *  - Every event fed is played and counted; the figures in between grow and hold together
 *    (returned within reported, the events played so far).
 *  - At the end, against the recording's end snapshot, the free memory in the wrong order is
 *    within 2 points of bh_replay_run's on the same trace with --start-order pfn (the start
 *    state a fed replay has: no first pass; measured 1.3 % against 0.2 %), with the same
 *    allocations, no unknown free, and the same repeated mm_page_free_batched events.
 *  - Fed twice, the same figures (deterministic: the virtual clock).
 *  - A description without a free map is refused with the reason.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/machine.h>
#include <buddyhint/replay.h>

#include "replay/replay_feed.h"

#define TRACE BH_SOURCE_DIR "/traces/real-memhog-300M.bht.zst"

typedef struct fed {
  bh_event_t *ev;
  size_t n;
  bh_machine_t *start, *end; /* two parses of the description */
} fed_t;

static void load(fed_t *f) {
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(TRACE, NULL, &t), 0);
  size_t len;
  const char *d = bh_trace_description(t, &len);
  assert_non_null(d);
  char err[256];
  assert_int_equal(bh_machine_parse(d, len, &f->start, err, sizeof(err)), 0);
  assert_int_equal(bh_machine_parse(d, len, &f->end, err, sizeof(err)), 0);
  size_t cap = 1 << 16;
  f->ev = malloc(cap * sizeof(*f->ev));
  f->n = 0;
  int got;
  while ((got = bh_trace_next_batch(t, f->ev + f->n, 4096)) > 0) {
    f->n += (size_t)got;
    if (cap - f->n < 4096) {
      cap *= 2;
      f->ev = realloc(f->ev, cap * sizeof(*f->ev));
      assert_non_null(f->ev);
    }
  }
  assert_int_equal(got, 0);
  assert_true(f->n > 100000);
  bh_trace_close(t);
}

static void cfg_for(bh_replay_config_t *cfg) {
  bh_replay_config_init(cfg);
  cfg->arena.backing = BH_BACKING_SIM;
  cfg->hint.strategy = "bubble";
}

/* Feeds f's events in batches of 10,000, advancing the clock after each as live does. */
static void feed_all(const fed_t *f, bh_machine_t *m, bh_replay_summary_t *out) {
  const bh_snapshot_t *s = bh_machine_snapshot(m, BH_SNAP_START);
  assert_non_null(s);
  assert_true(s->have_freemap);
  bh_replay_config_t cfg;
  cfg_for(&cfg);
  bh__replay_feed_t *fd;
  char err[256] = "";
  int rc = bh__replay_feed_open(&cfg, m, s->window_begin_ns, &fd, err, sizeof(err));
  if (rc)
    fail_msg("feed_open: %s", err);
  uint64_t last_reported = 0;
  for (size_t i = 0; i < f->n; i += 10000) {
    size_t n = f->n - i < 10000 ? f->n - i : 10000;
    assert_int_equal(bh__replay_feed_events(fd, f->ev + i, n), 0);
    bh__replay_feed_advance(fd, f->ev[i + n - 1].time_ns);
    bh_replay_summary_t now;
    bh__replay_feed_figures(fd, NULL, &now);
    assert_int_equal(now.events, i + n);
    assert_true(now.returned_bytes <= now.reported_bytes);
    assert_true(now.reported_bytes >= last_reported);
    assert_false(now.fidelity.present); /* no counts given */
    last_reported = now.reported_bytes;
  }
  assert_int_equal(bh__replay_feed_close(fd, f->end, out, err, sizeof(err)), 0);
}

static void test_feed_against_replay(void **state) {
  (void)state;
  fed_t f;
  load(&f);
  bh_replay_summary_t fed;
  feed_all(&f, f.start, &fed);
  assert_int_equal(fed.events, f.n);
  assert_true(fed.fidelity.present);
  assert_true(fed.reported_bytes > 0); /* 300 MiB freed: bubble reports */

  bh_replay_config_t cfg;
  cfg_for(&cfg);
  cfg.trace = TRACE;
  cfg.start_order_pfn = true;
  cfg.idle_ns = 0;
  bh_replay_summary_t rep;
  char err[256];
  assert_int_equal(bh_replay_run(&cfg, &rep, err, sizeof(err)), 0);
  assert_true(rep.fidelity.present);
  print_message("fed: free_order_error %.4f, allocs %lu, frees %lu; replay %.4f, %lu, %lu\n",
                fed.fidelity.free_order_error, (unsigned long)fed.allocs, (unsigned long)fed.frees,
                rep.fidelity.free_order_error, (unsigned long)rep.allocs, (unsigned long)rep.frees);
  assert_int_equal(fed.allocs, rep.allocs);
  assert_int_equal(fed.unknown_frees, 0); /* every free is of memory the model knows */
  assert_int_equal(fed.batched_dups, rep.batched_dups);
  double d = fed.fidelity.free_order_error - rep.fidelity.free_order_error;
  assert_true(d < 0.02 && d > -0.02);
  bh_machine_free(f.end);
  free(f.ev);
}

static void test_feed_deterministic(void **state) {
  (void)state;
  fed_t f;
  load(&f);
  bh_machine_t *again = NULL;
  char *text;
  size_t len;
  char err[256];
  assert_int_equal(bh_machine_format(f.start, &text, &len), 0);
  assert_int_equal(bh_machine_parse(text, len, &again, err, sizeof(err)), 0);
  free(text);
  bh_replay_summary_t a, b;
  feed_all(&f, f.start, &a); /* f.start is the feed's now; f.end is only read */
  feed_all(&f, again, &b);
  assert_int_equal(a.events, b.events);
  assert_int_equal(a.reported_bytes, b.reported_bytes);
  assert_int_equal(a.returned_bytes, b.returned_bytes);
  assert_int_equal(a.rss_final_bytes, b.rss_final_bytes);
  assert_int_equal(a.madvise_calls, b.madvise_calls);
  assert_int_equal(a.refaults, b.refaults);
  assert_true(a.fidelity.free_order_error == b.fidelity.free_order_error);
  bh_machine_free(f.end);
  free(f.ev);
}

static void test_feed_needs_free_map(void **state) {
  (void)state;
  bh_machine_t *m = bh_machine_new(); /* no layout, no snapshot */
  bh_replay_config_t cfg;
  cfg_for(&cfg);
  bh__replay_feed_t *fd = (bh__replay_feed_t *)&cfg;
  char err[256] = "";
  assert_int_equal(bh__replay_feed_open(&cfg, m, 0, &fd, err, sizeof(err)), BH_EINVAL);
  assert_null(fd);
  assert_non_null(strstr(err, "no machine description"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_feed_against_replay),
      cmocka_unit_test(test_feed_deterministic),
      cmocka_unit_test(test_feed_needs_free_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
