// SPDX-License-Identifier: Apache-2.0
// vmact's Cockpit page: vmactd's control API (doc/control-api.md) over its
// unix socket through Cockpit's bridge (cockpit.http with `unix`), polled
// every 2 s. Everything vmactd or a guest names (VM names, reasons, event
// texts) goes into the page as text, never as markup. The charts are plain
// SVG drawn here: nothing is fetched at run time.
/* global cockpit */
"use strict";

const POLL_MS = 2000;
const HISTORY_S = 300; // the charts show the last 5 minutes
const DEFAULT_SOCKET = "/run/vmact/vmactd.sock";
const CONFIG = "/etc/vmact/vmactd.json";
const SVG = "http://www.w3.org/2000/svg";

const state = {
    socket: null,
    http: null,
    vms: [],
    detail: null,
    history: new Map(), // VM name -> [{t, vcpus, quota, mem, load1, demand, using_cpu, using_mem}]
    events: { vm: null, since: 0, daemon_start: null, list: [] },
    modes: false, // the API reports a mode (active/recommend)
    timer: null,
    busy: false,
};

const $ = id => document.getElementById(id);

function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (k === "class")
            e.className = v;
        else if (k.startsWith("on"))
            e.addEventListener(k.slice(2), v);
        else
            e.setAttribute(k, v);
    }
    for (const c of children)
        e.append(c instanceof Node ? c : document.createTextNode(c === null || c === undefined ? "" : String(c)));
    return e;
}

function fmtCpu(milli) {
    if (milli === null || milli === undefined)
        return "–";
    return (milli / 1000).toFixed(milli % 1000 === 0 ? 0 : 2) + " CPU";
}

function fmtBytes(b) {
    if (b === null || b === undefined)
        return "–";
    const mib = b / 1048576;
    return mib >= 1024 ? (mib / 1024).toFixed(mib % 1024 === 0 ? 0 : 2) + " GiB" : Math.round(mib) + " MiB";
}

function fmtTime(t) {
    if (!t)
        return "";
    return new Date(t * 1000).toLocaleTimeString();
}

// ---- the API ----------------------------------------------------------------

// One request; resolves with the parsed answer, rejects with
// {status, message, problem}: status 0 when vmactd did not answer at all.
function api(method, path, body) {
    return new Promise((resolve, reject) => {
        const opts = { method, path, headers: { "Content-Type": "application/json" } };
        // Always a body (empty for a GET): without one Cockpit's request
        // stays open for streamed input and is never sent.
        opts.body = body !== undefined ? JSON.stringify(body) : "";
        state.http.request(opts)
                .done(data => {
                    try {
                        resolve(data ? JSON.parse(data) : {});
                    } catch (e) {
                        reject({ status: 200, message: "vmactd's answer is not JSON: " + e.message });
                    }
                })
                .fail((ex, data) => {
                    let message = ex && ex.message ? ex.message : String(ex);
                    try {
                        const doc = JSON.parse(data);
                        if (doc && typeof doc.error === "string")
                            message = doc.error;
                    } catch (e) { /* not vmactd's JSON: keep the bridge's message */ }
                    reject({ status: (ex && ex.status) || 0, message, problem: ex && ex.problem });
                });
    });
}

// What the daemon-state line says about a failed request.
function describeFailure(ex) {
    if (ex.status === 403 || ex.problem === "access-denied")
        return { state: "refused", text: "vmactd refuses this user: " + ex.message };
    if (ex.status)
        return { state: "error", text: "vmactd answered " + ex.status + ": " + ex.message };
    return {
        state: "down",
        text: "vmactd is not running: nothing answers on " + state.socket +
            " (" + (ex.problem || ex.message) + "). This page reconnects by itself.",
    };
}

function setDaemonState(s, text) {
    const d = $("daemon-state");
    d.dataset.state = s;
    d.textContent = text;
}

function showBanner(text) {
    const b = $("banner");
    b.textContent = text || "";
    b.hidden = !text;
}

// ---- history, for the charts -------------------------------------------------

function record(vm, now) {
    if (vm.state !== "managed" && vm.state !== "paused" && vm.state !== "frozen")
        return;
    let h = state.history.get(vm.name);
    if (!h) {
        h = [];
        state.history.set(vm.name, h);
    }
    h.push({
        t: now,
        vcpus: vm.vcpus,
        quota: vm.quota_milli_cpu === null ? null : vm.quota_milli_cpu / 1000,
        mem: vm.mem_bytes,
        load1: vm.load1,
        demand: vm.demand ? vm.demand.cpus : null,
        using_mem: vm.using ? vm.using.mem_bytes : null,
    });
    while (h.length && h[0].t < now - HISTORY_S)
        h.shift();
}

// ---- the list ----------------------------------------------------------------

function actionButton(label, id, handler) {
    return el("button", { type: "button", class: "pf-c-button pf-m-link", "data-action": id, onclick: handler }, label);
}

function renderList() {
    const managed = state.vms.filter(v => v.state === "managed" || v.state === "paused" || v.state === "frozen");
    const others = state.vms.filter(v => !(v.state === "managed" || v.state === "paused" || v.state === "frozen"));
    state.modes = state.vms.some(v => typeof v.mode === "string");
    for (const c of document.querySelectorAll(".mode-col"))
        c.hidden = !state.modes;

    const body = $("vms").tBodies[0];
    body.replaceChildren();
    if (!managed.length)
        body.append(el("tr", {}, el("td", { colspan: "9", class: "vmact-muted" }, "vmactd manages no VM")));
    for (const v of managed) {
        const d = v.demand;
        const link = el("a", { href: "#/vm/" + encodeURIComponent(v.name) }, v.name);
        const row = el("tr", { "data-vm": v.name },
                       el("td", {}, link),
                       el("td", {}, el("span", { class: "vmact-label vmact-" + v.state }, v.state)),
                       el("td", { class: "num", "data-field": "vcpus" }, v.vcpus ?? "–"),
                       el("td", { class: "num" }, fmtCpu(v.quota_milli_cpu)),
                       el("td", { class: "num" }, fmtBytes(v.mem_bytes)),
                       el("td", { class: "num" }, v.load1 === null || v.load1 === undefined ? "–" : v.load1.toFixed(2)),
                       el("td", {}, d ? d.class + " (" + Math.round(d.busy * 100) + " % busy, " + d.cpus.toFixed(2) + " CPUs)" : "–"),
                       el("td", { class: "mode-col" }, v.mode ?? ""),
                       el("td", {}, v.last_change ? fmtTime(v.last_change.time) + ": " + v.last_change.reason : "–"));
        row.lastChild.previousSibling.hidden = !state.modes;
        body.append(row);
    }

    const ob = $("unmanaged").tBodies[0];
    ob.replaceChildren();
    if (!others.length)
        ob.append(el("tr", {}, el("td", { colspan: "4", class: "vmact-muted" }, "none")));
    for (const v of others) {
        ob.append(el("tr", { "data-vm": v.name },
                     el("td", {}, v.name),
                     el("td", {}, v.state),
                     el("td", {}, v.reason || ""),
                     el("td", {}, actionButton("Enable", "enable", () =>
                         act("POST", "/v1/domains/" + encodeURIComponent(v.name) + "/enable", undefined, "enable " + v.name)))));
    }
}

// ---- one VM ------------------------------------------------------------------

function dl(target, pairs) {
    target.replaceChildren();
    for (const [k, v] of pairs)
        target.append(el("dt", {}, k), el("dd", {}, v));
}

function renderDetail() {
    const v = state.detail;
    if (!v)
        return;
    $("vm-title").textContent = v.name + " — " + v.state;
    $("vm-title").dataset.state = v.state;
    $("act-pause").hidden = v.state === "paused";
    $("act-resume").hidden = v.state !== "paused";
    if (state.modes || typeof v.mode === "string") {
        const next = v.mode === "recommend" ? "active" : "recommend";
        $("act-mode").textContent = "Mode: " + (v.mode || "?") + " → " + next;
        $("act-mode").dataset.next = next;
    }
    const pol = v.policy || {};
    dl($("vm-now"), [
        ["vCPUs", v.vcpus ?? "–"],
        ["CPU quota", fmtCpu(v.quota_milli_cpu)],
        ["memory", fmtBytes(v.mem_bytes)],
        ["load (1 min)", v.load1 === null || v.load1 === undefined ? "–" : v.load1.toFixed(2)],
        ["demand", v.demand ? v.demand.class + ", " + v.demand.cpus.toFixed(2) + " CPUs wanted" : "–"],
        ["desired", v.desired ? fmtCpu(v.desired.milli_cpu) + " / " + fmtBytes(v.desired.mem_bytes) : "–"],
        ["permit", v.permit ? fmtCpu(v.permit.milli_cpu) + " / " + fmtBytes(v.permit.mem_bytes) : "–"],
        ["permit short", v.permit_short || "–"],
        ["cannot shrink", v.cannot_shrink || "–"],
        ["policy", (pol.cpu || "?") + ", shrink by " + (pol.shrink || "?")],
        ["last change", v.last_change ? fmtTime(v.last_change.time) + ": " + v.last_change.reason : "–"],
    ]);
    const b = v.bounds || { min: {}, max: {} };
    dl($("vm-bounds"), [
        ["CPU", fmtCpu(b.min.milli_cpu) + " – " + fmtCpu(b.max.milli_cpu)],
        ["memory", fmtBytes(b.min.mem_bytes) + " – " + fmtBytes(b.max.mem_bytes)],
    ]);
    drawCharts(v);
}

const EVENT_KINDS = new Set(["decision", "hold", "permit", "error", "control", "resize", "migration"]);

function renderEvents() {
    const ul = $("events");
    ul.replaceChildren();
    const list = state.events.list.slice(-40).reverse();
    if (!list.length)
        ul.append(el("li", { class: "vmact-muted" }, "nothing yet"));
    for (const e of list) {
        const refused = e.kind === "error" || (e.kind === "permit" && e.fields && e.fields.partial);
        ul.append(el("li", { "data-kind": e.kind, class: refused ? "vmact-refused" : "" },
                     el("span", { class: "vmact-time" }, fmtTime(e.time)),
                     el("span", { class: "vmact-label" }, e.kind),
                     " " + e.text));
    }
}

// ---- charts (SVG) --------------------------------------------------------------

function drawChart(svg, series, now, window_s, yUnit) {
    const W = 640, H = 220, L = 48, R = 8, T = 10, B = 40;
    svg.replaceChildren();
    const span = document.createElementNS(SVG, "text");
    span.setAttribute("x", W - R); span.setAttribute("y", H - 24);
    span.setAttribute("text-anchor", "end");
    span.textContent = "last " + (window_s >= 120 ? Math.round(window_s / 60) + " minutes" : Math.round(window_s) + " s") + " → now";
    svg.append(span);
    let ymax = 0;
    for (const s of series)
        for (const p of s.points)
            if (p[1] !== null && p[1] > ymax)
                ymax = p[1];
    ymax = ymax > 0 ? ymax * 1.15 : 1;
    const x = t => L + (W - L - R) * (1 - (now - t) / window_s);
    const y = v => T + (H - T - B) * (1 - v / ymax);
    for (let i = 0; i <= 4; i++) {
        const v = ymax * i / 4;
        const line = document.createElementNS(SVG, "line");
        line.setAttribute("x1", L); line.setAttribute("x2", W - R);
        line.setAttribute("y1", y(v)); line.setAttribute("y2", y(v));
        line.setAttribute("class", "grid");
        const label = document.createElementNS(SVG, "text");
        label.setAttribute("x", L - 4); label.setAttribute("y", y(v) + 4);
        label.setAttribute("text-anchor", "end");
        label.textContent = yUnit(v);
        svg.append(line, label);
    }
    let lx = L;
    for (const s of series) {
        const pts = [];
        let prev = null;
        for (const [t, v] of s.points) {
            if (v === null || v === undefined)
                continue;
            if (s.step && prev !== null)
                pts.push(x(t).toFixed(1) + "," + y(prev).toFixed(1));
            pts.push(x(t).toFixed(1) + "," + y(v).toFixed(1));
            prev = v;
        }
        const vals = s.points.map(p => p[1]).filter(v => v !== null && v !== undefined);
        const pl = document.createElementNS(SVG, "polyline");
        pl.setAttribute("points", pts.join(" "));
        pl.setAttribute("class", "series " + s.cls);
        pl.dataset.series = s.name;
        pl.dataset.last = vals.length ? vals[vals.length - 1] : "";
        pl.dataset.max = vals.length ? Math.max(...vals) : "";
        pl.dataset.min = vals.length ? Math.min(...vals) : "";
        svg.append(pl);
        const key = document.createElementNS(SVG, "text");
        key.setAttribute("x", lx); key.setAttribute("y", H - 8);
        key.setAttribute("class", "key " + s.cls);
        key.textContent = "■ " + s.label;
        svg.append(key);
        lx += 28 + 7 * s.label.length;
    }
}

function drawCharts(v) {
    const h = state.history.get(v.name) || [];
    const now = Date.now() / 1000;
    const pick = f => h.map(p => [p.t, p[f]]);
    // What the page has seen, at least a minute, at most HISTORY_S.
    const window_s = Math.min(HISTORY_S, Math.max(60, h.length ? now - h[0].t : 0));
    drawChart($("chart-cpu"), [
        { name: "vcpus", label: "vCPUs", cls: "s-vcpus", step: true, points: pick("vcpus") },
        { name: "quota", label: "CPU quota", cls: "s-quota", step: true, points: pick("quota") },
        { name: "demand", label: "demand (CPUs)", cls: "s-demand", points: pick("demand") },
        { name: "load1", label: "load1", cls: "s-load", points: pick("load1") },
    ], now, window_s, c => c.toFixed(1));
    drawChart($("chart-mem"), [
        { name: "mem", label: "memory", cls: "s-mem", step: true, points: pick("mem") },
        { name: "using_mem", label: "sized for", cls: "s-using", step: true, points: pick("using_mem") },
    ], now, window_s, b => Math.round(b / 1048576) + "M");
}

// ---- actions -----------------------------------------------------------------

function act(method, path, body, what) {
    const out = $("action-result");
    out.dataset.result = "pending";
    out.textContent = what + "…";
    showBanner(null);
    return api(method, path, body)
            .then(doc => {
                out.dataset.result = "done";
                out.textContent = what + ": done" + (doc.done ? " (" + doc.done + ")" : "");
                refresh();
            })
            .catch(ex => {
                out.dataset.result = "refused";
                out.textContent = what + ": refused — " + ex.message + (ex.status ? " (HTTP " + ex.status + ")" : "");
                showBanner(out.textContent);
            });
}

function selectedPath(suffix) {
    return "/v1/vms/" + encodeURIComponent(currentVm()) + suffix;
}

function wireActions() {
    $("act-pause").addEventListener("click", () => act("POST", selectedPath("/pause"), undefined, "pause " + currentVm()));
    $("act-resume").addEventListener("click", () => act("POST", selectedPath("/resume"), undefined, "resume " + currentVm()));
    $("act-disable").addEventListener("click", () =>
        act("POST", "/v1/domains/" + encodeURIComponent(currentVm()) + "/disable", undefined, "disable " + currentVm()));
    $("act-mode").addEventListener("click", () =>
        act("POST", selectedPath("/bounds"), { mode: $("act-mode").dataset.next }, "mode " + $("act-mode").dataset.next));
    $("bounds-form").addEventListener("submit", ev => {
        ev.preventDefault();
        const body = {};
        for (const input of ev.target.querySelectorAll("input"))
            if (input.value.trim())
                body[input.name] = input.value.trim();
        act("POST", selectedPath("/bounds"), body, "set bounds of " + currentVm());
    });
}

// ---- polling -----------------------------------------------------------------

function currentVm() {
    const path = cockpit.location.path;
    return path[0] === "vm" && path[1] ? path[1] : null;
}

function route() {
    const vm = currentVm();
    $("list-view").hidden = !!vm;
    $("vm-view").hidden = !vm;
    if (vm !== state.events.vm)
        state.events = { vm, since: 0, daemon_start: null, list: [] };
    if (!vm)
        state.detail = null;
    else if (!state.detail || state.detail.name !== vm)
        $("vm-title").textContent = vm;
    $("action-result").textContent = "";
    refresh();
}

async function pollEvents(vm) {
    const ev = state.events;
    const doc = await api("GET", "/v1/events?since=" + ev.since + "&vm=" + encodeURIComponent(vm));
    if (ev !== state.events)
        return;
    if (ev.daemon_start !== null && doc.daemon_start !== ev.daemon_start) {
        // vmactd restarted: its numbering began again.
        ev.since = 0;
        ev.daemon_start = doc.daemon_start;
        return pollEvents(vm);
    }
    ev.daemon_start = doc.daemon_start;
    const seen = new Set(ev.list.map(e => e.seq));
    for (const e of doc.events || [])
        if (EVENT_KINDS.has(e.kind) && !seen.has(e.seq))
            ev.list.push(e);
    if (ev.list.length > 200)
        ev.list.splice(0, ev.list.length - 200);
    ev.since = doc.last_seq;
}

async function refresh() {
    if (state.busy)
        return;
    state.busy = true;
    try {
        const doc = await api("GET", "/v1/vms?all=true");
        const now = Date.now() / 1000;
        state.vms = doc.vms || [];
        for (const v of state.vms)
            record(v, now);
        const managed = state.vms.filter(v => v.state === "managed" || v.state === "paused" || v.state === "frozen").length;
        setDaemonState("running", "vmactd is running: " + managed + " VM" + (managed === 1 ? "" : "s") + " managed");
        if ($("banner").dataset.kind === "daemon")
            showBanner(null);
        $("banner").dataset.kind = "";
        renderList();
        const vm = currentVm();
        if (vm) {
            // A VM that went away (404) or a refusal is said in the
            // banner; the daemon itself answered.
            try {
                state.detail = await api("GET", "/v1/vms/" + encodeURIComponent(vm));
                renderDetail();
                await pollEvents(vm);
                renderEvents();
            } catch (ex) {
                showBanner(vm + ": " + ex.message + (ex.status ? " (HTTP " + ex.status + ")" : ""));
                $("banner").dataset.kind = "daemon";
            }
        }
    } catch (ex) {
        const f = describeFailure(ex);
        setDaemonState(f.state, { down: "vmactd: not running", refused: "vmactd: access refused" }[f.state] ||
                       "vmactd: error");
        showBanner(f.text);
        $("banner").dataset.kind = "daemon";
    } finally {
        state.busy = false;
    }
}

async function socketPath() {
    const opt = cockpit.location.options.socket;
    if (typeof opt === "string" && opt.startsWith("/"))
        return opt;
    try {
        const cfg = await cockpit.file(CONFIG, { syntax: JSON }).read();
        if (cfg && cfg.control && typeof cfg.control.socket === "string" && cfg.control.socket)
            return cfg.control.socket;
    } catch (e) { /* no configuration: the default */ }
    return DEFAULT_SOCKET;
}

async function main() {
    state.socket = await socketPath();
    // superuser "try": as root when the user may be (Cockpit's
    // administrative access), else as the user, whom vmactd then refuses.
    state.http = cockpit.http({ unix: state.socket, superuser: "try" });
    wireActions();
    cockpit.addEventListener("locationchanged", route);
    route();
    state.timer = window.setInterval(refresh, POLL_MS);
    document.body.dataset.ready = "1";
}

main();
