/* The tests' seeded random numbers: splitmix64, one 64-bit state, the same sequence on every
 * machine, so that a failing seed can be rerun. */
#ifndef BH_TESTS_TEST_RNG_H
#define BH_TESTS_TEST_RNG_H

#include <stdint.h>

static inline uint64_t test_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif
