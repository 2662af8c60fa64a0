/* lint fixture (not Slurm code): file-scope pthread objects */
#include <pthread.h>

static pthread_mutex_t max_delay_lock; /* finding */
static pthread_mutex_t good_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cond, other_cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t zeroed = { 0 }; /* finding: zero is not an initialiser */
extern pthread_mutex_t declared_elsewhere;
static pthread_mutex_t *pointer_only;
static pthread_once_t once; /* finding */

static void start(void)
{
	pthread_mutex_t local_ok;
	pthread_cond_t local_bad; /* finding */

	slurm_cond_init(&init_cond, NULL);
	pthread_mutex_init(&local_ok, NULL);
	(void) local_bad;
	(void) pointer_only;
}
