/* json.c - the one JSON string writer of the command line: every string that
 * reaches --json output (paths, messages) goes through it, so that quotes,
 * backslashes, control characters and bytes that are not UTF-8 (file names
 * are bytes) still give valid JSON. Valid UTF-8 passes through; any other
 * byte becomes \u00XX (its Latin-1 reading: lossy, never invalid). A small
 * hand-written escaper rather than a library: the CLI only writes JSON, and
 * this is all the writing needs. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "util/util.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, or a surrogate */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0; /* overlong, or past U+10FFFF */
	return n;
}

void cli_json_str(FILE *f, const char *str)
{
	/* a URL's password never reaches the output (rfi_redact) */
	char *shown = rfi_redact_dup(str ? str : "");
	const unsigned char *s = (const unsigned char *)(shown ? shown : "");
	fputc('"', f);
	while (*s) {
		int n = utf8_len(s);
		if (n == 0) {
			fprintf(f, "\\u%04x", *s++);
		} else if (n > 1) {
			fwrite(s, 1, (size_t)n, f);
			s += n;
		} else {
			unsigned char c = *s++;
			switch (c) {
			case '"': fputs("\\\"", f); break;
			case '\\': fputs("\\\\", f); break;
			case '\n': fputs("\\n", f); break;
			case '\r': fputs("\\r", f); break;
			case '\t': fputs("\\t", f); break;
			default:
				if (c < 0x20 || c == 0x7f)
					fprintf(f, "\\u%04x", c);
				else
					fputc(c, f);
			}
		}
	}
	fputc('"', f);
	free(shown);
}
