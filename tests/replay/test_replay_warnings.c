/*
 * The summary's warnings (bh_replay_summary_t.warnings, "warnings" in the JSON): a trace with
 * allocations and no free, a recording that lost more than 2 % of its events, a file of a
 * --start folder that is not read; --strict makes any of them an error (BH_EFORMAT).  A trace
 * that frees and lost 1 % of its events is not suspect.  The JSON has its schema_version.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

#include <sys/stat.h>

#define MDATA BH_SOURCE_DIR "/tests/trace/data/machine"

/* Replays text (sim backing) with strict as given; returns bh_replay_run's result. */
static int run(const char *text, bool strict, const char *start_dir, bh_replay_summary_t *s,
               char *err, size_t errlen) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = tt_write_str("warn.txt", text);
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.strict = strict;
  cfg.start_dir = start_dir;
  if (!start_dir)
    cfg.memory_bytes = 64ull << 20;
  return bh_replay_run(&cfg, s, err, errlen);
}

/* A native v2 trace of n allocations, each freed unless no_frees, and `lost` lost events. */
static char *trace(int n, bool no_frees, unsigned lost) {
  size_t cap = 64 + (size_t)n * 96;
  char *t = malloc(cap);
  assert_non_null(t);
  int k = snprintf(t, cap, "# buddyhint-trace 2\n");
  for (int i = 0; i < n; i++) {
    k += snprintf(t + k, cap - (size_t)k, "%d A 0x%x 0 gfp=GFP_KERNEL\n", 1000 + 2 * i, 0x1000 + i);
    if (!no_frees)
      k += snprintf(t + k, cap - (size_t)k, "%d F 0x%x 0\n", 1001 + 2 * i, 0x1000 + i);
  }
  if (lost)
    snprintf(t + k, cap - (size_t)k, "%d L %u\n", 1000 + 2 * n, lost);
  return t;
}

static bool has_warning(const bh_replay_summary_t *s, const char *part) {
  for (int i = 0; i < s->nr_warnings; i++)
    if (strstr(s->warnings[i], part))
      return true;
  return false;
}

static void test_no_frees(void **state) {
  (void)state;
  char *t = trace(50, true, 0), err[512] = "";
  bh_replay_summary_t s;
  assert_int_equal(run(t, false, NULL, &s, err, sizeof(err)), 0);
  assert_int_equal(s.nr_warnings, 1);
  assert_true(has_warning(&s, "50 allocations and no free"));
  assert_int_equal(run(t, true, NULL, &s, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "no free"));
  assert_non_null(strstr(err, "--strict"));
  free(t);
}

/* 100 events and 1 lost: below 2 %, no warning; 100 and 3 lost: 2.9 %, a warning. */
static void test_lost_share(void **state) {
  (void)state;
  char *t = trace(50, false, 1), err[512] = "";
  bh_replay_summary_t s;
  assert_int_equal(run(t, false, NULL, &s, err, sizeof(err)), 0);
  assert_int_equal(s.lost_events, 1);
  assert_int_equal(s.nr_warnings, 0);
  free(t);
  t = trace(50, false, 3);
  assert_int_equal(run(t, false, NULL, &s, err, sizeof(err)), 0);
  assert_int_equal(s.nr_warnings, 1);
  assert_true(has_warning(&s, "lost 3 of its 103 events (2.9 %)"));
  free(t);
}

/* A file of the --start folder that is not read: a warning in the summary, an error with
 * --strict. */
static void test_folder(void **state) {
  (void)state;
  char *dir = strdup(tt_path("guest"));
  assert_int_equal(mkdir(dir, 0700), 0);
  const char *names[] = {"zoneinfo", "buddyinfo", "pagetypeinfo"};
  for (int i = 0; i < 3; i++) {
    char src[512], dst[64];
    snprintf(src, sizeof(src), "%s/guest61/%s", MDATA, names[i]);
    snprintf(dst, sizeof(dst), "guest/%s.txt", names[i]);
    size_t n;
    unsigned char *b = tt_read(src, &n);
    tt_write(dst, b, n);
    free(b);
  }
  tt_write_str("guest/vmstat", "nr_free_pages 1\n");
  char *t = trace(10, false, 0), err[512] = "";
  bh_replay_summary_t s;
  assert_int_equal(run(t, false, dir, &s, err, sizeof(err)), 0);
  assert_string_equal(s.start_state, "counts"); /* the .txt files were read */
  assert_int_equal(s.nr_warnings, 1);
  assert_true(has_warning(&s, "guest/vmstat: not used"));
  assert_int_equal(run(t, true, dir, &s, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "vmstat"));
  free(t);
  const char *rm[] = {"zoneinfo.txt", "buddyinfo.txt", "pagetypeinfo.txt", "vmstat"};
  for (int i = 0; i < 4; i++) {
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, rm[i]);
    unlink(p);
  }
  rmdir(dir);
  free(dir);
}

/* The JSON: schema_version, and the warnings as a list of strings. */
static void test_json(void **state) {
  (void)state;
  char *t = trace(5, true, 0), err[512] = "";
  bh_replay_summary_t s;
  assert_int_equal(run(t, false, NULL, &s, err, sizeof(err)), 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(bh_replay_summary_json(&s, f, 0), 0);
  fclose(f);
  assert_non_null(strstr(buf, "\"schema_version\": 1, \"warnings\": [\"the trace holds 5 "
                              "allocations and no free"));
  free(buf);
  s.nr_warnings = 0;
  f = open_memstream(&buf, &len);
  assert_int_equal(bh_replay_summary_json(&s, f, 0), 0);
  fclose(f);
  assert_non_null(strstr(buf, "\"warnings\": []"));
  free(buf);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_frees),
      cmocka_unit_test(test_lost_share),
      cmocka_unit_test(test_folder),
      cmocka_unit_test(test_json),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
