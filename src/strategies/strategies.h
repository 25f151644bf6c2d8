/*
 * The built-in strategies' ops tables, which the hinting framework registers at start
 * (src/hinting/hint.c).  The strategies themselves are written on the public strategy API
 * (buddyhint/strategy.h) only, as a user's strategy would be: none of them reads the core's
 * internal.h or the framework's headers.
 */
#ifndef BH_STRATEGIES_STRATEGIES_H
#define BH_STRATEGIES_STRATEGIES_H

#include <buddyhint/strategy.h>

#define BH__INTERNAL __attribute__((visibility("hidden"))) /* as buddy/internal.h */

BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_bitmap;
BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_bubble;
BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_adaptive;

#endif
