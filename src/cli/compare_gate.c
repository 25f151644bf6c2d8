/*
 * compare --baseline: regression gates for a CI (compare_gate.h).
 *
 * The baseline is read once: compare --json's {"runs": [...]}, replay --json's one run, or
 * merge's {"runs": [...]} of a sweep, whose rows are already flat.  Every run is flattened
 * the same way (nested keys as PARENT.KEY), so a run of either kind, and a run of this compare,
 * are read by the same names; its numeric keys outside "provenance" are its figures.
 *
 * A run is matched by the SHA-256 of its trace's content (provenance.trace.sha256), not its
 * path, and by its strategy as --strategies names it (bubble, bubble:order=3).  Options given
 * with --opt are not part of that name: a run whose --opt changed is gated against the run it
 * changes, with the difference printed.  Where the baseline has several runs of one name (a
 * sweep over seeds or options), the one with this run's options is its baseline.
 *
 * The gates themselves are the library's (bh_gate_check); the reports are written at the end
 * through the command's safe outputs (temporary file and rename).
 */
#include "cli/compare_gate.h"
#include "cli/baseline.h"
#include "cli/replay_opts.h"

#include <jansson.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VERB "compare"
#define MAX_GATES (BH_CLI_GATE_MAX_TOLERANCES + BH_GATE_MAX_DEFAULTS)
#define MAX_PLAN 16 /* the runs of one trace (compare's MAX_RUNS) */
#define OPTS_PREFIX "provenance.options."

/* A run of the baseline. */
struct base_run {
  json_t *flat;                   /* its keys, nested ones flattened */
  const char *sha, *label, *name; /* in flat: trace content, strategy, trace name */
  bh_figure_t *figs;
  int nfigs;
};

/* One run of this compare, gated: its trace and strategy, its gates and their results. */
struct verdict {
  char trace[512], label[96];
  const struct base_run *base;
  bh_gate_t gates[MAX_GATES];
  bh_gate_result_t res[MAX_GATES];
  size_t ngates;
  int nfail;
  bool done;         /* the run ran and was gated */
  double wall;       /* its wall_seconds (the JUnit time) */
  char *differs;     /* its options that differ from its baseline run's, or NULL */
  char skipped[160]; /* the default gates left out as noisy, and why ("" if none) */
};

/* The runs of a file (the baseline, or --runs). */
struct run_set {
  json_t *doc;
  struct base_run *runs;
  size_t n;
};

/* What decides whether a run's figures are deterministic, and its name. */
struct who {
  const char *label, *strategy, *backing;
  double speed;
};

struct bh_cli_gate {
  struct bh_cli_gate_args a;
  struct run_set base;
  bh_gate_t tol[BH_CLI_GATE_MAX_TOLERANCES];
  size_t ntol;
  FILE *junit, *md;
  struct verdict *v;
  size_t nv, capv, plan_first;
};

const char bh_cli_gate_help[] =
    "regression gates (for CI; docs/USAGE.md \"Comparing strategies in CI\"):\n"
    "  --baseline FILE       compare each run with its run in FILE, an earlier\n"
    "                        compare --json (or replay --json, or a merged sweep JSON),\n"
    "                        matched by the trace's content (SHA-256) and the strategy as\n"
    "                        --strategies names it; the table shows each figure's change\n"
    "  --tolerance METRIC=+PCT%[:ABS] | METRIC=-PCT%[:ABS]   (repeatable)\n"
    "                        a gate: the sign is the direction that is a regression;\n"
    "                        refaults=+10% fails if refaults rise by more than 10 %,\n"
    "                        returned_bytes=-5% if it falls by more than 5 %.  :ABS also\n"
    "                        allows that much in the figure's unit; a baseline of 0 has\n"
    "                        only ABS (default 0: any rise fails).  METRIC is a key of\n"
    "                        the run's JSON (strategy_stats.KEY for nested ones).\n"
    "                        Default: rss_final_bytes=+2% refaults=+10%\n"
    "                        madvise_calls=+10%, and returned_bytes=-5% where the baseline\n"
    "                        has it, each only where it is deterministic\n"
    "  --runs FILE           gate the runs of FILE (as the baseline may be: a sweep's\n"
    "                        merge, a compare --json made elsewhere) without replaying\n"
    "  --allow-noisy         allow a gate on a figure that moves from run to run\n"
    "                        (wall_seconds, cpu_seconds, minflt, *_ns; rss_* outside\n"
    "                        sim backing; every figure with --speed or of jemalloc)\n"
    "  --junit FILE          JUnit XML: a test case per trace and strategy, a failure\n"
    "                        per failed gate\n"
    "  --markdown FILE       the gates as a Markdown table (\"-\": standard output)\n"
    "exit status with --baseline: 0 every gate holds; 1 a gate failed (a line each on\n"
    "standard error); 2 bad usage, or a run the baseline does not have.\n";

/* ---- options ---- */

int bh_cli_gate_opt(int argc, char **argv, int *i, struct bh_cli_gate_args *a) {
  if (!strcmp(argv[*i], "--allow-noisy")) {
    a->allow_noisy = true;
    (*i)++;
    return 1;
  }
  const char *v;
  int r = bh_cli_opt(argc, argv, i, "tolerance", &v);
  if (r > 0) {
    if (a->ntolerances == BH_CLI_GATE_MAX_TOLERANCES) {
      bh_cli_usage_error(VERB, "at most %d --tolerance", BH_CLI_GATE_MAX_TOLERANCES);
      return -1;
    }
    a->tolerances[a->ntolerances++] = v;
  }
  if (!r)
    r = bh_cli_opt(argc, argv, i, "baseline", &a->baseline);
  if (!r)
    r = bh_cli_opt(argc, argv, i, "junit", &a->junit);
  if (!r)
    r = bh_cli_opt(argc, argv, i, "markdown", &a->markdown);
  return r;
}

/* ---- the baseline ---- */

/* Nested objects' members into flat as PARENT.KEY; other values as they are. */
static int flatten(json_t *flat, const char *prefix, json_t *obj) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    char name[512];
    snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k);
    if (json_is_object(v) ? flatten(flat, name, v) : json_object_set(flat, name, v))
      return -1;
  }
  return 0;
}

/* The figures of a flat run: its numbers and booleans outside the provenance.  The count. */
static int figures(json_t *flat, bh_figure_t **out) {
  *out = calloc(json_object_size(flat) + 1, sizeof(**out));
  int n = 0;
  const char *k;
  json_t *v;
  json_object_foreach(*out ? flat : NULL, k, v) {
    if (!strncmp(k, "provenance.", 11) || strlen(k) >= BH_FIGURE_NAME_MAX)
      continue;
    if (!json_is_number(v) && !json_is_boolean(v))
      continue;
    snprintf((*out)[n].name, sizeof((*out)[n].name), "%s", k);
    (*out)[n++].value = json_is_boolean(v) ? json_is_true(v) : json_number_value(v);
  }
  return *out ? n : -1;
}

static const char *flat_str(json_t *flat, const char *key) {
  return json_string_value(json_object_get(flat, key));
}

static int run_add(struct run_set *set, const char *path, json_t *run, size_t i) {
  if (!json_is_object(run))
    return bh_cli_usage_error(VERB, "%s: run %zu is not a JSON object", path, i + 1);
  struct base_run *b = &set->runs[set->n];
  if (!(b->flat = json_object()) || flatten(b->flat, "", run) ||
      (b->nfigs = figures(b->flat, &b->figs)) < 0) {
    fprintf(stderr, "buddyhint " VERB ": out of memory\n");
    return BH_EXIT_FAIL;
  }
  b->sha = flat_str(b->flat, "provenance.trace.sha256");
  b->label = flat_str(b->flat, "strategy");
  b->name = flat_str(b->flat, "provenance.trace.name");
  if (!b->name)
    b->name = flat_str(b->flat, "trace");
  if (!b->label)
    return bh_cli_usage_error(VERB, "%s: run %zu has no \"strategy\"", path, i + 1);
  set->n++; /* a run without the trace's SHA-256 (read from standard input) matches none */
  return 0;
}

/* The runs of the file at path (opt: the option that named it, for a message). */
static int runs_load(struct run_set *set, const char *opt, const char *path) {
  json_error_t e;
  if (!(set->doc = json_load_file(path, JSON_REJECT_DUPLICATES, &e))) {
    if (e.line > 0)
      return bh_cli_usage_error(VERB, "%s:%d: %s", path, e.line, e.text);
    return bh_cli_usage_error(VERB, "%s %s: %s", opt, path, e.text);
  }
  json_t *runs = json_object_get(set->doc, "runs");
  bool one = !runs && json_is_object(set->doc) && json_object_get(set->doc, "provenance");
  if (!one && !json_is_array(runs))
    return bh_cli_usage_error(VERB,
                              "%s: not the JSON of compare --json, replay --json or merge "
                              "(no \"runs\" array)",
                              path);
  size_t n = one ? 1 : json_array_size(runs);
  if (!n)
    return bh_cli_usage_error(VERB, "%s: no runs", path);
  if (!(set->runs = calloc(n, sizeof(*set->runs)))) {
    fprintf(stderr, "buddyhint " VERB ": out of memory\n");
    return BH_EXIT_FAIL;
  }
  for (size_t i = 0; i < n; i++) {
    int r = run_add(set, path, one ? set->doc : json_array_get(runs, i), i);
    if (r)
      return r;
  }
  return 0;
}

int bh_cli_gate_open(const struct bh_cli_gate_args *a, const char *const *inputs,
                     bh_cli_gate_t **out) {
  *out = NULL;
  if (!a->baseline) {
    if (a->ntolerances || a->junit || a->markdown || a->allow_noisy)
      return bh_cli_usage_error(VERB, "--tolerance, --junit, --markdown and --allow-noisy "
                                      "compare with a baseline: give --baseline FILE");
    return 0;
  }
  bh_cli_gate_t *g = calloc(1, sizeof(*g));
  if (!g) {
    fprintf(stderr, "buddyhint " VERB ": out of memory\n");
    return BH_EXIT_FAIL;
  }
  g->a = *a;
  *out = g;
  for (int i = 0; i < a->ntolerances; i++) {
    char err[256];
    if (bh_gate_parse(a->tolerances[i], &g->tol[g->ntol++], err, sizeof(err)))
      return bh_cli_usage_error(VERB, "--tolerance %s", err);
  }
  if (a->junit && a->markdown && !strcmp(a->junit, a->markdown) && strcmp(a->junit, "-"))
    return bh_cli_usage_error(VERB, "--junit and --markdown name the same file");
  int r = runs_load(&g->base, "--baseline", a->baseline);
  bh_cli_set_inputs(inputs);
  if (!r)
    r = bh_cli_open_out(VERB, a->junit, &g->junit);
  if (!r)
    r = bh_cli_open_out(VERB, a->markdown, &g->md);
  bh_cli_set_inputs(NULL);
  return r;
}

bool bh_cli_gate_on_stdout(const bh_cli_gate_t *g) {
  return g && (g->junit == stdout || g->md == stdout);
}

/* ---- the plan: each run's baseline run and gates ---- */

static const char *backing_name(enum bh_backing b) {
  return b == BH_BACKING_SIM ? "sim" : b == BH_BACKING_MEMFD ? "memfd" : "mmap";
}

/* Why a figure of a run moves from run to run, or NULL if it does not. */
static const char *noisy(const struct who *w, const char *metric) {
  if (bh_cli_is_baseline(w->strategy))
    return "jemalloc purges on real time";
  if (bh_gate_deterministic(metric, w->backing, w->speed))
    return NULL;
  if (w->speed != 0)
    return "--speed runs the replay on a wall clock";
  if (!strncmp(metric, "rss_", 4) && strcmp(w->backing, "sim"))
    return "resident memory of real pages moves with the host; in sim backing it does not";
  return "it measures this process, not the replay";
}

/* The run's options as the provenance gives them, flattened (a summary of no figures). */
static json_t *run_options(const bh_cli_gate_run_t *r) {
  bh_replay_summary_t *s = calloc(1, sizeof(*s));
  json_t *flat = json_object(), *obj = NULL;
  if (s && flat) {
    snprintf(s->strategy, sizeof(s->strategy), "%s", r->label);
    snprintf(s->backing, sizeof(s->backing), "%s", backing_name(r->info->cfg->arena.backing));
    obj = bh_cli_run_object(s, r->info);
  }
  if (!obj || flatten(flat, "", obj)) {
    json_decref(flat);
    flat = NULL;
  }
  json_decref(obj);
  free(s);
  return flat;
}

/* Whether key is compared between a run and its baseline run: its options and backing. */
static bool option_key(const char *k) {
  return !strncmp(k, OPTS_PREFIX, strlen(OPTS_PREFIX)) || !strcmp(k, "provenance.arena.backing");
}

/* Appends "KEY BASE -> NOW" to *buf for each option that differs; the number of them. */
static int differences(json_t *now, json_t *base, char **buf) {
  int n = 0;
  size_t len = 0;
  FILE *m = buf ? open_memstream(buf, &len) : NULL;
  for (int pass = 0; pass < 2; pass++) {
    json_t *a = pass ? base : now, *b = pass ? now : base;
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      if (!option_key(k) || (pass && json_object_get(b, k)))
        continue;
      json_t *w = json_object_get(b, k);
      if (w && json_equal(v, w))
        continue;
      n++;
      if (!m)
        continue;
      char *sv = json_dumps(v, JSON_ENCODE_ANY), *sw = w ? json_dumps(w, JSON_ENCODE_ANY) : NULL;
      const char *short_k =
          strncmp(k, OPTS_PREFIX, strlen(OPTS_PREFIX)) ? k + 11 : k + strlen(OPTS_PREFIX);
      fprintf(m, "%s%s %s -> %s", n > 1 ? ", " : "", short_k,
              pass ? (sv ? sv : "?")
              : sw ? sw
                   : "-",
              pass ? "-" : (sv ? sv : "?"));
      free(sv);
      free(sw);
    }
  }
  if (m)
    fclose(m);
  return n;
}

/* The labels of the baseline's runs of a trace, for a message. */
static void labels_of(const bh_cli_gate_t *g, const char *sha, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < g->base.n && used < len; i++)
    if (g->base.runs[i].sha && !strcmp(g->base.runs[i].sha, sha))
      used +=
          (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", g->base.runs[i].label);
}

/* The baseline run of run r (NULL after a message). */
static const struct base_run *match(bh_cli_gate_t *g, const char *trace, const char *sha,
                                    const struct who *r, json_t *opts, char **differs) {
  const struct base_run *only = NULL, *same = NULL;
  int count = 0;
  for (size_t i = 0; i < g->base.n; i++) {
    const struct base_run *b = &g->base.runs[i];
    if (!b->sha || strcmp(b->sha, sha) || strcmp(b->label, r->label))
      continue;
    count++;
    only = only ? only : b;
    if (!same && !differences(opts, b->flat, NULL))
      same = b;
  }
  if (same)
    return same;
  const char *bb = count == 1 ? flat_str(only->flat, "provenance.arena.backing") : NULL,
             *rb = flat_str(opts, "provenance.arena.backing");
  if (bb && rb && strcmp(bb, rb)) { /* not a changed option: another measurement */
    bh_cli_usage_error(VERB, "%s: the run of strategy '%s' on %s is in %s backing, this one in %s",
                       g->a.baseline, r->label, trace, bb, rb);
    return NULL;
  }
  if (count == 1) {
    differences(opts, only->flat, differs);
    return only;
  }
  char labels[1024];
  labels_of(g, sha, labels, sizeof(labels));
  if (count > 1) {
    bh_cli_usage_error(VERB,
                       "%s: %s has %d runs of strategy '%s' on this trace and none with this "
                       "run's options (as its provenance.options give them)",
                       g->a.baseline, trace, count, r->label);
  } else if (labels[0]) {
    bh_cli_usage_error(VERB, "%s: no run of strategy '%s' on %s (it has: %s)", g->a.baseline,
                       r->label, trace, labels);
  } else {
    bh_cli_usage_error(VERB,
                       "%s: no run of %s (SHA-256 %.16s...): the baseline is of other traces, "
                       "or of another content of this one",
                       g->a.baseline, trace, sha);
  }
  return NULL;
}

static bool has_figure(const struct base_run *b, const char *name) {
  for (int i = 0; i < b->nfigs; i++)
    if (!strcmp(b->figs[i].name, name))
      return true;
  return false;
}

/* The gates of run r: the --tolerance ones (refused on a noisy figure), or the defaults. */
static int gates_of(bh_cli_gate_t *g, const char *trace, const struct who *r, struct verdict *v) {
  if (!g->ntol) {
    bh_gate_t d[BH_GATE_MAX_DEFAULTS];
    size_t n = bh_gate_defaults(d, BH_GATE_MAX_DEFAULTS, v->base->figs, (size_t)v->base->nfigs);
    for (size_t i = 0; i < n; i++) {
      const char *why = noisy(r, d[i].metric);
      size_t used = strlen(v->skipped);
      if (why)
        snprintf(v->skipped + used, sizeof(v->skipped) - used, "%s%s", used ? ", " : "",
                 d[i].metric);
      else if (has_figure(v->base, d[i].metric))
        v->gates[v->ngates++] = d[i];
    }
    return 0;
  }
  for (size_t i = 0; i < g->ntol; i++) {
    const char *m = g->tol[i].metric, *why = noisy(r, m);
    if (why && !g->a.allow_noisy)
      return bh_cli_usage_error(VERB,
                                "--tolerance %s: %s of %s is not deterministic (%s): gate it "
                                "with --allow-noisy, or replay in sim backing on the virtual "
                                "clock",
                                g->a.tolerances[i], m, r->label, why);
    if (!has_figure(v->base, m))
      return bh_cli_usage_error(VERB,
                                "--tolerance %s: the baseline's run %s of %s has no figure '%s' "
                                "(a figure is a number of the run's JSON: refaults, "
                                "rss_final_bytes, strategy_stats.KEY, ...)",
                                g->a.tolerances[i], r->label, trace, m);
    v->gates[v->ngates++] = g->tol[i];
  }
  return 0;
}

/* A new verdict at the end of g's (NULL if out of memory). */
static struct verdict *verdict_new(bh_cli_gate_t *g, const char *trace, const char *label) {
  if (g->nv == g->capv) {
    size_t cap = g->capv * 2 + MAX_PLAN;
    struct verdict *v = realloc(g->v, cap * sizeof(*v));
    if (!v)
      return NULL;
    g->v = v;
    g->capv = cap;
  }
  struct verdict *v = &g->v[g->nv++];
  memset(v, 0, sizeof(*v));
  snprintf(v->trace, sizeof(v->trace), "%s", trace);
  snprintf(v->label, sizeof(v->label), "%s", label);
  return v;
}

int bh_cli_gate_plan(bh_cli_gate_t *g, const char *trace, const char *sha,
                     const bh_cli_gate_run_t *runs, int n) {
  if (!sha || !sha[0])
    return bh_cli_usage_error(VERB,
                              "%s: its SHA-256 could not be read, which --baseline "
                              "matches runs by",
                              trace);
  g->plan_first = g->nv;
  for (int i = 0; i < n; i++) {
    const bh_replay_config_t *cfg = runs[i].info->cfg;
    struct who w = {runs[i].label, runs[i].strategy, backing_name(cfg->arena.backing), cfg->speed};
    struct verdict *v = verdict_new(g, trace, w.label);
    json_t *opts = v ? run_options(&runs[i]) : NULL;
    if (!opts) {
      fprintf(stderr, "buddyhint " VERB ": out of memory\n");
      return BH_EXIT_FAIL;
    }
    v->base = match(g, trace, sha, &w, opts, &v->differs);
    json_decref(opts);
    if (!v->base)
      return BH_EXIT_USAGE;
    int r = gates_of(g, trace, &w, v);
    if (r)
      return r;
  }
  return 0;
}

/* ---- after the runs: the verdicts and the table ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* A figure's value as the table prints it: bytes in MiB, counts whole. */
static const char *value_text(const char *name, double v, char *buf, size_t len) {
  if (ends_with(name, "_bytes"))
    snprintf(buf, len, "%.1f MiB", v / (1024.0 * 1024.0));
  else if (v == floor(v) && fabs(v) < 1e15)
    snprintf(buf, len, "%.0f", v);
  else
    snprintf(buf, len, "%.6g", v);
  return buf;
}

static const char *change_text(double baseline, double now, char *buf, size_t len) {
  if (baseline == 0 && now != 0)
    snprintf(buf, len, "from 0");
  else
    snprintf(buf, len, "%+.1f%%", baseline == 0 ? 0.0 : 100.0 * (now - baseline) / fabs(baseline));
  return buf;
}

static const bh_figure_t *find(const bh_figure_t *f, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(f[i].name, name))
      return &f[i];
  return NULL;
}

/* The figures every table row shows besides the gated ones, where both runs have them. */
static const char *const headline[] = {"rss_peak_bytes", "rss_final_bytes", "returned_bytes",
                                       "reported_bytes", "madvise_calls",   "refaults"};

static void table_row(FILE *f, const char *label, const char *name, double b, double n,
                      const char *gate, const char *verdict) {
  char vb[48], vn[48], ch[32];
  fprintf(f, "%-21s %-24s %14s %14s %9s  %-14s %s\n", label, name, value_text(name, b, vb, 48),
          value_text(name, n, vn, 48), change_text(b, n, ch, 32), gate, verdict);
}

static void table(FILE *f, const struct verdict *v, const bh_figure_t *now, int nnow) {
  for (size_t i = 0; i < v->ngates; i++) {
    char gate[96];
    bh_gate_format(&v->gates[i], gate, sizeof(gate));
    const char *eq = strchr(gate, '=');
    table_row(f, i ? "" : v->label, v->gates[i].metric, v->res[i].baseline, v->res[i].now,
              eq ? eq + 1 : gate, bh_gate_status_name(v->res[i].status));
  }
  for (size_t h = 0; h < sizeof(headline) / sizeof(headline[0]); h++) {
    const bh_figure_t *b = find(v->base->figs, v->base->nfigs, headline[h]),
                      *n = find(now, nnow, headline[h]);
    bool gated = false;
    for (size_t i = 0; i < v->ngates; i++)
      gated |= !strcmp(v->gates[i].metric, headline[h]);
    if (b && n && !gated)
      table_row(f, v->ngates || h ? "" : v->label, headline[h], b->value, n->value, "-", "");
  }
  if (v->skipped[0])
    fprintf(f, "%-21s (not gated by default, as not deterministic in this run: %s)\n", "",
            v->skipped);
  if (v->differs)
    fprintf(f, "%-21s (options differ from the baseline run: %s)\n", "", v->differs);
}

/* The gates of v on the figures of its run now: 0, or BH_EXIT_USAGE after a message. */
static int verdict_check(struct verdict *v, const bh_figure_t *figs, int nfigs) {
  int rc = 0;
  bh_gate_check(v->gates, v->ngates, v->base->figs, (size_t)v->base->nfigs, figs, (size_t)nfigs,
                v->res);
  for (size_t k = 0; k < v->ngates; k++) {
    v->nfail += v->res[k].status == BH_GATE_FAIL;
    if (v->res[k].status == BH_GATE_MISSING)
      rc = bh_cli_usage_error(VERB, "%s of %s has no figure '%s'", v->label, v->trace,
                              v->gates[k].metric);
  }
  const bh_figure_t *wall = find(figs, nfigs, "wall_seconds");
  v->wall = wall ? wall->value : 0;
  v->done = true;
  return rc;
}

static void table_head(FILE *tty, const bh_cli_gate_t *g) {
  fprintf(tty, "\nagainst %s: each figure now, its change from the baseline run, its gate\n",
          g->a.baseline);
  fprintf(tty, "%-21s %-24s %14s %14s %9s  %-14s %s\n", "strategy", "figure", "baseline", "now",
          "change", "gate", "");
}

int bh_cli_gate_runs(bh_cli_gate_t *g, FILE *tty, const bh_replay_summary_t *runs,
                     const bh_cli_run_info_t *infos, int n) {
  table_head(tty, g);
  int rc = 0;
  for (int i = 0; i < n && g->plan_first + (size_t)i < g->nv; i++) {
    struct verdict *v = &g->v[g->plan_first + (size_t)i];
    json_t *obj = bh_cli_run_object(&runs[i], &infos[i]), *flat = json_object();
    bh_figure_t *figs = NULL;
    int nfigs = obj && flat && !flatten(flat, "", obj) ? figures(flat, &figs) : -1;
    json_decref(obj);
    json_decref(flat);
    if (nfigs < 0) {
      fprintf(stderr, "buddyhint " VERB ": out of memory\n");
      return BH_EXIT_FAIL;
    }
    rc |= verdict_check(v, figs, nfigs);
    table(tty, v, figs, nfigs);
    free(figs);
  }
  return rc;
}

/* ---- the end: failures, JUnit, Markdown ---- */

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '&')
      fputs("&amp;", f);
    else if (c == '<')
      fputs("&lt;", f);
    else if (c == '>')
      fputs("&gt;", f);
    else if (c == '"')
      fputs("&quot;", f);
    else if (c == '\'')
      fputs("&apos;", f);
    else if (c >= 0x20 || c == '\n' || c == '\t')
      fputc(c, f);
  }
}

/* "refaults 1234 -> 1543 (+25.0%), allowed +10%" */
static void failure_text(const bh_gate_result_t *r, char *buf, size_t len) {
  char vb[48], vn[48], ch[32], gate[96];
  bh_gate_format(r->gate, gate, sizeof(gate));
  const char *m = r->gate->metric;
  snprintf(buf, len, "%s %s -> %s (%s), allowed %s", m, value_text(m, r->baseline, vb, 48),
           value_text(m, r->now, vn, 48), change_text(r->baseline, r->now, ch, 32),
           strchr(gate, '=') + 1);
}

static void junit(const bh_cli_gate_t *g, FILE *f, int tests, int failures) {
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f, "<testsuites name=\"buddyhint compare\" tests=\"%d\" failures=\"%d\">\n", tests,
          failures);
  for (size_t first = 0; first < g->nv; first++) { /* a test suite per trace, in order */
    const char *trace = g->v[first].trace;
    size_t ncases = 0, suite_fail = 0, seen = 0;
    for (size_t i = 0; i < g->nv; i++) {
      bool same = !strcmp(g->v[i].trace, trace);
      seen += same && i < first;
      ncases += same;
      suite_fail += same && g->v[i].nfail > 0;
    }
    if (seen)
      continue; /* its suite was written with its first run */
    fprintf(f, "  <testsuite name=\"");
    xml_text(f, trace);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\">\n", ncases, suite_fail);
    for (size_t i = first; i < g->nv; i++) {
      const struct verdict *v = &g->v[i];
      if (strcmp(v->trace, trace))
        continue;
      fprintf(f, "    <testcase classname=\"");
      xml_text(f, v->trace);
      fprintf(f, "\" name=\"");
      xml_text(f, v->label);
      fprintf(f, "\" time=\"%.3f\">\n", v->wall);
      for (size_t k = 0; k < v->ngates; k++) {
        char text[512];
        failure_text(&v->res[k], text, sizeof(text));
        if (v->res[k].status != BH_GATE_FAIL)
          continue;
        fprintf(f, "      <failure type=\"regression\" message=\"");
        xml_text(f, text);
        fprintf(f, "\">");
        xml_text(f, text);
        fprintf(f, "</failure>\n");
      }
      fprintf(f, "      <system-out>");
      for (size_t k = 0; k < v->ngates; k++) {
        char text[512];
        failure_text(&v->res[k], text, sizeof(text));
        fprintf(f, "%s: ", bh_gate_status_name(v->res[k].status));
        xml_text(f, text);
        fputc('\n', f);
      }
      if (v->differs) {
        fprintf(f, "options differ from the baseline run: ");
        xml_text(f, v->differs);
        fputc('\n', f);
      }
      fprintf(f, "</system-out>\n    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n");
  }
  fprintf(f, "</testsuites>\n");
}

static void md_text(FILE *f, const char *s) {
  for (; *s; s++)
    fprintf(f, *s == '|' ? "\\|" : *s == '\n' ? " " : "%c", *s);
}

static void markdown(const bh_cli_gate_t *g, FILE *f, int ngates, int nfailed) {
  fprintf(f, "### buddyhint compare: %s\n\n",
          nfailed ? "regressions against the baseline" : "no regression against the baseline");
  fprintf(f, "%d of %d gates failed (baseline: `%s`).\n\n", nfailed, ngates, g->a.baseline);
  fprintf(f, "| trace | strategy | figure | baseline | now | change | allowed | result |\n");
  fprintf(f, "|---|---|---|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < g->nv; i++) {
    const struct verdict *v = &g->v[i];
    for (size_t k = 0; k < v->ngates; k++) {
      const bh_gate_result_t *r = &v->res[k];
      char vb[48], vn[48], ch[32], gate[96];
      const char *m = r->gate->metric;
      bh_gate_format(r->gate, gate, sizeof(gate));
      fputs("| ", f);
      md_text(f, v->trace);
      fputs(" | ", f);
      md_text(f, v->label);
      fprintf(f, " | %s | %s | %s | %s | %s | %s |\n", m, value_text(m, r->baseline, vb, 48),
              value_text(m, r->now, vn, 48), change_text(r->baseline, r->now, ch, 32),
              strchr(gate, '=') + 1,
              r->status == BH_GATE_FAIL ? "**FAIL**" : bh_gate_status_name(r->status));
    }
  }
  for (size_t i = 0; i < g->nv; i++)
    if (g->v[i].differs) {
      fputs("\n", f);
      md_text(f, g->v[i].label);
      fputs(" on ", f);
      md_text(f, g->v[i].trace);
      fputs(": options differ from the baseline run: ", f);
      md_text(f, g->v[i].differs);
      fputs("\n", f);
    }
}

static void runs_free(struct run_set *set) {
  for (size_t i = 0; set->runs && i < set->n; i++) {
    json_decref(set->runs[i].flat);
    free(set->runs[i].figs);
  }
  free(set->runs);
  json_decref(set->doc);
}

static void gate_free(bh_cli_gate_t *g) {
  for (size_t i = 0; i < g->nv; i++)
    free(g->v[i].differs);
  runs_free(&g->base);
  free(g->v);
  free(g);
}

int bh_cli_gate_finish(bh_cli_gate_t *g, int rc) {
  if (!g)
    return rc;
  int ngates = 0, nfailed = 0, failed_cases = 0;
  bool all = true;
  for (size_t i = 0; i < g->nv; i++) {
    const struct verdict *v = &g->v[i];
    all &= v->done;
    ngates += (int)v->ngates;
    nfailed += v->nfail;
    failed_cases += v->nfail > 0;
    for (size_t k = 0; v->done && k < v->ngates; k++) {
      char text[512];
      if (v->res[k].status != BH_GATE_FAIL)
        continue;
      failure_text(&v->res[k], text, sizeof(text));
      fprintf(stderr, "buddyhint " VERB ": regression: %s, %s: %s\n", v->trace, v->label, text);
    }
  }
  if (rc || !all) { /* the runs did not all end: reports already there are left as they were */
    bh_cli_abort_out(g->junit);
    bh_cli_abort_out(g->md);
    gate_free(g);
    return rc ? rc : BH_EXIT_FAIL;
  }
  if (g->junit)
    junit(g, g->junit, (int)g->nv, failed_cases);
  if (g->md)
    markdown(g, g->md, ngates, nfailed);
  fprintf(stderr, "buddyhint " VERB ": %d of %d gates failed against %s\n", nfailed, ngates,
          g->a.baseline);
  rc = bh_cli_close_out(g->junit);
  rc |= bh_cli_close_out(g->md);
  gate_free(g);
  return rc ? rc : nfailed ? BH_EXIT_FAIL : BH_EXIT_OK;
}

/* ---- compare --runs FILE: a file of runs gated without replaying ---- */

/* Run r of the file, planned and gated against its baseline run: 0, or the exit status. */
static int gate_file_run(bh_cli_gate_t *g, const char *path, size_t i, struct base_run *r) {
  const char *trace = r->name ? r->name : "?";
  if (!r->sha)
    return bh_cli_usage_error(VERB, "%s: run %zu (%s) has no provenance.trace.sha256", path, i + 1,
                              r->label);
  json_t *speed = json_object_get(r->flat, "provenance.options.speed");
  const char *strategy = flat_str(r->flat, "provenance.options.strategy"),
             *backing = flat_str(r->flat, "provenance.arena.backing");
  struct who w = {r->label, strategy ? strategy : r->label, backing ? backing : "mmap",
                  json_is_number(speed) ? json_number_value(speed) : 0};
  struct verdict *v = verdict_new(g, trace, r->label);
  if (!v) {
    fprintf(stderr, "buddyhint " VERB ": out of memory\n");
    return BH_EXIT_FAIL;
  }
  if (!(v->base = match(g, trace, r->sha, &w, r->flat, &v->differs)))
    return BH_EXIT_USAGE;
  int rc = gates_of(g, trace, &w, v);
  return rc ? rc : verdict_check(v, r->figs, r->nfigs);
}

int bh_cli_gate_files(const struct bh_cli_gate_args *a, const char *runs_path) {
  if (!a->baseline)
    return bh_cli_usage_error(VERB, "--runs FILE gates FILE against a baseline: give "
                                    "--baseline FILE");
  const char *inputs[] = {runs_path, a->baseline, NULL};
  bh_cli_gate_t *g = NULL;
  struct run_set now = {0};
  int rc = bh_cli_gate_open(a, inputs, &g);
  if (!rc)
    rc = runs_load(&now, "--runs", runs_path);
  for (size_t i = 0; !rc && i < now.n; i++)
    rc = gate_file_run(g, runs_path, i, &now.runs[i]);
  FILE *tty = bh_cli_gate_on_stdout(g) ? stderr : stdout;
  for (size_t i = 0; !rc && i < g->nv; i++) {
    if (!i || strcmp(g->v[i].trace, g->v[i - 1].trace)) {
      fprintf(tty, "%strace %s\n", i ? "\n" : "", g->v[i].trace);
      table_head(tty, g);
    }
    table(tty, &g->v[i], now.runs[i].figs, now.runs[i].nfigs);
  }
  runs_free(&now);
  return bh_cli_gate_finish(g, rc);
}
