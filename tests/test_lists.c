/* test_lists.c - the one list each of rf_config's fields, rf_stats'
 * counters and the error codes (src/lists/rf_lists.h) is the header's: a
 * field, counter or code that include/ringfeed.h has and its list lacks (or
 * the other way round) fails here, by the structs' layout (offsetof, sizeof:
 * the bytes of each struct are its entries' and padding) and by the
 * header's text (a field put into what was padding keeps every offset).
 * And the consumers made by hand beside the list cover it: every code has
 * rf_strerror()'s sentence, every OUTPUT field changes the output
 * fingerprint of a saved state, and rf_loader_state_save()'s comment names
 * every field a state records or fingerprints. The Python side is
 * python/tests/test_lists.py's. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lists/rf_lists.h"
#include "pipeline/loader_state.h"
#include "pipeline/state.h"

static const rf_config_entry config_list[] = { RF_CONFIG_FIELDS(RF_CONFIG_ENTRY) };
static const rf_stat_entry stats_list[] = { RF_STATS_FIELDS(RF_STAT_ENTRY) };
static const rf_error_entry error_list[] = { RF_ERROR_CODES(RF_ERROR_ENTRY) };
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *header_text(void)
{
	FILE *f = fopen(RF_SOURCE_ROOT "/include/ringfeed.h", "rb");
	cr_assert_not_null(f, "include/ringfeed.h beside the tests");
	static char buf[1 << 18];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	cr_assert_lt(n, sizeof(buf) - 1, "the header fits the buffer");
	buf[n] = 0;
	return buf;
}

/* The text between from and to (both in the header), its comments blanked
 * out unless keep_comments. Static: one at a time. */
static char *section(const char *from, const char *to, int keep_comments)
{
	const char *text = header_text();
	const char *a = strstr(text, from), *b = a ? strstr(a, to) : NULL;
	cr_assert(a && b, "the header has %s ... %s", from, to);
	static char out[1 << 16];
	size_t n = (size_t)(b - a);
	cr_assert_lt(n, sizeof(out));
	memcpy(out, a + strlen(from), n - strlen(from));
	out[n - strlen(from)] = 0;
	for (char *c = keep_comments ? NULL : strstr(out, "/*"); c; c = strstr(c, "/*")) {
		char *end = strstr(c, "*/");
		cr_assert_not_null(end);
		memset(c, ' ', (size_t)(end + 2 - c));
	}
	return out;
}

/* Every member a struct body declares: the last name of each declarator
 * ("float mean[3], std[3];" declares mean and std). @return : how many,
 * into names[max]. */
static size_t members(char *body, char names[][64], size_t max)
{
	size_t n = 0;
	for (char *decl = strtok(body, ";"); decl; decl = strtok(NULL, ";")) {
		for (char *c = decl; *c; c++) /* array sizes are not names */
			if (*c == '[')
				for (; *c && *c != ']'; c++)
					*c = ' ';
		for (char *piece = decl, *comma; piece; piece = comma ? comma + 1 : NULL) {
			comma = strchr(piece, ',');
			char *end = comma ? comma : piece + strlen(piece);
			while (end > piece && !(isalnum((unsigned char)end[-1]) || end[-1] == '_'))
				end--;
			char *start = end;
			while (start > piece && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
				start--;
			if (end == start)
				continue;
			cr_assert_lt(n, max);
			snprintf(names[n++], 64, "%.*s", (int)(end - start), start);
		}
	}
	return n;
}

/* The header's members of one struct and the list's names are the same set. */
static void same_members(const char *from, const char *to, const char *const *list, size_t count)
{
	static char names[128][64];
	size_t n = members(section(from, to, 0), names, 128);
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < count && strcmp(list[j], names[i]))
			j++;
		cr_expect_lt(j, count, "%s declares %s: its list (src/lists/rf_lists.h) lacks it", from,
			     names[i]);
	}
	cr_expect_eq(n, count, "%s: %zu members in the header, %zu in the list", from, n, count);
}

/* The entries' bytes are the struct's: in order, without overlap, apart
 * by no more than padding (under 8 bytes), and ending at its end. */
static void covers(const char *what, size_t size, const size_t *offset, const size_t *bytes,
		   const char *const *name, size_t count)
{
	size_t end = 0;
	for (size_t i = 0; i < count; i++) {
		cr_expect_geq(offset[i], end, "%s.%s overlaps the entry before it (list order is the "
			      "struct's)", what, name[i]);
		cr_expect_lt(offset[i] - end, 8, "%s: %zu bytes before %s are no entry's", what,
			     offset[i] - end, name[i]);
		end = offset[i] + bytes[i];
	}
	cr_expect(end <= size && size - end < 8, "%s: the list ends at %zu of %zu bytes", what, end,
		  size);
}

Test(lists, config_fields_are_rf_config)
{
	size_t n = COUNT(config_list), offset[128], bytes[128];
	const char *name[128];
	cr_assert_leq(n, 128);
	for (size_t i = 0; i < n; i++) {
		offset[i] = config_list[i].offset;
		bytes[i] = config_list[i].size;
		name[i] = config_list[i].name;
	}
	covers("rf_config", sizeof(rf_config), offset, bytes, name, n);
	same_members("typedef struct rf_config {", "} rf_config;", name, n);
}

Test(lists, stats_fields_are_rf_stats)
{
	size_t n = COUNT(stats_list), offset[128], bytes[128];
	const char *name[128];
	cr_assert_leq(n, 128);
	for (size_t i = 0; i < n; i++) {
		offset[i] = stats_list[i].offset;
		bytes[i] = stats_list[i].size;
		name[i] = stats_list[i].name;
		cr_expect(stats_list[i].kind == RF_STAT_RESERVED || bytes[i] == 4 || bytes[i] == 8,
			  "rf_stats.%s: a counter is uint32_t or uint64_t", name[i]);
	}
	covers("rf_stats", sizeof(rf_stats), offset, bytes, name, n);
	same_members("typedef struct rf_stats {", "} rf_stats;", name, n);
}

Test(lists, error_codes_are_the_headers_with_names_and_sentences)
{
	/* the header's "RF_EXXX = value," lines of its error enum */
	char *body = section("---- errors ----", "RF_API int rf_abi_check", 0);
	size_t found = 0;
	for (char *p = strstr(body, "RF_E"); p; p = strstr(p + 1, "RF_E")) {
		char name[32];
		if (sscanf(p, "RF_%31[A-Z] =", name) != 1)
			continue;
		size_t j = 0;
		while (j < COUNT(error_list) && strcmp(error_list[j].name, name))
			j++;
		cr_expect_lt(j, COUNT(error_list), "the header's RF_%s is not in RF_ERROR_CODES", name);
		found++;
	}
	cr_expect_eq(found, COUNT(error_list), "%zu codes in the header, %zu in the list", found,
		     COUNT(error_list));
	for (size_t i = 0; i < COUNT(error_list); i++) {
		cr_expect_str_eq(rf_strerror(error_list[i].code), error_list[i].text);
		cr_expect_str_neq(error_list[i].text, "unknown error");
		for (size_t j = 0; j < i; j++)
			cr_expect_neq(error_list[i].code, error_list[j].code, "%s and %s share a value",
				      error_list[i].name, error_list[j].name);
	}
}

/* A loader with nothing but a config and one file of the index, as the
 * fingerprint reads them. */
static uint64_t fingerprint(const rf_config *cfg, int64_t file_bytes)
{
	rf_loader *l = calloc(1, sizeof(*l));
	rf_index_entry e = { .size = file_bytes };
	cr_assert_not_null(l);
	l->cfg = *cfg;
	l->src.index.entries = &e;
	l->src.index.count = 1;
	uint64_t fp = rfi_state_output_fingerprint(l);
	free(l);
	return fp;
}

Test(lists, every_output_field_changes_the_output_fingerprint)
{
	rf_config base;
	rf_config_default(&base);
	for (size_t i = 0; i < COUNT(config_list); i++) {
		const rf_config_entry *e = &config_list[i];
		if (e->state != RF_STATE_OUTPUT)
			continue;
		int changed = 0;
		for (int raw = 0; raw <= 1; raw++) { /* raw_max_bytes counts in raw mode */
			rf_config was = base, cfg;
			was.raw = raw;
			cfg = was;
			unsigned char *p = (unsigned char *)&cfg + e->offset;
			/* another value: the lowest bit of an int, float or enum; a size
			 * (which files are too large) halved, with a file above it */
			if (e->kind == RF_FIELD_SIZE)
				*(size_t *)p /= 2;
			else
				p[0] ^= 1;
			int64_t large = (int64_t)base.read_pool_bytes * 2; /* above both limits */
			changed |= fingerprint(&was, large) != fingerprint(&cfg, large);
		}
		cr_expect(changed, "rf_config.%s is OUTPUT in the list but does not change the output "
			  "fingerprint (src/pipeline/state.c)", e->name);
	}
}

Test(lists, the_state_comment_names_what_a_state_holds)
{
	char *text = section("#define RF_STATE_MAX_BYTES", "RF_API int rf_loader_state_save(", 1);
	for (size_t i = 0; i < COUNT(config_list); i++) {
		const rf_config_entry *e = &config_list[i];
		if (e->state != RF_STATE_ORDER && e->state != RF_STATE_OUTPUT)
			continue;
		/* whole word: "shuffle" is not "shuffle_block" */
		int named = 0;
		size_t len = strlen(e->name);
		for (char *p = strstr(text, e->name); p && !named; p = strstr(p + 1, e->name))
			named = !(isalnum((unsigned char)p[-1]) || p[-1] == '_') &&
				!(isalnum((unsigned char)p[len]) || p[len] == '_');
		cr_expect(named, "rf_loader_state_save()'s comment does not name %s, which a state "
			  "%s", e->name, e->state == RF_STATE_ORDER ? "records" : "fingerprints");
	}
}
