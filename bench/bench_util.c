/* Timing, statistics, machine description and output helpers for bench/ programs. */
#include "bench_util.h"

#include "common/json.h"

#include <buddyhint.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef BH_BENCH_BUILD_TYPE
#define BH_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef BH_BENCH_C_FLAGS
#define BH_BENCH_C_FLAGS ""
#endif

uint64_t bu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bu_quantile_sorted(const double *s, int n, double q) {
  if (n <= 0)
    return NAN;
  double pos = q * (n - 1);
  int i = (int)pos;
  if (i >= n - 1)
    return s[n - 1];
  return s[i] + (pos - i) * (s[i + 1] - s[i]);
}

void bu_stats(const double *v, int n, bu_stats_t *out) {
  memset(out, 0, sizeof(*out));
  out->n = n;
  if (n <= 0) {
    out->median = out->p10 = out->p90 = out->min = out->max = out->mean = NAN;
    return;
  }
  double *s = malloc(sizeof(double) * (size_t)n);
  if (!s) {
    out->median = out->p10 = out->p90 = out->min = out->max = out->mean = NAN;
    return;
  }
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += s[i];
  out->mean = sum / n;
  out->min = s[0];
  out->max = s[n - 1];
  out->median = bu_quantile_sorted(s, n, 0.5);
  out->p10 = bu_quantile_sorted(s, n, 0.1);
  out->p90 = bu_quantile_sorted(s, n, 0.9);
  free(s);
}

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  size_t kl = strlen(key);
  long v = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
      v = strtol(line + kl + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

long bu_rss_kib(void) { return status_kib("VmRSS"); }
long bu_vmsize_kib(void) { return status_kib("VmSize"); }

static void copy_trim(char *dst, size_t cap, const char *src) {
  while (*src == ' ' || *src == '\t')
    src++;
  snprintf(dst, cap, "%s", src);
  size_t n = strlen(dst);
  while (n && (dst[n - 1] == '\n' || dst[n - 1] == ' ' || dst[n - 1] == '\t'))
    dst[--n] = 0;
}

/* "model name" of the first processor, with family/model/stepping, MHz and "hypervisor". */
static void read_cpu_model(char *dst, size_t cap) {
  char name[128] = "unknown", family[16] = "?", model[16] = "?", stepping[16] = "?", mhz[32] = "?";
  bool hv = false;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    static char line[8192];
    while (fgets(line, sizeof(line), f)) {
      char *c = strchr(line, ':');
      if (!c)
        continue;
      if (line[0] == '\n' || strncmp(line, "processor", 9) == 0) {
        if (strcmp(name, "unknown") != 0 && strncmp(line, "processor", 9) == 0)
          break; /* the second processor: done */
        continue;
      }
      if (strncmp(line, "model name", 10) == 0)
        copy_trim(name, sizeof(name), c + 1);
      else if (strncmp(line, "cpu family", 10) == 0)
        copy_trim(family, sizeof(family), c + 1);
      else if (strncmp(line, "model\t", 6) == 0)
        copy_trim(model, sizeof(model), c + 1);
      else if (strncmp(line, "stepping", 8) == 0)
        copy_trim(stepping, sizeof(stepping), c + 1);
      else if (strncmp(line, "cpu MHz", 7) == 0)
        copy_trim(mhz, sizeof(mhz), c + 1);
      else if (strncmp(line, "flags", 5) == 0)
        hv = strstr(c, " hypervisor") != NULL;
    }
    fclose(f);
  }
  snprintf(dst, cap, "%s [family %s model %s stepping %s, %s MHz%s]", name, family, model, stepping,
           mhz, hv ? ", hypervisor" : "");
}

static void read_thp(char *dst, size_t cap) {
  snprintf(dst, cap, "unknown");
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f)
    return;
  char line[128];
  if (fgets(line, sizeof(line), f)) {
    char *l = strchr(line, '['), *r = l ? strchr(l, ']') : NULL;
    if (l && r) {
      *r = 0;
      snprintf(dst, cap, "%s", l + 1);
    }
  }
  fclose(f);
}

void bu_machine_info(bu_machine_t *m) {
  memset(m, 0, sizeof(*m));
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
  else
    snprintf(m->kernel, sizeof(m->kernel), "unknown");
  if (gethostname(m->hostname, sizeof(m->hostname) - 1) != 0)
    snprintf(m->hostname, sizeof(m->hostname), "unknown");
  read_cpu_model(m->cpu, sizeof(m->cpu));
  read_thp(m->thp, sizeof(m->thp));
#if defined(__clang__)
  snprintf(m->compiler, sizeof(m->compiler), "clang %s", __clang_version__);
#elif defined(__GNUC__)
  snprintf(m->compiler, sizeof(m->compiler), "gcc %s", __VERSION__);
#else
  snprintf(m->compiler, sizeof(m->compiler), "%s", __VERSION__);
#endif
  snprintf(m->build_type, sizeof(m->build_type), "%s", BH_BENCH_BUILD_TYPE);
  copy_trim(m->cflags, sizeof(m->cflags), BH_BENCH_C_FLAGS);
  snprintf(m->lib_version, sizeof(m->lib_version), "%s", bh_version());
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  m->online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int bu_build_is_optimized(const bu_machine_t *m) {
  return strcmp(m->build_type, "Release") == 0 || strcmp(m->build_type, "RelWithDebInfo") == 0 ||
         strcmp(m->build_type, "MinSizeRel") == 0;
}

int bu_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return -1;
  return 0;
}

FILE *bu_open_out(const char *dir, const char *name) {
  if (bu_mkdir_p(dir) != 0) {
    fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
    return NULL;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
  return f;
}

void bu_csv_machine(FILE *f, const bu_machine_t *m, const char *program, const char *args) {
  fprintf(f, "# program: %s%s%s\n", program, args && *args ? " " : "", args ? args : "");
  fprintf(f, "# date: %s\n", m->date);
  fprintf(f, "# host: %s\n", m->hostname);
  fprintf(f, "# kernel: %s\n", m->kernel);
  fprintf(f, "# cpu: %s (%d online)\n", m->cpu, m->online_cpus);
  fprintf(f, "# thp: %s\n", m->thp);
  fprintf(f, "# compiler: %s\n", m->compiler);
  fprintf(f, "# build_type: %s\n", m->build_type);
  fprintf(f, "# cflags: %s\n", m->cflags);
  fprintf(f, "# libbuddyhint: %s\n", m->lib_version);
}

void bu_json_str(FILE *f, const char *s) { bh__json_str(f, s); }

void bu_json_num(FILE *f, double v) {
  if (isnan(v) || isinf(v))
    fputs("null", f);
  else
    fprintf(f, "%.6g", v);
}

void bu_json_machine(FILE *f, const bu_machine_t *m, int indent) {
  const char *keys[] = {"date",     "host",       "kernel", "cpu",         "thp",
                        "compiler", "build_type", "cflags", "libbuddyhint"};
  const char *vals[] = {m->date,     m->hostname,   m->kernel, m->cpu,        m->thp,
                        m->compiler, m->build_type, m->cflags, m->lib_version};
  fprintf(f, "%*s\"machine\": {\n", indent, "");
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    fprintf(f, "%*s\"%s\": ", indent + 2, "", keys[i]);
    bu_json_str(f, vals[i]);
    fputs(",\n", f);
  }
  fprintf(f, "%*s\"online_cpus\": %d\n", indent + 2, "", m->online_cpus);
  fprintf(f, "%*s}", indent, "");
}

void bu_json_stats(FILE *f, const char *key, const bu_stats_t *s, double scale) {
  const double v[] = {s->median, s->p10, s->p90, s->min, s->max, s->mean};
  static const char *const names[] = {"median", "p10", "p90", "min", "max", "mean"};
  fprintf(f, "\"%s\": {\"n\": %d", key, s->n);
  for (int i = 0; i < 6; i++) {
    fprintf(f, ", \"%s\": ", names[i]);
    bu_json_num(f, v[i] / scale);
  }
  fputc('}', f);
}

int bu_in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

void bu_join_args(char *buf, size_t size, int argc, char **argv) {
  size_t used = 0;
  if (size)
    buf[0] = 0;
  for (int i = 1; i < argc && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i > 1 ? " " : "", argv[i]);
}

bool bu_common_opt(int argc, char **argv, int *i, bool *quick, int *reps, const char **out) {
  const char *a = argv[*i];
  bool more = *i + 1 < argc;
  if (!strcmp(a, "--quick"))
    *quick = true;
  else if (!strcmp(a, "--reps") && more)
    *reps = atoi(argv[++*i]);
  else if (!strcmp(a, "--out") && more)
    *out = argv[++*i];
  else
    return false;
  return true;
}

void bu_json_head(FILE *f, const char *program, const char *args, const bu_machine_t *m,
                  const char *load0, const char *load1, double elapsed_s) {
  fprintf(f, "{\n  \"program\": ");
  bu_json_str(f, program);
  fprintf(f, ",\n  \"args\": ");
  bu_json_str(f, args);
  fprintf(f, ",\n");
  bu_json_machine(f, m, 2);
  fprintf(f, ",\n  \"loadavg_start\": ");
  bu_json_str(f, load0);
  fprintf(f, ",\n  \"loadavg_end\": ");
  bu_json_str(f, load1);
  fprintf(f, ",\n  \"elapsed_s\": %.1f,\n", elapsed_s);
}

double bu_now_s(void) { return (double)bu_now_ns() / 1e9; }

void bu_sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

void bu_die(const char *prog, const char *what, int err) {
  fprintf(stderr, "%s: %s failed: %s\n", prog, what, err ? bh_strerror(err) : strerror(errno));
  exit(2);
}

void bu_loadavg(char *buf, size_t len) {
  snprintf(buf, len, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f)
    return;
  double a, b, c;
  if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
    snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
  fclose(f);
}

int bu_parse_size(const char *s, uint64_t *out) {
  bh_opt_t o = {"size", s};
  return bh_opt_size(&o, out) ? -1 : 0;
}

size_t bu_split_opts(char *buf, bh_opt_t *opts, size_t max) {
  size_t n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
       t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '=');
    if (!eq)
      continue;
    *eq = 0;
    opts[n++] = (bh_opt_t){t, eq + 1};
  }
  return n;
}

void bu_arena_config(uint64_t bytes, bh_config_t *cfg) {
  bh_config_init(cfg);
  uint64_t dma = 16ull << 20, normal = bytes / 2;
  memset(cfg->zone_bytes, 0, sizeof(cfg->zone_bytes));
  cfg->zone_bytes[BH_ZONE_DMA] = dma;
  cfg->zone_bytes[BH_ZONE_DMA32] = bytes - dma - normal;
  cfg->zone_bytes[BH_ZONE_NORMAL] = normal;
}
