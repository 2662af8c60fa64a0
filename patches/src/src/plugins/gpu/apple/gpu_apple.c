/*****************************************************************************\
 *  gpu_apple.c - AutoDetect=apple: the GPU of an Apple silicon Mac
 *****************************************************************************
 *  Copyright (C) slurm-on-mac developers.
 *
 *  This file is part of Slurm, a resource management program, and is
 *  distributed under the terms of the GNU General Public License, version 2
 *  or (at your option) any later version, as Slurm is (see COPYING).
\*****************************************************************************/

#define _GNU_SOURCE

#include <inttypes.h>
#include <sys/types.h>
#include <sys/sysctl.h>

#include "../common/gpu_common.h"
#include "apple_iokit.h"

/*
 * An Apple GPU has no device file, while Slurm requires a File for every GPU
 * and stat()s it. /dev/null exists on every Mac and names no device: it is a
 * placeholder, and it isolates nothing. macOS offers no way to keep the
 * processes of other jobs off the GPU (Metal has no device cgroup and no
 * visibility variable), so any process on the node can use it whether or not
 * its job was allocated gres/gpu. Slurm still counts and schedules it.
 */
#define APPLE_GPU_FILE "/dev/null"

/* Apple silicon Macs have one GPU; a few more are read to say so. */
#define APPLE_GPU_MAX 4

const char plugin_name[] = "GPU Apple plugin";
const char plugin_type[] = "gpu/apple";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* The unified memory the GPU shares with the CPUs, in MB (hw.memsize). */
static uint64_t _unified_memory_mb(void)
{
	uint64_t mem = 0;
	size_t len = sizeof(mem);

	if (sysctlbyname("hw.memsize", &mem, &len, NULL, 0) ||
	    (len != sizeof(mem)))
		return 0;
	return mem / (1024 * 1024);
}

static list_t *_get_system_gpu_list_apple(node_config_load_t *node_conf)
{
	apple_gpu_t gpus[APPLE_GPU_MAX];
	list_t *gres_list_system;
	char *type;
	int kr = 0;
	int found = apple_gpu_probe(gpus, APPLE_GPU_MAX, &kr);
	gres_slurmd_conf_t gres_slurmd_conf = {
		.config_flags = GRES_CONF_AUTODETECT,
		.count = 1,
		.cpu_cnt = node_conf->cpu_cnt,
		.name = "gpu",
		.file = APPLE_GPU_FILE,
	};

	if (found < 0) {
		error("AutoDetect=apple: IOKit could not list the AGXAccelerator services (kern_return_t 0x%x): no GPU detected",
		      kr);
		return NULL;
	}
	if (!found) {
		info("AutoDetect=apple: this machine has no Apple GPU (no IOKit AGXAccelerator service): no GPU detected");
		return NULL;
	}
	if (found > 1)
		error("AutoDetect=apple: %d AGXAccelerator services; an Apple silicon Mac has one GPU, only the first is used",
		      found);

	/* "Apple M4 Max" -> gpu:apple_m4_max */
	type = xstrdup(gpus[0].model[0] ? gpus[0].model : "apple");
	gpu_common_underscorify_tolower(type);
	gres_slurmd_conf.type_name = type;

	info("AutoDetect=apple: %s, %"PRId64" GPU cores, %"PRIu64" MB unified memory shared with the CPUs (hw.memsize): gpu:%s:1, File=%s (a placeholder: macOS cannot isolate a GPU)",
	     gpus[0].model[0] ? gpus[0].model : "(no model)",
	     gpus[0].cores, _unified_memory_mb(), type, APPLE_GPU_FILE);

	gres_list_system = list_create(destroy_gres_slurmd_conf);
	add_gres_to_list(gres_list_system, &gres_slurmd_conf);
	xfree(type);
	return gres_list_system;
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
	debug("unloading %s", plugin_name);
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)

	return SLURM_SUCCESS;
#endif /* SLURM_VERSION */
}

extern void gpu_p_get_device_count(uint32_t *device_count)
{
	apple_gpu_t gpus[APPLE_GPU_MAX];
	int kr = 0;
	int found = apple_gpu_probe(gpus, APPLE_GPU_MAX, &kr);

	*device_count = (found > 0) ? 1 : 0;
}

extern list_t *gpu_p_get_system_gpu_list(node_config_load_t *node_conf)
{
	xassert(node_conf);

	return _get_system_gpu_list_apple(node_conf);
}

/* No clock control: Apple GPUs take no frequency requests. */
extern void gpu_p_step_hardware_init(bitstr_t *usable_gpus, char *tres_freq)
{
	if (tres_freq && xstrcasestr(tres_freq, "gpu"))
		info("--gpu-freq is not supported on Apple GPUs: ignored");
}

extern void gpu_p_step_hardware_fini(void)
{
	return;
}

extern char *gpu_p_test_cpu_conv(char *cpu_range)
{
	return NULL;
}

extern int gpu_p_energy_read(uint32_t dv_ind, gpu_status_t *gpu)
{
	return SLURM_SUCCESS;
}

/* Per-process GPU time has no public macOS API: nothing is accounted. */
extern int gpu_p_usage_read(pid_t pid, acct_gather_data_t *data)
{
	return SLURM_SUCCESS;
}
