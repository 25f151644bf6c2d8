/* Native binary, compressed input, writer round trips, truncated and corrupt data. */
#include "trace_test_util.h"
#include "test_rng.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------- */
/* Random events                                                                             */
/* ---------------------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void) { return test_splitmix64(&rng_state); }

static uint64_t test_seed(void) {
  const char *s = getenv("BH_TRACE_SEED");
  uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  printf("trace round trip seed: BH_TRACE_SEED=%" PRIu64 "\n", seed);
  return seed;
}

/* Events every native format can hold: gfp only on allocs, within the nameable bits. */
static bh_event_t *random_events(size_t n) {
  bh_event_t *v = calloc(n, sizeof(*v));
  assert_non_null(v);
  uint64_t t = rng() >> 20;
  for (size_t i = 0; i < n; i++) {
    bh_event_t *e = &v[i];
    uint64_t r = rng();
    e->seq = i;
    e->op = (uint8_t)(1 + r % 3);
    t += (r >> 8) % 5000;
    e->time_ns = (r & 0xff) == 0 ? rng() : t; /* now and then a wild timestamp */
    e->pfn = (r >> 16) % 4 == 0 ? rng() : (rng() >> 40);
    e->order = (uint8_t)(rng() % 64);
    r = rng();
    e->pid = r % 4 == 0 ? -1 : (int32_t)((r >> 2) & 0x7fffffff);
    e->cpu = (r >> 33) % 4 == 0 ? -1 : (int32_t)((r >> 35) % 32768);
    e->migratetype = (r >> 50) % 4 == 0 ? -1 : (int8_t)((r >> 52) % 128);
    if (e->op == BH_EV_ALLOC) {
      e->gfp = (uint32_t)(rng() & 0x1ff);
      e->failed = (uint8_t)(rng() % 8 == 0);
      e->zone = (uint8_t)bh_gfp_zone(e->gfp);
    }
  }
  return v;
}

static void write_events(const char *path, int format, int comp, const bh_event_t *v, size_t n) {
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open(path, format, comp, &w), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(bh_trace_write(w, &v[i]), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
}

static const char *const comp_names[] = {"none", "gzip", "zstd"};

static void test_round_trip(void **state) {
  (void)state;
  rng_state = test_seed();
  const size_t n = 30000;
  bh_event_t *v = random_events(n);
  const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    for (int c = BH_TRACE_COMP_NONE; c <= BH_TRACE_COMP_ZSTD; c++) {
      char name[32];
      snprintf(name, sizeof(name), "rt-%d-%d", f, c);
      const char *p = tt_path(name);
      write_events(p, formats[f], c, v, n);
      bh_trace_t *t;
      assert_int_equal(bh_trace_open(p, NULL, &t), 0);
      assert_int_equal(bh_trace_format(t), formats[f]);
      assert_string_equal(bh_trace_compression(t), comp_names[c]);
      bh_event_t *got;
      size_t k;
      assert_int_equal(tt_read_all(t, &got, &k), 0);
      assert_int_equal(k, n);
      for (size_t i = 0; i < n; i++)
        tt_assert_event_equal(&got[i], &v[i]);
      bh_trace_counts_t cnt;
      bh_trace_counts(t, &cnt);
      assert_int_equal(cnt.events, n);
      assert_int_equal(cnt.malformed, 0);
      assert_int_equal(cnt.allocs + cnt.frees, n);
      assert_int_equal(cnt.lines, formats[f] == BH_TRACE_NATIVE_TEXT ? n + 2 : n);
      free(got);
      bh_trace_close(t);
    }
  }
  free(v);
}

/* bh_trace_opts_t.raw_bytes: what it was given, in order. */
struct raw_seen {
  unsigned char *buf;
  size_t len, cap, calls;
};

static void raw_collect(void *ctx, const void *buf, size_t n) {
  struct raw_seen *r = ctx;
  assert_true(n > 0);
  if (r->len + n > r->cap) {
    r->cap = (r->len + n) * 2;
    r->buf = realloc(r->buf, r->cap);
    assert_non_null(r->buf);
  }
  memcpy(r->buf + r->len, buf, n);
  r->len += n;
  r->calls++;
}

/* A reader that reads to the end has passed every byte of the file once, in order, compressed
 * or not: the command hashes the trace from them. */
static void test_raw_bytes(void **state) {
  (void)state;
  rng_state = 7;
  const size_t n = 30000; /* 960 KB of binary records: several reads of the source */
  bh_event_t *v = random_events(n);
  const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    for (int c = BH_TRACE_COMP_NONE; c <= BH_TRACE_COMP_ZSTD; c++) {
      char name[32];
      snprintf(name, sizeof(name), "raw-%d-%d", f, c);
      const char *p = tt_path(name);
      write_events(p, formats[f], c, v, n);
      struct raw_seen seen = {0};
      bh_trace_opts_t o = {.raw_bytes = raw_collect, .raw_ctx = &seen};
      bh_trace_t *t;
      assert_int_equal(bh_trace_open(p, &o, &t), 0);
      bh_event_t *got;
      size_t k;
      assert_int_equal(tt_read_all(t, &got, &k), 0);
      assert_int_equal(k, n);
      size_t len;
      unsigned char *file = tt_read(p, &len);
      assert_int_equal(seen.len, len);
      assert_memory_equal(seen.buf, file, len);
      if (c == BH_TRACE_COMP_NONE)
        assert_true(seen.calls > 1);
      free(file);
      free(seen.buf);
      free(got);
      bh_trace_close(t);
    }
  }
  free(v);
}

/* The text writer's exact output, and the binary record layout. */
static void test_writer_output(void **state) {
  (void)state;
  bh_event_t e[2];
  memset(e, 0, sizeof(e));
  e[0] = (bh_event_t){.time_ns = 1000,
                      .pfn = 0x10a2b3,
                      .op = BH_EV_ALLOC,
                      .cpu = 1,
                      .pid = 4242,
                      .migratetype = 1,
                      .gfp = BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_ZERO};
  e[1] = (bh_event_t){
      .time_ns = 2000, .pfn = 0x10a2b3, .op = BH_EV_FREE, .cpu = -1, .pid = -1, .migratetype = -1};
  const char *p = tt_path("out.txt");
  write_events(p, BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_NONE, e, 2);
  size_t len;
  char *text = (char *)tt_read(p, &len);
  text[len] = '\0';
  assert_string_equal(text, "# buddyhint-trace 1\n"
                            "# TIME_NS OP(A/F/B) PFN ORDER [cpu= pid= mt= gfp= failed=]\n"
                            "1000 A 0x10a2b3 0 cpu=1 pid=4242 mt=1 "
                            "gfp=__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_ZERO\n"
                            "2000 F 0x10a2b3 0\n");
  free(text);

  e[0].failed = 1;
  e[0].order = 9;
  e[0].cpu = -1;
  p = tt_path("out.bin");
  write_events(p, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, e, 1);
  unsigned char *b = tt_read(p, &len);
  static const unsigned char want[48] = {
      'B',  'H',  'T',  'R', 'A',  'C',  'E', '1', 1, 0, 0, 0,
      32,   0,    0,    0,   0xe8, 0x03, 0,   0,   0, 0, 0, 0, /* time_ns 1000 */
      0xb3, 0xa2, 0x10, 0,   0,    0,    0,   0,               /* pfn */
      0x8a, 0,    0,    0,                                     /* gfp MOVABLE|HIGHMEM|ZERO = 0x8a */
      0x92, 0x10, 0,    0,                                     /* pid 4242 */
      0xff, 0xff,                                              /* cpu -1 */
      1,    9,    1,    1,   0,    0};                         /* op, order, mt, flags, reserved */
  assert_int_equal(len, 48);
  assert_memory_equal(b, want, 48);
  free(b);
}

static void test_writer_errors(void **state) {
  (void)state;
  bh_trace_writer_t *w = (bh_trace_writer_t *)1;
  const char *p = tt_path("w.txt");
  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_FTRACE, BH_TRACE_COMP_NONE, &w), BH_EINVAL);
  assert_null(w);
  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_TEXT, 7, &w), BH_EINVAL);
  const char *bad = "/nonexistent/dir/w.txt";
  assert_int_equal(bh_trace_writer_open(bad, BH_TRACE_NATIVE_TEXT, 0, &w), BH_ESYS);
  assert_string_equal(bh_trace_error(NULL), tt_msg(bad, ": cannot create: No such file or "
                                                        "directory"));

  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_TEXT, 0, &w), 0);
  bh_event_t e = {.op = BH_EV_ALLOC, .order = 64, .pid = -1, .cpu = -1, .migratetype = -1};
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  assert_string_equal(bh_trace_error(NULL), tt_msg(p, ": event 0: order above 63"));
  e.order = 0;
  e.gfp = BH_GFP_NOFALLBACK_WMARK;
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  assert_string_equal(bh_trace_error(NULL),
                      tt_msg(p, ": event 0: gfp has a bit without a kernel name"));
  e.gfp = BH_GFP_ZERO;
  e.op = BH_EV_FREE;
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  e.op = 9;
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  e.op = BH_EV_ALLOC;
  e.pid = -2;
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  e.pid = 1;
  assert_int_equal(bh_trace_write(w, &e), 0); /* rejected events leave the writer usable */
  assert_int_equal(bh_trace_writer_close(w), 0);
  assert_int_equal(bh_trace_writer_close(NULL), 0);

  /* binary holds any gfp bits but only 16-bit cpus */
  p = tt_path("w.bin");
  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_BINARY, 0, &w), 0);
  e.gfp = BH_GFP_NOFALLBACK_WMARK | BH_GFP_DMA;
  e.zone = BH_ZONE_DMA;
  e.cpu = 40000;
  assert_int_equal(bh_trace_write(w, &e), BH_EINVAL);
  e.cpu = 32767;
  assert_int_equal(bh_trace_write(w, &e), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  bh_event_t got;
  assert_int_equal(bh_trace_next(t, &got), 1);
  tt_assert_event_equal(&got, &e);
  bh_trace_close(t);

  /* a full disk: the error comes at close */
  if (access("/dev/full", W_OK) == 0) {
    e.gfp = BH_GFP_DMA;
    assert_int_equal(bh_trace_writer_open("/dev/full", BH_TRACE_NATIVE_TEXT, 0, &w), 0);
    assert_int_equal(bh_trace_write(w, &e), 0);
    assert_int_equal(bh_trace_writer_close(w), BH_EIO);
    assert_string_equal(bh_trace_error(NULL), "/dev/full: write failed: No space left on device");
  }
}

/* Dot files in the test directory: temporary files the writer left behind. */
static int leftover_temporaries(void) {
  DIR *d = opendir(tt_dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static bool file_is(const char *p, const char *text) {
  char buf[256] = "";
  FILE *f = fopen(p, "rb");
  if (!f)
    return false;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  return !strcmp(buf, text);
}

/*
 * A path is written through a temporary file renamed by a successful close: a file already
 * there is untouched until then and after an abort or a failure, keeps its mode when
 * replaced, a symbolic link keeps pointing at the new file, devices are written in place.
 */
static void test_writer_replaces_only_on_success(void **state) {
  (void)state;
  bh_event_t e = {
      .time_ns = 5, .pfn = 0x40, .op = BH_EV_ALLOC, .cpu = -1, .pid = -1, .migratetype = -1};
  const char *p = tt_write("kept.txt", "keep me\n", 8);
  assert_int_equal(chmod(p, 0640), 0);
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_TEXT, 0, &w), 0);
  assert_int_equal(bh_trace_write(w, &e), 0);
  assert_true(file_is(p, "keep me\n")); /* while writing */
  assert_int_equal(leftover_temporaries(), 1);
  bh_trace_writer_abort(w);
  assert_true(file_is(p, "keep me\n"));
  assert_int_equal(leftover_temporaries(), 0);

  /* a write error fails the close */
  if (access("/dev/full", W_OK) == 0) {
    assert_int_equal(bh_trace_writer_open("/dev/full", BH_TRACE_NATIVE_TEXT, 0, &w), 0);
    assert_int_equal(bh_trace_write(w, &e), 0);
    assert_int_equal(bh_trace_writer_close(w), BH_EIO);
    struct stat st;
    assert_int_equal(stat("/dev/full", &st), 0); /* a device is never removed */
    assert_true(S_ISCHR(st.st_mode));
  }

  assert_int_equal(bh_trace_writer_open(p, BH_TRACE_NATIVE_TEXT, 0, &w), 0);
  assert_int_equal(bh_trace_write(w, &e), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
  assert_false(file_is(p, "keep me\n"));
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  assert_int_equal(leftover_temporaries(), 0);

  /* through a symbolic link: the target is replaced, the link stays */
  const char *target = tt_write("target.txt", "old\n", 4);
  const char *link = tt_path("link.txt");
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(bh_trace_writer_open(link, BH_TRACE_NATIVE_BINARY, 0, &w), 0);
  assert_int_equal(bh_trace_write(w, &e), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_false(file_is(target, "old\n"));
  assert_int_equal(leftover_temporaries(), 0);

  /* refused: a directory, a link to nowhere */
  assert_int_equal(bh_trace_writer_open(tt_dir, BH_TRACE_NATIVE_TEXT, 0, &w), BH_EINVAL);
  const char *dangling = tt_path("dangling.txt");
  assert_int_equal(symlink(tt_path("nowhere.txt"), dangling), 0);
  assert_int_equal(bh_trace_writer_open(dangling, BH_TRACE_NATIVE_TEXT, 0, &w), BH_EINVAL);
  assert_int_equal(access(tt_path("nowhere.txt"), F_OK), -1);
  assert_int_equal(leftover_temporaries(), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Native binary errors                                                                      */
/* ---------------------------------------------------------------------------------------- */

static size_t make_binary(unsigned char *b, size_t nrec) {
  memcpy(b, "BHTRACE1\1\0\0\0\x20\0\0\0", 16);
  for (size_t i = 0; i < nrec; i++) {
    unsigned char *r = b + 16 + 32 * i;
    memset(r, 0, 32);
    r[0] = (unsigned char)(i + 1); /* time_ns */
    r[8] = (unsigned char)(0x40 + i);
    memset(r + 20, 0xff, 6); /* pid, cpu -1 */
    r[26] = BH_EV_FREE;
    r[28] = 0xff; /* mt -1 */
  }
  return 16 + 32 * nrec;
}

static void test_binary_errors(void **state) {
  (void)state;
  unsigned char b[16 + 32 * 4 + 10];
  struct {
    size_t off;
    unsigned char val;
    const char *why;
  } bad[] = {
      {26, 7, "bad op (op 7, order 0)"},
      {26, 0, "bad op (op 0, order 0)"},
      {27, 64, "order above 63 (op 2, order 64)"},
      {29, 2, "reserved bits set (op 2, order 0)"},
      {31, 1, "reserved bits set (op 2, order 0)"},
      {29, 1, "gfp or failed set on a free (op 2, order 0)"},
      {16, 1, "gfp or failed set on a free (op 2, order 0)"},
      {28, 0xfe, "pid, cpu or migratetype below -1 (op 2, order 0)"},
      {24, 0xfe, "pid, cpu or migratetype below -1 (op 2, order 0)"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    size_t len = make_binary(b, 3);
    b[16 + 32 + bad[i].off] = bad[i].val; /* record 1 */
    const char *p = tt_write("bad.bin", b, len);
    bh_trace_t *t;
    bh_event_t ev;
    assert_int_equal(bh_trace_open(p, NULL, &t), 0);
    assert_string_equal(bh_trace_format_name(t), "native-binary");
    assert_int_equal(bh_trace_next(t, &ev), 1);
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
    assert_string_equal(bh_trace_error(t), tt_msg(p, ": record 1: %s", bad[i].why));
    bh_trace_close(t);
    bh_trace_opts_t o = {.lenient = true};
    assert_int_equal(bh_trace_open(p, &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), 1);
    assert_int_equal(bh_trace_next(t, &ev), 1);
    assert_int_equal(ev.time_ns, 3);
    assert_int_equal(ev.seq, 1);
    assert_int_equal(ev.pfn, 0x42);
    assert_int_equal(bh_trace_next(t, &ev), 0);
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    assert_int_equal(c.lines, 3);
    assert_int_equal(c.malformed, 1);
    bh_trace_close(t);
  }

  /* truncated final record */
  size_t len = make_binary(b, 2) + 10;
  const char *p = tt_write("trunc.bin", b, len);
  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(ev.cpu, -1);
  assert_int_equal(ev.pid, -1);
  assert_int_equal(ev.migratetype, -1);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t),
                      tt_msg(p, ": record 2: truncated record (10 of 32 bytes)"));
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  bh_trace_close(t);
  bh_trace_opts_t o = {.lenient = true};
  assert_int_equal(bh_trace_open(p, &o, &t), 0);
  bh_event_t *evs;
  size_t n;
  assert_int_equal(tt_read_all(t, &evs, &n), 0);
  assert_int_equal(n, 2);
  free(evs);
  bh_trace_close(t);

  /* headers */
  make_binary(b, 0);
  p = tt_write("hdr-only.bin", b, 16);
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), 0);
  bh_trace_close(t);
  p = tt_write("short-hdr.bin", b, 9);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": truncated binary header"));
  b[8] = 4;
  p = tt_write("v4.bin", b, 16);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": unsupported binary trace version 4"));
  b[8] = 2; /* version 2 has a 24-byte header: the description's length */
  p = tt_write("v2-short.bin", b, 16);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": truncated binary header"));
  b[8] = 1;
  b[12] = 40;
  p = tt_write("rs.bin", b, 16);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": bad record size 40 (version 1 has 32)"));
}

/* ---------------------------------------------------------------------------------------- */
/* Compressed input                                                                          */
/* ---------------------------------------------------------------------------------------- */

static void expect_events(const char *path, const char *format, const char *comp, size_t n) {
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(path, NULL, &t), 0);
  assert_string_equal(bh_trace_format_name(t), format);
  assert_string_equal(bh_trace_compression(t), comp);
  bh_event_t *evs;
  size_t k;
  assert_int_equal(tt_read_all(t, &evs, &k), 0);
  assert_int_equal(k, n);
  free(evs);
  bh_trace_close(t);
}

static void test_compressed_fixtures(void **state) {
  (void)state;
  static const char *const files[] = {"ftrace_6x.txt", "ftrace_old.txt", "perf_script.txt",
                                      "native.txt"};
  static const char *const formats[] = {"ftrace", "ftrace", "perf-script", "native-text"};
  static const size_t nev[] = {5, 4, 5, 5};
  for (int i = 0; i < 4; i++) {
    char src[512], name[64];
    snprintf(src, sizeof(src), DATA_DIR "/%s", files[i]);
    size_t len;
    unsigned char *b = tt_read(src, &len);
    snprintf(name, sizeof(name), "%s.gz", files[i]);
    expect_events(tt_write_gzip(name, b, len), formats[i], "gzip", nev[i]);
    snprintf(name, sizeof(name), "%s.zst", files[i]);
    expect_events(tt_write_zstd(name, b, len), formats[i], "zstd", nev[i]);
    free(b);
  }
}

/* Concatenated gzip members and zstd frames read as one stream. */
static void test_multi_member(void **state) {
  (void)state;
  size_t len;
  unsigned char *b = tt_read(DATA_DIR "/native.txt", &len);
  size_t half = 120; /* somewhere inside a line */
  const char *g1 = tt_write_gzip("m1.gz", b, half);
  const char *g2 = tt_write_gzip("m2.gz", b + half, len - half);
  size_t l1, l2;
  unsigned char *c1 = tt_read(g1, &l1), *c2 = tt_read(g2, &l2);
  unsigned char *cat = malloc(l1 + l2 + 8);
  memcpy(cat, c1, l1);
  memcpy(cat + l1, c2, l2);
  expect_events(tt_write("multi.gz", cat, l1 + l2), "native-text", "gzip", 5);

  /* trailing bytes that are not a gzip member */
  memcpy(cat + l1 + l2, "garbage!", 8);
  const char *p = tt_write("trail.gz", cat, l1 + l2 + 8);
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  bh_event_t *evs;
  size_t n;
  assert_int_equal(tt_read_all(t, &evs, &n), BH_EIO);
  assert_int_equal(n, 5);
  free(evs);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ": trailing garbage after the gzip stream"));
  bh_trace_close(t);
  free(c1);
  free(c2);
  free(cat);

  size_t z1, z2;
  unsigned char *f1 = tt_zstd(b, half, &z1), *f2 = tt_zstd(b + half, len - half, &z2);
  cat = malloc(z1 + z2);
  memcpy(cat, f1, z1);
  memcpy(cat + z1, f2, z2);
  expect_events(tt_write("multi.zst", cat, z1 + z2), "native-text", "zstd", 5);
  free(f1);
  free(f2);
  free(cat);
  free(b);
}

/* A compressed stream cut short: the events before the cut, then BH_EIO. */
static void check_truncated(const char *full, const char *name, size_t keep, const char *what,
                            const bh_event_t *v, size_t nv) {
  const char *p = tt_truncate_copy(full, name, keep);
  bh_trace_t *t;
  int r = bh_trace_open(p, NULL, &t);
  if (r < 0) { /* cut before any complete line */
    assert_int_equal(r, BH_EIO);
    assert_string_equal(bh_trace_error(NULL), tt_msg(p, ": %s", what));
    return;
  }
  bh_event_t *evs;
  size_t n;
  assert_int_equal(tt_read_all(t, &evs, &n), BH_EIO);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ": %s", what));
  assert_true(n <= nv);
  for (size_t i = 0; i < n; i++)
    tt_assert_event_equal(&evs[i], &v[i]);
  bh_event_t ev;
  assert_int_equal(bh_trace_next(t, &ev), BH_EIO); /* sticky */
  free(evs);
  bh_trace_close(t);
}

static void test_truncated_compressed(void **state) {
  (void)state;
  rng_state = 42;
  const size_t n = 50000;
  bh_event_t *v = random_events(n);
  const int formats[] = {BH_TRACE_NATIVE_TEXT, BH_TRACE_NATIVE_BINARY};
  for (int f = 0; f < 2; f++) {
    for (int c = BH_TRACE_COMP_GZIP; c <= BH_TRACE_COMP_ZSTD; c++) {
      const char *what =
          c == BH_TRACE_COMP_GZIP ? "truncated gzip stream" : "truncated zstd stream";
      char full[512], name[32];
      snprintf(name, sizeof(name), "full-%d-%d", f, c);
      snprintf(full, sizeof(full), "%s", tt_path(name));
      write_events(full, formats[f], c, v, n);
      size_t len;
      free(tt_read(full, &len));
      const size_t keeps[] = {len / 2, len - 1, len - 4, 11, 5};
      for (size_t k = 0; k < 5; k++) {
        snprintf(name, sizeof(name), "cut-%d-%d-%zu", f, c, k);
        check_truncated(full, name, keeps[k], what, v, n);
      }
    }
  }
  free(v);

  /* small fixture, trailer cut off: every event comes out, then the error */
  size_t len;
  unsigned char *b = tt_read(DATA_DIR "/ftrace_6x.txt", &len);
  const char *gz = tt_write_gzip("f6.gz", b, len);
  size_t glen;
  free(tt_read(gz, &glen));
  const char *p = tt_truncate_copy(gz, "f6-cut.gz", glen - 4);
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  bh_event_t *evs;
  size_t k;
  assert_int_equal(tt_read_all(t, &evs, &k), BH_EIO);
  assert_int_equal(k, 5);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ": truncated gzip stream"));
  free(evs);
  bh_trace_close(t);
  free(b);
}

static void test_corrupt_compressed(void **state) {
  (void)state;
  rng_state = 7;
  const size_t n = 20000;
  bh_event_t *v = random_events(n);
  for (int c = BH_TRACE_COMP_GZIP; c <= BH_TRACE_COMP_ZSTD; c++) {
    const char *p = tt_path(c == BH_TRACE_COMP_GZIP ? "corrupt.gz" : "corrupt.zst");
    write_events(p, BH_TRACE_NATIVE_BINARY, c, v, n);
    size_t len;
    unsigned char *b = tt_read(p, &len);
    for (size_t i = len / 2; i < len / 2 + 64; i++)
      b[i] ^= 0x5a;
    tt_write(c == BH_TRACE_COMP_GZIP ? "corrupt.gz" : "corrupt.zst", b, len);
    free(b);
    const char *prefix =
        c == BH_TRACE_COMP_GZIP ? ": corrupt gzip stream: " : ": corrupt zstd stream: ";
    /* lenient: records decoded from the damaged part may be skipped; the stream error is not */
    bh_trace_opts_t o = {.lenient = true};
    bh_trace_t *t;
    int r = bh_trace_open(p, &o, &t);
    const char *msg;
    if (r == 0) {
      bh_event_t *evs;
      size_t k;
      r = tt_read_all(t, &evs, &k);
      assert_true(k < n);
      free(evs);
      msg = bh_trace_error(t);
    } else {
      t = NULL;
      msg = bh_trace_error(NULL);
    }
    assert_int_equal(r, BH_EIO);
    const char *want = tt_msg(p, "%s", prefix);
    if (strncmp(msg, want, strlen(want)) != 0)
      fail_msg("got '%s', want a message starting with '%s'", msg, want);
    bh_trace_close(t);
  }
  free(v);

  /* compressed but empty */
  const char *p = tt_write_gzip("empty.gz", "", 0);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": empty trace"));
  p = tt_write_zstd("empty.zst", "", 0);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": empty trace"));
  /* just the magic */
  p = tt_write("magic.gz", "\x1f\x8b", 2);
  tt_expect_open_error(p, BH_EIO, tt_msg(p, ": truncated gzip stream"));
  p = tt_write("magic.zst", "\x28\xb5\x2f\xfd", 4);
  tt_expect_open_error(p, BH_EIO, tt_msg(p, ": truncated zstd stream"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_raw_bytes),
      cmocka_unit_test(test_writer_output),
      cmocka_unit_test(test_writer_errors),
      cmocka_unit_test(test_writer_replaces_only_on_success),
      cmocka_unit_test(test_binary_errors),
      cmocka_unit_test(test_compressed_fixtures),
      cmocka_unit_test(test_multi_member),
      cmocka_unit_test(test_truncated_compressed),
      cmocka_unit_test(test_corrupt_compressed),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
