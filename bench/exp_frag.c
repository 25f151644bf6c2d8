/*
 * exp_frag: anti-fragmentation by grouping pages by mobility (experiment 7 of the published
 * set).
 *
 * Published (Mel Gorman, "Avoiding fragmentation with subzone groupings v26", Nov 2006):
 * after stress tests about 80 % of memory could be allocated as huge pages with grouping,
 * 8-12 % with the standard allocator; 60-70 % on a desktop after days of uptime.  The figure
 * comes from a script that raises /proc/sys/vm/nr_hugepages by 100 until it stops growing.
 *
 * Here one replay is one such test on a `sim` arena of --arena bytes (1 GiB; 512 MiB with
 * --quick), laid out as the replay lays out every arena (DMA 16 MiB, the rest DMA32 below
 * 4 GiB), with no hinting strategy.  The trace is `buddyhint gen frag-stress`, generated
 * through the library: jobs fill memory with order-0 movable pages interleaved with long-lived
 * kernel allocations of orders 0-3 (the `kernel` share of the allocations, half of them
 * reclaimable), the jobs exit, the shrinker frees half of the reclaimable blocks, then the
 * nr_hugepages script asks for order-9 blocks, 100 per round.
 *
 *   - The fill covers the arena up to what a balanced kswapd leaves free after a stress test:
 *     every zone's high watermark plus its lowmem reserve (read from a probe arena of the same
 *     layout).  A fill of less would leave memory that was never used, where any allocator
 *     finds huge pages; a fill of more fails, as this model has no reclaim.  Where even this
 *     fill fails (no compaction either), it is lowered a little for that trace (run_trace).
 *   - The script asks for one round more than the whole arena could hold (--arena / 2 MiB
 *     rounded up to a round, plus a round), so the count has certainly stopped growing.
 *   - The same trace is replayed twice, grouping on and off (mobility_grouping, Linux's
 *     page_group_by_mobility_disabled), so the two are compared on identical input.
 *
 * The replay summary counts failed allocations, not which ones failed.  The only order-9
 * allocations of the trace are the script's, and every earlier one is of order 0-3, so the
 * failures are all order-9 ones exactly when the arena's alloc_fail_pages is 512 per failed
 * call (one failure of order <= 3 would leave that short by at least 504 pages).  The program
 * checks this for every replay (`early_failures`; the exit status is 1 if any remains after
 * run_trace's retries); the huge pages obtained are the order-9 attempts minus the failures.
 *
 * Reported per kernel share and grouping, as the median over --reps seeds of the trace with
 * p10/p90 and min/max: huge pages obtained, the share of the arena they make (Mel's figure),
 * the share of the memory not pinned by the kernel blocks still live (the most any allocator
 * could give without moving memory), failures, migratetype fallbacks.  The kernel shares are
 * a sweep (--kernel, default 0.005,0.01,0.02,0.05,0.1; 0.1 is frag-stress's default): how
 * many pageblocks the standard allocator finds free depends on how densely kernel pages are
 * scattered, which the published figures do not say.
 *
 * Output: DIR/frag.csv (one row per kernel share and grouping), DIR/frag.json (the same with
 * every sample, the machine, the options, the load average).
 */

#include "bench_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void exp_die(const char *what, int err) { bu_die("exp_frag", what, err); }

#include <buddyhint/gen.h>
#include <buddyhint/replay.h>

#define MAX_KERNEL 8
#define MAX_PARAMS 16
#define HUGE_ORDER 9 /* HPAGE_PMD_ORDER on x86-64, the arena's pageblock order */
#define HUGE_BYTES (BH_PAGE_SIZE << HUGE_ORDER)
#define ROUND 100 /* the script raises nr_hugepages by this much */
/* A fill that fails before the hugepage phase is lowered by this much, at most FILL_TRIES
 * times (see run_trace). */
#define FILL_STEP(arena) ((arena) / 256)
#define FILL_TRIES 8

typedef struct opts {
  bool quick, reclaim_progress;
  int reps, nkernel;
  unsigned cpus;
  uint64_t arena_bytes, seed;
  double kernel[MAX_KERNEL];
  const char *out;
  char param_buf[512]; /* --param KEY=VALUE, split into params */
  bh_opt_t params[MAX_PARAMS];
  size_t nparams;
  char args[512];
} opts_t;

/* One replay: one seed, one kernel share, grouping on or off. */
typedef struct sample {
  uint64_t fill_bytes; /* the trace's fill (frag-stress size) */
  uint64_t attempts, failures, obtained;
  bool early_failures; /* a failure before the hugepage phase (see the top of the file) */
  uint64_t kernel_live_bytes;
  uint64_t extfrag_fallback, extfrag_fragmenting;
  double kernel_allocs_per_pageblock;
  double pct_arena, pct_free;
  double wall_s;
} sample_t;

/* What the generator wrote, counted on the way to the file. */
typedef struct gen_ctx {
  bh_trace_writer_t *w;
  uint64_t events, attempts, kernel_allocs;
} gen_ctx_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: exp_frag [--quick] [--reps N] [--out DIR] [--arena SIZE] [--kernel LIST]\n"
          "                [--cpus N] [--seed N] [--reclaim-progress] [--param KEY=VALUE]...\n"
          "  --arena SIZE      sim arena of every replay, a multiple of 4 MiB (default 1G;\n"
          "                    --quick 512M)\n"
          "  --kernel LIST     frag-stress kernel shares to sweep (default\n"
          "                    0.005,0.01,0.02,0.05,0.1)\n"
          "  --cpus N          CPUs of the trace and pcp slots of the arena (default 2)\n"
          "  --seed N          seed of the first repetition; repetition r uses N + r (default 1)\n"
          "  --reclaim-progress\n"
          "                    direct reclaim counts as progress (cfg.reclaim_progress): a\n"
          "                    failing request drains the pcp lists before its retry, as on a\n"
          "                    machine with page cache (default: nothing is reclaimable)\n"
          "  --param K=V       another frag-stress parameter (churn, reclaimable, jobs, ...);\n"
          "                    size, kernel, hugepages, hugepage_batch, release,\n"
          "                    cpus and seed are set here\n"
          "  --reps N          seeds per configuration (default 15; --quick 5)\n"
          "  --out DIR         write DIR/frag.csv and DIR/frag.json (default results)\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->out = "results";
  o->reps = -1;
  o->cpus = 2;
  o->seed = 1;
  const char *kernels = "0.005,0.01,0.02,0.05,0.1";
  size_t pb = 0;
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--arena") && more) {
      if (bu_parse_size(argv[++i], &o->arena_bytes))
        return fprintf(stderr, "exp_frag: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--kernel") && more) {
      kernels = argv[++i];
    } else if (!strcmp(a, "--cpus") && more) {
      o->cpus = (unsigned)atoi(argv[++i]);
    } else if (!strcmp(a, "--reclaim-progress")) {
      o->reclaim_progress = true;
    } else if (!strcmp(a, "--seed") && more) {
      o->seed = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--param") && more) {
      /* joined into one "k=v,k=v" list, split below (frag-stress values hold no comma) */
      int n =
          snprintf(o->param_buf + pb, sizeof(o->param_buf) - pb, "%s%s", pb ? "," : "", argv[++i]);
      if (n < 0 || (size_t)n >= sizeof(o->param_buf) - pb || !strchr(argv[i], '='))
        return fprintf(stderr, "exp_frag: bad or too many --param '%s'\n", argv[i]), 2;
      pb += (size_t)n;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "exp_frag: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!o->arena_bytes)
    o->arena_bytes = o->quick ? 512ull << 20 : 1024ull << 20;
  if (o->reps < 0)
    o->reps = o->quick ? 5 : 15;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", kernels);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *end;
    double k = strtod(t, &end);
    if (*end || k < 0 || k > 0.9 || o->nkernel == MAX_KERNEL)
      return fprintf(stderr, "exp_frag: bad --kernel '%s' (at most %d shares in [0, 0.9])\n",
                     kernels, MAX_KERNEL),
             2;
    o->kernel[o->nkernel++] = k;
  }
  o->nparams = bu_split_opts(o->param_buf, o->params, MAX_PARAMS);
  if (o->reps < 1 || o->nkernel < 1 || o->cpus < 1 || o->cpus > 1024 ||
      o->arena_bytes < (64ull << 20) || o->arena_bytes % (4ull << 20))
    return fprintf(stderr, "exp_frag: bad --reps, --kernel, --cpus or --arena (a multiple of "
                           "4 MiB, at least 64 MiB)\n"),
           2;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The fill                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/*
 * Bytes a balanced kswapd leaves free in an arena laid out as bh_replay_run lays out
 * memory_bytes (bh_replay_zone_layout): per zone, the high watermark plus the largest lowmem
 * reserve (what protects the zone from allocations aimed at higher zones), at most the zone.
 */
static uint64_t kswapd_free_bytes(uint64_t arena_bytes, unsigned cpus) {
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  c.nr_cpus = cpus;
  bh_replay_zone_layout(&c, arena_bytes);
  bh_arena_t *a;
  int e = bh_arena_create(&c, &a);
  if (e)
    exp_die("bh_arena_create (sim probe)", e);
  uint64_t pages = 0;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t z;
    if (bh_zone_info(a, i, &z))
      continue;
    uint64_t res = 0;
    for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
      if (z.lowmem_reserve[t] > res)
        res = z.lowmem_reserve[t];
    uint64_t keep = z.wmark_high + res;
    pages += keep < z.managed_pages ? keep : z.managed_pages;
  }
  bh_arena_destroy(a);
  return pages << BH_PAGE_SHIFT;
}

/* ---------------------------------------------------------------------------------------- */
/* One repetition                                                                            */
/* ---------------------------------------------------------------------------------------- */

static int gen_emit(void *ctx, const bh_event_t *ev) {
  gen_ctx_t *g = ctx;
  g->events++;
  if (ev->op == BH_EV_ALLOC) {
    if (ev->order == HUGE_ORDER)
      g->attempts++;
    else if (!(ev->gfp & BH_GFP_MOVABLE))
      g->kernel_allocs++;
  }
  return bh_trace_write(g->w, ev);
}

/* Writes the frag-stress trace of one kernel share and seed to path; 0 or -1 after a message. */
static int make_trace(const opts_t *o, const char *path, double kernel, uint64_t seed,
                      uint64_t fill_bytes, uint64_t attempts, gen_ctx_t *g) {
  char size[32], kern[32], huge[32], batch[16], cpus[16], sd[32];
  snprintf(size, sizeof(size), "%luK", (unsigned long)(fill_bytes >> 10));
  snprintf(kern, sizeof(kern), "%g", kernel);
  snprintf(huge, sizeof(huge), "%lu", (unsigned long)attempts);
  snprintf(batch, sizeof(batch), "%d", ROUND);
  snprintf(cpus, sizeof(cpus), "%u", o->cpus);
  snprintf(sd, sizeof(sd), "%lu", (unsigned long)seed);
  /* the caller's --param first: a key given twice, the last one wins, so these stay */
  bh_opt_t p[MAX_PARAMS + 7];
  size_t n = 0;
  for (size_t i = 0; i < o->nparams; i++)
    p[n++] = o->params[i];
  p[n++] = (bh_opt_t){"size", size};
  p[n++] = (bh_opt_t){"kernel", kern};
  p[n++] = (bh_opt_t){"hugepages", huge};
  p[n++] = (bh_opt_t){"hugepage_batch", batch};
  p[n++] = (bh_opt_t){"release", "1"}; /* the pool is emptied: live at the end = kernel */
  p[n++] = (bh_opt_t){"cpus", cpus};
  p[n++] = (bh_opt_t){"seed", sd};
  memset(g, 0, sizeof(*g));
  int e = bh_trace_writer_open(path, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, &g->w);
  if (e) {
    fprintf(stderr, "exp_frag: %s\n", bh_trace_error(NULL));
    return -1;
  }
  char err[256] = "";
  e = bh_gen_run("frag-stress", p, n, gen_emit, g, err, sizeof(err));
  int ce = bh_trace_writer_close(g->w);
  g->w = NULL;
  if (e || ce) {
    fprintf(stderr, "exp_frag: %s\n", err[0] ? err : e ? bh_strerror(e) : bh_trace_error(NULL));
    return -1;
  }
  return 0;
}

/* Replays the trace at path with grouping on or off; 0, or -1 after a message. */
static int replay(const opts_t *o, const char *path, bool grouping, const gen_ctx_t *g,
                  uint64_t fill_bytes, sample_t *s) {
  bh_replay_config_t rc;
  bh_replay_config_init(&rc);
  rc.trace = path;
  rc.arena.backing = BH_BACKING_SIM;
  rc.arena.mobility_grouping = grouping;
  rc.arena.reclaim_progress = o->reclaim_progress;
  rc.arena.nr_cpus = o->cpus; /* with memory_bytes: one pass over the trace */
  rc.memory_bytes = o->arena_bytes;
  rc.hint.strategy = "none";
  rc.touch = BH_TOUCH_NONE; /* resident memory is not what this measures */
  rc.idle_ns = 0;
  /* the 2006 measurements had no compaction (it came in 2.6.35); this is grouping alone */
  rc.compaction_proactiveness = 0;
  bh_replay_summary_t sum;
  char err[512] = "";
  if (bh_replay_run(&rc, &sum, err, sizeof(err))) {
    fprintf(stderr, "exp_frag: replay: %s\n", err);
    return -1;
  }
  if (sum.memory_bytes != o->arena_bytes || sum.unknown_frees || sum.lost_frees ||
      sum.orders_too_large || sum.events != g->events) {
    fprintf(stderr,
            "exp_frag: the replay did not play the trace as generated (arena %lu bytes, "
            "%lu of %lu events, %lu unknown frees, %lu lost frees)\n",
            (unsigned long)sum.memory_bytes, (unsigned long)sum.events, (unsigned long)g->events,
            (unsigned long)sum.unknown_frees, (unsigned long)sum.lost_frees);
    return -1;
  }
  memset(s, 0, sizeof(*s));
  s->fill_bytes = fill_bytes;
  s->attempts = g->attempts;
  s->failures = sum.alloc_failures;
  /* all failures are order-9 ones iff they requested 512 pages each (see the top) */
  s->early_failures = sum.arena_stats[BH_STAT_alloc_fail] != sum.alloc_failures ||
                      sum.arena_stats[BH_STAT_alloc_fail_pages] != sum.alloc_failures << HUGE_ORDER;
  s->obtained = s->failures <= s->attempts ? s->attempts - s->failures : 0;
  s->kernel_live_bytes = sum.live_final_bytes; /* movable pages and huge pages all freed */
  s->extfrag_fallback = sum.arena_stats[BH_STAT_extfrag_fallback];
  s->extfrag_fragmenting = sum.arena_stats[BH_STAT_extfrag_fragmenting];
  s->kernel_allocs_per_pageblock =
      (double)g->kernel_allocs / ((double)fill_bytes / (double)HUGE_BYTES);
  double got = (double)s->obtained * (double)HUGE_BYTES;
  s->pct_arena = 100.0 * got / (double)o->arena_bytes;
  s->pct_free = 100.0 * got / (double)(o->arena_bytes - s->kernel_live_bytes);
  s->wall_s = sum.wall_seconds;
  return 0;
}

/*
 * One seed and kernel share: generates the trace and replays it with grouping on and off
 * (pair[0], pair[1]; off first if off_first).  Without reclaim or compaction the last
 * allocations of a fill right up to kswapd's level can fail (an order-2 or order-3 kernel
 * block when free memory is down to scattered small holes); such a trace is not Mel's test,
 * so the fill is lowered by FILL_STEP and the trace made again, at most FILL_TRIES times,
 * until neither replay fails before the hugepage phase.  Both replays always share one trace.
 * Returns 0, or -1 after a message.
 */
static int run_trace(const opts_t *o, const char *path, double kernel, uint64_t seed, uint64_t fill,
                     uint64_t attempts, int off_first, sample_t pair[2], double *gen_s) {
  const uint64_t step = FILL_STEP(o->arena_bytes);
  for (int tries = 0;; tries++) {
    gen_ctx_t g;
    double t = bu_now_s();
    if (make_trace(o, path, kernel, seed, fill, attempts, &g))
      return -1;
    *gen_s += bu_now_s() - t;
    for (int i = 0; i < 2; i++) {
      int grp = (i + off_first) % 2;
      if (replay(o, path, grp == 0, &g, fill, &pair[grp]))
        return -1;
    }
    if (!pair[0].early_failures && !pair[1].early_failures)
      return 0;
    if (tries + 1 == FILL_TRIES || fill <= step)
      return 0; /* reported as early failures */
    fill -= step;
  }
}

/* ---------------------------------------------------------------------------------------- */

/* Statistics of one configuration over the repetitions. */
typedef struct conf_stats {
  bu_stats_t obtained, pct_arena, pct_free, failures, kernel_mib, kpb, fallback, fragmenting;
  bu_stats_t fill_mib;
  int early, lowered; /* repetitions with early failures; with the fill lowered */
} conf_stats_t;

int main(int argc, char **argv) {
  opts_t o;
  int prc = parse(argc, argv, &o);
  if (prc)
    return prc;
  bu_machine_t mach;
  bu_machine_info(&mach);
  if (!bu_build_is_optimized(&mach))
    fprintf(stderr, "exp_frag: warning: %s build; results record it\n", mach.build_type);

  const uint64_t reserve = kswapd_free_bytes(o.arena_bytes, o.cpus);
  const uint64_t fill = (o.arena_bytes - reserve) & ~((1ull << 20) - 1); /* whole MiB */
  const uint64_t fit = (o.arena_bytes + HUGE_BYTES - 1) / HUGE_BYTES;
  const uint64_t attempts = (fit + ROUND - 1) / ROUND * ROUND + ROUND;
  char load0[64], load1[64];
  bu_loadavg(load0, sizeof(load0));
  printf("exp_frag: sim arena of %.0f MiB filled to %.0f MiB (kswapd's free: %.1f MiB), "
         "%lu order-9 attempts in rounds of %d, kernel shares",
         (double)o.arena_bytes / BU_MiB, (double)fill / BU_MiB, (double)reserve / BU_MiB,
         (unsigned long)attempts, ROUND);
  for (int k = 0; k < o.nkernel; k++)
    printf("%s%g", k ? "," : " ", o.kernel[k]);
  printf(", %d rep(s); load %s\n", o.reps, load0);

  const char *tmp = getenv("TMPDIR");
  char dir[512], path[600];
  snprintf(dir, sizeof(dir), "%s/bh-exp-frag-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    exp_die("mkdtemp", 0);
  snprintf(path, sizeof(path), "%s/frag-stress.bht", dir);

  /* samples[k][grouping][rep], grouping 0 = on, 1 = off */
  const int nk = o.nkernel, R = o.reps;
  sample_t *smp = calloc((size_t)nk * 2 * R, sizeof(*smp));
  if (!smp)
    exp_die("calloc", 0);
#define SMP(k, g, r) smp[((size_t)(k)*2 + (g)) * R + (r)]
  int failed = 0;
  double t0 = bu_now_s(), gen_s = 0;
  for (int r = 0; r < R && !failed; r++) {
    for (int j = 0; j < nk && !failed; j++) {
      int k = (j + r) % nk; /* rotate the order per repetition (wall time only) */
      sample_t pair[2];
      if (run_trace(&o, path, o.kernel[k], o.seed + (uint64_t)r, fill, attempts, r % 2, pair,
                    &gen_s)) {
        failed = 1;
        break;
      }
      SMP(k, 0, r) = pair[0];
      SMP(k, 1, r) = pair[1];
    }
    printf("  rep %d/%d (seed %lu):", r + 1, R, (unsigned long)(o.seed + (uint64_t)r));
    for (int k = 0; k < nk && !failed; k++)
      printf(" k=%g %lu/%lu", o.kernel[k], (unsigned long)SMP(k, 0, r).obtained,
             (unsigned long)SMP(k, 1, r).obtained);
    printf("%s\n", failed ? " failed" : " (huge pages: grouping on/off)");
    fflush(stdout);
  }
  unlink(path);
  rmdir(dir);
  if (failed)
    return 1;
  double elapsed = bu_now_s() - t0;
  bu_loadavg(load1, sizeof(load1));

  conf_stats_t cs[MAX_KERNEL][2];
  bu_stats_t gain[MAX_KERNEL]; /* percentage points, on - off of the same trace */
  double *v = malloc(sizeof(double) * (size_t)R);
  if (!v)
    exp_die("malloc", 0);
  int early_total = 0;
  for (int k = 0; k < nk; k++) {
    for (int g = 0; g < 2; g++) {
      conf_stats_t *c = &cs[k][g];
#define STAT(expr, dst)                                                                            \
  do {                                                                                             \
    for (int r = 0; r < R; r++)                                                                    \
      v[r] = (double)(expr);                                                                       \
    bu_stats(v, R, &c->dst);                                                                       \
  } while (0)
      STAT(SMP(k, g, r).obtained, obtained);
      STAT(SMP(k, g, r).pct_arena, pct_arena);
      STAT(SMP(k, g, r).pct_free, pct_free);
      STAT(SMP(k, g, r).failures, failures);
      STAT(SMP(k, g, r).kernel_live_bytes / BU_MiB, kernel_mib);
      STAT(SMP(k, g, r).kernel_allocs_per_pageblock, kpb);
      STAT(SMP(k, g, r).extfrag_fallback, fallback);
      STAT(SMP(k, g, r).extfrag_fragmenting, fragmenting);
      STAT(SMP(k, g, r).fill_bytes / BU_MiB, fill_mib);
#undef STAT
      c->early = c->lowered = 0;
      for (int r = 0; r < R; r++) {
        c->early += SMP(k, g, r).early_failures;
        c->lowered += SMP(k, g, r).fill_bytes < fill;
      }
      early_total += c->early;
    }
    for (int r = 0; r < R; r++)
      v[r] = SMP(k, 0, r).pct_arena - SMP(k, 1, r).pct_arena;
    bu_stats(v, R, &gain[k]);
  }
  free(v);

  printf("\nhuge pages (order 9) obtained: median [p10, p90] over %d seeds; %% of the arena and "
         "of the memory not pinned by kernel blocks\n",
         R);
  printf("%-7s %9s %8s %22s %24s %10s %7s %9s %9s\n", "kernel", "pinned", "grouping", "huge pages",
         "% of arena", "% unpinned", "failed", "fallbacks", "fill MiB");
  for (int k = 0; k < nk; k++)
    for (int g = 0; g < 2; g++) {
      conf_stats_t *c = &cs[k][g];
      printf("%-7g %5.0f MiB %8s %6.0f [%5.0f, %5.0f] %8.1f [%5.1f, %5.1f] %10.1f %7.0f %9.0f "
             "%9.0f%s\n",
             o.kernel[k], c->kernel_mib.median, g ? "off" : "on", c->obtained.median,
             c->obtained.p10, c->obtained.p90, c->pct_arena.median, c->pct_arena.p10,
             c->pct_arena.p90, c->pct_free.median, c->failures.median, c->fallback.median,
             c->fill_mib.median, c->early ? "  EARLY FAILURES" : "");
    }
  printf("fill lowered below %.0f MiB (see run_trace) in", (double)fill / BU_MiB);
  for (int k = 0; k < nk; k++)
    printf(" k=%g %d/%d", o.kernel[k], cs[k][0].lowered, R);
  printf(" repetitions\n");
  printf("grouping on - off, percentage points of the arena (same traces):");
  for (int k = 0; k < nk; k++)
    printf(" k=%g %+.1f [%+.1f, %+.1f]", o.kernel[k], gain[k].median, gain[k].p10, gain[k].p90);
  printf("\npublished: ~80 %% with grouping, 8-12 %% for the standard allocator after stress "
         "tests\n");
  printf("elapsed %.1f s (generating %.1f s); load average %s at the start, %s at the end\n",
         elapsed, gen_s, load0, load1);
  if (early_total)
    fprintf(stderr,
            "exp_frag: %d replay(s) failed allocations before the hugepage phase: the fill "
            "does not fit the arena, and their huge page counts are not exact\n",
            early_total);

  /* ---- frag.csv ---- */
  char a2[1024];
  snprintf(a2, sizeof(a2),
           "%s [arena_mib=%.0f fill_mib=%.0f attempts=%lu reps=%d seed=%lu load_start=%s "
           "load_end=%s]",
           o.args, (double)o.arena_bytes / BU_MiB, (double)fill / BU_MiB, (unsigned long)attempts,
           R, (unsigned long)o.seed, load0, load1);
  FILE *f = bu_open_out(o.out, "frag.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_frag", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f, "# pct_arena = 100 * huge pages * 2 MiB / arena; pct_free = the same over the arena "
             "minus the kernel blocks still live (kernel_pinned_mib)\n");
  fprintf(f, "kernel,grouping,reps,arena_mib,fill_mib_median,attempts,kernel_pinned_mib_median,"
             "kernel_allocs_per_pageblock,hugepages_median,hugepages_p10,hugepages_p90,"
             "hugepages_min,hugepages_max,pct_arena_median,pct_arena_p10,pct_arena_p90,"
             "pct_arena_min,pct_arena_max,pct_free_median,pct_free_p10,pct_free_p90,"
             "failures_median,early_failure_reps,extfrag_fallback_median,"
             "extfrag_fragmenting_median,fill_lowered_reps\n");
  for (int k = 0; k < nk; k++)
    for (int g = 0; g < 2; g++) {
      conf_stats_t *c = &cs[k][g];
      fprintf(f,
              "%g,%s,%d,%.0f,%.0f,%lu,%.1f,%.2f,%.0f,%.1f,%.1f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,"
              "%.2f,%.2f,%.2f,%.2f,%.0f,%d,%.0f,%.0f,%d\n",
              o.kernel[k], g ? "off" : "on", R, (double)o.arena_bytes / BU_MiB, c->fill_mib.median,
              (unsigned long)attempts, c->kernel_mib.median, c->kpb.median, c->obtained.median,
              c->obtained.p10, c->obtained.p90, c->obtained.min, c->obtained.max,
              c->pct_arena.median, c->pct_arena.p10, c->pct_arena.p90, c->pct_arena.min,
              c->pct_arena.max, c->pct_free.median, c->pct_free.p10, c->pct_free.p90,
              c->failures.median, c->early, c->fallback.median, c->fragmenting.median, c->lowered);
    }
  fclose(f);

  /* ---- frag.json ---- */
  f = bu_open_out(o.out, "frag.json");
  if (!f)
    return 2;
  bu_json_head(f, "exp_frag", o.args, &mach, load0, load1, elapsed);
  fprintf(f,
          "  \"options\": {\"arena_bytes\": %lu, \"fill_start_bytes\": %lu, \"kswapd_free_bytes\": "
          "%lu, \"attempts\": %lu, \"round\": %d, \"reps\": %d, \"seed\": %lu, \"cpus\": %u, "
          "\"quick\": %s, \"backing\": \"sim\", \"strategy\": \"none\", \"params\": ",
          (unsigned long)o.arena_bytes, (unsigned long)fill, (unsigned long)reserve,
          (unsigned long)attempts, ROUND, R, (unsigned long)o.seed, o.cpus,
          o.quick ? "true" : "false");
  fprintf(f, "{");
  for (size_t i = 0; i < o.nparams; i++) {
    fprintf(f, "%s", i ? ", " : "");
    bu_json_str(f, o.params[i].key);
    fprintf(f, ": ");
    bu_json_str(f, o.params[i].value);
  }
  fprintf(f, "}},\n  \"published\": \"about 80 %% of memory as huge pages after stress tests "
             "with grouping, 8-12 %% for the standard allocator; 60-70 %% on a desktop after "
             "days\",\n  \"configs\": [\n");
  for (int k = 0; k < nk; k++)
    for (int g = 0; g < 2; g++) {
      conf_stats_t *c = &cs[k][g];
      fprintf(f,
              "    {\"kernel\": %g, \"grouping\": %s, \"early_failure_reps\": %d, "
              "\"fill_lowered_reps\": %d,\n      ",
              o.kernel[k], g ? "false" : "true", c->early, c->lowered);
      const struct {
        const char *key;
        const bu_stats_t *s;
      } st[] = {{"fill_mib", &c->fill_mib},
                {"hugepages", &c->obtained},
                {"pct_arena", &c->pct_arena},
                {"pct_free", &c->pct_free},
                {"failures", &c->failures},
                {"kernel_pinned_mib", &c->kernel_mib},
                {"kernel_allocs_per_pageblock", &c->kpb},
                {"extfrag_fallback", &c->fallback},
                {"extfrag_fragmenting", &c->fragmenting},
                {"gain_pct_points_vs_off", g == 0 ? &gain[k] : NULL}}; /* grouping on only */
      for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
        if (!st[i].s)
          continue;
        if (i)
          fprintf(f, ",\n      ");
        bu_json_stats(f, st[i].key, st[i].s, 1);
      }
      fprintf(f, ",\n      \"samples\": [");
      for (int r = 0; r < R; r++) {
        const sample_t *s = &SMP(k, g, r);
        fprintf(f,
                "%s\n        {\"seed\": %lu, \"fill_bytes\": %lu, \"attempts\": %lu, "
                "\"hugepages\": %lu, "
                "\"failures\": %lu, \"early_failures\": %s, \"kernel_pinned_bytes\": %lu, "
                "\"pct_arena\": %.3f, \"pct_free\": %.3f, \"extfrag_fallback\": %lu, "
                "\"extfrag_fragmenting\": %lu, \"replay_wall_s\": %.3f}",
                r ? "," : "", (unsigned long)(o.seed + (uint64_t)r), (unsigned long)s->fill_bytes,
                (unsigned long)s->attempts, (unsigned long)s->obtained, (unsigned long)s->failures,
                s->early_failures ? "true" : "false", (unsigned long)s->kernel_live_bytes,
                s->pct_arena, s->pct_free, (unsigned long)s->extfrag_fallback,
                (unsigned long)s->extfrag_fragmenting, s->wall_s);
      }
      fprintf(f, "]}%s\n", k + 1 < nk || g == 0 ? "," : "");
    }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  printf("wrote %s/frag.csv and %s/frag.json\n", o.out, o.out);
  free(smp);
  return early_total ? 1 : 0;
}
