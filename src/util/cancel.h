/* cancel.h - a loader's create called off from outside
 * (rf_loader_create_cancel()): the caller's flag, seen by the set-up work
 * that may take long (the index scan's waits, the set-up requests of
 * fetch.c and their backoffs, a listing's pages), which then fails with
 * -ECANCELED.
 *
 * Thread rule: the flag's address is the creating thread's own
 * (thread-local: set-up runs on the thread that creates, so nothing is
 * passed down through every layer); the flag itself is written by any
 * thread or a signal handler and only read here. Private to the library. */
#ifndef RF_UTIL_CANCEL_H
#define RF_UTIL_CANCEL_H

/* Set-up on this thread watches flag (NULL: nothing) until rfi_cancel_end(). */
void rfi_cancel_begin(const volatile int *flag);
void rfi_cancel_end(void);

/* The flag this thread watches (NULL: none): a helper thread of set-up
 * (parallel reads) watches it too, with rfi_cancel_begin(). */
const volatile int *rfi_cancel_flag(void);

/* @return : 1 when this thread's set-up was called off, else 0. */
int rfi_cancelled(void);

#endif
