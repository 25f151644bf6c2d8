/*
 * The ring buffers of buddyhint live, read as they fill (cmd_live.c says why this way): every
 * 100 ms each cpu's trace_pipe_raw is read, whole or partly filled sub-buffers, non-blocking,
 * until an event later than the turn's watermark; the events are decoded with the kernel's own
 * formats (kmem_decode.c) and kept per cpu, in that cpu's time order, until a merge hands out
 * those before the watermark.
 */
#include "cli/live/live_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if BH_HAVE_TRACEFS

void bh_cli_live_reader_free(bh_cli_live_reader_t *rd) {
  for (int i = 0; i < rd->ncpus; i++) {
    tracefs_cpu_close(rd->cpus[i].tcpu);
    kbuffer_free(rd->cpus[i].kbuf);
    free(rd->cpus[i].ev);
  }
  free(rd->cpus);
  free(rd->buf);
  free(rd->ready);
  memset(rd, 0, sizeof(*rd));
}

/* Every cpu's trace_pipe_raw, opened non-blocking; 0 or -1 after a message. */
int bh_cli_live_reader_open(const bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd) {
  memset(rd, 0, sizeof(*rd));
  long n = sysconf(_SC_NPROCESSORS_CONF);
  rd->cpus = calloc(n > 0 ? (size_t)n : 1, sizeof(*rd->cpus));
  int e = rd->cpus ? 0 : ENOMEM;
  for (int cpu = 0; !e && cpu < n; cpu++) {
    struct tracefs_cpu *t = tracefs_cpu_open(tr->inst, cpu, true);
    if (!t)
      continue; /* a possible cpu that is not there */
    bh_cli_live_cpu_t *c = &rd->cpus[rd->ncpus++];
    *c = (bh_cli_live_cpu_t){.tcpu = t, .cpu = cpu, .kbuf = tep_kbuffer(tr->tep)};
    if (!c->kbuf)
      e = ENOMEM;
    if (tracefs_cpu_read_size(t) > rd->subbuf)
      rd->subbuf = tracefs_cpu_read_size(t);
  }
  if (!e && (!rd->ncpus || rd->subbuf <= 0))
    e = ENOENT;
  if (!e && !(rd->buf = malloc((size_t)rd->subbuf)))
    e = ENOMEM;
  if (!e)
    return 0;
  fprintf(stderr,
          "buddyhint live: cannot read the ring buffers of %s (per_cpu/*/trace_pipe_raw): %s\n",
          tr->dir, strerror(e));
  bh_cli_live_reader_free(rd);
  return -1;
}

/* Room for one more event in *v (n used of *cap); false (rd->err) out of memory. */
static bool room(bh_cli_live_reader_t *rd, bh_event_t **v, size_t n, size_t *cap) {
  if (n < *cap)
    return true;
  size_t c = *cap ? *cap * 2 : 65536;
  bh_event_t *p = realloc(*v, c * sizeof(*p));
  if (!p) {
    rd->err = ENOMEM;
    return false;
  }
  *v = p;
  *cap = c;
  return true;
}

/* Decodes the sub-buffer in rd->buf of cpu c onto c's pending events. */
static void decode_subbuf(const bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd,
                          bh_cli_live_cpu_t *c) {
  if (kbuffer_load_subbuffer(c->kbuf, rd->buf))
    return;
  int missed = kbuffer_missed_events(c->kbuf);
  if (missed)
    c->missed += missed > 0 ? (uint64_t)missed : 1;
  unsigned long long ts;
  for (void *data = kbuffer_read_event(c->kbuf, &ts); data && !rd->err;
       data = kbuffer_next_event(c->kbuf, &ts)) {
    struct tep_record rec = {
        .ts = ts, .cpu = c->cpu, .data = data, .size = kbuffer_event_size(c->kbuf)};
    bh_event_t ev;
    const char *why;
    int got = bh__kmem_decode(tr->dec, &rec, &ev, &rd->gfp_unknown, &why);
    if (got < 0)
      rd->malformed++;
    else if (got > 0 && rd->lo && ev.time_ns <= rd->lo)
      rd->cut++; /* before the free map was read: it holds this */
    else if (got > 0 && room(rd, &c->ev, c->n, &c->cap))
      c->ev[c->n++] = ev;
  }
}

/*
 * Reads every cpu's ring buffer up to watermark (flush: after tracing is off, all of it):
 * sub-buffers until one holds a later event, or there is none.  A cpu's events are in time
 * order, so that is all of its events before the watermark.
 */
void bh_cli_live_reader_pull(const bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd, bool flush,
                             uint64_t watermark) {
  for (int i = 0; i < rd->ncpus; i++) {
    bh_cli_live_cpu_t *c = &rd->cpus[i];
    if (c->head && c->head == c->n)
      c->head = c->n = 0;
    else if (c->head > c->cap / 2) { /* keep the pending ones at the front */
      memmove(c->ev, c->ev + c->head, (c->n - c->head) * sizeof(*c->ev));
      c->n -= c->head;
      c->head = 0;
    }
    while (!rd->err) {
      if (!flush && c->n > c->head && c->ev[c->n - 1].time_ns > watermark)
        break; /* the rest comes at the next turn */
      int n =
          flush ? tracefs_cpu_flush(c->tcpu, rd->buf) : tracefs_cpu_read(c->tcpu, rd->buf, true);
      if (n <= 0)
        break;
      if (n < rd->subbuf)
        memset((char *)rd->buf + n, 0, (size_t)(rd->subbuf - n));
      decode_subbuf(tr, rd, c);
    }
  }
}

/* Merges the cpus' pending events at or before watermark into rd->ready, in time order (each
 * cpu's are in order already); how many. */
size_t bh_cli_live_reader_ready(bh_cli_live_reader_t *rd, uint64_t watermark) {
  rd->nready = 0;
  for (;;) {
    bh_cli_live_cpu_t *best = NULL;
    for (int i = 0; i < rd->ncpus; i++) {
      bh_cli_live_cpu_t *c = &rd->cpus[i];
      if (c->head < c->n && c->ev[c->head].time_ns <= watermark &&
          (!best || c->ev[c->head].time_ns < best->ev[best->head].time_ns))
        best = c;
    }
    if (!best || !room(rd, &rd->ready, rd->nready, &rd->cap))
      return rd->nready;
    rd->ready[rd->nready++] = best->ev[best->head++];
  }
}

/* The events the ring buffers lost so far: the sub-buffers' marks, or the cpus' counters
 * where they say more.  With w, a lost-events marker per cpu that lost any, at time_ns. */
uint64_t bh_cli_live_reader_dropped(const bh_cli_tracer_t *tr, const bh_cli_live_reader_t *rd,
                                    bh_trace_writer_t *w, uint64_t time_ns, int *werr) {
  uint64_t total = 0;
  for (int i = 0; i < rd->ncpus; i++) {
    unsigned long long overrun = 0, dropped = 0;
    bh_cli_tracer_cpu_lost(tr, rd->cpus[i].cpu, &overrun, &dropped);
    uint64_t lost = overrun + dropped;
    if (lost < rd->cpus[i].missed)
      lost = rd->cpus[i].missed;
    if (w && lost && !*werr)
      *werr = bh_trace_write_lost(w, time_ns, lost, rd->cpus[i].cpu);
    total += lost;
  }
  return total;
}

#endif
