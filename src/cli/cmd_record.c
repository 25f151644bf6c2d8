/*
 * buddyhint record: a real trace of a command, from the running kernel's kmem tracepoints.
 *
 * The events are recorded in a tracefs instance of our own (instances/buddyhint-PID-START,
 * record_safety.c): its ring buffer, event switches and tracing_on are separate from the
 * top-level ones, so nobody else's tracing is disturbed and nothing has to be restored; the
 * instance is removed at the end, and instances that killed recorders left behind are removed
 * at the start.  If an instance cannot be made, record fails: the top-level buffer is never
 * used (clearing it would lose another tracer's data).  CMD runs as the user who invoked sudo
 * unless --as-root is given.  The trace is written to a temporary file beside FILE and renamed
 * to FILE at the end, so that a failed or killed recording never leaves a short trace there.
 *
 * Sequence: mount tracefs if needed; set the per-cpu buffer size, overwrite=0 (a full buffer
 * drops the newest events, counted as "dropped events", rather than overwriting the oldest);
 * clear the buffer; enable kmem:mm_page_alloc, mm_page_free and mm_page_free_batched;
 * tracing_on=1; fork and exec the command and wait for it; tracing_on=0; then the events go
 * through the ftrace reader into the native trace.
 *
 * While the command runs, a thread drains the instance's `trace_pipe` (a consuming read) into
 * a temporary file, so the ring buffer only has to hold what arrives between two reads rather
 * than the whole run: a busy machine makes millions of page events a minute.  Lost events are
 * still counted from per_cpu/cpuN/stats and reported.  If trace_pipe cannot be opened, the
 * `trace` file is read after the run instead, and the buffer must hold everything.
 */
#include "cli/cli.h"
#include "cli/record_machine.h"
#include "cli/record_safety.h"

#include <buddyhint/trace.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERB "record"
#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACING "/sys/kernel/debug/tracing"
#define DEFAULT_BUFFER_KB 65536u
#define MIN_BUFFER_KB 1024u

static const char *const kmem_events[] = {"mm_page_alloc", "mm_page_free", "mm_page_free_batched"};
#define NR_EVENTS 3

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint record -o FILE [--buffer-kb N] [--format text|binary]\n"
          "                        [--compress none|gzip|zstd] [--as-root] [--] CMD [ARGS]...\n"
          "\n"
          "Records the page allocator events of the running kernel (kmem:mm_page_alloc,\n"
          "mm_page_free, mm_page_free_batched) while CMD runs, and writes them as a native\n"
          "trace.  The kernel's allocator is global, so the trace holds the whole system's\n"
          "events during that time, not only CMD's.  Needs root: tracefs is mounted at\n" TRACEFS
          " if it is not, and the events go to a tracefs instance of\n"
          "our own (removed afterwards), so other tracing users are not disturbed; if none\n"
          "can be made, record fails rather than use the top-level buffer.  Instances left\n"
          "by recorders that were killed are removed first.\n"
          "Under sudo, CMD runs as the invoking user (SUDO_UID, SUDO_GID and that user's\n"
          "groups), not as root, unless --as-root is given.\n"
          "A regular FILE is written to a temporary file beside it (.FILE.XXXXXX) and\n"
          "renamed to FILE at the end: a failed or killed recording leaves a file already\n"
          "at FILE as it was.\n"
          "\n"
          "With the events goes a description of the machine (a version 2 trace): its zones\n"
          "and allocator settings, and snapshots of /proc/buddyinfo, pagetypeinfo, zoneinfo\n"
          "and the free map from /proc/kpageflags, taken with tracing on just before CMD\n"
          "starts and after it ends.  A replay then starts from the machine's state in its\n"
          "layout and says how far it ends from the end snapshot ('buddyhint machine FILE'\n"
          "shows the description).\n"
          "\n"
          "options:\n"
          "  -o, --output FILE      the trace to write ('-' = standard output; CMD's own\n"
          "                         standard output then goes to standard error)\n"
          "  --buffer-kb N          ring buffer per cpu in KiB (default %u, less if memory is\n"
          "                         short: at most 1/8 of MemAvailable over all cpus); a full\n"
          "                         buffer drops the newest events, with a warning\n"
          "  --format text|binary   default: binary if FILE ends in .bht or .bin (before any\n"
          "                         .gz/.zst), else text\n"
          "  --compress none|gzip|zstd\n"
          "                         default: gzip for .gz, zstd for .zst, else none\n"
          "  --clock NAME           the ring buffer's trace_clock (default: the kernel's, usually\n"
          "                         'local', which is per cpu; 'mono' or 'global' keep the\n"
          "                         events of different cpus in one order)\n"
          "  --as-root              run CMD as root even under sudo\n"
          "  -h, --help             this help\n"
          "\n"
          "The event count, the duration and CMD's exit status go to standard error; CMD's\n"
          "own exit status does not change ours.\n"
          "exit status: 0 recorded, 1 not root, tracefs unusable, CMD could not be started,\n"
          "or the trace could not be written; 2 bad usage.\n",
          DEFAULT_BUFFER_KB);
}

/* ---- tracefs ---- */

typedef struct tracer {
  char root[64]; /* the tracefs mount */
  char dir[192]; /* where we work: our instance */
  bool mounted;  /* we mounted tracefs (and unmount it at the end) */
  bool instance; /* dir is an instance we made (and remove at the end) */
} tracer_t;

static int tf_write(const tracer_t *tr, const char *rel, const char *val) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", tr->dir, rel);
  int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  size_t n = strlen(val);
  ssize_t w = n ? write(fd, val, n) : 0;
  int e = w < 0 ? errno : 0;
  close(fd);
  return e ? -e : 0;
}

/* Reads a small file, trailing newline dropped.  Returns 0 or -errno. */
static int tf_read(const tracer_t *tr, const char *rel, char *buf, size_t cap) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", tr->dir, rel);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = read(fd, buf, cap - 1);
  int e = n < 0 ? errno : 0;
  close(fd);
  if (n < 0)
    return -e;
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  return 0;
}

/* Finds or mounts tracefs, removes stale instances and makes ours. */
static int tracer_open(tracer_t *tr) {
  memset(tr, 0, sizeof(*tr));
  if (!access(TRACEFS "/trace", F_OK)) {
    snprintf(tr->root, sizeof(tr->root), "%s", TRACEFS);
  } else if (!access(DEBUGFS_TRACING "/trace", F_OK)) {
    snprintf(tr->root, sizeof(tr->root), "%s", DEBUGFS_TRACING);
  } else {
    if (mount("nodev", TRACEFS, "tracefs", 0, NULL)) {
      fprintf(stderr, "buddyhint record: cannot mount tracefs at " TRACEFS ": %s\n",
              strerror(errno));
      return -1;
    }
    tr->mounted = true;
    snprintf(tr->root, sizeof(tr->root), "%s", TRACEFS);
  }
  bh_cli_record_reap_stale(tr->root, kmem_events, NR_EVENTS);
  char name[64];
  bh_cli_record_instance_name(name, sizeof(name));
  snprintf(tr->dir, sizeof(tr->dir), "%s/instances/%s", tr->root, name);
  if (!mkdir(tr->dir, 0750)) {
    tr->instance = true;
    return 0;
  }
  fprintf(stderr,
          "buddyhint record: cannot make a tracefs instance (%s): %s; the top-level buffer "
          "is not used instead (that would clear other tracers' data)\n",
          tr->dir, strerror(errno));
  if (tr->mounted && umount(tr->root))
    fprintf(stderr, "buddyhint record: warning: cannot unmount %s: %s\n", tr->root,
            strerror(errno));
  return -1;
}

/* Undoes tracer_open and whatever was changed since. */
static void tracer_close(tracer_t *tr) {
  tf_write(tr, "tracing_on", "0");
  for (int i = 0; i < NR_EVENTS; i++) {
    char rel[96];
    snprintf(rel, sizeof(rel), "events/kmem/%s/enable", kmem_events[i]);
    tf_write(tr, rel, "0");
  }
  if (tr->instance && rmdir(tr->dir))
    fprintf(stderr, "buddyhint record: warning: cannot remove the tracefs instance %s: %s\n",
            tr->dir, strerror(errno));
  if (tr->mounted && umount(tr->root))
    fprintf(stderr, "buddyhint record: warning: cannot unmount %s: %s\n", tr->root,
            strerror(errno));
}

static int tracer_setup(tracer_t *tr, unsigned buffer_kb, const char *clock) {
  char kb[32];
  int e;
  if (clock && (e = tf_write(tr, "trace_clock", clock))) {
    fprintf(stderr, "buddyhint record: cannot set trace_clock '%s' in %s: %s\n", clock, tr->dir,
            strerror(-e));
    return -1;
  }
  snprintf(kb, sizeof(kb), "%u", buffer_kb);
  if ((e = tf_write(tr, "tracing_on", "0")) || (e = tf_write(tr, "buffer_size_kb", kb))) {
    fprintf(stderr, "buddyhint record: cannot set a %u KiB buffer per cpu in %s: %s\n", buffer_kb,
            tr->dir, strerror(-e));
    return -1;
  }
  if ((e = tf_write(tr, "options/overwrite", "0")))
    fprintf(stderr, "buddyhint record: warning: cannot set options/overwrite: %s\n", strerror(-e));
  if ((e = tf_write(tr, "trace", ""))) {
    fprintf(stderr, "buddyhint record: cannot clear %s/trace: %s\n", tr->dir, strerror(-e));
    return -1;
  }
  for (int i = 0; i < NR_EVENTS; i++) {
    char rel[96];
    snprintf(rel, sizeof(rel), "events/kmem/%s/enable", kmem_events[i]);
    if ((e = tf_write(tr, rel, "1"))) {
      fprintf(stderr, "buddyhint record: cannot enable kmem:%s: %s\n", kmem_events[i],
              strerror(-e));
      return -1;
    }
  }
  return 0;
}

/* Sums "overrun" and "dropped events" over per_cpu/cpu*\/stats; false if none were readable. */
static bool lost_events(const tracer_t *tr, unsigned long long *overrun,
                        unsigned long long *dropped) {
  char p[256];
  snprintf(p, sizeof(p), "%s/per_cpu", tr->dir);
  DIR *d = opendir(p);
  bool any = false;
  *overrun = *dropped = 0;
  if (!d)
    return false;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "cpu", 3))
      continue;
    char rel[300], buf[1024];
    snprintf(rel, sizeof(rel), "per_cpu/%s/stats", e->d_name);
    if (tf_read(tr, rel, buf, sizeof(buf)))
      continue;
    any = true;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
      if (!strncmp(line, "overrun:", 8))
        *overrun += strtoull(line + 8, NULL, 10);
      else if (!strncmp(line, "dropped events:", 15))
        *dropped += strtoull(line + 15, NULL, 10);
    }
  }
  closedir(d);
  return any;
}

/* The header line "# entries-in-buffer/entries-written: A/B" of the trace file. */
static void header_counts(const tracer_t *tr, unsigned long long *in_buf,
                          unsigned long long *written) {
  char buf[2048];
  *in_buf = *written = 0;
  if (tf_read(tr, "trace", buf, sizeof(buf)))
    return;
  const char *s = strstr(buf, "entries-in-buffer/entries-written:");
  if (s)
    sscanf(s, "entries-in-buffer/entries-written: %llu/%llu", in_buf, written);
}

/* ---- the command ---- */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) { got_signal = sig; }

/* Starts argv with tracing on, as user u; returns the child's pid, or -1 with errno of the
 * failed fork, change of user or exec.  With stdout_to_stderr (the trace goes to standard
 * output) the command's standard output is sent to standard error instead, so that it cannot
 * mix with the trace. */
static pid_t start_command(char **cmd, bool stdout_to_stderr, const bh_cli_record_user_t *u) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC))
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pfd[0]);
    close(pfd[1]);
    errno = e;
    return -1;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    close(pfd[0]);
    if (stdout_to_stderr)
      dup2(STDERR_FILENO, STDOUT_FILENO);
    if (bh_cli_record_become(u) == 0)
      execvp(cmd[0], cmd);
    int e = errno;
    if (write(pfd[1], &e, sizeof(e)) < 0)
      _exit(127);
    _exit(127);
  }
  close(pfd[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
    ;
  close(pfd[0]);
  if (n == (ssize_t)sizeof(e)) { /* exec failed: reap the child */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = e;
    return -1;
  }
  return pid;
}

/* Waits for the child; SIGTERM/SIGHUP to us are passed on to it.  Returns the wait status. */
static int wait_command(pid_t pid) {
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return -1;
    if (got_signal && !forwarded) {
      kill(pid, got_signal);
      forwarded = true;
    }
  }
  return status;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Per-cpu buffer size when --buffer-kb is not given. */
static unsigned default_buffer_kb(void) {
  unsigned kb = DEFAULT_BUFFER_KB;
  FILE *f = fopen("/proc/meminfo", "re");
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  if (!f)
    return kb;
  char line[256];
  unsigned long long avail = 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "MemAvailable: %llu kB", &avail) == 1)
      break;
  fclose(f);
  if (avail && ncpu > 0) {
    unsigned long long cap = avail / 8 / (unsigned long long)ncpu;
    if (cap < kb)
      kb = cap < MIN_BUFFER_KB ? MIN_BUFFER_KB : (unsigned)cap;
  }
  return kb;
}

/* Reads the recorded trace and writes it through w.  Returns 0 or -1 after a message. */
/* ---- draining trace_pipe while the command runs ---- */

typedef struct drain {
  int pipe_fd;         /* the instance's trace_pipe, non-blocking */
  FILE *spool;         /* temporary file holding the text read so far (already unlinked) */
  char spool_path[64]; /* where it is read back: /proc/self/fd/N */
  atomic_bool stop;    /* set once tracing is off: drain what is left, then end */
  int err;             /* errno of a failed write to the spool */
  pthread_t thread;
} drain_t;

static void *drain_main(void *arg) {
  drain_t *d = arg;
  static char buf[1 << 20];
  for (;;) {
    struct pollfd pfd = {.fd = d->pipe_fd, .events = POLLIN};
    poll(&pfd, 1, 100); /* trace_pipe may wake only at buffer_percent: read on timeout too */
    bool stopping = atomic_load(&d->stop);
    for (;;) {
      ssize_t n = read(d->pipe_fd, buf, sizeof(buf));
      if (n > 0) {
        if (fwrite(buf, 1, (size_t)n, d->spool) != (size_t)n && !d->err)
          d->err = errno ? errno : EIO;
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      break; /* EAGAIN: empty for now */
    }
    if (stopping)
      return NULL; /* tracing was off before this last read: nothing more can come */
  }
}

/* Starts the drain thread; false (and nothing to undo) if trace_pipe or the spool fails. */
static bool drain_start(const tracer_t *tr, drain_t *d) {
  char p[256];
  snprintf(p, sizeof(p), "%s/trace_pipe", tr->dir);
  d->pipe_fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (d->pipe_fd < 0)
    return false;
  const char *tmp = getenv("TMPDIR");
  snprintf(d->spool_path, sizeof(d->spool_path), "%s/buddyhint-record-XXXXXX",
           tmp && strlen(tmp) < 32 ? tmp : "/tmp");
  int fd = mkostemp(d->spool_path, O_CLOEXEC);
  if (fd >= 0) { /* nameless from the start: a killed recorder leaves no spool behind */
    unlink(d->spool_path);
    snprintf(d->spool_path, sizeof(d->spool_path), "/proc/self/fd/%d", fd);
  }
  d->spool = fd >= 0 ? fdopen(fd, "w+") : NULL;
  atomic_init(&d->stop, false);
  d->err = 0;
  if (!d->spool || pthread_create(&d->thread, NULL, drain_main, d) != 0) {
    if (d->spool)
      fclose(d->spool);
    else if (fd >= 0)
      close(fd);
    close(d->pipe_fd);
    return false;
  }
  return true;
}

/* Stops the thread after it has read what tracing left; 0, or -1 if the spool failed.  The
 * spool stays open, to be read back through spool_path: the caller closes it. */
static int drain_finish(drain_t *d) {
  atomic_store(&d->stop, true);
  pthread_join(d->thread, NULL);
  close(d->pipe_fd);
  if (fflush(d->spool) && !d->err)
    d->err = errno;
  if (d->err) {
    fprintf(stderr, "buddyhint record: cannot write %s: %s\n", d->spool_path, strerror(d->err));
    return -1;
  }
  return 0;
}

/*
 * Reads the ftrace text at p (the spool, or the instance's `trace`) into the native trace,
 * with a lost-events marker where the text says events were lost ("[LOST N EVENTS]"), and one
 * at the end for what the ring buffer's counters report beyond that (ring_lost).
 */
static int copy_trace(const char *p, bh_trace_writer_t *w, bh_trace_counts_t *c,
                      unsigned long long ring_lost, uint64_t lo, uint64_t hi, uint64_t *cut) {
  bh_trace_opts_t opts = {.lenient = true}; /* a strange line must not lose the recording */
  bh_trace_t *t;
  if (bh_trace_open(p, &opts, &t)) {
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
    return -1;
  }
  bh_event_t ev = {0};
  int r, err = 0;
  uint64_t lost = 0, kept = 0, kept_allocs = 0;
  while ((r = bh_trace_next(t, &ev)) == 1 || r == 0) {
    bh_trace_counts(t, c);
    if (r == 0 && ring_lost > c->lost_events)
      c->lost_events = ring_lost;
    if (c->lost_events > lost &&
        (err = bh_trace_write_lost(w, ev.time_ns, c->lost_events - lost, -1)) != 0)
      break;
    lost = c->lost_events;
    if (r == 0)
      break;
    if ((lo && ev.time_ns <= lo) || (hi && ev.time_ns >= hi)) {
      (*cut)++; /* while a snapshot was read: the snapshot holds it, or not */
      continue;
    }
    if ((err = bh_trace_write(w, &ev)) != 0)
      break;
    kept++;
    kept_allocs += ev.op == BH_EV_ALLOC;
  }
  bh_trace_counts(t, c);
  c->events = kept; /* what the written trace holds */
  c->allocs = kept_allocs;
  c->frees = kept - kept_allocs;
  if (ring_lost > c->lost_events)
    c->lost_events = ring_lost;
  if (r < 0)
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(t));
  else if (err)
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
  if (!r && !err && c->malformed)
    fprintf(stderr, "buddyhint record: warning: %llu malformed lines skipped, the last: %s\n",
            (unsigned long long)c->malformed, bh_trace_error(t));
  bh_trace_close(t);
  return r < 0 || err ? -1 : 0;
}

int cmd_record(int argc, char **argv) {
  const char *out = NULL, *fmt = NULL, *comp = NULL, *kbs = NULL, *clock = NULL;
  bool as_root = false;
  int i = 1, r;
  while (i < argc) {
    const char *a = argv[i];
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "output", &out)) != 0 ||
        (r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &out)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "buffer-kb", &kbs)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "format", &fmt)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "compress", &comp)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "clock", &clock)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--as-root")) {
      as_root = true;
      i++;
    } else if (a[0] == '-') {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else {
      break; /* the command starts here */
    }
  }
  if (i >= argc)
    return bh_cli_usage_error(VERB, "which command? (record -o FILE -- CMD [ARGS])");
  if (!out)
    return bh_cli_usage_error(VERB, "-o FILE is required");
  char **cmd = argv + i;
  unsigned buffer_kb = 0;
  if (kbs) {
    uint64_t v;
    if (bh_cli_parse_u64(kbs, 1, 1ul << 24, &v))
      return bh_cli_usage_error(VERB, "--buffer-kb wants a number of KiB from 1 to %lu, not '%s'",
                                1ul << 24, kbs);
    buffer_kb = (unsigned)v;
  } else {
    buffer_kb = default_buffer_kb();
  }
  int format, compression, rc;
  if ((rc = bh_cli_output_kind(VERB, out, fmt, comp, &format, &compression)) != 0)
    return rc;
  if (geteuid() != 0) {
    fprintf(stderr,
            "buddyhint record: record needs root: the kernel's tracepoints are "
            "only reachable through tracefs as root (euid %d)\n",
            (int)geteuid());
    return BH_EXIT_FAIL;
  }

  bh_cli_record_user_t user = {.drop = false};
  if (!as_root && bh_cli_record_user(&user)) {
    fprintf(stderr,
            "buddyhint record: SUDO_UID %s has no group (SUDO_GID is not set either): "
            "use --as-root to run the command as root\n",
            getenv("SUDO_UID"));
    return BH_EXIT_FAIL;
  }

  bh_cli_out_t *o;
  if ((rc = bh_cli_out_open(VERB, out, &o)) != 0)
    return rc;
  bh_trace_writer_t *w;
  if (bh_cli_out_writer(o, format, compression, 2, NULL, &w)) {
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
    bh_cli_out_abort(o);
    return BH_EXIT_FAIL;
  }
  tracer_t tr;
  rc = BH_EXIT_FAIL;
  if (tracer_open(&tr)) {
    bh_trace_writer_abort(w);
    bh_cli_out_abort(o); /* nothing was there, or what was there stays */
    return BH_EXIT_FAIL;
  }
  struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = on_signal}, old[4];
  sigemptyset(&ign.sa_mask);
  sigemptyset(&fwd.sa_mask); /* no SA_RESTART: waitpid returns EINTR */
  bool ok = false;
  int status = 0;
  double t0 = 0, t1 = 0;
  pid_t pid = -1;
  bh_trace_counts_t c = {0};
  bh_machine_t *machine = NULL; /* the description stored with the trace */
  drain_t drain;
  bool streaming = false;
  if (tracer_setup(&tr, buffer_kb, clock))
    goto cleanup;
  fprintf(stderr,
          "buddyhint record: tracing kmem page events system-wide in %s (%u KiB per "
          "cpu) while '%s' runs\n",
          tr.dir, buffer_kb, cmd[0]);
  sigaction(SIGINT, &ign, &old[0]); /* like system(): ^C goes to the command */
  sigaction(SIGQUIT, &ign, &old[1]);
  sigaction(SIGTERM, &fwd, &old[2]);
  sigaction(SIGHUP, &fwd, &old[3]);
  fflush(NULL);
  t0 = now_s();
  if (tf_write(&tr, "tracing_on", "1")) {
    fprintf(stderr, "buddyhint record: cannot turn tracing on in %s\n", tr.dir);
    goto restore_signals;
  }
  streaming = drain_start(&tr, &drain);
  bh_cli_rec_snapshot(&machine, BH_SNAP_START, tr.dir); /* tracing is on: nothing slips by */
  pid = start_command(cmd, !strcmp(out, "-"), &user);
  if (pid < 0) {
    if (user.drop)
      fprintf(stderr, "buddyhint record: cannot run '%s' as uid %u gid %u: %s\n", cmd[0],
              (unsigned)user.uid, (unsigned)user.gid, strerror(errno));
    else
      fprintf(stderr, "buddyhint record: cannot run '%s': %s\n", cmd[0], strerror(errno));
    tf_write(&tr, "tracing_on", "0");
    if (streaming) {
      drain_finish(&drain);
      fclose(drain.spool);
    }
    goto restore_signals;
  }
  status = wait_command(pid);
  if (machine)
    bh_cli_rec_snapshot(&machine, BH_SNAP_END, tr.dir);
  tf_write(&tr, "tracing_on", "0");
  t1 = now_s();
  ok = !streaming || drain_finish(&drain) == 0;
  if (streaming && !ok)
    fclose(drain.spool);
restore_signals:
  sigaction(SIGINT, &old[0], NULL);
  sigaction(SIGQUIT, &old[1], NULL);
  sigaction(SIGTERM, &old[2], NULL);
  sigaction(SIGHUP, &old[3], NULL);
  if (!ok)
    goto cleanup;

  unsigned long long overrun = 0, dropped = 0, in_buf = 0, written = 0;
  if (!streaming) /* the buffer still holds everything: its header says what was lost */
    header_counts(&tr, &in_buf, &written);
  if (lost_events(&tr, &overrun, &dropped) && (overrun || dropped))
    fprintf(stderr,
            "buddyhint record: warning: events were lost (overrun %llu, dropped %llu): "
            "the trace is incomplete; try a larger --buffer-kb\n",
            overrun, dropped);
  else if (written > in_buf)
    fprintf(stderr,
            "buddyhint record: warning: %llu of %llu events were lost: the trace is "
            "incomplete; try a larger --buffer-kb\n",
            written - in_buf, written);
  char trace_path[256];
  snprintf(trace_path, sizeof(trace_path), "%s/trace", tr.dir);
  if (bh_cli_rec_describe(machine, w)) {
    if (streaming)
      unlink(drain.spool_path);
    goto cleanup;
  }
  unsigned long long ring_lost = written > in_buf ? written - in_buf : 0;
  if (overrun + dropped > ring_lost)
    ring_lost = overrun + dropped;
  uint64_t lo = 0, hi = 0, cut = 0;
  bh_cli_rec_window(machine, &lo, &hi);
  int copied =
      copy_trace(streaming ? drain.spool_path : trace_path, w, &c, ring_lost, lo, hi, &cut);
  if (cut)
    fprintf(stderr,
            "buddyhint record: %llu events before the start snapshot's free map was read or "
            "after the end snapshot was begun are left out\n",
            (unsigned long long)cut);
  if (streaming)
    fclose(drain.spool); /* the spool has no name: this is its end */
  if (copied)
    goto cleanup;
  rc = BH_EXIT_OK;
cleanup:
  bh_machine_free(machine);
  tracer_close(&tr);
  if (rc == BH_EXIT_OK && bh_trace_writer_close(w)) {
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
    rc = BH_EXIT_FAIL;
    w = NULL;
  }
  if (rc != BH_EXIT_OK) { /* no output; a file that was at FILE stays as it was */
    bh_trace_writer_abort(w);
    bh_cli_out_abort(o);
    return rc;
  }
  if ((rc = bh_cli_out_close(o)) != 0) /* renamed into place only now */
    return rc;
  char how[64];
  if (status < 0)
    snprintf(how, sizeof(how), "could not be waited for");
  else if (WIFEXITED(status))
    snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(how, sizeof(how), "was killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  else
    snprintf(how, sizeof(how), "ended with wait status %d", status);
  fprintf(stderr,
          "buddyhint record: '%s' (pid %d) %s after %.3f s; %llu events (%llu allocs, %llu "
          "frees) written to %s (%s, %s)\n",
          cmd[0], (int)pid, how, t1 - t0, (unsigned long long)c.events,
          (unsigned long long)c.allocs, (unsigned long long)c.frees, out,
          bh_cli_format_name(format), bh_cli_compression_name(compression));
  return BH_EXIT_OK;
}
