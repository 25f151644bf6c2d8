/* The machine description buddyhint record stores with a trace (record_machine.c). */
#ifndef BH_CLI_RECORD_MACHINE_H
#define BH_CLI_RECORD_MACHINE_H

#include <buddyhint/machine.h>
#include <buddyhint/trace.h>

#include <stdio.h>

/*
 * Takes snapshot which of /proc into *m (made, with the machine's settings, at the first call),
 * with the trace clock of the tracefs instance at tracing_dir around it.  Returns 0, or -1
 * after a warning on stderr (the trace is still written, without it).
 */
int bh_cli_rec_snapshot(bh_machine_t **m, int which, const char *tracing_dir);
/*
 * The events to keep: after the start snapshot was read (*lo, the trace clock when it was
 * done) and before the end snapshot was begun (*hi); 0 where unknown.  Events while a
 * snapshot was read may or may not be in it, and the replay starts from the snapshot.
 */
void bh_cli_rec_window(const bh_machine_t *m, uint64_t *lo, uint64_t *hi);
/* Stores m in the writer's header (before its first event).  0, or -1 after a message. */
int bh_cli_rec_describe(const bh_machine_t *m, bh_trace_writer_t *w);

#endif
