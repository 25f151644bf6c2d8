/*
 * bh_trace_next_batch returns exactly the events bh_trace_next returns, in the same order,
 * with the same counters, for every format and batch size, and reports an error only after
 * the events before it.
 */
#include "trace_test_util.h"

#include <cmocka.h>

/* Reads path one by one and in batches of `batch`; asserts that both agree. */
static void compare_reads(const char *path, int batch, bool lenient) {
  bh_trace_opts_t o = {.lenient = lenient};
  bh_trace_t *a, *b;
  assert_int_equal(bh_trace_open(path, &o, &a), 0);
  assert_int_equal(bh_trace_open(path, &o, &b), 0);
  bh_event_t *one;
  size_t n;
  int end_one = tt_read_all(a, &one, &n);
  bh_event_t *evs = malloc(sizeof(*evs) * (size_t)batch);
  size_t k = 0;
  int r;
  while ((r = bh_trace_next_batch(b, evs, batch)) > 0) {
    assert_true(r <= batch);
    for (int i = 0; i < r; i++, k++) {
      assert_true(k < n);
      tt_assert_event_equal(&one[k], &evs[i]);
    }
  }
  assert_int_equal(k, n);
  assert_int_equal(r, end_one); /* the same end: 0, or the same error */
  bh_trace_counts_t ca, cb;
  bh_trace_counts(a, &ca);
  bh_trace_counts(b, &cb);
  assert_int_equal(ca.events, cb.events);
  assert_int_equal(ca.lines, cb.lines);
  assert_int_equal(ca.other_lines, cb.other_lines);
  assert_int_equal(ca.malformed, cb.malformed);
  assert_int_equal(ca.allocs, cb.allocs);
  assert_int_equal(ca.frees, cb.frees);
  free(one);
  free(evs);
  bh_trace_close(a);
  bh_trace_close(b);
}

static const char *write_binary(const char *name, int nev, bool bad_record_at_end) {
  const char *p = tt_path(name);
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, &w), 0);
  for (int i = 0; i < nev; i++) {
    bh_event_t ev = {.time_ns = 1000u + (uint64_t)i,
                     .pfn = 0x1000u + (uint64_t)i,
                     .pid = 7,
                     .cpu = i % 3,
                     .op = i % 2 ? BH_EV_FREE : BH_EV_ALLOC,
                     .order = 0,
                     .migratetype = -1};
    if (ev.op == BH_EV_ALLOC)
      ev.gfp = BH_GFP_USER_MOVABLE;
    assert_int_equal(bh_trace_write(w, &ev), 0);
  }
  assert_int_equal(bh_trace_writer_close(w), 0);
  if (bad_record_at_end) {
    unsigned char rec[32] = {0};
    rec[26] = 9; /* no such op */
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(rec, 1, sizeof(rec), f), sizeof(rec));
    fclose(f);
  }
  return p;
}

static void test_text_formats(void **state) {
  (void)state;
  static const char *const files[] = {"ftrace_6x.txt", "ftrace_old.txt", "native.txt",
                                      "perf_script.txt"};
  static const int batches[] = {1, 2, 7, 256};
  for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", DATA_DIR, files[f]);
    for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++)
      compare_reads(p, batches[b], false);
  }
}

static void test_binary_large(void **state) {
  (void)state;
  /* more records than one read buffer holds, so batches straddle refills */
  const char *p = write_binary("big.bht", 200000, false);
  compare_reads(p, 1, false);
  compare_reads(p, 255, false);
  compare_reads(p, 4096, false);
}

static void test_binary_error_after_events(void **state) {
  (void)state;
  const char *p = write_binary("bad.bht", 100, true);
  compare_reads(p, 64, false); /* 100 events, then BH_EFORMAT on the next call */
  compare_reads(p, 64, true);  /* lenient: skipped and counted */
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  bh_event_t evs[300];
  assert_int_equal(bh_trace_next_batch(t, evs, 300), 100);
  assert_int_equal(bh_trace_next_batch(t, evs, 300), BH_EFORMAT);
  assert_int_equal(bh_trace_next_batch(t, evs, 300), BH_EFORMAT); /* errors are final */
  assert_int_equal(bh_trace_next_batch(t, evs, 0), BH_EINVAL);
  bh_trace_close(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_formats),
      cmocka_unit_test(test_binary_large),
      cmocka_unit_test(test_binary_error_after_events),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
