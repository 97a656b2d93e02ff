/* cancel.c - the creating thread's cancel flag (cancel.h). */
#include "util/cancel.h"

#include <stddef.h>

static _Thread_local const volatile int *cancel_flag;

void rfi_cancel_begin(const volatile int *flag)
{
	cancel_flag = flag;
}

void rfi_cancel_end(void)
{
	cancel_flag = NULL;
}

int rfi_cancelled(void)
{
	return cancel_flag && __atomic_load_n(cancel_flag, __ATOMIC_RELAXED) != 0;
}

const volatile int *rfi_cancel_flag(void)
{
	return cancel_flag;
}
