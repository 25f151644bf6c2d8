/* buddyhint compare: the same trace once per strategy, one table. */
#include "cli/baseline.h"
#include "cli/replay_opts.h"
#include "cli/run_json.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_RUNS 16

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint compare TRACE [--strategies LIST] [OPTIONS]\n\n"
          "Replays TRACE once per strategy (default none,bitmap,bubble) with the same\n"
          "configuration and prints one table; --json FILE writes {\"runs\": [...]}, each\n"
          "run as replay --json writes it (with --json - standard output holds the JSON only\n"
          "and the table goes to standard error).\n"
          "Strategy options are given as --opt NAME.KEY=VALUE, e.g. --opt bubble.delay=1s,\n"
          "or in the list as NAME:KEY=VALUE[:KEY=VALUE...], which also lets one strategy\n"
          "run more than once: --strategies none,bubble,bubble:order=3.  jemalloc takes\n"
          "jemalloc[:decay=MS][:muzzy=MS][:bg=0|1].\n\n"
          "options:\n"
          "  --strategies LIST     comma-separated strategy names (with options, see above)\n"
          "  --csv FILE            one CSV row per run, nested fields as dotted columns\n"
          "  --timeline FILE       every run's samples over virtual time as one CSV, the\n"
          "                        run's label in its first column, \"run\"\n%s",
          bh_cli_replay_help);
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
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s %8s %8s\n", "strategy", "rss_peak",
          "rss_final", "live_end", "reported", "madvises", "refaults", "failed", "wall_s", "cpu_s",
          "check", "fidelity", "high_ord");
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s %8s %8s\n", "", "MiB", "MiB", "MiB",
          "MiB", "calls", "pages", "allocs", "", "", "errors", "error", "error");
  for (int i = 0; i < n; i++) {
    const bh_replay_summary_t *s = &runs[i];
    fprintf(f, "%-21s %10.1f %10.1f %10.1f %10.1f %9lu %9lu %8lu %8.2f %8.2f %6ld", s->strategy,
            mib(s->rss_peak_bytes), mib(s->rss_final_bytes), mib(s->live_final_bytes),
            mib(s->reported_bytes), (unsigned long)s->madvise_calls, (unsigned long)s->refaults,
            (unsigned long)s->alloc_failures, s->wall_seconds, s->cpu_seconds, s->check_violations);
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
};

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

static int run_all(bh_cli_replay_t *c, const char *trace, char *list,
                   const struct compare_args *a) {
  bh_replay_summary_t *runs = calloc(MAX_RUNS, sizeof(*runs));
  struct run_spec *specs = calloc(MAX_RUNS, sizeof(*specs));
  char(*labels)[64] = calloc(MAX_RUNS, sizeof(*labels));
  bh_cli_run_info_t *infos = calloc(MAX_RUNS, sizeof(*infos));
  bh_replay_config_t *cfgs = calloc(MAX_RUNS, sizeof(*cfgs));
  FILE *json = NULL, *csv = NULL, *timeline = NULL;
  char *tl_buf = NULL;
  size_t tl_len = 0;
  bool tl_header = false;
  const uint64_t given_memory = c->cfg.memory_bytes;
  const unsigned given_cpus = c->cfg.arena.nr_cpus;
  int n = 0, nspecs = 0, rc = BH_EXIT_OK;
  bool failed = false; /* a replay could not run: the JSON would be partial */
  if (!runs || !specs || !labels || !infos || !cfgs) {
    rc = BH_EXIT_FAIL;
    goto out;
  }
  /* every entry is checked before the first replay starts, and the output opened */
  const char *inputs[] = {trace, NULL};
  bh_cli_set_inputs(inputs);
  if ((rc = parse_list(c, list, specs, labels, &nspecs)) == 0)
    rc = bh_cli_open_out("compare", c->json_path, &json);
  if (!rc)
    rc = bh_cli_open_out("compare", a->csv_path, &csv);
  if (!rc)
    rc = bh_cli_open_out("compare", a->timeline_path, &timeline);
  bh_cli_set_inputs(NULL);
  char sha[65] = "";
  uint64_t bytes = 0;
  if (!rc && (json || csv))
    bh_cli_trace_sha256(trace, sha, &bytes);
  /* with an output on standard output, the table goes to standard error */
  FILE *tty = json == stdout || csv == stdout || timeline == stdout ? stderr : stdout;
  for (int i = 0; i < nspecs && rc == BH_EXIT_OK; i++) {
    struct run_spec *sp = &specs[i];
    c->cfg.hint.strategy = sp->name;
    c->cfg.hint.opts = sp->opts;
    c->cfg.hint.nopts = sp->nopts;
    c->cfg.trace = trace;
    cfgs[i] = c->cfg; /* the run's settings as given, for its provenance */
    cfgs[i].memory_bytes = given_memory;
    cfgs[i].arena.nr_cpus = given_cpus;
    infos[i] = (bh_cli_run_info_t){.cfg = &cfgs[i], .trace = trace, .bytes = bytes};
    memcpy(infos[i].sha256, sha, sizeof(sha));
    FILE *tl = NULL;
    if (timeline && !(tl = open_memstream(&tl_buf, &tl_len))) {
      rc = BH_EXIT_FAIL;
      failed = true;
      break;
    }
    c->cfg.timeline = tl;
    char err[1024];
    if (c->cfg.progress)
      fprintf(stderr, "compare: %s\n", sp->label);
    int e = bh_cli_is_baseline(sp->name) /* jemalloc, in a process of its own */
                ? bh_cli_baseline_run(&c->cfg, sp->name, &runs[n], err, sizeof(err))
                : bh_replay_run(&c->cfg, &runs[n], err, sizeof(err));
    c->cfg.timeline = NULL;
    if (tl && fclose(tl) && !e)
      e = BH_ENOMEM;
    if (tl && !e) { /* a jemalloc run may have no timeline: it adds no rows */
      timeline_append(timeline, tl_buf, tl_len, sp->label, !tl_header);
      tl_header |= tl_len > 0;
    }
    free(tl_buf);
    tl_buf = NULL;
    if (e) {
      fprintf(stderr, "%s\n", err[0] ? err : bh_strerror(e));
      rc = e == BH_ENOMEM || e == BH_ESYS ? BH_EXIT_FAIL : BH_EXIT_USAGE;
      failed = true;
      break;
    }
    if (!bh_cli_is_baseline(sp->name)) { /* jemalloc names its run with every setting */
      snprintf(runs[n].strategy, sizeof(runs[n].strategy), "%s", sp->label);
      /* the next replays get the arena this one sized: they skip the sizing pass over the
       * trace, and their arena is the same */
      if (!c->cfg.memory_bytes)
        c->cfg.memory_bytes = runs[n].memory_bytes;
      if (!c->cfg.arena.nr_cpus)
        c->cfg.arena.nr_cpus = (unsigned)runs[n].nr_cpus;
    }
    if (runs[n].check_violations)
      rc = BH_EXIT_FAIL;
    if (!n)
      bh_cli_warn_lost("compare", &runs[n]);
    n++;
  }
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
out:
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
  int r = bh_cli_opt(argc, argv, i, "strategies", &ca->list);
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

int cmd_compare(int argc, char **argv) {
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  const char *trace;
  struct compare_args a = {.list = "none,bitmap,bubble"};
  int r = bh_cli_replay_args(argc, argv, &c, &trace, compare_opt, &a, help);
  if (!r && one_stdout(&c, &a))
    r = -1;
  for (size_t k = 0; !r && k < c.nopts; k++)
    if (!strchr(c.opts[k].key, '.')) {
      bh_cli_usage_error("compare", "--opt %s: name the strategy, as NAME.%s", c.opts[k].key,
                         c.opts[k].key);
      r = -1;
    }
  struct stat st;
  if (!r && (!strcmp(trace, "-") || (!stat(trace, &st) && !S_ISREG(st.st_mode)))) {
    bh_cli_usage_error("compare",
                       "%s: compare reads the trace once per strategy, so it must be a regular "
                       "file (not standard input, a FIFO or a <(...) substitution): convert it "
                       "to one first",
                       trace);
    r = -1;
  }
  if (!r && bh_cli_replay_check("compare", &c))
    r = -1;
  bh_trace_t *t = NULL; /* a missing or unreadable trace is bad input, found before any run */
  if (!r && bh_trace_open(trace, NULL, &t)) {
    fprintf(stderr, "buddyhint compare: %s\n", bh_trace_error(NULL));
    r = -1;
  }
  bh_trace_close(t);
  if (!r) {
    bh_cli_replay_finish(&c);
    char *copy = strdup(a.list);
    r = copy ? run_all(&c, trace, copy, &a) : BH_EXIT_FAIL;
    free(copy);
  } else {
    r = r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  }
  bh_cli_replay_free(&c);
  return r;
}
