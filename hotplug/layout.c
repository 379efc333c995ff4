/* SPDX-License-Identifier: Apache-2.0 */
/* A domain's layout against what vmact needs of it (layout.h, doc/domain.md).
 * The live and persistent XML are read by the same parser as vmactd's
 * (hp_state_parse); what that parser does not keep (NUMA cells, the
 * guest kernel's command line, a disabled vCPU that is not hotpluggable)
 * is read here. What takes a cold restart follows libvirt: <vcpu>'s
 * maximum, <maxMemory>, the NUMA cells and the hotpluggable flags are
 * fixed while the domain runs; a memory device can be attached live only
 * into a free slot of an existing <maxMemory>, and a virtio-mem device
 * needs its guest kernel's driver, so vmact calls that a cold restart too. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "hotplug/layout.h"
#include "hotplug/xml.h"

/* What hp_state_parse does not keep. */
struct extra {
	unsigned numa_cells;
	bool has_cmdline;
	bool online_movable;     /* memhp_default_state=online_movable */
	unsigned disabled_fixed; /* <vcpus> entries enabled='no' hotpluggable='no' */
	char cmdline[1024];      /* <os><cmdline>, for its fix */
	/* <memballoon>: a virtio one, and its statistics' period (0: none) */
	bool balloon;
	long stats_period;
	bool running; /* the live XML of a running domain (<domain id=…>) */
};

static bool prop_is(xmlNodePtr n, const char *attr, const char *value)
{
	_cleanup_xmlfree_ xmlChar *v = xmlGetProp(n, BAD_CAST attr);

	return v && xmlStrcmp(v, BAD_CAST value) == 0;
}

static int read_extra(const char *xml, struct extra *x, struct vmact_err *err)
{
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlNodePtr root, n, numa, vcpus;

	memset(x, 0, sizeof(*x));
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc || !(root = xmlDocGetRootElement(doc)))
		return vmact_err_set(err, EINVAL, "domain XML is not well-formed");
	numa = hpx_child(hpx_child(root, "cpu"), "numa");
	for (n = numa ? numa->children : NULL; n; n = n->next)
		x->numa_cells += n->type == XML_ELEMENT_NODE &&
				 !xmlStrcmp(n->name, BAD_CAST "cell");
	if ((n = hpx_child(hpx_child(root, "os"), "cmdline"))) {
		_cleanup_xmlfree_ xmlChar *c = xmlNodeGetContent(n);

		x->has_cmdline = true;
		x->online_movable = c &&
				    strstr((const char *)c, "memhp_default_state=online_movable");
		snprintf(x->cmdline, sizeof(x->cmdline), "%s", c ? (const char *)c : "");
	}
	if ((n = hpx_child(hpx_child(root, "devices"), "memballoon")) &&
	    prop_is(n, "model", "virtio")) {
		xmlNodePtr stats = hpx_child(n, "stats");
		_cleanup_xmlfree_ xmlChar *p = stats ? xmlGetProp(stats, BAD_CAST "period") : NULL;

		x->balloon = true;
		x->stats_period = p ? strtol((const char *)p, NULL, 10) : 0;
	}
	{
		_cleanup_xmlfree_ xmlChar *id = xmlGetProp(root, BAD_CAST "id");

		x->running = id && strcmp((const char *)id, "-1") != 0;
	}
	vcpus = hpx_child(root, "vcpus");
	for (n = vcpus ? vcpus->children : NULL; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && !xmlStrcmp(n->name, BAD_CAST "vcpu") &&
		    prop_is(n, "enabled", "no") && !prop_is(n, "hotpluggable", "yes"))
			x->disabled_fixed++;
	return 0;
}

static void __attribute__((format(printf, 5, 6)))
add(struct hp_layout *l, const char *part, enum hp_layout_level level, bool cold, const char *fmt,
    ...)
{
	struct hp_layout_item *it;
	va_list ap;

	if (l->n == HP_LAYOUT_MAX_ITEMS)
		return;
	it = &l->items[l->n++];
	it->part = part;
	it->level = level;
	it->cold = cold;
	va_start(ap, fmt);
	vsnprintf(it->text, sizeof(it->text), fmt, ap);
	va_end(ap);
	it->fix[0] = 0;
	it->fix_cold = false;
	if (level == HP_LAYOUT_BLOCKER)
		l->ready = false;
}

/* The fix of the item add() just added. */
static void __attribute__((format(printf, 3, 4)))
fix(struct hp_layout *l, bool cold, const char *fmt, ...)
{
	struct hp_layout_item *it;
	va_list ap;

	if (!l->n)
		return;
	it = &l->items[l->n - 1];
	it->fix_cold = cold;
	va_start(ap, fmt);
	vsnprintf(it->fix, sizeof(it->fix), fmt, ap);
	va_end(ap);
}

/* s as one shell word: as it is when it is plain, else in single quotes. */
static const char *sh_word(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "._-+=/:,@%") == strlen(s)) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	buf[o++] = '\'';
	for (; *s && o + 5 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *s;
		}
	}
	buf[o++] = '\'';
	buf[o] = 0;
	return buf;
}

#define MIB (1024ull * 1024ull)

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

static const char *cpu_q(uint64_t milli, char *buf, size_t len)
{
	if (vmact_quantity_format_milli(milli, buf, len) < 0)
		snprintf(buf, len, "%llum", (unsigned long long)milli);
	return buf;
}

static const char *mem_q(uint64_t bytes, char *buf, size_t len)
{
	if (vmact_quantity_format_bytes(bytes, buf, len) < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	return buf;
}

/* vCPUs: how many can be plugged, and whether the disabled ones can be. */
static void check_vcpus(const struct hp_state *st, const struct extra *x,
			const struct vmact_resources *max, const char *q, struct hp_layout *l)
{
	char a[32];

	if (x->disabled_fixed) {
		add(l, "vcpus",
		    max && max->milli_cpu > st->vcpus_current * 1000u ? HP_LAYOUT_BLOCKER
								      : HP_LAYOUT_NOTE,
		    true,
		    "%u disabled vCPU%s not hotpluggable='yes' in <vcpus>: they cannot be "
		    "plugged while the domain runs",
		    x->disabled_fixed, x->disabled_fixed == 1 ? " is" : "s are");
		/* virt-xml cannot set the flag: by hand. */
		fix(l, true, "virsh edit %s  # hotpluggable='yes' on each <vcpu enabled='no'>", q);
		l->vcpus_max = st->vcpus_current;
	} else if (st->vcpus_max > st->vcpus_current) {
		add(l, "vcpus", HP_LAYOUT_OK, false,
		    "%u of %u vCPUs at boot: up to %u more can be plugged", st->vcpus_current,
		    st->vcpus_max, st->vcpus_max - st->vcpus_current);
	} else {
		add(l, "vcpus", HP_LAYOUT_NOTE, true,
		    "<vcpu> maximum %u = vCPUs at boot: none to plug; the CPU size moves by the "
		    "quota within %u vCPU%s (raise the maximum and set current='%u' to grow past it)",
		    st->vcpus_max, st->vcpus_current, st->vcpus_current == 1 ? "" : "s",
		    st->vcpus_current);
	}
	if (max && max->milli_cpu > l->vcpus_max * 1000u) {
		add(l, "cpu-bound", HP_LAYOUT_BLOCKER, true,
		    "max CPU %s is above the %u vCPUs the domain can have (<vcpu>)",
		    cpu_q(max->milli_cpu, a, sizeof(a)), l->vcpus_max);
		if (!x->disabled_fixed)
			fix(l, true, "virt-xml %s --edit --vcpus vcpus=%u,maxvcpus=%u", q,
			    st->vcpus_current, (unsigned)((max->milli_cpu + 999u) / 1000u));
	}
}

/* What the memory fixes need to know. */
struct memfix {
	const char *q;       /* the domain's name, a shell word */
	unsigned cpus_after; /* vCPUs once the vCPU fix is made: the NUMA cell's */
};

/* <maxMemory> for base + grow (in whole MiB), with slots; when the domain
 * has one that is enough, "" (buf). */
static const char *maxmem_fix(const struct hp_state *st, const struct memfix *mf, uint64_t base,
			      uint64_t grow, unsigned slots, char *buf, size_t len)
{
	uint64_t want = round_up(base + grow, MIB);

	buf[0] = 0;
	if (st->slots >= slots && st->max_memory_kib * 1024u >= want)
		return buf;
	if (slots < st->slots)
		slots = st->slots;
	snprintf(buf, len, "virt-xml %s --edit --memory maxMemory=%llu,maxMemory.slots=%u", mf->q,
		 (unsigned long long)(want / MIB), slots);
	return buf;
}

/* Memory: NUMA, <maxMemory>, the device, and the reachable range. */
static void check_memory(const struct hp_state *st, const struct extra *x,
			 const struct vmact_resources *min, const struct vmact_resources *max,
			 enum hp_mem_method method, uint64_t dimm_bytes, const struct memfix *mf,
			 struct hp_layout *l)
{
	const struct hp_memdev *vm = hp_state_memdev(st, NULL, HP_MEM_VIRTIO_MEM);
	bool grow_wanted = max && max->mem_bytes > l->mem_base_bytes;
	enum hp_layout_level missing = grow_wanted ? HP_LAYOUT_BLOCKER : HP_LAYOUT_NOTE;
	/* What the fixes give: room for the max bound, in virtio-mem's 2 MiB
	 * blocks or in DIMMs. */
	uint64_t grow = grow_wanted ? round_up(max->mem_bytes - l->mem_base_bytes, 2 * MIB) : 0;
	unsigned dimms = dimm_bytes && grow ? (unsigned)((grow + dimm_bytes - 1) / dimm_bytes) : 1;
	char a[32], b[32], c[32], mm[160];

	if (method == HP_METHOD_DIMM && dimm_bytes)
		grow = (uint64_t)dimms * dimm_bytes;
	l->mem_max_bytes = l->mem_base_bytes;
	if (!x->numa_cells) {
		add(l, "numa", missing, true,
		    "no NUMA cell (<cpu><numa><cell>): libvirt plugs memory devices into a cell");
		if (grow_wanted) {
			if (mf->cpus_after > 1)
				snprintf(a, sizeof(a), "0-%u", mf->cpus_after - 1);
			else
				snprintf(a, sizeof(a), "0");
			fix(l, true,
			    "virt-xml %s --edit --cpu numa.cell0.id=0,numa.cell0.cpus=%s,"
			    "numa.cell0.memory=%llu,numa.cell0.unit=KiB",
			    mf->q, a, (unsigned long long)(l->mem_base_bytes / 1024u));
		}
	} else {
		add(l, "numa", HP_LAYOUT_OK, false, "%u NUMA cell%s, %s of boot memory",
		    x->numa_cells, x->numa_cells == 1 ? "" : "s",
		    mem_q(l->mem_base_bytes, a, sizeof(a)));
	}
	if (!st->slots) {
		add(l, "maxMemory", missing, true,
		    "no <maxMemory slots=…>: no memory device can be added");
		if (grow_wanted)
			fix(l, true, "%s",
			    maxmem_fix(st, mf, l->mem_base_bytes, grow,
				       method == HP_METHOD_DIMM ? dimms : 1, mm, sizeof(mm)));
	} else {
		add(l, "maxMemory", HP_LAYOUT_OK, false, "<maxMemory> %s, %u slot%s",
		    mem_q(st->max_memory_kib * 1024u, a, sizeof(a)), st->slots,
		    st->slots == 1 ? "" : "s");
	}

	if (method == HP_METHOD_VIRTIO_MEM) {
		if (!vm) {
			add(l, "virtio-mem", missing, true,
			    "no virtio-mem device: memory stays at the boot memory (add one with "
			    "<target><size>, <node> and <block>; its guest kernel needs virtio_mem)");
			/* A <maxMemory> too small for it is raised first (a
			 * missing one is the maxMemory part's fix). */
			if (grow_wanted)
				fix(l, true,
				    "%s%svirt-xml %s --add-device --memdev virtio-mem,target.size=%llu,"
				    "target.node=0,target.block=2048,target.requested=0",
				    st->slots ? maxmem_fix(st, mf, l->mem_base_bytes, grow, 1, mm,
							   sizeof(mm))
					      : "",
				    st->slots && mm[0] ? " && " : "", mf->q,
				    (unsigned long long)(grow / MIB));
		} else {
			l->mem_max_bytes = l->mem_base_bytes + vm->size_kib * 1024u;
			l->mem_hotplug = x->numa_cells && st->slots;
			add(l, "virtio-mem", HP_LAYOUT_OK, false,
			    "virtio-mem device%s%s: up to %s more in %s blocks (%s plugged now)",
			    vm->alias[0] ? " " : "", vm->alias,
			    mem_q(vm->size_kib * 1024u, a, sizeof(a)),
			    mem_q(vm->block_kib * 1024u, b, sizeof(b)),
			    mem_q(vm->current_kib * 1024u, c, sizeof(c)));
		}
	} else if (st->slots && st->max_memory_kib * 1024u > l->mem_base_bytes) {
		uint64_t room = st->max_memory_kib * 1024u - l->mem_base_bytes;
		unsigned free_slots = st->slots - hp_state_dimms(st);
		uint64_t fit = dimm_bytes ? room / dimm_bytes : 0;

		if (dimm_bytes && fit < free_slots)
			free_slots = (unsigned)fit;
		l->mem_max_bytes = l->mem_base_bytes +
				   (dimm_bytes ? free_slots * dimm_bytes : room);
		l->mem_hotplug = x->numa_cells && free_slots;
		add(l, "dimm", l->mem_hotplug ? HP_LAYOUT_OK : missing, !l->mem_hotplug,
		    "DIMMs of %s: %u free slot%s within <maxMemory>",
		    mem_q(dimm_bytes, a, sizeof(a)), free_slots, free_slots == 1 ? "" : "s");
	}
	if (!l->mem_hotplug)
		l->mem_max_bytes = l->mem_base_bytes;

	if (l->mem_hotplug || grow_wanted) {
		if (!x->has_cmdline) {
			add(l, "guest-kernel", HP_LAYOUT_NOTE, false,
			    "the guest kernel's command line is not in the domain (it boots from "
			    "its disk): it needs memhp_default_state=online_movable for memory to "
			    "come out again (a guest reboot)");
		} else if (!x->online_movable) {
			add(l, "guest-kernel", HP_LAYOUT_NOTE, true,
			    "<os><cmdline> lacks memhp_default_state=online_movable: plugged memory "
			    "may not be removable");
			/* virt-xml splits its options at commas. */
			if (!strchr(x->cmdline, ',') && strlen(x->cmdline) < 300) {
				char line[400], word[420];

				snprintf(line, sizeof(line),
					 "%s%smemhp_default_state=online_movable", x->cmdline,
					 x->cmdline[0] ? " " : "");
				fix(l, true, "virt-xml %s --edit --boot cmdline=%s", mf->q,
				    sh_word(line, word, sizeof(word)));
			}
		} else {
			add(l, "guest-kernel", HP_LAYOUT_OK, false,
			    "<os><cmdline> has memhp_default_state=online_movable");
		}
	}
	if (min && min->mem_bytes < l->mem_base_bytes) {
		add(l, "memory-bound", HP_LAYOUT_BLOCKER, true,
		    "min memory %s is below the boot memory %s, which is never unplugged",
		    mem_q(min->mem_bytes, a, sizeof(a)), mem_q(l->mem_base_bytes, b, sizeof(b)));
		fix(l, false, "vmactl set %s --min-memory %s", mf->q,
		    mem_q(l->mem_base_bytes, b, sizeof(b)));
	}
	if (max && max->mem_bytes > l->mem_max_bytes) {
		add(l, "memory-bound", HP_LAYOUT_BLOCKER, true,
		    "max memory %s is above the %s the layout can reach (%s)",
		    mem_q(max->mem_bytes, a, sizeof(a)), mem_q(l->mem_max_bytes, b, sizeof(b)),
		    method == HP_METHOD_VIRTIO_MEM ? "boot memory + the virtio-mem device"
						   : "boot memory + free DIMM slots");
		/* A device too small grows; a missing part has its own fix. */
		if (method == HP_METHOD_VIRTIO_MEM && vm && x->numa_cells && st->slots)
			fix(l, true, "%s%svirt-xml %s --edit --memdev target.size=%llu",
			    maxmem_fix(st, mf, l->mem_base_bytes, grow, 1, mm, sizeof(mm)),
			    mm[0] ? " && " : "", mf->q, (unsigned long long)(grow / MIB));
		else if (method == HP_METHOD_DIMM && x->numa_cells && st->slots)
			fix(l, true, "%s",
			    maxmem_fix(st, mf, l->mem_base_bytes, grow, dimms + hp_state_dimms(st),
				       mm, sizeof(mm)));
	}
}

/* Where the memory figures come from: without any, vmactd keeps the
 * memory at its size (doc/domain.md). */
static void check_stats(const struct extra *x, bool guest_metrics, const char *q,
			struct hp_layout *l)
{
	if (guest_metrics) {
		add(l, "memory-stats", HP_LAYOUT_OK, false,
		    "memory figures from the guest's exporter (<vmact:metrics>)");
	} else if (x->balloon && x->stats_period > 0) {
		add(l, "memory-stats", HP_LAYOUT_OK, false,
		    "balloon statistics every %ld s (its guest needs the virtio_balloon driver)",
		    x->stats_period);
	} else if (x->balloon) {
		add(l, "memory-stats", HP_LAYOUT_NOTE, false,
		    "memory: stays at its size: its balloon reports no statistics "
		    "(<memballoon model='virtio'><stats period='1'/>)");
		/* Live on a running domain, into the definition otherwise. */
		fix(l, false, "virsh dommemstat %s --period 1 %s", q,
		    x->running ? "--live" : "--config");
	} else {
		add(l, "memory-stats", HP_LAYOUT_NOTE, true,
		    "memory: stays at its size: no virtio memory balloon, so no statistics "
		    "(<memballoon model='virtio'><stats period='1'/>, and the guest's "
		    "virtio_balloon driver)");
		fix(l, true, "virt-xml %s --edit --memballoon virtio,stats.period=1", q);
	}
}

int hp_layout_check(const char *domain_xml, const struct vmact_resources *min,
		    const struct vmact_resources *max, const enum hp_mem_method *method,
		    uint64_t dimm_bytes, bool guest_metrics, struct hp_layout *out,
		    struct vmact_err *err)
{
	_cleanup_free_ struct hp_state *st = calloc(1, sizeof(*st));
	struct extra x;
	struct memfix mf;
	char q[2 * HP_NAME_MAX + 8];
	int r;

	memset(out, 0, sizeof(*out));
	out->ready = true;
	if (!st)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if ((r = hp_state_parse(domain_xml, st, err)) < 0 ||
	    (r = read_extra(domain_xml, &x, err)) < 0)
		return r;
	if (!min || !max)
		min = max = NULL;
	out->vcpus_now = st->vcpus_current;
	out->vcpus_max = st->vcpus_max;
	out->mem_base_bytes = st->base_kib * 1024u;
	out->method = hp_state_memdev(st, NULL, HP_MEM_VIRTIO_MEM) || !st->slots
			      ? HP_METHOD_VIRTIO_MEM
			      : HP_METHOD_DIMM;
	mf.q = sh_word(st->name, q, sizeof(q));
	mf.cpus_after = st->vcpus_max;
	if (max && !x.disabled_fixed && max->milli_cpu > st->vcpus_max * 1000u)
		mf.cpus_after = (unsigned)((max->milli_cpu + 999u) / 1000u);
	check_vcpus(st, &x, max, mf.q, out);
	check_memory(st, &x, min, max, method ? *method : out->method, dimm_bytes, &mf, out);
	check_stats(&x, guest_metrics, mf.q, out);
	return 0;
}

void hp_layout_default_bounds(const struct hp_layout *l, struct vmact_resources *min,
			      struct vmact_resources *max)
{
	min->milli_cpu = l->vcpus_now * 1000u;
	max->milli_cpu = l->vcpus_max * 1000u;
	min->mem_bytes = l->mem_base_bytes;
	max->mem_bytes = l->mem_max_bytes;
}

int hp_layout_meta_build(const struct vmact_resources *min, const struct vmact_resources *max,
			 enum hp_mem_method method, const struct hp_meta_change *opts, char **out,
			 struct vmact_err *err)
{
	bool recommend = opts && opts->set_mode && opts->recommend;
	bool migration = opts && opts->set_migration && opts->migration;
	char a[32], b[32], c[32], d[32];
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	char *xml = NULL;
	int r;

	*out = NULL;
	if (vmact_quantity_format_milli(min->milli_cpu, a, sizeof(a)) < 0 ||
	    vmact_quantity_format_milli(max->milli_cpu, b, sizeof(b)) < 0 ||
	    vmact_quantity_format_bytes(min->mem_bytes, c, sizeof(c)) < 0 ||
	    vmact_quantity_format_bytes(max->mem_bytes, d, sizeof(d)) < 0)
		return vmact_err_set(err, ERANGE, "bounds out of range");
	/* Without a namespace of its own, as virDomainGetMetadata returns
	 * the element: virDomainSetMetadata puts it in HP_NS_URI itself and
	 * refuses an element that declares it ("failed to create a new XML
	 * namespace", libvirt 9.0). */
	if (asprintf(&xml,
		     "<autoscaling enabled=\"true\"%s><cpu min=\"%s\" max=\"%s\"/>"
		     "<memory min=\"%s\" max=\"%s\" method=\"%s\"/>%s</autoscaling>",
		     recommend ? " mode=\"recommend\"" : "", a, b, c, d,
		     method == HP_METHOD_DIMM ? "dimm" : "virtio-mem",
		     migration ? "<migration enabled=\"true\"/>" : "") < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if ((r = hp_meta_parse(xml, &m, err)) < 0) {
		free(xml);
		return r;
	}
	*out = xml;
	return 0;
}
