/* record_safety.c: the recorder's tracefs instance names, stale instances, the command's user. */
#ifndef BH_CLI_RECORD_SAFETY_H
#define BH_CLI_RECORD_SAFETY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* "buddyhint-PID-START" for this process into buf; 0, or -1 if it does not fit. */
int bh_cli_record_instance_name(char *buf, size_t len);

/*
 * Removes the instances under TRACEFS/instances named buddyhint-PID[-START] whose recorder is
 * gone (turning their kmem events and tracing off first).  Says so on stderr for each one, as
 * "buddyhint VERB: ...".
 * Returns how many were removed.
 */
int bh_cli_record_reap_stale(const char *verb, const char *tracefs, const char *const *events,
                             int nevents);

/* Who the recorded command runs as. */
typedef struct bh_cli_record_user {
  bool drop; /* run it as uid/gid instead of root */
  uid_t uid;
  gid_t gid;
  char name[256]; /* for the supplementary groups ("" if the uid has no passwd entry) */
} bh_cli_record_user_t;

/* As root under sudo: the invoking user (SUDO_UID, SUDO_GID); otherwise nobody to become.
 * 0, or -1 if SUDO_UID names a user whose group cannot be found. */
int bh_cli_record_user(bh_cli_record_user_t *u);
/* In the child, before exec: takes on u's groups and ids for good.  0, or -1 with errno. */
int bh_cli_record_become(const bh_cli_record_user_t *u);

#endif
