/*
 * trace-cmd's trace.dat, read with libtracecmd and libtraceevent.
 *
 * A trace.dat holds, besides the ring buffers' pages, the format of every event as the
 * recording kernel described it (events/kmem/mm_page_alloc/format): field names, offsets,
 * sizes, signedness and the print format.  The fields are read through that description
 * (tep_read_number_field), so a trace from another kernel version, a 32-bit or a big-endian
 * machine decodes as that kernel wrote it.  gfp_flags is a number whose bits moved between
 * kernel versions: it is turned into the kernel's flag names by the event's own print format
 * (the __print_flags table of the recording kernel), once per distinct value, and those names
 * into BH_GFP bits by bh_gfp_parse.
 *
 * The file may hold several ring buffers (the top level and the instances of trace-cmd -B);
 * the records of every buffer and CPU are merged by timestamp.  A record of another event is
 * an "other line".  A ring buffer page that says events were dropped before it adds to
 * lost_events (its count, or 1 where the kernel did not store one).  A failed allocation has
 * pfn -1 (the kernel's "page=(null)").
 *
 * Without libtracecmd at build time (BH_HAVE_TRACECMD 0) the reader is a stub that says how
 * to get one.
 */
#include "trace/foreign.h"
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

enum { MAX_KINDS = 5, GFP_CACHE = 64 };

/* One of the events we read, with its fields as the file describes them. */
struct kind {
  int id;
  uint8_t op;
  struct tep_format_field *pfn, *order, *gfp, *mt;
  uint8_t fixed_order; /* mm_page_free_batched has no order field: 0 */
};

/* One CPU of one ring buffer, with its next record. */
struct stream {
  struct tracecmd_input *h;
  int cpu;
  struct tep_record *rec; /* NULL: to be read */
  bool done;
};

struct gfp_entry {
  uint64_t raw;
  uint32_t bits;
  int unknown; /* names bh_gfp_parse did not know */
  bool used;
};

struct tracedat {
  bh__foreign_t base;
  struct tracecmd_input *top;
  struct tracecmd_input **inst;
  int ninst;
  struct stream *st;
  int nst;
  struct tep_handle *tep;
  struct kind kinds[MAX_KINDS];
  int nkinds;
  struct trace_seq seq;
  struct gfp_entry gfp_cache[GFP_CACHE];
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
  trace_seq_destroy(&d->seq);
  free(d);
}

/* ---- the events and their fields ---- */

/*
 * Finds the event system/name in the file and its fields.  Returns 0 (found, or absent, which
 * is no error: the trace has none of these events), or BH_EFORMAT for an event without the
 * fields we need (a kernel that recorded a struct page pointer instead of a pfn).
 */
static int add_kind(struct tracedat *d, const char *name, uint8_t op) {
  struct tep_event *e = tep_find_event_by_name(d->tep, "kmem", name);
  if (!e)
    return 0;
  struct kind *k = &d->kinds[d->nkinds];
  memset(k, 0, sizeof(*k));
  k->id = e->id;
  k->op = op;
  k->pfn = tep_find_field(e, "pfn");
  k->order = tep_find_field(e, "order");
  if (op == BH_EV_ALLOC) {
    k->gfp = tep_find_field(e, "gfp_flags");
    k->mt = tep_find_field(e, "migratetype");
  }
  if (!k->pfn)
    return bh__foreign_fail(
        &d->base, BH_EFORMAT,
        "kmem:%s has no pfn field (a kernel that recorded struct page pointers): "
        "not supported",
        name);
  if (!k->order && op != BH_EV_FREE_BATCHED)
    return bh__foreign_fail(&d->base, BH_EFORMAT, "kmem:%s has no order field", name);
  d->nkinds++;
  return 0;
}

static int find_kinds(struct tracedat *d) {
  static const struct {
    const char *name;
    uint8_t op;
  } names[MAX_KINDS] = {
      {"mm_page_alloc", BH_EV_ALLOC},
      {"mm_page_free", BH_EV_FREE},
      {"mm_page_free_batched", BH_EV_FREE_BATCHED},
      {"mm_page_free_direct", BH_EV_FREE}, /* before Linux 3.3 */
      {"mm_pagevec_free", BH_EV_FREE_BATCHED},
  };
  for (int i = 0; i < MAX_KINDS; i++) {
    int err = add_kind(d, names[i].name, names[i].op);
    if (err)
      return err;
  }
  return 0;
}

static const struct kind *kind_of(const struct tracedat *d, int id) {
  for (int i = 0; i < d->nkinds; i++)
    if (d->kinds[i].id == id)
      return &d->kinds[i];
  return NULL;
}

/* ---- decoding a record ---- */

static bool read_field(struct tep_format_field *f, struct tep_record *rec, uint64_t *v) {
  unsigned long long x;
  if (!f || f->offset < 0 || f->size <= 0 || f->offset + f->size > rec->size ||
      tep_read_number_field(f, rec->data, &x))
    return false;
  *v = x;
  return true;
}

/* A field's value sign-extended from its size when the format says it is signed. */
static int64_t signed_value(const struct tep_format_field *f, uint64_t v) {
  if (!(f->flags & TEP_FIELD_IS_SIGNED) || f->size >= 8)
    return f->size >= 8 ? (int64_t)v : (int64_t)(v & ((1ull << (8 * f->size)) - 1));
  uint64_t sign = 1ull << (8 * f->size - 1);
  v &= (sign << 1) - 1;
  return (int64_t)(v ^ sign) - (int64_t)sign;
}

/*
 * The BH_GFP bits of a raw gfp_flags value: the kernel's flag names come from printing the
 * record with the event's own print format ("... gfp_flags=GFP_KERNEL|__GFP_ZERO"), then
 * bh_gfp_parse.  Cached by raw value: a trace has a handful of masks.
 */
static uint32_t gfp_bits(struct tracedat *d, uint64_t raw, struct tep_record *rec) {
  struct gfp_entry *e = &d->gfp_cache[(raw * 0x9e3779b97f4a7c15ull) >> 58];
  if (!e->used || e->raw != raw) {
    trace_seq_reset(&d->seq);
    tep_print_event(d->tep, &d->seq, rec, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&d->seq);
    const char *s = d->seq.buffer ? strstr(d->seq.buffer, "gfp_flags=") : NULL;
    uint32_t bits = 0;
    int unknown = -1;
    if (s) {
      s += strlen("gfp_flags=");
      unknown = bh_gfp_parse(s, strcspn(s, " \t\n"), &bits);
    }
    if (unknown < 0) { /* no names printed: the number, read with Linux 6.12's bit values */
      char hex[24];
      int n = snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)raw);
      bits = 0;
      unknown = raw ? bh_gfp_parse(hex, (size_t)n, &bits) : 0;
    }
    *e = (struct gfp_entry){
        .raw = raw, .bits = bits, .unknown = unknown > 0 ? unknown : 0, .used = true};
  }
  /* unknown names count at every event that has them, as in text traces */
  d->base.ctx.counts->gfp_unknown += (uint64_t)e->unknown;
  return e->bits;
}

/* Fills ev from a record of kind k.  Returns NULL or what is wrong. */
static const char *decode(struct tracedat *d, const struct kind *k, struct tep_record *rec,
                          bh_event_t *ev) {
  uint64_t pfn, order = k->fixed_order, v;
  memset(ev, 0, sizeof(*ev));
  ev->time_ns = rec->ts;
  ev->cpu = rec->cpu;
  ev->pid = tep_data_pid(d->tep, rec);
  ev->op = k->op;
  ev->migratetype = -1;
  if (!read_field(k->pfn, rec, &pfn))
    return "record too short for its pfn field";
  if (k->order && !read_field(k->order, rec, &order))
    return "record too short for its order field";
  if (order > BH_TRACE_MAX_ORDER)
    return "order above 63";
  ev->order = (uint8_t)order;
  bool failed =
      k->pfn->size >= 8 ? pfn == UINT64_MAX : pfn == (1ull << (8 * (unsigned)k->pfn->size)) - 1;
  if (k->op != BH_EV_ALLOC) {
    ev->pfn = pfn;
    return NULL;
  }
  ev->failed = failed;
  ev->pfn = failed ? 0 : pfn;
  if (k->mt && read_field(k->mt, rec, &v)) {
    int64_t mt = signed_value(k->mt, v);
    ev->migratetype = (int8_t)(mt >= -1 && mt < 127 ? mt : -1);
  }
  if (k->gfp && read_field(k->gfp, rec, &v))
    ev->gfp = gfp_bits(d, v, rec);
  ev->zone = (uint8_t)bh_gfp_zone(ev->gfp);
  return NULL;
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
    const struct kind *k = kind_of(d, tep_data_type(d->tep, rec));
    if (!k) {
      c->other_lines++;
      tracecmd_free_record(rec);
      continue;
    }
    const char *why = decode(d, k, rec, ev);
    unsigned long long ts = rec->ts;
    int cpu = rec->cpu;
    tracecmd_free_record(rec);
    if (!why) {
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
  trace_seq_init(&d->seq);
  /* the libraries' own warnings would go to stderr: errors are ours to report */
  tracecmd_set_loglevel(TEP_LOG_NONE);
  d->top =
      tracecmd_open(ctx->path, TRACECMD_FL_LOAD_NO_PLUGINS | TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
  int err = 0;
  if (!d->top)
    err = bh__foreign_fail(&d->base, BH_EFORMAT, "not a trace.dat that libtracecmd can read");
  if (!err) {
    d->tep = tracecmd_get_tep(d->top);
    err = find_kinds(d);
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
