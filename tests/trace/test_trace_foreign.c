/*
 * Other tools' files: trace-cmd's trace.dat (libtracecmd), perf's perf.data (through perf
 * script), perf script text with call chains, and event origins (pid, comm, call site).
 *
 * The fixtures were recorded on a Linux 6.18 machine (tests/trace/data/make-tracedat-fixture,
 * make-perf-fixture) and each comes with the text the recording tool itself printed for it
 * (`trace-cmd report`, `perf script`): the tests read both and require the same events.
 */
#include "trace_test_util.h"

#include "trace/foreign.h"

#include <stdbool.h>
#include <sys/stat.h>

#ifndef BH_HAVE_TRACECMD
#define BH_HAVE_TRACECMD 0
#endif

#define TRACEDAT DATA_DIR "/tracedat_kmem.dat"
#define TRACEDAT_REPORT DATA_DIR "/tracedat_kmem.report"
#define PERFDATA DATA_DIR "/perf_kmem.data"
#define PERFDATA_SCRIPT DATA_DIR "/perf_kmem.script.gz"

static bh_trace_t *open_ok(const char *path, bool origins) {
  bh_trace_opts_t o = {.origins = origins};
  bh_trace_t *t = NULL;
  int err = bh_trace_open(path, &o, &t);
  if (err)
    fail_msg("%s: %s (%s)", path, bh_err_name(err), bh_trace_error(NULL));
  return t;
}

static const char *comm_of(bh_trace_t *t, uint32_t id) {
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, id, &o), 0);
  return o.comm;
}

static const char *site_of(bh_trace_t *t, uint32_t id) {
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, id, &o), 0);
  return o.callsite;
}

/* ---------------------------------------------------------------------------------------- */
/* trace.dat                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/*
 * The report as ftrace text: trace-cmd prefixes the lines of an instance's buffer with its
 * name ("fixture: "), which the ftrace reader does not know.  Also sums the dropped events
 * the report shows ("[N EVENTS DROPPED]", "[EVENTS DROPPED]" = at least 1).
 */
static const char *report_as_ftrace(uint64_t *dropped) {
  size_t len;
  char *b = (char *)tt_read(TRACEDAT_REPORT, &len);
  b[len] = '\0';
  char *out = malloc(len + 1), *o = out;
  assert_non_null(out);
  *dropped = 0;
  for (char *line = b; *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (!strncmp(line, "fixture: ", 9))
      line += 9, n -= 9;
    const char *d = strstr(line, "EVENTS DROPPED]");
    if (d && d - line < (ptrdiff_t)n) {
      const char *lb = memchr(line, '[', (size_t)(d - line));
      unsigned long long k = lb ? strtoull(lb + 1, NULL, 10) : 0;
      *dropped += k ? k : 1;
    }
    memcpy(o, line, n);
    o += n;
    line += n;
  }
  const char *p = tt_write("report.txt", out, (size_t)(o - out));
  free(out);
  free(b);
  return p;
}

static void test_tracedat_matches_report(void **state) {
  (void)state;
  if (!BH_HAVE_TRACECMD) {
    printf("skipped: this build has no libtracecmd (test_tracedat_without_library runs)\n");
    return;
  }
  uint64_t dropped;
  const char *report = report_as_ftrace(&dropped);
  bh_trace_t *a = open_ok(TRACEDAT, true), *b = open_ok(report, true);
  assert_string_equal(bh_trace_format_name(a), "trace-dat");
  assert_int_equal(bh_trace_format(a), BH_TRACE_TRACE_DAT);
  assert_null(bh_trace_command(a));
  bh_event_t *ea, *eb;
  size_t na, nb;
  assert_int_equal(tt_read_all(a, &ea, &na), 0);
  assert_int_equal(tt_read_all(b, &eb, &nb), 0);
  assert_int_equal(na, nb);
  assert_true(na > 800); /* the fixture has 838 */
  size_t allocs = 0;
  for (size_t i = 0; i < na; i++) {
    /* trace-cmd report prints microseconds, rounded */
    assert_int_equal((ea[i].time_ns + 500) / 1000, eb[i].time_ns / 1000);
    ea[i].time_ns = eb[i].time_ns;
    tt_assert_event_equal(&ea[i], &eb[i]);
    assert_string_equal(comm_of(a, ea[i].origin), comm_of(b, eb[i].origin));
    allocs += ea[i].op == BH_EV_ALLOC;
  }
  assert_true(allocs > 0);
  bh_trace_counts_t c;
  bh_trace_counts(a, &c);
  assert_int_equal(c.events, na);
  assert_int_equal(c.allocs, allocs);
  assert_int_equal(c.malformed, 0);
  assert_int_equal(c.gfp_unknown, 0);
  assert_true(dropped > 1);
  assert_int_equal(c.lost_events, dropped);
  free(ea);
  free(eb);
  bh_trace_close(a);
  bh_trace_close(b);
}

/* Without origins asked for, events carry origin 0 and bh_trace_origin knows no id. */
static void test_tracedat_no_origins(void **state) {
  (void)state;
  if (!BH_HAVE_TRACECMD)
    return;
  bh_trace_t *t = open_ok(TRACEDAT, false);
  bh_event_t ev[16];
  assert_int_equal(bh_trace_next_batch(t, ev, 16), 16);
  for (int i = 0; i < 16; i++) {
    assert_int_equal(ev[i].origin, 0);
    assert_int_equal(ev[i].seq, (uint64_t)i);
  }
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, 1, &o), BH_ENOENT);
  assert_int_equal(bh_trace_origin(t, 0, NULL), BH_EINVAL);
  bh_trace_close(t);
}

static void test_tracedat_without_library(void **state) {
  (void)state;
  if (BH_HAVE_TRACECMD)
    return;
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(TRACEDAT, NULL, &t), BH_ENOTSUP);
  assert_non_null(strstr(bh_trace_error(NULL), "install libtracecmd-dev"));
  assert_non_null(strstr(bh_trace_error(NULL), "trace-cmd report -i"));
}

/* Compressed with gzip or zstd, the trace.dat gives the plain file's events: it is decompressed
 * to a file in $TMPDIR, which is gone once the trace is closed. */
static void test_tracedat_compressed(void **state) {
  (void)state;
  size_t len;
  unsigned char *b = tt_read(TRACEDAT, &len);
  const char *gz = strdup(tt_write_gzip("t.dat.gz", b, len));
  const char *zst = strdup(tt_write_zstd("t.dat.zst", b, len));
  free(b);
  if (!BH_HAVE_TRACECMD) { /* as the plain file: the library is missing */
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(gz, NULL, &t), BH_ENOTSUP);
    free((void *)gz);
    free((void *)zst);
    return;
  }
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s/unpack", tt_dir);
  assert_int_equal(mkdir(tmp, 0700), 0);
  const char *old = getenv("TMPDIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("TMPDIR", tmp, 1);
  bh_trace_t *p = open_ok(TRACEDAT, false);
  bh_event_t *ep;
  size_t np;
  assert_int_equal(tt_read_all(p, &ep, &np), 0);
  const char *files[] = {gz, zst};
  for (int i = 0; i < 2; i++) {
    bh_trace_t *t = open_ok(files[i], false);
    assert_int_equal(bh_trace_format(t), BH_TRACE_TRACE_DAT);
    bh_event_t *e;
    size_t n;
    assert_int_equal(tt_read_all(t, &e, &n), 0);
    assert_int_equal(n, np);
    for (size_t k = 0; k < n; k++)
      tt_assert_event_equal(&e[k], &ep[k]);
    free(e);
    bh_trace_close(t);
    assert_int_equal(rmdir(tmp), 0); /* empty again: the decompressed copy was removed */
    assert_int_equal(mkdir(tmp, 0700), 0);
  }
  rmdir(tmp);
  if (saved)
    setenv("TMPDIR", saved, 1);
  else
    unsetenv("TMPDIR");
  free(saved);
  free(ep);
  bh_trace_close(p);
  free((void *)gz);
  free((void *)zst);
}

/* A file cut short: an error or fewer events, never a crash or more events. */
static void test_tracedat_truncated(void **state) {
  (void)state;
  if (!BH_HAVE_TRACECMD)
    return;
  size_t len;
  free(tt_read(TRACEDAT, &len));
  const size_t keep[] = {16, 4096, len / 2, len - 100};
  for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
    const char *p = tt_truncate_copy(TRACEDAT, "cut.dat", keep[i]);
    bh_trace_t *t;
    int err = bh_trace_open(p, NULL, &t);
    if (err) {
      assert_int_equal(err, BH_EFORMAT);
      assert_non_null(strstr(bh_trace_error(NULL), p));
      continue;
    }
    bh_event_t *ev;
    size_t n;
    tt_read_all(t, &ev, &n);
    assert_true(n <= 838);
    free(ev);
    bh_trace_close(t);
  }
}

/*
 * Single bytes changed in the fixture that make Debian 12's libtracecmd 1.3 crash when it
 * opens the file (a mutation test found them): in libtraceevent's tep_parse_event (an event
 * format), and in tracecmd_buffer_instance_handle (the instance buffer's description).  The
 * reader must say the file is bad, or read it, and never crash.
 */
static void test_tracedat_crashing_corruptions(void **state) {
  (void)state;
  if (!BH_HAVE_TRACECMD)
    return;
  static const struct {
    size_t at[3];
    unsigned char v[3];
    int n;
  } cases[] = {
      {{13909}, {54}, 1},
      {{14073}, {181}, 1},
      {{10528, 49883, 149706}, {152, 207, 41}, 3},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    size_t len;
    unsigned char *b = tt_read(TRACEDAT, &len);
    for (int i = 0; i < cases[c].n; i++)
      b[cases[c].at[i]] = cases[c].v[i];
    const char *p = tt_write("corrupt.dat", b, len);
    free(b);
    bh_trace_t *t;
    int err = bh_trace_open(p, NULL, &t);
    if (err) {
      assert_int_equal(err, BH_EFORMAT);
      assert_non_null(strstr(bh_trace_error(NULL), p));
      continue;
    }
    bh_event_t *ev;
    size_t n;
    tt_read_all(t, &ev, &n);
    free(ev);
    bh_trace_close(t);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* perf.data and perf script text with call chains                                          */
/* ---------------------------------------------------------------------------------------- */

static bool have_perf(void) { return system("command -v perf >/dev/null 2>&1") == 0; }

static void test_perfdata_matches_script(void **state) {
  (void)state;
  if (!have_perf()) {
    bh_trace_t *t;
    assert_int_equal(bh_trace_open(PERFDATA, NULL, &t), BH_ENOTSUP);
    assert_non_null(strstr(bh_trace_error(NULL), "install perf"));
    printf("skipped: perf is not installed (the reader said so, as tested)\n");
    return;
  }
  bh_trace_t *a = open_ok(PERFDATA, true), *b = open_ok(PERFDATA_SCRIPT, true);
  assert_string_equal(bh_trace_format_name(a), "perf-data");
  assert_non_null(bh_trace_command(a));
  assert_non_null(strstr(bh_trace_command(a), "perf script -i " PERFDATA " -F trace:comm"));
  assert_non_null(strstr(bh_trace_command(a), ",ip,sym")); /* recorded with -g */
  assert_string_equal(bh_trace_format_name(b), "perf-script");
  bh_event_t *ea, *eb;
  size_t na, nb;
  assert_int_equal(tt_read_all(a, &ea, &na), 0);
  assert_int_equal(tt_read_all(b, &eb, &nb), 0);
  assert_int_equal(na, nb);
  assert_true(na > 250); /* 302 */
  /* call sites agree where this machine's perf resolves the kernel's symbols as the fixture's
   * did (the same kernel build); elsewhere the frames are other names or [unknown] */
  bool same_symbols = !strcmp(site_of(a, ea[0].origin), site_of(b, eb[0].origin));
  size_t with_site = 0, allocs = 0;
  for (size_t i = 0; i < na; i++) {
    tt_assert_event_equal(&ea[i], &eb[i]);
    assert_string_equal(comm_of(a, ea[i].origin), comm_of(b, eb[i].origin));
    const char *s = site_of(b, eb[i].origin);
    assert_false(bh__callsite_skip(s, strlen(s)));
    if (same_symbols)
      assert_string_equal(site_of(a, ea[i].origin), s);
    if (eb[i].op == BH_EV_ALLOC) {
      allocs++;
      with_site += *s != '\0';
    }
  }
  if (!same_symbols)
    printf("note: perf resolves other kernel symbols here; call sites not compared\n");
  assert_int_equal(with_site, allocs); /* every allocation has a call chain */
  /* the first events of the fixture: execve's page tables (perf_kmem.script.gz) */
  assert_string_equal(site_of(b, eb[0].origin), "__pmd_alloc");
  assert_string_equal(site_of(b, eb[1].origin), "pte_alloc_one");
  assert_string_equal(comm_of(b, eb[0].origin), "sh");
  bh_trace_counts_t c;
  bh_trace_counts(a, &c);
  assert_int_equal(c.events, na);
  assert_int_equal(c.lost_events, 0);
  free(ea);
  free(eb);
  bh_trace_close(a);
  bh_trace_close(b);
}

/* Without origins the same text goes through the plain perf script reader: same events. */
static void test_perf_script_chains_plain_reader(void **state) {
  (void)state;
  bh_trace_t *a = open_ok(PERFDATA_SCRIPT, false), *b = open_ok(PERFDATA_SCRIPT, true);
  bh_event_t *ea, *eb;
  size_t na, nb;
  assert_int_equal(tt_read_all(a, &ea, &na), 0);
  assert_int_equal(tt_read_all(b, &eb, &nb), 0);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++)
    tt_assert_event_equal(&ea[i], &eb[i]);
  free(ea);
  free(eb);
  bh_trace_close(a);
  bh_trace_close(b);
}

static void test_perf_script_callsites(void **state) {
  (void)state;
  const char *p = tt_write_str(
      "chains.txt",
      "     Web Content  4300/4301 [003]  10.000000100: kmem:mm_page_alloc: page=0x1 pfn=0x10 "
      "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
      "\tffffffff815dfed1 __traceiter_mm_page_alloc+0x31 ([kernel.kallsyms])\n"
      "\tffffffff8163bbbb __alloc_frozen_pages_noprof+0x1fb ([kernel.kallsyms])\n"
      "\tffffffff81675fb6 alloc_pages_mpol+0x86 ([kernel.kallsyms])\n"
      "\tffffffff8167627c folio_alloc_mpol_noprof+0x1c ([kernel.kallsyms])\n"
      "\tffffffff81600000 do_anonymous_page+0x120 ([kernel.kallsyms])\n"
      "\tffffffff81600100 __handle_mm_fault ([kernel.kallsyms])\n"
      "\t    7fedd94f2ad7 [unknown] (/usr/lib/libc.so.6)\n"
      "\n"
      "            sh   77 [000]  10.000000200: kmem:mm_page_free: page=0x1 pfn=0x10 order=0\n"
      "\tffffffff81000001 free_unref_folios\n"
      "\tffffffff81000002 folios_put_refs\n"
      "\tffffffff81000003 release_pages\n"
      "\n"
      "            sh   77 [000]  10.000000300: kmem:mm_page_alloc: page=0x1 pfn=0x20 "
      "order=1 migratetype=0 gfp_flags=GFP_KERNEL\n"
      "            sh   77 [000]  10.000000400: sched:sched_switch: prev_comm=sh\n"
      "\tffffffff81000004 __schedule\n"
      "\n"
      "            sh   77 [000]  10.000000500: kmem:mm_page_alloc: page=0x1 pfn=0x40 "
      "order=0 migratetype=0 gfp_flags=GFP_KERNEL\n"
      "\tffffffff8163bbbb __alloc_pages_noprof\n");
  bh_trace_t *t = open_ok(p, true);
  bh_event_t *ev;
  size_t n;
  assert_int_equal(tt_read_all(t, &ev, &n), 0);
  assert_int_equal(n, 4);
  assert_string_equal(site_of(t, ev[0].origin), "do_anonymous_page");
  assert_string_equal(comm_of(t, ev[0].origin), "Web Content");
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, ev[0].origin, &o), 0);
  assert_int_equal(o.pid, 4301); /* the tid, as the pid of ftrace */
  assert_string_equal(site_of(t, ev[1].origin), "folios_put_refs");
  assert_string_equal(site_of(t, ev[2].origin), ""); /* no chain */
  assert_string_equal(comm_of(t, ev[2].origin), "sh");
  assert_string_equal(site_of(t, ev[3].origin), ""); /* only allocator frames */
  assert_int_equal(ev[3].pfn, 0x40);
  /* one id per distinct (pid, comm, call site) */
  assert_int_not_equal(ev[1].origin, ev[2].origin);
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  assert_int_equal(c.other_lines, 3); /* sched_switch, its frame and the blank line after */
  free(ev);
  bh_trace_close(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Origins of text and native traces                                                        */
/* ---------------------------------------------------------------------------------------- */

static void test_ftrace_origins(void **state) {
  (void)state;
  const char *p = tt_write_str("o.txt", " Web Content-my-task-777 [003] d..1.  1.000001: "
                                        "mm_page_free: page=000000003b8e1cde pfn=0x10 order=0\n"
                                        "          memhog-4242    [001] d..1.  1.000002: "
                                        "mm_page_alloc: page=000000003b8e1cde pfn=0x11 "
                                        "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
                                        "          memhog-4242    [001] d..1.  1.000003: "
                                        "mm_page_alloc: page=000000003b8e1cde pfn=0x12 "
                                        "order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
                                        "           <...>-99      [000] ....   1.000004: "
                                        "mm_page_free: page=000000003b8e1cde pfn=0x11 order=0\n");
  bh_trace_t *t = open_ok(p, true);
  bh_event_t *ev;
  size_t n;
  assert_int_equal(tt_read_all(t, &ev, &n), 0);
  assert_int_equal(n, 4);
  assert_string_equal(comm_of(t, ev[0].origin), "Web Content-my-task");
  assert_string_equal(comm_of(t, ev[1].origin), "memhog");
  assert_int_equal(ev[1].origin, ev[2].origin);
  assert_string_equal(comm_of(t, ev[3].origin), "<...>");
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, ev[0].origin, &o), 0);
  assert_int_equal(o.pid, 777);
  assert_string_equal(o.callsite, "");
  free(ev);
  bh_trace_close(t);
}

static void test_native_origins(void **state) {
  (void)state;
  const char *p = tt_write_str("n.txt", "# buddyhint-trace 1\n"
                                        "1 A 0x10 0 pid=5\n"
                                        "2 A 0x11 0 pid=6\n"
                                        "3 F 0x10 0 pid=5\n"
                                        "4 F 0x11 0\n");
  bh_trace_t *t = open_ok(p, true);
  bh_event_t *ev;
  size_t n;
  assert_int_equal(tt_read_all(t, &ev, &n), 0);
  assert_int_equal(ev[0].origin, ev[2].origin);
  assert_int_not_equal(ev[0].origin, ev[1].origin);
  bh_trace_origin_t o;
  assert_int_equal(bh_trace_origin(t, ev[3].origin, &o), 0);
  assert_int_equal(o.pid, -1);
  assert_string_equal(o.comm, "");
  free(ev);
  bh_trace_close(t);
}

/* bpftrace's "Lost N events" lines among native text (examples/page-events.bt). */
static void test_native_bpftrace_lost(void **state) {
  (void)state;
  const char *p = tt_write_str("l.txt", "# buddyhint-trace 1\n"
                                        "1 A 0x10 0\n"
                                        "Lost 17 events\n"
                                        "2 F 0x10 0\n"
                                        "Lost 3 events\n");
  bh_trace_t *t = open_ok(p, false);
  bh_event_t *ev;
  size_t n;
  assert_int_equal(tt_read_all(t, &ev, &n), 0);
  assert_int_equal(n, 2);
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  assert_int_equal(c.lost_events, 20);
  assert_int_equal(c.other_lines, 3); /* the header and the two */
  free(ev);
  bh_trace_close(t);
  p = tt_write_str("l2.txt", "# buddyhint-trace 1\nLost many events\n");
  t = open_ok(p, false);
  bh_event_t e;
  assert_int_equal(bh_trace_next(t, &e), BH_EFORMAT);
  bh_trace_close(t);
}

/* The interning table: ids stable, strings kept, growth past the first table size. */
static void test_origin_table(void **state) {
  (void)state;
  bh__origins_t *o = bh__origins_new();
  assert_non_null(o);
  char name[32];
  for (int i = 0; i < 5000; i++) {
    int k = snprintf(name, sizeof(name), "task%d", i);
    assert_int_equal(bh__origin_intern(o, i, name, (size_t)k, "site", 4), (uint32_t)i + 1);
  }
  for (int i = 0; i < 5000; i += 7) {
    int k = snprintf(name, sizeof(name), "task%d", i);
    assert_int_equal(bh__origin_intern(o, i, name, (size_t)k, "site", 4), (uint32_t)i + 1);
    bh_trace_origin_t r;
    assert_int_equal(bh__origin_get(o, (uint32_t)i + 1, &r), 0);
    assert_string_equal(r.comm, name);
    assert_string_equal(r.callsite, "site");
  }
  assert_int_equal(bh__origin_intern(o, 1, "task1", 5, NULL, 0), 5001); /* no site: new */
  assert_int_equal(bh__origins_count(o), 5001);
  bh_trace_origin_t r;
  assert_int_equal(bh__origin_get(o, 5002, &r), BH_ENOENT);
  bh__origins_free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tracedat_matches_report),
      cmocka_unit_test(test_tracedat_no_origins),
      cmocka_unit_test(test_tracedat_without_library),
      cmocka_unit_test(test_tracedat_compressed),
      cmocka_unit_test(test_tracedat_truncated),
      cmocka_unit_test(test_tracedat_crashing_corruptions),
      cmocka_unit_test(test_perfdata_matches_script),
      cmocka_unit_test(test_perf_script_chains_plain_reader),
      cmocka_unit_test(test_perf_script_callsites),
      cmocka_unit_test(test_ftrace_origins),
      cmocka_unit_test(test_native_origins),
      cmocka_unit_test(test_native_bpftrace_lost),
      cmocka_unit_test(test_origin_table),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
