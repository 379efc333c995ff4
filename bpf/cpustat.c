/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/cpustat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"

static int parse_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(p[i] - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

int smp_cpu_stat_parse(const char *text, struct smp_cpu_stat *out, struct vmact_err *err)
{
	bool have_periods = false, have_throttled = false, have_time = false;
	const char *line = text;

	*out = (struct smp_cpu_stat){ 0 };
	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *sp = memchr(line, ' ', len);

		if (len > 0) {
			size_t klen = sp ? (size_t)(sp - line) : len;
			const char *val = sp ? sp + 1 : line + len;
			size_t vlen = len - (size_t)(val - line);
			uint64_t v, *dst = NULL, scale = 1;
			bool *seen = NULL;
			char key[32];

			if (klen >= sizeof(key))
				klen = sizeof(key) - 1;
			memcpy(key, line, klen);
			key[klen] = '\0';
			if (!strcmp(key, "nr_periods")) {
				dst = &out->nr_periods, seen = &have_periods;
			} else if (!strcmp(key, "nr_throttled")) {
				dst = &out->nr_throttled, seen = &have_throttled;
			} else if (!strcmp(key, "throttled_time")) {
				dst = &out->throttled_ns, seen = &have_time;
			} else if (!strcmp(key, "throttled_usec")) {
				dst = &out->throttled_ns, seen = &have_time, scale = 1000;
			}
			if (dst) {
				int r = parse_u64(val, vlen, &v);

				if (!sp || r < 0)
					return vmact_err_set(err, EINVAL,
							     "cpu.stat: %s: value is not a "
							     "non-negative integer", key);
				if (v > UINT64_MAX / scale)
					return vmact_err_set(err, ERANGE, "cpu.stat: %s: out of range",
							     key);
				*dst = v * scale;
				*seen = true;
			}
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	if (!have_periods)
		return vmact_err_set(err, EINVAL, "cpu.stat: nr_periods: missing");
	if (!have_throttled)
		return vmact_err_set(err, EINVAL, "cpu.stat: nr_throttled: missing");
	if (!have_time)
		return vmact_err_set(err, EINVAL,
				     "cpu.stat: throttled_time/throttled_usec: missing");
	return 0;
}

int smp_cpu_stat_read(const char *dir, struct smp_cpu_stat *out, struct vmact_err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	char buf[4096];
	ssize_t n;
	size_t len = 0;

	if (asprintf(&path, "%s/cpu.stat", dir) < 0)
		return vmact_err_set(err, ENOMEM, "cpu.stat: out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	if (n < 0)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	buf[len] = '\0';
	if (smp_cpu_stat_parse(buf, out, err) < 0)
		return vmact_err_prefix(err, "%s", path);
	return 0;
}
