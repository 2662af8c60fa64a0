/*****************************************************************************\
 *  jobacct_gather_darwin.c - job accounting on macOS through proc_pid_rusage.
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
 * macOS has no /proc: jobacct_gather/linux finds no process and reports 0 CPU
 * and no memory. This plugin measures every process proctrack lists with
 * proc_pid_rusage(RUSAGE_INFO_V4) and proc_pidinfo(PROC_PIDTASKINFO):
 *  - CPU: ri_user_time, ri_system_time plus the times of children the process
 *    reaped (ri_child_*), in Mach absolute time units, converted with
 *    mach_timebase_info (125/3 ns per unit on Apple Silicon, not 1 ns);
 *  - memory: ri_phys_footprint (what macOS charges the process: anonymous and
 *    compressed memory, IOKit/GPU buffers), and as the peak the larger of the
 *    tree's current sum and its largest ri_lifetime_max_phys_footprint, so a
 *    spike between two polls is not missed;
 *  - virtual size: pti_virtual_size (hundreds of GiB of reserved address space
 *    for any process on Apple Silicon);
 *  - disk: ri_diskio_bytesread / ri_diskio_byteswritten, bytes that reached
 *    storage (jobacct_gather/linux reports rchar/wchar, cache hits included);
 *  - page-ins: ri_pageins.
 * Each process is added to the task it descends from. The task is found once
 * per process, by parent pid, or for a process re-parented to launchd by its
 * p_puniqueid (remembered for a minute after the parent exits); a process
 * whose task cannot be found is added to the node's first task. A process
 * whose parent exited (re-parented to launchd) is reaped outside the job, so
 * its usage would be in no member's child times: when it ends, its last CPU,
 * disk and page-in figures are kept for its task. common_jag clears every
 * record's figures but the CPU times before each poll, so a process that ended
 * since the last one (a task slurmstepd reaped just before its final poll, a
 * process reaped outside the job) is given back the disk and page-in counts it
 * was last measured with. A process that vanishes or cannot be read is skipped
 * and counted.
 */

#include <libproc.h>
#include <mach/mach_time.h>
#include <stdlib.h>

#include "src/common/slurm_xlator.h"
#include "src/common/assoc_mgr.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xstring.h"
#include "src/interfaces/acct_gather_energy.h"
#include "src/interfaces/gpu.h"
#include "src/interfaces/jobacct_gather.h"
#include "src/interfaces/proctrack.h"

#include "../common/common_jag.h"
#include "../../proctrack/darwin/darwin_proc.h"

/* Required Slurm plugin symbols: */
const char plugin_name[] = "Job accounting gather macOS plugin";
const char plugin_type[] = "jobacct_gather/darwin";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* common_jag.c's list of process records. */
extern list_t *prec_list;

/* How long an exited process's unique id still attributes its orphans. */
#define ORIGIN_KEEP_SEC 60

/* The task a process's usage goes to. */
typedef struct {
	pid_t pid;
	uint64_t start;		/* ri_proc_start_abstime: with pid, identity */
	uint64_t uniqueid;
	pid_t task;
	pid_t parent;		/* parent pid when first seen */
	bool orphan;		/* its parent exited while it lived */
	time_t seen;
	/* Its disk and page-in counts when last measured. */
	uint64_t disk_read, disk_write, pages;
} origin_t;

/* What a task's processes reaped outside the job used, kept after they end. */
typedef struct {
	pid_t task;
	double usec, ssec;
	uint64_t disk_read, disk_write, pages;
} carry_t;

static mach_timebase_info_data_t timebase = { 1, 1 };
static origin_t *origins = NULL;
static int norigins = 0;
static carry_t *carries = NULL;
static int ncarries = 0;

/* Each task's CPU times of the last poll, in microseconds. */
typedef struct {
	pid_t task;
	double usec, ssec;
} task_cpu_t;
static task_cpu_t *task_cpus = NULL;
static int ntask_cpus = 0;
static uint64_t n_vanished = 0, n_unreadable = 0, n_unattributed = 0;

static int _cmp_origin(const void *a, const void *b)
{
	const origin_t *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static origin_t *_origin_by_pid(pid_t pid)
{
	origin_t key = { .pid = pid };

	return bsearch(&key, origins, norigins, sizeof(*origins), _cmp_origin);
}

static origin_t *_origin_by_uniqueid(uint64_t uniqueid)
{
	for (int i = 0; uniqueid && (i < norigins); i++)
		if (origins[i].uniqueid == uniqueid)
			return &origins[i];
	return NULL;
}

static int _find_prec(void *x, void *key)
{
	return ((jag_prec_t *) x)->pid == *(pid_t *) key;
}

static int _mark_completed(void *x, void *arg)
{
	((jag_prec_t *) x)->completed = true;
	return SLURM_SUCCESS;
}

static uint64_t _units_to_usec(uint64_t units)
{
	return (uint64_t) ((long double) units * timebase.numer /
			   timebase.denom / 1000.0L);
}

static int _cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

static carry_t *_carry_of(pid_t task)
{
	for (int i = 0; i < ncarries; i++)
		if (carries[i].task == task)
			return &carries[i];
	xrecalloc(carries, ncarries + 1, sizeof(*carries));
	carries[ncarries].task = task;
	return &carries[ncarries++];
}

static void _add(uint64_t *sum, uint64_t v)
{
	if (v == INFINITE64)
		return;
	*sum = (*sum == INFINITE64) ? v : (*sum + v);
}

/* An ended process reaped outside the job: keep its figures for its task. */
static void _keep_ended(jag_prec_t *prec)
{
	origin_t *o = _origin_by_pid(prec->pid);
	carry_t *c;

	if (!prec->ppid || !o || !o->orphan)
		return;	/* a task, or reaped by a member (in its child times) */
	c = _carry_of(prec->ppid);
	c->usec += prec->usec;
	c->ssec += prec->ssec;
	_add(&c->disk_read, prec->tres_data[TRES_ARRAY_FS_DISK].size_read);
	_add(&c->disk_write, prec->tres_data[TRES_ARRAY_FS_DISK].size_write);
	_add(&c->pages, prec->tres_data[TRES_ARRAY_PAGES].size_read);
}

static bool _is_task(pid_t pid, pid_t *tasks, int ntasks)
{
	for (int i = 0; i < ntasks; i++)
		if (tasks[i] == pid)
			return true;
	return false;
}

/*
 * The task a process newly seen belongs to: walk its parents until a task or
 * a process already attributed; a parent that is launchd is replaced by the
 * process's p_puniqueid.
 */
static pid_t _task_of_new(pid_t pid, uint64_t *uniqueid, pid_t *parent,
			  pid_t *tasks, int ntasks)
{
	darwin_ident_t id;
	pid_t cur = pid;

	*uniqueid = 0;
	*parent = 0;
	if (!darwin_proc_ident(pid, &id))
		*uniqueid = id.uniqueid;
	for (int depth = 0; depth < 64; depth++) {
		struct proc_bsdshortinfo si;
		origin_t *o;

		if (_is_task(cur, tasks, ntasks))
			return cur;
		if ((cur != pid) && (o = _origin_by_pid(cur)))
			return o->task;
		if (proc_pidinfo(cur, PROC_PIDT_SHORTBSDINFO, 0, &si,
				 sizeof(si)) != (int) sizeof(si))
			break;
		if (cur == pid)
			*parent = si.pbsi_ppid;
		if (si.pbsi_ppid <= 1) {
			/* Re-parented to launchd: follow the original parent. */
			darwin_ident_t cid;

			if (!darwin_proc_ident(cur, &cid) &&
			    (o = _origin_by_uniqueid(cid.puniqueid)))
				return o->task;
			break;
		}
		cur = si.pbsi_ppid;
	}
	n_unattributed++;
	return ntasks ? tasks[0] : pid;
}

/* Remember this poll's attributions; forget exited processes after a while. */
static void _update_origins(origin_t *fresh, int nfresh, time_t now)
{
	origin_t *all = xcalloc(nfresh + norigins, sizeof(*all));
	int n = 0;

	for (int i = 0; i < nfresh; i++)
		all[n++] = fresh[i];
	qsort(all, n, sizeof(*all), _cmp_origin);
	for (int i = 0; i < norigins; i++) {
		origin_t key = origins[i];

		if ((now - key.seen) > ORIGIN_KEEP_SEC)
			continue;
		if (bsearch(&key, all, nfresh, sizeof(*all), _cmp_origin))
			continue;	/* same pid seen again: the fresh one */
		all[n++] = key;
	}
	xfree(origins);
	origins = all;
	norigins = n;
	qsort(origins, norigins, sizeof(*origins), _cmp_origin);
}

static void _init_tres(jag_prec_t *prec)
{
	for (int i = 0; i < prec->tres_count; i++) {
		prec->tres_data[i].num_reads = INFINITE64;
		prec->tres_data[i].num_writes = INFINITE64;
		prec->tres_data[i].size_read = INFINITE64;
		prec->tres_data[i].size_write = INFINITE64;
	}
}

/* One process's record; NULL when it vanished or cannot be read. */
static jag_prec_t *_measure(pid_t pid, int tres_count, pid_t *tasks,
			    int ntasks, origin_t *fresh, int *nfresh)
{
	static int disable_gpu_acct = -1;
	struct rusage_info_v4 ri;
	struct proc_taskinfo ti;
	jag_prec_t *prec;
	origin_t *o;

	if (proc_pid_rusage(pid, RUSAGE_INFO_V4, (rusage_info_t *) &ri)) {
		if (errno == ESRCH)
			n_vanished++;
		else
			n_unreadable++;
		return NULL;
	}
	if (disable_gpu_acct == -1)
		disable_gpu_acct = xstrcasestr(slurm_conf.job_acct_gather_params,
					       "DisableGPUAcct") ? 1 : 0;

	prec = xmalloc(sizeof(*prec));
	prec->pid = pid;
	prec->tres_count = tres_count;
	prec->tres_data = xcalloc(tres_count, sizeof(acct_gather_data_t));
	_init_tres(prec);

	/*
	 * ppid holds the task this process is added to (the task's own record
	 * keeps 0): only this plugin's get_offspring_data reads it.
	 */
	fresh[*nfresh].pid = pid;
	fresh[*nfresh].start = ri.ri_proc_start_abstime;
	fresh[*nfresh].seen = time(NULL);
	if ((o = _origin_by_pid(pid)) && (o->start == ri.ri_proc_start_abstime)) {
		fresh[*nfresh].task = o->task;
		fresh[*nfresh].uniqueid = o->uniqueid;
		fresh[*nfresh].parent = o->parent;
		fresh[*nfresh].orphan = o->orphan;
	} else {
		fresh[*nfresh].task = _task_of_new(pid,
						   &fresh[*nfresh].uniqueid,
						   &fresh[*nfresh].parent,
						   tasks, ntasks);
		fresh[*nfresh].orphan = (fresh[*nfresh].parent <= 1);
	}
	prec->ppid = (fresh[*nfresh].task == pid) ? 0 : fresh[*nfresh].task;
	fresh[*nfresh].disk_read = ri.ri_diskio_bytesread;
	fresh[*nfresh].disk_write = ri.ri_diskio_byteswritten;
	fresh[*nfresh].pages = ri.ri_pageins;
	(*nfresh)++;

	prec->usec = (double) _units_to_usec(ri.ri_user_time +
					     ri.ri_child_user_time);
	prec->ssec = (double) _units_to_usec(ri.ri_system_time +
					     ri.ri_child_system_time);
	prec->tres_data[TRES_ARRAY_MEM].size_read = ri.ri_phys_footprint;
	prec->tres_data[TRES_ARRAY_MEM].size_write =
		MAX(ri.ri_lifetime_max_phys_footprint, ri.ri_phys_footprint);
	prec->tres_data[TRES_ARRAY_PAGES].size_read = ri.ri_pageins;
	prec->tres_data[TRES_ARRAY_FS_DISK].size_read = ri.ri_diskio_bytesread;
	prec->tres_data[TRES_ARRAY_FS_DISK].size_write =
		ri.ri_diskio_byteswritten;
	if (proc_pidinfo(pid, PROC_PIDTASKINFO, 0, &ti, sizeof(ti)) ==
	    (int) sizeof(ti))
		prec->tres_data[TRES_ARRAY_VMEM].size_read = ti.pti_virtual_size;
	if (!disable_gpu_acct)
		gpu_g_usage_read(pid, prec->tres_data);
	return prec;
}

/*
 * common_jag resets every record's figures but usec/ssec before each poll
 * (_init_tres), and a record this poll did not measure is of a process that
 * ended since: give it back the cumulative counts it was last measured with,
 * so that its task's total (the task reaped by slurmstepd before its final
 * poll: its own bytes) and _keep_ended (a process reaped outside the job) do
 * not lose them. Memory and virtual size are not restored: it holds none now.
 */
static int _restore_ended(void *x, void *arg)
{
	jag_prec_t *prec = x;
	origin_t *o;

	if (!prec->completed || !(o = _origin_by_pid(prec->pid)))
		return SLURM_SUCCESS;
	prec->tres_data[TRES_ARRAY_FS_DISK].size_read = o->disk_read;
	prec->tres_data[TRES_ARRAY_FS_DISK].size_write = o->disk_write;
	prec->tres_data[TRES_ARRAY_PAGES].size_read = o->pages;
	return SLURM_SUCCESS;
}

static list_t *_get_precs(list_t *task_list, uint64_t cont_id,
			  jag_callbacks_t *callbacks)
{
	struct jobacctinfo *jobacct = list_peek(task_list);
	pid_t *pids = NULL, *tasks = NULL;
	int npids = 0, ntasks = 0, nfresh = 0;
	uint64_t vanished = n_vanished, unreadable = n_unreadable;
	origin_t *fresh;
	list_itr_t *itr;

	list_for_each(prec_list, _mark_completed, NULL);
	proctrack_g_get_pids(cont_id, &pids, &npids);
	if (!npids || !jobacct) {
		list_for_each(prec_list, _restore_ended, NULL);
		xfree(pids);
		return prec_list;
	}

	tasks = xcalloc(list_count(task_list), sizeof(pid_t));
	itr = list_iterator_create(task_list);
	while ((jobacct = list_next(itr)))
		tasks[ntasks++] = jobacct->pid;
	list_iterator_destroy(itr);
	jobacct = list_peek(task_list);

	fresh = xcalloc(npids, sizeof(*fresh));
	for (int i = 0; i < npids; i++) {
		jag_prec_t *prec = _measure(pids[i], jobacct->tres_count,
					    tasks, ntasks, fresh, &nfresh);

		if (!prec)
			continue;
		destroy_jag_prec(list_remove_first(prec_list, _find_prec,
						   &prec->pid));
		list_append(prec_list, prec);
	}
	list_for_each(prec_list, _restore_ended, NULL);
	/*
	 * A process whose first parent is no longer listed was re-parented
	 * (pids are sorted: proctrack lists them so, sorted again to be sure).
	 */
	qsort(pids, npids, sizeof(pid_t), _cmp_pid);
	for (int i = 0; i < nfresh; i++)
		if (!fresh[i].orphan && (fresh[i].task != fresh[i].pid) &&
		    !bsearch(&fresh[i].parent, pids, npids, sizeof(pid_t),
			     _cmp_pid))
			fresh[i].orphan = true;
	_update_origins(fresh, nfresh, time(NULL));
	if ((n_vanished != vanished) || (n_unreadable != unreadable))
		log_flag(JAG, "%s: skipped %"PRIu64" processes that vanished and %"PRIu64" that could not be read",
			 plugin_type, n_vanished - vanished,
			 n_unreadable - unreadable);
	xfree(fresh);
	xfree(tasks);
	xfree(pids);
	return prec_list;
}

static void _remember_task_cpu(pid_t task, double usec, double ssec)
{
	int i;

	for (i = 0; (i < ntask_cpus) && (task_cpus[i].task != task); i++)
		;
	if (i == ntask_cpus) {
		xrecalloc(task_cpus, ntask_cpus + 1, sizeof(*task_cpus));
		ntask_cpus++;
	}
	task_cpus[i].task = task;
	task_cpus[i].usec = usec;
	task_cpus[i].ssec = ssec;
}

/*
 * common_jag keeps whole seconds of the polled CPU times (user_cpu_sec); give
 * each task its microseconds too, so sstat and the final figure (the larger
 * of these and the task's rusage, jobacct_gather.c) lose no fraction.
 */
static void _set_cpu_usec(list_t *task_list)
{
	list_itr_t *itr = list_iterator_create(task_list);
	struct jobacctinfo *jobacct;

	while ((jobacct = list_next(itr))) {
		for (int i = 0; i < ntask_cpus; i++) {
			if (task_cpus[i].task != jobacct->pid)
				continue;
			jobacct->user_cpu_sec = (uint64_t) (task_cpus[i].usec /
							    USEC_IN_SEC);
			jobacct->user_cpu_usec = (uint32_t) ((uint64_t)
				task_cpus[i].usec % USEC_IN_SEC);
			jobacct->sys_cpu_sec = (uint64_t) (task_cpus[i].ssec /
							   USEC_IN_SEC);
			jobacct->sys_cpu_usec = (uint32_t) ((uint64_t)
				task_cpus[i].ssec % USEC_IN_SEC);
			break;
		}
	}
	list_iterator_destroy(itr);
}

/*
 * Add every live process attributed to task `pid` to its record: CPU, disk,
 * page-ins, virtual size and current footprint summed; the peak is the larger
 * of the summed footprint and the largest single peak. Exited processes are
 * dropped: their memory is gone, their CPU time is in the child times of the
 * process that reaped them if that is one of the job's; for one reaped outside
 * the job (re-parented) its last figures are kept for its task (_keep_ended)
 * and added here.
 */
static void _get_offspring_data(list_t *prec_list, jag_prec_t *ancestor,
				pid_t pid, jag_prec_t *permanent_anc)
{
	uint64_t peak = ancestor->tres_data[TRES_ARRAY_MEM].size_write;
	list_itr_t *itr = list_iterator_create(prec_list);
	jag_prec_t *prec;

	if (peak == INFINITE64)
		peak = 0;
	while ((prec = list_next(itr))) {
		if (prec->completed) {
			if (prec->pid != pid) {
				_keep_ended(prec);
				list_delete_item(itr);
			}
			continue;
		}
		if ((prec->pid == pid) || (prec->ppid != pid))
			continue;
		ancestor->usec += prec->usec;
		ancestor->ssec += prec->ssec;
		for (int i = 0; i < prec->tres_count; i++) {
			if (i == TRES_ARRAY_MEM) {
				_add(&ancestor->tres_data[i].size_read,
				     prec->tres_data[i].size_read);
				if (prec->tres_data[i].size_write != INFINITE64)
					peak = MAX(peak,
						   prec->tres_data[i].size_write);
				continue;
			}
			_add(&ancestor->tres_data[i].size_read,
			     prec->tres_data[i].size_read);
			_add(&ancestor->tres_data[i].size_write,
			     prec->tres_data[i].size_write);
		}
	}
	list_iterator_destroy(itr);
	for (int i = 0; i < ncarries; i++) {
		carry_t *c = &carries[i];

		if (c->task != pid)
			continue;
		ancestor->usec += c->usec;
		ancestor->ssec += c->ssec;
		if (c->disk_read)
			_add(&ancestor->tres_data[TRES_ARRAY_FS_DISK].size_read,
			     c->disk_read);
		if (c->disk_write)
			_add(&ancestor->tres_data[TRES_ARRAY_FS_DISK].size_write,
			     c->disk_write);
		if (c->pages)
			_add(&ancestor->tres_data[TRES_ARRAY_PAGES].size_read,
			     c->pages);
	}
	_remember_task_cpu(pid, ancestor->usec, ancestor->ssec);
	if (ancestor->tres_data[TRES_ARRAY_MEM].size_read != INFINITE64)
		ancestor->tres_data[TRES_ARRAY_MEM].size_write =
			MAX(peak, ancestor->tres_data[TRES_ARRAY_MEM].size_read);
}

extern int init(void)
{
	if (running_in_slurmstepd()) {
		if (mach_timebase_info(&timebase) != KERN_SUCCESS ||
		    !timebase.numer || !timebase.denom) {
			error("%s: mach_timebase_info failed: CPU times cannot be converted",
			      plugin_type);
			return SLURM_ERROR;
		}
		/* usec/ssec are kept in microseconds. */
		jag_common_init(1000000);
		debug("%s: timebase %u/%u ns per unit", plugin_type,
		      timebase.numer, timebase.denom);
	}
	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
extern int fini(void)
#else /* SLURM_VERSION */
extern void fini(void)
#endif /* SLURM_VERSION */
{
	if (running_in_slurmstepd()) {
		acct_gather_energy_fini();
		if (n_unreadable || n_unattributed)
			info("%s: %"PRIu64" processes could not be read, %"PRIu64" vanished while read, %"PRIu64" could not be attributed to a task (counted in the first)",
			     plugin_type, n_unreadable, n_vanished,
			     n_unattributed);
	}
	xfree(origins);
	norigins = 0;
	xfree(carries);
	ncarries = 0;
	xfree(task_cpus);
	ntask_cpus = 0;
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
	return SLURM_SUCCESS;
#endif /* SLURM_VERSION */
}

extern void jobacct_gather_p_poll_data(list_t *task_list, int64_t cont_id,
				       bool profile)
{
	static jag_callbacks_t callbacks;

	xassert(running_in_slurmstepd());
	memset(&callbacks, 0, sizeof(jag_callbacks_t));
	callbacks.get_precs = _get_precs;
	callbacks.get_offspring_data = _get_offspring_data;
	jag_common_poll_data(task_list, cont_id, &callbacks, profile);
	if (task_list)
		_set_cpu_usec(task_list);
}

extern int jobacct_gather_p_endpoll(void)
{
	jag_common_fini();
	return SLURM_SUCCESS;
}

extern int jobacct_gather_p_add_task(pid_t pid, jobacct_id_t *jobacct_id)
{
	return SLURM_SUCCESS;
}
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26,5,0)

/* The job-wide figures are the polls' (there is no job container to read). */
extern void jobacct_gather_p_stat_job(jobacctinfo_t *jobacct)
{
	return;
}
#endif /* SLURM_VERSION */
