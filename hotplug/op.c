/* SPDX-License-Identifier: Apache-2.0 */
/* Actuation: one worker thread per operation, at most one operation per VM.
 * Each worker re-reads the live state after every libvirt call and reports
 * what was actually achieved; the libvirt return code is only a hint. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/macro.h"
#include "hotplug/internal.h"
#include "hotplug/xml.h"
#include "base/time.h"

#define POLL_US 20000ULL

/* Waits until `until` (monotonic µs), a kick for this op, or close. Returns
 * false when the connection is closing. */
static bool wait_kick(struct hp_op *op, uint64_t until)
{
	struct hp_conn *c = op->conn;
	struct timespec ts = { .tv_sec = (time_t)(until / 1000000ULL),
			       .tv_nsec = (long)(until % 1000000ULL) * 1000L };
	bool open;

	pthread_mutex_lock(&c->lock);
	if (!op->kicks && !c->closing)
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	op->kicks = 0;
	open = !c->closing;
	pthread_mutex_unlock(&c->lock);
	return open;
}

/* Re-reads the live state, waiting for a reconnect (until the deadline) when
 * libvirtd went away. */
static int reread(struct hp_op *op, uint64_t deadline, struct hp_state *st, struct vmact_err *err)
{
	struct hp_conn *c = op->conn;

	for (;;) {
		virConnectPtr vc = hp_conn_get(c, NULL);
		int r;

		if (vc) {
			vmact_err_reset(err);
			r = hp_state_read_vc(c, vc, op->uuid, st, err);
			/* libvirt reports a dropped socket as an internal error. */
			if (r < 0 && virConnectIsAlive(vc) != 1)
				r = -ECONNRESET;
			virConnectClose(vc);
			if (r != -ECONNRESET)
				return r;
		}
		if (vmact_now_usec() >= deadline)
			return vmact_err_set(err, ECONNRESET,
					     "lost the connection to libvirtd and it did not come "
					     "back before the deadline");
		if (!wait_kick(op, vmact_now_usec() + 50000))
			return vmact_err_set(err, ECANCELED, "connection closed by vmact");
	}
}

/* Runs one libvirt call on a fresh domain handle. */
typedef int (*dom_call_fn)(virDomainPtr dom, const void *arg);

static int call_dom(struct hp_op *op, const char *what, dom_call_fn fn, const void *arg,
		    struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(op->conn, NULL);
	virDomainPtr dom;
	int r = 0;

	if (!vc)
		return vmact_err_set(err, ECONNRESET, "%s: not connected to libvirtd", what);
	dom = virDomainLookupByUUIDString(vc, op->uuid);
	if (!dom) {
		r = hp_virt_err(err, what);
	} else {
		if (fn(dom, arg) < 0)
			r = hp_virt_err(err, what);
		virDomainFree(dom);
	}
	if (r < 0 && virConnectIsAlive(vc) != 1) {
		err->code = ECONNRESET;
		r = -ECONNRESET;
	}
	virConnectClose(vc);
	return r;
}

static int set_vcpus(virDomainPtr dom, const void *arg)
{
	return virDomainSetVcpusFlags(dom, *(const unsigned *)arg, VIR_DOMAIN_AFFECT_LIVE);
}

/* Unplugs one named vCPU. Used instead of a count because after an unplug
 * that outlived libvirt's wait libvirt's count is stale, and a count would
 * make it unplug a vCPU QEMU no longer has. */
static int disable_vcpu(virDomainPtr dom, const void *arg)
{
	char map[16];

	snprintf(map, sizeof(map), "%d", *(const int *)arg);
	return virDomainSetVcpu(dom, map, 0, VIR_DOMAIN_AFFECT_LIVE);
}

/* The highest vCPU QEMU still runs, never vCPU 0; -1 when unknown. */
static int last_qemu_vcpu(const struct hp_state *st)
{
	int hi;

	if (st->qemu_vcpus < 0 || !st->qemu_vcpu_mask)
		return -1;
	hi = 63 - __builtin_clzll(st->qemu_vcpu_mask);
	return hi > 0 ? hi : -1;
}

static int update_device(virDomainPtr dom, const void *arg)
{
	return virDomainUpdateDeviceFlags(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

static int attach_device(virDomainPtr dom, const void *arg)
{
	return virDomainAttachDeviceFlags(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

static int detach_alias(virDomainPtr dom, const void *arg)
{
	return virDomainDetachDeviceAlias(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

/* Records the outcome: rc plus the message, keeping the first error. */
static void finish(struct hp_op *op, int rc, const struct vmact_err *e)
{
	op->res.rc = rc;
	if (rc < 0 && e && e->code)
		op->res.err = *e;
	else if (rc < 0 && !op->res.err.code)
		vmact_err_set(&op->res.err, -rc, "%s", strerror(-rc));
}

/* After a failed call or at the end: the state that is now true. An
 * operation whose VM disappeared reports -ENODEV whatever happened before. */
static int settle(struct hp_op *op, uint64_t deadline, int rc, struct vmact_err *e)
{
	struct vmact_err rerr = { 0 };
	int r = reread(op, deadline + 10000000ULL, &op->res.state, &rerr);

	op->res.state_valid = r == 0;
	if (r == -ENODEV) {
		vmact_err_reset(&op->res.err);
		vmact_err_set(&op->res.err, ENODEV, "domain went away during the operation (%s)",
			      rerr.msg);
		op->res.rc = -ENODEV;
		return -ENODEV;
	}
	if (r < 0 && rc == 0) {
		finish(op, r, &rerr);
		return r;
	}
	finish(op, rc, e);
	return rc;
}

/* Every operation starts from the live state; false when it could not be
 * read (the result is then already settled). */
static bool begin(struct hp_op *op, uint64_t deadline)
{
	struct vmact_err e = { 0 };
	int r = reread(op, deadline, &op->res.state, &e);

	if (r < 0) {
		settle(op, deadline, r, &e);
		return false;
	}
	op->res.state_valid = true;
	return true;
}

static bool poisoned(struct hp_op *op, const struct hp_state *st)
{
	struct hp_conn *c = op->conn;
	bool p = false;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_poisoned; i++)
		p |= !strcmp(c->poisoned[i].uuid, op->uuid) && c->poisoned[i].id == st->id;
	pthread_mutex_unlock(&c->lock);
	return p;
}

static void poison(struct hp_op *op, const struct hp_state *st)
{
	struct hp_conn *c = op->conn;

	pthread_mutex_lock(&c->lock);
	/* A ring: the oldest entry is recycled; 64 VMs with a broken unplug
	 * since the daemon started is far beyond a real host. */
	c->poisoned[c->poison_next] = (struct hp_poisoned){ .id = st->id };
	snprintf(c->poisoned[c->poison_next].uuid, HP_UUID_LEN, "%s", op->uuid);
	c->poison_next = (c->poison_next + 1) % ARRAY_SIZE(c->poisoned);
	if (c->n_poisoned < ARRAY_SIZE(c->poisoned))
		c->n_poisoned++;
	pthread_mutex_unlock(&c->lock);
}

static void op_vcpus(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	unsigned target = op->req.vcpus;
	bool timed_out_call = false, broken;
	int r;

	if (!begin(op, deadline))
		return;
	/* After an unplug libvirt did not see through, re-plugging crashed
	 * QEMU 7.2: refuse growth on that VM until it restarts. Unplugging
	 * the vCPUs QEMU still runs keeps working (one named vCPU at a time). */
	if (hp_state_vcpu_desync(st))
		poison(op, st);
	broken = poisoned(op, st);
	if (broken && target > hp_state_vcpus(st)) {
		if (hp_state_vcpu_desync(st))
			vmact_err_set(&e, EIO,
				      "libvirt counts %u vCPUs while QEMU runs %u: an earlier vCPU "
				      "unplug outlived libvirt's wait; refusing to plug vCPUs on this "
				      "VM (re-plugging crashes QEMU 7.2) until it restarts",
				      st->vcpus_current, hp_state_vcpus(st));
		else
			vmact_err_set(&e, EIO,
				      "an earlier vCPU unplug on this VM outlived libvirt's wait; "
				      "plugging vCPUs stays refused until the VM restarts, even though "
				      "libvirt's count is right again (re-plugging crashed QEMU 7.2)");
		finish(op, -EIO, &e);
		return;
	}
	if (target < 1 || target > st->vcpus_max) {
		vmact_err_set(&e, ERANGE, "vcpus %u outside 1..%u (<vcpu> maximum)", target,
			      st->vcpus_max);
		finish(op, -ERANGE, &e);
		return;
	}
	while (hp_state_vcpus(st) != target) {
		unsigned cur = hp_state_vcpus(st);
		/* Plug in one call; unplug one vCPU per call so that libvirt's
		 * 5 s wait covers a single vCPU and a timeout leaves a known
		 * state. */
		unsigned step = target > cur ? target : cur - 1;
		int victim = step < cur ? last_qemu_vcpu(st) : -1;

		if (victim > 0)
			r = call_dom(op, "virDomainSetVcpu", disable_vcpu, &victim, &e);
		else if (step < cur && broken)
			r = vmact_err_set(&e, EIO, "cannot tell which vCPU QEMU still runs");
		else
			r = call_dom(op, "virDomainSetVcpusFlags", set_vcpus, &step, &e);
		/* An unplug libvirt did not see through (its wait timed out, or
		 * libvirtd went away meanwhile, after which it resyncs and the
		 * desync is no longer visible) leaves QEMU 7.2 in the state in
		 * which a re-plug crashed it: refuse later vCPU changes. */
		if (step < cur && (r == -ETIMEDOUT || r == -ECONNRESET))
			poison(op, st);
		if (r == -ETIMEDOUT) {
			/* "vcpu unplug request timed out": the unplug may still
			 * complete; poll below decides. */
			timed_out_call = true;
			vmact_err_reset(&e);
		} else if (r < 0) {
			settle(op, deadline, r, &e);
			return;
		}
		for (;;) {
			if ((r = reread(op, deadline, st, &e)) < 0) {
				settle(op, deadline, r, &e);
				return;
			}
			if (hp_state_vcpus(st) == step)
				break;
			if (vmact_now_usec() >= deadline) {
				vmact_err_set(&e, ETIMEDOUT,
					      "vCPUs: asked for %u, QEMU runs %u after the deadline%s",
					      step, hp_state_vcpus(st),
					      timed_out_call ? " (libvirt's unplug wait timed out)"
							     : "");
				finish(op, -ETIMEDOUT, &e);
				return;
			}
			if (!wait_kick(op, vmact_now_usec() + POLL_US)) {
				finish(op, -ECANCELED, NULL);
				return;
			}
		}
		if (hp_state_vcpu_desync(st))
			poison(op, st);
	}
	if (hp_state_vcpu_desync(st)) {
		/* rc 0: the target is reached; the message stays as a warning. */
		vmact_err_set(&op->res.err, EIO,
			      "vCPU unplug completed in QEMU (%u vCPUs) but libvirt still counts %u: "
			      "libvirt's 5 s unplug wait timed out and it never saw the removal; "
			      "plugging vCPUs on this VM stays refused until it restarts",
			      hp_state_vcpus(st), st->vcpus_current);
		op->res.rc = 0;
		return;
	}
	finish(op, 0, NULL);
}

/* The live <memory> element of a virtio-mem device with <requested>
 * replaced; libvirt matches update XML against the device definition, so
 * start from what it reported. */
static int virtio_mem_xml(struct hp_op *op, uint64_t requested_kib, const char *alias,
			  char **out, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(op->conn, NULL);
	_cleanup_free_ char *xml = NULL;
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlNodePtr devs = NULL, found = NULL, root;
	xmlBufferPtr buf;
	virDomainPtr dom;
	char num[32];

	if (!vc)
		return vmact_err_set(err, ECONNRESET, "not connected to libvirtd");
	dom = virDomainLookupByUUIDString(vc, op->uuid);
	if (dom) {
		xml = virDomainGetXMLDesc(dom, 0);
		virDomainFree(dom);
	}
	if (!xml) {
		int r = hp_virt_err(err, "virDomainGetXMLDesc");

		virConnectClose(vc);
		return r;
	}
	virConnectClose(vc);
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET);
	if (!doc || !(root = xmlDocGetRootElement(doc)))
		return vmact_err_set(err, EIO, "live domain XML is not well-formed");
	for (xmlNodePtr n = root->children; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && !xmlStrcmp(n->name, BAD_CAST "devices"))
			devs = n;
	for (xmlNodePtr n = devs ? devs->children : NULL; n && !found; n = n->next) {
		_cleanup_xmlfree_ xmlChar *model = NULL;

		if (n->type != XML_ELEMENT_NODE || xmlStrcmp(n->name, BAD_CAST "memory"))
			continue;
		model = xmlGetProp(n, BAD_CAST "model");
		if (!model || xmlStrcmp(model, BAD_CAST "virtio-mem"))
			continue;
		for (xmlNodePtr a = n->children; a; a = a->next) {
			_cleanup_xmlfree_ xmlChar *name = NULL;

			if (a->type != XML_ELEMENT_NODE || xmlStrcmp(a->name, BAD_CAST "alias"))
				continue;
			name = xmlGetProp(a, BAD_CAST "name");
			if (name && !xmlStrcmp(name, BAD_CAST alias))
				found = n;
		}
	}
	if (!found)
		return vmact_err_set(err, ENODEV, "virtio-mem device '%s' not in live XML", alias);
	snprintf(num, sizeof(num), "%" PRIu64, requested_kib);
	for (xmlNodePtr t = found->children; t; t = t->next) {
		if (t->type != XML_ELEMENT_NODE || xmlStrcmp(t->name, BAD_CAST "target"))
			continue;
		for (xmlNodePtr x = t->children, next; x; x = next) {
			next = x->next;
			if (x->type != XML_ELEMENT_NODE)
				continue;
			if (!xmlStrcmp(x->name, BAD_CAST "requested")) {
				xmlNodeSetContent(x, BAD_CAST num);
				xmlSetProp(x, BAD_CAST "unit", BAD_CAST "KiB");
			} else if (!xmlStrcmp(x->name, BAD_CAST "current")) {
				/* output-only */
				xmlUnlinkNode(x);
				xmlFreeNode(x);
			}
		}
	}
	buf = xmlBufferCreate();
	if (!buf)
		return -ENOMEM;
	xmlNodeDump(buf, doc, found, 0, 0);
	*out = strdup((const char *)xmlBufferContent(buf));
	xmlBufferFree(buf);
	return *out ? 0 : -ENOMEM;
}

static void op_virtio_mem(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	const struct hp_memdev *d;
	_cleanup_free_ char *xml = NULL;
	char alias[HP_ALIAS_MAX];
	uint64_t want = op->req.requested_kib;
	int r;

	if (!begin(op, deadline))
		return;
	d = hp_state_memdev(st, op->req.alias, HP_MEM_VIRTIO_MEM);
	if (!d || !d->alias[0]) {
		vmact_err_set(&e, EINVAL, "no virtio-mem device%s%s in the domain",
			      op->req.alias[0] ? " " : "", op->req.alias);
		finish(op, -EINVAL, &e);
		return;
	}
	snprintf(alias, sizeof(alias), "%s", d->alias);
	if (want > d->size_kib || (d->block_kib && want % d->block_kib)) {
		vmact_err_set(&e, ERANGE,
			      "virtio-mem %s: requested %" PRIu64 " KiB must be a multiple of "
			      "the %" PRIu64 " KiB block and at most the %" PRIu64 " KiB size",
			      alias, want, d->block_kib, d->size_kib);
		finish(op, -ERANGE, &e);
		return;
	}
	if (d->requested_kib != want) {
		if ((r = virtio_mem_xml(op, want, alias, &xml, &e)) < 0 ||
		    (r = call_dom(op, "virDomainUpdateDeviceFlags", update_device, xml, &e)) < 0) {
			settle(op, deadline, r, &e);
			return;
		}
	}
	for (;;) {
		if ((r = reread(op, deadline, st, &e)) < 0) {
			settle(op, deadline, r, &e);
			return;
		}
		d = hp_state_memdev(st, alias, HP_MEM_VIRTIO_MEM);
		if (!d) {
			vmact_err_set(&e, ENODEV, "virtio-mem %s vanished", alias);
			finish(op, -ENODEV, &e);
			return;
		}
		if (d->current_kib == want)
			break;
		if (vmact_now_usec() >= deadline) {
			/* Time out the intent, not the device: the guest may
			 * still get there; the state says how far it got. */
			vmact_err_set(&e, ETIMEDOUT,
				      "virtio-mem %s: requested %" PRIu64 " KiB, guest has %" PRIu64
				      " KiB at the deadline", alias, want, d->current_kib);
			finish(op, -ETIMEDOUT, &e);
			return;
		}
		/* MEMORY_DEVICE_SIZE_CHANGE kicks us; the poll is a fallback. */
		if (!wait_kick(op, vmact_now_usec() + 100000)) {
			finish(op, -ECANCELED, NULL);
			return;
		}
	}
	finish(op, 0, NULL);
}

static void op_dimm_attach(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	_cleanup_free_ char *xml = NULL;
	unsigned before;
	int r;

	if (!begin(op, deadline))
		return;
	before = hp_state_dimms(st);
	if (!op->req.dimm_kib || before >= st->slots ||
	    st->memory_kib + op->req.dimm_kib > st->max_memory_kib) {
		vmact_err_set(&e, ERANGE,
			      "DIMM of %" PRIu64 " KiB does not fit: %u of %u slots used, %" PRIu64
			      " of %" PRIu64 " KiB <maxMemory>", op->req.dimm_kib, before, st->slots,
			      st->memory_kib, st->max_memory_kib);
		finish(op, -ERANGE, &e);
		return;
	}
	if (asprintf(&xml,
		     "<memory model='dimm'><target><size unit='KiB'>%" PRIu64
		     "</size><node>0</node></target></memory>", op->req.dimm_kib) < 0) {
		finish(op, -ENOMEM, NULL);
		return;
	}
	r = call_dom(op, "virDomainAttachDeviceFlags", attach_device, xml, &e);
	settle(op, deadline, r, &e);
	if (op->res.rc == 0 && op->res.state_valid && hp_state_dimms(st) != before + 1) {
		vmact_err_set(&e, EIO, "DIMM attach returned success but the domain has %u DIMMs",
			      hp_state_dimms(st));
		finish(op, -EIO, &e);
	}
}

static void op_dimm_detach(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	const struct hp_memdev *d;
	char alias[HP_ALIAS_MAX];
	int r;

	if (!begin(op, deadline))
		return;
	d = hp_state_memdev(st, op->req.alias, HP_MEM_DIMM);
	if (!d || !d->alias[0]) {
		vmact_err_set(&e, EINVAL, "no DIMM%s%s to remove", op->req.alias[0] ? " " : "",
			      op->req.alias);
		finish(op, -EINVAL, &e);
		return;
	}
	snprintf(alias, sizeof(alias), "%s", d->alias);
	/* Purely asynchronous: completion is DEVICE_REMOVED (or the device
	 * missing from the live XML), refusal DEVICE_REMOVAL_FAILED. */
	if ((r = call_dom(op, "virDomainDetachDeviceAlias", detach_alias, alias, &e)) < 0) {
		settle(op, deadline, r, &e);
		return;
	}
	for (;;) {
		bool removed, refused, stopped;

		pthread_mutex_lock(&op->conn->lock);
		removed = !strcmp(op->removed_alias, alias);
		refused = !strcmp(op->removal_failed_alias, alias);
		stopped = op->stopped;
		pthread_mutex_unlock(&op->conn->lock);
		if (stopped) {
			/* QEMU 7.2 has crashed on DIMM unplug here. */
			settle(op, deadline, -ENODEV, NULL);
			return;
		}
		if ((r = reread(op, deadline, st, &e)) < 0) {
			settle(op, deadline, r, &e);
			return;
		}
		if (removed || !hp_state_memdev(st, alias, HP_MEM_DIMM))
			break;
		if (refused) {
			vmact_err_set(&e, EBUSY, "guest refused to release DIMM %s "
				      "(DEVICE_REMOVAL_FAILED)", alias);
			finish(op, -EBUSY, &e);
			return;
		}
		if (vmact_now_usec() >= deadline) {
			vmact_err_set(&e, ETIMEDOUT, "DIMM %s still present at the deadline", alias);
			finish(op, -ETIMEDOUT, &e);
			return;
		}
		if (!wait_kick(op, vmact_now_usec() + 100000)) {
			finish(op, -ECANCELED, NULL);
			return;
		}
	}
	/* DEVICE_REMOVED can precede the XML update by a moment. */
	settle(op, deadline, 0, NULL);
	if (op->res.rc == 0 && op->res.state_valid && hp_state_memdev(st, alias, HP_MEM_DIMM)) {
		vmact_err_set(&e, EIO, "DIMM %s reported removed but still in the live XML", alias);
		finish(op, -EIO, &e);
	}
}

void *hp_op_thread(void *arg)
{
	struct hp_op *op = arg;
	uint64_t start = vmact_now_usec();
	uint64_t deadline = start + (op->req.timeout_ms ? op->req.timeout_ms : 30000) * 1000ULL;
	struct hp_qitem *it;

	switch (op->req.kind) {
	case HP_OP_SET_VCPUS:
		op_vcpus(op, deadline);
		break;
	case HP_OP_VIRTIO_MEM:
		op_virtio_mem(op, deadline);
		break;
	case HP_OP_DIMM_ATTACH:
		op_dimm_attach(op, deadline);
		break;
	case HP_OP_DIMM_DETACH:
		op_dimm_detach(op, deadline);
		break;
	}
	op->res.elapsed_us = vmact_now_usec() - start;
	it = calloc(1, sizeof(*it));
	if (it) {
		it->op = op;
		hp_queue_push(op->conn, it);
	}
	/* Without memory for the queue item the result is lost, but the op
	 * stays listed and is joined and freed by hp_conn_free. */
	return NULL;
}

void hp_op_complete(struct hp_conn *c, struct hp_op *op)
{
	struct hp_op **pp;

	pthread_join(op->thread, NULL);
	pthread_mutex_lock(&c->lock);
	for (pp = &c->ops; *pp; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	/* Unlisted before the callback so that it may start the next one. */
	op->fn(c, op->uuid, &op->res, op->userdata);
	free(op);
}

bool hp_op_in_flight(struct hp_conn *c, const char *uuid)
{
	bool busy = false;

	pthread_mutex_lock(&c->lock);
	for (struct hp_op *op = c->ops; op; op = op->next)
		busy |= !strcmp(op->uuid, uuid);
	pthread_mutex_unlock(&c->lock);
	return busy;
}

int hp_op_start(struct hp_conn *c, const char *uuid, const struct hp_op_req *req, hp_op_fn fn,
		void *userdata, struct vmact_err *err)
{
	struct hp_op *op;
	int r;

	if (!uuid || strlen(uuid) >= HP_UUID_LEN)
		return vmact_err_set(err, EINVAL, "bad domain uuid");
	if (req->kind > HP_OP_DIMM_DETACH)
		return vmact_err_set(err, EINVAL, "unknown operation %d", (int)req->kind);
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->conn = c;
	snprintf(op->uuid, sizeof(op->uuid), "%s", uuid);
	op->req = *req;
	op->fn = fn;
	op->userdata = userdata;
	pthread_mutex_lock(&c->lock);
	if (c->closing) {
		pthread_mutex_unlock(&c->lock);
		free(op);
		return vmact_err_set(err, ESHUTDOWN, "connection is closing");
	}
	for (struct hp_op *o = c->ops; o; o = o->next)
		if (!strcmp(o->uuid, uuid)) {
			pthread_mutex_unlock(&c->lock);
			free(op);
			return vmact_err_set(err, EBUSY,
					     "an operation on domain %s is still in flight", uuid);
		}
	/* Listed (under the lock) before the thread runs, so events for this
	 * domain already kick it. */
	r = -pthread_create(&op->thread, NULL, hp_op_thread, op);
	if (r < 0) {
		pthread_mutex_unlock(&c->lock);
		free(op);
		return vmact_err_set(err, -r, "cannot start the operation thread");
	}
	op->next = c->ops;
	c->ops = op;
	pthread_mutex_unlock(&c->lock);
	return 0;
}
