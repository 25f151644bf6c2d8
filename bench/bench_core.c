/*
 * bench_core: the allocator core against jemalloc, in one process and one run.
 *
 *   1. order-0 alloc+free pair through the pcp lists (pfn and pointer API) vs mallocx(4 KiB)
 *      + dallocx.  Target: buddy no slower than jemalloc.
 *   2. 1,000 order-0 allocations, then 1,000 frees, vs the same with 4 KiB mallocx/dallocx.
 *      Target: at most half of jemalloc's time per pair.
 *   3. order-9 pair vs mallocx(2 MiB) + dallocx.  Target: at most a fifth of jemalloc's time.
 *   4. for information: 1-3 with the pcp lists disabled, and order 3 (with and without pcp)
 *      and order 10 against mallocx of the same size (experiment 4's other sizes).
 *   5. metadata of a 64 GiB sim arena: process RSS before/after create, after a short workload
 *      and with every page descriptor touched; bytes of metadata per page.  Target < 300 MiB.
 *
 * Every measurement is the median over --reps repetitions of a fixed, calibrated number of
 * iterations lasting about --rep-ms each.  All cases run inside every repetition, in forward
 * order on even repetitions and reverse order on odd ones, each buddy case next to its
 * jemalloc baseline, so that drift on a shared machine hits both sides of a ratio.  Ratios
 * are medians(buddy) / median(jemalloc); their spread is that of the per-repetition ratios.
 *
 * Debian's libjemalloc is unprefixed: linking it makes it this process's malloc, which only
 * this program does (never the library).
 */
#include "bench_util.h"

#include <buddyhint.h>
#include <jemalloc/jemalloc.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define BATCH 1000

/* ---------------------------------------------------------------------------------------- */
/* The measured loops (noinline so that callgrind --toggle-collect can isolate each)         */
/* ---------------------------------------------------------------------------------------- */

static void die(const char *what, int err) {
  fprintf(stderr, "bench_core: %s failed: %s\n", what, err ? bh_strerror(err) : strerror(errno));
  exit(2);
}

static NOINLINE uint64_t loop_buddy_pair_pfn(bh_arena_t *a, unsigned gfp, unsigned order,
                                             uint64_t iters) {
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t pfn;
    int e = bh_alloc_pfn(a, gfp, order, -1, &pfn);
    if (__builtin_expect(e != 0, 0))
      die("bh_alloc_pfn", e);
    e = bh_free_pfn(a, pfn, order, -1);
    if (__builtin_expect(e != 0, 0))
      die("bh_free_pfn", e);
  }
  return bu_now_ns() - t0;
}

static NOINLINE uint64_t loop_buddy_pair_ptr(bh_arena_t *a, unsigned gfp, unsigned order,
                                             uint64_t iters) {
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    int e;
    void *p = bh_alloc_pages(a, gfp, order, &e);
    if (__builtin_expect(!p, 0))
      die("bh_alloc_pages", e);
    e = bh_free_pages(a, p, order);
    if (__builtin_expect(e != 0, 0))
      die("bh_free_pages", e);
  }
  return bu_now_ns() - t0;
}

static NOINLINE uint64_t loop_buddy_batch_pfn(bh_arena_t *a, unsigned gfp, unsigned order,
                                              uint64_t rounds) {
  uint64_t pfn[BATCH];
  uint64_t t0 = bu_now_ns();
  for (uint64_t r = 0; r < rounds; r++) {
    for (int i = 0; i < BATCH; i++) {
      int e = bh_alloc_pfn(a, gfp, order, -1, &pfn[i]);
      if (__builtin_expect(e != 0, 0))
        die("bh_alloc_pfn", e);
    }
    for (int i = 0; i < BATCH; i++) {
      int e = bh_free_pfn(a, pfn[i], order, -1);
      if (__builtin_expect(e != 0, 0))
        die("bh_free_pfn", e);
    }
  }
  return bu_now_ns() - t0;
}

static NOINLINE uint64_t loop_je_pair(size_t size, uint64_t iters) {
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    void *p = mallocx(size, 0);
    if (__builtin_expect(!p, 0))
      die("mallocx", 0);
    BU_SINK(p);
    dallocx(p, 0);
  }
  return bu_now_ns() - t0;
}

static NOINLINE uint64_t loop_je_batch(size_t size, uint64_t rounds) {
  void *p[BATCH];
  uint64_t t0 = bu_now_ns();
  for (uint64_t r = 0; r < rounds; r++) {
    for (int i = 0; i < BATCH; i++) {
      p[i] = mallocx(size, 0);
      if (__builtin_expect(!p[i], 0))
        die("mallocx", 0);
    }
    BU_SINK(p);
    for (int i = 0; i < BATCH; i++)
      dallocx(p[i], 0);
  }
  return bu_now_ns() - t0;
}

/* ---------------------------------------------------------------------------------------- */
/* Cases                                                                                     */
/* ---------------------------------------------------------------------------------------- */

enum kind { K_BUDDY_PFN, K_BUDDY_PFN_UP, K_BUDDY_PTR, K_BUDDY_BATCH, K_JE_PAIR, K_JE_BATCH };

typedef struct bcase {
  const char *name;
  int group;        /* 1..4 as in the header comment */
  const char *impl; /* "buddy" | "jemalloc" */
  const char *desc;
  enum kind kind;
  bool pcp;             /* buddy: which arena */
  unsigned order;       /* buddy order */
  size_t size;          /* jemalloc size */
  const char *baseline; /* case the ratio is taken against */
  double target;        /* max ratio; 0 = information only */
  /* filled at run time */
  bool enabled;
  uint64_t iters; /* per repetition (rounds of BATCH for batch cases) */
  int pairs_per_iter;
  double *ns; /* ns per pair, per repetition */
  bu_stats_t st, ratio;
  struct bcase *base;
} bcase_t;

#define CASE(n, g, im, de, k, p, o, sz, bl, tg)                                                    \
  {                                                                                                \
    .name = n, .group = g, .impl = im, .desc = de, .kind = k, .pcp = p, .order = o, .size = sz,    \
    .baseline = bl, .target = tg                                                                   \
  }

/* Listed in run order: each buddy case sits next to the jemalloc case it is compared with. */
static bcase_t cases[] = {
    CASE("buddy_o0_pair_pfn", 1, "buddy", "order-0 alloc+free, pfn API, pcp", K_BUDDY_PFN, true, 0,
         0, "je_4k_pair", 1.0),
    CASE("je_4k_pair", 1, "jemalloc", "mallocx(4 KiB)+dallocx", K_JE_PAIR, false, 0, 4096, NULL, 0),
    CASE("buddy_o0_pair_ptr", 1, "buddy", "order-0 alloc+free, pointer API, pcp", K_BUDDY_PTR, true,
         0, 0, "je_4k_pair", 1.0),
    /* the same on an arena without locks (cfg.smp false, as CONFIG_SMP=n and the replay) */
    CASE("up_o0_pair_pfn", 4, "buddy", "order-0 alloc+free, pfn API, pcp, no locks (UP)",
         K_BUDDY_PFN_UP, true, 0, 0, "je_4k_pair", 0),
    CASE("nopcp_o0_pair_pfn", 4, "buddy", "order-0 alloc+free, pfn API, no pcp", K_BUDDY_PFN, false,
         0, 0, "je_4k_pair", 0),
    CASE("nopcp_o0_pair_ptr", 4, "buddy", "order-0 alloc+free, pointer API, no pcp", K_BUDDY_PTR,
         false, 0, 0, "je_4k_pair", 0),
    CASE("buddy_o0_batch1000", 2, "buddy", "1000 order-0 allocs then 1000 frees, pcp",
         K_BUDDY_BATCH, true, 0, 0, "je_4k_batch1000", 0.5),
    CASE("je_4k_batch1000", 2, "jemalloc", "1000 mallocx(4 KiB) then 1000 dallocx", K_JE_BATCH,
         false, 0, 4096, NULL, 0),
    CASE("nopcp_o0_batch1000", 4, "buddy", "1000 order-0 allocs then 1000 frees, no pcp",
         K_BUDDY_BATCH, false, 0, 0, "je_4k_batch1000", 0),
    CASE("buddy_o9_pair_pfn", 3, "buddy", "order-9 alloc+free, pfn API, pcp (THP list)",
         K_BUDDY_PFN, true, 9, 0, "je_2m_pair", 0.2),
    CASE("je_2m_pair", 3, "jemalloc", "mallocx(2 MiB)+dallocx", K_JE_PAIR, false, 0, 2 * MiB, NULL,
         0),
    CASE("nopcp_o9_pair_pfn", 4, "buddy", "order-9 alloc+free, pfn API, no pcp", K_BUDDY_PFN, false,
         9, 0, "je_2m_pair", 0),
    /* experiment 4's other sizes, for information: order 3 (32 KiB, the largest pcp order
     * below the THP one) and order 10 (4 MiB, never on a pcp list) */
    CASE("buddy_o3_pair_pfn", 4, "buddy", "order-3 alloc+free, pfn API, pcp", K_BUDDY_PFN, true, 3,
         0, "je_32k_pair", 0),
    CASE("je_32k_pair", 4, "jemalloc", "mallocx(32 KiB)+dallocx", K_JE_PAIR, false, 0, 32 * 1024,
         NULL, 0),
    CASE("nopcp_o3_pair_pfn", 4, "buddy", "order-3 alloc+free, pfn API, no pcp", K_BUDDY_PFN, false,
         3, 0, "je_32k_pair", 0),
    CASE("buddy_o10_pair_pfn", 4, "buddy", "order-10 alloc+free, pfn API (no pcp list exists)",
         K_BUDDY_PFN, true, 10, 0, "je_4m_pair", 0),
    CASE("je_4m_pair", 4, "jemalloc", "mallocx(4 MiB)+dallocx", K_JE_PAIR, false, 0, 4 * MiB, NULL,
         0),
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

static bh_arena_t *arena_pcp, *arena_nopcp, *arena_up;

/* Runs one case for n iterations; returns elapsed ns. */
static uint64_t run_case(const bcase_t *c, uint64_t n) {
  bh_arena_t *a = c->pcp ? arena_pcp : arena_nopcp;
  switch (c->kind) {
  case K_BUDDY_PFN:
    return loop_buddy_pair_pfn(a, BH_GFP_KERNEL, c->order, n);
  case K_BUDDY_PFN_UP:
    return loop_buddy_pair_pfn(arena_up, BH_GFP_KERNEL, c->order, n);
  case K_BUDDY_PTR:
    return loop_buddy_pair_ptr(a, BH_GFP_KERNEL, c->order, n);
  case K_BUDDY_BATCH:
    return loop_buddy_batch_pfn(a, BH_GFP_KERNEL, c->order, n);
  case K_JE_PAIR:
    return loop_je_pair(c->size, n);
  case K_JE_BATCH:
    return loop_je_batch(c->size, n);
  }
  return 0;
}

/*
 * Finds an iteration count lasting about target_ns; doubles as the warm-up.  The first runs
 * are slowed by cold caches and first-touch faults, so the count is refined until one run at
 * the chosen size lands within [0.8, 1.5] of the target.
 */
static uint64_t calibrate(const bcase_t *c, uint64_t target_ns) {
  uint64_t n = 1, t;
  for (;;) {
    t = run_case(c, n);
    if (t >= target_ns / 8 && t > 1000000)
      break;
    n = t < target_ns / 64 ? n * 8 : n * 2;
  }
  for (int tries = 0; tries < 6; tries++) {
    uint64_t m = (uint64_t)ceil((double)n * (double)target_ns / (double)(t ? t : 1));
    n = m ? m : 1;
    t = run_case(c, n);
    if (t >= target_ns * 8 / 10 && t <= target_ns * 3 / 2)
      break;
  }
  return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Metadata of a 64 GiB sim arena                                                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct meta {
  bool done;
  uint64_t arena_bytes, pages;
  long rss0, rss_create, rss_work, rss_full, rss_destroy; /* KiB */
  long vm0, vm_create;                                    /* KiB */
  double create_ms, work_ms, full_ms;
  uint64_t work_o0, work_o9, full_pages;
} meta_t;

static meta_t meta;

static void run_meta(void) {
  enum { N0 = 262144, N9 = 256 }; /* 1 GiB of order-0 pages, 512 MiB of order-9 blocks */
  uint64_t *pfn0 = malloc(sizeof(uint64_t) * N0), pfn9[N9];
  if (!pfn0)
    die("malloc", 0);
  memset(pfn0, 0, sizeof(uint64_t) * N0); /* resident before the baseline is read */

  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  cfg.zone_bytes[BH_ZONE_DMA] = 16 * MiB;
  cfg.zone_bytes[BH_ZONE_DMA32] = 4080 * MiB;
  cfg.zone_bytes[BH_ZONE_NORMAL] = 60 * GiB;
  cfg.zone_bytes[BH_ZONE_MOVABLE] = 0;
  meta.arena_bytes = 64 * GiB;

  meta.rss0 = bu_rss_kib();
  meta.vm0 = bu_vmsize_kib();
  uint64_t t0 = bu_now_ns();
  bh_arena_t *a;
  int e = bh_arena_create(&cfg, &a);
  if (e)
    die("bh_arena_create (64 GiB sim)", e);
  meta.create_ms = (double)(bu_now_ns() - t0) / 1e6;
  meta.rss_create = bu_rss_kib();
  meta.vm_create = bu_vmsize_kib();
  meta.pages = bh_arena_pages(a);

  /* a short workload: 1 GiB of order-0 pages and 512 MiB of order-9 blocks, then all freed */
  t0 = bu_now_ns();
  for (int i = 0; i < N0; i++) {
    e = bh_alloc_pfn(a, BH_GFP_KERNEL, 0, -1, &pfn0[i]);
    if (e)
      die("bh_alloc_pfn (meta, order 0)", e);
  }
  for (int i = 0; i < N9; i++) {
    e = bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 9, -1, &pfn9[i]);
    if (e)
      die("bh_alloc_pfn (meta, order 9)", e);
  }
  for (int i = 0; i < N0; i++)
    if ((e = bh_free_pfn(a, pfn0[i], 0, -1)))
      die("bh_free_pfn (meta)", e);
  for (int i = 0; i < N9; i++)
    if ((e = bh_free_pfn(a, pfn9[i], 9, -1)))
      die("bh_free_pfn (meta)", e);
  meta.work_ms = (double)(bu_now_ns() - t0) / 1e6;
  meta.work_o0 = N0;
  meta.work_o9 = N9;
  meta.rss_work = bu_rss_kib();

  /* worst case: every descriptor written, by allocating order-0 pages until none is left */
  t0 = bu_now_ns();
  uint64_t n = 0, pfn;
  while (bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, -1, &pfn) == 0)
    n++;
  meta.full_ms = (double)(bu_now_ns() - t0) / 1e6;
  meta.full_pages = n;
  meta.rss_full = bu_rss_kib();
  bh_arena_destroy(a);
  meta.rss_destroy = bu_rss_kib();
  free(pfn0);
  meta.done = true;
}

static double kib_to_mib(long kib) { return (double)kib / 1024.0; }

/* ---------------------------------------------------------------------------------------- */
/* Output                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct opts {
  int reps;
  double rep_ms;
  bool quick, meta, strict;
  const char *out;
  const char *only;
  uint64_t fixed_iters;
  char args[1024];
} opts_t;

static const char *verdict(const bcase_t *c) {
  if (!c->base || c->target <= 0)
    return "info";
  return c->st.median <= c->target * c->base->st.median ? "PASS" : "FAIL";
}

/* The metadata rows: name, description, value, unit, target (0 = none). */
typedef struct meta_row {
  const char *name, *desc, *unit;
  double value, target;
} meta_row_t;

static int meta_rows(meta_row_t *r) {
  if (!meta.done)
    return 0;
  double pages = (double)meta.pages;
  int n = 0;
  r[n++] = (meta_row_t){"meta_rss_after_create", "RSS delta after creating a 64 GiB sim arena",
                        "MiB", kib_to_mib(meta.rss_create - meta.rss0), 300};
  r[n++] = (meta_row_t){"meta_rss_after_workload",
                        "RSS delta after 1 GiB order-0 + 512 MiB order-9 alloc/free", "MiB",
                        kib_to_mib(meta.rss_work - meta.rss0), 300};
  r[n++] = (meta_row_t){"meta_rss_all_touched",
                        "RSS delta with every page allocated (all descriptors touched)", "MiB",
                        kib_to_mib(meta.rss_full - meta.rss0), 300};
  r[n++] = (meta_row_t){"meta_rss_after_destroy", "RSS delta after bh_arena_destroy", "MiB",
                        kib_to_mib(meta.rss_destroy - meta.rss0), 0};
  r[n++] = (meta_row_t){"meta_bytes_per_page_reserved",
                        "metadata address space (VmSize delta) per 4 KiB page", "B/page",
                        (double)(meta.vm_create - meta.vm0) * 1024.0 / pages, 0};
  r[n++] = (meta_row_t){"meta_bytes_per_page_resident_create",
                        "resident metadata right after create, per page", "B/page",
                        (double)(meta.rss_create - meta.rss0) * 1024.0 / pages, 0};
  r[n++] = (meta_row_t){"meta_bytes_per_page_resident_full",
                        "resident metadata with all descriptors touched, per page", "B/page",
                        (double)(meta.rss_full - meta.rss0) * 1024.0 / pages, 0};
  r[n++] = (meta_row_t){"meta_create_ms", "time to create the 64 GiB sim arena", "ms",
                        meta.create_ms, 0};
  return n;
}

static const char *meta_verdict(const meta_row_t *r) {
  if (r->target <= 0)
    return "info";
  return r->value < r->target ? "PASS" : "FAIL";
}

static void write_csv(FILE *f, const bu_machine_t *m, const opts_t *o) {
  bu_csv_machine(f, m, "bench_core", o->args);
  fprintf(f, "group,case,impl,description,unit,reps,iters_per_rep,pairs_per_rep,median,p10,p90,"
             "min,max,baseline,ratio,ratio_p10,ratio_p90,target,target_on,verdict\n");
  for (int i = 0; i < NCASES; i++) {
    const bcase_t *c = &cases[i];
    if (!c->enabled)
      continue;
    fprintf(f, "%d,%s,%s,\"%s\",ns/pair,%d,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,", c->group, c->name,
            c->impl, c->desc, c->st.n, (unsigned long long)c->iters,
            (unsigned long long)c->iters * (unsigned long long)c->pairs_per_iter, c->st.median,
            c->st.p10, c->st.p90, c->st.min, c->st.max);
    if (c->base && c->base->enabled)
      fprintf(f, "%s,%.4f,%.4f,%.4f,", c->base->name, c->st.median / c->base->st.median,
              c->ratio.p10, c->ratio.p90);
    else
      fprintf(f, ",,,,");
    if (c->base && c->base->enabled && c->target > 0)
      fprintf(f, "%.2f,ratio,%s\n", c->target, verdict(c));
    else
      fprintf(f, ",,info\n");
  }
  meta_row_t r[16];
  int n = meta_rows(r);
  for (int i = 0; i < n; i++) {
    fprintf(f, "5,%s,buddy,\"%s\",%s,1,,,%.3f,%.3f,%.3f,%.3f,%.3f,,,,,", r[i].name, r[i].desc,
            r[i].unit, r[i].value, r[i].value, r[i].value, r[i].value, r[i].value);
    if (r[i].target > 0)
      fprintf(f, "%.0f,value,%s\n", r[i].target, meta_verdict(&r[i]));
    else
      fprintf(f, ",,info\n");
  }
}

static void write_json(FILE *f, const bu_machine_t *m, const opts_t *o,
                       const bh_zone_info_t *zi_pcp) {
  fputs("{\n  \"benchmark\": \"core\",\n  \"program\": \"bench_core\",\n  \"args\": ", f);
  bu_json_str(f, o->args);
  fputs(",\n", f);
  bu_json_machine(f, m, 2);
  fprintf(f,
          ",\n  \"settings\": {\"reps\": %d, \"rep_ms\": %.1f, \"quick\": %s, "
          "\"order\": \"forward on even repetitions, reverse on odd\"},\n",
          o->reps, o->rep_ms, o->quick ? "true" : "false");
  fprintf(f,
          "  \"arena\": {\"backing\": \"mmap\", \"zones_mib\": {\"DMA\": 16, \"DMA32\": 496, "
          "\"Normal\": 512}, \"gfp\": \"BH_GFP_KERNEL\", \"cpu\": -1, "
          "\"normal_pcp_batch\": %u, \"normal_pcp_high_min\": %u},\n",
          zi_pcp ? zi_pcp->pcp_batch : 0, zi_pcp ? zi_pcp->pcp_high : 0);
  fputs("  \"results\": [", f);
  bool first = true;
  for (int i = 0; i < NCASES; i++) {
    const bcase_t *c = &cases[i];
    if (!c->enabled)
      continue;
    fprintf(f, "%s\n    {\"group\": %d, \"case\": ", first ? "" : ",", c->group);
    first = false;
    bu_json_str(f, c->name);
    fputs(", \"impl\": ", f);
    bu_json_str(f, c->impl);
    fputs(", \"description\": ", f);
    bu_json_str(f, c->desc);
    fprintf(f,
            ", \"unit\": \"ns/pair\", \"reps\": %d, \"iters_per_rep\": %llu, "
            "\"pairs_per_rep\": %llu,\n",
            c->st.n, (unsigned long long)c->iters,
            (unsigned long long)c->iters * (unsigned long long)c->pairs_per_iter);
    fputs("      ", f);
    bu_json_stats(f, "ns", &c->st, 1);
    if (c->base && c->base->enabled) {
      fputs(",\n      \"baseline\": ", f);
      bu_json_str(f, c->base->name);
      fputs(", \"ratio\": ", f);
      bu_json_num(f, c->st.median / c->base->st.median);
      fputs(",\n", f);
      fputs("      ", f);
      bu_json_stats(f, "ratio_per_rep", &c->ratio, 1);
      if (c->target > 0) {
        fputs(",\n      \"target_ratio\": ", f);
        bu_json_num(f, c->target);
      }
    }
    fprintf(f, ",\n      \"verdict\": \"%s\",\n      \"samples_ns\": [", verdict(c));
    for (int r = 0; r < c->st.n; r++) {
      if (r)
        fputs(", ", f);
      fprintf(f, "%.3f", c->ns[r]);
    }
    fputs("]}", f);
  }
  fputs("\n  ]", f);
  if (meta.done) {
    fprintf(f,
            ",\n  \"metadata\": {\n    \"arena\": {\"backing\": \"sim\", \"bytes\": %llu, "
            "\"pages\": %llu, \"zones_mib\": {\"DMA\": 16, \"DMA32\": 4080, "
            "\"Normal\": 61440}},\n",
            (unsigned long long)meta.arena_bytes, (unsigned long long)meta.pages);
    fprintf(f,
            "    \"rss_kib\": {\"before\": %ld, \"after_create\": %ld, \"after_workload\": %ld, "
            "\"all_touched\": %ld, \"after_destroy\": %ld},\n",
            meta.rss0, meta.rss_create, meta.rss_work, meta.rss_full, meta.rss_destroy);
    fprintf(f, "    \"vmsize_kib\": {\"before\": %ld, \"after_create\": %ld},\n", meta.vm0,
            meta.vm_create);
    fprintf(f,
            "    \"workload\": {\"order0_blocks\": %llu, \"order9_blocks\": %llu, "
            "\"ms\": %.3f},\n",
            (unsigned long long)meta.work_o0, (unsigned long long)meta.work_o9, meta.work_ms);
    fprintf(f, "    \"all_touched\": {\"pages_allocated\": %llu, \"ms\": %.3f},\n",
            (unsigned long long)meta.full_pages, meta.full_ms);
    fputs("    \"rows\": [", f);
    meta_row_t r[16];
    int n = meta_rows(r);
    for (int i = 0; i < n; i++) {
      fprintf(f, "%s\n      {\"case\": \"%s\", \"description\": ", i ? "," : "", r[i].name);
      bu_json_str(f, r[i].desc);
      fprintf(f, ", \"unit\": \"%s\", \"value\": ", r[i].unit);
      bu_json_num(f, r[i].value);
      if (r[i].target > 0)
        fprintf(f, ", \"target_max\": %.0f", r[i].target);
      fprintf(f, ", \"verdict\": \"%s\"}", meta_verdict(&r[i]));
    }
    fputs("\n    ]\n  }", f);
  }
  fputs("\n}\n", f);
}

static void print_table(const bu_machine_t *m, const opts_t *o) {
  printf("\nlibbuddyhint %s core benchmarks: %s, %s, %s build, %s\n", m->lib_version, m->cpu,
         m->kernel, m->build_type, m->compiler);
  printf("%d repetitions of ~%.0f ms each; ns per alloc+free pair: median [p10, p90]; "
         "ratio = median / jemalloc median [per-repetition p10, p90]\n\n",
         o->reps, o->rep_ms);
  printf("%-2s %-20s %-8s %9s %21s   %-26s %-7s %s\n", "#", "case", "impl", "median", "[p10, p90]",
         "ratio vs jemalloc", "target", "verdict");
  int last_group = -1;
  for (int g = 1; g <= 4; g++) {
    for (int i = 0; i < NCASES; i++) {
      const bcase_t *c = &cases[i];
      if (!c->enabled || c->group != g)
        continue;
      if (g != last_group && last_group != -1)
        printf("\n");
      last_group = g;
      char range[64], ratio[64] = "", target[16] = "";
      snprintf(range, sizeof(range), "[%.2f, %.2f]", c->st.p10, c->st.p90);
      if (c->base && c->base->enabled)
        snprintf(ratio, sizeof(ratio), "%.3f [%.3f, %.3f]", c->st.median / c->base->st.median,
                 c->ratio.p10, c->ratio.p90);
      if (c->base && c->base->enabled && c->target > 0)
        snprintf(target, sizeof(target), "<= %.2f", c->target);
      printf("%-2d %-20s %-8s %9.2f %21s   %-26s %-7s %s\n", g, c->name, c->impl, c->st.median,
             range, ratio, target, c->base && c->base->enabled ? verdict(c) : "");
    }
  }
  meta_row_t r[16];
  int n = meta_rows(r);
  if (n) {
    printf("\n5  metadata of a 64 GiB sim arena (%llu pages; workload: %llu order-0 + %llu "
           "order-9 blocks; all-touched: %llu pages allocated)\n",
           (unsigned long long)meta.pages, (unsigned long long)meta.work_o0,
           (unsigned long long)meta.work_o9, (unsigned long long)meta.full_pages);
    for (int i = 0; i < n; i++) {
      char target[16] = "";
      if (r[i].target > 0)
        snprintf(target, sizeof(target), "< %.0f", r[i].target);
      printf("   %-36s %10.2f %-7s %-7s %s\n", r[i].name, r[i].value, r[i].unit, target,
             meta_verdict(&r[i]));
    }
  }
  printf("\n");
}

/* ---------------------------------------------------------------------------------------- */
/* Main                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: bench_core [--quick] [--reps N] [--rep-ms MS] [--out DIR] [--only CASE,...]\n"
             "                  [--iters N] [--no-meta] [--strict] [--list]\n"
             "  --quick      15 repetitions of ~20 ms (default: 31 of ~50 ms)\n"
             "  --reps N     repetitions per case (>= 1; >= 15 for the published medians)\n"
             "  --rep-ms MS  target duration of one repetition\n"
             "  --out DIR    write DIR/core.csv and DIR/core.json (default results)\n"
             "  --only LIST  run only these cases (comma-separated; baselines are not added)\n"
             "  --iters N    fixed iterations per repetition, no calibration or warm-up\n"
             "               (for callgrind: bench/callgrind-core)\n"
             "  --no-meta    skip the 64 GiB metadata measurement\n"
             "  --strict     exit 3 if a target is missed\n"
             "  --list       print the case names\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->reps = -1;
  o->rep_ms = -1;
  o->meta = true;
  o->out = "results";
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--quick")) {
      o->quick = true;
    } else if (!strcmp(a, "--reps") && more) {
      o->reps = atoi(argv[++i]);
      if (o->reps < 1) {
        fprintf(stderr, "bench_core: --reps must be >= 1\n");
        return 1;
      }
    } else if (!strcmp(a, "--rep-ms") && more) {
      o->rep_ms = atof(argv[++i]);
      if (!(o->rep_ms > 0)) {
        fprintf(stderr, "bench_core: --rep-ms must be > 0\n");
        return 1;
      }
    } else if (!strcmp(a, "--out") && more) {
      o->out = argv[++i];
    } else if (!strcmp(a, "--only") && more) {
      o->only = argv[++i];
    } else if (!strcmp(a, "--iters") && more) {
      o->fixed_iters = strtoull(argv[++i], NULL, 10);
      if (!o->fixed_iters) {
        fprintf(stderr, "bench_core: --iters must be >= 1\n");
        return 1;
      }
    } else if (!strcmp(a, "--no-meta")) {
      o->meta = false;
    } else if (!strcmp(a, "--strict")) {
      o->strict = true;
    } else if (!strcmp(a, "--list")) {
      for (int c = 0; c < NCASES; c++)
        printf("%-22s group %d  %s\n", cases[c].name, cases[c].group, cases[c].desc);
      printf("%-22s group 5  64 GiB sim arena metadata (RSS)\n", "meta");
      exit(0);
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "bench_core: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 1;
    }
  }
  if (o->reps < 0)
    o->reps = o->quick ? 15 : 31;
  if (o->rep_ms < 0)
    o->rep_ms = o->quick ? 20 : 50;
  if (o->only && !bu_in_list(o->only, "meta"))
    o->meta = false;
  return 0;
}

static bh_arena_t *make_arena(bool pcp, bool smp) {
  bh_config_t cfg;
  bh_config_init(&cfg); /* mmap backing, 1 GiB: DMA 16 MiB, DMA32 496 MiB, Normal 512 MiB */
  cfg.pcp = pcp;
  cfg.smp = smp;
  bh_arena_t *a;
  int e = bh_arena_create(&cfg, &a);
  if (e)
    die("bh_arena_create", e);
  return a;
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse(argc, argv, &o))
    return 1;
  bu_machine_t m;
  bu_machine_info(&m);
  if (!bu_build_is_optimized(&m))
    fprintf(stderr,
            "bench_core: WARNING: %s build; numbers are not comparable to Release "
            "results\n",
            m.build_type);

  /* The metadata part runs first, before jemalloc holds memory it could purge meanwhile. */
  if (o.meta) {
    fprintf(stderr, "bench_core: metadata of a 64 GiB sim arena...\n");
    run_meta();
  }

  int ncase = 0;
  for (int i = 0; i < NCASES; i++) {
    bcase_t *c = &cases[i];
    c->enabled = !o.only || bu_in_list(o.only, c->name);
    c->pairs_per_iter = (c->kind == K_BUDDY_BATCH || c->kind == K_JE_BATCH) ? BATCH : 1;
    ncase += c->enabled;
    c->base = NULL;
    for (int j = 0; c->baseline && j < NCASES; j++)
      if (!strcmp(cases[j].name, c->baseline))
        c->base = &cases[j];
  }
  if (o.only && !ncase && !o.meta) {
    fprintf(stderr, "bench_core: --only matches no case (see --list)\n");
    return 1;
  }

  bh_zone_info_t zi_pcp;
  bool have_zi = false;
  if (ncase) {
    arena_pcp = make_arena(true, true);
    arena_nopcp = make_arena(false, true);
    arena_up = make_arena(true, false);
    for (int z = 0; z < bh_zone_count(arena_pcp); z++)
      if (bh_zone_info(arena_pcp, z, &zi_pcp) == 0 && zi_pcp.type == BH_ZONE_NORMAL) {
        have_zi = true;
        break;
      }

    uint64_t target_ns = (uint64_t)(o.rep_ms * 1e6);
    for (int i = 0; i < NCASES; i++) {
      bcase_t *c = &cases[i];
      if (!c->enabled)
        continue;
      c->iters = o.fixed_iters ? o.fixed_iters : calibrate(c, target_ns);
      c->ns = calloc((size_t)o.reps, sizeof(double));
      if (!c->ns)
        die("calloc", 0);
    }
    fprintf(stderr, "bench_core: %d cases x %d repetitions of ~%.0f ms\n", ncase, o.reps, o.rep_ms);
    for (int r = 0; r < o.reps; r++) {
      for (int k = 0; k < NCASES; k++) {
        bcase_t *c = &cases[r % 2 ? NCASES - 1 - k : k];
        if (!c->enabled)
          continue;
        uint64_t t = run_case(c, c->iters);
        c->ns[r] = (double)t / (double)(c->iters * (uint64_t)c->pairs_per_iter);
      }
    }
    double *ratio = calloc((size_t)o.reps, sizeof(double));
    if (!ratio)
      die("calloc", 0);
    for (int i = 0; i < NCASES; i++) {
      bcase_t *c = &cases[i];
      if (!c->enabled)
        continue;
      bu_stats(c->ns, o.reps, &c->st);
      if (c->base && !c->base->enabled)
        c->base = NULL;
    }
    for (int i = 0; i < NCASES; i++) {
      bcase_t *c = &cases[i];
      if (!c->enabled || !c->base)
        continue;
      for (int r = 0; r < o.reps; r++)
        ratio[r] = c->ns[r] / c->base->ns[r];
      bu_stats(ratio, o.reps, &c->ratio);
    }
    free(ratio);
  }

  print_table(&m, &o);

  FILE *f = bu_open_out(o.out, "core.csv");
  if (!f)
    return 2;
  write_csv(f, &m, &o);
  if (fclose(f) != 0)
    die("writing core.csv", 0);
  f = bu_open_out(o.out, "core.json");
  if (!f)
    return 2;
  write_json(f, &m, &o, have_zi ? &zi_pcp : NULL);
  if (fclose(f) != 0)
    die("writing core.json", 0);
  printf("wrote %s/core.csv and %s/core.json\n", o.out, o.out);

  int failed = 0;
  for (int i = 0; i < NCASES; i++)
    failed += cases[i].enabled && !strcmp(verdict(&cases[i]), "FAIL");
  meta_row_t r[16];
  int n = meta_rows(r);
  for (int i = 0; i < n; i++)
    failed += !strcmp(meta_verdict(&r[i]), "FAIL");
  if (failed)
    printf("%d target(s) missed\n", failed);

  bh_arena_destroy(arena_pcp);
  bh_arena_destroy(arena_nopcp);
  bh_arena_destroy(arena_up);
  for (int i = 0; i < NCASES; i++)
    free(cases[i].ns);
  return o.strict && failed ? 3 : 0;
}
