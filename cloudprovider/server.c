/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/server.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "base/macro.h"
#include "base/time.h"
#include "cloudprovider/arena.h"
#include "cloudprovider/rpc.h"
#include "cloudprovider/status.h"

/* Requests posted ahead of calls, so a burst is matched at once. */
#define SPARE_REQUESTS 8u
/* How often idle call threads look for calls past their request deadline. */
#define SWEEP_MS 200
/* What one call may make protobuf-c and the answer allocate, over the
 * message itself (see cloudprovider/arena.h). */
#define ARENA_FACTOR 16u
#define ARENA_MIN    (4u << 20)
/* Answer this much before the client's deadline, so the answer is not
 * lost to the client's own timer. */
#define DEADLINE_MARGIN_USEC (50 * 1000ULL)

enum call_state { CALL_REQUESTED, CALL_RECEIVING, CALL_SENDING };

struct call {
	struct cp_server *s;
	enum call_state state;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
	int cancelled;
	uint64_t matched_usec;  /* when it was matched */
	uint64_t received_usec; /* when its message arrived */
	bool timed_out;         /* cancelled by the sweep */
	grpc_status_code code;
	char message[VMACT_ERR_MSG_MAX];
	grpc_slice details_slice;
	grpc_byte_buffer *reply;
	const struct cp_rpc_method *method;
	VMACT_LIST_FIELDS(struct call, live);
};

struct cp_server {
	struct cp_server_config cfg;
	grpc_server *server;
	grpc_completion_queue *cq;
	int port;
	pthread_t *threads;
	unsigned nthreads;
	pthread_mutex_t lock;
	struct call *live;  /* matched, not yet finished */
	unsigned requested; /* posted, not yet matched */
	unsigned active;    /* matched, not yet finished */
	bool stopping;
	bool shut_down; /* the server's shutdown tag came */
	bool cq_closed;
	int shutdown_tag;
};

static void call_free(struct call *c)
{
	grpc_call_details_destroy(&c->details);
	grpc_metadata_array_destroy(&c->md);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->reply)
		grpc_byte_buffer_destroy(c->reply);
	grpc_slice_unref(c->details_slice);
	if (c->call)
		grpc_call_unref(c->call);
	free(c);
}

/* Once the server is shut down and no call is left, the queue can close;
 * the call threads then see GRPC_QUEUE_SHUTDOWN and end. With s->lock held. */
static void maybe_close_queue(struct cp_server *s)
{
	if (s->shut_down && !s->active && !s->requested && !s->cq_closed) {
		s->cq_closed = true;
		grpc_completion_queue_shutdown(s->cq);
	}
}

/* Keeps SPARE_REQUESTS posted while there is room under max_calls. */
static void top_up(struct cp_server *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->stopping && s->requested < SPARE_REQUESTS &&
	       s->requested + s->active < s->cfg.max_calls) {
		struct call *c = calloc(1, sizeof(*c));

		if (!c)
			break;
		c->s = s;
		c->state = CALL_REQUESTED;
		c->details_slice = grpc_empty_slice();
		grpc_call_details_init(&c->details);
		grpc_metadata_array_init(&c->md);
		if (grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->cq, s->cq,
					     c) != GRPC_CALL_OK) {
			call_free(c);
			break;
		}
		s->requested++;
	}
	pthread_mutex_unlock(&s->lock);
}

/* The call's deadline on vmact's clock, capped by call_timeout and less
 * the margin. */
static uint64_t call_deadline(const struct call *c)
{
	uint64_t now = vmact_now_usec(), cap = now + c->s->cfg.call_timeout_usec;
	gpr_timespec left =
		gpr_time_sub(gpr_convert_clock_type(c->details.deadline, GPR_CLOCK_MONOTONIC),
			     gpr_now(GPR_CLOCK_MONOTONIC));
	uint64_t left_usec;

	if (gpr_time_cmp(left, gpr_time_0(GPR_TIMESPAN)) <= 0)
		return now;
	/* gpr_inf_future and other far deadlines: the cap */
	if (left.tv_sec > 24 * 3600)
		return cap;
	left_usec = (uint64_t)left.tv_sec * VMACT_USEC_PER_SEC + (uint64_t)left.tv_nsec / 1000;
	left_usec = left_usec > DEADLINE_MARGIN_USEC ? left_usec - DEADLINE_MARGIN_USEC : 0;
	return now + left_usec < cap ? now + left_usec : cap;
}

static void set_status(struct call *c, grpc_status_code code, const char *msg)
{
	c->code = code;
	snprintf(c->message, sizeof(c->message), "%s", msg ? msg : "");
}

/* Decodes, runs the method, encodes its answer into c->reply or sets the
 * status. */
static void handle(struct call *c)
{
	struct cp_server *s = c->s;
	struct vmact_err err = { 0 };
	struct cp_arena arena;
	struct cp_rpc_ctx ctx;
	grpc_byte_buffer_reader reader;
	ProtobufCMessage *req = NULL, *resp = NULL;
	grpc_slice in, out;
	size_t len;
	char *peer;
	int r;

	if (!c->payload) {
		set_status(c, GRPC_STATUS_INVALID_ARGUMENT, "no request message");
		return;
	}
	if (!grpc_byte_buffer_reader_init(&reader, c->payload)) {
		set_status(c, GRPC_STATUS_INTERNAL, "cannot read the request message");
		return;
	}
	in = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	len = GRPC_SLICE_LENGTH(in);
	cp_arena_init(&arena, len * ARENA_FACTOR > ARENA_MIN ? len * ARENA_FACTOR : ARENA_MIN);
	req = protobuf_c_message_unpack(c->method->desc->input, &arena.pb, len,
					GRPC_SLICE_START_PTR(in));
	grpc_slice_unref(in);
	if (!req) {
		set_status(c,
			   arena.failed ? GRPC_STATUS_RESOURCE_EXHAUSTED
					: GRPC_STATUS_INVALID_ARGUMENT,
			   arena.failed ? "request decodes to more than this server allows"
					: "request is not a valid message of its type");
		cp_arena_free(&arena);
		return;
	}
	if (s->cfg.on_served) {
		peer = grpc_call_get_peer(c->call);
		if (peer)
			s->cfg.on_served(s->cfg.ud, peer);
		gpr_free(peer);
	}
	ctx = (struct cp_rpc_ctx){
		.cache = s->cfg.cache,
		.groupd = s->cfg.groupd,
		.deadline_usec = call_deadline(c),
		.arena = &arena,
	};
	r = c->method->fn(&ctx, req, &resp, &err);
	if (r < 0) {
		set_status(c, cp_status_from_errno(r), err.msg);
	} else {
		len = protobuf_c_message_get_packed_size(resp);
		out = grpc_slice_malloc(len);
		protobuf_c_message_pack(resp, GRPC_SLICE_START_PTR(out));
		c->reply = grpc_raw_byte_buffer_create(&out, 1);
		grpc_slice_unref(out);
		set_status(c, GRPC_STATUS_OK, NULL);
	}
	cp_arena_free(&arena);
}

/* Sends the answer (or only the status) and waits for the call to close. */
static void finish(struct call *c)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
	n++;
	if (c->reply) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n].data.send_message.send_message = c->reply;
		n++;
	}
	c->details_slice = grpc_slice_from_copied_string(c->message);
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = c->code;
	ops[n].data.send_status_from_server.status_details = c->code == GRPC_STATUS_OK
								     ? NULL
								     : &c->details_slice;
	n++;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
	n++;
	pthread_mutex_lock(&c->s->lock);
	c->state = CALL_SENDING;
	pthread_mutex_unlock(&c->s->lock);
	/* Cannot fail with these ops on a call of ours; were it to, the call
	 * would never finish, so it is cancelled and left to gRPC. */
	if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK)
		grpc_call_cancel(c->call, NULL);
}

static void on_matched(struct call *c, bool ok)
{
	struct cp_server *s = c->s;
	const char *path = (const char *)GRPC_SLICE_START_PTR(c->details.method);
	grpc_op op;

	pthread_mutex_lock(&s->lock);
	s->requested--;
	if (ok) {
		s->active++;
		VMACT_LIST_PREPEND(live, s->live, c);
	}
	maybe_close_queue(s);
	pthread_mutex_unlock(&s->lock);
	/* not matched: the server is shutting down */
	if (!ok) {
		call_free(c);
		return;
	}
	top_up(s);
	c->matched_usec = vmact_now_usec();
	c->method = cp_rpc_find(path, GRPC_SLICE_LENGTH(c->details.method));
	if (!c->method) {
		set_status(c, GRPC_STATUS_UNIMPLEMENTED, "no such method in vmact-cloudprovider");
		finish(c);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->payload;
	pthread_mutex_lock(&s->lock);
	c->state = CALL_RECEIVING;
	pthread_mutex_unlock(&s->lock);
	if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK) {
		set_status(c, GRPC_STATUS_INTERNAL, "cannot receive the request");
		finish(c);
	}
}

static void on_received(struct call *c, bool ok)
{
	struct cp_server *s = c->s;
	bool timed_out;

	pthread_mutex_lock(&s->lock);
	c->state = CALL_SENDING; /* out of the sweep's reach */
	timed_out = c->timed_out;
	pthread_mutex_unlock(&s->lock);
	c->received_usec = vmact_now_usec();
	if (timed_out)
		set_status(c, GRPC_STATUS_DEADLINE_EXCEEDED, "request not received in time");
	else if (!ok)
		set_status(c, GRPC_STATUS_CANCELLED, "the client went away");
	else
		handle(c);
	finish(c);
}

static void report(struct call *c)
{
	struct cp_server *s = c->s;
	char path[256], *peer = grpc_call_get_peer(c->call);
	struct cp_server_call info = {
		.method = path,
		.peer = peer ? peer : "",
		.code = c->code,
		.message = c->message,
		.usec = c->received_usec ? vmact_now_usec() - c->received_usec : 0,
		.changes = c->method && c->method->changes,
	};

	if (c->method) {
		snprintf(path, sizeof(path), "%s", c->method->desc->name);
	} else {
		/* the path as the client sent it: not NUL-terminated */
		size_t n = GRPC_SLICE_LENGTH(c->details.method);

		n = n < sizeof(path) - 1 ? n : sizeof(path) - 1;
		memcpy(path, GRPC_SLICE_START_PTR(c->details.method), n);
		path[n] = 0;
	}
	s->cfg.on_call(s->cfg.ud, &info);
	gpr_free(peer);
}

static void on_finished(struct call *c)
{
	struct cp_server *s = c->s;

	if (s->cfg.on_call)
		report(c);
	pthread_mutex_lock(&s->lock);
	VMACT_LIST_REMOVE(live, s->live, c);
	s->active--;
	maybe_close_queue(s);
	pthread_mutex_unlock(&s->lock);
	call_free(c);
	top_up(s);
}

/* Calls still waiting for their message after request_timeout: a client
 * that opened a stream and trickles or withholds it. */
static void sweep(struct cp_server *s)
{
	uint64_t now = vmact_now_usec();

	pthread_mutex_lock(&s->lock);
	for (struct call *c = s->live; c; c = c->live_next) {
		if (c->state != CALL_RECEIVING || c->timed_out ||
		    now - c->matched_usec < s->cfg.request_timeout_usec)
			continue;
		c->timed_out = true;
		grpc_call_cancel_with_status(c->call, GRPC_STATUS_DEADLINE_EXCEEDED,
					     "request not received in time", NULL);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *call_thread(void *arg)
{
	struct cp_server *s = arg;

	for (;;) {
		gpr_timespec dl = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					       gpr_time_from_millis(SWEEP_MS, GPR_TIMESPAN));
		grpc_event ev = grpc_completion_queue_next(s->cq, dl, NULL);
		struct call *c;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_QUEUE_TIMEOUT) {
			sweep(s);
			continue;
		}
		if (ev.tag == &s->shutdown_tag) {
			pthread_mutex_lock(&s->lock);
			s->shut_down = true;
			maybe_close_queue(s);
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		c = ev.tag;
		switch (c->state) {
		case CALL_REQUESTED:
			on_matched(c, ev.success);
			break;
		case CALL_RECEIVING:
			on_received(c, ev.success);
			break;
		case CALL_SENDING:
			on_finished(c);
			break;
		}
	}
	return NULL;
}

static grpc_arg int_arg(const char *key, long long v)
{
	grpc_arg a = { .type = GRPC_ARG_INTEGER, .key = (char *)key };

	a.value.integer = v > INT32_MAX ? INT32_MAX : (int)v;
	return a;
}

int cp_server_start(const struct cp_server_config *cfg, struct cp_server **out,
		    struct vmact_err *err)
{
	struct cp_server *s = calloc(1, sizeof(*s));
	grpc_server_credentials *creds;
	grpc_resource_quota *quota;
	grpc_channel_args args;
	grpc_arg a[9];
	int r;

	if (!s)
		return vmact_err_set(err, ENOMEM, "out of memory");
	s->cfg = *cfg;
	if (!s->cfg.max_message)
		s->cfg.max_message = 1u << 20;
	if (!s->cfg.max_streams)
		s->cfg.max_streams = 8;
	if (!s->cfg.max_calls)
		s->cfg.max_calls = 512;
	if (!s->cfg.workers)
		s->cfg.workers = 4;
	if (!s->cfg.request_timeout_usec)
		s->cfg.request_timeout_usec = 10 * VMACT_USEC_PER_SEC;
	if (!s->cfg.idle_timeout_usec)
		s->cfg.idle_timeout_usec = 300 * VMACT_USEC_PER_SEC;
	if (!s->cfg.call_timeout_usec)
		s->cfg.call_timeout_usec = 10 * VMACT_USEC_PER_SEC;
	pthread_mutex_init(&s->lock, NULL);

	/* Memory gRPC may hold for all connections' buffers: beyond it, gRPC
	 * sheds load instead of growing. */
	quota = grpc_resource_quota_create("vmact-cloudprovider");
	grpc_resource_quota_resize(quota, 256u << 20);
	a[0] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (long long)s->cfg.max_message);
	a[1] = int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, s->cfg.max_streams);
	a[2] = int_arg(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
		       (long long)(s->cfg.request_timeout_usec / 1000));
	a[3] = int_arg(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
		       (long long)(s->cfg.idle_timeout_usec / 1000));
	/* windows stay at their 64 KiB start: a stalled stream holds no more */
	a[4] = int_arg(GRPC_ARG_HTTP2_BDP_PROBE, 0);
	a[5] = int_arg(GRPC_ARG_MAX_METADATA_SIZE, 16 * 1024);
	a[6] = int_arg(GRPC_ARG_ENABLE_CHANNELZ, 0);
	a[7] = int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, 64 << 20);
	a[8] = (grpc_arg){ .type = GRPC_ARG_POINTER, .key = (char *)GRPC_ARG_RESOURCE_QUOTA };
	a[8].value.pointer.p = quota;
	a[8].value.pointer.vtable = grpc_resource_quota_arg_vtable();
	args = (grpc_channel_args){ .num_args = ARRAY_SIZE(a), .args = a };

	s->cq = grpc_completion_queue_create_for_next(NULL);
	s->server = grpc_server_create(&args, NULL);
	grpc_resource_quota_unref(quota);
	grpc_server_register_completion_queue(s->server, s->cq, NULL);
	creds = cfg->tls ? cp_tls_credentials(cfg->tls) : grpc_insecure_server_credentials_create();
	s->port = creds ? grpc_server_add_http2_port(s->server, cfg->address, creds) : 0;
	if (creds)
		grpc_server_credentials_release(creds);
	if (!s->port) {
		r = vmact_err_set(err, EADDRNOTAVAIL, "gRPC cannot serve on %s%s", cfg->address,
				  cfg->tls ? " with these certificates" : "");
		grpc_server_destroy(s->server);
		grpc_completion_queue_shutdown(s->cq);
		while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(s->cq);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return r;
	}
	grpc_server_start(s->server);
	top_up(s);
	s->threads = calloc(s->cfg.workers, sizeof(*s->threads));
	for (unsigned i = 0; s->threads && i < s->cfg.workers; i++) {
		if (pthread_create(&s->threads[i], NULL, call_thread, s) != 0)
			break;
		s->nthreads++;
	}
	if (!s->nthreads) {
		cp_server_stop(s);
		return vmact_err_set(err, EAGAIN, "cannot start the server's threads");
	}
	*out = s;
	return 0;
}

int cp_server_port(const struct cp_server *s)
{
	return strncmp(s->cfg.address, "unix:", 5) ? s->port : 0;
}

void cp_server_stop(struct cp_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->lock);
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
	grpc_server_cancel_all_calls(s->server);
	/* no call thread to drain the queue (start failed): drain it here */
	if (!s->nthreads)
		call_thread(s);
	for (unsigned i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	grpc_server_destroy(s->server);
	grpc_completion_queue_destroy(s->cq);
	pthread_mutex_destroy(&s->lock);
	free(s->threads);
	free(s);
}
