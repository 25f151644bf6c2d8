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
 * The tracefs handling is libtracefs's.  Sequence: mount tracefs if needed; read the kmem
 * events' formats (tracefs_local_events_system); set the per-cpu buffer size, overwrite=0 (a
 * full buffer drops the newest events, counted as "dropped events", rather than overwriting
 * the oldest); clear the buffer; enable kmem:mm_page_alloc, mm_page_free and
 * mm_page_free_batched; tracing_on=1; fork and exec the command and wait for it;
 * tracing_on=0; then the events go into the native trace.
 *
 * While the command runs, a thread drains every cpu's `per_cpu/cpuN/trace_pipe_raw` (consuming
 * reads of whole ring buffer sub-buffers, tracefs_cpu_buffered_read, and tracefs_cpu_flush for the
 * last ones) into one nameless temporary file per cpu, so the ring buffer only has to hold what
 * arrives between two reads rather than the whole run: a busy machine makes millions of page
 * events a minute.  The kernel formats no text.  Afterwards the sub-buffers are decoded with
 * libtraceevent through the running kernel's own event formats (kmem_decode.c, shared with the
 * trace.dat reader) and the cpus' events merged by timestamp.  Lost events are marked where a
 * sub-buffer says the kernel lost some before it, and per cpu at the end for what
 * per_cpu/cpuN/stats counts beyond that (with overwrite=0 the kernel drops events without
 * marking a sub-buffer, so that is where most losses show).
 *
 * Without libtracefs at build time (BH_HAVE_TRACEFS 0) record says how to get it.
 */
#include "cli/cli.h"
#include "cli/record/record_machine.h"
#include "cli/record/record_safety.h"
#include "cli/record/record_spool.h"
#include "cli/record/record_tracer.h"

#include <buddyhint/trace.h>

#ifndef BH_HAVE_TRACEFS
#define BH_HAVE_TRACEFS 0
#endif
#if BH_HAVE_TRACEFS
#include "trace/kmem_decode.h"

#include <kbuffer.h>
#include <tracefs.h>
#endif

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERB "record"
#define TRACEFS "/sys/kernel/tracing"
#define DEFAULT_BUFFER_KB 65536u
#define MIN_BUFFER_KB 1024u

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint record -o FILE [--buffer-kb N] [--format text|binary]\n"
          "                        [--compress none|gzip|zstd] [--as-root] [--pcp-events]\n"
          "                        [--no-bulk-probe] [--spool-reserve-kb N]\n"
          "                        [--] CMD [ARGS]...\n"
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
          "shows the description).  The description also keeps how much memory the kernel's\n"
          "log (klogctl) says it freed after boot's mem_init, from which a replay of a 6.12\n"
          "kernel, whose zoneinfo does not print it, finds each zone's pcp high_max.\n"
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
          "  --pcp-events           also record mm_page_pcpu_drain and mm_page_alloc_zone_locked\n"
          "                         (blocks moving between the pcp and the buddy lists; many)\n"
          "                         and mm_page_alloc_extfrag (fallbacks to another\n"
          "                         migratetype's lists), and the vmstat worker's runs\n"
          "                         (workqueue_execute_start of vmstat_update, filtered in the\n"
          "                         kernel: when each CPU's pcp decay ran): the trace is then\n"
          "                         native version 3\n"
          "                         With it, on x86-64, two kprobe events of our own (removed\n"
          "                         afterwards) record the pages alloc_pages_bulk takes off the\n"
          "                         pcp lists (vmalloc's, a fork's kernel stacks), which no\n"
          "                         tracepoint shows, as allocations; a warning if they cannot\n"
          "                         be made (root, /proc/kallsyms and /proc/kcore needed)\n"
          "  --no-bulk-probe        without those probes\n"
          "  --spool-reserve-kb N   take N KiB for each cpu's spool before the start snapshot\n"
          "                         (default 0).  While CMD runs, the ring buffers are copied\n"
          "                         to spools in TMPDIR (/tmp), compressed; on tmpfs each page\n"
          "                         a spool grows by is an allocation of the recorder's, in the\n"
          "                         trace among CMD's pages (in a small machine it holds\n"
          "                         pageblocks apart), and so is each page a splice of the ring\n"
          "                         buffer replaces.  Reserved, the spools' pages are taken up\n"
          "                         front (fallocate: the start state holds them) and the ring\n"
          "                         buffers are read, not spliced: nothing is allocated until\n"
          "                         a spool outgrows its reserve (a warning says so).  On a\n"
          "                         filesystem on disk the page cache still grows\n"
          "  -h, --help             this help\n"
          "\n"
          "The event count, the duration and CMD's exit status go to standard error; CMD's\n"
          "own exit status does not change ours.  SIGTERM and SIGHUP are passed on to CMD;\n"
          "^C and ^\\ reach it from the terminal.  Any of the four arriving before CMD has\n"
          "started (while the start snapshot is taken) stops the recording: CMD is not run,\n"
          "no trace is written, the exit status is 128 + the signal's number.\n"
          "exit status: 0 recorded, 1 not root, tracefs unusable, CMD could not be started,\n"
          "or the trace could not be written; 2 bad usage; 128+N stopped by signal N.\n",
          DEFAULT_BUFFER_KB);
}

#if BH_HAVE_TRACEFS

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Per-cpu buffer size when --buffer-kb is not given. */

/* ---- draining the per-cpu ring buffers while the command runs ---- */

/* One cpu's ring buffer: its trace_pipe_raw and the spool its sub-buffers are copied to. */
typedef struct cpu_spool {
  struct tracefs_cpu *tcpu;
  int cpu;
  bh_cli_spool_t *sp;
} cpu_spool_t;

typedef struct drain {
  cpu_spool_t *cpus;
  int ncpus;
  int subbuf;       /* the ring buffer's sub-buffer (page) size */
  uint64_t reserve; /* bytes taken for each spool before tracing (--spool-reserve-kb) */
  void *buf;        /* one sub-buffer */
  atomic_bool stop; /* set once tracing is off: drain what is left, then end */
  int err;          /* errno of a failed write to a spool */
  pthread_t thread;
} drain_t;

/* Appends the n bytes of buf read from c's ring buffer to its spool, zero-padded to a whole
 * sub-buffer (the sub-buffer's own header says how much of it holds events). */
static void spool_page(drain_t *d, cpu_spool_t *c, int n) {
  if (!d->err)
    d->err = bh_cli_spool_put(c->sp, d->buf, (size_t)n);
}

/* Copies up to max sub-buffers (0: all there are) of c's ring buffer to its spool; when
 * flushing (tracing is off), the last, partly filled one too.  Returns how many. */
static int drain_cpu(drain_t *d, cpu_spool_t *c, int max, bool flush) {
  int got = 0;
  while (!max || got < max) {
    /* Without a reserve, full sub-buffers only while the command runs (buffered_read
     * splices, and the kernel's splice hands out full pages): a read() would hand out the
     * page in use however little it holds, and a spool on tmpfs allocates a page as it
     * grows, which is an event, which a read() hands out as a page of its own, and so on.
     * But a splice allocates a page for the ring buffer in place of each page it hands out
     * (ring_buffer_alloc_read_page), among the command's pages.  With a reserve the spool
     * allocates nothing, and a read() swaps the ring buffer's page with one spare page of
     * its own (ring_buffer_read_page), allocating nothing either.  The partly filled pages
     * come with the flush, after tracing. */
    int n = flush        ? tracefs_cpu_flush(c->tcpu, d->buf)
            : d->reserve ? tracefs_cpu_read(c->tcpu, d->buf, true)
                         : tracefs_cpu_buffered_read(c->tcpu, d->buf, true);
    if (n <= 0)
      break; /* empty for now (EAGAIN), or nothing more */
    spool_page(d, c, n);
    got++;
  }
  return got;
}

static void *drain_main(void *arg) {
  drain_t *d = arg;
  enum { BATCH = 64 }; /* sub-buffers per cpu per turn: no cpu waits for a busy one */
  for (;;) {
    bool stopping = atomic_load(&d->stop);
    bool busy = false;
    for (int i = 0; i < d->ncpus; i++)
      busy |= drain_cpu(d, &d->cpus[i], stopping ? 0 : BATCH, stopping) == BATCH;
    if (stopping)
      return NULL; /* tracing was off before this last pass: nothing more can come */
    if (!busy)
      poll(NULL, 0, 100);
  }
}

static void drain_free(drain_t *d) {
  for (int i = 0; i < d->ncpus; i++) {
    tracefs_cpu_close(d->cpus[i].tcpu);
    bh_cli_spool_close(d->cpus[i].sp);
  }
  free(d->cpus);
  free(d->buf);
  memset(d, 0, sizeof(*d));
}

/* Opens every cpu's trace_pipe_raw and spool (reserve bytes taken for each) and starts the
 * thread; -1 after a message. */
static int drain_start(const bh_cli_tracer_t *tr, drain_t *d, uint64_t reserve) {
  memset(d, 0, sizeof(*d));
  d->reserve = reserve;
  long n = sysconf(_SC_NPROCESSORS_CONF);
  d->cpus = calloc(n > 0 ? (size_t)n : 1, sizeof(*d->cpus));
  int e = d->cpus ? 0 : ENOMEM;
  for (int cpu = 0; !e && cpu < n; cpu++) {
    struct tracefs_cpu *t = tracefs_cpu_open(tr->inst, cpu, true);
    if (!t)
      continue; /* a possible cpu that is not there */
    d->cpus[d->ncpus++] = (cpu_spool_t){.tcpu = t, .cpu = cpu};
    if (tracefs_cpu_read_size(t) > d->subbuf)
      d->subbuf = tracefs_cpu_read_size(t);
  }
  if (!e && (!d->ncpus || d->subbuf <= 0))
    e = ENOENT;
  if (!e && !(d->buf = calloc(1, (size_t)d->subbuf)))
    e = ENOMEM;
  for (int i = 0; !e && i < d->ncpus; i++) {
    const char *what = "";
    if ((e = bh_cli_spool_open(&d->cpus[i].sp, (size_t)d->subbuf, reserve, &what)) != 0) {
      fprintf(stderr, "buddyhint record: cannot make a spool in %s (%s): %s\n",
              getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", what, strerror(e));
      drain_free(d);
      return -1;
    }
  }
  atomic_init(&d->stop, false);
  if (!e)
    e = pthread_create(&d->thread, NULL, drain_main, d);
  if (!e)
    return 0;
  fprintf(stderr,
          "buddyhint record: cannot read the ring buffers of %s (per_cpu/*/trace_pipe_raw): %s\n",
          tr->dir, strerror(e));
  drain_free(d);
  return -1;
}

/* Stops the thread after it has read what tracing left; 0, or -1 after a message if a spool
 * could not be written.  The spools stay open for reading back.  A spool that outgrew its
 * reserve is said. */
static int drain_finish(drain_t *d) {
  atomic_store(&d->stop, true);
  pthread_join(d->thread, NULL);
  for (int i = 0; i < d->ncpus && !d->err; i++)
    d->err = bh_cli_spool_finish(d->cpus[i].sp);
  for (int i = 0; d->reserve && i < d->ncpus; i++)
    if (bh_cli_spool_bytes(d->cpus[i].sp) > d->reserve)
      fprintf(stderr,
              "buddyhint record: warning: cpu %d's spool outgrew its reserve (%lu KiB of "
              "%lu): its pages past it were allocated while the command ran, and are in the "
              "trace; try a larger --spool-reserve-kb\n",
              d->cpus[i].cpu, (unsigned long)(bh_cli_spool_bytes(d->cpus[i].sp) >> 10),
              (unsigned long)(d->reserve >> 10));
  if (!d->err)
    return 0;
  fprintf(stderr, "buddyhint record: cannot write the ring buffers' spool in %s: %s\n",
          getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(d->err));
  return -1;
}

/* ---- reading the spools back, in time order across cpus ---- */

/* One cpu's spool being read: its current sub-buffer and event. */
typedef struct stream {
  const cpu_spool_t *c;
  void *page; /* the current sub-buffer */
  struct kbuffer *kbuf;
  void *data; /* its current event, NULL: none (done when no page is left) */
  unsigned long long ts;
  uint64_t missed; /* events the kernel lost before the current sub-buffer, to report */
  uint64_t lost;   /* all reported so far on this cpu */
} stream_t;

/* Moves s to its next event (first: next false); data stays NULL at the end.  -1 (errno) for
 * a read error. */
static int stream_next(stream_t *s, bool next) {
  if (next && s->data)
    s->data = kbuffer_next_event(s->kbuf, &s->ts);
  while (!s->data) {
    int got = bh_cli_spool_get(s->c->sp, s->page);
    if (got <= 0)
      return got; /* the end, or an error */
    if (kbuffer_load_subbuffer(s->kbuf, s->page))
      continue; /* not a sub-buffer: nothing in it can be trusted */
    int missed = kbuffer_missed_events(s->kbuf);
    if (missed) /* the kernel lost events before this sub-buffer: how many if it says */
      s->missed += missed > 0 ? (uint64_t)missed : 1;
    s->data = kbuffer_read_event(s->kbuf, &s->ts);
  }
  return 0;
}

/* The stream whose current event comes first, or NULL at the end. */
static stream_t *earliest(stream_t *st, int n) {
  stream_t *best = NULL;
  for (int i = 0; i < n; i++)
    if (st[i].data && (!best || st[i].ts < best->ts))
      best = &st[i];
  return best;
}

/* What copy_events counts and where it keeps the events. */
typedef struct copy {
  bh_trace_writer_t *w;
  bh_trace_counts_t *c;
  uint64_t lo, hi; /* the events to keep: after lo, before hi (0: no bound) */
  uint64_t cut;    /* events left out by that window */
  const char *why; /* the last bad record's fault */
  int err;         /* a failed write (BH_E*) */
} copy_t;

/* Writes the event at s (a lost-events marker first if the kernel lost some before it). */
static void copy_one(copy_t *cp, const bh_cli_tracer_t *tr, stream_t *s) {
  if (s->missed && !cp->err) {
    cp->err = bh_trace_write_lost(cp->w, s->ts, s->missed, s->c->cpu);
    s->lost += s->missed;
    s->missed = 0;
  }
  struct tep_record rec = {
      .ts = s->ts, .cpu = s->c->cpu, .data = s->data, .size = kbuffer_event_size(s->kbuf)};
  bh_event_t ev;
  const char *why;
  int got = bh__kmem_decode(tr->dec, &rec, &ev, &cp->c->gfp_unknown, &why);
  cp->c->lines++;
  if (got == 0) {
    cp->c->other_lines++;
  } else if (got < 0) {
    cp->c->malformed++; /* a strange record must not lose the recording */
    cp->why = why;
  } else if ((cp->lo && ev.time_ns <= cp->lo) || (cp->hi && ev.time_ns >= cp->hi)) {
    cp->cut++; /* while a snapshot was read: the snapshot holds it, or not */
  } else if (!cp->err && !(cp->err = bh_trace_write(cp->w, &ev))) {
    cp->c->events++;
    cp->c->allocs += ev.op == BH_EV_ALLOC;
    cp->c->frees += ev.op == BH_EV_FREE || ev.op == BH_EV_FREE_BATCHED;
  }
}

/* The streams of d's spools from their first events, as many as *n were made; *rc -1 if one
 * failed (or NULL, out of memory). */
static stream_t *streams_open(const bh_cli_tracer_t *tr, const drain_t *d, int *n, int *rc) {
  stream_t *st = calloc((size_t)d->ncpus, sizeof(*st));
  *n = 0;
  *rc = 0;
  for (; st && *n < d->ncpus; ++*n) {
    st[*n] = (stream_t){
        .c = &d->cpus[*n], .page = malloc((size_t)d->subbuf), .kbuf = tep_kbuffer(tr->tep)};
    if (!st[*n].page || !st[*n].kbuf || stream_next(&st[*n], false)) {
      ++*n;
      *rc = -1;
      break;
    }
  }
  return st;
}

static void streams_free(stream_t *st, int n) {
  for (int i = 0; st && i < n; i++) {
    free(st[i].page);
    kbuffer_free(st[i].kbuf);
  }
  free(st);
}

/* The id of ftrace's print event (trace_marker's writes) in the instance at dir, or -1. */
static int print_event_id(const char *dir) {
  char p[512];
  snprintf(p, sizeof(p), "%s/events/ftrace/print/id", dir);
  FILE *f = fopen(p, "re");
  int id = -1;
  if (f && fscanf(f, "%d", &id) != 1)
    id = -1;
  if (f)
    fclose(f);
  return id;
}

/* Whether the record is the start snapshot's mark (BH_CLI_COUNTS_MARK) of a print event id:
 * common_type, then the ip (8 bytes) at offset 8, then the text at 16. */
static bool counts_mark(const struct tep_record *rec, int id) {
  size_t len = sizeof(BH_CLI_COUNTS_MARK) - 1;
  uint16_t type;
  if (id < 0 || rec->size < 16 + (int)len)
    return false;
  memcpy(&type, rec->data, sizeof(type));
  return type == id && !memcmp((const char *)rec->data + 16, BH_CLI_COUNTS_MARK, len);
}

/*
 * Two sections of the description from the events before lo, the start snapshot's window,
 * which the trace leaves out (the map holds what they did):
 * - start/window_frees: the frees (mm_page_free, _batched) and the drains to the buddy lists
 *   (mm_page_pcpu_drain) of the 2 s before lo, as "PFN ORDER TIME" lines (hex pfn; the trace
 *   clock's nanoseconds, as the events'), the last WINDOW_FREES of them.  One that made a free
 *   block at or above page reporting's order requested a pass that had not run by the start
 *   (PAGE_REPORTING_DELAY is 2 s); a replay of a reporting guest starts with it pending
 *   (bh__notify_unreported).
 * - start/count_events: the events that changed a pcp list's count between zoneinfo's reading
 *   (the start snapshot's mark, BH_CLI_COUNTS_MARK) and lo: allocations, frees, refills
 *   (mm_page_alloc_zone_locked with percpu_refill) and drains, as "OP PFN ORDER CPU TIME"
 *   lines (OP A, F, B, Z or D as in the text format; hex pfn), at most COUNT_EVENTS of them
 *   (none kept beyond: the section is then left out).  A replay adds what they did to the
 *   counts zoneinfo printed (docs/START-STATE.md).  Without the mark there is no section.
 * The spools are read to their first event after lo and rewound.  0, or -1 after a message.
 */
enum { WINDOW_FREES = 1 << 16, COUNT_EVENTS = 1 << 16 };
static int window_frees(const bh_cli_tracer_t *tr, const drain_t *d, uint64_t lo, bh_machine_t *m) {
  if (!lo || !m)
    return 0;
  int n, rc, print_id = print_event_id(tr->dir);
  stream_t *st = streams_open(tr, d, &n, &rc);
  struct window_free {
    uint64_t key, ts; /* pfn << 6 | order, the event's timestamp */
  } *ring = st && !rc ? malloc(WINDOW_FREES * sizeof(*ring)) : NULL;
  size_t got = 0, counted = 0;
  bool marked = false;
  char *ce_text = NULL; /* start/count_events, written as the events come */
  size_t ce_len = 0;
  FILE *ce = NULL;
  stream_t *s;
  while (ring && (s = earliest(st, n)) && s->ts <= lo) {
    struct tep_record rec = {
        .ts = s->ts, .cpu = s->c->cpu, .data = s->data, .size = kbuffer_event_size(s->kbuf)};
    bh_event_t ev;
    const char *why;
    uint64_t unknown = 0;
    int k = bh__kmem_decode(tr->dec, &rec, &ev, &unknown, &why);
    bool ok = k == 1 && ev.pfn < 1ull << 56 && ev.order < 64;
    if (ok && s->ts + 2000000000ull > lo &&
        (ev.op == BH_EV_FREE || ev.op == BH_EV_FREE_BATCHED || ev.op == BH_EV_PCPU_DRAIN))
      ring[got++ % WINDOW_FREES] = (struct window_free){ev.pfn << 6 | ev.order, ev.time_ns};
    if (k != 1 && !marked && counts_mark(&rec, print_id)) {
      marked = true;
      ce = open_memstream(&ce_text, &ce_len);
    }
    char op = !ok || !marked                                         ? 0
              : ev.op == BH_EV_ALLOC                                 ? (ev.failed ? 0 : 'A')
              : ev.op == BH_EV_FREE                                  ? 'F'
              : ev.op == BH_EV_FREE_BATCHED                          ? 'B'
              : ev.op == BH_EV_PCPU_DRAIN                            ? 'D'
              : ev.op == BH_EV_ALLOC_ZONE_LOCKED && ev.percpu_refill ? 'Z'
                                                                     : 0;
    if (op && ce && counted++ < COUNT_EVENTS)
      fprintf(ce, "%c %llx %u %d %llu\n", op, (unsigned long long)ev.pfn, (unsigned)ev.order,
              (int)ev.cpu, (unsigned long long)ev.time_ns);
    if (stream_next(s, true))
      rc = -1;
  }
  streams_free(st, n);
  for (int i = 0; i < d->ncpus; i++)
    bh_cli_spool_rewind(d->cpus[i].sp);
  char *text = NULL;
  size_t len = 0;
  FILE *f = ring && !rc ? open_memstream(&text, &len) : NULL;
  for (size_t i = got > WINDOW_FREES ? got - WINDOW_FREES : 0; f && i < got; i++) {
    const struct window_free *v = &ring[i % WINDOW_FREES];
    fprintf(f, "%llx %u %llu\n", (unsigned long long)(v->key >> 6), (unsigned)(v->key & 63),
            (unsigned long long)v->ts);
  }
  if (f && fclose(f)) {
    free(text);
    text = NULL;
  }
  free(ring);
  bool ce_ok = ce && !fclose(ce) && ce_text;
  if (!text || rc || bh_machine_set_section(m, "start/window_frees", text) ||
      (ce_ok && counted <= COUNT_EVENTS &&
       bh_machine_set_section(m, "start/count_events", ce_text))) {
    free(text);
    free(ce_text);
    fprintf(stderr, "buddyhint record: cannot read the frees before the start snapshot: %s\n",
            strerror(errno ? errno : ENOMEM));
    return -1;
  }
  free(text);
  free(ce_text);
  return 0;
}

/*
 * Decodes the spools into the native trace, merged by timestamp, with a lost-events marker
 * where a sub-buffer says the kernel lost events before it (at its first event, for its cpu),
 * and one per cpu at the end for what the ring buffer's counters report beyond that.
 * Returns 0, or -1 after a message.
 */
static int copy_events(const bh_cli_tracer_t *tr, const drain_t *d, copy_t *cp) {
  int n, rc;
  stream_t *st = streams_open(tr, d, &n, &rc);
  stream_t *s;
  uint64_t last = 0;
  while (!rc && !cp->err && (s = earliest(st, n))) {
    copy_one(cp, tr, s);
    last = s->ts;
    if (stream_next(s, true))
      rc = -1;
  }
  if (!st || rc)
    fprintf(stderr, "buddyhint record: cannot read the ring buffers' spool back: %s\n",
            strerror(errno ? errno : ENOMEM));
  for (int i = 0; i < n; i++) {
    unsigned long long overrun = 0, dropped = 0;
    bh_cli_tracer_cpu_lost(tr, st[i].c->cpu, &overrun, &dropped);
    uint64_t lost = st[i].lost + st[i].missed;
    if (overrun + dropped > lost)
      lost = overrun + dropped;
    if (!rc && !cp->err && lost > st[i].lost)
      cp->err = bh_trace_write_lost(cp->w, last, lost - st[i].lost, st[i].c->cpu);
    cp->c->lost_events += lost;
  }
  streams_free(st, n);
  if (cp->err)
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
  else if (!rc && cp->c->malformed)
    fprintf(stderr, "buddyhint record: warning: %llu malformed records skipped, the last: %s\n",
            (unsigned long long)cp->c->malformed, cp->why);
  return rc || cp->err ? -1 : 0;
}

#endif

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

/* A signal that came before the command started: tracing off, no output; 128 + sig. */
static int stopped_before_start(bh_cli_tracer_t *tr, drain_t *d, int sig, const char *cmd) {
  fprintf(stderr,
          "buddyhint record: stopped by signal %d (%s) before '%s' started; no trace "
          "written\n",
          sig, strsignal(sig), cmd);
  tracefs_trace_off(tr->inst);
  drain_finish(d);
  return 128 + sig;
}

/* The command line of record. */
typedef struct record_args {
  const char *out, *fmt, *comp, *clock;
  bool as_root, pcp_events, no_bulk;
  char **cmd;
  unsigned buffer_kb;
  uint64_t spool_reserve; /* bytes per cpu */
} record_args_t;

/* Parses the options and finds the command: -1 for --help (usage printed), else BH_EXIT_OK
 * or the usage error's exit code (its message printed). */
static int parse_args(int argc, char **argv, record_args_t *ra) {
  const char *kbs = NULL, *reserve = NULL;
  *ra = (record_args_t){0};
  int i = 1, r;
  while (i < argc) {
    const char *a = argv[i];
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return -1;
    }
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "output", &ra->out)) != 0 ||
        (r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &ra->out)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "buffer-kb", &kbs)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "spool-reserve-kb", &reserve)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "format", &ra->fmt)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "compress", &ra->comp)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "clock", &ra->clock)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--as-root")) {
      ra->as_root = true;
      i++;
    } else if (!strcmp(a, "--pcp-events")) {
      ra->pcp_events = true;
      i++;
    } else if (!strcmp(a, "--no-bulk-probe")) {
      ra->no_bulk = true;
      i++;
    } else if (a[0] == '-') {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else {
      break; /* the command starts here */
    }
  }
  if (i >= argc)
    return bh_cli_usage_error(VERB, "which command? (record -o FILE -- CMD [ARGS])");
  if (!ra->out)
    return bh_cli_usage_error(VERB, "-o FILE is required");
  ra->cmd = argv + i;
  uint64_t kb = 0;
  if (reserve && bh_cli_parse_u64(reserve, 0, 1ul << 30, &kb))
    return bh_cli_usage_error(VERB,
                              "--spool-reserve-kb wants a number of KiB from 0 to %lu, not '%s'",
                              1ul << 30, reserve);
  ra->spool_reserve = kb << 10;
  if (kbs)
    return bh_cli_parse_buffer_kb(VERB, kbs, &ra->buffer_kb);
  ra->buffer_kb = default_buffer_kb();
  return BH_EXIT_OK;
}

#if BH_HAVE_TRACEFS
/* The line that ends a recording: how the command ended, and what was written. */
static void say_done(char **cmd, pid_t pid, int status, double seconds, const bh_trace_counts_t *c,
                     const char *out, int format, int compression) {
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
          cmd[0], (int)pid, how, seconds, (unsigned long long)c->events,
          (unsigned long long)c->allocs, (unsigned long long)c->frees, out,
          bh_cli_format_name(format), bh_cli_compression_name(compression));
}
#endif

int cmd_record(int argc, char **argv) {
  record_args_t ra;
  int rc = parse_args(argc, argv, &ra);
  if (rc)
    return rc < 0 ? BH_EXIT_OK : rc;
  const char *out = ra.out, *clock = ra.clock;
  bool as_root = ra.as_root, pcp_events = ra.pcp_events;
  char **cmd = ra.cmd;
  unsigned buffer_kb = ra.buffer_kb;
  int format, compression;
  if ((rc = bh_cli_output_kind(VERB, out, ra.fmt, ra.comp, &format, &compression)) != 0)
    return rc;
#if !BH_HAVE_TRACEFS
  (void)cmd, (void)buffer_kb, (void)as_root, (void)clock, (void)pcp_events;
  fprintf(stderr, "buddyhint record: this buddyhint was built without libtracefs: install "
                  "libtracefs-dev and libtraceevent-dev (make deps) and rebuild\n");
  return BH_EXIT_FAIL;
#else
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

  /* until the command starts, ^C, ^\, SIGTERM and SIGHUP stop the recording (checked before
   * the fork); then, like system(), ^C and ^\ are the command's, and SIGTERM and SIGHUP are
   * passed on to it */
  struct sigaction old[4];
  bh_cli_catch_stop_signals(old);
  bh_cli_out_t *o;
  if ((rc = bh_cli_out_open(VERB, out, &o)) != 0) {
    bh_cli_restore_stop_signals(old);
    return rc;
  }
  bh_trace_writer_t *w;
  if (bh_cli_out_writer(o, format, compression, 2, NULL, &w)) {
    fprintf(stderr, "buddyhint record: %s\n", bh_trace_error(NULL));
    bh_cli_out_abort(o);
    bh_cli_restore_stop_signals(old);
    return BH_EXIT_FAIL;
  }
  if (pcp_events)
    bh_trace_writer_pcp_events(w); /* a fresh version 2 writer: cannot fail */
  bh_cli_tracer_t tr;
  rc = BH_EXIT_FAIL;
  if (bh_cli_tracer_open(&tr, VERB, pcp_events, pcp_events && !ra.no_bulk)) {
    bh_trace_writer_abort(w);
    bh_cli_out_abort(o); /* nothing was there, or what was there stays */
    bh_cli_restore_stop_signals(old);
    return BH_EXIT_FAIL;
  }
  bool ok = false, signals_restored = false;
  int status = 0;
  double t0 = 0, t1 = 0;
  pid_t pid = -1;
  bh_trace_counts_t c = {0};
  bh_machine_t *machine = NULL; /* the description stored with the trace */
  drain_t drain = {0};
  if (bh_cli_tracer_formats(&tr) || bh_cli_tracer_setup(&tr, buffer_kb, clock) ||
      drain_start(&tr, &drain, ra.spool_reserve))
    goto cleanup;
  fprintf(stderr,
          "buddyhint record: tracing kmem page events system-wide in %s (%u KiB per "
          "cpu) while '%s' runs\n",
          tr.dir, buffer_kb, cmd[0]);
  fflush(NULL);
  if (bh_cli_got_signal) { /* while the instance was set up: tracing was never on */
    rc = stopped_before_start(&tr, &drain, bh_cli_got_signal, cmd[0]);
    goto restore_signals;
  }
  t0 = now_s();
  if (tracefs_trace_on(tr.inst)) {
    fprintf(stderr, "buddyhint record: cannot turn tracing on in %s\n", tr.dir);
    drain_finish(&drain);
    goto restore_signals;
  }
  bh_cli_rec_snapshot(VERB, &machine, BH_SNAP_START, tr.dir); /* tracing is on: nothing slips by */
  if (bh_cli_got_signal) { /* during the snapshot (seconds on a large machine) */
    rc = stopped_before_start(&tr, &drain, bh_cli_got_signal, cmd[0]);
    goto restore_signals;
  }
  pid = bh_cli_start_command(cmd, !strcmp(out, "-"), &user);
  if (pid < 0) {
    if (user.drop)
      fprintf(stderr, "buddyhint record: cannot run '%s' as uid %u gid %u: %s\n", cmd[0],
              (unsigned)user.uid, (unsigned)user.gid, strerror(errno));
    else
      fprintf(stderr, "buddyhint record: cannot run '%s': %s\n", cmd[0], strerror(errno));
    tracefs_trace_off(tr.inst);
    drain_finish(&drain);
    goto restore_signals;
  }
  status = bh_cli_wait_command(pid);
  if (machine)
    bh_cli_rec_snapshot(VERB, &machine, BH_SNAP_END, tr.dir);
  tracefs_trace_off(tr.inst);
  t1 = now_s();
  ok = drain_finish(&drain) == 0;
restore_signals:
  bh_cli_restore_stop_signals(old);
  signals_restored = true;
  if (!ok)
    goto cleanup;

  unsigned long long overrun = 0, dropped = 0;
  for (int k = 0; k < drain.ncpus; k++)
    bh_cli_tracer_cpu_lost(&tr, drain.cpus[k].cpu, &overrun, &dropped);
  if (overrun || dropped)
    fprintf(stderr,
            "buddyhint record: warning: events were lost (overrun %llu, dropped %llu): "
            "the trace is incomplete; try a larger --buffer-kb\n",
            overrun, dropped);
  copy_t cp = {.w = w, .c = &c};
  bh_cli_rec_window(machine, &cp.lo, &cp.hi);
  /* with the pcp events, whether the pages alloc_pages_bulk takes are in the trace: a replay
   * infers them from the pcp lists' order where they are not (--untraced-allocs lists) */
  /* and what the kernel freed after its pcp lists were set up (a 6.12 zoneinfo does not
   * print high_max, which a replay computes from it) */
  char rec_section[96] = "";
  long long boot_kb = machine ? bh_cli_rec_boot_freed_kb() : -1;
  if (pcp_events)
    snprintf(rec_section, sizeof(rec_section), "bulk_probes %d\n", tr.bulk_system[0] ? 1 : 0);
  if (boot_kb >= 0)
    snprintf(rec_section + strlen(rec_section), sizeof(rec_section) - strlen(rec_section),
             "boot_freed_kb %lld\n", boot_kb);
  if (machine && rec_section[0] && bh_machine_set_section(machine, "record", rec_section)) {
    fprintf(stderr, "buddyhint record: out of memory\n");
    goto cleanup;
  }
  if (window_frees(&tr, &drain, cp.lo, machine) || bh_cli_rec_describe(VERB, machine, w))
    goto cleanup;
  int copied = copy_events(&tr, &drain, &cp);
  if (cp.cut)
    fprintf(stderr,
            "buddyhint record: %llu events before the start snapshot's free map was read or "
            "after the end snapshot was begun are left out\n",
            (unsigned long long)cp.cut);
  if (copied)
    goto cleanup;
  rc = BH_EXIT_OK;
cleanup:
  if (!signals_restored)
    bh_cli_restore_stop_signals(old);
  drain_free(&drain); /* the spools have no names: this is their end */
  bh_machine_free(machine);
  bh_cli_tracer_close(&tr);
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
  say_done(cmd, pid, status, t1 - t0, &c, out, format, compression);
  return BH_EXIT_OK;
#endif
}
