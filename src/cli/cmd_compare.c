/* buddyhint compare: the same trace once per strategy, one table. */
#include "cli/baseline.h"
#include "cli/compare_gate.h"
#include "cli/replay_opts.h"
#include "cli/run_json.h"

#include "replay/replay_shared.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RUNS 16
#define MAX_JOBS 4096 /* -j; more than MAX_RUNS is as many as there are runs */

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint compare TRACE... [--strategies LIST] [--baseline FILE] [OPTIONS]\n"
          "       buddyhint compare --runs FILE --baseline FILE [--tolerance ...] [--junit ...]\n\n"
          "Replays each TRACE once per strategy (default none,bitmap,bubble) with the same\n"
          "configuration and prints one table per trace; --json FILE writes\n"
          "{\"runs\": [...]}, each run as replay --json writes it (with --json - standard\n"
          "output holds the JSON only and the table goes to standard error), the runs of\n"
          "every TRACE; --csv and --timeline take one TRACE.\n"
          "Strategy options are given as --opt NAME.KEY=VALUE, e.g. --opt bubble.delay=1s,\n"
          "or in the list as NAME:KEY=VALUE[:KEY=VALUE...], which also lets one strategy\n"
          "run more than once: --strategies none,bubble,bubble:order=3.  jemalloc takes\n"
          "jemalloc[:decay=MS][:muzzy=MS][:bg=0|1].\n\n"
          "options:\n"
          "  --strategies LIST     comma-separated strategy names (with options, see above)\n"
          "  --csv FILE            one CSV row per run, nested fields as dotted columns\n"
          "  --timeline FILE       every run's samples over virtual time as one CSV, the\n"
          "                        run's label in its first column, \"run\"\n"
          "  -j, --jobs N          runs at a time, each in a process of its own (default:\n"
          "                        the CPUs online; 1 runs them one after another here).\n"
          "                        The trace is read once for all of them; the results are\n"
          "                        the same whatever N, but for wall_seconds, cpu_seconds\n"
          "                        and minflt\n%s\n%s\n%s\n%s",
          bh_cli_gate_help, bh_cli_replay_help, bh_cli_table_help, bh_cli_timeline_help);
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* The fidelity columns: the share of free memory in the wrong order at the end of the trace,
 * and the error in free memory of pageblock order and above ("-" without an end snapshot). */
static void fidelity_cols(FILE *f, const bh_replay_summary_t *s) {
  if (!s->fidelity.present) {
    fprintf(f, " %8s %8s", "-", "-");
    return;
  }
  fprintf(f, " %7.1f%% %+7.1f%%", 100.0 * s->fidelity.free_order_error,
          100.0 * s->fidelity.high_order_error);
}

static void table(FILE *f, const bh_replay_summary_t *runs, int n) {
  fprintf(f, "%-21s %10s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s %8s %8s\n", "strategy",
          "rss_peak", "rss_final", "live_end", "reported", "returned", "madvises", "refaults",
          "failed", "wall_s", "cpu_s", "check", "fidelity", "high_ord");
  fprintf(f, "%-21s %10s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s %8s %8s\n", "", "MiB", "MiB",
          "MiB", "MiB", "MiB", "calls", "pages", "allocs", "", "", "errors", "error", "error");
  for (int i = 0; i < n; i++) {
    const bh_replay_summary_t *s = &runs[i];
    fprintf(f, "%-21s %10.1f %10.1f %10.1f %10.1f %10.1f %9lu %9lu %8lu %8.2f %8.2f %6ld",
            s->strategy, mib(s->rss_peak_bytes), mib(s->rss_final_bytes), mib(s->live_final_bytes),
            mib(s->reported_bytes), mib(s->returned_bytes), (unsigned long)s->madvise_calls,
            (unsigned long)s->refaults, (unsigned long)s->alloc_failures, s->wall_seconds,
            s->cpu_seconds, s->check_violations);
    fidelity_cols(f, s);
    fprintf(f, "\n");
  }
}

/*
 * One entry of --strategies: "NAME[:KEY=VALUE...]".  The strategy gets the options
 * --opt NAME.KEY=VALUE first, then those of the entry, so an entry's own options win (a
 * strategy's parser takes the last value of a key).  The entry is split in place.
 */
struct run_spec {
  const char *label, *name;
  bh_opt_t opts[BH_CLI_MAX_OPTS];
  size_t nopts;
};

static int spec_parse(const bh_cli_replay_t *c, char *entry, char *label, size_t labellen,
                      struct run_spec *sp) {
  snprintf(label, labellen, "%s", entry);
  sp->label = label;
  sp->nopts = 0;
  char *save = NULL, *name = entry[0] == ':' ? NULL : strtok_r(entry, ":", &save);
  if (!name)
    return bh_cli_usage_error("compare", "--strategies: empty name in '%s'", label);
  sp->name = name;
  size_t len = strlen(name);
  for (size_t i = 0; i < c->nopts; i++) {
    const char *k = c->opts[i].key, *dot = strchr(k, '.');
    if (dot && (size_t)(dot - k) == len && !strncmp(k, name, len))
      sp->opts[sp->nopts++] = (bh_opt_t){dot + 1, c->opts[i].value};
  }
  for (char *kv = strtok_r(NULL, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
      return bh_cli_usage_error("compare", "--strategies: '%s' in '%s' is not KEY=VALUE", kv,
                                label);
    if (sp->nopts == BH_CLI_MAX_OPTS)
      return bh_cli_usage_error("compare", "--strategies: too many options in '%s'", label);
    *eq = '\0';
    sp->opts[sp->nopts++] = (bh_opt_t){kv, eq + 1};
  }
  if (!bh_strategy_find(name))
    return bh_cli_usage_error("compare",
                              "--strategies: unknown strategy '%s' ('buddyhint info' "
                              "lists them)",
                              name);
  return 0;
}

/* A jemalloc entry, or a strategy with its options: checked as its replay would check it. */
static int spec_check(const bh_cli_replay_t *c, const struct run_spec *sp) {
  if (bh_cli_is_baseline(sp->name)) {
    char err[256];
    if (bh_cli_baseline_check(sp->name, err, sizeof(err)))
      return bh_cli_usage_error("compare", "--strategies: %s", err);
    return 0;
  }
  return bh_cli_check_strategy("compare", c, sp->label, sp->name, sp->opts, sp->nopts)
             ? BH_EXIT_USAGE
             : 0;
}

/* Every --opt NAME.KEY=VALUE names a strategy of the list (a typo would be dropped). */
static int opts_named(const bh_cli_replay_t *c, const struct run_spec *specs, int nspecs) {
  for (size_t k = 0; k < c->nopts; k++) {
    const char *key = c->opts[k].key, *dot = strchr(key, '.');
    bool found = false;
    for (int i = 0; i < nspecs && !found; i++)
      found = strlen(specs[i].name) == (size_t)(dot - key) &&
              !strncmp(specs[i].name, key, (size_t)(dot - key));
    if (!found)
      return bh_cli_usage_error("compare", "--opt %s=%s: no strategy '%.*s' in --strategies", key,
                                c->opts[k].value, (int)(dot - key), key);
  }
  return 0;
}

/* Splits --strategies at its commas (in place) and checks every entry before any replay. */
static int parse_list(const bh_cli_replay_t *c, char *list, struct run_spec *specs,
                      char (*labels)[64], int *nspecs) {
  const char *whole = list;
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", whole);
  *nspecs = 0;
  for (char *e = list, *comma; e; e = comma ? comma + 1 : NULL) {
    comma = strchr(e, ',');
    if (comma)
      *comma = '\0';
    if (!*e)
      return bh_cli_usage_error("compare", "--strategies: an empty entry in '%s'", copy);
    if (*nspecs == MAX_RUNS)
      return bh_cli_usage_error("compare", "at most %d strategies", MAX_RUNS);
    struct run_spec *sp = &specs[*nspecs];
    if (bh_cli_is_baseline(e))
      *sp = (struct run_spec){.label = e, .name = e};
    else if (spec_parse(c, e, labels[*nspecs], sizeof(labels[*nspecs]), sp))
      return BH_EXIT_USAGE;
    if (spec_check(c, sp))
      return BH_EXIT_USAGE;
    (*nspecs)++;
  }
  return opts_named(c, specs, *nspecs);
}

/* compare's own options and outputs */
struct compare_args {
  const char *list, *csv_path, *timeline_path;
  unsigned jobs;                /* -j: runs at a time (0: the CPUs online) */
  struct bh_cli_gate_args gate; /* --baseline and its gates */
  bh_cli_gate_t *g;             /* NULL without --baseline */
  const char **traces;          /* every TRACE (the first is also bh_cli_replay_args's) */
  int ntraces;
  FILE *json_all; /* --json of several traces: every trace's runs go to it */
  int json_count; /* the runs written to it */
};

/* The runs of a trace, planned against the baseline before any of them runs. */
static int plan_gate(bh_cli_gate_t *g, const char *trace, const char *sha,
                     const struct run_spec *specs, const bh_cli_run_info_t *infos, int n) {
  bh_cli_gate_run_t runs[MAX_RUNS];
  for (int i = 0; i < n; i++)
    runs[i] = (bh_cli_gate_run_t){specs[i].label, specs[i].name, &infos[i]};
  return bh_cli_gate_plan(g, trace, sha, runs, n);
}

/* Appends one run's timeline CSV (header and samples) to out, each line prefixed with the
 * run's label; the header only for the first run. */
static void timeline_append(FILE *out, const char *buf, size_t len, const char *label,
                            bool header) {
  bool quote = strpbrk(label, ",\"\n") != NULL;
  for (size_t i = 0, line = 0; i < len; line++) {
    const char *nl = memchr(buf + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - buf) + 1 : len;
    if (line == 0 && header)
      fprintf(out, "run,%.*s", (int)(end - i), buf + i);
    else if (line > 0) {
      if (quote) {
        fputc('"', out);
        for (const char *p = label; *p; p++)
          fprintf(out, *p == '"' ? "\"\"" : "%c", *p);
        fputc('"', out);
      } else {
        fputs(label, out);
      }
      fprintf(out, ",%.*s", (int)(end - i), buf + i);
    }
    i = end;
  }
}

/* One run's outcome.  A run in a process of its own writes it into memory shared with this
 * one (MAP_SHARED), where it is read when the process has ended. */
struct row {
  bool done; /* the run reported (e and, if 0, s) */
  int e;     /* 0, or the run's BH_E* error, described in err */
  char err[1024];
  bh_replay_summary_t s;
};

/* The first pass over the trace, once for every run but jemalloc's (NULL *sh if none). */
static int share_trace(const bh_cli_replay_t *c, const struct run_spec *specs, int nspecs,
                       const char *trace, bh__replay_shared_t **sh) {
  *sh = NULL;
  int own = 0;
  for (int i = 0; i < nspecs; i++)
    own += !bh_cli_is_baseline(specs[i].name);
  if (!own)
    return 0;
  if (c->cfg.progress)
    fprintf(stderr, "compare: reading %s\n", trace);
  bh_replay_config_t cfg = c->cfg;
  cfg.trace = trace;
  cfg.timeline = NULL;
  char err[1024];
  int e = bh__replay_share(&cfg, sh, err, sizeof(err));
  if (!e)
    return 0;
  fprintf(stderr, "buddyhint compare: %s\n", err[0] ? err : bh_strerror(e));
  return e == BH_ENOMEM || e == BH_ESYS ? BH_EXIT_FAIL : BH_EXIT_USAGE;
}

/* What every run of a compare shares: the runs' settings, the trace's first pass, the jobs. */
struct plan {
  const bh_cli_replay_t *c;
  const struct run_spec *specs;
  const bh_replay_config_t *cfgs; /* per run: its settings (without a timeline) */
  const char *trace;
  bh__replay_shared_t *sh; /* the kept events (share_trace), NULL if no run replays here */
  int share_rc;            /* share_trace's exit status: no run but jemalloc's if not 0 */
  int nspecs;
  unsigned jobs;
  bool timeline;
};

/* Runs row i, its timeline samples to tl (or NULL). */
static void run_row(const struct plan *p, int i, FILE *tl, struct row *out) {
  const struct run_spec *sp = &p->specs[i];
  bh_replay_config_t cfg = p->cfgs[i];
  cfg.timeline = tl;
  out->err[0] = '\0';
  int e = bh_cli_is_baseline(sp->name) /* jemalloc, in a process of its own */
              ? bh_cli_baseline_run(&cfg, sp->name, &out->s, out->err, sizeof(out->err))
              : bh__replay_run_shared(&cfg, p->sh, &out->s, out->err, sizeof(out->err));
  if (tl && fflush(tl) && !e) {
    snprintf(out->err, sizeof(out->err), "timeline: %s", strerror(errno));
    e = BH_ESYS;
  }
  if (!e && !bh_cli_is_baseline(sp->name)) /* jemalloc names its run with every setting */
    snprintf(out->s.strategy, sizeof(out->s.strategy), "%s", sp->label);
  out->e = e;
  out->done = true;
}

/* A row that could not run. */
static void row_fail(struct row *out, int e, const char *what) {
  snprintf(out->err, sizeof(out->err), "%s: %s", what, strerror(errno));
  out->e = e;
  out->done = true;
}

/* The rows one after another in this process (-j 1), each timeline in memory; the rows after
 * a failed one are not run. */
static void run_serial(struct plan *p, struct row *rows, char **tl_buf, size_t *tl_len) {
  if ((p->share_rc = share_trace(p->c, p->specs, p->nspecs, p->trace, &p->sh)))
    return;
  for (int i = 0; i < p->nspecs; i++) {
    FILE *tl = NULL;
    if (p->timeline && !(tl = open_memstream(&tl_buf[i], &tl_len[i]))) {
      row_fail(&rows[i], BH_ENOMEM, "timeline");
      return;
    }
    if (p->c->cfg.progress)
      fprintf(stderr, "compare: %s\n", p->specs[i].label);
    run_row(p, i, tl, &rows[i]);
    if (tl && fclose(tl) && !rows[i].e)
      row_fail(&rows[i], BH_ENOMEM, "timeline");
    if (rows[i].e || rows[i].s.check_violations)
      return;
  }
}

/* Starts row i in a process of its own; its timeline goes to a temporary file (*tl). */
static pid_t start_row(const struct plan *p, int i, struct row *rows, FILE **tl) {
  if (p->timeline && !(*tl = tmpfile())) {
    row_fail(&rows[i], BH_ESYS, "timeline: a temporary file");
    return -1;
  }
  if (p->c->cfg.progress)
    fprintf(stderr, "compare: %s\n", p->specs[i].label);
  fflush(stdout); /* nothing buffered is written twice */
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) { /* the run, and nothing else: no exit handlers, no buffers of the parent */
    run_row(p, i, *tl, &rows[i]);
    _exit(0);
  }
  if (pid < 0)
    row_fail(&rows[i], BH_ESYS, "cannot start a process for the run");
  return pid;
}

/* Row i's process ended with status st: its row is filled in, or says why not. */
static void end_row(struct row *r, int st) {
  if (WIFSIGNALED(st)) {
    snprintf(r->err, sizeof(r->err), "the run was killed by signal %d (%s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
    r->e = BH_ESYS;
  } else if (!r->done || WEXITSTATUS(st)) {
    snprintf(r->err, sizeof(r->err), "the run ended (status %d) without a result", WEXITSTATUS(st));
    r->e = BH_ESYS;
  }
  r->done = true;
}

/* Reads a row's timeline back from its temporary file: 0, or -1. */
static int timeline_read(FILE *tl, char **buf, size_t *len) {
  int fd = fileno(tl);
  off_t size = lseek(fd, 0, SEEK_END);
  *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
  *len = 0;
  while (*buf && *len < (size_t)size) {
    ssize_t n = pread(fd, *buf + *len, (size_t)size - *len, (off_t)*len);
    if (n == 0 || (n < 0 && errno != EINTR))
      break;
    *len += n > 0 ? (size_t)n : 0;
  }
  return *buf && *len == (size_t)size ? 0 : -1;
}

/*
 * The rows in processes of their own: jemalloc's first, beside the others and not counted in
 * p->jobs (most of such a run is its real-time idle), then the others p->jobs at a time, in
 * their order.  After a row that failed or found check violations, no row after it in the
 * list is started; those before it still run, so that the rows -j 1 would print are there.
 */
static void run_parallel(struct plan *p, struct row *rows, char **tl_buf, size_t *tl_len) {
  pid_t pid[MAX_RUNS] = {0};
  FILE *tl[MAX_RUNS] = {0};
  int order[MAX_RUNS], n = 0, pos = 0, running = 0, own = 0, stop_at = p->nspecs;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->nspecs; i++)
      if (bh_cli_is_baseline(p->specs[i].name) == !pass)
        order[n++] = i;
  for (;;) {
    while (pos < n && order[pos] >= stop_at)
      pos++;
    /* the trace is read here once the jemalloc runs, which read it themselves, are started */
    if (pos < n && !bh_cli_is_baseline(p->specs[order[pos]].name) && !p->sh && !p->share_rc &&
        (p->share_rc = share_trace(p->c, p->specs, p->nspecs, p->trace, &p->sh))) {
      stop_at = 0; /* no more runs */
      continue;
    }
    if (pos < n && (bh_cli_is_baseline(p->specs[order[pos]].name) || own < (int)p->jobs)) {
      int i = order[pos++];
      pid[i] = start_row(p, i, rows, &tl[i]);
      if (pid[i] > 0) {
        running++;
        own += !bh_cli_is_baseline(p->specs[i].name);
      } else if (i + 1 < stop_at) {
        stop_at = i + 1;
      }
      continue;
    }
    if (!running)
      break;
    int st, i = 0;
    pid_t q = waitpid(-1, &st, 0);
    if (q < 0 && errno == EINTR)
      continue;
    if (q < 0) { /* cannot happen while our own processes run: they are given up */
      for (i = 0; i < p->nspecs; i++)
        if (pid[i] > 0)
          row_fail(&rows[i], BH_ESYS, "waitpid");
      break;
    }
    while (i < p->nspecs && pid[i] != q)
      i++;
    if (i == p->nspecs)
      continue; /* not a run's */
    end_row(&rows[i], st);
    pid[i] = 0;
    running--;
    own -= !bh_cli_is_baseline(p->specs[i].name);
    if (tl[i]) {
      if (!rows[i].e && timeline_read(tl[i], &tl_buf[i], &tl_len[i]))
        row_fail(&rows[i], BH_ESYS, "timeline: reading it back");
      fclose(tl[i]);
      tl[i] = NULL;
    }
    if ((rows[i].e || rows[i].s.check_violations) && i + 1 < stop_at)
      stop_at = i + 1;
  }
  for (int i = 0; i < MAX_RUNS; i++)
    if (tl[i])
      fclose(tl[i]);
}

/* Writes the outputs of rows [0, n) that ran: the table, and unless failed, the files. */
static int outputs(const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos, int n,
                   bool failed, FILE *tty, FILE *json, FILE *csv, FILE *timeline, int rc,
                   const char *trace) {
  if (n) {
    fprintf(tty, "trace %s (%s), %.0f MiB arena, %s backing, %lu events, %.1f s virtual\n", trace,
            runs[0].trace_format, mib(runs[0].memory_bytes), runs[0].backing,
            (unsigned long)runs[0].events, runs[0].virtual_seconds);
    if (runs[0].layout[0])
      fprintf(tty, "%s layout, %s start, %s placement%s\n", runs[0].layout, runs[0].start_state,
              runs[0].placement,
              runs[0].fidelity.present ? "; fidelity: free memory in the wrong order at the end "
                                         "of the trace, and the error in free memory of "
                                         "pageblock order and above"
                                       : "");
    fprintf(tty, "\n");
    table(tty, runs, n);
    bool any = false;
    for (int i = 0; i < n && !any; i++)
      any = runs[i].nr_warnings > 0;
    if (any) {
      fprintf(tty, "\n");
      bh_cli_print_warnings(tty, runs, n);
    }
  }
  if (!failed && json && bh_cli_runs_json(json, runs, infos, n) == BH_ENOMEM)
    failed = true;
  if (!failed && csv && bh_cli_runs_csv(csv, runs, infos, n) == BH_ENOMEM)
    failed = true;
  if (failed) { /* files already there are left as they were */
    if (!rc) {
      fprintf(stderr, "buddyhint compare: out of memory\n");
      rc = BH_EXIT_FAIL;
    }
    bh_cli_abort_out(json);
    bh_cli_abort_out(csv);
    bh_cli_abort_out(timeline);
  } else {
    rc |= bh_cli_close_out(json);
    rc |= bh_cli_close_out(csv);
    rc |= bh_cli_close_out(timeline);
  }
  return rc;
}

/* An error of a run, with the run's name. */
static int run_error(const char *label, const struct row *r) {
  const char *msg = r->err[0] ? r->err : bh_strerror(r->e);
  if (!strncmp(msg, "compare: ", 9)) /* the baseline's messages say compare already */
    msg += 9;
  fprintf(stderr, "buddyhint compare: %s: %s\n", label, msg);
  return r->e == BH_ENOMEM || r->e == BH_ESYS ? BH_EXIT_FAIL : BH_EXIT_USAGE;
}

static int run_all(bh_cli_replay_t *c, const char *trace, char *list, struct compare_args *a) {
  struct row *rows = mmap(NULL, MAX_RUNS * sizeof(*rows), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  bh_replay_summary_t *runs = calloc(MAX_RUNS, sizeof(*runs));
  struct run_spec *specs = calloc(MAX_RUNS, sizeof(*specs));
  char(*labels)[64] = calloc(MAX_RUNS, sizeof(*labels));
  bh_cli_run_info_t *infos = calloc(MAX_RUNS, sizeof(*infos));
  bh_replay_config_t *cfgs = calloc(MAX_RUNS, sizeof(*cfgs));
  char *tl_buf[MAX_RUNS] = {0};
  size_t tl_len[MAX_RUNS] = {0};
  bh__replay_shared_t *sh = NULL;
  FILE *json = NULL, *csv = NULL, *timeline = NULL;
  int n = 0, nspecs = 0, rc = BH_EXIT_OK;
  bool failed = false; /* a replay could not run: the JSON would be partial */
  if (rows == MAP_FAILED)
    rows = NULL;
  if (!rows || !runs || !specs || !labels || !infos || !cfgs) {
    rc = BH_EXIT_FAIL;
    goto out;
  }
  /* every entry is checked before the first replay starts, and the output opened */
  const char *inputs[] = {trace, a->gate.baseline, NULL}; /* no output replaces them */
  bh_cli_set_inputs(inputs);
  if ((rc = parse_list(c, list, specs, labels, &nspecs)) == 0)
    rc = bh_cli_open_out("compare", a->json_all ? NULL : c->json_path, &json);
  if (!rc)
    rc = bh_cli_open_out("compare", a->csv_path, &csv);
  if (!rc)
    rc = bh_cli_open_out("compare", a->timeline_path, &timeline);
  bh_cli_set_inputs(NULL);
  char sha[65] = "";
  uint64_t bytes = 0;
  if (!rc && (json || csv || a->g || a->json_all))
    bh_cli_trace_sha256(trace, sha, &bytes);
  /* with an output on standard output, the table goes to standard error */
  FILE *tty = json == stdout || csv == stdout || timeline == stdout || a->json_all == stdout ||
                      bh_cli_gate_on_stdout(a->g)
                  ? stderr
                  : stdout;
  for (int i = 0; !rc && i < nspecs; i++) { /* each run's settings, also its provenance */
    cfgs[i] = c->cfg;
    cfgs[i].hint.strategy = specs[i].name;
    cfgs[i].hint.opts = specs[i].opts;
    cfgs[i].hint.nopts = specs[i].nopts;
    cfgs[i].trace = trace;
    cfgs[i].timeline = NULL;
    infos[i] = (bh_cli_run_info_t){.cfg = &cfgs[i], .trace = trace, .bytes = bytes};
    memcpy(infos[i].sha256, sha, sizeof(sha));
  }
  if (!rc && a->g)
    rc = plan_gate(a->g, trace, sha, specs, infos, nspecs);
  bool ran = !rc, tl_header = false;
  if (ran) {
    struct plan p = {.c = c,
                     .specs = specs,
                     .cfgs = cfgs,
                     .trace = trace,
                     .nspecs = nspecs,
                     .jobs = a->jobs ? a->jobs : bh_cli_online_cpus(),
                     .timeline = timeline != NULL};
    /* --dump: every run writes the same files, which the first run to finish would get; one
     * after another, the second run refuses the files of the first before it replays */
    if (p.jobs > 1 && nspecs > 1 && !c->cfg.dump_dir)
      run_parallel(&p, rows, tl_buf, tl_len);
    else
      run_serial(&p, rows, tl_buf, tl_len);
    sh = p.sh;
    rc = p.share_rc;
    failed = rc != 0;
  }
  /* in the rows' order, as -j 1 runs them: the runs up to the first that failed or found
   * check violations (-j 1 runs none after it), and every failure */
  for (int i = 0; ran && i < nspecs; i++) {
    if (!rows[i].done)
      continue;
    if (rows[i].e) {
      int e = run_error(specs[i].label, &rows[i]);
      rc = failed ? rc : e;
      failed = true;
      continue;
    }
    if (failed)
      continue;
    runs[n] = rows[i].s;
    if (timeline && tl_len[i]) /* a jemalloc run may have no timeline: it adds no rows */
      timeline_append(timeline, tl_buf[i], tl_len[i], specs[i].label, !tl_header);
    tl_header |= tl_len[i] > 0;
    if (!n)
      bh_cli_warn_lost("compare", &runs[n]);
    n++;
    if (runs[n - 1].check_violations) {
      rc = BH_EXIT_FAIL;
      break;
    }
  }
  rc = outputs(runs, infos, n, failed, tty, json, csv, timeline, rc, trace);
  if (!rc && a->json_all && n == nspecs &&
      bh_cli_runs_json_add(a->json_all, runs, infos, n, &a->json_count) == BH_ENOMEM)
    rc = BH_EXIT_FAIL;
  if (!rc && a->g && n == nspecs)
    rc = bh_cli_gate_runs(a->g, tty, runs, infos, n);
out:
  for (int i = 0; i < MAX_RUNS; i++)
    free(tl_buf[i]);
  bh__replay_shared_free(sh);
  if (rows)
    munmap(rows, MAX_RUNS * sizeof(*rows));
  free(infos);
  free(cfgs);
  free(runs);
  free(specs);
  free(labels);
  return rc;
}

/* compare's own options: --strategies, --csv, --timeline, and a word about --strategy. */
static int compare_opt(int argc, char **argv, int *i, void *ctx) {
  struct compare_args *ca = ctx;
  const char *a = argv[*i];
  if (!strcmp(a, "--strategy") || !strncmp(a, "--strategy=", 11)) {
    bh_cli_usage_error("compare", "'%s' is for replay; compare takes --strategies", a);
    return -1;
  }
  if (a[0] != '-' && ca->ntraces++) { /* the first TRACE is the replay's, the others ours */
    ca->traces[ca->ntraces - 1] = a;
    (*i)++;
    return 1;
  }
  const char *v;
  int r = bh_cli_gate_opt(argc, argv, i, &ca->gate);
  if (r)
    return r;
  r = bh_cli_short_opt("compare", argc, argv, i, "-j", &v);
  if (!r)
    r = bh_cli_opt(argc, argv, i, "jobs", &v);
  if (r > 0) {
    uint64_t j;
    if (bh_cli_parse_u64(v, 1, MAX_JOBS, &j)) {
      bh_cli_usage_error("compare", "-j: '%s' is not a number of runs at a time in 1..%d", v,
                         MAX_JOBS);
      return -1;
    }
    ca->jobs = (unsigned)j;
    return 1;
  }
  if (!r)
    r = bh_cli_opt(argc, argv, i, "strategies", &ca->list);
  if (!r)
    r = bh_cli_opt(argc, argv, i, "csv", &ca->csv_path);
  if (!r)
    r = bh_cli_opt(argc, argv, i, "timeline", &ca->timeline_path);
  return r;
}

/* At most one output on standard output: 0, or -1 after a usage error. */
static int one_stdout(const bh_cli_replay_t *c, const struct compare_args *a) {
  const char *outs[] = {c->json_path, a->csv_path, a->timeline_path};
  int n = 0;
  for (int i = 0; i < 3; i++)
    n += outs[i] && !strcmp(outs[i], "-");
  if (n < 2)
    return 0;
  bh_cli_usage_error("compare", "--json, --csv and --timeline: only one can be standard output");
  return -1;
}

/* Each TRACE is a regular file that opens as a trace: 0, or -1 after a usage error. */
static int traces_check(const char *const *traces, int n) {
  for (int k = 0; k < n; k++) {
    struct stat st;
    const char *trace = traces[k];
    if (!strcmp(trace, "-") || (!stat(trace, &st) && !S_ISREG(st.st_mode))) {
      bh_cli_usage_error("compare",
                         "%s: compare reads the trace once per strategy, so it must be a "
                         "regular file (not standard input, a FIFO or a <(...) substitution): "
                         "convert it to one first",
                         trace);
      return -1;
    }
    bh_trace_t *t = NULL; /* a missing or unreadable trace is bad input, found before any run */
    if (bh_trace_open(trace, NULL, &t)) {
      fprintf(stderr, "buddyhint compare: %s\n", bh_trace_error(NULL));
      return -1;
    }
    bh_trace_close(t);
  }
  return 0;
}

/* The traces one after another, each with its table (and its gates). */
static int run_traces(bh_cli_replay_t *c, struct compare_args *a) {
  const char **inputs = calloc((size_t)a->ntraces + 2, sizeof(*inputs));
  if (!inputs)
    return BH_EXIT_FAIL;
  memcpy(inputs, a->traces, (size_t)a->ntraces * sizeof(*inputs));
  inputs[a->ntraces] = a->gate.baseline; /* the reports may overwrite none of them */
  int rc = bh_cli_gate_open(&a->gate, inputs, &a->g);
  if (!rc && a->ntraces > 1 && c->json_path) { /* one {"runs": [...]} of every trace's runs */
    bh_cli_set_inputs(inputs);
    rc = bh_cli_open_out("compare", c->json_path, &a->json_all);
    bh_cli_set_inputs(NULL);
    if (!rc)
      bh_cli_runs_json_start(a->json_all);
  }
  for (int k = 0; !rc && k < a->ntraces; k++) {
    char *copy = strdup(a->list);
    if (k) /* a blank line between the traces' tables */
      fputc('\n', bh_cli_gate_on_stdout(a->g) || a->json_all == stdout ? stderr : stdout);
    rc = copy ? run_all(c, a->traces[k], copy, a) : BH_EXIT_FAIL;
    free(copy);
  }
  if (a->json_all && !rc)
    rc = bh_cli_runs_json_end(a->json_all) == BH_OK ? bh_cli_close_out(a->json_all) : BH_EXIT_FAIL;
  else if (a->json_all)
    bh_cli_abort_out(a->json_all); /* a file already there is left as it was */
  rc = bh_cli_gate_finish(a->g, rc);
  free(inputs);
  return rc;
}

/* compare --runs FILE --baseline FILE [gates]: no replay, only the gates. */
static int gate_only(int argc, char **argv) {
  struct bh_cli_gate_args ga = {0};
  const char *runs = NULL;
  for (int i = 1; i < argc;) {
    if (bh_cli_is_help(argv[i])) {
      help(stdout);
      return BH_EXIT_OK;
    }
    int r = bh_cli_gate_opt(argc, argv, &i, &ga);
    if (!r)
      r = bh_cli_opt(argc, argv, &i, "runs", &runs);
    if (r < 0)
      return BH_EXIT_USAGE;
    if (!r)
      return bh_cli_usage_error("compare",
                                "--runs gates a file of runs without replaying: '%s' does not "
                                "apply",
                                argv[i]);
  }
  return bh_cli_gate_files(&ga, runs);
}

int cmd_compare(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--runs") || !strncmp(argv[i], "--runs=", 7))
      return gate_only(argc, argv);
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  const char *trace;
  struct compare_args a = {.list = "none,bitmap,bubble",
                           .traces = calloc((size_t)argc + 1, sizeof(char *))};
  int r = a.traces ? bh_cli_replay_args(argc, argv, &c, &trace, compare_opt, &a, help) : -1;
  if (!r)
    a.traces[0] = trace;
  if (!r && one_stdout(&c, &a))
    r = -1;
  if (!r && a.ntraces > 1 && (a.csv_path || a.timeline_path)) {
    bh_cli_usage_error("compare", "--csv and --timeline take one trace (for several: compare "
                                  "once per trace, or sweep and merge)");
    r = -1;
  }
  for (size_t k = 0; !r && k < c.nopts; k++)
    if (!strchr(c.opts[k].key, '.')) {
      bh_cli_usage_error("compare", "--opt %s: name the strategy, as NAME.%s", c.opts[k].key,
                         c.opts[k].key);
      r = -1;
    }
  if (!r && bh_cli_replay_check("compare", &c))
    r = -1;
  if (!r)
    r = traces_check(a.traces, a.ntraces);
  if (!r) {
    bh_cli_replay_finish(&c);
    r = run_traces(&c, &a);
  } else {
    r = r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  }
  free(a.traces);
  bh_cli_replay_free(&c);
  return r;
}
