/* A cpu's spool while buddyhint record runs (record_spool.c). */
#ifndef BH_CLI_RECORD_SPOOL_H
#define BH_CLI_RECORD_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The sub-buffers read from one cpu's ring buffer while the command runs, zstd-compressed as
 * they come into a nameless temporary file of TMPDIR (/tmp), and read back as sub-buffers
 * once tracing is off.  Everything the writing side needs is allocated and touched when the
 * spool is opened, before tracing starts, so that writing it allocates no memory while the
 * command runs, save the file's own pages: on tmpfs those are page allocations in the trace,
 * among the command's, unless reserve bytes were taken for them at the open (fallocate).
 */
typedef struct bh_cli_spool bh_cli_spool_t;

/* Opens a spool of subbuf-byte sub-buffers with reserve bytes taken for its file.  0, or an
 * errno (*what says which step failed). */
int bh_cli_spool_open(bh_cli_spool_t **out, size_t subbuf, uint64_t reserve, const char **what);
/* Appends a sub-buffer of n <= subbuf bytes, zero-padded to subbuf.  0 or an errno. */
int bh_cli_spool_put(bh_cli_spool_t *s, const void *buf, size_t n);
/* Ends the writing (the last compressed bytes out).  0 or an errno. */
int bh_cli_spool_finish(bh_cli_spool_t *s);
/* Bytes of the file written so far. */
uint64_t bh_cli_spool_bytes(const bh_cli_spool_t *s);
/* Sub-buffers appended. */
uint64_t bh_cli_spool_pages(const bh_cli_spool_t *s);
/* The next sub-buffer into page (subbuf bytes), from the first after finish: 1, 0 at the
 * end, -1 with errno (EILSEQ: the file does not decompress). */
int bh_cli_spool_get(bh_cli_spool_t *s, void *page);
/* The next bh_cli_spool_get reads the first sub-buffer again. */
void bh_cli_spool_rewind(bh_cli_spool_t *s);
void bh_cli_spool_close(bh_cli_spool_t *s);

#endif
