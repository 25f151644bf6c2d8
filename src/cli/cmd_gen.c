/* buddyhint gen: writes a synthetic trace (src/gen/gen.c). */
#include "cli/cli.h"

#include <buddyhint/gen.h>
#include <buddyhint/trace.h>

#include <stdlib.h>
#include <string.h>

#define VERB "gen"

/* ---- help ---- */

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint gen WORKLOAD [--param KEY=VALUE]... -o FILE [--format text|binary]\n"
          "                     [--compress none|gzip|zstd]\n"
          "       buddyhint gen [WORKLOAD] --help\n"
          "\n"
          "Writes a synthetic trace of WORKLOAD in a native format: the events a Linux 6.x\n"
          "kernel's kmem tracepoints would record.  The output depends only on the parameters\n"
          "(seed included): the same command writes the same bytes.\n"
          "\n"
          "options:\n"
          "  -p, --param KEY=VALUE  set a workload parameter (repeatable; see below)\n"
          "  -o, --output FILE      the trace to write ('-' = standard output)\n"
          "  --format text|binary   default: binary if FILE ends in .bht or .bin (before any\n"
          "                         .gz/.zst), else text\n"
          "  --compress none|gzip|zstd\n"
          "                         default: gzip for .gz, zstd for .zst, else none\n"
          "  -h, --help             this help; with a WORKLOAD, that workload in detail\n"
          "\n"
          "A summary (events, allocations, frees) goes to standard error.  A regular FILE is\n"
          "written to a temporary file beside it (.FILE.XXXXXX) and renamed to FILE at the\n"
          "end: a failed or interrupted run leaves a file already at FILE as it was.\n"
          "exit status: 0 written, 1 the output could not be written, 2 bad usage, unknown\n"
          "workload or parameter.\n"
          "\n"
          "workloads:\n");
  for (int i = 0; bh_gen_workload_at(i); i++) {
    const char *w = bh_gen_workload_at(i);
    fprintf(out, "\n%s: %s\n", w, bh_gen_summary(w));
    const char *help = bh_gen_help(w), *p = strstr(help, "parameters");
    p = p ? strchr(p, '\n') : NULL;
    fputs(p ? p + 1 : help, out);
  }
}

static void workload_usage(const char *w) {
  printf("usage: buddyhint gen %s [--param KEY=VALUE]... -o FILE [--format text|binary]\n"
         "                     [--compress none|gzip|zstd]\n\n%s: %s\n\n%s",
         w, w, bh_gen_summary(w), bh_gen_help(w));
}

/* ---- run ---- */

typedef struct gen_out {
  bh_trace_writer_t *w;
  uint64_t events, allocs, frees;
} gen_out_t;

static int write_one(void *ctx, const bh_event_t *ev) {
  gen_out_t *o = ctx;
  int err = bh_trace_write(o->w, ev);
  if (err)
    return err;
  o->events++;
  if (ev->op == BH_EV_ALLOC)
    o->allocs++;
  else
    o->frees++;
  return 0;
}

/* Stops the generator at its first event: the parameters were accepted. */
static int stop_at_first(void *ctx, const bh_event_t *ev) {
  (void)ctx;
  (void)ev;
  return 1;
}

int cmd_gen(int argc, char **argv) {
  const char *workload = NULL, *out = NULL, *fmt = NULL, *comp = NULL, *v;
  bool help = false;
  bh_opt_t *params = calloc((size_t)argc, sizeof(*params));
  size_t np = 0;
  int rc = BH_EXIT_USAGE, r;
  if (!params) {
    fprintf(stderr, "buddyhint gen: out of memory\n");
    return BH_EXIT_FAIL;
  }
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    if (bh_cli_is_help(a)) {
      help = true;
      i++;
    } else if ((r = bh_cli_opt(argc, argv, &i, "param", &v)) != 0 ||
               (r = bh_cli_short_opt(VERB, argc, argv, &i, "-p", &v)) != 0) {
      if (r < 0)
        goto done;
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) {
        rc = bh_cli_usage_error(VERB, "--param wants KEY=VALUE, not '%s'", v);
        goto done;
      }
      char *key = strndup(v, (size_t)(eq - v));
      if (!key) {
        rc = BH_EXIT_FAIL;
        goto done;
      }
      params[np].key = key;
      params[np++].value = eq + 1;
    } else if ((r = bh_cli_opt(argc, argv, &i, "output", &out)) != 0 ||
               (r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &out)) != 0) {
      if (r < 0)
        goto done;
    } else if ((r = bh_cli_opt(argc, argv, &i, "format", &fmt)) != 0 ||
               (r = bh_cli_opt(argc, argv, &i, "compress", &comp)) != 0) {
      if (r < 0)
        goto done;
    } else if (a[0] == '-' && a[1]) {
      rc = bh_cli_usage_error(VERB, "unknown option '%s'", a);
      goto done;
    } else if (!workload) {
      workload = a;
      i++;
    } else {
      rc = bh_cli_usage_error(VERB, "one workload only ('%s' and '%s')", workload, a);
      goto done;
    }
  }
  if (workload && !bh_gen_summary(workload)) {
    char err[256];
    bh_gen_run(workload, NULL, 0, stop_at_first, NULL, err, sizeof(err));
    rc = bh_cli_usage_error(VERB, "%s", err);
    goto done;
  }
  if (help) {
    if (workload)
      workload_usage(workload);
    else
      usage(stdout);
    rc = BH_EXIT_OK;
    goto done;
  }
  if (!workload) {
    rc = bh_cli_usage_error(VERB, "which workload? (memhog, page-fault1, guests, frag-stress)");
    goto done;
  }
  if (!out) {
    rc = bh_cli_usage_error(VERB, "-o FILE is required");
    goto done;
  }
  int format, compression;
  if ((rc = bh_cli_output_kind(VERB, out, fmt, comp, &format, &compression)) != 0)
    goto done;

  /* Check the parameters before the output file is created. */
  char err[512];
  r = bh_gen_run(workload, params, np, stop_at_first, NULL, err, sizeof(err));
  if (r != 1 && r != 0) {
    fprintf(stderr, "buddyhint gen: %s\n(see 'buddyhint gen %s --help')\n", err, workload);
    rc = BH_EXIT_USAGE;
    goto done;
  }

  gen_out_t o = {0};
  bh_cli_out_t *file;
  if ((rc = bh_cli_out_open(VERB, out, &file)) != 0)
    goto done;
  if (bh_cli_out_writer(file, format, compression, 1, NULL, &o.w)) {
    fprintf(stderr, "buddyhint gen: %s\n", bh_trace_error(NULL));
    bh_cli_out_abort(file);
    rc = BH_EXIT_FAIL;
    goto done;
  }
  r = bh_gen_run(workload, params, np, write_one, &o, err, sizeof(err));
  if (r && !err[0])
    snprintf(err, sizeof(err), "%s", bh_trace_error(NULL));
  int cr = bh_trace_writer_close(o.w);
  if (!r && cr)
    snprintf(err, sizeof(err), "%s", bh_trace_error(NULL));
  if (r || cr) {
    fprintf(stderr, "buddyhint gen: %s\n", err);
    bh_cli_out_abort(file); /* an incomplete trace would pass for a short one */
    rc = BH_EXIT_FAIL;
    goto done;
  }
  if ((rc = bh_cli_out_close(file)) != 0)
    goto done;
  fprintf(stderr,
          "buddyhint gen: %s: %llu events (%llu allocs, %llu frees) written to %s (%s, %s)\n",
          workload, (unsigned long long)o.events, (unsigned long long)o.allocs,
          (unsigned long long)o.frees, out, bh_cli_format_name(format),
          bh_cli_compression_name(compression));
  rc = BH_EXIT_OK;
done:
  for (size_t i = 0; i < np; i++)
    free((char *)params[i].key);
  free(params);
  return rc;
}
