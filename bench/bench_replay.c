/*
 * Replay speed: events per second of a whole `bh_replay_run` in sim backing, one thread, from
 * the native binary format and from ftrace text (the kernel's own mm_page_alloc/mm_page_free
 * lines), each read once (--memory and --cpus given) and twice (the arena sized by a first
 * pass, the default of `buddyhint replay`).
 *
 * The trace is synthetic and generated here: a seeded mix of order-0..3 allocations and frees
 * over up to 16384 live blocks on 4 CPUs, the shape of a busy kernel's page traffic.
 * Targets (issue "Traces and the buddyhint command"): >= 3 M events/s from ftrace text and
 * >= 20 M events/s from native binary, judged on the median; the best repetition is shown
 * too, as the run least disturbed by the rest of a shared machine.  Results:
 * results/replay.csv and results/replay.json;
 * --keep DIR leaves the traces in DIR (trace.bht, trace.txt), to count instructions on them.
 */
#include "bench_util.h"

#include <buddyhint/replay.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct opts {
  const char *out;
  const char *keep; /* directory to write the traces to and leave them in (for callgrind) */
  int reps;
  long events;
};

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Writes the same events as native binary (through the library) and as ftrace text. */
static int make_traces(const char *bin, const char *ftrace, long n) {
  bh_trace_writer_t *w;
  if (bh_trace_writer_open(bin, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, &w))
    return -1;
  FILE *f = fopen(ftrace, "w");
  if (!f)
    return -1;
  fprintf(f, "# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n");
  enum { LIVE = 16384 };
  static uint64_t live[LIVE];
  static uint8_t live_order[LIVE];
  uint64_t seed = 0x9e3779b97f4a7c15ull, next = 0x100000, t = 1000000000ull;
  int nlive = 0;
  for (long i = 0; i < n; i++) {
    uint64_t r = rng(&seed);
    bh_event_t ev = {0};
    ev.time_ns = (t += 200 + r % 300);
    ev.cpu = (int)(r >> 40) % 4;
    ev.pid = 1000 + ev.cpu;
    if (nlive < LIVE && (nlive == 0 || (r >> 8) % 2)) {
      unsigned order = (r >> 16) % 16 == 0 ? (unsigned)((r >> 20) % 4) : 0;
      next = (next + (1u << order) - 1) & ~((uint64_t)(1u << order) - 1);
      ev.op = BH_EV_ALLOC;
      ev.order = (uint8_t)order;
      ev.pfn = next;
      next += 1u << order;
      ev.gfp = BH_GFP_USER_MOVABLE;
      ev.migratetype = BH_MT_MOVABLE;
      live[nlive] = ev.pfn;
      live_order[nlive++] = (uint8_t)order;
    } else {
      int k = (int)((r >> 4) % (uint64_t)nlive);
      ev.op = BH_EV_FREE;
      ev.pfn = live[k];
      ev.order = live_order[k];
      live[k] = live[--nlive];
      live_order[k] = live_order[nlive];
    }
    ev.migratetype = ev.op == BH_EV_ALLOC ? BH_MT_MOVABLE : -1;
    if (bh_trace_write(w, &ev))
      return -1;
    if (ev.op == BH_EV_ALLOC)
      fprintf(f,
              "          bench-%d    [%03d] ..... %5lu.%06lu: mm_page_alloc: page=%016lx "
              "pfn=0x%lx order=%u migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n",
              ev.pid, ev.cpu, (unsigned long)(ev.time_ns / 1000000000),
              (unsigned long)(ev.time_ns % 1000000000 / 1000),
              (unsigned long)(0xffffea0000000000ull + ev.pfn * 64), (unsigned long)ev.pfn,
              ev.order);
    else
      fprintf(f,
              "          bench-%d    [%03d] ..... %5lu.%06lu: mm_page_free: page=%016lx "
              "pfn=0x%lx order=%u\n",
              ev.pid, ev.cpu, (unsigned long)(ev.time_ns / 1000000000),
              (unsigned long)(ev.time_ns % 1000000000 / 1000),
              (unsigned long)(0xffffea0000000000ull + ev.pfn * 64), (unsigned long)ev.pfn,
              ev.order);
  }
  return (bh_trace_writer_close(w) || fclose(f)) ? -1 : 0;
}

/* One replay; returns events per second of wall time, or -1. */
static double replay_once(const char *trace, bool one_pass, uint64_t *events) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = trace;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.idle_ns = 0;
  cfg.sample_ns = 0;
  if (one_pass) {
    cfg.memory_bytes = 256ull << 20;
    cfg.arena.nr_cpus = 4;
  }
  bh_replay_summary_t s;
  char err[512];
  uint64_t t0 = bu_now_ns();
  if (bh_replay_run(&cfg, &s, err, sizeof(err))) {
    fprintf(stderr, "bench_replay: %s\n", err);
    return -1;
  }
  double secs = (double)(bu_now_ns() - t0) / 1e9;
  *events = s.events;
  return (double)s.events / secs;
}

struct row {
  const char *name, *format;
  bool one_pass;
  double target;
  bu_stats_t st;
};

static void usage(void) {
  fprintf(stderr,
          "usage: bench_replay [--quick] [--reps N] [--events N] [--out DIR] [--keep DIR]\n");
}

int main(int argc, char **argv) {
  struct opts o = {"results", NULL, 7, 4000000};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      o.reps = 3;
      o.events = 1000000;
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      o.reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
      o.events = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      o.out = argv[++i];
    } else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
      o.keep = argv[++i];
    } else {
      usage();
      return 2;
    }
  }
  if (o.reps < 1 || o.events < 1000) {
    usage();
    return 2;
  }
  char tmp[] = "/tmp/bh-bench-replay-XXXXXX", bin[4096], ftr[4096];
  const char *dir = o.keep ? o.keep : mkdtemp(tmp);
  if (!dir || (o.keep && bu_mkdir_p(o.keep)))
    return 1;
  snprintf(bin, sizeof(bin), "%s/trace.bht", dir);
  snprintf(ftr, sizeof(ftr), "%s/trace.txt", dir);
  if (make_traces(bin, ftr, o.events)) {
    fprintf(stderr, "bench_replay: cannot write the traces in %s\n", dir);
    return 1;
  }
  struct row rows[] = {
      {"binary_one_pass", "native-binary", true, 20e6, {0}},
      {"binary_two_pass", "native-binary", false, 0, {0}},
      {"ftrace_one_pass", "ftrace", true, 3e6, {0}},
      {"ftrace_two_pass", "ftrace", false, 0, {0}},
  };
  enum { NROWS = sizeof(rows) / sizeof(rows[0]) };
  double *v = calloc((size_t)o.reps * NROWS, sizeof(double));
  uint64_t events = 0;
  for (int rep = 0; rep < o.reps; rep++)
    for (int k = 0; k < NROWS; k++) {
      int j = rep % 2 ? NROWS - 1 - k : k; /* alternate the order so drift hits every row */
      const char *trace = !strcmp(rows[j].format, "ftrace") ? ftr : bin;
      v[j * o.reps + rep] = replay_once(trace, rows[j].one_pass, &events);
      if (v[j * o.reps + rep] < 0)
        return 1;
    }
  bu_machine_t m;
  bu_machine_info(&m);
  FILE *csv = bu_open_out(o.out, "replay.csv"), *json = bu_open_out(o.out, "replay.json");
  if (!csv || !json)
    return 1;
  bu_csv_machine(csv, &m, "bench_replay", o.reps == 3 ? "--quick" : "");
  fprintf(csv,
          "case,format,passes,events,reps,median_eps,p10_eps,p90_eps,best_eps,target_eps,result\n");
  fprintf(json, "{\n");
  bu_json_machine(json, &m, 2);
  fprintf(json, ",\n  \"events\": %lu,\n  \"cases\": [\n", (unsigned long)events);
  printf("replay speed, sim backing, one thread, %lu events, %d reps (events/s)\n",
         (unsigned long)events, o.reps);
  printf("%-18s %-14s %12s %12s %12s %12s %12s\n", "case", "format", "median", "p10", "p90", "best",
         "target");
  for (int j = 0; j < NROWS; j++) {
    struct row *r = &rows[j];
    bu_stats(&v[j * o.reps], o.reps, &r->st);
    const char *res = r->target ? (r->st.median >= r->target ? "PASS" : "FAIL") : "info";
    printf("%-18s %-14s %12.0f %12.0f %12.0f %12.0f %12.0f %s\n", r->name, r->format, r->st.median,
           r->st.p10, r->st.p90, r->st.max, r->target, res);
    fprintf(csv, "%s,%s,%d,%lu,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%s\n", r->name, r->format,
            r->one_pass ? 1 : 2, (unsigned long)events, o.reps, r->st.median, r->st.p10, r->st.p90,
            r->st.max, r->target, res);
    fprintf(json,
            "    {\"case\": \"%s\", \"format\": \"%s\", \"passes\": %d, \"median_eps\": %.0f, "
            "\"p10_eps\": %.0f, \"p90_eps\": %.0f, \"best_eps\": %.0f, \"target_eps\": %.0f, "
            "\"result\": \"%s\"}%s\n",
            r->name, r->format, r->one_pass ? 1 : 2, r->st.median, r->st.p10, r->st.p90, r->st.max,
            r->target, res, j + 1 < NROWS ? "," : "");
  }
  fprintf(json, "  ]\n}\n");
  fclose(csv);
  fclose(json);
  if (!o.keep) {
    unlink(bin);
    unlink(ftr);
    rmdir(dir);
  }
  free(v);
  return 0;
}
