/* buddyhint plot: draws a result file with the gnuplot scripts of plots/. */
#include "cli/cli.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERB "plot"
#define MAX_INPUTS 16

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint plot RESULT... -o FILE [--kind heatmap|resident] [--label TEXT]...\n"
          "                      [--rep N] [--scripts DIR]\n"
          "\n"
          "Draws a result file with gnuplot.  The plot is chosen by the file's header line:\n"
          "  memhog_timeline.csv   (bench/exp_memhog)      host resident memory over time,\n"
          "                                                 one line per strategy\n"
          "  pagefault1.csv        (bench/exp_pagefault1)  throughput against threads (median,\n"
          "                                                 p10..p90 error bars)\n"
          "  guests.csv            (bench/exp_guests)      guests that fit, per strategy\n"
          "  core.csv              (bench/bench_core)      the micro table as bars\n"
          "  frag.csv              (bench/exp_frag)        huge pages after a fragmentation\n"
          "                                                 stress, grouping on and off\n"
          "  compact.csv           (bench/exp_compact)     huge pages, throughput and time after\n"
          "                                                 compaction, large blocks vs order 0\n"
          "  adaptive.csv          (bench/exp_adaptive)    resident memory against madvise\n"
          "                                                 calls, one panel per trace\n"
          "  a replay timeline     (replay --timeline)     free memory per order over time (a\n"
          "                                                 heat map); several timelines, or\n"
          "                                                 --kind resident: resident memory\n"
          "                                                 over time, one line per file\n"
          "  a compare timeline    (compare --timeline)    resident memory over time, one line\n"
          "                                                 per run\n"
          "  a compare result      (compare --json)        bars per strategy: resident memory\n"
          "                                                 at the end, reported and returned\n"
          "                                                 MiB; madvise calls below\n"
          "  a sweep folder        (buddyhint sweep)       with --x AXIS [--y METRIC]: the\n"
          "    or merge's .json                             metric (default rss_final_bytes)\n"
          "                                                 against an axis of the grid, a\n"
          "                                                 line per strategy, median and\n"
          "                                                 min..max over seeds; --where\n"
          "                                                 COL=VALUE (repeatable) picks rows\n"
          "The format follows the suffix of -o: .png (pngcairo, else png), .svg, or .pdf\n"
          "(pdfcairo, 7 inches wide: a two-column paper's full width).  Every series has a\n"
          "colour and a dash pattern of its own; timelines are drawn as sampled (steps).\n"
          "\n"
          "options:\n"
          "  -o FILE          the picture to write (.png, .svg or .pdf)\n"
          "  --kind KIND      for replay timelines: heatmap (one file) or resident\n"
          "  --label TEXT     a name for each input in the legend, in order (default: the\n"
          "                   file name without .csv)\n"
          "  --rep N          memhog_timeline: the repetition to draw (default 1)\n"
          "  --scripts DIR    the gnuplot scripts; default <dir of this program>/../plots (the\n"
          "                   source tree, from a build folder inside it), then\n"
          "                   <dir of this program>/../share/buddyhint/plots (installed)\n"
          "  -h, --help       this help\n"
          "\n"
          "exit status: 0 drawn; 1 gnuplot missing or failed, or no scripts found; 2 bad\n"
          "usage, or an input that cannot be read or is not a known result.\n");
}

typedef enum {
  IN_UNKNOWN,
  IN_MEMHOG_TIMELINE,
  IN_PAGEFAULT1,
  IN_GUESTS,
  IN_CORE,
  IN_FRAG,
  IN_COMPACT,
  IN_ADAPTIVE,
  IN_REPLAY_TIMELINE,
  IN_COMPARE_TIMELINE,
  IN_COMPARE_JSON /* compare --json: drawn by compare.gp from a CSV made here */
} input_kind_t;

static const struct {
  input_kind_t kind;
  const char *header; /* prefix of the header line */
  const char *script;
} known[] = {
    {IN_MEMHOG_TIMELINE, "rep,kind,time_s,host_rss_mib", "memhog_timeline.gp"},
    {IN_PAGEFAULT1, "variant,order,threads,strategy", "pagefault1.gp"},
    {IN_GUESTS, "kind,options,guest_size_mib,budget_mib", "guests.gp"},
    {IN_CORE, "group,case,impl,", "core.gp"},
    {IN_FRAG, "kernel,grouping,reps,arena_mib", "frag.gp"},
    {IN_COMPACT, "mix,mode,reps,arena_mib", "compact.gp"},
    {IN_ADAPTIVE, "trace,strategy,kind,age_s,growth,reps", "adaptive.gp"},
    {IN_REPLAY_TIMELINE, "time_s,live_bytes,resident_bytes", "replay_heatmap.gp"},
    {IN_COMPARE_TIMELINE, "run,time_s,live_bytes,resident_bytes", "replay_resident.gp"},
};

/*
 * A compare --json result ({"runs": [...]}) as the CSV compare.gp draws, into the file at
 * csv: one row per run, strategy, rss_final_mib, reported_mib, returned_mib, madvise_calls.
 * 0, or -1 after a message (not a compare result, or it cannot be written).
 */
static int compare_csv(const char *path, const char *csv) {
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e), *runs = j ? json_object_get(j, "runs") : NULL;
  if (!json_is_array(runs) || !json_array_size(runs)) {
    fprintf(stderr, "buddyhint plot: %s: not a compare result (no \"runs\")\n", path);
    json_decref(j);
    return -1;
  }
  FILE *f = fopen(csv, "w");
  if (!f) {
    fprintf(stderr, "buddyhint plot: %s: %s\n", csv, strerror(errno));
    json_decref(j);
    return -1;
  }
  fprintf(f, "strategy,rss_final_mib,reported_mib,returned_mib,madvise_calls\n");
  size_t i;
  json_t *r;
  json_array_foreach(runs, i, r) {
    const char *s = json_string_value(json_object_get(r, "strategy"));
    if (s && (s[strcspn(s, "\"'\\,")] || bh_cli_has_control(s))) {
      fprintf(stderr,
              "buddyhint plot: %s: run %zu: a strategy name holding a quote, a backslash, a "
              "comma or a control character cannot be passed on to the plot script safely\n",
              path, i);
      fclose(f);
      json_decref(j);
      return -1;
    }
    double mib = 1024.0 * 1024.0;
    fprintf(f, "%s,%.3f,%.3f,%.3f,%.0f\n", s ? s : "?",
            json_number_value(json_object_get(r, "rss_final_bytes")) / mib,
            json_number_value(json_object_get(r, "reported_bytes")) / mib,
            json_number_value(json_object_get(r, "returned_bytes")) / mib,
            json_number_value(json_object_get(r, "madvise_calls")));
  }
  json_decref(j);
  return fclose(f) ? -1 : 0;
}

/* Reads the first line that is not a '#' comment; -1 if the file cannot be read. */
static int read_header(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  buf[0] = 0;
  while (fgets(buf, (int)len, f)) {
    if (buf[0] == '#') {
      /* a long comment line: skip the rest of it */
      while (!strchr(buf, '\n') && fgets(buf, (int)len, f))
        ;
      buf[0] = 0;
      continue;
    }
    break;
  }
  fclose(f);
  buf[strcspn(buf, "\r\n")] = 0;
  return 0;
}

/* The plot scripts hand the values of some columns to awk and the shell (plots/common.gp,
 * memhog_timeline.gp): a value holding a quote, a backslash or a control character could end
 * the quoted text it is put in and run as code.  No result this command writes has one;
 * 0, or -1 with the line of the first. */
static int check_cells(const char *path, long *bad_line) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0; /* read_header said why */
  long line = 1;
  bool comment = false, start = true;
  int c;
  while ((c = getc(f)) != EOF) {
    if (start)
      comment = c == '#';
    start = c == '\n';
    if (c == '\n') {
      line++;
    } else if (!comment && (c == '\'' || c == '"' || c == '\\' || c == 0x7f ||
                            (c < 0x20 && c != '\t' && c != '\r'))) {
      *bad_line = line;
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  return 0;
}

static input_kind_t classify(const char *header) {
  if (header[strspn(header, " \t")] == '{') /* a JSON object: compare --json's */
    return IN_COMPARE_JSON;
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if (!strncmp(header, known[i].header, strlen(known[i].header)))
      return known[i].kind;
  return IN_UNKNOWN;
}

static const char *script_of(input_kind_t k) {
  if (k == IN_COMPARE_JSON)
    return "compare.gp";
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if (known[i].kind == k)
      return known[i].script;
  return NULL;
}

static bool is_file(const char *dir, const char *name) {
  char p[PATH_MAX];
  struct stat st;
  if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
    return false;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The scripts folder: --scripts, else next to the binary (source tree, then installed). */
static int find_scripts(const char *given, const char *script, char *dir, size_t len) {
  if (given) {
    if (!is_file(given, script) || !is_file(given, "common.gp")) {
      fprintf(stderr, "buddyhint plot: %s has no %s and common.gp\n", given, script);
      return -1;
    }
    snprintf(dir, len, "%s", given);
    return 0;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    fprintf(stderr, "buddyhint plot: cannot find this program's folder; use --scripts DIR\n");
    return -1;
  }
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = 0;
  static const char *const rel[] = {"../plots", "../share/buddyhint/plots"};
  for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
    char cand[PATH_MAX], real[PATH_MAX];
    if (snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]) >= (int)sizeof(cand))
      continue;
    if (is_file(cand, script) && is_file(cand, "common.gp")) {
      snprintf(dir, len, "%s", realpath(cand, real) ? real : cand);
      return 0;
    }
  }
  fprintf(stderr,
          "buddyhint plot: no gnuplot scripts in %s/../plots or %s/../share/buddyhint/plots; "
          "use --scripts DIR\n",
          exe, exe);
  return -1;
}

/* True if an executable gnuplot is on PATH. */
static bool have_gnuplot(void) {
  const char *path = getenv("PATH");
  if (!path || !*path)
    return false;
  char buf[PATH_MAX];
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n && n + sizeof("/gnuplot") < sizeof(buf)) {
      memcpy(buf, p, n);
      strcpy(buf + n, "/gnuplot");
      if (access(buf, X_OK) == 0)
        return true;
    }
    p += n;
    if (*p == ':')
      p++;
  }
  return false;
}

/* A string as a gnuplot single-quoted literal, into buf: a quote inside is doubled, and a
 * control character is written as the text "\xNN" (inside single quotes a backslash is
 * literal), so that no byte of the value can end the line it is on and start a command (a
 * newline then "!cmd" would run cmd in a shell).  -1 if it does not fit. */
int bh_cli_gp_quote(char *buf, size_t len, const char *value) {
  size_t l = 0;
  if (len < 3)
    return -1;
  buf[l++] = '\'';
  for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
    if (l + 6 >= len)
      return -1;
    if (*c < 0x20 || *c == 0x7f)
      l += (size_t)snprintf(buf + l, len - l, "\\x%02x", *c);
    else if (*c == '\'')
      buf[l++] = '\'', buf[l++] = '\'';
    else
      buf[l++] = (char)*c;
  }
  buf[l++] = '\'';
  buf[l] = 0;
  return 0;
}

bool bh_cli_has_control(const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      return true;
  return false;
}

/* Appends `name='value'; ` to buf (bh_cli_gp_quote). */
static int add_var(char *buf, size_t len, const char *name, const char *value) {
  size_t l = strlen(buf);
  int n = snprintf(buf + l, len - l, "%s=", name);
  if (n < 0 || (size_t)n >= len - l)
    return -1;
  l += (size_t)n;
  if (bh_cli_gp_quote(buf + l, len - l, value))
    return -1;
  l += strlen(buf + l);
  if (l + 3 >= len)
    return -1;
  memcpy(buf + l, "; ", 3);
  return 0;
}

/* "results/x.csv" -> "x" */
static void stem(const char *path, char *out, size_t len) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(out, len, "%s", b);
  size_t n = strlen(out);
  if (n > 4 && !strcmp(out + n - 4, ".csv"))
    out[n - 4] = 0;
}

const char *bh_cli_plot_format(const char *out) {
  size_t n = strlen(out);
  static const char *const fmts[] = {"png", "svg", "pdf"};
  for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
    if (n > 4 && out[n - 4] == '.' && !strcmp(out + n - 3, fmts[i]))
      return fmts[i];
  return NULL;
}

int bh_cli_plot_find_scripts(const char *given, const char *script, char *dir, size_t len) {
  return find_scripts(given, script, dir, len);
}

bool bh_cli_have_gnuplot(void) { return have_gnuplot(); }

/* Runs gnuplot on the script with vars; 0, or BH_EXIT_FAIL after a message. */
static int run_gnuplot(const char *vars, const char *path) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "buddyhint plot: fork: %s\n", strerror(errno));
    return BH_EXIT_FAIL;
  }
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", "-e", vars, path, (char *)NULL);
    fprintf(stderr, "buddyhint plot: cannot run gnuplot: %s\n", strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "buddyhint plot: waitpid: %s\n", strerror(errno));
      return BH_EXIT_FAIL;
    }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : BH_EXIT_FAIL;
}

/* Removes the CSV made for a compare result, and its folder (NULL: none). */
static void drop_tmp(const char *dir, const char *csv) {
  if (!dir)
    return;
  unlink(csv);
  rmdir(dir);
}

int cmd_plot(int argc, char **argv) {
  if (bh_cli_plot_is_sweep(argc, argv)) /* plot_sweep.c */
    return bh_cli_plot_sweep(argc, argv);
  const char *inputs[MAX_INPUTS + 1] = {NULL}, *labels[MAX_INPUTS];
  int nin = 0, nlab = 0;
  const char *out = NULL, *kind = NULL, *scripts = NULL, *rep = NULL;
  for (int i = 1; i < argc;) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if ((r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &out)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "output", &out)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "kind", &kind)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "scripts", &scripts)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "rep", &rep)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if ((r = bh_cli_opt(argc, argv, &i, "label", &v)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
      if (nlab == MAX_INPUTS)
        return bh_cli_usage_error(VERB, "at most %d labels", MAX_INPUTS);
      labels[nlab++] = v;
    } else if (a[0] == '-' && a[1]) {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else {
      if (nin == MAX_INPUTS)
        return bh_cli_usage_error(VERB, "at most %d inputs", MAX_INPUTS);
      inputs[nin++] = a;
      i++;
    }
  }
  if (!nin)
    return bh_cli_usage_error(VERB, "no result file given (buddyhint plot --help)");
  if (!out)
    return bh_cli_usage_error(VERB, "no output given: -o FILE.png or -o FILE.svg");
  const char *fmt = bh_cli_plot_format(out);
  if (!fmt)
    return bh_cli_usage_error(VERB, "-o '%s': the name must end in .png, .svg or .pdf", out);
  if (bh_cli_has_control(out) || (scripts && bh_cli_has_control(scripts)))
    return bh_cli_usage_error(VERB, "-o and --scripts: a control character in a file name is "
                                    "not supported");
  if (kind && strcmp(kind, "heatmap") && strcmp(kind, "resident"))
    return bh_cli_usage_error(VERB, "--kind must be heatmap or resident, not '%s'", kind);
  uint64_t rep_n = 0;
  if (rep && bh_cli_parse_u64(rep, 1, 1000000, &rep_n))
    return bh_cli_usage_error(VERB, "--rep wants a repetition number in 1..1000000, not '%s'", rep);
  if (nlab > nin)
    return bh_cli_usage_error(VERB, "%d labels for %d inputs", nlab, nin);

  input_kind_t k = IN_UNKNOWN;
  for (int i = 0; i < nin; i++) {
    char header[4096];
    long bad_line;
    if (strchr(inputs[i], '\'') || bh_cli_has_control(inputs[i]))
      return bh_cli_usage_error(
          VERB, "'%s': file names with a single quote or a control character are not supported",
          inputs[i]);
    if (read_header(inputs[i], header, sizeof(header)) != 0)
      return bh_cli_usage_error(VERB, "cannot read '%s': %s", inputs[i], strerror(errno));
    input_kind_t ki = classify(header);
    /* a compare result is JSON, quotes and all: its values are checked as they are turned
     * into the CSV the script reads (compare_csv) */
    if (ki != IN_COMPARE_JSON && check_cells(inputs[i], &bad_line))
      return bh_cli_usage_error(VERB,
                                "%s:%ld: a value holds a quote, a backslash or a control "
                                "character, which the plot scripts cannot pass on safely",
                                inputs[i], bad_line);
    if (ki == IN_UNKNOWN)
      return bh_cli_usage_error(
          VERB, "'%s' is not a result this verb knows (header '%.60s'); see buddyhint plot --help",
          inputs[i], header);
    if (i && ki != k)
      return bh_cli_usage_error(VERB, "several inputs must all be replay timelines");
    k = ki;
  }
  if (nin > 1 && k != IN_REPLAY_TIMELINE)
    return bh_cli_usage_error(VERB, "several inputs are only for replay timelines");
  if (k == IN_COMPARE_TIMELINE && kind && strcmp(kind, "resident"))
    return bh_cli_usage_error(VERB, "a compare timeline is drawn as --kind resident");
  if (kind && k != IN_REPLAY_TIMELINE && k != IN_COMPARE_TIMELINE)
    return bh_cli_usage_error(VERB, "--kind is for replay timelines");
  if (kind && !strcmp(kind, "heatmap") && nin > 1)
    return bh_cli_usage_error(VERB, "--kind heatmap draws one timeline");
  const char *script = script_of(k);
  bool resident = k == IN_REPLAY_TIMELINE && (nin > 1 || (kind && !strcmp(kind, "resident")));
  if (resident)
    script = "replay_resident.gp";

  if (!have_gnuplot()) {
    fprintf(stderr, "buddyhint plot: gnuplot is not installed (on Debian: apt-get install "
                    "gnuplot-nox)\n");
    return BH_EXIT_FAIL;
  }
  char dir[PATH_MAX];
  if (find_scripts(scripts, script, dir, sizeof(dir)) != 0)
    return BH_EXIT_FAIL;

  char vars[16384] = "", csv[PATH_MAX] = "", tmpbuf[] = "/tmp/buddyhint-plot-XXXXXX";
  char *tmpdir = NULL;
  int bad = 0;
  if (resident) {
    char n[32], name[32], lab[PATH_MAX];
    snprintf(n, sizeof(n), "%d", nin);
    size_t l = strlen(vars);
    snprintf(vars + l, sizeof(vars) - l, "n_inputs=%s; ", n);
    for (int i = 0; i < nin; i++) {
      snprintf(name, sizeof(name), "input%d", i + 1);
      bad |= add_var(vars, sizeof(vars), name, inputs[i]);
      if (i < nlab)
        snprintf(lab, sizeof(lab), "%s", labels[i]);
      else
        stem(inputs[i], lab, sizeof(lab));
      snprintf(name, sizeof(name), "label%d", i + 1);
      bad |= add_var(vars, sizeof(vars), name, lab);
    }
  } else if (k == IN_COMPARE_JSON) {
    if (!(tmpdir = mkdtemp(tmpbuf))) {
      fprintf(stderr, "buddyhint plot: a temporary folder: %s\n", strerror(errno));
      return BH_EXIT_FAIL;
    }
    snprintf(csv, sizeof(csv), "%s/compare.csv", tmpdir);
    if (compare_csv(inputs[0], csv)) {
      unlink(csv); /* what it wrote before it refused a value, if anything */
      rmdir(tmpdir);
      return BH_EXIT_USAGE;
    }
    bad |= add_var(vars, sizeof(vars), "input", csv);
  } else {
    bad |= add_var(vars, sizeof(vars), "input", inputs[0]);
    if (k == IN_COMPARE_TIMELINE) {
      size_t l = strlen(vars);
      snprintf(vars + l, sizeof(vars) - l, "long=1; ");
    }
    if (k == IN_REPLAY_TIMELINE) { /* the title names the file, not where it lies */
      char lab[PATH_MAX];
      stem(inputs[0], lab, sizeof(lab));
      bad |= add_var(vars, sizeof(vars), "label", nlab ? labels[0] : lab);
    }
  }
  if (rep && k == IN_MEMHOG_TIMELINE) {
    size_t l = strlen(vars);
    snprintf(vars + l, sizeof(vars) - l, "rep=%llu; ", (unsigned long long)rep_n);
  }
  /* gnuplot writes a temporary file beside OUT, renamed to OUT if it drew: a picture left from
   * before is not removed first, and cannot pass for this one either */
  bh_cli_set_inputs(inputs);
  bh_cli_out_t *o;
  int rc = bh_cli_out_open(VERB, out, &o);
  bh_cli_set_inputs(NULL);
  if (rc) {
    drop_tmp(tmpdir, csv);
    return rc;
  }
  bad |= add_var(vars, sizeof(vars), "output", bh_cli_out_writing(o));
  bad |= add_var(vars, sizeof(vars), "fmt", fmt);
  bad |= add_var(vars, sizeof(vars), "scripts", dir);
  if (bad) {
    bh_cli_out_abort(o);
    drop_tmp(tmpdir, csv);
    return bh_cli_usage_error(VERB, "file names too long");
  }
  char path[PATH_MAX + 64];
  snprintf(path, sizeof(path), "%s/%s", dir, script);
  struct stat sb;
  int g = run_gnuplot(vars, path);
  drop_tmp(tmpdir, csv);
  if (g || stat(bh_cli_out_writing(o), &sb) != 0 || (S_ISREG(sb.st_mode) && sb.st_size == 0)) {
    fprintf(stderr, "buddyhint plot: gnuplot failed on %s with %s (see its messages above)\n",
            inputs[0], path);
    bh_cli_out_abort(o);
    return BH_EXIT_FAIL;
  }
  if ((rc = bh_cli_out_close(o)) != 0)
    return rc;
  printf("%s\n", out);
  return BH_EXIT_OK;
}
