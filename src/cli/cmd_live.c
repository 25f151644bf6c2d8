/*
 * buddyhint live: the running machine's page allocator, replayed as it runs under several
 * strategies at once, with the model's free lists beside the kernel's.
 *
 * It starts as record does (record/record_tracer.c): a tracefs instance of our own with the
 * kmem page events, tracing on, then a snapshot of /proc with the free map from kpageflags
 * (record/record_machine.c).  From then on, instead of spooling the ring buffers for later,
 * this thread reads them every POLL_MS (whole or partly filled sub-buffers, trace_pipe_raw),
 * decodes the events with the kernel's formats, and hands them in time order to one fed
 * replay per strategy (replay/replay_feed.h), each an arena of the machine's shape started
 * from that free map.  The instance's trace_clock is "mono", CLOCK_MONOTONIC, so that the
 * events of every cpu are on one clock and this thread knows how far they are complete: at a
 * read that starts at time T every cpu is read after T, so every event before T has been read,
 * and only those are played (the rest wait for the next read).
 *
 * Every interval /proc/buddyinfo, pagetypeinfo and zoneinfo are read, the events up to the
 * moment of that reading are played, and the models' free lists are compared with the
 * kernel's (the fidelity of a replay against an end snapshot, taken at that moment).
 *
 * Why threads and no pipe: the events are decoded once (live/live_reader.c) into memory the
 * models only read, and each model plays a batch in a thread of its own while this one waits
 * (writing -o meanwhile); the whole costs about half a microsecond of CPU an event for three
 * models, a busy machine makes some hundreds of thousands a second, and the ring buffers (64 MiB
 * per cpu by default) absorb what arrives while a batch is played.  What they drop is counted
 * (per_cpu/cpuN/stats) and shown; a table with dropped events is marked not exact
 * (docs/LIVE.md).
 */
#include "cli/cli.h"
#include "cli/live/live_reader.h"
#include "cli/record/record_machine.h"
#include "cli/record/record_safety.h"
#include "cli/record/record_tracer.h"
#include "cli/replay_opts.h"
#include "cli/run_json.h"

#include "common/json.h"
#include "replay/replay_feed.h"

#include <buddyhint/machine.h>
#include <buddyhint/replay.h>
#include <buddyhint/trace.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERB "live"
#define MAX_RUNS 16
#define POLL_MS 100
#define DEFAULT_BUFFER_KB 65536u
#define DEFAULT_STRATEGIES "none,bitmap,bubble"

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint live [--strategies LIST] [--interval SECONDS] [--duration SECONDS]\n"
          "                      [--json FILE] [-o TRACE] [--summary FILE] [--buffer-kb N]\n"
          "                      [--as-root]\n"
          "                      [-- CMD [ARGS]...]\n"
          "\n"
          "Follows the running kernel's page allocator and replays its events as they happen\n"
          "under each strategy at once (default " DEFAULT_STRATEGIES "), starting from the\n"
          "machine's state now: its zones and settings, and its free blocks read from\n"
          "/proc/kpageflags.  The models are metadata only (sim backing): resident memory is\n"
          "the pages written and not discarded, as in 'replay --backing sim'.  Every interval\n"
          "/proc/buddyinfo is read and each model's free lists compared with it: the share\n"
          "of free memory in the wrong order (free_order_error, as replay's fidelity).\n"
          "\n"
          "On a terminal a table is redrawn every interval; otherwise, and with --json FILE,\n"
          "one JSON object per interval and line:\n"
          "  {\"t_s\", \"events\", \"events_per_s\", \"lag_s\", \"dropped\", \"exact\",\n"
          "   \"runs\": [{\"strategy\",\n"
          "   \"returned_bytes\", \"reported_bytes\", \"resident_bytes\", \"live_bytes\",\n"
          "   \"madvise_calls\", \"refaults\", \"free_order_error\"}...], \"fidelity\":\n"
          "   {\"free_order_error\", \"machine_free_pages\": [per order], \"model_free_pages\":\n"
          "   [per order]}}\n"
          "(fidelity: the first strategy's model).  lag_s is how far the figures are behind\n"
          "the machine (what reading and playing the last events took); dropped counts the\n"
          "events the ring buffers lost: with any, the figures are not exact and say so\n"
          "(\"exact\": false, and NOT EXACT in the table).\n"
          "\n"
          "Runs until CMD exits (if given; it runs as the invoking user under sudo unless\n"
          "--as-root), --duration has passed (CMD, if still running, is then sent\n"
          "SIGTERM), or ^C, SIGTERM or SIGHUP; then tracing is turned off, the last events\n"
          "played, the tracefs instance removed, and the final table printed (to\n"
          "standard error when standard output carries the JSON lines).  Needs root.\n"
          "\n"
          "options:\n"
          "  --strategies LIST     comma-separated NAME[:KEY=VALUE...] (at most %d)\n"
          "  --interval SECONDS    between two tables or JSON lines (default 1)\n"
          "  --duration SECONDS    stop after this long (default: CMD's end, or a signal)\n"
          "  --json FILE           the JSON lines to FILE ('-': standard output)\n"
          "  -o, --output TRACE    also write the events as a native trace with the machine's\n"
          "                        description and start snapshot (no end snapshot: it\n"
          "                        comes before the events), replayable later (binary if\n"
          "                        TRACE ends in .bht or .bin before any .gz/.zst)\n"
          "  --summary FILE        at the end, each model's summary as compare --json writes\n"
          "                        it ({\"runs\": [...]}: fidelity, placement, counts...)\n"
          "  --buffer-kb N         ring buffer per cpu in KiB (default %u)\n"
          "  --as-root             run CMD as root even under sudo\n"
          "  -h, --help            this help\n"
          "\n"
          "exit status: 0 done (CMD's status does not change it), 1 not root, tracefs or the\n"
          "free map unusable, or an output could not be written; 2 bad usage; 128+N stopped\n"
          "by signal N before the models had started (no output).\n",
          MAX_RUNS, DEFAULT_BUFFER_KB);
}

/* One strategy of --strategies: its label, name and options (split in place). */
typedef struct live_spec {
  char label[64];
  const char *name;
  bh_opt_t opts[BH_CLI_MAX_OPTS];
  size_t nopts;
} live_spec_t;

/* Splits list (in place) into specs; the number of them, or -1 after a usage error. */
static int parse_strategies(char *list, live_spec_t *sp, bh_cli_replay_t *c) {
  int n = 0;
  char *save = NULL;
  for (char *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
    if (n == MAX_RUNS)
      return bh_cli_usage_error(VERB, "at most %d strategies", MAX_RUNS), -1;
    live_spec_t *s = &sp[n++];
    snprintf(s->label, sizeof(s->label), "%s", e);
    char *save2 = NULL;
    s->name = e[0] == ':' ? NULL : strtok_r(e, ":", &save2);
    if (!s->name)
      return bh_cli_usage_error(VERB, "--strategies: empty name in '%s'", s->label), -1;
    s->nopts = 0;
    for (char *kv = strtok_r(NULL, ":", &save2); kv; kv = strtok_r(NULL, ":", &save2)) {
      char *eq = strchr(kv, '=');
      if (!eq || eq == kv)
        return bh_cli_usage_error(VERB, "--strategies: '%s' in '%s' is not KEY=VALUE", kv,
                                  s->label),
               -1;
      if (s->nopts == BH_CLI_MAX_OPTS)
        return bh_cli_usage_error(VERB, "--strategies: too many options in '%s'", s->label), -1;
      *eq = '\0';
      s->opts[s->nopts++] = (bh_opt_t){kv, eq + 1};
    }
    if (!bh_strategy_find(s->name))
      return bh_cli_usage_error(VERB,
                                "--strategies: unknown strategy '%s' ('buddyhint info' lists "
                                "them)",
                                s->name),
             -1;
    if (bh_cli_check_strategy(VERB, c, s->label, s->name, s->opts, s->nopts))
      return -1;
  }
  if (!n)
    return bh_cli_usage_error(VERB, "--strategies: no strategy"), -1;
  return n;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if BH_HAVE_TRACEFS

/* ---- the replays and what is shown ---- */

/* The models play each batch side by side, one thread each (the main thread waits). */
typedef struct crew {
  pthread_t th[MAX_RUNS];
  int nthreads; /* started */
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  uint64_t gen; /* batches handed out */
  int busy;     /* models still playing the current one */
  bool quit;
  const bh_event_t *batch;
  size_t n;
  int err[MAX_RUNS];
} crew_t;

typedef struct live {
  live_spec_t specs[MAX_RUNS];
  int nruns;
  bh__replay_feed_t *feeds[MAX_RUNS];
  bh_replay_config_t cfgs[MAX_RUNS];
  bh_replay_summary_t *sums; /* nruns: the figures at the last interval */
  bh_trace_writer_t *w;      /* -o, or NULL */
  int werr;
  uint64_t events, events_then; /* played; at the last interval */
  uint64_t last_ns;             /* the last event's time */
  uint64_t played_to;           /* the models hold every event before this (trace clock) */
  double t0, then;              /* wall clock at the start, at the last interval */
  uint64_t dropped;
  FILE *json;        /* JSON lines, or NULL */
  bool screen;       /* a table redrawn in place */
  bool trace_stdout; /* -o -: the final table goes to standard error */
  crew_t crew;
} live_t;

struct crew_arg {
  live_t *lv;
  int idx;
};
static struct crew_arg crew_args[MAX_RUNS];

static void *crew_main(void *arg) {
  live_t *lv = ((struct crew_arg *)arg)->lv;
  int idx = ((struct crew_arg *)arg)->idx;
  crew_t *c = &lv->crew;
  uint64_t seen = 0;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (c->gen == seen && !c->quit)
      pthread_cond_wait(&c->go, &c->mu);
    if (c->quit)
      break;
    seen = c->gen;
    pthread_mutex_unlock(&c->mu);
    int e = c->err[idx] ? 0 : bh__replay_feed_events(lv->feeds[idx], c->batch, c->n);
    pthread_mutex_lock(&c->mu);
    if (e)
      c->err[idx] = e;
    if (--c->busy == 0)
      pthread_cond_signal(&c->done);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* One thread per model when there are several; 0, or -1 (then they play one after another). */
static int crew_start(live_t *lv) {
  crew_t *c = &lv->crew;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->go, NULL);
  pthread_cond_init(&c->done, NULL);
  for (int i = 0; lv->nruns > 1 && i < lv->nruns; i++) {
    crew_args[i] = (struct crew_arg){lv, i};
    if (pthread_create(&c->th[i], NULL, crew_main, &crew_args[i]))
      return -1;
    c->nthreads++;
  }
  return 0;
}

static void crew_stop(live_t *lv) {
  crew_t *c = &lv->crew;
  pthread_mutex_lock(&c->mu);
  c->quit = true;
  pthread_cond_broadcast(&c->go);
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < c->nthreads; i++)
    pthread_join(c->th[i], NULL);
  c->nthreads = 0;
  pthread_cond_destroy(&c->go);
  pthread_cond_destroy(&c->done);
  pthread_mutex_destroy(&c->mu);
}

/* Plays n events under every strategy (and writes them with -o).  0, or -1 after a message. */
static int play(live_t *lv, const bh_event_t *evs, size_t n) {
  if (!n)
    return 0;
  crew_t *c = &lv->crew;
  if (c->nthreads == lv->nruns) {
    pthread_mutex_lock(&c->mu);
    c->batch = evs;
    c->n = n;
    c->busy = lv->nruns;
    c->gen++;
    pthread_cond_broadcast(&c->go);
    pthread_mutex_unlock(&c->mu);
    for (size_t k = 0; lv->w && !lv->werr && k < n; k++) /* meanwhile */
      lv->werr = bh_trace_write(lv->w, &evs[k]);
    pthread_mutex_lock(&c->mu);
    while (c->busy)
      pthread_cond_wait(&c->done, &c->mu);
    pthread_mutex_unlock(&c->mu);
  } else {
    for (int i = 0; i < lv->nruns; i++)
      c->err[i] = c->err[i] ? c->err[i] : bh__replay_feed_events(lv->feeds[i], evs, n);
    for (size_t k = 0; lv->w && !lv->werr && k < n; k++)
      lv->werr = bh_trace_write(lv->w, &evs[k]);
  }
  for (int i = 0; i < lv->nruns; i++)
    if (c->err[i]) {
      fprintf(stderr, "buddyhint live: the replay under %s cannot go on: %s\n", lv->specs[i].label,
              bh_strerror(c->err[i]));
      return -1;
    }
  lv->events += n;
  lv->last_ns = evs[n - 1].time_ns;
  return 0;
}

/* A machine holding counts of /proc read now as its end snapshot, or NULL after a warning. */
static bh_machine_t *read_now(void) {
  bh_machine_t *m = bh_machine_new();
  char err[256];
  if (m && !bh_machine_read_counts(m, BH_SNAP_END, "/proc", 0, 0, err, sizeof(err)))
    return m;
  if (m)
    fprintf(stderr, "buddyhint live: warning: cannot read /proc's counts: %s\n", err);
  bh_machine_free(m);
  return NULL;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void json_u64s(FILE *f, const char *key, const uint64_t *v, unsigned n) {
  fprintf(f, ",\"%s\":[", key);
  for (unsigned o = 0; o < n; o++)
    fprintf(f, "%s%llu", o ? "," : "", (unsigned long long)v[o]);
  fprintf(f, "]");
}

/* Free pages per order over the zones, the machine's (recorded) and the model's (predicted). */
static unsigned free_by_order(const bh_replay_fidelity_t *fi, uint64_t *machine, uint64_t *model) {
  unsigned n = fi->present ? fi->max_order + 1 : 0;
  for (unsigned o = 0; o < n && o <= BH_ORDER_LIMIT; o++) {
    machine[o] = model[o] = 0;
    for (int z = 0; z < fi->nr_zones; z++) {
      machine[o] += fi->zones[z].recorded[o] << o;
      model[o] += fi->zones[z].predicted[o] << o;
    }
  }
  return n;
}

static void emit_json(const live_t *lv, double t, double rate, double lag) {
  FILE *f = lv->json;
  fprintf(f,
          "{\"t_s\":%.3f,\"events\":%llu,\"events_per_s\":%.0f,\"lag_s\":%.3f,\"dropped\":%llu,"
          "\"exact\":%s,\"runs\":[",
          t, (unsigned long long)lv->events, rate, lag, (unsigned long long)lv->dropped,
          lv->dropped ? "false" : "true");
  for (int i = 0; i < lv->nruns; i++) {
    const bh_replay_summary_t *s = &lv->sums[i];
    fprintf(f, "%s{\"strategy\":", i ? "," : "");
    bh__json_str(f, lv->specs[i].label);
    fprintf(f,
            ",\"returned_bytes\":%llu,\"reported_bytes\":%llu,\"resident_bytes\":%llu,"
            "\"live_bytes\":%llu,\"madvise_calls\":%llu,\"refaults\":%llu,\"free_order_error\":",
            (unsigned long long)s->returned_bytes, (unsigned long long)s->reported_bytes,
            (unsigned long long)s->rss_final_bytes, (unsigned long long)s->live_final_bytes,
            (unsigned long long)s->madvise_calls, (unsigned long long)s->refaults);
    if (s->fidelity.present)
      fprintf(f, "%.6f}", s->fidelity.free_order_error);
    else
      fprintf(f, "null}");
  }
  fprintf(f, "],\"fidelity\":");
  const bh_replay_fidelity_t *fi = &lv->sums[0].fidelity;
  uint64_t machine[BH_ORDER_LIMIT + 1], model[BH_ORDER_LIMIT + 1];
  unsigned n = free_by_order(fi, machine, model);
  if (!n) {
    fprintf(f, "null}\n");
  } else {
    fprintf(f, "{\"free_order_error\":%.6f", fi->free_order_error);
    json_u64s(f, "machine_free_pages", machine, n);
    json_u64s(f, "model_free_pages", model, n);
    fprintf(f, "}}\n");
  }
  fflush(f);
}

/* The table: one row per strategy, then free memory by order, machine against model. */
static void print_table(FILE *f, const live_t *lv, double t, double rate, double lag, bool final) {
  fprintf(f, "buddyhint live%s: %.1f s, %llu events (%.0f/s), %.2f s behind, %llu dropped%s\n",
          final ? " (final)" : "", t, (unsigned long long)lv->events, rate, lag,
          (unsigned long long)lv->dropped,
          lv->dropped ? " -- NOT EXACT: the ring buffers lost events, the models missed them" : "");
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s\n", "strategy", "resident", "live", "reported",
          "returned", "madvises", "refaults", "fidelity");
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s\n", "", "MiB", "MiB", "MiB", "MiB", "calls",
          "pages", "error");
  for (int i = 0; i < lv->nruns; i++) {
    const bh_replay_summary_t *s = &lv->sums[i];
    fprintf(f, "%-21s %10.1f %10.1f %10.1f %10.1f %9llu %9llu", lv->specs[i].label,
            mib(s->rss_final_bytes), mib(s->live_final_bytes), mib(s->reported_bytes),
            mib(s->returned_bytes), (unsigned long long)s->madvise_calls,
            (unsigned long long)s->refaults);
    if (s->fidelity.present)
      fprintf(f, " %7.1f%%\n", 100.0 * s->fidelity.free_order_error);
    else
      fprintf(f, " %8s\n", "-");
  }
  uint64_t machine[BH_ORDER_LIMIT + 1], model[BH_ORDER_LIMIT + 1];
  unsigned n = free_by_order(&lv->sums[0].fidelity, machine, model);
  if (!n)
    return;
  fprintf(f, "\nfree MiB by order (kernel's /proc/buddyinfo against the %s model)\n",
          lv->specs[0].label);
  fprintf(f, "%-8s", "order");
  for (unsigned o = 0; o < n; o++)
    fprintf(f, " %7u", o);
  fprintf(f, "\n%-8s", "kernel");
  for (unsigned o = 0; o < n; o++)
    fprintf(f, " %7.1f", mib(machine[o] << BH_PAGE_SHIFT));
  fprintf(f, "\n%-8s", "model");
  for (unsigned o = 0; o < n; o++)
    fprintf(f, " %7.1f", mib(model[o] << BH_PAGE_SHIFT));
  fprintf(f, "\n");
}

/* The figures now (with the counts now), shown as the output wants them. */
static void show(live_t *lv, const bh_machine_t *now, bool final) {
  double t = mono_s(), el = t - lv->then;
  double rate = el > 0 ? (double)(lv->events - lv->events_then) / el : 0;
  /* how far the models' figures are behind the machine: the time since the moment up to
   * which they hold every event (what reading and playing the last batch took) */
  uint64_t tn = mono_ns();
  double lag = lv->played_to && tn > lv->played_to ? (double)(tn - lv->played_to) / 1e9 : 0;
  if (final && t - lv->t0 > 0)
    rate = (double)lv->events / (t - lv->t0);
  for (int i = 0; !final && i < lv->nruns; i++)
    bh__replay_feed_figures(lv->feeds[i], now, &lv->sums[i]);
  lv->then = t;
  lv->events_then = lv->events;
  if (lv->json && !final)
    emit_json(lv, t - lv->t0, rate, lag);
  if (lv->screen && !final) {
    fputs("\033[H\033[2J", stdout);
    print_table(stdout, lv, t - lv->t0, rate, lag, false);
    fflush(stdout);
  }
  if (final)
    print_table(lv->json == stdout || lv->trace_stdout ? stderr : stdout, lv, t - lv->t0, rate, lag,
                true);
}

/* Every model, from a copy of m (the description round trip a recorded trace's replay reads). */
static int open_feeds(live_t *lv, const bh_machine_t *m, uint64_t t0_ns) {
  char *text = NULL;
  size_t len = 0;
  if (bh_machine_format(m, &text, &len))
    return fprintf(stderr, "buddyhint live: out of memory\n"), -1;
  int rc = 0;
  for (int i = 0; !rc && i < lv->nruns; i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = "live";
    cfg.arena.backing = BH_BACKING_SIM;
    cfg.hint.report = BH_REPORT_NONE;
    cfg.hint.strategy = lv->specs[i].name;
    cfg.hint.opts = lv->specs[i].opts;
    cfg.hint.nopts = lv->specs[i].nopts;
    bh_machine_t *copy = NULL;
    char err[512] = "";
    int e = bh_machine_parse(text, len, &copy, err, sizeof(err));
    lv->cfgs[i] = cfg;
    if (!e)
      e = bh__replay_feed_open(&cfg, copy, t0_ns, &lv->feeds[i], err, sizeof(err));
    if (e) {
      fprintf(stderr, "buddyhint live: cannot start the model under %s: %s\n", lv->specs[i].label,
              err[0] ? err : bh_strerror(e));
      rc = -1;
    }
  }
  free(text);
  return rc;
}

#endif

/* Ends each model at the machine's state now: its summary in lv->sums.  ok, or false after
 * the first model that failed (said on standard error) if ok. */
static bool close_models(live_t *lv, const bh_machine_t *now, bool ok) {
  for (int k = 0; k < lv->nruns; k++) {
    bh_replay_summary_t s;
    char err[256] = "";
    if (lv->feeds[k] && bh__replay_feed_close(lv->feeds[k], now, &s, err, sizeof(err)) && ok) {
      fprintf(stderr, "buddyhint live: the model under %s: %s\n", lv->specs[k].label, err);
      ok = false;
    }
    if (lv->feeds[k]) {
      lv->sums[k] = s;
      snprintf(lv->sums[k].strategy, sizeof(lv->sums[k].strategy), "%s", lv->specs[k].label);
    }
    lv->feeds[k] = NULL;
  }
  return ok;
}

/* The command line of live. */
typedef struct live_args {
  const char *list, *json_path, *out, *summary_path;
  bool as_root;
  char **cmd; /* the command to run, or NULL */
  uint64_t interval_ns, duration_ns;
  unsigned buffer_kb;
} live_args_t;

/* Parses the options (and where the command starts): -1 for --help (usage printed), else
 * BH_EXIT_OK or the usage error's exit code (its message printed). */
static int parse_args(int argc, char **argv, live_args_t *la) {
  const char *interval_s = NULL, *duration_s = NULL, *kbs = NULL;
  *la = (live_args_t){.interval_ns = 1000000000ull, .buffer_kb = DEFAULT_BUFFER_KB};
  int i = 1, r;
  while (i < argc) {
    const char *a = argv[i];
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return -1;
    }
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "strategies", &la->list)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "interval", &interval_s)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "duration", &duration_s)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "json", &la->json_path)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "output", &la->out)) != 0 ||
        (r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &la->out)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "buffer-kb", &kbs)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "summary", &la->summary_path)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--as-root")) {
      la->as_root = true;
      i++;
    } else if (a[0] == '-') {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else {
      break; /* the command starts here */
    }
  }
  la->cmd = i < argc ? argv + i : NULL;
  if (interval_s && (bh_cli_parse_seconds(interval_s, &la->interval_ns) ||
                     la->interval_ns < 10000000ull || la->interval_ns > 86400ull * 1000000000ull))
    return bh_cli_usage_error(VERB, "--interval wants 0.01 to 86400 seconds, not '%s'", interval_s);
  if (duration_s && (bh_cli_parse_seconds(duration_s, &la->duration_ns) || !la->duration_ns))
    return bh_cli_usage_error(VERB, "--duration wants a number of seconds above 0, not '%s'",
                              duration_s);
  int rc;
  if (kbs && (rc = bh_cli_parse_buffer_kb(VERB, kbs, &la->buffer_kb)) != 0)
    return rc;
  if (la->out && la->json_path && !strcmp(la->out, "-") && !strcmp(la->json_path, "-"))
    return bh_cli_usage_error(VERB, "-o - and --json - cannot both be standard output");
  return BH_EXIT_OK;
}

/*
 * Follows the kernel until CMD exits, the duration ends, a stop signal comes or an output
 * cannot be written: every round the events up to this moment are played, and every interval
 * the machine's counts of that moment are read and a line or screen shown.  0, or -1 when the
 * events could not be kept or played.
 */
static int follow(live_t *lv, bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd, pid_t *pid,
                  int *status, bh_machine_t **now, uint64_t interval_ns, uint64_t duration_ns) {
  double next_show = lv->t0 + (double)interval_ns / 1e9;
  double end = duration_ns ? lv->t0 + (double)duration_ns / 1e9 : 0;
  bool forwarded = false;
  for (;;) {
    bool done = false;
    if (*pid > 0) {
      pid_t w = waitpid(*pid, status, WNOHANG);
      if (w == *pid) {
        *pid = -1;
        done = true;
      }
    }
    int sig = bh_cli_got_signal;
    if (sig) {
      if (*pid > 0 && !forwarded && sig != SIGINT && sig != SIGQUIT)
        kill(*pid, sig); /* ^C and ^\ reach the command from the terminal */
      forwarded = true;
      done = true;
    }
    if ((lv->json && ferror(lv->json)) || lv->werr)
      done = true; /* an output that cannot be written (its reader is gone) */
    double t = mono_s();
    if (end && t >= end)
      done = true;
    if (done)
      break;
    bool due = t >= next_show;
    /* the counts of this moment first, then every event before it */
    uint64_t watermark = mono_ns();
    if (due) {
      bh_machine_free(*now);
      *now = read_now();
    }
    bh_cli_live_reader_pull(tr, rd, false, watermark);
    size_t n = bh_cli_live_reader_ready(rd, watermark);
    if (rd->err || play(lv, rd->ready, n))
      return -1;
    for (int k = 0; k < lv->nruns; k++)
      bh__replay_feed_advance(lv->feeds[k], watermark);
    lv->played_to = watermark;
    if (due) {
      lv->dropped = bh_cli_live_reader_dropped(tr, rd, NULL, 0, NULL);
      show(lv, *now, false);
      for (double shown = mono_s(); next_show <= shown;)
        next_show += (double)interval_ns / 1e9;
    }
    double wait = next_show - mono_s();
    if (end && end - mono_s() < wait)
      wait = end - mono_s();
    int ms = wait < 0 ? 0 : wait * 1000 < POLL_MS ? (int)(wait * 1000) : POLL_MS;
    poll(NULL, 0, ms); /* a signal ends it early */
  }
  return 0;
}

int cmd_live(int argc, char **argv) {
  live_args_t la;
  int rc = parse_args(argc, argv, &la);
  if (rc)
    return rc < 0 ? BH_EXIT_OK : rc;
  const char *list = la.list, *json_path = la.json_path, *out = la.out,
             *summary_path = la.summary_path;
  bool as_root = la.as_root;
  char **cmd = la.cmd;
  uint64_t interval_ns = la.interval_ns, duration_ns = la.duration_ns;
  unsigned buffer_kb = la.buffer_kb;
  int format = 0, compression = 0;
  if (out && (rc = bh_cli_output_kind(VERB, out, NULL, NULL, &format, &compression)) != 0)
    return rc;
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  c.cfg.arena.backing = BH_BACKING_SIM;
  char *copy = strdup(list ? list : DEFAULT_STRATEGIES);
  live_t lv = {0};
  lv.nruns = copy ? parse_strategies(copy, lv.specs, &c) : -1;
  if (lv.nruns < 0) {
    free(copy);
    bh_cli_replay_free(&c);
    return BH_EXIT_USAGE;
  }
#if !BH_HAVE_TRACEFS
  (void)cmd, (void)as_root, (void)interval_ns, (void)duration_ns, (void)buffer_kb;
  free(copy);
  bh_cli_replay_free(&c);
  fprintf(stderr, "buddyhint live: this buddyhint was built without libtracefs: install "
                  "libtracefs-dev and libtraceevent-dev (make deps) and rebuild\n");
  return BH_EXIT_FAIL;
#else
  rc = BH_EXIT_FAIL;
  if (geteuid() != 0) {
    fprintf(stderr,
            "buddyhint live: live needs root: the kernel's tracepoints are only reachable "
            "through tracefs as root, and its free map through /proc/kpageflags (euid %d)\n",
            (int)geteuid());
    goto free_args;
  }
  bh_cli_record_user_t user = {.drop = false};
  if (cmd && !as_root && bh_cli_record_user(&user)) {
    fprintf(stderr,
            "buddyhint live: SUDO_UID %s has no group (SUDO_GID is not set either): use "
            "--as-root to run the command as root\n",
            getenv("SUDO_UID"));
    goto free_args;
  }
  lv.sums = calloc((size_t)lv.nruns, sizeof(*lv.sums));
  if (!lv.sums)
    goto free_args;

  struct sigaction old[4];
  bh_cli_out_t *jo = NULL, *to = NULL, *so = NULL;
  bh_cli_tracer_t tr;
  bh_cli_live_reader_t rd = {0};
  bh_machine_t *machine = NULL, *now = NULL;
  pid_t pid = -1;
  int status = 0;
  bool ok = false, signals_restored = false, crew_started = false;
  bh_cli_catch_stop_signals(old);
  /* a reader of the JSON lines or the trace that goes away (| head) ends the run as a signal
   * would, with the instance removed, rather than killing us with SIGPIPE */
  struct sigaction ign = {.sa_handler = SIG_IGN}, oldpipe;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &oldpipe);
  bool trace_stdout = out && !strcmp(out, "-");
  /* standard output that is not a terminal carries the JSON lines, unless it carries the trace */
  bool to_stdout_json = !json_path && !isatty(STDOUT_FILENO) && !trace_stdout;
  if (json_path && (rc = bh_cli_out_open(VERB, json_path, &jo)) != 0)
    goto restore_signals;
  rc = BH_EXIT_FAIL;
  lv.json = jo ? bh_cli_out_stream(jo) : to_stdout_json ? stdout : NULL;
  if (jo && !lv.json)
    goto abort_outputs;
  lv.screen = !lv.json && isatty(STDOUT_FILENO) && !trace_stdout;
  lv.trace_stdout = trace_stdout;
  if (summary_path && (rc = bh_cli_out_open(VERB, summary_path, &so)) != 0)
    goto abort_outputs;
  rc = BH_EXIT_FAIL;
  if (out) {
    if ((rc = bh_cli_out_open(VERB, out, &to)) != 0)
      goto abort_outputs;
    rc = BH_EXIT_FAIL;
    if (bh_cli_out_writer(to, format, compression, 2, NULL, &lv.w)) {
      fprintf(stderr, "buddyhint live: %s\n", bh_trace_error(NULL));
      goto abort_outputs;
    }
  }
  if (bh_cli_tracer_open(&tr, VERB, false, false))
    goto abort_outputs;
  /* the mono clock: every cpu's events on CLOCK_MONOTONIC, which this thread reads too */
  if (bh_cli_tracer_formats(&tr) || bh_cli_tracer_setup(&tr, buffer_kb, "mono") ||
      bh_cli_live_reader_open(&tr, &rd))
    goto close_tracer;
  if (bh_cli_got_signal)
    goto stopped;
  if (tracefs_trace_on(tr.inst)) {
    fprintf(stderr, "buddyhint live: cannot turn tracing on in %s\n", tr.dir);
    goto close_tracer;
  }
  fprintf(stderr,
          "buddyhint live: tracing kmem page events system-wide in %s (%u KiB per cpu); "
          "reading the free map\n",
          tr.dir, buffer_kb);
  uint64_t before = mono_ns();
  if (bh_cli_rec_snapshot(VERB, &machine, BH_SNAP_START, tr.dir))
    goto close_tracer;
  const bh_snapshot_t *snap = bh_machine_snapshot(machine, BH_SNAP_START);
  if (!snap || !snap->have_freemap) {
    fprintf(stderr, "buddyhint live: no free map from /proc/kpageflags: the models need the "
                    "machine's free blocks to start from\n");
    goto close_tracer;
  }
  uint64_t hi;
  bh_cli_rec_window(machine, &rd.lo, &hi);
  if (!rd.lo) /* the trace clock's time of the reading unknown: the events from before it */
    rd.lo = before;
  if (lv.w && bh_cli_rec_describe(VERB, machine, lv.w))
    goto close_tracer;
  if (open_feeds(&lv, machine, rd.lo + 1))
    goto close_tracer;
  crew_started = true;
  if (crew_start(&lv))
    fprintf(stderr, "buddyhint live: warning: cannot start a thread per model: they play one "
                    "after another\n");
  if (bh_cli_got_signal)
    goto stopped;
  lv.t0 = lv.then = mono_s();
  if (cmd) {
    pid = bh_cli_start_command(cmd, lv.json == stdout || trace_stdout, &user);
    if (pid < 0) {
      fprintf(stderr, "buddyhint live: cannot run '%s': %s\n", cmd[0], strerror(errno));
      goto close_tracer;
    }
  }
  fprintf(stderr, "buddyhint live: %d models started from the free map%s%s\n", lv.nruns,
          cmd ? "; running " : "", cmd ? cmd[0] : "");
  if (follow(&lv, &tr, &rd, &pid, &status, &now, interval_ns, duration_ns))
    goto failed;
  /* the end: the counts of this moment, tracing off, and every event before the moment (the
   * rest of the ring buffers): the last line and the final table are the machine then.  The
   * events between the moment and tracing off are left out. */
  uint64_t off_ns = mono_ns();
  bh_machine_free(now);
  now = read_now();
  tracefs_trace_off(tr.inst);
  bh_cli_live_reader_pull(&tr, &rd, true, UINT64_MAX);
  size_t n = bh_cli_live_reader_ready(&rd, off_ns);
  if (rd.err || play(&lv, rd.ready, n))
    goto failed;
  for (int k = 0; k < lv.nruns; k++)
    bh__replay_feed_advance(lv.feeds[k], off_ns);
  lv.played_to = off_ns;
  lv.dropped = bh_cli_live_reader_dropped(&tr, &rd, NULL, 0, NULL);
  show(&lv, now, false);
  lv.dropped = bh_cli_live_reader_dropped(&tr, &rd, lv.w, lv.last_ns, &lv.werr);
  for (int k = 0; k < rd.ncpus; k++)
    rd.after += rd.cpus[k].n - rd.cpus[k].head;
  ok = true;
  goto close_tracer;
failed:
  if (rd.err)
    fprintf(stderr, "buddyhint live: out of memory for the events read\n");
  goto close_tracer;
stopped:
  fprintf(stderr, "buddyhint live: stopped by signal %d (%s) before it started\n",
          (int)bh_cli_got_signal, strsignal(bh_cli_got_signal));
  rc = 128 + bh_cli_got_signal;
close_tracer:
  if (pid > 0) { /* an error while CMD runs: it is ended, not left behind */
    kill(pid, SIGTERM);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  bh_cli_restore_stop_signals(old);
  signals_restored = true;
  if (crew_started)
    crew_stop(&lv);
  ok = close_models(&lv, now, ok);
  if (ok && rd.cut)
    fprintf(stderr,
            "buddyhint live: %llu events from before the free map was read were left out (it "
            "holds them)\n",
            (unsigned long long)rd.cut);
  if (ok && rd.after)
    fprintf(stderr,
            "buddyhint live: %llu events between the end's counts and tracing off were left "
            "out\n",
            (unsigned long long)rd.after);
  if (ok && rd.malformed)
    fprintf(stderr, "buddyhint live: warning: %llu malformed records skipped\n",
            (unsigned long long)rd.malformed);
  if (ok)
    show(&lv, now, true);
  if (ok && lv.dropped)
    fprintf(stderr,
            "buddyhint live: warning: the ring buffers lost %llu events: the figures are not "
            "exact; try a larger --buffer-kb or fewer strategies\n",
            (unsigned long long)lv.dropped);
  bh_cli_live_reader_free(&rd);
  bh_machine_free(machine);
  bh_machine_free(now);
  bh_cli_tracer_close(&tr);
  if (ok) {
    rc = BH_EXIT_OK;
    if (lv.w && (lv.werr || bh_trace_writer_close(lv.w))) {
      fprintf(stderr, "buddyhint live: %s: %s\n", out,
              lv.werr ? bh_strerror(lv.werr) : bh_trace_error(NULL));
      lv.w = NULL;
      rc = BH_EXIT_FAIL;
    } else {
      lv.w = NULL;
    }
    if (rc == BH_EXIT_OK && so) {
      bh_cli_run_info_t infos[MAX_RUNS];
      for (int k = 0; k < lv.nruns; k++)
        infos[k] = (bh_cli_run_info_t){.cfg = &lv.cfgs[k], .trace = "live"};
      FILE *f = bh_cli_out_stream(so);
      if (!f || bh_cli_runs_json(f, lv.sums, infos, lv.nruns))
        rc = BH_EXIT_FAIL;
      else if ((rc = bh_cli_out_close(so)) == BH_EXIT_OK)
        so = NULL;
    }
    if (rc == BH_EXIT_OK && to && (rc = bh_cli_out_close(to)) == BH_EXIT_OK)
      to = NULL;
    if (rc == BH_EXIT_OK && jo && (rc = bh_cli_out_close(jo)) == BH_EXIT_OK)
      jo = NULL;
  }
abort_outputs:
  bh_trace_writer_abort(lv.w);
  bh_cli_out_abort(to);
  bh_cli_out_abort(jo);
  bh_cli_out_abort(so);
restore_signals:
  if (!signals_restored)
    bh_cli_restore_stop_signals(old);
  sigaction(SIGPIPE, &oldpipe, NULL);
free_args:
  free(lv.sums);
  free(copy);
  bh_cli_replay_free(&c);
  return rc;
#endif
}
