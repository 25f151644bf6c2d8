/*
 * Readers of other tools' binary files (trace-cmd's trace.dat, perf's perf.data) and the table
 * of event origins (who made an event: pid, comm, call site).  reader.c recognises the files
 * by their magic and hands them to these readers, which fill the same bh_event_t and counters
 * as the text and native readers do.  Nothing here is exported (prefix bh__).
 */
#ifndef BH_TRACE_FOREIGN_H
#define BH_TRACE_FOREIGN_H

#include <buddyhint/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------- */
/* Origins (origin.c)                                                                        */
/* ---------------------------------------------------------------------------------------- */

/*
 * An interning table of (pid, comm, callsite) triples: the same triple always gets the same id
 * (1, 2, ...), so that two passes over a trace through one table agree on the ids.
 */
typedef struct bh__origins bh__origins_t;

bh__origins_t *bh__origins_new(void);
void bh__origins_free(bh__origins_t *o);
/* The id of the triple (comm and callsite: len bytes, not NUL-terminated; NULL = ""), added
 * if new.  Returns 0 when out of memory (the event's origin is then unknown). */
uint32_t bh__origin_intern(bh__origins_t *o, int32_t pid, const char *comm, size_t comm_len,
                           const char *callsite, size_t site_len);
/* Fills *out for id; BH_ENOENT if there is no such id. */
int bh__origin_get(const bh__origins_t *o, uint32_t id, bh_trace_origin_t *out);
/* How many ids have been given out (the largest id). */
uint32_t bh__origins_count(const bh__origins_t *o);

/*
 * The task name of an ftrace or perf script event line (perf says which prefix the line has):
 * *name points into s, *len bytes.
 */
void bh__kline_task(const char *s, size_t n, bool perf, const char **name, size_t *len);
/* The origin of such a line (its task name and ev->pid), interned into o. */
uint32_t bh__origin_of_kernel_line(bh__origins_t *o, const char *s, size_t n, bool perf,
                                   const bh_event_t *ev);

/*
 * Whether a function of a call chain belongs to the page allocator or to the tracing code
 * (__alloc_pages, get_page_from_freelist, free_unref_page, __traceiter_*, ...): the call
 * site of an event is the first frame that does not.
 */
bool bh__callsite_skip(const char *fn, size_t len);

/*
 * Makes t intern its events' origins into o (which t does not own) instead of a table of its
 * own: the replay keeps one table over both passes of a trace.  Turns origins on.
 */
void bh__trace_use_origins(bh_trace_t *t, bh__origins_t *o);

/* ---------------------------------------------------------------------------------------- */
/* Readers of other tools' files (tracedat.c, perfdata.c)                                    */
/* ---------------------------------------------------------------------------------------- */

/* What a foreign reader needs of the bh_trace_t that owns it. */
typedef struct bh__foreign_ctx {
  const char *path; /* as given to bh_trace_open */
  const char *name; /* for messages */
  bool lenient;
  bh__origins_t *origins;    /* NULL: origins not asked for */
  bh_trace_counts_t *counts; /* the reader's counters, which the foreign reader moves */
  char *msg;                 /* BH__TRACE_MSG_SIZE bytes for messages */
} bh__foreign_ctx_t;

/* A foreign reader: tracedat.c and perfdata.c embed this at the start of their state. */
typedef struct bh__foreign bh__foreign_t;
struct bh__foreign {
  bh__foreign_ctx_t ctx;
  int (*next)(bh__foreign_t *f, bh_event_t *ev);
  void (*close)(bh__foreign_t *f);
  const char *command; /* what the file is read through, or NULL */
};

/* Writes "NAME: " and the message to f->ctx.msg; returns err. */
int bh__foreign_fail(bh__foreign_t *f, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The magic numbers: trace.dat starts with 17 08 44 "tracing", perf.data with "PERFILE2". */
bool bh__tracedat_magic(const unsigned char *p, size_t n);
bool bh__perfdata_magic(const unsigned char *p, size_t n);

/*
 * Opens the file ctx->path.  Return 0 and set *out, or a BH_E* code with the message in
 * ctx->msg: BH_ENOTSUP when the reader is not available (a library built without libtracecmd,
 * no perf command), BH_EFORMAT for a file that cannot be read, BH_ENOMEM.  ctx is copied.
 */
int bh__tracedat_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out);
int bh__perfdata_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out);
/*
 * perf script text read by the perf.data reader's line loop, which also reads the call chain
 * after each event (perf script -F ...,ip,sym or the default fields of `perf record -g`): the
 * reader.c text path when origins are asked for and the trace is a file.  Opens ctx->path
 * again (compressed or not).
 */
int bh__perfscript_open(const bh__foreign_ctx_t *ctx, bh__foreign_t **out);

/*
 * The next event, as bh_trace_next: 1 with *ev filled (seq is left to the caller; counts moved
 * but for events, allocs and frees, which the caller counts), 0 at the end, BH_EFORMAT for a
 * bad event (not lenient), BH_EIO for a read error; the message in ctx->msg.
 */
static inline int bh__foreign_next(bh__foreign_t *f, bh_event_t *ev) { return f->next(f, ev); }
static inline void bh__foreign_close(bh__foreign_t *f) {
  if (f)
    f->close(f);
}

#endif
