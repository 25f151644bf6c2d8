/* buddyhint convert: any readable trace to a native one. */
#include "cli/cli.h"

#include <buddyhint/trace.h>

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERB "convert"

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint convert IN OUT [--format text|binary] [--compress none|gzip|zstd]\n"
          "                         [--lenient]\n"
          "\n"
          "Reads the trace IN in any format the reader knows (ftrace text, perf script, native\n"
          "text or binary, plain, gzip or zstd; trace-cmd's trace.dat; perf's perf.data\n"
          "through perf script), recognised by its content, and writes its events to OUT in\n"
          "a native format.  '-' is standard input / output.\n"
          "\n"
          "options:\n"
          "  --format text|binary   default: binary if OUT ends in .bht or .bin (before any\n"
          "                         .gz/.zst), else text\n"
          "  --compress none|gzip|zstd\n"
          "                         default: gzip for .gz, zstd for .zst, else none\n"
          "  --lenient              skip malformed lines (counted) instead of stopping\n"
          "  -h, --help             this help\n"
          "\n"
          "The counts (events, other lines, malformed lines) go to standard error.  A\n"
          "malformed line is reported as FILE:LINE: what is wrong.\n"
          "exit status: 0 converted; 1 read, write or decompression error; 2 bad usage, an\n"
          "input that cannot be opened or recognised, or a malformed line without --lenient.\n"
          "On failure OUT is removed (unless it is standard output).\n");
}

/* True if a and b name the same existing file. */
static bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return strcmp(a, "-") && strcmp(b, "-") && !stat(a, &sa) && !stat(b, &sb) &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void print_counts(const char *in, const bh_trace_t *t) {
  bh_trace_counts_t c;
  bh_trace_counts(t, &c);
  fprintf(stderr,
          "buddyhint convert: %s: %s (%s): %llu events (%llu allocs, %llu frees), "
          "%llu other lines, %llu malformed\n",
          in, bh_trace_format_name(t), bh_trace_compression(t), (unsigned long long)c.events,
          (unsigned long long)c.allocs, (unsigned long long)c.frees,
          (unsigned long long)c.other_lines, (unsigned long long)c.malformed);
  if (c.malformed)
    fprintf(stderr, "buddyhint convert: skipped malformed lines, the last: %s\n",
            bh_trace_error(t));
  if (c.gfp_unknown)
    fprintf(stderr, "buddyhint convert: %llu gfp flag names not recognised (ignored)\n",
            (unsigned long long)c.gfp_unknown);
}

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *fmt = NULL, *comp = NULL;
  bool lenient = false;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    int r;
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "format", &fmt)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "compress", &comp)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--lenient")) {
      lenient = true;
      i++;
    } else if (a[0] == '-' && a[1]) {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else if (!in) {
      in = a;
      i++;
    } else if (!out) {
      out = a;
      i++;
    } else {
      return bh_cli_usage_error(VERB, "too many arguments ('%s')", a);
    }
  }
  if (!in || !out)
    return bh_cli_usage_error(VERB, "needs IN and OUT");
  int format, compression, rc;
  if ((rc = bh_cli_output_kind(VERB, out, fmt, comp, &format, &compression)) != 0)
    return rc;
  if (same_file(in, out))
    return bh_cli_usage_error(VERB, "IN and OUT are the same file");

  bh_trace_opts_t opts = {.lenient = lenient};
  bh_trace_t *t;
  int err = bh_trace_open(in, &opts, &t);
  if (err) {
    fprintf(stderr, "buddyhint convert: %s\n", bh_trace_error(NULL));
    return err == BH_EIO || err == BH_ENOMEM ? BH_EXIT_FAIL : BH_EXIT_USAGE;
  }
  bh_trace_writer_t *w;
  if (bh_trace_writer_open(out, format, compression, &w)) {
    fprintf(stderr, "buddyhint convert: %s\n", bh_trace_error(NULL));
    bh_trace_close(t);
    return BH_EXIT_FAIL;
  }
  bh_event_t ev;
  int r, werr = 0;
  while ((r = bh_trace_next(t, &ev)) == 1)
    if ((werr = bh_trace_write(w, &ev)) != 0)
      break;
  char wmsg[512] = "";
  if (werr)
    snprintf(wmsg, sizeof(wmsg), "%s", bh_trace_error(NULL));
  int cerr = bh_trace_writer_close(w);
  if (!werr && cerr)
    snprintf(wmsg, sizeof(wmsg), "%s", bh_trace_error(NULL));

  if (r < 0) {
    fprintf(stderr, "%s\n", bh_trace_error(t));
    if (r == BH_EFORMAT)
      fprintf(stderr, "buddyhint convert: %s is malformed (--lenient skips bad lines)\n", in);
    rc = r == BH_EFORMAT ? BH_EXIT_USAGE : BH_EXIT_FAIL;
  } else if (werr || cerr) {
    fprintf(stderr, "buddyhint convert: %s\n", wmsg);
    rc = BH_EXIT_FAIL;
  } else {
    print_counts(in, t);
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    fprintf(stderr, "buddyhint convert: wrote %llu events to %s (%s, %s)\n",
            (unsigned long long)c.events, out, bh_cli_format_name(format),
            bh_cli_compression_name(compression));
    rc = BH_EXIT_OK;
  }
  if (rc && strcmp(out, "-"))
    unlink(out);
  bh_trace_close(t);
  return rc;
}
