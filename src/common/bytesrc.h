/*
 * A byte source (bytesrc.c): a file descriptor, or a file by path ("-": stdin), decompressed
 * on the fly (gzip, zstd, or plain, told by its first bytes).  The trace reader reads traces
 * through it, and the machine module its snapshot files, compressed or not.
 */
#ifndef BH_COMMON_BYTESRC_H
#define BH_COMMON_BYTESRC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <zlib.h>
#include <zstd.h>

/* Size of a formatted error message, and of the decoded-data window of a reader. */
#define BH__TRACE_MSG_SIZE 512

/* Formats "NAME: " and then fmt's text into msg (len bytes), as every trace error reads. */
void bh__msg_vset(char *msg, size_t len, const char *name, const char *fmt, va_list ap);
/* How much a source reads from its file at a time. */
#define BH__TRACE_RAW_CHUNK (256u << 10)

typedef struct bh__src {
  int fd;
  bool close_fd;
  int comp;              /* enum bh_trace_compression */
  const char *name;      /* for messages */
  char *msg;             /* where errors are formatted (BH__TRACE_MSG_SIZE bytes) */
  unsigned char *in;     /* raw (compressed) bytes */
  size_t in_pos, in_len; /* unread raw bytes are in[in_pos, in_len) */
  bool in_eof;
  int err; /* sticky error of the source */
  z_stream z;
  bool z_ready, z_member_end;
  ZSTD_DStream *zd;
  size_t zd_hint; /* last ZSTD_decompressStream result: 0 = at a frame boundary */
  /* bh__src_tap: called with every raw byte read from fd, in the file's order, or NULL */
  void (*tap)(void *ctx, const void *buf, size_t n);
  void *tap_ctx;
} bh__src_t;

/* Opens path ("-" = stdin) and looks at the first bytes for a compression magic.  Returns 0 or
 * BH_ESYS/BH_EIO/BH_ENOMEM with the message in src->msg. */
int bh__src_open(bh__src_t *src, const char *path, const char *name, char *msg);
/* Reads up to cap decompressed bytes into dst.  Returns the number of bytes (0 = end of data)
 * or a negative BH_E* code with the message in src->msg (sticky). */
long bh__src_read(bh__src_t *src, unsigned char *dst, size_t cap);
void bh__src_close(bh__src_t *src);
/* From now on, fn(ctx, ...) sees every raw (still compressed) byte src reads, in the file's
 * order: at once the bytes bh__src_open read to look for a magic, then each read as it comes. */
void bh__src_tap(bh__src_t *src, void (*fn)(void *ctx, const void *buf, size_t n), void *ctx);

#endif
