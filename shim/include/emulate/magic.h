/* Darwin personality: the <magic.h> that Slurm's interfaces/cgroup.h includes on __APPLE__.
 * On a Mac the cgroup plugins are not built (configure: no cgroup on darwin), and the
 * stand-in of the macOS lane (shim/include/compat/magic.h) declares nothing. Configure
 * still builds them in the darwin personality (it decides cgroup support from the host
 * triple), so this one gives them Linux's file-system magic numbers; they never run on a
 * Mac. It also keeps libmagic's unrelated <magic.h> (/usr/include) out. */
#ifndef SLURM_SHIM_EMULATE_MAGIC_H
#define SLURM_SHIM_EMULATE_MAGIC_H
#include <linux/magic.h>
#endif
