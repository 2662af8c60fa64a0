/* lint fixture (not Slurm code): struct members */
#include <pthread.h>

typedef struct {
	int x;
	pthread_mutex_t state_mutex;
	pthread_cond_t state_cond;
	pthread_cond_t io_cond; /* finding */
	pthread_mutex_t io_mutex; /* finding */
	pthread_mutex_t locks[4];
	pthread_mutex_t designated;
	struct {
		pthread_rwlock_t inner;
	} nested;
} stepd_step_rec_t;

#define STEP_INITIALIZER { .designated = PTHREAD_MUTEX_INITIALIZER }
