/*
 * Trace module internals: the decompressing byte source, the line parsers and the shared
 * helpers of reader.c and writer.c.  Nothing here is exported (prefix bh__).
 */
#ifndef BH_TRACE_INTERNAL_H
#define BH_TRACE_INTERNAL_H

#include <buddyhint/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>

#include <zlib.h>
#include <zstd.h>

/* the native binary records read in place (the replay's fast path), and the branch hints */
#include "trace/records.h"

/* the byte source (a file, decompressed on the fly) and the messages of every trace error */
#include "common/bytesrc.h"

/* 256 KiB: four of the longest lines, and small enough that a refill leaves most of a
 * core's L2 to the replay (1 MiB cost a binary replay 4 % of its speed) */
#define BH__TRACE_BUF_SIZE (1u << 18)
/* How much text the format detection looks at before giving up. */
#define BH__TRACE_SNIFF_BYTES (64u << 10)

/* Native binary layout (see reader.c). */
#define BH__TRACE_BIN_MAGIC "BHTRACE1"
#define BH__TRACE_BIN_HEADER 16
#define BH__TRACE_BIN_VERSION 1
/* Version 2: a machine description after the header (u64 length, then its text), and records
 * of op BH__EV_LOST (events the recorder lost; pfn holds how many). */
#define BH__TRACE_BIN_VERSION2 2
#define BH__TRACE_BIN_HEADER2 24
/* Version 3: version 2 and records of the pcp events (ops BH_EV_PCPU_DRAIN and
 * BH_EV_ALLOC_ZONE_LOCKED, the latter's percpu_refill in flag bit 1) and of the fallbacks
 * (op BH_EV_EXTFRAG: change_ownership in flag bit 2, fallback_order and fallback_migratetype
 * in the bytes 30 and 31 that other records keep zero). */
#define BH__TRACE_BIN_VERSION3 3
#define BH__TRACE_BIN_REFILL 0x02u
#define BH__TRACE_BIN_CLAIM 0x04u
#define BH__TRACE_BIN_BULK 0x08u /* version 3, an allocation's: an alloc_pages_bulk page */
/* The op of a lost-events marker in the version 2 native formats (never returned as an event). */
#define BH__EV_LOST 4
/* The longest machine description a reader accepts. */
#define BH__TRACE_MAX_DESCRIPTION (256u << 20)
/* Native text header line (without version). */
#define BH__TRACE_TEXT_MAGIC "# buddyhint-trace"
#define BH__TRACE_TEXT_VERSION 1
#define BH__TRACE_TEXT_VERSION2 2
/* Version 3: version 2 and the pcp events (ops D and Z, key refill=), the fallbacks (op X,
 * keys fallback_order=, fallback_mt=, claim=). */
#define BH__TRACE_TEXT_VERSION3 3
/* Native text version 2: the machine description's lines follow the header, each after this. */
#define BH__TRACE_TEXT_DESC "#@"

/* ---------------------------------------------------------------------------------------- */
/* Parsing (parse.c, gfp.c)                                                                  */
/* ---------------------------------------------------------------------------------------- */

enum bh__line_kind {
  BH__LINE_OTHER,     /* comment, blank line, another event */
  BH__LINE_EVENT,     /* one of our events, *ev filled */
  BH__LINE_MALFORMED, /* names one of our events (or, native text, any line) but is bad */
  BH__LINE_LOST       /* a lost-events marker: how many in ev->pfn */
};

/* State shared by the line parsers of one reader. */
typedef struct bh__tparse {
  uint64_t gfp_unknown; /* names bh_gfp_parse did not know */
  int version;          /* native text: the header's version (lost markers need 2) */
  bool pcp;             /* return the pcp events (bh_trace_opts_t.pcp_events), else skip them */
  bool vmstat;          /* return the vmstat worker's runs (pcp_events or vmstat_events) */
  uint8_t xf_seen;      /* native text: the fallback keys of the X line being parsed */
  /* one-entry cache of the last gfp_flags text: traces repeat a handful of masks */
  char gfp_text[128];
  size_t gfp_len;
  uint32_t gfp_bits;
  int gfp_unknown_last;
  /* the masks before it, by a hash of their text: real traces interleave a dozen or two */
  struct bh__gfp_memo {
    char text[128]; /* room for the longest masks kernels print (GFP_HIGHUSER_MOVABLE|...: 89) */
    size_t len;     /* 0: empty */
    uint32_t bits;
    int unknown;
  } gfp_memo[256];
  /* the line starts (task, pid, tgid, cpu, flags: everything before the seconds) of the last
   * two lines whose start the fast path read in full, with the digit counts of their
   * timestamps: most lines of a real trace start as one of the two starts seen last */
  struct bh__kprefix {
    char text[64];
    uint8_t len;                   /* bytes before the seconds (0: empty) */
    uint8_t secs, frac;            /* digits of the seconds and of the fraction */
    uint8_t dot, ic;               /* where the '.' and the ':' after the fraction are */
    uint64_t same;                 /* bit i: byte i of a line must equal text[i] */
    uint64_t keep_secs, keep_frac; /* the bytes of those digits in the words ending at them */
    uint64_t secs_word, secs_ns;   /* the last seconds seen after it (as a word) and their ns */
    int32_t pid, cpu;
  } kprefix[2];
  uint8_t kprefix_last; /* the one that matched or was walked last */
  /* one-entry cache of bh_gfp_zone (a call into the allocator) for the same reason */
  uint64_t zone_key; /* gfp + 1 (0: empty) */
  uint8_t zone;
  char why[192];       /* what is wrong with a malformed line */
  uint64_t fast_lines; /* kernel text lines the fast path read (the tests check its reach) */
  uint64_t start_hits; /* lines whose start was the cached one (the tests check it) */
} bh__tparse_t;

/* What the format sniffing learns from a kernel text line. */
typedef struct bh__kline_shape {
  bool event_line; /* the line has the task/pid/cpu/timestamp/event prefix */
  bool perf;       /* it looks like perf script (sys:event, "comm pid") */
} bh__kline_shape_t;

/* ftrace and perf script lines (one parser: the shapes differ only in the prefix).  nul says
 * whether the n bytes at s hold a NUL byte: the reader knows that without a search per line. */
int bh__parse_kernel_line(bh__tparse_t *p, const char *s, size_t n, bool nul, bh_event_t *ev,
                          bh__kline_shape_t *shape);
/*
 * The same on lines not yet cut: s[0, n) is the rest of the reader's window, with no NUL
 * byte.  Lines are read into evs for as long as the fast path takes them and each ends with
 * a '\n' right after its last field (nearly every line of a recorded trace), up to max;
 * returns the bytes they take, their '\n's included, and their number in *got.  Each is read
 * as bh__parse_kernel_line would have read it cut at its first '\n'.  The line it stops at
 * has changed nothing but the order of the two cached starts, and is to be cut and given to
 * bh__parse_kernel_line.  (Cutting each line first, a memchr, was a sixth of the reader's
 * work per event on recorded traces.)
 */
size_t bh__parse_kernel_run(bh__tparse_t *p, const char *s, size_t n, bh_event_t *evs, int max,
                            int *got);
/* Native text lines (nul as above); version 2 also has lost markers, "TIME L COUNT [cpu=N]". */
int bh__parse_native_line(bh__tparse_t *p, const char *s, size_t n, bool nul, bh_event_t *ev);
/*
 * How many events a line of kernel text says were lost: ftrace's "CPU:N [LOST M EVENTS]",
 * trace-cmd's "CPU:N [M EVENTS DROPPED]" (or "[EVENTS DROPPED]" without a count), perf
 * script's "PERF_RECORD_LOST ... lost M" (and PERF_RECORD_LOST_SAMPLES), and the ftrace
 * header "# entries-in-buffer/entries-written: A/B" (B - A).  Returns that number (1 for a
 * marker without a count: at least one was lost), or 0 for any other line.
 */
uint64_t bh__lost_in_line(const char *s, size_t n);
/* gfp_flags text through the parser's cache; returns bh_gfp_parse's result. */
int bh__gfp_parse_cached(bh__tparse_t *p, const char *s, size_t n, uint32_t *gfp);

/* A vmstat worker's run (BH_EV_VMSTAT) has no pfn, order or migratetype: else the event is
 * malformed, in every format. */
static inline bool bh__trace_vmstat_bad(const bh_event_t *ev) {
  return ev->op == BH_EV_VMSTAT && (ev->pfn || ev->order || ev->migratetype >= 0);
}

/* Fills ev->zone from ev->gfp for an alloc (bh_gfp_zone, through the parser's cache), 0
 * otherwise. */
static inline void bh__trace_set_zone(bh__tparse_t *p, bh_event_t *ev) {
  if (ev->op != BH_EV_ALLOC) {
    ev->zone = 0;
    return;
  }
  if (bh__trace_unlikely(p->zone_key != (uint64_t)ev->gfp + 1)) {
    p->zone = (uint8_t)bh_gfp_zone(ev->gfp);
    p->zone_key = (uint64_t)ev->gfp + 1;
  }
  ev->zone = p->zone;
}

/* What is wrong with a record, or NULL: the rules one by one, for the message of a bad record
 * (and to test bh__trace_record_ok against). */
static inline const char *bh__trace_record_problem(const unsigned char *r) {
  bh_event_t ev;
  uint64_t tail;
  memcpy(&tail, r + 24, 8);
  tail = le64toh(tail);
  bh__trace_decode_record(r, &ev);
  if (ev.op < BH_EV_ALLOC || ev.op > BH_EV_FREE_BATCHED)
    return "bad op";
  if (ev.order > BH_TRACE_MAX_ORDER)
    return "order above 63";
  if (tail >> 41) /* the flags above BH__TRACE_BIN_FAILED, reserved */
    return "reserved bits set";
  if (ev.pid < -1 || ev.cpu < -1 || ev.migratetype < -1)
    return "pid, cpu or migratetype below -1";
  if (ev.op != BH_EV_ALLOC && (ev.gfp || ev.failed))
    return "gfp or failed set on a free";
  return NULL;
}

/* Calling thread's message for failures that have no handle to keep them (open, writer). */
char *bh__trace_tls_msg(void);

#endif
