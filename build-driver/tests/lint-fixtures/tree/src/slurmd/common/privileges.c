/* lint fixture (not Slurm code): setgroups */
#include <limits.h>
#include <unistd.h>

extern int unbounded(int ngids, gid_t *gids)
{
	return setgroups(ngids, gids); /* finding */
}

extern int bounded(int ngids, gid_t *gids)
{
	if (ngids > NGROUPS_MAX)
		ngids = NGROUPS_MAX;
	return setgroups(ngids, gids);
}

extern int drop_all(void)
{
	return setgroups(0, NULL);
}
