/*
 * libbuddyhint: page allocator traces.
 *
 * A trace is a sequence of page allocator events (allocations, frees, batched frees) as the
 * kernel's kmem tracepoints record them (mm_page_alloc, mm_page_free, mm_page_free_batched).
 * The reader accepts four formats and finds out which one a file is by its content, never by
 * its name:
 *
 *   "ftrace"         the text of /sys/kernel/tracing/trace or trace_pipe
 *   "perf-script"    the text `perf script` prints for the kmem: tracepoints
 *   "native-text"    buddyhint's own line format, easy to write by hand or from a script
 *   "native-binary"  buddyhint's own fixed-size records, for fast replay
 *   "trace-dat"      trace-cmd's trace.dat, read with libtracecmd where the library was built
 *                    with it (the tracepoint formats stored in the file decode its fields)
 *   "perf-data"      perf's perf.data, read through `perf script`, which must be installed
 *
 * Any of them may be compressed with gzip or zstd (recognised by the magic bytes).  The native
 * formats are described in traces/FORMAT.md and at the top of src/trace/reader.c.  The writer
 * produces the native formats, so that a kernel trace can be converted once and replayed fast.
 *
 * Every call that can fail returns a negative BH_E* code; the reader also keeps a message
 * "FILE:LINE: what is wrong" (bh_trace_error) for the last problem it met.
 */
#ifndef BUDDYHINT_TRACE_H
#define BUDDYHINT_TRACE_H

#include <buddyhint.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Events                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum bh_ev_op {
  BH_EV_ALLOC = 1,        /* mm_page_alloc */
  BH_EV_FREE = 2,         /* mm_page_free */
  BH_EV_FREE_BATCHED = 3, /* mm_page_free_batched */
  /* 4 is the native formats' lost-events marker, never an event */
  /* The pcp events, returned only when asked for (bh_trace_opts_t.pcp_events): */
  BH_EV_PCPU_DRAIN = 5, /* mm_page_pcpu_drain: a block goes from a pcp list to the buddy
                         * lists (free_pcppages_bulk) */
  BH_EV_ALLOC_ZONE_LOCKED =
      6,             /* mm_page_alloc_zone_locked: a block taken from the buddy lists
                      * (__rmqueue_smallest); percpu_refill says it may go to a pcp list */
  BH_EV_EXTFRAG = 7, /* mm_page_alloc_extfrag: a block taken from another migratetype's free lists
                      * (__rmqueue_claim, __rmqueue_steal); returned with the pcp events */
  BH_EV_VMSTAT = 8   /* workqueue_execute_start of vmstat_update: the vmstat worker ran on the
                      * event's CPU (its pcp decay, decay_pcp_high); pfn and order 0; returned
                      * with the pcp events */
};

/* Orders above this are malformed in every format (the replay decides what an arena takes). */
#define BH_TRACE_MAX_ORDER 63
/* Text lines longer than this (bytes, without the newline) are malformed. */
#define BH_TRACE_MAX_LINE 65536

typedef struct bh_event {
  uint64_t time_ns;   /* trace timestamp in ns */
  uint64_t seq;       /* 0-based sequence number of the event in the file */
  uint64_t pfn;       /* page frame number as recorded */
  uint32_t gfp;       /* BH_GFP_* flags parsed from gfp_flags (alloc only, else 0) */
  int32_t pid;        /* -1 unknown */
  int32_t cpu;        /* -1 unknown */
  uint8_t op;         /* enum bh_ev_op */
  uint8_t order;      /* 0..BH_TRACE_MAX_ORDER */
  int8_t migratetype; /* as recorded, -1 unknown */
  uint8_t zone;       /* enum bh_zone_type, bh_gfp_zone(gfp) for allocs; 0 for frees */
  uint8_t failed;     /* 1 for an alloc the kernel failed (page=(null), pfn 0) */
  /* BH_EV_ALLOC_ZONE_LOCKED only: the event's percpu_refill (1: an order and migratetype the
   * pcp lists take, pcp_allowed_order(order) && mt < MIGRATE_PCPTYPES); else 0 */
  uint8_t percpu_refill;
  /* who made the event, when the trace was opened with bh_trace_opts_t.origins: an id for
   * bh_trace_origin() (process, call site); 0 = unknown or not asked for */
  uint32_t origin;
  /* BH_EV_EXTFRAG only, else 0 (order is its alloc_order, migratetype its alloc_migratetype):
   * the order of the foreign free block the allocation took (fallback_order), that block's
   * list's migratetype (fallback_migratetype), and change_ownership (1: the pageblock is the
   * allocation's migratetype afterwards, a claim; 0: a steal, the pageblock keeps its type) */
  uint8_t fallback_order;
  int8_t fallback_migratetype;
  uint8_t change_ownership;
  /* BH_EV_ALLOC only, else 0: 1 for a page alloc_pages_bulk took (a recording's bulk probe;
   * the kernel traces no mm_page_alloc for it): it came off a pcp list without
   * rmqueue_pcplist, whose free_count halving it does not do */
  uint8_t bulk;
} bh_event_t;

/* ---------------------------------------------------------------------------------------- */
/* GFP flag names                                                                            */
/* ---------------------------------------------------------------------------------------- */

/*
 * Parses the kernel's show_gfp_flags() text (len bytes at s, not necessarily NUL-terminated),
 * e.g. "GFP_HIGHUSER_MOVABLE|__GFP_ZERO", into BH_GFP_* bits stored in *gfp.  Composite names
 * (GFP_KERNEL, GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, ...) and single flags (__GFP_DMA32, ...) are
 * known; "none" is 0; a "0x..." part is decoded with Linux 6.12's x86-64 bit values.  Names
 * that do not map to a BH_GFP_* bit (__GFP_COMP, __GFP_NOWARN, ...) give 0.  Composites that
 * lack __GFP_DIRECT_RECLAIM or __GFP_KSWAPD_RECLAIM (GFP_NOWAIT, GFP_ATOMIC,
 * GFP_TRANSHUGE_LIGHT, GFP_TRANSHUGE) set BH_GFP_ATOMIC or BH_GFP_NO_KSWAPD, and the names
 * __GFP_RECLAIM, __GFP_DIRECT_RECLAIM and __GFP_KSWAPD_RECLAIM clear them again.
 * Returns the number of names that were not recognised at all (they are ignored, >= 0),
 * BH_EFORMAT for an empty string or an empty name ("A||B"), BH_EINVAL for NULL arguments.
 */
BH_API int bh_gfp_parse(const char *s, size_t len, uint32_t *gfp);

/*
 * Writes gfp as names that bh_gfp_parse() reads back to the same bits, e.g.
 * "__GFP_HIGHMEM|__GFP_MOVABLE", or "none" for 0, NUL-terminated into buf (size bytes).
 * Returns the length of the text (without the NUL), BH_ENOSPC if it does not fit, BH_EINVAL
 * if gfp has a bit without a name (all but BH_GFP_NOFALLBACK_WMARK have one).
 */
BH_API int bh_gfp_format(uint32_t gfp, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------- */
/* Reader                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum bh_trace_format {
  BH_TRACE_FTRACE = 1,
  BH_TRACE_PERF_SCRIPT = 2,
  BH_TRACE_NATIVE_TEXT = 3,
  BH_TRACE_NATIVE_BINARY = 4,
  BH_TRACE_TRACE_DAT = 5, /* trace-cmd's trace.dat */
  BH_TRACE_PERF_DATA = 6  /* perf's perf.data */
};

enum bh_trace_compression {
  BH_TRACE_COMP_NONE = 0,
  BH_TRACE_COMP_GZIP = 1,
  BH_TRACE_COMP_ZSTD = 2
};

/* Reader options; a zero-initialised struct (or NULL) gives the defaults. */
typedef struct bh_trace_opts {
  bool lenient; /* skip and count malformed lines/records instead of failing (default false) */
  /* fill bh_event_t.origin: which process (pid, comm) and, where the trace has call chains
   * (perf record -g), which call site made each event (default false: origin stays 0) */
  bool origins;
  /* return the pcp events (BH_EV_PCPU_DRAIN, BH_EV_ALLOC_ZONE_LOCKED) and the fallbacks
   * (BH_EV_EXTFRAG) of kernel text and of version 3 native traces (default false:
   * they are skipped as lines of other events) */
  bool pcp_events;
  /* NULL, or called with every byte the reader reads from the file, in the file's order and
   * before any decompression, as it reads them (to hash a trace while it is read: a reader
   * that reads to the end has then passed every byte of the file once).  A trace.dat or
   * perf.data that is not compressed is read by its own library, not passed. */
  void (*raw_bytes)(void *ctx, const void *buf, size_t n);
  void *raw_ctx;
  /* return the vmstat worker's runs (BH_EV_VMSTAT) even without pcp_events (default false:
   * with pcp_events only) */
  bool vmstat_events;
} bh_trace_opts_t;

/* What the reader has seen so far. */
typedef struct bh_trace_counts {
  uint64_t lines;       /* text lines read (binary: records read) */
  uint64_t events;      /* events returned */
  uint64_t other_lines; /* comments, blank lines, lines of other events: ignored */
  uint64_t malformed;   /* malformed lines/records skipped (lenient mode) */
  uint64_t allocs;      /* events with op BH_EV_ALLOC (failed ones included) */
  uint64_t frees;       /* events with op BH_EV_FREE or BH_EV_FREE_BATCHED */
  uint64_t gfp_unknown; /* gfp flag names that were not recognised (ignored) */
  /* events the recording lost, as the trace says: ftrace "[LOST N EVENTS]" lines and its
   * header's entries-written above entries-in-buffer, trace-cmd "[N EVENTS DROPPED]", perf
   * script PERF_RECORD_LOST lines, the native formats' lost-events markers (a marker without
   * a count counts 1) */
  uint64_t lost_events;
} bh_trace_counts_t;

typedef struct bh_trace bh_trace_t;

/*
 * Opens the trace at path ("-" = standard input), decompresses it if it starts with the gzip
 * or zstd magic and recognises the format from the first lines/bytes.  opts may be NULL.
 * Returns 0 and sets *out; or BH_EINVAL (NULL argument), BH_ENOMEM, BH_ESYS (the file could
 * not be opened, errno is kept), BH_EIO (read or decompression error), BH_EFORMAT (empty file,
 * unknown format, bad header).  On failure *out is set to NULL and bh_trace_error(NULL) tells
 * why ("FILE: empty trace").
 */
BH_API int bh_trace_open(const char *path, const bh_trace_opts_t *opts, bh_trace_t **out);

/*
 * Reads the next event into *ev.  Returns 1 for an event, 0 at the end of the trace, or
 * BH_EFORMAT (a malformed line or record, unless lenient), BH_EIO (read error, corrupt or
 * truncated compressed data, even in lenient mode), BH_ENOMEM (the decompressor's memory could
 * not be allocated).  Errors are final: later calls return the same code.  bh_trace_error()
 * tells what went wrong.
 */
BH_API int bh_trace_next(bh_trace_t *t, bh_event_t *ev);

/*
 * Reads up to max events into evs[] (the same events bh_trace_next would return one by one,
 * much cheaper per event for the binary format).  Returns the number read (>= 1), 0 at the
 * end, or a negative error as bh_trace_next; events read before an error are returned first
 * and the error on the next call.  BH_EINVAL for a NULL argument or max < 1.
 */
BH_API int bh_trace_next_batch(bh_trace_t *t, bh_event_t *evs, int max);

/*
 * The last error message of t, "FILE:LINE: what is wrong" for text ("FILE: record N: ..." for
 * binary, N counted from 0; "FILE: ..." for problems of the whole file); in lenient mode the
 * last skipped line's.  "" if there was none.  With t == NULL, the message of the calling
 * thread's last failed bh_trace_open() or writer call.  Valid until the next call on t.
 */
BH_API const char *bh_trace_error(const bh_trace_t *t);

/* The detected format: enum bh_trace_format, and its name ("ftrace", "perf-script",
 * "native-text", "native-binary", "trace-dat", "perf-data"). */
BH_API int bh_trace_format(const bh_trace_t *t);
BH_API const char *bh_trace_format_name(const bh_trace_t *t);
/* The version of a native format's header (1 or 2); 0 for ftrace and perf script text. */
BH_API int bh_trace_version(const bh_trace_t *t);
/* The detected compression: "none", "gzip" or "zstd". */
BH_API const char *bh_trace_compression(const bh_trace_t *t);
/* Copies the counters (see bh_trace_counts_t) into *out. */
BH_API void bh_trace_counts(const bh_trace_t *t, bh_trace_counts_t *out);
/*
 * The machine description a version 2 native trace carries in its header (the text described
 * in include/buddyhint/machine.h, NUL-terminated; its length in *len if len is not NULL), or
 * NULL if the trace has none.  Valid until bh_trace_close.
 */
BH_API const char *bh_trace_description(const bh_trace_t *t, size_t *len);

/*
 * The command a trace is read through, for formats that need one ("perf script -i FILE ..." for
 * perf-data), so that a program can say what it ran; NULL for the others.
 */
BH_API const char *bh_trace_command(const bh_trace_t *t);

/* Who made an event (bh_event_t.origin).  The strings live as long as the trace. */
typedef struct bh_trace_origin {
  int32_t pid;          /* -1 unknown */
  const char *comm;     /* the task's name, "" if the trace has none (native formats) */
  const char *callsite; /* the first function of the call chain outside the page allocator
                         * and the tracing code, "" without a call chain */
} bh_trace_origin_t;

/*
 * Fills *out for origin id (an event's bh_event_t.origin).  Returns 0; BH_EINVAL for a NULL
 * argument, BH_ENOENT for an id the trace has not given out (0 among them).
 */
BH_API int bh_trace_origin(const bh_trace_t *t, uint32_t id, bh_trace_origin_t *out);

/* Closes the trace and frees it; NULL is accepted. */
BH_API void bh_trace_close(bh_trace_t *t);

/* ---------------------------------------------------------------------------------------- */
/* Writer                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct bh_trace_writer bh_trace_writer_t;

/*
 * Opens path ("-" = standard output) for writing events in format BH_TRACE_NATIVE_TEXT or
 * BH_TRACE_NATIVE_BINARY, compressed with compression (enum bh_trace_compression).  A regular
 * file is written to a temporary file in the same directory (".NAME.XXXXXX") that a
 * successful bh_trace_writer_close() renames to path: until then a file already at path is
 * untouched, and a failed, aborted or killed writer never leaves a short trace there (a
 * replaced file keeps its permissions; a symbolic link keeps pointing at the new file).  A
 * device, FIFO or socket is written in place, without truncation, and never removed.
 * Returns 0 and sets *out; or BH_EINVAL (bad format or compression, a directory, a dangling
 * symbolic link), BH_ENOMEM, BH_ESYS (the file could not be created, errno kept); the message
 * is in bh_trace_error(NULL).
 */
BH_API int bh_trace_writer_open(const char *path, int format, int compression,
                                bh_trace_writer_t **out);

/*
 * A writer on a file descriptor the caller opened and keeps: closing the writer flushes and
 * finishes the stream but does not close fd.  name is used in messages (NULL: "<fd N>").
 * Returns as bh_trace_writer_open (BH_EINVAL for fd < 0).
 */
BH_API int bh_trace_writer_fdopen(int fd, const char *name, int format, int compression,
                                  bh_trace_writer_t **out);

/*
 * Like bh_trace_writer_open, but for the version 2 native formats: description (the text of a
 * machine description, see include/buddyhint/machine.h; NULL: none) is stored in the header,
 * and lost-events markers (bh_trace_write_lost) may follow.  bh_trace_writer_open writes
 * version 1, which has neither and which older readers read too.  Returns as
 * bh_trace_writer_open; BH_EINVAL also for a description above 256 MiB.
 */
BH_API int bh_trace_writer_open2(const char *path, int format, int compression,
                                 const char *description, bh_trace_writer_t **out);
/* bh_trace_writer_open2 on a file descriptor the caller keeps, as bh_trace_writer_fdopen. */
BH_API int bh_trace_writer_fdopen2(int fd, const char *name, int format, int compression,
                                   const char *description, bh_trace_writer_t **out);

/*
 * Sets the machine description a version 2 writer stores in its header, replacing the one
 * given at open; only before the first event or marker (the header is written with the
 * first).  Returns 0, BH_EINVAL (a version 1 writer, too late, above 256 MiB), BH_ENOMEM.
 */
BH_API int bh_trace_writer_set_description(bh_trace_writer_t *w, const char *description);

/*
 * Lets a version 2 writer write the pcp events (BH_EV_PCPU_DRAIN, BH_EV_ALLOC_ZONE_LOCKED,
 * BH_EV_EXTFRAG): its
 * header then says version 3, which readers before version 3 refuse rather than misread.  Only
 * before the first event or marker.  Returns 0, or BH_EINVAL (NULL, a version 1 writer, too
 * late).
 */
BH_API int bh_trace_writer_pcp_events(bh_trace_writer_t *w);

/*
 * Appends a marker: n (>= 1) events were lost at time_ns on cpu (-1: unknown).  Readers count
 * it in bh_trace_counts_t.lost_events; it is never returned as an event.  Returns 0, BH_EINVAL
 * (a version 1 writer, n 0, a bad cpu), or BH_EIO as bh_trace_write.
 */
BH_API int bh_trace_write_lost(bh_trace_writer_t *w, uint64_t time_ns, uint64_t n, int cpu);

/*
 * Appends one event (seq and zone are not stored: the reader derives them).  Returns 0;
 * BH_EINVAL for an event that the format cannot hold (op not in enum bh_ev_op, order above
 * BH_TRACE_MAX_ORDER, pid/cpu/migratetype below -1, cpu above 32767 in binary, in text a gfp
 * bit without a kernel name, failed on a free); BH_EIO if writing or compressing failed.
 * Output is buffered; errors may surface only at a later call or at close.
 */
BH_API int bh_trace_write(bh_trace_writer_t *w, const bh_event_t *ev);

/*
 * Flushes, finishes the compressed stream, closes the file (renaming it into place, see
 * bh_trace_writer_open) and frees w (NULL is accepted and returns 0).  Returns 0, or BH_EIO if
 * any write since open failed, or the close or rename did ("FILE: write failed: <reason>" in
 * bh_trace_error(NULL)); a regular file is then left as it was before the writer was opened.
 * A writer on a descriptor (bh_trace_writer_fdopen) may have written part of the stream.
 */
BH_API int bh_trace_writer_close(bh_trace_writer_t *w);

/* Gives the output up and frees w (NULL is accepted): a regular file's temporary file is
 * removed and the path is left as it was; nothing else is removed. */
BH_API void bh_trace_writer_abort(bh_trace_writer_t *w);

#ifdef __cplusplus
}
#endif

#endif
