/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/ against real libvirtd and real TCG guests (tests/guest/). Every
 * guest is transient, named vmact-hp-<pid>-<n>, and destroyed at the end of
 * its test. The guest's own report (online CPUs, MemTotal) is the witness:
 * each test checks that what vmact says it achieved is what the guest sees.
 * No assertion on timing. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "hotplug/domain.h"
#include "hotplug/hotplug.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define GIB_KIB (1024UL * 1024UL)
#define MIB_KIB 1024UL

struct fx {
	sd_event *ev;
	struct hp_conn *hp;
	virConnectPtr vc; /* the test's own connection, for setup only */
	unsigned connected, disconnected, metadata_changed, stopped;
	char last_meta_uuid[HP_UUID_LEN];
};

struct op_wait {
	bool done;
	struct hp_op_result res;
};

static void on_event(struct hp_conn *c, const struct hp_event *ev, void *userdata)
{
	struct fx *f = userdata;

	switch (ev->kind) {
	case HP_EV_CONNECTED:
		f->connected++;
		break;
	case HP_EV_DISCONNECTED:
		f->disconnected++;
		break;
	case HP_EV_METADATA_CHANGED:
		f->metadata_changed++;
		snprintf(f->last_meta_uuid, sizeof(f->last_meta_uuid), "%s", ev->uuid);
		break;
	case HP_EV_DOMAIN_STOPPED:
		f->stopped++;
		break;
	default:
		break;
	}
}

static void on_op(struct hp_conn *c, const char *uuid, const struct hp_op_result *res,
		  void *userdata)
{
	struct op_wait *w = userdata;

	w->res = *res;
	w->done = true;
}

/* Runs the sd-event loop until cond() or the timeout (a bound against
 * hangs, not a performance assertion). */
static bool loop_until(struct fx *f, bool (*cond)(struct fx *, void *), void *arg, double secs)
{
	return TH_WAIT(f->ev, cond(f, arg), (uint64_t)(secs * VMACT_USEC_PER_SEC));
}

static bool op_done(struct fx *f, void *arg)
{
	return ((struct op_wait *)arg)->done;
}

static void run_op(struct fx *f, const char *uuid, const struct hp_op_req *req,
		   struct hp_op_result *res)
{
	struct op_wait w = { 0 };
	struct vmact_err err = { 0 };
	int r = hp_op_start(f->hp, uuid, req, on_op, &w, &err);

	if (r < 0)
		fail_msg("hp_op_start: %s", err.msg);
	assert_true(loop_until(f, op_done, &w, 120));
	*res = w.res;
	printf("# op %d on %s: rc=%d in %.0f ms%s%s\n", (int)req->kind, uuid, res->rc,
	       (double)res->elapsed_us / 1000.0, res->err.code ? ": " : "", res->err.msg);
}

static bool connected_once(struct fx *f, void *arg)
{
	return f->connected >= *(unsigned *)arg;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct vmact_err err = { 0 };
	unsigned one = 1;

	assert_non_null(f);
	assert_int_equal(sd_event_new(&f->ev), 0);
	if (hp_conn_new(f->ev, NULL, on_event, f, &f->hp, &err) < 0)
		fail_msg("hp_conn_new: %s", err.msg);
	f->vc = virConnectOpen(HP_URI_DEFAULT);
	assert_non_null(f->vc);
	assert_true(loop_until(f, connected_once, &one, 10));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	hp_conn_free(f->hp);
	if (f->vc)
		virConnectClose(f->vc);
	sd_event_unref(f->ev);
	free(f);
	return 0;
}

/* Other tests on this shared host may restart libvirtd too: the test's own
 * connection and domain handles are refreshed before every direct use. */
static virConnectPtr fx_vc(struct fx *f)
{
	if (!f->vc || virConnectIsAlive(f->vc) != 1) {
		if (f->vc)
			virConnectClose(f->vc);
		f->vc = virConnectOpen(HP_URI_DEFAULT);
	}
	return f->vc;
}

static virDomainPtr D(struct fx *f, struct tg_guest *g)
{
	virConnectPtr vc = fx_vc(f);

	if (g->dom && virDomainGetConnect(g->dom) != vc) {
		virDomainFree(g->dom);
		g->dom = NULL;
	}
	if (!g->dom && vc)
		g->dom = virDomainLookupByUUIDString(vc, g->uuid);
	return g->dom;
}

static int is_active(struct fx *f, struct tg_guest *g)
{
	virDomainPtr d = D(f, g);

	return d ? virDomainIsActive(d) : 0;
}

static void destroy_guest(struct fx *f, struct tg_guest *g)
{
	D(f, g);
	tg_destroy(g);
}

/* UUIDs of the guests a test started: a failed assertion longjmps out of
 * the test, so the per-test teardown destroys whatever is left. */
static char started[8][HP_UUID_LEN];
static size_t n_started;

static int cleanup_guests(void **state)
{
	struct fx *f = *state;

	fx_vc(f);
	for (size_t i = 0; i < n_started; i++) {
		virDomainPtr d = f->vc ? virDomainLookupByUUIDString(f->vc, started[i]) : NULL;

		if (d) {
			virDomainDestroy(d);
			virDomainFree(d);
		}
	}
	n_started = 0;
	return 0;
}

/* Boots a guest from the domain template tpl (NULL: the default) and waits
 * for its first status line. */
static void boot_template(struct fx *f, const char *metadata, const char *tpl, struct tg_guest *g,
			  struct tg_report *r)
{
	char msg[512];

	if (tg_start_template(fx_vc(f), "vmact-hp", metadata,
			      tpl ? tpl : getenv("VMACT_GUEST_TEMPLATE"),
			      getenv("VMACT_GUEST_CMDLINE"), g, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	if (n_started < 8)
		snprintf(started[n_started++], HP_UUID_LEN, "%s", g->uuid);
	if (!tg_wait(g, 0, NULL, NULL, 120, r)) {
		tg_destroy(g);
		fail_msg("guest %s did not report within 120 s", g->name);
	}
}

static void boot(struct fx *f, const char *metadata, struct tg_guest *g, struct tg_report *r)
{
	boot_template(f, metadata, NULL, g, r);
}

#define META_OK                                                          \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" \
	"<vmact:cpu min='1' max='3'/>"                                   \
	"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"   \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"                \
	"<vmact:monitor endpoint='ws://127.0.0.1:10301/monitor'/>"       \
	"<vmact:pod namespace='default' name='db-1'/></vmact:autoscaling>"

static bool meta_changed_for(struct fx *f, void *arg)
{
	return f->metadata_changed && !strcmp(f->last_meta_uuid, (const char *)arg);
}

static void discovery_and_metadata(void **state)
{
	struct fx *f = *state;
	struct tg_guest g, plain;
	struct tg_report r;
	struct hp_state *list = NULL, st;
	_cleanup_(hp_meta_done) struct hp_meta meta = { 0 };
	struct vmact_err err = { 0 };
	const struct hp_memdev *vm;
	size_t n = 0;
	bool found = false;
	int rc;

	boot(f, META_OK, &g, &r);
	boot(f, NULL, &plain, &r);
	assert_int_equal(hp_list_running(f->hp, &list, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].uuid, g.uuid)) {
			st = list[i];
			found = true;
		}
	free(list);
	assert_true(found);
	assert_string_equal(st.name, g.name);
	assert_int_equal(st.vcpus_max, 4);
	assert_int_equal(st.vcpus_current, 1);
	assert_int_equal(st.qemu_vcpus, 1);
	assert_int_equal(st.vcpus_hotpluggable, 3);
	assert_int_equal(st.base_kib, 512 * MIB_KIB);
	assert_int_equal(st.max_memory_kib, 4 * GIB_KIB);
	assert_int_equal(st.slots, 4);
	vm = hp_state_memdev(&st, NULL, HP_MEM_VIRTIO_MEM);
	assert_non_null(vm);
	assert_int_equal(vm->size_kib, GIB_KIB);
	assert_int_equal(vm->block_kib, 2048);
	assert_int_equal(vm->requested_kib, 0);
	assert_int_equal(vm->current_kib, 0);

	assert_int_equal(hp_meta_read(f->hp, g.uuid, &meta, &err), 0);
	assert_true(meta.enabled);
	assert_int_equal(meta.max.milli_cpu, 3000);
	assert_int_equal(meta.max.mem_bytes, 1536ULL << 20);
	assert_string_equal(meta.pod_name, "db-1");

	vmact_err_reset(&err);
	assert_int_equal(hp_meta_read(f->hp, plain.uuid, &meta, &err), -ENOENT);

	/* An operator's edit arrives as METADATA_CHANGE; the re-read names the
	 * bad element. */
	f->metadata_changed = 0;
	rc = virDomainSetMetadata(D(f, &g), VIR_DOMAIN_METADATA_ELEMENT,
				  "<autoscaling enabled='true'><cpu min='1' max='3'/>"
				  "<memory min='512Mi' max='1536Mi' method='ballon'/></autoscaling>",
				  HP_NS_PREFIX, HP_NS_URI, VIR_DOMAIN_AFFECT_LIVE);
	assert_int_equal(rc, 0);
	assert_true(loop_until(f, meta_changed_for, g.uuid, 30));
	vmact_err_reset(&err);
	assert_int_equal(hp_meta_read(f->hp, g.uuid, &meta, &err), -EINVAL);
	printf("# metadata error: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "<vmact:memory>: attribute 'method': 'ballon'"));

	destroy_guest(f, &plain);
	destroy_guest(f, &g);
}

/* The guest's control channel that the BPF sampler tests use to make load
 * rise and fall. */
static void guest_busy_channel(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	unsigned two = 2, zero = 0;

	boot(f, NULL, &g, &r);
	assert_int_equal(r.busy, 0);
	assert_int_equal(tg_cmd(&g, "busy 2"), 0);
	if (!tg_wait(&g, r.seq, tg_busy_eq, &two, 30, &r))
		fail_msg("guest reports busy=%u after 'busy 2'", r.busy);
	assert_int_equal(tg_cmd(&g, "idle"), 0);
	if (!tg_wait(&g, r.seq, tg_busy_eq, &zero, 30, &r))
		fail_msg("guest reports busy=%u after 'idle'", r.busy);
	destroy_guest(f, &g);
}

static void vcpus_1_3_1(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	struct hp_op_result res;
	struct hp_op_req req = { .kind = HP_OP_SET_VCPUS, .vcpus = 3, .timeout_ms = 30000 };
	struct vmact_err err = { 0 };
	unsigned want = 3, got;

	boot(f, NULL, &g, &r);
	assert_int_equal(r.cpus, 1);

	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, 0);
	assert_true(res.state_valid);
	assert_int_equal(hp_state_vcpus(&res.state), 3);
	assert_int_equal(res.state.vcpus_current, 3);
	if (!tg_wait(&g, r.seq, tg_cpus_eq, &want, 30, &r))
		fail_msg("guest sees %u CPUs, vmact achieved 3", r.cpus);

	/* Bounds are checked before anything changes. */
	req.vcpus = 5;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, -ERANGE);
	assert_int_equal(hp_state_vcpus(&res.state), 3);

	/* Unplug: libvirt 9.0 + QEMU 7.2 TCG times out after 5 s although the
	 * guest completed it, and then keeps counting the vCPU; vmact unplugs
	 * the vCPUs QEMU still runs one by name and reports what QEMU and the
	 * guest run. */
	req.vcpus = 1;
	run_op(f, g.uuid, &req, &res);
	assert_true(res.state_valid);
	got = hp_state_vcpus(&res.state);
	if (res.rc == -ECONNRESET) {
		/* Another user of the host restarted libvirtd during libvirt's
		 * unplug wait: whatever QEMU runs is what vmact reports. */
		assert_true(got < 3);
		if (!tg_wait(&g, r.seq, tg_cpus_eq, &got, 30, &r))
			fail_msg("guest sees %u CPUs, vmact reports %u achieved", r.cpus, got);
		destroy_guest(f, &g);
		return;
	}
	if (res.rc != 0)
		fail_msg("unplug 3->1: rc %d: %s", res.rc, res.err.msg);
	assert_int_equal(got, 1);
	want = 1;
	if (!tg_wait(&g, r.seq, tg_cpus_eq, &want, 30, &r))
		fail_msg("guest sees %u CPUs, vmact reports 1 achieved", r.cpus);
	req.vcpus = 3;
	if (res.state.vcpus_refusal == HP_VCPUS_DESYNC) {
		/* The libvirt/QEMU desync is reported, never hidden... */
		assert_non_null(strstr(res.err.msg, "libvirt"));
		/* ...and plugging is refused instead of crashing QEMU. */
		run_op(f, g.uuid, &req, &res);
		assert_int_equal(res.rc, -EIO);
		assert_int_equal(is_active(f, &g), 1);
		assert_int_equal(hp_state_read(f->hp, g.uuid, &res.state, &err), 0);
		assert_int_equal(hp_state_vcpus(&res.state), 1);
		assert_true(res.state.vcpus_refused);
	} else {
		printf("# vCPU unplug 3->1 completed cleanly in libvirt too\n");
		run_op(f, g.uuid, &req, &res);
		assert_int_equal(res.rc, 0);
		assert_int_equal(hp_state_vcpus(&res.state), 3);
	}
	destroy_guest(f, &g);
}

static void virtio_mem_0_1g_256m(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	struct hp_op_result res;
	struct hp_op_req req = { .kind = HP_OP_VIRTIO_MEM, .timeout_ms = 60000 };
	unsigned long base, want;

	boot(f, NULL, &g, &r);
	base = r.memtotal_kb;

	req.requested_kib = GIB_KIB;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, 0);
	assert_int_equal(hp_state_memdev(&res.state, NULL, HP_MEM_VIRTIO_MEM)->current_kib,
			 GIB_KIB);
	assert_int_equal(hp_state_mem_kib(&res.state), 512 * MIB_KIB + GIB_KIB);
	want = base + GIB_KIB;
	if (!tg_wait(&g, r.seq, tg_mem_eq, &want, 60, &r))
		fail_msg("guest MemTotal %lu kB, want %lu", r.memtotal_kb, want);

	req.requested_kib = 256 * MIB_KIB;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, 0);
	assert_int_equal(hp_state_memdev(&res.state, NULL, HP_MEM_VIRTIO_MEM)->current_kib,
			 256 * MIB_KIB);
	want = base + 256 * MIB_KIB;
	if (!tg_wait(&g, r.seq, tg_mem_eq, &want, 60, &r))
		fail_msg("guest MemTotal %lu kB, want %lu", r.memtotal_kb, want);

	/* Outside the device: refused, nothing changes. */
	req.requested_kib = 2 * GIB_KIB;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, -ERANGE);
	req.requested_kib = 256 * MIB_KIB + 1;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, -ERANGE);
	assert_int_equal(hp_state_memdev(&res.state, NULL, HP_MEM_VIRTIO_MEM)->requested_kib,
			 256 * MIB_KIB);
	destroy_guest(f, &g);
}

static void dimm_plug_unplug(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	struct hp_op_result res;
	struct hp_op_req req = { .kind = HP_OP_DIMM_ATTACH,
				 .dimm_kib = 256 * MIB_KIB,
				 .timeout_ms = 30000 };
	unsigned long base, want;

	boot(f, NULL, &g, &r);
	base = r.memtotal_kb;

	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, 0);
	assert_int_equal(hp_state_dimms(&res.state), 1);
	want = base + 256 * MIB_KIB;
	if (!tg_wait(&g, r.seq, tg_mem_eq, &want, 60, &r))
		fail_msg("guest MemTotal %lu kB after DIMM plug, want %lu", r.memtotal_kb, want);

	/* Beyond <maxMemory>: refused before libvirt is asked. */
	req.dimm_kib = 8 * GIB_KIB;
	run_op(f, g.uuid, &req, &res);
	assert_int_equal(res.rc, -ERANGE);
	assert_int_equal(hp_state_dimms(&res.state), 1);

	req = (struct hp_op_req){ .kind = HP_OP_DIMM_DETACH, .timeout_ms = 20000 };
	run_op(f, g.uuid, &req, &res);
	switch (res.rc) {
	case 0:
		assert_int_equal(hp_state_dimms(&res.state), 0);
		if (!tg_wait(&g, r.seq, tg_mem_eq, &base, 60, &r))
			fail_msg("guest MemTotal %lu kB after DIMM unplug, want %lu", r.memtotal_kb,
				 base);
		break;
	case -ENODEV:
		/* QEMU 7.2 has crashed on DIMM unplug here: reported as gone. */
		assert_int_equal(is_active(f, &g), 0);
		assert_non_null(strstr(res.err.msg, "went away"));
		break;
	case -ETIMEDOUT:
	case -EBUSY:
		/* The guest kept the DIMM: still listed, guest still has it. */
		assert_true(res.state_valid);
		assert_int_equal(hp_state_dimms(&res.state), 1);
		assert_true(tg_report(&g, &r));
		assert_int_equal(r.memtotal_kb, base + 256 * MIB_KIB);
		break;
	default:
		fail_msg("unexpected DIMM detach result %d: %s", res.rc, res.err.msg);
	}
	destroy_guest(f, &g);
}

static void destroyed_mid_operation(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	struct op_wait w = { 0 };
	struct vmact_err err = { 0 };
	struct hp_op_req req = { .kind = HP_OP_VIRTIO_MEM,
				 .requested_kib = 512 * MIB_KIB,
				 .timeout_ms = 60000 };

	boot(f, NULL, &g, &r);
	/* A paused guest cannot follow <requested>: the operation is
	 * guaranteed to be waiting when the VM is destroyed. */
	assert_int_equal(virDomainSuspend(D(f, &g)), 0);
	assert_int_equal(hp_op_start(f->hp, g.uuid, &req, on_op, &w, &err), 0);
	/* One operation per VM. */
	assert_int_equal(hp_op_start(f->hp, g.uuid, &req, on_op, &w, &err), -EBUSY);
	assert_true(hp_op_in_flight(f->hp, g.uuid));
	sd_event_run(f->ev, 300000);
	assert_false(w.done);
	assert_int_equal(virDomainDestroy(D(f, &g)), 0);
	assert_true(loop_until(f, op_done, &w, 30));
	printf("# destroyed mid-operation: rc=%d %s\n", w.res.rc, w.res.err.msg);
	assert_int_equal(w.res.rc, -ENODEV);
	assert_false(w.res.state_valid);
	assert_false(hp_op_in_flight(f->hp, g.uuid));
	destroy_guest(f, &g);
}

static bool reconnected(struct fx *f, void *arg)
{
	return f->disconnected >= 1 && f->connected >= 2 && hp_conn_is_up(f->hp);
}

static void libvirtd_restart_mid_operation(void **state)
{
	struct fx *f = *state;
	struct tg_guest g;
	struct tg_report r;
	struct op_wait w = { 0 };
	struct vmact_err err = { 0 };
	struct hp_op_req req = { .kind = HP_OP_VIRTIO_MEM,
				 .requested_kib = 512 * MIB_KIB,
				 .timeout_ms = 90000 };
	struct hp_state st;
	unsigned long want;

	struct hp_op_result vres;
	struct hp_op_req vreq = { .kind = HP_OP_SET_VCPUS, .vcpus = 2, .timeout_ms = 30000 };
	bool desync;

	boot(f, NULL, &g, &r);
	want = r.memtotal_kb + 512 * MIB_KIB;
	/* First break libvirt's vCPU view the way QEMU 7.2 does (plug, then an
	 * unplug that outlives libvirt's wait), to check that a restart which
	 * makes libvirt's count right again does not re-enable vCPU changes. */
	run_op(f, g.uuid, &vreq, &vres);
	assert_int_equal(vres.rc, 0);
	vreq.vcpus = 1;
	run_op(f, g.uuid, &vreq, &vres);
	/* (A libvirtd restart by another user of the host would end it with
	 * -ECONNRESET; then there is no desync to check.) */
	desync = vres.rc != -ECONNRESET && vres.state.vcpus_refusal == HP_VCPUS_DESYNC;
	assert_int_equal(virDomainSuspend(D(f, &g)), 0);
	f->connected = 1;
	f->disconnected = 0;
	assert_int_equal(hp_op_start(f->hp, g.uuid, &req, on_op, &w, &err), 0);
	sd_event_run(f->ev, 300000);

	assert_int_equal(th_restart_libvirtd(), 0);
	assert_true(loop_until(f, reconnected, NULL, 60));
	if (w.done)
		fail_msg("operation ended during the restart: rc=%d %s", w.res.rc, w.res.err.msg);
	assert_true(hp_op_in_flight(f->hp, g.uuid));

	/* The test's own connection died too: D() reopens it. */
	assert_int_equal(virDomainResume(D(f, &g)), 0);

	/* The operation survives: it re-reads state on the new connection
	 * (whose MEMORY_DEVICE_SIZE_CHANGE callbacks were re-registered). */
	assert_true(loop_until(f, op_done, &w, 90));
	printf("# op across libvirtd restart: rc=%d %s\n", w.res.rc, w.res.err.msg);
	assert_int_equal(w.res.rc, 0);
	assert_true(w.res.state_valid);
	assert_int_equal(hp_state_memdev(&w.res.state, NULL, HP_MEM_VIRTIO_MEM)->current_kib,
			 512 * MIB_KIB);
	if (!tg_wait(&g, r.seq, tg_mem_eq, &want, 60, &r))
		fail_msg("guest MemTotal %lu kB, want %lu", r.memtotal_kb, want);

	/* Full resync works on the new connection, and events flow again. */
	{
		struct hp_state *list = NULL;
		size_t n = 0;
		bool found = false;

		assert_int_equal(hp_list_running(f->hp, &list, &n, &err), 0);
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(list[i].uuid, g.uuid);
		free(list);
		assert_true(found);
	}
	assert_int_equal(hp_state_read(f->hp, g.uuid, &st, &err), 0);
	assert_int_equal(hp_state_mem_kib(&st), 512 * MIB_KIB + 512 * MIB_KIB);
	f->metadata_changed = 0;
	assert_int_equal(virDomainSetMetadata(D(f, &g), VIR_DOMAIN_METADATA_ELEMENT,
					      "<autoscaling enabled='false'/>", HP_NS_PREFIX,
					      HP_NS_URI, VIR_DOMAIN_AFFECT_LIVE),
			 0);
	assert_true(loop_until(f, meta_changed_for, g.uuid, 30));

	if (desync) {
		/* libvirt re-read QEMU on reconnect: the counts agree now... */
		assert_int_equal(st.vcpus_refusal, HP_VCPUS_LOST_UNPLUG);
		/* ...but vmact still refuses (the state says so, for the
		 * planner too), and the VM keeps running. */
		assert_true(st.vcpus_refused);
		vreq.vcpus = 2;
		run_op(f, g.uuid, &vreq, &vres);
		assert_int_equal(vres.rc, -EIO);
		assert_int_equal(is_active(f, &g), 1);
	}
	destroy_guest(f, &g);
}

/* ---- the balloon statistics read on libvirt's event thread ---- */

struct stats_wait {
	unsigned done, delivered;
	pthread_t thread;
};

static void stats_done(void *userdata, bool delivered)
{
	struct stats_wait *w = userdata;

	w->done++;
	w->delivered += delivered;
	w->thread = pthread_self();
}

static bool stats_back(struct fx *f, void *arg)
{
	return ((struct stats_wait *)arg)->done > 0;
}

/* hp_mem_stats_read_async (vmactd's memory clock): the batch is read on
 * libvirt's event thread and handed back on the sd-event thread, with the
 * same figures a direct read gives, a missing domain answered as gone, the
 * handles it looked up kept; the connection closing with a batch posted
 * gives it back, once, undelivered. */
static void mem_stats_async(void **state)
{
	struct fx *f = *state;
	char tpl[] = "/tmp/vmact-hp-tpl-XXXXXX";
	struct tg_guest g;
	struct tg_report r;
	struct vmact_err err = { 0 };
	virDomainPtr doms[2] = { NULL, NULL };
	struct hp_mem_stats_req reqs[2];
	struct hp_mem_stats direct = { 0 };
	struct stats_wait w;
	int fd = mkstemp(tpl), rc = -1;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(tg_balloon_template(tpl), 0);
	boot_template(f, NULL, tpl, &g, &r);
	unlink(tpl);
	/* The guest's driver sends its first statistics a little after boot. */
	for (int i = 0; i < 60 && rc != 0; i++) {
		struct hp_mem_stats_req one = { .uuid = g.uuid, .dom = &doms[0] };

		hp_mem_stats_read_batch(f->hp, &one, 1);
		rc = one.rc;
		direct = one.out;
		if (rc)
			sleep(1);
	}
	assert_int_equal(rc, 0);
	assert_non_null(doms[0]);
	virDomainFree(doms[0]);
	doms[0] = NULL;

	for (int round = 0; round < 3; round++) {
		reqs[0] = (struct hp_mem_stats_req){ .uuid = g.uuid, .dom = &doms[0] };
		reqs[1] = (struct hp_mem_stats_req){ .uuid = "00000000-0000-4000-8000-00000000dead",
						     .dom = &doms[1] };
		w = (struct stats_wait){ 0 };
		assert_int_equal(hp_mem_stats_read_async(f->hp, reqs, 2, stats_done, &w, &err), 0);
		/* Nothing waited for the call: the answer comes through the loop. */
		assert_int_equal(w.done, 0);
		assert_true(loop_until(f, stats_back, &w, 60));
		assert_int_equal(w.done, 1);
		assert_int_equal(w.delivered, 1);
		assert_true(pthread_equal(w.thread, pthread_self()));
		assert_int_equal(reqs[0].rc, 0);
		assert_int_equal(reqs[0].out.total_kib, direct.total_kib);
		assert_true(reqs[0].out.available_kib > 0);
		assert_true(reqs[0].out.available_kib <= reqs[0].out.total_kib);
		assert_int_equal(reqs[1].rc, -ENODEV);
		/* Looked up in the first round, kept for the next ones. */
		assert_non_null(doms[0]);
	}
	virDomainFree(doms[0]);
	doms[0] = NULL;

	/* Posted, then the connection closes: given back undelivered,
	 * once, whether or not its run had begun. */
	reqs[0] = (struct hp_mem_stats_req){ .uuid = g.uuid, .dom = &doms[0] };
	w = (struct stats_wait){ 0 };
	assert_int_equal(hp_mem_stats_read_async(f->hp, reqs, 1, stats_done, &w, &err), 0);
	hp_conn_free(f->hp);
	f->hp = NULL;
	assert_int_equal(w.done, 1);
	assert_int_equal(w.delivered, 0);
	if (doms[0])
		virDomainFree(doms[0]);
	if (hp_conn_new(f->ev, NULL, on_event, f, &f->hp, &err) < 0)
		fail_msg("hp_conn_new: %s", err.msg);
	destroy_guest(f, &g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(discovery_and_metadata, cleanup_guests),
		cmocka_unit_test_teardown(guest_busy_channel, cleanup_guests),
		cmocka_unit_test_teardown(mem_stats_async, cleanup_guests),
		cmocka_unit_test_teardown(vcpus_1_3_1, cleanup_guests),
		cmocka_unit_test_teardown(virtio_mem_0_1g_256m, cleanup_guests),
		cmocka_unit_test_teardown(dimm_plug_unplug, cleanup_guests),
		cmocka_unit_test_teardown(destroyed_mid_operation, cleanup_guests),
		cmocka_unit_test_teardown(libvirtd_restart_mid_operation, cleanup_guests),
	};

	if (geteuid() != 0) {
		printf("test_hotplug: needs root (libvirt qemu:///system)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
