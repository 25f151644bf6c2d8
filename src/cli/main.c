/* buddyhint: dispatches to one verb per file. */
#include "cli/cli.h"
#include "cli/run_json.h"

#include <string.h>
#include <unistd.h>

static const bh_cli_verb_t verbs[] = {
    {"replay", "replay a trace through the allocator under one hinting strategy", cmd_replay},
    {"compare", "replay a trace once per strategy and print one table", cmd_compare},
    {"check", "replay a trace with the invariant checker after every batch", cmd_check},
    {"gen", "write a synthetic trace (memhog, page-fault1, guests, frag-stress)", cmd_gen},
    {"convert", "convert any readable trace to a native format", cmd_convert},
    {"record", "record a real trace of a command from the running kernel (root)", cmd_record},
    {"live", "replay the running kernel's allocator as it runs, under several strategies (root)",
     cmd_live},
    {"machine", "describe a trace's machine, or take a snapshot of /proc", cmd_machine},
    {"info", "print the version, build options, strategies and defaults", cmd_info},
    {"plot", "draw a result file (bench/ CSV, replay timeline) with gnuplot", cmd_plot},
    {"sweep", "run a grid of replays from a YAML spec (here, on Slurm, with GNU parallel)",
     cmd_sweep},
    {"merge", "merge a sweep's results into one table (CSV or JSON)", cmd_merge},
};

static void usage(FILE *out) {
  fprintf(out, "usage: buddyhint VERB [OPTIONS]...\n\nverbs:\n");
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    fprintf(out, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(out, "\n'buddyhint VERB --help' describes a verb.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return BH_EXIT_USAGE;
  }
  if (bh_cli_is_help(argv[1])) {
    usage(stdout);
    return bh_cli_stdout_close("--help", BH_EXIT_OK);
  }
  if (!strcmp(argv[1], "--version")) {
    printf("buddyhint %s\n", bh_version());
    return bh_cli_stdout_close("--version", BH_EXIT_OK);
  }
  /* not a terminal: the output is written at the end, where bh_cli_stdout_close checks it
   * (and sees the write's own error); glibc ignores the size of a buffer it is not given */
  static char outbuf[1 << 20];
  if (!isatty(STDOUT_FILENO))
    setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    if (!strcmp(argv[1], verbs[i].name)) {
      bh_cli_set_argv(argc - 1, argv + 1);
      return bh_cli_stdout_close(verbs[i].name, verbs[i].run(argc - 1, argv + 1));
    }
  fprintf(stderr, "buddyhint: unknown verb '%s'\n", argv[1]);
  usage(stderr);
  return BH_EXIT_USAGE;
}
