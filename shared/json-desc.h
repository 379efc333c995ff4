/* SPDX-License-Identifier: Apache-2.0 */
/* A JSON codec by table (prefix vmact_json_desc_): a C struct's members
 * are described once, each with its JSON key, kind, bounds, default and
 * whether it is required, in a static const table, and one encoder and
 * one decoder walk the description, as protobuf-c's descriptors do. A
 * contract's codec (shared/group-api.c) is then its tables and the few
 * rules a table cannot say (a type's check).
 *
 * The encoder writes the members in the table's order and returns NULL
 * only when out of memory (or given a NULL string with no default, or a
 * number JSON cannot hold).
 *
 * The decoder takes the peer's bytes as untrusted: every refusal is
 * -EPROTO with the member's path first ("template: vcpus: missing",
 * "taints[0]: effect: ...", "pool.paused: ready: ..."), never a crash; a
 * key it does not describe is ignored, a null is absent. Strings point
 * into the document; arrays are malloc'd and freed by
 * vmact_json_desc_clear, also after a refusal. No recursion but the
 * tables' own nesting: the depth is the description's, never the peer's. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

enum vmact_json_desc_kind {
	VMACT_JSON_DESC_TEXT,   /* const char *; text_max bytes at most, no NUL */
	VMACT_JSON_DESC_BOOL,   /* bool */
	VMACT_JSON_DESC_I32,    /* int32_t in [lo, hi] */
	VMACT_JSON_DESC_U32,    /* uint32_t in [lo, hi] */
	VMACT_JSON_DESC_I64,    /* int64_t in [lo, hi] */
	VMACT_JSON_DESC_U64,    /* uint64_t in [lo, hi] */
	VMACT_JSON_DESC_REAL,   /* double in its range, always written as a real; absent: 0 */
	VMACT_JSON_DESC_NUMBER, /* the same, a whole one written as an integer (as people
				   write configurations) */
	VMACT_JSON_DESC_ENUM,   /* an int-sized enum, on the wire names[value] */
	VMACT_JSON_DESC_OBJECT, /* a struct described by desc */
	VMACT_JSON_DESC_ARRAY,  /* a malloc'd array and its size_t count at count_off: of
				   desc's structs, or of const char * when desc is NULL */
	VMACT_JSON_DESC_MAP,    /* an object of strings, as a malloc'd array of
				   struct vmact_json_desc_pair in the document's order */
};

/* A member's flags: absent (or null) is refused, "KEY: missing" */
#define VMACT_JSON_DESC_REQUIRED (1u << 0)
/* TEXT: "" is refused, "KEY: empty" */
#define VMACT_JSON_DESC_NONEMPTY (1u << 1)
/* BOOL, integers: not written when equal to the default; TEXT: when NULL
 * or its text_dflt */
#define VMACT_JSON_DESC_OMIT_DEFAULT (1u << 2)
/* written only when the presence at has_off is set */
#define VMACT_JSON_DESC_GATED (1u << 3)
/* decoded present, it sets the presence at has_off */
#define VMACT_JSON_DESC_MARKS (1u << 4)

struct vmact_json_desc_pair {
	const char *key, *value;
};

/* REAL and NUMBER: what a value must be, and how a refusal says so
 * ("KEY: not " what). */
struct vmact_json_desc_range {
	double lo, hi;
	const char *what;
};

struct vmact_json_desc;

struct vmact_json_desc_field {
	const char *key;
	enum vmact_json_desc_kind kind;
	unsigned flags;
	/* The member, from the start of the described struct. An OBJECT of
	 * off 0 may describe members of the struct itself (a JSON object the
	 * C struct keeps flat). */
	size_t off;
	size_t count_off; /* ARRAY, MAP */
	/* integers: the bounds, and the default when not required */
	long long lo, hi, dflt;
	/* integers: an earlier member (by key) that is both the lower bound
	 * and the default (a maximum at least its minimum) */
	const char *floor;
	const char *text_dflt;                     /* TEXT: when absent; NULL: NULL */
	size_t text_max;                           /* TEXT, ARRAY of text, MAP */
	size_t max;                                /* ARRAY, MAP: entries */
	const struct vmact_json_desc_range *range; /* REAL, NUMBER */
	const char *const *names;                  /* ENUM */
	size_t nnames;                             /* ENUM */
	const struct vmact_json_desc *desc;        /* OBJECT, ARRAY of structs */
	size_t has_off;                            /* GATED, MARKS: a bool, or ... */
	unsigned has_bit;                          /* ... an unsigned's bit when not 0 */
	/* every refusal of the member itself says "KEY: " bad */
	const char *bad;
};

struct vmact_json_desc {
	size_t size;
	const struct vmact_json_desc_field *fields;
	size_t nfields;
	/* its members' refusals are named OUTER.KEY ("pool.paused: ..."),
	 * for an object whose keys are names rather than fields */
	bool dotted;
	/* after a struct is decoded: what the table cannot say (a
	 * cross-field rule, a fix-up); a refusal is -EPROTO, named from the
	 * struct down */
	int (*check)(void *obj, struct vmact_err *err);
};

#define VMACT_JSON_DESC(type, fields_, ...)                                    \
	{                                                                      \
		.size = sizeof(type), .fields = (fields_),                     \
		.nfields = sizeof(fields_) / sizeof((fields_)[0]), __VA_ARGS__ \
	}

/* The object of obj's described members; NULL when out of memory. */
json_t *vmact_json_desc_encode(const struct vmact_json_desc *d, const void *obj);
/* obj zeroed and filled from doc, an object; -EPROTO naming the member,
 * -ENOMEM. After a refusal obj is left for vmact_json_desc_clear. */
int vmact_json_desc_decode(const struct vmact_json_desc *d, const json_t *doc, void *obj,
			   struct vmact_err *err);
/* Frees the arrays the description names (whoever filled them, with
 * malloc), its structs' too, and leaves them empty. */
void vmact_json_desc_clear(const struct vmact_json_desc *d, void *obj);
