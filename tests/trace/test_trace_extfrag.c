/*
 * The fallbacks (mm_page_alloc_extfrag): read from ftrace text with the pcp events
 * (bh_trace_opts_t.pcp_events) and skipped without them, written and read back by both
 * version 3 native formats, refused where a field is bad.
 */
#include "trace_test_util.h"

/*
 * Linux 6.12 include/trace/events/kmem.h:295 prints "page=%p pfn=0x%lx alloc_order=%d
 * fallback_order=%d pageblock_order=%d alloc_migratetype=%d fallback_migratetype=%d
 * fragmenting=%d change_ownership=%d".  The first line is one a 6.18 kernel wrote (the same
 * format): a Reclaimable (2) allocation of order 0 claiming a Movable (1) order-10 block.  The
 * second is a steal: an Unmovable (0) order-0 allocation from an order-3 Movable block,
 * fragmenting, the pageblock keeping its type.
 */
static const char ftrace_xf[] =
    "# tracer: nop\n"
    "         python3-19784   [000] d..3.  1850.097912: mm_page_alloc_extfrag: "
    "page=000000003ed7c19c pfn=0x397c00 alloc_order=0 fallback_order=10 pageblock_order=9 "
    "alloc_migratetype=2 fallback_migratetype=1 fragmenting=0 change_ownership=1\n"
    "         python3-19784   [000] d..3.  1850.097913: mm_page_alloc: page=000000003ed7c19c "
    "pfn=0x397c00 order=0 migratetype=2 gfp_flags=GFP_KERNEL|__GFP_RECLAIMABLE\n"
    "     kworker/1:0-31      [001] d..2.  1851.000000: mm_page_alloc_extfrag: "
    "page=00000000a1b2c3d4 pfn=0x10a2b8 alloc_order=0 fallback_order=3 pageblock_order=9 "
    "alloc_migratetype=0 fallback_migratetype=1 fragmenting=1 change_ownership=0\n";

static void test_ftrace(void **state) {
  (void)state;
  const char *p = tt_write_str("xf.txt", ftrace_xf);
  bh_event_t *evs;
  size_t n;
  bh_trace_counts_t c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = false}, &evs, &n);
  assert_int_equal(n, 1); /* not asked for: lines of another event */
  assert_int_equal(evs[0].op, BH_EV_ALLOC);
  assert_int_equal(evs[0].fallback_order, 0);
  assert_int_equal(c.other_lines, 1 + 2);
  free(evs);
  c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = true}, &evs, &n);
  assert_int_equal(n, 3);
  assert_int_equal(c.allocs, 1);
  assert_int_equal(c.frees, 0);
  assert_int_equal(evs[0].op, BH_EV_EXTFRAG);
  assert_int_equal(evs[0].pfn, 0x397c00);
  assert_int_equal(evs[0].order, 0);       /* alloc_order */
  assert_int_equal(evs[0].migratetype, 2); /* alloc_migratetype */
  assert_int_equal(evs[0].fallback_order, 10);
  assert_int_equal(evs[0].fallback_migratetype, 1);
  assert_int_equal(evs[0].change_ownership, 1);
  assert_int_equal(evs[0].cpu, 0);
  assert_int_equal(evs[0].pid, 19784);
  assert_int_equal(evs[0].gfp, 0);
  assert_int_equal(evs[0].time_ns, 1850097912000ull);
  assert_int_equal(evs[1].op, BH_EV_ALLOC);
  assert_int_equal(evs[1].fallback_migratetype, 0); /* the fallback fields: op 7 only */
  assert_int_equal(evs[2].op, BH_EV_EXTFRAG);
  assert_int_equal(evs[2].pfn, 0x10a2b8);
  assert_int_equal(evs[2].migratetype, 0);
  assert_int_equal(evs[2].fallback_order, 3);
  assert_int_equal(evs[2].fallback_migratetype, 1);
  assert_int_equal(evs[2].change_ownership, 0);
  assert_int_equal(evs[2].pid, 31);
  free(evs);
  /* a missing or bad field is malformed, and says which */
  static const char *const bad[] = {
      "   x-1 [000] d..3.  1.000000: mm_page_alloc_extfrag: page=0000000000000001 pfn=0x200 "
      "alloc_order=0 pageblock_order=9 alloc_migratetype=2 fallback_migratetype=1 fragmenting=0 "
      "change_ownership=1\n",
      "   x-1 [000] d..3.  1.000000: mm_page_alloc_extfrag: page=0000000000000001 pfn=0x200 "
      "alloc_order=0 fallback_order=64 pageblock_order=9 alloc_migratetype=2 "
      "fallback_migratetype=1 fragmenting=0 change_ownership=1\n",
      "   x-1 [000] d..3.  1.000000: mm_page_alloc_extfrag: page=0000000000000001 pfn=0x200 "
      "alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=2 "
      "fallback_migratetype=1 fragmenting=0 change_ownership=2\n",
      "   x-1 [000] d..3.  1.000000: mm_page_alloc_extfrag: page=0000000000000001 pfn=0x200 "
      "fallback_order=10 pageblock_order=9 alloc_migratetype=2 fallback_migratetype=1 "
      "fragmenting=0 change_ownership=1\n"};
  static const char *const why[] = {"missing fallback_order=", "bad fallback_order '64'",
                                    "bad change_ownership '2'", "missing alloc_order="};
  for (int i = 0; i < 4; i++) {
    bh_trace_opts_t o = {.pcp_events = true};
    bh_trace_t *t;
    bh_event_t ev;
    assert_int_equal(bh_trace_open(tt_write_str("bad.txt", bad[i]), &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    if (!strstr(bh_trace_error(t), why[i]))
      fail_msg("line %d: '%s' does not say '%s'", i, bh_trace_error(t), why[i]);
    bh_trace_close(t);
  }
}

static void assert_fallback_equal(const bh_event_t *a, const bh_event_t *b) {
  tt_assert_event_equal(a, b);
  assert_int_equal(a->fallback_order, b->fallback_order);
  assert_int_equal(a->fallback_migratetype, b->fallback_migratetype);
  assert_int_equal(a->change_ownership, b->change_ownership);
  assert_int_equal(a->percpu_refill, b->percpu_refill);
}

/* Both native formats keep every field of the ftrace events; readers without pcp_events skip
 * them; a version 2 writer and bad fields are refused. */
static void test_round_trip(void **state) {
  (void)state;
  bh_event_t *in;
  size_t n;
  tt_read_counts(tt_write_str("xf.txt", ftrace_xf), &(bh_trace_opts_t){.pcp_events = true}, &in,
                 &n);
  assert_int_equal(n, 3);
  static const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    const char *out = tt_path(f ? "rt.bht" : "rt.txt");
    bh_trace_writer_t *w;
    assert_int_equal(bh_trace_writer_open2(out, formats[f], BH_TRACE_COMP_NONE, NULL, &w), 0);
    assert_int_equal(bh_trace_write(w, &in[0]), BH_EINVAL); /* version 2 */
    bh_trace_writer_abort(w);
    assert_int_equal(bh_trace_writer_open2(out, formats[f], BH_TRACE_COMP_NONE, NULL, &w), 0);
    assert_int_equal(bh_trace_writer_pcp_events(w), 0);
    bh_event_t bad = in[1];
    bad.fallback_order = 3; /* on an allocation */
    assert_int_equal(bh_trace_write(w, &bad), BH_EINVAL);
    bad = in[0];
    bad.change_ownership = 2;
    assert_int_equal(bh_trace_write(w, &bad), BH_EINVAL);
    bad = in[0];
    bad.fallback_migratetype = -2;
    assert_int_equal(bh_trace_write(w, &bad), BH_EINVAL);
    for (size_t i = 0; i < n; i++)
      assert_int_equal(bh_trace_write(w, &in[i]), 0);
    assert_int_equal(bh_trace_writer_close(w), 0);
    bh_trace_opts_t o = {.pcp_events = true};
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(out, &o, &t), 0);
    assert_int_equal(bh_trace_version(t), 3);
    bh_event_t *back;
    size_t m;
    assert_int_equal(tt_read_all(t, &back, &m), 0);
    bh_trace_close(t);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++)
      assert_fallback_equal(&back[i], &in[i]);
    free(back);
    bh_trace_counts_t c = tt_read_counts(out, NULL, &back, &m);
    assert_int_equal(m, 1);
    assert_int_equal(back[0].op, BH_EV_ALLOC);
    assert_int_equal(back[0].seq, 0);
    assert_int_equal(c.events, 1);
    free(back);
  }
  /* the binary record: fallback_order in byte 30, fallback_migratetype in 31, change_ownership
   * in flag bit 2; a reserved flag bit set is malformed */
  size_t len;
  unsigned char *b = tt_read(tt_path("rt.bht"), &len);
  unsigned char *r = b + len - 3 * 32; /* the first record */
  assert_int_equal(r[26], BH_EV_EXTFRAG);
  assert_int_equal(r[30], 10);
  assert_int_equal(r[31], 1);
  assert_int_equal(r[29], 0x04);
  r[29] |= 0x08;
  const char *p = tt_write("rt-bad.bht", b, len);
  free(b);
  bh_trace_opts_t o = {.pcp_events = true};
  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(p, &o, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_non_null(strstr(bh_trace_error(t), "extfrag record"));
  bh_trace_close(t);
  free(in);
}

/* Native text: X lines need both fallback keys; claim= belongs to X only. */
static void test_native_text(void **state) {
  (void)state;
  const char *p = tt_write_str("x3.txt", "# buddyhint-trace 3\n"
                                         "310 X 0x400 0 cpu=1 mt=0 fallback_order=3 "
                                         "fallback_mt=1 claim=1\n");
  bh_event_t *evs;
  size_t n;
  tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = true}, &evs, &n);
  assert_int_equal(n, 1);
  assert_int_equal(evs[0].op, BH_EV_EXTFRAG);
  assert_int_equal(evs[0].fallback_order, 3);
  assert_int_equal(evs[0].fallback_migratetype, 1);
  assert_int_equal(evs[0].change_ownership, 1);
  free(evs);
  static const char *const bad[] = {"# buddyhint-trace 3\n310 X 0x400 0 fallback_mt=1\n",
                                    "# buddyhint-trace 3\n310 X 0x400 0 fallback_order=3\n",
                                    "# buddyhint-trace 3\n310 Z 0x400 0 claim=1\n",
                                    "# buddyhint-trace 2\n310 X 0x400 0\n"};
  static const char *const why[] = {
      "missing fallback_order=", "missing fallback_mt=", "unknown key 'claim'", "bad op 'X'"};
  for (int i = 0; i < 4; i++) {
    bh_trace_opts_t o = {.pcp_events = true};
    bh_trace_t *t;
    bh_event_t ev;
    assert_int_equal(bh_trace_open(tt_write_str("bad.txt", bad[i]), &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    if (!strstr(bh_trace_error(t), why[i]))
      fail_msg("line %d: '%s' does not say '%s'", i, bh_trace_error(t), why[i]);
    bh_trace_close(t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ftrace),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_native_text),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
