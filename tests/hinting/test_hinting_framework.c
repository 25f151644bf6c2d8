/*
 * The hinting framework (src/hinting/hint.c): the strategy registry, a user strategy written
 * entirely in this file (its own ops table) that is registered, attached by name, notified of
 * final merges at or above its order, reports through the framework and is detached; the
 * attach errors; the option parsers; the virtual clock; the "none" strategy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hint_test_util.h"

#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* A user strategy: counts its hooks, reports every notified block on its step               */
/* ---------------------------------------------------------------------------------------- */

#define UC_MAX_SEEN 256

struct uc_seen {
  bh_zone_t *zone;
  uint64_t pfn;
  unsigned order;
};

struct uc {
  bh_hint_t *h;
  unsigned notify_order, del_order;
  uint64_t delay;
  uint64_t notify_calls, del_calls[3], bad_reason;
  struct uc_seen seen[UC_MAX_SEEN];
  int nseen;
  uint64_t steps, last_now, reported_blocks, reported_pages;
  int report_err;
};

static struct uc *g_uc; /* the live instance, for the test to look at */
static int g_uc_destroyed;

static int uc_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  struct uc *s = calloc(1, sizeof(*s));
  if (!s)
    return BH_ENOMEM;
  s->h = h;
  s->notify_order = 3;
  s->del_order = UINT8_MAX;
  s->delay = 1000000; /* 1 ms */
  for (size_t i = 0; i < nopts; i++) {
    uint64_t v = 0;
    int err;
    if (!strcmp(opts[i].key, "order")) {
      err = bh_opt_u64(&opts[i], 0, bh_arena_max_order(bh_hint_arena(h)), &v);
      s->notify_order = (unsigned)v;
    } else if (!strcmp(opts[i].key, "del")) {
      err = bh_opt_u64(&opts[i], 0, UINT8_MAX, &v);
      s->del_order = (unsigned)v;
    } else if (!strcmp(opts[i].key, "delay")) {
      err = bh_opt_duration(&opts[i], &s->delay);
    } else {
      bh_hint_set_error(h, "test-count: unknown option '%s'", opts[i].key);
      free(s);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(h, "test-count: bad value for %s", opts[i].key);
      free(s);
      return BH_EINVAL;
    }
  }
  bh_hint_set_orders(h, s->notify_order, s->del_order);
  g_uc = s;
  *state = s;
  return BH_OK;
}

static void uc_destroy(void *state) {
  if (g_uc == state)
    g_uc = NULL;
  g_uc_destroyed++;
  free(state);
}

static void uc_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct uc *s = state;
  s->notify_calls++;
  if (s->nseen < UC_MAX_SEEN)
    s->seen[s->nseen++] = (struct uc_seen){z, pfn, order};
  bh_hint_request(s->h, s->delay);
}

static void uc_del(void *state, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  struct uc *s = state;
  if (reason < 0 || reason > 2)
    s->bad_reason++;
  else
    s->del_calls[reason]++;
}

/* Isolates every notified block that is still a free block of the notified order, reports them
 * in one call, puts them back. */
static uint64_t uc_step(void *state, uint64_t now) {
  struct uc *s = state;
  bh_report_range_t r[UC_MAX_SEEN];
  bh_zone_t *rz[UC_MAX_SEEN];
  size_t n = 0;
  s->steps++;
  s->last_now = now;
  for (int i = 0; i < s->nseen; i++) {
    struct uc_seen *e = &s->seen[i];
    unsigned order;
    bh_zone_lock(e->zone);
    if (bh_zone_free_block(e->zone, e->pfn, &order, NULL) && order == e->order &&
        bh_zone_isolate(e->zone, e->pfn, order) == BH_OK) {
      r[n] = (bh_report_range_t){e->pfn, order};
      rz[n++] = e->zone;
    }
    bh_zone_unlock(e->zone);
  }
  s->nseen = 0;
  if (n)
    s->report_err = bh_hint_report(s->h, r, n);
  for (size_t i = 0; i < n; i++) {
    bh_zone_lock(rz[i]);
    bh_zone_putback(rz[i], r[i].pfn, r[i].order, NULL);
    bh_zone_unlock(rz[i]);
    s->reported_blocks++;
    s->reported_pages += 1ull << r[i].order;
  }
  return BH_HINT_IDLE;
}

static void uc_stats(void *state, bh_stat_emit_fn emit, void *ctx) {
  struct uc *s = state;
  emit(ctx, "notify_calls", (double)s->notify_calls);
  emit(ctx, "reported_blocks", (double)s->reported_blocks);
}

static const bh_strategy_ops_t uc_ops = {
    .name = "test-count",
    .summary = "test strategy: counts hooks, reports every notified block",
    .options = "order=3  notify order\ndel=255  del order\ndelay=1ms  step delay\n",
    .create = uc_create,
    .destroy = uc_destroy,
    .notify = uc_notify,
    .del = uc_del,
    .step = uc_step,
    .stats = uc_stats,
};

/* ---------------------------------------------------------------------------------------- */
/* A clock strategy: logs the `now` of every step                                            */
/* ---------------------------------------------------------------------------------------- */

struct clk {
  bh_hint_t *h;
  uint64_t log[256];
  int n;
  uint64_t period; /* step returns now + period (0: idle) */
  uint64_t again;  /* if set, the next step requests a step `again` ns later, once */
  _Atomic uint64_t thread_steps;
  _Atomic uint64_t thread_last_now;
};

static struct clk *g_clk;

static int clk_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  struct clk *c = calloc(1, sizeof(*c));
  if (!c)
    return BH_ENOMEM;
  c->h = h;
  g_clk = c;
  *state = c;
  return BH_OK;
}

static void clk_destroy(void *state) {
  if (g_clk == state)
    g_clk = NULL;
  free(state);
}

static uint64_t clk_step(void *state, uint64_t now) {
  struct clk *c = state;
  if (c->n < 256)
    c->log[c->n++] = now;
  atomic_store(&c->thread_last_now, now);
  atomic_fetch_add(&c->thread_steps, 1);
  if (c->again) {
    uint64_t d = c->again;
    c->again = 0;
    bh_hint_request(c->h, d);
  }
  return c->period ? now + c->period : BH_HINT_IDLE;
}

static const bh_strategy_ops_t clk_ops = {
    .name = "test-clock",
    .summary = "test strategy: logs its steps",
    .create = clk_create,
    .destroy = clk_destroy,
    .step = clk_step,
};

static void register_test_strategies(void) {
  static bool done;
  if (done)
    return;
  assert_int_equal(bh_strategy_register(&uc_ops), BH_OK);
  assert_int_equal(bh_strategy_register(&clk_ops), BH_OK);
  done = true;
}

/* ---------------------------------------------------------------------------------------- */
/* Registry and attach errors                                                                */
/* ---------------------------------------------------------------------------------------- */

static void test_registry(void **state) {
  (void)state;
  /* the built-ins come first, in this order */
  assert_non_null(bh_strategy_at(0));
  assert_string_equal(bh_strategy_at(0)->name, "none");
  assert_string_equal(bh_strategy_at(1)->name, "bitmap");
  assert_string_equal(bh_strategy_at(2)->name, "bubble");
  assert_ptr_equal(bh_strategy_find("none"), bh_strategy_at(0));
  assert_ptr_equal(bh_strategy_find("bitmap"), bh_strategy_at(1));
  assert_ptr_equal(bh_strategy_find("bubble"), bh_strategy_at(2));
  assert_null(bh_strategy_find("no-such-strategy"));
  assert_null(bh_strategy_find(NULL));
  assert_null(bh_strategy_at(-1));
  for (int i = 0; i < 3; i++) {
    assert_non_null(bh_strategy_at(i)->summary);
    assert_non_null(bh_strategy_at(i)->create);
    assert_non_null(bh_strategy_at(i)->step);
  }

  register_test_strategies();
  assert_ptr_equal(bh_strategy_find("test-count"), &uc_ops);
  assert_ptr_equal(bh_strategy_find("test-clock"), &clk_ops);
  int n = 0, found = 0;
  for (const bh_strategy_ops_t *o; (o = bh_strategy_at(n)) != NULL; n++)
    found += o == &uc_ops || o == &clk_ops;
  assert_int_equal(found, 2);
  assert_null(bh_strategy_at(n));

  /* a duplicate name, by the same table or another one */
  assert_int_equal(bh_strategy_register(&uc_ops), BH_EBUSY);
  bh_strategy_ops_t dup = uc_ops;
  dup.name = "bitmap";
  assert_int_equal(bh_strategy_register(&dup), BH_EBUSY);
  assert_ptr_equal(bh_strategy_find("bitmap"), bh_strategy_at(1));
  /* incomplete tables */
  bh_strategy_ops_t bad = uc_ops;
  bad.name = "test-incomplete";
  bad.step = NULL;
  assert_int_equal(bh_strategy_register(&bad), BH_EINVAL);
  bad.step = uc_step;
  bad.create = NULL;
  assert_int_equal(bh_strategy_register(&bad), BH_EINVAL);
  bad.create = uc_create;
  bad.name = "";
  assert_int_equal(bh_strategy_register(&bad), BH_EINVAL);
  bad.name = NULL;
  assert_int_equal(bh_strategy_register(&bad), BH_EINVAL);
  assert_int_equal(bh_strategy_register(NULL), BH_EINVAL);
  assert_null(bh_strategy_find("test-incomplete"));
}

static void test_attach_errors(void **state) {
  (void)state;
  register_test_strategies();
  ht_arena_spec_t spec = {.normal_mib = 16, .pcp = false, .backing = BH_BACKING_MMAP};
  bh_arena_t *a = ht_arena(&spec);
  bh_hint_t *h = NULL, *h2 = NULL;

  assert_int_equal(ht_attach(a, "no-such-strategy", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_ENOENT);
  assert_null(h);
  assert_true(strlen(bh_hint_last_error()) > 0);
  assert_int_equal(ht_attach(NULL, "none", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_EINVAL);
  assert_int_equal(ht_attach(a, "none", NULL, 0, BH_CLOCK_VIRTUAL, NULL), BH_EINVAL);

  /* bad options: the message names the option */
  const struct {
    const char *strategy, *key, *value;
  } bad[] = {
      {"bitmap", "frobnicate", "1"},   {"bitmap", "threshold", "0"},
      {"bitmap", "threshold", "lots"}, {"bitmap", "order", "11"},
      {"bitmap", "batch", "33"},       {"bitmap", "clear_on_alloc", "maybe"},
      {"bitmap", "recheck", ""},       {"none", "anything", "1"},
      {"test-count", "bogus", "1"},    {"test-count", "delay", "soon"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    bh_opt_t o = {bad[i].key, bad[i].value};
    int destroyed = g_uc_destroyed;
    h = NULL;
    int err = ht_attach(a, bad[i].strategy, &o, 1, BH_CLOCK_VIRTUAL, &h);
    if (err != BH_EINVAL || !strstr(bh_hint_last_error(), bad[i].key))
      fprintf(stderr, "%s %s=%s: %s, '%s'\n", bad[i].strategy, bad[i].key, bad[i].value,
              bh_err_name(err), bh_hint_last_error());
    assert_int_equal(err, BH_EINVAL);
    assert_null(h);
    assert_non_null(strstr(bh_hint_last_error(), bad[i].key));
    assert_int_equal(g_uc_destroyed, destroyed); /* create failed: no destroy */
    /* nothing stays attached */
    assert_null(a->hint.ctx);
    for (int z = 0; z < bh_zone_count(a); z++) {
      assert_int_equal(a->zones[z].notify_order, UINT8_MAX);
      assert_int_equal(a->zones[z].del_order, UINT8_MAX);
    }
  }

  /* attaching twice */
  assert_int_equal(ht_attach(a, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);
  assert_string_equal(bh_hint_last_error(), "");
  assert_ptr_equal(bh_hint_strategy(h), bh_strategy_find("bitmap"));
  assert_ptr_equal(bh_hint_arena(h), a);
  assert_int_equal(ht_attach(a, "none", NULL, 0, BH_CLOCK_VIRTUAL, &h2), BH_EBUSY);
  assert_int_equal(ht_attach(a, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h2), BH_EBUSY);
  assert_null(h2);
  assert_true(strlen(bh_hint_last_error()) > 0);
  /* the first attachment still works */
  assert_int_equal(a->zones[0].notify_order, CHUNK_ORDER);
  bh_hint_detach(h);
  assert_int_equal(a->zones[0].notify_order, UINT8_MAX);
  /* and after the detach the arena takes a new one; a NULL config means "none" */
  assert_int_equal(bh_hint_attach(a, NULL, &h), BH_OK);
  assert_string_equal(bh_hint_strategy(h)->name, "none");
  bh_hint_detach(h);
  bh_hint_detach(NULL);

  /* a sim arena cannot discard: DONTNEED is turned into NONE there */
  ht_arena_spec_t sspec = {.normal_mib = 16, .pcp = false, .backing = BH_BACKING_SIM};
  bh_arena_t *sim = ht_arena(&sspec);
  assert_int_equal(ht_attach(sim, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);
  bh_hint_detach(h);
  /* PUNCH needs a memfd */
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  assert_string_equal(hc.strategy, "none");
  assert_int_equal(hc.report, BH_REPORT_DONTNEED);
  assert_int_equal(hc.clock, BH_CLOCK_VIRTUAL);
  hc.report = BH_REPORT_PUNCH;
  assert_int_equal(bh_hint_attach(a, &hc, &h), BH_ENOTSUP);
  assert_null(a->hint.ctx);
  bh_arena_destroy(sim);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* Option parsers, table-driven                                                              */
/* ---------------------------------------------------------------------------------------- */

static void test_opt_parsers(void **state) {
  (void)state;
  const struct {
    const char *v;
    int err;
    uint64_t ns;
  } dur[] = {
      {"1.5", 0, 1500000000ull},    {"2s", 0, 2000000000ull},
      {"500ms", 0, 500000000ull},   {"30us", 0, 30000ull},
      {"100ns", 0, 100ull},         {"0", 0, 0},
      {"0.25ms", 0, 250000ull},     {"1e-6", 0, 1000ull},
      {"60", 0, 60000000000ull},    {"1000000000", 0, 1000000000ull * 1000000000ull},
      {"", BH_EINVAL, 0},           {"-1", BH_EINVAL, 0},
      {"-0.5s", BH_EINVAL, 0},      {"1m", BH_EINVAL, 0},
      {"5 s", BH_EINVAL, 0},        {"2S", BH_EINVAL, 0},
      {"abc", BH_EINVAL, 0},        {"1.5.2", BH_EINVAL, 0},
      {"1000000001", BH_EINVAL, 0}, {"inf", BH_EINVAL, 0},
      {".", BH_EINVAL, 0},          {"nan", BH_EINVAL, 0},
      {"0x1p4", BH_EINVAL, 0},      {" 1", BH_EINVAL, 0},
      {"1e", BH_EINVAL, 0},
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof(dur) / sizeof(dur[0]); i++) {
    bh_opt_t o = {"d", dur[i].v};
    uint64_t ns = 12345;
    int err = bh_opt_duration(&o, &ns);
    bool ok = err == dur[i].err && (err ? ns == 12345 : ns == dur[i].ns);
    if (!ok) {
      fprintf(stderr, "bh_opt_duration(\"%s\") = %s, %llu; expected %s, %llu\n", dur[i].v,
              bh_err_name(err), (unsigned long long)ns, bh_err_name(dur[i].err),
              (unsigned long long)(dur[i].err ? 12345 : dur[i].ns));
      failures++;
    }
  }
  bh_opt_t null_value = {"d", NULL};
  uint64_t ns;
  failures += bh_opt_duration(&null_value, &ns) != BH_EINVAL;
  failures += bh_opt_duration(NULL, &ns) != BH_EINVAL;

  const struct {
    const char *v;
    int err;
    uint64_t bytes;
  } size[] = {
      {"4096", 0, 4096},           {"64K", 0, 64ull << 10},
      {"512M", 0, 512ull << 20},   {"1.5G", 0, 3ull << 29},
      {"2T", 0, 2ull << 40},       {"1GiB", 0, 1ull << 30},
      {"8MB", 0, 8ull << 20},      {"0", 0, 0},
      {"", BH_EINVAL, 0},          {"-1G", BH_EINVAL, 0},
      {"1X", BH_EINVAL, 0},        {"1 G", BH_EINVAL, 0},
      {"G", BH_EINVAL, 0},         {"1Gb", BH_EINVAL, 0},
      {"20000000T", BH_EINVAL, 0}, {"nan", BH_EINVAL, 0},
      {"inf", BH_EINVAL, 0},       {"0x10", BH_EINVAL, 0},
      {" 4096", BH_EINVAL, 0},     {"+1M", BH_EINVAL, 0},
  };
  for (size_t i = 0; i < sizeof(size) / sizeof(size[0]); i++) {
    bh_opt_t o = {"s", size[i].v};
    uint64_t b = 12345;
    int err = bh_opt_size(&o, &b);
    if (err != size[i].err || (err ? b != 12345 : b != size[i].bytes)) {
      fprintf(stderr, "bh_opt_size(\"%s\") = %s, %llu\n", size[i].v, bh_err_name(err),
              (unsigned long long)b);
      failures++;
    }
  }
  failures += bh_opt_size(&null_value, &ns) != BH_EINVAL;

  const struct {
    const char *v;
    uint64_t min, max;
    int err;
    uint64_t out;
  } u64[] = {
      {"0", 0, 10, 0, 0},
      {"10", 0, 10, 0, 10},
      {"11", 0, 10, BH_EINVAL, 0},
      {"4", 5, 10, BH_EINVAL, 0},
      {"0x10", 0, 100, 0, 16},
      {"011", 0, 100, 0, 11}, /* not octal */
      {"0x", 0, 100, BH_EINVAL, 0},
      {" 5", 0, 10, BH_EINVAL, 0},
      {"+5", 0, 10, BH_EINVAL, 0},
      {"18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX},
      {"18446744073709551616", 0, UINT64_MAX, BH_EINVAL, 0},
      {"-1", 0, UINT64_MAX, BH_EINVAL, 0},
      {"", 0, 10, BH_EINVAL, 0},
      {"5x", 0, 10, BH_EINVAL, 0},
      {"x5", 0, 10, BH_EINVAL, 0},
      {"1.0", 0, 10, BH_EINVAL, 0},
  };
  for (size_t i = 0; i < sizeof(u64) / sizeof(u64[0]); i++) {
    bh_opt_t o = {"n", u64[i].v};
    uint64_t out = 777;
    int err = bh_opt_u64(&o, u64[i].min, u64[i].max, &out);
    bool ok = err == u64[i].err && (err ? out == 777 : out == u64[i].out);
    if (!ok) {
      fprintf(stderr, "bh_opt_u64(\"%s\", %llu, %llu) = %s, %llu\n", u64[i].v,
              (unsigned long long)u64[i].min, (unsigned long long)u64[i].max, bh_err_name(err),
              (unsigned long long)out);
      failures++;
    }
  }
  uint64_t out;
  failures += bh_opt_u64(&null_value, 0, 10, &out) != BH_EINVAL;
  failures += bh_opt_u64(NULL, 0, 10, &out) != BH_EINVAL;

  const struct {
    const char *v;
    int err;
    bool out;
  } bl[] = {
      {"1", 0, true},      {"true", 0, true},   {"yes", 0, true},      {"on", 0, true},
      {"TRUE", 0, true},   {"On", 0, true},     {"0", 0, false},       {"false", 0, false},
      {"no", 0, false},    {"off", 0, false},   {"OFF", 0, false},     {"", BH_EINVAL, 0},
      {"2", BH_EINVAL, 0}, {"y", BH_EINVAL, 0}, {"tru", BH_EINVAL, 0}, {"yes ", BH_EINVAL, 0},
  };
  for (size_t i = 0; i < sizeof(bl) / sizeof(bl[0]); i++) {
    for (int init = 0; init < 2; init++) {
      bh_opt_t o = {"b", bl[i].v};
      bool b = init;
      int err = bh_opt_bool(&o, &b);
      bool ok = err == bl[i].err && (err ? b == (bool)init : b == bl[i].out);
      if (!ok) {
        fprintf(stderr, "bh_opt_bool(\"%s\") = %s, %d\n", bl[i].v, bh_err_name(err), b);
        failures++;
      }
    }
  }
  bool b;
  failures += bh_opt_bool(&null_value, &b) != BH_EINVAL;
  failures += bh_opt_bool(NULL, &b) != BH_EINVAL;
  assert_int_equal(failures, 0);
}

/*
 * Regression (src/hinting/hint.c, bh_opt_duration, fixed in 3e765a5): a unit without a number
 * ("s", "ms") parsed as 0 because strtod consumed nothing and only `end` was checked, and "nan"
 * passed the range check (every comparison with NaN is false) and was converted to uint64_t
 * (undefined; 2^63 on x86-64).  All three returned BH_OK.
 */
static void test_opt_duration_no_number(void **state) {
  (void)state;
  static const char *const bad[] = {"s", "ms", "us", "ns", "nan", "NaN", "nanms"};
  int failures = 0;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    bh_opt_t o = {"d", bad[i]};
    uint64_t ns = 12345;
    int err = bh_opt_duration(&o, &ns);
    if (err != BH_EINVAL || ns != 12345) {
      fprintf(stderr, "bh_opt_duration(\"%s\") = %s, %llu; expected EINVAL\n", bad[i],
              bh_err_name(err), (unsigned long long)ns);
      failures++;
    }
  }
  assert_int_equal(failures, 0);
}

/*
 * Regression (src/hinting/hint.c, bh_opt_u64, fixed in 3e765a5): the sign check looked at
 * value[0] only, but strtoull skips leading white space and then accepts and negates a '-':
 * " -1" parsed as 2^64 - 1 without ERANGE, so with max = UINT64_MAX it was accepted.
 */
static void test_opt_u64_negative_after_space(void **state) {
  (void)state;
  static const char *const bad[] = {" -1", "\t-5", "  -18446744073709551615"};
  int failures = 0;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    bh_opt_t o = {"n", bad[i]};
    uint64_t v = 777;
    int err = bh_opt_u64(&o, 0, UINT64_MAX, &v);
    if (err != BH_EINVAL || v != 777) {
      fprintf(stderr, "bh_opt_u64(\"%s\", 0, UINT64_MAX) = %s, %llu; expected EINVAL\n", bad[i],
              bh_err_name(err), (unsigned long long)v);
      failures++;
    }
  }
  assert_int_equal(failures, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* The user strategy end to end                                                              */
/* ---------------------------------------------------------------------------------------- */

/* A 64-page aligned region whose pages were all allocated (as order 0) by the test. */
static uint64_t find_owned_region(const uint8_t *mine, uint64_t npages, unsigned order) {
  uint64_t n = 1ull << order;
  for (uint64_t r = 0; r + n <= npages; r += n) {
    uint64_t i = 0;
    while (i < n && mine[r + i])
      i++;
    if (i == n)
      return r;
  }
  return UINT64_MAX;
}

static void test_user_strategy(void **state) {
  (void)state;
  register_test_strategies();
  ht_arena_spec_t spec = {.normal_mib = 16, .pcp = false, .backing = BH_BACKING_MMAP};
  bh_arena_t *a = ht_arena(&spec);
  uint64_t npages = bh_arena_pages(a);
  uint8_t *mine = calloc(npages, 1);
  assert_non_null(mine);
  for (int i = 0; i < 1024; i++) {
    uint64_t pfn;
    assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn), BH_OK);
    mine[pfn] = 1;
  }
  /* R..R+31 is worked on; R+32..R+63 stays allocated so nothing merges past order 5 */
  uint64_t R = find_owned_region(mine, npages, 6);
  assert_true(R != UINT64_MAX);

  bh_opt_t opts[] = {{"order", "3"}, {"del", "3"}, {"delay", "1ms"}};
  bh_hint_t *h = NULL;
  int destroyed = g_uc_destroyed;
  assert_int_equal(ht_attach(a, "test-count", opts, 3, BH_CLOCK_VIRTUAL, &h), BH_OK);
  struct uc *s = g_uc;
  assert_non_null(s);
  assert_int_equal(a->zones[0].notify_order, 3);
  assert_int_equal(a->zones[0].del_order, 3);
  uint64_t notify0 = ht_astat(a, BH_STAT_hint_notify);
  assert_int_equal(bh_hint_now(h), 0);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);

  /* pages R..R+7: final orders 0,1,0,2,0,1,0,3: only the last reaches order 3 */
  for (int i = 0; i < 8; i++) {
    assert_int_equal(bh_free_pfn(a, R + i, 0, 0), BH_OK);
    assert_int_equal(s->notify_calls, i == 7 ? 1 : 0);
  }
  assert_int_equal(s->nseen, 1);
  assert_int_equal(s->seen[0].pfn, R);
  assert_int_equal(s->seen[0].order, 3);
  assert_ptr_equal(s->seen[0].zone, bh_arena_zone(a, 0));
  assert_int_equal(s->del_calls[BH_DEL_MERGE], 0);
  /* pages R+8..R+15: the last merges with the free order-3 block at R into order 4 */
  for (int i = 8; i < 16; i++) {
    assert_int_equal(bh_free_pfn(a, R + i, 0, 0), BH_OK);
    assert_int_equal(s->notify_calls, i == 15 ? 2 : 1);
  }
  assert_int_equal(s->seen[1].pfn, R);
  assert_int_equal(s->seen[1].order, 4);
  assert_int_equal(s->del_calls[BH_DEL_MERGE], 1); /* the order-3 buddy at R */
  assert_int_equal(s->del_calls[BH_DEL_ALLOC], 0);
  /* the order-4 block is the only one of its order: allocating it is an ALLOC del */
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, 4, 0, &pfn), BH_OK);
  assert_int_equal(pfn, R);
  assert_int_equal(s->del_calls[BH_DEL_ALLOC], 1);
  assert_int_equal(bh_free_pfn(a, R, 4, 0), BH_OK);
  assert_int_equal(s->notify_calls, 3);
  /* small frees elsewhere stay below the notify order */
  uint64_t far = find_owned_region(mine + R + 64, npages - R - 64, 2);
  assert_true(far != UINT64_MAX);
  far += R + 64;
  assert_int_equal(bh_free_pfn(a, far, 0, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, far + 1, 0, 0), BH_OK);
  assert_int_equal(s->notify_calls, 3);
  assert_int_equal(ht_astat(a, BH_STAT_hint_notify) - notify0, 3);
  assert_int_equal(ht_sstat(h, "notify_calls"), 3);

  /* the step is due 1 ms after the first request */
  assert_int_equal(bh_hint_next_due(h), 1000000);
  assert_int_equal(bh_hint_advance(h, 999999), 0);
  assert_int_equal(s->steps, 0);
  assert_int_equal(bh_hint_advance(h, 1000000), 1);
  assert_int_equal(s->steps, 1);
  assert_int_equal(s->last_now, 1000000);
  /* (R,3) is stale (R is order 4 now), (R,4) reported once though notified twice */
  assert_int_equal(s->report_err, 0);
  assert_int_equal(s->reported_blocks, 1);
  assert_int_equal(s->reported_pages, 16);
  assert_int_equal(s->del_calls[BH_DEL_ISOLATE], 1);
  bh_hint_stats_t hs = ht_hstats(h);
  assert_int_equal(hs.steps, 1);
  assert_int_equal(hs.report.calls, 1);
  assert_int_equal(hs.report.ranges, 1);
  assert_int_equal(hs.report.bytes, 16 * BH_PAGE_SIZE);
  assert_int_equal(hs.discarded_pages, 16);
  assert_int_equal(ht_discarded_range(a, R, 16), 16);
  /* the putback did not notify; the block is free again at order 4 */
  assert_int_equal(s->notify_calls, 3);
  assert_int_equal(ht_astat(a, BH_STAT_hint_notify) - notify0, 3);
  bh_zone_lock(bh_arena_zone(a, 0));
  unsigned order = 99;
  assert_true(bh_zone_free_block(bh_arena_zone(a, 0), R, &order, NULL));
  bh_zone_unlock(bh_arena_zone(a, 0));
  assert_int_equal(order, 4);
  assert_int_equal(ht_astat(a, BH_STAT_isolate_pages), 16);
  assert_int_equal(ht_astat(a, BH_STAT_putback_pages), 16);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  assert_int_equal(s->bad_reason, 0);
  assert_int_equal(ht_check(a), 0);

  /* detach: destroyed once, no notification afterwards */
  bh_hint_detach(h);
  assert_int_equal(g_uc_destroyed, destroyed + 1);
  assert_null(g_uc);
  uint64_t notify1 = ht_astat(a, BH_STAT_hint_notify);
  for (int i = 16; i < 32; i++)
    assert_int_equal(bh_free_pfn(a, R + i, 0, 0), BH_OK);
  assert_int_equal(ht_astat(a, BH_STAT_hint_notify), notify1);
  assert_int_equal(ht_check(a), 0);
  free(mine);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* Virtual clock                                                                             */
/* ---------------------------------------------------------------------------------------- */

static void test_virtual_clock(void **state) {
  (void)state;
  register_test_strategies();
  ht_arena_spec_t spec = {.normal_mib = 8, .pcp = false, .backing = BH_BACKING_SIM};
  bh_arena_t *a = ht_arena(&spec);
  bh_hint_t *h = NULL;
  assert_int_equal(ht_attach(a, "test-clock", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);
  struct clk *c = g_clk;
  assert_non_null(c);
  assert_int_equal(bh_hint_now(h), 0);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);

  /* nothing requested: time moves, nothing runs */
  assert_int_equal(bh_hint_advance(h, 1000), 0);
  assert_int_equal(bh_hint_now(h), 1000);
  /* a request runs exactly at now + delay */
  bh_hint_request(h, 500);
  assert_int_equal(bh_hint_next_due(h), 1500);
  assert_int_equal(bh_hint_advance(h, 1499), 0);
  assert_int_equal(bh_hint_now(h), 1499);
  assert_int_equal(bh_hint_advance(h, 1500), 1);
  assert_int_equal(c->n, 1);
  assert_int_equal(c->log[0], 1500);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  /* the earliest of several requests wins, and the step gets that time even when the clock
   * is advanced well past it */
  bh_hint_request(h, 100);
  bh_hint_request(h, 50);
  bh_hint_request(h, 1000);
  assert_int_equal(bh_hint_next_due(h), 1550);
  assert_int_equal(bh_hint_advance(h, 5000), 1);
  assert_int_equal(c->log[1], 1550);
  assert_int_equal(bh_hint_now(h), 5000);
  /* a periodic step: every due time up to the target runs, in order */
  c->period = 300;
  bh_hint_request(h, 0);
  assert_int_equal(bh_hint_advance(h, 6000), 4);
  assert_int_equal(c->n, 6);
  assert_int_equal(c->log[2], 5000);
  assert_int_equal(c->log[3], 5300);
  assert_int_equal(c->log[4], 5600);
  assert_int_equal(c->log[5], 5900);
  assert_int_equal(bh_hint_now(h), 6000);
  assert_int_equal(bh_hint_next_due(h), 6200);
  /* time never goes back */
  assert_int_equal(bh_hint_advance(h, 100), 0);
  assert_int_equal(bh_hint_now(h), 6000);
  assert_int_equal(bh_hint_advance(h, 6000), 0);
  assert_int_equal(bh_hint_advance(h, 6200), 1);
  assert_int_equal(c->log[6], 6200);
  /* a request earlier than the strategy's own next time wins */
  bh_hint_request(h, 10);
  assert_int_equal(bh_hint_next_due(h), 6210);
  assert_int_equal(bh_hint_advance(h, 6210), 1);
  assert_int_equal(c->log[7], 6210);
  assert_int_equal(bh_hint_next_due(h), 6510);
  /* a request made inside a step is kept */
  c->period = 0;
  c->again = 25;
  assert_int_equal(bh_hint_advance(h, 7000), 2);
  assert_int_equal(c->log[8], 6510);
  assert_int_equal(c->log[9], 6535);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  for (int i = 1; i < c->n; i++)
    assert_true(c->log[i] > c->log[i - 1]);
  bh_hint_stats_t hs = ht_hstats(h);
  assert_int_equal(hs.steps, (uint64_t)c->n);
  assert_int_equal(hs.steps, 10);
  /* a huge delay saturates instead of wrapping */
  bh_hint_request(h, UINT64_MAX);
  assert_true(bh_hint_next_due(h) >= bh_hint_now(h));
  assert_int_equal(bh_hint_advance(h, 8000), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

static void test_thread_clock(void **state) {
  (void)state;
  register_test_strategies();
  ht_arena_spec_t spec = {.normal_mib = 8, .pcp = false, .backing = BH_BACKING_SIM};
  bh_arena_t *a = ht_arena(&spec);
  bh_hint_t *h = NULL;
  assert_int_equal(ht_attach(a, "test-clock", NULL, 0, BH_CLOCK_THREAD, &h), BH_OK);
  struct clk *c = g_clk;
  assert_int_equal(bh_hint_advance(h, 1000), BH_EINVAL);
  uint64_t t0 = bh_hint_now(h);
  assert_true(t0 > 0);
  usleep(1000);
  assert_true(bh_hint_now(h) > t0);
  /* an idle worker is woken by a request, not before its time */
  usleep(20000);
  assert_int_equal(atomic_load(&c->thread_steps), 0);
  uint64_t t1 = bh_hint_now(h);
  bh_hint_request(h, 50 * 1000000ull);
  for (int i = 0; i < 5000 && atomic_load(&c->thread_steps) == 0; i++)
    usleep(1000);
  assert_int_equal(atomic_load(&c->thread_steps), 1);
  assert_true(atomic_load(&c->thread_last_now) >= t1 + 50 * 1000000ull);
  /* an earlier request wakes the sleeping worker */
  bh_hint_request(h, 3600 * BH_NS_PER_SEC);
  usleep(10000);
  bh_hint_request(h, 0);
  for (int i = 0; i < 5000 && atomic_load(&c->thread_steps) == 1; i++)
    usleep(1000);
  assert_int_equal(atomic_load(&c->thread_steps), 2);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* "none"                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void test_none_strategy(void **state) {
  (void)state;
  for (int clock = 0; clock < 2; clock++) {
    ht_arena_spec_t spec = {.normal_mib = 64, .pcp = clock == 1, .backing = BH_BACKING_MMAP};
    bh_arena_t *a = ht_arena(&spec);
    bh_hint_t *h = NULL;
    assert_int_equal(ht_attach(a, "none", NULL, 0, clock ? BH_CLOCK_THREAD : BH_CLOCK_VIRTUAL, &h),
                     BH_OK);
    for (int z = 0; z < bh_zone_count(a); z++) {
      assert_int_equal(a->zones[z].notify_order, UINT8_MAX);
      assert_int_equal(a->zones[z].del_order, UINT8_MAX);
    }
    uint64_t blocks[64];
    int n = 0;
    for (unsigned order = 0; order <= 10; order++)
      for (int k = 0; k < 3; k++)
        assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, order, 0, &blocks[n++]), BH_OK);
    n = 0;
    for (unsigned order = 0; order <= 10; order++)
      for (int k = 0; k < 3; k++)
        assert_int_equal(bh_free_pfn(a, blocks[n++], order, 0), BH_OK);
    bh_drain_pcp(a);
    assert_int_equal(ht_astat(a, BH_STAT_hint_notify), 0);
    assert_true(ht_astat(a, BH_STAT_merges) > 0);
    if (!clock) {
      assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
      assert_int_equal(bh_hint_advance(h, 3600 * BH_NS_PER_SEC), 0);
    } else {
      usleep(20000);
    }
    bh_hint_stats_t hs = ht_hstats(h);
    assert_int_equal(hs.steps, 0);
    assert_int_equal(hs.report.calls, 0);
    assert_int_equal(hs.report.ranges, 0);
    assert_int_equal(hs.discarded_pages, 0);
    assert_int_equal(ht_astat(a, BH_STAT_isolate_calls), 0);
    assert_int_equal(ht_check(a), 0);
    bh_hint_detach(h);
    bh_arena_destroy(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry),
      cmocka_unit_test(test_attach_errors),
      cmocka_unit_test(test_opt_parsers),
      cmocka_unit_test(test_opt_duration_no_number),
      cmocka_unit_test(test_opt_u64_negative_after_space),
      cmocka_unit_test(test_user_strategy),
      cmocka_unit_test(test_virtual_clock),
      cmocka_unit_test(test_thread_clock),
      cmocka_unit_test(test_none_strategy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
