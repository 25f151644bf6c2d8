/* Internal header of the hinting core: the built-in strategies' ops tables. */
#ifndef BH_HINTING_HINT_H
#define BH_HINTING_HINT_H

#include <buddyhint/strategy.h>

BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_none;
BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_bitmap;
BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_bubble;

#endif
