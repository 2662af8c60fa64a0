/*
 * A fake macOS process table under patches/<line>/0041's darwin_proc.c (the
 * tracker proctrack/darwin and jobacct_gather/darwin share): proc_listallpids,
 * proc_pidinfo (PROC_PIDT_SHORTBSDINFO, PROC_PIDUNIQIDENTIFIERINFO),
 * proc_signal_with_audittoken and kill(2) are defined here, so the tracker's
 * decisions can be driven through what Linux's /proc cannot show: re-parenting
 * to launchd that keeps p_puniqueid, and a pid reused between a scan and a
 * kill. Compiled by build-driver/src/patches/darwin_proc_tests.rs with
 * shim/include/emulate on the include path (the SDK's names and layouts).
 *
 * Usage: harness <case>; prints what happened, exits 0 when the case ran.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include "darwin_proc.h"

#define MAXP 64
#define ROOT 100

struct fake {
	pid_t pid, ppid, pgid;
	uint64_t uid, puid;
	int32_t ver;
	int alive, zombie;
	int signalled;	/* last signal received, 0: none */
};

static struct fake procs[MAXP];
static int nprocs = 0;
static uint64_t next_uid = 1000;
static int token_supported = 1;
static int vanish_pid = 0;	/* listed, but gone when read */
/* Linux's answer: after re-parenting, p_puniqueid names the new parent. */
static int linux_reparent = 0;
/* Called right before a signal is delivered (fallback: after the check). */
static void (*before_signal)(pid_t pid) = NULL;

static struct fake *find(pid_t pid)
{
	for (int i = nprocs - 1; i >= 0; i--)
		if (procs[i].pid == pid && procs[i].alive)
			return &procs[i];
	return NULL;
}

static struct fake *spawn(pid_t pid, pid_t ppid, pid_t pgid)
{
	struct fake *parent = find(ppid), *p = &procs[nprocs++];

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = ppid;
	p->pgid = pgid;
	p->uid = next_uid++;
	p->puid = parent ? parent->uid : 0;
	p->ver = (int32_t) p->uid * 7;
	p->alive = 1;
	return p;
}

/* A process exits; its children go to launchd with p_puniqueid kept. */
static void die(pid_t pid)
{
	struct fake *p = find(pid);

	if (!p)
		return;
	p->alive = 0;
	for (int i = 0; i < nprocs; i++) {
		if (procs[i].alive && procs[i].ppid == pid) {
			procs[i].ppid = 1;
			if (linux_reparent)
				procs[i].puid = find(1)->uid;
		}
	}
}

int proc_listallpids(void *buffer, int size)
{
	int n = 0, room = size / (int) sizeof(int);

	if (!buffer)
		return nprocs + 20;
	for (int i = 0; i < nprocs && n < room; i++)
		if (procs[i].alive)
			((int *) buffer)[n++] = procs[i].pid;
	if (vanish_pid && n < room)
		((int *) buffer)[n++] = vanish_pid;
	return n;
}

int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int size)
{
	struct fake *p = find(pid);

	(void) arg;
	if (!p || p->zombie) {
		errno = ESRCH;
		return 0;
	}
	if (flavor == PROC_PIDT_SHORTBSDINFO && size >= (int) sizeof(struct proc_bsdshortinfo)) {
		struct proc_bsdshortinfo *s = buffer;

		memset(s, 0, sizeof(*s));
		s->pbsi_pid = p->pid;
		s->pbsi_ppid = p->ppid;
		s->pbsi_pgid = p->pgid;
		s->pbsi_status = SRUN;
		return sizeof(*s);
	}
	if (flavor == PROC_PIDUNIQIDENTIFIERINFO &&
	    size >= (int) sizeof(struct proc_uniqidentifierinfo)) {
		struct proc_uniqidentifierinfo *u = buffer;

		memset(u, 0, sizeof(*u));
		u->p_uniqueid = p->uid;
		u->p_puniqueid = p->puid;
		u->p_idversion = p->ver;
		return sizeof(*u);
	}
	errno = EINVAL;
	return 0;
}

int proc_signal_with_audittoken(audit_token_t *token, int sig)
{
	struct fake *p;

	if (!token_supported)
		return EINVAL;	/* macOS before 14.4: unknown call */
	if (before_signal)
		before_signal((pid_t) token->val[5]);
	p = find((pid_t) token->val[5]);
	if (!p || p->ver != (int32_t) token->val[7])
		return ESRCH;	/* the kernel's pid version check */
	p->signalled = sig;
	return 0;
}

int kill(pid_t pid, int sig)
{
	struct fake *p;

	if (before_signal)
		before_signal(pid);
	if (!(p = find(pid))) {
		errno = ESRCH;
		return -1;
	}
	p->signalled = sig;
	return 0;
}

static void print_members(const char *label, darwin_tracker_t *t)
{
	darwin_ident_t *m = NULL;
	int n = darwin_tracker_members(t, &m);

	printf("%s", label);
	for (int i = 0; i < n; i++)
		printf(" %d", (int) m[i].pid);
	printf("\n");
	free(m);
}

static void print_signalled(void)
{
	printf("signalled");
	for (int i = 0; i < nprocs; i++)
		if (procs[i].signalled)
			printf(" %d(uid %llu)", (int) procs[i].pid,
			       (unsigned long long) procs[i].uid);
	printf("\n");
}

/* Replace pid 101 by an unrelated process (pid reuse). */
static void reuse_101(pid_t pid)
{
	if (pid != 101 || !find(101) || find(101)->ppid == 1)
		return;
	die(101);
	spawn(101, 1, 300);
	before_signal = NULL;
}

int main(int argc, char **argv)
{
	darwin_tracker_t *t = darwin_tracker_create(ROOT);
	const char *c = argc > 1 ? argv[1] : "";
	darwin_ident_t *m = NULL;
	int gone = 0;

	spawn(1, 0, 1);		/* launchd */
	spawn(ROOT, 1, 50);	/* slurmstepd */
	spawn(200, 1, 200);	/* an unrelated daemon */

	if (!strcmp(c, "setsid-reparented") ||
	    !strcmp(c, "setsid-reparented-linux")) {
		linux_reparent = strstr(c, "linux") != NULL;
		/* SMD-109: a child leaves the session, its parent exits. */
		spawn(101, ROOT, 101);
		darwin_tracker_add_pgid(t, 101);
		spawn(102, 101, 102);	/* setsid */
		darwin_tracker_scan(t, false);
		print_members("before", t);
		die(101);
		darwin_tracker_scan(t, false);
		print_members("after", t);
		printf("sent %d\n", darwin_tracker_signal(t, SIGKILL, &gone));
		print_signalled();
	} else if (!strcmp(c, "reparented-unseen-child")) {
		/* macOS: p_puniqueid names a member the scan saw. */
		spawn(101, ROOT, 101);
		darwin_tracker_scan(t, false);
		spawn(103, 101, 103);	/* forked and setsid */
		die(101);		/* before the next scan */
		darwin_tracker_scan(t, false);
		print_members("members", t);
	} else if (!strcmp(c, "reparented-unseen-child-linux")) {
		/* The Linux backend: p_puniqueid is the new parent's. */
		spawn(101, ROOT, 101);
		darwin_tracker_scan(t, false);
		spawn(103, 101, 103)->puid = find(1)->uid;
		die(101);
		darwin_tracker_scan(t, false);
		print_members("members", t);
	} else if (!strcmp(c, "double-fork-escape")) {
		/* Documented escape: the middle process was never seen. */
		spawn(101, ROOT, 101);
		darwin_tracker_scan(t, false);
		spawn(102, 101, 101);
		spawn(103, 102, 103);	/* setsid */
		die(102);
		darwin_tracker_scan(t, false);
		print_members("members", t);
	} else if (!strcmp(c, "pgid-orphan")) {
		/* Not seen, left no session: the task's process group holds it. */
		spawn(101, ROOT, 101);
		darwin_tracker_add_pgid(t, 101);
		spawn(104, 101, 101);
		die(101);
		darwin_tracker_scan(t, false);
		print_members("members", t);
	} else if (!strcmp(c, "reuse-before-kill-token") ||
		   !strcmp(c, "reuse-before-kill-fallback")) {
		/* The pid is reused between the scan and the kill. */
		token_supported = strstr(c, "token") != NULL;
		spawn(101, ROOT, 101);
		darwin_tracker_scan(t, false);
		darwin_tracker_members(t, &m);
		die(101);
		spawn(101, 1, 300);
		printf("rc %s\n", darwin_proc_signal(&m[0], SIGKILL) == ESRCH ?
		       "ESRCH" : "sent");
		print_signalled();
	} else if (!strcmp(c, "window-token") || !strcmp(c, "window-fallback")) {
		/* The pid is reused after the identity check, before kill(). */
		token_supported = strstr(c, "token") != NULL;
		spawn(101, ROOT, 101);
		darwin_tracker_scan(t, false);
		darwin_tracker_members(t, &m);
		before_signal = reuse_101;
		printf("rc %s\n", darwin_proc_signal(&m[0], SIGKILL) == ESRCH ?
		       "ESRCH" : "sent");
		print_signalled();
	} else if (!strcmp(c, "vanished")) {
		spawn(101, ROOT, 101);
		vanish_pid = 105;
		gone = darwin_tracker_scan(t, false);
		printf("members %d vanished %llu\n", gone,
		       (unsigned long long) darwin_tracker_stats(t).vanished);
	} else {
		fprintf(stderr, "unknown case '%s'\n", c);
		return 2;
	}
	free(m);
	darwin_tracker_destroy(t);
	return 0;
}
