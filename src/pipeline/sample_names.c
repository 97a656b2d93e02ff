/* sample_names.c - what a loader's samples are called, for its caller:
 * class names (rf_loader_class_count, rf_loader_class_name) and a sample's
 * name by id (rf_loader_sample_name), read from the index the loader built
 * (read-only after create, so any thread may ask, without a lock). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/loader_state.h"
#include "util/util.h"

int rfi_loader_class_count(const rf_loader *l)
{
	/* classes is NULL for sources that name none (nclasses 0 then) */
	return l->src.index.classes ? l->src.index.nclasses : 0;
}

const char *rfi_loader_class_name(const rf_loader *l, int label)
{
	if (label >= rfi_loader_class_count(l)) /* src/lib.c refused label < 0 */
		return NULL;
	return l->src.index.classes[label];
}

int rfi_loader_sample_name(const rf_loader *l, uint64_t id, char *buf, size_t len)
{
	if (id >= rfi_source_samples(&l->src))
		return -ERANGE;
	/* the name places.c gives the on_sample_error callback and messages:
	 * rfi_source_path, with a URL's password redacted */
	char full[4096], shown[4096 + 64];
	rfi_source_path(&l->src, id, full, sizeof(full));
	rfi_redact(full, shown, sizeof(shown));
	size_t n = strlen(shown);
	if (len)
		snprintf(buf, len, "%s", shown);
	return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}
