/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/json-desc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A member's path in a refusal: "pool.paused", "hosts[12]"; a key of the
 * peer's is cut (labels, below), so this is ample. */
#define NAME_MAX_LEN 160

#define AT(obj, off) ((char *)(obj) + (off))

static bool absent(const json_t *v)
{
	return !v || json_is_null(v);
}

/* ---- the members' storage ---- */

static long long int_load(const struct vmact_json_desc_field *f, const void *obj)
{
	const char *p = AT(obj, f->off);

	switch (f->kind) {
	case VMACT_JSON_DESC_I32:
		return *(const int32_t *)p;
	case VMACT_JSON_DESC_U32:
		return *(const uint32_t *)p;
	case VMACT_JSON_DESC_I64:
		return *(const int64_t *)p;
	case VMACT_JSON_DESC_U64:
		return (long long)*(const uint64_t *)p;
	default:
		return 0;
	}
}

static void int_store(const struct vmact_json_desc_field *f, void *obj, long long v)
{
	char *p = AT(obj, f->off);

	switch (f->kind) {
	case VMACT_JSON_DESC_I32:
		*(int32_t *)p = (int32_t)v;
		break;
	case VMACT_JSON_DESC_U32:
		*(uint32_t *)p = (uint32_t)v;
		break;
	case VMACT_JSON_DESC_I64:
		*(int64_t *)p = v;
		break;
	case VMACT_JSON_DESC_U64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	default:
		break;
	}
}

static bool is_int(enum vmact_json_desc_kind k)
{
	return k == VMACT_JSON_DESC_I32 || k == VMACT_JSON_DESC_U32 || k == VMACT_JSON_DESC_I64 ||
	       k == VMACT_JSON_DESC_U64;
}

static bool has_get(const struct vmact_json_desc_field *f, const void *obj)
{
	if (f->has_bit)
		return *(const unsigned *)AT(obj, f->has_off) & f->has_bit;
	return *(const bool *)AT(obj, f->has_off);
}

static void has_set(const struct vmact_json_desc_field *f, void *obj)
{
	if (f->has_bit)
		*(unsigned *)AT(obj, f->has_off) |= f->has_bit;
	else
		*(bool *)AT(obj, f->has_off) = true;
}

static const struct vmact_json_desc_field *sibling(const struct vmact_json_desc *d, const char *key)
{
	for (size_t i = 0; i < d->nfields; i++)
		if (!strcmp(d->fields[i].key, key))
			return &d->fields[i];
	return NULL;
}

/* ---- encoding ---- */

static json_t *encode_text(const char *s, const char *dflt)
{
	if (!s)
		s = dflt;
	return s ? json_string(s) : NULL;
}

static json_t *encode_array(const struct vmact_json_desc_field *f, const void *obj)
{
	const void *items = *(const void *const *)AT(obj, f->off);
	size_t n = *(const size_t *)AT(obj, f->count_off);
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++) {
		json_t *v = f->desc ? vmact_json_desc_encode(f->desc, (const char *)items +
									      i * f->desc->size)
				    : encode_text(((const char *const *)items)[i], NULL);

		if (json_array_append_new(arr, v) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}

static json_t *encode_map(const struct vmact_json_desc_field *f, const void *obj)
{
	const struct vmact_json_desc_pair *kv = *(const void *const *)AT(obj, f->off);
	size_t n = *(const size_t *)AT(obj, f->count_off);
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++)
		if (json_object_set_new(o, kv[i].key, json_string(kv[i].value)) < 0) {
			json_decref(o);
			o = NULL;
		}
	return o;
}

static json_t *encode_number(const struct vmact_json_desc_field *f, double v)
{
	/* (the bound keeps the cast defined) */
	if (f->kind == VMACT_JSON_DESC_NUMBER && v > -9e18 && v < 9e18 && v == (double)(long long)v)
		return json_integer((long long)v);
	return json_real(v);
}

static json_t *encode_field(const struct vmact_json_desc_field *f, const void *obj)
{
	const char *p = AT(obj, f->off);

	switch (f->kind) {
	case VMACT_JSON_DESC_TEXT:
		return encode_text(*(const char *const *)p, f->text_dflt);
	case VMACT_JSON_DESC_BOOL:
		return json_boolean(*(const bool *)p);
	case VMACT_JSON_DESC_REAL:
	case VMACT_JSON_DESC_NUMBER:
		return encode_number(f, *(const double *)p);
	case VMACT_JSON_DESC_ENUM: {
		unsigned v = (unsigned)*(const int *)p;

		return json_string(v < f->nnames ? f->names[v] : "?");
	}
	case VMACT_JSON_DESC_OBJECT:
		return vmact_json_desc_encode(f->desc, p);
	case VMACT_JSON_DESC_ARRAY:
		return encode_array(f, obj);
	case VMACT_JSON_DESC_MAP:
		return encode_map(f, obj);
	default:
		return json_integer(int_load(f, obj));
	}
}

static bool is_default(const struct vmact_json_desc_field *f, const void *obj)
{
	if (f->kind == VMACT_JSON_DESC_BOOL)
		return *(const bool *)AT(obj, f->off) == (f->dflt != 0);
	if (f->kind == VMACT_JSON_DESC_TEXT) {
		const char *s = *(const char *const *)AT(obj, f->off);

		return !s || (f->text_dflt && strcmp(s, f->text_dflt) == 0);
	}
	return is_int(f->kind) && int_load(f, obj) == f->dflt;
}

json_t *vmact_json_desc_encode(const struct vmact_json_desc *d, const void *obj)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < d->nfields; i++) {
		const struct vmact_json_desc_field *f = &d->fields[i];

		if ((f->flags & VMACT_JSON_DESC_GATED) && !has_get(f, obj))
			continue;
		if ((f->flags & VMACT_JSON_DESC_OMIT_DEFAULT) && is_default(f, obj))
			continue;
		/* json_object_set_new takes the value's reference, also when it
		 * fails; a NULL one (out of memory) fails it */
		if (json_object_set_new(o, f->key, encode_field(f, obj)) < 0) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* ---- decoding: each refusal starts with the member's name ---- */

static int decode_object(const struct vmact_json_desc *d, const json_t *o, void *obj,
			 const char *outer, struct vmact_err *err);

static int text_check(const json_t *v, const char *name, size_t max, const char **out,
		      struct vmact_err *err)
{
	const char *s;

	if (!json_is_string(v))
		return vmact_err_set(err, EPROTO, "%s: not a string", name);
	s = json_string_value(v);
	if (json_string_length(v) > max || strlen(s) != json_string_length(v))
		return vmact_err_set(err, EPROTO, "%s: longer than %zu bytes or holds a NUL", name,
				     max);
	*out = s;
	return 0;
}

static int decode_int(const struct vmact_json_desc *d, const struct vmact_json_desc_field *f,
		      const json_t *v, void *obj, const char *name, struct vmact_err *err)
{
	const struct vmact_json_desc_field *fl = f->floor ? sibling(d, f->floor) : NULL;
	long long lo = fl ? int_load(fl, obj) : f->lo, x;

	if (absent(v)) {
		int_store(f, obj, fl ? lo : f->dflt);
		return 0;
	}
	if (!json_is_integer(v))
		return vmact_err_set(err, EPROTO, "%s: not an integer", name);
	x = json_integer_value(v);
	if (x < lo || x > f->hi)
		return vmact_err_set(err, EPROTO, "%s: %lld is outside [%lld, %lld]", name, x, lo,
				     f->hi);
	int_store(f, obj, x);
	return 0;
}

static int decode_enum(const struct vmact_json_desc_field *f, const json_t *v, void *obj,
		       const char *name, struct vmact_err *err)
{
	char want[NAME_MAX_LEN] = "";
	size_t len = 0;
	const char *s;
	int r = text_check(v, name, f->text_max, &s, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < f->nnames; i++)
		if (!strcmp(s, f->names[i])) {
			*(int *)AT(obj, f->off) = (int)i;
			return 0;
		}
	/* "not creating, running or deleting" */
	for (size_t i = 0; i < f->nnames && len < sizeof(want); i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s",
					!i                   ? ""
					: i + 1 == f->nnames ? " or "
							     : ", ",
					f->names[i]);
	return vmact_err_set(err, EPROTO, "%s: not %s", name, want);
}

/* v a container of f's kind (an array, a MAP's object) of at most f->max
 * entries, and room made for them at *items. */
static int room(const struct vmact_json_desc_field *f, const json_t *v, size_t size, void **items,
		const char *name, struct vmact_err *err)
{
	bool map = f->kind == VMACT_JSON_DESC_MAP;
	size_t n = map ? json_object_size(v) : json_array_size(v);

	if (map ? !json_is_object(v) : !json_is_array(v))
		return vmact_err_set(err, EPROTO, "%s: not %s", name,
				     map ? "an object" : "an array");
	if (n > f->max)
		return vmact_err_set(err, EPROTO, "%s: more than %zu", name, f->max);
	*items = calloc(n + 1, size);
	if (!*items)
		return vmact_err_set(err, ENOMEM, "%s: out of memory", name);
	return 0;
}

static int decode_array(const struct vmact_json_desc_field *f, const json_t *v, void *obj,
			const char *name, struct vmact_err *err)
{
	size_t size = f->desc ? f->desc->size : sizeof(const char *);
	size_t *n = (size_t *)AT(obj, f->count_off);
	void **items = (void **)AT(obj, f->off);
	const json_t *e;
	size_t i;
	int r = room(f, v, size, items, name, err);

	if (r < 0)
		return r;
	json_array_foreach(v, i, e) {
		char at[NAME_MAX_LEN + 24];
		void *item = (char *)*items + i * size;
		/* counted before it is decoded: a refusal clears it too */
		(*n)++;
		snprintf(at, sizeof(at), "%s[%zu]", name, i);
		if (!f->desc)
			r = text_check(e, at, f->text_max, item, err);
		else if (!json_is_object(e))
			r = vmact_err_set(err, EPROTO, "%s: not an object", at);
		else if ((r = decode_object(f->desc, e, item, NULL, err)) < 0)
			vmact_err_prefix(err, "%s", at);
		if (r < 0)
			return r;
	}
	return 0;
}

static int decode_map(const struct vmact_json_desc_field *f, const json_t *v, void *obj,
		      const char *name, struct vmact_err *err)
{
	struct vmact_json_desc_pair **kv = (struct vmact_json_desc_pair **)AT(obj, f->off);
	size_t *n = (size_t *)AT(obj, f->count_off);
	const json_t *e;
	const char *k;
	int r = room(f, v, sizeof(**kv), (void **)kv, name, err);

	if (r < 0)
		return r;
	json_object_foreach((json_t *)v, k, e) {
		if (!json_is_string(e) || strlen(k) > f->text_max ||
		    json_string_length(e) > f->text_max ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return vmact_err_set(err, EPROTO,
					     "%s.%.64s: not a string of at most %zu bytes", name, k,
					     f->text_max);
		(*kv)[(*n)++] = (struct vmact_json_desc_pair){ k, json_string_value(e) };
	}
	return 0;
}

/* The member f of obj from v (NULL: absent), named name. */
static int decode_field(const struct vmact_json_desc *d, const struct vmact_json_desc_field *f,
			const json_t *v, void *obj, const char *name, struct vmact_err *err)
{
	char *p = AT(obj, f->off);
	double x;
	int r;

	if (absent(v) && (f->flags & VMACT_JSON_DESC_REQUIRED))
		return vmact_err_set(err, EPROTO, "%s: %s", name,
				     f->kind == VMACT_JSON_DESC_OBJECT ? "missing or not an object"
								       : "missing");
	if (absent(v) && !is_int(f->kind)) {
		if (f->kind == VMACT_JSON_DESC_TEXT)
			*(const char **)p = f->text_dflt;
		else if (f->kind == VMACT_JSON_DESC_BOOL)
			*(bool *)p = f->dflt != 0;
		return 0;
	}
	switch (f->kind) {
	case VMACT_JSON_DESC_TEXT:
		r = text_check(v, name, f->text_max, (const char **)p, err);
		if (r >= 0 && (f->flags & VMACT_JSON_DESC_NONEMPTY) && !**(const char **)p)
			r = vmact_err_set(err, EPROTO, "%s: empty", name);
		return r;
	case VMACT_JSON_DESC_BOOL:
		if (!json_is_boolean(v))
			return vmact_err_set(err, EPROTO, "%s: not a boolean", name);
		*(bool *)p = json_is_true(v);
		return 0;
	case VMACT_JSON_DESC_REAL:
	case VMACT_JSON_DESC_NUMBER:
		x = json_number_value(v);
		if (!json_is_number(v) || !(x >= f->range->lo && x <= f->range->hi))
			return vmact_err_set(err, EPROTO, "%s: not %s", name, f->range->what);
		*(double *)p = x;
		return 0;
	case VMACT_JSON_DESC_ENUM:
		return decode_enum(f, v, obj, name, err);
	case VMACT_JSON_DESC_OBJECT:
		if (!json_is_object(v))
			return vmact_err_set(err, EPROTO, "%s: %s", name,
					     f->flags & VMACT_JSON_DESC_REQUIRED
						     ? "missing or not an object"
						     : "not an object");
		if (f->desc->dotted)
			return decode_object(f->desc, v, p, name, err);
		r = decode_object(f->desc, v, p, NULL, err);
		if (r < 0)
			vmact_err_prefix(err, "%s", name);
		return r;
	case VMACT_JSON_DESC_ARRAY:
		return decode_array(f, v, obj, name, err);
	case VMACT_JSON_DESC_MAP:
		return decode_map(f, v, obj, name, err);
	default:
		return decode_int(d, f, v, obj, name, err);
	}
}

static int decode_object(const struct vmact_json_desc *d, const json_t *o, void *obj,
			 const char *outer, struct vmact_err *err)
{
	for (size_t i = 0; i < d->nfields; i++) {
		const struct vmact_json_desc_field *f = &d->fields[i];
		const json_t *v = json_object_get(o, f->key);
		char name[NAME_MAX_LEN];
		int r;

		if (outer)
			snprintf(name, sizeof(name), "%s.%s", outer, f->key);
		r = decode_field(d, f, v, obj, outer ? name : f->key, err);
		if (r == -EPROTO && f->bad) {
			vmact_err_reset(err);
			r = vmact_err_set(err, EPROTO, "%s: %s", outer ? name : f->key, f->bad);
		}
		if (r < 0)
			return r;
		if ((f->flags & VMACT_JSON_DESC_MARKS) && !absent(v))
			has_set(f, obj);
	}
	return d->check ? d->check(obj, err) : 0;
}

int vmact_json_desc_decode(const struct vmact_json_desc *d, const json_t *doc, void *obj,
			   struct vmact_err *err)
{
	memset(obj, 0, d->size);
	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	return decode_object(d, doc, obj, NULL, err);
}

void vmact_json_desc_clear(const struct vmact_json_desc *d, void *obj)
{
	for (size_t i = 0; i < d->nfields; i++) {
		const struct vmact_json_desc_field *f = &d->fields[i];
		void **items = (void **)AT(obj, f->off);

		if (f->kind == VMACT_JSON_DESC_OBJECT) {
			vmact_json_desc_clear(f->desc, AT(obj, f->off));
			continue;
		}
		if (f->kind != VMACT_JSON_DESC_ARRAY && f->kind != VMACT_JSON_DESC_MAP)
			continue;
		for (size_t k = 0; f->desc && *items && k < *(size_t *)AT(obj, f->count_off); k++)
			vmact_json_desc_clear(f->desc, (char *)*items + k * f->desc->size);
		free(*items);
		*items = NULL;
		*(size_t *)AT(obj, f->count_off) = 0;
	}
}
