/* http_date.c - HTTP-dates (http_date.h): a server's, so read strictly,
 * field by field, without the C library's locale-dependent strptime and
 * without its time zone (an HTTP-date is always GMT). */
#include "remote/http_date.h"

#include <string.h>

/* A bounded cursor over the value. */
typedef struct cur {
	const char *p, *end;
} cur;

static const char MONTHS[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

/* Exactly the bytes of s next. */
static int lit(cur *c, const char *s)
{
	size_t n = strlen(s);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n))
		return 0;
	c->p += n;
	return 1;
}

/* min..max digits into *out. */
static int digits(cur *c, int min, int max, int *out)
{
	int k = 0, x = 0;
	while (k < max && c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		x = x * 10 + (*c->p++ - '0');
		k++;
	}
	*out = x;
	return k >= min;
}

/* A month's three letters: 1..12 into *out. */
static int month(cur *c, int *out)
{
	if (c->end - c->p < 3)
		return 0;
	for (int m = 0; m < 12; m++)
		if (!memcmp(c->p, MONTHS + 3 * m, 3)) {
			c->p += 3;
			*out = m + 1;
			return 1;
		}
	return 0;
}

/* "HH:MM:SS" into seconds of the day. */
static int clock_of(cur *c, int *out)
{
	int h, m, s;
	if (!digits(c, 2, 2, &h) || !lit(c, ":") || !digits(c, 2, 2, &m) || !lit(c, ":") ||
	    !digits(c, 2, 2, &s) || h > 23 || m > 59 || s > 60) /* 60: a leap second */
		return 0;
	*out = h * 3600 + m * 60 + s;
	return 1;
}

/* A weekday's name up to the end of its letters (three, or the whole
 * word in RFC 850's form): skipped, not checked. */
static void weekday(cur *c)
{
	while (c->p < c->end && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z')))
		c->p++;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = y / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in(int y, int m)
{
	static const int n[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100) || y % 400 == 0;
	return n[m - 1] + (m == 2 && leap);
}

/* After "WEEKDAY, ": IMF-fixdate's "06 Nov 1994 08:49:37 GMT" or RFC 850's
 * "06-Nov-94 08:49:37 GMT" (the two-digit year within 1970-2069). */
static int fixdate(cur *c, int *d, int *m, int *y, int *secs)
{
	if (!digits(c, 2, 2, d))
		return 0;
	int ok;
	if (lit(c, "-")) {
		ok = month(c, m) && lit(c, "-") && digits(c, 2, 2, y);
		*y += *y < 70 ? 2000 : 1900;
	} else {
		ok = lit(c, " ") && month(c, m) && lit(c, " ") && digits(c, 4, 4, y);
	}
	return ok && lit(c, " ") && clock_of(c, secs) && lit(c, " GMT");
}

/* After "WEEKDAY": asctime's " Nov  6 08:49:37 1994". */
static int asctime_form(cur *c, int *d, int *m, int *y, int *secs)
{
	if (!lit(c, " ") || !month(c, m) || !lit(c, " "))
		return 0;
	if (c->p < c->end && *c->p == ' ')
		c->p++; /* a one-digit day is padded with a space */
	return digits(c, 1, 2, d) && lit(c, " ") && clock_of(c, secs) && lit(c, " ") &&
	       digits(c, 4, 4, y);
}

int rfi_http_date_parse(const char *v, size_t n, int64_t *out)
{
	cur c = { v, v + n };
	int d = 0, m = 0, y = 0, secs = 0;
	weekday(&c);
	int ok = lit(&c, ", ") ? fixdate(&c, &d, &m, &y, &secs) : asctime_form(&c, &d, &m, &y, &secs);
	if (!ok || c.p != c.end || y < 1970 || d < 1 || d > days_in(y, m))
		return -1;
	*out = days_from_civil(y, m, d) * 86400 + secs;
	return 0;
}
