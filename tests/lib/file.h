/* SPDX-License-Identifier: Apache-2.0 */
/* Small files and scratch directories in tests: logs a child wrote,
 * templates, fake cgroupfs trees. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The whole file, NUL-terminated (malloc'd); NULL if unreadable. */
char *th_read_file(const char *path);

/* Prints the last tail bytes of a log file (a daemon's) on stderr under
 * a "---- title (tail) ----" line; nothing if it is unreadable. */
void th_print_log_tail(const char *path, const char *title, size_t tail);

/* Writes text to path (created or truncated); 0 or -errno. */
int th_write_file(const char *path, const char *text);

/* How often needle occurs in the file (0 if it is unreadable). */
unsigned th_count_in_file(const char *path, const char *needle);

/* The N of the first "(port N)" after needle in a daemon's log (the port
 * it chose for a listen address with port 0); 0 when there is none. */
unsigned th_log_port(const char *log, const char *needle);

/* The guest worker of VM `vm` in vmactd's log (doc/privsep.md): the pid
 * of its last "VM: guest worker PID started|restarted" line, 0 if none. */
pid_t th_log_guest_worker(const char *log, const char *vm);

/* Reads fd until EOF or cap-1 bytes, NUL-terminated; the length. */
size_t th_read_fd_all(int fd, char *buf, size_t cap);

/* Reads what fd has now, appending at buf+*len and keeping buf
 * NUL-terminated: the bytes read, 0 on EOF, -EAGAIN when nothing is
 * there yet, -ENOSPC when buf is full, or another -errno. */
ssize_t th_read_some(int fd, char *buf, size_t cap, size_t *len);

/* A scratch directory /tmp/PREFIX-XXXXXX (mkdtemp(3)) with mode 0755, its
 * path in dir (len bytes); 0, or -errno with dir empty. */
int th_scratch_dir(const char *prefix, char *dir, size_t len);
/* The same under parent instead of /tmp: for a daemon that must not see
 * its files under /tmp (a sandbox with PrivateTmp=). */
int th_scratch_dir_at(const char *parent, const char *prefix, char *dir, size_t len);

/* Removes path and everything under it (a scratch tree from mkdtemp(3));
 * 0 or -errno. */
int th_rm_rf(const char *path);

/* Removes the sampler's pinned maps under pin_root and the directory (what
 * a vmactd killed before its clean shutdown leaves on bpffs). */
void th_remove_pins(const char *pin_root);
