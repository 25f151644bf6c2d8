/*
 * Sweeps: a grid of replays (traces x strategies x replay options x seeds) read from a YAML
 * spec, expanded into a list of jobs, each one replay with a stable id and its own JSON
 * result.  `buddyhint sweep` writes the list and hands it to an engine (this machine, a Slurm
 * job array, GNU parallel); `buddyhint merge` and `buddyhint plot` read the results back.
 *
 * A sweep folder DIR holds
 *   sweep.json         the job list (manifest): columns, and per job its id, grid coordinates,
 *                      trace and replay arguments
 *   jobs/ID.json       a finished job's replay summary; it appears only by an atomic link of a
 *                      complete, synced file, so its presence means the job is done
 *   jobs/ID.err        a failed job's standard error, with the exit status at the end
 *   slurm/, parallel/  the scripts and job lists the engines wrote (never rewritten)
 *
 * A job id is a hash of what the job replays (the trace's path as the spec names it, the
 * strategy and its options, the replay options, the seed), independent of the order in which
 * the spec lists them: expanding the same spec again gives the same ids, and growing the grid
 * keeps the ids of the jobs it had.
 */
#ifndef BH_CLI_SWEEP_H
#define BH_CLI_SWEEP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define BH_SWEEP_ID_LEN 16 /* hex digits */
#define BH_SWEEP_MAX_JOBS 200000

/* The fixed coordinate columns; the spec's own axes follow them. */
enum { BH_SWEEP_COL_TRACE, BH_SWEEP_COL_STRATEGY, BH_SWEEP_COL_STRATEGY_NAME };

typedef struct bh_sweep_job {
  char id[BH_SWEEP_ID_LEN + 1];
  char *trace;   /* the path the job reads (absolute) */
  char **coords; /* one per column; NULL where the column does not apply to this job */
  char **args;   /* replay arguments after the trace, e.g. "--strategy", "bubble", ... */
  size_t nargs;
} bh_sweep_job_t;

typedef struct bh_sweep {
  char **cols; /* "trace", "strategy", "strategy_name", then STRATEGY.KEY, options, "seed" */
  size_t ncols;
  bh_sweep_job_t *jobs;
  size_t njobs, cap;
} bh_sweep_t;

enum bh_sweep_state {
  BH_SWEEP_DONE,    /* jobs/ID.json is there and is a JSON object */
  BH_SWEEP_FAILED,  /* no result, jobs/ID.err is there */
  BH_SWEEP_MISSING, /* neither: never run, still running, or killed with its runner */
  BH_SWEEP_CORRUPT  /* jobs/ID.json is there but is not a JSON object: not ours, left alone */
};

/*
 * Reads and expands a spec.  Every value is checked before anything runs: replay options
 * through the replay's own parser, strategy options by attaching the strategy to a small sim
 * arena, trace globs must match files.  Returns 0 with *out set, or a negative BH_E* code
 * after printing "SPEC:LINE: what is wrong" to stderr.
 */
int bh_sweep_from_spec(const char *path, bh_sweep_t **out);
/* The same from YAML text in memory; name is used in messages, base for relative traces. */
int bh_sweep_from_text(const char *text, size_t len, const char *name, const char *base,
                       bh_sweep_t **out);
void bh_sweep_free(bh_sweep_t *s);

/*
 * Makes DIR a sweep folder for s: creates DIR and DIR/jobs, writes DIR/sweep.json.  A folder
 * that holds a sweep already is reused when its jobs are a subset of s's (the same spec, or a
 * grown grid); a folder with other jobs, or with files but no sweep.json, is refused.
 * Returns 0 or a negative BH_E* code after a message.
 */
int bh_sweep_prepare(const bh_sweep_t *s, const char *dir);
/* Reads DIR/sweep.json.  0 with *out set, or a negative BH_E* code after a message. */
int bh_sweep_load(const char *dir, bh_sweep_t **out);
/* The job with this id, or NULL. */
const bh_sweep_job_t *bh_sweep_find(const bh_sweep_t *s, const char *id);
/* The job's state in DIR (enum bh_sweep_state). */
int bh_sweep_state(const char *dir, const char *id);
/* The column's index, or -1. */
int bh_sweep_col(const bh_sweep_t *s, const char *name);

/* ---- running jobs (sweep_job.c) ---- */

/*
 * Starts a job in a child process: its standard error goes to a file beside its id, the
 * replay's summary to a temporary file that is synced and then linked to jobs/ID.json.
 * Returns the child's pid, or -1 after a message.
 */
pid_t bh_sweep_job_start(const char *dir, const bh_sweep_job_t *j);
/* After waitpid: true if the job is done; else its error file says why (the exit status or
 * signal appended). */
bool bh_sweep_job_end(const char *dir, const bh_sweep_job_t *j, pid_t pid, int status);
/* Runs one job to its end in a child process; true if done. */
bool bh_sweep_job_run(const char *dir, const bh_sweep_job_t *j);
/* "DIR/jobs/ID.SUFFIX" into buf; false if it does not fit. */
bool bh_sweep_job_path(char *buf, size_t len, const char *dir, const char *id, const char *suffix);

/* ---- the merged table (sweep_table.c) ---- */

typedef struct bh_sweep_table {
  json_t *rows;    /* array of flat objects: id, coordinates, then the summary's keys */
  json_t *columns; /* array of the column names, in order */
  json_t *colset;  /* the same as an object's keys: a column is found in constant time */
  json_t *coords;  /* array of the names of the coordinate columns (after "id") */
  size_t jobs, done;
  json_t *failed, *missing; /* arrays of ids */
} bh_sweep_table_t;

/* Builds the table of every done job of s in dir.  0, or a negative BH_E* code. */
int bh_sweep_table(const bh_sweep_t *s, const char *dir, bh_sweep_table_t *t);
/* Reads a table written by `buddyhint merge -o FILE.json`.  0, or BH_EFORMAT after a message. */
int bh_sweep_table_read(const char *path, bh_sweep_table_t *t);
void bh_sweep_table_free(bh_sweep_table_t *t);
/* Writes the table as CSV (header, then a row per run) or as merge's JSON document. */
int bh_sweep_table_csv(const bh_sweep_table_t *t, FILE *f);
int bh_sweep_table_json(const bh_sweep_table_t *t, FILE *f);

/* ---- helpers shared by the sweep verbs ---- */

/* Creates path with the bytes of text, failing if it exists (O_EXCL) or cannot be synced. */
int bh_sweep_write_new(const char *path, const char *text, size_t len);

#endif
