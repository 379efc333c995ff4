/* SPDX-License-Identifier: Apache-2.0 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "tests/lib/file.h"

char *th_read_file(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb)
				return NULL;
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = 0;
	return TAKE_PTR(buf);
}

int th_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	bool ok;

	if (!f)
		return -errno;
	ok = fputs(text, f) >= 0;
	if (fclose(f) != 0 || !ok)
		return -EIO;
	return 0;
}

unsigned th_count_in_file(const char *path, const char *needle)
{
	_cleanup_free_ char *buf = th_read_file(path);
	unsigned n = 0;

	if (!buf)
		return 0;
	for (const char *p = buf; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

size_t th_read_fd_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	while (len + 1 < cap) {
		ssize_t r = read(fd, buf + len, cap - len - 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	return len;
}

ssize_t th_read_some(int fd, char *buf, size_t cap, size_t *len)
{
	ssize_t n;

	if (*len + 1 >= cap)
		return -ENOSPC;
	n = read(fd, buf + *len, cap - *len - 1);
	if (n < 0)
		return -errno;
	*len += (size_t)n;
	buf[*len] = '\0';
	return n;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -errno : 0;
}

int th_rm_rf(const char *path)
{
	int r = nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);

	return r < 0 ? -errno : r;
}

int th_scratch_dir(const char *prefix, char *dir, size_t len)
{
	return th_scratch_dir_at("/tmp", prefix, dir, len);
}

int th_scratch_dir_at(const char *parent, const char *prefix, char *dir, size_t len)
{
	int r;

	if ((size_t)snprintf(dir, len, "%s/%s-XXXXXX", parent, prefix) >= len) {
		dir[0] = 0;
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0) {
		r = -errno;
		rmdir(dir);
		dir[0] = 0;
		return r;
	}
	return 0;
}

void th_print_log_tail(const char *path, const char *title, size_t tail)
{
	_cleanup_free_ char *buf = th_read_file(path);
	size_t len;

	if (!buf)
		return;
	len = strlen(buf);
	fprintf(stderr, "---- %s (tail) ----\n%s\n", title, len > tail ? buf + len - tail : buf);
}

void th_remove_pins(const char *pin_root)
{
	static const char *const maps[] = { "vmact_readout", "vmact_stats", "vmact_tasks",
					    "vmact_vms" };
	char p[PATH_MAX];

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", pin_root, maps[i]);
		unlink(p);
	}
	rmdir(pin_root);
}

unsigned th_log_port(const char *log, const char *needle)
{
	_cleanup_free_ char *text = th_read_file(log);
	char *at = text ? strstr(text, needle) : NULL;

	at = at ? strstr(at, "(port ") : NULL;
	return at ? (unsigned)atoi(at + 6) : 0;
}

pid_t th_log_guest_worker(const char *log, const char *vm)
{
	_cleanup_free_ char *buf = th_read_file(log);
	char needle[160];
	pid_t pid = 0;

	snprintf(needle, sizeof(needle), "%s: guest worker ", vm);
	for (char *p = buf; p && (p = strstr(p, needle)); p++) {
		char what[16];
		int v;

		if (sscanf(p + strlen(needle), "%d %15s", &v, what) == 2 &&
		    (!strcmp(what, "started") || !strcmp(what, "restarted")))
			pid = v;
	}
	return pid;
}
