/*
 * A cpu's spool while buddyhint record runs.  The recorder must not stir the allocator it
 * records: on a 512 MiB guest its raw spools on tmpfs grew by 24 MiB during a 400 MiB memhog,
 * a page at a time among the memhog's, and held 28 pageblocks half allocated at the end.  So
 * the sub-buffers are compressed as they come (zstd level 1, about a tenth of their size),
 * into a file whose pages can be taken up front (fallocate, FALLOC_FL_KEEP_SIZE: its size stays
 * what was written, so reading back stops there), by a compressor whose workspace is mapped and
 * touched at the open (a static zstd context: it never allocates).
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCStream, ZSTD_estimateCStreamSize_* */
#include "cli/record/record_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

enum { SPOOL_LEVEL = 1, SPOOL_WINDOW_LOG = 17 }; /* 128 KiB: neighbouring sub-buffers */

struct bh_cli_spool {
  int fd;
  size_t subbuf;
  /* writing: one mapping, touched at the open, holds the context, its output and zeros */
  void *map;
  size_t map_len;
  ZSTD_CStream *zc;
  unsigned char *out, *zeros;
  size_t out_cap;
  uint64_t bytes, pages;
  /* reading back */
  ZSTD_DStream *zd;
  unsigned char *in;
  size_t in_cap, in_len, in_pos;
  off_t in_off;
  int in_eof;
};

/* A nameless temporary file in TMPDIR (a killed recorder leaves none behind); -1 with errno. */
static int spool_file(void) {
  const char *tmp = getenv("TMPDIR");
  char path[PATH_MAX];
  if (!tmp || !*tmp || strlen(tmp) > sizeof(path) - sizeof("/buddyhint-record-XXXXXX"))
    tmp = "/tmp";
  snprintf(path, sizeof(path), "%s/buddyhint-record-XXXXXX", tmp);
  int fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0)
    unlink(path);
  return fd;
}

static size_t round_page(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (n + pg - 1) / pg * pg;
}

int bh_cli_spool_open(bh_cli_spool_t **out, size_t subbuf, uint64_t reserve, const char **what) {
  *out = NULL;
  bh_cli_spool_t *s = calloc(1, sizeof(*s));
  if (!s) {
    *what = "memory";
    return ENOMEM;
  }
  s->fd = -1;
  s->subbuf = subbuf;
  int e = 0;
  ZSTD_CCtx_params *p = ZSTD_createCCtxParams();
  if (!p || ZSTD_isError(ZSTD_CCtxParams_setParameter(p, ZSTD_c_compressionLevel, SPOOL_LEVEL)) ||
      ZSTD_isError(ZSTD_CCtxParams_setParameter(p, ZSTD_c_windowLog, SPOOL_WINDOW_LOG))) {
    *what = "the compressor's parameters";
    e = ENOMEM;
    goto fail;
  }
  size_t ws = round_page(ZSTD_estimateCStreamSize_usingCCtxParams(p));
  s->out_cap = ZSTD_CStreamOutSize();
  s->map_len = ws + round_page(s->out_cap) + round_page(subbuf);
  s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (s->map == MAP_FAILED) {
    s->map = NULL;
    e = errno;
    *what = "the compressor's memory";
    goto fail;
  }
  memset(s->map, 0, s->map_len); /* every page now, not as the command runs */
  s->out = (unsigned char *)s->map + ws;
  s->zeros = s->out + round_page(s->out_cap);
  s->zc = ZSTD_initStaticCStream(s->map, ws);
  if (!s->zc || ZSTD_isError(ZSTD_CCtx_setParametersUsingCCtxParams(s->zc, p))) {
    e = ENOMEM;
    *what = "the compressor";
    goto fail;
  }
  ZSTD_freeCCtxParams(p);
  p = NULL;
  if ((s->fd = spool_file()) < 0) {
    e = errno;
    *what = "the spool file";
    goto fail;
  }
  if (reserve) {
    int r;
    while ((r = fallocate(s->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)reserve)) < 0 && errno == EINTR)
      ;
    if (r < 0) {
      e = errno;
      *what = "the spool's reserve";
      goto fail;
    }
  }
  *out = s;
  return 0;
fail:
  ZSTD_freeCCtxParams(p);
  bh_cli_spool_close(s);
  return e;
}

/* Writes the compressor's n output bytes to the file.  0 or an errno. */
static int write_out(bh_cli_spool_t *s, size_t n) {
  const unsigned char *p = s->out;
  while (n) {
    ssize_t w = write(s->fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return w < 0 ? errno : EIO;
    n -= (size_t)w, p += w, s->bytes += (uint64_t)w;
  }
  return 0;
}

/* Feeds n bytes at buf (flushing the frame's end if end).  0 or an errno. */
static int feed(bh_cli_spool_t *s, const void *buf, size_t n, ZSTD_EndDirective end) {
  ZSTD_inBuffer in = {buf, n, 0};
  for (;;) {
    ZSTD_outBuffer o = {s->out, s->out_cap, 0};
    size_t left = ZSTD_compressStream2(s->zc, &o, &in, end);
    if (ZSTD_isError(left))
      return EIO;
    int e = o.pos ? write_out(s, o.pos) : 0;
    if (e)
      return e;
    if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
      return 0;
  }
}

int bh_cli_spool_put(bh_cli_spool_t *s, const void *buf, size_t n) {
  if (n > s->subbuf)
    n = s->subbuf;
  int e = feed(s, buf, n, ZSTD_e_continue);
  if (!e && n < s->subbuf)
    e = feed(s, s->zeros, s->subbuf - n, ZSTD_e_continue);
  s->pages += !e;
  return e;
}

int bh_cli_spool_finish(bh_cli_spool_t *s) { return feed(s, NULL, 0, ZSTD_e_end); }

uint64_t bh_cli_spool_bytes(const bh_cli_spool_t *s) { return s->bytes; }

uint64_t bh_cli_spool_pages(const bh_cli_spool_t *s) { return s->pages; }

/* More compressed input from the file; 0 (in_eof set at its end) or -1 with errno. */
static int refill(bh_cli_spool_t *s) {
  if (s->in_pos < s->in_len)
    return 0;
  ssize_t n;
  while ((n = pread(s->fd, s->in, s->in_cap, s->in_off)) < 0 && errno == EINTR)
    ;
  if (n < 0)
    return -1;
  s->in_off += n;
  s->in_len = (size_t)n;
  s->in_pos = 0;
  s->in_eof = n == 0;
  return 0;
}

int bh_cli_spool_get(bh_cli_spool_t *s, void *page) {
  if (!s->zd) {
    s->in_cap = ZSTD_DStreamInSize();
    if (!(s->zd = ZSTD_createDStream()) || !(s->in = malloc(s->in_cap))) {
      errno = ENOMEM;
      return -1;
    }
  }
  ZSTD_outBuffer o = {page, s->subbuf, 0};
  while (o.pos < o.size) {
    if (refill(s))
      return -1;
    ZSTD_inBuffer in = {s->in, s->in_len, s->in_pos};
    size_t before = o.pos, r = ZSTD_decompressStream(s->zd, &o, &in);
    s->in_pos = in.pos;
    if (ZSTD_isError(r)) {
      errno = EILSEQ;
      return -1;
    }
    if (s->in_eof && o.pos == before) {
      if (!o.pos)
        return 0;
      errno = EILSEQ; /* a sub-buffer cut short: the file ends inside it */
      return -1;
    }
  }
  return 1;
}

void bh_cli_spool_rewind(bh_cli_spool_t *s) {
  if (s->zd)
    ZSTD_DCtx_reset(s->zd, ZSTD_reset_session_only);
  s->in_off = 0;
  s->in_len = s->in_pos = 0;
  s->in_eof = 0;
}

void bh_cli_spool_close(bh_cli_spool_t *s) {
  if (!s)
    return;
  if (s->fd >= 0)
    close(s->fd);
  if (s->map)
    munmap(s->map, s->map_len);
  ZSTD_freeDStream(s->zd);
  free(s->in);
  free(s);
}
