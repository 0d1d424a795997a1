/* claim.h - the run directory a run may write into: one tprof made, used by no other run now.
 *
 * <output_dir>/<run_id> is taken when tprof creates it (atomically, with its marker file
 * ".tprof" already inside), or when it already holds a marker of this user and no running
 * process of the same rank holds the marker's lock. Anything else there — a symbolic link, a
 * file, a folder tprof did not make, another user's folder, a run in progress — is left alone,
 * and the run goes to the first of <run_id>-2, <run_id>-3, ... that can be taken, with one
 * warning. So a planted link never redirects the run and the user's files are never removed as
 * "an earlier run's".
 *
 * The lock is an open-file-description lock on the marker, held until tp_claim_release or the
 * process's end (a crash releases it): a one-rank run locks the whole marker, rank r of several
 * byte 1 + r, so the ranks of one run share their directory and nothing else does. */
#ifndef TP_RUN_CLAIM_H
#define TP_RUN_CLAIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_claim {
    char *dir;  /* the run directory taken */
    int fd;     /* the marker, locked; -1 when none */
    int reused; /* the directory held an earlier run (its files are the caller's to remove) */
} tp_claim;

/* Creates output_dir as needed and takes a run directory for run_id (see above). 0 with c
 * filled, or -1 with err (nothing taken; c->dir NULL). */
int tp_claim_run_dir(const char *output_dir, const char *run_id, int64_t rank, int64_t world_size,
                     tp_claim *c, char *err, size_t errlen);
/* Unlocks and frees; c may be zeroed (fd 0 is then not closed) or already released. */
void tp_claim_release(tp_claim *c);

#endif
