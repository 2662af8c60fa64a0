/* Darwin personality: macOS's <unistd.h> also declares getpeereid() (BSD), which
 * slurmstepd's req.c calls on __APPLE__; glibc has none. The shim answers it with
 * SO_PEERCRED (shim/src/emulate/getpeereid.rs). */
#include_next <unistd.h>
#ifndef SLURM_SHIM_EMULATE_UNISTD_H
#define SLURM_SHIM_EMULATE_UNISTD_H
int getpeereid(int fd, uid_t *euid, gid_t *egid);
#endif
