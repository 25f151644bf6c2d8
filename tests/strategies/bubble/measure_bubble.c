/*
 * measure_bubble: figures for bubble hinting (not a test).
 *
 *  (a) idle target: allocate ~90 % of an arena in order-0 pages (written, in mmap backing),
 *      free them all, drain the pcp lists, and advance the virtual clock: the virtual time
 *      until 95 % and 100 % of the free memory in blocks of order >= 9 is reported.  Runs on
 *      the default 1 GiB mmap arena, and on a 16 GiB sim Normal zone, where the 1/16 budget
 *      (rather than the "+1" call) decides the time, as on the machines the kernel's ~30 s
 *      figure is about.
 *  (b) a page_fault1-shaped loop: each thread allocates 4096 order-0 pages, writes every page,
 *      frees them, and repeats (and again with 32768 pages, will-it-scale's 128 MiB); strategy none
 * vs bubble (thread clock) with the default 2 s delay and with delay=100ms, at 1 and 2 threads,
 * repetitions alternating, median pages/s. Each run attaches to a fresh 1 GiB mmap arena, warms
 * up 1.5 s (so that the first pass, 2 s after attaching, falls in the window) and measures 1 s.
 *
 * Usage: measure_bubble [reps (7)] [measure seconds (1.0)] [warm-up seconds (1.5)]
 */
#include "bubble_test_util.h"

#include <pthread.h>

/* ---- (a) idle target ---- */

static void idle_target(const char *label, bh_config_t *cfg) {
  bh_arena_t *a = NULL;
  int err = bh_arena_create(cfg, &a);
  if (err) {
    fprintf(stderr, "%s: bh_arena_create: %s\n", label, bh_strerror(err));
    return;
  }
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  const uint64_t want = bh_arena_pages(a) * 9 / 10;
  uint64_t *pages = malloc(want * sizeof(*pages)), got = 0;
  for (; got < want; got++) {
    if (bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, -1, &pages[got]))
      break;
    void *addr = bh_pfn_to_addr(a, pages[got]);
    if (addr)
      *(volatile uint64_t *)addr = pages[got] + 1;
  }
  for (uint64_t i = 0; i < got; i++)
    bh_free_pfn(a, pages[i], 0, -1);
  bh_drain_pcp(a);
  free(pages);
  /* "100 %" is when the worker goes idle: a zone below its low watermark + 32 << order
   * (the 16 MiB DMA zone, always) is never reported */
  uint64_t t95 = 0, t100 = 0, tidle = 0, total = 0, rep = 0;
  for (uint64_t t = 100 * MSEC; t <= 120 * SEC && !tidle; t += 100 * MSEC) {
    bh_hint_advance(h, t);
    bt_free_hi(a, 9, &total, &rep);
    if (!t95 && rep * 100 >= total * 95)
      t95 = t;
    if (!t100 && rep == total)
      t100 = t;
    if (bh_hint_next_due(h) == BH_HINT_IDLE)
      tidle = t;
  }
  uint64_t res = 0;
  bh_arena_resident(a, &res);
  printf("idle target, %s: %.0f MiB allocated and freed; %.0f MiB free in order>=9 blocks; "
         "95%% reported at %.1f s, worker idle at %.1f s with %.2f %% reported%s (virtual "
         "time); %.0f passes, %.0f report calls, %.0f zone skips; resident after: %.1f MiB\n",
         label, (double)got * BH_PAGE_SIZE / MiB, (double)total * BH_PAGE_SIZE / MiB,
         (double)t95 / SEC, (double)tidle / SEC, 100.0 * (double)rep / (double)total,
         t100 ? "" : " (the rest: zones below the watermark)", bt_stat(h, "passes"),
         bt_stat(h, "report_calls"), bt_stat(h, "zone_skipped_wmark"), (double)res / MiB);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- (b) page_fault1-shaped throughput ---- */

struct pf_thread {
  bh_arena_t *a;
  int npages;         /* pages per iteration */
  _Atomic int *phase; /* 0 warm-up, 1 measure, 2 stop */
  uint64_t pages;     /* pages written in iterations started while measuring */
  uint64_t fails;
};

static void *pf_main(void *p) {
  struct pf_thread *t = p;
  uint64_t *pfn = malloc((size_t)t->npages * sizeof(*pfn));
  for (;;) {
    int ph = atomic_load_explicit(t->phase, memory_order_acquire);
    if (ph == 2)
      break;
    int n = 0;
    for (; n < t->npages; n++) {
      if (bh_alloc_pfn(t->a, BH_GFP_USER_MOVABLE, 0, -1, &pfn[n])) {
        t->fails++;
        break;
      }
      *(volatile char *)bh_pfn_to_addr(t->a, pfn[n]) = (char)n;
    }
    for (int i = 0; i < n; i++)
      bh_free_pfn(t->a, pfn[i], 0, -1);
    if (ph == 1)
      t->pages += (uint64_t)n;
  }
  free(pfn);
  return NULL;
}

struct pf_result {
  double pages_per_s;     /* per wall-clock second */
  double pages_per_cpu_s; /* per second of process CPU time (threads + hinting worker) */
  double passes, blocks_reported, refault_pages, lock_ms, report_ms, notifies;
};

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static struct pf_result pf_run(const char *strategy, const char *opts, int nthreads, int npages,
                               double warm_s, double measure_s) {
  struct pf_result r = {0};
  bh_config_t cfg;
  bh_config_init(&cfg);
  bh_arena_t *a = NULL;
  if (bh_arena_create(&cfg, &a))
    return r;
  bh_hint_t *h = NULL;
  if (!strcmp(strategy, "bubble")) {
    h = bt_attach(a, BH_CLOCK_THREAD, opts);
  } else {
    bh_hint_config_t hc;
    bh_hint_config_init(&hc);
    hc.strategy = strategy;
    hc.clock = BH_CLOCK_THREAD;
    bh_hint_attach(a, &hc, &h);
  }
  _Atomic int phase = 0;
  struct pf_thread t[8];
  pthread_t tid[8];
  for (int i = 0; i < nthreads; i++) {
    t[i] = (struct pf_thread){.a = a, .npages = npages, .phase = &phase};
    pthread_create(&tid[i], NULL, pf_main, &t[i]);
  }
  struct timespec w = {(time_t)warm_s, (long)((warm_s - (double)(time_t)warm_s) * 1e9)};
  nanosleep(&w, NULL);
  uint64_t t0 = bt_mono_ns(), c0 = cpu_ns();
  atomic_store_explicit(&phase, 1, memory_order_release);
  struct timespec m = {(time_t)measure_s, (long)((measure_s - (double)(time_t)measure_s) * 1e9)};
  nanosleep(&m, NULL);
  atomic_store_explicit(&phase, 2, memory_order_release);
  uint64_t pages = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(tid[i], NULL);
    pages += t[i].pages;
  }
  /* iterations started before the stop may end after it: use the time they really took */
  double secs = (double)(bt_mono_ns() - t0) / 1e9, cpu = (double)(cpu_ns() - c0) / 1e9;
  r.pages_per_s = (double)pages / secs;
  r.pages_per_cpu_s = (double)pages / cpu;
  if (h) {
    bh_hint_stats_t hs;
    bh_hint_stats(h, &hs);
    r.refault_pages = (double)hs.refault_pages;
    r.report_ms = (double)hs.report.ns / 1e6;
    r.notifies = (double)bt_arena_stat(a, BH_STAT_hint_notify);
    if (!strcmp(strategy, "bubble")) {
      r.passes = bt_stat(h, "passes");
      r.blocks_reported = bt_stat(h, "blocks_reported");
      r.lock_ms = bt_stat(h, "lock_ns") / 1e6;
    }
  }
  bh_hint_detach(h);
  bh_arena_destroy(a);
  return r;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 7;
  double measure_s = argc > 2 ? atof(argv[2]) : 1.0;
  double warm_s = argc > 3 ? atof(argv[3]) : 1.5;
  if (reps < 1 || reps > 101 || measure_s <= 0 || warm_s < 0) {
    fprintf(stderr, "usage: %s [reps] [measure_s] [warm_s]\n", argv[0]);
    return 2;
  }

  bh_config_t cfg;
  bh_config_init(&cfg);
  idle_target("1 GiB mmap (DMA 16M + DMA32 496M + Normal 512M)", &cfg);
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  memset(cfg.zone_bytes, 0, sizeof(cfg.zone_bytes));
  cfg.zone_bytes[BH_ZONE_NORMAL] = 16 * GiB;
  idle_target("16 GiB sim Normal zone", &cfg);
  fflush(stdout);

  static const struct {
    const char *strategy, *opts, *label;
  } configs[] = {{"none", NULL, "none"},
                 {"bubble", NULL, "bubble (delay 2s)"},
                 {"bubble", "delay=100ms", "bubble (delay=100ms)"}};
  enum { NCONF = 3 };
  /* 4096 pages per iteration as asked; 32768 (128 MiB) is will-it-scale's page_fault1 size,
   * large enough that the frees merge up to order >= 9 and bubble really reports */
  static const int sizes[] = {4096, 32768};
  for (int si = 0; si < 2; si++) {
    int npages = sizes[si];
    printf("\npage_fault1-shaped loop: %d order-0 pages (%d MiB) per iteration, written and "
           "freed; 1 GiB mmap arena, %d reps, %.1f s warm-up + %.1f s measured\n",
           npages, npages / 256, reps, warm_s, measure_s);
    for (int nthreads = 1; nthreads <= 2; nthreads++) {
      double v[NCONF][101], vc[NCONF][101];
      struct pf_result last[NCONF];
      for (int r = 0; r < reps; r++)
        for (int c = 0; c < NCONF; c++) {
          /* alternate: none, bubble, bubble-100ms, none, ... */
          last[c] =
              pf_run(configs[c].strategy, configs[c].opts, nthreads, npages, warm_s, measure_s);
          v[c][r] = last[c].pages_per_s;
          vc[c][r] = last[c].pages_per_cpu_s;
        }
      double med[NCONF], medc[NCONF], best[NCONF];
      for (int c = 0; c < NCONF; c++) {
        char runs[1024] = "";
        size_t off = 0;
        for (int r = 0; r < reps && off < sizeof(runs) - 32; r++)
          off += (size_t)snprintf(runs + off, sizeof(runs) - off, "%s%.3g/%.3g", r ? " " : "",
                                  v[c][r] / 1e6, vc[c][r] / 1e6);
        med[c] = median(v[c], reps); /* sorts v[c] */
        best[c] = v[c][reps - 1];
        medc[c] = median(vc[c], reps);
        printf("  %d thread%s %-21s wall: median %6.3f Mpages/s, ratio %6.2f %%;  per CPU-s: "
               "median %6.3f Mpages/s, ratio %6.2f %%;  best wall run: ratio %6.2f %%\n"
               "      runs (wall/CPU-s, Mpages/s): %s\n"
               "      last run (warm-up included): %.0f notifications, %.0f passes, %.0f blocks "
               "reported, %.2f ms in madvise, zone locks held by the worker %.2f ms, %.0f "
               "refaulted pages\n",
               nthreads, nthreads > 1 ? "s" : " ", configs[c].label, med[c] / 1e6,
               100 * med[c] / med[0], medc[c] / 1e6, 100 * medc[c] / medc[0],
               100 * best[c] / best[0], runs, last[c].notifies, last[c].passes,
               last[c].blocks_reported, last[c].report_ms, last[c].lock_ms, last[c].refault_pages);
      }
      fflush(stdout);
    }
  }
  return 0;
}
