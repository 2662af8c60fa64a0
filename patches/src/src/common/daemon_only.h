/*****************************************************************************\
 *  daemon_only.h - mark functions that only one daemon defines
 *****************************************************************************
 *  This file is part of Slurm, a resource management program.
 *  For details, see <https://slurm.schedmd.com/>.
 *  Please also read the included file: DISCLAIMER.
 *
 *  Slurm is free software; you can redistribute it and/or modify it under
 *  the terms of the GNU General Public License as published by the Free
 *  Software Foundation; either version 2 of the License, or (at your option)
 *  any later version.
\*****************************************************************************/

#ifndef _DAEMON_ONLY_H
#define _DAEMON_ONLY_H

/*
 * DAEMON_ONLY marks the declaration of a function that only one daemon
 * (slurmctld or slurmd) defines but that plugins loaded by other processes
 * reference; each process calls only its own half (src/common/plugin.c loads
 * plugins with RTLD_LAZY for this). ELF resolves such calls lazily, at the
 * first call. A Mach-O plugin is bound when dyld loads it (chained fixups):
 * on macOS the reference is a weak import, so the plugin loads everywhere and
 * the address is NULL only in processes that never make the call.
 */
#ifdef __APPLE__
#define DAEMON_ONLY __attribute__((weak_import))
#else
#define DAEMON_ONLY
#endif

#endif
