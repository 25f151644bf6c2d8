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

/*
 * The KiB the kernel's log says it freed after its "Memory:" line (mem_init's): its
 * "Freeing ... memory: NK" lines (SMP alternatives, the initrd, the init sections), freed
 * after the pcp lists were set up, when zone_highsize() fixed each zone's high_max from the
 * managed pages of then.  -1 where the log cannot be read (no CAP_SYSLOG) or no longer holds
 * the boot's lines.
 */
long long bh_cli_rec_boot_freed_kb(void);

/* The same from a log's text (len bytes, lines as klogctl gives them), for the tests. */
long long bh_cli_rec_boot_freed_kb_of(const char *log, size_t len);

#endif
