/* Darwin personality: macOS's <sys/mount.h> also declares statfs() and struct statfs,
 * which glibc keeps in <sys/vfs.h>; Slurm's interfaces/cgroup.h includes only the former on
 * __APPLE__. */
#include_next <sys/mount.h>
#include <sys/vfs.h>
