/* Stand-in for Linux's <pty.h> on macOS (DARWIN-CATALOG A15). macOS declares openpty(),
 * forkpty() and login_tty() in <util.h> and exports them from libSystem; it has no <pty.h>,
 * so Slurm's configure leaves HAVE_PTY_H undefined and `srun --pty` is refused. The driver
 * puts this directory on configure's include path for macOS targets (and on make's, with
 * the shim header), so the probe finds this file, HAVE_PTY_H is defined, and slurmstepd's
 * pty code (src/slurmd/slurmstepd/io.c, mgr.c) and srun's option are compiled unchanged.
 * Nothing is emulated: the functions are the system's. */
#ifndef SLURM_SHIM_COMPAT_PTY_H
#define SLURM_SHIM_COMPAT_PTY_H
#include <util.h>
#endif
