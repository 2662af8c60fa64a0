/* lint fixture (not Slurm code): memory rlimits */
#include <sys/resource.h>
#define SLURM_RLIMIT_VSIZE RLIMIT_AS

extern void set_limits(pid_t pid, struct rlimit *r)
{
	if (_prlimit(pid, RLIMIT_RSS, r, NULL)) {
		fatal("rss"); /* finding: rlimit-fatal RLIMIT_RSS */
	}
	if (setrlimit(SLURM_RLIMIT_VSIZE, r))
		fatal("vsize"); /* finding: through the #define */
	if (_prlimit(pid, RLIMIT_RSS, NULL, r)) /* a read: no finding */
		fatal("read");
	if (setrlimit(RLIMIT_NOFILE, r))
		fatal("nofile"); /* not a memory limit */
	if (setrlimit(RLIMIT_AS, r)) {
#if defined(__APPLE__)
		verbose("not honoured on macOS");
#else
		fatal("as"); /* guarded: macOS has the verbose() branch */
#endif
	}
}
