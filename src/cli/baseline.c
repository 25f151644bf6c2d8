/* The jemalloc baseline of compare: starts buddyhint-jemalloc and parses its summary. */
#include "cli/baseline.h"

#include "common/errdetail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASELINE_PROG "buddyhint-jemalloc"
#define MAX_IDLE_WALL_NS                                                                           \
  (20ull * 1000000000ull) /* a 10 s decay finishes in it: the background thread may sleep 10 s     \
                             before it purges */

bool bh_cli_is_baseline(const char *name) {
  return name && (!strcmp(name, "jemalloc") || !strncmp(name, "jemalloc:", 9));
}

/* "jemalloc[:decay=MS][:muzzy=MS][:bg=0|1]" into its three settings. */
static int parse_name(const char *name, long *decay, long *muzzy, bool *bg, char *err,
                      size_t errlen) {
  *decay = 1000;
  *muzzy = 0;
  *bg = true;
  const char *p = name + 8; /* after "jemalloc" */
  while (*p == ':') {
    p++;
    const char *eq = strchr(p, '='), *end = strchr(p, ':');
    if (!end)
      end = p + strlen(p);
    if (!eq || eq > end)
      return bh__errf(err, errlen, BH_EINVAL, "compare: strategy '%s': want KEY=VALUE after ':'",
                      name);
    size_t klen = (size_t)(eq - p);
    char *stop;
    errno = 0;
    long v = strtol(eq + 1, &stop, 10);
    if (stop != end || eq + 1 == end || errno)
      return bh__errf(err, errlen, BH_EINVAL, "compare: strategy '%s': '%.*s' is not a number",
                      name, (int)(end - eq - 1), eq + 1);
    if (klen == 5 && !strncmp(p, "decay", 5) && v >= -1)
      *decay = v;
    else if (klen == 5 && !strncmp(p, "muzzy", 5) && v >= -1)
      *muzzy = v;
    else if (klen == 2 && !strncmp(p, "bg", 2) && (v == 0 || v == 1))
      *bg = v;
    else
      return bh__errf(err, errlen, BH_EINVAL,
                      "compare: strategy '%s': unknown setting '%.*s' (jemalloc takes decay=MS, "
                      "muzzy=MS with MS >= -1, bg=0|1)",
                      name, (int)(end - p), p);
    p = end;
  }
  if (*p)
    return bh__errf(err, errlen, BH_EINVAL, "compare: unknown strategy '%s'", name);
  return 0;
}

int bh_cli_baseline_check(const char *name, char *err, size_t errlen) {
  long decay, muzzy;
  bool bg;
  return parse_name(name, &decay, &muzzy, &bg, err, errlen);
}

/* The program's path: the directory of this executable + "/buddyhint-jemalloc". */
static int program_path(char *path, size_t size) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return -1;
  self[n] = 0;
  char *slash = strrchr(self, '/');
  if (!slash)
    return -1;
  *slash = 0;
  return snprintf(path, size, "%s/%s", self, BASELINE_PROG) < (int)size ? 0 : -1;
}

/* ---- the summary: "key value" lines ---- */

enum { F_U64, F_DBL, F_LONG, F_STR };

typedef struct field {
  const char *key;
  size_t off, size;
  int type;
} field_t;

#define U64(f)                                                                                     \
  { #f, offsetof(bh_replay_summary_t, f), 0, F_U64 }
#define DBL(f)                                                                                     \
  { #f, offsetof(bh_replay_summary_t, f), 0, F_DBL }
#define STR(f)                                                                                     \
  { #f, offsetof(bh_replay_summary_t, f), sizeof(((bh_replay_summary_t *)0)->f), F_STR }

static const field_t fields[] = {
    STR(trace),
    STR(strategy),
    STR(backing),
    STR(report_mode),
    STR(trace_format),
    U64(events),
    U64(allocs),
    U64(frees),
    U64(alloc_failures),
    U64(unknown_frees),
    U64(skipped_lines),
    U64(malformed_lines),
    U64(trace_failed_allocs),
    U64(split_frees),
    U64(orders_too_large),
    U64(lost_frees),
    U64(batched_dups),
    U64(time_reversals),
    U64(memory_bytes),
    U64(nr_cpus),
    DBL(virtual_seconds),
    DBL(wall_seconds),
    DBL(cpu_seconds),
    U64(rss_peak_bytes),
    U64(rss_final_bytes),
    U64(live_peak_bytes),
    U64(live_final_bytes),
    U64(reported_bytes),
    U64(returned_bytes),
    U64(madvise_calls),
    U64(refaults),
    U64(refault_blocks),
    U64(minflt),
    {"check_violations", offsetof(bh_replay_summary_t, check_violations), 0, F_LONG},
};

/* One "key value" line; unknown keys are ignored, "stat.NAME" goes to strategy_stats. */
static void parse_line(char *line, bh_replay_summary_t *s) {
  char *sp = strchr(line, ' ');
  if (!sp)
    return;
  *sp = 0;
  const char *k = line, *v = sp + 1;
  if (!strncmp(k, "stat.", 5)) {
    if (s->nr_strategy_stats < BH_REPLAY_MAX_STATS && k[5]) {
      snprintf(s->strategy_stat_names[s->nr_strategy_stats], 32, "%s", k + 5);
      s->strategy_stats[s->nr_strategy_stats++] = strtod(v, NULL);
    }
    return;
  }
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    const field_t *f = &fields[i];
    if (strcmp(k, f->key))
      continue;
    char *at = (char *)s + f->off;
    switch (f->type) {
    case F_U64:
      *(uint64_t *)at = strtoull(v, NULL, 10);
      break;
    case F_DBL:
      *(double *)at = strtod(v, NULL);
      break;
    case F_LONG:
      *(long *)at = strtol(v, NULL, 10);
      break;
    default:
      snprintf(at, f->size, "%s", v);
    }
    return;
  }
}

static void parse_summary(char *text, bh_replay_summary_t *s) {
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save))
    parse_line(line, s);
}

/* ---- running it ---- */

static void fmt_seconds(char *buf, size_t size, uint64_t ns) {
  snprintf(buf, size, "%.3f", (double)ns / 1e9);
}

int bh_cli_baseline_run(const bh_replay_config_t *cfg, const char *name, bh_replay_summary_t *out,
                        char *err, size_t errlen) {
  if (!cfg || !cfg->trace || !name || !out)
    return BH_EINVAL;
  memset(out, 0, sizeof(*out));
  if (err && errlen)
    err[0] = 0;
  if (!strcmp(cfg->trace, "-"))
    return bh__errf(err, errlen, BH_EINVAL,
                    "a replay reads its trace twice: give a file, not standard input");
  long decay, muzzy;
  bool bg;
  int e = parse_name(name, &decay, &muzzy, &bg, err, errlen);
  if (e)
    return e;
  char prog[PATH_MAX + 32];
  if (program_path(prog, sizeof(prog)))
    return bh__errf(err, errlen, BH_ESYS, "compare: cannot find the directory of this program");
  if (access(prog, X_OK))
    return bh__errf(
        err, errlen, BH_ESYS,
        "compare: strategy '%s' needs %s, which is missing (%s); it is built with "
        "buddyhint when jemalloc is found (apt-get install libjemalloc-dev) and must be "
        "installed next to it",
        name, prog, strerror(errno));

  static const char *const touches[] = {"page", "none", "full"};
  char s_decay[32], s_muzzy[32], s_idle[32], s_wall[32], s_order[16];
  snprintf(s_decay, sizeof(s_decay), "%ld", decay);
  snprintf(s_muzzy, sizeof(s_muzzy), "%ld", muzzy);
  fmt_seconds(s_idle, sizeof(s_idle), cfg->idle_ns);
  fmt_seconds(s_wall, sizeof(s_wall),
              cfg->idle_ns < MAX_IDLE_WALL_NS ? cfg->idle_ns : MAX_IDLE_WALL_NS);
  snprintf(s_order, sizeof(s_order), "%u", cfg->arena.max_order);
  const char *argv[24];
  int n = 0;
  argv[n++] = prog;
  argv[n++] = cfg->trace;
  argv[n++] = "--decay";
  argv[n++] = s_decay;
  argv[n++] = "--muzzy";
  argv[n++] = s_muzzy;
  if (!bg)
    argv[n++] = "--no-background-thread";
  argv[n++] = "--idle";
  argv[n++] = s_idle;
  argv[n++] = "--idle-wall";
  argv[n++] = s_wall;
  argv[n++] = "--touch";
  argv[n++] = (unsigned)cfg->touch < 3 ? touches[cfg->touch] : "page";
  argv[n++] = "--max-order";
  argv[n++] = s_order;
  if (cfg->lenient)
    argv[n++] = "--lenient";
  if (cfg->progress)
    argv[n++] = "--progress"; /* it shows progress only on a terminal */
  argv[n++] = "--summary";
  argv[n++] = "-";
  argv[n] = NULL;

  int fds[2];
  if (pipe2(fds, O_CLOEXEC))
    return bh__errf(err, errlen, BH_ESYS, "compare: pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int saved = errno;
    close(fds[0]);
    close(fds[1]);
    return bh__errf(err, errlen, BH_ESYS, "compare: fork: %s", strerror(saved));
  }
  if (pid == 0) { /* the summary comes through the pipe; stderr is passed through */
    if (dup2(fds[1], STDOUT_FILENO) < 0)
      _exit(127);
    execv(prog, (char *const *)argv);
    static const char msg[] = "compare: cannot execute " BASELINE_PROG "\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)w;
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0, cap = 8192;
  char *text = malloc(cap);
  bool nomem = !text;
  for (;;) {
    char buf[4096];
    ssize_t r = read(fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    if (nomem)
      continue; /* drain it so that the child does not block */
    if (len + (size_t)r + 1 > cap) {
      char *bigger = realloc(text, cap * 2 + (size_t)r);
      if (!bigger) {
        nomem = true;
        continue;
      }
      text = bigger;
      cap = cap * 2 + (size_t)r;
    }
    memcpy(text + len, buf, (size_t)r);
    len += (size_t)r;
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      free(text);
      return bh__errf(err, errlen, BH_ESYS, "compare: waitpid: %s", strerror(errno));
    }
  if (nomem) {
    free(text);
    return bh__errf(err, errlen, BH_ENOMEM, "compare: out of memory");
  }
  text[len] = 0;
  if (WIFSIGNALED(status)) {
    free(text);
    return bh__errf(err, errlen, BH_ESYS, "compare: %s was killed by signal %d (%s)", prog,
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  int code = WEXITSTATUS(status);
  if (code) {
    free(text);
    return bh__errf(err, errlen, code == 2 ? BH_EFORMAT : BH_ESYS,
                    "compare: strategy '%s': %s exited with status %d", name, BASELINE_PROG, code);
  }
  parse_summary(text, out);
  free(text);
  if (!out->strategy[0])
    return bh__errf(err, errlen, BH_ESYS, "compare: strategy '%s': %s printed no summary", name,
                    BASELINE_PROG);
  return 0;
}
