/* alias.c - Vose's construction of the alias table (see alias.h). */
#include "sample/alias.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "ringfeed.h"
#include "util/util.h"

int rfi_alias_build(rf_alias *a, const double *w, uint64_t n, char *err, size_t errlen)
{
	a->n = n;
	a->e = NULL;
	if (n == 0 || n > (1ull << 32)) {
		rfi_fmt(err, errlen, "weighted sampler: %llu samples (1 .. 2^32 allowed)",
		       (unsigned long long)n);
		return RF_ECONFIG;
	}
	double sum = 0;
	uint64_t positive = n; /* some sample with a weight above 0 */
	for (uint64_t i = 0; i < n; i++) {
		if (!(w[i] >= 0) || !isfinite(w[i])) {
			rfi_fmt(err, errlen, "weighted sampler: weight of sample %llu is %g "
			       "(finite and >= 0 needed)", (unsigned long long)i, w[i]);
			return RF_ECONFIG;
		}
		sum += w[i];
		if (w[i] > 0)
			positive = i;
	}
	if (positive == n || !isfinite(sum)) {
		rfi_fmt(err, errlen, "weighted sampler: the weights sum to %g "
		       "(at least one must be above 0, and the sum finite)", sum);
		return RF_ECONFIG;
	}
	a->e = malloc(n * sizeof(*a->e));
	double *p = malloc(n * sizeof(*p));
	uint32_t *stack = malloc(n * sizeof(*stack));
	if (!a->e || !p || !stack) {
		free(p);
		free(stack);
		rfi_alias_free(a);
		rfi_fmt(err, errlen, "weighted sampler: out of memory for %llu samples",
		       (unsigned long long)n);
		return -ENOMEM;
	}
	/* Columns of height p[i] (mean 1). "small" ones (below 1) grow from the
	 * front of stack, "large" ones from the back: together they never hold
	 * more than n entries, because each step retires one column. */
	uint64_t ns = 0, nl = 0;
	double scale = (double)n / sum;
	for (uint64_t i = 0; i < n; i++) {
		p[i] = w[i] * scale;
		if (p[i] < 1.0)
			stack[ns++] = (uint32_t)i;
		else
			stack[n - 1 - nl++] = (uint32_t)i;
	}
	while (ns && nl) {
		uint32_t s = stack[--ns];
		uint32_t g = stack[n - nl--];
		/* Column s keeps p[s] of its height and lends the rest to g. */
		/* p[s] < 1; rounding may have taken a lender just below 0 */
		a->e[s].thresh = p[s] > 0 ? (uint32_t)(p[s] * 4294967296.0) : 0;
		a->e[s].alias = g;
		p[g] = (p[g] + p[s]) - 1.0;
		if (p[g] < 1.0)
			stack[ns++] = g;
		else
			stack[n - 1 - nl++] = g;
	}
	/* Whatever is left is full (height 1 up to rounding): it always keeps
	 * itself, except a weight of exactly 0 left over by rounding, which must
	 * never be drawn. */
	while (nl) {
		uint32_t g = stack[n - nl--];
		a->e[g] = (rf_alias_entry){ .thresh = UINT32_MAX, .alias = g };
	}
	while (ns) {
		uint32_t s = stack[--ns];
		if (w[s] > 0)
			a->e[s] = (rf_alias_entry){ .thresh = UINT32_MAX, .alias = s };
		else
			a->e[s] = (rf_alias_entry){ .thresh = 0, .alias = (uint32_t)positive };
	}
	free(p);
	free(stack);
	return 0;
}

void rfi_alias_free(rf_alias *a)
{
	if (!a)
		return;
	free(a->e);
	a->e = NULL;
	a->n = 0;
}
