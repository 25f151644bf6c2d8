/*
 * Machine descriptions: the /proc parsers on files of two kernels (a 6.18 host with a hole in
 * DMA32 and memory initialised late; a Debian 6.1 guest of 1 GiB with a CMA column), the text
 * form's round trip and its errors, and the free map derived from kpageflags, checked against
 * an arena whose state is known: kpageflags, buddyinfo, pagetypeinfo and zoneinfo are written
 * from the arena as a kernel would print them, and the free map must give back its free
 * blocks exactly and its pageblock counts per type.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/machine.h>

#include "buddy/internal.h"
#include "machine/machine_internal.h"

#define MDATA BH_SOURCE_DIR "/tests/trace/data/machine"

static bh_machine_t *read_dir(const char *dir) {
  bh_machine_t *m = bh_machine_new();
  char err[512];
  int rc = bh_machine_read_snapshot(m, BH_SNAP_START, dir, 0, 0, err, sizeof(err));
  if (rc)
    fail_msg("%s: %s", dir, err);
  return m;
}

static void test_guest61(void **state) {
  (void)state;
  bh_machine_t *m = read_dir(MDATA "/guest61");
  const bh_machine_info_t *in = bh_machine_info(m);
  assert_int_equal(in->nr_zones, 2);
  assert_int_equal(in->max_order, 10);
  assert_int_equal(in->pageblock_order, 9);
  assert_int_equal(in->nr_cpus, 2);
  assert_true(in->has_cma);
  const bh_machine_zone_t *dma = &in->zones[0], *dma32 = &in->zones[1];
  assert_int_equal(dma->type, BH_ZONE_DMA);
  assert_int_equal(dma->start_pfn, 1);
  assert_int_equal(dma->spanned_pages, 4095);
  assert_int_equal(dma->present_pages, 3998);
  assert_int_equal(dma->managed_pages, 3840);
  assert_int_equal(dma->wmark_min, 11);
  assert_int_equal(dma->wmark_high, 15);
  /* protection: (0, 925, 925, 925, 925): against DMA32, Normal and Movable requests */
  assert_int_equal(dma->protection[BH_ZONE_DMA], 0);
  assert_int_equal(dma->protection[BH_ZONE_DMA32], 925);
  assert_int_equal(dma->protection[BH_ZONE_NORMAL], 925);
  assert_int_equal(dma32->type, BH_ZONE_DMA32);
  assert_int_equal(dma32->start_pfn, 4096);
  assert_int_equal(dma32->spanned_pages, 258016);
  assert_int_equal(dma32->pcp_batch, 63);
  assert_int_equal(dma32->pcp_high_min, 0); /* 6.1 does not print it */
  const bh_snapshot_t *s = bh_machine_snapshot(m, BH_SNAP_START);
  assert_non_null(s);
  assert_true(s->have_buddyinfo && s->have_pagetypeinfo && s->have_zoneinfo);
  assert_false(s->have_freemap);
  assert_int_equal(s->zones[1].nr_free[10], 211);
  assert_int_equal(s->zones[1].nr_free[0], 310);
  assert_int_equal(s->zones[1].nr_free_mt[BH_MT_MOVABLE][0], 271);
  assert_int_equal(s->zones[1].nr_free_mt[BH_MT_RECLAIMABLE][1], 8);
  assert_int_equal(s->zones[1].pageblocks[BH_MT_UNMOVABLE], 14);
  assert_int_equal(s->zones[1].pageblocks[BH_MT_MOVABLE], 480);
  assert_int_equal(s->zones[1].pageblocks[BH_MT_CMA], 0);
  assert_int_equal(s->zones[1].free_pages, 222508);
  assert_int_equal(s->zones[1].pcp_pages, 190 + 42);
  /* each CPU's "high:" (a fixed mark in 6.1: pageset_update) */
  assert_int_equal(s->zones[1].pcp_high_sum, 1779 + 1779);
  assert_int_equal(s->zones[1].pcp_high_cpus, 2);
  assert_null(bh_machine_snapshot(m, BH_SNAP_END));
  bh_machine_free(m);
}

static void test_host618(void **state) {
  (void)state;
  bh_machine_t *m = read_dir(MDATA "/host");
  const bh_machine_info_t *in = bh_machine_info(m);
  assert_int_equal(in->nr_zones, 3);
  assert_int_equal(in->zones[2].type, BH_ZONE_NORMAL);
  assert_int_equal(in->zones[2].start_pfn, 0x100000);
  assert_int_equal(in->zones[1].spanned_pages, 1044480);
  assert_int_equal(in->zones[1].present_pages, 782336); /* the hole below 4 GiB */
  assert_true(in->zones[2].pcp_high_max > 0);           /* 6.7+ prints high_min/high_max */
  /* and each CPU's current mark, which it tunes between them (nr_pcp_high, decay_pcp_high) */
  const bh_snapshot_t *s = bh_machine_snapshot(m, BH_SNAP_START);
  assert_int_equal(s->zones[2].pcp_high_sum, 16162 + 25078);
  assert_int_equal(s->zones[2].pcp_high_cpus, 2);
  /* and each CPU's pageset as printed (zoneinfo_show_print, mm/vmstat.c:1797-1800 in 6.12):
   * the pcp pages a start state puts on each CPU's lists, and its high mark */
  const bh__pageset_t *p0 = bh__machine_pageset(m, BH_SNAP_START, 2, 0),
                      *p1 = bh__machine_pageset(m, BH_SNAP_START, 2, 1);
  assert_non_null(p0);
  assert_non_null(p1);
  assert_int_equal(p0->cpu, 0);
  assert_int_equal(p0->count, 14749);
  assert_int_equal(p0->high, 16162);
  assert_int_equal(p1->cpu, 1);
  assert_int_equal(p1->count, 3297);
  assert_int_equal(p1->high, 25078);
  assert_int_equal(p0->count + p1->count, s->zones[2].pcp_pages);
  assert_null(bh__machine_pageset(m, BH_SNAP_START, 2, 2));
  assert_null(bh__machine_pageset(m, BH_SNAP_START, 3, 0));
  assert_null(bh__machine_pageset(m, BH_SNAP_END, 2, 0)); /* no end snapshot */
  assert_false(in->has_cma);
  bh_machine_free(m);
}

/* format(parse(x)) == x, and a second snapshot that agrees with the first. */
static void test_round_trip(void **state) {
  (void)state;
  bh_machine_t *m = read_dir(MDATA "/guest61");
  char err[512];
  assert_int_equal(
      bh_machine_read_snapshot(m, BH_SNAP_END, MDATA "/guest61", 5, 9, err, sizeof(err)), 0);
  char *t1, *t2;
  size_t n1, n2;
  assert_int_equal(bh_machine_format(m, &t1, &n1), 0);
  bh_machine_t *m2;
  if (bh_machine_parse(t1, n1, &m2, err, sizeof(err)))
    fail_msg("parse: %s", err);
  assert_int_equal(bh_machine_format(m2, &t2, &n2), 0);
  assert_string_equal(t1, t2);
  const bh_snapshot_t *e = bh_machine_snapshot(m2, BH_SNAP_END);
  assert_non_null(e);
  assert_int_equal(e->window_begin_ns, 5);
  assert_int_equal(e->window_end_ns, 9);
  assert_int_equal(e->zones[1].nr_free[10], 211);
  assert_string_equal(bh_machine_section(m2, "start/buddyinfo"),
                      bh_machine_section(m, "start/buddyinfo"));
  /* another machine's snapshot does not fit */
  assert_int_equal(bh_machine_read_snapshot(m2, BH_SNAP_END, MDATA "/host", 0, 0, err, sizeof(err)),
                   BH_EFORMAT);
  assert_non_null(strstr(err, "zoneinfo:"));
  free(t1);
  free(t2);
  bh_machine_free(m);
  bh_machine_free(m2);
}

static void expect_parse_error(const char *text, const char *want) {
  bh_machine_t *m = (bh_machine_t *)1;
  char err[512] = "";
  assert_int_equal(bh_machine_parse(text, strlen(text), &m, err, sizeof(err)), BH_EFORMAT);
  assert_null(m);
  if (!strstr(err, want))
    fail_msg("expected '%s' in '%s'", want, err);
}

static void test_parse_errors(void **state) {
  (void)state;
  expect_parse_error("", "not a machine description");
  expect_parse_error("buddyhint-machine 9\n@end\n", "unsupported");
  expect_parse_error("buddyhint-machine 1\n@machine 2\nnr_cpus 2\n", "cut short");
  expect_parse_error("buddyhint-machine 1\n@machine 1\nnr_cpus 2\n", "no @end");
  expect_parse_error("buddyhint-machine 1\nnr_cpus 2\n@end\n", "expected '@SECTION");
  expect_parse_error("buddyhint-machine 1\n@machine 1\nnr_cpus 0\n@end\n", "out of range");
  expect_parse_error("buddyhint-machine 1\n@start/buddyinfo 1\nNode 0, zone DMA 1 2\n@end\n",
                     "needs a zoneinfo");
  expect_parse_error("buddyhint-machine 1\n@start/zoneinfo 2\nNode 0, zone      DMA\n"
                     "  pages free     x\n@end\n",
                     "zoneinfo:2: bad number");
  expect_parse_error("buddyhint-machine 1\n@start/zoneinfo 1\nNode 0, zone      DMA\n@end\n",
                     "no populated zone");
  expect_parse_error("buddyhint-machine 1\n@machine 1\nhz 0\n@end\n", "bad hz");
  /* unknown sections and keys are kept */
  const char *ok = "buddyhint-machine 1\n@machine 2\nnr_cpus 4\nfuture_key 1\n@later 1\nx\n@end\n";
  bh_machine_t *m;
  char err[256];
  assert_int_equal(bh_machine_parse(ok, strlen(ok), &m, err, sizeof(err)), 0);
  assert_int_equal(bh_machine_info(m)->nr_cpus, 4);
  assert_string_equal(bh_machine_section(m, "later"), "x\n");
  bh_machine_free(m);
  /* the kernel's HZ (CONFIG_HZ), kept as written */
  const char *hz = "buddyhint-machine 1\n@machine 2\nnr_cpus 2\nhz 250\n@end\n";
  assert_int_equal(bh_machine_parse(hz, strlen(hz), &m, err, sizeof(err)), 0);
  assert_int_equal(bh_machine_info(m)->hz, 250);
  char *text;
  size_t len;
  assert_int_equal(bh_machine_format(m, &text, &len), 0);
  assert_non_null(strstr(text, "\nhz 250\n"));
  free(text);
  bh_machine_free(m);
}

/* ---- the free map against an arena's known state ---- */

static void write_text(const char *dir, const char *name, char *text) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  free(text);
}

static char *dump(bh_arena_t *a, int (*fn)(bh_arena_t *, FILE *)) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  assert_int_equal(fn(a, f), 0);
  fclose(f);
  return buf;
}

/* Whether the test's kernel has reported the free block at pfn of order: every other block of
 * order 3 or above, by its pfn. */
static bool test_reported(uint64_t pfn, unsigned order) {
  return order >= 3 && ((pfn >> order) & 1);
}

/* kpageflags as the kernel would report the arena: every page of a free block KPF_BUDDY,
 * allocated pages flagged by their kind, pcp pages and pages of no zone 0 / KPF_NOPAGE.
 * PG_reported (KPF_UPTODATE) on the heads of test_reported() blocks; PG_uptodate also on
 * allocated movable pages (page cache) and on the tails of other free blocks, where it says
 * nothing of reporting. */
static uint64_t *write_kpageflags(bh_arena_t *a, const char *dir) {
  uint64_t *f = calloc(a->nr_pages, sizeof(uint64_t));
  for (uint64_t p = 0; p < a->nr_pages;) {
    const bh__page_t *pg = &a->pages[p];
    uint64_t n = 1ull << pg->order, v = 0;
    if (pg->flags & BH__PG_BUDDY)
      v = 1ull << 10;
    else if ((pg->flags & BH__PG_ALLOC) && pg->mt == BH_MT_UNMOVABLE && !(p % 5))
      v = 0; /* a kernel allocation that sets no flag (vmalloc, a kernel stack) */
    else if (pg->flags & BH__PG_ALLOC)
      v = pg->mt == BH_MT_MOVABLE       ? (1ull << 5 | 1ull << 11) /* LRU, mapped */
          : pg->mt == BH_MT_RECLAIMABLE ? 1ull << 7                /* slab */
                                        : 1ull << 26;              /* page table */
    if (!(pg->flags & BH__PG_STATE))
      n = 1;
    for (uint64_t i = p; i < p + n; i++)
      f[i] = v;
    if ((pg->flags & BH__PG_BUDDY) && test_reported(p, pg->order))
      f[p] |= 1ull << 3;
    else if ((pg->flags & BH__PG_BUDDY) && n > 1)
      f[p + 1] |= 1ull << 3;
    else if ((pg->flags & BH__PG_ALLOC) && pg->mt == BH_MT_MOVABLE)
      f[p] |= 1ull << 3;
    p += n;
  }
  char path[512];
  snprintf(path, sizeof(path), "%s/kpageflags", dir);
  FILE *o = fopen(path, "wb");
  assert_int_equal(fwrite(f, sizeof(uint64_t), a->nr_pages, o), a->nr_pages);
  fclose(o);
  return f;
}

/* The map's Q lines: exactly the pages of the zones with no flag (f: the kpageflags written),
 * in pfn order; *pages: how many. */
static void expect_quiet(bh_machine_t *m, bh_arena_t *a, const uint64_t *f, uint64_t *pages) {
  size_t n, r = 0;
  uint64_t k = 0;
  bool known = false;
  const bh_page_run_t *q = bh__machine_quiet_runs(m, BH_SNAP_START, &n, &known);
  assert_true(known);
  *pages = 0;
  for (int zi = 0; zi < bh_zone_count(a); zi++) {
    bh_zone_info_t z;
    bh_zone_info(a, zi, &z);
    for (uint64_t p = z.start_pfn; p < z.start_pfn + z.spanned_pages; p++) {
      if (f[p])
        continue;
      assert_true(r < n);
      assert_int_equal(q[r].pfn + k, p);
      (*pages)++;
      if (++k == q[r].count) {
        r++;
        k = 0;
      }
    }
  }
  assert_int_equal(r, n);
}

static int parse_text(const char *t, bh_machine_t **m, char *err, size_t errlen) {
  return bh_machine_parse(t, strlen(t), m, err, errlen);
}

/* A copy of map text t with every line starting with line (e.g. "\nQ ") and the line starting
 * with count (e.g. "\nquiet ") made comments, as a map written before they existed. */
static char *without_lines(const char *t, const char *line, const char *count) {
  char *old = strdup(t);
  for (char *p = old; (p = strstr(p, line)); p++)
    p[1] = '#';
  char *cl = strstr(old, count);
  assert_non_null(cl);
  cl[1] = '#';
  return old;
}

/* A map without Q lines and the "quiet" line (as written before they existed) reads, with
 * nothing listed; the Q lines must add up to the "quiet" line. */
static void test_quiet_lines(const char *t) {
  char err[256];
  bh_machine_t *m;
  size_t n;
  bool known = true;
  char *old = without_lines(t, "\nQ ", "\nquiet ");
  assert_int_equal(parse_text(old, &m, err, sizeof(err)), 0);
  assert_null(bh__machine_quiet_runs(m, BH_SNAP_START, &n, &known));
  assert_false(known);
  bh_machine_free(m);
  /* the count changed: refused */
  strcpy(old, t);
  char *ql = strstr(old, "\nquiet ") + 7;
  *ql = *ql == '9' ? '8' : (char)(*ql + 1);
  assert_int_equal(parse_text(old, &m, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "'quiet' says"));
  /* Q lines without it: refused too */
  strcpy(old, t);
  ql = strstr(old, "\nquiet ");
  ql[1] = '#';
  assert_int_equal(parse_text(old, &m, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "'quiet' says 0"));
  free(old);
}

/* A map without R lines and the "reported" line (as written before they existed) reads, with
 * no reported blocks and reporting unknown; R lines must add up to the "reported" line and
 * name free blocks.  Section line counts are kept by swapping one line for another. */
static void test_reported_lines(const char *t, const bh_block_run_t *rep) {
  char err[256], line[64];
  bh_machine_t *m;
  size_t n;
  bool known = true;
  /* old: the R lines and the reported line replaced by comments */
  char *old = without_lines(t, "\nR ", "\nreported ");
  assert_int_equal(parse_text(old, &m, err, sizeof(err)), 0);
  assert_true(bh_machine_snapshot(m, BH_SNAP_START)->have_freemap);
  assert_null(bh__machine_reported_runs(m, BH_SNAP_START, &n, &known));
  assert_int_equal(n, 0);
  assert_false(known);
  bh_machine_free(m);
  /* R lines without the reported line say it all the same; not as many as it says: refused */
  char *cnt = strdup(t);
  char *rl = strstr(cnt, "\nreported ");
  rl[1] = '#';
  assert_int_equal(parse_text(cnt, &m, err, sizeof(err)), 0);
  assert_non_null(bh__machine_reported_runs(m, BH_SNAP_START, &n, &known));
  assert_true(known && n > 0);
  bh_machine_free(m);
  strcpy(cnt, t);
  rl = strstr(cnt, "\nreported ") + 10;
  *rl = *rl == '9' ? '8' : (char)(*rl + 1); /* its first digit changed */
  assert_int_equal(parse_text(cnt, &m, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "'reported' says"));
  free(cnt);
  /* the first R line moved one page on: misaligned */
  char *bad = strdup(t), *r = strstr(bad, "\nR ");
  assert_non_null(r);
  snprintf(line, sizeof(line), "R %lu %u", (unsigned long)rep[0].pfn + 1, rep[0].order);
  char *nl = strchr(r + 1, '\n');
  size_t keep = strlen(nl);
  memmove(r + 1 + strlen(line), nl, keep + 1);
  memcpy(r + 1, line, strlen(line));
  assert_int_equal(parse_text(bad, &m, err, sizeof(err)), BH_EFORMAT);
  assert_non_null(strstr(err, "misaligned"));
  /* the first R line's block at half its order: aligned, but not one of the free blocks */
  strcpy(bad, t);
  r = strstr(bad, "\nR ");
  nl = strchr(r + 1, '\n');
  snprintf(line, sizeof(line), "R %lu %u", /* its upper half: the next lines' gaps still hold */
           (unsigned long)(rep[0].pfn + (1ull << (rep[0].order - 1))), rep[0].order - 1);
  keep = strlen(nl);
  memmove(r + 1 + strlen(line), nl, keep + 1);
  memcpy(r + 1, line, strlen(line));
  assert_int_equal(parse_text(bad, &m, err, sizeof(err)), BH_EFORMAT);
  if (!strstr(err, "not one of the free blocks"))
    fail_msg("unexpected error: %s", err);
  free(bad);
  free(old);
}

static void test_freemap_of_arena(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  tt_churn(a, 12345, 60000, 60000); /* a fragmented state: many kinds interleaved, half freed */
  bh_drain_pcp(a);                  /* pcp pages are not buddy pages: with none the map is exact */
  const char *dir = tt_dir;         /* the files under their /proc names */
  write_text(dir, "zoneinfo", dump(a, bh_dump_zoneinfo));
  write_text(dir, "buddyinfo", dump(a, bh_dump_buddyinfo));
  write_text(dir, "pagetypeinfo", dump(a, bh_dump_pagetypeinfo));
  uint64_t *flags = write_kpageflags(a, dir);
  bh_machine_t *m = read_dir(dir);
  const bh_snapshot_t *s = bh_machine_snapshot(m, BH_SNAP_START);
  assert_true(s->have_freemap);
  assert_int_equal(s->freemap_skew_pages, 0);
  /* the allocated pages with no flag (where pcp pages hide): Q lines, the start's only */
  uint64_t quiet;
  expect_quiet(m, a, flags, &quiet);
  print_message("free map: %lu pages with no flag\n", (unsigned long)quiet);
  assert_true(quiet > 0);
  /* every free block, in pfn order */
  size_t r = 0, k = 0;
  for (uint64_t p = 0; p < a->nr_pages; p++) {
    if (!(a->pages[p].flags & BH__PG_BUDDY))
      continue;
    assert_true(r < s->nr_free_runs);
    const bh_block_run_t *run = &s->free_runs[r];
    assert_int_equal(run->pfn + ((uint64_t)k << run->order), p);
    assert_int_equal(run->order, a->pages[p].order);
    if (++k == run->count) {
      r++;
      k = 0;
    }
  }
  assert_int_equal(r, s->nr_free_runs);
  /* the reported blocks: exactly the heads marked KPF_UPTODATE */
  size_t nrep, rr = 0, nrep_blocks = 0;
  bool known = false;
  const bh_block_run_t *rep = bh__machine_reported_runs(m, BH_SNAP_START, &nrep, &known);
  k = 0;
  for (uint64_t p = 0; p < a->nr_pages; p++) {
    if (!(a->pages[p].flags & BH__PG_BUDDY) || !test_reported(p, a->pages[p].order))
      continue;
    assert_true(rr < nrep);
    assert_int_equal(rep[rr].pfn + ((uint64_t)k << rep[rr].order), p);
    assert_int_equal(rep[rr].order, a->pages[p].order);
    nrep_blocks++;
    if (++k == rep[rr].count) {
      rr++;
      k = 0;
    }
  }
  assert_int_equal(rr, nrep);
  assert_true(known);
  print_message("free map: %zu reported blocks in %zu R runs\n", nrep_blocks, nrep);
  assert_true(nrep_blocks > 0);
  /* pageblock counts per type exactly; the free blocks on other lists than pagetypeinfo
   * says: the inference's error, small next to the free memory */
  for (int zi = 0; zi < bh_zone_count(a); zi++) {
    bh_zone_info_t zi_a;
    bh_zone_info(a, zi, &zi_a);
    uint64_t got[BH_SNAP_TYPES] = {0};
    uint64_t pb = 1ull << 9;
    for (uint64_t p = zi_a.start_pfn; p < zi_a.start_pfn + zi_a.spanned_pages; p += pb)
      got[s->pageblock_mt[p >> 9]]++;
    for (int t = 0; t < BH_MT_TYPES; t++)
      assert_int_equal(got[t], zi_a.pageblocks[t]);
  }
  uint64_t free_pages = 0;
  for (int zi = 0; zi < bh_zone_count(a); zi++) {
    bh_zone_info_t z;
    bh_zone_info(a, zi, &z);
    free_pages += z.free_pages;
  }
  print_message("free map: %lu of %lu free pages on another type's list than pagetypeinfo's\n",
                (unsigned long)s->freemap_type_error_pages, (unsigned long)free_pages);
  assert_true(s->freemap_type_error_pages * 20 < free_pages);
  /* the text round trip keeps the map */
  char *t;
  size_t tn;
  assert_int_equal(bh_machine_format(m, &t, &tn), 0);
  bh_machine_t *m2;
  char err[256];
  assert_int_equal(bh_machine_parse(t, tn, &m2, err, sizeof(err)), 0);
  const bh_snapshot_t *s2 = bh_machine_snapshot(m2, BH_SNAP_START);
  assert_int_equal(s2->nr_free_runs, s->nr_free_runs);
  assert_int_equal(s2->nr_movable_runs, s->nr_movable_runs);
  assert_memory_equal(s2->pageblock_mt, s->pageblock_mt, s->nr_pageblocks);
  uint64_t quiet2;
  expect_quiet(m2, a, flags, &quiet2);
  assert_int_equal(quiet2, quiet);
  size_t nrep2;
  const bh_block_run_t *rep2 = bh__machine_reported_runs(m2, BH_SNAP_START, &nrep2, &known);
  assert_int_equal(nrep2, nrep);
  /* field by field: the runs' padding bytes are whatever their allocation held */
  for (size_t i = 0; i < nrep; i++) {
    assert_int_equal(rep2[i].pfn, rep[i].pfn);
    assert_int_equal(rep2[i].count, rep[i].count);
    assert_int_equal(rep2[i].order, rep[i].order);
  }
  bh_machine_free(m2);
  test_reported_lines(t, rep);
  test_quiet_lines(t);
  free(t);
  free(flags);
  bh_machine_free(m);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_guest61),          cmocka_unit_test(test_host618),
      cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_freemap_of_arena),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
