/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl's text output of the control API's documents
 * (doc/control-api.md): the status table, one VM in detail, one event
 * line. Pure: from JSON to text, for the unit tests too. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* "1250m", "2" CPU from milli-CPU, "-" for null. */
void ctl_fmt_cpu(const json_t *milli, char *buf, size_t len);
/* "512Mi", "2Gi" from bytes, "-" for null. */
void ctl_fmt_mem(const json_t *bytes, char *buf, size_t len);
/* A {"milli_cpu","mem_bytes"} pair as "1250m/2Gi", "-" for null. */
void ctl_fmt_res(const json_t *res, char *buf, size_t len);

/* The status table's header and one row per VM; rows are cut at width
 * columns (0: never). */
void ctl_render_status_header(FILE *f, unsigned width);
void ctl_render_status_row(FILE *f, const json_t *vm, unsigned width);
void ctl_render_status(FILE *f, const json_t *vms, unsigned width);
void ctl_render_show(FILE *f, const json_t *vm);
/* vmactl check: the layout as it runs and as defined, part by part. */
void ctl_render_check(FILE *f, const json_t *c);
/* GET /v1/vms's "hook": a line when libvirtd must be restarted for the
 * hook (or it is not installed and a start came without it). */
void ctl_render_hook(FILE *f, const json_t *hook);
/* The line that says the VMs are polled, and why (GET /v1/vms "detection");
 * nothing when the kernel watches them. */
void ctl_render_detection(FILE *f, const json_t *detection);
/* vmactl check --fix: each part's fix, a shell command under a comment
 * that says which part and whether it acts live or at the next cold
 * start; f NULL: only counts them. Returns how many. */
unsigned ctl_render_fixes(FILE *f, const json_t *c);
/* "12:03:04.120 #42 vm-1 decision: grow to 2 vCPUs ..." */
void ctl_render_event(FILE *f, const json_t *ev, unsigned width);
