/*
 * Helpers shared by the benchmark programs: a monotonic clock, order statistics over
 * repetitions, process RSS, the machine description every result carries, and small CSV/JSON
 * writers.  Not part of the library.
 *
 * Conventions every bench/ program follows (bench/run-all relies on them):
 *   --out DIR   write DIR/<name>.csv and DIR/<name>.json (default: results/, created if missing)
 *   --quick     fewer and shorter repetitions
 *   --reps N    repetitions per measurement
 * CSV files start with '#' lines describing the machine (gnuplot skips them; pandas needs
 * comment='#'), then one header line and one row per measurement.
 */
#ifndef BH_BENCH_UTIL_H
#define BH_BENCH_UTIL_H

#include <buddyhint.h>
#include <buddyhint/strategy.h>

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#define BU_MiB (1024.0 * 1024.0)

/* Nanoseconds and seconds from CLOCK_MONOTONIC. */
uint64_t bu_now_ns(void);
double bu_now_s(void);
/* Sleeps s seconds (on through signals); nothing for s <= 0. */
void bu_sleep_s(double s);
/* Prints "PROG: WHAT failed: why" (bh_strerror(err), or errno's text for err 0), exits 2. */
__attribute__((noreturn)) void bu_die(const char *prog, const char *what, int err);
/* /proc/loadavg's first three fields as "a b c" ("?" if unreadable). */
void bu_loadavg(char *buf, size_t len);
/* "1G", "512M", "1.5GiB", "4096" (bh_opt_size) -> bytes; 0, or -1 if malformed. */
int bu_parse_size(const char *s, uint64_t *out);
/* "k=v,k=v" -> bh_opt_t pointing into buf (modified); entries without '=' are skipped.
 * Returns the count (at most max). */
size_t bu_split_opts(char *buf, bh_opt_t *opts, size_t max);
/* An arena of `bytes` (a multiple of 8 MiB, >= 64 MiB) laid out as the default 1 GiB one
 * scaled: DMA 16 MiB, Normal half the size, DMA32 the rest; otherwise bh_config_init's. */
void bu_arena_config(uint64_t bytes, bh_config_t *cfg);

/* Order statistics of n samples (n >= 1); the input is not modified. */
typedef struct bu_stats {
  int n;
  double median, p10, p90, min, max, mean;
} bu_stats_t;
void bu_stats(const double *v, int n, bu_stats_t *out);
/* Linear-interpolated quantile q in [0,1] of sorted[0..n-1]. */
double bu_quantile_sorted(const double *sorted, int n, double q);

/* VmRSS and VmSize of this process in KiB, from /proc/self/status (-1 if unreadable). */
long bu_rss_kib(void);
long bu_vmsize_kib(void);

/* Where and how a result was produced. */
typedef struct bu_machine {
  char kernel[128];    /* uname -r */
  char cpu[256];       /* "model name" of /proc/cpuinfo [family/model/stepping, MHz] */
  char compiler[96];   /* __VERSION__ */
  char build_type[32]; /* CMAKE_BUILD_TYPE */
  char cflags[256];    /* compile flags of the build type */
  char date[40];       /* UTC, ISO 8601 */
  char hostname[64];
  char thp[32];         /* transparent_hugepage/enabled, the selected value */
  char lib_version[32]; /* bh_version() */
  int online_cpus;
} bu_machine_t;
void bu_machine_info(bu_machine_t *m);
/* True for build types meant for measuring (Release, RelWithDebInfo, MinSizeRel). */
int bu_build_is_optimized(const bu_machine_t *m);

/* mkdir -p; returns 0 or -1 (errno set). */
int bu_mkdir_p(const char *dir);
/* Opens DIR/NAME for writing, creating DIR; prints why and returns NULL on failure. */
FILE *bu_open_out(const char *dir, const char *name);

/* '#'-comment header lines describing the machine and the program's arguments. */
void bu_csv_machine(FILE *f, const bu_machine_t *m, const char *program, const char *args);
/* A JSON string literal with escapes. */
void bu_json_str(FILE *f, const char *s);
/* A JSON number; NaN and infinities become null. */
void bu_json_num(FILE *f, double v);
/* "key": {"n": N, "median": .., "p10": .., "p90": .., "min": .., "max": .., "mean": ..}, every
 * statistic divided by scale (1 for none). */
void bu_json_stats(FILE *f, const char *key, const bu_stats_t *s, double scale);
/* The program's arguments (argv[1..]) joined by spaces into buf, cut to size bytes. */
void bu_join_args(char *buf, size_t size, int argc, char **argv);
/* The options every benchmark takes: --quick, --reps N, --out DIR.  True when argv[*i] is one
 * of them (*i then moves past its value), false for the program's own options. */
bool bu_common_opt(int argc, char **argv, int *i, bool *quick, int *reps, const char **out);
/* Opens a result object: {"program", "args", "machine", "loadavg_start", "loadavg_end",
 * "elapsed_s", ending with ",\n" so the caller's keys follow. */
void bu_json_head(FILE *f, const char *program, const char *args, const bu_machine_t *m,
                  const char *load0, const char *load1, double elapsed_s);
/* True if name is one of the comma-separated names of list. */
int bu_in_list(const char *list, const char *name);
/* "machine": {...} (no trailing comma), indented by `indent` spaces. */
void bu_json_machine(FILE *f, const bu_machine_t *m, int indent);

/* Keeps the compiler from discarding a value or reordering memory around it. */
#define BU_SINK(x) __asm__ volatile("" : : "r"(x) : "memory")

#endif
