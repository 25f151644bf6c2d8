/*
 * Trace writer: native text or native binary (formats described in reader.c and
 * traces/FORMAT.md), optionally through gzip (zlib deflate, level 6) or zstd (level 3, with
 * the frame checksum so that damaged files are noticed, as gzip's CRC-32 does).
 *
 * Events are formatted into a 1 MiB buffer which is compressed and written when full and at
 * close.  Text lines carry only what is known: cpu, pid and mt are left out when -1, gfp when
 * 0, failed when 0; gfp is written with bh_gfp_format() names, which read back to the same
 * bits.
 *
 * A path given to bh_trace_writer_open is written through src/common/outfile.c: a regular file
 * goes to a temporary file renamed into place by a successful close, so that a failed or
 * killed run never leaves a short trace under the name (nor destroys a file that was there).
 */
#include "common/outfile.h"
#include "trace/trace_internal.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W_BUF_SIZE (1u << 20)
#define W_LINE_MAX 512 /* room kept free for one event */

struct bh_trace_writer {
  int fd;
  bool owns; /* opened from a path: `out` is ours to commit or give up */
  bh__outfile_t out;
  int format, comp;
  int version;      /* 1, 2 (description and lost markers), 3 (and the pcp events) */
  bool header_done; /* the header is written when the first record or close comes */
  char *desc;       /* version 2: the machine description's text, or NULL */
  int err;          /* sticky */
  uint64_t nr;      /* events written */
  char *name;
  unsigned char *buf; /* uncompressed bytes not yet handed on */
  size_t len;
  unsigned char *cbuf; /* compressed output */
  z_stream z;
  bool z_ready;
  ZSTD_CStream *zc;
};

static int w_fail(bh_trace_writer_t *w, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int w_fail(bh_trace_writer_t *w, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bh__msg_vset(bh__trace_tls_msg(), BH__TRACE_MSG_SIZE, w->name ? w->name : "?", fmt, ap);
  va_end(ap);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Output                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static int write_all(bh_trace_writer_t *w, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t r = write(w->fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return w->err =
                 w_fail(w, BH_EIO, "write failed: %s", r < 0 ? strerror(errno) : "no progress");
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int flush_gzip(bh_trace_writer_t *w, bool finish) {
  z_stream *z = &w->z;
  z->next_in = w->buf;
  z->avail_in = (uInt)w->len;
  for (;;) {
    z->next_out = w->cbuf;
    z->avail_out = W_BUF_SIZE;
    int ret = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
    if (ret == Z_STREAM_ERROR)
      return w->err = w_fail(w, BH_EIO, "gzip compression failed");
    int err = write_all(w, w->cbuf, W_BUF_SIZE - z->avail_out);
    if (err)
      return err;
    if (finish ? ret == Z_STREAM_END : z->avail_in == 0 && z->avail_out != 0)
      return 0;
  }
}

static int flush_zstd(bh_trace_writer_t *w, bool finish) {
  ZSTD_inBuffer in = {w->buf, w->len, 0};
  for (;;) {
    ZSTD_outBuffer out = {w->cbuf, W_BUF_SIZE, 0};
    size_t ret = ZSTD_compressStream2(w->zc, &out, &in, finish ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(ret))
      return w->err = w_fail(w, BH_EIO, "zstd compression failed: %s", ZSTD_getErrorName(ret));
    int err = write_all(w, w->cbuf, out.pos);
    if (err)
      return err;
    if (finish ? ret == 0 : in.pos == in.size)
      return 0;
  }
}

/* Hands the buffered bytes on; finish also ends the compressed stream. */
static int flush_buf(bh_trace_writer_t *w, bool finish) {
  int err;
  if (w->err)
    return w->err;
  if (w->comp == BH_TRACE_COMP_GZIP)
    err = flush_gzip(w, finish);
  else if (w->comp == BH_TRACE_COMP_ZSTD)
    err = flush_zstd(w, finish);
  else
    err = write_all(w, w->buf, w->len);
  w->len = 0;
  return err;
}

static inline int reserve(bh_trace_writer_t *w) {
  if (bh__trace_unlikely(W_BUF_SIZE - w->len < W_LINE_MAX))
    return flush_buf(w, false);
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Encoding                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static char *put_str(char *p, const char *s) {
  size_t n = strlen(s);
  memcpy(p, s, n);
  return p + n;
}

static char *put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n)
    *p++ = tmp[--n];
  return p;
}

static char *put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

static char *put_hex(char *p, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = digits[v & 15];
    v >>= 4;
  } while (v);
  *p++ = '0';
  *p++ = 'x';
  while (n)
    *p++ = tmp[--n];
  return p;
}

static int encode_text(bh_trace_writer_t *w, const bh_event_t *ev) {
  static const char ops[] = {'?', 'A', 'F', 'B', 'L', 'D', 'Z', 'X', 'V'};
  char *p = (char *)w->buf + w->len;
  p = put_u64(p, ev->time_ns);
  *p++ = ' ';
  *p++ = ops[ev->op];
  *p++ = ' ';
  p = put_hex(p, ev->pfn);
  *p++ = ' ';
  p = put_u64(p, ev->order);
  if (ev->cpu >= 0)
    p = put_i64(put_str(p, " cpu="), ev->cpu);
  if (ev->pid >= 0)
    p = put_i64(put_str(p, " pid="), ev->pid);
  if (ev->migratetype >= 0)
    p = put_i64(put_str(p, " mt="), ev->migratetype);
  if (ev->gfp) {
    p = put_str(p, " gfp=");
    int n = bh_gfp_format(ev->gfp, p, 256);
    if (n < 0)
      return n; /* checked by the caller already */
    p += n;
  }
  if (ev->failed)
    p = put_str(p, " failed=1");
  if (ev->percpu_refill)
    p = put_str(p, " refill=1");
  if (ev->bulk && w->version >= 3) /* before version 3, an allocation like any other */
    p = put_str(p, " bulk=1");
  if (ev->op == BH_EV_EXTFRAG) {
    p = put_i64(put_str(p, " fallback_order="), ev->fallback_order);
    p = put_i64(put_str(p, " fallback_mt="), ev->fallback_migratetype);
    if (ev->change_ownership)
      p = put_str(p, " claim=1");
  }
  *p++ = '\n';
  w->len = (size_t)(p - (char *)w->buf);
  return 0;
}

static void encode_binary(bh_trace_writer_t *w, const bh_event_t *ev) {
  unsigned char *r = w->buf + w->len;
  uint64_t t64 = htole64(ev->time_ns), pfn = htole64(ev->pfn);
  uint32_t gfp = htole32(ev->gfp), pid = htole32((uint32_t)ev->pid);
  uint16_t cpu = htole16((uint16_t)(int16_t)ev->cpu);
  memcpy(r, &t64, 8);
  memcpy(r + 8, &pfn, 8);
  memcpy(r + 16, &gfp, 4);
  memcpy(r + 20, &pid, 4);
  memcpy(r + 24, &cpu, 2);
  r[26] = ev->op;
  r[27] = ev->order;
  r[28] = (uint8_t)ev->migratetype;
  r[29] = (uint8_t)((ev->failed ? BH__TRACE_BIN_FAILED : 0) |
                    (ev->percpu_refill ? BH__TRACE_BIN_REFILL : 0) |
                    (ev->bulk && w->version >= 3 ? BH__TRACE_BIN_BULK : 0));
  r[30] = 0;
  r[31] = 0;
  if (ev->op == BH_EV_EXTFRAG) {
    r[29] |= ev->change_ownership ? BH__TRACE_BIN_CLAIM : 0u;
    r[30] = ev->fallback_order;
    r[31] = (uint8_t)ev->fallback_migratetype;
  }
  w->len += BH__TRACE_BIN_RECORD;
}

/* Returns NULL if the format can hold ev, else what is wrong. */
static const char *check_event(const bh_trace_writer_t *w, const bh_event_t *ev) {
  bool xf = ev->op == BH_EV_EXTFRAG;
  bool pcp = ev->op == BH_EV_PCPU_DRAIN || ev->op == BH_EV_ALLOC_ZONE_LOCKED || xf ||
             ev->op == BH_EV_VMSTAT;
  if ((ev->op < BH_EV_ALLOC || ev->op > BH_EV_FREE_BATCHED) && !pcp)
    return "bad op";
  if (pcp && w->version < 3)
    return "a pcp event needs a version 3 writer (bh_trace_writer_pcp_events)";
  if (ev->percpu_refill > 1 || (ev->percpu_refill && ev->op != BH_EV_ALLOC_ZONE_LOCKED))
    return "percpu_refill set on another event than mm_page_alloc_zone_locked";
  if (ev->bulk > 1 || (ev->bulk && (ev->op != BH_EV_ALLOC || ev->failed)))
    return "bulk set on another event than a successful allocation";
  if (!xf && (ev->fallback_order || ev->fallback_migratetype || ev->change_ownership))
    return "fallback fields set on another event than mm_page_alloc_extfrag";
  if (xf && (ev->fallback_order > BH_TRACE_MAX_ORDER || ev->fallback_migratetype < -1 ||
             ev->change_ownership > 1))
    return "bad fallback_order, fallback_migratetype or change_ownership";
  if (ev->order > BH_TRACE_MAX_ORDER)
    return "order above 63";
  if (bh__trace_vmstat_bad(ev))
    return "a vmstat event has no pfn, order or migratetype";
  if (ev->pid < -1 || ev->cpu < -1 || ev->migratetype < -1)
    return "pid, cpu or migratetype below -1";
  if (ev->failed > 1)
    return "failed is not 0 or 1";
  if (ev->op != BH_EV_ALLOC && (ev->gfp || ev->failed))
    return "gfp or failed set on a free";
  if (w->format == BH_TRACE_NATIVE_BINARY && ev->cpu > INT16_MAX)
    return "cpu above 32767";
  if (w->format == BH_TRACE_NATIVE_TEXT && ev->gfp) {
    char tmp[256];
    if (bh_gfp_format(ev->gfp, tmp, sizeof(tmp)) < 0)
      return "gfp has a bit without a kernel name";
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Public calls                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* Appends n bytes, handing the buffer on whenever it fills. */
static int append_bytes(bh_trace_writer_t *w, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    size_t room = W_BUF_SIZE - w->len, k = n < room ? n : room;
    memcpy(w->buf + w->len, b, k);
    w->len += k;
    b += k;
    n -= k;
    if (w->len == W_BUF_SIZE) {
      int err = flush_buf(w, false);
      if (err)
        return err;
    }
  }
  return 0;
}

static void writer_free(bh_trace_writer_t *w) {
  if (w->z_ready)
    deflateEnd(&w->z);
  ZSTD_freeCStream(w->zc);
  if (w->owns)
    bh__outfile_abort(&w->out); /* nothing left to do after a commit */
  free(w->buf);
  free(w->cbuf);
  free(w->name);
  free(w->desc);
  free(w);
}

static int start_encoder(bh_trace_writer_t *w) {
  if (w->comp == BH_TRACE_COMP_NONE)
    return 0;
  w->cbuf = malloc(W_BUF_SIZE);
  if (!w->cbuf)
    return w_fail(w, BH_ENOMEM, "out of memory");
  if (w->comp == BH_TRACE_COMP_GZIP) {
    if (deflateInit2(&w->z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return w_fail(w, BH_ENOMEM, "cannot start the gzip encoder");
    w->z_ready = true;
  } else {
    w->zc = ZSTD_createCStream();
    if (!w->zc || ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, 3)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1)))
      return w_fail(w, BH_ENOMEM, "cannot start the zstd encoder");
  }
  return 0;
}

/* The text description, each line after "#@", at the top of a version 2 text trace. */
static int put_text_description(bh_trace_writer_t *w) {
  for (const char *l = w->desc; l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    int err = append_bytes(w, BH__TRACE_TEXT_DESC, sizeof(BH__TRACE_TEXT_DESC) - 1);
    if (!err)
      err = append_bytes(w, l, n);
    if (!err)
      err = append_bytes(w, "\n", 1);
    if (err)
      return err;
    l += n + (nl != NULL);
  }
  return 0;
}

/* The header, written before the first record (or at close): the format's version 1 header,
 * or version 2's with the description. */
static int put_header(bh_trace_writer_t *w) {
  w->header_done = true;
  if (w->format == BH_TRACE_NATIVE_BINARY) {
    unsigned char h[BH__TRACE_BIN_HEADER2];
    uint32_t version = htole32((uint32_t)w->version), rsize = htole32(BH__TRACE_BIN_RECORD);
    uint64_t dlen = htole64(w->desc ? strlen(w->desc) : 0);
    memcpy(h, BH__TRACE_BIN_MAGIC, 8);
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &rsize, 4);
    memcpy(h + 16, &dlen, 8);
    int err = append_bytes(w, h, w->version >= 2 ? BH__TRACE_BIN_HEADER2 : BH__TRACE_BIN_HEADER);
    return err || !w->desc ? err : append_bytes(w, w->desc, strlen(w->desc));
  }
  char h[W_LINE_MAX];
  int n = snprintf(h, sizeof(h), "%s %d\n", BH__TRACE_TEXT_MAGIC, w->version);
  int err = append_bytes(w, h, (size_t)n);
  if (!err && w->version >= 2)
    err = put_text_description(w);
  n = snprintf(h, sizeof(h), "# TIME_NS OP(A/F/B%s) PFN ORDER [cpu= pid= mt= gfp= failed=%s]\n",
               w->version >= 3   ? "/L/D/Z/X"
               : w->version >= 2 ? "/L"
                                 : "",
               w->version >= 3 ? " refill= fallback_order= fallback_mt= claim=" : "");
  return err ? err : append_bytes(w, h, (size_t)n);
}

/* A writer on fd (path for the outfile, or -1 and name for a caller's descriptor), of the
 * native format's version 1 or 2 (with description, or NULL). */
static int writer_new(const char *path, int fd, const char *name, int format, int compression,
                      int version, const char *description, bh_trace_writer_t **out) {
  char *msg = bh__trace_tls_msg();
  if (out)
    *out = NULL;
  const char *what = path ? path : name ? name : "(null)";
  if ((!path && fd < 0) || !out ||
      (format != BH_TRACE_NATIVE_TEXT && format != BH_TRACE_NATIVE_BINARY) ||
      compression < BH_TRACE_COMP_NONE || compression > BH_TRACE_COMP_ZSTD) {
    snprintf(msg, BH__TRACE_MSG_SIZE, "%s: bad writer arguments", what);
    return BH_EINVAL;
  }
  if (description && strlen(description) > BH__TRACE_MAX_DESCRIPTION) {
    snprintf(msg, BH__TRACE_MSG_SIZE, "%s: machine description too large", what);
    return BH_EINVAL;
  }
  bh_trace_writer_t *w = calloc(1, sizeof(*w));
  if (!w) {
    snprintf(msg, BH__TRACE_MSG_SIZE, "%s: out of memory", what);
    return BH_ENOMEM;
  }
  w->fd = fd;
  w->format = format;
  w->comp = compression;
  w->version = version;
  w->name = strdup(path && !strcmp(path, "-") ? "<stdout>" : what);
  w->buf = malloc(W_BUF_SIZE);
  int err = 0;
  if (!w->name || !w->buf || (description && !(w->desc = strdup(description))))
    err = w_fail(w, BH_ENOMEM, "out of memory");
  if (!err)
    err = start_encoder(w);
  if (!err && path) {
    err = bh__outfile_open(&w->out, path, NULL, msg, BH__TRACE_MSG_SIZE);
    w->owns = !err;
    w->fd = w->out.fd;
  }
  if (err) {
    int e = errno;
    writer_free(w);
    errno = e;
    return err;
  }
  *out = w;
  return 0;
}

int bh_trace_writer_open(const char *path, int format, int compression, bh_trace_writer_t **out) {
  return writer_new(path, -1, NULL, format, compression, 1, NULL, out);
}

static const char *fd_name(int fd, const char *name, char *buf, size_t size) {
  if (name)
    return name;
  snprintf(buf, size, "<fd %d>", fd);
  return buf;
}

int bh_trace_writer_fdopen(int fd, const char *name, int format, int compression,
                           bh_trace_writer_t **out) {
  char fdname[32];
  return writer_new(NULL, fd, fd_name(fd, name, fdname, sizeof(fdname)), format, compression, 1,
                    NULL, out);
}

int bh_trace_writer_open2(const char *path, int format, int compression, const char *description,
                          bh_trace_writer_t **out) {
  return writer_new(path, -1, NULL, format, compression, 2, description, out);
}

int bh_trace_writer_fdopen2(int fd, const char *name, int format, int compression,
                            const char *description, bh_trace_writer_t **out) {
  char fdname[32];
  return writer_new(NULL, fd, fd_name(fd, name, fdname, sizeof(fdname)), format, compression, 2,
                    description, out);
}

int bh_trace_write(bh_trace_writer_t *w, const bh_event_t *ev) {
  if (!w || !ev)
    return BH_EINVAL;
  if (bh__trace_unlikely(w->err))
    return w->err;
  const char *why = check_event(w, ev);
  if (bh__trace_unlikely(why != NULL))
    return w_fail(w, BH_EINVAL, "event %llu: %s", (unsigned long long)w->nr, why);
  int err = w->header_done ? 0 : put_header(w);
  if (!err)
    err = reserve(w);
  if (err)
    return err;
  if (w->format == BH_TRACE_NATIVE_BINARY)
    encode_binary(w, ev);
  else
    encode_text(w, ev);
  w->nr++;
  return 0;
}

int bh_trace_writer_set_description(bh_trace_writer_t *w, const char *description) {
  if (!w || w->version < 2 || w->header_done ||
      (description && strlen(description) > BH__TRACE_MAX_DESCRIPTION))
    return BH_EINVAL;
  char *d = description ? strdup(description) : NULL;
  if (description && !d)
    return BH_ENOMEM;
  free(w->desc);
  w->desc = d;
  return 0;
}

int bh_trace_writer_pcp_events(bh_trace_writer_t *w) {
  if (!w || w->version < 2 || w->header_done)
    return BH_EINVAL;
  w->version = 3;
  return 0;
}

int bh_trace_write_lost(bh_trace_writer_t *w, uint64_t time_ns, uint64_t n, int cpu) {
  if (!w)
    return BH_EINVAL;
  if (w->err)
    return w->err;
  if (w->version < 2 || !n || cpu < -1 || (w->format == BH_TRACE_NATIVE_BINARY && cpu > INT16_MAX))
    return w_fail(w, BH_EINVAL, "lost-events marker: %s",
                  w->version < 2 ? "needs a version 2 writer (bh_trace_writer_open2)"
                                 : "bad count or cpu");
  int err = w->header_done ? 0 : put_header(w);
  if (!err)
    err = reserve(w);
  if (err)
    return err;
  if (w->format == BH_TRACE_NATIVE_BINARY) {
    bh_event_t ev = {
        .time_ns = time_ns, .pfn = n, .pid = -1, .cpu = cpu, .op = BH__EV_LOST, .migratetype = -1};
    encode_binary(w, &ev);
  } else {
    char *p = (char *)w->buf + w->len;
    p = put_u64(p, time_ns);
    p = put_str(p, " L ");
    p = put_u64(p, n);
    if (cpu >= 0)
      p = put_i64(put_str(p, " cpu="), cpu);
    *p++ = '\n';
    w->len = (size_t)(p - (char *)w->buf);
  }
  return 0;
}

int bh_trace_writer_close(bh_trace_writer_t *w) {
  if (!w)
    return 0;
  int err = w->header_done ? 0 : put_header(w);
  if (!err)
    err = flush_buf(w, true);
  if (w->owns && !err) /* closed and renamed into place; on failure the old file stays */
    err = bh__outfile_commit(&w->out, bh__trace_tls_msg(), BH__TRACE_MSG_SIZE);
  writer_free(w);
  return err;
}

void bh_trace_writer_abort(bh_trace_writer_t *w) {
  if (w)
    writer_free(w);
}
