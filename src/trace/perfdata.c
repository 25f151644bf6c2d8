/*
 * perf's perf.data, read through `perf script`.
 *
 * perf.data is perf's own container (headers, feature sections, per-event sample layouts,
 * compressed records, pipe mode) and changes with perf's versions; `perf script` is the
 * program that reads it, and it is installed wherever perf.data files are made.  So the reader
 * runs
 *
 *   perf script -i FILE -F trace:comm,tid,cpu,time,event,trace[,ip,sym] --ns --show-lost-events
 *
 * and reads its output as the perf script text reader does (parse.c), line by line from a
 * pipe.  ip,sym are asked for only when the events were recorded with call chains (`perf
 * record -g`: CALLCHAIN in the sample type `perf evlist -v` shows); each event is then followed
 * by its frames, one per line, and a blank line.  The frames give the event's call site
 * (origin.c): the first function outside the page allocator and the tracing code.
 * PERF_RECORD_LOST lines add to lost_events.  A perf that fails (exit status not 0) is a read
 * error with perf's own message.  bh__foreign_t.command holds the command line, for the
 * program to show.
 */
#include "trace/foreign.h"
#include "trace/trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool bh__perfdata_magic(const unsigned char *p, size_t n) {
  return n >= 8 && !memcmp(p, "PERFILE2", 8);
}

struct perfdata {
  bh__foreign_t base;
  bh__src_t *src; /* perf script text from a file (bh__perfscript_open), else NULL */
  char src_msg[BH__TRACE_MSG_SIZE];
  pid_t pid;   /* perf script, 0 once reaped */
  FILE *out;   /* its standard output */
  int err_fd;  /* its standard error (a memfd) */
  bool chains; /* the events have call chains */
  int status;  /* perf's failure once reaped (sticky), or 0 */
  char *line;  /* getline's buffer */
  size_t line_cap;
  ssize_t line_len;
  bool have_pending; /* line holds a line read ahead (after a call chain) */
  bh__tparse_t tp;
  char comm[64], site[128]; /* the task name and call site of the event being read */
  size_t site_len;
  char cmd[BH__TRACE_MSG_SIZE];
};

/* ---- running perf ---- */

/*
 * perf is bounded: a damaged perf.data can make it loop (in `perf evlist` or `perf script`)
 * or grow without end, and nothing else would stop it.  It gets PERF_CPU_BASE_S seconds of
 * CPU time plus one per MiB of the file (perf script reads several MiB a second; blocked on
 * a full pipe while the replay works it uses none), an address space of PERF_AS_BASE plus
 * four times the file, no core file, and it dies with the thread that started it
 * (PR_SET_PDEATHSIG), so that a reader killed with SIGKILL leaves no perf behind.
 */
#define PERF_CPU_BASE_S 5
#define PERF_AS_BASE (4ull << 30)

static void perf_limits(const char *path, rlim_t *cpu_s, rlim_t *as) {
  struct stat st;
  uint64_t size = stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
  *cpu_s = (rlim_t)(PERF_CPU_BASE_S + (size >> 20));
  *as = (rlim_t)(PERF_AS_BASE + (size > (1ull << 40) ? 1ull << 42 : 4 * size));
}

/* Waits for pid; returns its exit status, or -1 if it did not exit normally (*sig: the
 * signal that ended it, else 0). */
static int reap(pid_t pid, int *sig) {
  int st;
  *sig = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (WIFSIGNALED(st))
    *sig = WTERMSIG(st);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const argv[], int out, int err_fd, int ex, pid_t parent, rlim_t cpu_s,
                       rlim_t as) {
  struct rlimit cpu = {cpu_s, cpu_s + 1}, mem = {as, as}, core = {0, 0};
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) /* the parent already gone */
    _exit(127);
  setrlimit(RLIMIT_CPU, &cpu);
  setrlimit(RLIMIT_AS, &mem);
  setrlimit(RLIMIT_CORE, &core);
  int in = open("/dev/null", O_RDONLY);
  if (in >= 0 && dup2(in, 0) >= 0 && dup2(out, 1) >= 0 && dup2(err_fd, 2) >= 0)
    execvp(argv[0], argv);
  int e = errno; /* to the parent, through the pipe a successful exec closes */
  if (write(ex, &e, sizeof(e)) < 0)
    _exit(127);
  _exit(127);
}

/*
 * Starts argv with its standard output on a pipe (*out) and its standard error in err_fd,
 * within the limits above for a perf.data at path.  Returns the pid, or -1 with errno set
 * (ENOENT: no perf on PATH).
 */
static pid_t spawn(char *const argv[], const char *path, int *out, int err_fd) {
  int p[2], ex[2];
  if (pipe2(p, O_CLOEXEC))
    return -1;
  if (pipe2(ex, O_CLOEXEC)) { /* closed by a successful exec: tells exec's failure apart */
    close(p[0]);
    close(p[1]);
    return -1;
  }
  rlim_t cpu_s, as;
  perf_limits(path, &cpu_s, &as);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0)
    child_exec(argv, p[1], err_fd, ex[1], parent, cpu_s, as);
  int e = errno;
  close(p[1]);
  close(ex[1]);
  if (pid > 0) {
    ssize_t n;
    while ((n = read(ex[0], &e, sizeof(e))) < 0 && errno == EINTR)
      ;
    if (n == (ssize_t)sizeof(e)) { /* exec failed: e says why */
      int sig;
      reap(pid, &sig);
      pid = -1;
    }
  }
  close(ex[0]);
  if (pid < 0) {
    close(p[0]);
    errno = e;
    return -1;
  }
  *out = p[0];
  return pid;
}

/* Why perf failed, into buf: a limit it ran into, or its exit status. */
static void perf_why(const char *path, int st, int sig, char *buf, size_t len) {
  rlim_t cpu_s, as;
  perf_limits(path, &cpu_s, &as);
  if (sig == SIGXCPU || sig == SIGKILL)
    snprintf(buf, len,
             "perf did not finish: stopped after %llu s of CPU time, the limit for a "
             "file of this size",
             (unsigned long long)cpu_s);
  else if (sig)
    snprintf(buf, len, "killed by signal %d (%s); its memory was limited to %llu MiB", sig,
             strsignal(sig), (unsigned long long)(as >> 20));
  else
    snprintf(buf, len, "exit %d", st);
}

/* The first line of what perf wrote on its standard error (for messages). */
static void err_line(int fd, char *buf, size_t len) {
  buf[0] = '\0';
  ssize_t n = pread(fd, buf, len - 1, 0);
  if (n <= 0)
    return;
  buf[n] = '\0';
  /* perf's warnings about fields of other event types come first: skip them */
  char *s = buf;
  while (!strncmp(s, "'trace' not valid", 17) || !strncmp(s, "'ip' not valid", 14) ||
         !strncmp(s, "'sym' not valid", 15)) {
    char *nl = strchr(s, '\n');
    if (!nl)
      break;
    s = nl + 1;
  }
  s[strcspn(s, "\n")] = '\0';
  memmove(buf, s, strlen(s) + 1);
}

/* Whether `perf evlist -v` lists a sample type with CALLCHAIN.  Returns 0/1, or an error. */
static int has_callchains(struct perfdata *d) {
  char *argv[] = {"perf", "evlist", "-v", "-i", (char *)d->base.ctx.path, NULL};
  int fd, sig;
  pid_t pid = spawn(argv, d->base.ctx.path, &fd, d->err_fd);
  if (pid < 0)
    return bh__foreign_fail(&d->base, errno == ENOENT ? BH_ENOTSUP : BH_ESYS,
                            errno == ENOENT
                                ? "a perf.data, which is read with `perf script`: install perf "
                                  "(Debian: linux-perf)"
                                : "cannot run perf: %s",
                            strerror(errno));
  FILE *f = fdopen(fd, "r");
  int chains = 0;
  char *line = NULL;
  size_t cap = 0;
  while (f && getline(&line, &cap, f) > 0)
    if (strstr(line, "sample_type:") && strstr(line, "CALLCHAIN"))
      chains = 1;
  free(line);
  if (f)
    fclose(f);
  else
    close(fd);
  int st = reap(pid, &sig);
  if (st != 0) {
    char e[256], why[160];
    err_line(d->err_fd, e, sizeof(e));
    perf_why(d->base.ctx.path, st, sig, why, sizeof(why));
    return bh__foreign_fail(&d->base, sig ? BH_EIO : BH_EFORMAT,
                            "perf evlist cannot read it (%s)%s%s", why, e[0] ? ": " : "", e);
  }
  return chains;
}

static int start_script(struct perfdata *d) {
  const char *fields = d->chains ? "trace:comm,tid,cpu,time,event,trace,ip,sym"
                                 : "trace:comm,tid,cpu,time,event,trace";
  char *argv[] = {"perf", "script",       "-i",   (char *)d->base.ctx.path,
                  "-F",   (char *)fields, "--ns", "--show-lost-events",
                  NULL};
  snprintf(d->cmd, sizeof(d->cmd), "perf script -i %s -F %s --ns --show-lost-events",
           d->base.ctx.path, fields);
  d->base.command = d->cmd;
  if (ftruncate(d->err_fd, 0))
    return bh__foreign_fail(&d->base, BH_ESYS, "cannot reset perf's error output: %s",
                            strerror(errno));
  int fd;
  d->pid = spawn(argv, d->base.ctx.path, &fd, d->err_fd);
  if (d->pid < 0) {
    d->pid = 0;
    return bh__foreign_fail(&d->base, BH_ESYS, "cannot run perf script: %s", strerror(errno));
  }
  d->out = fdopen(fd, "r");
  if (!d->out) {
    close(fd);
    return bh__foreign_fail(&d->base, BH_ENOMEM, "out of memory");
  }
  return 0;
}

static void pd_close(bh__foreign_t *f) {
  struct perfdata *d = (struct perfdata *)f;
  if (d->out)
    fclose(d->out);
  if (d->src) {
    bh__src_close(d->src);
    free(d->src);
  }
  if (d->pid > 0) { /* stopped before the end: perf has no more to do */
    int sig;
    kill(d->pid, SIGTERM);
    reap(d->pid, &sig);
  }
  if (d->err_fd >= 0)
    close(d->err_fd);
  free(d->line);
  free(d);
}

/* ---- reading its output ---- */

/* The next line into d->line (without its '\n'): its length, or -1 at the end. */
static ssize_t read_line(struct perfdata *d) {
  if (d->have_pending) {
    d->have_pending = false;
    return d->line_len;
  }
  ssize_t n = getline(&d->line, &d->line_cap, d->out);
  if (n > 0 && d->line[n - 1] == '\n')
    d->line[--n] = '\0';
  d->line_len = n;
  if (n >= 0)
    d->base.ctx.counts->lines++;
  return n;
}

/* The end of perf's output: 0, or BH_EIO if perf failed. */
static int finish(struct perfdata *d) {
  if (d->src && d->src->err) { /* a read or decompression error of a text file */
    memcpy(d->base.ctx.msg, d->src_msg, BH__TRACE_MSG_SIZE);
    return d->src->err;
  }
  if (d->pid <= 0)
    return d->status;
  int sig, st = reap(d->pid, &sig);
  d->pid = 0;
  if (st != 0) {
    char e[256], why[160];
    err_line(d->err_fd, e, sizeof(e));
    perf_why(d->base.ctx.path, st, sig, why, sizeof(why));
    d->status =
        bh__foreign_fail(&d->base, BH_EIO, "perf script failed (%s)%s%s", why, e[0] ? ": " : "", e);
  }
  return d->status;
}

/* "PERF_RECORD_LOST ... lost N": N (1 without a number), 0 for another line. */
static uint64_t lost_in(const char *s, size_t n) {
  const char *p = memmem(s, n, "PERF_RECORD_LOST", 16);
  if (!p)
    return 0;
  const char *l = memmem(p, n - (size_t)(p - s), " lost", 5);
  if (!l)
    return 1;
  l += 5;
  while (*l == ' ' || *l == ':' || *l == '\t')
    l++;
  char *end;
  unsigned long long v = strtoull(l, &end, 10);
  return end > l && v ? v : 1;
}

/*
 * The frames of a call chain: "\t ffffffff8163bbbb alloc_pages_noprof+0x1f ([kernel...])", up
 * to a blank line (or a line that is not a frame, kept for the next event).  The call site is
 * the first function that bh__callsite_skip does not skip, copied into d->site.
 */
static void read_chain(struct perfdata *d) {
  d->site_len = 0;
  bool found = false;
  ssize_t n;
  while ((n = read_line(d)) > 0) {
    const char *s = d->line;
    size_t i = strspn(s, " \t"), a = strspn(s + i, "0123456789abcdef"); /* the address */
    if (!i || !a || (s[i + a] != ' ' && s[i + a] != '\t') || strstr(s, ": ")) {
      d->have_pending = true; /* not a frame: the next event's line */
      return;
    }
    if (found)
      continue;
    i += a;
    i += strspn(s + i, " \t");
    size_t len = strcspn(s + i, "+ \t"); /* the symbol, without +offset and (dso) */
    if (!len || bh__callsite_skip(s + i, len))
      continue;
    if (len >= sizeof(d->site))
      len = sizeof(d->site) - 1;
    memcpy(d->site, s + i, len);
    d->site_len = len;
    found = true;
  }
}

static int pd_next(bh__foreign_t *f, bh_event_t *ev) {
  struct perfdata *d = (struct perfdata *)f;
  bh_trace_counts_t *c = f->ctx.counts;
  for (;;) {
    ssize_t n = read_line(d);
    if (n < 0)
      return finish(d);
    const char *s = d->line;
    uint64_t lost = lost_in(s, (size_t)n);
    if (lost) {
      c->lost_events += lost;
      c->other_lines++;
      continue;
    }
    int kind =
        bh__parse_kernel_line(&d->tp, s, (size_t)n, memchr(s, '\0', (size_t)n) != NULL, ev, NULL);
    if (kind == BH__LINE_OTHER) {
      c->other_lines++;
      continue;
    }
    if (kind == BH__LINE_MALFORMED) {
      bh__foreign_fail(&d->base, BH_EFORMAT, "line %llu of perf script's output: %s",
                       (unsigned long long)c->lines, d->tp.why);
      if (!f->ctx.lenient)
        return BH_EFORMAT;
      c->malformed++;
      continue;
    }
    const char *comm;
    size_t comm_len = 0;
    if (f->ctx.origins) { /* the line is overwritten by the frames: keep the task name */
      bh__kline_task(s, (size_t)n, true, &comm, &comm_len);
      if (comm_len >= sizeof(d->comm))
        comm_len = sizeof(d->comm) - 1;
      memcpy(d->comm, comm, comm_len);
    }
    if (d->chains)
      read_chain(d);
    ev->origin = f->ctx.origins ? bh__origin_intern(f->ctx.origins, ev->pid, d->comm, comm_len,
                                                    d->site, d->chains ? d->site_len : 0)
                                : 0;
    return 1;
  }
}

/* ---- open ---- */

int bh__perfdata_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out) {
  *out = NULL;
  struct perfdata *d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(ctx->msg, BH__TRACE_MSG_SIZE, "%s: out of memory", ctx->name);
    return BH_ENOMEM;
  }
  d->base.ctx = *ctx;
  d->base.next = pd_next;
  d->base.close = pd_close;
  d->err_fd = memfd_create("perf-stderr", MFD_CLOEXEC);
  int err =
      d->err_fd < 0 ? bh__foreign_fail(&d->base, BH_ESYS, "memfd_create: %s", strerror(errno)) : 0;
  if (!err) {
    int r = has_callchains(d);
    if (r < 0)
      err = r;
    d->chains = r == 1;
  }
  if (!err)
    err = start_script(d);
  if (err) {
    pd_close(&d->base);
    return err;
  }
  *out = &d->base;
  return 0;
}

/* ---- perf script text with call chains ---- */

/* fopencookie's read: the decompressed bytes of the file. */
static ssize_t src_cookie_read(void *cookie, char *buf, size_t size) {
  long n = bh__src_read(cookie, (unsigned char *)buf, size);
  return n < 0 ? -1 : n;
}

int bh__perfscript_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out) {
  *out = NULL;
  struct perfdata *d = calloc(1, sizeof(*d));
  if (!d || !(d->src = calloc(1, sizeof(*d->src)))) {
    free(d);
    snprintf(ctx->msg, BH__TRACE_MSG_SIZE, "%s: out of memory", ctx->name);
    return BH_ENOMEM;
  }
  d->base.ctx = *ctx;
  d->base.next = pd_next;
  d->base.close = pd_close;
  d->err_fd = -1;
  d->chains = true; /* frames are read where there are any */
  int err = bh__src_open(d->src, ctx->path, ctx->name, d->src_msg);
  if (err) {
    memcpy(ctx->msg, d->src_msg, BH__TRACE_MSG_SIZE);
  } else {
    cookie_io_functions_t io = {.read = src_cookie_read};
    if (!(d->out = fopencookie(d->src, "r", io)))
      err = bh__foreign_fail(&d->base, BH_ENOMEM, "out of memory");
  }
  if (err) {
    pd_close(&d->base);
    return err;
  }
  *out = &d->base;
  return 0;
}
