#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitoring/ without a daemon (doc/metrics.md, "Alerts and dashboard"):
# the alert rules pass `promtool check rules` and their unit tests
# (`promtool test rules`); the Grafana dashboard is valid JSON, every panel
# has at least one Prometheus target, and every family of doc/metrics.md's
# and doc/cluster.md's tables is queried by some panel. (The queries are
# evaluated against a real scrape by tests/integration/test_dashboard.c.)
# Prints "N passed, M failed"; exit status 0 only when nothing failed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "check-monitoring: $*"; failed=$((failed + 1)); }
rules=monitoring/vmact-alerts.yml dash=monitoring/vmact-dashboard.json

for c in promtool jq; do
	command -v "$c" >/dev/null || { echo "check-monitoring: $c is missing (tests/host/setup-host.sh)"; echo "0 passed, 1 failed"; exit 1; }
done
if out=$(promtool check rules "$rules" 2>&1); then ok; else bad "promtool check rules: $out"; fi
if out=$(cd monitoring && promtool test rules vmact-alerts.test.yml 2>&1); then ok; else bad "promtool test rules: $out"; fi
# Each alert of the rules has a test that makes it fire.
for a in $(sed -n 's/^ *- alert: *//p' "$rules"); do
	if grep -q "alertname: $a\$" monitoring/vmact-alerts.test.yml &&
	   grep -A2 "alertname: $a\$" monitoring/vmact-alerts.test.yml | grep -q 'exp_labels\|exp_alerts:$'; then
		ok
	else
		bad "alert $a has no test that makes it fire"
	fi
done

if jq -e . "$dash" >/dev/null 2>&1; then ok; else bad "$dash is not valid JSON"; fi
if jq -e '[.panels[] | select(.type != "row") | (.targets | length) > 0 and all(.targets[]; (.expr | length) > 0)] | all' "$dash" >/dev/null; then
	ok
else
	bad "a panel without a target or with an empty expression"
fi
if jq -e '[.panels[].id] | length == (unique | length)' "$dash" >/dev/null; then ok; else bad "panel ids repeat"; fi
exprs=$(jq -r '.panels[].targets[]?.expr' "$dash")
families=$(sed -n 's/^| `\(vmact_[a-z_]*\)` |.*/\1/p' doc/metrics.md doc/cluster.md | sort -u)
[ -n "$families" ] || bad "no family found in doc/metrics.md and doc/cluster.md"
for f in $families; do
	if grep -q "$f" <<<"$exprs"; then ok; else bad "family $f (doc/) has no panel in $dash"; fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
