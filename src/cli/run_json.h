/* A run's JSON (replay, compare, sweep jobs): the summary and its provenance. */
#ifndef BH_CLI_RUN_JSON_H
#define BH_CLI_RUN_JSON_H

#include "cli/cli.h"

#include <buddyhint/replay.h>

#include <jansson.h>

/* How a run was made: its configuration (strategy and its options as that run had them) and
 * its trace, with the SHA-256 of bh_cli_trace_sha256 ("" if unknown). */
typedef struct bh_cli_run_info {
  const bh_replay_config_t *cfg;
  const char *trace;
  char sha256[65];
  uint64_t bytes;
} bh_cli_run_info_t;

/* The command's arguments, for the provenance (main.c; kept, not copied). */
void bh_cli_set_argv(int argc, char **argv);
/* The git revision the command was built from, or "unknown". */
const char *bh_cli_git_revision(void);
/* The SHA-256 of a regular file, as 64 hex digits, and its size: 0, or -1 (standard input, a
 * FIFO, an unreadable file: hex is ""). */
int bh_cli_trace_sha256(const char *path, char hex[65], uint64_t *bytes);
/*
 * The same hash taken while the replay reads the trace, which then is read once instead of
 * twice: bh_cli_hash_attach before bh_replay_run (it sets cfg->trace_bytes; NULL if out of
 * memory, which is fine), bh_cli_hash_finish after it, which fills info->sha256 and
 * info->bytes, clears cfg's hook and frees h.  Where the replay's first reading did not pass
 * every byte of the file (a trace.dat or perf.data read by its own library, a failed run),
 * bh_cli_hash_finish reads the file itself, as bh_cli_trace_sha256: the hash is the same.
 */
typedef struct bh_cli_hash bh_cli_hash_t;
bh_cli_hash_t *bh_cli_hash_attach(bh_replay_config_t *cfg);
void bh_cli_hash_finish(bh_cli_hash_t *h, bh_replay_config_t *cfg, const char *path,
                        bh_cli_run_info_t *info);
/* The run as a JSON object (info NULL: the summary only); NULL if out of memory. */
json_t *bh_cli_run_object(const bh_replay_summary_t *s, const bh_cli_run_info_t *info);
/* One run, indented, and a newline: 0 or BH_EIO / BH_ENOMEM. */
int bh_cli_run_json(FILE *f, const bh_replay_summary_t *s, const bh_cli_run_info_t *info);
/* {"runs": [...]} of n runs. */
int bh_cli_runs_json(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                     int n);
/* The same in parts, for runs that come in several batches: start, add (each batch; *count
 * is the runs written so far, 0 at first), end. */
void bh_cli_runs_json_start(FILE *f);
int bh_cli_runs_json_add(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                         int n, int *count);
int bh_cli_runs_json_end(FILE *f);
/* One CSV row per run: a header, then the run objects with nested objects flattened into
 * dotted columns (provenance.options.seed), arrays as JSON text; the columns are the union
 * over the runs, in order of first appearance, empty where a run has none. */
int bh_cli_runs_csv(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                    int n);

#endif
