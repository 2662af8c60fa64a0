/*****************************************************************************\
 *  task_darwin.c - what macOS can honestly offer a task plugin.
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
 * macOS cannot bind threads to cores (THREAD_AFFINITY_POLICY is
 * KERN_NOT_SUPPORTED on arm64) nor memory to NUMA nodes, and has no hard
 * memory cap for a process tree. This plugin:
 *  - says so: a --cpu-bind or --mem-bind that asks for binding is accepted,
 *    logged by slurmstepd and reported on the first task's stderr as "not
 *    enforced on macOS", never silently;
 *  - offers macOS's background class on request: a task whose environment has
 *    SLURM_DARWIN_BACKGROUND=1 runs under setpriority(PRIO_DARWIN_PROCESS, 0,
 *    PRIO_DARWIN_BG) (lower CPU priority, efficiency cores on Apple Silicon,
 *    throttled disk and network I/O; inherited by its children); any other
 *    value than 0 or 1 stops the task with a message naming the variable;
 *  - reports a step killed by JobAcctGatherParams=OverMemoryKill as out of
 *    memory (post_term returns ENOMEM), so the job ends OUT_OF_MEMORY rather
 *    than FAILED or CANCELLED;
 *  - logs one line when OverMemoryKill cannot work: no memory limit for the
 *    step, or no accounting poll.
 * Nice values need nothing here: PropagatePrioProcess works on macOS.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "src/common/env.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/slurm_resource_info.h"
#include "src/common/xstring.h"
#include "src/interfaces/acct_gather.h"
#include "src/interfaces/jobacct_gather.h"
#include "src/interfaces/task.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

/* Required Slurm plugin symbols: */
const char plugin_name[] = "task macOS plugin";
const char plugin_type[] = "task/darwin";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define BACKGROUND_ENV "SLURM_DARWIN_BACKGROUND"

/* Binding flags that ask for something (not "none", "verbose" or params). */
static cpu_bind_type_t _cpu_binding(cpu_bind_type_t type)
{
	return type & ~(CPU_BIND_VERBOSE | CPU_BIND_NONE |
			CPU_BIND_T_TASK_PARAMS_MASK | OOM_KILL_STEP);
}

static mem_bind_type_t _mem_binding(mem_bind_type_t type)
{
	return type & ~(MEM_BIND_VERBOSE | MEM_BIND_NONE);
}

/* --cpu-freq was given (min, max or governor): macOS has no such control. */
static bool _cpu_freq_asked(stepd_step_rec_t *step)
{
	uint32_t v[] = { step->cpu_freq_min, step->cpu_freq_max,
			  step->cpu_freq_gov };

	for (int i = 0; i < 3; i++)
		if (v[i] && (v[i] != NO_VAL))
			return true;
	return false;
}

/* Why OverMemoryKill enforces nothing for this step, or NULL. */
static const char *_oom_kill_gap(stepd_step_rec_t *step)
{
	if (!slurm_conf.job_acct_oom_kill)
		return NULL;
	if (!xstrcasecmp(slurm_conf.job_acct_gather_type,
			 "jobacct_gather/none") ||
	    !slurm_conf.job_acct_gather_type)
		return "JobAcctGatherType=jobacct_gather/none never polls";
	if (!acct_gather_parse_freq(PROFILE_TASK,
				    slurm_conf.job_acct_gather_freq))
		return "JobAcctGatherFrequency has task=0 (no poll)";
	if (step && !step->step_mem && !step->job_mem)
		return "the step has no memory limit (no --mem, and no DefMemPerCPU/DefMemPerNode with memory as a consumable resource)";
	return NULL;
}

extern int init(void)
{
	const char *gap;

	if (running_in_slurmd() && (gap = _oom_kill_gap(NULL)))
		error("%s: JobAcctGatherParams=OverMemoryKill enforces nothing on this node: %s",
		      plugin_type, gap);
	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
extern int fini(void)
#else /* SLURM_VERSION */
extern void fini(void)
#endif /* SLURM_VERSION */
{
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
	return SLURM_SUCCESS;
#endif /* SLURM_VERSION */
}

extern int task_p_slurmd_batch_request(batch_job_launch_msg_t *req)
{
	return SLURM_SUCCESS;
}

extern int task_p_slurmd_launch_request(launch_tasks_request_msg_t *req,
					uint32_t node_id, char **err_msg)
{
	return SLURM_SUCCESS;
}

extern int task_p_pre_setuid(stepd_step_rec_t *step)
{
	const char *gap = _oom_kill_gap(step);
	char type[128];

	if (gap)
		error("%s: %ps: JobAcctGatherParams=OverMemoryKill enforces nothing: %s",
		      plugin_type, &step->step_id, gap);
	if (_cpu_binding(step->cpu_bind_type)) {
		slurm_sprint_cpu_bind_type(type, step->cpu_bind_type);
		info("%s: %ps: --cpu-bind=%s%s%s is not enforced on macOS (no thread affinity)",
		     plugin_type, &step->step_id, type,
		     step->cpu_bind ? ":" : "",
		     step->cpu_bind ? step->cpu_bind : "");
	}
	if (_mem_binding(step->mem_bind_type)) {
		char *mtype = slurm_xstr_mem_bind_type(step->mem_bind_type);

		info("%s: %ps: --mem-bind=%s is not enforced on macOS (no NUMA binding)",
		     plugin_type, &step->step_id, mtype);
		xfree(mtype);
	}
	if (_cpu_freq_asked(step))
		info("%s: %ps: --cpu-freq is not enforced on macOS (no CPU frequency control)",
		     plugin_type, &step->step_id);
	return SLURM_SUCCESS;
}

extern int task_p_pre_launch_priv(stepd_step_rec_t *step, uint32_t node_tid,
				  uint32_t global_tid)
{
	return SLURM_SUCCESS;
}

/* Runs in the task, as the user, before exec; stderr is the task's. */
extern int task_p_pre_launch(stepd_step_rec_t *step)
{
	char *bg = getenvp(step->env, BACKGROUND_ENV);

	if (step->envtp && (step->envtp->localid == 0)) {
		if (_cpu_binding(step->cpu_bind_type))
			fprintf(stderr, "%s: --cpu-bind is not enforced on macOS (no thread affinity): the tasks run unbound\n",
				plugin_type);
		if (_mem_binding(step->mem_bind_type))
			fprintf(stderr, "%s: --mem-bind is not enforced on macOS (no NUMA binding)\n",
				plugin_type);
		if (_cpu_freq_asked(step))
			fprintf(stderr, "%s: --cpu-freq is not enforced on macOS (no CPU frequency control)\n",
				plugin_type);
	}
	if (!bg || !xstrcmp(bg, "0"))
		return SLURM_SUCCESS;
	if (xstrcmp(bg, "1")) {
		fprintf(stderr, "%s: %s=%s: expected 1 (run the task in macOS's background class: efficiency cores, throttled I/O) or 0\n",
			plugin_type, BACKGROUND_ENV, bg);
		error("%s: %ps: %s=%s is neither 0 nor 1", plugin_type,
		      &step->step_id, BACKGROUND_ENV, bg);
		return SLURM_ERROR;
	}
	if (setpriority(PRIO_DARWIN_PROCESS, 0, PRIO_DARWIN_BG)) {
		fprintf(stderr, "%s: %s=1: setpriority(PRIO_DARWIN_PROCESS, PRIO_DARWIN_BG): %s\n",
			plugin_type, BACKGROUND_ENV, strerror(errno));
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

/*
 * OverMemoryKill cancels the step through slurmctld; Slurm records
 * OUT_OF_MEMORY only when a task plugin reports ENOMEM here.
 */
extern int task_p_post_term(stepd_step_rec_t *step,
			    stepd_step_task_info_t *task)
{
	if (jobacct_gather_mem_limit_exceeded()) {
		debug("%s: %ps task %u: killed for exceeding its memory limit",
		      plugin_type, &step->step_id, task->id);
		return ENOMEM;
	}
	return SLURM_SUCCESS;
}

extern int task_p_post_step(stepd_step_rec_t *step)
{
	return SLURM_SUCCESS;
}

extern int task_p_add_pid(pid_t pid)
{
	return SLURM_SUCCESS;
}
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26,5,0)

/*
 * A job's memory changed (resize): OverMemoryKill's limit is jobacct_gather's,
 * set once at step start, so hand it the new one; the next poll enforces it.
 */
extern int task_p_update_mem_limit(stepd_step_rec_t *step, uint64_t new_job_mem,
				   uint64_t new_step_mem)
{
	uint64_t limit = new_step_mem ? new_step_mem : new_job_mem;

	if (!slurm_conf.job_acct_oom_kill || !limit)
		return SLURM_SUCCESS;
	return jobacct_gather_set_mem_limit(&step->step_id, limit);
}
#endif /* SLURM_VERSION */
