/* The machine description buddyhint record stores with a trace (record_machine.c). */
#ifndef BH_CLI_RECORD_MACHINE_H
#define BH_CLI_RECORD_MACHINE_H

#include <buddyhint/machine.h>
#include <buddyhint/trace.h>

#include <stdio.h>

/*
 * For verb (record, live; its messages say which): takes snapshot which of /proc into *m (made,
 * with the machine's settings, at the first call), with the trace clock of the tracefs instance at
 * tracing_dir around it.  Returns 0, or -1 after a warning on stderr (the trace is still written,
 * without it).
 */
int bh_cli_rec_snapshot(const char *verb, bh_machine_t **m, int which, const char *tracing_dir);
/*
 * The text the start snapshot writes to the instance's trace_marker (an ftrace print event)
 * right after reading zoneinfo: the events after it changed the pcp lists zoneinfo counted
 * before the trace begins (cmd_record.c keeps them as start/count_events).
 */
#define BH_CLI_COUNTS_MARK "buddyhint: zoneinfo read\n"
/*
 * The events to keep: from the beginning of the start snapshot's free map reading (after
 * *lo) to the beginning of the end snapshot's (before *hi); 0 where unknown.
 */
void bh_cli_rec_window(const bh_machine_t *m, uint64_t *lo, uint64_t *hi);
/* Stores m in the writer's header (before its first event).  0, or -1 after a message. */
int bh_cli_rec_describe(const char *verb, const bh_machine_t *m, bh_trace_writer_t *w);

#endif
