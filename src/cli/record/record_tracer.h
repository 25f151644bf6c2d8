/* The tracefs instance, the kmem events and the traced command of record and live
 * (record_tracer.c). */
#ifndef BH_CLI_RECORD_TRACER_H
#define BH_CLI_RECORD_TRACER_H

#include "cli/record/record_bulk.h"
#include "cli/record/record_safety.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#ifndef BH_HAVE_TRACEFS
#define BH_HAVE_TRACEFS 0
#endif
#if BH_HAVE_TRACEFS
#include "trace/kmem_decode.h"

#include <kbuffer.h>
#include <tracefs.h>

#define NR_EVENTS 3     /* the page events */
#define NR_PCP_EVENTS 6 /* ... the pcp lists' exchanges with the buddy lists, fallbacks */
/* the page events, then the pcp events */
extern const char *const bh_cli_kmem_events[NR_PCP_EVENTS];

typedef struct bh_cli_tracer {
  const char *root;              /* the tracefs mount (libtracefs's string) */
  struct tracefs_instance *inst; /* our instance */
  char *dir;                     /* its directory */
  struct tep_handle *tep;        /* the kmem events' formats */
  bh__kmem_decoder_t *dec;       /* ... and their decoder */
  bool mounted;
  const char *verb; /* for messages: "buddyhint VERB: ..." */
  int nr_events; /* NR_EVENTS, or NR_PCP_EVENTS with the pcp events */ /* we mounted tracefs (and
                                                                          unmount it at the end) */
  /* the kprobe events of alloc_pages_bulk's pages (record_bulk.h), if made: their system */
  char bulk_system[48];
  /* with the pcp events, vmstat_update's address (/proc/kallsyms), whose runs
   * workqueue:workqueue_execute_start records (filtered on it); 0: not recorded */
  unsigned long long vmstat_update;
} bh_cli_tracer_t;

/* Finds or mounts tracefs, removes stale instances and makes ours; with bulk, the probes of
 * alloc_pages_bulk's pages too (a warning if they cannot be made); 0, or -1 after a message. */
int bh_cli_tracer_open(bh_cli_tracer_t *tr, const char *verb, bool pcp_events, bool bulk);
/* Undoes bh_cli_tracer_open and whatever was changed since. */
void bh_cli_tracer_close(bh_cli_tracer_t *tr);
/* The kmem events' formats, as the kernel describes them, and their decoder; 0 or -1. */
int bh_cli_tracer_formats(bh_cli_tracer_t *tr);
/* trace_clock (NULL: the kernel's), the buffer per cpu, overwrite off, cleared, the events
 * enabled (tracing still off); 0 or -1 after a message. */
int bh_cli_tracer_setup(bh_cli_tracer_t *tr, unsigned buffer_kb, const char *clock);
/* Adds per_cpu/cpuN/stats's "overrun" and "dropped events"; false if it cannot be read. */
bool bh_cli_tracer_cpu_lost(const bh_cli_tracer_t *tr, int cpu, unsigned long long *overrun,
                            unsigned long long *dropped);

/* ---- the command, and the signals that stop a run ---- */

/* the last stop signal caught (0: none) */
extern volatile sig_atomic_t bh_cli_got_signal;
/* SIGINT, SIGQUIT, SIGTERM, SIGHUP: caught from before anything is made that a signal's default
 * action would leave behind (the output's temporary file, the tracefs instance) */
extern const int bh_cli_stop_signals[4];
void bh_cli_catch_stop_signals(struct sigaction old[4]);
void bh_cli_restore_stop_signals(const struct sigaction old[4]);
/* Starts cmd as user u (its stdout to stderr with stdout_to_stderr); the child's pid, or -1
 * with errno of the failed fork, change of user or exec. */
pid_t bh_cli_start_command(char **cmd, bool stdout_to_stderr, const bh_cli_record_user_t *u);
/* Waits for the child, passing SIGTERM/SIGHUP to us on to it; the wait status, -1 if it
 * cannot be waited for. */
int bh_cli_wait_command(pid_t pid);

#endif
#endif
