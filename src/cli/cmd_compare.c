/* buddyhint compare: the same trace once per strategy, one table. */
#include "cli/baseline.h"
#include "cli/replay_opts.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 16

static void help(FILE *f) {
  fprintf(f, "usage: buddyhint compare TRACE [--strategies LIST] [OPTIONS]\n\n"
             "Replays TRACE once per strategy (default none,bitmap,bubble) with the same\n"
             "configuration and prints one table; --json FILE writes {\"runs\": [...]}.\n"
             "Strategy options are given as --opt NAME.KEY=VALUE, e.g. --opt bubble.delay=1s.\n\n"
             "options:\n"
             "  --strategies LIST     comma-separated strategy names\n%s",
          bh_cli_replay_help);
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void table(FILE *f, const bh_replay_summary_t *runs, int n) {
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s\n", "strategy", "rss_peak",
          "rss_final", "live_end", "reported", "madvises", "refaults", "failed", "wall_s",
          "cpu_s", "check");
  fprintf(f, "%-21s %10s %10s %10s %10s %9s %9s %8s %8s %8s %6s\n", "", "MiB", "MiB", "MiB",
          "MiB", "calls", "pages", "allocs", "", "", "errors");
  for (int i = 0; i < n; i++) {
    const bh_replay_summary_t *s = &runs[i];
    fprintf(f, "%-21s %10.1f %10.1f %10.1f %10.1f %9lu %9lu %8lu %8.2f %8.2f %6ld\n",
            s->strategy, mib(s->rss_peak_bytes), mib(s->rss_final_bytes),
            mib(s->live_final_bytes), mib(s->reported_bytes), (unsigned long)s->madvise_calls,
            (unsigned long)s->refaults, (unsigned long)s->alloc_failures, s->wall_seconds,
            s->cpu_seconds, s->check_violations);
  }
}

/* The options NAME.KEY=VALUE meant for strategy NAME, as KEY=VALUE. */
static size_t opts_for(const bh_cli_replay_t *c, const char *name, bh_opt_t *out) {
  size_t n = 0, len = strlen(name);
  for (size_t i = 0; i < c->nopts; i++) {
    const char *k = c->opts[i].key, *dot = strchr(k, '.');
    if (dot && (size_t)(dot - k) == len && !strncmp(k, name, len))
      out[n++] = (bh_opt_t){dot + 1, c->opts[i].value};
  }
  return n;
}

static int run_all(bh_cli_replay_t *c, const char *trace, char *list) {
  bh_replay_summary_t *runs = calloc(MAX_RUNS, sizeof(*runs));
  FILE *json = NULL;
  int n = 0, rc = BH_EXIT_OK;
  if (!runs || bh_cli_open_out("compare", c->json_path, &json)) {
    free(runs);
    return BH_EXIT_FAIL;
  }
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    if (n == MAX_RUNS) {
      rc = bh_cli_usage_error("compare", "at most %d strategies", MAX_RUNS);
      break;
    }
    bh_opt_t opts[BH_CLI_MAX_OPTS];
    c->cfg.hint.strategy = name;
    c->cfg.hint.opts = opts;
    c->cfg.hint.nopts = opts_for(c, name, opts);
    c->cfg.trace = trace;
    char err[1024];
    if (c->cfg.progress)
      fprintf(stderr, "compare: %s\n", name);
    int e = bh_cli_is_baseline(name) /* jemalloc, in a process of its own */
                ? bh_cli_baseline_run(&c->cfg, name, &runs[n], err, sizeof(err))
                : bh_replay_run(&c->cfg, &runs[n], err, sizeof(err));
    if (e) {
      fprintf(stderr, "%s\n", err[0] ? err : bh_strerror(e));
      rc = e == BH_ENOMEM || e == BH_ESYS ? BH_EXIT_FAIL : BH_EXIT_USAGE;
      break;
    }
    if (runs[n].check_violations)
      rc = BH_EXIT_FAIL;
    n++;
  }
  if (n) {
    printf("trace %s (%s), %.0f MiB arena, %s backing, %lu events, %.1f s virtual\n\n", trace,
           runs[0].trace_format, mib(runs[0].memory_bytes), runs[0].backing,
           (unsigned long)runs[0].events, runs[0].virtual_seconds);
    table(stdout, runs, n);
  }
  if (json && n) {
    fprintf(json, "{\"runs\": [\n");
    for (int i = 0; i < n; i++) {
      bh_replay_summary_json(&runs[i], json, 2);
      fprintf(json, "%s\n", i + 1 < n ? "," : "");
    }
    fprintf(json, "]}\n");
  }
  bh_cli_close_out(json);
  free(runs);
  return rc;
}

/* compare's own options: --strategies, and a word about replay-only ones. */
static int compare_opt(int argc, char **argv, int *i, void *ctx) {
  const char *a = argv[*i];
  if (!strcmp(a, "--strategy") || !strncmp(a, "--strategy=", 11) || !strcmp(a, "--timeline") ||
      !strncmp(a, "--timeline=", 11)) {
    bh_cli_usage_error("compare", "'%s' is for replay; compare takes --strategies", a);
    return -1;
  }
  return bh_cli_opt(argc, argv, i, "strategies", (const char **)ctx);
}

int cmd_compare(int argc, char **argv) {
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  const char *trace, *list = "none,bitmap,bubble";
  int r = bh_cli_replay_args(argc, argv, &c, &trace, compare_opt, &list, help);
  for (size_t k = 0; !r && k < c.nopts; k++)
    if (!strchr(c.opts[k].key, '.')) {
      bh_cli_usage_error("compare", "--opt %s: name the strategy, as NAME.%s", c.opts[k].key,
                         c.opts[k].key);
      r = -1;
    }
  if (!r) {
    bh_cli_replay_finish(&c);
    char *copy = strdup(list);
    r = copy ? run_all(&c, trace, copy) : BH_EXIT_FAIL;
    free(copy);
  } else {
    r = r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  }
  bh_cli_replay_free(&c);
  return r;
}
