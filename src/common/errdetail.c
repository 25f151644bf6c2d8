/* bh__errf (errdetail.h). */
#include "common/errdetail.h"

#include <stdarg.h>
#include <stdio.h>

int bh__errf(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}
