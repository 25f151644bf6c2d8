/* Regression gates: their syntax, the allowance in each direction, the zero-baseline rule, and
 * the figures a summary's JSON gives by name. */
#include <buddyhint.h>
#include <buddyhint/gate.h>
#include <buddyhint/replay.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static bh_gate_t gate(const char *spec) {
  bh_gate_t g;
  char err[256] = "";
  int r = bh_gate_parse(spec, &g, err, sizeof(err));
  if (r)
    fail_msg("%s: %s", spec, err);
  return g;
}

static void test_parse(void **state) {
  (void)state;
  bh_gate_t g = gate("refaults=+10%");
  assert_string_equal(g.metric, "refaults");
  assert_int_equal(g.sign, 1);
  assert_true(g.pct == 10 && g.abs == 0);
  g = gate("returned_bytes=-5");
  assert_int_equal(g.sign, -1);
  assert_true(g.pct == 5);
  g = gate("strategy_stats.reports=+2.5%:64");
  assert_string_equal(g.metric, "strategy_stats.reports");
  assert_true(g.pct == 2.5 && g.abs == 64);
  g = gate("refaults=+0%");
  assert_true(g.pct == 0 && g.sign == 1);

  static const char *const bad[] = {
      "refaults",     "=+1%",          "refaults=10%",    "refaults=+x%",
      "refaults=+-1", "refaults=+1%:", "refaults=+1%:-2", "a b=+1%",
      "refaults=+%",  "refaults=+inf", "refaults=+1%%"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[256] = "";
    assert_int_equal(bh_gate_parse(bad[i], &g, err, sizeof(err)), BH_EFORMAT);
    assert_true(strlen(err) > 0);
  }
  char err[256];
  assert_int_equal(bh_gate_parse("refaults=10%", &g, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "direction"));
}

static void test_format(void **state) {
  (void)state;
  static const char *const specs[] = {"refaults=+10%", "returned_bytes=-5%", "refaults=+2.5%:64"};
  for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
    char buf[96];
    bh_gate_t g = gate(specs[i]);
    assert_int_equal(bh_gate_format(&g, buf, sizeof(buf)), (int)strlen(specs[i]));
    assert_string_equal(buf, specs[i]);
  }
}

/* One gate over one figure: the result of baseline -> now. */
static bh_gate_result_t one(const char *spec, double baseline, double now) {
  static bh_gate_t g;
  g = gate(spec);
  bh_figure_t b = {.value = baseline}, n = {.value = now};
  snprintf(b.name, sizeof(b.name), "%s", g.metric);
  snprintf(n.name, sizeof(n.name), "%s", g.metric);
  bh_gate_result_t r;
  int bad = bh_gate_check(&g, 1, &b, 1, &n, 1, &r);
  assert_int_equal(bad, r.status != BH_GATE_PASS);
  assert_ptr_equal(r.gate, &g);
  return r;
}

static void test_directions(void **state) {
  (void)state;
  assert_int_equal(one("refaults=+10%", 100, 110).status, BH_GATE_PASS); /* exactly allowed */
  bh_gate_result_t r = one("refaults=+10%", 100, 111);
  assert_int_equal(r.status, BH_GATE_FAIL);
  assert_true(fabs(r.change_pct - 11) < 1e-9 && r.allowed == 10 && r.baseline == 100 &&
              r.now == 111);
  assert_int_equal(one("refaults=+10%", 100, 1).status, BH_GATE_PASS); /* better */
  assert_int_equal(one("returned_bytes=-5%", 1000, 950).status, BH_GATE_PASS);
  assert_int_equal(one("returned_bytes=-5%", 1000, 949).status, BH_GATE_FAIL);
  assert_int_equal(one("returned_bytes=-5%", 1000, 5000).status, BH_GATE_PASS);
  /* the absolute allowance where it is the larger one */
  assert_int_equal(one("refaults=+10%:64", 100, 164).status, BH_GATE_PASS);
  assert_int_equal(one("refaults=+10%:64", 100, 165).status, BH_GATE_FAIL);
  assert_int_equal(one("refaults=+10%:5", 1000, 1100).status, BH_GATE_PASS);
  /* a rounded percentage is not a failure: 0.1 + 0.2 is above 0.3 in binary */
  assert_int_equal(one("x=+50%", 0.2, 0.3).status, BH_GATE_PASS);
  assert_int_equal(one("x=+0%", 0.1 + 0.2, 0.3).status, BH_GATE_PASS);
  assert_int_equal(one("x=+0%", 3, 3.001).status, BH_GATE_FAIL);
  /* a negative baseline: the percentage is of its magnitude */
  r = one("x=+10%", -100, -95);
  assert_int_equal(r.status, BH_GATE_PASS);
  assert_true(fabs(r.change_pct - 5) < 1e-9);
}

static void test_zero_baseline(void **state) {
  (void)state;
  bh_gate_result_t r = one("refaults=+1000%", 0, 0);
  assert_int_equal(r.status, BH_GATE_PASS);
  assert_true(r.change_pct == 0);
  r = one("refaults=+1000%", 0, 1);
  assert_int_equal(r.status, BH_GATE_FAIL);
  assert_true(isinf(r.change_pct) && r.change_pct > 0);
  assert_int_equal(one("refaults=+10%:1", 0, 1).status, BH_GATE_PASS);
  assert_int_equal(one("refaults=+10%:1", 0, 2).status, BH_GATE_FAIL);
  assert_int_equal(one("returned_bytes=-5%", 0, 4096).status, BH_GATE_PASS);
  r = one("returned_bytes=-5%", 0, -1);
  assert_int_equal(r.status, BH_GATE_FAIL);
  assert_true(isinf(r.change_pct) && r.change_pct < 0);
}

static void test_missing(void **state) {
  (void)state;
  bh_gate_t g[3] = {gate("refaults=+10%"), gate("returned_bytes=-5%"), gate("madvise_calls=+0%")};
  bh_figure_t b[] = {{"refaults", 10}, {"madvise_calls", 3}, {"refaults", 99}};
  bh_figure_t n[] = {{"refaults", 30}, {"returned_bytes", 7}, {"madvise_calls", 3}};
  bh_gate_result_t r[3];
  assert_int_equal(bh_gate_check(g, 3, b, 3, n, 3, r), 2);
  assert_int_equal(r[0].status, BH_GATE_FAIL); /* the first refaults of the baseline counts */
  assert_true(r[0].baseline == 10 && r[0].now == 30);
  assert_int_equal(r[1].status, BH_GATE_MISSING);
  assert_true(isnan(r[1].change_pct));
  assert_int_equal(r[2].status, BH_GATE_PASS);
  assert_int_equal(bh_gate_check(g, 0, NULL, 0, NULL, 0, NULL), 0);
  assert_string_equal(bh_gate_status_name(BH_GATE_FAIL), "FAIL");
}

static const bh_figure_t *find(const bh_figure_t *f, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(f[i].name, name))
      return &f[i];
  return NULL;
}

static void test_figures_json(void **state) {
  (void)state;
  const char *text = "{\"trace\": \"a \\\"b\\\"\", \"refaults\": 12, \"wall_seconds\": 1.5e-1,"
                     " \"ok\": true, \"no\": false, \"none\": null, \"zones\": [{\"x\": 1}, 2],"
                     " \"fidelity\": {\"present\": true, \"free_order_error\": 0.25,"
                     " \"deep\": {\"n\": -3}}, \"provenance\": {\"seed\": 7}, \"esc\\\"\": 1,"
                     " \"strategy_stats\": {}}";
  bh_figure_t f[16];
  int n = bh_gate_figures_json(text, strlen(text), f, 16);
  assert_int_equal(n, 7);
  assert_true(find(f, n, "refaults")->value == 12);
  assert_true(find(f, n, "wall_seconds")->value == 0.15);
  assert_true(find(f, n, "ok")->value == 1 && find(f, n, "no")->value == 0);
  assert_true(find(f, n, "fidelity.present")->value == 1);
  assert_true(find(f, n, "fidelity.free_order_error")->value == 0.25);
  assert_true(find(f, n, "fidelity.deep.n")->value == -3);
  assert_null(find(f, n, "seed"));
  assert_null(find(f, n, "provenance.seed"));
  assert_null(find(f, n, "x"));
  /* too little room: the count is the same, only max are written */
  assert_int_equal(bh_gate_figures_json(text, strlen(text), f, 2), 7);
  assert_int_equal(bh_gate_figures_json(text, strlen(text), NULL, 0), 7);

  static const char *const bad[] = {"",
                                    "[]",
                                    "{",
                                    "{\"a\": }",
                                    "{\"a\" 1}",
                                    "{\"a\": 1,}",
                                    "{\"a\": 1} x",
                                    "{\"a\": tru}",
                                    "{\"a\": 1e}",
                                    "{\"a\": \"x}"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(bh_gate_figures_json(bad[i], strlen(bad[i]), f, 16), BH_EFORMAT);
}

static void summary(bh_replay_summary_t *s, uint64_t refaults, uint64_t madvise_calls) {
  memset(s, 0, sizeof(*s));
  snprintf(s->strategy, sizeof(s->strategy), "bubble");
  snprintf(s->backing, sizeof(s->backing), "sim");
  s->refaults = refaults;
  s->madvise_calls = madvise_calls;
  s->rss_final_bytes = 64ull << 20;
  s->nr_strategy_stats = 1;
  snprintf(s->strategy_stat_names[0], sizeof(s->strategy_stat_names[0]), "reports");
  s->strategy_stats[0] = 42;
}

static void test_summaries(void **state) {
  (void)state;
  bh_replay_summary_t *b = calloc(2, sizeof(*b)), *n = b + 1;
  assert_non_null(b);
  summary(b, 100, 20);
  summary(n, 150, 20);
  int count = bh_gate_summary_figures(b, NULL, 0);
  assert_true(count > 50);
  bh_figure_t *f = calloc((size_t)count, sizeof(*f));
  assert_int_equal(bh_gate_summary_figures(b, f, (size_t)count), count);
  assert_true(find(f, count, "refaults")->value == 100);
  assert_true(find(f, count, "rss_final_bytes")->value == 64.0 * 1024 * 1024);
  assert_true(find(f, count, "strategy_stats.reports")->value == 42);
  assert_non_null(find(f, count, "arena_stats.pgalloc_normal"));
  assert_null(find(f, count, "strategy")); /* a string */

  bh_gate_t g[BH_GATE_MAX_DEFAULTS];
  size_t ng = bh_gate_defaults(g, BH_GATE_MAX_DEFAULTS, f, (size_t)count);
  bh_gate_result_t r[BH_GATE_MAX_DEFAULTS];
  assert_int_equal(bh_gate_summaries(g, ng, b, n, r), 1); /* refaults +50% */
  for (size_t i = 0; i < ng; i++)
    assert_int_equal(r[i].status, strcmp(g[i].metric, "refaults") ? BH_GATE_PASS : BH_GATE_FAIL);
  assert_int_equal(bh_gate_summaries(g, ng, b, b, r), 0);
  free(f);
  free(b);
}

static void test_defaults(void **state) {
  (void)state;
  bh_gate_t g[BH_GATE_MAX_DEFAULTS];
  assert_int_equal(bh_gate_defaults(g, BH_GATE_MAX_DEFAULTS, NULL, 0), 3);
  char buf[64];
  bh_gate_format(&g[0], buf, sizeof(buf));
  assert_string_equal(buf, "rss_final_bytes=+2%");
  bh_figure_t b[] = {{"refaults", 1}, {"returned_bytes", 4096}};
  assert_int_equal(bh_gate_defaults(g, BH_GATE_MAX_DEFAULTS, b, 2), 4);
  bh_gate_format(&g[0], buf, sizeof(buf));
  assert_string_equal(buf, "returned_bytes=-5%");
  assert_int_equal(bh_gate_defaults(g, 1, b, 2), 4); /* the count, one written */
}

static void test_deterministic(void **state) {
  (void)state;
  assert_true(bh_gate_deterministic("refaults", "sim", 0));
  assert_true(bh_gate_deterministic("rss_final_bytes", "sim", 0));
  assert_false(bh_gate_deterministic("wall_seconds", "sim", 0));
  assert_false(bh_gate_deterministic("cpu_seconds", "sim", 0));
  assert_false(bh_gate_deterministic("minflt", "sim", 0));
  assert_false(bh_gate_deterministic("strategy_stats.lock_ns", "sim", 0));
  assert_true(bh_gate_deterministic("strategy_stats.report_calls", "sim", 0));
  assert_false(bh_gate_deterministic("rss_final_bytes", "mmap", 0));
  assert_false(bh_gate_deterministic("rss_peak_bytes", "memfd", 0));
  assert_true(bh_gate_deterministic("refaults", "mmap", 0));
  assert_false(bh_gate_deterministic("refaults", "sim", 2.0)); /* a wall clock */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),         cmocka_unit_test(test_format),
      cmocka_unit_test(test_directions),    cmocka_unit_test(test_zero_baseline),
      cmocka_unit_test(test_missing),       cmocka_unit_test(test_figures_json),
      cmocka_unit_test(test_summaries),     cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
