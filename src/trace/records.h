/*
 * Native binary trace records read where they lie in the reader's buffer: the replay's fast
 * path, which decodes them in place and so saves a copy of every event.  Not private, so that
 * the replay may use it without the trace module's internals (trace/trace_internal.h, which
 * includes this header).  The record layout is in reader.c.
 */
#ifndef BH_TRACE_RECORDS_H
#define BH_TRACE_RECORDS_H

#include <buddyhint/trace.h>

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define bh__trace_likely(x) __builtin_expect(!!(x), 1)
#define bh__trace_unlikely(x) __builtin_expect(!!(x), 0)

/* The size of a native binary record, and its flag of a failed allocation. */
#define BH__TRACE_BIN_RECORD 32
#define BH__TRACE_BIN_FAILED 0x01u

/*
 * A native binary record's fields (the layout is in reader.c).  No checks: the callers run
 * bh__trace_record_ok first.  seq and zone are left alone: the replay, which decodes records
 * in place, uses neither.
 */
static inline void bh__trace_decode_record(const unsigned char *r, bh_event_t *ev) {
  uint64_t t64, pfn, tail;
  uint32_t gfp, pid;
  memcpy(&t64, r, 8);
  memcpy(&pfn, r + 8, 8);
  memcpy(&gfp, r + 16, 4);
  memcpy(&pid, r + 20, 4);
  memcpy(&tail, r + 24, 8);
  tail = le64toh(tail);
  ev->time_ns = le64toh(t64);
  ev->pfn = le64toh(pfn);
  ev->gfp = le32toh(gfp);
  ev->pid = (int32_t)le32toh(pid);
  ev->cpu = (int16_t)(uint16_t)tail;
  ev->op = (uint8_t)(tail >> 16);
  ev->order = (uint8_t)(tail >> 24);
  ev->migratetype = (int8_t)(uint8_t)(tail >> 32);
  ev->failed = (uint8_t)(tail >> 40) & BH__TRACE_BIN_FAILED;
  ev->percpu_refill = 0;  /* a pcp event's (version 3) is read by the reader's slow path */
  ev->fallback_order = 0; /* and a fallback's */
  ev->fallback_migratetype = 0;
  ev->change_ownership = 0;
  ev->bulk = 0; /* a bulk page's (version 3) is read by the reader's slow path */
}

/*
 * Whether a native binary record holds a valid event: the format's rules (see
 * bh__trace_record_problem) for every record read, each a compare and a branch that goes the
 * same way for every valid record.
 */
static inline bool bh__trace_record_ok(const unsigned char *r) {
  uint64_t tail;
  uint32_t gfp, pid;
  memcpy(&gfp, r + 16, 4);
  memcpy(&pid, r + 20, 4);
  memcpy(&tail, r + 24, 8);
  tail = le64toh(tail);
  /* reserved flags (bits 41..63), order above 63 (bits 30..31), op above 3 (bits 18..23) */
  if (bh__trace_unlikely(tail & 0xfffffe00c0fc0000ull))
    return false;
  unsigned op = (uint8_t)(tail >> 16);
  if (bh__trace_unlikely(op == 0))
    return false;
  /* pid, cpu or migratetype below -1: one more than it, as unsigned, beyond the sign bit */
  if (bh__trace_unlikely(le32toh(pid) + 1 > 0x80000000u))
    return false;
  if (bh__trace_unlikely((uint16_t)(tail + 1) > 0x8000u))
    return false;
  if (bh__trace_unlikely((uint8_t)((tail >> 32) + 1) > 0x80u))
    return false;
  /* a free with gfp flags or the failed flag */
  if (op != BH_EV_ALLOC && (gfp || ((tail >> 40) & BH__TRACE_BIN_FAILED)))
    return false;
  return true;
}

/*
 * Reading native binary records where they lie in the reader's buffer, which saves the
 * replay a copy of every event.  bh__trace_peek_records gives the records that sit whole in
 * t's buffer from the current position on, up to max of them, neither checked nor counted:
 * *recs points at the first, each BH__TRACE_BIN_RECORD bytes.  It returns how many, 0 when
 * the next record needs a buffer refill or t is not native binary (bh_trace_next_batch reads
 * those).  The caller checks each with bh__trace_record_ok, decodes it with
 * bh__trace_decode_record, and then tells bh__trace_take_records how many it used (the first
 * n, all valid): they count as read.  A bad record is left for bh_trace_next_batch, which
 * reports or skips it.
 */
int bh__trace_peek_records(bh_trace_t *t, const unsigned char **recs, int max);
void bh__trace_take_records(bh_trace_t *t, int n);

#endif
