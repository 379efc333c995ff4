/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd moves a group's VM with its disk (doc/cluster.md, "Moving a
 * group's VMs"): two real libvirt daemons on this machine (A, the system
 * one, and B, tests/host/host2.sh), a vmactd on each for its arbiter's
 * lease interface, each host a storage pool of its own (another name,
 * another directory) holding the node image, and vmact-groupd over both
 * with one group, `mn` (one member, hosts a and b). Its member is the
 * project's test guest booted from an overlay of the node image, claimed,
 * stamping its disk with a word of its own and reading it back from the
 * disk every 5 s (vmact.disk_stamp=1, tests/guest/init).
 * The cases run in order on the one member:
 *
 *   stays_while_group_does_not  the group without migration.enabled (the
 *                          default): a command to move its member is
 *                          refused (409), the reason named;
 *   moves_with_its_disk    vmact-groupd restarted with migration.enabled
 *                          (it finds the member again): `POST
 *                          /v1/vms/NAME/migrate` to the other host; the
 *                          member runs there only, its overlay in that
 *                          host's pool and gone from the first's, its
 *                          cluster metadata kept with provider-host the
 *                          first host, vmact-groupd has it on the new host
 *                          with the provider ID it was claimed with, its
 *                          lease at the new host's arbiter and none at the
 *                          old; on the new host the guest reads back from
 *                          its disk the word it wrote at its boot, before
 *                          the move (so the disk came along, and the guest
 *                          did not restart: a boot writes a new word), its
 *                          status lines go on, still claimed;
 *   drain_moves_it_back    `vmact-groupctl drain` of its host: relief
 *                          moves it away (reason drain), the same checks;
 *                          undrained after;
 *   relief_moves_member    on A (moved there by command if need be), A's
 *                          room taken by a lease of the test's; a Neon
 *                          agent speaking for it (an AgentRequest of
 *                          protocol 5.0, posted by the test) asks for twice
 *                          its size and is refused: relief moves it to B
 *                          (reason pressure, A's entry frozen first; the
 *                          same checks), where the agent gets it;
 *   paused_copy_removed    what a move cut off after the target took over
 *                          leaves (vmact-groupd killed between the end of
 *                          the memory's sending and the source's
 *                          confirmation): a paused copy of the member on
 *                          the other host, its definition and disk there
 *                          (made by the test); vmact-groupd started again
 *                          removes that copy and its disk, and keeps the
 *                          running one, in service under its provider ID.
 *
 * Root; B is stopped at the end unless VMACT_TEST_HOST2_KEEP is set.
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <errno.h>
#include <limits.h>
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
#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/time.h"
#include "cluster/host/domxml.h"
#include "cluster/host/virt.h"
#include "shared/lease.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/host2.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-mn"
#define GROUP        "mn"
#define LIMIT_S      300.0
#define STAMP_NEEDLE "VMACT disk stamp="

static struct {
	struct th_cluster_stack s;
	struct th_vmactd a, b;
	unsigned port_a, port_b;
	char b_pid[16];
	char pool_a[64], pool_b[64], dir_a[160], dir_b[160];
	char prefix[64]; /* vmactd's name prefix, the members' too */
	virConnectPtr vca, vcb;
	/* the member */
	char name[128], uuid[64], provider_id[256], first_host[8];
	char word[64]; /* what it stamped its disk with */
} fx;

static virConnectPtr conn_of(const char *host)
{
	return !strcmp(host, "a") ? fx.vca : fx.vcb;
}

static const char *pool_of(const char *host)
{
	return !strcmp(host, "a") ? fx.pool_a : fx.pool_b;
}

static unsigned port_of(const char *host)
{
	return !strcmp(host, "a") ? fx.port_a : fx.port_b;
}

/* ---- the configuration ---- */

static void write_config(bool migration)
{
	char guest[PATH_MAX], kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], url_a[64], url_b[64];
	json_t *tpl, *group, *doc;
	char *text;

	if (!realpath(tg_guest_dir(), guest))
		fail_msg("guest dir: %s", strerror(errno));
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", guest);
	snprintf(url_a, sizeof(url_a), "http://127.0.0.1:%u", fx.port_a);
	snprintf(url_b, sizeof(url_b), "http://127.0.0.1:%u", fx.port_b);
	tpl = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "domain_type", "qemu", "vcpus", 1,
			"memory", "256Mi", "kernel", kernel, "initrd", initrd, "cmdline",
			"console=ttyS0 loglevel=1 panic=-1 vmact.report=1 vmact.disk_stamp=1",
			"base_volume", "node-base.qcow2", "serial_log_dir", fx.s.logs);
	group = json_pack("{s:s,s:i,s:[s,s],s:o,s:{s:s}}", "id", GROUP, "max", 1, "hosts", "a", "b",
			  "template", tpl, "claim", "ack", "VMACT claimed");
	/* Off is the default: said only when on. */
	if (migration)
		json_object_set_new(group, "migration", json_pack("{s:b}", "enabled", 1));
	doc = json_pack("{s:{s:s},s:{s:s},s:{s:s},"
			"s:[{s:s,s:s,s:s,s:{s:s,s:s},s:{s:s}},{s:s,s:s,s:s,s:{s:s,s:s},s:{s:s}}],"
			"s:[o]}",
			"api", "socket", fx.s.sock, "metrics", "listen", "127.0.0.1:0", "libvirt",
			"name_prefix", fx.prefix, "hosts", "name", "a", "uri", "qemu:///system",
			"storage_pool", fx.pool_a, "arbiter", "url", url_a, "secret_file", fx.s.key,
			"migration", "address", "127.0.0.1", "name", "b", "uri", TH_HOST2_URI,
			"storage_pool", fx.pool_b, "arbiter", "url", url_b, "secret_file", fx.s.key,
			"migration", "address", "127.0.0.1", "groups", group);
	if (!doc)
		fail_msg("the configuration does not pack");
	/* A VM moved by command rests 300 s before relief moves it again
	 * (doc/cluster.md, "A full host: relief"): relief_moves_member's
	 * member was, a moment before. */
	json_object_set_new(doc, "migration", json_pack("{s:i}", "min_residence_s", 0));
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(fx.s.cfg, text), 0);
	free(text);
	assert_int_equal(th_cluster_stack_own(&fx.s, fx.s.cfg, false, 0644), 0);
}

static void start_groupd(bool migration)
{
	write_config(migration);
	if (th_cluster_stack_start_groupd(&fx.s, fx.s.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start, or never found its VMs");
	th_host2_move_socket(fx.s.sock);
}

/* ---- set-up ---- */

static int setup(void **state)
{
	(void)state;
	if (th_host2_fixture(fx.b_pid, sizeof(fx.b_pid), &fx.vca, &fx.vcb, &fx.s, PREFIX, &fx.a,
			     &fx.b) < 0)
		return -1;
	/* Each host its pool, with names and directories of its own: the
	 * definition that moves names the target's. */
	snprintf(fx.pool_a, sizeof(fx.pool_a), "vmact-mn-a-%d", (int)getpid());
	snprintf(fx.pool_b, sizeof(fx.pool_b), "vmact-mn-b-%d", (int)getpid());
	snprintf(fx.dir_a, sizeof(fx.dir_a), "%s/pool-a", fx.s.dir);
	snprintf(fx.dir_b, sizeof(fx.dir_b), "%s/pool-b", fx.s.dir);
	if (th_cluster_pool(fx.vca, NULL, fx.pool_a, fx.dir_a) < 0 ||
	    th_cluster_pool(fx.vcb, NULL, fx.pool_b, fx.dir_b) < 0) {
		print_error("set-up: the storage pools\n");
		return -1;
	}
	snprintf(fx.prefix, sizeof(fx.prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_host2_vmactd(&fx.a, fx.prefix, fx.s.key, NULL, 1, &fx.port_a) < 0 ||
	    th_host2_vmactd(&fx.b, fx.prefix, fx.s.key, fx.b_pid, 2, &fx.port_b) < 0) {
		print_error("set-up: vmactd with its arbiter\n");
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	/* vmact-groupd first: it must not refill or move while the rest
	 * goes. */
	th_cluster_stack_stop(&fx.s);
	for (int i = 0; i < 2 && fx.name[0]; i++) {
		virConnectPtr c = i ? fx.vcb : fx.vca;
		virDomainPtr d = c ? virDomainLookupByName(c, fx.name) : NULL;

		if (d) {
			virDomainDestroy(d);
			virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_NVRAM);
			virDomainFree(d);
		}
	}
	th_cluster_pool_remove(fx.vca, fx.pool_a);
	th_cluster_pool_remove(fx.vcb, fx.pool_b);
	th_cluster_stack_teardown(&fx.s);
	th_vmactd_teardown(&fx.a);
	th_vmactd_teardown(&fx.b);
	if (fx.vca)
		virConnectClose(fx.vca);
	if (fx.vcb)
		virConnectClose(fx.vcb);
	th_host2_down();
	return 0;
}

/* ---- the member ---- */

/* The group's node as vmact-groupd lists it (NULL when none). */
static json_t *node(void)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, GROUP), *it = json_incref(json_array_get(n, 0));

	json_decref(n);
	return it;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

/* In service on host (NULL: any). */
static bool in_service_on(void *host)
{
	json_t *n = node();
	bool yes = n && !strcmp(str(n, "state"), "running") &&
		   (!host || !strcmp(str(n, "host"), host));

	json_decref(n);
	return yes;
}

/* Its console's log as text. Both hosts' virtlogd write the one file
 * here (each opens it without append as its QEMU starts): the one that
 * truncated it leaves the other writing past the end, a run of zero bytes
 * before, read as blanks. */
static char *serial_log(void)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0;
	FILE *f, *out = open_memstream(&buf, &len);
	int c;

	snprintf(path, sizeof(path), "%s/%s.log", fx.s.logs, fx.name);
	assert_non_null(out);
	if ((f = fopen(path, "re"))) {
		while ((c = fgetc(f)) != EOF)
			fputc(c ? c : ' ', out);
		fclose(f);
	}
	fclose(out);
	return buf;
}

/* The highest "VMACT seq=N" of its console so far (0: none) and where its
 * first line above `above` begins (NULL: none yet), in text. */
static unsigned long max_seq(const char *text, unsigned long above, const char **first_above)
{
	unsigned long max = 0;

	if (first_above)
		*first_above = NULL;
	for (const char *p = text; (p = strstr(p, "VMACT seq=")); p++) {
		unsigned long v = strtoul(p + 10, NULL, 10);

		if (v > max)
			max = v;
		if (first_above && !*first_above && v > above)
			*first_above = p;
	}
	return max;
}

/* The word of the last stamp line at or after from ("" when none). */
static void stamp_after(const char *from, char *word, size_t len)
{
	const char *last = NULL;

	word[0] = 0;
	for (const char *p = from; p && (p = strstr(p, STAMP_NEEDLE)); p++)
		last = p + strlen(STAMP_NEEDLE);
	if (last)
		snprintf(word, len, "%.*s", (int)strcspn(last, "\r\n"), last);
}

static bool stamped(void *arg)
{
	char *text = serial_log();

	(void)arg;
	if (text)
		stamp_after(text, fx.word, sizeof(fx.word));
	free(text);
	return strlen(fx.word) == 36;
}

static bool volume_in(const char *host)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(conn_of(host), pool_of(host));
	char vol[160];
	virStorageVolPtr v;

	assert_non_null(p);
	virStoragePoolRefresh(p, 0);
	snprintf(vol, sizeof(vol), "%s.qcow2", fx.name);
	v = virStorageVolLookupByName(p, vol);
	virResetLastError();
	virStoragePoolFree(p);
	if (v)
		virStorageVolFree(v);
	return v != NULL;
}

static bool only_on_now(void *host)
{
	const char *other = !strcmp(host, "a") ? "b" : "a";

	return th_host2_runs_on(conn_of(host), fx.name) &&
	       !th_host2_runs_on(conn_of(other), fx.name) &&
	       !th_host2_defined_on(conn_of(other), fx.name);
}

static bool no_entry_at(void *host)
{
	return th_host2_arbiter_pod(fx.s.key, port_of(host), "default", fx.name, NULL) == 404;
}

/* Everything a move to `to` must leave, the guest's seq before it given. */
static void check_moved(const char *to, unsigned long seq_before)
{
	const char *from = !strcmp(to, "a") ? "b" : "a", *first = NULL;
	struct vmact_lease_pod pod;
	virDomainPtr d;
	struct cl_meta meta;
	struct vmact_err err = { 0 };
	char *xml, *text, word[64];
	unsigned long seq_end;
	json_t *n;

	if (!th_wait_until(NULL, only_on_now, (void *)to, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "%s does not run on %s only", fx.name, to);
	/* Its disk: in the target's pool, gone from the source's. */
	assert_true(volume_in(to));
	assert_false(volume_in(from));
	/* Its cluster metadata moved with it, the provider ID's host kept. */
	d = virDomainLookupByName(conn_of(to), fx.name);
	assert_non_null(d);
	xml = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, CL_DOMXML_NS,
				   VIR_DOMAIN_AFFECT_CONFIG);
	virDomainFree(d);
	assert_non_null(xml);
	if (cl_domxml_meta_parse(xml, &meta, &err) < 0)
		fail_msg("its metadata on %s: %s", to, err.msg);
	free(xml);
	assert_string_equal(meta.group, GROUP);
	assert_int_equal(meta.state, CL_ST_CLAIMED);
	assert_string_equal(meta.provider_host, fx.first_host);
	/* vmact-groupd has it there, under the provider ID it was claimed
	 * with. */
	if (!th_wait_daemon(&fx.s.gd, in_service_on, (void *)to, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "vmact-groupd does not have %s in service on %s",
				      fx.name, to);
	n = node();
	assert_string_equal(str(n, "provider_id"), fx.provider_id);
	json_decref(n);
	/* Its lease: at the target's arbiter, none at the source's (awaited:
	 * an agent that spoke for it there keeps its entry until its pod ttl
	 * lapses). */
	assert_int_equal(th_host2_arbiter_pod(fx.s.key, port_of(to), "default", fx.name, &pod),
			 200);
	if (!th_wait_until(NULL, no_entry_at, (void *)from,
			   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "%s's arbiter still holds an entry for %s", from,
				      fx.name);
	/* Its status lines go on (the seq of the guest's own count), still
	 * claimed. */
	text = serial_log();
	assert_non_null(text);
	seq_end = max_seq(text, 0, NULL);
	free(text);
	assert_true(seq_end >= seq_before);
	/* After the end, a stamp read from the disk on the target (the first
	 * status line past seq_end came after the move): the word of its boot
	 * before the move. */
	word[0] = 0;
	for (uint64_t end = vmact_now_usec() + (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC);
	     !word[0] && vmact_now_usec() < end; usleep(500 * 1000)) {
		text = serial_log();
		if (text && max_seq(text, seq_end, &first) && first)
			stamp_after(first, word, sizeof(word));
		free(text);
	}
	print_message("%s on %s: seq %lu before the move, %lu at its end; its disk reads %s "
		      "(written %s)\n",
		      fx.name, to, seq_before, seq_end, word[0] ? word : "nothing", fx.word);
	assert_string_equal(word, fx.word);
	text = serial_log();
	assert_non_null(strstr(text, " claimed=1"));
	free(text);
}

static unsigned long seq_now(void)
{
	char *text = serial_log();
	unsigned long v = text ? max_seq(text, 0, NULL) : 0;

	free(text);
	return v;
}

static struct th_host2_move wait_move(const char *reason, uint64_t after_id)
{
	struct th_host2_move e = { .vm = fx.name, .reason = reason, .after_id = after_id };

	if (!th_wait_until(NULL, th_host2_move_ended, &e,
			   (uint64_t)(LIMIT_S * 2 * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "no move of %s (%s) ended", fx.name, reason);
	print_message("move %llu (%s): %s -> %s %s, downtime %lld ms%s%s%s%s\n",
		      (unsigned long long)e.id, reason, e.from, e.to, e.result,
		      (long long)e.downtime_ms, e.why[0] ? "; " : "", e.why, e.error[0] ? "; " : "",
		      e.error);
	if (strcmp(e.result, "success"))
		th_cluster_stack_fail(&fx.s, "the move failed: %s", e.error);
	return e;
}

/* ---- the cases ---- */

static void stays_while_group_does_not(void **state)
{
	char path[256];
	long status = 0;
	json_t *doc, *n;
	const char *text;

	(void)state;
	start_groupd(false);
	assert_int_equal(th_cluster_stack_change(&fx.s, GROUP, "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, in_service_on, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the member never went into service");
	n = node();
	snprintf(fx.name, sizeof(fx.name), "%s", str(n, "name"));
	snprintf(fx.first_host, sizeof(fx.first_host), "%s", str(n, "host"));
	snprintf(fx.provider_id, sizeof(fx.provider_id), "%s", str(n, "provider_id"));
	json_decref(n);
	print_message("member %s in service on %s (%s)\n", fx.name, fx.first_host, fx.provider_id);
	if (!th_wait_until(NULL, stamped, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("%s never stamped its disk", fx.name);
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.name);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{}", &status);
	text = json_string_value(json_object_get(doc, "error"));
	print_message("its group does not move VMs: %ld %s\n", status, text ?: "(no error)");
	assert_int_equal(status, 409);
	assert_non_null(text);
	assert_non_null(strstr(text, "does not move its VMs (groups[].migration.enabled)"));
	json_decref(doc);
	assert_true(th_host2_runs_on(conn_of(fx.first_host), fx.name));
}

static void moves_with_its_disk(void **state)
{
	const char *to;
	char path[256], body[64];
	long status = 0;
	unsigned long seq;
	json_t *doc;
	uint64_t id;

	(void)state;
	if (!fx.name[0])
		skip();
	/* Found again by the new vmact-groupd, now one whose group moves. */
	th_cluster_stack_stop(&fx.s);
	start_groupd(true);
	if (!th_wait_daemon(&fx.s.gd, in_service_on, fx.first_host, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not find its member again");
	to = !strcmp(fx.first_host, "a") ? "b" : "a";
	seq = seq_now();
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.name);
	snprintf(body, sizeof(body), "{\"to\":\"%s\"}", to);
	doc = th_cluster_stack_api(&fx.s, "POST", path, body, &status);
	print_message("move to %s: %ld %s\n", to, status,
		      json_string_value(json_object_get(doc, "error")) ?: "");
	assert_int_equal(status, 202);
	id = (uint64_t)json_integer_value(json_object_get(doc, "id"));
	json_decref(doc);
	wait_move("command", id - 1);
	check_moved(to, seq);
}

static void drain_moves_it_back(void **state)
{
	json_t *n;
	char path[128], from[8];
	const char *to;
	long status = 0;
	unsigned long seq;
	json_t *doc;

	(void)state;
	if (!fx.name[0])
		skip();
	n = node();
	snprintf(from, sizeof(from), "%s", str(n, "host"));
	json_decref(n);
	if (!from[0])
		skip();
	to = !strcmp(from, "a") ? "b" : "a";
	seq = seq_now();
	snprintf(path, sizeof(path), "/v1/hosts/%s/drain", from);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{}", &status);
	json_decref(doc);
	assert_int_equal(status, 200);
	wait_move("drain", 0);
	check_moved(to, seq);
	snprintf(path, sizeof(path), "/v1/hosts/%s/undrain", from);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{}", &status);
	json_decref(doc);
	assert_int_equal(status, 200);
}

/* ---- relief ---- */

static size_t discard(char *ptr, size_t size, size_t n, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * n;
}

/* A Neon agent speaking for the member at the arbiter on port: an
 * AgentRequest of protocol 5.0 (doc/protocols.md) asking for vcpus
 * (MilliCPU's encoding). The HTTP status. */
static long agent_asks(unsigned port, const char *vcpus)
{
	char url[64], body[512];
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	long status = 0;

	assert_non_null(c);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	snprintf(body, sizeof(body),
		 "{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"%s\"},"
		 "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"256Mi\"},"
		 "\"resources\":{\"vCPUs\":%s,\"mem\":\"256Mi\"},\"lastPermit\":null,"
		 "\"metrics\":{\"loadAvg1M\":2}}",
		 fx.name, vcpus);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* On A, whose room a lease of the test's takes (the ballast), a Neon
 * agent speaking for it asks for more: refused for lack of room, relief
 * moves it to B (placed with the growth it was refused), and there the
 * agent gets it. */
static void relief_moves_member(void **state)
{
	struct vmact_lease_pod pod;
	struct th_host2_move e;
	unsigned long seq;
	char body[64];
	long status = 0;
	json_t *doc, *n;

	(void)state;
	if (!fx.name[0])
		skip();
	n = node();
	if (strcmp(str(n, "host"), "a")) {
		char path[256];
		uint64_t id;

		snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.name);
		snprintf(body, sizeof(body), "{\"to\":\"a\"}");
		doc = th_cluster_stack_api(&fx.s, "POST", path, body, &status);
		assert_int_equal(status, 202);
		id = (uint64_t)json_integer_value(json_object_get(doc, "id"));
		json_decref(doc);
		wait_move("command", id - 1);
		check_moved("a", seq_now());
	}
	json_decref(n);
	assert_int_equal(th_host2_arbiter_pod(fx.s.key, fx.port_a, "default", fx.name, &pod), 200);
	print_message("ballast: %u m at A beside the member's %u m\n", 1800 - pod.size.milli_cpu,
		      pod.size.milli_cpu);
	assert_int_equal(th_host2_arbiter_lease(fx.s.key, fx.port_a, "test", "ballast",
						1800 - pod.size.milli_cpu, 3600),
			 200);
	seq = seq_now();
	/* Twice its size: more than A has left. */
	assert_int_equal(agent_asks(fx.port_a, "2"), 200);
	e = wait_move("pressure", 0);
	assert_string_equal(e.from, "a");
	assert_string_equal(e.to, "b");
	assert_non_null(strstr(e.why, "over its watermark"));
	assert_non_null(strstr(e.why, "was refused"));
	check_moved("b", seq);
	/* A froze it first (no vmactd of A's manages it); at B, where it
	 * runs now, its agent gets what A refused. */
	assert_true(th_vmactd_log_has(&fx.a, "no VM of this vmactd speaks for it: frozen at once"));
	assert_int_equal(agent_asks(fx.port_b, "2"), 200);
	assert_int_equal(th_host2_arbiter_pod(fx.s.key, fx.port_b, "default", fx.name, &pod), 200);
	print_message("at B's arbiter: %u m\n", pod.size.milli_cpu);
	assert_int_equal(pod.size.milli_cpu, 2000);
	assert_int_equal(th_host2_arbiter_lease(fx.s.key, fx.port_a, "test", "ballast", 0, 0), 200);
}

/* The copy on host is gone: not defined there, its disk gone too. */
static bool copy_gone(void *host)
{
	return !th_host2_defined_on(conn_of(host), fx.name) && !volume_in(host);
}

static void paused_copy_removed(void **state)
{
	char run[8], needle[256], pool_from[96], pool_to[96], *xml, *p;
	const char *stale;
	struct vmact_err err = { 0 };
	virDomainPtr d;
	json_t *n;

	(void)state;
	if (!fx.name[0])
		skip();
	n = node();
	snprintf(run, sizeof(run), "%s", str(n, "host"));
	json_decref(n);
	if (!run[0])
		skip();
	stale = !strcmp(run, "a") ? "b" : "a";
	/* The paused copy: its definition on the other host, naming that
	 * host's pool, a disk there, started paused. */
	th_cluster_stack_stop(&fx.s);
	d = virDomainLookupByName(conn_of(run), fx.name);
	assert_non_null(d);
	xml = virDomainGetXMLDesc(d, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE);
	virDomainFree(d);
	assert_non_null(xml);
	snprintf(pool_from, sizeof(pool_from), "pool='%s'", pool_of(run));
	snprintf(pool_to, sizeof(pool_to), "pool='%s'", pool_of(stale));
	p = strstr(xml, pool_from);
	assert_non_null(p);
	/* (the two names are as long) */
	assert_int_equal(strlen(pool_from), strlen(pool_to));
	memcpy(p, pool_to, strlen(pool_to));
	snprintf(needle, sizeof(needle), "%s.qcow2", fx.name);
	if (cl_virt_overlay_create(conn_of(stale), pool_of(stale), "node-base.qcow2", needle,
				   &err) < 0)
		fail_msg("the copy's disk: %s", err.msg);
	d = virDomainDefineXML(conn_of(stale), xml);
	free(xml);
	assert_non_null(d);
	assert_int_equal(virDomainCreateWithFlags(d, VIR_DOMAIN_START_PAUSED), 0);
	virDomainFree(d);
	start_groupd(true);
	if (!th_wait_until(NULL, copy_gone, (void *)stale,
			   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "the paused copy on %s was not removed", stale);
	assert_true(th_host2_runs_on(conn_of(run), fx.name));
	if (!th_wait_daemon(&fx.s.gd, in_service_on, run, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "vmact-groupd does not have %s in service on %s",
				      fx.name, run);
	n = node();
	assert_string_equal(str(n, "provider_id"), fx.provider_id);
	json_decref(n);
	snprintf(needle, sizeof(needle), "was left paused on %s by a move nobody finished", stale);
	assert_true(th_count_in_file(fx.s.glog, needle) == 1);
	assert_true(volume_in(run));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stays_while_group_does_not), cmocka_unit_test(moves_with_its_disk),
		cmocka_unit_test(drain_moves_it_back),        cmocka_unit_test(relief_moves_member),
		cmocka_unit_test(paused_copy_removed),
	};

	if (!th_root_test("test_migrate_node", "two libvirt daemons, vmactd, vmact-groupd"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("migrate_node", tests, setup, teardown);
}
