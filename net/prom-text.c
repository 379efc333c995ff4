/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text format 0.0.4, read line by line. Every string of the
 * result is copied (unescaped) into one arena sized from the input, so the
 * caller may drop the text at once and memory never exceeds a fixed factor
 * of what the caller agreed to receive. */
#include "net/prom-text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

/* A value or timestamp longer than this is not something an exporter
 * writes; refusing it keeps the number parsing on a small stack buffer. */
#define VALUE_TOKEN_MAX 64u
/* Open-addressed table of family names: twice the family limit keeps the
 * probes short. */
#define NAME_SLOTS (2u * NET_PROM_MAX_FAMILIES)
#define NO_FAMILY  SIZE_MAX

struct text_impl {
	struct net_prom_text pub; /* first: net_prom_text_free casts back */
	char *arena;
	struct net_prom_family *fams;
	struct net_prom_sample *samples;
	struct net_prom_label *labels;
};

struct parser {
	const char *p, *eol; /* the rest of the current line */
	unsigned line;
	struct vmact_err *err;

	char *arena;
	size_t arena_len, arena_cap;

	struct net_prom_family *fams;
	size_t *fam_first; /* index of each family's first sample */
	size_t nf, capf;
	struct net_prom_sample *samples;
	size_t *sample_first_label;
	size_t ns, caps;
	struct net_prom_label *labels;
	size_t nl, capl;

	uint32_t *slots; /* family index + 1, 0 = empty */
	size_t cur;      /* the family whose lines are being read */
};

static int bad(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct parser *ps, const char *fmt, ...)
{
	char what[VMACT_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return vmact_err_set(ps->err, EBADMSG, "line %u: %s", ps->line, what);
}

static int too_many(struct parser *ps, const char *what, unsigned limit)
{
	return vmact_err_set(ps->err, E2BIG, "line %u: more than %u %s", ps->line, limit, what);
}

/* A byte as a message may show it: the text is untrusted, so anything
 * outside printable ASCII is written as an escape. */
static const char *show_byte(const char *p, const char *eol, char buf[8])
{
	unsigned char c;

	if (p >= eol)
		return "end of line";
	c = (unsigned char)*p;
	if (c > 0x20 && c < 0x7f && c != '\'')
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "\\x%02x", c);
	return buf;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void skip_blanks(struct parser *ps)
{
	while (ps->p < ps->eol && is_blank(*ps->p))
		ps->p++;
}

static bool name_start(char c, bool metric)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}

static bool name_char(char c, bool metric)
{
	return name_start(c, metric) || (c >= '0' && c <= '9');
}

/* Length of the metric (or label) name at p, 0 if none starts there. */
static size_t name_len(const char *p, const char *eol, bool metric)
{
	const char *s = p;

	if (p >= eol || !name_start(*p, metric))
		return 0;
	while (p < eol && name_char(*p, metric))
		p++;
	return (size_t)(p - s);
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t more;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			more = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			more = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			more = 3, cp = c & 0x07, min = 0x10000;
		else
			return false;
		if (n - i - 1 < more)
			return false;
		for (size_t k = 1; k <= more; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += more + 1;
	}
	return true;
}

/* ---- storage ------------------------------------------------------- */

/* The arena holds at most the input's bytes plus a terminator per string;
 * every string but the last of the input is followed by a delimiter there,
 * so the capacity chosen in net_prom_parse always suffices. The check stays
 * as a guard against a miscount. */
static int arena_put(struct parser *ps, const char *s, size_t n, const char **out)
{
	char *d;

	if (n + 1 > ps->arena_cap - ps->arena_len)
		return vmact_err_set(ps->err, ENOBUFS,
				     "line %u: internal: string storage exhausted", ps->line);
	d = ps->arena + ps->arena_len;
	memcpy(d, s, n);
	d[n] = '\0';
	ps->arena_len += n + 1;
	*out = d;
	return 0;
}

static int grow(void **arr, size_t *cap, size_t need, size_t size, size_t limit)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > limit)
		ncap = limit;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static size_t family_lookup(const struct parser *ps, const char *name, size_t n)
{
	for (uint32_t i = name_hash(name, n) & (NAME_SLOTS - 1);; i = (i + 1) & (NAME_SLOTS - 1)) {
		uint32_t slot = ps->slots[i];
		const char *fn;

		if (!slot)
			return NO_FAMILY;
		fn = ps->fams[slot - 1].name;
		if (strncmp(fn, name, n) == 0 && fn[n] == '\0')
			return slot - 1;
	}
}

static int family_add(struct parser *ps, const char *name, size_t n)
{
	struct net_prom_family *f;
	size_t oldcap = ps->capf;
	uint32_t i;
	int r;

	if (ps->nf == NET_PROM_MAX_FAMILIES)
		return too_many(ps, "metric families", NET_PROM_MAX_FAMILIES);
	if (grow((void **)&ps->fams, &ps->capf, ps->nf + 1, sizeof(*ps->fams),
		 NET_PROM_MAX_FAMILIES) < 0)
		return vmact_err_set(ps->err, ENOMEM, "out of memory");
	if (ps->capf != oldcap) { /* fam_first follows fams' capacity */
		size_t *p = realloc(ps->fam_first, ps->capf * sizeof(*p));

		if (!p)
			return vmact_err_set(ps->err, ENOMEM, "out of memory");
		ps->fam_first = p;
	}
	f = &ps->fams[ps->nf];
	memset(f, 0, sizeof(*f));
	r = arena_put(ps, name, n, &f->name);
	if (r < 0)
		return r;
	f->line = ps->line;
	ps->fam_first[ps->nf] = ps->ns;
	for (i = name_hash(name, n) & (NAME_SLOTS - 1); ps->slots[i];
	     i = (i + 1) & (NAME_SLOTS - 1))
		;
	ps->slots[i] = (uint32_t)(ps->nf + 1);
	ps->cur = ps->nf++;
	return 0;
}

/* Makes the family named name current: the current one, a new one, or an
 * error when it was already seen and other families came since. */
static int family_select(struct parser *ps, const char *name, size_t n)
{
	size_t idx = family_lookup(ps, name, n);

	if (idx == NO_FAMILY)
		return family_add(ps, name, n);
	if (idx != ps->cur)
		return bad(
			ps,
			"%s: lines of this family are not together (it first appeared on line %u)",
			ps->fams[idx].name, ps->fams[idx].line);
	return 0;
}

/* ---- escapes ------------------------------------------------------- */

/* Copies [s, e) into the arena, resolving the escapes allowed in label
 * values (quote true: \\ \" \n) or help texts (\\ \n). */
static int put_unescaped(struct parser *ps, const char *s, const char *e, bool quote,
			 const char *what, const char **out)
{
	char *d = ps->arena + ps->arena_len, *start = d;

	if ((size_t)(e - s) + 1 > ps->arena_cap - ps->arena_len)
		return vmact_err_set(ps->err, ENOBUFS,
				     "line %u: internal: string storage exhausted", ps->line);
	while (s < e) {
		if (*s != '\\') {
			*d++ = *s++;
			continue;
		}
		if (s + 1 == e)
			return bad(ps, "%s ends in a lone backslash", what);
		switch (s[1]) {
		case '\\':
			*d++ = '\\';
			break;
		case 'n':
			*d++ = '\n';
			break;
		case '"':
			if (quote) {
				*d++ = '"';
				break;
			}
			/* fall through */
		default: {
			char b[8];

			return bad(ps, "%s: invalid escape sequence \\%s", what,
				   show_byte(s + 1, e, b));
		}
		}
		s += 2;
	}
	*d = '\0';
	if (!utf8_valid((const unsigned char *)start, (size_t)(d - start)))
		return bad(ps, "%s is not valid UTF-8", what);
	ps->arena_len += (size_t)(d - start) + 1;
	*out = start;
	return 0;
}

/* ---- numbers ------------------------------------------------------- */

static bool all_digits(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_value(struct parser *ps, const char *metric, const char *s, size_t n, double *out)
{
	char buf[VALUE_TOKEN_MAX + 1], *end;
	const char *p = s, *e = s + n, *digits;
	bool mantissa = false;

	if (n == 3 && memcmp(s, "NaN", 3) == 0) {
		*out = NAN;
		return 0;
	}
	if (n == 4 && (memcmp(s, "+Inf", 4) == 0 || memcmp(s, "-Inf", 4) == 0)) {
		*out = s[0] == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (n > VALUE_TOKEN_MAX)
		return bad(ps, "%s: value is longer than %u characters", metric, VALUE_TOKEN_MAX);
	/* [+-] digits [. digits] | [+-] . digits, then [eE [+-] digits] */
	if (p < e && (*p == '+' || *p == '-'))
		p++;
	for (digits = p; p < e && *p >= '0' && *p <= '9'; p++)
		;
	mantissa = p > digits;
	if (p < e && *p == '.') {
		for (digits = ++p; p < e && *p >= '0' && *p <= '9'; p++)
			;
		mantissa = mantissa || p > digits;
	}
	if (mantissa && p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (!all_digits(p, e))
			goto invalid;
		p = e;
	}
	if (!mantissa || p != e)
		goto invalid;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	/* Only the C locale's decimal point is valid here; a process in another
	 * locale sees the number stop early and gets an error, not a wrong value. */
	if (end != buf + n)
		goto invalid;
	if (isinf(*out))
		return bad(ps, "%s: value %s is out of range", metric, buf);
	return 0;
invalid:
	/* Show the token only when it is plain printable ASCII. */
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			return bad(ps, "%s: invalid value", metric);
	return bad(ps, "%s: invalid value \"%.*s\"", metric, (int)n, s);
}

static int parse_timestamp(struct parser *ps, const char *s, size_t n, int64_t *out)
{
	const char *p = s, *e = s + n;
	bool neg = false;
	uint64_t v = 0, lim;

	if (p < e && (*p == '+' || *p == '-'))
		neg = *p++ == '-';
	if (!all_digits(p, e) || n > VALUE_TOKEN_MAX)
		return bad(ps, "invalid timestamp (an integer number of milliseconds is expected)");
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; p < e; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (lim - d) / 10)
			return bad(ps, "timestamp out of range");
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* ---- lines --------------------------------------------------------- */

static int read_type(struct parser *ps, enum net_prom_type *type)
{
	static const struct {
		const char *name;
		enum net_prom_type type;
	} types[] = {
		{ "counter", NET_PROM_COUNTER },     { "gauge", NET_PROM_GAUGE },
		{ "histogram", NET_PROM_HISTOGRAM }, { "summary", NET_PROM_SUMMARY },
		{ "untyped", NET_PROM_UNTYPED },
	};
	const char *s = ps->p;
	size_t n;

	while (ps->p < ps->eol && !is_blank(*ps->p))
		ps->p++;
	n = (size_t)(ps->p - s);
	skip_blanks(ps);
	if (n == 0)
		return bad(ps, "TYPE line without a type");
	if (ps->p != ps->eol)
		return bad(ps, "unexpected text after the type");
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (strlen(types[i].name) == n && memcmp(types[i].name, s, n) == 0) {
			*type = types[i].type;
			return 0;
		}
	return bad(ps,
		   "unknown metric type (counter, gauge, histogram, summary or untyped expected)");
}

static int comment_line(struct parser *ps)
{
	const char *kw;
	size_t kwn, n;
	bool help;
	struct net_prom_family *f;
	int r;

	ps->p++; /* '#' */
	skip_blanks(ps);
	for (kw = ps->p; ps->p < ps->eol && !is_blank(*ps->p); ps->p++)
		;
	kwn = (size_t)(ps->p - kw);
	if (!(kwn == 4 && (memcmp(kw, "HELP", 4) == 0 || memcmp(kw, "TYPE", 4) == 0)))
		return 0; /* any other comment */
	help = kw[0] == 'H';
	skip_blanks(ps);
	n = name_len(ps->p, ps->eol, true);
	if (n == 0) {
		char b[8];

		return bad(ps, "%s line: expected a metric name, found %s", help ? "HELP" : "TYPE",
			   show_byte(ps->p, ps->eol, b));
	}
	if (ps->p + n < ps->eol && !is_blank(ps->p[n])) {
		char b[8];

		return bad(ps, "%s line: invalid character %s in the metric name",
			   help ? "HELP" : "TYPE", show_byte(ps->p + n, ps->eol, b));
	}
	r = family_select(ps, ps->p, n);
	if (r < 0)
		return r;
	f = &ps->fams[ps->cur];
	ps->p += n;
	skip_blanks(ps);
	if (help) {
		if (f->help)
			return bad(ps, "%s: second HELP line", f->name);
		return put_unescaped(ps, ps->p, ps->eol, false, "help text", &f->help);
	}
	if (f->typed)
		return bad(ps, "%s: second TYPE line", f->name);
	if (ps->fam_first[ps->cur] != ps->ns)
		return bad(ps, "%s: TYPE line after the family's samples", f->name);
	r = read_type(ps, &f->type);
	if (r < 0)
		return r;
	f->typed = true;
	return 0;
}

/* Whether a sample named name (n bytes) belongs to the current family: its
 * own name, or a histogram's or summary's suffixed series. */
static bool in_current_family(const struct parser *ps, const char *name, size_t n)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
	const struct net_prom_family *f;
	size_t fn;

	if (ps->cur == NO_FAMILY)
		return false;
	f = &ps->fams[ps->cur];
	fn = strlen(f->name);
	if (fn == n && memcmp(f->name, name, n) == 0)
		return true;
	if (f->type != NET_PROM_HISTOGRAM && f->type != NET_PROM_SUMMARY)
		return false;
	if (n <= fn || memcmp(f->name, name, fn) != 0)
		return false;
	for (size_t i = f->type == NET_PROM_HISTOGRAM ? 0 : 1; i < ARRAY_SIZE(suffixes); i++)
		if (strlen(suffixes[i]) == n - fn && memcmp(name + fn, suffixes[i], n - fn) == 0)
			return true;
	return false;
}

/* A sample of a histogram or summary seen earlier, after other families:
 * named like one of its series, but no longer next to it. */
static int check_stray_series(struct parser *ps, const char *name, size_t n)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };

	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
		size_t sn = strlen(suffixes[i]), idx;
		const struct net_prom_family *f;

		if (n <= sn || memcmp(name + n - sn, suffixes[i], sn) != 0)
			continue;
		idx = family_lookup(ps, name, n - sn);
		if (idx == NO_FAMILY)
			continue;
		f = &ps->fams[idx];
		if (f->type == NET_PROM_HISTOGRAM || (f->type == NET_PROM_SUMMARY && i > 0))
			return bad(
				ps,
				"%.*s: sample of %s after other families (it first appeared on line %u)",
				(int)n, name, f->name, f->line);
	}
	return 0;
}

static int read_labels(struct parser *ps, struct net_prom_sample *s, const char *metric)
{
	size_t first = ps->nl;
	char b[8];
	int r;

	ps->p++; /* '{' */
	for (;;) {
		struct net_prom_label *l;
		const char *vs;
		size_t n;

		skip_blanks(ps);
		if (ps->p < ps->eol && *ps->p == '}')
			break;
		n = name_len(ps->p, ps->eol, false);
		if (n == 0)
			return bad(ps, "%s: expected a label name, found %s", metric,
				   show_byte(ps->p, ps->eol, b));
		if (s->n_labels == NET_PROM_MAX_LABELS)
			return too_many(ps, "labels on one sample", NET_PROM_MAX_LABELS);
		if (grow((void **)&ps->labels, &ps->capl, ps->nl + 1, sizeof(*ps->labels),
			 (size_t)NET_PROM_MAX_SAMPLES * NET_PROM_MAX_LABELS) < 0)
			return vmact_err_set(ps->err, ENOMEM, "out of memory");
		if (n == 8 && memcmp(ps->p, "__name__", 8) == 0)
			return bad(ps, "%s: label name __name__ is reserved", metric);
		for (size_t i = first; i < ps->nl; i++)
			if (strlen(ps->labels[i].name) == n &&
			    memcmp(ps->labels[i].name, ps->p, n) == 0)
				return bad(ps, "%s: duplicate label %.*s", metric, (int)n, ps->p);
		l = &ps->labels[ps->nl];
		r = arena_put(ps, ps->p, n, &l->name);
		if (r < 0)
			return r;
		ps->p += n;
		skip_blanks(ps);
		if (ps->p >= ps->eol || *ps->p != '=')
			return bad(ps, "%s: expected '=' after label %s, found %s", metric, l->name,
				   show_byte(ps->p, ps->eol, b));
		ps->p++;
		skip_blanks(ps);
		if (ps->p >= ps->eol || *ps->p != '"')
			return bad(ps, "%s: expected '\"' to open the value of label %s, found %s",
				   metric, l->name, show_byte(ps->p, ps->eol, b));
		vs = ++ps->p;
		while (ps->p < ps->eol && *ps->p != '"')
			ps->p += *ps->p == '\\' && ps->p + 1 < ps->eol ? 2 : 1;
		if (ps->p >= ps->eol)
			return bad(ps, "%s: value of label %s is not terminated", metric, l->name);
		{
			char what[128];

			snprintf(what, sizeof(what), "%s: value of label %s", metric, l->name);
			r = put_unescaped(ps, vs, ps->p, true, what, &l->value);
		}
		if (r < 0)
			return r;
		ps->p++; /* closing quote */
		ps->nl++;
		s->n_labels++;
		skip_blanks(ps);
		if (ps->p < ps->eol && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->eol && *ps->p == '}')
			break;
		return bad(ps, "%s: expected ',' or '}' after the value of label %s, found %s",
			   metric, l->name, show_byte(ps->p, ps->eol, b));
	}
	ps->p++; /* '}' */
	return 0;
}

static int sample_line(struct parser *ps)
{
	struct net_prom_sample *s;
	const char *name = ps->p, *tok, *before;
	char b[8];
	size_t n = name_len(ps->p, ps->eol, true), oldcap;
	int r;

	if (n == 0)
		return bad(ps, "expected a metric name, found %s", show_byte(ps->p, ps->eol, b));
	if (!in_current_family(ps, name, n)) {
		r = check_stray_series(ps, name, n);
		if (r < 0)
			return r;
		r = family_select(ps, name, n);
		if (r < 0)
			return r;
	}
	if (ps->ns == NET_PROM_MAX_SAMPLES)
		return too_many(ps, "samples", NET_PROM_MAX_SAMPLES);
	oldcap = ps->caps;
	if (grow((void **)&ps->samples, &ps->caps, ps->ns + 1, sizeof(*ps->samples),
		 NET_PROM_MAX_SAMPLES) < 0)
		return vmact_err_set(ps->err, ENOMEM, "out of memory");
	if (ps->caps != oldcap) {
		size_t *p = realloc(ps->sample_first_label, ps->caps * sizeof(*p));

		if (!p)
			return vmact_err_set(ps->err, ENOMEM, "out of memory");
		ps->sample_first_label = p;
	}
	s = &ps->samples[ps->ns];
	memset(s, 0, sizeof(*s));
	s->line = ps->line;
	ps->sample_first_label[ps->ns] = ps->nl;
	/* The family's own name is in the arena already; reuse it. */
	if (strlen(ps->fams[ps->cur].name) == n)
		s->name = ps->fams[ps->cur].name;
	else if ((r = arena_put(ps, name, n, &s->name)) < 0)
		return r;
	ps->p += n;
	before = ps->p;
	skip_blanks(ps);
	if (ps->p < ps->eol && *ps->p == '{') {
		r = read_labels(ps, s, s->name);
		if (r < 0)
			return r;
		before = ps->p;
		skip_blanks(ps);
	}
	if (ps->p >= ps->eol)
		return bad(ps, "%s: sample without a value", s->name);
	if (ps->p == before)
		return bad(ps, "%s: expected a blank before the value, found %s", s->name,
			   show_byte(ps->p, ps->eol, b));
	for (tok = ps->p; ps->p < ps->eol && !is_blank(*ps->p); ps->p++)
		;
	r = parse_value(ps, s->name, tok, (size_t)(ps->p - tok), &s->value);
	if (r < 0)
		return r;
	skip_blanks(ps);
	if (ps->p < ps->eol) {
		for (tok = ps->p; ps->p < ps->eol && !is_blank(*ps->p); ps->p++)
			;
		r = parse_timestamp(ps, tok, (size_t)(ps->p - tok), &s->timestamp_ms);
		if (r < 0)
			return r;
		s->has_timestamp = true;
		skip_blanks(ps);
		if (ps->p < ps->eol)
			return bad(ps, "%s: unexpected text after the timestamp", s->name);
	}
	ps->ns++;
	ps->fams[ps->cur].n_samples++;
	return 0;
}

/* ---- entry points -------------------------------------------------- */

static void parser_clear(struct parser *ps)
{
	free(ps->arena);
	free(ps->fams);
	free(ps->fam_first);
	free(ps->samples);
	free(ps->sample_first_label);
	free(ps->labels);
	free(ps->slots);
}

int net_prom_parse(const char *text, size_t len, struct net_prom_text **out, struct vmact_err *err)
{
	struct parser ps = { .err = err, .cur = NO_FAMILY };
	_cleanup_free_ struct text_impl *t = NULL;
	const char *p = text, *end = text + len;
	int r = 0;

	if (!out || (!text && len))
		return vmact_err_set(err, EINVAL, "prometheus text: text and output required");
	*out = NULL;
	if (len > NET_PROM_MAX_TEXT)
		return vmact_err_set(err, EFBIG, "prometheus text: %zu bytes, at most %u accepted",
				     len, NET_PROM_MAX_TEXT);
	t = calloc(1, sizeof(*t));
	ps.arena_cap = len + 2;
	ps.arena = malloc(ps.arena_cap);
	ps.slots = calloc(NAME_SLOTS, sizeof(*ps.slots));
	if (!t || !ps.arena || !ps.slots) {
		parser_clear(&ps);
		return vmact_err_set(err, ENOMEM, "prometheus text: out of memory");
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		ps.line++;
		ps.p = p;
		ps.eol = eol;
		if (memchr(p, '\0', (size_t)(eol - p))) {
			r = bad(&ps, "NUL byte");
			break;
		}
		skip_blanks(&ps);
		if (ps.p < eol) {
			r = *ps.p == '#' ? comment_line(&ps) : sample_line(&ps);
			if (r < 0)
				break;
		}
		p = eol + 1;
	}
	if (r < 0) {
		parser_clear(&ps);
		return r;
	}
	/* The arrays are final: turn indices into pointers. */
	for (size_t i = 0; i < ps.ns; i++)
		ps.samples[i].labels = ps.samples[i].n_labels ? ps.labels + ps.sample_first_label[i]
							      : NULL;
	for (size_t i = 0; i < ps.nf; i++)
		ps.fams[i].samples = ps.fams[i].n_samples ? ps.samples + ps.fam_first[i] : NULL;
	t->arena = TAKE_PTR(ps.arena);
	t->fams = TAKE_PTR(ps.fams);
	t->samples = TAKE_PTR(ps.samples);
	t->labels = TAKE_PTR(ps.labels);
	t->pub.families = t->fams;
	t->pub.n_families = ps.nf;
	t->pub.n_samples = ps.ns;
	parser_clear(&ps);
	*out = &TAKE_PTR(t)->pub;
	return 0;
}

void net_prom_text_free(struct net_prom_text *pub)
{
	struct text_impl *t = (struct text_impl *)pub;

	if (!t)
		return;
	free(t->arena);
	free(t->fams);
	free(t->samples);
	free(t->labels);
	free(t);
}

DEFINE_PTR_CLEANUP(prom_text_freep, struct net_prom_text, net_prom_text_free)

int net_prom_parse_each(const char *text, size_t len, net_prom_sample_fn *cb, void *userdata,
			struct vmact_err *err)
{
	_cleanup_(prom_text_freep) struct net_prom_text *t = NULL;
	int r;

	if (!cb)
		return vmact_err_set(err, EINVAL, "prometheus text: callback required");
	r = net_prom_parse(text, len, &t, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t->n_families; i++) {
		const struct net_prom_family *f = &t->families[i];

		for (size_t k = 0; k < f->n_samples; k++) {
			r = cb(userdata, f, &f->samples[k], err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

const struct net_prom_family *net_prom_find(const struct net_prom_text *t, const char *name)
{
	if (!t || !name)
		return NULL;
	for (size_t i = 0; i < t->n_families; i++)
		if (strcmp(t->families[i].name, name) == 0)
			return &t->families[i];
	return NULL;
}

const char *net_prom_label(const struct net_prom_sample *s, const char *name)
{
	if (!s || !name)
		return NULL;
	for (size_t i = 0; i < s->n_labels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}
