/* fuzz_http.c - libFuzzer target: the response checker (src/io/http_check.c)
 * that every ranged GET's response passes before a byte of it counts. The
 * first 17 input bytes say what was asked and how long the body was: byte
 * 0's bit 0 a range asked, bit 1 the object's size known, bit 2 an ETag
 * asked (If-Match), bits 3-4 the body's length (the bytes the response's
 * Content-Range owes, 0, the range asked and one more, or bytes 13-16);
 * bytes 1-4 the offset, 5-8 the length, 9-12 the size (little-endian). The
 * rest is the response's header lines, one per '\n', fed as libcurl feeds
 * them. A verdict must agree with what was asked: bytes only for a 200,
 * 206 or 416, never more than asked, a 206's from the offset asked and of
 * the length its Content-Range says; no encoding but identity and the
 * ETag asked where it is believed; a refusal says why in printable text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/http_check.h"

#define must(c)                                                                     \
	do {                                                                        \
		if (!(c)) {                                                         \
			fprintf(stderr, "fuzz_http: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                    \
		}                                                                   \
	} while (0)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 17)
		return 0;
	static const char etag[] = "\"5f3a-1000\"";
	uint8_t flags = data[0];
	rf_http_ask a = { .offset = le32(data + 1), .len = (flags & 1) ? le32(data + 5) : 0,
			  .size = (flags & 2) ? le32(data + 9) : 0,
			  .etag = (flags & 4) ? etag : NULL };
	rf_http_seen s = { 0 };
	const char *p = (const char *)data + 17, *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		/* its own allocation: a read past the line shows under ASan */
		char *line = malloc(n ? n : 1);
		memcpy(line, p, n);
		rfi_http_seen_line(&s, line, n);
		free(line);
		p += n;
	}
	must(s.range >= RF_HTTP_RANGE_NONE && s.range <= RF_HTTP_RANGE_BAD);
	must(memchr(s.encoding, '\0', sizeof(s.encoding)) && memchr(s.range_text, '\0',
								 sizeof(s.range_text)));
	must(s.etag_state != 1 || memchr(s.etag, '\0', sizeof(s.etag)));
	uint64_t owed = s.range == RF_HTTP_RANGE_BYTES ? s.end - s.start + 1 : 0;
	uint64_t body;
	switch ((flags >> 3) & 3) {
	case 0: body = owed; break;
	case 1: body = 0; break;
	case 2: body = a.len + 1; break;
	default: body = le32(data + 13); break;
	}
	char why[RF_IO_WHY_MAX];
	memset(why, 'x', sizeof(why));
	int step = -1, fault = -1;
	int32_t res = rfi_http_check(&a, &s, body, &step, &fault, why, sizeof(why));
	must(step == 0 || step == 1);
	must(fault == 0 || fault == 1);
	must(memchr(why, '\0', sizeof(why)));
	if (res < 0) {
		must(why[0]);
		for (const char *c = why; *c; c++)
			must(*c >= 0x20 && *c < 0x7f);
	} else {
		must(!fault);
		must(s.status == 200 || s.status == 206 || s.status == 416);
		must(s.status == 416 || !s.encoding[0]);
		must(!a.etag || s.etag_state == 0 || (s.etag_state == 1 && !strcmp(s.etag, etag)));
		if (a.len)
			must((uint64_t)res <= a.len);
		if (s.status == 416)
			must(res == 0 && a.len && (!a.size || a.size <= a.offset));
		if (s.status == 206) {
			must(a.len && s.range == RF_HTTP_RANGE_BYTES && s.start == a.offset);
			must((uint64_t)res == owed && body == owed);
			must(!a.size || s.total == RF_HTTP_NO_TOTAL || s.total == a.size);
		}
		if (s.status == 200) {
			must((uint64_t)res == body);
			must(!a.len || a.offset == 0);
			must(!a.size || body == a.size);
		}
	}
	if (fault)
		must(res < 0);
	char kept[RF_IO_ETAG_MAX];
	rfi_http_seen_etag(&s, kept);
	must(strlen(kept) < RF_IO_ETAG_MAX && strncmp(kept, "W/", 2));
	uint64_t total = rfi_http_seen_size(&s, &a);
	must(total == 0 || total == s.total || (s.has_length && total == s.length));
	return 0;
}
