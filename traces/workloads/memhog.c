/* Allocates and touches N MiB (default 300) with malloc, then frees it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 300, n = mb << 20;
  long pg = sysconf(_SC_PAGESIZE);
  volatile char *p = malloc(n);
  if (!p) return 1;
  for (size_t i = 0; i < n; i += (size_t)pg) p[i] = 1;
  free((void *)p);
  return 0;
}
