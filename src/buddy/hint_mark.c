/*
 * A strategy's own mark on free blocks (bh_block_set_mark): a flag beside PageReported in the
 * page descriptor, with its 32-bit value in the descriptor's spare word.  The allocator never
 * sets it and never tests it; it goes with every store that gives a block new flags, which
 * happens whenever a block leaves a free list or joins one.  Zone lock held.
 */
#include "buddy/internal.h"

#include <buddyhint/strategy.h>

/* The head of a free block on a list of zone z, or NULL. */
static bh__page_t *free_head(const bh_zone_t *z, uint64_t pfn) {
  if (!z || pfn < z->start_pfn || pfn >= z->start_pfn + z->spanned_pages)
    return NULL;
  bh__page_t *p = &z->arena->pages[pfn];
  return (bh__pg_flags(p) & BH__PG_BUDDY) ? p : NULL;
}

bool bh_block_marked(const bh_zone_t *z, uint64_t pfn, uint32_t *value) {
  const bh__page_t *p = free_head(z, pfn);
  if (!p || !(bh__pg_flags(p) & BH__PG_MARKED))
    return false;
  if (value)
    *value = p->priv;
  return true;
}

int bh_block_set_mark(bh_zone_t *z, uint64_t pfn, uint32_t value) {
  bh__page_t *p = free_head(z, pfn);
  if (!p)
    return BH_EINVAL;
  p->priv = value;
  bh__pg_set_flags(p, bh__pg_flags(p) | BH__PG_MARKED);
  return BH_OK;
}

void bh_block_clear_mark(bh_zone_t *z, uint64_t pfn) {
  bh__page_t *p = free_head(z, pfn);
  if (p)
    bh__pg_set_flags(p, bh__pg_flags(p) & (uint8_t)~BH__PG_MARKED);
}
