/* Options shared by replay, compare and check, and their output. */
#ifndef BH_CLI_REPLAY_OPTS_H
#define BH_CLI_REPLAY_OPTS_H

#include "cli/cli.h"

#include <buddyhint/replay.h>

#define BH_CLI_MAX_OPTS 32

typedef struct bh_cli_replay {
  bh_replay_config_t cfg;
  bh_opt_t opts[BH_CLI_MAX_OPTS];
  size_t nopts;
  const char *json_path, *timeline_path;
  bool backing_set;
} bh_cli_replay_t;

extern const char bh_cli_replay_help[];

void bh_cli_replay_init(bh_cli_replay_t *c);
/* One option at argv[*i]: 1 consumed (and *i advanced), 0 not a replay option, -1 error. */
int bh_cli_replay_opt(int argc, char **argv, int *i, bh_cli_replay_t *c);
void bh_cli_replay_finish(bh_cli_replay_t *c);
void bh_cli_replay_free(bh_cli_replay_t *c);
void bh_cli_print_summary(FILE *f, const bh_replay_summary_t *s);
/* The warning on stderr when the trace lost events. */
void bh_cli_warn_lost(const char *verb, const bh_replay_summary_t *s);
/* Opens path for writing ("-" = stdout, NULL = none); -1 after an error message. */
int bh_cli_open_out(const char *verb, const char *path, FILE **f);
void bh_cli_close_out(FILE *f);
/* Runs one configured replay of trace, prints the summary if asked, writes --json; returns
 * the verb's exit code (1 if the checker found violations). */
int bh_cli_run_one(const char *verb, bh_cli_replay_t *c, const char *trace, bool print);

/* Parses TRACE and the shared options (extra, if given, sees every argument first and answers
 * like bh_cli_replay_opt).  0 ok, 1 help printed, -1 usage error printed. */
int bh_cli_replay_args(int argc, char **argv, bh_cli_replay_t *c, const char **trace,
                       int (*extra)(int argc, char **argv, int *i, void *ctx), void *ctx,
                       void (*help)(FILE *));

#endif
