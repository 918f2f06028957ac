/* cuvil-sdk: the thread pool of a --threads N build (cuvil_parallel), included by cuvil_common.h
 * where CUVIL_THREADS is defined. Generated code, do not edit.
 *
 * N - 1 workers, started at the first split layer (not at load: no constructor), kept for the
 * library's life in static storage (no malloc). A call publishes its job in one 64-bit word:
 *     (job number << 32) | (parts << 16) | next unclaimed part,
 * runs part 0 itself, then claims what no worker has claimed yet, then waits for the parts the
 * workers took. Parts are claimed with a compare-and-swap on that word, so a part runs once,
 * only within its own job, and a worker that wakes late (or was never started) leaves its part
 * to the caller. Waiting threads poll for CUVIL_POOL_SPIN_US (yielding the core after the
 * first few microseconds), then sleep on a condition variable (an idle library costs no CPU).
 *
 * One caller at a time owns the pool; a concurrent caller (another thread running the model
 * with its own arena) or a nested call (a part that calls cuvil_parallel) runs its parts
 * itself: same results, no deadlock. dlclose and exit run cuvil_pool_stop (a destructor), which
 * joins the workers before the code they are parked in is unmapped. A fork()ed child starts
 * with no workers (cuvil_pool_forked resets the pool; the next split layer starts new ones). */
#ifndef CUVIL_POOL_H
#define CUVIL_POOL_H
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#ifndef CUVIL_THREAD_STACK_BYTES
#define CUVIL_THREAD_STACK_BYTES (1024 * 1024) /* kernels keep their input panels on the stack */
#endif
#ifndef CUVIL_POOL_SPIN_US
#define CUVIL_POOL_SPIN_US 100 /* how long a waiting thread polls before it sleeps */
#endif
#if CUVIL_THREADS > 0xffff
#error "cuvil_pool.h: --threads above 65535"
#endif

typedef void (*cuvil_part_fn)(const void *args, int part, int parts);

static uint64_t cuvil_pool_job;         /* the job word (see above); job number 0: none yet */
static cuvil_part_fn cuvil_pool_fn;     /* the current job, written before its word is published */
static const void *cuvil_pool_args;
static int cuvil_pool_done;             /* parts of the current job finished */
static int cuvil_pool_busy;             /* a caller owns the pool (held for good once stopped) */
static int cuvil_pool_started;          /* the owner has started the workers */
static int cuvil_pool_workers;          /* workers running (pthread_create may have refused some) */
static int cuvil_pool_stopping;         /* the destructor asks the workers to return */
static int cuvil_pool_sleepers;         /* workers asleep on cuvil_pool_wake */
static int cuvil_pool_owner_asleep;     /* the owner is asleep on cuvil_pool_finished */
static int cuvil_pool_fork_handler;     /* pthread_atfork registered (stays set in a child) */
static pthread_mutex_t cuvil_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cuvil_pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cuvil_pool_finished = PTHREAD_COND_INITIALIZER;
static pthread_t cuvil_pool_ids[CUVIL_THREADS - 1];

/* The polling clock: the time-stamp counter (x86: the nominal clock, taken as 3 GHz; a pause
 * lasts 3 to 150 cycles, depending on the core, too uneven to count) or the generic timer
 * (aarch64, its frequency in cntfrq_el0); elsewhere `polls`, the polls so far, as 100 ns each. */
static inline uint64_t cuvil_pool_ticks(uint64_t polls)
{
#if defined(__x86_64__) || defined(__i386__)
    (void)polls;
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t t;
    (void)polls;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(t));
    return t;
#else
    return polls;
#endif
}

/* CUVIL_POOL_SPIN_US in ticks of cuvil_pool_ticks. */
static inline uint64_t cuvil_pool_spin_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return (uint64_t)CUVIL_POOL_SPIN_US * 3000;
#elif defined(__aarch64__)
    uint64_t hz;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
    return hz * CUVIL_POOL_SPIN_US / 1000000;
#else
    return (uint64_t)CUVIL_POOL_SPIN_US * 10;
#endif
}

static inline void cuvil_pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* One poll of a wait that began at tick t0 (*polls: the polls so far): the first twentieth of
 * CUVIL_POOL_SPIN_US pauses, the rest gives the core away (sched_yield) so that a thread that
 * shares it (on a busy machine, maybe the one waited for) runs. 0 when the time is up: sleep. */
static inline int cuvil_pool_keep_polling(uint64_t t0, uint64_t *polls)
{
    const uint64_t elapsed = cuvil_pool_ticks(++*polls) - t0, span = cuvil_pool_spin_ticks();
    if (elapsed >= span) return 0;
    if (elapsed < span / 20) {
        cuvil_pool_relax();
    } else {
        sched_yield();
    }
    return 1;
}

static inline uint32_t cuvil_pool_number(void)
{
    return (uint32_t)(__atomic_load_n(&cuvil_pool_job, __ATOMIC_SEQ_CST) >> 32);
}

/* Claims the next part of job `number`: its index (and *parts), or -1 when none is left. */
static inline int cuvil_pool_claim(uint32_t number, int *parts)
{
    uint64_t w = __atomic_load_n(&cuvil_pool_job, __ATOMIC_ACQUIRE);
    while ((uint32_t)(w >> 32) == number && (w & 0xffff) < ((w >> 16) & 0xffff)) {
        if (__atomic_compare_exchange_n(&cuvil_pool_job, &w, w + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            *parts = (int)((w >> 16) & 0xffff);
            return (int)(w & 0xffff);
        }
    }
    return -1;
}

/* One part finished; the last one wakes the owner if it went to sleep. The owner's flag and
 * cuvil_pool_done are both sequentially consistent: either it sees the count or we see the flag. */
static inline void cuvil_pool_part_done(int parts)
{
    if (__atomic_add_fetch(&cuvil_pool_done, 1, __ATOMIC_SEQ_CST) == parts &&
        __atomic_load_n(&cuvil_pool_owner_asleep, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&cuvil_pool_lock);
        pthread_cond_signal(&cuvil_pool_finished);
        pthread_mutex_unlock(&cuvil_pool_lock);
    }
}

/* Runs parts of job `number` until none is left to claim. The job's fn and args are read
 * only after a claim: its job cannot finish (and be replaced) before that part is done. */
static inline void cuvil_pool_work(uint32_t number)
{
    int parts = 0, part;
    while ((part = cuvil_pool_claim(number, &parts)) >= 0) {
        cuvil_pool_fn(cuvil_pool_args, part, parts);
        cuvil_pool_part_done(parts);
    }
}

/* A worker: polls for a job number other than `seen`, then sleeps; returns the new number. */
static inline uint32_t cuvil_pool_next(uint32_t seen)
{
    uint64_t polls = 0;
    const uint64_t t0 = cuvil_pool_ticks(0);
    while (cuvil_pool_number() == seen && !__atomic_load_n(&cuvil_pool_stopping, __ATOMIC_ACQUIRE)) {
        if (!cuvil_pool_keep_polling(t0, &polls)) break;
    }
    if (cuvil_pool_number() != seen) return cuvil_pool_number();
    pthread_mutex_lock(&cuvil_pool_lock);
    __atomic_add_fetch(&cuvil_pool_sleepers, 1, __ATOMIC_SEQ_CST);
    while (cuvil_pool_number() == seen && !__atomic_load_n(&cuvil_pool_stopping, __ATOMIC_ACQUIRE)) {
        pthread_cond_wait(&cuvil_pool_wake, &cuvil_pool_lock);
    }
    __atomic_sub_fetch(&cuvil_pool_sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&cuvil_pool_lock);
    return cuvil_pool_number();
}

static void *cuvil_pool_main(void *unused)
{
    uint32_t seen = 0; /* workers start before the first job */
    (void)unused;
    for (;;) {
        seen = cuvil_pool_next(seen);
        if (__atomic_load_n(&cuvil_pool_stopping, __ATOMIC_ACQUIRE)) return NULL;
        cuvil_pool_work(seen);
    }
}

/* In a fork()ed child only the forking thread exists: forget the parent's workers, locks and
 * job (the next split layer starts new workers). */
static void cuvil_pool_forked(void)
{
    const pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    const pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    cuvil_pool_lock = lock;
    cuvil_pool_wake = cond;
    cuvil_pool_finished = cond;
    cuvil_pool_job = 0;
    cuvil_pool_done = cuvil_pool_busy = cuvil_pool_started = cuvil_pool_workers = 0;
    cuvil_pool_stopping = cuvil_pool_sleepers = cuvil_pool_owner_asleep = 0;
}

/* Called by the owner, once: the workers that pthread_create gives (none at all still works). */
static inline void cuvil_pool_start(void)
{
    pthread_attr_t attr;
    const int have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr) (void)pthread_attr_setstacksize(&attr, CUVIL_THREAD_STACK_BYTES);
    if (!cuvil_pool_fork_handler) cuvil_pool_fork_handler = pthread_atfork(NULL, NULL, cuvil_pool_forked) == 0;
    while (cuvil_pool_workers < CUVIL_THREADS - 1 &&
           pthread_create(&cuvil_pool_ids[cuvil_pool_workers], have_attr ? &attr : NULL, cuvil_pool_main, NULL) == 0) {
        cuvil_pool_workers++;
    }
    if (have_attr) pthread_attr_destroy(&attr);
    cuvil_pool_started = 1;
}

/* The owner, its own parts done: polls, then sleeps, until the workers' parts are done too
 * (the acquire of the count makes their outputs visible). */
static inline void cuvil_pool_wait_done(int parts)
{
    uint64_t polls = 0;
    const uint64_t t0 = cuvil_pool_ticks(0);
    while (__atomic_load_n(&cuvil_pool_done, __ATOMIC_ACQUIRE) != parts) {
        if (!cuvil_pool_keep_polling(t0, &polls)) break;
    }
    if (__atomic_load_n(&cuvil_pool_done, __ATOMIC_ACQUIRE) == parts) return;
    pthread_mutex_lock(&cuvil_pool_lock);
    __atomic_store_n(&cuvil_pool_owner_asleep, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&cuvil_pool_done, __ATOMIC_SEQ_CST) != parts) {
        pthread_cond_wait(&cuvil_pool_finished, &cuvil_pool_lock);
    }
    __atomic_store_n(&cuvil_pool_owner_asleep, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&cuvil_pool_lock);
}

/* The owner: publish the job, wake sleeping workers, run part 0 and whatever is left, wait. */
static inline void cuvil_pool_run(cuvil_part_fn fn, const void *args, int parts)
{
    const uint32_t number = cuvil_pool_number() + 1;
    cuvil_pool_fn = fn;
    cuvil_pool_args = args;
    __atomic_store_n(&cuvil_pool_done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&cuvil_pool_job, ((uint64_t)number << 32) | ((uint64_t)parts << 16) | 1u, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&cuvil_pool_sleepers, __ATOMIC_SEQ_CST)) { /* seq_cst both sides: none sleeps through it */
        pthread_mutex_lock(&cuvil_pool_lock);
        pthread_cond_broadcast(&cuvil_pool_wake);
        pthread_mutex_unlock(&cuvil_pool_lock);
    }
    fn(args, 0, parts);
    cuvil_pool_part_done(parts);
    cuvil_pool_work(number);
    cuvil_pool_wait_done(parts);
}

/* fn(args, part, parts) for part = 0 .. parts-1 (at most CUVIL_THREADS), on the pool when it is
 * free, else all on the calling thread; returns when every part is done. */
static inline void cuvil_parallel(cuvil_part_fn fn, const void *args, int parts)
{
    if (parts > CUVIL_THREADS) parts = CUVIL_THREADS;
    if (parts > 1 && !__atomic_exchange_n(&cuvil_pool_busy, 1, __ATOMIC_ACQUIRE)) {
        if (!cuvil_pool_started) cuvil_pool_start();
        const int pooled = cuvil_pool_workers > 0;
        if (pooled) cuvil_pool_run(fn, args, parts);
        __atomic_store_n(&cuvil_pool_busy, 0, __ATOMIC_RELEASE);
        if (pooled) return;
    }
    for (int i = 0; i < parts; i++) fn(args, i, parts);
}

/* At dlclose or exit: take the pool for good (a call in flight finishes first; later calls run
 * their parts on the caller), wake the workers and join them, so none is left in code that
 * dlclose is about to unmap. */
__attribute__((destructor)) static void cuvil_pool_stop(void)
{
    while (__atomic_exchange_n(&cuvil_pool_busy, 1, __ATOMIC_ACQUIRE)) sched_yield();
    if (!cuvil_pool_workers) return;
    pthread_mutex_lock(&cuvil_pool_lock);
    __atomic_store_n(&cuvil_pool_stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&cuvil_pool_wake);
    pthread_mutex_unlock(&cuvil_pool_lock);
    for (int i = 0; i < cuvil_pool_workers; i++) pthread_join(cuvil_pool_ids[i], NULL);
    cuvil_pool_workers = 0;
}
#endif
