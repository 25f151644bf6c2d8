/*
 * buddyhint-jemalloc: the userspace baseline of `buddyhint compare`.
 *
 * It replays a page allocation trace through jemalloc instead of the buddy arena: every
 * recorded allocation of order k becomes mallocx(4 KiB << k), every free a dallocx, with the
 * buddy replay's meaning of the events (src/replay/event_meaning.h, whose backend jemalloc is
 * here, as the arena is the buddy replay's): unknown frees are counted and skipped,
 * an mm_page_free_batched that repeats a recent mm_page_free is ignored, a recorded pfn
 * allocated again while live loses its old block first, a free of part of a larger recorded
 * block splits it into order-0 pieces.  jemalloc cannot free part of an allocation, so the
 * pieces of a split block share their parent allocation, which is given back with dallocx when
 * the last piece is freed.
 *
 * Debian's libjemalloc has no symbol prefix: linking it replaces malloc for the whole
 * process and it cannot be dlopen'ed (static TLS).  That is why this is its own executable,
 * started by `buddyhint compare` (src/cli/baseline.c), which reads the summary it prints.
 *
 * jemalloc purges on the wall clock (decay), so the events are replayed as fast as possible and
 * the idle phase after them is real time (--idle-wall seconds), with a background thread doing
 * the purging as an idle application would see it.
 *
 * The trace's allocations go to an arena of their own (arenas.create, bound to this thread
 * with thread.arena), so that its statistics are those of the replayed blocks and not of the
 * trace reader's buffers; the pfn map lives in mmap'ed memory outside jemalloc.  An arena
 * created this way behaves as an automatic one, except that requests of 8 MiB and more stay in
 * it instead of going to the "huge" arena (which is forced to purge at once).
 *
 * Output: one "key value" line per field, keys as in bh_replay_summary_json(); "stat.NAME
 * value" lines are jemalloc figures that have no field (strategy_stats in the JSON).
 * Exit status: 0 done, 1 the run failed, 2 bad usage or a bad trace.
 */
#include <buddyhint.h>
#include <buddyhint/report.h>
#include <buddyhint/trace.h>

#include "common/outfile.h"
#include "replay/event_meaning.h"

#include <jemalloc/jemalloc.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };
enum { TOUCH_PAGE, TOUCH_NONE, TOUCH_FULL };

#define PROG "buddyhint-jemalloc"
#define PAGE_SHIFT 12
#define DEFAULT_DECAY_MS 1000
#define DEFAULT_IDLE_S 60.0
#define MAX_IDLE_WALL_S                                                                            \
  20.0 /* enough for a 10 s decay to finish (the background thread may sleep 10 s first) */
#define SAMPLE_EVERY 0xffff /* events between two samples (as the buddy replay) */

/* ---- options ---- */

typedef struct opts {
  const char *trace, *summary, *timeline;
  long decay_ms, muzzy_ms;
  bool background_thread, lenient, progress;
  double idle_s, idle_wall_s; /* idle_wall_s < 0: min(idle_s, MAX_IDLE_WALL_S) */
  int touch;
  unsigned max_order;
} opts_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: " PROG " TRACE [OPTIONS]\n\n"
          "Replays a page allocation trace through jemalloc (mallocx/dallocx of 4 KiB << order),\n"
          "then idles for real so that jemalloc's decay can purge, and prints a summary as\n"
          "'key value' lines.  Started by 'buddyhint compare --strategies ...,jemalloc'.\n\n"
          "options:\n"
          "  --decay MS              dirty_decay_ms (default %d; 0 purges at once, -1 never)\n"
          "  --muzzy MS              muzzy_decay_ms (default 0: purge straight to DONTNEED)\n"
          "  --no-background-thread  no background purging thread (idle memory then stays)\n"
          "  --idle SECONDS          virtual idle time it stands for (default 60)\n"
          "  --idle-wall SECONDS     real idle time (default min(idle, 20))\n"
          "  --touch KIND            page (default), none or full, as buddyhint replay\n"
          "  --max-order N           orders above N are counted as too large (default 10)\n"
          "  --lenient               skip malformed trace lines (counted)\n"
          "  --summary FILE          write the summary there (default standard output)\n"
          "  --timeline FILE         write every sample as CSV (wall seconds since the start)\n"
          "  --progress              progress on standard error\n",
          DEFAULT_DECAY_MS);
}

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see '" PROG " --help')\n");
  va_end(ap);
  return -1;
}

/* "--name=value" or "--name value" at argv[*i]: 1 with *v set, 0 not this option, -1 error. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **v) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, "--", 2) || strncmp(a + 2, name, n))
    return 0;
  if (a[2 + n] == '=') {
    *v = a + 3 + n;
    (*i)++;
    return 1;
  }
  if (a[2 + n])
    return 0;
  if (*i + 1 >= argc)
    return usage_error("--%s needs a value", name);
  *v = argv[*i + 1];
  *i += 2;
  return 1;
}

/* Seconds as buddyhint takes them: "30", "2.5", "500ms", "2s", "10us", "5ns". */
static int parse_seconds(const char *s, double *out) {
  if (!s || !*s || *s == '-')
    return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end), scale = 1;
  if (!strcmp(end, "ms"))
    scale = 1e-3;
  else if (!strcmp(end, "us"))
    scale = 1e-6;
  else if (!strcmp(end, "ns"))
    scale = 1e-9;
  else if (*end && strcmp(end, "s"))
    return -1;
  if (errno || end == s || !isfinite(v) || v < 0 || v * scale > 1e9)
    return -1;
  *out = v * scale;
  return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.decay_ms = DEFAULT_DECAY_MS,
                .background_thread = true,
                .idle_s = DEFAULT_IDLE_S,
                .idle_wall_s = -1,
                .touch = TOUCH_PAGE,
                .max_order = 10};
  for (int i = 1; i < argc;) {
    const char *a = argv[i], *v;
    int r;
    long x;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(EXIT_OK);
    } else if (!strcmp(a, "--no-background-thread")) {
      o->background_thread = false;
      i++;
    } else if (!strcmp(a, "--lenient")) {
      o->lenient = true;
      i++;
    } else if (!strcmp(a, "--progress")) {
      o->progress = true;
      i++;
    } else if ((r = opt_value(argc, argv, &i, "decay", &v)) != 0) {
      if (r < 0 || parse_long(v, -1, 1L << 40, &o->decay_ms))
        return r < 0 ? -1 : usage_error("--decay: '%s' is not a number of ms (-1 = never)", v);
    } else if ((r = opt_value(argc, argv, &i, "muzzy", &v)) != 0) {
      if (r < 0 || parse_long(v, -1, 1L << 40, &o->muzzy_ms))
        return r < 0 ? -1 : usage_error("--muzzy: '%s' is not a number of ms (-1 = never)", v);
    } else if ((r = opt_value(argc, argv, &i, "idle-wall", &v)) != 0) {
      if (r < 0 || parse_seconds(v, &o->idle_wall_s))
        return r < 0 ? -1 : usage_error("--idle-wall: bad duration '%s'", v);
    } else if ((r = opt_value(argc, argv, &i, "idle", &v)) != 0) {
      if (r < 0 || parse_seconds(v, &o->idle_s))
        return r < 0 ? -1 : usage_error("--idle: bad duration '%s'", v);
    } else if ((r = opt_value(argc, argv, &i, "touch", &v)) != 0) {
      if (r < 0)
        return -1;
      if (!strcmp(v, "page"))
        o->touch = TOUCH_PAGE;
      else if (!strcmp(v, "none"))
        o->touch = TOUCH_NONE;
      else if (!strcmp(v, "full"))
        o->touch = TOUCH_FULL;
      else
        return usage_error("--touch: unknown value '%s'", v);
    } else if ((r = opt_value(argc, argv, &i, "max-order", &v)) != 0) {
      if (r < 0 || parse_long(v, 1, BH_ORDER_LIMIT, &x))
        return r < 0 ? -1
                     : usage_error("--max-order: '%s' is not a number in 1..%d", v, BH_ORDER_LIMIT);
      o->max_order = (unsigned)x;
    } else if ((r = opt_value(argc, argv, &i, "summary", &v)) != 0) {
      if (r < 0)
        return -1;
      o->summary = v;
    } else if ((r = opt_value(argc, argv, &i, "timeline", &v)) != 0) {
      if (r < 0)
        return -1;
      o->timeline = v;
    } else if ((a[0] == '-' && a[1]) || o->trace) {
      return usage_error("unexpected argument '%s'", a);
    } else {
      o->trace = a;
      i++;
    }
  }
  if (!o->trace)
    return usage_error("no trace given");
  if (!strcmp(o->trace, "-"))
    return usage_error("give the trace as a file, not standard input");
  if (o->idle_wall_s < 0)
    o->idle_wall_s = o->idle_s < MAX_IDLE_WALL_S ? o->idle_s : MAX_IDLE_WALL_S;
  return 0;
}

/* ---- jemalloc control ---- */

static int ctl_get(const char *name, void *v, size_t size) {
  size_t sz = size;
  int e = mallctl(name, v, &sz, NULL, 0);
  return e ? e : sz == size ? 0 : EINVAL;
}

static int ctl_set(const char *name, const void *v, size_t size) {
  return mallctl(name, NULL, NULL, (void *)v, size);
}

static uint64_t ctl_u64(const char *fmt, unsigned ind) {
  char name[128];
  uint64_t v = 0;
  snprintf(name, sizeof(name), fmt, ind);
  ctl_get(name, &v, sizeof(v));
  return v;
}

static size_t ctl_size(const char *fmt, unsigned ind) {
  char name[128];
  size_t v = 0;
  snprintf(name, sizeof(name), fmt, ind);
  ctl_get(name, &v, sizeof(v));
  return v;
}

static int set_decay(unsigned ind, const char *kind, ssize_t ms) {
  char name[64];
  snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", ind, kind);
  return ctl_set(name, &ms, sizeof(ms));
}

/*
 * Sets the decay times (the default for new arenas, every initialised arena, and a new arena
 * for the trace, bound to this thread) and the background thread; reads everything back.
 * Returns the trace arena's index, or -1 after a message.
 */
static long setup_jemalloc(const opts_t *o) {
  bool stats = false;
  if (ctl_get("config.stats", &stats, sizeof(stats)) || !stats) {
    fprintf(stderr, PROG ": this jemalloc was built without --enable-stats\n");
    return -1;
  }
  ssize_t dirty = (ssize_t)o->decay_ms, muzzy = (ssize_t)o->muzzy_ms;
  int e;
  if ((e = ctl_set("arenas.dirty_decay_ms", &dirty, sizeof(dirty))) ||
      (e = ctl_set("arenas.muzzy_decay_ms", &muzzy, sizeof(muzzy)))) {
    fprintf(stderr, PROG ": cannot set the default decay times: %s\n", strerror(e));
    return -1;
  }
  unsigned narenas = 0;
  ctl_get("arenas.narenas", &narenas, sizeof(narenas));
  for (unsigned i = 0; i < narenas; i++) {
    char name[64];
    bool init = false;
    snprintf(name, sizeof(name), "arena.%u.initialized", i);
    if (!ctl_get(name, &init, sizeof(init)) && init &&
        ((e = set_decay(i, "dirty", dirty)) || (e = set_decay(i, "muzzy", muzzy)))) {
      fprintf(stderr, PROG ": cannot set the decay times of arena %u: %s\n", i, strerror(e));
      return -1;
    }
  }
  unsigned ind;
  if ((e = ctl_get("arenas.create", &ind, sizeof(ind)))) {
    fprintf(stderr, PROG ": cannot create an arena: %s\n", strerror(e));
    return -1;
  }
  if ((e = set_decay(ind, "dirty", dirty)) || (e = set_decay(ind, "muzzy", muzzy)) ||
      (e = ctl_set("thread.arena", &ind, sizeof(ind)))) {
    fprintf(stderr, PROG ": cannot set up arena %u: %s\n", ind, strerror(e));
    return -1;
  }
  bool bg = o->background_thread;
  if ((e = ctl_set("background_thread", &bg, sizeof(bg)))) {
    fprintf(stderr, PROG ": cannot %s the background thread: %s\n", bg ? "start" : "stop",
            strerror(e));
    return -1;
  }
  /* read back: the settings must have taken effect */
  char name[64];
  ssize_t got_dirty = -2, got_muzzy = -2;
  unsigned got_ind = ~0u;
  bool got_bg = !bg;
  snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", ind);
  ctl_get(name, &got_dirty, sizeof(got_dirty));
  snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", ind);
  ctl_get(name, &got_muzzy, sizeof(got_muzzy));
  ctl_get("background_thread", &got_bg, sizeof(got_bg));
  ctl_get("thread.arena", &got_ind, sizeof(got_ind));
  if (got_dirty != dirty || got_muzzy != muzzy || got_bg != bg || got_ind != ind) {
    fprintf(stderr,
            PROG ": jemalloc did not take the settings: dirty_decay_ms %zd (wanted %zd), "
                 "muzzy_decay_ms %zd (%zd), background_thread %d (%d), thread.arena %u (%u)\n",
            got_dirty, dirty, got_muzzy, muzzy, got_bg, bg, got_ind, ind);
    return -1;
  }
  return (long)ind;
}

/* ---- split allocations ---- */

/* A split allocation: freed with dallocx when its last live piece is freed. */
typedef struct parent {
  char *base;    /* NULL: a free slot */
  uint64_t live; /* pieces not yet freed; on the free list, the next free index + 1 */
} parent_t;

/* Memory outside jemalloc, so that its statistics hold the replayed blocks only. */
static void *map_pages(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* ---- state ---- */

typedef struct summary {
  uint64_t events, skipped_lines, malformed_lines, live_final_bytes, minflt;
  uint64_t time_reversals;                        /* events timestamped before an earlier one */
  uint64_t rss_peak_bytes, rss_final_bytes;       /* the trace arena's stats.arenas.<i>.resident */
  uint64_t data_peak, data_final;                 /* the trace arena's (pactive + pdirty) pages */
  uint64_t all_resident_peak, all_resident_final; /* stats.resident (every arena, metadata) */
  uint64_t proc_rss_peak, proc_rss_final;         /* Rss of the process */
  uint64_t samples;
  double wall_seconds, idle_wall_seconds, cpu_seconds, virtual_seconds;
} summary_t;

typedef struct run {
  const opts_t *o;
  unsigned arena;
  /* the recorded pfns and what each event means, as in the buddy replay
   * (replay/event_meaning.h): the map's hash part only (mmap'ed, outside jemalloc), val the
   * block's address, aux 1 + the index of its split parent (0: not split) */
  bh__em_t em;
  bh_replay_summary_t counts; /* the event counts (allocs, frees, ..., live_peak_bytes) */
  parent_t *parents;
  uint64_t nparents, cap_parents, free_parent; /* free_parent: index + 1 of a free slot */
  FILE *timeline;
  double t0;
  summary_t s;
} run_t;

/* ---- measurement ---- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sample(run_t *r, const char *phase) {
  uint64_t epoch = 1;
  size_t sz = sizeof(epoch);
  mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh the statistics */
  uint64_t res = ctl_size("stats.arenas.%u.resident", r->arena);
  uint64_t dirty = ctl_size("stats.arenas.%u.pdirty", r->arena) << PAGE_SHIFT;
  uint64_t data = (ctl_size("stats.arenas.%u.pactive", r->arena) << PAGE_SHIFT) + dirty;
  size_t all = 0;
  ctl_get("stats.resident", &all, sizeof(all));
  bh_procmem_t pm = {0};
  bh_procmem_read(&pm);
  summary_t *s = &r->s;
  s->rss_final_bytes = res;
  s->data_final = data;
  s->all_resident_final = all;
  s->proc_rss_final = pm.rss_bytes;
  if (res > s->rss_peak_bytes)
    s->rss_peak_bytes = res;
  if (data > s->data_peak)
    s->data_peak = data;
  if (all > s->all_resident_peak)
    s->all_resident_peak = all;
  if (pm.rss_bytes > s->proc_rss_peak)
    s->proc_rss_peak = pm.rss_bytes;
  s->samples++;
  if (r->timeline)
    fprintf(r->timeline,
            "%.3f,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
            now_s() - r->t0, phase, s->events, r->em.live_pages << PAGE_SHIFT, res, data, dirty,
            pm.rss_bytes);
}

static double tv_s(const struct timeval *tv) {
  return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* ---- events ---- */

static void touch(const run_t *r, char *p, uint64_t pfn, unsigned order) {
  uint64_t n = 1ull << order;
  if (r->o->touch == TOUCH_FULL)
    memset(p, 0x5a, n << PAGE_SHIFT);
  else if (r->o->touch == TOUCH_PAGE)
    for (uint64_t i = 0; i < n; i++)
      p[i << PAGE_SHIFT] = (char)(uint8_t)(pfn + i); /* as the buddy replay writes */
}

/* jemalloc as the backend of the event meaning: a recorded allocation of order k is
 * mallocx(4 KiB << k), touched as the buddy replay touches its blocks. */
static int jem_alloc(void *ctx, const bh_event_t *ev, uint64_t *val) {
  run_t *r = ctx;
  /*
   * Page alignment, not natural alignment: a buddy block of order k is aligned to its own
   * size only because of how buddies are found, and nothing in the replay depends on it (a
   * block is touched and discarded page by page).  Asking jemalloc for 4 KiB << k alignment
   * would make it reserve extra space and trim it for every large request, and would turn an
   * 8 KiB request into a 16 KiB large allocation (alignment above a page rules out the slab
   * classes; sallocx shows it) - costs of copying the buddy's layout, not of jemalloc's
   * purging.  Page alignment is what a page-granular consumer needs: every recorded page is
   * one OS page, so touching and purging work on the same pages as in the buddy replay.  For
   * these sizes (multiples of 4 KiB) jemalloc's result is page-aligned anyway.
   */
  char *p = mallocx((size_t)4096 << ev->order, MALLOCX_ALIGN(4096));
  if (!p)
    return 1;
  touch(r, p, ev->pfn, ev->order);
  *val = (uintptr_t)p;
  return 0;
}

/* A block given back: a whole allocation with dallocx, a piece of a split one when it is the
 * last piece of its parent. */
static void jem_free(void *ctx, uint64_t val, unsigned order, uint32_t aux, int cpu) {
  run_t *r = ctx;
  (void)order;
  (void)cpu;
  if (!aux) {
    dallocx((void *)(uintptr_t)val, 0);
    return;
  }
  parent_t *par = &r->parents[aux - 1];
  if (--par->live == 0) {
    dallocx(par->base, 0);
    par->base = NULL;
    par->live = r->free_parent;
    r->free_parent = aux;
  }
}

static int new_parent(run_t *r, char *base, uint64_t pieces, uint32_t *idx) {
  if (r->free_parent) {
    uint64_t i = r->free_parent - 1;
    r->free_parent = r->parents[i].live;
    r->parents[i] = (parent_t){base, pieces};
    *idx = (uint32_t)(i + 1);
    return 0;
  }
  if (r->nparents == r->cap_parents) {
    uint64_t cap = r->cap_parents ? r->cap_parents * 2 : 1024;
    if (cap >= UINT32_MAX)
      return BH_ENOMEM;
    parent_t *np = map_pages(cap * sizeof(parent_t));
    if (!np)
      return BH_ENOMEM;
    if (r->parents) {
      memcpy(np, r->parents, r->nparents * sizeof(parent_t));
      munmap(r->parents, r->cap_parents * sizeof(parent_t));
    }
    r->parents = np;
    r->cap_parents = cap;
  }
  r->parents[r->nparents] = (parent_t){base, pieces};
  *idx = (uint32_t)++r->nparents;
  return 0;
}

/* A recorded block freed piece by piece, as after split_page().  jemalloc cannot free part of
 * an allocation: the pieces share a parent, given back when its last piece is freed. */
static int jem_split(void *ctx, uint64_t val, unsigned order, uint32_t *aux) {
  return new_parent(ctx, (char *)(uintptr_t)val, 1ull << order, aux);
}

static const bh__em_ops_t jem_ops = {
    .alloc = jem_alloc,
    .free = jem_free,
    .split = jem_split,
    .untraced = NULL, /* no start state: a free of no recorded block is unknown */
    .stride = (uint64_t)1 << PAGE_SHIFT,
};

/* ---- the run ---- */

static int fail_code(int err) {
  return err == BH_ENOMEM || err == BH_ESYS ? EXIT_FAIL : EXIT_USAGE;
}

__attribute__((format(printf, 2, 3))) static void progress(const run_t *r, const char *fmt, ...) {
  if (!r->o->progress)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "\r" PROG ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "   ");
  va_end(ap);
}

static int play(run_t *r, bh_trace_t *t, uint64_t *first, uint64_t *last) {
  summary_t *s = &r->s;
  bh_event_t ev;
  int err;
  uint64_t next_sample_ns = 1000000000ull; /* also once per second of trace time */
  while ((err = bh_trace_next(t, &ev)) == 1) {
    if (!s->events)
      *first = ev.time_ns;
    if (ev.time_ns > *last)
      *last = ev.time_ns;
    else if (ev.time_ns < *last)
      s->time_reversals++;
    s->events++;
    if ((err = bh__em_event(&r->em, &jem_ops, r, &ev)) != 0) {
      fprintf(stderr, PROG ": %s: out of memory for the pfn map\n", r->o->trace);
      return err;
    }
    uint64_t vt = *last - *first;
    if ((s->events & SAMPLE_EVERY) == 0 || vt >= next_sample_ns) {
      sample(r, "events");
      while (next_sample_ns <= vt)
        next_sample_ns += 1000000000ull;
      if ((s->events & SAMPLE_EVERY) == 0)
        progress(r, "%.2f M events", (double)s->events / 1e6);
    }
  }
  if (err < 0) {
    if (r->o->progress)
      fprintf(stderr, "\n");
    fprintf(stderr, "%s\n", bh_trace_error(t));
    return err;
  }
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  s->skipped_lines = c.other_lines;
  s->malformed_lines = c.malformed;
  return 0;
}

static void idle(run_t *r) {
  double total = r->o->idle_wall_s, t0 = now_s(), t = 0;
  while (t < total) {
    double d = total - t < 0.5 ? total - t : 0.5;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
      ;
    sample(r, "idle");
    t = now_s() - t0;
    progress(r, "idle %.1f/%.1f s", t < total ? t : total, total);
  }
  r->s.idle_wall_seconds = now_s() - t0;
}

/*
 * The program's output files, written as the command's are (src/common/outfile.c): a regular
 * file through a temporary file renamed at a successful close, never the trace itself.
 */
typedef struct out {
  bh__outfile_t of;
  FILE *f;
} out_t;

static FILE *out_open(out_t *o, const char *path, const char *trace) {
  char msg[1024];
  const char *inputs[] = {trace, NULL};
  o->f = NULL;
  if (bh__outfile_open(&o->of, path, inputs, msg, sizeof(msg))) {
    fprintf(stderr, PROG ": %s\n", msg);
    return NULL;
  }
  o->f = o->of.stdout_fd ? stdout : fdopen(o->of.fd, "w");
  if (!o->f) {
    fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
    bh__outfile_abort(&o->of);
  }
  return o->f;
}

/* Checks every write, closes and renames into place (ok), or gives the file up.  0 or BH_EIO. */
static int out_close(out_t *o, bool ok) {
  if (!o->f)
    return 0;
  int e = fflush(o->f) ? errno : ferror(o->f) ? EIO : 0;
  if (o->f != stdout) {
    if (fclose(o->f) && !e)
      e = errno;
    o->of.fd = -1; /* closed with the stream */
  }
  o->f = NULL;
  char msg[1024];
  if (e || !ok) {
    if (e)
      fprintf(stderr, PROG ": %s: write failed: %s\n", o->of.name, strerror(e));
    bh__outfile_abort(&o->of);
    return e ? BH_EIO : 0;
  }
  if (bh__outfile_commit(&o->of, msg, sizeof(msg))) {
    fprintf(stderr, PROG ": %s\n", msg);
    return BH_EIO;
  }
  return 0;
}

static void put_u64(FILE *f, const char *k, uint64_t v) { fprintf(f, "%s %" PRIu64 "\n", k, v); }
static void put_dbl(FILE *f, const char *k, double v) { fprintf(f, "%s %.6f\n", k, v); }
static void put_str(FILE *f, const char *k, const char *v) {
  fprintf(f, "%s ", k);
  for (; *v; v++)
    fputc(*v == '\n' || *v == '\r' ? '?' : *v, f); /* one line per key */
  fputc('\n', f);
}

static int write_summary(const run_t *r, const char *trace_format) {
  const opts_t *o = r->o;
  const summary_t *s = &r->s;
  const bh_replay_summary_t *c = &r->counts;
  out_t out;
  FILE *f = out_open(&out, o->summary ? o->summary : "-", o->trace);
  if (!f)
    return BH_ESYS;
  char strategy[64];
  int n = snprintf(strategy, sizeof(strategy), "jemalloc:decay=%ld", o->decay_ms);
  if (o->muzzy_ms)
    n += snprintf(strategy + n, sizeof(strategy) - (size_t)n, ":muzzy=%ld", o->muzzy_ms);
  if (!o->background_thread)
    snprintf(strategy + n, sizeof(strategy) - (size_t)n, ":bg=0");
  unsigned a = r->arena;
  uint64_t pdirty = ctl_size("stats.arenas.%u.pdirty", a);
  uint64_t pmuzzy = ctl_size("stats.arenas.%u.pmuzzy", a);
  uint64_t dirty_nmadvise = ctl_u64("stats.arenas.%u.dirty_nmadvise", a);
  uint64_t muzzy_nmadvise = ctl_u64("stats.arenas.%u.muzzy_nmadvise", a);
  uint64_t dirty_purged = ctl_u64("stats.arenas.%u.dirty_purged", a);
  uint64_t muzzy_purged = ctl_u64("stats.arenas.%u.muzzy_purged", a);
  size_t active = 0, mapped = 0, retained = 0, metadata = 0;
  ctl_get("stats.active", &active, sizeof(active));
  ctl_get("stats.mapped", &mapped, sizeof(mapped));
  ctl_get("stats.retained", &retained, sizeof(retained));
  ctl_get("stats.metadata", &metadata, sizeof(metadata));

  put_str(f, "trace", o->trace);
  put_str(f, "trace_format", trace_format);
  put_str(f, "strategy", strategy);
  put_str(f, "backing", "jemalloc");
  /* muzzy_decay_ms 0: dirty pages are purged with MADV_DONTNEED; else MADV_FREE first */
  put_str(f, "report_mode", o->muzzy_ms ? "free+dontneed" : "dontneed");
  put_u64(f, "memory_bytes", 0); /* no fixed arena: jemalloc maps what it needs */
  put_u64(f, "nr_cpus", 1);      /* one replay thread */
  put_u64(f, "events", s->events);
  put_u64(f, "allocs", c->allocs);
  put_u64(f, "frees", c->frees);
  put_u64(f, "alloc_failures", c->alloc_failures);
  put_u64(f, "unknown_frees", c->unknown_frees);
  put_u64(f, "skipped_lines", s->skipped_lines);
  put_u64(f, "malformed_lines", s->malformed_lines);
  put_u64(f, "trace_failed_allocs", c->trace_failed_allocs);
  put_u64(f, "split_frees", c->split_frees);
  put_u64(f, "orders_too_large", c->orders_too_large);
  put_u64(f, "lost_frees", c->lost_frees);
  put_u64(f, "batched_dups", c->batched_dups);
  put_u64(f, "time_reversals", s->time_reversals);
  put_dbl(f, "virtual_seconds", s->virtual_seconds);
  put_dbl(f, "wall_seconds", s->wall_seconds);
  put_dbl(f, "cpu_seconds", s->cpu_seconds);
  put_u64(f, "rss_peak_bytes", s->rss_peak_bytes);
  put_u64(f, "rss_final_bytes", s->rss_final_bytes);
  put_u64(f, "live_peak_bytes", c->live_peak_bytes);
  put_u64(f, "live_final_bytes", s->live_final_bytes);
  /* pages jemalloc madvised away from the dirty state, and its madvise calls */
  put_u64(f, "reported_bytes", dirty_purged << PAGE_SHIFT);
  /* Of them, the resident memory taken back.  A dirty page was active, and every active page
   * was written (unless --touch none), so with muzzy 0 each page purged from dirty by
   * MADV_DONTNEED was resident and is gone; with muzzy > 0 the dirty purge is MADV_FREE, which
   * leaves the page resident, and the pages taken back are those purged from muzzy by
   * MADV_DONTNEED (without memory pressure nothing reclaimed them in between). */
  uint64_t returned = o->touch == TOUCH_NONE ? 0 : o->muzzy_ms ? muzzy_purged : dirty_purged;
  put_u64(f, "returned_bytes", returned << PAGE_SHIFT);
  put_u64(f, "madvise_calls", dirty_nmadvise + muzzy_nmadvise);
  put_u64(f, "refaults", 0);
  put_u64(f, "refault_blocks", 0);
  put_u64(f, "minflt", s->minflt);
  put_u64(f, "check_violations", 0);
  put_u64(f, "stat.arena_index", a);
  put_u64(f, "stat.dirty_decay_ms", (uint64_t)(o->decay_ms < 0 ? 0 : o->decay_ms));
  put_u64(f, "stat.muzzy_decay_ms", (uint64_t)(o->muzzy_ms < 0 ? 0 : o->muzzy_ms));
  put_u64(f, "stat.background_thread", o->background_thread);
  put_u64(f, "stat.idle_wall_ms", (uint64_t)(s->idle_wall_seconds * 1000 + 0.5));
  put_u64(f, "stat.samples", s->samples);
  put_u64(f, "stat.process_rss_peak_bytes", s->proc_rss_peak);
  put_u64(f, "stat.process_rss_final_bytes", s->proc_rss_final);
  put_u64(f, "stat.data_resident_peak_bytes", s->data_peak);
  put_u64(f, "stat.data_resident_final_bytes", s->data_final);
  put_u64(f, "stat.all_resident_peak_bytes", s->all_resident_peak);
  put_u64(f, "stat.all_resident_final_bytes", s->all_resident_final);
  put_u64(f, "stat.arena_active_bytes", ctl_size("stats.arenas.%u.pactive", a) << PAGE_SHIFT);
  put_u64(f, "stat.arena_mapped_bytes", ctl_size("stats.arenas.%u.mapped", a));
  put_u64(f, "stat.arena_retained_bytes", ctl_size("stats.arenas.%u.retained", a));
  put_u64(f, "stat.arena_metadata_bytes",
          ctl_size("stats.arenas.%u.base", a) + ctl_size("stats.arenas.%u.internal", a));
  put_u64(f, "stat.dirty_bytes", pdirty << PAGE_SHIFT);
  put_u64(f, "stat.muzzy_bytes", pmuzzy << PAGE_SHIFT);
  put_u64(f, "stat.dirty_npurge", ctl_u64("stats.arenas.%u.dirty_npurge", a));
  put_u64(f, "stat.dirty_nmadvise", dirty_nmadvise);
  put_u64(f, "stat.dirty_purged_bytes", dirty_purged << PAGE_SHIFT);
  put_u64(f, "stat.muzzy_npurge", ctl_u64("stats.arenas.%u.muzzy_npurge", a));
  put_u64(f, "stat.muzzy_nmadvise", muzzy_nmadvise);
  put_u64(f, "stat.muzzy_purged_bytes", muzzy_purged << PAGE_SHIFT);
  uint64_t bg_runs = 0, bg_interval = 0;
  ctl_get("stats.background_thread.num_runs", &bg_runs, sizeof(bg_runs));
  ctl_get("stats.background_thread.run_interval", &bg_interval, sizeof(bg_interval));
  put_u64(f, "stat.background_thread_runs", bg_runs);
  put_u64(f, "stat.background_thread_interval_ms", bg_interval / 1000000);
  put_u64(f, "stat.all_active_bytes", active);
  put_u64(f, "stat.all_mapped_bytes", mapped);
  put_u64(f, "stat.all_retained_bytes", retained);
  put_u64(f, "stat.all_metadata_bytes", metadata);
  return out_close(&out, true);
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse_args(argc, argv, &o))
    return EXIT_USAGE;
  if (!isatty(STDERR_FILENO))
    o.progress = false;

  run_t r = {.o = &o};
  struct rusage ru0, ru1;
  double t0 = r.t0 = now_s();
  getrusage(RUSAGE_SELF, &ru0);

  /* the trace first: its reader's buffers stay in the default arena */
  bh_trace_opts_t to = {.lenient = o.lenient};
  bh_trace_t *t;
  int err = bh_trace_open(o.trace, &to, &t);
  if (err) {
    fprintf(stderr, "%s\n", bh_trace_error(NULL));
    return fail_code(err);
  }
  char trace_format[32];
  snprintf(trace_format, sizeof(trace_format), "%s%s%s", bh_trace_format_name(t),
           strcmp(bh_trace_compression(t), "none") ? "+" : "",
           strcmp(bh_trace_compression(t), "none") ? bh_trace_compression(t) : "");

  long ind = setup_jemalloc(&o);
  if (ind < 0) {
    bh_trace_close(t);
    return EXIT_FAIL;
  }
  r.arena = (unsigned)ind;
  bh__em_init(&r.em, &r.counts, o.max_order);
  if (bh__pfnmap_init(&r.em.map, 1 << 10)) {
    fprintf(stderr, PROG ": out of memory\n");
    bh_trace_close(t);
    return EXIT_FAIL;
  }

  out_t timeline = {.f = NULL};
  if (o.timeline) {
    r.timeline = out_open(&timeline, o.timeline, o.trace);
    if (!r.timeline) {
      bh_trace_close(t);
      return EXIT_FAIL;
    }
    fprintf(r.timeline, "wall_s,phase,events,live_bytes,resident_bytes,data_resident_bytes,"
                        "dirty_bytes,process_rss_bytes\n");
  }

  uint64_t first = 0, last = 0;
  err = play(&r, t, &first, &last);
  bh_trace_close(t);
  if (err) {
    out_close(&timeline, false); /* a file already there stays as it was */
    return fail_code(err);
  }
  sample(&r, "end");
  double t_events = now_s();
  if (o.progress)
    fprintf(stderr, "\n");
  idle(&r);
  if (o.progress)
    fprintf(stderr, "\n");

  summary_t *s = &r.s;
  getrusage(RUSAGE_SELF, &ru1);
  s->cpu_seconds =
      tv_s(&ru1.ru_utime) + tv_s(&ru1.ru_stime) - tv_s(&ru0.ru_utime) - tv_s(&ru0.ru_stime);
  s->minflt = (uint64_t)(ru1.ru_minflt - ru0.ru_minflt);
  /* the work, without the idle sleep (the buddy replay's idle phase takes no wall time) */
  s->wall_seconds = t_events - t0;
  s->virtual_seconds = (double)(last - first) / 1e9 + o.idle_s;
  s->live_final_bytes = r.em.live_pages << PAGE_SHIFT;
  err = write_summary(&r, trace_format);
  if (out_close(&timeline, !err))
    err = BH_EIO;
  bh__pfnmap_destroy(&r.em.map);
  return err ? EXIT_FAIL : EXIT_OK;
}
