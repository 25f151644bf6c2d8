/*
 * Output files that never destroy what was there: the trace writer's and every output of the
 * command (src/cli/cli_util.c) go through here.
 *
 *   - A regular file (new, or existing) is written to a temporary file in the same directory,
 *     ".NAME.XXXXXX", and renamed over NAME only when everything was written: until then an
 *     existing NAME is untouched, and a run that fails, or is killed, leaves no NAME (at most
 *     the temporary file, which never passes for a trace of its own name).  A file that is
 *     replaced keeps its permissions and, where the caller may set it, its owner.  A symbolic
 *     link is followed: its target is replaced and the link stays.
 *   - Anything else (a character or block device, a FIFO, a socket, "-" for standard output)
 *     is written directly, without truncating it, and is never removed.
 *   - An output that is the same file (device and inode) as one of the given inputs is
 *     refused before anything is opened for writing.
 */
#ifndef BH_TRACE_OUTFILE_H
#define BH_TRACE_OUTFILE_H

#include <buddyhint.h>

#include <stdbool.h>
#include <stddef.h>

#define BH__INTERNAL __attribute__((visibility("hidden")))

typedef struct bh__outfile {
  int fd;      /* where to write; -1 once closed */
  bool direct; /* written in place (not a regular file): never renamed or removed */
  bool stdout_fd;
  char *path; /* what the output is called (a link's target for a symbolic link) */
  char *name; /* the name given, for messages ("<stdout>" for "-") */
  char *tmp;  /* the temporary file (regular files only) */
} bh__outfile_t;

/*
 * Opens path for writing ("-" = standard output) as described above.  inputs (NULL-terminated,
 * or NULL) are the paths the caller reads; "-" among them stands for standard input.  Returns
 * 0, BH_EINVAL (the same file as an input, a directory, a dangling link) or BH_ESYS (errno
 * kept) with "PATH: what is wrong" in msg.
 */
BH__INTERNAL int bh__outfile_open(bh__outfile_t *of, const char *path, const char *const *inputs,
                                  char *msg, size_t msglen);
/*
 * Finishes the output: closes it (not standard output) and renames the temporary file into
 * place.  Returns 0, or BH_EIO with "PATH: write failed: <strerror>" in msg; the temporary
 * file is then removed and an existing file keeps its old contents.
 */
BH__INTERNAL int bh__outfile_commit(bh__outfile_t *of, char *msg, size_t msglen);
/* Gives the output up: closes it and removes the temporary file (nothing else).  Idempotent. */
BH__INTERNAL void bh__outfile_abort(bh__outfile_t *of);

#endif
