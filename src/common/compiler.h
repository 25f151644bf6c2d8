/*
 * Compiler helpers every module may use: branch hints and the visibility of the library's
 * internal (bh__) functions.
 */
#ifndef BH_COMMON_COMPILER_H
#define BH_COMMON_COMPILER_H

#define bh__likely(x) __builtin_expect(!!(x), 1)
#define bh__unlikely(x) __builtin_expect(!!(x), 0)
#define BH__INTERNAL __attribute__((visibility("hidden")))

#endif
