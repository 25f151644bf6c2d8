/*
 * Synthetic trace generators (src/gen/gen.c): every event stream is checked by an
 * independent model of what a kernel trace may contain.
 *
 *   - time strictly increases, seq counts from 0, cpu >= 0, pid > 0;
 *   - an allocation names a pfn that is not live (nor waiting for its mm_page_free_batched),
 *     aligned to its order, with migratetype = gfp_migratetype(gfp);
 *   - mm_page_free names a live block with its order; in the default (kernel) mode a
 *     mm_page_free_batched names a block whose mm_page_free came before and that was not
 *     handed out again in between; in frees=single mode it frees a live order-0 block;
 *   - batched frees come in folio batches of at most 31 per process;
 *   - live pages never exceed what the parameters allow, and the workloads that give
 *     everything back end with nothing live.
 */
#include <buddyhint/gen.h>
#include <buddyhint/trace.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGES(bytes) ((uint64_t)(bytes) / 4096)
#define MB (1024ull * 1024)

/* ---- the checker ---- */

/* Per-pfn state: S_LIVE or S_FREED | order (bits 0-5) | migratetype << 8 (allocations). */
enum { S_NONE = 0, S_LIVE = 0x40, S_FREED = 0x80 };
#define S_MT(s) ((s) >> 8 & 0xf)

typedef struct checker {
  bool single;     /* frees=single */
  uint16_t *state; /* per pfn */
  size_t nstate;
  uint64_t events, allocs, frees, batched;
  uint64_t last_t;
  uint64_t live, max_live;
  uint64_t first_order9_live; /* live pages when the first order-9 alloc came (frag-stress) */
  bool seen_order9;
  uint64_t max_live_before9;        /* max live pages before the first order-9 alloc */
  uint64_t pid_live[8], pid_max[8]; /* per pid 1..7 (guests) */
  uint64_t pid_lo[8], pid_hi[8];    /* pfn span per pid 1..7 */
  uint16_t b_run[8192];             /* consecutive mm_page_free_batched per pid: one folio batch */
  uint64_t hash;
  uint64_t errors;
  char first_error[256];
} checker_t;

static void bad(checker_t *c, const bh_event_t *ev, const char *what) {
  if (!c->errors++)
    snprintf(c->first_error, sizeof(c->first_error), "event %llu (op %d pfn %#llx order %d): %s",
             (unsigned long long)ev->seq, ev->op, (unsigned long long)ev->pfn, ev->order, what);
}

static uint16_t *slot(checker_t *c, uint64_t pfn) {
  if (pfn >= c->nstate) {
    size_t n = c->nstate ? c->nstate : 1u << 20;
    while (n <= pfn)
      n *= 2;
    uint16_t *s = realloc(c->state, n * sizeof(*s));
    assert_non_null(s);
    memset(s + c->nstate, 0, (n - c->nstate) * sizeof(*s));
    c->state = s;
    c->nstate = n;
  }
  return &c->state[pfn];
}

static void hash_u64(checker_t *c, uint64_t x) {
  for (int i = 0; i < 8; i++) {
    c->hash ^= (x >> (8 * i)) & 0xff;
    c->hash *= 0x100000001b3ull;
  }
}

static void pid_account(checker_t *c, const bh_event_t *ev, int64_t delta) {
  if (ev->pid < 1 || ev->pid > 7)
    return;
  c->pid_live[ev->pid] += (uint64_t)delta;
  if (c->pid_live[ev->pid] > c->pid_max[ev->pid])
    c->pid_max[ev->pid] = c->pid_live[ev->pid];
}

static int check_event(void *ctx, const bh_event_t *ev) {
  checker_t *c = ctx;
  hash_u64(c, ev->time_ns);
  hash_u64(c, ev->pfn);
  hash_u64(c, (uint64_t)ev->op << 56 | (uint64_t)ev->order << 48 | ev->gfp);
  hash_u64(c, (uint64_t)(uint32_t)ev->pid << 32 | (uint32_t)ev->cpu);
  if (ev->seq != c->events)
    bad(c, ev, "seq is not the event's index");
  if (c->events && ev->time_ns <= c->last_t)
    bad(c, ev, "time does not increase");
  c->last_t = ev->time_ns;
  c->events++;
  if (ev->cpu < 0 || ev->pid <= 0)
    bad(c, ev, "cpu or pid unknown");
  uint16_t *s = slot(c, ev->pfn);
  uint64_t pages = 1ull << ev->order;
  if (ev->pid > 0 && ev->pid < 8192) {
    if (ev->op != BH_EV_FREE_BATCHED)
      c->b_run[ev->pid] = 0;
    else if (!c->single && ++c->b_run[ev->pid] > 31)
      bad(c, ev, "more than 31 mm_page_free_batched in a row: folio batches hold 31");
  }
  switch (ev->op) {
  case BH_EV_ALLOC:
    c->allocs++;
    /* S_FREED is fine here: a lone mm_page_free (kernel memory) gave it back */
    if (*s & S_LIVE)
      bad(c, ev, "allocation of a live pfn");
    if (ev->pfn & (pages - 1))
      bad(c, ev, "pfn not aligned to the order");
    if (ev->migratetype != bh_gfp_migratetype(ev->gfp) || ev->zone != bh_gfp_zone(ev->gfp))
      bad(c, ev, "gfp, migratetype and zone disagree");
    if (ev->failed)
      bad(c, ev, "failed allocation");
    for (uint64_t p = 1; p < pages; p++)
      if (*slot(c, ev->pfn + p) & S_LIVE)
        bad(c, ev, "block overlaps a live one");
    s = slot(c, ev->pfn);
    *s = (uint16_t)(S_LIVE | ev->order | (ev->migratetype & 0xf) << 8);
    c->live += pages;
    if (c->live > c->max_live)
      c->max_live = c->live;
    if (ev->order != 9 && !c->seen_order9 && c->live > c->max_live_before9)
      c->max_live_before9 = c->live;
    if (ev->order == 9 && !c->seen_order9) {
      c->seen_order9 = true;
      c->first_order9_live = c->live - pages;
    }
    pid_account(c, ev, (int64_t)pages);
    if (ev->pid >= 1 && ev->pid <= 7) {
      if (!c->pid_lo[ev->pid] || ev->pfn < c->pid_lo[ev->pid])
        c->pid_lo[ev->pid] = ev->pfn;
      if (ev->pfn + pages > c->pid_hi[ev->pid])
        c->pid_hi[ev->pid] = ev->pfn + pages;
    }
    return 0;
  case BH_EV_FREE:
  case BH_EV_FREE_BATCHED: {
    bool lone_b = ev->op == BH_EV_FREE_BATCHED && !c->single;
    if (ev->gfp || ev->migratetype != -1)
      bad(c, ev, "free with gfp or migratetype");
    if (lone_b) { /* the second half of a batched free */
      c->batched++;
      if (ev->order != 0)
        bad(c, ev, "mm_page_free_batched with order != 0");
      if (!(*s & S_FREED))
        bad(c, ev, "mm_page_free_batched without its mm_page_free");
      *s = S_NONE;
      return 0;
    }
    c->frees++;
    if (!(*s & S_LIVE) || (*s & 0x3f) != ev->order) {
      bad(c, ev, "free of a block that is not live with this order");
      return 0;
    }
    if (c->single && ev->op == BH_EV_FREE_BATCHED && ev->order)
      bad(c, ev, "frees=single: batched free of order > 0");
    *s = c->single ? S_NONE : (uint16_t)(S_FREED | ev->order);
    c->live -= pages;
    pid_account(c, ev, -(int64_t)pages);
    return 0;
  }
  default:
    bad(c, ev, "bad op");
    return 0;
  }
}

/* Runs workload with the given "key=value" strings into c. */
static int run(checker_t *c, const char *workload, const char *const *kv, char *err,
               size_t errlen) {
  bh_opt_t p[16] = {{0}};
  char keys[16][32];
  size_t n = 0;
  memset(c, 0, sizeof(*c));
  c->hash = 0xcbf29ce484222325ull;
  for (; kv && kv[n]; n++) {
    const char *eq = strchr(kv[n], '=');
    snprintf(keys[n], sizeof(keys[n]), "%.*s", (int)(eq - kv[n]), kv[n]);
    p[n].key = keys[n];
    p[n].value = eq + 1;
    if (!strcmp(keys[n], "frees") && !strcmp(eq + 1, "single"))
      c->single = true;
  }
  char local[256];
  return bh_gen_run(workload, p, n, check_event, c, err ? err : local,
                    err ? errlen : sizeof(local));
}

static void done(checker_t *c) {
  free(c->state);
  c->state = NULL;
  c->nstate = 0;
}

#define ASSERT_CLEAN(c)                                                                            \
  do {                                                                                             \
    if ((c)->errors)                                                                               \
      fail_msg("%llu violations, the first: %s", (unsigned long long)(c)->errors,                  \
               (c)->first_error);                                                                  \
  } while (0)

/* ---- memhog ---- */

static void test_memhog_counts_and_balance(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"size=16M", "duration=1s", "hold=100ms", "repeat=3", "gap=1s", NULL};
  assert_int_equal(run(&c, "memhog", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.allocs, 3 * PAGES(16 * MB));
  assert_int_equal(c.frees, c.allocs);
  assert_int_equal(c.batched, c.allocs); /* every free is F then B */
  assert_int_equal(c.events, 3 * c.allocs);
  assert_int_equal(c.max_live, PAGES(16 * MB)); /* one run's worth, never more */
  assert_int_equal(c.live, 0);
  /* three runs of ~1.1 s with 2 gaps of 1 s in between */
  assert_true(c.last_t > 5000000000ull && c.last_t < 5600000000ull);
  done(&c);
}

static void test_memhog_thp(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"size=64M", "thp=1", NULL};
  assert_int_equal(run(&c, "memhog", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.allocs, 32);
  assert_int_equal(c.max_live, PAGES(64 * MB));
  assert_int_equal(c.live, 0);
  done(&c);
}

static void test_memhog_single_frees(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"size=8M", "frees=single", NULL};
  assert_int_equal(run(&c, "memhog", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.events, 2 * PAGES(8 * MB));
  assert_int_equal(c.live, 0);
  done(&c);
}

/* ---- page-fault1 ---- */

static void test_page_fault1(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"tasks=3", "iterations=4", "size=4M", NULL};
  assert_int_equal(run(&c, "page-fault1", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.allocs, 3 * 4 * PAGES(4 * MB));
  assert_int_equal(c.events, 3 * c.allocs);
  assert_true(c.max_live <= 3 * PAGES(4 * MB));
  assert_true(c.max_live > PAGES(4 * MB)); /* the tasks really run at the same time */
  assert_int_equal(c.live, 0);
  done(&c);
}

static void test_page_fault1_thp_single(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"tasks=2", "iterations=3", "size=8M", "thp=1", "frees=single", NULL};
  assert_int_equal(run(&c, "page-fault1", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.allocs, 2 * 3 * 4);
  assert_int_equal(c.events, 2 * c.allocs);
  assert_int_equal(c.live, 0);
  done(&c);
}

/* ---- guests ---- */

static void test_guests(void **state) {
  (void)state;
  checker_t c;
  /* overlapping guests (interval < duration + hold) to see the per-guest bound */
  const char *kv[] = {
      "guests=4", "guest_size=64M", "fraction=0.5", "interval=1s", "duration=2s", "hold=1s", NULL};
  assert_int_equal(run(&c, "guests", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  uint64_t per = PAGES(64 * MB) / 2;
  assert_int_equal(c.allocs, 4 * per);
  for (int g = 1; g <= 4; g++) {
    assert_int_equal(c.pid_max[g], per);
    assert_int_equal(c.pid_live[g], 0);
    for (int h = 1; h < g; h++) /* distinct pfn ranges */
      assert_true(c.pid_hi[h] <= c.pid_lo[g] || c.pid_hi[g] <= c.pid_lo[h]);
  }
  assert_true(c.max_live > per && c.max_live <= 4 * per);
  assert_int_equal(c.live, 0);
  done(&c);
}

static void test_guests_defaults_one_at_a_time(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"guest_size=32M", NULL};
  assert_int_equal(run(&c, "guests", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  uint64_t per = (uint64_t)(PAGES(32 * MB) * 0.8);
  assert_int_equal(c.allocs, 3 * per);
  assert_int_equal(c.max_live, per); /* 20 s apart, 9 s each: never two at once */
  assert_true(c.last_t > 49000000000ull && c.last_t < 51000000000ull);
  done(&c);
}

/* ---- frag-stress ---- */

/* Live pages per migratetype at the end of the trace. */
static void live_by_mt(const checker_t *c, uint64_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  for (size_t p = 0; p < c->nstate; p++)
    if (c->state[p] & S_LIVE && S_MT(c->state[p]) < 3)
      out[S_MT(c->state[p])] += 1ull << (c->state[p] & 0x3f);
}

static void test_frag_stress(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"size=32M", NULL};
  assert_int_equal(run(&c, "frag-stress", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_true(c.seen_order9);
  assert_int_equal(c.max_live_before9, PAGES(32 * MB)); /* filled to size, never above */
  assert_int_equal(c.max_live, c.first_order9_live + 16 * 512);
  /* when the hugepage attempts start, only kernel pages are left */
  assert_true(c.first_order9_live > 0 && c.first_order9_live < PAGES(32 * MB) / 2);
  /* 32M / 2M = 16 attempts, all released: the kernel pages are all that remain */
  assert_int_equal(c.live, c.first_order9_live);
  uint64_t mt[3];
  live_by_mt(&c, mt);
  assert_int_equal(mt[1], 0);
  assert_true(mt[0] > 0 && mt[2] > 0);
  assert_int_equal(mt[0] + mt[2], c.live);
  done(&c);
}

/* Live pages never exceed size during the fill, and order-9 attempts are size/2M. */
static void test_frag_stress_bounds(void **state) {
  (void)state;
  checker_t c;
  const char *kv[] = {"size=16M", "hugepages=0", "kernel=0.3", "churn=0.9", NULL};
  assert_int_equal(run(&c, "frag-stress", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.max_live, PAGES(16 * MB)); /* filled exactly, never above */
  assert_false(c.seen_order9);
  done(&c);

  const char *kv2[] = {"size=16M", "hugepage_batch=3", "release=0", NULL};
  assert_int_equal(run(&c, "frag-stress", kv2, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  assert_int_equal(c.live - c.first_order9_live, 8 * 512); /* 8 attempts kept */
  done(&c);
}

/* The kernel part: about `kernel` of the allocations during the fill; half of the
 * reclaimable blocks are freed afterwards, the unmovable ones never. */
static void test_frag_stress_kernel_mix(void **state) {
  (void)state;
  checker_t c, none;
  const char *kv[] = {"size=64M", "hugepages=0", NULL};
  assert_int_equal(run(&c, "frag-stress", kv, NULL, 0), 0);
  ASSERT_CLEAN(&c);
  uint64_t mt[3];
  live_by_mt(&c, mt);
  assert_int_equal(mt[1], 0);
  assert_int_equal(mt[0] + mt[2], c.live);
  assert_true(c.live > PAGES(64 * MB) / 20 && c.live < PAGES(64 * MB) / 2);
  /* about half of the reclaimable pages went: unmovable and reclaimable were drawn 50/50 */
  assert_true(mt[2] * 3 > mt[0] && mt[2] < mt[0]);
  done(&c);
  const char *kv0[] = {"size=16M", "hugepages=0", "kernel=0", NULL};
  assert_int_equal(run(&none, "frag-stress", kv0, NULL, 0), 0);
  ASSERT_CLEAN(&none);
  assert_int_equal(none.live, 0); /* no kernel allocations: nothing pinned */
  done(&none);
}

/* ---- common properties ---- */

static void test_deterministic(void **state) {
  (void)state;
  static const char *const wl[] = {"memhog", "page-fault1", "guests", "frag-stress"};
  static const char *const small[][3] = {{"size=4M", NULL, NULL},
                                         {"size=2M", "iterations=2", NULL},
                                         {"guest_size=8M", NULL, NULL},
                                         {"size=8M", NULL, NULL}};
  for (int w = 0; w < 4; w++) {
    checker_t a, b, d;
    const char *kv1[4] = {small[w][0], small[w][1], NULL, NULL};
    const char *kv2[4] = {small[w][0], small[w][1] ? small[w][1] : "seed=2",
                          small[w][1] ? "seed=2" : NULL, NULL};
    assert_int_equal(run(&a, wl[w], kv1, NULL, 0), 0);
    assert_int_equal(run(&b, wl[w], kv1, NULL, 0), 0);
    assert_int_equal(run(&d, wl[w], kv2, NULL, 0), 0);
    ASSERT_CLEAN(&a);
    ASSERT_CLEAN(&d);
    assert_int_equal(a.events, b.events);
    assert_true(a.hash == b.hash);
    if (a.hash == d.hash)
      fail_msg("%s: seed=2 gives the same trace as seed=1", wl[w]);
    done(&a);
    done(&b);
    done(&d);
  }
}

static void test_bad_params(void **state) {
  (void)state;
  checker_t c;
  char err[512];
  assert_int_equal(run(&c, "nosuch", NULL, err, sizeof(err)), BH_ENOENT);
  assert_non_null(strstr(err, "unknown workload 'nosuch'"));
  const char *k1[] = {"sise=1G", NULL};
  assert_int_equal(run(&c, "memhog", k1, err, sizeof(err)), BH_EINVAL);
  assert_string_equal(err, "memhog: unknown parameter 'sise' (known: size, duration, hold, "
                           "repeat, gap, thp, pid, cpu, seed, frees, free_time)");
  const char *k2[] = {"size=lots", NULL};
  assert_int_equal(run(&c, "memhog", k2, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "bad value 'lots' for size"));
  const char *k3[] = {"fraction=1.5", NULL};
  assert_int_equal(run(&c, "guests", k3, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "fraction"));
  const char *k4[] = {"frees=both", NULL};
  assert_int_equal(run(&c, "page-fault1", k4, err, sizeof(err)), BH_EINVAL);
  const char *k5[] = {"thp=1", "size=1M", NULL};
  assert_int_equal(run(&c, "memhog", k5, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "2M"));
  const char *k6[] = {"tasks=0", NULL};
  assert_int_equal(run(&c, "page-fault1", k6, err, sizeof(err)), BH_EINVAL);
  const char *k7[] = {"churn=0.99", NULL};
  assert_int_equal(run(&c, "frag-stress", k7, err, sizeof(err)), BH_EINVAL);
  assert_int_equal(c.events, 0); /* nothing emitted before the parameters were checked */
  done(&c);
}

static int stop_after_10(void *ctx, const bh_event_t *ev) {
  (void)ev;
  return ++*(int *)ctx == 10 ? -77 : 0;
}

static void test_emit_error_stops(void **state) {
  (void)state;
  int n = 0;
  assert_int_equal(bh_gen_run("memhog", NULL, 0, stop_after_10, &n, NULL, 0), -77);
  assert_int_equal(n, 10);
}

static void test_help_and_list(void **state) {
  (void)state;
  int n = 0;
  for (; bh_gen_workload_at(n); n++) {
    const char *w = bh_gen_workload_at(n);
    assert_non_null(bh_gen_summary(w));
    const char *h = bh_gen_help(w);
    assert_non_null(h);
    assert_non_null(strstr(h, "seed=1"));
    assert_non_null(strstr(h, "frees=kernel"));
  }
  assert_int_equal(n, 4);
  assert_null(bh_gen_workload_at(-1));
  assert_null(bh_gen_help("nosuch"));
  assert_non_null(strstr(bh_gen_help("memhog"), "size=768M"));
  assert_non_null(strstr(bh_gen_help("page-fault1"), "iterations=50"));
  assert_non_null(strstr(bh_gen_help("guests"), "interval=20s"));
  assert_non_null(strstr(bh_gen_help("frag-stress"), "hugepages=auto"));
}

/* bh_gen_write through every format and compression reads back the same events. */
static void test_write_roundtrip(void **state) {
  (void)state;
  const char *kv[] = {"size=2M", NULL};
  bh_opt_t p = {"size", "2M"};
  checker_t ref;
  assert_int_equal(run(&ref, "frag-stress", kv, NULL, 0), 0);
  char path[] = "/tmp/bh-test-gen-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  for (int format = BH_TRACE_NATIVE_TEXT; format <= BH_TRACE_NATIVE_BINARY; format++)
    for (int comp = BH_TRACE_COMP_NONE; comp <= BH_TRACE_COMP_ZSTD; comp++) {
      bh_trace_writer_t *w;
      char err[256];
      assert_int_equal(bh_trace_writer_open(path, format, comp, &w), 0);
      assert_int_equal(bh_gen_write("frag-stress", &p, 1, w, err, sizeof(err)), 0);
      assert_int_equal(bh_trace_writer_close(w), 0);
      bh_trace_t *t;
      assert_int_equal(bh_trace_open(path, NULL, &t), 0);
      checker_t c;
      memset(&c, 0, sizeof(c));
      c.hash = 0xcbf29ce484222325ull;
      bh_event_t ev;
      int r;
      while ((r = bh_trace_next(t, &ev)) == 1)
        check_event(&c, &ev);
      assert_int_equal(r, 0);
      bh_trace_close(t);
      ASSERT_CLEAN(&c);
      assert_int_equal(c.events, ref.events);
      assert_true(c.hash == ref.hash);
      done(&c);
    }
  unlink(path);
  done(&ref);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memhog_counts_and_balance),
      cmocka_unit_test(test_memhog_thp),
      cmocka_unit_test(test_memhog_single_frees),
      cmocka_unit_test(test_page_fault1),
      cmocka_unit_test(test_page_fault1_thp_single),
      cmocka_unit_test(test_guests),
      cmocka_unit_test(test_guests_defaults_one_at_a_time),
      cmocka_unit_test(test_frag_stress),
      cmocka_unit_test(test_frag_stress_bounds),
      cmocka_unit_test(test_frag_stress_kernel_mix),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_bad_params),
      cmocka_unit_test(test_emit_error_stops),
      cmocka_unit_test(test_help_and_list),
      cmocka_unit_test(test_write_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
