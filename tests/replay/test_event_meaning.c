/*
 * What a recorded event means (src/replay/event_meaning.h), through two backends at once: an
 * arena in sim backing (bh_alloc_pfn, bh_free_pfn, bh_split_pages, as the arena replay uses
 * it) and a recording backend that hands out addresses and keeps its own map of what it has
 * handed out (as the jemalloc baseline's allocations would be).  Every bundled trace,
 * traces/real-* and traces/gen-*, is played through both: after every event both backends hold
 * as many pages as the meaning says are live, every free and split is of a block the backend
 * holds, and every 4096 events and at the end the two agree on the set of live recorded
 * (pfn, order) blocks (a hash of it), on the live pages and on every count.
 *
 * Beside them, small event sequences whose meaning is known: a free of a piece of a larger
 * block, a piece of a block that a later allocation overlaps, a free of a range of blocks, a
 * batched repeat, a lost free and an untraced free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "replay/event_meaning.h"

#define TRACES BH_SOURCE_DIR "/traces/"
#define CHECK_EVERY 4096

/* ---- the recording backend ---- */

struct rec {
  bh__pfnmap_t held; /* val -> order of every block handed out and not given back */
  uint64_t next;     /* the next address, in pages: never reused */
  uint64_t pages;    /* pages held */
  uint64_t bad;      /* frees or splits of blocks not held, or of another order */
  bool fail_all;     /* every allocation fails (the synthetic tests) */
};

static int rec_alloc(void *ctx, const bh_event_t *ev, uint64_t *val) {
  struct rec *b = ctx;
  if (b->fail_all)
    return 1;
  *val = b->next;
  b->next += 1ull << ev->order;
  bh__pfn_entry_t *e = bh__pfnmap_hinsert(&b->held, *val);
  assert_non_null(e);
  e->order = (uint8_t)ev->order;
  e->kind = BH__PFN_LIVE;
  b->pages += 1ull << ev->order;
  return 0;
}

static void rec_free(void *ctx, uint64_t val, unsigned order, uint32_t aux, int cpu) {
  struct rec *b = ctx;
  (void)aux;
  (void)cpu;
  bh__pfn_entry_t *e = bh__pfnmap_hfind(&b->held, val);
  if (!e || e->order != order) {
    b->bad++;
    return;
  }
  bh__pfnmap_hdelete(&b->held, e);
  b->pages -= 1ull << order;
}

static int rec_split(void *ctx, uint64_t val, unsigned order, uint32_t *aux) {
  struct rec *b = ctx;
  bh__pfn_entry_t *e = bh__pfnmap_hfind(&b->held, val);
  if (!e || e->order != order) {
    b->bad++;
    *aux = 0;
    return 0;
  }
  bh__pfnmap_hdelete(&b->held, e);
  for (uint64_t i = 0; i < (1ull << order); i++) {
    bh__pfn_entry_t *p = bh__pfnmap_hinsert(&b->held, val + i);
    assert_non_null(p);
    p->order = 0;
    p->kind = BH__PFN_LIVE;
  }
  *aux = 7; /* given to every piece; the map keeps it */
  return 0;
}

static const bh__em_ops_t rec_ops = {
    .alloc = rec_alloc, .free = rec_free, .split = rec_split, .untraced = NULL, .stride = 1};

/* ---- the arena backend ---- */

struct arena_backend {
  bh_arena_t *a;
  uint64_t pages; /* pages allocated */
  uint64_t bad;   /* frees and splits the arena refused */
};

static int ab_alloc(void *ctx, const bh_event_t *ev, uint64_t *val) {
  struct arena_backend *b = ctx;
  if (bh_alloc_pfn(b->a, ev->gfp, ev->order, 0, val) != BH_OK)
    return 1;
  b->pages += 1ull << ev->order;
  return 0;
}

static void ab_free(void *ctx, uint64_t val, unsigned order, uint32_t aux, int cpu) {
  struct arena_backend *b = ctx;
  (void)cpu;
  b->bad += aux != 0; /* the arena's pieces have none */
  if (bh_free_pfn(b->a, val, order, 0) != BH_OK)
    b->bad++;
  else
    b->pages -= 1ull << order;
}

static int ab_split(void *ctx, uint64_t val, unsigned order, uint32_t *aux) {
  struct arena_backend *b = ctx;
  *aux = 0;
  if (bh_split_pages(b->a, val, order) != BH_OK)
    b->bad++;
  return 0;
}

static const bh__em_ops_t arena_ops = {
    .alloc = ab_alloc, .free = ab_free, .split = ab_split, .untraced = NULL, .stride = 1};

/* ---- what is live ---- */

/* A hash of the set of live recorded blocks (pfn, order): a sum, so the slot order does not
 * matter; and their pages. */
static uint64_t live_hash(const bh__em_t *m, uint64_t *pages) {
  uint64_t h = 0;
  *pages = 0;
  for (uint64_t i = 0, n = bh__pfnmap_slots(&m->map); i < n; i++) {
    bh__pfn_ref_t e = bh__pfnmap_slot(&m->map, i);
    if (!bh__pfn_ok(e) || bh__pfn_kind(e) != BH__PFN_LIVE)
      continue;
    uint64_t x = (bh__pfnmap_slot_pfn(&m->map, i) << 6 | bh__pfn_order(e)) + 1;
    x *= 0x9e3779b97f4a7c15ull;
    h += x ^ (x >> 29);
    *pages += 1ull << bh__pfn_order(e);
  }
  return h;
}

static void same_counts(const bh_replay_summary_t *x, const bh_replay_summary_t *y) {
  assert_int_equal(x->allocs, y->allocs);
  assert_int_equal(x->frees, y->frees);
  assert_int_equal(x->unknown_frees, y->unknown_frees);
  assert_int_equal(x->split_frees, y->split_frees);
  assert_int_equal(x->lost_frees, y->lost_frees);
  assert_int_equal(x->batched_dups, y->batched_dups);
  assert_int_equal(x->orders_too_large, y->orders_too_large);
  assert_int_equal(x->trace_failed_allocs, y->trace_failed_allocs);
  assert_int_equal(x->alloc_failures, y->alloc_failures);
  assert_int_equal(x->live_peak_bytes, y->live_peak_bytes);
}

static void agree(const bh__em_t *a, const bh__em_t *r, const char *name, uint64_t events) {
  uint64_t pa, pr, ha = live_hash(a, &pa), hr = live_hash(r, &pr);
  if (ha != hr || pa != pr)
    fail_msg("%s: after %lu events the live blocks differ (%lu and %lu pages)", name,
             (unsigned long)events, (unsigned long)pa, (unsigned long)pr);
  assert_int_equal(pa, a->live_pages);
  same_counts(a->s, r->s);
}

/* The recording backend alone over the trace: its live peak, to size the arena. */
static uint64_t peak_pages(const char *path) {
  bh_trace_opts_t to = {0};
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(path, &to, &t), 0);
  bh_replay_summary_t s = {0};
  bh__em_t m;
  struct rec b = {0};
  bh__em_init(&m, &s, 10);
  assert_int_equal(bh__pfnmap_init(&m.map, 1024), 0);
  assert_int_equal(bh__pfnmap_init(&b.held, 1024), 0);
  bh_event_t ev;
  int rc;
  while ((rc = bh_trace_next(t, &ev)) == 1)
    assert_int_equal(bh__em_event(&m, &rec_ops, &b, &ev), 0);
  assert_int_equal(rc, 0);
  bh_trace_close(t);
  bh__pfnmap_destroy(&m.map);
  bh__pfnmap_destroy(&b.held);
  return s.live_peak_bytes >> BH_PAGE_SHIFT;
}

static void play_both(const char *name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s%s", TRACES, name);
  uint64_t peak = peak_pages(path);

  /* room for twice the peak: the arena never fails an allocation the recording serves */
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  cfg.nr_cpus = 1;
  bh_replay_zone_layout(&cfg, (2 * peak << BH_PAGE_SHIFT) + (64ull << 20));
  struct arena_backend ab = {0};
  assert_int_equal(bh_arena_create(&cfg, &ab.a), 0);
  struct rec rb = {0};
  assert_int_equal(bh__pfnmap_init(&rb.held, 1024), 0);

  bh_replay_summary_t sa = {0}, sr = {0};
  bh__em_t ma, mr;
  bh__em_init(&ma, &sa, 10);
  bh__em_init(&mr, &sr, 10);
  assert_int_equal(bh__pfnmap_init(&ma.map, 1024), 0);
  assert_int_equal(bh__pfnmap_init(&mr.map, 1024), 0);

  bh_trace_opts_t to = {0};
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(path, &to, &t), 0);
  bh_event_t ev;
  uint64_t n = 0;
  int rc;
  while ((rc = bh_trace_next(t, &ev)) == 1) {
    assert_int_equal(bh__em_event(&ma, &arena_ops, &ab, &ev), 0);
    assert_int_equal(bh__em_event(&mr, &rec_ops, &rb, &ev), 0);
    n++;
    if (ab.pages != ma.live_pages || rb.pages != mr.live_pages || ma.live_pages != mr.live_pages)
      fail_msg("%s: event %lu: live pages: arena %lu (meaning %lu), recording %lu (meaning %lu)",
               name, (unsigned long)n, (unsigned long)ab.pages, (unsigned long)ma.live_pages,
               (unsigned long)rb.pages, (unsigned long)mr.live_pages);
    if (ab.bad || rb.bad)
      fail_msg("%s: event %lu: a free or split of a block the backend does not hold", name,
               (unsigned long)n);
    if (n % CHECK_EVERY == 0)
      agree(&ma, &mr, name, n);
  }
  assert_int_equal(rc, 0);
  agree(&ma, &mr, name, n);
  assert_int_equal(sa.alloc_failures, 0);
  assert_true(n > 1000);
  assert_true(sa.allocs > 0 && sa.frees > 0);
  printf("%-32s %9lu events, %8lu live pages at the end, peak %lu\n", name, (unsigned long)n,
         (unsigned long)ma.live_pages, (unsigned long)(sa.live_peak_bytes >> BH_PAGE_SHIFT));
  bh_trace_close(t);
  bh__pfnmap_destroy(&ma.map);
  bh__pfnmap_destroy(&mr.map);
  bh__pfnmap_destroy(&rb.held);
  bh_arena_destroy(ab.a);
}

static void test_bundled_traces(void **state) {
  (void)state;
  DIR *d = opendir(TRACES);
  assert_non_null(d);
  struct dirent *de;
  unsigned played = 0;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if ((strncmp(de->d_name, "real-", 5) && strncmp(de->d_name, "gen-", 4)) || len < 8 ||
        strcmp(de->d_name + len - 8, ".bht.zst"))
      continue;
    play_both(de->d_name);
    played++;
  }
  closedir(d);
  assert_true(played >= 10); /* six real, four generated */
}

/* ---- known meanings ---- */

struct seq {
  bh__em_t m;
  bh_replay_summary_t s;
  struct rec b;
};

static void seq_open(struct seq *q) {
  memset(q, 0, sizeof(*q));
  bh__em_init(&q->m, &q->s, 10);
  assert_int_equal(bh__pfnmap_init(&q->m.map, 1024), 0);
  assert_int_equal(bh__pfnmap_init(&q->b.held, 1024), 0);
}

static void seq_close(struct seq *q) {
  assert_int_equal(q->b.bad, 0);
  assert_int_equal(q->b.pages, q->m.live_pages);
  bh__pfnmap_destroy(&q->m.map);
  bh__pfnmap_destroy(&q->b.held);
}

static void ev(struct seq *q, int op, uint64_t pfn, unsigned order) {
  bh_event_t e = {.op = op, .pfn = pfn, .order = order};
  assert_int_equal(bh__em_event(&q->m, &rec_ops, &q->b, &e), 0);
}

/* split_page: an order-2 block freed page by page. */
static void test_pieces(void **state) {
  (void)state;
  struct seq q;
  seq_open(&q);
  ev(&q, BH_EV_ALLOC, 64, 2);
  ev(&q, BH_EV_FREE, 65, 0);
  assert_int_equal(q.s.split_frees, 1);
  assert_int_equal(q.s.frees, 1);
  assert_int_equal(q.m.live_pages, 3);
  ev(&q, BH_EV_FREE, 64, 0);
  ev(&q, BH_EV_FREE, 66, 0);
  ev(&q, BH_EV_FREE, 67, 0);
  assert_int_equal(q.s.frees, 4);
  assert_int_equal(q.s.split_frees, 1);
  assert_int_equal(q.s.unknown_frees, 0);
  assert_int_equal(q.m.live_pages, 0);
  seq_close(&q);
}

/*
 * A page of a larger block allocated again without its free (the trace lost it), and then a
 * free of another page of the larger block: that page was allocated as part of the larger
 * block, so its free is a piece of it, not an unknown free.  The jemalloc baseline stopped at
 * the smaller block and called it unknown.
 */
static void test_piece_past_a_smaller_block(void **state) {
  (void)state;
  struct seq q;
  seq_open(&q);
  ev(&q, BH_EV_ALLOC, 0, 2);
  ev(&q, BH_EV_ALLOC, 2, 0);
  ev(&q, BH_EV_FREE, 3, 0);
  assert_int_equal(q.s.unknown_frees, 0);
  assert_int_equal(q.s.split_frees, 1);
  assert_int_equal(q.s.frees, 1);
  seq_close(&q);
}

/* A free of order 2 over two order-1 blocks frees both; a batched repeat frees nothing. */
static void test_range_and_batched(void **state) {
  (void)state;
  struct seq q;
  seq_open(&q);
  ev(&q, BH_EV_ALLOC, 8, 1);
  ev(&q, BH_EV_ALLOC, 10, 1);
  ev(&q, BH_EV_FREE, 8, 2);
  assert_int_equal(q.s.frees, 1);
  assert_int_equal(q.m.live_pages, 0);
  ev(&q, BH_EV_FREE_BATCHED, 8, 2);
  assert_int_equal(q.s.batched_dups, 1);
  assert_int_equal(q.s.unknown_frees, 0);
  ev(&q, BH_EV_FREE_BATCHED, 8, 2); /* no second repeat */
  assert_int_equal(q.s.unknown_frees, 1);
  seq_close(&q);
}

/* Lost frees, untraced frees, orders too large and failed allocations. */
static void test_lost_untraced_dead(void **state) {
  (void)state;
  struct seq q;
  seq_open(&q);
  ev(&q, BH_EV_ALLOC, 100, 0);
  ev(&q, BH_EV_ALLOC, 100, 0);
  assert_int_equal(q.s.lost_frees, 1);
  assert_int_equal(q.m.live_pages, 1);
  ev(&q, BH_EV_FREE, 5000, 0); /* never allocated in the trace */
  assert_int_equal(q.s.unknown_frees, 1);
  ev(&q, BH_EV_ALLOC, 1 << 12, 11); /* above max_order: dead, its free dropped */
  assert_int_equal(q.s.orders_too_large, 1);
  ev(&q, BH_EV_FREE, 1 << 12, 11);
  assert_int_equal(q.s.frees, 1);
  q.b.fail_all = true;
  ev(&q, BH_EV_ALLOC, 200, 0);
  assert_int_equal(q.s.alloc_failures, 1);
  ev(&q, BH_EV_FREE, 200, 0);
  assert_int_equal(q.s.frees, 2);
  assert_int_equal(q.m.live_pages, 1);
  seq_close(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pieces),
      cmocka_unit_test(test_piece_past_a_smaller_block),
      cmocka_unit_test(test_range_and_batched),
      cmocka_unit_test(test_lost_untraced_dead),
      cmocka_unit_test(test_bundled_traces),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
