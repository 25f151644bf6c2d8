/* Error codes, names and messages, generated from BH_ERRNO_MAP. */
#include "buddy/internal.h"

const char *bh_strerror(int err) {
  switch (err) {
  case BH_OK:
    return "success";
#define X(name, value, msg)                                                                        \
  case BH_##name:                                                                                  \
    return msg;
    BH_ERRNO_MAP(X)
#undef X
  default:
    return "unknown error";
  }
}

const char *bh_err_name(int err) {
  switch (err) {
  case BH_OK:
    return "OK";
#define X(name, value, msg)                                                                        \
  case BH_##name:                                                                                  \
    return #name;
    BH_ERRNO_MAP(X)
#undef X
  default:
    return "?";
  }
}

const char *bh_version(void) { return BH_VERSION_STRING; }

static const char *const zone_names[BH_NR_ZONE_TYPES] = {"DMA", "DMA32", "Normal", "Movable"};
static const char *const mt_names[BH_MT_TYPES] = {"Unmovable", "Movable", "Reclaimable",
                                                  "HighAtomic", "Isolate"};

const char *bh_zone_name(int t) { return t >= 0 && t < BH_NR_ZONE_TYPES ? zone_names[t] : "?"; }

const char *bh_migratetype_name(int mt) { return mt >= 0 && mt < BH_MT_TYPES ? mt_names[mt] : "?"; }
