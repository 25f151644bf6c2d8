/* Options shared by replay, compare and check, and their output. */
#ifndef BH_CLI_REPLAY_OPTS_H
#define BH_CLI_REPLAY_OPTS_H

#include "cli/cli.h"

#include <buddyhint/replay.h>

#define BH_CLI_MAX_OPTS 32
/* --speed bounds: below the minimum a replay's wall-clock sleeps would overflow */
#define BH_CLI_SPEED_MIN 1e-3
#define BH_CLI_SPEED_MAX 1e6

typedef struct bh_cli_replay {
  bh_replay_config_t cfg;
  bh_opt_t opts[BH_CLI_MAX_OPTS];
  size_t nopts;
  const char *json_path, *timeline_path;
  bool backing_set;
  char *strategy_buf; /* --strategy NAME:KEY=VALUE... split in place (bh_cli_one_strategy) */
} bh_cli_replay_t;

extern const char bh_cli_replay_help[];
/* The glossary of compare's table columns, and of the timeline CSV's columns. */
extern const char bh_cli_table_help[];
extern const char bh_cli_timeline_help[];

void bh_cli_replay_init(bh_cli_replay_t *c);
/* One option at argv[*i]: 1 consumed (and *i advanced), 0 not a replay option, -1 error. */
int bh_cli_replay_opt(int argc, char **argv, int *i, bh_cli_replay_t *c);
void bh_cli_replay_finish(bh_cli_replay_t *c);
/*
 * For a verb that runs one strategy (replay, check): compare's spellings.  --strategy
 * NAME:KEY=VALUE[:KEY=VALUE...] becomes NAME with those options (after the --opt ones, so that
 * they win), and --opt NAME.KEY=VALUE becomes KEY=VALUE when NAME is the strategy; an --opt
 * naming another strategy is a usage error, as is a malformed entry.  Call before
 * bh_cli_replay_finish.  0, or -1 after a usage error.
 */
int bh_cli_one_strategy(const char *verb, bh_cli_replay_t *c);
/*
 * What a replay would refuse only after reading its trace, checked before: --memory against
 * its bounds (one largest block .. 2^32 pages), --madvise against --backing.  0, or -1 after
 * a usage error.
 */
int bh_cli_replay_check(const char *verb, const bh_cli_replay_t *c);
/* A strategy and its options, attached to a small sim arena of the replay's orders and
 * detached: 0, or -1 after a usage error naming label. */
int bh_cli_check_strategy(const char *verb, const bh_cli_replay_t *c, const char *label,
                          const char *name, const bh_opt_t *opts, size_t nopts);
void bh_cli_replay_free(bh_cli_replay_t *c);
void bh_cli_print_summary(FILE *f, const bh_replay_summary_t *s);
/* The warning on stderr when the trace lost events. */
void bh_cli_warn_lost(const char *verb, const bh_replay_summary_t *s);
/* The warnings of runs [0, n) (bh_replay_summary_t.warnings), each once, as "warning: ..." lines
 * (nothing without any); --strict made them errors instead. */
void bh_cli_print_warnings(FILE *f, const bh_replay_summary_t *runs, int n);
/* The output helper of cli.h for a stdio user: opens path ("-" = stdout, NULL = none) into
 * *f; BH_EXIT_OK, or BH_EXIT_USAGE / BH_EXIT_FAIL after the message (as bh_cli_out_open). */
int bh_cli_open_out(const char *verb, const char *path, FILE **f);
/* Finishes an output of bh_cli_open_out (NULL accepted): BH_EXIT_OK, or BH_EXIT_FAIL after
 * "buddyhint VERB: FILE: write failed: ..." (bh_cli_out_close). */
int bh_cli_close_out(FILE *f);
/* Gives it up, after a failed run: a regular file is left as it was (bh_cli_out_abort). */
void bh_cli_abort_out(FILE *f);
/* Runs one configured replay of trace, prints the summary if asked, writes --json; returns
 * the verb's exit code (1 if the checker found violations). */
int bh_cli_run_one(const char *verb, bh_cli_replay_t *c, const char *trace, bool print);

/* Parses TRACE and the shared options (extra, if given, sees every argument first and answers
 * like bh_cli_replay_opt).  0 ok, 1 help printed, -1 usage error printed. */
int bh_cli_replay_args(int argc, char **argv, bh_cli_replay_t *c, const char **trace,
                       int (*extra)(int argc, char **argv, int *i, void *ctx), void *ctx,
                       void (*help)(FILE *));

#endif
