/* lint fixture (written for the tests, not Slurm code): descriptor loops and paths */
#include <sys/resource.h>
#include <unistd.h>

static void slow_closeall(int fd)
{
	struct rlimit rlim;

	if (getrlimit(RLIMIT_NOFILE, &rlim) < 0)
		rlim.rlim_cur = 4096;
	for (; fd < rlim.rlim_cur; fd++) /* finding: fd-loop rlim_cur */
		close(fd);
}

static int soft_limit = 0;

static void init_limit(void)
{
	soft_limit = (int) sysconf(_SC_OPEN_MAX);
}

static void close_from(int fd)
{
	while (fd < soft_limit) /* finding: fd-loop soft_limit */
		close(fd++);
}

static int bounded = 0;

static void init_bounded(void)
{
	bounded = (int) sysconf(_SC_OPEN_MAX);
	bounded = getdtablesize();
}

static void close_bounded(int fd)
{
	for (; fd < bounded; fd++) /* bounded: last assignment is a call */
		close(fd);
}

extern void closeall(int fd)
{
	const char *name = "/proc/self/fd"; /* finding: os-path */
#if defined(__linux__)
	const char *linux_only = "/proc/self/fd"; /* guarded */
#elif defined(__APPLE__)
	const char *mac = "/var/run"; /* not a Linux path */
#else
	const char *other = "/sys/kernel"; /* guarded: macOS takes the #elif */
#endif
#ifndef __APPLE__
	const char *not_mac = "/run/slurm"; /* guarded */
#endif
#if HAVE_SOMETHING_UNKNOWN
	const char *maybe = "/run/maybe"; /* finding: unknown counts as compiled */
#endif
	/* "/proc/in/a/comment" is no finding */
	error("could not read /proc/self/fd"); /* not at the start: no finding */
	close_range(fd, ~0U, 0); /* finding: linux-api */
#ifdef PR_SET_DUMPABLE
	prctl(PR_SET_DUMPABLE, 1); /* guarded: no <sys/prctl.h> on macOS */
#endif
}
