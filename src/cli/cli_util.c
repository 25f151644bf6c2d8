/* Helpers shared by the verbs: usage errors, sizes, durations, long options, outputs. */
#include "cli/cli.h"
#include "common/outfile.h"

#include <buddyhint/machine.h>
#include <buddyhint/strategy.h>
#include <buddyhint/trace.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bh_cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "buddyhint %s: ", verb);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see 'buddyhint %s --help')\n", verb);
  va_end(ap);
  return BH_EXIT_USAGE;
}

int bh_cli_parse_size(const char *s, uint64_t *bytes) {
  bh_opt_t o = {"size", s};
  return bh_opt_size(&o, bytes) ? -1 : 0;
}

int bh_cli_parse_seconds(const char *s, uint64_t *ns) {
  bh_opt_t o = {"duration", s};
  return bh_opt_duration(&o, ns) ? -1 : 0;
}

int bh_cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
  if (!s || !*s || strspn(s, "0123456789") != strlen(s))
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, NULL, 10);
  if (errno || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int bh_cli_parse_buffer_kb(const char *verb, const char *kbs, unsigned *kb) {
  uint64_t v;
  if (bh_cli_parse_u64(kbs, 1, 1ul << 24, &v))
    return bh_cli_usage_error(verb, "--buffer-kb wants a number of KiB from 1 to %lu, not '%s'",
                              1ul << 24, kbs);
  *kb = (unsigned)v;
  return 0;
}

int bh_cli_parse_double(const char *s, double min, double max, double *out) {
  if (!s || !((*s >= '0' && *s <= '9') || *s == '.') || strpbrk(s, "xXnN"))
    return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno || !isfinite(v) || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

unsigned bh_cli_online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
}

bool bh_cli_is_help(const char *arg) {
  return arg && (!strcmp(arg, "-h") || !strcmp(arg, "--help"));
}

int bh_cli_opt(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, "--", 2) || strncmp(a + 2, name, n))
    return 0;
  if (a[2 + n] == '=') {
    *value = a + 3 + n;
    *i += 1;
    return 1;
  }
  if (a[2 + n] != 0)
    return 0;
  if (*i + 1 >= argc) {
    bh_cli_usage_error(argv[0], "--%s needs a value", name);
    return -1;
  }
  *value = argv[*i + 1];
  *i += 2;
  return 1;
}

int bh_cli_short_opt(const char *verb, int argc, char **argv, int *i, const char *name,
                     const char **value) {
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n]) { /* the value glued on: -j1, as getopt */
    *value = argv[*i] + n;
    *i += 1;
    return 1;
  }
  if (strcmp(argv[*i], name))
    return 0;
  if (*i + 1 >= argc) {
    bh_cli_usage_error(verb, "%s needs a value", name);
    return -1;
  }
  *value = argv[*i + 1];
  *i += 2;
  return 1;
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
  size_t m = strlen(suffix);
  return n >= m && !memcmp(s + n - m, suffix, m);
}

int bh_cli_output_kind(const char *verb, const char *path, const char *fmt, const char *comp,
                       int *format, int *compression) {
  size_t n = strlen(path);
  *compression = BH_TRACE_COMP_NONE;
  if (ends_with(path, n, ".gz")) {
    *compression = BH_TRACE_COMP_GZIP;
    n -= 3;
  } else if (ends_with(path, n, ".zst")) {
    *compression = BH_TRACE_COMP_ZSTD;
    n -= 4;
  }
  *format = ends_with(path, n, ".bht") || ends_with(path, n, ".bin") ? BH_TRACE_NATIVE_BINARY
                                                                     : BH_TRACE_NATIVE_TEXT;
  if (fmt) {
    if (!strcmp(fmt, "text"))
      *format = BH_TRACE_NATIVE_TEXT;
    else if (!strcmp(fmt, "binary"))
      *format = BH_TRACE_NATIVE_BINARY;
    else
      return bh_cli_usage_error(verb, "--format must be text or binary, not '%s'", fmt);
  }
  if (comp) {
    if (!strcmp(comp, "none"))
      *compression = BH_TRACE_COMP_NONE;
    else if (!strcmp(comp, "gzip"))
      *compression = BH_TRACE_COMP_GZIP;
    else if (!strcmp(comp, "zstd"))
      *compression = BH_TRACE_COMP_ZSTD;
    else
      return bh_cli_usage_error(verb, "--compress must be none, gzip or zstd, not '%s'", comp);
  }
  return 0;
}

const char *bh_cli_format_name(int format) {
  return format == BH_TRACE_NATIVE_BINARY ? "native-binary" : "native-text";
}

const char *bh_cli_compression_name(int c) {
  return c == BH_TRACE_COMP_GZIP ? "gzip" : c == BH_TRACE_COMP_ZSTD ? "zstd" : "none";
}

/* ---- outputs ---- */

struct bh_cli_out {
  const char *verb;
  bh__outfile_t of;
  FILE *f; /* the stream on it, if one was asked for */
  int err; /* errno of the first failed write through the stream */
};

static const char *const *cli_inputs;

void bh_cli_set_inputs(const char *const *inputs) {
  cli_inputs = inputs;
  /* a named FIFO blocks its reader until a writer opens it: say what is waited for, once
   * per FIFO (not for the pipes of <(...) and /dev/stdin, which have their writer) */
  static char said[PATH_MAX];
  for (size_t i = 0; inputs && inputs[i]; i++) {
    struct stat st;
    const char *p = inputs[i];
    if (strncmp(p, "/dev/", 5) && strncmp(p, "/proc/", 6) && strcmp(p, said) && !stat(p, &st) &&
        S_ISFIFO(st.st_mode)) {
      fprintf(stderr, "buddyhint: %s is a FIFO: waiting for a writer to open it\n", p);
      snprintf(said, sizeof(said), "%s", p);
    }
  }
}

int bh_cli_out_open(const char *verb, const char *path, bh_cli_out_t **out) {
  bh_cli_out_t *o = calloc(1, sizeof(*o));
  char msg[1024];
  *out = NULL;
  if (!o) {
    fprintf(stderr, "buddyhint %s: out of memory\n", verb);
    return BH_EXIT_FAIL;
  }
  o->verb = verb;
  int err = bh__outfile_open(&o->of, path, cli_inputs, msg, sizeof(msg));
  if (err) {
    fprintf(stderr, "buddyhint %s: %s\n", verb, msg);
    free(o);
    return err == BH_EINVAL ? BH_EXIT_USAGE : BH_EXIT_FAIL;
  }
  *out = o;
  return BH_EXIT_OK;
}

const char *bh_cli_out_writing(const bh_cli_out_t *o) {
  return o->of.tmp ? o->of.tmp : o->of.stdout_fd ? "/dev/stdout" : o->of.path;
}

/* The stream's writes, each checked: the first failure's errno is kept for the message. */
static ssize_t out_write(void *cookie, const char *buf, size_t n) {
  bh_cli_out_t *o = cookie;
  size_t done = 0;
  while (done < n) {
    ssize_t r = write(o->of.fd, buf + done, n - done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (!o->err)
        o->err = r < 0 ? errno : EIO;
      return done ? (ssize_t)done : -1;
    }
    done += (size_t)r;
  }
  return (ssize_t)n;
}

FILE *bh_cli_out_stream(bh_cli_out_t *o) {
  if (o->f)
    return o->f;
  if (o->of.stdout_fd)
    return o->f = stdout;
  cookie_io_functions_t io = {.write = out_write};
  o->f = fopencookie(o, "w", io);
  if (o->f)
    setvbuf(o->f, NULL, _IOFBF, 1 << 16);
  return o->f;
}

int bh_cli_out_writer(bh_cli_out_t *o, int format, int compression, int version,
                      const char *description, bh_trace_writer_t **w) {
  return version >= 2
             ? bh_trace_writer_fdopen2(o->of.fd, o->of.name, format, compression, description, w)
             : bh_trace_writer_fdopen(o->of.fd, o->of.name, format, compression, w);
}

static void out_free(bh_cli_out_t *o) {
  if (o->f && o->f != stdout)
    fclose(o->f); /* writes nothing more after a failure: the outfile is given up below */
  bh__outfile_abort(&o->of);
  free(o);
}

int bh_cli_out_close(bh_cli_out_t *o) {
  if (!o)
    return BH_EXIT_OK;
  int e = 0;
  if (o->f) {
    if (fflush(o->f) != 0 || ferror(o->f))
      e = o->err ? o->err : errno ? errno : EIO;
    if (o->f != stdout && fclose(o->f) != 0 && !e)
      e = o->err ? o->err : EIO;
    o->f = NULL;
  }
  char msg[1024];
  if (e) {
    fprintf(stderr, "buddyhint %s: %s: write failed: %s\n", o->verb, o->of.name, strerror(e));
    out_free(o);
    return BH_EXIT_FAIL;
  }
  if (bh__outfile_commit(&o->of, msg, sizeof(msg))) {
    fprintf(stderr, "buddyhint %s: %s\n", o->verb, msg);
    free(o);
    return BH_EXIT_FAIL;
  }
  free(o);
  return BH_EXIT_OK;
}

void bh_cli_out_abort(bh_cli_out_t *o) {
  if (!o)
    return;
  if (o->f == stdout)
    o->f = NULL;
  out_free(o);
}

int bh_cli_stdout_close(const char *verb, int rc) {
  errno = 0;
  int e = fflush(stdout) != 0 ? (errno ? errno : EIO) : ferror(stdout) ? EIO : 0;
  if (!e)
    return rc;
  fprintf(stderr, "buddyhint %s: <stdout>: write failed: %s\n", verb, strerror(e));
  return rc == BH_EXIT_OK ? BH_EXIT_FAIL : rc;
}

void bh_cli_print_machine_warnings(const char *verb, const struct bh_machine *m) {
  for (const char *w = bh_machine_warnings(m), *nl; *w; w = nl + 1) {
    nl = strchr(w, '\n');
    fprintf(stderr, "buddyhint %s: warning: %.*s\n", verb, (int)(nl - w), w);
  }
}
