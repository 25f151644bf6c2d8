/* Text formats: ftrace (6.x and pre-5.14), perf script, native text; errors and lenient mode. */
#include "trace_test_util.h"

#include <fcntl.h>

static bh_event_t ev_make(uint64_t t, int op, uint64_t pfn, int order, int mt, uint32_t gfp,
                          int pid, int cpu, int failed) {
  bh_event_t e;
  memset(&e, 0, sizeof(e));
  e.time_ns = t;
  e.op = (uint8_t)op;
  e.pfn = pfn;
  e.order = (uint8_t)order;
  e.migratetype = (int8_t)mt;
  e.gfp = gfp;
  e.pid = pid;
  e.cpu = cpu;
  e.failed = (uint8_t)failed;
  e.zone = op == BH_EV_ALLOC ? (uint8_t)bh_gfp_zone(gfp) : 0;
  return e;
}

#define MOV_HI (BH_GFP_MOVABLE | BH_GFP_HIGHMEM)

/* Reads path fully, checks format, events (seq filled in here) and counters. */
static void check_file(const char *path, const char *format, const bh_event_t *want, size_t n,
                       const bh_trace_counts_t *counts) {
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(path, NULL, &t), 0);
  assert_string_equal(bh_trace_format_name(t), format);
  assert_string_equal(bh_trace_compression(t), "none");
  bh_event_t *got;
  size_t k;
  assert_int_equal(tt_read_all(t, &got, &k), 0);
  assert_int_equal(k, n);
  for (size_t i = 0; i < n; i++) {
    bh_event_t w = want[i];
    w.seq = i;
    tt_assert_event_equal(&got[i], &w);
  }
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  assert_int_equal(c.lines, counts->lines);
  assert_int_equal(c.events, counts->events);
  assert_int_equal(c.other_lines, counts->other_lines);
  assert_int_equal(c.malformed, counts->malformed);
  assert_int_equal(c.allocs, counts->allocs);
  assert_int_equal(c.frees, counts->frees);
  assert_int_equal(c.gfp_unknown, counts->gfp_unknown);
  assert_int_equal(bh_trace_next(t, &got[0]), 0); /* the end stays the end */
  assert_string_equal(bh_trace_error(t), "");
  free(got);
  bh_trace_close(t);
}

static void test_ftrace_6x(void **state) {
  (void)state;
  const bh_event_t want[] = {
      ev_make(1234567890000ull, BH_EV_ALLOC, 0x10a2b3, 0, 1, MOV_HI | BH_GFP_ZERO, 4242, 1, 0),
      ev_make(1234567901000ull, BH_EV_FREE, 0x10a2b3, 0, -1, 0, 777, 3, 0),
      ev_make(1234700001000ull, BH_EV_ALLOC, 0, 3, 0, 0, 99, 2, 1),
      ev_make(1234800000000ull, BH_EV_FREE_BATCHED, 0x10a000, 0, -1, 0, 4242, 1, 0),
      ev_make(1235000000123ull, BH_EV_ALLOC, 0x3000, 9, 1, BH_GFP_TRANSHUGE, 4242, 1, 0),
  };
  const bh_trace_counts_t c = {
      .lines = 19, .events = 5, .other_lines = 14, .allocs = 3, .frees = 2};
  check_file(DATA_DIR "/ftrace_6x.txt", "ftrace", want, 5, &c);
}

static void test_ftrace_old_decimal(void **state) {
  (void)state;
  const bh_event_t want[] = {
      ev_make(512000001000ull, BH_EV_ALLOC, 1090227, 0, 1, MOV_HI, 4242, 1, 0),
      ev_make(512000002000ull, BH_EV_FREE, 1090227, 0, -1, 0, 4242, 1, 0),
      ev_make(512000003000ull, BH_EV_ALLOC, 0, 1, 0, BH_GFP_ATOMIC | BH_GFP_HIGH | BH_GFP_ZERO, 17,
              0, 1),
      ev_make(512000004000ull, BH_EV_FREE, 2, 1, -1, 0, 5, 2, 0),
  };
  const bh_trace_counts_t c = {
      .lines = 14, .events = 4, .other_lines = 10, .allocs = 2, .frees = 2};
  check_file(DATA_DIR "/ftrace_old.txt", "ftrace", want, 4, &c);
}

/* Linux 2.6.33 to 3.2 named the frees mm_page_free_direct and mm_pagevec_free; a name that
 * only starts like one is another event. */
static void test_ftrace_pre_3_3_names(void **state) {
  (void)state;
  const bh_event_t want[] = {
      ev_make(300000001000ull, BH_EV_ALLOC, 1090227, 0, 1, MOV_HI, 4242, 1, 0),
      ev_make(300000002000ull, BH_EV_FREE, 1090227, 0, -1, 0, 4242, 1, 0),
      ev_make(300000003000ull, BH_EV_FREE_BATCHED, 1090227, 0, -1, 0, 4242, 1, 0),
      ev_make(300000004000ull, BH_EV_FREE, 2, 3, -1, 0, 4242, 1, 0),
  };
  const bh_trace_counts_t c = {.lines = 9, .events = 4, .other_lines = 5, .allocs = 1, .frees = 3};
  check_file(DATA_DIR "/ftrace_3x.txt", "ftrace", want, 4, &c);
}

static void test_perf_script(void **state) {
  (void)state;
  const bh_event_t want[] = {
      ev_make(1234567890000ull, BH_EV_ALLOC, 0x10a271, 0, 1, MOV_HI | BH_GFP_ZERO, 4242, 0, 0),
      ev_make(1234567899000ull, BH_EV_FREE, 1090161, 0, -1, 0, 4242, 0, 0),
      ev_make(1234600000000ull, BH_EV_FREE_BATCHED, 1, 0, -1, 0, 88, 1, 0),
      ev_make(1234800000000ull, BH_EV_ALLOC, 0, 2, 0, BH_GFP_ATOMIC, 4242, -1, 1),
      ev_make(1234900000123ull, BH_EV_ALLOC, 0x10, 0, 2, BH_GFP_RECLAIMABLE, 4301, 3, 0),
  };
  const bh_trace_counts_t c = {
      .lines = 6, .events = 5, .other_lines = 1, .allocs = 3, .frees = 2, .gfp_unknown = 1};
  check_file(DATA_DIR "/perf_script.txt", "perf-script", want, 5, &c);
}

static void test_native_text(void **state) {
  (void)state;
  const bh_event_t want[] = {
      ev_make(1000, BH_EV_ALLOC, 0x100, 0, 1, MOV_HI, 1, 0, 0),
      ev_make(2000, BH_EV_ALLOC, 4096, 2, -1, BH_GFP_DMA32 | BH_GFP_ZERO, -1, -1, 0),
      ev_make(3000, BH_EV_FREE, 0x100, 0, -1, 0, -1, 0, 0),
      ev_make(4000, BH_EV_FREE_BATCHED, 4096, 2, -1, 0, 7, -1, 0),
      ev_make(5000, BH_EV_ALLOC, 0, 5, 0, 0, -1, -1, 1),
  };
  const bh_trace_counts_t c = {.lines = 8, .events = 5, .other_lines = 3, .allocs = 3, .frees = 2};
  check_file(DATA_DIR "/native.txt", "native-text", want, 5, &c);
}

/* trace_pipe has no header; the last line may lack its newline; CRLF is tolerated. */
static void test_ftrace_pipe_no_header(void **state) {
  (void)state;
  const char *p = tt_write_str(
      "pipe.txt",
      "  task-1 [000] .... 1.5: mm_page_free: page=0000000000000001 pfn=0x7 order=2\r\n"
      "  task-2 [001] .... 2.000000001: mm_page_alloc: page=0000000000000001 pfn=0x8 order=0 "
      "migratetype=2 gfp_flags=GFP_KERNEL|__GFP_RECLAIMABLE\n"
      "  task-3 [001] .... 3: mm_page_free: page=(null) pfn=0x0 order=0");
  /* (a NULL page marks failed allocations only; the integer timestamp is kept as it is) */
  const bh_event_t want[] = {
      ev_make(1500000000ull, BH_EV_FREE, 7, 2, -1, 0, 1, 0, 0),
      ev_make(2000000001ull, BH_EV_ALLOC, 8, 0, 2, BH_GFP_RECLAIMABLE, 2, 1, 0),
      ev_make(3, BH_EV_FREE, 0, 0, -1, 0, 3, 1, 0),
  };
  const bh_trace_counts_t c = {.lines = 3, .events = 3, .allocs = 1, .frees = 2};
  check_file(p, "ftrace", want, 3, &c);
}

/* Native text written on Windows, or with trailing blanks. */
static void test_native_crlf(void **state) {
  (void)state;
  const char *p = tt_write_str("crlf.txt", "# buddyhint-trace 1\r\n"
                                           "10 A 0x20 1 gfp=GFP_DMA \r\n"
                                           "\r\n"
                                           "11 F 0x20 1\t\r\n");
  const bh_event_t want[] = {
      ev_make(10, BH_EV_ALLOC, 0x20, 1, -1, BH_GFP_DMA, -1, -1, 0),
      ev_make(11, BH_EV_FREE, 0x20, 1, -1, 0, -1, -1, 0),
  };
  const bh_trace_counts_t c = {.lines = 4, .events = 2, .other_lines = 2, .allocs = 1, .frees = 1};
  check_file(p, "native-text", want, 2, &c);
}

/* An ftrace buffer with no events is a valid, empty trace. */
static void test_ftrace_header_only(void **state) {
  (void)state;
  const char *p = tt_write_str("hdr.txt", "# tracer: nop\n#\n#   TASK-PID  CPU#\n");
  const bh_trace_counts_t c = {.lines = 3, .other_lines = 3};
  check_file(p, "ftrace", NULL, 0, &c);
}

/* Standard input, named "-". */
static void test_stdin(void **state) {
  (void)state;
  int saved = dup(0);
  int fd = open(DATA_DIR "/native.txt", O_RDONLY);
  assert_true(fd >= 0 && saved >= 0);
  assert_int_equal(dup2(fd, 0), 0);
  close(fd);
  bh_trace_t *t;
  assert_int_equal(bh_trace_open("-", NULL, &t), 0);
  assert_string_equal(bh_trace_format_name(t), "native-text");
  bh_event_t *evs;
  size_t n;
  assert_int_equal(tt_read_all(t, &evs, &n), 0);
  assert_int_equal(n, 5);
  free(evs);
  bh_trace_close(t);
  dup2(saved, 0);
  close(saved);

  const char *p = tt_write_str("bad-stdin.txt", "# buddyhint-trace 1\n1 A 1 99\n");
  fd = open(p, O_RDONLY);
  saved = dup(0);
  dup2(fd, 0);
  close(fd);
  assert_int_equal(bh_trace_open("-", NULL, &t), 0);
  bh_event_t ev;
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), "<stdin>:2: bad order '99' (0..63)");
  bh_trace_close(t);
  dup2(saved, 0);
  close(saved);
}

/* ---------------------------------------------------------------------------------------- */
/* Malformed lines                                                                           */
/* ---------------------------------------------------------------------------------------- */

#define FT_PREFIX "          memhog-4242    [001] .....  10.000001: "
#define FT_ALLOC FT_PREFIX "mm_page_alloc: page=0000000000000001 "
#define FT_GOOD FT_ALLOC "pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_KERNEL\n"

struct bad_line {
  const char *line; /* without newline */
  const char *why;  /* message after "FILE:2: " */
};

static const struct bad_line ftrace_bad[] = {
    {FT_ALLOC "pfn=0x10 order=99 migratetype=1 gfp_flags=GFP_KERNEL", "bad order '99' (0..63)"},
    {FT_ALLOC "pfn=0x10 order=64 migratetype=1 gfp_flags=GFP_KERNEL", "bad order '64' (0..63)"},
    {FT_ALLOC "pfn=0x10 order=-1 migratetype=1 gfp_flags=GFP_KERNEL", "bad order '-1' (0..63)"},
    {FT_ALLOC "pfn=0x10000000000000000 order=0 migratetype=1 gfp_flags=GFP_KERNEL",
     "bad pfn '0x10000000000000000'"},
    {FT_ALLOC "pfn=18446744073709551616 order=0 migratetype=1 gfp_flags=GFP_KERNEL",
     "bad pfn '18446744073709551616'"},
    {FT_ALLOC "pfn=0xZZ order=0 migratetype=1 gfp_flags=GFP_KERNEL", "bad pfn '0xZZ'"},
    {FT_ALLOC "pfn= order=0 migratetype=1 gfp_flags=GFP_KERNEL", "bad pfn ''"},
    {FT_ALLOC "pfn=0x10 order=0 migratetype=1", "missing gfp_flags="},
    {FT_ALLOC "order=0 migratetype=1 gfp_flags=GFP_KERNEL", "missing pfn="},
    {FT_ALLOC "pfn=0x10 order=0 migratetype=200 gfp_flags=GFP_KERNEL", "bad migratetype '200'"},
    {FT_ALLOC "pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_KERNEL||X",
     "bad gfp_flags 'GFP_KERNEL||X'"},
    {FT_ALLOC "pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_KERNEL junk",
     "expected key=value, got 'junk'"},
    {FT_PREFIX "mm_page_free: pfn=0x10 order=0", "missing page="},
    {FT_PREFIX "mm_page_free:", "missing page="},
    {"          memhog-4242    [001] .....  10.0000000001: mm_page_free: page=1 pfn=1 order=0",
     "bad timestamp '10.0000000001'"},
    {"          memhog-4242    [001] .....  99999999999999999999.5: mm_page_free: page=1 "
     "pfn=1 order=0",
     "bad timestamp '99999999999999999999.5'"},
    {"          memhog-4242    [x01] .....  10.5: mm_page_free: page=1 pfn=1 order=0",
     "bad [cpu] field"},
    {"          memhog    [001] .....  10.5: mm_page_free: page=1 pfn=1 order=0",
     "no pid before the timestamp"},
    {"          memhog-4242    ..... 10.5: mm_page_free: page=1 pfn=1 order=0",
     "no [cpu] field before the flags"},
    {"garbage mm_page_alloc: page=1 pfn=1 order=0", "cannot find the 'TIMESTAMP: EVENT:' part"},
};

static void test_ftrace_malformed(void **state) {
  (void)state;
  char text[1024], name[32];
  for (size_t i = 0; i < sizeof(ftrace_bad) / sizeof(ftrace_bad[0]); i++) {
    snprintf(text, sizeof(text), "# header\n%s\n" FT_GOOD, ftrace_bad[i].line);
    snprintf(name, sizeof(name), "bad%zu.txt", i);
    const char *p = tt_write_str(name, text);
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(p, NULL, &t), 0);
    bh_event_t ev;
    int r = bh_trace_next(t, &ev);
    if (r != BH_EFORMAT || strcmp(bh_trace_error(t), tt_msg(p, ":2: %s", ftrace_bad[i].why)))
      fail_msg("case %zu: got %d '%s', want '%s'", i, r, bh_trace_error(t),
               tt_msg(p, ":2: %s", ftrace_bad[i].why));
    assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT); /* sticky */
    bh_trace_close(t);

    /* lenient: skipped, counted, and the good line after it is read */
    bh_trace_opts_t o = {.lenient = true};
    assert_int_equal(bh_trace_open(p, &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), 1);
    assert_int_equal(ev.pfn, 0x10);
    assert_int_equal(ev.seq, 0);
    assert_int_equal(bh_trace_next(t, &ev), 0);
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    assert_int_equal(c.lines, 3);
    assert_int_equal(c.malformed, 1);
    assert_int_equal(c.events, 1);
    assert_int_equal(c.other_lines, 1);
    assert_string_equal(bh_trace_error(t), tt_msg(p, ":2: %s", ftrace_bad[i].why));
    bh_trace_close(t);
  }
}

static const struct bad_line native_bad[] = {
    {"1 A 1 99", "bad order '99' (0..63)"},
    {"1 A 1", "missing order"},
    {"1 A", "missing pfn"},
    {"1", "missing op"},
    {"x A 1 0", "bad time 'x'"},
    {"1 X 1 0", "bad op 'X' (A, F or B)"},
    {"1 AF 1 0", "bad op 'AF' (A, F or B)"},
    {"1 A 0x 0", "bad pfn '0x'"},
    {"1 A 1 0 cpu=-2", "bad cpu '-2'"},
    {"1 A 1 0 pid=x", "bad pid 'x'"},
    {"1 A 1 0 mt=128", "bad mt '128'"},
    {"1 A 1 0 failed=2", "bad failed '2' (0 or 1)"},
    {"1 A 1 0 color=red", "unknown key 'color'"},
    {"1 A 1 0 cpu", "expected key=value, got 'cpu'"},
    {"1 F 1 0 gfp=GFP_KERNEL|__GFP_ZERO", "gfp= and failed= belong to allocations only"},
    {"1 F 1 0 failed=1", "gfp= and failed= belong to allocations only"},
    {"1 A 1 0 gfp=", "bad gfp ''"},
};

static void test_native_malformed(void **state) {
  (void)state;
  char text[512], name[32];
  for (size_t i = 0; i < sizeof(native_bad) / sizeof(native_bad[0]); i++) {
    snprintf(text, sizeof(text), "# buddyhint-trace 1\n%s\n5 F 0x10 0\n", native_bad[i].line);
    snprintf(name, sizeof(name), "nbad%zu.txt", i);
    const char *p = tt_write_str(name, text);
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(p, NULL, &t), 0);
    bh_event_t ev;
    int r = bh_trace_next(t, &ev);
    if (r != BH_EFORMAT || strcmp(bh_trace_error(t), tt_msg(p, ":2: %s", native_bad[i].why)))
      fail_msg("case %zu: got %d '%s', want '%s'", i, r, bh_trace_error(t),
               tt_msg(p, ":2: %s", native_bad[i].why));
    bh_trace_close(t);
    bh_trace_opts_t o = {.lenient = true};
    assert_int_equal(bh_trace_open(p, &o, &t), 0);
    assert_int_equal(bh_trace_next(t, &ev), 1);
    assert_int_equal(ev.time_ns, 5);
    assert_int_equal(bh_trace_next(t, &ev), 0);
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    assert_int_equal(c.malformed, 1);
    bh_trace_close(t);
  }
}

/* Lenient mode over a mix: counts add up, seq stays dense. */
static void test_lenient_counts(void **state) {
  (void)state;
  const char *p = tt_write_str("mix.txt", "# buddyhint-trace 1\n"
                                          "1 A 1 0\n"
                                          "2 A 1 64\n"
                                          "# comment\n"
                                          "3 Q 1 0\n"
                                          "\n"
                                          "4 F 1 0\n"
                                          "5 F 1 0 bogus=1\n");
  bh_trace_opts_t o = {.lenient = true};
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, &o, &t), 0);
  bh_event_t ev;
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(ev.seq, 0);
  assert_int_equal(ev.time_ns, 1);
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(ev.seq, 1);
  assert_int_equal(ev.time_ns, 4);
  assert_int_equal(bh_trace_next(t, &ev), 0);
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  assert_int_equal(c.lines, 8);
  assert_int_equal(c.events, 2);
  assert_int_equal(c.malformed, 3);
  assert_int_equal(c.other_lines, 3);
  assert_int_equal(c.allocs, 1);
  assert_int_equal(c.frees, 1);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":8: unknown key 'bogus'"));
  bh_trace_close(t);
}

/* Lines > 64 KiB are malformed, not a crash; embedded NUL bytes too. */
static void test_long_line_and_nul(void **state) {
  (void)state;
  size_t big = (5u << 19) + 17; /* 2.5 MiB: longer than the reader's window */
  const char *head = "# buddyhint-trace 1\n1 A 1 0\n";
  const char *tail = "\n2 F 1 0\n3 A 0x";
  size_t hl = strlen(head), tl = strlen(tail);
  char *buf = malloc(hl + big + tl + 16);
  memcpy(buf, head, hl);
  memset(buf + hl, 'x', big);
  memcpy(buf + hl + big, tail, tl);
  size_t len = hl + big + tl;
  memcpy(buf + len, "2\0 0\n4 F 2 0", 12); /* "3 A 0x2<NUL> 0" */
  len += 12;
  const char *p = tt_write("long.txt", buf, len);
  free(buf);

  bh_trace_t *t;
  bh_event_t ev;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":3: line longer than 65536 bytes"));
  bh_trace_close(t);

  bh_trace_opts_t o = {.lenient = true};
  assert_int_equal(bh_trace_open(p, &o, &t), 0);
  bh_event_t *evs;
  size_t n;
  assert_int_equal(tt_read_all(t, &evs, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(evs[0].time_ns, 1);
  assert_int_equal(evs[1].time_ns, 2);
  assert_int_equal(evs[2].time_ns, 4);
  assert_int_equal(evs[2].pfn, 2);
  free(evs);
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  assert_int_equal(c.lines, 6);
  assert_int_equal(c.malformed, 2);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":5: embedded NUL byte"));
  bh_trace_close(t);

  /* a long line as the very last line, without a newline */
  buf = malloc(BH_TRACE_MAX_LINE + 100);
  strcpy(buf, "# buddyhint-trace 1\n");
  size_t off = strlen(buf);
  memset(buf + off, '7', BH_TRACE_MAX_LINE + 1);
  p = tt_write("long-last.txt", buf, off + BH_TRACE_MAX_LINE + 1);
  free(buf);
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":2: line longer than 65536 bytes"));
  bh_trace_close(t);
  /* exactly 65536 bytes is still a line (and here a bad one, for its content) */
  buf = malloc(BH_TRACE_MAX_LINE + 100);
  strcpy(buf, "# buddyhint-trace 1\n");
  memset(buf + off, '7', BH_TRACE_MAX_LINE);
  buf[off + BH_TRACE_MAX_LINE] = '\n';
  p = tt_write("long-ok.txt", buf, off + BH_TRACE_MAX_LINE + 1);
  free(buf);
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_int_equal(bh_trace_next(t, &ev), BH_EFORMAT);
  assert_string_equal(bh_trace_error(t), tt_msg(p, ":2: bad time '7777777777777777777777777777"
                                                   "777777777777...'"));
  bh_trace_close(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Detection                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static void test_detect_errors(void **state) {
  (void)state;
  const char *p = tt_write("empty.txt", "", 0);
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": empty trace"));

  p = tt_write_str("prose.txt", "hello world\nthis is not a trace\n");
  tt_expect_open_error(
      p, BH_EFORMAT,
      tt_msg(p, ": unrecognised trace format (not ftrace, perf script or a buddyhint trace)"));

  p = tt_write_str("v4.txt", "# buddyhint-trace 4\n1 A 1 0\n");
  tt_expect_open_error(p, BH_EFORMAT, tt_msg(p, ": unsupported native text version 4"));

  p = tt_write_str("vx.txt", "# buddyhint-trace one\n");
  tt_expect_open_error(p, BH_EFORMAT,
                       tt_msg(p, ": bad native text header (expected '# buddyhint-trace 1')"));

  p = "/nonexistent/bh-trace.txt";
  tt_expect_open_error(p, BH_ESYS, tt_msg(p, ": cannot open: No such file or directory"));

  /* seeded binary garbage */
  unsigned seed = 12345;
  unsigned char g[8192];
  for (size_t i = 0; i < sizeof(g); i++) {
    seed = seed * 1103515245u + 12345u;
    g[i] = (unsigned char)(seed >> 16);
  }
  p = tt_write("garbage.bin", g, sizeof(g));
  tt_expect_open_error(
      p, BH_EFORMAT,
      tt_msg(p, ": unrecognised trace format (not ftrace, perf script or a buddyhint trace)"));

  /* comment-like garbage with NUL bytes is not an empty ftrace trace */
  p = tt_write("hash-garbage.bin", "#\0\1\2\n#\0", 7);
  tt_expect_open_error(
      p, BH_EFORMAT,
      tt_msg(p, ": unrecognised trace format (not ftrace, perf script or a buddyhint trace)"));

  bh_trace_t *t = (bh_trace_t *)1;
  assert_int_equal(bh_trace_open(NULL, NULL, &t), BH_EINVAL);
  assert_int_equal(bh_trace_open(p, NULL, NULL), BH_EINVAL);
  bh_trace_close(NULL);
}

/* The first event line decides ftrace vs perf, whatever the file is called. */
static void test_detect_by_content(void **state) {
  (void)state;
  const char *p = tt_write_str("looks-like.perf",
                               "  x-1 [000] 1.000001: sched_switch: prev=a\n"
                               "  x-1 [000] 1.000002: mm_page_free: page=1 pfn=0x5 order=0\n");
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_string_equal(bh_trace_format_name(t), "ftrace");
  assert_int_equal(bh_trace_format(t), BH_TRACE_FTRACE);
  bh_trace_close(t);
  p = tt_write_str("looks-like.ftrace",
                   "# comment\n   cat 7 [000] 1.000002: kmem:mm_page_free: page=1 pfn=5 order=0\n");
  assert_int_equal(bh_trace_open(p, NULL, &t), 0);
  assert_string_equal(bh_trace_format_name(t), "perf-script");
  bh_event_t ev;
  assert_int_equal(bh_trace_next(t, &ev), 1);
  assert_int_equal(ev.pid, 7);
  assert_int_equal(ev.pfn, 5);
  bh_trace_close(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ftrace_6x),
      cmocka_unit_test(test_ftrace_old_decimal),
      cmocka_unit_test(test_ftrace_pre_3_3_names),
      cmocka_unit_test(test_perf_script),
      cmocka_unit_test(test_native_text),
      cmocka_unit_test(test_native_crlf),
      cmocka_unit_test(test_ftrace_pipe_no_header),
      cmocka_unit_test(test_ftrace_header_only),
      cmocka_unit_test(test_stdin),
      cmocka_unit_test(test_ftrace_malformed),
      cmocka_unit_test(test_native_malformed),
      cmocka_unit_test(test_lenient_counts),
      cmocka_unit_test(test_long_line_and_nul),
      cmocka_unit_test(test_detect_errors),
      cmocka_unit_test(test_detect_by_content),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
