/*
 * exp_compact: >0 order folio compaction (experiment 8 of the published set).
 *
 * Published (Zi Yan, "Enable >0 order folio memory compaction", merged in Linux 6.9):
 * vm-scalability throughput mostly unchanged, some cases +16 % to +78 %; and the caveat of the
 * thread: "%stddev is greater than %change, so the change might be noise".
 *
 * Here one sample is one arena (mmap backing, --arena bytes: 1 GiB, 256 MiB with --quick,
 * laid out as bh_config_init lays out 1 GiB: DMA 16 MiB, Normal half, DMA32 the rest; pcp on,
 * everything else default) that a seeded workload brings into a fragmented state:
 *
 *   fill   movable "folios" (BH_GFP_USER_MOVABLE) whose orders follow the mix (--mixes: the
 *          share of the pages in each order, e.g. mthp50 = half the pages in order-0 folios,
 *          the other half in order 2, 3 and 4, like anonymous mTHP), with an unmovable
 *          (BH_GFP_KERNEL) order-0 page for every 1/--kernel movable pages on average, until
 *          an order-0 allocation fails (a failed larger folio falls back to order 0, as a THP
 *          fault does).  Every page of every block gets a stamp (8 bytes: block id, page
 *          index, seed), which writes every page once;
 *   free   each movable block is freed with probability --free (0.5): free memory is then
 *          scattered in holes below the pageblock order (order 9); the unmovable pages stay;
 *   drain  bh_drain_pcp, so that every free page is on the buddy lists.
 *
 * Then one of three modes runs on that state:
 *
 *   none    no compaction (the reference: what the fragmented state gives);
 *   order0  bh_compact_memory with compact_large_blocks off: only order-0 pages move, larger
 *           blocks stay and pin their pageblocks (Linux before 6.9);
 *   large   bh_compact_memory with compact_large_blocks on: blocks of order 1..8 move whole
 *           (Linux 6.9+, Zi Yan's series); one that finds no free block big enough is split
 *           (bh_compact_set_split, the kernel's try_split_folio) and its pages move one by one.
 *
 * The owner of the blocks (this program) updates its map in the bh_migrate_fn callback.  After
 * compaction every live block's stamps must match the owner's record, no callback may name a
 * block the owner does not hold as movable, the free page count must be unchanged, and
 * bh_arena_check must report 0 violations (the program exits 1 otherwise).  Then:
 *
 *   order-9 blocks obtainable: allocate order-9 blocks (GFP_TRANSHUGE) until the first failure,
 *          as Mel Gorman's nr_hugepages script does, then free them and drain the pcp lists;
 *   workload (the userspace analogue of vm-scalability), --passes times (10): allocate --use
 *          (0.8) of the free memory in 2 MiB steps, each an order-9 block or, when that fails,
 *          512 order-0 pages (a THP fault falling back to small pages), writing one byte in
 *          every page, then free it all.  Its throughput is pages per second over all passes.
 *          (It stops short of the watermarks: near them every order-0 allocation takes the
 *          slow path with a pcp drain, and that tail, not the memory's layout, would dominate.)
 *
 * The three modes run on identical states: each builds its own arena from the same seed, and
 * the program checks that the three states are the same (a fingerprint of every live block
 * and the free counts; exit 1 if not).  Repetitions (--reps, 11; 5 with --quick) use seeds
 * --seed + r and interleave everything: within a repetition every mix runs all three modes
 * back to back, the order of the modes rotated per repetition and the order of the mixes too,
 * so drift on the machine hits all.  The order0 mix (no folio above order 0) is the control:
 * there the two compaction modes do the same work, and their difference is the noise floor.
 *
 * Reported per mix and mode: median, p10, p90 over the repetitions of the order-9 blocks
 * obtainable, the workload's pages/s (with its %stddev, as LKP reports it, and the paired change
 * against order0 of the same seed), the compaction's wall and CPU time, pages migrated and
 * migrated MiB/s, callbacks, the fragmentation score (bh_fragmentation_score) before and after,
 * and the free order-9 blocks before and after compaction (from the zone counters).
 *
 * Output: DIR/compact.csv (one row per mix and mode) and DIR/compact.json (the same with every
 * sample, the machine, the options and the load average).
 */

#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void exp_die(const char *what, int err) { bu_die("exp_compact", what, err); }

#define MAX_MIXES 8
#define MAX_FOLIO_ORDER 8 /* below the pageblock order: blocks compaction may move */
#define HUGE_ORDER 9      /* HPAGE_PMD_ORDER on x86-64, the arena's pageblock order */
#define HUGE_PAGES (1u << HUGE_ORDER)
#define NMODES 3

enum { MODE_NONE, MODE_ORDER0, MODE_LARGE };
static const char *const mode_name[NMODES] = {"none", "order0", "large"};

/* A folio mix: the share of the movable pages allocated in folios of each order. */
typedef struct mix {
  const char *name;
  double w[MAX_FOLIO_ORDER + 1];
  const char *what;
} mix_t;

static const mix_t mix_table[] = {
    {"order0", {1}, "order-0 pages only (control: both compaction modes do the same work)"},
    {"mthp50", {0.5, 0, 1 / 6.0, 1 / 6.0, 1 / 6.0}, "50 % order 0, 50 % orders 2-4 (mTHP)"},
    {"mthp90", {0.1, 0, 0.3, 0.3, 0.3}, "10 % order 0, 90 % orders 2-4 (mTHP)"},
    {"wide",
     {1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0, 1 / 9.0},
     "orders 0-8, an equal share of the pages each"},
};
#define NMIX_TABLE (int)(sizeof(mix_table) / sizeof(mix_table[0]))

typedef struct opts {
  bool quick;
  int reps, nmix, passes;
  uint64_t arena_bytes, seed;
  double free_share, kernel_share, use;
  const mix_t *mix[MAX_MIXES];
  const char *out;
  char args[512];
} opts_t;

/* One arena: one mix, one seed, one mode. */
typedef struct sample {
  uint64_t fingerprint;
  uint64_t movable_blocks, movable_pages, large_pages, kernel_pages, fill_fallbacks;
  uint64_t free_pages;
  unsigned score_before, score_after;
  uint64_t thp_free_before, thp_free_after; /* free order-9 blocks, from the zone counters */
  bh_compact_result_t cr;
  uint64_t callbacks;
  double compact_s, compact_cpu_s, migrated_mib_s;
  uint64_t thp;                   /* order-9 blocks obtainable after compaction */
  uint64_t run_target, run_pages; /* the workload's pages per pass, in all passes */
  bool run_short;                 /* an order-0 allocation of the workload failed */
  double run_s, run_cpu_s, run_pages_s, run_thp_pct, run_cpu_ns_per_page;
  double build_s;
} sample_t;

/* ---------------------------------------------------------------------------------------- */
/* The owner of the blocks                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct block {
  uint64_t pfn;
  uint8_t order;
  bool live, movable;
  uint32_t sid;  /* the stamps it holds: those of block sid's pages from sidx on */
  uint16_t sidx; /* (a page split off a folio keeps its folio's stamp) */
} block_t;

typedef struct owner {
  bh_arena_t *a;
  uint64_t pages, seed;
  uint32_t *map; /* pfn -> block id + 1, at block heads only (0: none of ours) */
  block_t *blk;
  uint32_t nblk;
  uint64_t calls, bad_calls, splits;
  uint64_t *run; /* the workload's blocks: pfn << 1 | (order 9) */
} owner_t;

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rnd01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

/* What page i of block id holds. */
static uint64_t stamp_of(const owner_t *o, uint32_t id, uint64_t i) {
  uint64_t s = o->seed ^ ((uint64_t)id << 20 | i);
  return splitmix64(&s);
}

static void add_block(owner_t *o, uint64_t pfn, unsigned order, bool movable) {
  uint32_t id = o->nblk++;
  o->blk[id] = (block_t){pfn, (uint8_t)order, true, movable, id, 0};
  o->map[pfn] = id + 1;
  unsigned char *p = bh_pfn_to_addr(o->a, pfn);
  for (uint64_t i = 0; i < 1ull << order; i++) {
    uint64_t v = stamp_of(o, id, i);
    memcpy(p + (i << BH_PAGE_SHIFT), &v, sizeof(v));
  }
}

/* bh_migrate_fn: the block at old_pfn now lives at new_pfn.  Runs under the zone lock. */
static int migrate_cb(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  owner_t *o = ctx;
  uint32_t id = old_pfn < o->pages ? o->map[old_pfn] : 0;
  if (!id || new_pfn >= o->pages || o->map[new_pfn] || o->blk[id - 1].order != order ||
      !o->blk[id - 1].movable || (new_pfn & ((1ull << order) - 1))) {
    o->bad_calls++; /* not a block we own as movable, or a target that is not free */
    return 1;
  }
  o->map[new_pfn] = id;
  o->map[old_pfn] = 0;
  o->blk[id - 1].pfn = new_pfn;
  o->calls++;
  return 0;
}

/*
 * bh_split_fn: compaction found no target for the folio at pfn and splits it, as the kernel's
 * try_split_folio does: each page becomes a block of its own.  Runs under the zone lock.
 */
static int split_cb(void *ctx, uint64_t pfn, unsigned order) {
  owner_t *o = ctx;
  uint32_t id = pfn < o->pages ? o->map[pfn] : 0;
  if (!id || o->blk[id - 1].order != order || !o->blk[id - 1].movable) {
    o->bad_calls++;
    return 1;
  }
  block_t *b = &o->blk[id - 1];
  for (uint64_t i = 1; i < 1ull << order; i++) {
    uint32_t nid = o->nblk++;
    o->blk[nid] = (block_t){pfn + i, 0, true, true, b->sid, (uint16_t)(b->sidx + i)};
    o->map[pfn + i] = nid + 1;
  }
  b->order = 0;
  o->splits++;
  return 0;
}

/* Every live block where the owner expects it, with its stamps; returns the mismatches. */
static uint64_t verify_owner(const owner_t *o) {
  uint64_t bad = 0;
  for (uint32_t id = 0; id < o->nblk; id++) {
    const block_t *b = &o->blk[id];
    if (!b->live)
      continue;
    if (o->map[b->pfn] != id + 1)
      bad++;
    const unsigned char *p = bh_pfn_to_addr(o->a, b->pfn);
    for (uint64_t i = 0; i < 1ull << b->order; i++) {
      uint64_t v;
      memcpy(&v, p + (i << BH_PAGE_SHIFT), sizeof(v));
      bad += v != stamp_of(o, b->sid, b->sidx + i);
    }
  }
  return bad;
}

/* ---------------------------------------------------------------------------------------- */
/* One sample                                                                                */
/* ---------------------------------------------------------------------------------------- */

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Free pages (on the buddy and the pcp lists) and free order-9 blocks, over the zones. */
static void zone_sums(bh_arena_t *a, uint64_t *free_pages, uint64_t *thp_free) {
  *free_pages = *thp_free = 0;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t z;
    if (bh_zone_info(a, i, &z))
      continue;
    *free_pages += z.free_pages + z.pcp_pages;
    for (unsigned ord = HUGE_ORDER; ord <= BH_ORDER_LIMIT; ord++)
      *thp_free += z.nr_free[ord] << (ord - HUGE_ORDER);
  }
}

/* The fingerprint of a state: every live block and the free blocks per zone and order. */
static uint64_t fingerprint(const owner_t *o) {
  uint64_t h = 0xcbf29ce484222325ull, s;
  for (uint32_t id = 0; id < o->nblk; id++)
    if (o->blk[id].live) {
      s = h ^ (o->blk[id].pfn << 8 | o->blk[id].order);
      h = splitmix64(&s);
    }
  for (int i = 0; i < bh_zone_count(o->a); i++) {
    bh_zone_info_t z;
    if (bh_zone_info(o->a, i, &z))
      continue;
    for (unsigned ord = 0; ord <= BH_ORDER_LIMIT; ord++) {
      s = h ^ (z.nr_free[ord] << 5 | ord);
      h = splitmix64(&s);
    }
  }
  return h;
}

/* Picks a folio order: per folio, order k with probability proportional to w[k] / 2^k. */
static unsigned pick_order(const double *cdf, uint64_t *rng) {
  double u = rnd01(rng);
  for (unsigned k = 0; k < MAX_FOLIO_ORDER; k++)
    if (u < cdf[k])
      return k;
  return MAX_FOLIO_ORDER;
}

static uint64_t g_integrity_errors;

static void run_sample(const opts_t *o, const mix_t *m, uint64_t seed, int mode, owner_t *ow,
                       sample_t *s) {
  memset(s, 0, sizeof(*s));
  double t0 = bu_now_s();
  bh_config_t cfg;
  bu_arena_config(o->arena_bytes, &cfg);
  cfg.compact_large_blocks = mode == MODE_LARGE;
  bh_arena_t *a;
  int e = bh_arena_create(&cfg, &a);
  if (e)
    exp_die("bh_arena_create", e);
  ow->a = a;
  ow->pages = bh_arena_pages(a);
  ow->seed = seed;
  ow->nblk = 0;
  ow->calls = ow->bad_calls = ow->splits = 0;
  memset(ow->map, 0, ow->pages * sizeof(*ow->map));

  /* fill: per folio probabilities from the page shares */
  double cdf[MAX_FOLIO_ORDER + 1], sum = 0;
  for (unsigned k = 0; k <= MAX_FOLIO_ORDER; k++)
    sum += m->w[k] / (double)(1u << k);
  for (unsigned k = 0; k <= MAX_FOLIO_ORDER; k++)
    cdf[k] = (k ? cdf[k - 1] : 0) + m->w[k] / (double)(1u << k) / sum;
  uint64_t rng = seed * 0x2545f4914f6cdd1dull + 17;
  for (;;) {
    unsigned order = pick_order(cdf, &rng);
    uint64_t pfn;
    e = bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, order, 0, &pfn);
    if (e && order) {
      s->fill_fallbacks++;
      order = 0;
      e = bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, 0, &pfn);
    }
    if (e)
      break;
    if (ow->nblk == ow->pages)
      exp_die("block table (more blocks than pages)", BH_ENOMEM);
    add_block(ow, pfn, order, true);
    if (rnd01(&rng) < o->kernel_share * (double)(1u << order) &&
        bh_alloc_pfn(a, BH_GFP_KERNEL, 0, 0, &pfn) == 0)
      add_block(ow, pfn, 0, false);
  }
  /* free a random share of the movable blocks */
  for (uint32_t id = 0; id < ow->nblk; id++) {
    block_t *b = &ow->blk[id];
    if (!b->movable || rnd01(&rng) >= o->free_share)
      continue;
    e = bh_free_pfn(a, b->pfn, b->order, 0);
    if (e)
      exp_die("bh_free_pfn", e);
    b->live = false;
    ow->map[b->pfn] = 0;
  }
  bh_drain_pcp(a);
  for (uint32_t id = 0; id < ow->nblk; id++) {
    const block_t *b = &ow->blk[id];
    if (!b->live)
      continue;
    if (b->movable) {
      s->movable_blocks++;
      s->movable_pages += 1ull << b->order;
      s->large_pages += b->order ? 1ull << b->order : 0;
    } else {
      s->kernel_pages++;
    }
  }
  zone_sums(a, &s->free_pages, &s->thp_free_before);
  s->fingerprint = fingerprint(ow);
  s->score_before = s->score_after = bh_fragmentation_score(a, 0);
  s->build_s = bu_now_s() - t0;

  /* compaction */
  if (mode != MODE_NONE) {
    double c0 = thread_cpu_s();
    uint64_t w0 = bu_now_ns();
    bh_compact_set_split(a, split_cb);
    e = bh_compact_memory(a, migrate_cb, ow, &s->cr);
    uint64_t w1 = bu_now_ns();
    double c1 = thread_cpu_s();
    if (e)
      exp_die("bh_compact_memory", e);
    s->compact_s = (double)(w1 - w0) / 1e9;
    s->compact_cpu_s = c1 - c0;
    s->callbacks = ow->calls;
    s->migrated_mib_s =
        s->compact_s > 0 ? (double)s->cr.migrated * BH_PAGE_SIZE / BU_MiB / s->compact_s : 0;
    s->score_after = bh_fragmentation_score(a, 0);
    if (s->cr.score_before != s->score_before || s->cr.score_after != s->score_after)
      fprintf(stderr, "exp_compact: note: compaction reported scores %u -> %u, measured %u -> %u\n",
              s->cr.score_before, s->cr.score_after, s->score_before, s->score_after);
  }
  uint64_t free_after;
  zone_sums(a, &free_after, &s->thp_free_after);

  /* integrity: the owner's record, the data, the arena's invariants */
  uint64_t bad = verify_owner(ow) + ow->bad_calls;
  long viol = bh_arena_check(a, stderr, 10);
  if (bad || viol || free_after != s->free_pages) {
    fprintf(stderr,
            "exp_compact: INTEGRITY: mix %s seed %lu mode %s: %lu bad blocks or pages, %lu bad "
            "callbacks, %ld arena violations, free pages %lu -> %lu\n",
            m->name, (unsigned long)seed, mode_name[mode], (unsigned long)bad,
            (unsigned long)ow->bad_calls, viol, (unsigned long)s->free_pages,
            (unsigned long)free_after);
    g_integrity_errors++;
  }

  /*
   * Order-9 blocks obtainable (Mel Gorman's nr_hugepages way): allocate them until the first
   * failure, then free them all again and drain the pcp lists (order-9 blocks have one), so the
   * workload starts from the compacted state.  The pages compaction freed sit on the pcp lists
   * first, as in Linux; there, a hugepage allocation that fails goes through direct reclaim and
   * compaction, which drain them, and neither is modelled, so they are drained here first.
   */
  bh_drain_pcp(a);
  zone_sums(a, &free_after, &s->thp_free_after);
  uint64_t pfn, n = 0;
  while (bh_alloc_pfn(a, BH_GFP_TRANSHUGE, HUGE_ORDER, 0, &pfn) == 0)
    ow->run[n++] = pfn;
  s->thp = n;
  for (uint64_t i = 0; i < n; i++)
    if ((e = bh_free_pfn(a, ow->run[i], HUGE_ORDER, 0)))
      exp_die("bh_free_pfn (order 9)", e);
  bh_drain_pcp(a);

  /*
   * The workload, --passes times: allocate --use of the free memory in 2 MiB steps, each an
   * order-9 block or, when that fails, 512 order-0 pages (a THP fault falling back to small
   * pages); write a byte in every page; free everything (the order-0 pages one by one).  It
   * stays clear of the watermarks, where every allocation would take the slow path.
   */
  s->run_target = (uint64_t)(o->use * (double)s->free_pages) & ~(uint64_t)(HUGE_PAGES - 1);
  unsigned char *base = bh_arena_base(a);
  double c0 = thread_cpu_s();
  uint64_t w0 = bu_now_ns();
  uint64_t pages = 0, thp_pages = 0;
  for (int pass = 0; pass < o->passes; pass++) {
    uint64_t done = 0;
    n = 0;
    while (done < s->run_target && !s->run_short) {
      if (bh_alloc_pfn(a, BH_GFP_TRANSHUGE, HUGE_ORDER, 0, &pfn) == 0) {
        volatile unsigned char *p = base + (pfn << BH_PAGE_SHIFT);
        for (unsigned i = 0; i < HUGE_PAGES; i++)
          p[((uint64_t)i << BH_PAGE_SHIFT) + 64] = (unsigned char)i;
        ow->run[n++] = pfn << 1 | 1;
        done += HUGE_PAGES;
        thp_pages += HUGE_PAGES;
        continue;
      }
      for (unsigned i = 0; i < HUGE_PAGES; i++) {
        if (bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, 0, &pfn)) {
          s->run_short = true;
          break;
        }
        base[(pfn << BH_PAGE_SHIFT) + 64] = (unsigned char)i;
        ow->run[n++] = pfn << 1;
        done++;
      }
    }
    for (uint64_t i = 0; i < n; i++)
      if ((e = bh_free_pfn(a, ow->run[i] >> 1, ow->run[i] & 1 ? HUGE_ORDER : 0, 0)))
        exp_die("bh_free_pfn (workload)", e);
    pages += done;
  }
  BU_SINK(base);
  uint64_t w1 = bu_now_ns();
  double c1 = thread_cpu_s();
  s->run_pages = pages;
  s->run_s = (double)(w1 - w0) / 1e9;
  s->run_cpu_s = c1 - c0;
  s->run_pages_s = s->run_s > 0 ? (double)pages / s->run_s : 0;
  s->run_cpu_ns_per_page = pages ? s->run_cpu_s * 1e9 / (double)pages : 0;
  s->run_thp_pct = pages ? 100.0 * (double)thp_pages / (double)pages : 0;
  viol = bh_arena_check(a, stderr, 10);
  if (viol) {
    fprintf(stderr,
            "exp_compact: INTEGRITY: mix %s seed %lu mode %s: %ld arena violations "
            "after the workload\n",
            m->name, (unsigned long)seed, mode_name[mode], viol);
    g_integrity_errors++;
  }
  bh_arena_destroy(a);
  ow->a = NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Options                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: exp_compact [--quick] [--reps N] [--out DIR] [--arena SIZE] [--mixes LIST]\n"
             "                   [--free F] [--kernel K] [--use F] [--passes N]\n"
             "                   [--seed N]\n"
             "  --arena SIZE   mmap arena of every sample, a multiple of 8 MiB, at least 64 MiB\n"
             "                 (default 1G; --quick 256M)\n"
             "  --mixes LIST   folio mixes (default order0,mthp50,mthp90):\n");
  for (int i = 0; i < NMIX_TABLE; i++)
    fprintf(f, "                   %-7s %s\n", mix_table[i].name, mix_table[i].what);
  fprintf(f, "  --free F       share of the movable blocks freed after the fill (default 0.5)\n"
             "  --kernel K     unmovable pages per movable page of the fill (default 0.01)\n"
             "  --use F        share of the free memory the workload allocates in each pass\n"
             "                 (default 0.8)\n"
             "  --passes N     passes of the workload after compaction (default 10)\n"
             "  --seed N       seed of the first repetition; repetition r uses N + r (default 1)\n"
             "  --reps N       repetitions (default 11; --quick 5)\n"
             "  --out DIR      write DIR/compact.csv and DIR/compact.json (default results)\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->out = "results";
  o->reps = -1;
  o->seed = 1;
  o->free_share = 0.5;
  o->kernel_share = 0.01;
  o->passes = 10;
  o->use = 0.8;
  const char *mixes = "order0,mthp50,mthp90";
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--arena") && more) {
      if (bu_parse_size(argv[++i], &o->arena_bytes))
        return fprintf(stderr, "exp_compact: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--mixes") && more) {
      mixes = argv[++i];
    } else if (!strcmp(a, "--free") && more) {
      o->free_share = atof(argv[++i]);
    } else if (!strcmp(a, "--kernel") && more) {
      o->kernel_share = atof(argv[++i]);
    } else if (!strcmp(a, "--use") && more) {
      o->use = atof(argv[++i]);
    } else if (!strcmp(a, "--passes") && more) {
      o->passes = atoi(argv[++i]);
    } else if (!strcmp(a, "--seed") && more) {
      o->seed = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "exp_compact: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!o->arena_bytes)
    o->arena_bytes = o->quick ? 256ull << 20 : 1024ull << 20;
  if (o->reps < 0)
    o->reps = o->quick ? 5 : 11;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", mixes);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < NMIX_TABLE && strcmp(mix_table[k].name, t))
      k++;
    if (k == NMIX_TABLE || o->nmix == MAX_MIXES)
      return fprintf(stderr, "exp_compact: unknown mix '%s' (or too many)\n", t), 2;
    o->mix[o->nmix++] = &mix_table[k];
  }
  if (o->reps < 1 || o->nmix < 1 || o->passes < 1 || o->use <= 0 || o->use > 0.95 ||
      o->free_share < 0 || o->free_share > 1 || o->kernel_share < 0 || o->kernel_share > 0.5 ||
      o->arena_bytes < (64ull << 20) || o->arena_bytes % (8ull << 20))
    return fprintf(stderr, "exp_compact: bad --reps, --mixes, --passes, --use (0..0.95), --free "
                           "(0..1), --kernel (0..0.5) "
                           "or --arena (a multiple of 8 MiB, at least 64 MiB)\n"),
           2;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */

/* Statistics of one mix and mode over the repetitions. */
typedef struct conf_stats {
  bu_stats_t thp, thp_pct_free, run, change, compact_ms, compact_cpu_ms, migrated, mig_mib_s;
  bu_stats_t callbacks, score_before, score_after, thp_free_before, thp_free_after, run_thp_pct;
  bu_stats_t run_cpu_ns, free_pages, kernel_pages, large_share, failed, isolated, mscan, fscan;
  bu_stats_t build_s;
  double run_stddev_pct; /* LKP's %stddev: 100 * stddev / mean of pages/s */
  int short_reps;
} conf_stats_t;

static double stddev_pct(const double *v, int n) {
  if (n < 2)
    return 0;
  double mean = 0, ss = 0;
  for (int i = 0; i < n; i++)
    mean += v[i];
  mean /= n;
  for (int i = 0; i < n; i++)
    ss += (v[i] - mean) * (v[i] - mean);
  return mean > 0 ? 100.0 * sqrt(ss / (n - 1)) / mean : 0;
}

int main(int argc, char **argv) {
  opts_t o;
  int prc = parse(argc, argv, &o);
  if (prc)
    return prc;
  bu_machine_t mach;
  bu_machine_info(&mach);
  if (!bu_build_is_optimized(&mach))
    fprintf(stderr, "exp_compact: warning: %s build; results record it\n", mach.build_type);
  char load0[64], load1[64];
  bu_loadavg(load0, sizeof(load0));
  printf("exp_compact: mmap arenas of %.0f MiB, free share %g, kernel share %g, mixes",
         (double)o.arena_bytes / BU_MiB, o.free_share, o.kernel_share);
  for (int k = 0; k < o.nmix; k++)
    printf("%s%s", k ? "," : " ", o.mix[k]->name);
  printf(", modes none/order0/large, %d rep(s); load %s\n", o.reps, load0);

  owner_t ow;
  memset(&ow, 0, sizeof(ow));
  uint64_t max_pages = o.arena_bytes >> BH_PAGE_SHIFT;
  ow.map = malloc(max_pages * sizeof(*ow.map));
  ow.blk = malloc(max_pages * sizeof(*ow.blk));
  ow.run = malloc(max_pages * sizeof(*ow.run));
  if (!ow.map || !ow.blk || !ow.run)
    exp_die("malloc", 0);

  const int nm = o.nmix, R = o.reps;
  sample_t *smp = calloc((size_t)nm * NMODES * R, sizeof(*smp));
  if (!smp)
    exp_die("calloc", 0);
#define SMP(k, md, r) smp[((size_t)(k)*NMODES + (md)) * R + (r)]
  int mismatched = 0;
  double t0 = bu_now_s();
  for (int r = 0; r < R; r++) {
    uint64_t seed = o.seed + (uint64_t)r;
    for (int j = 0; j < nm; j++) {
      int k = (j + r) % nm; /* the mixes rotated per repetition */
      for (int i = 0; i < NMODES; i++) {
        int md = (i + r) % NMODES; /* the modes rotated per repetition */
        /* the same state for every mode: one seed per mix and repetition */
        run_sample(&o, o.mix[k], seed * 1000003ull + (uint64_t)k, md, &ow, &SMP(k, md, r));
      }
      for (int md = 1; md < NMODES; md++)
        if (SMP(k, md, r).fingerprint != SMP(k, 0, r).fingerprint) {
          fprintf(stderr, "exp_compact: mix %s rep %d: mode %s did not start from the same state\n",
                  o.mix[k]->name, r + 1, mode_name[md]);
          mismatched++;
        }
    }
    printf("  rep %d/%d (seed %lu):", r + 1, R, (unsigned long)seed);
    for (int k = 0; k < nm; k++)
      printf(" %s %lu/%lu/%lu", o.mix[k]->name, (unsigned long)SMP(k, MODE_NONE, r).thp,
             (unsigned long)SMP(k, MODE_ORDER0, r).thp, (unsigned long)SMP(k, MODE_LARGE, r).thp);
    printf(" (order-9 blocks: none/order0/large)\n");
    fflush(stdout);
  }
  double elapsed = bu_now_s() - t0;
  bu_loadavg(load1, sizeof(load1));
  free(ow.map);
  free(ow.blk);
  free(ow.run);

  conf_stats_t cs[MAX_MIXES][NMODES];
  double *v = malloc(sizeof(double) * (size_t)R);
  if (!v)
    exp_die("malloc", 0);
  for (int k = 0; k < nm; k++)
    for (int md = 0; md < NMODES; md++) {
      conf_stats_t *c = &cs[k][md];
#define STAT(expr, dst)                                                                            \
  do {                                                                                             \
    for (int r = 0; r < R; r++) {                                                                  \
      const sample_t *s = &SMP(k, md, r);                                                          \
      (void)s;                                                                                     \
      v[r] = (double)(expr);                                                                       \
    }                                                                                              \
    bu_stats(v, R, &c->dst);                                                                       \
  } while (0)
      STAT(s->thp, thp);
      STAT(s->free_pages ? 100.0 * (double)(s->thp * HUGE_PAGES) / (double)s->free_pages : 0,
           thp_pct_free);
      STAT(100.0 * (s->run_pages_s / SMP(k, MODE_ORDER0, r).run_pages_s - 1.0), change);
      STAT(s->compact_s * 1e3, compact_ms);
      STAT(s->compact_cpu_s * 1e3, compact_cpu_ms);
      STAT(s->cr.migrated, migrated);
      STAT(s->migrated_mib_s, mig_mib_s);
      STAT(s->callbacks, callbacks);
      STAT(s->score_before, score_before);
      STAT(s->score_after, score_after);
      STAT(s->thp_free_before, thp_free_before);
      STAT(s->thp_free_after, thp_free_after);
      STAT(s->run_thp_pct, run_thp_pct);
      STAT(s->run_cpu_ns_per_page, run_cpu_ns);
      STAT(s->free_pages, free_pages);
      STAT(s->kernel_pages, kernel_pages);
      STAT(s->movable_pages ? 100.0 * (double)s->large_pages / (double)s->movable_pages : 0,
           large_share);
      STAT(s->cr.migrate_failed, failed);
      STAT(s->cr.isolated, isolated);
      STAT(s->cr.migrate_scanned, mscan);
      STAT(s->cr.free_scanned, fscan);
      STAT(s->build_s, build_s);
      c->short_reps = 0;
      for (int r = 0; r < R; r++)
        c->short_reps += SMP(k, md, r).run_short;
      STAT(s->run_pages_s, run); /* last: v keeps the throughput for the stddev */
#undef STAT
      c->run_stddev_pct = stddev_pct(v, R);
    }
  free(v);

  printf("\nmedian [p10, p90] over %d seeds; order-9 = blocks obtainable after compaction; "
         "throughput = the workload's pages/s (%%sd: 100*stddev/mean); change = paired vs order0\n",
         R);
  printf("%-7s %-6s %20s %26s %5s %22s %18s %20s %11s\n", "mix", "mode", "order-9 blocks",
         "workload Mpages/s", "%sd", "change vs order0 %", "compaction ms", "migrated MiB/s",
         "score");
  for (int k = 0; k < nm; k++)
    for (int md = 0; md < NMODES; md++) {
      const conf_stats_t *c = &cs[k][md];
      printf("%-7s %-6s %6.0f [%5.0f, %5.0f] %8.2f [%6.2f, %6.2f] %5.1f %+6.1f [%+5.1f, %+5.1f] "
             "%6.1f [%4.1f, %4.1f] %6.0f [%5.0f, %5.0f] %4.0f -> %2.0f%s\n",
             o.mix[k]->name, mode_name[md], c->thp.median, c->thp.p10, c->thp.p90,
             c->run.median / 1e6, c->run.p10 / 1e6, c->run.p90 / 1e6, c->run_stddev_pct,
             c->change.median, c->change.p10, c->change.p90, c->compact_ms.median,
             c->compact_ms.p10, c->compact_ms.p90, c->mig_mib_s.median, c->mig_mib_s.p10,
             c->mig_mib_s.p90, c->score_before.median, c->score_after.median,
             c->short_reps ? "  SHORT" : "");
    }
  printf("free order-9 blocks before compaction (median):");
  for (int k = 0; k < nm; k++)
    printf(" %s %.0f", o.mix[k]->name, cs[k][MODE_NONE].thp_free_before.median);
  printf("\npublished: vm-scalability throughput mostly unchanged, some cases +16 %% to +78 %%; "
         "a change smaller than its %%stddev is noise\n");
  printf("elapsed %.1f s; load average %s at the start, %s at the end\n", elapsed, load0, load1);
  if (g_integrity_errors || mismatched)
    fprintf(stderr, "exp_compact: %lu integrity error(s), %d state mismatch(es)\n",
            (unsigned long)g_integrity_errors, mismatched);

  /* ---- compact.csv ---- */
  char a2[1024];
  snprintf(a2, sizeof(a2),
           "%s [arena_mib=%.0f reps=%d seed=%lu free=%g kernel=%g passes=%d use=%g load_start=%s "
           "load_end=%s]",
           o.args, (double)o.arena_bytes / BU_MiB, R, (unsigned long)o.seed, o.free_share,
           o.kernel_share, o.passes, o.use, load0, load1);
  FILE *f = bu_open_out(o.out, "compact.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_compact", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f, "# mode: none = no compaction, order0 = order-0 pages only (before Linux 6.9), "
             "large = blocks of order 1-8 move whole (6.9+); thp = order-9 blocks obtainable "
             "after compaction; run_pages_s = the workload's pages/s; change_vs_order0_pct = "
             "paired per seed\n");
  fprintf(f, "mix,mode,reps,arena_mib,large_share_pct,thp_median,thp_p10,thp_p90,"
             "thp_pct_free_median,thp_pct_free_p10,thp_pct_free_p90,run_pages_s_median,"
             "run_pages_s_p10,run_pages_s_p90,run_stddev_pct,change_vs_order0_pct_median,"
             "change_vs_order0_pct_p10,change_vs_order0_pct_p90,compact_ms_median,compact_ms_p10,"
             "compact_ms_p90,compact_cpu_ms_median,migrated_pages_median,migrated_pages_p10,"
             "migrated_pages_p90,migrated_mib_s_median,migrated_mib_s_p10,migrated_mib_s_p90,"
             "callbacks_median,score_before_median,score_after_median,score_after_p10,"
             "score_after_p90,thp_free_before_median,thp_free_after_median,run_thp_pct_median,"
             "run_cpu_ns_per_page_median,free_pages_median,kernel_pages_median,"
             "migrate_failed_median,isolated_median,migrate_scanned_median,free_scanned_median,"
             "run_short_reps,integrity_errors\n");
  for (int k = 0; k < nm; k++)
    for (int md = 0; md < NMODES; md++) {
      const conf_stats_t *c = &cs[k][md];
      fprintf(f,
              "%s,%s,%d,%.0f,%.1f,%.0f,%.1f,%.1f,%.2f,%.2f,%.2f,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,"
              "%.2f,%.2f,%.2f,%.2f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,%.1f,%.0f,"
              "%.0f,%.1f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%lu\n",
              o.mix[k]->name, mode_name[md], R, (double)o.arena_bytes / BU_MiB,
              c->large_share.median, c->thp.median, c->thp.p10, c->thp.p90, c->thp_pct_free.median,
              c->thp_pct_free.p10, c->thp_pct_free.p90, c->run.median, c->run.p10, c->run.p90,
              c->run_stddev_pct, c->change.median, c->change.p10, c->change.p90,
              c->compact_ms.median, c->compact_ms.p10, c->compact_ms.p90, c->compact_cpu_ms.median,
              c->migrated.median, c->migrated.p10, c->migrated.p90, c->mig_mib_s.median,
              c->mig_mib_s.p10, c->mig_mib_s.p90, c->callbacks.median, c->score_before.median,
              c->score_after.median, c->score_after.p10, c->score_after.p90,
              c->thp_free_before.median, c->thp_free_after.median, c->run_thp_pct.median,
              c->run_cpu_ns.median, c->free_pages.median, c->kernel_pages.median, c->failed.median,
              c->isolated.median, c->mscan.median, c->fscan.median, (double)c->short_reps,
              (unsigned long)g_integrity_errors);
    }
  fclose(f);

  /* ---- compact.json ---- */
  f = bu_open_out(o.out, "compact.json");
  if (!f)
    return 2;
  bu_json_head(f, "exp_compact", o.args, &mach, load0, load1, elapsed);
  fprintf(f,
          "  \"options\": {\"arena_bytes\": %lu, \"reps\": %d, \"seed\": %lu, \"free_share\": %g, "
          "\"kernel_share\": %g, \"passes\": %d, \"use\": %g, \"quick\": %s, \"backing\": "
          "\"mmap\", \"pcp\": "
          "true},\n",
          (unsigned long)o.arena_bytes, R, (unsigned long)o.seed, o.free_share, o.kernel_share,
          o.passes, o.use, o.quick ? "true" : "false");
  fprintf(f, "  \"published\": \"vm-scalability throughput mostly unchanged, some cases +16 %% "
             "to +78 %%; %%stddev greater than %%change means the change might be noise\",\n");
  fprintf(f, "  \"integrity_errors\": %lu,\n  \"state_mismatches\": %d,\n  \"configs\": [\n",
          (unsigned long)g_integrity_errors, mismatched);
  for (int k = 0; k < nm; k++)
    for (int md = 0; md < NMODES; md++) {
      const conf_stats_t *c = &cs[k][md];
      fprintf(f, "    {\"mix\": ");
      bu_json_str(f, o.mix[k]->name);
      fprintf(f, ", \"mix_description\": ");
      bu_json_str(f, o.mix[k]->what);
      fprintf(f, ", \"mode\": \"%s\", \"run_stddev_pct\": %.3f", mode_name[md], c->run_stddev_pct);
      const struct {
        const char *key;
        const bu_stats_t *s;
      } st[] = {{"thp", &c->thp},
                {"thp_pct_free", &c->thp_pct_free},
                {"run_pages_s", &c->run},
                {"change_vs_order0_pct", &c->change},
                {"compact_ms", &c->compact_ms},
                {"compact_cpu_ms", &c->compact_cpu_ms},
                {"migrated_pages", &c->migrated},
                {"migrated_mib_s", &c->mig_mib_s},
                {"callbacks", &c->callbacks},
                {"score_before", &c->score_before},
                {"score_after", &c->score_after},
                {"thp_free_before", &c->thp_free_before},
                {"thp_free_after", &c->thp_free_after},
                {"run_thp_pct", &c->run_thp_pct},
                {"run_cpu_ns_per_page", &c->run_cpu_ns},
                {"free_pages", &c->free_pages},
                {"kernel_pages", &c->kernel_pages},
                {"large_share_pct", &c->large_share},
                {"migrate_failed", &c->failed},
                {"isolated", &c->isolated},
                {"migrate_scanned", &c->mscan},
                {"free_scanned", &c->fscan},
                {"build_s", &c->build_s}};
      for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
        fprintf(f, ",\n      ");
        bu_json_stats(f, st[i].key, st[i].s, 1);
      }
      fprintf(f, ",\n      \"samples\": [");
      for (int r = 0; r < R; r++) {
        const sample_t *s = &SMP(k, md, r);
        fprintf(f,
                "%s\n        {\"seed\": %lu, \"fingerprint\": \"%016lx\", \"movable_blocks\": %lu, "
                "\"movable_pages\": %lu, \"large_pages\": %lu, \"kernel_pages\": %lu, "
                "\"fill_fallbacks\": %lu, \"free_pages\": %lu, "
                "\"score_before\": %u, \"score_after\": %u, \"thp_free_before\": %lu, "
                "\"thp_free_after\": %lu, \"compact_s\": %.6f, \"compact_cpu_s\": %.6f, "
                "\"migrated\": %lu, \"migrate_failed\": %lu, \"isolated\": %lu, "
                "\"migrate_scanned\": %lu, \"free_scanned\": %lu, \"callbacks\": %lu, "
                "\"migrated_mib_s\": %.1f, \"thp\": %lu, \"run_target\": %lu, "
                "\"run_pages\": %lu, \"run_short\": %s, \"run_s\": %.6f, \"run_cpu_s\": %.6f, "
                "\"run_pages_s\": %.0f, "
                "\"build_s\": "
                "%.3f}",
                r ? "," : "", (unsigned long)(o.seed + (uint64_t)r), (unsigned long)s->fingerprint,
                (unsigned long)s->movable_blocks, (unsigned long)s->movable_pages,
                (unsigned long)s->large_pages, (unsigned long)s->kernel_pages,
                (unsigned long)s->fill_fallbacks, (unsigned long)s->free_pages, s->score_before,
                s->score_after, (unsigned long)s->thp_free_before, (unsigned long)s->thp_free_after,
                s->compact_s, s->compact_cpu_s, (unsigned long)s->cr.migrated,
                (unsigned long)s->cr.migrate_failed, (unsigned long)s->cr.isolated,
                (unsigned long)s->cr.migrate_scanned, (unsigned long)s->cr.free_scanned,
                (unsigned long)s->callbacks, s->migrated_mib_s, (unsigned long)s->thp,
                (unsigned long)s->run_target, (unsigned long)s->run_pages,
                s->run_short ? "true" : "false", s->run_s, s->run_cpu_s, s->run_pages_s,
                s->build_s);
      }
      fprintf(f, "]}%s\n", k + 1 < nm || md + 1 < NMODES ? "," : "");
    }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  printf("wrote %s/compact.csv and %s/compact.json\n", o.out, o.out);
  free(smp);
  return g_integrity_errors || mismatched ? 1 : 0;
}
