/*
 * The merged table of a sweep: one row per done job, its id and grid coordinates first, then
 * every key of its replay summary, nested objects flattened with dots (arena_stats.pgfree,
 * strategy_stats.reports).  The summary's "trace" and "strategy" are left out: the coordinate
 * columns of the same names hold them (the trace as the spec names it, the strategy's label).
 * A coordinate that reads as a number is a number.
 */
#include "cli/sweep/sweep.h"

#include <buddyhint.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A coordinate as JSON: a number if the whole text is one, else the string. */
static json_t *coord_json(const char *s) {
  if (!s)
    return json_null();
  char *end;
  errno = 0;
  long long i = strtoll(s, &end, 10);
  if (*s && !*end && !errno && s[0] != '+' && !(s[0] == '0' && s[1]) &&
      !(s[0] == '-' && s[1] == '0'))
    return json_integer(i);
  double d = strtod(s, &end);
  if (*s && !*end && isfinite(d) && strspn(s, "0123456789.-eE") == strlen(s))
    return json_real(d);
  return json_string(s);
}

static int add_column(bh_sweep_table_t *t, const char *name) {
  if (json_object_get(t->colset, name))
    return 0;
  return json_object_set_new(t->colset, name, json_true()) ||
                 json_array_append_new(t->columns, json_string(name))
             ? BH_ENOMEM
             : 0;
}

static int flatten(bh_sweep_table_t *t, json_t *row, const char *prefix, json_t *obj) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    char name[512];
    snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k);
    if (!*prefix && (!strcmp(k, "trace") || !strcmp(k, "strategy")))
      continue;
    if (json_object_get(row, name)) /* a coordinate column of that name wins */
      continue;
    if (json_is_object(v)) {
      if (flatten(t, row, name, v))
        return BH_ENOMEM;
      continue;
    }
    if (json_object_set(row, name, v) || add_column(t, name))
      return BH_ENOMEM;
  }
  return 0;
}

static void table_init(bh_sweep_table_t *t) {
  memset(t, 0, sizeof(*t));
  t->rows = json_array();
  t->columns = json_array();
  t->colset = json_object();
  t->coords = json_array();
  t->failed = json_array();
  t->missing = json_array();
}

/* One trace coordinate must stand for one content: results made from a file that was
 * replaced during the sweep (a resume without --force cannot leave them, an older version
 * could) are merged with a warning naming the trace.  sums: trace -> sha256 seen first. */
static void check_trace_sum(json_t *sums, const char *trace, json_t *sum) {
  const char *hex = json_string_value(
      json_object_get(json_object_get(json_object_get(sum, "provenance"), "trace"), "sha256"));
  if (!trace || !hex)
    return;
  json_t *first = json_object_get(sums, trace);
  if (!first) {
    json_object_set_new(sums, trace, json_string(hex));
  } else if (json_is_string(first) && strcmp(json_string_value(first), hex)) {
    fprintf(stderr,
            "buddyhint: warning: the results of trace %s were made from different contents "
            "(sha256 %.12s... and %.12s...): the file changed during the sweep; 'buddyhint "
            "sweep SPEC -o DIR --force' runs the stale jobs again\n",
            trace, json_string_value(first), hex);
    json_object_set_new(sums, trace, json_null()); /* said once */
  }
}

/* Keys a job's result may have: a summary has about a hundred, and every key is a column of
 * the table (so that a result of 200,000 keys is refused, not merged for minutes). */
#define SUMMARY_MAX_KEYS 4096

/* What makes a job's result one that cannot be its own (an empty object, another job's file
 * copied over it, a count that is not a number), or NULL: such a result is left out of the
 * table and counted as failed, with the reason on standard error. */
static const char *result_problem(const bh_sweep_job_t *j, json_t *sum, char *buf, size_t len) {
  static const char *const counts[] = {"events", "allocs", "frees", "rss_final_bytes"};
  json_t *prov = json_object_get(sum, "provenance");
  if (!json_is_object(sum))
    return "is not a JSON object: not a replay summary";
  if (json_object_size(sum) > SUMMARY_MAX_KEYS) { /* a summary has about a hundred */
    snprintf(buf, len, "has %zu keys, more than a summary's %d: not a replay summary",
             json_object_size(sum), SUMMARY_MAX_KEYS);
    return buf;
  }
  if (!json_is_object(prov))
    return "has no provenance: not a replay summary";
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
    if (!json_is_number(json_object_get(sum, counts[i]))) {
      snprintf(buf, len, "has no number for \"%s\"", counts[i]);
      return buf;
    }
  const char *tr = json_string_value(json_object_get(json_object_get(prov, "trace"), "name"));
  const char *label = json_string_value(json_object_get(prov, "label"));
  const char *want = j->coords[BH_SWEEP_COL_STRATEGY];
  if (!tr || strcmp(tr, j->trace)) {
    snprintf(buf, len, "was made from trace %s, not this job's %s (another job's result?)",
             tr ? tr : "(none)", j->trace);
    return buf;
  }
  if (want && (!label || strcmp(label, want))) {
    snprintf(buf, len, "is of strategy '%s', not this job's '%s' (another job's result?)",
             label ? label : "(none)", want);
    return buf;
  }
  for (size_t a = 0; a < j->nargs; a++) {
    char *end;
    if (strncmp(j->args[a], "--seed=", 7))
      continue;
    unsigned long long seed = strtoull(j->args[a] + 7, &end, 10);
    json_t *got = json_object_get(prov, "seed");
    if (!json_is_integer(got) || (unsigned long long)json_integer_value(got) != seed) {
      snprintf(buf, len, "is of another seed than this job's %llu (another job's result?)", seed);
      return buf;
    }
  }
  return NULL;
}

int bh_sweep_table(const bh_sweep_t *s, const char *dir, bh_sweep_table_t *t) {
  table_init(t);
  if (!t->rows || !t->columns || !t->colset || !t->coords || !t->failed || !t->missing)
    return BH_ENOMEM;
  int r = add_column(t, "id");
  for (size_t c = 0; !r && c < s->ncols; c++)
    r = add_column(t, s->cols[c]) || json_array_append_new(t->coords, json_string(s->cols[c]))
            ? BH_ENOMEM
            : 0;
  t->jobs = s->njobs;
  json_t *sums = json_object();
  for (size_t i = 0; !r && i < s->njobs; i++) {
    const bh_sweep_job_t *j = &s->jobs[i];
    int st = bh_sweep_state(dir, j->id);
    if (st != BH_SWEEP_DONE) {
      json_array_append_new(st == BH_SWEEP_MISSING ? t->missing : t->failed, json_string(j->id));
      continue;
    }
    char path[PATH_MAX];
    bh_sweep_job_path(path, sizeof(path), dir, j->id, "json");
    json_t *sum = json_load_file(path, 0, NULL);
    json_t *row = json_object();
    char why[512];
    const char *bad = sum ? result_problem(j, sum, why, sizeof(why)) : NULL;
    if (bad)
      fprintf(stderr, "buddyhint: %s %s; left out\n", path, bad);
    if (!sum || !row || bad) {
      json_decref(sum);
      json_decref(row);
      json_array_append_new(t->failed, json_string(j->id));
      continue;
    }
    json_object_set_new(row, "id", json_string(j->id));
    for (size_t c = 0; c < s->ncols; c++)
      json_object_set_new(row, s->cols[c], coord_json(j->coords[c]));
    r = flatten(t, row, "", sum);
    check_trace_sum(sums, j->coords[BH_SWEEP_COL_TRACE], sum);
    json_decref(sum);
    json_array_append_new(t->rows, row);
    t->done++;
  }
  json_decref(sums);
  return r;
}

int bh_sweep_table_read(const char *path, bh_sweep_table_t *t) {
  json_error_t e;
  table_init(t);
  json_t *doc = json_load_file(path, 0, &e);
  json_t *runs = json_object_get(doc, "runs"), *cols = json_object_get(doc, "columns");
  json_t *sum = json_object_get(doc, "summary"), *coords = json_object_get(doc, "coordinates");
  if (!json_is_array(runs) || !json_is_array(cols) || !json_is_object(sum) ||
      !json_is_array(coords)) {
    if (!doc)
      fprintf(stderr, "buddyhint: %s:%d: %s\n", path, e.line, e.text);
    else
      fprintf(stderr, "buddyhint: %s is not a table written by buddyhint merge\n", path);
    json_decref(doc);
    return BH_EFORMAT;
  }
  json_decref(t->rows);
  json_decref(t->columns);
  json_decref(t->colset);
  json_decref(t->coords);
  json_decref(t->failed);
  json_decref(t->missing);
  t->colset = NULL; /* a table read is not added to */
  t->rows = json_incref(runs);
  t->coords = json_incref(coords);
  t->columns = json_incref(cols);
  t->failed = json_incref(json_object_get(sum, "failed"));
  t->missing = json_incref(json_object_get(sum, "missing"));
  t->jobs = (size_t)json_integer_value(json_object_get(sum, "jobs"));
  t->done = json_array_size(runs);
  json_decref(doc);
  return 0;
}

void bh_sweep_table_free(bh_sweep_table_t *t) {
  json_decref(t->rows);
  json_decref(t->columns);
  json_decref(t->colset);
  json_decref(t->coords);
  json_decref(t->failed);
  json_decref(t->missing);
  memset(t, 0, sizeof(*t));
}

/* One CSV field (RFC 4180: quoted when it holds a comma, quote or line break). */
static void csv_field(FILE *f, json_t *v) {
  if (!v || json_is_null(v))
    return;
  if (json_is_integer(v)) {
    fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  } else if (json_is_real(v)) {
    fprintf(f, "%.15g", json_real_value(v));
  } else if (json_is_true(v) || json_is_false(v)) {
    fputs(json_is_true(v) ? "true" : "false", f);
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!s[strcspn(s, ",\"\r\n")]) {
      fputs(s, f);
      return;
    }
    fputc('"', f);
    for (; *s; s++) {
      if (*s == '"')
        fputc('"', f);
      fputc(*s, f);
    }
    fputc('"', f);
  } else {
    char *d = json_dumps(v, JSON_COMPACT);
    json_t *str = json_string(d ? d : "");
    csv_field(f, str);
    json_decref(str);
    free(d);
  }
}

int bh_sweep_table_csv(const bh_sweep_table_t *t, FILE *f) {
  size_t i, r;
  json_t *c, *row;
  json_array_foreach(t->columns, i, c) {
    if (i)
      fputc(',', f);
    csv_field(f, c);
  }
  fputc('\n', f);
  json_array_foreach(t->rows, r, row) {
    json_array_foreach(t->columns, i, c) {
      if (i)
        fputc(',', f);
      csv_field(f, json_object_get(row, json_string_value(c)));
    }
    fputc('\n', f);
  }
  return ferror(f) ? BH_EIO : 0;
}

int bh_sweep_table_json(const bh_sweep_table_t *t, FILE *f) {
  json_t *doc =
      json_pack("{s:{s:I, s:I, s:O, s:O}, s:O, s:O, s:O}", "summary", "jobs", (json_int_t)t->jobs,
                "done", (json_int_t)t->done, "failed", t->failed, "missing", t->missing,
                "coordinates", t->coords, "columns", t->columns, "runs", t->rows);
  if (!doc)
    return BH_ENOMEM;
  int r = json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(15));
  fputc('\n', f);
  json_decref(doc);
  return r || ferror(f) ? BH_EIO : 0;
}
