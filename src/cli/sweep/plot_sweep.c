/*
 * buddyhint plot for a sweep: a metric against one grid axis, one series per strategy (and
 * per value of any other coordinate that varies), the median over the rest (the seeds) with
 * bars from the minimum to the maximum.  Rows to which the axis does not apply (another
 * strategy's option, jemalloc under an option it does not take) are drawn flat across it, as
 * a reference.  The numbers are computed here; plots/sweep.gp only draws them.
 */
#include "cli/cli.h"
#include "cli/sweep/sweep.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERB "plot"
#define MAX_WHERE 16

typedef struct popts {
  const char *input, *x, *y, *out, *scripts;
  const char *where[MAX_WHERE];
  int nwhere;
} popts_t;

/* Whether path holds compare --json's result ({"runs": [...]}), which plot draws as bars. */
static bool compare_result(const char *path) {
  char head[16] = "";
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(head, 1, sizeof(head) - 1, f);
  fclose(f);
  head[n] = '\0';
  return !strncmp(head, "{\"runs\":", 8);
}

bool bh_cli_plot_is_sweep(int argc, char **argv) {
  static const char *const valued[] = {"-o", "--output", "--kind", "--label", "--rep", "--scripts"};
  struct stat st;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t n = strlen(a);
    bool skip = false;
    for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
      skip |= !strcmp(a, valued[k]);
    if (skip) { /* the option's value is not an input */
      i++;
      continue;
    }
    if (!strcmp(a, "--x") || !strncmp(a, "--x=", 4))
      return true;
    if (n > 5 && !strcmp(a + n - 5, ".json") && !compare_result(a))
      return true;
    if (a[0] != '-' && !stat(a, &st) && S_ISDIR(st.st_mode))
      return true;
  }
  return false;
}

/* A value as text ("" for null). */
static void text_of(json_t *v, char *buf, size_t len) {
  if (json_is_integer(v))
    snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else if (json_is_real(v))
    snprintf(buf, len, "%.15g", json_real_value(v));
  else if (json_is_string(v))
    snprintf(buf, len, "%s", json_string_value(v));
  else if (json_is_boolean(v))
    snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
  else
    buf[0] = 0;
}

static bool has(json_t *arr, const char *name) {
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) if (!strcmp(json_string_value(v), name)) return true;
  return false;
}

/* Rows that pass every --where COL=VALUE. */
static json_t *filter(const popts_t *o, json_t *rows, json_t *cols) {
  json_t *out = json_array();
  for (int w = 0; w < o->nwhere; w++) {
    const char *eq = strchr(o->where[w], '=');
    char col[256];
    snprintf(col, sizeof(col), "%.*s", eq ? (int)(eq - o->where[w]) : 0, o->where[w]);
    if (!eq || !has(cols, col)) {
      bh_cli_usage_error(VERB, "--where '%s': COLUMN=VALUE with a column of the table",
                         o->where[w]);
      json_decref(out);
      return NULL;
    }
  }
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    bool keep = true;
    for (int w = 0; keep && w < o->nwhere; w++) {
      const char *eq = strchr(o->where[w], '=');
      char col[256], val[1024];
      snprintf(col, sizeof(col), "%.*s", (int)(eq - o->where[w]), o->where[w]);
      text_of(json_object_get(row, col), val, sizeof(val));
      keep = !strcmp(val, eq + 1);
    }
    if (keep)
      json_array_append(out, row);
  }
  return out;
}

/*
 * A trace path as a legend or axis shows it: its file name without the folders and without
 * the format's and compression's suffixes (traces/real-memhog-300M.bht.zst: real-memhog-300M),
 * so that the legend leaves the plot its width.  In place.
 */
static void short_trace(char *v) {
  static const char *const sfx[] = {".zst", ".gz", ".bht", ".bin", ".txt", ".dat", ".data"};
  const char *slash = strrchr(v, '/');
  if (slash && slash[1])
    memmove(v, slash + 1, strlen(slash + 1) + 1);
  for (bool cut = true; cut;) {
    cut = false;
    size_t n = strlen(v);
    for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
      size_t m = strlen(sfx[k]);
      if (n > m && !strcmp(v + n - m, sfx[k])) {
        v[n - m] = 0;
        cut = true;
        break;
      }
    }
  }
}

/* The series a row belongs to: strategy name, its options, other varying coordinates.  As a
 * key (display false), values as they are; for the legend (display true), a trace by its
 * short name and without "trace=". */
static void series_of(json_t *row, json_t *scols, const char *x, char *buf, size_t len,
                      bool display) {
  char v[1024];
  text_of(json_object_get(row, "strategy_name"), buf, len);
  size_t i, l = strlen(buf);
  json_t *c;
  json_array_foreach(scols, i, c) {
    const char *name = json_string_value(c), *dot = strchr(name, '.');
    if (!strcmp(name, x) || !strcmp(name, "strategy_name"))
      continue;
    text_of(json_object_get(row, name), v, sizeof(v));
    if (!v[0] || l >= len)
      continue;
    if (display && !strcmp(name, "trace")) {
      short_trace(v);
      l += (size_t)snprintf(buf + l, len - l, ", %s", v);
    } else if (dot && !strncmp(name, buf, (size_t)(dot - name)) &&
               strlen(buf) >= (size_t)(dot - name)) {
      l += (size_t)snprintf(buf + l, len - l, ":%s=%s", dot + 1, v);
    } else {
      l += (size_t)snprintf(buf + l, len - l, ", %s=%s", name, v);
    }
  }
}

/* Coordinates that split series: not x, seed, the label, or constant over the rows. */
static json_t *series_cols(json_t *rows, json_t *coords, const char *x) {
  json_t *out = json_array();
  size_t i, r;
  json_t *c, *row;
  json_array_foreach(coords, i, c) {
    const char *name = json_string_value(c);
    if (!strcmp(name, x) || !strcmp(name, "seed") || !strcmp(name, "strategy"))
      continue;
    char first[1024] = "", v[1024];
    bool varies = !strcmp(name, "strategy_name") || strchr(name, '.');
    json_array_foreach(rows, r, row) {
      text_of(json_object_get(row, name), v, sizeof(v));
      if (!r)
        snprintf(first, sizeof(first), "%s", v);
      else if (strcmp(first, v))
        varies = true;
    }
    if (varies)
      json_array_append(out, c);
  }
  return out;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct xval {
  char text[256];
  double num;
} xval_t;

static int cmp_xval(const void *a, const void *b) {
  return cmp_dbl(&((const xval_t *)a)->num, &((const xval_t *)b)->num);
}

/* A value for a field of the tab-separated data file: tabs, newlines and other control
 * characters would split or end the row; each becomes a space. */
static void data_text(char *s) {
  for (unsigned char *c = (unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      *c = ' ';
}

/* Writes one series block: for each x, median, min, max of y over the matching rows. */
static void write_block(FILE *f, json_t *rows, json_t *scols, const char *series, const char *x,
                        const char *y, const xval_t *xs, size_t nx, bool numeric, double scale) {
  double *v = malloc((json_array_size(rows) + 1) * sizeof(double));
  for (size_t k = 0; v && k < nx; k++) {
    size_t n = 0, i;
    json_t *row;
    json_array_foreach(rows, i, row) {
      char s[1024], xv[256];
      series_of(row, scols, x, s, sizeof(s), false);
      json_t *xj = json_object_get(row, x), *yj = json_object_get(row, y);
      text_of(xj, xv, sizeof(xv));
      if (strcmp(s, series) || !json_is_number(yj) || (xv[0] && strcmp(xv, xs[k].text)))
        continue;
      v[n++] = json_number_value(yj) / scale;
    }
    if (!n)
      continue;
    qsort(v, n, sizeof(double), cmp_dbl);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    char text[sizeof(xs[k].text)];
    snprintf(text, sizeof(text), "%s", xs[k].text);
    if (!strcmp(x, "trace"))
      short_trace(text);
    data_text(text);
    fprintf(f, "%.15g\t%s\t%.15g\t%.15g\t%.15g\t%zu\n", numeric ? xs[k].num : (double)k, text, med,
            v[0], v[n - 1], n);
  }
  fprintf(f, "\n\n");
  free(v);
}

/* A gnuplot string variable, one to a line (bh_cli_gp_quote: nothing in it starts a command). */
static void gp_var(FILE *f, const char *name, const char *value) {
  size_t len = 4 * strlen(value) + 3;
  char *q = malloc(len);
  if (q && !bh_cli_gp_quote(q, len, value))
    fprintf(f, "%s = %s\n", name, q);
  else
    fprintf(f, "%s = ''\n", name); /* no memory: an empty title, never the raw value */
  free(q);
}

/* The distinct x values, sorted if all are numbers; false if there are none. */
static bool x_values(json_t *rows, const char *x, xval_t **out, size_t *n, bool *numeric) {
  size_t i;
  json_t *row;
  *out = calloc(json_array_size(rows) + 1, sizeof(xval_t));
  *n = 0;
  *numeric = true;
  json_array_foreach(rows, i, row) {
    char t[256];
    json_t *xj = json_object_get(row, x);
    text_of(xj, t, sizeof(t));
    if (!t[0] || !*out)
      continue;
    size_t k = 0;
    while (k < *n && strcmp((*out)[k].text, t))
      k++;
    if (k < *n)
      continue;
    snprintf((*out)[k].text, sizeof((*out)[k].text), "%s", t);
    (*out)[k].num = json_is_number(xj) ? json_number_value(xj) : NAN;
    *numeric &= json_is_number(xj);
    (*n)++;
  }
  if (*numeric)
    qsort(*out, *n, sizeof(xval_t), cmp_xval);
  return *n > 0;
}

/* Writes the data and variables files; returns the number of series, or -1. */
static int write_inputs(const popts_t *o, json_t *rows, json_t *coords, FILE *data, FILE *vars) {
  xval_t *xs;
  size_t nx, i;
  bool numeric;
  if (!x_values(rows, o->x, &xs, &nx, &numeric)) {
    free(xs);
    bh_cli_usage_error(VERB, "no run has a value of '%s'", o->x);
    return -1;
  }
  size_t yl = strlen(o->y);
  double scale = yl > 6 && !strcmp(o->y + yl - 6, "_bytes") ? 1048576.0 : 1.0;
  json_t *scols = series_cols(rows, coords, o->x), *seen = json_array(), *row;
  int ns = 0;
  bool nonneg = true; /* every value at or above 0: the y axis starts at 0 */
  json_array_foreach(rows, i, row) {
    char s[1024], d[1024], name[32];
    json_t *yj = json_object_get(row, o->y);
    nonneg &= !json_is_number(yj) || json_number_value(yj) >= 0;
    series_of(row, scols, o->x, s, sizeof(s), false);
    if (has(seen, s))
      continue;
    json_array_append_new(seen, json_string(s));
    write_block(data, rows, scols, s, o->x, o->y, xs, nx, numeric, scale);
    snprintf(name, sizeof(name), "title%d", ++ns);
    char t[1400];
    bool flat = json_is_null(json_object_get(row, o->x)); /* drawn across the axis */
    series_of(row, scols, o->x, d, sizeof(d), true);
    snprintf(t, sizeof(t), "%s%s%s%s", d, flat ? " (no " : "", flat ? o->x : "", flat ? ")" : "");
    gp_var(vars, name, t);
  }
  char ylab[300], title[600];
  snprintf(ylab, sizeof(ylab), "%s%s: median, bars min..max", o->y, scale > 1 ? " (MiB)" : "");
  snprintf(title, sizeof(title), "%s against %s", o->y, o->x);
  gp_var(vars, "xlab", o->x);
  gp_var(vars, "ylab", ylab);
  gp_var(vars, "ttl", title);
  fprintf(vars, "n_series = %d\ncategorical = %d\nnonneg = %d\n", ns, numeric ? 0 : 1,
          nonneg ? 1 : 0);
  json_decref(scols);
  json_decref(seen);
  free(xs);
  return ns;
}

static int parse(int argc, char **argv, popts_t *o) {
  for (int i = 1; i < argc;) {
    const char *v;
    int r;
    if ((r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &o->out)) ||
        (r = bh_cli_opt(argc, argv, &i, "output", &o->out)) ||
        (r = bh_cli_opt(argc, argv, &i, "x", &o->x)) ||
        (r = bh_cli_opt(argc, argv, &i, "y", &o->y)) ||
        (r = bh_cli_opt(argc, argv, &i, "scripts", &o->scripts))) {
      if (r < 0)
        return -1;
    } else if ((r = bh_cli_opt(argc, argv, &i, "where", &v))) {
      if (r < 0)
        return -1;
      if (o->nwhere == MAX_WHERE)
        return bh_cli_usage_error(VERB, "at most %d --where", MAX_WHERE), -1;
      o->where[o->nwhere++] = v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return bh_cli_usage_error(VERB, "unknown option '%s' for a sweep", argv[i]), -1;
    } else if (o->input) {
      return bh_cli_usage_error(VERB, "one sweep at a time (got '%s' and '%s')", o->input, argv[i]),
             -1;
    } else {
      o->input = argv[i++];
    }
  }
  if (!o->input || !o->x || !o->out) {
    bh_cli_usage_error(VERB, "a sweep plot needs DIR (or merge's FILE.json), --x AXIS and -o "
                             "FILE");
    return -1;
  }
  return 0;
}

static int load(const popts_t *o, bh_sweep_table_t *t) {
  struct stat st;
  if (!stat(o->input, &st) && S_ISDIR(st.st_mode)) {
    bh_sweep_t *s;
    if (bh_sweep_load(o->input, &s))
      return -1;
    int r = bh_sweep_table(s, o->input, t);
    bh_sweep_free(s);
    return r ? -1 : 0;
  }
  return bh_sweep_table_read(o->input, t) ? -1 : 0;
}

static int draw(const popts_t *o, const char *dir, const char *datap, const char *varsp,
                const char *fmt) {
  char tmp[PATH_MAX], script[PATH_MAX + 16];
  snprintf(script, sizeof(script), "%s/sweep.gp", dir);
  if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", o->out, (long)getpid()) >= (int)sizeof(tmp))
    return BH_EXIT_USAGE;
  FILE *vars = fopen(varsp, "a");
  if (!vars)
    return BH_EXIT_FAIL;
  gp_var(vars, "input", datap);
  gp_var(vars, "output", tmp);
  gp_var(vars, "fmt", fmt);
  gp_var(vars, "scripts", dir);
  fclose(vars);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", varsp, script, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  struct stat sb;
  bool ok = pid > 0 && WIFEXITED(st) && !WEXITSTATUS(st) && !stat(tmp, &sb) && sb.st_size > 0;
  if (ok && link(tmp, o->out)) {
    fprintf(stderr, "buddyhint plot: cannot write %s: %s\n", o->out, strerror(errno));
    ok = false;
  } else if (!ok) {
    fprintf(stderr, "buddyhint plot: gnuplot failed with %s (see its messages above)\n", script);
  }
  unlink(tmp);
  if (ok)
    printf("%s\n", o->out);
  return ok ? BH_EXIT_OK : BH_EXIT_FAIL;
}

int bh_cli_plot_sweep(int argc, char **argv) {
  popts_t o = {0};
  if (parse(argc, argv, &o))
    return BH_EXIT_USAGE;
  if (!o.y)
    o.y = "rss_final_bytes";
  const char *fmt = bh_cli_plot_format(o.out);
  if (!fmt)
    return bh_cli_usage_error(VERB, "-o '%s': the name must end in .png, .svg or .pdf", o.out);
  if (bh_cli_has_control(o.out) || (o.scripts && bh_cli_has_control(o.scripts)))
    return bh_cli_usage_error(VERB, "-o and --scripts: a control character in a file name is "
                                    "not supported");
  if (!access(o.out, F_OK))
    return bh_cli_usage_error(VERB, "%s exists; name another file", o.out);
  bh_sweep_table_t t;
  if (load(&o, &t))
    return BH_EXIT_USAGE;
  int rc = BH_EXIT_USAGE;
  json_t *rows = NULL;
  char tdir[] = "/tmp/buddyhint-plot-XXXXXX", datap[64], varsp[64], dir[PATH_MAX];
  const char *tmpdir = NULL;
  if (!has(t.coords, o.x)) {
    bh_cli_usage_error(VERB, "--x %s: not a coordinate of the sweep", o.x);
  } else if (!has(t.columns, o.y)) {
    bh_cli_usage_error(VERB, "--y %s: not a column of the table", o.y);
  } else if ((rows = filter(&o, t.rows, t.columns)) && !json_array_size(rows)) {
    bh_cli_usage_error(VERB, "no run to draw%s", o.nwhere ? " (see --where)" : "");
  } else if (rows && !bh_cli_have_gnuplot()) {
    fprintf(stderr, "buddyhint plot: gnuplot is not installed (on Debian: apt-get install "
                    "gnuplot-nox)\n");
    rc = BH_EXIT_FAIL;
  } else if (rows && bh_cli_plot_find_scripts(o.scripts, "sweep.gp", dir, sizeof(dir))) {
    rc = BH_EXIT_FAIL;
  } else if (rows && !(tmpdir = mkdtemp(tdir))) {
    fprintf(stderr, "buddyhint plot: cannot create a temporary folder: %s\n", strerror(errno));
    rc = BH_EXIT_FAIL;
  } else if (rows) {
    snprintf(datap, sizeof(datap), "%s/data.tsv", tmpdir);
    snprintf(varsp, sizeof(varsp), "%s/vars.gp", tmpdir);
    FILE *data = fopen(datap, "w"), *vars = fopen(varsp, "w");
    int ns = data && vars ? write_inputs(&o, rows, t.coords, data, vars) : -1;
    if (data)
      fclose(data);
    if (vars)
      fclose(vars);
    rc = ns > 0 ? draw(&o, dir, datap, varsp, fmt) : BH_EXIT_USAGE;
    unlink(datap);
    unlink(varsp);
    rmdir(tmpdir);
  }
  json_decref(rows);
  bh_sweep_table_free(&t);
  return rc;
}
