/* Bubble hinting / free page reporting: being written (create refuses until it is). */
#include "buddy/internal.h"
#include "hinting/hint.h"

static int bubble_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  bh_hint_set_error(h, "bubble: not implemented yet");
  return BH_ENOTSUP;
}
static void bubble_destroy(void *state) {}
static uint64_t bubble_step(void *state, uint64_t now) { return BH_HINT_IDLE; }

const bh_strategy_ops_t bh__strategy_bubble = {
    .name = "bubble",
    .summary = "page-flag free page reporting (Linux 5.7+ page_reporting)",
    .options = "",
    .create = bubble_create,
    .destroy = bubble_destroy,
    .step = bubble_step,
};
