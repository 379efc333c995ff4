/* SPDX-License-Identifier: Apache-2.0 */
/* The messages between vmactd and a VM's guest worker, vmact-guestd
 * (doc/privsep.md): one fixed-size record per SOCK_SEQPACKET datagram,
 * each field fixed, strings only as bounded NUL-terminated arrays. The
 * worker parses the guest's bytes; vmactd trusts nothing it says:
 * act_privsep_decode_from_worker() checks every field of every message. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define ACT_PRIVSEP_TEXT_MAX 128

enum act_privsep_type {
	/* vmactd -> worker */
	ACT_PRIVSEP_PING = 1,         /* seq: answered by a PONG with the same seq */
	ACT_PRIVSEP_REQUEST,          /* seq, flags UP, milli_cpu, mem_bytes */
	ACT_PRIVSEP_DIAL_REPLY,       /* code: 0 (a socket attached) or -errno; text: why */
	ACT_PRIVSEP_SCRAPE = 4,       /* seq, flags LFC: one scrape of the VM's exporter */
	ACT_PRIVSEP_LISTEN_REPLY = 5, /* code: 0 (a listening socket attached) or -errno; text */
	ACT_PRIVSEP_STOP = 6,         /* informant: unregister and exit */
	/* worker -> vmactd */
	ACT_PRIVSEP_PONG = 16, /* seq of the PING */
	ACT_PRIVSEP_DONE,      /* seq of the REQUEST, code: enum act_approval */
	ACT_PRIVSEP_CONNECTED,
	ACT_PRIVSEP_LOST,    /* flags DROPPED */
	ACT_PRIVSEP_CHANGED, /* flags MAY_RESIZE, APPROVES */
	ACT_PRIVSEP_UPSCALE, /* flags CPU, MEMORY (at least one) */
	ACT_PRIVSEP_DIAL,    /* open a connection to the VM's endpoint (flags LFC) */
	/* The answer to a SCRAPE (seq, flags as the SCRAPE's), code 0 or
	 * -errno. System figures: spare[0] load1 and spare[1] load5 in
	 * thousandths, mem_bytes the memory usage, spare[2] the cached
	 * bytes. LFC: spare[0] the number of windows the WINDOWS records
	 * before it carried. An error: text (printable, not empty) and
	 * spare[0] the HTTP status, 0 when none. */
	ACT_PRIVSEP_METRICS = 23,
	/* seq of the SCRAPE: the next ACT_PRIVSEP_WINDOWS_PER_MSG LFC windows in
	 * spare[], thousandths of a page (the last record's unused ones 0) */
	ACT_PRIVSEP_WINDOWS = 24,
	ACT_PRIVSEP_LISTEN = 25, /* informant: a listening socket for a registration */
};

/* flags */
#define ACT_PRIVSEP_F_UP         0x1u /* REQUEST: upscale notification (else downscale) */
#define ACT_PRIVSEP_F_DROPPED    0x1u /* LOST: the pending request will not complete */
#define ACT_PRIVSEP_F_MAY_RESIZE 0x1u /* CHANGED */
#define ACT_PRIVSEP_F_APPROVES   0x2u /* CHANGED */
#define ACT_PRIVSEP_F_CPU        0x1u /* UPSCALE */
#define ACT_PRIVSEP_F_MEMORY     0x2u /* UPSCALE */
#define ACT_PRIVSEP_F_LFC        0x1u /* SCRAPE, METRICS, DIAL: the LFC exporter, not the system one */

/* Bounds of a REQUEST's target: what a VM can have (doc/privsep.md). */
#define ACT_PRIVSEP_MAX_MILLI_CPU (1024ULL * 1000ULL)
#define ACT_PRIVSEP_MAX_MEM_BYTES (1ULL << 50)
/* Bounds of the guest's figures (METRICS, WINDOWS): loads up to a
 * million, in thousandths; at most the LFC windows the scaling core keeps
 * (agent-glue/codec/exporter.h), each at most ACT_PRIVSEP_MAX_MEM_BYTES of 8 KiB
 * pages, in thousandths of a page. */
#define ACT_PRIVSEP_MILLI           1000ULL
#define ACT_PRIVSEP_MAX_LOAD_MILLI  (1000000ULL * ACT_PRIVSEP_MILLI)
#define ACT_PRIVSEP_MAX_WINDOWS     1440u
#define ACT_PRIVSEP_WINDOWS_PER_MSG 4u
#define ACT_PRIVSEP_MAX_PAGE_MILLI  ((ACT_PRIVSEP_MAX_MEM_BYTES / 8192ULL) * ACT_PRIVSEP_MILLI)

/* The wire record, host byte order (both ends are on the same host and
 * built together). 192 bytes; every unused field is zero. */
struct act_privsep_msg {
	uint16_t type;
	uint16_t flags;
	uint32_t seq;
	int32_t code;
	uint32_t reserved;
	uint64_t milli_cpu;
	uint64_t mem_bytes;
	uint64_t spare[4];
	char text[ACT_PRIVSEP_TEXT_MAX];
};
_Static_assert(sizeof(struct act_privsep_msg) == 192, "the record's size is part of the format");

/* The type's name ("ping", "done"...) or NULL. */
const char *act_privsep_type_name(unsigned type);

/* A message from the worker: exactly one record, a worker type, only the
 * fields and flags that type has, within range; else -EBADMSG (-EMSGSIZE
 * for a wrong length) with err naming the field. */
int act_privsep_decode_from_worker(const void *buf, size_t len, struct act_privsep_msg *out,
				   struct vmact_err *err);
/* A message from vmactd, checked the same way (the worker's side). */
int act_privsep_decode_from_daemon(const void *buf, size_t len, struct act_privsep_msg *out,
				   struct vmact_err *err);

/* Sets text from a string, cut to the array. */
void act_privsep_set_text(struct act_privsep_msg *m, const char *s);
