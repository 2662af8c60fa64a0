/* Stand-in for the <magic.h> that Slurm's interfaces/cgroup.h includes on Apple, FreeBSD
 * and NetBSD (DARWIN-CATALOG A13). The macOS SDK has none; Slurm uses its *_MAGIC
 * constants only under WITH_CGROUP, which configure turns off on macOS, so nothing needs
 * declaring. (Homebrew's libmagic installs an unrelated magic.h: this one must come first
 * on the include path.) */
#ifndef SLURM_SHIM_COMPAT_MAGIC_H
#define SLURM_SHIM_COMPAT_MAGIC_H
#endif
