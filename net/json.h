/* SPDX-License-Identifier: Apache-2.0 */
/* JSON rules shared by every codec, so that vmact reads and writes what the
 * Go peers' encoding/json reads and writes: member lookup with Go's key
 * folding, and floats printed in Go's shortest round-trip text. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Whether an incoming object key selects the struct field called name, as
 * encoding/json decides it: byte-equal, or equal under Unicode simple case
 * folding. name must be ASCII (every wire field name is); then the only
 * non-ASCII runes that can match are U+212A KELVIN SIGN (folds to k) and
 * U+017F LATIN SMALL LETTER LONG S (folds to s). */
bool net_json_key_matches(const char *key, const char *name);

/* The member of obj that encoding/json would store into the field called
 * name: of all keys matching it (net_json_key_matches), the last one in the
 * object, since Go decodes every one of them in order and each overwrites
 * the field. NULL when absent or obj is not an object.
 *
 * jansson keeps members in document order, but collapses byte-identical
 * duplicate keys into the first one's position (keeping the last value)
 * unless the document was loaded with JSON_REJECT_DUPLICATES. So for
 * {"ok":1,"OK":2,"ok":3} Go picks 3 and this returns 2; decoders that must
 * be exact there load with JSON_REJECT_DUPLICATES (the informant codec
 * does; the plugin, arbiter and monitor decoders accept duplicates, as Go
 * does, and have this one divergence). */
json_t *net_json_get(const json_t *obj, const char *name);

/* Typed, required members; errors name the key. */
int net_json_get_bool(const json_t *obj, const char *key, bool *out, struct vmact_err *err);
int net_json_get_string(const json_t *obj, const char *key, const char **out,
			struct vmact_err *err);
/* A JSON integer in [0, max]. Reals are refused even when whole ("1.0"),
 * as Go refuses them for integer fields. */
int net_json_get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out,
		      struct vmact_err *err);
int net_json_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err);
/* Object-valued member, required. */
int net_json_get_object(const json_t *obj, const char *key, json_t **out, struct vmact_err *err);
/* Copies the string v (the member called key; NULL means missing) into a
 * fixed buffer of size bytes: -EINVAL naming key when it is not a string,
 * does not fit with its terminator, or holds a NUL byte (C code downstream
 * would silently cut it there). */
int net_json_string_copy(const json_t *v, const char *key, char *buf, size_t size,
			 struct vmact_err *err);

/* The shortest "%.*g" text of d that reads back as the same value: as a
 * double, or with as_float32 as the float32 (float)d. Returns the precision
 * used (1..17, or 1..9 for float32); buf gets the text. d must be finite. */
int net_json_shortest_g(double d, bool as_float32, char *buf, size_t len);

/* The text encoding/json writes for a float64 (or, with as_float32, a
 * float32) field holding d: strconv's shortest round-trip digits, fixed
 * notation for 1e-6 <= |d| < 1e21, else exponent notation with "e-07"
 * shortened to "e-7". -EDOM for NaN/Inf (Go refuses them), -ENOSPC when
 * buf is too small; 0 otherwise. */
int net_json_real_text(double d, bool as_float32, char *buf, size_t len);

/* A JSON number that net_json_dumps() prints as net_json_real_text() does:
 * an integer when that text is integral and fits json_int_t (jansson would
 * add ".0" to a real), else a real holding the shortest decimal (for
 * as_float32: the float32's, e.g. 0.1f goes out as 0.1). NULL for NaN/Inf
 * or on allocation failure. */
json_t *net_json_real(double d, bool as_float32);

/* json_dumps() with the real precision chosen so that every real prints its
 * shortest round-trip digits: jansson has one precision per dump, so this
 * uses the largest any real in v needs, which is exact for all of them
 * while that is at most 15 digits (any double's nearest 15-digit decimal
 * is its shortest text when that has <= 15 digits). Differences from
 * net_json_real_text() that remain: reals in [1e-6, 1e-4) print in exponent
 * form ("1e-5" where Go writes 0.00001), whole reals beyond json_int_t do
 * too ("1e19", "1e21" where Go writes 10000000000000000000, 1e+21), and
 * when one real needs 16-17 digits the others may gain some. The values
 * read back identically in every case. */
char *net_json_dumps(const json_t *v, size_t flags);
