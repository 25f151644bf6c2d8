/* buddyhint replay: one trace, one strategy, a summary. */
#include "cli/replay_opts.h"
#include "cli/run_json.h"

#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint replay TRACE [OPTIONS]\n\n"
          "Replays TRACE (ftrace or perf script text of kmem:mm_page_alloc/mm_page_free, a\n"
          "native trace, a trace-cmd trace.dat or a perf.data; each gzip/zstd compressed or not)\n"
          "through the allocator with one hinting strategy, on a virtual clock from the trace\n"
          "timestamps, and prints a summary.\n\n"
          "options:\n%s"
          "  --reports FILE        write every block the strategy reported as CSV\n"
          "                        (trace_time_s,pfn,order: the time on the trace's clock,\n"
          "                        where the timeline's time_s is virtual time from 0)\n"
          "  --placements FILE     with a start state and the arena choosing, write every\n"
          "                        allocation as CSV: the kernel's pfn, the arena's, and where\n"
          "                        the kernel's block was (trace_time_s,cpu,order,migratetype,\n"
          "                        kernel_pfn,pfn,where; where as placement_agreement's\n"
          "                        misses_by_where, \"same\" for a match)\n"
          "  --hex                 pfns in --reports and --placements in hex (0x...), as\n"
          "                        kernel tools print them\n\n"
          "In the summary, \"reported\" is all the memory the strategy reported, and \"of it\n"
          "resident and returned\" the resident memory the reports took back (returned_bytes).\n"
          "\n%s",
          bh_cli_replay_help, bh_cli_timeline_help);
}

/* replay's own options: --reports FILE, --placements FILE and --hex. */
struct replay_own {
  const char *reports;
  const char *placements;
  bool hex;
};

static int replay_extra(int argc, char **argv, int *i, void *ctx) {
  struct replay_own *o = ctx;
  if (!strcmp(argv[*i], "--hex")) {
    o->hex = true;
    (*i)++;
    return 1;
  }
  const char *v;
  int r = bh_cli_opt(argc, argv, i, "reports", &v);
  if (r > 0)
    o->reports = v;
  if (r == 0 && (r = bh_cli_opt(argc, argv, i, "placements", &v)) > 0)
    o->placements = v;
  return r;
}

/* Runs one configured replay and reports; the exit code of the verb. */
int bh_cli_run_one(const char *verb, bh_cli_replay_t *c, const char *trace, bool print) {
  FILE *json = NULL, *timeline = NULL;
  const char *inputs[] = {trace, NULL}; /* no output may be the trace */
  bh_cli_set_inputs(inputs);
  int rc = bh_cli_open_out(verb, c->json_path, &json);
  if (!rc && (rc = bh_cli_open_out(verb, c->timeline_path, &timeline)) != 0)
    bh_cli_abort_out(json);
  bh_cli_set_inputs(NULL);
  if (rc)
    return rc;
  c->cfg.trace = trace;
  c->cfg.timeline = timeline;
  bh_cli_run_info_t info = {.cfg = &c->cfg, .trace = trace};
  /* the hash of the bytes the replay read, taken as it reads them */
  bh_cli_hash_t *hash = json ? bh_cli_hash_attach(&c->cfg) : NULL;
  bh_replay_summary_t s;
  char err[1024];
  rc = bh_replay_run(&c->cfg, &s, err, sizeof(err));
  if (json)
    bh_cli_hash_finish(hash, &c->cfg, rc ? NULL : trace, &info);
  if (rc) {
    fprintf(stderr, "%s\n", err[0] ? err : bh_strerror(rc));
    bh_cli_abort_out(timeline); /* a file already there is left as it was */
    bh_cli_abort_out(json);
    return rc == BH_EFORMAT || rc == BH_EINVAL || rc == BH_ENOENT || rc == BH_ESYS || rc == BH_EIO
               ? BH_EXIT_USAGE
               : BH_EXIT_FAIL;
  }
  bh_cli_warn_lost(verb, &s);
  int out_rc = bh_cli_close_out(timeline);
  if (print) /* with --json -, standard output holds the JSON only */
    bh_cli_print_summary(json == stdout ? stderr : stdout, &s);
  if (s.nr_warnings) {
    FILE *w = print && json != stdout ? stdout : stderr;
    fprintf(w, "\n");
    bh_cli_print_warnings(w, &s, 1);
  }
  if (json && bh_cli_run_json(json, &s, &info) == BH_ENOMEM) {
    fprintf(stderr, "buddyhint %s: out of memory writing the JSON\n", verb);
    bh_cli_abort_out(json);
    json = NULL;
    out_rc = BH_EXIT_FAIL;
  }
  out_rc |= bh_cli_close_out(json);
  return out_rc || s.check_violations ? BH_EXIT_FAIL : BH_EXIT_OK;
}

int cmd_replay(int argc, char **argv) {
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  const char *trace;
  struct replay_own own = {NULL, NULL, false};
  int r = bh_cli_replay_args(argc, argv, &c, &trace, replay_extra, &own, help);
  const char *reports_path = own.reports;
  c.cfg.reports_hex = own.hex;
  if (r) {
    bh_cli_replay_free(&c);
    return r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  }
  if (bh_cli_one_strategy("replay", &c)) {
    bh_cli_replay_free(&c);
    return BH_EXIT_USAGE;
  }
  bh_cli_replay_finish(&c);
  const char *name = c.cfg.hint.strategy ? c.cfg.hint.strategy : "none";
  if (bh_cli_replay_check("replay", &c) ||
      bh_cli_check_strategy("replay", &c, name, name, c.opts, c.nopts)) {
    bh_cli_replay_free(&c);
    return BH_EXIT_USAGE;
  }
  FILE *reports = NULL, *placements = NULL;
  const char *placements_path = own.placements;
  int stdouts = (reports_path && !strcmp(reports_path, "-")) +
                (placements_path && !strcmp(placements_path, "-")) +
                (c.json_path && !strcmp(c.json_path, "-"));
  if (stdouts > 1) {
    bh_cli_usage_error("replay", "--reports -, --placements - and --json -: only one output "
                                 "can be standard output");
    bh_cli_replay_free(&c);
    return BH_EXIT_USAGE;
  }
  if (reports_path && placements_path && !strcmp(reports_path, placements_path)) {
    bh_cli_usage_error("replay", "--reports and --placements name the same file");
    bh_cli_replay_free(&c);
    return BH_EXIT_USAGE;
  }
  const char *inputs[] = {trace, NULL}; /* no output may be the trace */
  bh_cli_set_inputs(inputs);
  r = bh_cli_open_out("replay", reports_path, &reports);
  if (!r && (r = bh_cli_open_out("replay", placements_path, &placements)) != 0)
    bh_cli_abort_out(reports);
  bh_cli_set_inputs(NULL);
  if (!r) {
    c.cfg.reports = reports;
    c.cfg.placements = placements;
    r = bh_cli_run_one("replay", &c, trace, true);
    if (r != BH_EXIT_OK && r != BH_EXIT_FAIL) {
      bh_cli_abort_out(reports); /* the run did not happen: a file already there stays */
      bh_cli_abort_out(placements);
    } else {
      int closed = bh_cli_close_out(reports);
      closed |= bh_cli_close_out(placements);
      if (closed && r == BH_EXIT_OK)
        r = BH_EXIT_FAIL;
    }
  }
  bh_cli_replay_free(&c);
  return r;
}
