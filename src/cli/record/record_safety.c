/*
 * What `buddyhint record` does so that running it as root harms nothing it does not own:
 *
 *   - its tracefs instance is named buddyhint-PID-START (START: the process's start time in
 *     clock ticks since boot, field 22 of /proc/PID/stat), so that it cannot collide with an
 *     instance left by an earlier process of the same pid;
 *   - instances left by recorders that are gone (killed before they could remove theirs, with
 *     the kmem events on and megabytes of ring buffer per cpu) are removed first;
 *   - the command runs as the user who invoked sudo (SUDO_UID, SUDO_GID and that user's
 *     supplementary groups) unless --as-root is given.
 */
#include "cli/record/record_safety.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "buddyhint-"

/* Field 22 of /proc/PID/stat (starttime); 0 if the process does not exist. */
static unsigned long long start_time(pid_t pid) {
  char p[64], buf[1024];
  snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  const char *s = strrchr(buf, ')'); /* the command name may hold blanks and parentheses */
  if (!s)
    return 0;
  unsigned long long v = 0;
  /* after ") ": state is field 3, starttime field 22 */
  if (sscanf(s + 2,
             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
             "%*d %llu",
             &v) != 1)
    return 0;
  return v;
}

/* Whether pid runs a program called comm (legacy instance names have no start time). */
static bool runs(pid_t pid, const char *comm) {
  char p[64], buf[64] = "";
  snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
  FILE *f = fopen(p, "re");
  if (!f)
    return false;
  bool ok = fgets(buf, sizeof(buf), f) && !strncmp(buf, comm, strlen(comm)) &&
            (buf[strlen(comm)] == '\n' || !buf[strlen(comm)]);
  fclose(f);
  return ok;
}

int bh_cli_record_instance_name(char *buf, size_t len) {
  pid_t pid = getpid();
  unsigned long long st = start_time(pid);
  return snprintf(buf, len, PREFIX "%d-%llu", (int)pid, st) < (int)len ? 0 : -1;
}

/*
 * Whether the instance called name is left over: its recorder (PID, and START when the name
 * has one) is no longer running.  Names that are not ours are never stale.
 */
static bool stale(const char *name) {
  if (strncmp(name, PREFIX, strlen(PREFIX)))
    return false;
  const char *s = name + strlen(PREFIX);
  char *end;
  errno = 0;
  long pid = strtol(s, &end, 10);
  if (errno || end == s || pid <= 0 || pid > 0x7fffffff || (*end && *end != '-'))
    return false;
  unsigned long long want = 0;
  bool has_start = *end == '-';
  if (has_start) {
    const char *t = end + 1;
    if (*t < '0' || *t > '9')
      return false;
    want = strtoull(t, &end, 10);
    if (*end)
      return false;
  }
  if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
    return true;
  if (has_start) /* the pid runs: the same recorder only if it started at the same time */
    return start_time((pid_t)pid) != want;
  return !runs((pid_t)pid, "buddyhint"); /* a legacy name: a recorder is called buddyhint */
}

/* Turns the instance's kmem events and tracing off, then removes it. */
static int remove_instance(const char *dir, const char *const *events, int nevents) {
  char p[1024];
  for (int i = -1; i < nevents; i++) {
    if (i < 0)
      snprintf(p, sizeof(p), "%s/tracing_on", dir);
    else
      snprintf(p, sizeof(p), "%s/events/kmem/%s/enable", dir, events[i]);
    int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t w = write(fd, "0", 1);
      (void)w;
      close(fd);
    }
  }
  return rmdir(dir) ? -errno : 0;
}

int bh_cli_record_reap_stale(const char *verb, const char *tracefs, const char *const *events,
                             int nevents) {
  char p[256];
  snprintf(p, sizeof(p), "%s/instances", tracefs);
  DIR *d = opendir(p);
  if (!d)
    return 0;
  int removed = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!stale(e->d_name))
      continue;
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/%s", p, e->d_name);
    int err = remove_instance(dir, events, nevents);
    if (err)
      fprintf(stderr, "buddyhint %s: warning: cannot remove the stale tracefs instance %s: %s\n",
              verb, dir, strerror(-err));
    else
      fprintf(stderr, "buddyhint %s: removed the tracefs instance %s, left by a run that is gone\n",
              verb, dir);
    removed += !err;
  }
  closedir(d);
  return removed;
}

/* A decimal id from the environment; false if absent or not a number. */
static bool env_id(const char *name, unsigned long *out) {
  const char *v = getenv(name);
  if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 10)
    return false;
  *out = strtoul(v, NULL, 10);
  return *out <= 0xfffffffful;
}

int bh_cli_record_user(bh_cli_record_user_t *u) {
  memset(u, 0, sizeof(*u));
  unsigned long uid, gid;
  if (geteuid() != 0 || !env_id("SUDO_UID", &uid))
    return 0; /* not run by sudo: the command runs as we do */
  if (!env_id("SUDO_GID", &gid)) {
    const struct passwd *pw = getpwuid((uid_t)uid);
    if (!pw)
      return -1;
    gid = pw->pw_gid;
  }
  if (uid == 0)
    return 0;
  u->drop = true;
  u->uid = (uid_t)uid;
  u->gid = (gid_t)gid;
  const struct passwd *pw = getpwuid(u->uid);
  snprintf(u->name, sizeof(u->name), "%s", pw ? pw->pw_name : "");
  return 0;
}

int bh_cli_record_become(const bh_cli_record_user_t *u) {
  if (!u->drop)
    return 0;
  /* supplementary groups first (they need root), then the group, then the user */
  if (u->name[0] ? initgroups(u->name, u->gid) : setgroups(1, &u->gid))
    return -1;
  if (setgid(u->gid) || setuid(u->uid))
    return -1;
  if (setuid(0) == 0 || getuid() != u->uid || geteuid() != u->uid) { /* no way back */
    errno = EPERM;
    return -1;
  }
  return 0;
}
