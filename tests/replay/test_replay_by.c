/*
 * replay --by: resident memory and refaults attributed to the trace's processes, task names
 * and call sites.
 *
 * The traces are small and their arithmetic known: a page is resident when the replay wrote
 * it (--touch page, the sim backing's model) and no report discarded it since; it counts
 * against the origin of the allocation that last held it.  With strategy none nothing is
 * reported, so freed pages stay with whoever freed them.  Bubble (free page reporting) reports
 * free blocks of order >= pageblock_order 9 (mm/page_reporting.c:269) once PAGE_REPORTING_DELAY
 * (2 s, mm/page_reporting.c:50) has passed; an allocation that gets such a block back takes
 * its 512 pages as refaults.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

static void run(const char *text, const char *strategy, enum bh_replay_by by, uint64_t idle_s,
                bh_replay_summary_t *s) {
  const char *trace = tt_write_str("by.txt", text);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = trace;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.memory_bytes = 256ull << 20;
  cfg.idle_ns = idle_s * BH_NS_PER_SEC;
  cfg.hint.strategy = strategy;
  cfg.hint.report = BH_REPORT_NONE;
  cfg.by = by;
  char err[256];
  int rc = bh_replay_run(&cfg, s, err, sizeof(err));
  if (rc)
    fail_msg("replay: %s", err);
}

static const bh_replay_by_row_t *row(const bh_replay_summary_t *s, const char *key) {
  for (int i = 0; i < s->nr_by_rows; i++)
    if (!strcmp(s->by_rows[i].key, key))
      return &s->by_rows[i];
  fail_msg("no row '%s'", key);
  return NULL;
}

static uint64_t sum_resident(const bh_replay_summary_t *s) {
  uint64_t b = 0;
  for (int i = 0; i < s->nr_by_rows; i++)
    b += s->by_rows[i].resident_bytes;
  return b;
}

/* pid 1: two order-9 blocks, freed; pid 2: three order-0 pages, kept. */
static const char two_pids[] = "# buddyhint-trace 1\n"
                               "1000 A 0x10000 9 pid=1 gfp=GFP_HIGHUSER_MOVABLE\n"
                               "2000 A 0x10200 9 pid=1 gfp=GFP_HIGHUSER_MOVABLE\n"
                               "3000 A 0x20000 0 pid=2 gfp=GFP_KERNEL\n"
                               "4000 A 0x20001 0 pid=2 gfp=GFP_KERNEL\n"
                               "5000 A 0x20002 0 pid=2 gfp=GFP_KERNEL\n"
                               "6000 F 0x10000 9 pid=1\n"
                               "7000 F 0x10200 9 pid=1\n";

static void test_by_pid_none(void **state) {
  (void)state;
  bh_replay_summary_t s;
  run(two_pids, "none", BH_BY_PID, 1, &s);
  assert_int_equal(s.by, BH_BY_PID);
  assert_int_equal(s.nr_by_rows, 2);
  /* the freed blocks are still resident (nothing reports them): the heavier row first */
  assert_string_equal(s.by_rows[0].key, "1");
  const bh_replay_by_row_t *a = row(&s, "1"), *b = row(&s, "2");
  assert_int_equal(a->allocs, 2);
  assert_int_equal(a->alloc_bytes, 2 * 512 * 4096);
  assert_int_equal(a->live_bytes, 0);
  assert_int_equal(a->resident_bytes, 2 * 512 * 4096);
  assert_int_equal(b->allocs, 3);
  assert_int_equal(b->live_bytes, 3 * 4096);
  assert_int_equal(b->resident_bytes, 3 * 4096);
  assert_int_equal(sum_resident(&s), s.rss_final_bytes);
}

/*
 * With bubble, pid 1's freed blocks are reported after 2 s; pid 3 then allocates two order-9
 * blocks at 10 s and gets reported ones back: their pages are its refaults.
 */
static void test_by_pid_refaults(void **state) {
  (void)state;
  char text[1024];
  snprintf(text, sizeof(text),
           "%s"
           "10000000000 A 0x30000 9 pid=3 gfp=GFP_HIGHUSER_MOVABLE\n"
           "10000001000 A 0x30200 9 pid=3 gfp=GFP_HIGHUSER_MOVABLE\n",
           two_pids);
  bh_replay_summary_t s;
  run(text, "bubble", BH_BY_PID, 1, &s);
  assert_true(s.reported_bytes >= 2 * 512 * 4096);
  assert_true(s.refaults > 0);
  const bh_replay_by_row_t *a = row(&s, "1"), *c = row(&s, "3");
  assert_int_equal(a->refaults, 0);
  assert_int_equal(a->resident_bytes, 0); /* reported */
  assert_int_equal(c->refaults, s.refaults);
  assert_int_equal(c->resident_bytes, 2 * 512 * 4096);
  assert_int_equal(sum_resident(&s), s.rss_final_bytes);
}

static void test_by_comm_ftrace(void **state) {
  (void)state;
  static const char text[] = "    memhog-42    [000] d..1.  1.000001: mm_page_alloc: "
                             "page=000000003b8e1cde pfn=0x100 order=2 "
                             "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
                             "    memhog-43    [001] d..1.  1.000002: mm_page_alloc: "
                             "page=000000003b8e1cde pfn=0x200 order=0 "
                             "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
                             " Web Content-7  [001] d..1.  1.000003: mm_page_alloc: "
                             "page=000000003b8e1cde pfn=0x300 order=0 "
                             "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n";
  bh_replay_summary_t s;
  run(text, "none", BH_BY_COMM, 1, &s);
  assert_int_equal(s.nr_by_rows, 2); /* the two memhog threads are one comm */
  assert_string_equal(s.by_rows[0].key, "memhog");
  assert_int_equal(s.by_rows[0].allocs, 2);
  assert_int_equal(s.by_rows[0].resident_bytes, 5 * 4096);
  assert_int_equal(row(&s, "Web Content")->live_bytes, 4096);
}

static void test_by_callsite_perf_script(void **state) {
  (void)state;
  static const char text[] =
      "  a   10 [000]  1.000001: kmem:mm_page_alloc: page=0x1 pfn=0x100 order=1 "
      "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
      "\tffffffff81000000 __alloc_pages_noprof\n"
      "\tffffffff81000001 do_anonymous_page\n"
      "\n"
      "  a   10 [000]  1.000002: kmem:mm_page_alloc: page=0x1 pfn=0x200 order=0 "
      "migratetype=0 gfp_flags=GFP_KERNEL\n"
      "\tffffffff81000002 pte_alloc_one\n"
      "\n"
      "  b   11 [000]  1.000003: kmem:mm_page_alloc: page=0x1 pfn=0x300 order=0 "
      "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
      "\tffffffff81000000 alloc_pages_mpol\n"
      "\tffffffff81000001 do_anonymous_page\n"
      "\n"
      "  b   11 [000]  1.000004: kmem:mm_page_alloc: page=0x1 pfn=0x400 order=0 "
      "migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n";
  bh_replay_summary_t s;
  run(text, "none", BH_BY_CALLSITE, 1, &s);
  assert_int_equal(s.nr_by_rows, 3);
  const bh_replay_by_row_t *anon = row(&s, "do_anonymous_page");
  assert_int_equal(anon->allocs, 2);
  assert_int_equal(anon->alloc_bytes, 3 * 4096);
  assert_int_equal(row(&s, "pte_alloc_one")->allocs, 1);
  assert_int_equal(row(&s, "(unknown)")->allocs, 1); /* no call chain */
}

/* Without --by: no rows, nothing in the JSON; the summary is otherwise the same. */
static void test_by_off(void **state) {
  (void)state;
  bh_replay_summary_t a, b;
  run(two_pids, "bubble", BH_BY_NONE, 5, &a);
  run(two_pids, "bubble", BH_BY_PID, 5, &b);
  assert_int_equal(a.nr_by_rows, 0);
  assert_int_equal(a.by, BH_BY_NONE);
  assert_int_equal(a.rss_final_bytes, b.rss_final_bytes);
  assert_int_equal(a.reported_bytes, b.reported_bytes);
  assert_int_equal(a.refaults, b.refaults);
  const char *p = tt_path("a.json");
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  assert_int_equal(bh_replay_summary_json(&a, f, 2), 0);
  fclose(f);
  size_t len;
  char *j = (char *)tt_read(p, &len);
  j[len] = '\0';
  assert_null(strstr(j, "\"by\""));
  free(j);
  f = fopen(p, "w");
  assert_int_equal(bh_replay_summary_json(&b, f, 0), 0);
  fclose(f);
  j = (char *)tt_read(p, &len);
  j[len] = '\0';
  assert_non_null(strstr(j, "\"by\": {\"key\": \"pid\", \"rows\": [{\"key\": \"1\", "));
  free(j);
  enum bh_replay_by by;
  assert_int_equal(bh_replay_by_parse("callsite", &by), 0);
  assert_int_equal(by, BH_BY_CALLSITE);
  assert_int_equal(bh_replay_by_parse("nope", &by), BH_EINVAL);
  assert_string_equal(bh_replay_by_name(BH_BY_COMM), "comm");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_pid_none),    cmocka_unit_test(test_by_pid_refaults),
      cmocka_unit_test(test_by_comm_ftrace), cmocka_unit_test(test_by_callsite_perf_script),
      cmocka_unit_test(test_by_off),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
