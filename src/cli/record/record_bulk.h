/*
 * The pages alloc_pages_bulk takes off the pcp lists, which no tracepoint shows (record_bulk.c):
 * two kprobe events of our own, one at its entry (the gfp mask) and one where each of its
 * calls to __rmqueue_pcplist returns (the page).
 */
#ifndef BH_CLI_RECORD_BULK_H
#define BH_CLI_RECORD_BULK_H

#include <stddef.h>
#include <stdint.h>

/* The kprobe events' system: "buddyhint_PID", unique to the recorder that made them. */
#define BH_CLI_BULK_SYSTEM_PREFIX "buddyhint_"

/*
 * In the n bytes of x86-64 code of the function at address func, the offset just after its one
 * direct call (opcode e8, rel32) to callee: where that call returns.  -1 if it has none, -2 if
 * more than one.  Bytes are not decoded as instructions: an e8 inside another instruction that
 * happens to point at callee would count as well, which is why callee must be called once.
 */
long bh_cli_bulk_return_offset(const uint8_t *code, size_t n, uint64_t func, uint64_t callee);

/*
 * The addresses /proc/kallsyms gives the n symbols names, into addr (0 for one it does not
 * have, or for all where kernel.kptr_restrict hides them); the first of a name counts.  0, or
 * -1 with errno if the file cannot be read.
 */
int bh_cli_kallsyms(const char *const *names, uint64_t *addr, size_t n);

#ifndef BH_HAVE_TRACEFS
#define BH_HAVE_TRACEFS 0
#endif
#if BH_HAVE_TRACEFS
/*
 * Makes the two kprobe events under system (BH_CLI_BULK_SYSTEM_PREFIX and our pid, at most
 * len - 1 characters): the entry of alloc_pages_bulk_noprof with its gfp mask, and the return
 * of its call to __rmqueue_pcplist with the page and vmemmap_base.  Removes first the events
 * of recorders that are gone.  Returns 0, or -1 with why set (x86-64 only; needs root,
 * /proc/kallsyms with addresses, /proc/kcore and kprobe events).
 */
int bh_cli_bulk_probe_add(const char *tracefs, char *system, size_t len, char *why, size_t why_len);
/* Removes the events bh_cli_bulk_probe_add made under system; 0, or -1 with errno. */
int bh_cli_bulk_probe_remove(const char *tracefs, const char *system);
#endif

#endif
