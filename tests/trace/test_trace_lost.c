/*
 * Events a recording lost, in every format the reader knows, and the version 2 native formats
 * that keep them (lost-events markers) together with a machine description in the header.
 */
#include "trace_test_util.h"

#include <buddyhint/replay.h>

static const char ftrace_lost[] =
    "# tracer: nop\n"
    "#\n"
    "# entries-in-buffer/entries-written: 2/9   #P:2\n"
    "#\n"
    "   memhog-4242 [001] d..1.  1234.567890: mm_page_alloc: page=000000003b8e1cde "
    "pfn=0x10a2b3 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
    "CPU:1 [LOST 5 EVENTS]\n"
    "   memhog-4242 [001] d..1.  1234.567990: mm_page_free: page=000000003b8e1cde "
    "pfn=0x10a2b3 order=0\n";

/* ftrace: the header's entries-written above entries-in-buffer (7) and [LOST 5 EVENTS]. */
static void test_ftrace_lost(void **state) {
  (void)state;
  size_t n;
  bh_trace_counts_t c = tt_read_counts(tt_write_str("lost.txt", ftrace_lost), NULL, NULL, &n);
  assert_int_equal(n, 2);
  assert_int_equal(c.lost_events, 7 + 5);
  /* a trace without loss: 0, and an equal header counts nothing */
  c = tt_read_counts(
      tt_write_str("nolost.txt", "# entries-in-buffer/entries-written: 4/4   #P:2\n"), NULL, NULL,
      &n);
  assert_int_equal(c.lost_events, 0);
}

/* trace-cmd report: "[N EVENTS DROPPED]", and without a count at least one. */
static void test_trace_cmd_dropped(void **state) {
  (void)state;
  const char *p =
      tt_write_str("tc.txt", "cpus=2\n"
                             "CPU:0 [204600 EVENTS DROPPED]\n"
                             "   memhog-4242 [000]  1.000001: mm_page_free: page=0xffff "
                             "pfn=0x10 order=0\n"
                             "CPU:1 [EVENTS DROPPED]\n");
  size_t n;
  bh_trace_counts_t c = tt_read_counts(p, NULL, NULL, &n);
  assert_int_equal(n, 1);
  assert_int_equal(c.lost_events, 204600 + 1);
}

/* perf script --show-lost-events: PERF_RECORD_LOST lines. */
static void test_perf_lost(void **state) {
  (void)state;
  const char *p = tt_write_str(
      "perf.txt", "            perf     0 [000]     0.000000: PERF_RECORD_LOST lost 17\n"
                  "          memhog  4242 [000]  1234.567890: kmem:mm_page_alloc: "
                  "page=0xffffea0004289c40 pfn=0x10a271 order=0 migratetype=1 "
                  "gfp_flags=GFP_HIGHUSER_MOVABLE\n");
  size_t n;
  bh_trace_counts_t c = tt_read_counts(p, NULL, NULL, &n);
  assert_int_equal(n, 1);
  assert_int_equal(c.lost_events, 17);
}

/* Native text version 2: "TIME L COUNT" lines count and are no events; version 1 refuses
 * them; a bad count is malformed. */
static void test_native_text_markers(void **state) {
  (void)state;
  size_t n;
  bh_trace_counts_t c = tt_read_counts(tt_write_str("v2.txt", "# buddyhint-trace 2\n"
                                                              "10 A 0x10 0\n"
                                                              "11 L 3 cpu=1\n"
                                                              "12 F 0x10 0\n"
                                                              "13 L 4 # a comment\n"),
                                       NULL, NULL, &n);
  assert_int_equal(n, 2);
  assert_int_equal(c.lost_events, 7);
  bh_trace_t *t;
  bh_event_t ev;
  const char *p = tt_write_str("v1-l.txt", "# buddyhint-trace 1\n10 L 3\n");
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":2: bad op 'L' (A, F or B)"));
  bh_trace_close(t);
  static const char *const bad[] = {"10 L 0", "10 L", "10 L x", "10 L 3 pid=1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char text[128];
    snprintf(text, sizeof(text), "# buddyhint-trace 2\n%s\n", bad[i]);
    p = tt_write_str("v2-bad.txt", text);
    assert_int_equal(bh_trace_open(p, NULL, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    bh_trace_close(t);
  }
}

static const char desc[] = "buddyhint-machine 1\n@machine 1\nnr_cpus 2\n@end\n";

/* The writer's version 2: description and markers survive text and binary, compressed or
 * not; the events are the same as without them; version 1 writers refuse markers. */
static void test_v2_round_trip(void **state) {
  (void)state;
  static const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  static const int comps[] = {BH_TRACE_COMP_NONE, BH_TRACE_COMP_ZSTD};
  for (int f = 0; f < 2; f++)
    for (int z = 0; z < 2; z++) {
      const char *p = tt_path("rt.trace");
      bh_trace_writer_t *w;
      assert_int_equal(bh_trace_writer_open2(p, formats[f], comps[z], desc, &w), 0);
      bh_event_t a = {.time_ns = 5,
                      .pfn = 0x10,
                      .op = BH_EV_ALLOC,
                      .pid = -1,
                      .cpu = 0,
                      .migratetype = -1,
                      .gfp = BH_GFP_MOVABLE};
      bh_event_t fr = {
          .time_ns = 9, .pfn = 0x10, .op = BH_EV_FREE, .pid = -1, .cpu = 0, .migratetype = -1};
      assert_int_equal(bh_trace_write_lost(w, 1, 2, -1), 0);
      assert_int_equal(bh_trace_write(w, &a), 0);
      assert_int_equal(bh_trace_write_lost(w, 7, 40, 1), 0);
      assert_int_equal(bh_trace_write_lost(w, 7, 0, 1), BH_EINVAL);
      assert_int_equal(bh_trace_write(w, &fr), 0);
      assert_int_equal(bh_trace_writer_close(w), 0);
      bh_trace_t *t;
      assert_int_equal(bh_trace_open(p, NULL, &t), 0);
      assert_int_equal(bh_trace_version(t), 2);
      size_t len;
      assert_string_equal(bh_trace_description(t, &len), desc);
      assert_int_equal(len, strlen(desc));
      bh_event_t ev;
      assert_int_equal(bh_trace_next(t, &ev), 1);
      assert_int_equal(ev.op, BH_EV_ALLOC);
      assert_int_equal(ev.seq, 0);
      assert_int_equal(bh_trace_next(t, &ev), 1);
      assert_int_equal(ev.op, BH_EV_FREE);
      assert_int_equal(ev.seq, 1);
      assert_int_equal(bh_trace_next(t, &ev), 0);
      bh_trace_counts_t c;
      bh_trace_counts(t, &c);
      assert_int_equal(c.lost_events, 42);
      assert_int_equal(c.events, 2);
      bh_trace_close(t);
    }
  /* version 1: no description, no markers */
  bh_trace_writer_t *w;
  assert_int_equal(
      bh_trace_writer_open(tt_path("v1.bht"), BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, &w), 0);
  assert_int_equal(bh_trace_write_lost(w, 1, 2, -1), BH_EINVAL);
  assert_int_equal(bh_trace_writer_close(w), 0);
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(tt_path("v1.bht"), NULL, &t), 0);
  assert_int_equal(bh_trace_version(t), 1);
  assert_null(bh_trace_description(t, NULL));
  bh_trace_close(t);
}

/* Binary version 2 by hand: a description cut short, and a bad marker record. */
static void test_binary_v2_errors(void **state) {
  (void)state;
  unsigned char b[24 + 8 + 32];
  memset(b, 0, sizeof(b));
  memcpy(b, "BHTRACE1", 8);
  b[8] = 2;
  b[12] = 32;
  b[16] = 100; /* a 100-byte description, 8 given */
  memcpy(b + 24, "abcdefgh", 8);
  const char *p = tt_write("short-desc.bht", b, 32);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": truncated machine description"));
  b[16] = 8; /* now whole, then one lost record of 0 events: malformed */
  unsigned char *r = b + 32;
  r[26] = 4;
  p = tt_write("zero-lost.bht", b, sizeof(b));
  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_string_equal(bh_trace_description(t, NULL), "abcdefgh");
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ": record 0: lost-events record of 0 events "
                                                   "(op 4, order 0)"));
  bh_trace_close(t);
  r[8] = 9; /* 9 events lost: fine */
  p = tt_write("nine-lost.bht", b, sizeof(b));
  size_t n;
  assert_int_equal(tt_read_counts(p, NULL, NULL, &n).lost_events, 9);
  assert_int_equal(n, 0);
  b[8] = 1; /* the same record in version 1 (16-byte header): op 4 is malformed there */
  memmove(b + 16, b + 32, 32);
  p = tt_write("v1-lost.bht", b, 48);
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  bh_trace_close(t);
}

/* The replay counts lost events; strict makes them an error. */
static void test_replay_lost(void **state) {
  (void)state;
  const char *p = tt_write_str("replay-lost.txt", ftrace_lost);
  bh_replay_config_t rc;
  bh_replay_config_init(&rc);
  rc.trace = p;
  rc.arena.backing = BH_BACKING_SIM;
  rc.idle_ns = 0;
  bh_replay_summary_t s;
  char err[256];
  assert_int_equal(bh_replay_run(&rc, &s, err, sizeof(err)), 0);
  assert_int_equal(s.lost_events, 12);
  rc.strict = true;
  assert_int_equal(bh_replay_run(&rc, &s, err, sizeof(err)), BH_EFORMAT);
  assert_string_equal(err, tt_msg(p, ": the trace lost 12 events (--strict)"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ftrace_lost),   cmocka_unit_test(test_trace_cmd_dropped),
      cmocka_unit_test(test_perf_lost),     cmocka_unit_test(test_native_text_markers),
      cmocka_unit_test(test_v2_round_trip), cmocka_unit_test(test_binary_v2_errors),
      cmocka_unit_test(test_replay_lost),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
