/*
 * What a snapshot's free map holds beyond bh_snapshot_t that a start state reads (the
 * replay's, src/replay/replay_machine.c): the free blocks the kernel had reported.  Not
 * private, so that the replay may use it without the machine module's internals
 * (machine/machine_internal.h, which includes this header; freemap.c defines it).
 */
#ifndef BH_MACHINE_FREEMAP_H
#define BH_MACHINE_FREEMAP_H

#include <buddyhint/machine.h>

#include <stdbool.h>
#include <stddef.h>

/* The free blocks snapshot which's free map records as reported (PG_reported), in pfn order;
 * their number in *n (0 and NULL without any).  *known (may be NULL): whether the map says
 * which blocks were reported at all (maps written before it did hold no R lines). */
const bh_block_run_t *bh__machine_reported_runs(const bh_machine_t *m, int which, size_t *n,
                                                bool *known);

#endif
