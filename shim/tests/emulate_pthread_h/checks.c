/* Checks of the darwin personality's pthread model (shim/src/emulate/pthread_*.rs and
 * shim/include/emulate/pthread.h), compiled by shim/tests/emulate_pthread_h.rs twice: with
 * the personality's flags, and natively. Each CHECK names the macOS answer (libpthread-539)
 * and glibc's; the program prints "ok"/"FAIL" per check and exits with the failure count.
 * Prepended by the test: _GNU_SOURCE, <stddef.h>, <pthread.h>, layout _Static_asserts. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef SLURM_SHIM_EMULATE_DARWIN
#define PICK(darwin, glibc) (darwin)
#else
#define PICK(darwin, glibc) (glibc)
#endif

static int failures;

static void check(const char *name, long got, long want)
{
	if (got == want) {
		printf("ok %s = %ld\n", name, got);
	} else {
		printf("FAIL %s = %ld, want %ld\n", name, got, want);
		failures++;
	}
	fflush(stdout);
}

#define CHECK(name, got, darwin, glibc) check((name), (got), PICK((darwin), (glibc)))

/* A check that only the darwin personality can run (glibc would block or crash). */
#ifdef SLURM_SHIM_EMULATE_DARWIN
#define CHECK_DARWIN_ONLY(name, got, darwin, why) check((name), (got), (darwin))
#else
#define CHECK_DARWIN_ONLY(name, got, darwin, why) \
	printf("not run here: %s (%s)\n", (name), (why))
#endif

static struct timespec after_ms(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += (ms % 1000) * 1000000L;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

/* (a) a never-initialised mutex in zeroed static storage */
static pthread_mutex_t zeroed_mutex;

static void zeroed_static_mutex(void)
{
	struct timespec soon = after_ms(10);
	CHECK("zeroed static mutex: lock", pthread_mutex_lock(&zeroed_mutex), EINVAL, 0);
	CHECK("zeroed static mutex: unlock", pthread_mutex_unlock(&zeroed_mutex), EINVAL, 0);
	CHECK("zeroed static mutex: trylock", pthread_mutex_trylock(&zeroed_mutex), EINVAL, 0);
	CHECK("zeroed static mutex: unlock after trylock", pthread_mutex_unlock(&zeroed_mutex),
	      EINVAL, 0);
	CHECK("zeroed static mutex: timedlock", pthread_mutex_timedlock(&zeroed_mutex, &soon),
	      EINVAL, 0);
	CHECK("zeroed static mutex: unlock after timedlock", pthread_mutex_unlock(&zeroed_mutex),
	      EINVAL, 0);
	CHECK("zeroed static mutex: destroy", pthread_mutex_destroy(&zeroed_mutex), EINVAL, 0);
	pthread_mutex_t *volatile null_mutex = NULL;
	(void) null_mutex;
	CHECK_DARWIN_ONLY("NULL mutex: lock", pthread_mutex_lock(null_mutex), EINVAL,
			  "glibc dereferences it");
}

/* (b) statically initialised mutexes work, of every type */
static pthread_mutex_t static_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck_mutex = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t adaptive_mutex = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

static void static_mutexes(void)
{
	CHECK("static mutex: lock", pthread_mutex_lock(&static_mutex), 0, 0);
	CHECK("static mutex: trylock while held", pthread_mutex_trylock(&static_mutex), EBUSY,
	      EBUSY);
	CHECK("static mutex: destroy while held", pthread_mutex_destroy(&static_mutex), EBUSY,
	      EBUSY);
	CHECK("static mutex: init while held (macOS never refuses)",
	      pthread_mutex_init(&static_mutex, NULL), 0, 0);
	CHECK("static mutex: trylock after re-init", pthread_mutex_trylock(&static_mutex), 0, 0);
	CHECK("static mutex: unlock", pthread_mutex_unlock(&static_mutex), 0, 0);
	CHECK("static mutex: destroy", pthread_mutex_destroy(&static_mutex), 0, 0);
	/* glibc marks a destroyed mutex with __kind = -1, which its lock refuses too. */
	CHECK("destroyed mutex: lock", pthread_mutex_lock(&static_mutex), EINVAL, EINVAL);
	CHECK("destroyed mutex: destroy again", pthread_mutex_destroy(&static_mutex), EINVAL, 0);
	CHECK("destroyed mutex: init", pthread_mutex_init(&static_mutex, NULL), 0, 0);
	CHECK("re-initialised mutex: lock", pthread_mutex_lock(&static_mutex), 0, 0);
	CHECK("re-initialised mutex: unlock", pthread_mutex_unlock(&static_mutex), 0, 0);

	CHECK("recursive static mutex: lock", pthread_mutex_lock(&recursive_mutex), 0, 0);
	CHECK("recursive static mutex: lock again", pthread_mutex_lock(&recursive_mutex), 0, 0);
	CHECK("recursive static mutex: unlock", pthread_mutex_unlock(&recursive_mutex), 0, 0);
	CHECK("recursive static mutex: unlock again", pthread_mutex_unlock(&recursive_mutex), 0, 0);
	CHECK("recursive static mutex: unlock not held", pthread_mutex_unlock(&recursive_mutex),
	      EPERM, EPERM);
	CHECK("errorcheck static mutex: lock", pthread_mutex_lock(&errorcheck_mutex), 0, 0);
	CHECK("errorcheck static mutex: relock", pthread_mutex_lock(&errorcheck_mutex), EDEADLK,
	      EDEADLK);
	CHECK("errorcheck static mutex: trylock held by self",
	      pthread_mutex_trylock(&errorcheck_mutex), EBUSY, EBUSY);
	CHECK("errorcheck static mutex: unlock", pthread_mutex_unlock(&errorcheck_mutex), 0, 0);
	CHECK("errorcheck static mutex: unlock not held", pthread_mutex_unlock(&errorcheck_mutex),
	      EPERM, EPERM);
	CHECK("adaptive static mutex: lock", pthread_mutex_lock(&adaptive_mutex), 0, 0);
	CHECK("adaptive static mutex: unlock", pthread_mutex_unlock(&adaptive_mutex), 0, 0);

	pthread_mutexattr_t robust;
	pthread_mutex_t m;
	pthread_mutexattr_init(&robust);
	pthread_mutexattr_setrobust(&robust, PTHREAD_MUTEX_ROBUST);
	int r = pthread_mutex_init(&m, &robust);
	CHECK("robust mutex: init (macOS has none)", r, EINVAL, 0);
	if (r == 0)
		pthread_mutex_destroy(&m);
	pthread_mutexattr_destroy(&robust);
}

/* (c) struct copies of the static initialisers, as Slurm's conmgr and signals.c do */
static const pthread_mutex_t mutex_template = PTHREAD_MUTEX_INITIALIZER;
static const pthread_cond_t cond_template = PTHREAD_COND_INITIALIZER;
static const pthread_rwlock_t rwlock_template = PTHREAD_RWLOCK_INITIALIZER;

struct with_locks {
	int x;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	pthread_rwlock_t lock;
};

static void struct_copies(void)
{
	pthread_mutex_t m = mutex_template;
	pthread_cond_t c = cond_template;
	pthread_rwlock_t l = rwlock_template;
	struct with_locks s = {
		.x = 1,
		.mutex = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
		.lock = PTHREAD_RWLOCK_INITIALIZER,
	};
	struct with_locks t;

	CHECK("copied mutex initialiser: lock", pthread_mutex_lock(&m), 0, 0);
	CHECK("copied mutex initialiser: unlock", pthread_mutex_unlock(&m), 0, 0);
	CHECK("copied cond initialiser: signal", pthread_cond_signal(&c), 0, 0);
	CHECK("copied rwlock initialiser: rdlock", pthread_rwlock_rdlock(&l), 0, 0);
	CHECK("copied rwlock initialiser: unlock", pthread_rwlock_unlock(&l), 0, 0);
	l = (pthread_rwlock_t) PTHREAD_RWLOCK_INITIALIZER;
	CHECK("compound-literal rwlock: wrlock", pthread_rwlock_wrlock(&l), 0, 0);
	CHECK("compound-literal rwlock: unlock", pthread_rwlock_unlock(&l), 0, 0);
	t = s;
	CHECK("designated member mutex, struct copied: lock", pthread_mutex_lock(&t.mutex), 0, 0);
	CHECK("designated member mutex, struct copied: unlock", pthread_mutex_unlock(&t.mutex), 0,
	      0);
	CHECK("designated member cond: broadcast", pthread_cond_broadcast(&t.cond), 0, 0);
	CHECK("designated member rwlock: trywrlock", pthread_rwlock_trywrlock(&t.lock), 0, 0);
	CHECK("designated member rwlock: unlock", pthread_rwlock_unlock(&t.lock), 0, 0);
}

/* (d) xmalloc'd memory (Slurm's xmalloc is calloc): a never-initialised member, and memory
 * freed without destroy and handed out again zeroed. Larger than glibc's tcache sizes, as
 * slurmstepd's step record is, so calloc gets the freed chunk back. */
struct step {
	char name[2048];
	pthread_mutex_t io_mutex;
	pthread_cond_t io_cond;
	pthread_rwlock_t lock;
};

static void zeroed_heap_objects(void)
{
	struct step *a = calloc(1, sizeof(*a));
	struct step *b;
	int r;
	struct timespec past = { 1, 0 };

	r = pthread_mutex_lock(&a->io_mutex);
	CHECK("never-initialised member (io_mutex): lock", r, EINVAL, 0);
	if (r == 0)
		pthread_mutex_unlock(&a->io_mutex);
	CHECK("init member mutex", pthread_mutex_init(&a->io_mutex, NULL), 0, 0);
	CHECK("init member cond", pthread_cond_init(&a->io_cond, NULL), 0, 0);
	CHECK("init member rwlock", pthread_rwlock_init(&a->lock, NULL), 0, 0);
	CHECK("initialised member: lock", pthread_mutex_lock(&a->io_mutex), 0, 0);
	CHECK("initialised member: timedwait", pthread_cond_timedwait(&a->io_cond, &a->io_mutex,
								       &past),
	      ETIMEDOUT, ETIMEDOUT);
	CHECK("initialised member: unlock", pthread_mutex_unlock(&a->io_mutex), 0, 0);
	CHECK("initialised member: wrlock", pthread_rwlock_wrlock(&a->lock), 0, 0);
	CHECK("initialised member: rw unlock", pthread_rwlock_unlock(&a->lock), 0, 0);
	free(a); /* without destroy, as Slurm does */
	b = calloc(1, sizeof(*b));
	CHECK("calloc hands the same memory out again", b == a, 1, 1);
	r = pthread_mutex_lock(&b->io_mutex);
	CHECK("reused zeroed memory: mutex lock", r, EINVAL, 0);
	if (r == 0)
		pthread_mutex_unlock(&b->io_mutex);
	CHECK("reused zeroed memory: cond signal", pthread_cond_signal(&b->io_cond), EINVAL, 0);
	r = pthread_rwlock_rdlock(&b->lock);
	CHECK("reused zeroed memory: rwlock rdlock", r, EINVAL, 0);
	if (r == 0)
		pthread_rwlock_unlock(&b->lock);
	free(b);
}

/* (e) condition variables across threads */
static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_flag, cv_generation, cv_woken;

static void *wait_for_flag(void *arg)
{
	long timed = (long) arg;
	long rc = 0;
	struct timespec deadline = after_ms(5000);

	pthread_mutex_lock(&cv_mutex);
	while (!cv_flag && rc == 0)
		rc = timed ? pthread_cond_timedwait(&cv, &cv_mutex, &deadline)
			   : pthread_cond_wait(&cv, &cv_mutex);
	pthread_mutex_unlock(&cv_mutex);
	return (void *) rc;
}

static void *wait_for_generation(void *arg)
{
	long rc = 0;
	int gen;

	(void) arg;
	pthread_mutex_lock(&cv_mutex);
	gen = cv_generation;
	while (gen == cv_generation && rc == 0)
		rc = pthread_cond_wait(&cv, &cv_mutex);
	cv_woken++;
	pthread_mutex_unlock(&cv_mutex);
	return (void *) rc;
}

static pthread_mutex_t cancel_mutex = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cancel_cond = PTHREAD_COND_INITIALIZER;
static int cancel_waiting;
static long cancel_unlock_rc = -1;

static void cancel_cleanup(void *arg)
{
	(void) arg;
	/* POSIX: the mutex is held again when cleanup handlers run; an errorcheck mutex
	 * proves it (EPERM if not owned). */
	cancel_unlock_rc = pthread_mutex_unlock(&cancel_mutex);
}

static void *wait_to_be_cancelled(void *arg)
{
	(void) arg;
	pthread_mutex_lock(&cancel_mutex);
	cancel_waiting = 1;
	pthread_cleanup_push(cancel_cleanup, NULL);
	for (;;)
		pthread_cond_wait(&cancel_cond, &cancel_mutex);
	pthread_cleanup_pop(1);
	return NULL;
}

static pthread_cond_t zeroed_cond;
static pthread_mutex_t zeroed_mutex_for_wait;

static void condition_variables(void)
{
	pthread_t t[4];
	void *rc;
	int i;
	struct timespec past = { 1, 0 };
	struct timespec bad = { 0, 1000000000L };

	for (long timed = 0; timed <= 1; timed++) {
		cv_flag = 0;
		pthread_create(&t[0], NULL, wait_for_flag, (void *) timed);
		sleep_ms(20);
		pthread_mutex_lock(&cv_mutex);
		cv_flag = 1;
		CHECK("cond signal with a waiter", pthread_cond_signal(&cv), 0, 0);
		pthread_mutex_unlock(&cv_mutex);
		pthread_join(t[0], &rc);
		CHECK(timed ? "cond timedwait woken by signal" : "cond wait woken by signal",
		      (long) rc, 0, 0);
	}

	cv_woken = 0;
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, wait_for_generation, NULL);
	sleep_ms(30);
	pthread_mutex_lock(&cv_mutex);
	cv_generation++;
	CHECK("cond broadcast with waiters", pthread_cond_broadcast(&cv), 0, 0);
	pthread_mutex_unlock(&cv_mutex);
	long sum = 0;
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], &rc);
		sum += (long) rc;
	}
	CHECK("cond broadcast: every waiter returned 0", sum, 0, 0);
	CHECK("cond broadcast: every waiter woke", cv_woken, 4, 4);

	struct timespec soon = after_ms(20);
	pthread_mutex_lock(&cv_mutex);
	CHECK("cond timedwait without signal", pthread_cond_timedwait(&cv, &cv_mutex, &soon),
	      ETIMEDOUT, ETIMEDOUT);
	CHECK("cond timedwait with tv_nsec = 1e9", pthread_cond_timedwait(&cv, &cv_mutex, &bad),
	      EINVAL, EINVAL);
	CHECK("zeroed cond: timedwait", pthread_cond_timedwait(&zeroed_cond, &cv_mutex, &past),
	      EINVAL, ETIMEDOUT);
	const char *mode = getenv("SLURM_SHIM_EMULATION");
	/* Observing in this program: glibc's wait would never return. */
	if (mode && (!strcmp(mode, "observe") || strstr(mode, "checks")))
		printf("not run here: zeroed cond: wait (observe mode keeps glibc's wait)\n");
	else
		CHECK_DARWIN_ONLY("zeroed cond: wait", pthread_cond_wait(&zeroed_cond, &cv_mutex),
				  EINVAL, "glibc waits for a signal");
	pthread_mutex_unlock(&cv_mutex);
	CHECK("zeroed cond: signal", pthread_cond_signal(&zeroed_cond), EINVAL, 0);
	CHECK("zeroed cond: broadcast", pthread_cond_broadcast(&zeroed_cond), EINVAL, 0);
	CHECK("zeroed cond: destroy", pthread_cond_destroy(&zeroed_cond), EINVAL, 0);

	int r = pthread_mutex_lock(&zeroed_mutex_for_wait);
	CHECK("zeroed mutex for a wait: lock", r, EINVAL, 0);
	CHECK("cond timedwait with a zeroed mutex",
	      pthread_cond_timedwait(&cv, &zeroed_mutex_for_wait, &past), EINVAL, ETIMEDOUT);
	if (r == 0)
		pthread_mutex_unlock(&zeroed_mutex_for_wait);

	pthread_cond_t c;
	CHECK("cond init", pthread_cond_init(&c, NULL), 0, 0);
	CHECK("cond destroy", pthread_cond_destroy(&c), 0, 0);
	CHECK("destroyed cond: signal", pthread_cond_signal(&c), EINVAL, 0);
	CHECK("destroyed cond: destroy", pthread_cond_destroy(&c), EINVAL, 0);
	pthread_cond_t sc = PTHREAD_COND_INITIALIZER;
	CHECK("static cond: destroy", pthread_cond_destroy(&sc), 0, 0);

	/* A cancelled wait re-acquires the mutex and runs the caller's cleanup handler. */
	pthread_create(&t[0], NULL, wait_to_be_cancelled, NULL);
	for (;;) {
		pthread_mutex_lock(&cancel_mutex);
		int w = cancel_waiting;
		pthread_mutex_unlock(&cancel_mutex);
		if (w)
			break;
		sleep_ms(5);
	}
	pthread_cancel(t[0]);
	pthread_join(t[0], &rc);
	CHECK("cancelled cond wait: thread ended as cancelled", rc == PTHREAD_CANCELED, 1, 1);
	CHECK("cancelled cond wait: cleanup held the mutex", cancel_unlock_rc, 0, 0);
}

/* (f) rwlocks: the model, and Slurm's _atfork_child re-init through the fix */
static pthread_rwlock_t zeroed_rwlock;
static pthread_rwlock_t static_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t fork_rwlock;
static int holder_pipe[2], release_pipe[2];

static void *hold_write_lock(void *arg)
{
	char c = 0;
	(void) arg;
	pthread_rwlock_wrlock(&fork_rwlock);
	if (write(holder_pipe[1], &c, 1) != 1 || read(release_pipe[0], &c, 1) != 1)
		abort();
	pthread_rwlock_unlock(&fork_rwlock);
	return NULL;
}

static void rwlocks(void)
{
	struct timespec soon = after_ms(10);
	int r;

	CHECK("zeroed rwlock: rdlock", pthread_rwlock_rdlock(&zeroed_rwlock), EINVAL, 0);
	CHECK("zeroed rwlock: unlock", pthread_rwlock_unlock(&zeroed_rwlock), EINVAL, 0);
	CHECK("zeroed rwlock: wrlock", pthread_rwlock_wrlock(&zeroed_rwlock), EINVAL, 0);
	CHECK("zeroed rwlock: unlock after wrlock", pthread_rwlock_unlock(&zeroed_rwlock), EINVAL,
	      0);
	CHECK("zeroed rwlock: tryrdlock", pthread_rwlock_tryrdlock(&zeroed_rwlock), EINVAL, 0);
	CHECK("zeroed rwlock: unlock after tryrdlock", pthread_rwlock_unlock(&zeroed_rwlock),
	      EINVAL, 0);
	CHECK("zeroed rwlock: trywrlock", pthread_rwlock_trywrlock(&zeroed_rwlock), EINVAL, 0);
	CHECK("zeroed rwlock: unlock after trywrlock", pthread_rwlock_unlock(&zeroed_rwlock),
	      EINVAL, 0);
	CHECK("zeroed rwlock: timedrdlock", pthread_rwlock_timedrdlock(&zeroed_rwlock, &soon),
	      EINVAL, 0);
	CHECK("zeroed rwlock: unlock after timedrdlock", pthread_rwlock_unlock(&zeroed_rwlock),
	      EINVAL, 0);
	CHECK("zeroed rwlock: timedwrlock", pthread_rwlock_timedwrlock(&zeroed_rwlock, &soon),
	      EINVAL, 0);
	CHECK("zeroed rwlock: unlock after timedwrlock", pthread_rwlock_unlock(&zeroed_rwlock),
	      EINVAL, 0);
	CHECK("zeroed rwlock: destroy", pthread_rwlock_destroy(&zeroed_rwlock), EINVAL, 0);

	CHECK("static rwlock: rdlock", pthread_rwlock_rdlock(&static_rwlock), 0, 0);
	CHECK("static rwlock: tryrdlock", pthread_rwlock_tryrdlock(&static_rwlock), 0, 0);
	CHECK("static rwlock: trywrlock while read-held", pthread_rwlock_trywrlock(&static_rwlock),
	      EBUSY, EBUSY);
	/* macOS made it live on first use: held, so EBUSY; glibc's destroy does nothing. */
	CHECK("static rwlock: destroy while read-held", pthread_rwlock_destroy(&static_rwlock),
	      EBUSY, 0);
	CHECK("static rwlock: unlock", pthread_rwlock_unlock(&static_rwlock), 0, 0);
	CHECK("static rwlock: unlock again", pthread_rwlock_unlock(&static_rwlock), 0, 0);

	pthread_rwlock_t l;
	CHECK("rwlock init", pthread_rwlock_init(&l, NULL), 0, 0);
	CHECK("rwlock init of a live, free lock", pthread_rwlock_init(&l, NULL), 0, 0);
	CHECK("rwlock wrlock", pthread_rwlock_wrlock(&l), 0, 0);
	CHECK("rwlock wrlock again", pthread_rwlock_wrlock(&l), EDEADLK, EDEADLK);
	CHECK("rwlock destroy while write-held", pthread_rwlock_destroy(&l), EBUSY, 0);
	CHECK("rwlock init while write-held (through the fix)", pthread_rwlock_init(&l, NULL), 0,
	      0);
	CHECK("rwlock trywrlock after the re-init", pthread_rwlock_trywrlock(&l), 0, 0);
	CHECK("rwlock unlock", pthread_rwlock_unlock(&l), 0, 0);
	CHECK("rwlock destroy", pthread_rwlock_destroy(&l), 0, 0);
	r = pthread_rwlock_rdlock(&l);
	CHECK("destroyed rwlock: rdlock", r, EINVAL, 0);
	if (r == 0)
		pthread_rwlock_unlock(&l);

	/* Slurm's auth.c _atfork_child: another thread holds the lock at fork; the child
	 * re-initialises it (slurm_rwlock_init aborts on any error) and uses it. */
	pthread_t holder;
	char c = 0;
	int status = -1;
	CHECK("fork rwlock: init", pthread_rwlock_init(&fork_rwlock, NULL), 0, 0);
	if (pipe(holder_pipe) || pipe(release_pipe))
		abort();
	pthread_create(&holder, NULL, hold_write_lock, NULL);
	if (read(holder_pipe[0], &c, 1) != 1)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		int code = 0;
		if (pthread_rwlock_init(&fork_rwlock, NULL) != 0)
			code |= 1;
		if (pthread_rwlock_wrlock(&fork_rwlock) != 0)
			code |= 2;
		if (pthread_rwlock_unlock(&fork_rwlock) != 0)
			code |= 4;
		_exit(code);
	}
	waitpid(pid, &status, 0);
	CHECK("fork child re-initialises a lock held in the parent (exit status)",
	      WIFEXITED(status) ? WEXITSTATUS(status) : 100 + status, 0, 0);
	if (write(release_pipe[1], &c, 1) != 1)
		abort();
	pthread_join(holder, NULL);
	CHECK("fork rwlock: destroy in the parent", pthread_rwlock_destroy(&fork_rwlock), 0, 0);
}

int main(void)
{
	zeroed_static_mutex();
	static_mutexes();
	struct_copies();
	zeroed_heap_objects();
	condition_variables();
	rwlocks();
	printf("done\n");
	return failures;
}
