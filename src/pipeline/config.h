/* config.h - validation of rf_config. Private. */
#ifndef RF_CONFIG_H
#define RF_CONFIG_H

#include <stddef.h>

#include "ringfeed.h"

/* Returns 0 or RF_ECONFIG with err[errlen] naming the field and its value. */
int rfi_config_check(const rf_config *cfg, char *err, size_t errlen);

/* rf_config_default() behind src/lib.c's check (cfg not NULL). */
void rfi_config_default(rf_config *cfg);

#endif
