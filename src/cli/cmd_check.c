/* buddyhint check: a replay with the invariant checker after every batch and worker step. */
#include "cli/replay_opts.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: buddyhint check TRACE [OPTIONS]\n\n"
          "Replays TRACE like 'replay' (sim backing unless --backing is given) and runs the\n"
          "invariant checker every 1000 events (--check-every N), after every hinting worker\n"
          "step and at the end.  Violations are described on stderr; exit 1 if any.\n\n"
          "options:\n%s",
          bh_cli_replay_help);
}

int cmd_check(int argc, char **argv) {
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  c.cfg.check_every = 1000;
  c.cfg.check_after_steps = true;
  c.cfg.check_report = stderr;
  const char *trace;
  int r = bh_cli_replay_args(argc, argv, &c, &trace, NULL, NULL, help);
  if (!r) {
    if (!c.backing_set)
      c.cfg.arena.backing = BH_BACKING_SIM;
    if (!c.cfg.check_every)
      c.cfg.check_every = 1000;
    if (bh_cli_one_strategy("check", &c))
      r = -1;
    bh_cli_replay_finish(&c);
    const char *name = c.cfg.hint.strategy ? c.cfg.hint.strategy : "none";
    if (r || bh_cli_replay_check("check", &c) ||
        bh_cli_check_strategy("check", &c, name, name, c.opts, c.nopts))
      r = BH_EXIT_USAGE;
    else
      r = bh_cli_run_one("check", &c, trace, true);
  } else {
    r = r > 0 ? BH_EXIT_OK : BH_EXIT_USAGE;
  }
  bh_cli_replay_free(&c);
  return r;
}
