/*
 * The pcp events (mm_page_pcpu_drain, mm_page_alloc_zone_locked): read from ftrace text and the
 * version 3 native formats only when bh_trace_opts_t.pcp_events asks for them, written by a
 * version 3 writer, refused by readers and writers of earlier versions.
 */
#include "trace_test_util.h"

/* Linux 6.12 kmem.h's TP_printk of the two events, as ftrace prints them. */
static const char ftrace_pcp[] =
    "# tracer: nop\n"
    "   memhog-4242 [001] d..1.  1234.500000: mm_page_alloc_zone_locked: page=000000003b8e1cde "
    "pfn=0x10a2b0 order=0 migratetype=1 percpu_refill=1\n"
    "   memhog-4242 [001] d..1.  1234.567890: mm_page_alloc: page=000000003b8e1cde "
    "pfn=0x10a2b0 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
    "  kworker-77   [000] d..2.  1235.000001: mm_page_pcpu_drain: page=00000000a1b2c3d4 "
    "pfn=0x10a2b8 order=3 migratetype=0\n"
    "   memhog-4242 [001] d..1.  1235.100000: mm_page_alloc_zone_locked: page=000000003b8e1cde "
    "pfn=0x10a400 order=9 migratetype=1 percpu_refill=0\n";

static void test_ftrace(void **state) {
  (void)state;
  const char *p = tt_write_str("pcp.txt", ftrace_pcp);
  bh_event_t *evs;
  size_t n;
  /* not asked for: the alloc alone, the pcp lines are lines of other events, no frees */
  bh_trace_counts_t c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = false}, &evs, &n);
  assert_int_equal(n, 1);
  assert_int_equal(evs[0].op, BH_EV_ALLOC);
  assert_int_equal(c.other_lines, 1 + 3);
  assert_int_equal(c.frees, 0);
  free(evs);
  c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = true}, &evs, &n);
  assert_int_equal(n, 4);
  assert_int_equal(c.allocs, 1);
  assert_int_equal(c.frees, 0); /* a drain is no free of a page */
  assert_int_equal(evs[0].op, BH_EV_ALLOC_ZONE_LOCKED);
  assert_int_equal(evs[0].pfn, 0x10a2b0);
  assert_int_equal(evs[0].percpu_refill, 1);
  assert_int_equal(evs[0].migratetype, 1);
  assert_int_equal(evs[0].cpu, 1);
  assert_int_equal(evs[0].time_ns, 1234500000000ull);
  assert_int_equal(evs[2].op, BH_EV_PCPU_DRAIN);
  assert_int_equal(evs[2].pfn, 0x10a2b8);
  assert_int_equal(evs[2].order, 3);
  assert_int_equal(evs[2].migratetype, 0);
  assert_int_equal(evs[2].cpu, 0);
  assert_int_equal(evs[2].pid, 77);
  assert_int_equal(evs[3].order, 9);
  assert_int_equal(evs[3].percpu_refill, 0);
  free(evs);
  /* a zone_locked line without its percpu_refill is malformed when asked for */
  p = tt_write_str("pcp-bad.txt",
                   "   memhog-4242 [001] d..1.  1234.500000: mm_page_alloc_zone_locked: "
                   "page=000000003b8e1cde pfn=0x10a2b0 order=0 migratetype=1\n");
  bh_trace_opts_t o = {.pcp_events = true};
  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(p, &o, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_non_null(strstr(bh_trace_error(t), "missing percpu_refill="));
  bh_trace_close(t);
}

static const char native3[] = "# buddyhint-trace 3\n"
                              "100 Z 0x200 0 cpu=1 mt=1 refill=1\n"
                              "200 A 0x200 0 cpu=1 mt=1 gfp=GFP_KERNEL\n"
                              "300 D 0x208 3 cpu=0 mt=0\n"
                              "400 F 0x200 0 cpu=1\n";

static void test_native_text(void **state) {
  (void)state;
  const char *p = tt_write_str("n3.txt", native3);
  bh_event_t *evs;
  size_t n;
  bh_trace_counts_t c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = false}, &evs, &n);
  assert_int_equal(n, 2);
  assert_int_equal(c.other_lines, 1 + 2); /* the header and the two pcp lines */
  free(evs);
  c = tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = true}, &evs, &n);
  assert_int_equal(n, 4);
  assert_int_equal(c.allocs, 1);
  assert_int_equal(c.frees, 1);
  assert_int_equal(evs[0].op, BH_EV_ALLOC_ZONE_LOCKED);
  assert_int_equal(evs[0].percpu_refill, 1);
  assert_int_equal(evs[2].op, BH_EV_PCPU_DRAIN);
  assert_int_equal(evs[2].pfn, 0x208);
  assert_int_equal(evs[2].order, 3);
  assert_int_equal(evs[2].seq, 2);
  free(evs);
  /* version 2 has no D or Z: malformed, never misread; refill= belongs to Z only */
  static const char *const bad[] = {"# buddyhint-trace 2\n300 D 0x208 3\n",
                                    "# buddyhint-trace 3\n300 D 0x208 3 refill=1\n",
                                    "# buddyhint-trace 3\n300 Z 0x208 3 refill=2\n"};
  static const char *const why[] = {"bad op 'D'", "unknown key 'refill'", "bad refill '2'"};
  for (int i = 0; i < 3; i++) {
    bh_trace_opts_t o = {.pcp_events = true};
    bh_trace_t *t;
    bh_event_t ev;
    assert_int_equal(bh_trace_open(tt_write_str("bad.txt", bad[i]), &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    assert_non_null(strstr(bh_trace_error(t), why[i]));
    bh_trace_close(t);
  }
}

/* Both native formats: a version 3 writer writes what the reader gives back, field by field. */
static void test_round_trip(void **state) {
  (void)state;
  const char *p = tt_write_str("src.txt", native3);
  bh_event_t *in;
  size_t n;
  tt_read_counts(p, &(bh_trace_opts_t){.pcp_events = true}, &in, &n);
  static const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    const char *out = tt_path(f ? "rt.bht" : "rt.txt");
    bh_trace_writer_t *w;
    assert_int_equal(bh_trace_writer_open2(out, formats[f], BH_TRACE_COMP_NONE, "x 1\n", &w), 0);
    /* a version 2 writer refuses them */
    assert_int_equal(bh_trace_write(w, &in[0]), BH_EINVAL);
    bh_trace_writer_abort(w);
    assert_int_equal(bh_trace_writer_open2(out, formats[f], BH_TRACE_COMP_NONE, "x 1\n", &w), 0);
    assert_int_equal(bh_trace_writer_pcp_events(w), 0);
    bh_event_t bad = in[2];
    bad.percpu_refill = 1; /* on a drain */
    assert_int_equal(bh_trace_write(w, &bad), BH_EINVAL);
    bh_trace_writer_abort(w);
    assert_int_equal(bh_trace_writer_open2(out, formats[f], BH_TRACE_COMP_NONE, "x 1\n", &w), 0);
    assert_int_equal(bh_trace_writer_pcp_events(w), 0);
    for (size_t i = 0; i < n; i++)
      assert_int_equal(bh_trace_write(w, &in[i]), 0);
    assert_int_equal(bh_trace_writer_pcp_events(w), BH_EINVAL); /* too late */
    assert_int_equal(bh_trace_writer_close(w), 0);
    bh_trace_opts_t o = {.pcp_events = true};
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(out, &o, &t), 0);
    assert_int_equal(bh_trace_format(t), formats[f]);
    assert_int_equal(bh_trace_version(t), 3);
    bh_event_t *back;
    size_t m;
    assert_int_equal(tt_read_all(t, &back, &m), 0);
    bh_trace_close(t);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++) {
      tt_assert_event_equal(&back[i], &in[i]);
      assert_int_equal(back[i].percpu_refill, in[i].percpu_refill);
    }
    free(back);
    /* without pcp_events: the page events alone, in their order */
    bh_trace_counts_t c = tt_read_counts(out, NULL, &back, &m);
    assert_int_equal(m, 2);
    assert_int_equal(back[0].op, BH_EV_ALLOC);
    assert_int_equal(back[0].percpu_refill, 0); /* the skipped Z before it had refill=1 */
    assert_int_equal(back[1].op, BH_EV_FREE);
    assert_int_equal(back[1].seq, 1);
    assert_int_equal(c.events, 2);
    free(back);
  }
  free(in);
}

/* Writes in[0..n) to out in format (a version 3 writer if v3), after bad, which it refuses. */
static void write_refusing(const char *out, int format, bool v3, const bh_event_t *bad,
                           const bh_event_t *in, size_t n) {
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open2(out, format, BH_TRACE_COMP_NONE, "x 1\n", &w), 0);
  if (v3)
    assert_int_equal(bh_trace_writer_pcp_events(w), 0);
  assert_int_equal(bh_trace_write(w, bad), BH_EINVAL);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(bh_trace_write(w, &in[i]), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
}

/*
 * A page alloc_pages_bulk took (bulk=1, from a recording's bulk probe): an allocation read
 * with or without the pcp events, kept by both native formats at version 3 and written as an
 * ordinary allocation before it; bulk= on an allocation only, 0 or 1, from version 3.
 */
static void test_bulk_flag(void **state) {
  (void)state;
  static const char bulk3[] = "# buddyhint-trace 3\n"
                              "100 A 0x200 0 cpu=1 mt=0 gfp=__GFP_HIGHMEM|__GFP_ZERO bulk=1\n"
                              "200 A 0x201 0 cpu=1 mt=0\n"
                              "300 F 0x200 0 cpu=1\n";
  const char *p = tt_write_str("bulk.txt", bulk3);
  bh_event_t *in;
  size_t n;
  tt_read_counts(p, NULL, &in, &n);
  assert_int_equal(n, 3);
  assert_int_equal(in[0].bulk, 1);
  assert_int_equal(in[1].bulk, 0);
  static const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    for (int v3 = 0; v3 < 2; v3++) {
      const char *out = tt_path(f ? "bulk.bht" : "bulk2.txt");
      bh_event_t bad = in[2];
      bad.bulk = 1; /* on a free */
      write_refusing(out, formats[f], v3, &bad, in, n);
      bh_event_t *back;
      size_t m;
      tt_read_counts(out, &(bh_trace_opts_t){.pcp_events = true}, &back, &m);
      assert_int_equal(m, n);
      for (size_t i = 0; i < n; i++) {
        tt_assert_event_equal(&back[i], &in[i]);
        assert_int_equal(back[i].bulk, v3 ? in[i].bulk : 0);
      }
      free(back);
    }
  }
  free(in);
  /* a binary free record with the bulk flag: malformed */
  const char *out = tt_path("bulkfree.bht");
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open2(out, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, NULL, &w),
                   0);
  assert_int_equal(bh_trace_writer_pcp_events(w), 0);
  bh_event_t fr = {
      .time_ns = 5, .pfn = 0x40, .pid = -1, .cpu = 0, .op = BH_EV_FREE, .migratetype = -1};
  assert_int_equal(bh_trace_write(w, &fr), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
  size_t len;
  unsigned char *b = tt_read(out, &len);
  b[len - 32 + 29] = 0x08; /* the record's flags: BH__TRACE_BIN_BULK */
  const char *bad_bin = tt_write("bulkfree2.bht", b, len);
  free(b);
  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(bad_bin, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_non_null(strstr(bh_trace_error(t), "reserved bits"));
  bh_trace_close(t);
  static const char *const bad[] = {"# buddyhint-trace 3\n300 F 0x208 0 bulk=1\n",
                                    "# buddyhint-trace 3\n300 A 0x208 0 bulk=2\n",
                                    "# buddyhint-trace 2\n300 A 0x208 0 bulk=1\n"};
  static const char *const why[] = {"unknown key 'bulk'", "bad bulk '2'", "unknown key 'bulk'"};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(bh_trace_open(tt_write_str("badbulk.txt", bad[i]), NULL, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    assert_non_null(strstr(bh_trace_error(t), why[i]));
    bh_trace_close(t);
  }
}

/* A version 2 binary trace with a pcp record: malformed, as any unknown op. */
static void test_binary_v2_refuses(void **state) {
  (void)state;
  const char *out = tt_path("v3.bht");
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open2(out, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, NULL, &w),
                   0);
  assert_int_equal(bh_trace_writer_pcp_events(w), 0);
  bh_event_t ev = {.time_ns = 5,
                   .pfn = 0x40,
                   .pid = -1,
                   .cpu = 2,
                   .op = BH_EV_PCPU_DRAIN,
                   .order = 1,
                   .migratetype = 2};
  assert_int_equal(bh_trace_write(w, &ev), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
  size_t len;
  unsigned char *b = tt_read(out, &len);
  assert_int_equal(b[8], 3); /* the version */
  b[8] = 2;
  const char *v2 = tt_write("v2.bht", b, len);
  free(b);
  bh_trace_opts_t o = {.pcp_events = true};
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(v2, &o, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_non_null(strstr(bh_trace_error(t), "bad op"));
  bh_trace_close(t);
}

/*
 * The vmstat worker's runs (BH_EV_VMSTAT): workqueue_execute_start of vmstat_update in ftrace
 * text (Linux 6.12 include/trace/events/workqueue.h: "work struct %p: function %ps"), other
 * work functions other lines; op V in native text, kept by both native formats; returned with
 * pcp_events or vmstat_events alone.
 */
static void test_vmstat(void **state) {
  (void)state;
  const char *p = tt_write_str(
      "vm.txt", "  kworker/1:1-46 [001] ..... 22.016260: workqueue_execute_start: work struct "
                "0000000009162692: function vmstat_update\n"
                "  kworker/0:1-10 [000] ..... 22.100000: workqueue_execute_start: work struct "
                "00000000248229db: function vmstat_shepherd\n"
                "   memhog-4242 [001] d..1.  22.500000: mm_page_free: page=000000003b8e1cde "
                "pfn=0x10a2b0 order=0\n");
  bh_event_t *evs;
  size_t n;
  bh_trace_counts_t c = tt_read_counts(p, NULL, &evs, &n);
  assert_int_equal(n, 1);
  assert_int_equal(c.other_lines, 2);
  free(evs);
  static const bh_trace_opts_t asks[2] = {{.pcp_events = true}, {.vmstat_events = true}};
  for (int a = 0; a < 2; a++) {
    c = tt_read_counts(p, &asks[a], &evs, &n);
    assert_int_equal(n, 2);
    assert_int_equal(c.other_lines, 1); /* vmstat_shepherd */
    assert_int_equal(evs[0].op, BH_EV_VMSTAT);
    assert_int_equal(evs[0].cpu, 1);
    assert_int_equal(evs[0].pid, 46);
    assert_int_equal(evs[0].time_ns, 22016260000ull);
    assert_int_equal(evs[0].pfn, 0);
    assert_int_equal(evs[1].op, BH_EV_FREE);
    free(evs);
  }
  /* native text: V with pfn 0 and order 0, through both native formats */
  p = tt_write_str("vm3.txt", "# buddyhint-trace 3\n100 V 0 0 cpu=1\n200 F 0x200 0 cpu=1\n");
  bh_event_t *in;
  tt_read_counts(p, &(bh_trace_opts_t){.vmstat_events = true}, &in, &n);
  assert_int_equal(n, 2);
  assert_int_equal(in[0].op, BH_EV_VMSTAT);
  static const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    const char *out = tt_path(f ? "vm.bht" : "vm-out.txt");
    bh_event_t bad = in[0];
    bad.pfn = 1;
    write_refusing(out, formats[f], true, &bad, in, n);
    bh_event_t *back;
    size_t m;
    tt_read_counts(out, &(bh_trace_opts_t){.vmstat_events = true}, &back, &m);
    assert_int_equal(m, 2);
    tt_assert_event_equal(&back[0], &in[0]);
    free(back);
    c = tt_read_counts(out, NULL, &back, &m); /* not asked for */
    assert_int_equal(m, 1);
    free(back);
  }
  free(in);
  /* a V line with a pfn is malformed */
  bh_trace_t *t;
  bh_event_t ev;
  bh_trace_opts_t o = {.vmstat_events = true};
  assert_int_equal(
      bh_trace_open(tt_write_str("vm-bad.txt", "# buddyhint-trace 3\n100 V 0x8 0\n"), &o, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_non_null(strstr(bh_trace_error(t), "vmstat"));
  bh_trace_close(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ftrace),
      cmocka_unit_test(test_native_text),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_bulk_flag),
      cmocka_unit_test(test_binary_v2_refuses),
      cmocka_unit_test(test_vmstat),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
