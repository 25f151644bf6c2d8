/*
 * Fuzz target for everything a trace file reaches: format detection, decompression, the
 * ftrace / perf script / native text / native binary readers (strict and lenient), and a
 * lenient replay of what they read through a small sim arena with bubble or bitmap attached,
 * proactive compaction at 100 and the invariant checker every 64 events.  Any crash, sanitizer
 * report, hang or check violation is a bug.
 *
 * Built two ways:
 *   - with -DBH_FUZZ=ON (clang): a libFuzzer binary, run by `make fuzz` for FUZZ_SECONDS;
 *   - otherwise: a driver that feeds every file given on the command line, then a fixed number
 *     of seeded mutations of each (bit flips, digit and separator changes, truncation, spliced
 *     chunks), to LLVMFuzzerTestOneInput.  ctest runs it on the test fixtures (fuzz_trace_smoke),
 *     which under the ASan+UBSan build of `make test` is a short fuzz run of its own.
 */
#include <buddyhint/machine.h>
#include <buddyhint/replay.h>
#include <buddyhint/trace.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file: the readers take paths.  An anonymous memfd keeps it off the disk. */
static int as_file(const uint8_t *data, size_t size, char *path, size_t len) {
  int fd = memfd_create("fuzz-trace", 0);
  if (fd < 0)
    return -1;
  for (size_t off = 0; off < size;) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t)n;
  }
  snprintf(path, len, "/proc/self/fd/%d", fd);
  return fd;
}

static void read_all(const char *path, bool lenient) {
  bh_trace_opts_t opts = {.lenient = lenient};
  bh_trace_t *t;
  if (bh_trace_open(path, &opts, &t))
    return;
  bh_event_t evs[64];
  while (bh_trace_next_batch(t, evs, 64) > 0)
    ;
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  (void)bh_trace_error(t);
  bh_trace_close(t);
}

/* The input as a machine description: a parse that succeeds formats back to text that
 * parses again to the same text. */
static void machine_text(const uint8_t *data, size_t size) {
  bh_machine_t *m, *m2;
  char err[256], *t1, *t2;
  size_t n1, n2;
  if (bh_machine_parse((const char *)data, size, &m, err, sizeof(err)))
    return;
  if (bh_machine_format(m, &t1, &n1) == 0) {
    if (bh_machine_parse(t1, n1, &m2, err, sizeof(err))) {
      fprintf(stderr, "fuzz_trace: a formatted description does not parse: %s\n", err);
      abort();
    }
    if (bh_machine_format(m2, &t2, &n2) == 0) {
      if (n1 != n2 || memcmp(t1, t2, n1))
        abort();
      free(t2);
    }
    bh_machine_free(m2);
    free(t1);
  }
  bh_machine_free(m);
}

/* Whether the trace's machine (if any) is small enough for the replay to take its shape: up
 * to 1 GiB, so that a fuzzed layout cannot ask for terabytes. */
static bool small_machine(const char *path) {
  bh_trace_t *t;
  if (bh_trace_open(path, NULL, &t))
    return false;
  size_t len;
  const char *d = bh_trace_description(t, &len);
  bh_machine_t *m;
  char err[128];
  bool small = false;
  if (d && !bh_machine_parse(d, len, &m, err, sizeof(err))) {
    const bh_machine_info_t *in = bh_machine_info(m);
    small = true;
    for (int i = 0; i < in->nr_zones; i++)
      small = small && in->zones[i].start_pfn + in->zones[i].spanned_pages <= (1u << 18);
    bh_machine_free(m);
  }
  bh_trace_close(t);
  return small;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = as_file(data, size, path, sizeof(path));
  if (fd < 0)
    return 0;
  read_all(path, false);
  read_all(path, true);
  machine_text(data, size);

  bh_replay_config_t rc;
  bh_replay_config_init(&rc);
  rc.trace = path;
  rc.arena.backing = BH_BACKING_SIM;
  rc.arena.nr_cpus = 2;
  rc.memory_bytes = 32ull << 20;
  rc.lenient = true;
  rc.idle_ns = 5ull * 1000000000ull;
  /* adaptive with young ages, so that its scans report within the short idle */
  static const bh_opt_t young[] = {{"age", "0"}, {"interval", "100ms"}};
  static const char *const strategies[] = {"bitmap", "bubble", "adaptive"};
  rc.hint.strategy = strategies[size % 3];
  if (size % 3 == 2) {
    rc.hint.opts = young;
    rc.hint.nopts = 2;
  }
  rc.compaction_proactiveness = 100;
  rc.check_every = 64;
  /* a described machine of up to 1 GiB in its own shape (start state, placement both ways) */
  rc.layout = small_machine(path) ? BH_LAYOUT_AUTO : BH_LAYOUT_DEFAULT;
  rc.placement = size & 2 ? BH_PLACEMENT_TRACE : BH_PLACEMENT_ALLOCATOR;
  bh_replay_summary_t s;
  char err[256];
  if (bh_replay_run(&rc, &s, err, sizeof(err)) == 0 && s.check_violations) {
    fprintf(stderr, "fuzz_trace: %ld invariant violations\n", s.check_violations);
    abort();
  }
  close(fd);
  return 0;
}

#ifndef BH_LIBFUZZER

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* One mutation of in (n bytes) into out (room for cap bytes); returns the new length. */
static size_t mutate(const uint8_t *in, size_t n, uint8_t *out, size_t cap, uint64_t *seed) {
  static const char interesting[] = "0123456789 \n\t:=|xXA-FB#-";
  size_t m = n < cap ? n : cap;
  memcpy(out, in, m);
  if (!m)
    return 0;
  int k = 1 + (int)(rng(seed) % 4);
  for (int i = 0; i < k; i++) {
    size_t at = rng(seed) % m;
    switch (rng(seed) % 6) {
    case 0: /* flip a bit */
      out[at] ^= (uint8_t)(1u << (rng(seed) % 8));
      break;
    case 1: /* a character the parsers branch on */
      out[at] = (uint8_t)interesting[rng(seed) % (sizeof(interesting) - 1)];
      break;
    case 2: /* an extreme byte */
      out[at] = rng(seed) & 1 ? 0xff : 0;
      break;
    case 3: /* truncate */
      m = at;
      break;
    case 4: { /* copy a chunk over another place */
      size_t from = rng(seed) % m, len = 1 + rng(seed) % 64;
      if (from + len > m)
        len = m - from;
      if (at + len > m)
        len = m - at;
      memmove(out + at, out + from, len);
      break;
    }
    default: /* a long run of digits: numbers that overflow */
      for (size_t j = at; j < m && j < at + 24; j++)
        out[j] = (uint8_t)('0' + rng(seed) % 10);
    }
    if (!m)
      break;
  }
  return m;
}

int main(int argc, char **argv) {
  long rounds = 200;
  int first = 1;
  if (argc > 2 && !strcmp(argv[1], "--rounds")) {
    rounds = atol(argv[2]);
    first = 3;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: fuzz_trace [--rounds N] FILE...\n");
    return 2;
  }
  size_t cap = 1 << 20;
  uint8_t *buf = malloc(cap), *mut = malloc(cap);
  if (!buf || !mut)
    return 2;
  long runs = 0;
  for (int i = first; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "fuzz_trace: cannot open %s\n", argv[i]);
      return 2;
    }
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)i;
    for (long r = 0; r < rounds; r++) {
      size_t m = mutate(buf, n, mut, cap, &seed);
      LLVMFuzzerTestOneInput(mut, m);
    }
    runs += 1 + rounds;
  }
  printf("fuzz_trace: %ld inputs, no crash, no violation\n", runs);
  free(buf);
  free(mut);
  return 0;
}

#endif
