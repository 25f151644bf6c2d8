/*
 * Output files: a temporary file renamed into place for regular files, direct writes for
 * anything else, and never an unlink of a path we did not create (see outfile.h).
 */
#include "common/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int of_fail(char *msg, size_t len, int err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int of_fail(char *msg, size_t len, int err, const char *path, const char *fmt, ...) {
  if (msg && len) {
    int n = snprintf(msg, len, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < len)
      vsnprintf(msg + n, len - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return err;
}

/* The process's umask, without changing it (umask(2) would, for every thread). */
static mode_t current_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  unsigned m = 022;
  char line[128];
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "Umask: %o", &m) == 1)
      break;
  if (f)
    fclose(f);
  return (mode_t)m;
}

/* The input among inputs that is the same file as st, or NULL. */
static const char *same_as_input(const struct stat *st, const char *const *inputs) {
  for (size_t i = 0; inputs && inputs[i]; i++) {
    struct stat in;
    int r = strcmp(inputs[i], "-") ? stat(inputs[i], &in) : fstat(STDIN_FILENO, &in);
    if (!r && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
      return inputs[i];
  }
  return NULL;
}

/* Writes in place: standard output, a device, a FIFO, a socket. */
static int open_direct(bh__outfile_t *of, const char *path, char *msg, size_t len) {
  of->direct = true;
  if (of->stdout_fd) {
    of->fd = STDOUT_FILENO;
    return 0;
  }
  of->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (of->fd < 0) {
    int e = errno;
    of_fail(msg, len, BH_ESYS, path, "cannot open for writing: %s", strerror(e));
    errno = e;
    return BH_ESYS;
  }
  return 0;
}

/* A regular file: a temporary file beside it.  old is the file it replaces (or NULL). */
static int open_temporary(bh__outfile_t *of, const char *path, const struct stat *old, char *msg,
                          size_t len) {
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = slash ? slash + 1 : path;
  of->tmp = malloc(dirlen + strlen(base) + 16);
  if (!of->tmp)
    return of_fail(msg, len, BH_ENOMEM, path, "out of memory");
  sprintf(of->tmp, "%.*s.%s.XXXXXX", (int)dirlen, path, base);
  of->fd = mkostemp(of->tmp, O_CLOEXEC);
  if (of->fd < 0) {
    int e = errno;
    free(of->tmp);
    of->tmp = NULL;
    of_fail(msg, len, BH_ESYS, path, "cannot create: %s", strerror(e));
    errno = e;
    return BH_ESYS;
  }
  /* as a plain open(O_CREAT, 0666) would make it, or as the file it replaces */
  int r;
  if (old) { /* the owner can only be kept by root: otherwise the new file is ours */
    r = fchown(of->fd, old->st_uid, old->st_gid);
    r = fchmod(of->fd, old->st_mode & 07777);
  } else {
    r = fchmod(of->fd, 0666 & ~current_umask());
  }
  (void)r; /* the contents do not depend on it */
  return 0;
}

static void of_free(bh__outfile_t *of) {
  free(of->path);
  free(of->tmp);
  free(of->name);
  of->path = of->tmp = of->name = NULL;
}

int bh__outfile_open(bh__outfile_t *of, const char *path, const char *const *inputs, char *msg,
                     size_t len) {
  memset(of, 0, sizeof(*of));
  of->fd = -1;
  if (!path || !*path)
    return of_fail(msg, len, BH_EINVAL, "(output)", "no file name");
  of->stdout_fd = !strcmp(path, "-");
  const char *name = of->stdout_fd ? "<stdout>" : path;
  struct stat st;
  int r = of->stdout_fd ? fstat(STDOUT_FILENO, &st) : stat(path, &st);
  if (r != 0 && (of->stdout_fd || errno != ENOENT))
    return of_fail(msg, len, BH_ESYS, name, "%s", strerror(errno));
  bool exists = r == 0;
  struct stat lst;
  if (!exists && !lstat(path, &lst) && S_ISLNK(lst.st_mode))
    return of_fail(msg, len, BH_EINVAL, name,
                   "a symbolic link to a file that does not exist: not followed");
  if (exists && S_ISDIR(st.st_mode))
    return of_fail(msg, len, BH_EINVAL, name, "is a directory");
  /* a regular file read and written at once loses what was not read yet; a terminal or
   * /dev/null on both sides is fine */
  const char *in = exists && S_ISREG(st.st_mode) ? same_as_input(&st, inputs) : NULL;
  if (in)
    return of_fail(msg, len, BH_EINVAL, name, "is the same file as the input %s",
                   strcmp(in, "-") ? in : "<stdin>");
  if (exists && !of->stdout_fd && access(path, W_OK) != 0) /* as open(O_WRONLY) would say */
    return of_fail(msg, len, BH_ESYS, name, "cannot open for writing: %s", strerror(errno));
  of->name = strdup(name);
  if (!of->name)
    return of_fail(msg, len, BH_ENOMEM, name, "out of memory");
  int err;
  if (of->stdout_fd || (exists && !S_ISREG(st.st_mode))) {
    of->path = strdup(name);
    err = of->path ? open_direct(of, path, msg, len)
                   : of_fail(msg, len, BH_ENOMEM, name, "out of memory");
  } else { /* a regular file, or none yet: through a temporary file; a link's target */
    char *target = exists ? realpath(path, NULL) : NULL;
    of->path = strdup(target ? target : path);
    free(target);
    err = of->path ? open_temporary(of, of->path, exists ? &st : NULL, msg, len)
                   : of_fail(msg, len, BH_ENOMEM, name, "out of memory");
  }
  if (err)
    of_free(of);
  return err;
}

void bh__outfile_abort(bh__outfile_t *of) {
  if (of->fd >= 0 && !of->stdout_fd)
    close(of->fd);
  of->fd = -1;
  if (of->tmp)
    unlink(of->tmp); /* ours: nothing else is ever removed */
  of_free(of);
}

int bh__outfile_commit(bh__outfile_t *of, char *msg, size_t len) {
  int e = 0;
  if (of->fd >= 0 && !of->stdout_fd && close(of->fd) != 0)
    e = errno;
  of->fd = -1;
  if (!e && of->tmp && rename(of->tmp, of->path) != 0)
    e = errno;
  if (e) {
    of_fail(msg, len, BH_EIO, of->name ? of->name : "(output)", "write failed: %s", strerror(e));
    bh__outfile_abort(of);
    return BH_EIO;
  }
  of_free(of);
  return 0;
}
