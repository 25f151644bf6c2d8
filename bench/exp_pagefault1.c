/*
 * exp_pagefault1: the shape of will-it-scale page_fault1 (experiment 3 of the published set).
 *
 * Published (page_fault1, 1..24 tasks): free page reporting costs about 1-3 % (Duyck: -3.05 %
 * on average with reporting on, "page faulting, double zeroing and the hinting itself"); the
 * bitmap series showed about 10 % before its locking fixes.
 *
 * Here T threads (1..--max-threads, default the online CPUs) share one arena; each loops:
 * allocate --pages (4096 = 16 MiB) of order-0 blocks (GFP_HIGHUSER_MOVABLE), write one byte
 * in every page, free them all.  The THP variant does the same with order-9 blocks
 * (GFP_TRANSHUGE; 8 blocks of 2 MiB for 4096 pages).  Throughput is pages per second over all
 * threads (4 KiB pages, for both variants).
 *
 * Each strategy has its own arena of --arena-size (default 512 MiB: DMA 16, DMA32 240, Normal
 * 256 MiB; two pcp slots or one per thread), attached once with its default options, the
 * thread clock and real madvise(MADV_DONTNEED), and kept for the whole run, so the hinting
 * worker runs in the background as it does in the kernel (bubble: a pass 2 s after a
 * qualifying free; bitmap: as soon as 16 chunks were freed).  Whatever it reports and the loop
 * then uses again costs a page fault (and zeroing) -- the cost being measured.  Before
 * measuring, every arena runs the loop once and waits for its worker to go idle (bubble's
 * initial flush of the free arena, as page_reporting_register does).  "none2" is a second
 * arena without hinting, an A/A control: its "cost" against none is the noise floor.
 *
 * Each measurement: start T threads, run --warmup-ms untimed (refaults of what was reported
 * while the arena sat idle are absorbed there), then --measure-ms (default 1000) timed;
 * progress is counted per block and per page (alloc, write, free: three units per page), so
 * a measurement does not round to whole iterations.  Repetitions (--reps, default 11, >= 7)
 * interleave the strategies -- within a repetition every (variant, threads) point runs each
 * strategy in turn, the order rotated per repetition -- so drift on the machine hits all.
 * Reported per point: median, p10, p90 of pages/s; the cost of hinting as
 * 100 * (1 - strategy/none) per repetition (the pair ran back to back), its median, p10, p90;
 * and the cost from the best repetitions, 100 * (1 - max(strategy)/max(none)), since
 * interference from other processes on a shared machine only ever lowers throughput.  Also
 * minor faults (the refault cost: with THP=always a discarded 2 MiB range refaults as one huge
 * page) and what the strategy reported, per second.
 *
 * Output: DIR/pagefault1.csv and DIR/pagefault1.json (with every sample, the machine, the
 * options and the load average).
 */
#include "bench_util.h"

#include <buddyhint.h>
#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_STRAT 6
#define MAX_THREADS 64
#define NVAR 2
#define MiB (1024.0 * 1024.0)

typedef struct opts {
  bool quick;
  int reps, max_threads, nstrat, variants; /* variants: bit 0 = order 0, bit 1 = order 9 */
  uint64_t pages, arena_bytes;
  double measure_ms, warmup_ms, settle_max_s;
  const char *out;
  char strat[MAX_STRAT][32];
  char sopts[MAX_STRAT][160];
  char args[512];
} opts_t;

static const unsigned var_order[NVAR] = {0, 9};
static const char *const var_name[NVAR] = {"order0", "order9-thp"};

static void die(const char *what, int err) { bu_die("exp_pagefault1", what, err); }

/* ---------------------------------------------------------------------------------------- */
/* Arenas                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct sarena {
  const char *name; /* strategy as attached ("none" for none2) */
  bh_arena_t *a;
  bh_hint_t *h;
} sarena_t;

static void make_arena(const opts_t *o, int s, sarena_t *sa) {
  bh_config_t cfg;
  bu_arena_config(o->arena_bytes, &cfg);
  cfg.nr_cpus = (unsigned)(o->max_threads > 2 ? o->max_threads : 2);
  int e = bh_arena_create(&cfg, &sa->a);
  if (e)
    die("bh_arena_create", e);
  sa->name = !strcmp(o->strat[s], "none2") ? "none" : o->strat[s];
  char buf[160];
  snprintf(buf, sizeof(buf), "%s", o->sopts[s]);
  bh_opt_t opt[8];
  size_t n = bu_split_opts(buf, opt, 8);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = sa->name;
  hc.opts = opt;
  hc.nopts = n;
  hc.clock = BH_CLOCK_THREAD;
  hc.report = BH_REPORT_DONTNEED;
  e = bh_hint_attach(sa->a, &hc, &sa->h);
  if (e) {
    fprintf(stderr, "exp_pagefault1: cannot attach %s: %s\n", o->strat[s],
            bh_hint_last_error()[0] ? bh_hint_last_error() : bh_strerror(e));
    exit(2);
  }
}

/* Waits until the worker has nothing to do (3 quiet polls 20 ms apart) or max_s passed. */
static double wait_idle(sarena_t *sa, double max_s) {
  uint64_t t0 = bu_now_ns(), ls = UINT64_MAX, ld = UINT64_MAX;
  int quiet = 0;
  for (;;) {
    bh_hint_stats_t st;
    bh_hint_stats(sa->h, &st);
    bool q = bh_hint_next_due(sa->h) == BH_HINT_IDLE && st.steps == ls && st.discarded_pages == ld;
    ls = st.steps;
    ld = st.discarded_pages;
    quiet = q ? quiet + 1 : 0;
    double el = (double)(bu_now_ns() - t0) / 1e9;
    if (quiet >= 3 || el >= max_s)
      return el;
    bu_sleep_s(0.02);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* The loop                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct worker {
  pthread_t th;
  bh_arena_t *a;
  int cpu;
  unsigned order, gfp;
  uint64_t nblocks;
  uint64_t *pfn;
  _Atomic bool *stop;
  _Atomic uint64_t progress; /* pages x 3: alloc, write, free */
  char pad[64];
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  const uint64_t bp = 1ull << w->order;
  uint64_t prog = 0;
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    uint64_t i;
    for (i = 0; i < w->nblocks; i++) {
      int e = bh_alloc_pfn(w->a, w->gfp, w->order, w->cpu, &w->pfn[i]);
      if (__builtin_expect(e != 0, 0))
        die("bh_alloc_pfn", e);
      prog += bp;
      atomic_store_explicit(&w->progress, prog, memory_order_relaxed);
    }
    for (i = 0; i < w->nblocks; i++) {
      char *p = bh_pfn_to_addr(w->a, w->pfn[i]);
      for (uint64_t j = 0; j < bp; j++) {
        *(volatile char *)(p + j * BH_PAGE_SIZE) = (char)j; /* one byte per page */
        prog++;
        atomic_store_explicit(&w->progress, prog, memory_order_relaxed);
      }
    }
    for (i = 0; i < w->nblocks; i++) {
      int e = bh_free_pfn(w->a, w->pfn[i], w->order, w->cpu);
      if (__builtin_expect(e != 0, 0))
        die("bh_free_pfn", e);
      prog += bp;
      atomic_store_explicit(&w->progress, prog, memory_order_relaxed);
    }
  }
  return NULL;
}

typedef struct sample {
  double pages_per_s;
  double cpu_ns_per_page; /* the process's CPU time (all threads, user + system) per page */
  double refault_pages, reported_mib, minflt, seconds;
} sample_t;

static uint64_t progress_sum(worker_t *w, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; i++)
    s += atomic_load_explicit(&w[i].progress, memory_order_relaxed);
  return s;
}

/*
 * The process's minor faults and CPU time.  CPU time (the loop threads, the hinting worker,
 * their page faults and madvise calls) does not grow while a vCPU waits for the host or a
 * thread waits for a CPU, which is most of the noise in throughput on a shared machine.
 */
static long usage_now(double *cpu_ns) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *cpu_ns = ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
            ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
  return ru.ru_minflt;
}

static void measure(const opts_t *o, sarena_t *sa, unsigned order, int nthreads, double warm_ms,
                    double meas_ms, sample_t *out) {
  static worker_t w[MAX_THREADS];
  _Atomic bool stop = false;
  uint64_t nblocks = o->pages >> order ? o->pages >> order : 1;
  for (int i = 0; i < nthreads; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].a = sa->a;
    w[i].cpu = i;
    w[i].order = order;
    w[i].gfp = order ? BH_GFP_TRANSHUGE : BH_GFP_USER_MOVABLE;
    w[i].nblocks = nblocks;
    w[i].pfn = malloc(nblocks * sizeof(uint64_t));
    w[i].stop = &stop;
    if (!w[i].pfn)
      die("malloc", 0);
  }
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
      die("pthread_create", 0);
  bu_sleep_s(warm_ms / 1000.0);
  bh_hint_stats_t h0, h1;
  bh_hint_stats(sa->h, &h0);
  double c0, c1;
  long f0 = usage_now(&c0);
  uint64_t t0 = bu_now_ns(), p0 = progress_sum(w, nthreads);
  bu_sleep_s(meas_ms / 1000.0);
  uint64_t p1 = progress_sum(w, nthreads), t1 = bu_now_ns();
  long f1 = usage_now(&c1);
  bh_hint_stats(sa->h, &h1);
  atomic_store(&stop, true);
  for (int i = 0; i < nthreads; i++) {
    pthread_join(w[i].th, NULL);
    free(w[i].pfn);
  }
  double sec = (double)(t1 - t0) / 1e9;
  out->seconds = sec;
  out->pages_per_s = (double)(p1 - p0) / 3.0 / sec;
  out->cpu_ns_per_page = p1 > p0 ? (c1 - c0) / ((double)(p1 - p0) / 3.0) : 0;
  out->refault_pages = (double)(h1.refault_pages - h0.refault_pages) / sec;
  out->reported_mib = (double)(h1.report.bytes - h0.report.bytes) / MiB / sec;
  out->minflt = (double)(f1 - f0) / sec;
}

/* ---------------------------------------------------------------------------------------- */
/* Options                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: exp_pagefault1 [--quick] [--reps N] [--out DIR] [--max-threads N] [--pages N]\n"
          "                      [--measure-ms MS] [--warmup-ms MS] [--strategies LIST]\n"
          "                      [--variants order0,order9] [--opt STRATEGY.KEY=VALUE]\n"
          "                      [--arena-size SIZE]\n"
          "  --max-threads N   threads 1..N (default: online CPUs)\n"
          "  --pages N         pages per thread and iteration (default 4096 = 16 MiB)\n"
          "  --measure-ms MS   timed part of a measurement (default 1000; --quick 200)\n"
          "  --warmup-ms MS    untimed start of a measurement (default 100; --quick 50)\n"
          "  --strategies L    default none,bitmap,bubble,none2 (none2: A/A control)\n"
          "  --variants L      order0 and/or order9 (THP), default both\n"
          "  --opt S.KEY=V     strategy option (default: the strategies' defaults)\n"
          "  --arena-size SIZE each strategy's arena (default 512M)\n"
          "  --reps N          interleaved repetitions (default 11; --quick 7)\n"
          "  --out DIR         write DIR/pagefault1.csv and .json (default results)\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->out = "results";
  o->reps = -1;
  o->pages = 4096;
  o->measure_ms = -1;
  o->warmup_ms = -1;
  o->variants = 3;
  o->arena_bytes = 512ull << 20;
  o->max_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  const char *strats = "none,bitmap,bubble,none2";
  const char *specs[16];
  int nspecs = 0;
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--max-threads") && more) {
      o->max_threads = atoi(argv[++i]);
    } else if (!strcmp(a, "--pages") && more) {
      o->pages = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--measure-ms") && more) {
      o->measure_ms = atof(argv[++i]);
    } else if (!strcmp(a, "--warmup-ms") && more) {
      o->warmup_ms = atof(argv[++i]);
    } else if (!strcmp(a, "--strategies") && more) {
      strats = argv[++i];
    } else if (!strcmp(a, "--variants") && more) {
      const char *v = argv[++i];
      o->variants = (strstr(v, "order0") ? 1 : 0) | (strstr(v, "order9") ? 2 : 0);
    } else if (!strcmp(a, "--opt") && more) {
      if (nspecs < 16)
        specs[nspecs++] = argv[++i];
    } else if (!strcmp(a, "--arena-size") && more) {
      if (bu_parse_size(argv[++i], &o->arena_bytes))
        return fprintf(stderr, "exp_pagefault1: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "exp_pagefault1: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (o->reps < 0)
    o->reps = o->quick ? 7 : 11;
  if (o->measure_ms < 0)
    o->measure_ms = o->quick ? 200 : 1000;
  if (o->warmup_ms < 0)
    o->warmup_ms = o->quick ? 50 : 100;
  o->settle_max_s = o->quick ? 6 : 15;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", strats);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nstrat == MAX_STRAT)
      return fprintf(stderr, "exp_pagefault1: too many strategies\n"), 2;
    if (strcmp(t, "none2") && !bh_strategy_find(t))
      return fprintf(stderr, "exp_pagefault1: unknown strategy '%s'\n", t), 2;
    snprintf(o->strat[o->nstrat++], 32, "%s", t);
  }
  if (o->nstrat < 1 || strcmp(o->strat[0], "none"))
    return fprintf(stderr, "exp_pagefault1: the first strategy must be none (the baseline)\n"), 2;
  for (int i = 0; i < nspecs; i++) {
    const char *dot = strchr(specs[i], '.');
    int hit = 0;
    for (int s = 0; dot && s < o->nstrat; s++)
      if (!strncmp(specs[i], o->strat[s], (size_t)(dot - specs[i])) &&
          o->strat[s][dot - specs[i]] == 0) {
        size_t l = strlen(o->sopts[s]);
        snprintf(o->sopts[s] + l, sizeof(o->sopts[s]) - l, "%s%s", l ? "," : "", dot + 1);
        hit = 1;
      }
    if (!hit)
      return fprintf(stderr, "exp_pagefault1: --opt '%s' matches no strategy\n", specs[i]), 2;
  }
  uint64_t mb = o->arena_bytes;
  if (o->reps < 1 || o->max_threads < 1 || o->max_threads > MAX_THREADS || o->pages < 512 ||
      !o->variants || mb < (64ull << 20) || mb % (8ull << 20) ||
      (uint64_t)o->max_threads * o->pages * BH_PAGE_SIZE > mb / 2)
    return fprintf(stderr, "exp_pagefault1: bad --reps, --max-threads, --pages, --variants or "
                           "--arena-size (threads x pages must fit in half the arena)\n"),
           2;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  opts_t o;
  int prc = parse(argc, argv, &o);
  if (prc)
    return prc;
  bu_machine_t mach;
  bu_machine_info(&mach);
  if (!bu_build_is_optimized(&mach))
    fprintf(stderr, "exp_pagefault1: warning: %s build; results record it\n", mach.build_type);
  char load0[64], load1[64];
  bu_loadavg(load0, sizeof(load0));
  int ns = o.nstrat, nt = o.max_threads;
  printf("exp_pagefault1: %lu pages per thread and loop, 1..%d threads, %d reps of %.0f ms "
         "(+%.0f ms warm-up), arenas of %.0f MiB; load %s\n",
         (unsigned long)o.pages, nt, o.reps, o.measure_ms, o.warmup_ms, (double)o.arena_bytes / MiB,
         load0);

  sarena_t sa[MAX_STRAT];
  double settle[MAX_STRAT];
  for (int s = 0; s < ns; s++)
    make_arena(&o, s, &sa[s]);
  /* one pass of the loop on every arena, then let the workers finish (bubble's initial flush) */
  for (int s = 0; s < ns; s++)
    for (int v = 0; v < NVAR; v++)
      if (o.variants >> v & 1) {
        sample_t tmp;
        measure(&o, &sa[s], var_order[v], nt, 0, 50, &tmp);
      }
  for (int s = 0; s < ns; s++)
    settle[s] = wait_idle(&sa[s], o.settle_max_s);
  printf("workers idle after the warm-up in:");
  for (int s = 0; s < ns; s++)
    printf(" %s %.1f s", o.strat[s], settle[s]);
  printf("\n");

  /* samples[v][t][s][rep] */
  size_t nsamp = (size_t)NVAR * nt * ns * o.reps;
  sample_t *smp = calloc(nsamp, sizeof(*smp));
  if (!smp)
    die("calloc", 0);
#define SMP(v, t, s, r) smp[(((size_t)(v)*nt + (t)) * ns + (s)) * o.reps + (r)]
  double tstart = bu_now_ns() / 1e9;
  for (int r = 0; r < o.reps; r++) {
    for (int v = 0; v < NVAR; v++) {
      if (!(o.variants >> v & 1))
        continue;
      for (int t = 0; t < nt; t++)
        for (int j = 0; j < ns; j++) {
          int s = (j + r) % ns; /* interleaved, the order rotated per repetition */
          measure(&o, &sa[s], var_order[v], t + 1, o.warmup_ms, o.measure_ms, &SMP(v, t, s, r));
        }
    }
    printf("  rep %d/%d done\n", r + 1, o.reps);
    fflush(stdout);
  }
  double elapsed = bu_now_ns() / 1e9 - tstart;
  bu_loadavg(load1, sizeof(load1));

  /* statistics */
  typedef struct point {
    bu_stats_t thr, cost, cpu, cpu_cost, refault, reported, minflt;
  } point_t;
  point_t *pt = calloc((size_t)NVAR * nt * ns, sizeof(*pt));
  double *x = malloc(sizeof(double) * (size_t)o.reps);
  for (int v = 0; v < NVAR; v++)
    for (int t = 0; t < nt; t++)
      for (int s = 0; s < ns; s++) {
        point_t *p = &pt[((size_t)v * nt + t) * ns + s];
        if (!(o.variants >> v & 1))
          continue;
#define STAT(expr, dst)                                                                            \
  do {                                                                                             \
    for (int r = 0; r < o.reps; r++)                                                               \
      x[r] = (expr);                                                                               \
    bu_stats(x, o.reps, &p->dst);                                                                  \
  } while (0)
        STAT(SMP(v, t, s, r).pages_per_s, thr);
        STAT(100.0 * (1.0 - SMP(v, t, s, r).pages_per_s / SMP(v, t, 0, r).pages_per_s), cost);
        STAT(SMP(v, t, s, r).cpu_ns_per_page, cpu);
        STAT(100.0 * (SMP(v, t, s, r).cpu_ns_per_page / SMP(v, t, 0, r).cpu_ns_per_page - 1.0),
             cpu_cost);
        STAT(SMP(v, t, s, r).refault_pages, refault);
        STAT(SMP(v, t, s, r).reported_mib, reported);
        STAT(SMP(v, t, s, r).minflt, minflt);
#undef STAT
      }
  free(x);
#define PT(v, t, s) pt[((size_t)(v)*nt + (t)) * ns + (s)]

  printf("\npages/s (millions): median [p10, p90]; cost of hinting vs none in %%: median of the "
         "per-repetition ratios [p10, p90], in throughput and in CPU time per page\n");
  printf("%-11s %3s %-8s %24s %26s %9s %26s %10s %13s\n", "variant", "T", "strategy", "Mpages/s",
         "cost %", "best %", "cpu cost %", "minflt/s", "reported/s");
  for (int v = 0; v < NVAR; v++)
    for (int t = 0; t < nt && (o.variants >> v & 1); t++)
      for (int s = 0; s < ns; s++) {
        point_t *p = &PT(v, t, s);
        printf("%-11s %3d %-8s %8.3f [%6.3f, %6.3f] ", var_name[v], t + 1, o.strat[s],
               p->thr.median / 1e6, p->thr.p10 / 1e6, p->thr.p90 / 1e6);
        if (s == 0)
          printf("%26s", "(baseline)");
        else
          printf("%+8.2f [%+7.2f, %+7.2f]", p->cost.median, p->cost.p10, p->cost.p90);
        if (s == 0)
          printf(" %9s %26s", "", "");
        else
          printf(" %+8.2f %+8.2f [%+7.2f, %+7.2f]",
                 100.0 * (1.0 - p->thr.max / PT(v, t, 0).thr.max), p->cpu_cost.median,
                 p->cpu_cost.p10, p->cpu_cost.p90);
        printf(" %10.0f %9.1f MiB\n", p->minflt.median, p->reported.median);
      }
  printf("best %%: 100 * (1 - best strategy / best none), interference from other processes only "
         "lowers throughput\n");
  printf("cpu cost %%: 100 * (CPU time per page / none's - 1), the process's user + system time "
         "(all threads, the hinting worker too)\n");
  printf("published: hinting costs about 1-3 %% (reporting on: -3.05 %% average); A/A (none2) "
         "shows the noise floor\n");
  printf("elapsed %.0f s; load average %s at the start, %s at the end\n", elapsed, load0, load1);

  char a2[1024];
  snprintf(a2, sizeof(a2),
           "%s [pages=%lu max_threads=%d reps=%d measure_ms=%.0f warmup_ms=%.0f "
           "arena_mib=%.0f load_start=%s load_end=%s]",
           o.args, (unsigned long)o.pages, nt, o.reps, o.measure_ms, o.warmup_ms,
           (double)o.arena_bytes / MiB, load0, load1);
  FILE *f = bu_open_out(o.out, "pagefault1.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_pagefault1", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f, "# cost_pct = 100 * (1 - pages_per_s / none's pages_per_s of the same repetition); "
             "none2 is a second arena without hinting (A/A control); cpu_cost_pct = 100 * "
             "(cpu_ns_per_page / none's - 1), process CPU time (user + system, all threads)\n");
  fprintf(f, "variant,order,threads,strategy,options,reps,pages_per_s_median,pages_per_s_p10,"
             "pages_per_s_p90,pages_per_s_min,pages_per_s_max,cost_pct_median,cost_pct_p10,"
             "cost_pct_p90,cost_best_pct,refault_pages_per_s_median,reported_mib_per_s_median,"
             "minflt_per_s_median,cpu_ns_per_page_median,cpu_cost_pct_median,cpu_cost_pct_p10,"
             "cpu_cost_pct_p90\n");
  for (int v = 0; v < NVAR; v++)
    for (int t = 0; t < nt && (o.variants >> v & 1); t++)
      for (int s = 0; s < ns; s++) {
        point_t *p = &PT(v, t, s);
        char ob[160];
        snprintf(ob, sizeof(ob), "%s", o.sopts[s][0] ? o.sopts[s] : "-");
        for (char *c = ob; *c; c++)
          if (*c == ',')
            *c = ';';
        fprintf(f,
                "%s,%u,%d,%s,%s,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%.3f,%.3f,%.3f,%.3f,%.1f,%.2f,"
                "%.1f,%.1f,%.3f,%.3f,%.3f\n",
                var_name[v], var_order[v], t + 1, o.strat[s], ob, o.reps, p->thr.median, p->thr.p10,
                p->thr.p90, p->thr.min, p->thr.max, p->cost.median, p->cost.p10, p->cost.p90,
                100.0 * (1.0 - p->thr.max / PT(v, t, 0).thr.max), p->refault.median,
                p->reported.median, p->minflt.median, p->cpu.median, p->cpu_cost.median,
                p->cpu_cost.p10, p->cpu_cost.p90);
      }
  fclose(f);

  f = bu_open_out(o.out, "pagefault1.json");
  if (!f)
    return 2;
  bu_json_head(f, "exp_pagefault1", o.args, &mach, load0, load1, elapsed);
  fprintf(f,
          "  \"options\": {\"pages\": %lu, \"max_threads\": %d, \"reps\": %d, \"measure_ms\": "
          "%.0f, \"warmup_ms\": %.0f, \"arena_bytes\": %lu, \"quick\": %s, \"clock\": "
          "\"thread\", \"report\": \"dontneed\"},\n",
          (unsigned long)o.pages, nt, o.reps, o.measure_ms, o.warmup_ms,
          (unsigned long)o.arena_bytes, o.quick ? "true" : "false");
  fprintf(f, "  \"published\": \"hinting costs about 1-3 %% (reporting on -3.05 %% average)\",\n");
  fprintf(f, "  \"settle_after_warmup_s\": {");
  for (int s = 0; s < ns; s++)
    fprintf(f, "%s\"%s\": %.2f", s ? ", " : "", o.strat[s], settle[s]);
  fprintf(f, "},\n  \"points\": [\n");
  int first = 1;
  for (int v = 0; v < NVAR; v++)
    for (int t = 0; t < nt && (o.variants >> v & 1); t++)
      for (int s = 0; s < ns; s++) {
        point_t *p = &PT(v, t, s);
        fprintf(f,
                "%s    {\"variant\": \"%s\", \"threads\": %d, \"strategy\": \"%s\", "
                "\"options\": ",
                first ? "" : ",\n", var_name[v], t + 1, o.strat[s]);
        bu_json_str(f, o.sopts[s]);
        fprintf(f, ",\n      ");
        bu_json_stats(f, "pages_per_s", &p->thr, 1);
        fprintf(f, ",\n      ");
        bu_json_stats(f, "cost_pct", &p->cost, 1);
        fprintf(f, ",\n      ");
        bu_json_stats(f, "cpu_ns_per_page", &p->cpu, 1);
        fprintf(f, ",\n      ");
        bu_json_stats(f, "cpu_cost_pct", &p->cpu_cost, 1);
        fprintf(f, ",\n      \"samples_pages_per_s\": [");
        for (int r = 0; r < o.reps; r++)
          fprintf(f, "%s%.0f", r ? ", " : "", SMP(v, t, s, r).pages_per_s);
        fprintf(f, "],\n      \"samples_refault_pages_per_s\": [");
        for (int r = 0; r < o.reps; r++)
          fprintf(f, "%s%.0f", r ? ", " : "", SMP(v, t, s, r).refault_pages);
        fprintf(f, "],\n      \"samples_minflt_per_s\": [");
        for (int r = 0; r < o.reps; r++)
          fprintf(f, "%s%.0f", r ? ", " : "", SMP(v, t, s, r).minflt);
        fprintf(f, "],\n      \"samples_reported_mib_per_s\": [");
        for (int r = 0; r < o.reps; r++)
          fprintf(f, "%s%.2f", r ? ", " : "", SMP(v, t, s, r).reported_mib);
        fprintf(f, "]}");
        first = 0;
      }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  printf("wrote %s/pagefault1.csv and %s/pagefault1.json\n", o.out, o.out);
  for (int s = 0; s < ns; s++) {
    bh_hint_detach(sa[s].h);
    bh_arena_destroy(sa[s].a);
  }
  free(pt);
  free(smp);
  return 0;
}
