/* lint fixture (not Slurm code): the initialisations the header's members get */
#include "slurmstepd_job.h"

extern stepd_step_rec_t *create(void)
{
	stepd_step_rec_t *step = xmalloc(sizeof(*step));

	slurm_cond_init(&step->state_cond, NULL);
	slurm_mutex_init(&step->state_mutex);
	for (int i = 0; i < 4; i++)
		slurm_mutex_init(&step->locks[i]);
	step->nested.inner = (pthread_rwlock_t) PTHREAD_RWLOCK_INITIALIZER;
	return step;
}
