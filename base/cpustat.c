/* SPDX-License-Identifier: Apache-2.0 */
#include "base/cpustat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"

/* Strict unsigned decimal of exactly n bytes. */
static int parse_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EPROTO;
		if (v > (UINT64_MAX - (uint64_t)(p[i] - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

enum {
	K_PERIODS,
	K_THROTTLED,
	K_THROTTLED_TIME, /* v1, ns */
	K_THROTTLED_USEC, /* v2 */
	K_BURSTS,
	K_BURST_TIME, /* v1, ns */
	K_BURST_USEC, /* v2 */
	K_USAGE_USEC, /* v2 */
	K_COUNT,
};

static const struct {
	const char *name;
	uint64_t scale; /* to ns */
} keys[K_COUNT] = {
	[K_PERIODS] = { "nr_periods", 1 },
	[K_THROTTLED] = { "nr_throttled", 1 },
	[K_THROTTLED_TIME] = { "throttled_time", 1 },
	[K_THROTTLED_USEC] = { "throttled_usec", 1000 },
	[K_BURSTS] = { "nr_bursts", 1 },
	[K_BURST_TIME] = { "burst_time", 1 },
	[K_BURST_USEC] = { "burst_usec", 1000 },
	[K_USAGE_USEC] = { "usage_usec", 1000 },
};

static uint64_t *key_field(struct vmact_cpustat *st, int k)
{
	switch (k) {
	case K_PERIODS:
		return &st->nr_periods;
	case K_THROTTLED:
		return &st->nr_throttled;
	case K_THROTTLED_TIME:
	case K_THROTTLED_USEC:
		return &st->throttled_ns;
	case K_BURSTS:
		return &st->nr_bursts;
	case K_BURST_TIME:
	case K_BURST_USEC:
		return &st->burst_ns;
	default:
		return &st->usage_ns;
	}
}

int vmact_cpustat_parse(const char *text, struct vmact_cpustat *out, struct vmact_err *err)
{
	struct vmact_cpustat st = { 0 };
	bool seen[K_COUNT] = { false };
	const char *line = text;

	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *sp = memchr(line, ' ', len);
		size_t klen = sp ? (size_t)(sp - line) : len;
		int k;

		for (k = 0; k < K_COUNT; k++)
			if (strlen(keys[k].name) == klen && !memcmp(line, keys[k].name, klen))
				break;
		if (k < K_COUNT) {
			const char *val = sp ? sp + 1 : line + len;
			size_t vlen = len - (size_t)(val - line);
			uint64_t v;
			int r = parse_u64(val, vlen, &v);

			if (seen[k])
				return vmact_err_set(err, EPROTO, "cpu.stat: %s: appears twice",
						     keys[k].name);
			if (r == -ERANGE || (r == 0 && v > UINT64_MAX / keys[k].scale))
				return vmact_err_set(err, ERANGE, "cpu.stat: %s: out of range",
						     keys[k].name);
			if (!sp || r < 0)
				return vmact_err_set(
					err, EPROTO,
					"cpu.stat: %s: value is not a non-negative integer",
					keys[k].name);
			*key_field(&st, k) = v * keys[k].scale;
			seen[k] = true;
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	if (!seen[K_PERIODS])
		return vmact_err_set(err, EPROTO, "cpu.stat: nr_periods: missing");
	if (!seen[K_THROTTLED])
		return vmact_err_set(err, EPROTO, "cpu.stat: nr_throttled: missing");
	if (seen[K_THROTTLED_TIME] && seen[K_THROTTLED_USEC])
		return vmact_err_set(err, EPROTO,
				     "cpu.stat: both throttled_time (v1) and throttled_usec (v2)");
	if (!seen[K_THROTTLED_TIME] && !seen[K_THROTTLED_USEC])
		return vmact_err_set(err, EPROTO,
				     "cpu.stat: throttled_time/throttled_usec: missing");
	st.version = seen[K_THROTTLED_TIME] ? 1 : 2;
	/* v2 shows usage whatever controllers are enabled. */
	if (st.version == 2 && !seen[K_USAGE_USEC])
		return vmact_err_set(err, EPROTO, "cpu.stat: usage_usec: missing");
	if (st.version == 1 && (seen[K_BURST_USEC] || seen[K_USAGE_USEC]))
		return vmact_err_set(err, EPROTO, "cpu.stat: v2 field %s beside throttled_time",
				     seen[K_USAGE_USEC] ? "usage_usec" : "burst_usec");
	if (st.version == 2 && seen[K_BURST_TIME])
		return vmact_err_set(err, EPROTO,
				     "cpu.stat: v1 field burst_time beside "
				     "throttled_usec");
	st.has_usage = seen[K_USAGE_USEC];
	*out = st;
	return 0;
}

/* The whole file from its start (pread: the descriptor may be re-read),
 * parsed; errors name dir's cpu.stat. */
static int read_fd(int fd, const char *dir, struct vmact_cpustat *out, struct vmact_err *err)
{
	char buf[VMACT_CPUSTAT_MAX];
	size_t len = 0;
	ssize_t n;

	while ((n = pread(fd, buf + len, sizeof(buf) - len, (off_t)len)) > 0) {
		size_t asked = sizeof(buf) - len;

		len += (size_t)n;
		if (len == sizeof(buf))
			return vmact_err_set(err, EFBIG, "%s/cpu.stat: longer than %d bytes", dir,
					     VMACT_CPUSTAT_MAX - 1);
		/* Linux gives a read of a cgroup (or regular) file all it
		 * has up to what was asked: a short read is the end, and
		 * the read that would return 0 is one syscall per policy
		 * tick and VM saved. */
		if ((size_t)n < asked)
			break;
	}
	if (n < 0)
		return vmact_err_set(err, errno, "%s/cpu.stat: %s", dir, strerror(errno));
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		return vmact_err_set(err, EPROTO, "%s/cpu.stat: holds a NUL byte", dir);
	if (vmact_cpustat_parse(buf, out, err) < 0)
		return vmact_err_prefix(err, "%s/cpu.stat", dir);
	return 0;
}

static int open_stat(const char *dir, struct vmact_err *err)
{
	_cleanup_free_ char *path = NULL;
	int fd;

	if (asprintf(&path, "%s/cpu.stat", dir) < 0)
		return vmact_err_set(err, ENOMEM, "cpu.stat: out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	return fd;
}

int vmact_cpustat_read_cached(const char *dir, int *fd, struct vmact_cpustat *out,
			      struct vmact_err *err)
{
	int r;

	if (*fd >= 0) {
		if (read_fd(*fd, dir, out, NULL) == 0)
			return 0;
		close(*fd);
		*fd = -1;
	}
	r = open_stat(dir, err);
	if (r < 0)
		return r;
	*fd = r;
	r = read_fd(*fd, dir, out, err);
	if (r < 0 || *fd >= VMACT_CPUSTAT_KEEP_FD_MAX) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

int vmact_cpustat_read(const char *dir, struct vmact_cpustat *out, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;

	return vmact_cpustat_read_cached(dir, &fd, out, err);
}

int vmact_cpustat_delta(const struct vmact_cpustat *prev, const struct vmact_cpustat *cur,
			struct vmact_cpustat *delta)
{
	bool both_usage = prev->has_usage && cur->has_usage;

	if (cur->nr_periods < prev->nr_periods || cur->nr_throttled < prev->nr_throttled ||
	    cur->throttled_ns < prev->throttled_ns || cur->nr_bursts < prev->nr_bursts ||
	    cur->burst_ns < prev->burst_ns || (both_usage && cur->usage_ns < prev->usage_ns)) {
		*delta = *cur;
		return 1;
	}
	*delta = (struct vmact_cpustat){
		.version = cur->version,
		.nr_periods = cur->nr_periods - prev->nr_periods,
		.nr_throttled = cur->nr_throttled - prev->nr_throttled,
		.throttled_ns = cur->throttled_ns - prev->throttled_ns,
		.nr_bursts = cur->nr_bursts - prev->nr_bursts,
		.burst_ns = cur->burst_ns - prev->burst_ns,
		.has_usage = both_usage,
		.usage_ns = both_usage ? cur->usage_ns - prev->usage_ns : 0,
	};
	return 0;
}
