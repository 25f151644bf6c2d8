/*
 * The reader's byte source: a file (or stdin) read in large chunks and, if its first bytes are
 * the gzip magic (1f 8b) or the zstd frame magic (28 b5 2f fd), decompressed on the fly with
 * zlib's inflate or libzstd's ZSTD_decompressStream.  Nothing here knows about lines.
 *
 * Concatenated gzip members and zstd frames are read as one stream (as gzip -d and zstd -d
 * do).  Data that ends inside a member or frame is a truncated stream; bytes after the last
 * gzip member that do not start another one are an error too.  All errors are BH_EIO and stay
 * (every later read returns the same error).
 */
#include "common/bytesrc.h"

#include <buddyhint.h>
#include <buddyhint/trace.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd_errors.h>

static int src_fail(bh__src_t *src, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void bh__msg_vset(char *msg, size_t len, const char *name, const char *fmt, va_list ap) {
  int n = snprintf(msg, len, "%s: ", name);
  if (n > 0 && (size_t)n < len)
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
}

static int src_fail(bh__src_t *src, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bh__msg_vset(src->msg, BH__TRACE_MSG_SIZE, src->name, fmt, ap);
  va_end(ap);
  src->err = err;
  return err;
}

/* read(2) that retries on EINTR.  Returns bytes read, 0 at EOF, -1 with errno. */
static ssize_t read_retry(int fd, void *buf, size_t cap) {
  for (;;) {
    ssize_t n = read(fd, buf, cap);
    if (n >= 0 || errno != EINTR)
      return n;
  }
}

/* Refills src->in once it is used up.  Returns 0 (src->in_eof set at the end) or BH_EIO. */
static int raw_fill(bh__src_t *src) {
  if (src->in_pos < src->in_len || src->in_eof)
    return 0;
  ssize_t n = read_retry(src->fd, src->in, BH__TRACE_RAW_CHUNK);
  if (n < 0)
    return src_fail(src, BH_EIO, "read error: %s", strerror(errno));
  if (n > 0 && src->tap)
    src->tap(src->tap_ctx, src->in, (size_t)n);
  src->in_pos = 0;
  src->in_len = (size_t)n;
  if (n == 0)
    src->in_eof = true;
  return 0;
}

static const unsigned char gzip_magic[2] = {0x1f, 0x8b};
static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

/* Reads until at least want bytes are buffered (or EOF): the magic may arrive in pieces. */
static int peek_raw(bh__src_t *src, size_t want) {
  while (src->in_len < want && !src->in_eof) {
    ssize_t n = read_retry(src->fd, src->in + src->in_len, BH__TRACE_RAW_CHUNK - src->in_len);
    if (n < 0)
      return src_fail(src, BH_EIO, "read error: %s", strerror(errno));
    if (n == 0)
      src->in_eof = true;
    if (n > 0 && src->tap)
      src->tap(src->tap_ctx, src->in + src->in_len, (size_t)n);
    src->in_len += (size_t)n;
  }
  return 0;
}

static int start_decoder(bh__src_t *src) {
  if (src->in_len >= 2 && memcmp(src->in, gzip_magic, 2) == 0) {
    memset(&src->z, 0, sizeof(src->z));
    if (inflateInit2(&src->z, 16 + MAX_WBITS) != Z_OK)
      return src_fail(src, BH_ENOMEM, "cannot start the gzip decoder");
    src->z_ready = true;
    src->comp = BH_TRACE_COMP_GZIP;
  } else if (src->in_len >= 4 && memcmp(src->in, zstd_magic, 4) == 0) {
    src->zd = ZSTD_createDStream();
    if (!src->zd)
      return src_fail(src, BH_ENOMEM, "cannot start the zstd decoder");
    ZSTD_initDStream(src->zd);
    src->zd_hint = 1;
    src->comp = BH_TRACE_COMP_ZSTD;
  } else {
    src->comp = BH_TRACE_COMP_NONE;
  }
  return 0;
}

int bh__src_open(bh__src_t *src, const char *path, const char *name, char *msg) {
  memset(src, 0, sizeof(*src));
  src->fd = -1;
  src->name = name;
  src->msg = msg;
  if (strcmp(path, "-") == 0) {
    src->fd = STDIN_FILENO;
  } else {
    src->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (src->fd < 0) {
      int e = errno;
      src_fail(src, BH_ESYS, "cannot open: %s", strerror(e));
      errno = e;
      return BH_ESYS;
    }
    src->close_fd = true;
  }
  src->in = malloc(BH__TRACE_RAW_CHUNK);
  if (!src->in)
    return src_fail(src, BH_ENOMEM, "out of memory");
  int err = peek_raw(src, sizeof(zstd_magic));
  if (err)
    return err;
  return start_decoder(src);
}

void bh__src_close(bh__src_t *src) {
  if (src->z_ready)
    inflateEnd(&src->z);
  ZSTD_freeDStream(src->zd);
  free(src->in);
  if (src->close_fd && src->fd >= 0)
    close(src->fd);
  memset(src, 0, sizeof(*src));
  src->fd = -1;
}

void bh__src_tap(bh__src_t *src, void (*fn)(void *ctx, const void *buf, size_t n), void *ctx) {
  src->tap = fn;
  src->tap_ctx = ctx;
  if (fn && src->in_len) /* nothing is consumed yet: in[0, in_len) are the file's first bytes */
    fn(ctx, src->in, src->in_len);
}

static long read_plain(bh__src_t *src, unsigned char *dst, size_t cap) {
  if (src->in_pos < src->in_len) { /* bytes read while looking for a magic */
    size_t n = src->in_len - src->in_pos;
    if (n > cap)
      n = cap;
    memcpy(dst, src->in + src->in_pos, n);
    src->in_pos += n;
    return (long)n;
  }
  if (src->in_eof)
    return 0;
  ssize_t n = read_retry(src->fd, dst, cap);
  if (n < 0)
    return src_fail(src, BH_EIO, "read error: %s", strerror(errno));
  if (n == 0)
    src->in_eof = true;
  else if (src->tap)
    src->tap(src->tap_ctx, dst, (size_t)n);
  return (long)n;
}

/*
 * After the end of a gzip member: another member may follow.  Returns 1 if one does (the
 * decoder is reset), 0 at a clean end of data, or an error.
 */
static int gzip_next_member(bh__src_t *src) {
  int err = raw_fill(src);
  if (err)
    return err;
  if (src->in_pos == src->in_len)
    return 0; /* EOF */
  if (src->in[src->in_pos] != gzip_magic[0])
    return src_fail(src, BH_EIO, "trailing garbage after the gzip stream");
  inflateReset(&src->z);
  src->z_member_end = false;
  return 1;
}

static long read_gzip(bh__src_t *src, unsigned char *dst, size_t cap) {
  z_stream *z = &src->z;
  z->next_out = dst;
  z->avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
  uInt want = z->avail_out;
  while (z->avail_out == want) {
    if (src->z_member_end) {
      int r = gzip_next_member(src);
      if (r <= 0)
        return r;
    }
    int err = raw_fill(src);
    if (err)
      return err;
    bool eof = src->in_pos == src->in_len;
    z->next_in = src->in + src->in_pos;
    z->avail_in = (uInt)(src->in_len - src->in_pos);
    int ret = inflate(z, Z_NO_FLUSH); /* also flushes output pending from the last call */
    src->in_pos = src->in_len - z->avail_in;
    if (ret == Z_STREAM_END)
      src->z_member_end = true;
    else if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_STREAM_ERROR)
      return src_fail(src, BH_EIO, "corrupt gzip stream: %s", z->msg ? z->msg : "bad data");
    else if (ret == Z_MEM_ERROR)
      return src_fail(src, BH_ENOMEM, "out of memory in the gzip decoder");
    else if (eof && z->avail_out == want) /* no input left and nothing came out */
      return src_fail(src, BH_EIO, "truncated gzip stream");
  }
  return (long)(want - z->avail_out);
}

static long read_zstd(bh__src_t *src, unsigned char *dst, size_t cap) {
  ZSTD_outBuffer out = {dst, cap, 0};
  while (out.pos == 0) {
    int err = raw_fill(src);
    if (err)
      return err;
    bool eof = src->in_pos == src->in_len;
    if (eof && src->zd_hint == 0)
      return 0; /* at a frame boundary, everything flushed */
    ZSTD_inBuffer in = {src->in, src->in_len, src->in_pos};
    size_t ret = ZSTD_decompressStream(src->zd, &out, &in); /* also flushes pending output */
    src->in_pos = in.pos;
    if (ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
      return src_fail(src, BH_ENOMEM, "out of memory in the zstd decoder");
    if (ZSTD_isError(ret))
      return src_fail(src, BH_EIO, "corrupt zstd stream: %s", ZSTD_getErrorName(ret));
    src->zd_hint = ret;
    if (eof && out.pos == 0) /* no input left and nothing came out */
      return src_fail(src, BH_EIO, "truncated zstd stream");
  }
  return (long)out.pos;
}

long bh__src_read(bh__src_t *src, unsigned char *dst, size_t cap) {
  if (src->err)
    return src->err;
  if (cap == 0)
    return BH_EINVAL;
  switch (src->comp) {
  case BH_TRACE_COMP_GZIP:
    return read_gzip(src, dst, cap);
  case BH_TRACE_COMP_ZSTD:
    return read_zstd(src, dst, cap);
  default:
    return read_plain(src, dst, cap);
  }
}
