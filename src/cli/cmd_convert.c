/* buddyhint convert: any readable trace to a native one. */
#include "cli/cli.h"

#include <buddyhint/machine.h>
#include <buddyhint/trace.h>

#include <stdlib.h>

#include <string.h>

#define VERB "convert"

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint convert IN OUT [--format text|binary] [--compress none|gzip|zstd]\n"
          "                         [--lenient] [--start DIR] [--end DIR] [--pcp-events]\n"
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
          "  --pcp-events           keep the pcp events and the fallbacks (mm_page_pcpu_drain,\n"
          "                         mm_page_alloc_zone_locked, mm_page_alloc_extfrag): OUT is\n"
          "                         then native version 3 (without it they are dropped)\n"
          "  --start DIR, --end DIR snapshots of the recorded machine from directories of its\n"
          "                         /proc files (buddyinfo, pagetypeinfo, zoneinfo, optionally\n"
          "                         kpageflags), stored in OUT as its machine description (for\n"
          "                         a trace recorded with cat, trace-cmd or perf); they replace\n"
          "                         IN's own\n"
          "  -h, --help             this help\n"
          "\n"
          "The counts (events, other lines, malformed lines) go to standard error.  A\n"
          "malformed line is reported as FILE:LINE: what is wrong.\n"
          "exit status: 0 converted; 1 the output could not be written, or out of memory;\n"
          "2 bad usage, OUT the same file as IN, an input that cannot be opened or\n"
          "recognised, a corrupt or truncated compressed stream, or a malformed line\n"
          "without --lenient.\n"
          "A regular OUT is written to a temporary file beside it (.OUT.XXXXXX) and renamed\n"
          "to OUT at the end: on failure a file already at OUT is left as it was.  A device\n"
          "or FIFO is written in place.\n");
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
  if (c.lost_events)
    fprintf(stderr, "buddyhint convert: warning: the trace lost %llu events (kept as markers)\n",
            (unsigned long long)c.lost_events);
  if (c.malformed)
    fprintf(stderr, "buddyhint convert: skipped malformed lines, the last: %s\n",
            bh_trace_error(t));
  if (c.gfp_unknown)
    fprintf(stderr, "buddyhint convert: %llu gfp flag names not recognised (ignored)\n",
            (unsigned long long)c.gfp_unknown);
}

/* The description of the snapshots in the directories start and end (either may be NULL). */
static int describe_dirs(const char *start, const char *end, char **text) {
  bh_machine_t *m = bh_machine_new();
  char err[512];
  int e = m ? 0 : BH_ENOMEM;
  if (!e && start)
    e = bh_machine_read_snapshot(m, BH_SNAP_START, start, 0, 0, err, sizeof(err));
  if (!e && end)
    e = bh_machine_read_snapshot(m, BH_SNAP_END, end, 0, 0, err, sizeof(err));
  if (!e)
    bh_cli_print_machine_warnings("convert", m);
  if (!e)
    e = bh_machine_format(m, text, NULL);
  if (e)
    fprintf(stderr, "buddyhint convert: %s\n", e == BH_ENOMEM ? "out of memory" : err);
  bh_machine_free(m);
  return e;
}

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *fmt = NULL, *comp = NULL, *start = NULL, *end = NULL;
  bool lenient = false, pcp = false;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    int r;
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "format", &fmt)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "compress", &comp)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "start", &start)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "end", &end)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--lenient")) {
      lenient = true;
      i++;
    } else if (!strcmp(a, "--pcp-events")) {
      pcp = true;
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
  const char *inputs[] = {in, NULL};
  bh_cli_set_inputs(inputs);
  bh_cli_out_t *o;
  if ((rc = bh_cli_out_open(VERB, out, &o)) != 0)
    return rc;

  bh_trace_opts_t opts = {.lenient = lenient, .pcp_events = pcp};
  bh_trace_t *t;
  int err = bh_trace_open(in, &opts, &t);
  if (err) {
    fprintf(stderr, "buddyhint convert: %s\n", bh_trace_error(NULL));
    bh_cli_out_abort(o);
    return err == BH_ENOMEM ? BH_EXIT_FAIL : BH_EXIT_USAGE;
  }
  /* Version 2 where the input may need it: a machine description, or kernel text, which may
   * say that events were lost.  A native version 1 trace has neither and stays version 1. */
  char *given = NULL;
  if ((start || end) && describe_dirs(start, end, &given)) {
    bh_cli_out_abort(o);
    bh_trace_close(t);
    return BH_EXIT_USAGE;
  }
  const char *desc = given ? given : bh_trace_description(t, NULL);
  bool v2 = desc || bh_trace_version(t) != 1 || pcp;
  bh_trace_writer_t *w;
  if (bh_cli_out_writer(o, format, compression, v2 ? 2 : 1, desc, &w) ||
      (pcp && bh_trace_writer_pcp_events(w))) {
    fprintf(stderr, "buddyhint convert: %s\n", bh_trace_error(NULL));
    bh_cli_out_abort(o);
    bh_trace_close(t);
    return BH_EXIT_FAIL;
  }
  bh_event_t ev = {0};
  int r, werr = 0;
  uint64_t lost = 0;
  bool v1_lost = false;
  while ((r = bh_trace_next(t, &ev)) == 1 || r == 0) {
    /* lost events the reader met before this event (or at the end) keep their place */
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    if (c.lost_events > lost && !v2) { /* a version 1 trace cannot say so: never drop it */
      fprintf(stderr,
              "buddyhint convert: %s: says %llu events were lost, which a version 1 trace "
              "cannot record; make its first line '# buddyhint-trace 2' to keep them as "
              "lost-events markers\n",
              in, (unsigned long long)(c.lost_events - lost));
      v1_lost = true;
      break;
    }
    if (c.lost_events > lost &&
        (werr = bh_trace_write_lost(w, ev.time_ns, c.lost_events - lost, -1)) != 0)
      break;
    lost = c.lost_events;
    if (r == 0 || (werr = bh_trace_write(w, &ev)) != 0)
      break;
  }
  char wmsg[512] = "";
  if (werr)
    snprintf(wmsg, sizeof(wmsg), "%s", bh_trace_error(NULL));
  bool give_up = r < 0 || v1_lost; /* OUT is left as it was */
  int cerr = give_up ? 0 : bh_trace_writer_close(w);
  if (give_up)
    bh_trace_writer_abort(w);
  if (!werr && cerr)
    snprintf(wmsg, sizeof(wmsg), "%s", bh_trace_error(NULL));

  if (v1_lost) {
    rc = BH_EXIT_USAGE; /* the input says more than the output can hold */
  } else if (r < 0) {
    fprintf(stderr, "%s\n", bh_trace_error(t));
    if (r == BH_EFORMAT)
      fprintf(stderr, "buddyhint convert: %s is malformed (--lenient skips bad lines)\n", in);
    rc = r == BH_ENOMEM ? BH_EXIT_FAIL : BH_EXIT_USAGE; /* the input is bad */
  } else if (werr || cerr) {
    fprintf(stderr, "buddyhint convert: %s\n", wmsg);
    rc = BH_EXIT_FAIL;
  } else {
    rc = bh_cli_out_close(o); /* renamed into place: OUT is complete */
    o = NULL;
  }
  if (!rc) {
    print_counts(in, t);
    bh_trace_counts_t c;
    bh_trace_counts(t, &c);
    fprintf(stderr, "buddyhint convert: wrote %llu events to %s (%s, %s)\n",
            (unsigned long long)c.events, out, bh_cli_format_name(format),
            bh_cli_compression_name(compression));
  }
  bh_cli_out_abort(o);
  bh_trace_close(t);
  free(given);
  return rc;
}
