/*
 * The kernel's kmem page events (mm_page_alloc, mm_page_free, mm_page_free_batched and their
 * pre-3.3 names) decoded from binary ring buffer records with libtraceevent: shared by the
 * trace.dat reader (tracedat.c) and `buddyhint record`'s raw per-cpu reader.
 *
 * The fields are read through the format the recording kernel describes (offsets, sizes,
 * signedness), so another kernel version, a 32-bit or a big-endian machine decodes as that
 * kernel wrote it.  gfp_flags is turned into the kernel's flag names by the event's own print
 * format (its __print_flags table), once per distinct value, and those names into BH_GFP bits
 * by bh_gfp_parse.  A failed allocation has pfn -1 (the kernel's "page=(null)").
 *
 * Available when libtraceevent is (BH_HAVE_TRACEEVENT).  Nothing here is exported.
 */
#ifndef BH_TRACE_KMEM_DECODE_H
#define BH_TRACE_KMEM_DECODE_H

#ifndef BH_HAVE_TRACEEVENT
#define BH_HAVE_TRACEEVENT 0
#endif

/* The names of record's two kprobe events of alloc_pages_bulk (bh__kmem_decoder_add_bulk) under
 * their system. */
#define BH__KMEM_BULK_CALL "bulk_call"
#define BH__KMEM_BULK_PAGE "bulk_page"

#if BH_HAVE_TRACEEVENT

#include <buddyhint/trace.h>

#include <event-parse.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bh__kmem_decoder bh__kmem_decoder_t;

/*
 * A decoder of the kmem events tep describes (tep stays the caller's and must outlive it).
 * Returns 0 with *out set, BH_ENOMEM, or BH_EFORMAT for an event without the fields we need
 * (a kernel that recorded struct page pointers), with the reason in msg (len bytes).  Events
 * tep does not have are no error: their records are simply not ours.
 */
int bh__kmem_decoder_new(struct tep_handle *tep, bh__kmem_decoder_t **out, char *msg, size_t len);
void bh__kmem_decoder_free(bh__kmem_decoder_t *d);
/*
 * Makes d decode the pcp events too (mm_page_pcpu_drain as BH_EV_PCPU_DRAIN,
 * mm_page_alloc_zone_locked as BH_EV_ALLOC_ZONE_LOCKED with its percpu_refill) and the
 * fallbacks (mm_page_alloc_extfrag as BH_EV_EXTFRAG), where tep has them.  Returns 0, or BH_EFORMAT
 * (an event without a pfn or order field) with msg set.
 */
int bh__kmem_decoder_add_pcp(bh__kmem_decoder_t *d, char *msg, size_t len);

/*
 * Makes d decode the two kprobe events `buddyhint record` makes under system for the pages
 * alloc_pages_bulk takes with no kmem event (cli/record/record_bulk.c): system:bulk_call (its
 * gfp mask, kept per CPU) and system:bulk_page (each page, an order-0 BH_EV_ALLOC of that
 * mask), where tep has them.  Returns 0, or BH_EFORMAT with msg set.
 */
int bh__kmem_decoder_add_bulk(bh__kmem_decoder_t *d, const char *system, char *msg, size_t len);

/*
 * Makes d decode workqueue:workqueue_execute_start of vmstat_update as BH_EV_VMSTAT (the vmstat
 * worker ran on the record's CPU: its pcp decay), where tep has the event: the work function at
 * addr (as /proc/kallsyms has it; 0: the function tep's symbols name vmstat_update).  Other
 * work functions are not ours.  Returns 0, or BH_EFORMAT with msg set.
 */
int bh__kmem_decoder_add_vmstat(bh__kmem_decoder_t *d, uint64_t addr, char *msg, size_t len);

/*
 * Decodes rec (its data, size, ts and cpu) into ev.  Returns 1 for one of our events, 0 for a
 * record of another event (ev untouched), -1 for one of ours that cannot be read, with *why
 * saying what is wrong.  *gfp_unknown grows by the gfp flag names bh_gfp_parse did not know.
 * ev->origin and ev->seq are left 0.
 */
int bh__kmem_decode(bh__kmem_decoder_t *d, struct tep_record *rec, bh_event_t *ev,
                    uint64_t *gfp_unknown, const char **why);

#endif
#endif
