/*
 * Trace reader throughput: writes N synthetic page allocator events into a temporary
 * directory in each format (ftrace text, perf script text, native text, native binary; the
 * native ones also gzip- and zstd-compressed), then reads each file 5 times with
 * bh_trace_next and prints the median events/s, by wall-clock time and by the process's CPU
 * time (on a shared machine the second is the steadier figure).  Files are read from the page
 * cache (the first read warms it), so the figures are parsing/decompression speed, not disk
 * speed.  A first line calibrates the machine: the cost of a plain byte loop.
 *
 *   trace_read_bench [--quick] [--events N] [--only LABEL] [--out DIR]
 *
 * Default 5,000,000 events per file (--quick: 500,000); writes DIR/trace_read.csv and .json
 * (bench_util.h conventions).
 */
#include "bench_util.h"

#include <buddyhint/trace.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS 5

static uint64_t rng_state = 0x1234abcd5678ef01ull;

static uint64_t rng(void) { /* xorshift64 */
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* ns per byte of a loop that looks at every byte once, the floor for text parsing. */
static double byte_loop_ns(void) {
  size_t n = 64u << 20;
  unsigned char *b = malloc(n);
  if (!b)
    return 0;
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)(i * 7 + (i >> 9));
  double best = 1e9;
  for (int r = 0; r < 3; r++) {
    double t0 = cpu_now();
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
      cnt += b[i] == ' ' || b[i] == '\t';
      __asm__ volatile("" : "+r"(cnt));
    }
    double dt = cpu_now() - t0;
    if (dt < best)
      best = dt;
  }
  free(b);
  return best * 1e9 / (double)n;
}

/* A plausible event stream: allocs and frees of mostly order-0 pages, a few THPs. */
static void make_event(uint64_t i, bh_event_t *e) {
  uint64_t r = rng();
  memset(e, 0, sizeof(*e));
  e->time_ns = 1000000000000ull + i * 1700 + r % 1000;
  e->op = (uint8_t)(r % 16 < 8 ? BH_EV_ALLOC : r % 16 < 14 ? BH_EV_FREE : BH_EV_FREE_BATCHED);
  e->pfn = 0x100000 + (rng() % (1u << 22));
  e->order = (uint8_t)(r % 64 == 0 ? 9 : r % 8 == 0 ? 1 : 0);
  e->pid = (int32_t)(1000 + r % 50);
  e->cpu = (int32_t)(r % 8);
  e->migratetype = e->op == BH_EV_ALLOC ? (int8_t)(r % 3 ? 1 : 0) : -1;
  if (e->op == BH_EV_ALLOC)
    e->gfp = r % 3 ? (BH_GFP_MOVABLE | BH_GFP_HIGHMEM | ((r >> 8) % 2 ? BH_GFP_ZERO : 0)) : 0;
}

static const char *const gfp_text[] = {"GFP_KERNEL", "GFP_HIGHUSER_MOVABLE",
                                       "GFP_HIGHUSER_MOVABLE|__GFP_ZERO"};

static const char *gfp_name(const bh_event_t *e) {
  if (!(e->gfp & BH_GFP_MOVABLE))
    return gfp_text[0];
  return e->gfp & BH_GFP_ZERO ? gfp_text[2] : gfp_text[1];
}

static const char *const ev_name[] = {"", "mm_page_alloc", "mm_page_free", "mm_page_free_batched"};

/* ftrace (perf = 0) or perf script (perf = 1) text, with 1 line in 20 of another event. */
static void write_kernel_text(const char *path, uint64_t n, int perf) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  if (!perf)
    fputs("# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n", f);
  rng_state = 0x1234abcd5678ef01ull;
  for (uint64_t i = 0; i < n; i++) {
    bh_event_t e;
    make_event(i, &e);
    unsigned long long sec = e.time_ns / 1000000000u, us = e.time_ns % 1000000000u / 1000;
    if (i % 20 == 19) {
      if (perf)
        fprintf(f, "          memhog %5d [%03d] %5llu.%06llu: sched:sched_wakeup: comm=x pid=1\n",
                e.pid, e.cpu, sec, us);
      else
        fprintf(f,
                "          memhog-%-7d [%03d] d..2. %5llu.%06llu: sched_wakeup: comm=x "
                "pid=1 prio=120 target_cpu=001\n",
                e.pid, e.cpu, sec, us);
    }
    if (perf)
      fprintf(f,
              "          memhog %5d [%03d] %5llu.%06llu: kmem:%s: page=0xffffea%010" PRIx64
              " pfn=0x%" PRIx64 " order=%u",
              e.pid, e.cpu, sec, us, ev_name[e.op], e.pfn * 64, e.pfn, e.order);
    else
      fprintf(f,
              "          memhog-%-7d [%03d] d..1. %5llu.%06llu: %s: page=%016" PRIx64
              " pfn=0x%" PRIx64 " order=%u",
              e.pid, e.cpu, sec, us, ev_name[e.op], e.pfn * 0x9e37u, e.pfn, e.order);
    if (e.op == BH_EV_ALLOC)
      fprintf(f, " migratetype=%d gfp_flags=%s", e.migratetype, gfp_name(&e));
    fputc('\n', f);
  }
  if (fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static void write_native(const char *path, uint64_t n, int format, int comp) {
  bh_trace_writer_t *w;
  if (bh_trace_writer_open(path, format, comp, &w) != 0) {
    fprintf(stderr, "%s\n", bh_trace_error(NULL));
    exit(1);
  }
  rng_state = 0x1234abcd5678ef01ull;
  for (uint64_t i = 0; i < n; i++) {
    bh_event_t e;
    make_event(i, &e);
    if (e.op != BH_EV_ALLOC)
      e.migratetype = -1;
    if (bh_trace_write(w, &e) != 0) {
      fprintf(stderr, "%s\n", bh_trace_error(NULL));
      exit(1);
    }
  }
  if (bh_trace_writer_close(w) != 0) {
    fprintf(stderr, "%s\n", bh_trace_error(NULL));
    exit(1);
  }
}

/* One full read; returns wall seconds (and CPU seconds in *cpu), checks the event count. */
static double read_once(const char *path, uint64_t n, uint64_t *checksum, double *cpu) {
  double t0 = now(), c0 = cpu_now();
  bh_trace_t *t;
  if (bh_trace_open(path, NULL, &t) != 0) {
    fprintf(stderr, "%s\n", bh_trace_error(NULL));
    exit(1);
  }
  bh_event_t e;
  int r;
  uint64_t k = 0, sum = 0;
  while ((r = bh_trace_next(t, &e)) == 1) {
    sum += e.pfn ^ e.order;
    k++;
  }
  double dt = now() - t0;
  *cpu = cpu_now() - c0;
  if (r < 0 || k != n) {
    fprintf(stderr, "%s: read %" PRIu64 " of %" PRIu64 " events (%s)\n", path, k, n,
            bh_trace_error(t));
    exit(1);
  }
  bh_trace_close(t);
  *checksum = sum;
  return dt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct result {
  const char *label;
  double mib, wall_eps, wall_lo, wall_hi, cpu_eps;
};

static void bench(const char *label, const char *path, uint64_t n, struct result *out) {
  double runs[RUNS], cpus[RUNS];
  uint64_t sum;
  read_once(path, n, &sum, &cpus[0]); /* warm the page cache */
  for (int i = 0; i < RUNS; i++)
    runs[i] = read_once(path, n, &sum, &cpus[i]);
  qsort(runs, RUNS, sizeof(runs[0]), cmp_double);
  qsort(cpus, RUNS, sizeof(cpus[0]), cmp_double);
  struct stat st;
  stat(path, &st);
  double med = runs[RUNS / 2], cmed = cpus[RUNS / 2];
  *out = (struct result){label,
                         (double)st.st_size / (1 << 20),
                         (double)n / med,
                         (double)n / runs[RUNS - 1],
                         (double)n / runs[0],
                         (double)n / cmed};
  printf("%-20s %7.1f MiB  wall %7.3f s %7.2f M ev/s (%.2f..%.2f)  cpu %7.2f M ev/s\n", label,
         out->mib, med, out->wall_eps / 1e6, out->wall_lo / 1e6, out->wall_hi / 1e6,
         out->cpu_eps / 1e6);
}

static void write_results(const char *dir, const char *args, uint64_t n, const struct result *r,
                          int nr) {
  bu_machine_t m;
  bu_machine_info(&m);
  FILE *csv = bu_open_out(dir, "trace_read.csv"), *json = bu_open_out(dir, "trace_read.json");
  if (!csv || !json)
    exit(1);
  bu_csv_machine(csv, &m, "trace_read_bench", args);
  fprintf(csv, "format,events,file_mib,median_wall_eps,min_wall_eps,max_wall_eps,median_cpu_eps\n");
  fprintf(json, "{\n");
  bu_json_machine(json, &m, 2);
  fprintf(json, ",\n  \"events\": %" PRIu64 ",\n  \"formats\": [\n", n);
  for (int i = 0; i < nr; i++) {
    fprintf(csv, "%s,%" PRIu64 ",%.2f,%.0f,%.0f,%.0f,%.0f\n", r[i].label, n, r[i].mib,
            r[i].wall_eps, r[i].wall_lo, r[i].wall_hi, r[i].cpu_eps);
    fprintf(json,
            "    {\"format\": \"%s\", \"file_mib\": %.2f, \"median_wall_eps\": %.0f, "
            "\"min_wall_eps\": %.0f, \"max_wall_eps\": %.0f, \"median_cpu_eps\": %.0f}%s\n",
            r[i].label, r[i].mib, r[i].wall_eps, r[i].wall_lo, r[i].wall_hi, r[i].cpu_eps,
            i + 1 < nr ? "," : "");
  }
  fprintf(json, "  ]\n}\n");
  fclose(csv);
  fclose(json);
}

int main(int argc, char **argv) {
  uint64_t n = 5000000;
  const char *only = NULL, *out = "results";
  char args[256];
  bu_join_args(args, sizeof(args), argc, argv);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      n = 500000;
    } else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
      n = strtoull(argv[++i], NULL, 0);
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--reps") || i + 1 >= argc || !++i) { /* --reps: fixed at 5 */
      fprintf(stderr, "usage: trace_read_bench [--quick] [--events N] [--only LABEL] "
                      "[--out DIR]\n");
      return 2;
    }
  }
  if (n < 1000) {
    fprintf(stderr, "trace_read_bench: --events must be at least 1000\n");
    return 2;
  }
  char dir[] = "/tmp/bh-trace-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  struct {
    const char *label, *file;
    int kind; /* 0 ftrace, 1 perf, else native format */
    int comp;
  } cases[] = {
      {"ftrace", "ftrace.txt", 0, 0},
      {"perf-script", "perf.txt", 1, 0},
      {"native-text", "native.txt", BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_NONE},
      {"native-text+gzip", "native.txt.gz", BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_GZIP},
      {"native-text+zstd", "native.txt.zst", BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_ZSTD},
      {"native-binary", "native.bin", BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE},
      {"native-binary+gzip", "native.bin.gz", BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_GZIP},
      {"native-binary+zstd", "native.bin.zst", BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_ZSTD},
  };
  printf("%" PRIu64 " events per file, median of %d reads; byte loop %.2f ns/byte\n", n, RUNS,
         byte_loop_ns());
  struct result results[sizeof(cases) / sizeof(cases[0])];
  int nr = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (only && !bu_in_list(only, cases[i].label))
      continue;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, cases[i].file);
    if (cases[i].kind <= 1)
      write_kernel_text(path, n, cases[i].kind);
    else
      write_native(path, n, cases[i].kind, cases[i].comp);
    bench(cases[i].label, path, n, &results[nr++]);
    unlink(path);
  }
  rmdir(dir);
  write_results(out, args, n, results, nr);
  return 0;
}
