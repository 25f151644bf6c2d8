/*
 * How many pages the replay of a guest trace leaves on its pcp lists at the end, under the
 * model's own pcp rules (Linux 6.12: pcp->high tuned between high_min, the low watermark's
 * share, and high_max, managed/8 per CPU, mm/page_alloc.c nr_pcp_high) and under a fixed
 * high (the rule of the guest's Linux 6.1: pcp->high = zone_highsize(), fixed, nr_pcp_high
 * returns it unless reclaim is active).  A measurement of the difference, not a setting of
 * the experiment: exp_guest replays with the model's rules.
 *
 *   cc -O2 -Iinclude -o pcp_rules bench/guest/pcp_rules.c build/libbuddyhint.a -lzstd -lz \
 *      -lpthread -lm
 *   pcp_rules TRACE ORDER CPUS HIGH trace|allocator DUMPDIR...
 *
 * Replays TRACE as exp_guest does (machine shape, the placement given, bubble order=ORDER,
 * CPUS CPUs, --idle 0) once per DUMPDIR, with the model's rules for the first and pcp_high =
 * HIGH pages for the others (HIGH: the guest's zoneinfo "high:" of its largest zone), dumps
 * the end state into DUMPDIR (which must not exist) and prints the pcp pages of each zone,
 * summed over CPUs from the dumped zoneinfo's "count:" lines.
 */
#include <buddyhint.h>
#include <buddyhint/replay.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The "count:" lines of DIR/zoneinfo, summed per zone; prints them and returns the total. */
static long pcp_pages(const char *dir) {
  char path[4096], line[512], zone[64] = "?";
  snprintf(path, sizeof(path), "%s/zoneinfo", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  long total = 0, zsum = 0;
  while (fgets(line, sizeof(line), f)) {
    char z[64];
    long c;
    if (sscanf(line, "Node %*d, zone %63s", z) == 1) {
      if (strcmp(zone, "?"))
        printf("  %s %ld", zone, zsum);
      snprintf(zone, sizeof(zone), "%s", z);
      zsum = 0;
    } else if (sscanf(line, " count: %ld", &c) == 1) {
      zsum += c;
      total += c;
    }
  }
  printf("  %s %ld  total %ld\n", zone, zsum, total);
  fclose(f);
  return total;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: pcp_rules TRACE ORDER CPUS HIGH trace|allocator DUMPDIR...\n");
    return 2;
  }
  for (int i = 6; i < argc; i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = argv[1];
    cfg.hint.strategy = "bubble";
    bh_opt_t o = {"order", argv[2]};
    cfg.hint.opts = &o;
    cfg.hint.nopts = 1;
    cfg.arena.backing = BH_BACKING_SIM;
    cfg.arena.nr_cpus = (unsigned)atoi(argv[3]);
    if (i > 6)
      cfg.arena.pcp_high = (unsigned)atoi(argv[4]);
    cfg.placement = strcmp(argv[5], "trace") ? BH_PLACEMENT_ALLOCATOR : BH_PLACEMENT_TRACE;
    cfg.idle_ns = 0;
    cfg.dump_dir = argv[i];
    if (mkdir(argv[i], 0755)) {
      perror(argv[i]);
      return 1;
    }
    bh_replay_summary_t s;
    char err[512] = "";
    int rc = bh_replay_run(&cfg, &s, err, sizeof(err));
    if (rc) {
      fprintf(stderr, "pcp_rules: %s: %s\n", argv[1], err);
      return 1;
    }
    printf("%s (%s): pcp pages at the end:", i > 6 ? "fixed high" : "model's rules",
           i > 6 ? argv[4] : "6.12");
    if (pcp_pages(argv[i]) < 0)
      return 1;
  }
  return 0;
}
