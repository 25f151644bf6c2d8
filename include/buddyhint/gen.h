/*
 * libbuddyhint: synthetic page allocator traces.
 *
 * Generators write the event stream a Linux 6.x kernel would record through its kmem
 * tracepoints while a known workload runs: the published experiments' shapes (memhog,
 * will-it-scale page_fault1, guests launched one after another, Mel Gorman's fragmentation
 * stress).  The output is deterministic for a given set of parameters, `seed` included.
 *
 * What the events look like:
 *   - time_ns increases strictly; cpu and pid are set on every event;
 *   - user memory is allocated with GFP_HIGHUSER_MOVABLE|__GFP_ZERO (anonymous faults) or
 *     GFP_TRANSHUGE|__GFP_THISNODE (THP faults, first attempt on the local node as 6.x
 *     alloc_pages_mpol() makes it), kernel memory with GFP_KERNEL (unmovable) or
 *     GFP_KERNEL|__GFP_RECLAIMABLE; migratetype is bh_gfp_migratetype(gfp) on allocations and
 *     -1 on frees (the free tracepoints do not print one);
 *   - pfns are unique among live blocks, aligned to their order, handed out in ascending order
 *     from fresh memory and reused last-freed-first, as pcp lists do.  A replay only needs the
 *     alloc/free pairs to be consistent: it maps recorded pfns to its own blocks;
 *   - frees of process memory (munmap, exit) are batched as free_unref_folios() does in 6.x:
 *     per folio batch of up to 31, one mm_page_free (with the real order) per folio, then one
 *     mm_page_free_batched (printed with order=0) per folio.  So, as in a real 6.x trace, a
 *     batched free is an F event followed later by a B event for the same pfn; the pfn is
 *     reused only after its B.  Parameter frees=single writes one event per freed block
 *     instead (B for a batched order-0 free, F otherwise).  Kernel memory (slab shrinking,
 *     hugetlb release) is freed with a lone F, as __free_pages() does.
 */
#ifndef BUDDYHINT_GEN_H
#define BUDDYHINT_GEN_H

#include <buddyhint.h>
#include <buddyhint/strategy.h> /* bh_opt_t */
#include <buddyhint/trace.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The i-th workload name (0..), NULL past the end: "memhog", "page-fault1", "guests",
 * "frag-stress". */
BH_API const char *bh_gen_workload_at(int i);

/* One-line summary of a workload; NULL if the name is unknown. */
BH_API const char *bh_gen_summary(const char *workload);

/*
 * Help text of a workload: a paragraph describing the shape, then one line per parameter,
 * "  key=default  what it is".  NULL if the name is unknown.  Static storage.
 */
BH_API const char *bh_gen_help(const char *workload);

/* Receives one generated event; a non-zero return stops the generator and is returned. */
typedef int (*bh_gen_emit_fn)(void *ctx, const bh_event_t *ev);

/*
 * Runs a generator: calls emit for every event, in time order (seq is numbered from 0, zone
 * is set as the reader would).  params are key=value pairs (a key given twice: the last one
 * wins).  Returns 0; BH_ENOENT for an unknown workload; BH_EINVAL for an unknown parameter or
 * a bad value; BH_ENOMEM; or what emit returned.  On failure err (if not NULL) receives a
 * message such as "memhog: unknown parameter 'sise'" (errlen bytes, NUL-terminated).
 */
BH_API int bh_gen_run(const char *workload, const bh_opt_t *params, size_t nparams,
                      bh_gen_emit_fn emit, void *ctx, char *err, size_t errlen);

/*
 * bh_gen_run writing every event through w (bh_trace_write).  Returns as bh_gen_run, or the
 * writer's error (BH_EIO, BH_EINVAL) with its message copied to err.  w stays open: the
 * caller closes it.
 */
BH_API int bh_gen_write(const char *workload, const bh_opt_t *params, size_t nparams,
                        bh_trace_writer_t *w, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
