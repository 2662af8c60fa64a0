/*****************************************************************************\
 *  darwin_proc.c - macOS process identities and a process-tree tracker,
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

/*
 * This file uses only libc and macOS's libproc, no Slurm header, so that it
 * can be compiled against a fake libproc and its decisions tested (pid reuse
 * between a scan and a kill, re-parenting to launchd).
 *
 * A scan lists every process (proc_listallpids) and reads each one's parent
 * and process group (PROC_PIDT_SHORTBSDINFO, no privilege needed). Members:
 *  1. descendants of the root by parent pid;
 *  2. processes in one of the step's process groups (a process group cannot
 *     be re-used while it has a member, so this also holds orphans that did
 *     not call setsid);
 *  3. processes remembered from an earlier scan whose unique id still matches
 *     (a process that called setsid and whose parent then exited);
 *  4. children of launchd (pid 1) whose p_puniqueid names a member, alive or
 *     exited in the last minute (macOS keeps p_puniqueid on re-parenting);
 * and the descendants of any of these. What still escapes: a process whose
 * parent forked it and exited between two scans, which called setsid, and
 * whose parent was never seen (a double fork that completes between scans).
 */

#include <errno.h>
#include <libproc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/proc_info.h>
#include <sys/sysctl.h>	/* SZOMB (sys/proc.h) */
#include <time.h>
#include <unistd.h>

#include "darwin_proc.h"

/* launchd: where macOS re-parents orphans. */
#define LAUNCHD_PID 1
/* How long an exited member's unique id is kept for rule 4. */
#define EXITED_KEEP_NS (60ULL * 1000000000ULL)

typedef struct {
	darwin_ident_t id;
	pid_t ppid;
	bool has_id;
} member_t;

typedef struct {
	uint64_t uniqueid;
	uint64_t gone_at;	/* monotonic ns */
} exited_t;

typedef struct {
	pid_t pid;	/* first: entries are searched with _cmp_pid */
	pid_t ppid;
	pid_t pgid;
	bool member;
} entry_t;

struct darwin_tracker {
	pthread_mutex_t lock;
	pid_t root;
	pid_t *pgids;
	int npgids;
	member_t *members;	/* sorted by pid */
	int nmembers;
	exited_t *exited;
	int nexited;
	uint64_t last_scan;
	darwin_scan_stats_t stats;
};

/* Set when the kernel does not know proc_signal_with_audittoken (< 14.4). */
static bool token_call_unsupported = false;

extern uint64_t darwin_proc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

extern int darwin_proc_ident(pid_t pid, darwin_ident_t *ident)
{
	struct proc_uniqidentifierinfo u;

	if (pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	if (proc_pidinfo(pid, PROC_PIDUNIQIDENTIFIERINFO, 0, &u, sizeof(u)) !=
	    (int) sizeof(u))
		return -1;
	ident->pid = pid;
	ident->uniqueid = u.p_uniqueid;
	ident->puniqueid = u.p_puniqueid;
	ident->idversion = u.p_idversion;
	return 0;
}

extern int darwin_proc_signal(const darwin_ident_t *ident, int sig)
{
	darwin_ident_t now;
	audit_token_t token;
	int rc;

	if (!token_call_unsupported) {
		memset(&token, 0, sizeof(token));
		token.val[5] = (unsigned int) ident->pid;	/* pid */
		token.val[7] = (unsigned int) ident->idversion;	/* pid version */
		rc = proc_signal_with_audittoken(&token, sig);
		if ((rc != EINVAL) || (sig < 0) || (sig >= NSIG))
			return rc;
		/* A valid signal refused: the kernel predates the call. */
		token_call_unsupported = true;
	}

	if (darwin_proc_ident(ident->pid, &now))
		return errno;
	if (now.uniqueid != ident->uniqueid)
		return ESRCH;
	/* Window: the process may exit and its pid be reused right here. */
	if (kill(ident->pid, sig))
		return errno;
	return 0;
}

static int _cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

static int _cmp_entry_ppid(const void *a, const void *b)
{
	const entry_t *x = *(entry_t * const *) a, *y = *(entry_t * const *) b;

	return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

static int _cmp_member(const void *a, const void *b)
{
	const member_t *x = a, *y = b;

	return (x->id.pid > y->id.pid) - (x->id.pid < y->id.pid);
}

static member_t *_find_member(member_t *m, int n, pid_t pid)
{
	member_t key = { .id.pid = pid };

	return bsearch(&key, m, n, sizeof(*m), _cmp_member);
}

static entry_t *_find_entry(entry_t *e, int n, pid_t pid)
{
	entry_t key = { .pid = pid };

	/* entries are sorted by pid; entry_t starts with its pid */
	return bsearch(&key, e, n, sizeof(*e), _cmp_pid);
}

extern darwin_tracker_t *darwin_tracker_create(pid_t root)
{
	darwin_tracker_t *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (pthread_mutex_init(&t->lock, NULL)) {
		free(t);
		return NULL;
	}
	t->root = root;
	return t;
}

extern void darwin_tracker_destroy(darwin_tracker_t *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->pgids);
	free(t->members);
	free(t->exited);
	free(t);
}

extern pid_t darwin_tracker_root(darwin_tracker_t *t)
{
	return t->root;
}

extern void darwin_tracker_add_pgid(darwin_tracker_t *t, pid_t pgid)
{
	pid_t *grown;

	if (pgid <= 1)
		return;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < t->npgids; i++) {
		if (t->pgids[i] == pgid) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
	}
	if ((grown = realloc(t->pgids, (t->npgids + 1) * sizeof(pid_t)))) {
		t->pgids = grown;
		t->pgids[t->npgids++] = pgid;
	}
	pthread_mutex_unlock(&t->lock);
}

extern int darwin_tracker_add(darwin_tracker_t *t, pid_t pid)
{
	member_t m = { .id.pid = pid, .has_id = true }, *grown;
	int rc = 0;

	if (darwin_proc_ident(pid, &m.id))
		return -1;
	pthread_mutex_lock(&t->lock);
	if (!_find_member(t->members, t->nmembers, pid)) {
		if ((grown = realloc(t->members,
				     (t->nmembers + 1) * sizeof(*grown)))) {
			t->members = grown;
			t->members[t->nmembers++] = m;
			qsort(t->members, t->nmembers, sizeof(*grown),
			      _cmp_member);
		} else {
			errno = ENOMEM;
			rc = -1;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* Every pid, sorted; NULL with errno when the table cannot be listed. */
static pid_t *_list_pids(int *count)
{
	pid_t *pids = NULL, *grown;
	int room = proc_listallpids(NULL, 0), n;

	if (room <= 0)
		room = 1024;
	for (int tries = 0; tries < 8; tries++) {
		room += 64;
		if (!(grown = realloc(pids, room * sizeof(pid_t)))) {
			free(pids);
			errno = ENOMEM;
			return NULL;
		}
		pids = grown;
		n = proc_listallpids(pids, room * (int) sizeof(pid_t));
		if (n <= 0) {
			free(pids);
			if (!errno)
				errno = ESRCH;
			return NULL;
		}
		if (n < room) {
			qsort(pids, n, sizeof(pid_t), _cmp_pid);
			*count = n;
			return pids;
		}
		room *= 2;	/* the table filled the buffer: it may hold more */
	}
	free(pids);
	errno = EAGAIN;
	return NULL;
}

static bool _in_pgids(darwin_tracker_t *t, pid_t pgid)
{
	for (int i = 0; i < t->npgids; i++)
		if (t->pgids[i] == pgid)
			return true;
	return false;
}

static int _cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/*
 * The unique ids rule 4 accepts as a parent: remembered members and members
 * that exited recently, sorted. NULL (and *count 0) when there are none.
 */
static uint64_t *_known_uniqueids(darwin_tracker_t *t, int *count)
{
	uint64_t *ids;
	int n = 0;

	*count = 0;
	if (!(t->nmembers + t->nexited) ||
	    !(ids = malloc((t->nmembers + t->nexited) * sizeof(*ids))))
		return NULL;
	for (int i = 0; i < t->nmembers; i++)
		if (t->members[i].has_id)
			ids[n++] = t->members[i].id.uniqueid;
	for (int i = 0; i < t->nexited; i++)
		ids[n++] = t->exited[i].uniqueid;
	qsort(ids, n, sizeof(*ids), _cmp_u64);
	*count = n;
	return ids;
}

/*
 * Mark the descendants of every member (children by parent pid), using the
 * entries sorted by parent pid.
 */
static void _mark_descendants(entry_t *e, int n, entry_t **by_ppid)
{
	pid_t *queue = malloc((n + 1) * sizeof(pid_t));
	int head = 0, tail = 0;

	if (!queue)
		return;
	for (int i = 0; i < n; i++)
		if (e[i].member)
			queue[tail++] = e[i].pid;
	while (head < tail) {
		pid_t parent = queue[head++];
		entry_t key = { .ppid = parent }, *kp = &key, **hit;
		int lo;

		hit = bsearch(&kp, by_ppid, n, sizeof(*by_ppid),
			      _cmp_entry_ppid);
		if (!hit)
			continue;
		lo = hit - by_ppid;
		while ((lo > 0) && (by_ppid[lo - 1]->ppid == parent))
			lo--;
		for (int i = lo; (i < n) && (by_ppid[i]->ppid == parent); i++) {
			if (by_ppid[i]->member || (by_ppid[i]->pid == parent))
				continue;
			by_ppid[i]->member = true;
			if (tail < n)
				queue[tail++] = by_ppid[i]->pid;
		}
	}
	free(queue);
}

static void _forget_old_exited(darwin_tracker_t *t, uint64_t now)
{
	int kept = 0;

	for (int i = 0; i < t->nexited; i++)
		if (now - t->exited[i].gone_at < EXITED_KEEP_NS)
			t->exited[kept++] = t->exited[i];
	t->nexited = kept;
}

static void _remember_exited(darwin_tracker_t *t, uint64_t uid, uint64_t now)
{
	exited_t *grown;

	if (!uid)
		return;
	if (!(grown = realloc(t->exited, (t->nexited + 1) * sizeof(*grown))))
		return;
	t->exited = grown;
	t->exited[t->nexited].uniqueid = uid;
	t->exited[t->nexited].gone_at = now;
	t->nexited++;
}

static int _scan_locked(darwin_tracker_t *t, bool fresh_ids)
{
	struct proc_bsdshortinfo si;
	entry_t *e = NULL, **by_ppid = NULL;
	member_t *next = NULL, *old = t->members;
	int npids = 0, n = 0, nnext = 0, nold = t->nmembers, nknown = 0;
	uint64_t now, *known;
	pid_t *pids;
	bool grew = false;

	if (!(pids = _list_pids(&npids)))
		return -1;
	t->stats.scans++;
	if (!(e = calloc(npids, sizeof(*e))) ||
	    !(by_ppid = calloc(npids, sizeof(*by_ppid)))) {
		free(e);
		free(pids);
		errno = ENOMEM;
		return -1;
	}

	for (int i = 0; i < npids; i++) {
		if (pids[i] <= 0)
			continue;
		if (proc_pidinfo(pids[i], PROC_PIDT_SHORTBSDINFO, 0, &si,
				 sizeof(si)) != (int) sizeof(si)) {
			if (errno == ESRCH)
				t->stats.vanished++;
			else
				t->stats.unreadable++;
			continue;
		}
		if (si.pbsi_status == SZOMB)
			continue;	/* defunct: nothing to signal or measure */
		e[n].pid = pids[i];
		e[n].ppid = si.pbsi_ppid;
		e[n].pgid = si.pbsi_pgid;
		/* Rules 1 (seeded below) and 2. */
		e[n].member = (e[n].pid != t->root) &&
			      ((e[n].ppid == t->root) ||
			       _in_pgids(t, e[n].pgid));
		n++;
	}
	free(pids);
	for (int i = 0; i < n; i++)
		by_ppid[i] = &e[i];
	qsort(by_ppid, n, sizeof(*by_ppid), _cmp_entry_ppid);

	/*
	 * Rules 3 and 4 add processes outside the tree by parent pid; each
	 * needs one identity read, made once per scan.
	 */
	known = _known_uniqueids(t, &nknown);
	_mark_descendants(e, n, by_ppid);
	for (int i = 0; i < nold; i++) {
		entry_t *x = _find_entry(e, n, old[i].id.pid);
		darwin_ident_t id;

		if (!x || x->member || !old[i].has_id)
			continue;
		if (!darwin_proc_ident(x->pid, &id) &&
		    (id.uniqueid == old[i].id.uniqueid))
			x->member = grew = true;
	}
	for (int i = 0; known && (i < n); i++) {
		darwin_ident_t id;

		if (e[i].member || (e[i].ppid != LAUNCHD_PID) ||
		    (e[i].pid == t->root))
			continue;
		if (!darwin_proc_ident(e[i].pid, &id) && id.puniqueid &&
		    bsearch(&id.puniqueid, known, nknown, sizeof(*known),
			    _cmp_u64))
			e[i].member = grew = true;
	}
	free(known);
	if (grew)
		_mark_descendants(e, n, by_ppid);

	for (int i = 0; i < n; i++)
		nnext += e[i].member;
	now = darwin_proc_now();
	if (nnext && !(next = calloc(nnext, sizeof(*next)))) {
		free(e);
		free(by_ppid);
		errno = ENOMEM;
		return -1;
	}
	nnext = 0;
	for (int i = 0; i < n; i++) {
		member_t *prev;

		if (!e[i].member)
			continue;
		next[nnext].id.pid = e[i].pid;
		next[nnext].ppid = e[i].ppid;
		prev = _find_member(old, nold, e[i].pid);
		if (prev && prev->has_id && !fresh_ids &&
		    (prev->ppid == e[i].ppid)) {
			/* Same pid under the same parent: the same process. */
			next[nnext].id = prev->id;
			next[nnext].has_id = true;
		} else if (!darwin_proc_ident(e[i].pid, &next[nnext].id)) {
			next[nnext].has_id = true;
		} else if (errno == ESRCH) {
			t->stats.vanished++;
			continue;	/* exited since it was listed */
		} else {
			t->stats.unreadable++;
		}
		nnext++;
	}
	/* Members that are gone: keep their unique ids for rule 4. */
	_forget_old_exited(t, now);
	for (int i = 0; i < nold; i++) {
		member_t *still = _find_member(next, nnext, old[i].id.pid);

		if (old[i].has_id &&
		    (!still || (still->id.uniqueid != old[i].id.uniqueid)))
			_remember_exited(t, old[i].id.uniqueid, now);
	}
	free(old);
	t->members = next;
	t->nmembers = nnext;
	t->last_scan = now;
	free(e);
	free(by_ppid);
	return nnext;
}

extern int darwin_tracker_scan(darwin_tracker_t *t, bool fresh_ids)
{
	int rc;

	pthread_mutex_lock(&t->lock);
	rc = _scan_locked(t, fresh_ids);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

extern int darwin_tracker_members(darwin_tracker_t *t, darwin_ident_t **out)
{
	int n;

	pthread_mutex_lock(&t->lock);
	n = t->nmembers;
	*out = NULL;
	if (n && (*out = malloc(n * sizeof(**out)))) {
		for (int i = 0; i < n; i++)
			(*out)[i] = t->members[i].id;
	} else {
		n = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

extern bool darwin_tracker_has(darwin_tracker_t *t, pid_t pid)
{
	bool has;

	pthread_mutex_lock(&t->lock);
	has = _find_member(t->members, t->nmembers, pid) != NULL;
	pthread_mutex_unlock(&t->lock);
	return has;
}

extern int darwin_tracker_signal(darwin_tracker_t *t, int sig, int *gone)
{
	int sent = 0, lost = 0;
	pid_t self = getpid();

	pthread_mutex_lock(&t->lock);
	if (_scan_locked(t, true) < 0) {
		pthread_mutex_unlock(&t->lock);
		return -1;
	}
	for (int i = 0; i < t->nmembers; i++) {
		member_t *m = &t->members[i];
		int rc;

		if (m->id.pid == self)
			continue;
		if (!m->has_id) {
			lost++;	/* could not be identified: never guessed */
			continue;
		}
		rc = darwin_proc_signal(&m->id, sig);
		if (!rc)
			sent++;
		else if (rc == ESRCH)
			lost++;
	}
	pthread_mutex_unlock(&t->lock);
	if (gone)
		*gone = lost;
	return sent;
}

extern uint64_t darwin_tracker_last_scan(darwin_tracker_t *t)
{
	uint64_t when;

	pthread_mutex_lock(&t->lock);
	when = t->last_scan;
	pthread_mutex_unlock(&t->lock);
	return when;
}

extern darwin_scan_stats_t darwin_tracker_stats(darwin_tracker_t *t)
{
	darwin_scan_stats_t s;

	pthread_mutex_lock(&t->lock);
	s = t->stats;
	pthread_mutex_unlock(&t->lock);
	return s;
}
