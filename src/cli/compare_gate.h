/*
 * compare --baseline: each run gated against the run of the same trace content and strategy
 * in an earlier compare --json (or a merged sweep), with the verdict as exit status, lines on
 * standard error, a JUnit XML report and a Markdown summary (compare_gate.c).
 */
#ifndef BH_CLI_COMPARE_GATE_H
#define BH_CLI_COMPARE_GATE_H

#include "cli/run_json.h"

#include <buddyhint/gate.h>

#define BH_CLI_GATE_MAX_TOLERANCES 32

struct bh_cli_gate_args {
  const char *baseline, *junit, *markdown;
  const char *tolerances[BH_CLI_GATE_MAX_TOLERANCES];
  int ntolerances;
  bool allow_noisy;
};

typedef struct bh_cli_gate bh_cli_gate_t;

/* One run of a compare, as the gate sees it before it runs. */
typedef struct bh_cli_gate_run {
  const char *label;    /* its --strategies entry */
  const char *strategy; /* the strategy's name (jemalloc[...] for the baseline) */
  const bh_cli_run_info_t *info;
} bh_cli_gate_run_t;

/*
 * compare's gate options: one of them (--baseline, --tolerance, --junit, --markdown,
 * --allow-noisy) at argv[*i], as bh_cli_opt answers (1 consumed, 0 not one, -1 error).
 */
int bh_cli_gate_opt(int argc, char **argv, int *i, struct bh_cli_gate_args *a);
/* Reads the baseline, parses the tolerances and opens the reports (inputs: the files they
 * may not overwrite).  *g is NULL without --baseline.  0, or the exit status after a message. */
int bh_cli_gate_open(const struct bh_cli_gate_args *a, const char *const *inputs,
                     bh_cli_gate_t **g);
/* True if a report goes to standard output (the table then goes to standard error). */
bool bh_cli_gate_on_stdout(const bh_cli_gate_t *g);
/*
 * Before the runs of trace (content sha256): each run's baseline run, and its gates, which
 * may not be on a figure that moves from run to run without --allow-noisy.  0, or
 * BH_EXIT_USAGE after a message (the baseline does not match, a gate is refused).
 */
int bh_cli_gate_plan(bh_cli_gate_t *g, const char *trace, const char *sha256,
                     const bh_cli_gate_run_t *runs, int n);
/* After them: the runs now against their baselines, as a table on tty.  0, or BH_EXIT_USAGE
 * after a message (a gated figure the run does not have). */
int bh_cli_gate_runs(bh_cli_gate_t *g, FILE *tty, const bh_replay_summary_t *runs,
                     const bh_cli_run_info_t *infos, int n);
/* At the end (rc: the command's status so far): a line per failed gate, the reports (given
 * up if rc is not 0), and the status: rc if not 0, else 1 if a gate failed, else 0.  Frees g
 * (NULL accepted: rc). */
int bh_cli_gate_finish(bh_cli_gate_t *g, int rc);

/* compare --runs FILE --baseline FILE: the runs of FILE (as the baseline may be) gated against
 * the baseline without replaying, with the same table, reports and exit status. */
int bh_cli_gate_files(const struct bh_cli_gate_args *a, const char *runs_path);

extern const char bh_cli_gate_help[];

#endif
