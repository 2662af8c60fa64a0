/*****************************************************************************\
 *  darwin_proc.h - macOS process identities and a process-tree tracker,
 *  shared by proctrack/darwin and jobacct_gather/darwin.
 *****************************************************************************
 *  Copyright (C) 2026 The slurm-on-mac developers.
 *
 *  This file is part of Slurm, a resource management program.
 *  For details, see <https://slurm.schedmd.com/>.
 *  Please also read the included file: DISCLAIMER.
 *
 *  Slurm is free software; you can redistribute it and/or modify it under
 *  the terms of the GNU General Public License as published by the Free
 *  Software Foundation; either version 2 of the License, or (at your option)
 *  any later version.
 *
 *  Slurm is distributed in the hope that it will be useful, but WITHOUT ANY
 *  WARRANTY; without even the implied warranty of MERCHANTABILITY or FITNESS
 *  FOR A PARTICULAR PURPOSE.  See the GNU General Public License for more
 *  details.
\*****************************************************************************/

#ifndef _DARWIN_PROC_H
#define _DARWIN_PROC_H

#include <libproc.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The unique-id flavors of proc_pidinfo() are in XNU's private
 * bsd/sys/proc_info_private.h (xnu-11417.101.15), not in the SDK. The kernel
 * asserts the structure's size and marks it "This structure is API".
 * p_puniqueid is set at fork and kept when the process is re-parented to
 * launchd, so it follows a process tree across a parent's exit.
 */
#ifndef PROC_PIDUNIQIDENTIFIERINFO
#define PROC_PIDUNIQIDENTIFIERINFO 17
struct proc_uniqidentifierinfo {
	uint8_t p_uuid[16];	/* UUID of the main executable */
	uint64_t p_uniqueid;	/* never reused while the machine runs */
	uint64_t p_puniqueid;	/* the parent's, kept on re-parenting */
	int32_t p_idversion;	/* pid version, as in an audit_token_t */
	int32_t p_orig_ppidversion;
	uint64_t p_reserve2;
	uint64_t p_reserve3;
};
#endif

/* A process as the kernel names it for good: pid plus unique id. */
typedef struct {
	pid_t pid;
	uint64_t uniqueid;
	uint64_t puniqueid;
	int32_t idversion;
} darwin_ident_t;

/*
 * Read the identity of a live process (not a zombie).
 * RET 0, or -1 with errno (ESRCH: gone or a zombie).
 */
extern int darwin_proc_ident(pid_t pid, darwin_ident_t *ident);

/*
 * Send sig to the process ident names, and only to it.
 *
 * macOS 14.4 and later: proc_signal_with_audittoken() with a token holding the
 * pid and its pid version; the kernel compares the version under the same
 * reference it signals, so a reused pid is never signalled. Older kernels
 * answer EINVAL to that call: then the identity is read again immediately
 * before kill(2). Between that check and kill() the process can still exit and
 * its pid be handed to a new process (a window of one system call).
 * RET 0 (sent), ESRCH (that process is gone; its pid may be another's), or
 * another errno value.
 */
extern int darwin_proc_signal(const darwin_ident_t *ident, int sig);

/* What a tracker's scans met that they could not use. */
typedef struct {
	uint64_t scans;
	uint64_t vanished;	/* listed, then gone before it could be read */
	uint64_t unreadable;	/* could not be read for another reason */
} darwin_scan_stats_t;

typedef struct darwin_tracker darwin_tracker_t;

/*
 * A tracker of the processes of one job step: every descendant of root
 * (slurmstepd), every process in one of the step's process groups, and every
 * process remembered by unique id once it was seen, so that a process that
 * left the session (setsid) and whose parent exited is still found. On macOS
 * a process re-parented to launchd whose p_puniqueid names a member is found
 * too, even if it was never seen itself. The root is never a member.
 */
extern darwin_tracker_t *darwin_tracker_create(pid_t root);
extern void darwin_tracker_destroy(darwin_tracker_t *t);
extern pid_t darwin_tracker_root(darwin_tracker_t *t);

/* A process group whose members belong to the step (a task's). */
extern void darwin_tracker_add_pgid(darwin_tracker_t *t, pid_t pgid);

/*
 * A process that belongs to the step although it may not descend from the
 * root (a pid adopted into the extern step). RET 0, or -1 with errno.
 */
extern int darwin_tracker_add(darwin_tracker_t *t, pid_t pid);

/*
 * Scan the process table. With fresh_ids, the identity of every member is
 * read again (before signalling: a pid reused inside the tree is then named by
 * its new identity). RET the number of members, or -1 with errno when the
 * process table cannot be listed.
 */
extern int darwin_tracker_scan(darwin_tracker_t *t, bool fresh_ids);

/*
 * The members found by the last scan: a malloc()ed array the caller frees.
 * RET their number.
 */
extern int darwin_tracker_members(darwin_tracker_t *t, darwin_ident_t **out);

/* Whether pid was a member in the last scan. */
extern bool darwin_tracker_has(darwin_tracker_t *t, pid_t pid);

/*
 * Scan with fresh identities, then signal every member through
 * darwin_proc_signal(). RET the number of processes signalled; *gone gets the
 * number that had exited (or whose pid was reused) by the time of the signal.
 */
extern int darwin_tracker_signal(darwin_tracker_t *t, int sig, int *gone);

/* Monotonic nanoseconds at the end of the last scan (0: none yet). */
extern uint64_t darwin_tracker_last_scan(darwin_tracker_t *t);

extern darwin_scan_stats_t darwin_tracker_stats(darwin_tracker_t *t);

/* Monotonic clock in nanoseconds. */
extern uint64_t darwin_proc_now(void);

#endif
