/* A JSON string writer shared by the replay summary and the command's JSON output. */
#ifndef BH_TRACE_JSON_H
#define BH_TRACE_JSON_H

#include <stdio.h>

/* Writes s (NULL as "") as a JSON string literal, escaping quotes, backslashes and controls. */
static inline void bh__json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

#endif
