/*****************************************************************************\
 *  apple_iokit.h - Apple GPUs as IOKit's registry describes them
 *****************************************************************************
 *  Copyright (C) slurm-on-mac developers.
 *
 *  This file is part of Slurm, a resource management program, and is
 *  distributed under the terms of the GNU General Public License, version 2
 *  or (at your option) any later version, as Slurm is (see COPYING).
\*****************************************************************************/

#ifndef _GPU_APPLE_IOKIT_H
#define _GPU_APPLE_IOKIT_H

#include <stdint.h>

/* One Apple GPU: an IOKit service of class AGXAccelerator. */
typedef struct {
	char model[128];	/* property "model" ("Apple M4 Max"), "" if absent */
	int64_t cores;		/* property "gpu-core-count", -1 if absent */
} apple_gpu_t;

/*
 * Look up the AGXAccelerator services (IOServiceMatching +
 * IOServiceGetMatchingServices) and read "model" and "gpu-core-count" of at
 * most max of them into gpus.
 *
 * RET the number of services found (0: no Apple GPU), or -1 when IOKit
 * failed, with its kern_return_t in *kr.
 *
 * This file includes IOKit and CoreFoundation only, never a Slurm header:
 * the two sets of headers are kept apart.
 */
extern int apple_gpu_probe(apple_gpu_t *gpus, int max, int *kr);

#endif /* !_GPU_APPLE_IOKIT_H */
