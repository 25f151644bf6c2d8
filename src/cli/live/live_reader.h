/* buddyhint live's side of the ring buffers (live_reader.c): every cpu's trace_pipe_raw read
 * as it fills, decoded, and merged in time order up to a watermark. */
#ifndef BH_CLI_LIVE_READER_H
#define BH_CLI_LIVE_READER_H

#include "cli/record/record_tracer.h"

#include <buddyhint/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if BH_HAVE_TRACEFS

/* One cpu's ring buffer, and its events decoded and not yet played (in its own time order). */
typedef struct bh_cli_live_cpu {
  struct tracefs_cpu *tcpu;
  struct kbuffer *kbuf;
  int cpu;
  uint64_t missed; /* events a sub-buffer said the kernel lost before it */
  bh_event_t *ev;
  size_t head, n, cap; /* ev[head, n) are pending */
} bh_cli_live_cpu_t;

typedef struct bh_cli_live_reader {
  bh_cli_live_cpu_t *cpus;
  int ncpus;
  int subbuf;
  void *buf;
  bh_event_t *ready; /* the events of every cpu up to a watermark, merged in time order */
  size_t nready, cap;
  uint64_t lo;        /* events at or before lo are in the start snapshot's free map */
  uint64_t cut;       /* events left out for that */
  uint64_t after;     /* events after the end's moment, left out */
  uint64_t malformed; /* records that could not be decoded */
  uint64_t gfp_unknown;
  int err; /* ENOMEM */
} bh_cli_live_reader_t;

/* Every cpu's trace_pipe_raw of tr's instance, opened non-blocking; 0 or -1 after a message. */
int bh_cli_live_reader_open(const bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd);
void bh_cli_live_reader_free(bh_cli_live_reader_t *rd);
/* Reads every cpu's ring buffer up to watermark (flush: after tracing is off, all of it). */
void bh_cli_live_reader_pull(const bh_cli_tracer_t *tr, bh_cli_live_reader_t *rd, bool flush,
                             uint64_t watermark);
/* Merges the cpus' pending events at or before watermark into rd->ready in time order; how
 * many (rd->err set if out of memory). */
size_t bh_cli_live_reader_ready(bh_cli_live_reader_t *rd, uint64_t watermark);
/* The events the ring buffers lost so far; with w, a lost-events marker per cpu at time_ns. */
uint64_t bh_cli_live_reader_dropped(const bh_cli_tracer_t *tr, const bh_cli_live_reader_t *rd,
                                    bh_trace_writer_t *w, uint64_t time_ns, int *werr);

#endif
#endif
