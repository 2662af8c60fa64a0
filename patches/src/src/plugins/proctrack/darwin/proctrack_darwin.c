/*****************************************************************************\
 *  proctrack_darwin.c - process tracking on macOS by ancestry and unique id.
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

/*
 * macOS has no cgroups, and proctrack/pgid loses every process that leaves
 * the step's process group (setsid). This plugin follows the step's processes
 * by ancestry from slurmstepd, by the step's process groups, and by the
 * kernel's unique process id once a process was seen, so a process that
 * called setsid and whose parent exited is still signalled (darwin_proc.c).
 * The container id is slurmstepd's pid. A thread rescans every second so that
 * processes are seen while their parents live; jobacct_gather polls rescan
 * too. Every signal is sent only to the process that was identified
 * (proc_signal_with_audittoken on macOS 14.4+, else check then kill).
 */

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "darwin_proc.h"

/* Required Slurm plugin symbols: */
const char plugin_name[] = "Process tracking on macOS by ancestry and unique id";
const char plugin_type[] = "proctrack/darwin";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* How often the tracker rescans without being asked (seconds). */
#define SCAN_INTERVAL 1

static darwin_tracker_t *tracker = NULL;
static pthread_mutex_t tracker_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t scan_cond = PTHREAD_COND_INITIALIZER;
static pthread_t scan_thread;
static bool scan_running = false, scan_stop = false;

static void *_scan_loop(void *arg)
{
	darwin_tracker_t *t = arg;

	slurm_mutex_lock(&tracker_lock);
	while (!scan_stop) {
		struct timespec until = { .tv_sec = time(NULL) + SCAN_INTERVAL };
		uint64_t age;

		slurm_cond_timedwait(&scan_cond, &tracker_lock, &until);
		if (scan_stop)
			break;
		slurm_mutex_unlock(&tracker_lock);
		age = darwin_proc_now() - darwin_tracker_last_scan(t);
		if (age >= (SCAN_INTERVAL * 1000000000ULL) &&
		    (darwin_tracker_scan(t, false) < 0))
			debug("%s: scan: %m", plugin_type);
		slurm_mutex_lock(&tracker_lock);
	}
	slurm_mutex_unlock(&tracker_lock);
	return NULL;
}

/*
 * The tracker of container cont_id: this slurmstepd's, or (for a container id
 * from another process) a fresh one for that root, which the caller frees.
 */
static darwin_tracker_t *_tracker_for(uint64_t cont_id, bool *temporary)
{
	darwin_tracker_t *t = NULL;

	*temporary = false;
	slurm_mutex_lock(&tracker_lock);
	if (tracker && ((uint64_t) darwin_tracker_root(tracker) == cont_id))
		t = tracker;
	slurm_mutex_unlock(&tracker_lock);
	if (!t && (cont_id > 1)) {
		t = darwin_tracker_create((pid_t) cont_id);
		*temporary = true;
	}
	return t;
}

static void _release(darwin_tracker_t *t, bool temporary)
{
	if (temporary)
		darwin_tracker_destroy(t);
}

extern int init(void)
{
	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
extern int fini(void)
#else /* SLURM_VERSION */
extern void fini(void)
#endif /* SLURM_VERSION */
{
	darwin_tracker_t *t;

	slurm_mutex_lock(&tracker_lock);
	scan_stop = true;
	slurm_cond_broadcast(&scan_cond);
	slurm_mutex_unlock(&tracker_lock);
	if (scan_running)
		pthread_join(scan_thread, NULL);
	scan_running = false;

	slurm_mutex_lock(&tracker_lock);
	t = tracker;
	tracker = NULL;
	slurm_mutex_unlock(&tracker_lock);
	if (t) {
		darwin_scan_stats_t s = darwin_tracker_stats(t);

		if (s.unreadable)
			info("%s: %"PRIu64" scans, %"PRIu64" processes could not be read (%"PRIu64" vanished while read)",
			     plugin_type, s.scans, s.unreadable, s.vanished);
		darwin_tracker_destroy(t);
	}
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
	return SLURM_SUCCESS;
#endif /* SLURM_VERSION */
}

extern int proctrack_p_create(stepd_step_rec_t *step)
{
	darwin_tracker_t *t;

	if (!(t = darwin_tracker_create(getpid()))) {
		error("%s: cannot create a tracker: %m", plugin_type);
		return SLURM_ERROR;
	}
	slurm_mutex_lock(&tracker_lock);
	if (tracker) {
		slurm_mutex_unlock(&tracker_lock);
		darwin_tracker_destroy(t);
		step->cont_id = (uint64_t) getpid();
		return SLURM_SUCCESS;
	}
	tracker = t;
	scan_stop = false;
	slurm_mutex_unlock(&tracker_lock);
	step->cont_id = (uint64_t) getpid();

	if (pthread_create(&scan_thread, NULL, _scan_loop, t))
		error("%s: no rescan thread (%m): processes are found only when Slurm asks",
		      plugin_type);
	else
		scan_running = true;
	return SLURM_SUCCESS;
}

extern int proctrack_p_add(stepd_step_rec_t *step, pid_t pid)
{
	darwin_tracker_t *t;
	bool temporary;

	if (!(t = _tracker_for(step->cont_id, &temporary)))
		return SLURM_ERROR;
	/* A task leads its own process group (step->pgid is the first's). */
	darwin_tracker_add_pgid(t, getpgid(pid));
	darwin_tracker_add_pgid(t, step->pgid);
	/* An adopted pid (extern step) need not descend from slurmstepd. */
	if (darwin_tracker_add(t, pid))
		debug("%s: cannot identify %d: %m", plugin_type, pid);
	if (darwin_tracker_scan(t, false) < 0)
		debug("%s: scan after adding %d: %m", plugin_type, pid);
	_release(t, temporary);
	return SLURM_SUCCESS;
}

extern int proctrack_p_signal(uint64_t cont_id, int signal)
{
	darwin_tracker_t *t;
	bool temporary;
	int sent, gone = 0;

	if (!cont_id || (cont_id == 1)) {
		errno = ESRCH;
		return SLURM_ERROR;
	}
	if (!(t = _tracker_for(cont_id, &temporary)))
		return SLURM_ERROR;
	sent = darwin_tracker_signal(t, signal, &gone);
	_release(t, temporary);
	if (sent < 0) {
		error("%s: cannot list processes to signal %"PRIu64": %m",
		      plugin_type, cont_id);
		return SLURM_ERROR;
	}
	debug2("%s: signal %d sent to %d processes of %"PRIu64" (%d gone first)",
	       plugin_type, signal, sent, cont_id, gone);
	if (!sent) {
		errno = ESRCH;
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

extern int proctrack_p_destroy(uint64_t cont_id)
{
	return SLURM_SUCCESS;
}

extern uint64_t proctrack_p_find(pid_t pid)
{
	darwin_tracker_t *t = NULL;
	uint64_t cont = 0;

	slurm_mutex_lock(&tracker_lock);
	t = tracker;
	slurm_mutex_unlock(&tracker_lock);
	if (t && (darwin_tracker_scan(t, false) >= 0) &&
	    darwin_tracker_has(t, pid))
		cont = (uint64_t) darwin_tracker_root(t);
	return cont;
}

extern bool proctrack_p_has_pid(uint64_t cont_id, pid_t pid)
{
	darwin_tracker_t *t;
	bool temporary, has = false;

	if (!(t = _tracker_for(cont_id, &temporary)))
		return false;
	if (darwin_tracker_scan(t, false) >= 0)
		has = darwin_tracker_has(t, pid);
	_release(t, temporary);
	return has;
}

extern int proctrack_p_wait(uint64_t cont_id)
{
	darwin_tracker_t *t;
	bool temporary;
	int delay = 1, rc = SLURM_SUCCESS;
	time_t start = time(NULL);

	if (!cont_id || (cont_id == 1)) {
		errno = EINVAL;
		return SLURM_ERROR;
	}
	if (!(t = _tracker_for(cont_id, &temporary)))
		return SLURM_ERROR;
	/* Spin until no member is left, SIGKILLing what remains. */
	while (darwin_tracker_signal(t, SIGKILL, NULL) > 0) {
		time_t now = time(NULL);

		if (now > (start + slurm_conf.unkillable_timeout)) {
			error("Unable to destroy container %"PRIu64" in darwin plugin, giving up after %lu sec",
			      cont_id, (unsigned long) (now - start));
			rc = SLURM_ERROR;
			break;
		}
		sleep(delay);
		if (delay < 32)
			delay *= 2;
	}
	_release(t, temporary);
	return rc;
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25,5,0)
extern int proctrack_p_wait_for_any_task(int *status, bool block,
					 struct rusage *rusage)
{
	return ESLURM_NOT_SUPPORTED;
}

#endif /* SLURM_VERSION */
extern int proctrack_p_get_pids(uint64_t cont_id, pid_t **pids, int *npids)
{
	darwin_tracker_t *t;
	darwin_ident_t *members = NULL;
	bool temporary;
	int n = 0, rc = SLURM_SUCCESS;

	*pids = NULL;
	*npids = 0;
	if (!(t = _tracker_for(cont_id, &temporary)))
		return SLURM_ERROR;
	if (darwin_tracker_scan(t, false) < 0) {
		error("%s: cannot list processes of %"PRIu64": %m",
		      plugin_type, cont_id);
		rc = SLURM_ERROR;
	} else if ((n = darwin_tracker_members(t, &members)) > 0) {
		*pids = xcalloc(n, sizeof(pid_t));
		for (int i = 0; i < n; i++)
			(*pids)[i] = members[i].pid;
		*npids = n;
	}
	free(members);
	_release(t, temporary);
	return rc;
}
