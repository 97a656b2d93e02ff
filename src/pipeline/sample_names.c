/* sample_names.c - what a loader's samples are called, for its caller:
 * class names (rf_loader_class_count, rf_loader_class_name) and a sample's
 * name by id (rf_loader_sample_name), read from the index the loader built
 * (read-only after create, so any thread may ask, without a lock). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/loader_state.h"
#include "util/util.h"

RF_API int rf_loader_class_count(const rf_loader *l)
{
	if (!l)
		return -EINVAL;
	if (rf_loader_forked(l))
		return RF_EFORKED;
	/* classes is NULL for sources that name none (nclasses 0 then) */
	return l->src.index.classes ? l->src.index.nclasses : 0;
}

RF_API const char *rf_loader_class_name(const rf_loader *l, int label)
{
	int n = rf_loader_class_count(l);
	if (n <= 0 || label < 0 || label >= n)
		return NULL;
	return l->src.index.classes[label];
}

RF_API int rf_loader_sample_name(const rf_loader *l, uint64_t id, char *buf, size_t len)
{
	if (!l || (!buf && len))
		return -EINVAL;
	if (rf_loader_forked(l))
		return RF_EFORKED;
	if (id >= rf_source_samples(&l->src))
		return -ERANGE;
	/* the name places.c gives the on_sample_error callback and messages:
	 * rf_source_path, with a URL's password redacted */
	char full[4096], shown[4096 + 64];
	rf_source_path(&l->src, id, full, sizeof(full));
	rf_redact(full, shown, sizeof(shown));
	size_t n = strlen(shown);
	if (len)
		snprintf(buf, len, "%s", shown);
	return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}
