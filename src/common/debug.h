/*
 * Runtime assertions at the allocator's invariants, where the kernel has VM_BUG_ON and
 * lockdep_assert_held.  They are on in Debug builds (no NDEBUG) and in the sanitizer builds
 * (CMake defines BH_ASSERTS with BH_ASAN, BH_UBSAN or BH_TSAN), and compile away in Release and
 * RelWithDebInfo: the condition is then not evaluated at all.
 *
 *   BH_ASSERT(cond)       cond must hold
 *   BH_ASSERT_LOCKED(m)   the calling thread holds the pthread mutex m
 *
 * A failed assertion prints "FILE:LINE: FUNCTION: assertion `COND' failed" and aborts.
 */
#ifndef BH_COMMON_DEBUG_H
#define BH_COMMON_DEBUG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if !defined(NDEBUG) || defined(BH_ASSERTS)
#define BH_ASSERTS_ON 1
#else
#define BH_ASSERTS_ON 0
#endif

__attribute__((noreturn, cold, unused)) static void
bh__assert_fail(const char *cond, const char *file, int line, const char *func) {
  fprintf(stderr, "%s:%d: %s: assertion `%s' failed\n", file, line, func, cond);
  abort();
}

/*
 * Whether the calling thread holds m.  glibc records the owner's thread id in every mutex it
 * locks; elsewhere only "held by some thread" can be told, with a trylock.
 */
__attribute__((unused)) static inline bool bh__mutex_held(pthread_mutex_t *m) {
#ifdef __GLIBC__
  return m->__data.__owner == gettid();
#else
  if (pthread_mutex_trylock(m) != 0)
    return true;
  pthread_mutex_unlock(m);
  return false;
#endif
}

#if BH_ASSERTS_ON
#define BH_ASSERT(cond)                                                                            \
  (__builtin_expect(!!(cond), 1) ? (void)0 : bh__assert_fail(#cond, __FILE__, __LINE__, __func__))
#define BH_ASSERT_LOCKED(m) BH_ASSERT(bh__mutex_held(m))
#else
#define BH_ASSERT(cond) ((void)sizeof(!(cond)))
#define BH_ASSERT_LOCKED(m) ((void)sizeof(m))
#endif

#endif
