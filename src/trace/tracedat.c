/*
 * trace-cmd's trace.dat, read with libtracecmd and libtraceevent.
 *
 * A trace.dat holds, besides the ring buffers' pages, the format of every event as the
 * recording kernel described it (events/kmem/mm_page_alloc/format): field names, offsets,
 * sizes, signedness and the print format.  The records are decoded through that description
 * by kmem_decode.c (shared with `buddyhint record`), so a trace from another kernel version,
 * a 32-bit or a big-endian machine decodes as that kernel wrote it.
 *
 * The file may hold several ring buffers (the top level and the instances of trace-cmd -B);
 * the records of every buffer and CPU are merged by timestamp.  A record of another event is
 * an "other line".  A ring buffer page that says events were dropped before it adds to
 * lost_events (its count, or 1 where the kernel did not store one).
 *
 * Without libtracecmd at build time (BH_HAVE_TRACECMD 0) the reader is a stub that says how
 * to get one.
 */
#include "trace/foreign.h"
#include "trace/kmem_decode.h"
#include "trace/trace_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BH_HAVE_TRACECMD
#define BH_HAVE_TRACECMD 0
#endif

bool bh__tracedat_magic(const unsigned char *p, size_t n) {
  static const unsigned char magic[10] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  return n >= sizeof(magic) && !memcmp(p, magic, sizeof(magic));
}

#if !BH_HAVE_TRACECMD

int bh__tracedat_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out) {
  *out = NULL;
  snprintf(ctx->msg, BH__TRACE_MSG_SIZE,
           "%s: a trace-cmd trace.dat, and this libbuddyhint was built without libtracecmd: "
           "install libtracecmd-dev and libtraceevent-dev (make deps) and rebuild, or convert "
           "it: trace-cmd report -i %s > trace.txt",
           ctx->name, ctx->path);
  return BH_ENOTSUP;
}

#else

#include <trace-cmd.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* One CPU of one ring buffer, with its next record. */
struct stream {
  struct tracecmd_input *h;
  int cpu;
  struct tep_record *rec; /* NULL: to be read */
  bool done;
};

struct tracedat {
  bh__foreign_t base;
  struct tracecmd_input *top;
  struct tracecmd_input **inst;
  int ninst;
  struct stream *st;
  int nst;
  struct tep_handle *tep;
  bh__kmem_decoder_t *dec;
};

static void td_close(bh__foreign_t *f) {
  struct tracedat *d = (struct tracedat *)f;
  for (int i = 0; i < d->nst; i++)
    if (d->st[i].rec)
      tracecmd_free_record(d->st[i].rec);
  free(d->st);
  for (int i = 0; i < d->ninst; i++)
    tracecmd_close(d->inst[i]);
  free(d->inst);
  if (d->top)
    tracecmd_close(d->top);
  bh__kmem_decoder_free(d->dec);
  free(d);
}

/* ---- merging the streams ---- */

/* The stream whose next record comes first, or NULL at the end. */
static struct stream *earliest(struct tracedat *d) {
  struct stream *best = NULL;
  for (int i = 0; i < d->nst; i++) {
    struct stream *s = &d->st[i];
    if (!s->rec && !s->done) {
      s->rec = tracecmd_read_data(s->h, s->cpu);
      s->done = !s->rec;
    }
    if (s->rec && (!best || s->rec->ts < best->rec->ts))
      best = s;
  }
  return best;
}

static uint32_t origin_of(struct tracedat *d, const bh_event_t *ev) {
  const char *comm = tep_data_comm_from_pid(d->tep, ev->pid);
  return bh__origin_intern(d->base.ctx.origins, ev->pid, comm, comm ? strlen(comm) : 0, NULL, 0);
}

static int td_next(bh__foreign_t *f, bh_event_t *ev) {
  struct tracedat *d = (struct tracedat *)f;
  bh_trace_counts_t *c = f->ctx.counts;
  for (;;) {
    struct stream *s = earliest(d);
    if (!s)
      return 0;
    struct tep_record *rec = s->rec;
    s->rec = NULL;
    c->lines++;
    if (rec->missed_events)
      c->lost_events += rec->missed_events > 0 ? (uint64_t)rec->missed_events : 1;
    const char *why;
    int got = bh__kmem_decode(d->dec, rec, ev, &c->gfp_unknown, &why);
    if (!got) {
      c->other_lines++;
      tracecmd_free_record(rec);
      continue;
    }
    unsigned long long ts = rec->ts;
    int cpu = rec->cpu;
    tracecmd_free_record(rec);
    if (got > 0) {
      if (f->ctx.origins)
        ev->origin = origin_of(d, ev);
      return 1;
    }
    bh__foreign_fail(&d->base, BH_EFORMAT, "cpu %d, time %llu.%09llu: %s", cpu, ts / 1000000000ull,
                     ts % 1000000000ull, why);
    if (!f->ctx.lenient)
      return BH_EFORMAT;
    c->malformed++;
  }
}

/* ---- open ---- */

static int add_streams(struct tracedat *d, struct tracecmd_input *h) {
  int cpus = tep_get_cpus(d->tep);
  if (cpus <= 0)
    return 0;
  struct stream *st = realloc(d->st, (size_t)(d->nst + cpus) * sizeof(*st));
  if (!st)
    return bh__foreign_fail(&d->base, BH_ENOMEM, "out of memory");
  d->st = st;
  for (int c = 0; c < cpus; c++)
    d->st[d->nst++] = (struct stream){.h = h, .cpu = c};
  return 0;
}

/* The instance buffers (trace-cmd record -B): their records are merged with the top's. */
static int open_instances(struct tracedat *d) {
  int n = tracecmd_buffer_instances(d->top);
  if (n <= 0)
    return 0;
  d->inst = calloc((size_t)n, sizeof(*d->inst));
  if (!d->inst)
    return bh__foreign_fail(&d->base, BH_ENOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    struct tracecmd_input *h = tracecmd_buffer_instance_handle(d->top, i);
    if (!h)
      return bh__foreign_fail(&d->base, BH_EFORMAT, "cannot read buffer '%s'",
                              tracecmd_buffer_instance_name(d->top, i));
    d->inst[d->ninst++] = h;
    int err = add_streams(d, h);
    if (err)
      return err;
  }
  return 0;
}

/*
 * libtracecmd and libtraceevent trust the file's headers: a corrupt event format or buffer
 * description can make tracecmd_open() or tracecmd_buffer_instance_handle() crash (seen with
 * Debian 12's libtracecmd 1.3 on mutated files).  So a child process opens the file first, as
 * the reader will; only if it survives does the reader open it itself.  It costs a fork and a
 * second parse of the headers, not of the events.  Returns 0, or BH_EFORMAT if the child died.
 */
static int open_survives(const char *path) {
  pid_t pid = fork();
  if (pid < 0)
    return 0; /* cannot check: go on */
  if (pid == 0) {
    /* the program's handlers (a test framework's, say) must not catch the crash in here */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
      signal(fatal[i], SIG_DFL);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDERR_FILENO); /* what the libraries print on their way down */
    tracecmd_set_loglevel(TEP_LOG_NONE);
    struct tracecmd_input *h =
        tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS | TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
    for (int i = 0, n = h ? tracecmd_buffer_instances(h) : 0; i < n; i++)
      tracecmd_buffer_instance_handle(h, i);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 0;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : BH_EFORMAT; /* died (a sanitizer exits 1) */
}

int bh__tracedat_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out) {
  *out = NULL;
  if (open_survives(ctx->path)) {
    snprintf(ctx->msg, BH__TRACE_MSG_SIZE,
             "%s: a corrupt trace.dat (libtracecmd crashed opening it)", ctx->name);
    return BH_EFORMAT;
  }
  struct tracedat *d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(ctx->msg, BH__TRACE_MSG_SIZE, "%s: out of memory", ctx->name);
    return BH_ENOMEM;
  }
  d->base.ctx = *ctx;
  d->base.next = td_next;
  d->base.close = td_close;
  /* the libraries' own warnings would go to stderr: errors are ours to report */
  tracecmd_set_loglevel(TEP_LOG_NONE);
  d->top =
      tracecmd_open(ctx->path, TRACECMD_FL_LOAD_NO_PLUGINS | TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
  int err = 0;
  if (!d->top)
    err = bh__foreign_fail(&d->base, BH_EFORMAT, "not a trace.dat that libtracecmd can read");
  if (!err) {
    d->tep = tracecmd_get_tep(d->top);
    char why[160];
    err = bh__kmem_decoder_new(d->tep, &d->dec, why, sizeof(why));
    if (err)
      bh__foreign_fail(&d->base, err, "%s", why);
  }
  if (!err)
    err = add_streams(d, d->top);
  if (!err)
    err = open_instances(d);
  if (err) {
    td_close(&d->base);
    return err;
  }
  *out = &d->base;
  return 0;
}

#endif
