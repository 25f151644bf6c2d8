/*
 * bench_hinting: free page hinting against the targets, with the "none" strategy as
 * the baseline in the same run.
 *
 *   (a) Idle memory.  A 1 GiB mmap arena (the default configuration: DMA 16 MiB, DMA32 496 MiB,
 *       Normal 512 MiB, pcp on) gets ~80 % of its pages allocated in mixed orders (0..10, the
 *       weights of examples/demo.c) and mobilities, every page written; then ~3/4 of that
 *       memory is freed in random order, the pcp lists are drained and the virtual clock is
 *       advanced by 60 s.  Measured with mincore: resident - live, as a % of the arena size.
 *       Target: <= 2 % for a hinting strategy.  Every strategy runs the same seeded workload
 *       in each repetition (steps run only in the final advance, so the allocator's decisions
 *       are identical); the median over --idle-reps repetitions is reported.  A strategy that
 *       refuses to attach (bubble while it is a placeholder) is skipped.
 *   (b) Reported bytes per madvise call, default configuration, from (a)'s runs (the
 *       reporter's counters).  Target: >= 2 MiB.
 *   (c) Hinting on but nothing to report: a tight order-0 alloc+free loop with pcp on (frees
 *       never merge to order 9, so the hook never fires), ns per pair for none and bitmap, each
 *       on its own arena, plus a second "none" arena as an A/A control that shows the noise
 *       floor.  Each of --reps short repetitions runs none, bitmap, none', none', bitmap, none
 *       (mirrored on odd repetitions), so that drift cancels; the per-repetition ratio
 *       bitmap/none gives the median and spread, and the ratio of the minima is printed too
 *       (interference from other processes only adds time).  Target: median ratio <= 1.02.  If
 * valgrind is installed, callgrind counts the instructions per pair of both (reproducible): the
 *       program runs itself under callgrind with --cg-child, twice with different iteration
 *       counts, and the difference cancels the setup.
 *
 * Output: a table with PASS/FAIL per target, DIR/hinting.csv and DIR/hinting.json with the
 * machine description (bench_util.h conventions: --out DIR, --quick, --reps N).
 */
#include "bench_util.h"

#include <buddyhint.h>
#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MiB (1024.0 * 1024.0)
#define GiB (1024ull * 1024 * 1024)
#define NSTRAT 3

static const char *const strategies[NSTRAT] = {"none", "bitmap", "bubble"};

typedef struct opts {
  bool quick, strict, callgrind, run_a, run_c;
  int reps, idle_reps;
  double rep_ms, idle_s, live_frac, free_frac;
  uint64_t seed, fixed_iters;
  const char *out, *only, *cg_child;
  char args[512];
  char load_start[64], load_end[64]; /* /proc/loadavg: the machine was not necessarily idle */
} opts_t;

static void read_loadavg(char *buf, size_t len) {
  snprintf(buf, len, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f)
    return;
  if (fgets(buf, (int)len, f))
    buf[strcspn(buf, "\n")] = 0;
  fclose(f);
}

static void die(const char *what, int err) {
  fprintf(stderr, "bench_hinting: %s failed: %s\n", what, err ? bh_strerror(err) : strerror(errno));
  exit(2);
}

/* ---------------------------------------------------------------------------------------- */
/* RNG and workload choices                                                                  */
/* ---------------------------------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Percent weights of orders 0..10, as examples/demo.c. */
static const unsigned order_weight[] = {40, 15, 10, 10, 4, 4, 4, 4, 4, 3, 2};

static unsigned pick_order(uint64_t *s) {
  unsigned r = (unsigned)(rnd(s) % 100), order = 0;
  while (r >= order_weight[order]) {
    r -= order_weight[order];
    order++;
  }
  return order;
}

/* 75 % movable (user memory), 15 % unmovable, 10 % reclaimable; zones by fallback. */
static unsigned pick_gfp(uint64_t *s) {
  unsigned r = (unsigned)(rnd(s) % 100);
  return r < 75 ? BH_GFP_MOVABLE : r < 90 ? 0 : BH_GFP_RECLAIMABLE;
}

static bh_arena_t *make_arena(void) {
  bh_config_t cfg;
  bh_config_init(&cfg); /* mmap, 1 GiB: DMA 16 MiB, DMA32 496 MiB, Normal 512 MiB, pcp on */
  bh_arena_t *a;
  int e = bh_arena_create(&cfg, &a);
  if (e)
    die("bh_arena_create", e);
  return a;
}

static int attach(bh_arena_t *a, const char *strategy, bh_hint_t **h) {
  bh_hint_config_t hc;
  bh_hint_config_init(&hc); /* virtual clock, MADV_DONTNEED */
  hc.strategy = strategy;
  return bh_hint_attach(a, &hc, h);
}

/* ---------------------------------------------------------------------------------------- */
/* (a) + (b): idle resident memory, bytes per call                                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct idle_run {
  double live_pct, resident_before_pct, resident_pct, excess_pct, excess_before_pct;
  double free_ge_pb_pct, free_lt_pb_pct; /* free memory in blocks >= / < pageblock order */
  double reported_mib, bytes_per_call, report_ms, advance_ms;
  uint64_t calls, ranges, steps, live_pages, allocated_pages, freed_pages;
} idle_run_t;

typedef struct idle_result {
  const char *strategy;
  bool skipped;
  char why[160];
  int n;
  idle_run_t *runs;
  bu_stats_t excess, excess_before, live, resident, reported, bpc, calls, advance_ms;
} idle_result_t;

typedef struct blk {
  uint64_t pfn;
  unsigned order;
} blk_t;

/* One repetition for one strategy; returns false (with why) if the strategy does not attach. */
static bool idle_once(const opts_t *o, const char *strategy, uint64_t seed, idle_run_t *r,
                      char *why, size_t whylen) {
  bh_arena_t *a = make_arena();
  bh_hint_t *h = NULL;
  int e = attach(a, strategy, &h);
  if (e) {
    snprintf(why, whylen, "%s (%s)", bh_hint_last_error()[0] ? bh_hint_last_error() : "refused",
             bh_err_name(e));
    bh_arena_destroy(a);
    return false;
  }
  memset(r, 0, sizeof(*r));
  uint64_t npages = bh_arena_pages(a), target = (uint64_t)((double)npages * o->live_frac);
  blk_t *b = malloc(npages * sizeof(*b));
  if (!b)
    die("malloc", 0);
  uint64_t n = 0, live = 0, s = seed;
  int fails = 0;
  while (live < target && fails < 1000) {
    unsigned order = pick_order(&s);
    uint64_t pfn;
    e = bh_alloc_pfn(a, pick_gfp(&s), order, -1, &pfn);
    if (e == BH_ENOSPC) {
      fails++;
      continue;
    }
    if (e)
      die("bh_alloc_pfn", e);
    fails = 0;
    uint8_t *p = bh_pfn_to_addr(a, pfn);
    for (uint64_t i = 0; i < (1ull << order); i++)
      *(volatile uint64_t *)(p + i * BH_PAGE_SIZE) = pfn + i; /* every page written */
    b[n++] = (blk_t){pfn, order};
    live += 1ull << order;
  }
  r->allocated_pages = live;
  /* free ~3/4 of the memory, blocks in random order */
  for (uint64_t i = n; i > 1; i--) {
    uint64_t j = rnd(&s) % i;
    blk_t t = b[i - 1];
    b[i - 1] = b[j];
    b[j] = t;
  }
  uint64_t to_free = (uint64_t)((double)live * o->free_frac), freed = 0;
  for (uint64_t i = 0; i < n && freed < to_free; i++) {
    if ((e = bh_free_pfn(a, b[i].pfn, b[i].order, -1)) != 0)
      die("bh_free_pfn", e);
    freed += 1ull << b[i].order;
  }
  live -= freed;
  bh_drain_pcp(a);
  r->freed_pages = freed;
  r->live_pages = live;

  double arena_bytes = (double)npages * BH_PAGE_SIZE, live_bytes = (double)live * BH_PAGE_SIZE;
  uint64_t res;
  if ((e = bh_arena_resident(a, &res)) != 0)
    die("bh_arena_resident", e);
  r->resident_before_pct = 100.0 * (double)res / arena_bytes;
  r->excess_before_pct = 100.0 * ((double)res - live_bytes) / arena_bytes;
  uint64_t ge = 0, lt = 0;
  unsigned pb = bh_arena_pageblock_order(a);
  for (int z = 0; z < bh_zone_count(a); z++) {
    bh_zone_info_t zi;
    bh_zone_info(a, z, &zi);
    for (unsigned k = 0; k <= bh_arena_max_order(a); k++)
      if (k >= pb)
        ge += zi.nr_free[k] << k;
      else
        lt += zi.nr_free[k] << k;
  }
  r->free_ge_pb_pct = 100.0 * (double)ge / (double)npages;
  r->free_lt_pb_pct = 100.0 * (double)lt / (double)npages;

  /* idle: 60 s of virtual time */
  uint64_t t0 = bu_now_ns();
  long steps = bh_hint_advance(h, bh_hint_now(h) + (uint64_t)(o->idle_s * 1e9));
  r->advance_ms = (double)(bu_now_ns() - t0) / 1e6;
  if (steps < 0)
    die("bh_hint_advance", (int)steps);
  if ((e = bh_arena_resident(a, &res)) != 0)
    die("bh_arena_resident", e);
  bh_hint_stats_t hs;
  bh_hint_stats(h, &hs);
  r->steps = hs.steps;
  r->calls = hs.report.calls;
  r->ranges = hs.report.ranges;
  r->reported_mib = (double)hs.report.bytes / MiB;
  r->bytes_per_call = hs.report.calls ? (double)hs.report.bytes / (double)hs.report.calls : NAN;
  r->report_ms = (double)hs.report.ns / 1e6;
  r->live_pct = 100.0 * live_bytes / arena_bytes;
  r->resident_pct = 100.0 * (double)res / arena_bytes;
  r->excess_pct = 100.0 * ((double)res - live_bytes) / arena_bytes;
  long v = bh_arena_check(a, stderr, 5);
  if (v) {
    fprintf(stderr, "bench_hinting: %s: %ld invariant violation(s)\n", strategy, v);
    exit(2);
  }
  free(b);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  return true;
}

#define STAT_OF(res, field, out)                                                                   \
  do {                                                                                             \
    double *v_ = malloc(sizeof(double) * (size_t)(res)->n);                                        \
    if (!v_)                                                                                       \
      die("malloc", 0);                                                                            \
    int k_ = 0;                                                                                    \
    for (int i_ = 0; i_ < (res)->n; i_++) {                                                        \
      double x_ = (double)(res)->runs[i_].field;                                                   \
      if (!isnan(x_))                                                                              \
        v_[k_++] = x_;                                                                             \
    }                                                                                              \
    if (k_)                                                                                        \
      bu_stats(v_, k_, (out));                                                                     \
    else                                                                                           \
      memset((out), 0, sizeof(*(out))), (out)->median = NAN;                                       \
    free(v_);                                                                                      \
  } while (0)

static void run_idle(const opts_t *o, idle_result_t res[NSTRAT]) {
  for (int k = 0; k < NSTRAT; k++) {
    memset(&res[k], 0, sizeof(res[k]));
    res[k].strategy = strategies[k];
    res[k].runs = calloc((size_t)o->idle_reps, sizeof(idle_run_t));
    if (!res[k].runs)
      die("calloc", 0);
  }
  for (int rep = 0; rep < o->idle_reps; rep++) {
    uint64_t seed = o->seed + (uint64_t)rep * 0x632be59bd9b4e019ull;
    for (int k = 0; k < NSTRAT; k++) {
      int kk = rep % 2 ? NSTRAT - 1 - k : k; /* alternate the order across repetitions */
      idle_result_t *r = &res[kk];
      if (r->skipped)
        continue;
      fprintf(stderr, "bench_hinting: (a) repetition %d/%d, %s...\n", rep + 1, o->idle_reps,
              r->strategy);
      if (!idle_once(o, r->strategy, seed, &r->runs[r->n], r->why, sizeof(r->why))) {
        r->skipped = true;
        fprintf(stderr, "bench_hinting: %s skipped: %s\n", r->strategy, r->why);
        continue;
      }
      r->n++;
    }
  }
  for (int k = 0; k < NSTRAT; k++) {
    idle_result_t *r = &res[k];
    if (r->skipped || !r->n)
      continue;
    STAT_OF(r, excess_pct, &r->excess);
    STAT_OF(r, excess_before_pct, &r->excess_before);
    STAT_OF(r, live_pct, &r->live);
    STAT_OF(r, resident_pct, &r->resident);
    STAT_OF(r, reported_mib, &r->reported);
    STAT_OF(r, bytes_per_call, &r->bpc);
    STAT_OF(r, calls, &r->calls);
    STAT_OF(r, advance_ms, &r->advance_ms);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* (c): order-0 pair cost with nothing to report                                             */
/* ---------------------------------------------------------------------------------------- */

/* The measured loop; its name is what callgrind --toggle-collect selects. */
NOINLINE uint64_t bench_hint_pair_loop(bh_arena_t *a, uint64_t iters);
NOINLINE uint64_t bench_hint_pair_loop(bh_arena_t *a, uint64_t iters) {
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t pfn;
    int e = bh_alloc_pfn(a, BH_GFP_KERNEL, 0, -1, &pfn);
    if (__builtin_expect(e != 0, 0))
      die("bh_alloc_pfn", e);
    e = bh_free_pfn(a, pfn, 0, -1);
    if (__builtin_expect(e != 0, 0))
      die("bh_free_pfn", e);
  }
  return bu_now_ns() - t0;
}

typedef struct pair_result {
  bool done;
  uint64_t iters; /* pairs per segment */
  int reps;
  double *ns[3]; /* [0] none, [1] bitmap, [2] none again (the A/A control) */
  bu_stats_t st[3], ratio, control;
  double min_ratio; /* min(bitmap) / min(none): interference only adds time */
  uint64_t notify[3];
  /* callgrind */
  bool cg_done;
  char cg_why[160];
  double cg_ir[2];
  uint64_t cg_n1, cg_n2;
} pair_result_t;

static uint64_t calibrate(bh_arena_t *a, double rep_ms) {
  uint64_t iters = 1000;
  for (;;) {
    uint64_t t = bench_hint_pair_loop(a, iters);
    if ((double)t >= rep_ms * 1e6 / 4 || iters >= (1ull << 32))
      return (uint64_t)((double)iters * rep_ms * 1e6 / (double)(t ? t : 1)) + 1;
    iters *= 4;
  }
}

static bool self_exe(char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0)
    return false;
  buf[n] = 0;
  return true;
}

/* Runs `self --cg-child strategy --iters n` under callgrind; the loop's inclusive Ir. */
static bool callgrind_ir(const char *strategy, uint64_t n, double *ir, char *why, size_t wl) {
  char exe[1024], out[256], cmd[2048];
  if (!self_exe(exe, sizeof(exe))) {
    snprintf(why, wl, "cannot find /proc/self/exe");
    return false;
  }
  snprintf(out, sizeof(out), "/tmp/bench_hinting.%d.%s.%llu.cg", (int)getpid(), strategy,
           (unsigned long long)n);
  snprintf(cmd, sizeof(cmd),
           "valgrind --tool=callgrind --callgrind-out-file=%s "
           "--toggle-collect=bench_hint_pair_loop '%s' --cg-child %s --iters %llu "
           ">/dev/null 2>&1",
           out, exe, strategy, (unsigned long long)n);
  int rc = system(cmd);
  FILE *f = fopen(out, "r");
  if (rc != 0 || !f) {
    snprintf(why, wl, "valgrind exited with %d", rc);
    if (f)
      fclose(f);
    unlink(out);
    return false;
  }
  char line[512];
  double totals = NAN, summary = NAN;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "totals:", 7))
      totals = strtod(line + 7, NULL);
    else if (!strncmp(line, "summary:", 8))
      summary = strtod(line + 8, NULL);
  }
  fclose(f);
  unlink(out);
  *ir = !isnan(totals) ? totals : summary;
  if (isnan(*ir)) {
    snprintf(why, wl, "no totals in the callgrind output");
    return false;
  }
  return true;
}

static bool have_valgrind(void) { return system("valgrind --version >/dev/null 2>&1") == 0; }

static void run_pairs(const opts_t *o, pair_result_t *p) {
  memset(p, 0, sizeof(*p));
  bh_arena_t *a[3];
  bh_hint_t *h[3];
  const char *names[3] = {"none", "bitmap", "none"};
  uint64_t notify0[3];
  for (int k = 0; k < 3; k++) {
    a[k] = make_arena();
    int e = attach(a[k], names[k], &h[k]);
    if (e)
      die("bh_hint_attach", e);
    uint64_t v[BH_NR_STATS];
    bench_hint_pair_loop(a[k], 100000); /* warm-up: pcp lists filled, pages touched */
    bh_stats_read(a[k], v);
    notify0[k] = v[BH_STAT_hint_notify];
  }
  p->iters = o->fixed_iters ? o->fixed_iters : calibrate(a[0], o->rep_ms / 6);
  p->reps = o->reps;
  for (int k = 0; k < 3; k++) {
    p->ns[k] = calloc((size_t)o->reps, sizeof(double));
    if (!p->ns[k])
      die("calloc", 0);
  }
  fprintf(stderr, "bench_hinting: (c) %d repetitions x 6 segments of %llu pairs\n", o->reps,
          (unsigned long long)p->iters);
  /* Each repetition runs none, bitmap, control, control, bitmap, none (mirrored on odd
   * repetitions): every arena's two segments are symmetric about the middle, so a linear drift
   * of the machine cancels out of the per-repetition ratios.  Short segments keep most of them
   * free of interference; the medians do the rest. */
  static const int seq[2][6] = {{0, 1, 2, 2, 1, 0}, {2, 1, 0, 0, 1, 2}};
  for (int r = 0; r < o->reps; r++) {
    uint64_t t[3] = {0, 0, 0};
    for (int j = 0; j < 6; j++) {
      int k = seq[r % 2][j];
      t[k] += bench_hint_pair_loop(a[k], p->iters);
    }
    for (int k = 0; k < 3; k++)
      p->ns[k][r] = (double)t[k] / (double)(2 * p->iters);
  }
  double *ratio = calloc((size_t)o->reps, sizeof(double)),
         *control = calloc((size_t)o->reps, sizeof(double));
  if (!ratio || !control)
    die("calloc", 0);
  for (int r = 0; r < o->reps; r++) {
    ratio[r] = p->ns[1][r] / p->ns[0][r];
    control[r] = p->ns[2][r] / p->ns[0][r];
  }
  for (int k = 0; k < 3; k++)
    bu_stats(p->ns[k], o->reps, &p->st[k]);
  bu_stats(ratio, o->reps, &p->ratio);
  bu_stats(control, o->reps, &p->control);
  p->min_ratio = p->st[1].min / p->st[0].min;
  free(ratio);
  free(control);
  for (int k = 0; k < 3; k++) {
    uint64_t v[BH_NR_STATS];
    bh_stats_read(a[k], v);
    p->notify[k] = v[BH_STAT_hint_notify] - notify0[k];
    bh_hint_detach(h[k]);
    bh_arena_destroy(a[k]);
  }
  p->done = true;

  if (!o->callgrind) {
    snprintf(p->cg_why, sizeof(p->cg_why), "disabled (--no-callgrind)");
    return;
  }
  if (!have_valgrind()) {
    snprintf(p->cg_why, sizeof(p->cg_why), "valgrind not installed");
    return;
  }
  p->cg_n1 = o->quick ? 50000 : 100000;
  p->cg_n2 = 3 * p->cg_n1;
  fprintf(stderr, "bench_hinting: (c) callgrind, %llu and %llu pairs...\n",
          (unsigned long long)p->cg_n1, (unsigned long long)p->cg_n2);
  for (int k = 0; k < 2; k++) {
    double i1, i2;
    if (!callgrind_ir(names[k], p->cg_n1, &i1, p->cg_why, sizeof(p->cg_why)) ||
        !callgrind_ir(names[k], p->cg_n2, &i2, p->cg_why, sizeof(p->cg_why)))
      return;
    p->cg_ir[k] = (i2 - i1) / (double)(p->cg_n2 - p->cg_n1);
  }
  p->cg_done = true;
}

/* The child run under callgrind: the same arena and loop, n pairs after a warm-up. */
static int cg_child(const char *strategy, uint64_t n) {
  bh_arena_t *a = make_arena();
  bh_hint_t *h;
  int e = attach(a, strategy, &h);
  if (e)
    die("bh_hint_attach", e);
  bench_hint_pair_loop(a, 1000);
  bench_hint_pair_loop(a, n);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Targets, table, files                                                                     */
/* ---------------------------------------------------------------------------------------- */

#define TARGET_EXCESS_PCT 2.0
#define TARGET_BPC (2.0 * MiB)
#define TARGET_RATIO 1.02

typedef struct target {
  const char *id, *what, *strategy, *unit, *cmp;
  double value, lo, hi, limit;
  const char *verdict; /* PASS, FAIL, SKIP */
  char note[200];
} target_t;

static int collect_targets(const opts_t *o, const idle_result_t *ir, const pair_result_t *pr,
                           target_t *t) {
  int n = 0;
  if (o->run_a) {
    for (int k = 1; k < NSTRAT; k++) {
      const idle_result_t *r = &ir[k];
      target_t x = {.id = "a",
                    .what = "idle resident above live, % of arena",
                    .strategy = r->strategy,
                    .unit = "%",
                    .cmp = "<=",
                    .limit = TARGET_EXCESS_PCT};
      if (r->skipped || !r->n) {
        x.value = x.lo = x.hi = NAN;
        x.verdict = "SKIP";
        snprintf(x.note, sizeof(x.note), "%s", r->why);
      } else {
        x.value = r->excess.median;
        x.lo = r->excess.min;
        x.hi = r->excess.max;
        x.verdict = x.value <= x.limit ? "PASS" : "FAIL";
        snprintf(x.note, sizeof(x.note), "none: %.2f %%", ir[0].excess.median);
      }
      t[n++] = x;
    }
    for (int k = 1; k < NSTRAT; k++) {
      const idle_result_t *r = &ir[k];
      target_t x = {.id = "b",
                    .what = "reported bytes per madvise call (default config)",
                    .strategy = r->strategy,
                    .unit = "MiB/call",
                    .cmp = ">=",
                    .limit = TARGET_BPC / MiB};
      if (r->skipped || !r->n || isnan(r->bpc.median)) {
        x.value = x.lo = x.hi = NAN;
        x.verdict = "SKIP";
        snprintf(x.note, sizeof(x.note), "%s", r->skipped ? r->why : "no report call");
      } else {
        x.value = r->bpc.median / MiB;
        x.lo = r->bpc.min / MiB;
        x.hi = r->bpc.max / MiB;
        x.verdict = x.value >= x.limit ? "PASS" : "FAIL";
        snprintf(x.note, sizeof(x.note), "%.0f calls, %.1f MiB (medians)", r->calls.median,
                 r->reported.median);
      }
      t[n++] = x;
    }
  }
  if (o->run_c && pr->done) {
    target_t x = {.id = "c",
                  .what = "order-0 pair cost with nothing to report, bitmap/none",
                  .strategy = "bitmap",
                  .unit = "ratio",
                  .cmp = "<=",
                  .limit = TARGET_RATIO};
    x.value = pr->ratio.median;
    x.lo = pr->ratio.p10;
    x.hi = pr->ratio.p90;
    x.verdict = x.value <= x.limit ? "PASS" : "FAIL";
    snprintf(x.note, sizeof(x.note), "%.2f vs %.2f ns/pair", pr->st[1].median, pr->st[0].median);
    t[n++] = x;
    if (pr->cg_done) {
      target_t y = {.id = "c-ir",
                    .what = "instructions per pair (callgrind), bitmap/none",
                    .strategy = "bitmap",
                    .unit = "ratio",
                    .cmp = "<=",
                    .limit = TARGET_RATIO};
      y.value = y.lo = y.hi = pr->cg_ir[1] / pr->cg_ir[0];
      y.verdict = y.value <= y.limit ? "PASS" : "FAIL";
      snprintf(y.note, sizeof(y.note), "%.1f vs %.1f Ir/pair", pr->cg_ir[1], pr->cg_ir[0]);
      t[n++] = y;
    }
  }
  return n;
}

static void print_table(const bu_machine_t *m, const opts_t *o, const idle_result_t *ir,
                        const pair_result_t *pr, const target_t *t, int nt) {
  printf("\nlibbuddyhint %s hinting benchmarks: %s, %s, %s build, %s\n", m->lib_version, m->cpu,
         m->kernel, m->build_type, m->compiler);
  printf("load average at start: %s; at end: %s (%d CPUs online)\n", o->load_start, o->load_end,
         m->online_cpus);
  if (o->run_a) {
    printf("\n(a)/(b) 1 GiB mmap arena (default config), ~%.0f %% allocated in orders 0..10 and "
           "written, ~%.0f %% of it freed at random, pcp drained, %.0f s virtual idle; "
           "median of %d [min, max]\n",
           o->live_frac * 100, o->free_frac * 100, o->idle_s, o->idle_reps);
    printf("%-8s %7s %10s %17s %19s %8s %8s %9s %10s %9s\n", "strategy", "live%", "resident%",
           "excess% before", "excess% after", "free>=pb", "free<pb", "reported", "calls",
           "MiB/call");
    for (int k = 0; k < NSTRAT; k++) {
      const idle_result_t *r = &ir[k];
      if (r->skipped || !r->n) {
        printf("%-8s skipped: %s\n", r->strategy, r->why);
        continue;
      }
      double ge = 0, lt = 0;
      for (int i = 0; i < r->n; i++)
        ge += r->runs[i].free_ge_pb_pct, lt += r->runs[i].free_lt_pb_pct;
      char after[40];
      snprintf(after, sizeof(after), "%.2f [%.2f, %.2f]", r->excess.median, r->excess.min,
               r->excess.max);
      printf("%-8s %7.2f %10.2f %17.2f %19s %7.1f%% %7.1f%% %6.0f MiB %10.0f %9.2f\n", r->strategy,
             r->live.median, r->resident.median, r->excess_before.median, after, ge / r->n,
             lt / r->n, r->reported.median, r->calls.median,
             isnan(r->bpc.median) ? 0.0 : r->bpc.median / MiB);
    }
    printf("  excess = (resident - live) / arena size; free>=pb / free<pb: free memory in blocks "
           "at/above and below pageblock order (mean), the most and least an order-9 hinting "
           "can return\n");
  }
  if (o->run_c && pr->done) {
    printf("\n(c) order-0 alloc+free pair, pcp on, nothing to report: %d repetitions of "
           "none, bitmap, none', none', bitmap, none (mirrored) x %llu pairs; ns/pair median "
           "[p10, p90]\n",
           pr->reps, (unsigned long long)pr->iters);
    printf("   none    %7.2f [%.2f, %.2f]   hook calls %llu\n", pr->st[0].median, pr->st[0].p10,
           pr->st[0].p90, (unsigned long long)pr->notify[0]);
    printf("   none'   %7.2f [%.2f, %.2f]   hook calls %llu   A/A control ratio %.4f [%.4f, "
           "%.4f] (the noise floor)\n",
           pr->st[2].median, pr->st[2].p10, pr->st[2].p90, (unsigned long long)pr->notify[2],
           pr->control.median, pr->control.p10, pr->control.p90);
    printf("   bitmap  %7.2f [%.2f, %.2f]   hook calls %llu   ratio %.4f [%.4f, %.4f], "
           "ratio of minima %.4f\n",
           pr->st[1].median, pr->st[1].p10, pr->st[1].p90, (unsigned long long)pr->notify[1],
           pr->ratio.median, pr->ratio.p10, pr->ratio.p90, pr->min_ratio);
    if (pr->cg_done)
      printf("   callgrind: none %.1f, bitmap %.1f instructions per pair (ratio %.4f)\n",
             pr->cg_ir[0], pr->cg_ir[1], pr->cg_ir[1] / pr->cg_ir[0]);
    else
      printf("   callgrind: %s\n", pr->cg_why);
  }
  printf("\n%-5s %-54s %-8s %24s %10s %-7s %s\n", "tgt", "what", "strategy", "value [spread]",
         "target", "verdict", "note");
  for (int i = 0; i < nt; i++) {
    char val[48] = "-", tgt[24];
    if (!isnan(t[i].value))
      snprintf(val, sizeof(val), "%.3f [%.3f, %.3f]", t[i].value, t[i].lo, t[i].hi);
    snprintf(tgt, sizeof(tgt), "%s %.2f", t[i].cmp, t[i].limit);
    printf("%-5s %-54s %-8s %24s %10s %-7s %s\n", t[i].id, t[i].what, t[i].strategy, val, tgt,
           t[i].verdict, t[i].note);
  }
  printf("\n");
}

static void csv_stats_row(FILE *f, const char *target, const char *strategy, const char *metric,
                          const char *unit, const bu_stats_t *s, const char *limit,
                          const char *verdict) {
  fprintf(f, "%s,%s,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%s,%s\n", target, strategy, metric, unit,
          s->n, s->median, s->p10, s->p90, s->min, s->max, limit, verdict);
}

static const char *verdict_of(const target_t *t, int nt, const char *id, const char *strategy) {
  for (int i = 0; i < nt; i++)
    if (!strcmp(t[i].id, id) && !strcmp(t[i].strategy, strategy))
      return t[i].verdict;
  return "info";
}

static void write_csv(FILE *f, const bu_machine_t *m, const opts_t *o, const idle_result_t *ir,
                      const pair_result_t *pr, const target_t *t, int nt) {
  bu_csv_machine(f, m, "bench_hinting", o->args);
  fprintf(f,
          "# (a) 1 GiB mmap arena, live %.0f %%, freed %.0f %%, idle %.0f s, %d reps, "
          "seed %llu\n",
          o->live_frac * 100, o->free_frac * 100, o->idle_s, o->idle_reps,
          (unsigned long long)o->seed);
  fprintf(f, "# loadavg: start %s; end %s\n", o->load_start, o->load_end);
  fprintf(f, "target,strategy,metric,unit,n,median,p10,p90,min,max,target_value,verdict\n");
  char lim[32];
  if (o->run_a)
    for (int k = 0; k < NSTRAT; k++) {
      const idle_result_t *r = &ir[k];
      if (r->skipped || !r->n) {
        fprintf(f, "a,%s,skipped,,0,,,,,,,SKIP\n", r->strategy);
        continue;
      }
      bool base = k == 0;
      snprintf(lim, sizeof(lim), "%.2f", TARGET_EXCESS_PCT);
      csv_stats_row(f, "a", r->strategy, "excess_resident_pct_of_arena", "%", &r->excess,
                    base ? "" : lim, base ? "baseline" : verdict_of(t, nt, "a", r->strategy));
      csv_stats_row(f, "a", r->strategy, "excess_before_idle_pct", "%", &r->excess_before, "",
                    "info");
      csv_stats_row(f, "a", r->strategy, "live_pct", "%", &r->live, "", "info");
      csv_stats_row(f, "a", r->strategy, "resident_pct", "%", &r->resident, "", "info");
      csv_stats_row(f, "a", r->strategy, "reported", "MiB", &r->reported, "", "info");
      csv_stats_row(f, "a", r->strategy, "report_calls", "calls", &r->calls, "", "info");
      csv_stats_row(f, "a", r->strategy, "advance_time", "ms", &r->advance_ms, "", "info");
      if (!isnan(r->bpc.median)) {
        bu_stats_t b = r->bpc;
        b.median /= MiB, b.p10 /= MiB, b.p90 /= MiB, b.min /= MiB, b.max /= MiB;
        snprintf(lim, sizeof(lim), "%.2f", TARGET_BPC / MiB);
        csv_stats_row(f, "b", r->strategy, "bytes_per_call", "MiB", &b, base ? "" : lim,
                      base ? "info" : verdict_of(t, nt, "b", r->strategy));
      }
    }
  if (o->run_c && pr->done) {
    csv_stats_row(f, "c", "none", "order0_pair", "ns/pair", &pr->st[0], "", "baseline");
    csv_stats_row(f, "c", "bitmap", "order0_pair", "ns/pair", &pr->st[1], "", "info");
    snprintf(lim, sizeof(lim), "%.2f", TARGET_RATIO);
    csv_stats_row(f, "c", "bitmap", "order0_pair_ratio_vs_none", "ratio", &pr->ratio, lim,
                  verdict_of(t, nt, "c", "bitmap"));
    fprintf(f, "c,bitmap,order0_pair_ratio_of_minima,ratio,1,%.6g,,,,,,info\n", pr->min_ratio);
    csv_stats_row(f, "c", "none", "order0_pair_aa_control_ratio", "ratio", &pr->control, "",
                  "info");
    if (pr->cg_done) {
      fprintf(f, "c,none,callgrind_ir_per_pair,Ir,1,%.6g,,,,,,baseline\n", pr->cg_ir[0]);
      fprintf(f, "c,bitmap,callgrind_ir_per_pair,Ir,1,%.6g,,,,,,info\n", pr->cg_ir[1]);
      fprintf(f, "c,bitmap,callgrind_ir_ratio_vs_none,ratio,1,%.6g,,,,,%s,%s\n",
              pr->cg_ir[1] / pr->cg_ir[0], lim, verdict_of(t, nt, "c-ir", "bitmap"));
    }
  }
}

static void write_json(FILE *f, const bu_machine_t *m, const opts_t *o, const idle_result_t *ir,
                       const pair_result_t *pr, const target_t *t, int nt) {
  fputs("{\n  \"benchmark\": \"hinting\",\n  \"program\": \"bench_hinting\",\n  \"args\": ", f);
  bu_json_str(f, o->args);
  fputs(",\n", f);
  bu_json_machine(f, m, 2);
  fprintf(f,
          ",\n  \"settings\": {\"quick\": %s, \"seed\": %llu, \"idle_reps\": %d, \"reps\": %d, "
          "\"rep_ms\": %.1f, \"live_fraction\": %.3f, \"free_fraction\": %.3f, \"idle_s\": %.1f, "
          "\"arena\": \"mmap 1 GiB: DMA 16 MiB, DMA32 496 MiB, Normal 512 MiB, pcp on\", "
          "\"report\": \"dontneed\", \"clock\": \"virtual\", \"loadavg_start\": \"%s\", "
          "\"loadavg_end\": \"%s\"},\n",
          o->quick ? "true" : "false", (unsigned long long)o->seed, o->idle_reps, o->reps,
          o->rep_ms, o->live_frac, o->free_frac, o->idle_s, o->load_start, o->load_end);
  fputs("  \"idle\": [", f);
  bool first = true;
  for (int k = 0; o->run_a && k < NSTRAT; k++) {
    const idle_result_t *r = &ir[k];
    fprintf(f, "%s\n    {\"strategy\": \"%s\", ", first ? "" : ",", r->strategy);
    first = false;
    if (r->skipped || !r->n) {
      fputs("\"skipped\": true, \"why\": ", f);
      bu_json_str(f, r->why);
      fputs("}", f);
      continue;
    }
    fputs("\"skipped\": false,\n      ", f);
    bu_json_stats(f, "excess_resident_pct", &r->excess, 1);
    fputs(",\n      ", f);
    bu_json_stats(f, "excess_before_idle_pct", &r->excess_before, 1);
    fputs(",\n      ", f);
    bu_json_stats(f, "live_pct", &r->live, 1);
    fputs(",\n      ", f);
    bu_json_stats(f, "resident_pct", &r->resident, 1);
    fputs(",\n      ", f);
    bu_json_stats(f, "reported_mib", &r->reported, 1);
    fputs(",\n      ", f);
    bu_json_stats(f, "bytes_per_call_mib", &r->bpc, MiB);
    fputs(",\n      \"runs\": [", f);
    for (int i = 0; i < r->n; i++) {
      const idle_run_t *x = &r->runs[i];
      fprintf(f,
              "%s\n        {\"allocated_pages\": %llu, \"freed_pages\": %llu, \"live_pages\": "
              "%llu, \"live_pct\": %.4f, \"resident_before_pct\": %.4f, \"excess_before_pct\": "
              "%.4f, \"resident_pct\": %.4f, \"excess_pct\": %.4f, \"free_ge_pageblock_pct\": "
              "%.4f, \"free_lt_pageblock_pct\": %.4f, \"steps\": %llu, \"calls\": %llu, "
              "\"ranges\": %llu, \"reported_mib\": %.3f, \"bytes_per_call\": ",
              i ? "," : "", (unsigned long long)x->allocated_pages,
              (unsigned long long)x->freed_pages, (unsigned long long)x->live_pages, x->live_pct,
              x->resident_before_pct, x->excess_before_pct, x->resident_pct, x->excess_pct,
              x->free_ge_pb_pct, x->free_lt_pb_pct, (unsigned long long)x->steps,
              (unsigned long long)x->calls, (unsigned long long)x->ranges, x->reported_mib);
      bu_json_num(f, x->bytes_per_call);
      fprintf(f, ", \"report_ms\": %.3f, \"advance_ms\": %.3f}", x->report_ms, x->advance_ms);
    }
    fputs("\n      ]}", f);
  }
  fputs("\n  ],\n  \"pair\": ", f);
  if (o->run_c && pr->done) {
    fprintf(f,
            "{\"iters_per_segment\": %llu, \"reps\": %d, \"order\": \"none, bitmap, "
            "control, control, bitmap, none (mirrored on odd repetitions)\",\n    ",
            (unsigned long long)pr->iters, pr->reps);
    bu_json_stats(f, "none_ns", &pr->st[0], 1);
    fputs(",\n    ", f);
    bu_json_stats(f, "bitmap_ns", &pr->st[1], 1);
    fputs(",\n    ", f);
    bu_json_stats(f, "ratio", &pr->ratio, 1);
    fputs(",\n    \"ratio_of_minima\": ", f);
    bu_json_num(f, pr->min_ratio);
    fputs(",\n    ", f);
    bu_json_stats(f, "aa_control_ratio", &pr->control, 1);
    fprintf(f, ",\n    \"hook_calls\": {\"none\": %llu, \"bitmap\": %llu},\n    \"callgrind\": ",
            (unsigned long long)pr->notify[0], (unsigned long long)pr->notify[1]);
    if (pr->cg_done)
      fprintf(f,
              "{\"none_ir_per_pair\": %.3f, \"bitmap_ir_per_pair\": %.3f, \"pairs\": [%llu, "
              "%llu]}",
              pr->cg_ir[0], pr->cg_ir[1], (unsigned long long)pr->cg_n1,
              (unsigned long long)pr->cg_n2);
    else {
      fputs("{\"skipped\": ", f);
      bu_json_str(f, pr->cg_why);
      fputs("}", f);
    }
    fputs(",\n    \"raw_ns\": {\"none\": [", f);
    for (int r = 0; r < pr->reps; r++)
      fprintf(f, "%s%.3f", r ? ", " : "", pr->ns[0][r]);
    fputs("], \"bitmap\": [", f);
    for (int r = 0; r < pr->reps; r++)
      fprintf(f, "%s%.3f", r ? ", " : "", pr->ns[1][r]);
    fputs("]}}", f);
  } else {
    fputs("null", f);
  }
  fputs(",\n  \"targets\": [", f);
  for (int i = 0; i < nt; i++) {
    fprintf(f, "%s\n    {\"id\": \"%s\", \"what\": ", i ? "," : "", t[i].id);
    bu_json_str(f, t[i].what);
    fprintf(f, ", \"strategy\": \"%s\", \"unit\": \"%s\", \"value\": ", t[i].strategy, t[i].unit);
    bu_json_num(f, t[i].value);
    fputs(", \"spread\": [", f);
    bu_json_num(f, t[i].lo);
    fputs(", ", f);
    bu_json_num(f, t[i].hi);
    fprintf(f, "], \"target\": \"%s %.2f\", \"verdict\": \"%s\", \"note\": ", t[i].cmp, t[i].limit,
            t[i].verdict);
    bu_json_str(f, t[i].note);
    fputs("}", f);
  }
  fputs("\n  ]\n}\n", f);
}

/* ---------------------------------------------------------------------------------------- */
/* Main                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: bench_hinting [--quick] [--reps N] [--idle-reps N] [--rep-ms MS] [--out DIR]\n"
             "                     [--only a,b,c] [--seed S] [--no-callgrind] [--strict]\n"
             "  --quick        3 idle repetitions, 151 pair repetitions\n"
             "                 (default: 5 idle repetitions, 401 pair repetitions of ~3 ms)\n"
             "  --reps N       pair repetitions for (c) (>= 15)\n"
             "  --idle-reps N  repetitions of the idle workload (a)/(b)\n"
             "  --rep-ms MS    duration of one pair repetition (6 segments)\n"
             "  --iters N      fixed pairs per segment (no calibration)\n"
             "  --out DIR      write DIR/hinting.csv and DIR/hinting.json (default results)\n"
             "  --only LIST    run only these targets (a and b share one workload)\n"
             "  --seed S       workload seed (default 1)\n"
             "  --free-frac F  fraction of the live blocks freed before idling in (a)/(b), in\n"
             "                 random order (default 0.75; 1 frees everything, memhog-like)\n"
             "  --no-callgrind skip the callgrind instruction counts of (c)\n"
             "  --strict       exit 3 if a target is missed\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->reps = o->idle_reps = -1;
  o->rep_ms = -1;
  o->idle_s = 60;
  o->live_frac = 0.80;
  o->free_frac = 0.75;
  o->seed = 1;
  o->callgrind = true;
  o->out = "results";
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--idle-reps") && more) {
      o->idle_reps = atoi(argv[++i]);
    } else if (!strcmp(a, "--rep-ms") && more) {
      o->rep_ms = atof(argv[++i]);
    } else if (!strcmp(a, "--free-frac") && more) {
      o->free_frac = atof(argv[++i]);
      if (!(o->free_frac > 0 && o->free_frac <= 1)) {
        usage(stderr);
        return -1;
      }
    } else if (!strcmp(a, "--iters") && more) {
      o->fixed_iters = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--only") && more) {
      o->only = argv[++i];
    } else if (!strcmp(a, "--seed") && more) {
      o->seed = strtoull(argv[++i], NULL, 0);
    } else if (!strcmp(a, "--no-callgrind")) {
      o->callgrind = false;
    } else if (!strcmp(a, "--strict")) {
      o->strict = true;
    } else if (!strcmp(a, "--cg-child") && more) {
      o->cg_child = argv[++i];
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "bench_hinting: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 1;
    }
  }
  if (o->reps < 0)
    o->reps = o->quick ? 151 : 401;
  if (o->idle_reps < 0)
    o->idle_reps = o->quick ? 3 : 5;
  if (o->rep_ms < 0)
    o->rep_ms = 3;
  if (o->reps < 1 || o->idle_reps < 1 || !(o->rep_ms > 0)) {
    fprintf(stderr, "bench_hinting: --reps, --idle-reps and --rep-ms must be positive\n");
    return 1;
  }
  o->run_a = !o->only || bu_in_list(o->only, "a") || bu_in_list(o->only, "b");
  o->run_c = !o->only || bu_in_list(o->only, "c");
  return 0;
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse(argc, argv, &o))
    return 1;
  if (o.cg_child)
    return cg_child(o.cg_child, o.fixed_iters ? o.fixed_iters : 100000);
  bu_machine_t m;
  bu_machine_info(&m);
  if (!bu_build_is_optimized(&m))
    fprintf(stderr,
            "bench_hinting: WARNING: %s build; numbers are not comparable to Release "
            "results\n",
            m.build_type);

  static idle_result_t ir[NSTRAT];
  static pair_result_t pr;
  read_loadavg(o.load_start, sizeof(o.load_start));
  if (o.run_a)
    run_idle(&o, ir);
  if (o.run_c)
    run_pairs(&o, &pr);
  read_loadavg(o.load_end, sizeof(o.load_end));

  target_t t[16];
  int nt = collect_targets(&o, ir, &pr, t);
  print_table(&m, &o, ir, &pr, t, nt);

  FILE *f = bu_open_out(o.out, "hinting.csv");
  if (!f)
    return 2;
  write_csv(f, &m, &o, ir, &pr, t, nt);
  if (fclose(f) != 0)
    die("writing hinting.csv", 0);
  f = bu_open_out(o.out, "hinting.json");
  if (!f)
    return 2;
  write_json(f, &m, &o, ir, &pr, t, nt);
  if (fclose(f) != 0)
    die("writing hinting.json", 0);
  printf("wrote %s/hinting.csv and %s/hinting.json\n", o.out, o.out);

  int failed = 0;
  for (int i = 0; i < nt; i++)
    failed += !strcmp(t[i].verdict, "FAIL");
  if (failed)
    printf("%d target(s) missed\n", failed);
  for (int k = 0; k < NSTRAT; k++)
    free(ir[k].runs);
  for (int k = 0; k < 3; k++)
    free(pr.ns[k]);
  return o.strict && failed ? 3 : 0;
}
