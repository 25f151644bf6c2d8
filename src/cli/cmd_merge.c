/* buddyhint merge: a sweep folder's results as one table (CSV or JSON), and its summary. */
#include "cli/cli.h"
#include "cli/sweep/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERB "merge"

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint merge DIR -o FILE.csv|FILE.json\n\n"
          "Merges the results of the sweep in DIR (buddyhint sweep) into one table: a row per\n"
          "done job with its id, its grid coordinates (trace, strategy, strategy_name, each\n"
          "STRATEGY.KEY and replay option of the spec, seed) and every key of its replay\n"
          "summary (nested ones as arena_stats.KEY, strategy_stats.KEY).  A coordinate that\n"
          "does not apply to a job (another strategy's option, jemalloc's seed) is empty.\n"
          "The JSON form is {\"summary\": {jobs, done, failed, missing}, \"columns\": [...],\n"
          "\"runs\": [{...}, ...]} (pandas: pd.DataFrame(doc[\"runs\"])).  FILE must not exist.\n"
          "The summary goes to standard output, with each failed and missing job.\n\n"
          "exit status: 0 every job done; 1 the table is written but jobs failed or are\n"
          "missing (or it could not be written); 2 bad usage or DIR is not a sweep.\n");
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && !strcmp(s + n - m, suffix);
}

/* Writes the table to a temporary file beside out and links it to out (never replacing). */
static int write_table(const bh_sweep_table_t *t, const char *out, bool csv) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", out, (long)getpid()) >= (int)sizeof(tmp))
    return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    fprintf(stderr, "buddyhint merge: cannot write %s: %s\n", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  int r = csv ? bh_sweep_table_csv(t, f) : bh_sweep_table_json(t, f);
  bool bad = r || fflush(f) || ferror(f) || fsync(fileno(f));
  if (fclose(f) || bad || link(tmp, out)) {
    fprintf(stderr, "buddyhint merge: cannot write %s: %s\n", out,
            errno == EEXIST ? "it exists" : strerror(errno));
    unlink(tmp);
    return -1;
  }
  unlink(tmp);
  return 0;
}

static void list_jobs(const bh_sweep_t *s, const char *dir, json_t *ids, const char *what) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    const bh_sweep_job_t *j = bh_sweep_find(s, json_string_value(v));
    if (!j)
      continue;
    printf("%s: %s (%s, %s", what, j->id, j->coords[BH_SWEEP_COL_TRACE],
           j->coords[BH_SWEEP_COL_STRATEGY]);
    for (size_t c = 3; c < s->ncols; c++)
      if (j->coords[c])
        printf(", %s=%s", s->cols[c], j->coords[c]);
    printf(")");
    if (bh_sweep_state(dir, j->id) == BH_SWEEP_FAILED)
      printf(": see %s/jobs/%s.err", dir, j->id);
    else if (bh_sweep_state(dir, j->id) == BH_SWEEP_CORRUPT)
      printf(": %s/jobs/%s.json is not a complete result", dir, j->id);
    printf("\n");
  }
}

int cmd_merge(int argc, char **argv) {
  const char *dir = NULL, *out = NULL;
  for (int i = 1; i < argc;) {
    int r;
    if (bh_cli_is_help(argv[i])) {
      help(stdout);
      return BH_EXIT_OK;
    }
    if ((r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &out)) ||
        (r = bh_cli_opt(argc, argv, &i, "output", &out))) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return bh_cli_usage_error(VERB, "unknown option '%s'", argv[i]);
    } else if (dir) {
      return bh_cli_usage_error(VERB, "one sweep folder at a time (got '%s' and '%s')", dir,
                                argv[i]);
    } else {
      dir = argv[i++];
    }
  }
  if (!dir)
    return bh_cli_usage_error(VERB, "no sweep folder given");
  if (!out)
    return bh_cli_usage_error(VERB, "no output given: -o FILE.csv or -o FILE.json");
  bool csv = ends_with(out, ".csv");
  if (!csv && !ends_with(out, ".json"))
    return bh_cli_usage_error(VERB, "-o '%s': the name must end in .csv or .json", out);
  if (!access(out, F_OK))
    return bh_cli_usage_error(VERB, "%s exists; name another file (merge never replaces one)", out);
  bh_sweep_t *s;
  if (bh_sweep_load(dir, &s))
    return BH_EXIT_USAGE;
  bh_sweep_table_t t;
  int r = bh_sweep_table(s, dir, &t);
  int rc = BH_EXIT_OK;
  if (r) {
    fprintf(stderr, "buddyhint merge: %s\n", bh_strerror(r));
    rc = BH_EXIT_FAIL;
  } else if (write_table(&t, out, csv)) {
    rc = BH_EXIT_FAIL;
  } else {
    size_t nf = json_array_size(t.failed), nm = json_array_size(t.missing);
    printf("merge: %zu jobs: %zu done, %zu failed, %zu missing; %zu rows, %zu columns in %s\n",
           t.jobs, t.done, nf, nm, t.done, json_array_size(t.columns), out);
    list_jobs(s, dir, t.failed, "failed");
    list_jobs(s, dir, t.missing, "missing");
    if (nf || nm)
      rc = BH_EXIT_FAIL;
  }
  bh_sweep_table_free(&t);
  bh_sweep_free(s);
  return rc;
}
