/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/vmactl/top.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/vmactl/client.h"
#include "cli/vmactl/render.h"

#define EVENTS_SHOWN 6

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_winch(int sig)
{
	(void)sig; /* only wakes poll(): the next frame reads the new size */
}

static void term_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* Writes text line by line, each cleared to its end, at most rows lines. */
static unsigned put_lines(const char *text, unsigned rows)
{
	unsigned n = 0;

	while (*text && n < rows) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);

		fwrite(text, 1, len, stdout);
		fputs("\033[K\n", stdout);
		n++;
		text += len + (nl ? 1 : 0);
	}
	return n;
}

static void frame(const char *socket, const json_t *vms, json_t *events, const char *error,
		  unsigned rows, unsigned cols)
{
	char *text = NULL, when[16];
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	time_t now = time(NULL);
	struct tm tm;
	size_t i, n = json_array_size(events);
	unsigned used, ev_rows;

	if (!m)
		return;
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(m, "vmactl top - %s - vmactd %s - %zu VM%s - q quits\n", when, socket,
		json_array_size(vms), json_array_size(vms) == 1 ? "" : "s");
	if (error)
		fprintf(m, "error: %s\n", error);
	fputc('\n', m);
	ctl_render_status(m, vms, cols);
	fclose(m);
	ev_rows = rows > 12 ? EVENTS_SHOWN + 2 : 0;
	fputs("\033[H", stdout);
	used = put_lines(text ? text : "", rows - ev_rows);
	free(text);
	if (ev_rows && n) {
		fputs("\033[K\nRecent events:\033[K\n", stdout);
		used += 2;
		for (i = n > EVENTS_SHOWN ? n - EVENTS_SHOWN : 0; i < n; i++) {
			text = NULL;
			m = open_memstream(&text, &len);
			if (!m)
				break;
			ctl_render_event(m, json_array_get(events, i), cols);
			fclose(m);
			used += put_lines(text, 1);
			free(text);
		}
	}
	(void)used;
	fputs("\033[J", stdout); /* clears what the previous frame had below */
	fflush(stdout);
}

/* Appends the new events to the kept ones (at most EVENTS_SHOWN). */
static void poll_events(const char *socket, uint64_t *since, json_t *kept)
{
	char path[64];
	json_t *doc = NULL, *ev;
	long status;
	size_t i;
	struct vmact_err err = { 0 };

	snprintf(path, sizeof(path), "/v1/events?since=%llu", (unsigned long long)*since);
	if (ctl_call(socket, "GET", path, NULL, 5, &status, &doc, &err) < 0)
		return;
	json_array_foreach(json_object_get(doc, "events"), i, ev)
		json_array_append(kept, ev);
	while (json_array_size(kept) > EVENTS_SHOWN)
		json_array_remove(kept, 0);
	*since = (uint64_t)json_integer_value(json_object_get(doc, "last_seq"));
	json_decref(doc);
}

int ctl_top(const char *socket, unsigned iterations, bool json, struct vmact_err *err)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction sw = { .sa_handler = on_winch };
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO), screen = false;
	json_t *events = json_array(), *vms = NULL;
	uint64_t since = 0;
	unsigned done = 0;
	int r = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGWINCH, &sw, NULL);
	while (!stop) {
		json_t *doc = NULL;
		struct vmact_err e = { 0 };
		long status;
		char c;

		r = ctl_call(socket, "GET", "/v1/vms", NULL, 5, &status, &doc, &e);
		if (r < 0 && !screen) {
			/* Unreachable from the start: an error, not a screen. */
			vmact_err_set(err, -r, "%s", e.msg);
			break;
		}
		if (json) {
			json_t *snap = json_pack("{s:f,s:O}", "time", (double)time(NULL), "vms",
						 json_object_get(doc, "vms"));
			char *line = snap ? json_dumps(snap, JSON_COMPACT) : NULL;

			if (line)
				printf("%s\n", line);
			fflush(stdout);
			free(line);
			json_decref(snap);
			screen = true;
		} else {
			unsigned rows, cols;

			if (!screen) {
				if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
					raw = saved;
					raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
					raw.c_cc[VMIN] = 0;
					raw.c_cc[VTIME] = 0;
					tcsetattr(STDIN_FILENO, TCSANOW, &raw);
				} else {
					tty = false;
				}
				fputs("\033[?1049h\033[?25l",
				      stdout); /* alternate screen, no cursor */
				screen = true;
			}
			if (doc)
				json_decref(vms), vms = json_incref(json_object_get(doc, "vms"));
			poll_events(socket, &since, events);
			term_size(&rows, &cols);
			frame(socket, vms ? vms : json_array(), events, r < 0 ? e.msg : NULL, rows,
			      cols);
		}
		r = 0;
		json_decref(doc);
		if (iterations && ++done >= iterations)
			break;
		/* One second, or until a key: q quits, anything else redraws. */
		{
			struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
			struct timespec until, now;
			int left = 1000;

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += 1;
			while (!stop && left > 0) {
				int n = poll(&p, tty ? 1 : 0, left);

				if (n > 0) {
					if (read(STDIN_FILENO, &c, 1) != 1)
						tty = false; /* stdin closed: only signals end it */
					else if (c == 'q' || c == 'Q')
						stop = 1;
					else
						break;
				}
				clock_gettime(CLOCK_MONOTONIC, &now);
				left = (int)((until.tv_sec - now.tv_sec) * 1000 +
					     (until.tv_nsec - now.tv_nsec) / 1000000);
			}
		}
	}
	if (screen && !json) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		if (tty)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	}
	json_decref(vms);
	json_decref(events);
	return r;
}
