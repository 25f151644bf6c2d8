/*
 * One way to report an error's detail: a message formatted into the caller's buffer (err,
 * errlen bytes; either may be NULL/0 for no message) and the BH_E* code returned, so that a
 * function fails with `return bh__errf(err, errlen, BH_EINVAL, "...", ...)`.  Objects that
 * keep their own last error (a trace reader, a writer, a byte source) format into it the same
 * way.
 */
#ifndef BH_COMMON_ERRDETAIL_H
#define BH_COMMON_ERRDETAIL_H

#include <stddef.h>

#include "common/compiler.h"

BH__INTERNAL int bh__errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
