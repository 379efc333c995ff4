// SPDX-License-Identifier: Apache-2.0
// vmact's Cockpit page (cockpit/) in a real browser: Debian's chromium,
// driven by playwright-core, against Debian's cockpit-ws in its
// local-session mode (no login) on 127.0.0.1, with a real vmactd managing
// a real TCG guest (tests/guest). Run by tests/checks/check-ui.sh (make
// check-ui), as root. Steps, each with a screenshot in $VMACT_UI_ARTIFACTS:
//
//   1-list        the guest in the list of managed VMs, vCPUs 1;
//   2-busy        'busy 2' in the guest: the page's vCPU line rises to 2 or
//                 more and a decision appears in its list;
//   3-paused      Pause on the page: vmactd's own API says the VM is paused;
//   4-no-rights   a second cockpit-ws whose bridge runs as an unprivileged
//                 user: the page shows, says vmactd refuses this user, and
//                 its Pause is refused (vmactd's VM stays as it was);
//   5-down        vmactd stopped: the page says plainly it is not running;
//   6-back        vmactd started again: the page recovers by itself.
//
// Every wait is for a state, with a generous safety limit; nothing is timed.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const http = require("http");
const net = require("net");
const { spawn, execFileSync } = require("child_process");

const top = path.resolve(__dirname, "../..");
const build = path.resolve(process.env.VMACT_BUILD || path.join(top, "build"));
const guestDir = path.resolve(process.env.VMACT_GUEST_DIR || path.join(top, "build/guest"));
const artifacts = path.resolve(process.env.VMACT_UI_ARTIFACTS || path.join(build, "ui"));
const npmDir = process.env.VMACT_NPM_DIR || path.join(top, "build/npm");
const CHROMIUM = "/usr/bin/chromium";
const COCKPIT_WS = "/usr/lib/cockpit/cockpit-ws";
const UNPRIVILEGED = "nobody";
const LIMIT_MS = 240000;

const { chromium } = require(path.join(npmDir, "node_modules/playwright-core"));

const name = "vmact-ui-" + process.pid;
const pins = "/sys/fs/bpf/" + name;
const tmp = fs.mkdtempSync("/tmp/" + name + ".");
const sock = path.join(tmp, "vmactd.sock");
const procs = [];
let vmactd = null;
let guestStarted = false;
let passed = 0;

function log(msg) {
    console.log("check-ui: " + msg);
}

function ok(what) {
    passed++;
    log("ok: " + what);
}

function sleep(ms) {
    return new Promise(resolve => setTimeout(resolve, ms));
}

// Waits until pred() (may be async) is true; throws what() after the limit.
async function waitFor(pred, what, limit = LIMIT_MS) {
    const end = Date.now() + limit;
    for (;;) {
        let v = false;
        try {
            v = await pred();
        } catch (e) { v = false }
        if (v)
            return v;
        if (Date.now() > end)
            throw new Error("waited " + limit / 1000 + " s in vain: " + what);
        await sleep(200);
    }
}

function start(cmd, args, opts, logName) {
    const out = fs.openSync(path.join(tmp, logName), "a");
    const p = spawn(cmd, args, { stdio: ["ignore", out, out], ...opts });
    p.exited = new Promise(resolve => p.on("exit", (code, sig) => resolve(code === null ? 128 : code)));
    procs.push(p);
    return p;
}

async function stop(p) {
    if (!p || p.exitCode !== null || p.signalCode !== null)
        return;
    p.kill("SIGTERM");
    const done = await Promise.race([p.exited, sleep(30000).then(() => null)]);
    if (done === null) {
        p.kill("SIGKILL");
        await p.exited;
    }
}

// vmactd's control API, straight (not through the page).
function vmactdGet(p) {
    return new Promise((resolve, reject) => {
        const req = http.request({ socketPath: sock, path: p, method: "GET" }, res => {
            let body = "";
            res.on("data", d => { body += d });
            res.on("end", () => {
                try {
                    resolve(JSON.parse(body));
                } catch (e) { reject(e) }
            });
        });
        req.on("error", reject);
        req.end();
    });
}

function guestCmd(line) {
    return new Promise((resolve, reject) => {
        const c = net.connect(path.join(tmp, name + ".ctl"), () => {
            c.write(line + "\n", () => setTimeout(() => { c.end(); resolve() }, 100));
        });
        c.on("error", reject);
    });
}

function fileHas(file, needle) {
    try {
        return fs.readFileSync(file, "latin1").includes(needle);
    } catch (e) { return false }
}

function startVmactd() {
    vmactd = start(path.join(build, "vmactd"), ["--config", path.join(tmp, "vmactd.json")],
                   {}, "vmactd.log");
    return waitFor(() => vmactd.exitCode === null && fileHas(path.join(tmp, "vmactd.log"), "ready: managing 1 VM") &&
                   fs.existsSync(sock), "vmactd ready");
}

function cockpitWs(port, asUser) {
    const xdg = path.join(tmp, "xdg");
    const env = { ...process.env, XDG_DATA_DIRS: xdg + ":/usr/share" };
    const args = ["--local-session=cockpit-bridge", "--no-tls", "--address", "127.0.0.1", "--port", String(port)];
    if (!asUser)
        return start(COCKPIT_WS, args, { env }, "cockpit-ws-" + port + ".log");
    const home = path.join(tmp, "home-" + asUser);
    fs.mkdirSync(home, { recursive: true });
    execFileSync("chown", [asUser, home]);
    return start("setpriv", ["--reuid=" + asUser, "--regid=nogroup", "--clear-groups", "--reset-env",
        "env", "HOME=" + home, "XDG_DATA_DIRS=" + xdg + ":/usr/share", "PATH=/usr/bin:/bin",
        COCKPIT_WS, ...args], { env }, "cockpit-ws-" + port + ".log");
}

function freePort() {
    return new Promise(resolve => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
            const p = s.address().port;
            s.close(() => resolve(p));
        });
    });
}

async function shot(page, step) {
    const file = path.join(artifacts, step + ".png");
    await page.screenshot({ path: file, fullPage: true });
    log("screenshot " + file);
}

async function run() {
    fs.mkdirSync(artifacts, { recursive: true });
    fs.chmodSync(tmp, 0o755); // the unprivileged bridge reaches the socket, and is refused there
    // The page, as cockpit-bridge finds packages: XDG_DATA_DIRS/cockpit/NAME
    // (a copy, readable by the unprivileged user whatever the checkout's modes).
    fs.mkdirSync(path.join(tmp, "xdg/cockpit/vmact"), { recursive: true, mode: 0o755 });
    for (const f of ["manifest.json", "index.html", "vmact.js", "vmact.css"]) {
        fs.copyFileSync(path.join(top, "cockpit", f), path.join(tmp, "xdg/cockpit/vmact", f));
        fs.chmodSync(path.join(tmp, "xdg/cockpit/vmact", f), 0o644);
    }

    // The guest: 1 of 4 vCPUs, bounds 1-4 CPUs / 512Mi-1536Mi.
    const meta = "<metadata><vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'>" +
        "<vmact:cpu min='1' max='4'/><vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>" +
        "<vmact:compute-unit cpu='250m' memory='256Mi'/></vmact:autoscaling></metadata>";
    const xml = fs.readFileSync(path.join(top, "tests/guest/domain.xml.in"), "utf8")
            .replace(/@NAME@/g, name).replace(/@GUEST@/g, guestDir).replace(/@RUN@/g, tmp)
            .replace("@METADATA@", meta).replace("@CMDLINE@", "");
    fs.writeFileSync(path.join(tmp, "domain.xml"), xml);
    execFileSync("virsh", ["-q", "-c", "qemu:///system", "create", path.join(tmp, "domain.xml")], { stdio: "ignore" });
    guestStarted = true;
    await waitFor(() => fileHas(path.join(tmp, name + ".log"), "VMACT seq="), "the guest's first status line");
    ok("guest " + name + " booted");

    // vmactd: its defaults but for what isolates the test; the arbiter
    // declares 2 CPUs per host CPU so that the guest may grow on a small host.
    fs.writeFileSync(path.join(tmp, "vmactd.json"), JSON.stringify({
        libvirt: { name_prefix: name },
        control: { socket: sock, state_dir: tmp },
        sampler: { pin_root: pins },
        metrics: { listen: "" },
        arbiter: { overcommit_cpu: 2 },
    }));
    await startVmactd();
    ok("vmactd manages the guest");

    const rootPort = await freePort();
    cockpitWs(rootPort);
    const userPort = await freePort();
    cockpitWs(userPort, UNPRIVILEGED);
    const base = p => "http://127.0.0.1:" + p + "/cockpit/@localhost/vmact/index.html";
    const hash = (vm) => "#/" + (vm ? "vm/" + encodeURIComponent(vm) : "") + "?socket=" + encodeURIComponent(sock);
    await waitFor(() => new Promise(resolve =>
        http.get(base(rootPort), res => { res.resume(); resolve(res.statusCode === 200) }).on("error", () => resolve(false))),
    "cockpit-ws answering");

    const profile = fs.mkdtempSync(path.join(tmp, "chromium-"));
    const browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1280, height: 1000 },
        args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    try {
        const page = await browser.newPage();
        const errors = [];
        page.on("pageerror", e => errors.push(e.message));

        // 1: the list.
        await page.goto(base(rootPort) + hash(null));
        const row = page.locator(`tr[data-vm="${name}"]`);
        await row.waitFor({ timeout: LIMIT_MS });
        await waitFor(async () => (await page.getAttribute("#daemon-state", "data-state")) === "running", "page: running");
        const vcpus0 = Number(await row.locator('[data-field="vcpus"]').textContent());
        if (!(vcpus0 >= 1))
            throw new Error("the list shows no vCPU count for the guest");
        await shot(page, "1-list");
        ok("the list shows the guest, " + vcpus0 + " vCPU(s)");

        // 2: busy: the vCPU line rises, a decision shows.
        await row.locator("a").click();
        await page.locator('#chart-cpu polyline[data-series="vcpus"]').waitFor({ state: "attached", timeout: LIMIT_MS });
        await guestCmd("busy 2");
        // (The guest's boot may already have made vmactd grow it: the line
        // rises from where it was when the page started drawing it.)
        const line = '#chart-cpu polyline[data-series="vcpus"]';
        await waitFor(async () => {
            const min = Number(await page.getAttribute(line, "data-min"));
            const last = Number(await page.getAttribute(line, "data-last"));
            return last >= 2 && last > min;
        }, "the page's vCPU line rising to 2 or more");
        await page.locator('#events li[data-kind="decision"]').first().waitFor({ timeout: LIMIT_MS });
        const minV = await page.getAttribute(line, "data-min");
        const lastV = await page.getAttribute(line, "data-last");
        await shot(page, "2-busy");
        ok("busy: the vCPU line rose from " + minV + " to " + lastV + ", a decision is listed: " +
           (await page.locator('#events li[data-kind="decision"]').first().textContent()));

        // 3: pause from the page; vmactd says paused.
        await page.click("#act-pause");
        await waitFor(async () => (await page.getAttribute("#action-result", "data-result")) === "done", "pause done");
        await waitFor(async () => (await vmactdGet("/v1/vms/" + name)).state === "paused", "vmactd: paused");
        await waitFor(async () => (await page.getAttribute("#vm-title", "data-state")) === "paused", "page: paused");
        await shot(page, "3-paused");
        ok("paused from the page: vmactd reports the VM paused");
        await page.click("#act-resume");
        await waitFor(async () => (await vmactdGet("/v1/vms/" + name)).state === "managed", "vmactd: resumed");
        await guestCmd("idle");

        // 4: a user without rights.
        const upage = await browser.newPage();
        await upage.goto(base(userPort) + hash(name));
        await waitFor(async () => (await upage.getAttribute("#daemon-state", "data-state")) === "refused",
                      "the unprivileged page says it is refused");
        await upage.click("#act-pause");
        await waitFor(async () => (await upage.getAttribute("#action-result", "data-result")) === "refused",
                      "the unprivileged pause refused");
        const refusal = await upage.textContent("#action-result");
        if ((await vmactdGet("/v1/vms/" + name)).state !== "managed")
            throw new Error("an unprivileged pause changed the VM");
        await shot(upage, "4-no-rights");
        ok("without rights: page shown, pause refused (" + refusal + ")");
        await upage.close();

        // 5: vmactd stops; the page says so.
        await stop(vmactd);
        await waitFor(async () => (await page.getAttribute("#daemon-state", "data-state")) === "down", "page: vmactd down");
        const said = await page.textContent("#banner");
        if (!/vmactd is not running/.test(said))
            throw new Error("the banner says: " + said);
        await shot(page, "5-down");
        ok("vmactd stopped: the page says \"" + said + "\"");

        // 6: and recovers by itself.
        await startVmactd();
        await waitFor(async () => (await page.getAttribute("#daemon-state", "data-state")) === "running", "page: running again");
        await waitFor(async () => await page.isHidden("#banner"), "the banner gone");
        await shot(page, "6-back");
        ok("vmactd back: the page recovered by itself");
        if (errors.length)
            throw new Error("errors in the page: " + errors.join("; "));
    } finally {
        await browser.close();
    }
}

async function cleanup() {
    for (const p of procs.reverse())
        await stop(p);
    if (guestStarted) {
        try {
            execFileSync("virsh", ["-q", "-c", "qemu:///system", "destroy", name], { stdio: "ignore" });
        } catch (e) { /* gone already */ }
    }
    if (fs.existsSync(pins)) {
        for (const f of fs.readdirSync(pins))
            fs.rmSync(path.join(pins, f), { force: true });
        fs.rmdirSync(pins);
    }
    if (!process.env.VMACT_TEST_KEEP_LOG)
        fs.rmSync(tmp, { recursive: true, force: true });
    else
        log("logs kept in " + tmp);
    try {
        fs.rmSync("/var/log/libvirt/qemu/" + name + ".log", { force: true });
    } catch (e) { /* not ours to keep */ }
}

process.on("SIGTERM", () => { cleanup().finally(() => process.exit(143)) });
run().then(async () => {
    await cleanup();
    log(passed + " passed, 0 failed; screenshots in " + artifacts);
    process.exit(0);
}, async e => {
    log("FAILED: " + e.message);
    try {
        for (const f of ["vmactd.log", fs.readdirSync(tmp).find(f => f.startsWith("cockpit-ws")) || ""]) {
            if (f && fs.existsSync(path.join(tmp, f)))
                console.log("---- " + f + " (tail) ----\n" + fs.readFileSync(path.join(tmp, f), "utf8").slice(-3000));
        }
    } catch (x) { /* logs are a help only */ }
    await cleanup();
    log(passed + " passed, 1 failed");
    process.exit(1);
});
