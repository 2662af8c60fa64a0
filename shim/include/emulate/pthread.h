/* pthread.h (darwin personality only): glibc's <pthread.h> with static initialisers that
 * carry a macOS-style signature.
 *
 * macOS libpthread (libpthread-539, include/pthread/pthread.h and pthread_impl.h) starts
 * every mutex, condition variable and rwlock with a signature; its static initialisers
 * put _PTHREAD_*_SIG_init there, and every call refuses an object without a valid one
 * (EINVAL). glibc's initialisers are all zeros, so glibc cannot tell "initialised" from
 * "zeroed memory". The shim's model (shim/src/emulate/pthread_*.rs, mapped by
 * slurm_shim.h in this personality) keeps the signature inside the object, in words glibc
 * 2.36 on x86_64 never uses (shim/src/emulate/pthread_sig.rs), and the initialisers below
 * put it there:
 *   pthread_mutex_t   __data.__list.__prev  "SHIM" << 32 | Apple's _PTHREAD_*MUTEX_SIG_init
 *   pthread_rwlock_t  __data.__pad2         "SHIM" << 32 | _PTHREAD_RWLOCK_SIG_init
 *   pthread_cond_t    __data.__wrefs bit 0  (glibc's process-shared bit)
 * The values must equal the Rust constants; shim/tests/emulate_pthread_c.rs checks it.
 */
#ifndef SLURM_SHIM_EMULATE_PTHREAD_H
#define SLURM_SHIM_EMULATE_PTHREAD_H
#pragma GCC system_header

#include_next <pthread.h>

#if !defined(__x86_64__) || defined(__ILP32__)
#error "shim/include/emulate/pthread.h models glibc's x86_64 (LP64) pthread layouts only"
#endif

#define SLURM_SHIM_MUTEX_SIG_INIT            0x5348494D32AAABA7UL
#define SLURM_SHIM_ERRORCHECK_MUTEX_SIG_INIT 0x5348494D32AAABA1UL
#define SLURM_SHIM_RECURSIVE_MUTEX_SIG_INIT  0x5348494D32AAABA2UL
#define SLURM_SHIM_RWLOCK_SIG_INIT           0x5348494D2DA8B3B4UL
#define SLURM_SHIM_COND_MARK                 1U

#define SLURM_SHIM_MUTEX_INITIALIZER(kind, sig) \
	{ .__data = { .__kind = (kind), \
		      .__list = { .__prev = (struct __pthread_internal_list *) (sig) } } }
#define SLURM_SHIM_RWLOCK_INITIALIZER(flags) \
	{ .__data = { .__pad2 = SLURM_SHIM_RWLOCK_SIG_INIT, .__flags = (flags) } }

#undef PTHREAD_MUTEX_INITIALIZER
#define PTHREAD_MUTEX_INITIALIZER \
	SLURM_SHIM_MUTEX_INITIALIZER(PTHREAD_MUTEX_TIMED_NP, SLURM_SHIM_MUTEX_SIG_INIT)
#ifdef __USE_GNU
#undef PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#define PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP \
	SLURM_SHIM_MUTEX_INITIALIZER(PTHREAD_MUTEX_RECURSIVE_NP, SLURM_SHIM_RECURSIVE_MUTEX_SIG_INIT)
#undef PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#define PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP \
	SLURM_SHIM_MUTEX_INITIALIZER(PTHREAD_MUTEX_ERRORCHECK_NP, SLURM_SHIM_ERRORCHECK_MUTEX_SIG_INIT)
/* macOS has no adaptive mutex; its default initialiser is the nearest. */
#undef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#define PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP \
	SLURM_SHIM_MUTEX_INITIALIZER(PTHREAD_MUTEX_ADAPTIVE_NP, SLURM_SHIM_MUTEX_SIG_INIT)
#endif

#if defined __USE_UNIX98 || defined __USE_XOPEN2K
#undef PTHREAD_RWLOCK_INITIALIZER
#define PTHREAD_RWLOCK_INITIALIZER SLURM_SHIM_RWLOCK_INITIALIZER(PTHREAD_RWLOCK_DEFAULT_NP)
#ifdef __USE_GNU
#undef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#define PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP \
	SLURM_SHIM_RWLOCK_INITIALIZER(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
#endif
#endif

#undef PTHREAD_COND_INITIALIZER
#define PTHREAD_COND_INITIALIZER { .__data = { .__wrefs = SLURM_SHIM_COND_MARK } }

#endif /* SLURM_SHIM_EMULATE_PTHREAD_H */
