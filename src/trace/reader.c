/*
 * Trace reader: format detection, line splitting, the native binary decoder, counters.
 *
 * Native text format (traces/FORMAT.md has the same with examples)
 * -------------------------------------------------------------------
 *   # buddyhint-trace 1
 *   1000 A 0x10a2b3 0 cpu=1 pid=4242 mt=1 gfp=GFP_HIGHUSER_MOVABLE
 *   2500 F 0x10a2b3 0
 *
 * The first line is exactly "# buddyhint-trace 1" (the version).  Then one event per line,
 * fields separated by blanks:  TIME_NS OP PFN ORDER [KEY=VALUE...]
 *   TIME_NS  decimal nanoseconds
 *   OP       A (alloc), F (free), B (free batched)
 *   PFN      hex with 0x, or decimal
 *   ORDER    0..63
 *   keys     cpu=N pid=N mt=N (-1 or absent = unknown); gfp=FLAGS (as the kernel prints them,
 *            see bh_gfp_parse; allocations only, absent = none); failed=1 (allocations only)
 * Lines starting with '#' and blank lines may appear anywhere; a '#' word ends a line.  Any
 * other deviation (unknown key, missing field, order > 63) makes the line malformed.
 *
 * Native binary format
 * --------------------
 * A 16-byte header, then fixed-size records; everything little-endian.
 *   header:  char magic[8] = "BHTRACE1"; u32 version = 1; u32 record_size = 32
 *   record:  off  0 u64 time_ns      off 24 i16 cpu (-1 unknown)
 *            off  8 u64 pfn          off 26 u8  op (1 alloc, 2 free, 3 free batched)
 *            off 16 u32 gfp (BH_GFP) off 27 u8  order (0..63)
 *            off 20 i32 pid (-1)     off 28 i8  migratetype (-1 unknown)
 *                                    off 29 u8  flags (bit 0: failed; other bits zero)
 *                                    off 30 u8  reserved[2] = 0
 * A record that breaks these rules (or a free with gfp or failed set) is malformed; a file
 * that ends inside a record has a truncated last record.  Records are numbered from 0.
 *
 * ftrace and perf script lines are described in parse.c, the compressed inputs in source.c.
 *
 * Detection looks at content only: the decompressed data starts with the binary magic, or
 * its first line is the native text header, or else one of the first lines (within 64 KiB)
 * has the shape of an ftrace or perf script event line.  A file of comments alone (an empty
 * ftrace buffer) is an ftrace trace without events.
 */
#include "trace/foreign.h"
#include "trace/trace_internal.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bh_trace {
  char *name;
  bool lenient;
  int format; /* enum bh_trace_format */
  bh__src_t src;
  unsigned char *buf; /* decoded data window: unread bytes are buf[pos, len) */
  size_t pos, len, cap;
  uint64_t base;    /* stream offset of buf[0] */
  uint64_t nul_at;  /* NUL search (line_has_nul): the first NUL found, or nul_end */
  uint64_t nul_end; /* where that search stopped (stream offsets) */
  bool eof;         /* the source has no more data */
  bool skipping;    /* dropping the rest of an over-long line */
  int src_err;      /* source error met while detecting, reported once the data is used */
  int err;          /* sticky error */
  int version;      /* of a native format (1 or 2); 0 for kernel text */
  char *desc;       /* version 2: the machine description's text (NUL-terminated), or NULL */
  size_t desc_len;
  size_t desc_cap;    /* text version 2: bytes allocated for desc */
  uint64_t desc_need; /* binary version 2: description bytes still to read at open */
  bh__tparse_t tp;
  bh__foreign_t *foreign; /* trace.dat, perf.data: their own reader (foreign.h) */
  char *unpacked; /* a compressed trace.dat or perf.data decompressed to this file, or NULL */
  bh__origins_t *origins; /* interning of event origins, NULL when not asked for */
  bool own_origins;       /* origins is ours to free */
  bh_trace_counts_t counts;
  char msg[BH__TRACE_MSG_SIZE];     /* last error */
  char src_msg[BH__TRACE_MSG_SIZE]; /* the source's error, copied to msg when it is reported */
};

static _Thread_local char tls_msg[BH__TRACE_MSG_SIZE];

char *bh__trace_tls_msg(void) { return tls_msg; }

static int trace_fail(bh_trace_t *t, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A problem of the whole file: "FILE: what". */
static int trace_fail(bh_trace_t *t, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bh__msg_vset(t->msg, sizeof(t->msg), t->name, fmt, ap);
  va_end(ap);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Buffer                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/*
 * Moves the unread bytes to the front and reads more.  Returns 0 or a source error (with its
 * message copied to t->msg).  Callers make sure there is room: a text line in the window is at
 * most BH_TRACE_MAX_LINE bytes, a partial record less than 32.
 */
static int fill(bh_trace_t *t) {
  if (t->src_err) {
    memcpy(t->msg, t->src_msg, sizeof(t->msg));
    return t->src_err;
  }
  if (t->pos > 0) {
    memmove(t->buf, t->buf + t->pos, t->len - t->pos);
    t->base += t->pos;
    t->len -= t->pos;
    t->pos = 0;
  }
  long r = bh__src_read(&t->src, t->buf + t->len, t->cap - t->len);
  if (r < 0) {
    memcpy(t->msg, t->src_msg, sizeof(t->msg));
    return t->src_err = (int)r;
  }
  if (r == 0)
    t->eof = true;
  t->len += (size_t)r;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Detection                                                                                 */
/* ---------------------------------------------------------------------------------------- */

enum { DETECT_MORE = 1 };

static uint32_t load32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return le32toh(v);
}

static int detect_binary(bh_trace_t *t, bool complete) {
  if (t->len < BH__TRACE_BIN_HEADER)
    return complete ? trace_fail(t, BH_EFORMAT, "truncated binary header") : DETECT_MORE;
  uint32_t version = load32(t->buf + 8), rsize = load32(t->buf + 12);
  if (version != BH__TRACE_BIN_VERSION && version != BH__TRACE_BIN_VERSION2 &&
      version != BH__TRACE_BIN_VERSION3)
    return trace_fail(t, BH_EFORMAT, "unsupported binary trace version %u", version);
  if (rsize != BH__TRACE_BIN_RECORD)
    return trace_fail(t, BH_EFORMAT, "bad record size %u (version %u has %u)", rsize, version,
                      BH__TRACE_BIN_RECORD);
  size_t header = BH__TRACE_BIN_HEADER;
  if (version >= BH__TRACE_BIN_VERSION2) { /* the description's length follows */
    if (t->len < BH__TRACE_BIN_HEADER2)
      return complete ? trace_fail(t, BH_EFORMAT, "truncated binary header") : DETECT_MORE;
    uint64_t n = (uint64_t)load32(t->buf + 16) | (uint64_t)load32(t->buf + 20) << 32;
    if (n > BH__TRACE_MAX_DESCRIPTION)
      return trace_fail(t, BH_EFORMAT, "machine description of %llu bytes (at most %u)",
                        (unsigned long long)n, BH__TRACE_MAX_DESCRIPTION);
    t->desc_need = n;
    header = BH__TRACE_BIN_HEADER2;
  }
  t->pos = header;
  t->version = (int)version;
  t->format = BH_TRACE_NATIVE_BINARY;
  return 0;
}

static int detect_native_text(bh_trace_t *t, const char *s, size_t n) {
  size_t m = sizeof(BH__TRACE_TEXT_MAGIC) - 1, i = m;
  while (i < n && (s[i] == ' ' || s[i] == '\t'))
    i++;
  size_t d = i;
  while (d < n && s[d] >= '0' && s[d] <= '9')
    d++;
  size_t e = d;
  while (e < n && (s[e] == ' ' || s[e] == '\t' || s[e] == '\r'))
    e++;
  if (d == i || d - i > 9 || e != n || i == m)
    return trace_fail(t, BH_EFORMAT, "bad native text header (expected '%s %d')",
                      BH__TRACE_TEXT_MAGIC, BH__TRACE_TEXT_VERSION);
  long v = strtol(s + i, NULL, 10);
  if (v != BH__TRACE_TEXT_VERSION && v != BH__TRACE_TEXT_VERSION2 && v != BH__TRACE_TEXT_VERSION3)
    return trace_fail(t, BH_EFORMAT, "unsupported native text version %ld", v);
  t->version = (int)v;
  t->tp.version = (int)v;
  t->format = BH_TRACE_NATIVE_TEXT;
  return 0;
}

static bool is_comment_or_blank(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
    i++;
  return i == n || s[i] == '#';
}

/* Looks at the complete lines for an ftrace or perf script event line. */
static int detect_kernel_text(bh_trace_t *t, bool complete) {
  bh__tparse_t scratch;
  bh_event_t ev;
  bool only_comments = true;
  size_t i = 0;
  while (i < t->len) {
    const char *s = (const char *)t->buf + i;
    const char *nl = memchr(s, '\n', t->len - i);
    if (!nl && !complete)
      return DETECT_MORE;
    size_t n = nl ? (size_t)(nl - s) : t->len - i;
    i += n + 1;
    if (n > BH_TRACE_MAX_LINE) {
      only_comments = false;
      continue;
    }
    if (is_comment_or_blank(s, n))
      continue;
    only_comments = false;
    bh__kline_shape_t shape = {false, false};
    memset(&scratch, 0, sizeof(scratch));
    bh__parse_kernel_line(&scratch, s, n, memchr(s, '\0', n) != NULL, &ev, &shape);
    if (shape.event_line) {
      t->format = shape.perf ? BH_TRACE_PERF_SCRIPT : BH_TRACE_FTRACE;
      return 0;
    }
  }
  if (!complete)
    return DETECT_MORE;
  if (only_comments && !memchr(t->buf, '\0', t->len)) { /* the header of an empty buffer */
    t->format = BH_TRACE_FTRACE;
    return 0;
  }
  return trace_fail(t, BH_EFORMAT,
                    "unrecognised trace format (not ftrace, perf script or a buddyhint trace)");
}

/* Returns 0 with t->format set, DETECT_MORE, or an error. */
/* trace.dat and perf.data, which their own readers open by path (foreign.h); compressed, they
 * are decompressed to a file first (open_foreign). */
static int detect_foreign(bh_trace_t *t) {
  bool dat = bh__tracedat_magic(t->buf, t->len);
  if (!dat && !bh__perfdata_magic(t->buf, t->len))
    return 1;
  t->format = dat ? BH_TRACE_TRACE_DAT : BH_TRACE_PERF_DATA;
  return 0;
}

static int detect(bh_trace_t *t, bool complete) {
  static const char magic[] = BH__TRACE_BIN_MAGIC;
  if (t->len == 0)
    return complete ? trace_fail(t, BH_EFORMAT, "empty trace") : DETECT_MORE;
  if (t->len < 10 && !complete)
    return DETECT_MORE;
  int r = detect_foreign(t);
  if (r <= 0)
    return r;
  size_t m = t->len < 8 ? t->len : 8;
  if (memcmp(t->buf, magic, m) == 0) {
    if (m == 8)
      return detect_binary(t, complete);
    if (!complete)
      return DETECT_MORE;
  }
  const char *s = (const char *)t->buf;
  size_t hm = sizeof(BH__TRACE_TEXT_MAGIC) - 1;
  const char *nl = memchr(s, '\n', t->len);
  size_t n = nl ? (size_t)(nl - s) : t->len;
  if (!nl && !complete && n < hm)
    return DETECT_MORE;
  if (n >= hm && memcmp(s, BH__TRACE_TEXT_MAGIC, hm) == 0) {
    if (!nl && !complete)
      return DETECT_MORE;
    return detect_native_text(t, s, n);
  }
  return detect_kernel_text(t, complete);
}

static int sniff(bh_trace_t *t) {
  for (;;) {
    bool complete = t->eof || t->src_err || t->len >= BH__TRACE_SNIFF_BYTES;
    int r = detect(t, complete);
    if (r != DETECT_MORE) {
      if (r < 0 && t->src_err) { /* the data was cut short by a read error: say that */
        memcpy(t->msg, t->src_msg, sizeof(t->msg));
        return t->src_err;
      }
      return r;
    }
    fill(t); /* an error is kept in t->src_err */
  }
}

/* ---------------------------------------------------------------------------------------- */
/* The machine description of a version 2 native trace                                      */
/* ---------------------------------------------------------------------------------------- */

enum { LINE_OK = 1, LINE_TOO_LONG = 2 };

static int next_line(bh_trace_t *t, const char **line, size_t *n);
static int line_malformed(bh_trace_t *t);

/* Appends n bytes to t->desc (kept NUL-terminated), growing it geometrically: a description
 * holds a line per free block run, hundreds of thousands of them.  Returns 0 or BH_ENOMEM. */
static int desc_append(bh_trace_t *t, const char *p, size_t n, bool newline) {
  char *d = t->desc;
  if (t->desc_len + n + 2 > t->desc_cap) {
    size_t cap = t->desc_cap ? t->desc_cap : 4096;
    while (cap < t->desc_len + n + 2)
      cap *= 2;
    if (!(d = realloc(t->desc, cap)))
      return trace_fail(t, BH_ENOMEM, "out of memory");
    t->desc_cap = cap;
  }
  memcpy(d + t->desc_len, p, n);
  t->desc_len += n;
  if (newline)
    d[t->desc_len++] = '\n';
  d[t->desc_len] = '\0';
  t->desc = d;
  return 0;
}

/* Binary: the description's bytes after the 24-byte header. */
static int read_binary_description(bh_trace_t *t) {
  if (!t->desc_need)
    return 0;
  if (!(t->desc = malloc(t->desc_need + 1)))
    return trace_fail(t, BH_ENOMEM, "out of memory");
  t->desc[0] = '\0';
  while (t->desc_need) {
    size_t k = t->len - t->pos < t->desc_need ? t->len - t->pos : (size_t)t->desc_need;
    memcpy(t->desc + t->desc_len, t->buf + t->pos, k);
    t->desc_len += k;
    t->desc[t->desc_len] = '\0';
    t->pos += k;
    t->desc_need -= k;
    if (!t->desc_need)
      break;
    if (t->eof)
      return trace_fail(t, BH_EFORMAT, "truncated machine description");
    int err = fill(t);
    if (err)
      return err;
  }
  if (memchr(t->desc, '\0', t->desc_len))
    return trace_fail(t, BH_EFORMAT, "machine description holds a NUL byte");
  return 0;
}

/* Text: the header line, then the lines that start with "#@" (the description's lines). */
static int read_text_description(bh_trace_t *t) {
  const char *s;
  size_t n;
  int r = next_line(t, &s, &n);
  if (r <= 0)
    return r;
  t->counts.lines++;
  t->counts.other_lines++; /* the header, a comment as in version 1 */
  size_t m = sizeof(BH__TRACE_TEXT_DESC) - 1;
  while ((r = next_line(t, &s, &n)) > 0) {
    if (r == LINE_TOO_LONG) {
      t->counts.lines++;
      snprintf(t->tp.why, sizeof(t->tp.why), "line longer than %d bytes", BH_TRACE_MAX_LINE);
      int err = line_malformed(t);
      if (err)
        return err;
      continue;
    }
    if (n < m || memcmp(s, BH__TRACE_TEXT_DESC, m)) { /* the first event or comment: unread it */
      t->pos = (size_t)((const unsigned char *)s - t->buf);
      return 0;
    }
    t->counts.lines++;
    if (memchr(s, '\0', n))
      return trace_fail(t, BH_EFORMAT, "line %llu: machine description holds a NUL byte",
                        (unsigned long long)t->counts.lines);
    int err = desc_append(t, s + m, n - m, true);
    if (err)
      return err;
  }
  return r;
}

static int read_description(bh_trace_t *t) {
  if (t->format == BH_TRACE_NATIVE_BINARY)
    return read_binary_description(t);
  if (t->format == BH_TRACE_NATIVE_TEXT && t->version >= BH__TRACE_TEXT_VERSION2)
    return read_text_description(t);
  return 0;
}

const char *bh_trace_description(const bh_trace_t *t, size_t *len) {
  if (len)
    *len = t && t->desc ? t->desc_len : 0;
  return t ? t->desc : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Open / close                                                                              */
/* ---------------------------------------------------------------------------------------- */

void bh_trace_close(bh_trace_t *t) {
  if (!t)
    return;
  bh__foreign_close(t->foreign);
  if (t->unpacked) {
    unlink(t->unpacked);
    free(t->unpacked);
  }
  if (t->own_origins)
    bh__origins_free(t->origins);
  bh__src_close(&t->src);
  free(t->desc);
  free(t->buf);
  free(t->name);
  free(t);
}

/* A reader of another tool's format failed: "FILE: what" (foreign.h). */
int bh__foreign_fail(bh__foreign_t *f, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bh__msg_vset(f->ctx.msg, BH__TRACE_MSG_SIZE, f->ctx.name, fmt, ap);
  va_end(ap);
  return err;
}

/*
 * A gzip or zstd compressed trace.dat or perf.data, whose readers (libtracecmd, perf) want a
 * file they can seek in: the data decompressed into a temporary file ($TMPDIR, else /tmp),
 * removed again when the trace is closed.  Its path goes to t->unpacked.  0 or an error.
 */
static int unpack(bh_trace_t *t) {
  const char *dir = getenv("TMPDIR");
  size_t n = strlen(dir && *dir ? dir : "/tmp") + 32;
  if (!(t->unpacked = malloc(n)))
    return trace_fail(t, BH_ENOMEM, "out of memory");
  snprintf(t->unpacked, n, "%s/buddyhint-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(t->unpacked);
  if (fd < 0) {
    int e = errno;
    free(t->unpacked);
    t->unpacked = NULL;
    return trace_fail(t, BH_ESYS, "cannot make a file to decompress it into: %s", strerror(e));
  }
  int err = 0;
  for (long got = (long)(t->len - t->pos); !err && got > 0;) {
    const unsigned char *p = t->buf + t->pos;
    for (size_t done = 0; !err && done < (size_t)got;) {
      ssize_t w = write(fd, p + done, (size_t)got - done);
      if (w < 0 && errno != EINTR)
        err = trace_fail(t, BH_ESYS, "decompressing it to %s: %s", t->unpacked, strerror(errno));
      done += w > 0 ? (size_t)w : 0;
    }
    t->pos = t->len = 0;
    got = bh__src_read(&t->src, t->buf, t->cap);
    if (got < 0) {
      memcpy(t->msg, t->src_msg, sizeof(t->msg));
      err = (int)got;
    }
  }
  if (close(fd) && !err)
    err = trace_fail(t, BH_ESYS, "decompressing it to %s: %s", t->unpacked, strerror(errno));
  return err;
}

/* Hands the file to the reader of its format (foreign.h); the byte source is not needed. */
static int open_foreign(bh_trace_t *t, const char *path) {
  if (t->src.comp != BH_TRACE_COMP_NONE && t->format != BH_TRACE_PERF_SCRIPT) {
    int err = unpack(t);
    if (err)
      return err;
    path = t->unpacked;
  }
  int comp = t->src.comp; /* still what bh_trace_compression says */
  bh__src_close(&t->src);
  t->src.fd = -1;
  t->src.comp = comp;
  if (!strcmp(path, "-"))
    return trace_fail(t, BH_EFORMAT, "a %s cannot be read from standard input: give its file",
                      t->format == BH_TRACE_TRACE_DAT ? "trace.dat" : "perf.data");
  bh__foreign_ctx_t ctx = {.path = path,
                           .name = t->name,
                           .lenient = t->lenient,
                           .origins = t->origins,
                           .counts = &t->counts,
                           .msg = t->msg};
  if (t->format == BH_TRACE_PERF_SCRIPT) /* with origins: call chains give call sites */
    return bh__perfscript_open(&ctx, &t->foreign);
  return t->format == BH_TRACE_TRACE_DAT ? bh__tracedat_open(&ctx, &t->foreign)
                                         : bh__perfdata_open(&ctx, &t->foreign);
}

int bh_trace_open(const char *path, const bh_trace_opts_t *opts, bh_trace_t **out) {
  if (out)
    *out = NULL;
  if (!path || !out) {
    snprintf(tls_msg, sizeof(tls_msg), "bh_trace_open: NULL argument");
    return BH_EINVAL;
  }
  bh_trace_t *t = calloc(1, sizeof(*t));
  if (!t) {
    snprintf(tls_msg, sizeof(tls_msg), "%s: out of memory", path);
    return BH_ENOMEM;
  }
  t->src.fd = -1;
  t->lenient = opts && opts->lenient;
  t->tp.pcp = opts && opts->pcp_events;
  t->tp.vmstat = opts && (opts->pcp_events || opts->vmstat_events);
  t->name = strdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
  t->cap = BH__TRACE_BUF_SIZE;
  t->buf = malloc(t->cap);
  int err = BH_ENOMEM;
  if (!t->name || !t->buf) {
    snprintf(tls_msg, sizeof(tls_msg), "%s: out of memory", path);
    bh_trace_close(t);
    return err;
  }
  err = bh__src_open(&t->src, path, t->name, t->src_msg);
  if (err)
    memcpy(t->msg, t->src_msg, sizeof(t->msg));
  else if (opts && opts->raw_bytes)
    bh__src_tap(&t->src, opts->raw_bytes, opts->raw_ctx);
  if (!err)
    err = sniff(t);
  if (!err)
    err = read_description(t);
  if (!err && opts && opts->origins && !(t->origins = bh__origins_new()))
    err = trace_fail(t, BH_ENOMEM, "out of memory");
  t->own_origins = t->origins != NULL;
  if (!err && (t->format == BH_TRACE_TRACE_DAT || t->format == BH_TRACE_PERF_DATA ||
               (t->format == BH_TRACE_PERF_SCRIPT && t->origins && strcmp(path, "-"))))
    err = open_foreign(t, path);
  if (err) {
    int e = errno;
    memcpy(tls_msg, t->msg, sizeof(tls_msg));
    bh_trace_close(t);
    errno = e;
    return err;
  }
  t->msg[0] = '\0';
  *out = t;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Text                                                                                      */
/* ---------------------------------------------------------------------------------------- */

/*
 * The next line without its '\n' (the last one may lack it).  Returns LINE_OK, LINE_TOO_LONG
 * (its bytes are dropped), 0 at the end, or a source error.
 */
static int next_line(bh_trace_t *t, const char **line, size_t *n) {
  for (;;) {
    const char *b = (const char *)t->buf + t->pos;
    size_t avail = t->len - t->pos;
    const char *nl = memchr(b, '\n', avail);
    if (t->skipping) {
      if (nl || t->eof) {
        t->pos = nl ? t->pos + (size_t)(nl - b) + 1 : t->len;
        t->skipping = false;
        return LINE_TOO_LONG;
      }
      t->pos = t->len;
    } else if (nl) {
      *line = b;
      *n = (size_t)(nl - b);
      t->pos += *n + 1;
      return *n > BH_TRACE_MAX_LINE ? LINE_TOO_LONG : LINE_OK;
    } else if (avail > BH_TRACE_MAX_LINE) {
      t->skipping = true;
      t->pos = t->len;
      continue;
    } else if (t->eof) {
      if (avail == 0)
        return 0;
      *line = b;
      *n = avail;
      t->pos = t->len;
      return LINE_OK;
    }
    int err = fill(t);
    if (err)
      return err;
  }
}

/*
 * Does the line at buf[b, b + n) hold a NUL byte?  The parsers must know, and a memchr per line
 * would cost a quarter of parsing one: instead the data is searched once as it comes in (up to
 * the first NUL) and again only past each NUL found.  [search start, nul_at) has no NUL and
 * nul_at is a NUL unless it is nul_end; lines only move forward.
 */
static inline bool line_has_nul(bh_trace_t *t, size_t b, size_t n) {
  uint64_t a = t->base + b;
  if (bh__trace_unlikely(t->nul_at < a || (t->nul_at == t->nul_end && t->nul_end < a + n))) {
    size_t from = t->nul_at < a ? b : (size_t)(t->nul_end - t->base);
    const unsigned char *z = memchr(t->buf + from, '\0', t->len - from);
    t->nul_end = t->base + t->len;
    t->nul_at = z ? t->base + (size_t)(z - t->buf) : t->nul_end;
  }
  return t->nul_at < a + n;
}

/* Skips (lenient) or fails on a malformed line; why is in t->tp.why.  Returns 0 or error. */
static int line_malformed(bh_trace_t *t) {
  snprintf(t->msg, sizeof(t->msg), "%s:%llu: %s", t->name, (unsigned long long)t->counts.lines,
           t->tp.why);
  if (t->lenient) {
    t->counts.malformed++;
    return 0;
  }
  return BH_EFORMAT;
}

static inline int event_out(bh_trace_t *t, bh_event_t *ev) {
  ev->seq = t->counts.events++;
  if (ev->op == BH_EV_ALLOC)
    t->counts.allocs++;
  else if (bh__trace_likely(ev->op <= BH_EV_FREE_BATCHED))
    t->counts.frees++;
  return 1;
}

/* The origin of a text event: the task name of a kernel line, the pid of a native one. */
__attribute__((noinline, cold)) static uint32_t text_origin(bh_trace_t *t, const char *s, size_t n,
                                                            const bh_event_t *ev) {
  if (t->format == BH_TRACE_NATIVE_TEXT)
    return bh__origin_intern(t->origins, ev->pid, NULL, 0, NULL, 0);
  return bh__origin_of_kernel_line(t->origins, s, n, t->format == BH_TRACE_PERF_SCRIPT, ev);
}

/*
 * bpftrace's "Lost N events" line, which it prints among a script's output when its buffers
 * overflow (examples/page-events.bt writes native text): N, or 0 for any other line.
 */
__attribute__((noinline, cold)) static uint64_t bpftrace_lost(const char *s, size_t n) {
  if (n < 12 || memcmp(s, "Lost ", 5) || memcmp(s + n - 7, " events", 7))
    return 0;
  uint64_t v = 0;
  for (size_t i = 5; i < n - 7; i++) {
    if (s[i] < '0' || s[i] > '9' || v > UINT64_MAX / 10 - 1)
      return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  return v;
}

/*
 * Up to max events of a text trace into evs: returns how many, fewer only at the end or at an
 * error, which goes to *err (0 at the end; the events before it are returned first).  A line
 * that lies whole in the window is cut here, in the loop; the others go through next_line.
 */
static int text_batch(bh_trace_t *t, bh_event_t *evs, int max, int *err) {
  const bool native = t->format == BH_TRACE_NATIVE_TEXT;
  int k = 0;
  while (k < max) {
    const char *s = (const char *)t->buf + t->pos, *nl;
    size_t n = 0, avail = t->len - t->pos;
    int r;
    /* kernel lines the fast path takes are cut where it reads their ends */
    if (bh__trace_likely(!native && !t->skipping) && avail >= 64 &&
        !line_has_nul(t, t->pos, avail)) {
      int got;
      size_t used = bh__parse_kernel_run(&t->tp, s, avail, &evs[k], t->origins ? 1 : max - k, &got);
      if (got) {
        if (bh__trace_unlikely(t->origins)) /* one line */
          evs[k].origin = text_origin(t, s, used - 1, &evs[k]);
        t->pos += used;
        t->counts.lines += (uint64_t)got;
        for (int i = 0; i < got; i++)
          k += event_out(t, &evs[k]);
        continue;
      }
    }
    if (bh__trace_likely(!t->skipping && (nl = memchr(s, '\n', avail)) != NULL &&
                         (size_t)(nl - s) <= BH_TRACE_MAX_LINE)) {
      n = (size_t)(nl - s);
      t->pos += n + 1;
      r = LINE_OK;
    } else if ((r = next_line(t, &s, &n)) <= 0) {
      *err = r;
      return k;
    }
    t->counts.lines++;
    bh_event_t *ev = &evs[k];
    int kind;
    if (r == LINE_TOO_LONG) {
      snprintf(t->tp.why, sizeof(t->tp.why), "line longer than %d bytes", BH_TRACE_MAX_LINE);
      kind = BH__LINE_MALFORMED;
    } else {
      bool nul = line_has_nul(t, (size_t)((const unsigned char *)s - t->buf), n);
      kind = native ? bh__parse_native_line(&t->tp, s, n, nul, ev)
                    : bh__parse_kernel_line(&t->tp, s, n, nul, ev, NULL);
    }
    if (bh__trace_likely(kind == BH__LINE_EVENT)) {
      ev->origin = bh__trace_unlikely(t->origins) ? text_origin(t, s, n, ev) : 0;
      k += event_out(t, ev);
      continue;
    }
    if (kind == BH__LINE_OTHER) {
      t->counts.other_lines++;
      if (!native)
        t->counts.lost_events += bh__lost_in_line(s, n);
      continue;
    }
    if (kind == BH__LINE_LOST) {
      t->counts.lost_events += ev->pfn;
      continue;
    }
    uint64_t lost = native ? bpftrace_lost(s, n) : 0;
    if (lost) {
      t->counts.lost_events += lost;
      t->counts.other_lines++;
      continue;
    }
    int e = line_malformed(t);
    if (e) {
      *err = e;
      return k;
    }
  }
  return k;
}

/* The next text event: 1, 0 at the end, or an error. */
static int next_text(bh_trace_t *t, bh_event_t *ev) {
  int err = 0;
  return text_batch(t, ev, 1, &err) ? 1 : err;
}

/* ---------------------------------------------------------------------------------------- */
/* Binary                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static int record_malformed(bh_trace_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int record_malformed(bh_trace_t *t, const char *fmt, ...) {
  int n = snprintf(t->msg, sizeof(t->msg), "%s: record %llu: ", t->name,
                   (unsigned long long)(t->counts.lines - 1));
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(t->msg))
    vsnprintf(t->msg + n, sizeof(t->msg) - (size_t)n, fmt, ap);
  va_end(ap);
  if (t->lenient) {
    t->counts.malformed++;
    return 0;
  }
  return BH_EFORMAT;
}

/* Decodes and checks one record.  Returns true, or false with what is wrong in *why. */
static inline bool decode_record(const unsigned char *r, bh_event_t *ev, const char **why) {
  bh__trace_decode_record(r, ev);
  if (bh__trace_likely(bh__trace_record_ok(r)))
    return true;
  *why = bh__trace_record_problem(r);
  return false;
}

/* What is wrong with a pcp event's record (version 3), or NULL; its percpu_refill (and a
 * fallback's fields) into ev. */
static const char *pcp_record_problem(const unsigned char *r, bh_event_t *ev) {
  if (ev->order > BH_TRACE_MAX_ORDER)
    return "order above 63";
  if (ev->op == BH_EV_EXTFRAG) {
    if (ev->gfp || ev->failed || (r[29] & ~BH__TRACE_BIN_CLAIM))
      return "extfrag record with gfp, failed or reserved bits set";
    if (r[30] > BH_TRACE_MAX_ORDER || (int8_t)r[31] < -1)
      return "extfrag record with a fallback_order above 63 or a fallback migratetype below -1";
    if (ev->pid < -1 || ev->cpu < -1 || ev->migratetype < -1)
      return "pid, cpu or migratetype below -1";
    ev->change_ownership = (r[29] & BH__TRACE_BIN_CLAIM) != 0;
    ev->fallback_order = r[30];
    ev->fallback_migratetype = (int8_t)r[31];
    ev->zone = 0;
    return NULL;
  }
  if (ev->gfp || ev->failed || r[30] || r[31] ||
      (r[29] & ~(ev->op == BH_EV_ALLOC_ZONE_LOCKED ? BH__TRACE_BIN_REFILL : 0u)))
    return "pcp event record with gfp, failed or reserved bits set";
  if (bh__trace_vmstat_bad(ev))
    return "vmstat record with a pfn, order or migratetype";
  if (ev->pid < -1 || ev->cpu < -1 || ev->migratetype < -1)
    return "pid, cpu or migratetype below -1";
  ev->percpu_refill = (r[29] & BH__TRACE_BIN_REFILL) != 0;
  ev->zone = 0;
  return NULL;
}

/* What is wrong with an allocation record of an alloc_pages_bulk page (version 3: flags just
 * BH__TRACE_BIN_BULK), or NULL; ev->bulk set. */
static const char *bulk_record_problem(const unsigned char *r, bh_event_t *ev) {
  if (r[29] != BH__TRACE_BIN_BULK || r[30] || r[31])
    return "reserved bits set";
  if (ev->order > BH_TRACE_MAX_ORDER)
    return "order above 63";
  if (ev->pid < -1 || ev->cpu < -1 || ev->migratetype < -1)
    return "pid, cpu or migratetype below -1";
  ev->failed = 0;
  ev->bulk = 1;
  return NULL;
}

/* What is wrong with a lost-events record (version 2), or NULL. */
static const char *lost_record_problem(const unsigned char *r, const bh_event_t *ev) {
  if (ev->order || ev->gfp || ev->failed || r[30] || r[31] || (r[29] & ~BH__TRACE_BIN_FAILED))
    return "lost-events record with order, gfp or flags set";
  if (!ev->pfn)
    return "lost-events record of 0 events";
  if (ev->cpu < -1)
    return "pid, cpu or migratetype below -1";
  return NULL;
}

static int next_binary(bh_trace_t *t, bh_event_t *ev) {
  for (;;) {
    size_t avail = t->len - t->pos;
    if (bh__trace_unlikely(avail < BH__TRACE_BIN_RECORD)) {
      if (!t->eof) {
        int err = fill(t);
        if (err)
          return err;
        continue;
      }
      if (avail == 0)
        return 0;
      t->pos = t->len;
      t->counts.lines++;
      int err =
          record_malformed(t, "truncated record (%zu of %d bytes)", avail, BH__TRACE_BIN_RECORD);
      return err ? err : 0;
    }
    const unsigned char *r = t->buf + t->pos;
    t->pos += BH__TRACE_BIN_RECORD;
    t->counts.lines++;
    const char *why = NULL;
    if (bh__trace_likely(decode_record(r, ev, &why))) {
      bh__trace_set_zone(&t->tp, ev);
      ev->origin = t->origins ? bh__origin_intern(t->origins, ev->pid, NULL, 0, NULL, 0) : 0;
      return event_out(t, ev);
    }
    if (t->version >= BH__TRACE_BIN_VERSION3 && ev->op == BH_EV_ALLOC &&
        !(why = bulk_record_problem(r, ev))) {
      bh__trace_set_zone(&t->tp, ev);
      ev->origin = t->origins ? bh__origin_intern(t->origins, ev->pid, NULL, 0, NULL, 0) : 0;
      return event_out(t, ev);
    }
    if (t->version >= BH__TRACE_BIN_VERSION2 && ev->op == BH__EV_LOST &&
        !(why = lost_record_problem(r, ev))) {
      t->counts.lost_events += ev->pfn;
      continue;
    }
    if (t->version >= BH__TRACE_BIN_VERSION3 &&
        (ev->op == BH_EV_PCPU_DRAIN || ev->op == BH_EV_ALLOC_ZONE_LOCKED ||
         ev->op == BH_EV_EXTFRAG || ev->op == BH_EV_VMSTAT) &&
        !(why = pcp_record_problem(r, ev))) {
      if (ev->op == BH_EV_VMSTAT ? !t->tp.vmstat : !t->tp.pcp) {
        t->counts.other_lines++;
        continue;
      }
      ev->origin = t->origins ? bh__origin_intern(t->origins, ev->pid, NULL, 0, NULL, 0) : 0;
      return event_out(t, ev);
    }
    int err = record_malformed(t, "%s (op %u, order %u)", why, r[26], r[27]);
    if (err)
      return err;
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Public calls                                                                              */
/* ---------------------------------------------------------------------------------------- */

void bh__trace_take_records(bh_trace_t *t, int n) {
  const unsigned char *r = t->buf + t->pos;
  uint64_t allocs = 0;
  for (int i = 0; i < n; i++)
    allocs += r[(size_t)i * BH__TRACE_BIN_RECORD + 26] == BH_EV_ALLOC; /* the op byte */
  t->pos += (size_t)n * BH__TRACE_BIN_RECORD;
  t->counts.lines += (uint64_t)n;
  t->counts.events += (uint64_t)n;
  t->counts.allocs += allocs;
  t->counts.frees += (uint64_t)n - allocs;
}

/*
 * Binary records that sit whole in the buffer, decoded in one loop: the common case of a
 * batch read.  Stops at the first record that needs the general path (a buffer refill, a
 * malformed record) and returns how many it decoded.  The counters move once per run, not
 * per record (what event_out does for one event).
 */
static int binary_run(bh_trace_t *t, bh_event_t *evs, int max) {
  size_t whole = (t->len - t->pos) / BH__TRACE_BIN_RECORD;
  int n = whole < (size_t)max ? (int)whole : max, k;
  const unsigned char *r = t->buf + t->pos;
  uint64_t seq = t->counts.events;
  bh_event_t *ev = evs, *end = evs + n;
  for (; ev < end; ev++, r += BH__TRACE_BIN_RECORD) {
    const char *why = NULL;
    if (bh__trace_unlikely(!decode_record(r, ev, &why)))
      break; /* next_binary reports it */
    ev->seq = seq++;
    bh__trace_set_zone(&t->tp, ev);
    ev->origin = bh__trace_unlikely(t->origins)
                     ? bh__origin_intern(t->origins, ev->pid, NULL, 0, NULL, 0)
                     : 0;
  }
  k = (int)(ev - evs);
  bh__trace_take_records(t, k);
  return k;
}

/* An event of a trace.dat or perf.data (foreign.h). */
static int next_foreign(bh_trace_t *t, bh_event_t *ev) {
  int r = bh__foreign_next(t->foreign, ev);
  return r == 1 ? event_out(t, ev) : r;
}

/* bh_trace_next_batch of a trace.dat or perf.data. */
static int foreign_batch(bh_trace_t *t, bh_event_t *evs, int max) {
  int k = 0;
  while (k < max) {
    int r = next_foreign(t, &evs[k]);
    if (r < 0) {
      t->err = r;
      return k ? k : r; /* the events before the error first; the error on the next call */
    }
    if (r == 0)
      break;
    k++;
  }
  return k;
}

int bh__trace_peek_records(bh_trace_t *t, const unsigned char **recs, int max) {
  if (t->format != BH_TRACE_NATIVE_BINARY || t->err || max < 1)
    return 0;
  size_t whole = (t->len - t->pos) / BH__TRACE_BIN_RECORD;
  *recs = t->buf + t->pos;
  return whole < (size_t)max ? (int)whole : max;
}

int bh_trace_next_batch(bh_trace_t *t, bh_event_t *evs, int max) {
  if (!t || !evs || max < 1)
    return BH_EINVAL;
  if (bh__trace_unlikely(t->err))
    return t->err;
  if (bh__trace_unlikely(t->foreign))
    return foreign_batch(t, evs, max);
  if (t->format != BH_TRACE_NATIVE_BINARY) {
    int err = 0, k = text_batch(t, evs, max, &err);
    if (err < 0) {
      t->err = err;
      return k ? k : err; /* the events before the error first; the error on the next call */
    }
    return k;
  }
  int k = 0;
  while (k < max) {
    k += binary_run(t, evs + k, max - k);
    if (k == max)
      break;
    int r = next_binary(t, &evs[k]);
    if (r == 1) {
      k++;
      continue;
    }
    if (r < 0) {
      t->err = r;
      return k ? k : r; /* the events before the error first; the error on the next call */
    }
    break; /* the end */
  }
  return k;
}

int bh_trace_next(bh_trace_t *t, bh_event_t *ev) {
  if (!t || !ev)
    return BH_EINVAL;
  if (bh__trace_unlikely(t->err))
    return t->err;
  int r = t->foreign                            ? next_foreign(t, ev)
          : t->format == BH_TRACE_NATIVE_BINARY ? next_binary(t, ev)
                                                : next_text(t, ev);
  if (bh__trace_unlikely(r < 0))
    t->err = r;
  return r;
}

const char *bh_trace_error(const bh_trace_t *t) { return t ? t->msg : tls_msg; }

int bh_trace_format(const bh_trace_t *t) { return t ? t->format : 0; }

int bh_trace_version(const bh_trace_t *t) { return t ? t->version : 0; }

const char *bh_trace_format_name(const bh_trace_t *t) {
  switch (t ? t->format : 0) {
  case BH_TRACE_FTRACE:
    return "ftrace";
  case BH_TRACE_PERF_SCRIPT:
    return "perf-script";
  case BH_TRACE_NATIVE_TEXT:
    return "native-text";
  case BH_TRACE_NATIVE_BINARY:
    return "native-binary";
  case BH_TRACE_TRACE_DAT:
    return "trace-dat";
  case BH_TRACE_PERF_DATA:
    return "perf-data";
  default:
    return "unknown";
  }
}

const char *bh_trace_command(const bh_trace_t *t) {
  return t && t->foreign ? t->foreign->command : NULL;
}

int bh_trace_origin(const bh_trace_t *t, uint32_t id, bh_trace_origin_t *out) {
  if (!t || !out)
    return BH_EINVAL;
  return bh__origin_get(t->origins, id, out);
}

void bh__trace_use_origins(bh_trace_t *t, bh__origins_t *o) {
  if (t->own_origins)
    bh__origins_free(t->origins);
  t->origins = o;
  t->own_origins = false;
  if (t->foreign)
    t->foreign->ctx.origins = o;
}

const char *bh_trace_compression(const bh_trace_t *t) {
  switch (t ? t->src.comp : -1) {
  case BH_TRACE_COMP_NONE:
    return "none";
  case BH_TRACE_COMP_GZIP:
    return "gzip";
  case BH_TRACE_COMP_ZSTD:
    return "zstd";
  default:
    return "unknown";
  }
}

void bh_trace_counts(const bh_trace_t *t, bh_trace_counts_t *out) {
  if (!out)
    return;
  if (!t) {
    memset(out, 0, sizeof(*out));
    return;
  }
  *out = t->counts;
  out->gfp_unknown = t->tp.gfp_unknown;
}
