/* Helpers shared by the verbs: usage errors, sizes, durations, long options. */
#include "cli/cli.h"

#include <buddyhint/strategy.h>
#include <buddyhint/trace.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
