/*
 * The machine description `buddyhint record` stores with a trace: the machine's settings, and
 * a snapshot of /proc (buddyinfo, pagetypeinfo, zoneinfo, and as root the free map from
 * kpageflags) at the start and at the end of the recording.
 *
 * Both snapshots are taken with tracing on, so that no event goes unrecorded between a
 * snapshot and the trace.  The trace clock's time around each reading (the ring buffer's
 * "now ts") is kept with it.  The start state is the start snapshot's free map, which takes
 * seconds to read on a busy large machine: the trace begins when its reading begins, and the
 * replay recognises the events of that window that the map already holds.  The end state
 * compared is the end snapshot's counts, read first: the trace ends when they are read.
 * Events outside [start of the free map's reading, start of the end snapshot's] are left
 * out (a busy machine makes some 200,000 a second).
 */
#include "cli/record/record_machine.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <unistd.h>

/* The trace clock now, from the instance's per_cpu/cpu0/stats ("now ts: 1859.349865"). */
static uint64_t trace_now_ns(const char *tracing_dir) {
  char p[512], buf[1024];
  snprintf(p, sizeof(p), "%s/per_cpu/cpu0/stats", tracing_dir);
  FILE *f = fopen(p, "re");
  if (!f)
    return 0;
  uint64_t ns = 0;
  while (fgets(buf, sizeof(buf), f)) {
    unsigned long long sec, usec;
    if (sscanf(buf, "now ts: %llu.%llu", &sec, &usec) == 2) {
      ns = (uint64_t)sec * 1000000000ull + (uint64_t)usec * 1000ull;
      break;
    }
  }
  fclose(f);
  return ns;
}

struct clock {
  const char *dir;
  uint64_t done; /* the trace clock when kpageflags was read */
};

static void read_done(void *ctx) {
  struct clock *c = ctx;
  c->done = trace_now_ns(c->dir);
}

/* The start snapshot's mark in the trace, right after zoneinfo was read: a write to the
 * instance's trace_marker, which allocates no page (a trace_now_ns would: the stats file's
 * read allocates a buffer around the time it gives). */
static void counts_mark(void *ctx) {
  int fd = *(const int *)ctx;
  if (fd >= 0 && write(fd, BH_CLI_COUNTS_MARK, sizeof(BH_CLI_COUNTS_MARK) - 1) < 0)
    return; /* no mark: the trace keeps no start/count_events */
}

int bh_cli_rec_snapshot(const char *verb, bh_machine_t **m, int which, const char *tracing_dir) {
  if (!*m) {
    *m = bh_machine_new();
    if (!*m)
      return -1;
    bh_machine_read_settings(*m);
  }
  char err[512];
  /* the counts first (milliseconds), then kpageflags (about 0.4 s for 24 GiB, seconds on a
   * busy machine), then the free map is derived from it (outside the window) */
  struct clock c = {tracing_dir, 0};
  int mark = -1;
  if (which == BH_SNAP_START) {
    char p[512];
    snprintf(p, sizeof(p), "%s/trace_marker", tracing_dir);
    mark = open(p, O_WRONLY | O_CLOEXEC);
  }
  uint64_t t0 = trace_now_ns(tracing_dir);
  int rc = bh_machine_read_counts_marked(*m, which, "/proc", 0, 0, mark >= 0 ? counts_mark : NULL,
                                         &mark, err, sizeof(err));
  if (mark >= 0)
    close(mark);
  uint64_t t1 = trace_now_ns(tracing_dir);
  if (!rc)
    rc = bh_machine_read_freemap(*m, which, "/proc", read_done, &c, err, sizeof(err));
  /* the start's window is kpageflags' reading (the start state is the free map); the end's
   * begins with its counts (the end state compared is theirs) */
  if (!rc)
    rc = bh_machine_set_window(*m, which, which == BH_SNAP_START ? t1 : t0,
                               c.done ? c.done : trace_now_ns(tracing_dir));
  if (rc) {
    fprintf(stderr,
            "buddyhint %s: warning: no %s snapshot of /proc (%s): the trace will replay "
            "without the machine's %s\n",
            verb, which == BH_SNAP_START ? "start" : "end", err,
            which == BH_SNAP_START ? "shape" : "end state");
    return -1;
  }
  const bh_snapshot_t *s = bh_machine_snapshot(*m, which);
  if (which == BH_SNAP_START && s && !s->have_freemap)
    fprintf(stderr,
            "buddyhint %s: warning: /proc/kpageflags could not be read: the start "
            "state will be rebuilt from buddyinfo and pagetypeinfo alone\n",
            verb);
  return 0;
}

int bh_cli_rec_describe(const char *verb, const bh_machine_t *m, bh_trace_writer_t *w) {
  if (!m || !bh_machine_info(m)->nr_zones)
    return 0;
  char *text;
  if (bh_machine_format(m, &text, NULL))
    return -1;
  int rc = bh_trace_writer_set_description(w, text);
  free(text);
  if (rc)
    fprintf(stderr, "buddyhint %s: cannot store the machine description: %s\n", verb,
            bh_strerror(rc));
  return rc ? -1 : 0;
}

long long bh_cli_rec_boot_freed_kb_of(const char *log, size_t len) {
  long long kb = -1;
  for (size_t at = 0; at < len;) {
    const char *l = log + at, *nl = memchr(l, '\n', len - at);
    size_t n = nl ? (size_t)(nl - l) : len - at;
    at += n + 1;
    char line[512];
    if (n >= sizeof(line))
      continue;
    memcpy(line, l, n);
    line[n] = '\0';
    if (strstr(line, "] Memory: ")) { /* mem_init: the count starts after it */
      kb = 0;
      continue;
    }
    const char *f = strstr(line, "] Freeing "), *m = f ? strstr(f, " memory: ") : NULL;
    char *end;
    long long v = m ? strtoll(m + 9, &end, 10) : -1;
    if (kb >= 0 && m && v >= 0 && end > m + 9 && *end == 'K')
      kb += v;
  }
  return kb;
}

long long bh_cli_rec_boot_freed_kb(void) {
  int size = klogctl(10, NULL, 0); /* SYSLOG_ACTION_SIZE_BUFFER */
  if (size <= 0)
    return -1;
  char *buf = malloc((size_t)size);
  if (!buf)
    return -1;
  int n = klogctl(3, buf, size); /* SYSLOG_ACTION_READ_ALL: the buffer as it is, unread */
  long long kb = n > 0 ? bh_cli_rec_boot_freed_kb_of(buf, (size_t)n) : -1;
  free(buf);
  return kb;
}

void bh_cli_rec_window(const bh_machine_t *m, uint64_t *lo, uint64_t *hi) {
  const bh_snapshot_t *s = m ? bh_machine_snapshot(m, BH_SNAP_START) : NULL,
                      *e = m ? bh_machine_snapshot(m, BH_SNAP_END) : NULL;
  *lo = s && s->window_begin_ns ? s->window_begin_ns - 1 : 0;
  *hi = e && e->window_begin_ns ? e->window_begin_ns : 0;
}
