/*
 * Helpers shared by the trace tests: a temporary directory, files written from memory,
 * gzip/zstd compression with the libraries' own APIs, event comparison, and a fragmented arena.
 */
#ifndef BH_TRACE_TEST_UTIL_H
#define BH_TRACE_TEST_UTIL_H

#include <buddyhint.h>
#include <buddyhint/trace.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define DATA_DIR BH_SOURCE_DIR "/tests/trace/data"

static char tt_dir[256];

/* Creates the test's temporary directory (call from a group setup). */
static inline int tt_setup(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tt_dir, sizeof(tt_dir), "%s/bh-trace-test-XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tt_dir) ? 0 : -1;
}

static inline int tt_remove_one(const char *path, const struct stat *sb, int flag,
                                struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes the directory and everything in it (replays write dump directories into it). */
static inline int tt_teardown(void **state) {
  (void)state;
  if (tt_dir[0])
    nftw(tt_dir, tt_remove_one, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* A path in the temporary directory (static buffer rotated among 4). */
static inline const char *tt_path(const char *name) {
  static char bufs[4][512];
  static int i;
  char *p = bufs[i++ & 3];
  snprintf(p, 512, "%s/%s", tt_dir, name);
  return p;
}

static inline const char *tt_write(const char *name, const void *data, size_t len) {
  const char *p = tt_path(name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  if (len)
    assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
  return p;
}

static inline const char *tt_write_str(const char *name, const char *text) {
  return tt_write(name, text, strlen(text));
}

/* Whole file into a malloc'd buffer. */
static inline unsigned char *tt_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* gzip with zlib's gz* API (one member). */
static inline const char *tt_write_gzip(const char *name, const void *data, size_t len) {
  const char *p = tt_path(name);
  gzFile g = gzopen(p, "wb6");
  assert_non_null(g);
  if (len)
    assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
  assert_int_equal(gzclose(g), Z_OK);
  return p;
}

/* One zstd frame in a malloc'd buffer. */
static inline void *tt_zstd(const void *data, size_t len, size_t *clen) {
  size_t cap = ZSTD_compressBound(len);
  void *c = malloc(cap);
  assert_non_null(c);
  size_t n = ZSTD_compress(c, cap, data, len, 3);
  assert_false(ZSTD_isError(n));
  *clen = n;
  return c;
}

static inline const char *tt_write_zstd(const char *name, const void *data, size_t len) {
  size_t clen;
  void *c = tt_zstd(data, len, &clen);
  const char *p = tt_write(name, c, clen);
  free(c);
  return p;
}

/* Copies the first keep bytes of src to a new file. */
static inline const char *tt_truncate_copy(const char *src, const char *name, size_t keep) {
  size_t len;
  unsigned char *b = tt_read(src, &len);
  assert_true(keep <= len);
  const char *p = tt_write(name, b, keep);
  free(b);
  return p;
}

/* "PATH" + suffix, for expected messages. */
static inline const char *tt_msg(const char *path, const char *fmt, ...) {
  static char buf[1024];
  int n = snprintf(buf, sizeof(buf), "%s", path);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
  va_end(ap);
  return buf;
}

static inline void tt_assert_event_equal(const bh_event_t *a, const bh_event_t *b) {
  assert_int_equal(a->time_ns, b->time_ns);
  assert_int_equal(a->seq, b->seq);
  assert_int_equal(a->pfn, b->pfn);
  assert_int_equal(a->gfp, b->gfp);
  assert_int_equal(a->pid, b->pid);
  assert_int_equal(a->cpu, b->cpu);
  assert_int_equal(a->op, b->op);
  assert_int_equal(a->order, b->order);
  assert_int_equal(a->migratetype, b->migratetype);
  assert_int_equal(a->zone, b->zone);
  assert_int_equal(a->failed, b->failed);
}

/* Opens path (must succeed) and reads all events into a malloc'd array; returns the last
 * bh_trace_next result (0 at a clean end) and the count in *n. */
static inline int tt_read_all(bh_trace_t *t, bh_event_t **evs, size_t *n) {
  size_t cap = 64, k = 0;
  bh_event_t *v = malloc(cap * sizeof(*v));
  int r;
  while ((r = bh_trace_next(t, &v[k])) == 1) {
    if (++k == cap)
      v = realloc(v, (cap *= 2) * sizeof(*v));
  }
  *evs = v;
  *n = k;
  return r;
}

/* Opens path with o (NULL: the defaults; must succeed), reads it to the end and returns the
 * reader's counts.  The events go to *evs (freed when evs is NULL), their number to *n (when
 * n is not NULL). */
static inline bh_trace_counts_t tt_read_counts(const char *path, const bh_trace_opts_t *o,
                                               bh_event_t **evs, size_t *n) {
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(path, o, &t), 0);
  bh_event_t *v;
  size_t k;
  assert_int_equal(tt_read_all(t, &v, &k), 0);
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  bh_trace_close(t);
  if (evs)
    *evs = v;
  else
    free(v);
  if (n)
    *n = k;
  return c;
}

/* Expect an open to fail with err and exactly this message. */
static inline void tt_expect_open_error(const char *path, int err, const char *msg) {
  bh_trace_t *t = (bh_trace_t *)1;
  assert_int_equal(bh_trace_open(path, NULL, &t), err);
  assert_null(t);
  assert_string_equal(bh_trace_error(NULL), msg);
}

/* A sim-backed arena without SMP (one pcp set), its DMA, DMA32 and Normal zones of these
 * sizes in MiB. */
static inline bh_arena_t *tt_sim_arena(unsigned dma_mib, unsigned dma32_mib, unsigned normal_mib) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  cfg.zone_bytes[BH_ZONE_DMA] = (uint64_t)dma_mib << 20;
  cfg.zone_bytes[BH_ZONE_DMA32] = (uint64_t)dma32_mib << 20;
  cfg.zone_bytes[BH_ZONE_NORMAL] = (uint64_t)normal_mib << 20;
  cfg.smp = false;
  bh_arena_t *a;
  assert_int_equal(bh_arena_create(&cfg, &a), 0);
  return a;
}

/*
 * A seeded mix of allocations of every mobility, orders 0..4, about half of them freed again:
 * a fragmented arena.  Stops after `rounds` or once `max_live` blocks are live.
 */
static inline void tt_churn(bh_arena_t *a, uint64_t seed, int rounds, unsigned max_live) {
  static const unsigned gfps[] = {BH_GFP_USER_MOVABLE, BH_GFP_KERNEL, BH_GFP_RECLAIMABLE,
                                  BH_GFP_USER_MOVABLE};
  uint64_t x = seed, *live = calloc(max_live, sizeof(uint64_t));
  unsigned *ord = calloc(max_live, sizeof(unsigned)), n = 0;
  assert_non_null(live);
  assert_non_null(ord);
  for (int i = 0; i < rounds && n < max_live; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    unsigned o = (x >> 8) % 8 ? 0 : (unsigned)((x >> 12) % 5);
    uint64_t pfn;
    if (!bh_alloc_pfn(a, gfps[(x >> 20) & 3], o, 0, &pfn)) {
      live[n] = pfn;
      ord[n++] = o;
    }
    if (n && (x >> 30) % 2) {
      unsigned k = (unsigned)((x >> 33) % n);
      assert_int_equal(bh_free_pfn(a, live[k], ord[k], 0), 0);
      live[k] = live[--n];
      ord[k] = ord[n];
    }
  }
  free(live);
  free(ord);
}

#endif
