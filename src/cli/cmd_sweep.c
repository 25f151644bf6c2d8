/*
 * buddyhint sweep: expands a YAML spec into replay jobs (sweep.c) and hands them to an engine.
 * The engines write jobs; they do not schedule: `local` runs them here N at a time, `slurm`
 * writes a job array script for sbatch, `parallel` a job list for GNU parallel.  Each job,
 * wherever it runs, is `buddyhint sweep --run DIR ID`, which replays and publishes the JSON
 * atomically (sweep_job.c); a job whose JSON is there is skipped, so running a sweep again
 * resumes it.
 */
#include "cli/cli.h"
#include "cli/run_json.h"
#include "cli/sweep/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERB "sweep"
#define MAX_IDS 4096

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint sweep SPEC -o DIR [--engine local|slurm|parallel] [OPTIONS]\n"
          "       buddyhint sweep --run DIR (ID... | --list FILE --task I [--per-task K])\n\n"
          "Expands SPEC, a YAML file, into one replay per point of its grid (traces x\n"
          "strategies x replay options x seeds), writes the job list to DIR/sweep.json and\n"
          "runs the jobs that have no result yet: each writes DIR/jobs/ID.json when it is\n"
          "done, or DIR/jobs/ID.err when it fails.  Running a sweep again resumes it.  The\n"
          "results are merged with 'buddyhint merge DIR -o FILE.csv' and drawn with\n"
          "'buddyhint plot DIR --x AXIS -o FILE.png'.\n\n"
          "SPEC:\n"
          "  traces: [traces/real-memhog-300M.bht.zst, \"recorded/*.trace.zst\"]\n"
          "  strategies: [none, bitmap, \"bubble:order=3\", bubble: {order: [3, 9], delay: 1s}]\n"
          "  options: {backing: sim, compaction-proactiveness: [0, 20, 100]}\n"
          "  seeds: [1, 2, 3]\n"
          "Trace files and globs are relative to the spec's folder.  A strategy is compare's\n"
          "NAME[:KEY=VALUE...] or NAME: {KEY: VALUE or [VALUES]}; options are replay options\n"
          "by their long name (flags take true/false); a list is an axis of the grid.  A seed\n"
          "is the replay's --seed.  jemalloc entries replay through the jemalloc baseline with\n"
          "the options that apply to it (idle, touch, lenient, max-order) and no seed.\n\n"
          "options:\n"
          "  -o, --output DIR      the sweep folder (created; an existing one is resumed)\n"
          "  --engine KIND         local (default), slurm or parallel\n"
          "  -j, --jobs N          local, parallel: jobs at a time (default: the CPUs here;\n"
          "                        parallel: its own default)\n"
          "  --dry-run             slurm, parallel: write the script or job list, do not run\n"
          "  --per-task K          slurm: jobs per array task (default 1)\n"
          "  --partition NAME, --time LIMIT, --mem SIZE, --job-name NAME\n"
          "                        slurm: passed to sbatch as #SBATCH lines\n"
          "  --sshloginfile FILE   parallel: run on the machines listed (GNU parallel's\n"
          "                        --sshloginfile; DIR and this program must be at the same\n"
          "                        paths there)\n"
          "  --force               rerun the jobs whose result was made from other contents\n"
          "                        of its trace (the file was replaced since); without it the\n"
          "                        sweep stops and says which\n"
          "  --run DIR             run jobs of DIR (what the engines' scripts call): the ids\n"
          "                        given, or lines I*K .. I*K+K-1 of --list FILE\n\n"
          "exit status: 0 every job done (or the script submitted / written); 1 a job failed\n"
          "or sbatch/parallel failed; 2 a bad spec or usage.\n");
}

typedef struct opts {
  const char *spec, *dir, *engine, *partition, *time, *mem, *job_name, *sshloginfile;
  const char *run_dir, *list, *task;
  unsigned jobs, per_task;
  bool dry_run, jobs_set, force;
  const char *ids[MAX_IDS];
  int nids;
} opts_t;

static int parse_uint(const char *opt, const char *v, unsigned max, unsigned *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (!*v || *end || *v == '-' || errno || x < 1 || x > max)
    return bh_cli_usage_error(VERB, "%s: '%s' is not a number in 1..%u", opt, v, max);
  *out = (unsigned)x;
  return 0;
}

/* No line breaks in what goes into a script. */
static int plain(const char *opt, const char *v) {
  for (const char *c = v; v && *c; c++)
    if ((unsigned char)*c < 0x20)
      return bh_cli_usage_error(VERB, "%s: control characters are not allowed", opt);
  return 0;
}

static int parse(int argc, char **argv, opts_t *o) {
  const char *v;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    int r;
    if (bh_cli_is_help(a)) {
      help(stdout);
      return 1;
    }
    if (!strcmp(a, "--dry-run")) {
      o->dry_run = true;
      i++;
    } else if (!strcmp(a, "--force")) {
      o->force = true;
      i++;
    } else if ((r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &o->dir)) ||
               (r = bh_cli_opt(argc, argv, &i, "output", &o->dir)) ||
               (r = bh_cli_opt(argc, argv, &i, "engine", &o->engine)) ||
               (r = bh_cli_opt(argc, argv, &i, "partition", &o->partition)) ||
               (r = bh_cli_opt(argc, argv, &i, "time", &o->time)) ||
               (r = bh_cli_opt(argc, argv, &i, "mem", &o->mem)) ||
               (r = bh_cli_opt(argc, argv, &i, "job-name", &o->job_name)) ||
               (r = bh_cli_opt(argc, argv, &i, "sshloginfile", &o->sshloginfile)) ||
               (r = bh_cli_opt(argc, argv, &i, "run", &o->run_dir)) ||
               (r = bh_cli_opt(argc, argv, &i, "list", &o->list)) ||
               (r = bh_cli_opt(argc, argv, &i, "task", &o->task))) {
      if (r < 0)
        return -1;
    } else if ((r = bh_cli_short_opt(VERB, argc, argv, &i, "-j", &v)) ||
               (r = bh_cli_opt(argc, argv, &i, "jobs", &v))) {
      if (r < 0 || parse_uint("--jobs", v, 4096, &o->jobs))
        return -1;
      o->jobs_set = true;
    } else if ((r = bh_cli_opt(argc, argv, &i, "per-task", &v))) {
      if (r < 0 || parse_uint("--per-task", v, 1000000, &o->per_task))
        return -1;
    } else if (a[0] == '-' && a[1]) {
      bh_cli_usage_error(VERB, "unknown option '%s'", a);
      return -1;
    } else if (o->run_dir) {
      if (o->nids == MAX_IDS) {
        bh_cli_usage_error(VERB, "at most %d ids; use --list", MAX_IDS);
        return -1;
      }
      o->ids[o->nids++] = a;
      i++;
    } else if (o->spec) {
      bh_cli_usage_error(VERB, "one spec at a time (got '%s' and '%s')", o->spec, a);
      return -1;
    } else {
      o->spec = a;
      i++;
    }
  }
  return 0;
}

/* ---- helpers ---- */

static bool self_path(char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0)
    return false;
  buf[n] = 0;
  return true;
}

/* Appends s as one shell word in single quotes. */
static bool shell_quote(char *buf, size_t len, const char *s) {
  size_t l = strlen(buf);
  if (l + 3 > len)
    return false;
  buf[l++] = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      if (l + 5 > len)
        return false;
      memcpy(buf + l, "'\\''", 4);
      l += 4;
    } else {
      if (l + 2 > len)
        return false;
      buf[l++] = *s;
    }
  }
  if (l + 2 > len)
    return false;
  buf[l++] = '\'';
  buf[l] = 0;
  return true;
}

/* Opens DIR/SUB/batch-N.SUFFIX for the first N that is free; its path goes to buf. */
static int create_numbered(char *buf, size_t len, const char *dir, const char *sub,
                           const char *suffix, int *number) {
  char d[PATH_MAX];
  snprintf(d, sizeof(d), "%s/%s", dir, sub);
  if (mkdir(d, 0755) && errno != EEXIST) {
    fprintf(stderr, "buddyhint sweep: cannot create %s: %s\n", d, strerror(errno));
    return -1;
  }
  for (int n = 1; n < 100000; n++) {
    if (snprintf(buf, len, "%s/batch-%d.%s", d, n, suffix) >= (int)len)
      return -1;
    int fd = open(buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *number = n;
      return fd;
    }
    if (errno != EEXIST)
      break;
  }
  fprintf(stderr, "buddyhint sweep: cannot create a file in %s: %s\n", d, strerror(errno));
  return -1;
}

/* Writes the ids of the jobs to run, one a line, to a new numbered file. */
static int write_list(const char *dir, const char *sub, const char *suffix, const bh_sweep_t *s,
                      const size_t *todo, size_t ntodo, const char *self, char *path, size_t len,
                      int *number) {
  int fd = create_numbered(path, len, dir, sub, suffix, number);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  for (size_t i = 0; i < ntodo; i++) {
    if (self) { /* a command line for GNU parallel */
      char line[3 * PATH_MAX] = "";
      shell_quote(line, sizeof(line), self);
      strcat(line, " sweep --run ");
      shell_quote(line, sizeof(line), dir);
      fprintf(f, "%s %s\n", line, s->jobs[todo[i]].id);
    } else {
      fprintf(f, "%s\n", s->jobs[todo[i]].id);
    }
  }
  bool bad = fflush(f) || ferror(f) || fsync(fileno(f));
  if (fclose(f) || bad) {
    fprintf(stderr, "buddyhint sweep: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

static void fmt_time(char *buf, size_t len, double s) {
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "trace strategy col=value ..." of a job, for messages. */
static void describe(char *buf, size_t len, const bh_sweep_t *s, const bh_sweep_job_t *j) {
  size_t l = (size_t)snprintf(buf, len, "%s %s", j->coords[0], j->coords[1]);
  for (size_t c = 3; c < s->ncols && l < len; c++)
    if (j->coords[c])
      l += (size_t)snprintf(buf + l, len - l, " %s=%s", s->cols[c], j->coords[c]);
}

static int report(const char *dir, const bh_sweep_t *s, const size_t *todo, size_t ntodo,
                  size_t before) {
  size_t done = 0, failed = 0, missing = 0;
  for (size_t i = 0; i < ntodo; i++) {
    int st = bh_sweep_state(dir, s->jobs[todo[i]].id);
    done += st == BH_SWEEP_DONE;
    failed += st == BH_SWEEP_FAILED || st == BH_SWEEP_CORRUPT;
    missing += st == BH_SWEEP_MISSING;
  }
  printf("sweep: %zu jobs: %zu done (%zu now, %zu before), %zu failed, %zu not run\n", s->njobs,
         done + before, done, before, failed, missing);
  for (size_t i = 0; i < ntodo; i++) {
    const bh_sweep_job_t *j = &s->jobs[todo[i]];
    if (bh_sweep_state(dir, j->id) != BH_SWEEP_FAILED)
      continue;
    char d[1024];
    describe(d, sizeof(d), s, j);
    printf("failed: %s (%s): see %s/jobs/%s.err\n", j->id, d, dir, j->id);
  }
  return failed || missing ? BH_EXIT_FAIL : BH_EXIT_OK;
}

/* ---- local ---- */

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static void progress(bool tty, size_t fin, size_t ntodo, size_t failed, size_t running, double t0) {
  char el[32], eta[32] = "--";
  double e = now_s() - t0;
  fmt_time(el, sizeof(el), e);
  if (fin)
    fmt_time(eta, sizeof(eta), e / (double)fin * (double)(ntodo - fin));
  fprintf(stderr, "%ssweep: %zu/%zu finished, %zu failed, %zu running; %s elapsed, ETA %s%s",
          tty ? "\r" : "", fin, ntodo, failed, running, el, eta, tty ? "   " : "\n");
}

static int run_local(const opts_t *o, const bh_sweep_t *s, const size_t *todo, size_t ntodo) {
  unsigned n = o->jobs ? o->jobs : bh_cli_online_cpus();
  if (n < 1)
    n = 1;
  pid_t *pids = calloc(n, sizeof(pid_t));
  size_t *slot = calloc(n, sizeof(size_t));
  if (!pids || !slot) {
    free(pids);
    free(slot);
    return BH_EXIT_FAIL;
  }
  struct sigaction sa = {0}, old_int, old_term;
  sa.sa_handler = on_signal; /* no SA_RESTART: waitpid returns to look at stop_signal */
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  bool tty = isatty(STDERR_FILENO), stopping = false;
  size_t next = 0, fin = 0, failed = 0, running = 0;
  double t0 = now_s();
  fprintf(stderr, "sweep: running %zu jobs, %u at a time\n", ntodo, n);
  while (next < ntodo || running) {
    for (unsigned k = 0; k < n && next < ntodo && !stop_signal; k++) {
      if (pids[k])
        continue;
      pid_t p = bh_sweep_job_start(o->dir, &s->jobs[todo[next]]);
      if (p < 0) {
        stop_signal = SIGTERM;
        break;
      }
      pids[k] = p;
      slot[k] = todo[next++];
      running++;
    }
    if (!running)
      break;
    if (stop_signal && !stopping) { /* the running jobs end too */
      stopping = true;
      for (unsigned k = 0; k < n; k++)
        if (pids[k])
          kill(pids[k], SIGTERM);
    }
    int st;
    pid_t p = waitpid(-1, &st, 0);
    if (p < 0) {
      if (errno != EINTR)
        break;
      continue;
    }
    for (unsigned k = 0; k < n; k++)
      if (pids[k] == p) {
        if (!bh_sweep_job_end(o->dir, &s->jobs[slot[k]], p, st))
          failed++;
        pids[k] = 0;
        running--;
        fin++;
        progress(tty, fin, ntodo, failed, running, t0);
      }
  }
  if (tty)
    fputc('\n', stderr);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  free(pids);
  free(slot);
  if (stop_signal)
    fprintf(stderr, "sweep: stopped by signal %d; run the sweep again to resume\n",
            (int)stop_signal);
  return 0;
}

/* ---- slurm ---- */

/* The folder in an #SBATCH --output pattern: in double quotes (sbatch splits the line at
 * spaces otherwise), a '%' doubled (Slurm reads %j, %a... as replacements); a double quote
 * or a control character is refused before (script_path_ok). */
static void slurm_pattern_dir(FILE *f, const char *dir) {
  for (; *dir; dir++)
    fputs(*dir == '%' ? "%%" : (char[]){*dir, 0}, f);
}

static int sbatch_lines(FILE *f, const opts_t *o, size_t ntasks, const char *dir, int number) {
  fprintf(f, "#SBATCH --job-name=%s\n", o->job_name ? o->job_name : "buddyhint-sweep");
  fprintf(f, "#SBATCH --array=0-%zu\n", ntasks - 1);
  fputs("#SBATCH --output=\"", f);
  slurm_pattern_dir(f, dir);
  fprintf(f, "/slurm/batch-%d-%%a.out\"\n", number);
  if (o->partition)
    fprintf(f, "#SBATCH --partition=%s\n", o->partition);
  if (o->time)
    fprintf(f, "#SBATCH --time=%s\n", o->time);
  if (o->mem)
    fprintf(f, "#SBATCH --mem=%s\n", o->mem);
  return 0;
}

/* Runs sbatch --parsable SCRIPT; the job id goes to id. */
static int submit(const char *script, char *id, size_t len) {
  int fds[2];
  if (pipe(fds))
    return -1;
  fflush(NULL);
  pid_t p = fork();
  if (p == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execlp("sbatch", "sbatch", "--parsable", script, (char *)NULL);
    fprintf(stderr, "buddyhint sweep: cannot run sbatch: %s (is Slurm's client installed?)\n",
            strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (p > 0 && n + 1 < len && (r = read(fds[0], id + n, len - 1 - n)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    n += (size_t)r;
  }
  id[n] = 0;
  close(fds[0]);
  int st = 0;
  while (p > 0 && waitpid(p, &st, 0) < 0 && errno == EINTR)
    ;
  id[strcspn(id, ";\r\n")] = 0; /* "ID" or "ID;CLUSTER" */
  return p > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && id[0] ? 0 : -1;
}

static int run_slurm(const opts_t *o, const bh_sweep_t *s, const size_t *todo, size_t ntodo,
                     const char *dir, const char *self) {
  char list[PATH_MAX], script[PATH_MAX];
  int number, sn;
  unsigned k = o->per_task ? o->per_task : 1;
  size_t ntasks = (ntodo + k - 1) / k;
  if (write_list(dir, "slurm", "list", s, todo, ntodo, NULL, list, sizeof(list), &number))
    return BH_EXIT_FAIL;
  char body[4 * PATH_MAX + 512] = "", *buf = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&buf, &blen);
  if (!f)
    return BH_EXIT_FAIL;
  fprintf(f,
          "#!/bin/bash\n"
          "# A job array written by buddyhint sweep: task I runs the jobs on lines I*%u+1 .. "
          "I*%u+%u of\n# %s; each writes %s/jobs/ID.json.\n",
          k, k, k, list, dir);
  sbatch_lines(f, o, ntasks, dir, number);
  shell_quote(body, sizeof(body), self);
  strcat(body, " sweep --run ");
  shell_quote(body, sizeof(body), dir);
  strcat(body, " --list ");
  shell_quote(body, sizeof(body), list);
  fprintf(f, "exec %s --task \"$SLURM_ARRAY_TASK_ID\" --per-task %u\n", body, k);
  fclose(f);
  int fd = create_numbered(script, sizeof(script), dir, "slurm", "sbatch", &sn);
  bool ok = fd >= 0;
  if (ok) {
    close(fd);
    unlink(script); /* bh_sweep_write_new creates it with the text and syncs it */
    ok = !bh_sweep_write_new(script, buf, blen) && !chmod(script, 0755);
  }
  if (!ok) {
    fprintf(stderr, "buddyhint sweep: cannot write the Slurm script\n");
    free(buf);
    return BH_EXIT_FAIL;
  }
  fprintf(stderr, "sweep: %zu jobs in %zu array tasks (%u a task): %s\n", ntodo, ntasks, k, script);
  if (ntasks > 1000)
    fprintf(stderr, "sweep: note: Slurm's default MaxArraySize is 1001 tasks; use --per-task "
                    "to make fewer\n");
  if (o->dry_run) {
    fputs(buf, stdout);
    free(buf);
    return BH_EXIT_OK;
  }
  free(buf);
  char id[128];
  if (submit(script, id, sizeof(id))) {
    fprintf(stderr, "buddyhint sweep: sbatch did not take %s (see its message above)\n", script);
    return BH_EXIT_FAIL;
  }
  fprintf(stderr,
          "sweep: submitted Slurm job %s; when it has finished, run the sweep again to "
          "resume what failed, and 'buddyhint merge %s -o FILE.csv'\n",
          id, dir);
  printf("%s\n", id);
  return BH_EXIT_OK;
}

/* ---- GNU parallel ---- */

static int run_parallel(const opts_t *o, const bh_sweep_t *s, const size_t *todo, size_t ntodo,
                        const char *dir, const char *self, size_t before) {
  char list[PATH_MAX], joblog[PATH_MAX + 32], jobs[32];
  int number;
  if (write_list(dir, "parallel", "jobs", s, todo, ntodo, self, list, sizeof(list), &number))
    return BH_EXIT_FAIL;
  snprintf(joblog, sizeof(joblog), "%s/parallel/batch-%d.log", dir, number);
  snprintf(jobs, sizeof(jobs), "%u", o->jobs);
  const char *argv[16];
  int n = 0;
  argv[n++] = "parallel";
  argv[n++] = "--joblog";
  argv[n++] = joblog;
  if (o->jobs_set) {
    argv[n++] = "--jobs";
    argv[n++] = jobs;
  }
  if (o->sshloginfile) {
    argv[n++] = "--sshloginfile";
    argv[n++] = o->sshloginfile;
  }
  argv[n++] = "-a";
  argv[n++] = list;
  argv[n] = NULL;
  fprintf(stderr, "sweep: %zu jobs for GNU parallel: %s\n", ntodo, list);
  if (o->dry_run) {
    for (int i = 0; i < n; i++) {
      char w[PATH_MAX + 16] = "";
      shell_quote(w, sizeof(w), argv[i]);
      printf("%s%s", i ? " " : "",
             strspn(argv[i], "abcdefghijklmnopqrstuvwxyz-0123456789/._") == strlen(argv[i])
                 ? argv[i]
                 : w);
    }
    printf("\n");
    return BH_EXIT_OK;
  }
  fflush(NULL);
  pid_t p = fork();
  if (p == 0) {
    execvp("parallel", (char *const *)argv);
    fprintf(stderr, "buddyhint sweep: cannot run GNU parallel: %s (apt-get install parallel)\n",
            strerror(errno));
    _exit(127);
  }
  int st = 0;
  while (p > 0 && waitpid(p, &st, 0) < 0 && errno == EINTR)
    ;
  if (p < 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 127))
    return BH_EXIT_FAIL;
  return report(dir, s, todo, ntodo, before);
}

/* ---- running jobs: --run ---- */

static int run_ids(const opts_t *o) {
  bh_sweep_t *s;
  if (bh_sweep_load(o->run_dir, &s))
    return BH_EXIT_USAGE;
  char **ids = NULL, *text = NULL;
  size_t nids = 0;
  if (o->list) {
    unsigned k = o->per_task ? o->per_task : 1, task;
    char *end;
    errno = 0;
    unsigned long t = o->task ? strtoul(o->task, &end, 10) : 0;
    if (!o->task || !*o->task || *end || errno || t > UINT32_MAX) {
      bh_sweep_free(s);
      return bh_cli_usage_error(VERB, "--list needs --task I (a number)");
    }
    task = (unsigned)t;
    FILE *f = fopen(o->list, "r");
    size_t cap = 0;
    if (!f || getdelim(&text, &cap, 0, f) < 0) {
      fprintf(stderr, "buddyhint sweep: cannot read %s\n", o->list);
      if (f)
        fclose(f);
      free(text);
      bh_sweep_free(s);
      return BH_EXIT_USAGE;
    }
    fclose(f);
    ids = calloc(k, sizeof(char *));
    size_t line = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); ids && l;
         l = strtok_r(NULL, "\n", &save), line++)
      if (line >= (size_t)task * k && line < (size_t)task * k + k)
        ids[nids++] = l;
  } else {
    ids = calloc((size_t)o->nids + 1, sizeof(char *));
    for (int i = 0; ids && i < o->nids; i++)
      ids[nids++] = (char *)o->ids[i];
  }
  int rc = ids ? BH_EXIT_OK : BH_EXIT_FAIL;
  for (size_t i = 0; ids && i < nids; i++) {
    const bh_sweep_job_t *j = bh_sweep_find(s, ids[i]);
    if (!j) {
      fprintf(stderr, "buddyhint sweep: %s has no job %s\n", o->run_dir, ids[i]);
      rc = BH_EXIT_USAGE;
      continue;
    }
    int st = bh_sweep_state(o->run_dir, j->id);
    if (st == BH_SWEEP_DONE) {
      printf("job %s: done before\n", j->id);
      continue;
    }
    if (st == BH_SWEEP_CORRUPT) {
      fprintf(stderr, "job %s: %s/jobs/%s.json is not a complete result; left alone\n", j->id,
              o->run_dir, j->id);
      rc = BH_EXIT_FAIL;
      continue;
    }
    double t0 = now_s();
    bool ok = bh_sweep_job_run(o->run_dir, j);
    printf("job %s: %s in %.1f s\n", j->id, ok ? "done" : "failed", now_s() - t0);
    fflush(stdout);
    if (!ok) {
      fprintf(stderr, "job %s failed: see %s/jobs/%s.err\n", j->id, o->run_dir, j->id);
      rc = BH_EXIT_FAIL;
    }
  }
  free(ids);
  free(text);
  bh_sweep_free(s);
  return rc;
}

/* ---- results of a trace that has changed since ---- */

/* The sha256 of each trace path, computed once per run of the verb. */
typedef struct trace_sums {
  json_t *by_path; /* path -> hex, or null when the file cannot be read */
} trace_sums_t;

static const char *current_sum(trace_sums_t *ts, const char *path) {
  json_t *v = json_object_get(ts->by_path, path);
  if (!v) {
    char hex[65] = "";
    uint64_t bytes;
    v = bh_cli_trace_sha256(path, hex, &bytes) || !hex[0] ? json_null() : json_string(hex);
    json_object_set_new(ts->by_path, path, v);
  }
  return json_string_value(v);
}

/* True if the done job's result was made from other contents than its trace holds now: the
 * file at that path was replaced, and the job id (which hashes the path) cannot tell. */
static bool job_stale(const char *dir, const bh_sweep_job_t *j, trace_sums_t *ts) {
  char path[PATH_MAX];
  if (!bh_sweep_job_path(path, sizeof(path), dir, j->id, "json"))
    return false;
  json_t *r = json_load_file(path, 0, NULL);
  const char *was = json_string_value(
      json_object_get(json_object_get(json_object_get(r, "provenance"), "trace"), "sha256"));
  const char *now = was ? current_sum(ts, j->trace) : NULL;
  bool stale = was && now && strcmp(was, now);
  json_decref(r);
  return stale;
}

/* Stale results are kept as jobs/ID.json.stale (the sweep's own files: never deleted) and
 * their jobs run again.  0, or -1 after a message. */
static int set_aside(const char *dir, const bh_sweep_job_t *j) {
  char from[PATH_MAX], to[PATH_MAX];
  if (!bh_sweep_job_path(from, sizeof(from), dir, j->id, "json") ||
      !bh_sweep_job_path(to, sizeof(to), dir, j->id, "json.stale") || rename(from, to)) {
    fprintf(stderr, "buddyhint sweep: cannot move %s aside: %s\n", from, strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- the verb ---- */

/* The Slurm script and the GNU parallel job list hold the folder's path: on lines of their
 * own (a control character would end the line and start a command) and, for Slurm, in the
 * double quotes of an #SBATCH line (where a double quote cannot be written).  False after a
 * message. */
static bool script_path_ok(const char *engine, const char *dir) {
  if (!strcmp(engine, "local"))
    return true;
  for (const unsigned char *c = (const unsigned char *)dir; *c; c++)
    if (*c < 0x20 || *c == 0x7f || (*c == '"' && !strcmp(engine, "slurm"))) {
      bh_cli_usage_error(VERB,
                         "-o: the folder's path holds %s, which cannot be written into the %s; "
                         "use another folder",
                         *c == '"' ? "a double quote" : "a control character",
                         strcmp(engine, "slurm") ? "GNU parallel job list" : "Slurm script");
      return false;
    }
  return true;
}

static int sweep(const opts_t *o) {
  bh_sweep_t *s;
  int r = bh_sweep_from_spec(o->spec, &s);
  if (r)
    return r == BH_ENOMEM ? BH_EXIT_FAIL : BH_EXIT_USAGE;
  const char *engine = o->engine ? o->engine : "local";
  char cwd[PATH_MAX];
  if (!script_path_ok(engine, o->dir) ||
      (o->dir[0] != '/' && getcwd(cwd, sizeof(cwd)) && !script_path_ok(engine, cwd))) {
    bh_sweep_free(s);
    return BH_EXIT_USAGE;
  }
  if (bh_sweep_prepare(s, o->dir)) {
    bh_sweep_free(s);
    return BH_EXIT_USAGE;
  }
  char dir[PATH_MAX], self[PATH_MAX];
  if (!realpath(o->dir, dir) || !self_path(self, sizeof(self))) {
    fprintf(stderr, "buddyhint sweep: cannot resolve %s or this program's path\n", o->dir);
    bh_sweep_free(s);
    return BH_EXIT_FAIL;
  }
  if (!script_path_ok(engine, dir)) { /* through a symbolic link */
    bh_sweep_free(s);
    return BH_EXIT_USAGE;
  }
  size_t *todo = calloc(s->njobs + 1, sizeof(size_t)), ntodo = 0, before = 0, corrupt = 0;
  size_t stale = 0, first_stale = 0;
  trace_sums_t ts = {json_object()};
  for (size_t i = 0; todo && ts.by_path && i < s->njobs; i++) {
    int st = bh_sweep_state(dir, s->jobs[i].id);
    if (st == BH_SWEEP_DONE && job_stale(dir, &s->jobs[i], &ts)) {
      if (!stale++)
        first_stale = i;
      if (o->force && !set_aside(dir, &s->jobs[i]))
        todo[ntodo++] = i;
      else if (o->force)
        corrupt++;
    } else if (st == BH_SWEEP_DONE)
      before++;
    else if (st == BH_SWEEP_CORRUPT) {
      fprintf(stderr, "sweep: %s/jobs/%s.json is not a complete result: left alone, not run\n", dir,
              s->jobs[i].id);
      corrupt++;
    } else
      todo[ntodo++] = i;
  }
  json_decref(ts.by_path);
  if (stale && !o->force) {
    fprintf(stderr,
            "buddyhint sweep: %zu results in %s were made from a trace that has changed since "
            "(the first: job %s, %s); --force keeps them as jobs/ID.json.stale and runs those "
            "jobs again\n",
            stale, dir, s->jobs[first_stale].id, s->jobs[first_stale].trace);
    free(todo);
    bh_sweep_free(s);
    return BH_EXIT_USAGE;
  }
  if (stale)
    fprintf(stderr,
            "sweep: %zu results were of a trace that has changed since: kept as "
            "jobs/ID.json.stale, run again\n",
            stale);
  fprintf(stderr, "sweep: %zu jobs in %s: %zu done before, %zu to run\n", s->njobs, dir, before,
          ntodo);
  int rc = todo ? BH_EXIT_OK : BH_EXIT_FAIL;
  if (!todo)
    ;
  else if (!ntodo)
    rc = report(dir, s, todo, ntodo, before);
  else if (!strcmp(engine, "slurm"))
    rc = run_slurm(o, s, todo, ntodo, dir, self);
  else if (!strcmp(engine, "parallel"))
    rc = run_parallel(o, s, todo, ntodo, dir, self, before);
  else if (!run_local(o, s, todo, ntodo))
    rc = report(dir, s, todo, ntodo, before);
  if (corrupt)
    rc = BH_EXIT_FAIL;
  free(todo);
  bh_sweep_free(s);
  return rc;
}

int cmd_sweep(int argc, char **argv) {
  opts_t o;
  memset(&o, 0, sizeof(o));
  int r = parse(argc, argv, &o);
  if (r)
    return r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  if (plain("--partition", o.partition) || plain("--time", o.time) || plain("--mem", o.mem) ||
      plain("--job-name", o.job_name))
    return BH_EXIT_USAGE;
  if (o.run_dir) {
    if (o.spec || o.dir)
      return bh_cli_usage_error(VERB, "--run DIR takes job ids, not a spec or -o");
    if (!o.list && !o.nids)
      return bh_cli_usage_error(VERB, "--run DIR: give job ids or --list FILE --task I");
    if (o.list && o.nids)
      return bh_cli_usage_error(VERB, "--run DIR: job ids or --list, not both");
    return run_ids(&o);
  }
  if (o.list || o.task)
    return bh_cli_usage_error(VERB, "--list and --task go with --run DIR");
  if (!o.spec)
    return bh_cli_usage_error(VERB, "no spec given");
  if (!o.dir)
    return bh_cli_usage_error(VERB, "no output folder given: -o DIR");
  const char *e = o.engine ? o.engine : "local";
  if (strcmp(e, "local") && strcmp(e, "slurm") && strcmp(e, "parallel"))
    return bh_cli_usage_error(VERB, "--engine must be local, slurm or parallel, not '%s'", e);
  bool slurm = !strcmp(e, "slurm"), local = !strcmp(e, "local");
  if (!slurm && (o.partition || o.time || o.mem || o.job_name || o.per_task))
    return bh_cli_usage_error(VERB, "--partition, --time, --mem, --job-name, --per-task are for "
                                    "--engine slurm");
  if (strcmp(e, "parallel") && o.sshloginfile)
    return bh_cli_usage_error(VERB, "--sshloginfile is for --engine parallel");
  if (local && o.dry_run)
    return bh_cli_usage_error(VERB, "--dry-run is for --engine slurm or parallel");
  if (slurm && o.jobs_set)
    return bh_cli_usage_error(VERB, "--jobs is not for --engine slurm (Slurm places the tasks)");
  return sweep(&o);
}
