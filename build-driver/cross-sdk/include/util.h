/* util.h: minimal declarations for the zig macOS cross lane (slurm-on-mac).
 * Written from the openpty(3) manual page; see build-driver/cross-sdk/README.md. The
 * functions are exported by macOS's libSystem. */
#ifndef SLURM_ON_MAC_CROSS_UTIL_H
#define SLURM_ON_MAC_CROSS_UTIL_H

#include <sys/types.h>
#include <termios.h>
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

int openpty(int *amaster, int *aslave, char *name, struct termios *termp,
	    struct winsize *winp);
pid_t forkpty(int *amaster, char *name, struct termios *termp, struct winsize *winp);
int login_tty(int fd);

#ifdef __cplusplus
}
#endif

#endif
