/* http_date.h - an HTTP-date (RFC 9110 section 5.6.7) read into seconds
 * since the epoch: for Retry-After's date form and the Date it is measured
 * against (http_check.c). */
#ifndef RF_REMOTE_HTTP_DATE_H
#define RF_REMOTE_HTTP_DATE_H

#include <stddef.h>
#include <stdint.h>

/* v[n] (no NUL needed) in the form every sender must use, IMF-fixdate
 * ("Sun, 06 Nov 1994 08:49:37 GMT"), or one of the two obsolete forms a
 * recipient must still accept: RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT",
 * the two-digit year read as within 1970-2069) and asctime ("Sun Nov  6
 * 08:49:37 1994"). The weekday is not checked against the date (RFC 9110
 * lets a recipient ignore it). @return : 0 and *out, or -1 (anything
 * else, a field out of its range, a year before 1970 or after 9999). */
int rfi_http_date_parse(const char *v, size_t n, int64_t *out);

#endif
