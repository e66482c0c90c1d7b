#!/usr/bin/env bash
# testbed-selfcheck.sh - bring scripts/testbed.sh's namespaces up, check them
# and the traffic tools, tear everything down and check nothing is left.
#
#   scripts/testbed-selfcheck.sh      (root; builds what it needs if missing)
#
#   1. no default route anywhere, rp_filter off, root namespace untouched,
#      the private bpffs mounted and visible from inside the namespaces
#   2. ping client -> host, IPv4 and IPv6
#   3. 2-second floods into the host with no XDP program attached (the host's
#      stack takes every frame): single source and random sources from the
#      attacker (spoofed, routed by the router), random IPv6 sources, and the
#      two IPv4 floods injected on the router's host-facing veth. Reports the
#      pps the generator reached and the host interface's rx counters.
#   4. probe -> sink (IPv4 and IPv6 at once), no XDP: delivered == sent
#   5. native XDP on veth-host, nothing on its peer: with xdp_drop every flood
#      frame reaches the program (rx_packets grows by what was sent, the IP
#      stack sees none of it): the generator's rates into XDP; with xdp_pass,
#      ping and probe -> sink still deliver everything
#   6. down: no namespace, mount or run directory left
#
# BUILD_DIR (default build/) holds sluice-traffic, xdp_drop_bpf.bpf.o and
# tests/tools/xdp_pass_bpf.bpf.o; SLUICE_TRAFFIC overrides the binary's path.
# FLOOD_SECONDS (default 2) sets the length of each flood.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
traffic=${SLUICE_TRAFFIC:-$build/tests/tools/sluice-traffic}
secs=${FLOOD_SECONDS:-2}

if [ "$(id -u)" -ne 0 ]; then
	echo "testbed-selfcheck: needs root" >&2
	exit 2
fi
xdp_drop_obj=$build/xdp_drop_bpf.bpf.o
xdp_pass_obj=$build/tests/tools/xdp_pass_bpf.bpf.o
if [ ! -x "$traffic" ] || [ ! -f "$xdp_drop_obj" ] || [ ! -f "$xdp_pass_obj" ]; then
	echo "testbed-selfcheck: building sluice-traffic and the XDP objects in $build" >&2
	if [ ! -f "$build/CMakeCache.txt" ]; then
		cmake -S "$root" -B "$build" >/dev/null
	fi
	cmake --build "$build" -j "$(nproc)" \
		--target sluice-traffic xdp_drop_bpf_skel_gen xdp_pass_bpf_skel_gen >/dev/null
fi

# shellcheck source=scripts/testbed.sh
. "$root/scripts/testbed.sh"

failures=0
checks=0
pass() { checks=$((checks + 1)); echo "  ok   $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "  FAIL $*"; }
check() { # check DESCRIPTION CMD... (CMD's output is discarded)
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi
}
jget() { # jget JSON KEY [KEY...]: one value of a JSON line (0 when absent)
	python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]:
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v)' "$@"
}

bg_pids=()
work=$(mktemp -d /tmp/sluice-selfcheck.XXXXXX)
root_links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)
name=""
cleanup() {
	local rc=$? p
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$name" ]; then
		tb_down "$name" || rc=1
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== up"
tb_up selfcheck
name=$TB_NAME
echo "  testbed $TB_NAME (bpffs $TB_BPFFS)"

for role in host client attacker router; do
	ns=$(tb_ns "$role")
	check "$role: no IPv4 default route" test -z "$(ip -n "$ns" route show default)"
	check "$role: no IPv6 default route" test -z "$(ip -n "$ns" -6 route show default)"
	check "$role: rp_filter off" test "$(tb_exec "$role" sysctl -n net.ipv4.conf.all.rp_filter)" = 0
done
check "root namespace: no interface added" test "$(ip -o link show | awk -F': ' '{print $2}' | sort)" = "$root_links_before"
check "bpffs mounted at $TB_BPFFS" test "$(stat -f -c %T "$TB_BPFFS")" = bpf_fs
check "bpffs visible inside a namespace" test "$(tb_exec host stat -f -c %T "$TB_BPFFS")" = bpf_fs
check "no XDP program on $TB_HOST_IF" test -z "$(ip -n "$TB_NS_HOST" link show "$TB_HOST_IF" | grep -w xdp || true)"

echo "== ping"
check "client -> host IPv4 ($TB_HOST_IP4)" tb_exec client ping -q -c 3 -i 0.2 -W 2 "$TB_HOST_IP4"
check "client -> host IPv6 ($TB_HOST_IP6)" tb_exec client ping -q -c 3 -i 0.2 -W 2 "$TB_HOST_IP6"
check "attacker -> host IPv4" tb_exec attacker ping -q -c 1 -W 2 "$TB_HOST_IP4"

echo "== floods (${secs}s each, 64-byte frames, no XDP program: the host's stack takes every frame)"
stack_in() { # IPv4 + IPv6 datagrams the host's IP stack received
	# shellcheck disable=SC2016
	tb_exec host awk '$1 == "Ip:" && $4 ~ /^[0-9]+$/ {n += $4} $1 == "Ip6InReceives" {n += $2} END {print n + 0}' \
		/proc/net/snmp /proc/net/snmp6
}
flood() { # flood LABEL ROLE IFACE DST_MAC DST FLOOD-ARGS...
	local label=$1 role=$2 ifc=$3 mac=$4 dst=$5 out rx0 rx1 drop0 drop1 in0 in1 sent pps rx
	shift 5
	rx0=$(tb_stat host "$TB_HOST_IF" rx_packets)
	drop0=$(tb_stat host "$TB_HOST_IF" rx_dropped)
	in0=$(stack_in)
	if ! out=$(tb_exec "$role" "$traffic" flood --iface "$ifc" --dst-mac "$mac" --dst "$dst" \
		--duration "$secs" --port 9 "$@"); then
		fail "$label: flood failed: $out"
		return
	fi
	sleep 0.2
	rx1=$(tb_stat host "$TB_HOST_IF" rx_packets)
	drop1=$(tb_stat host "$TB_HOST_IF" rx_dropped)
	in1=$(stack_in)
	sent=$(jget "$out" sent)
	pps=$(jget "$out" pps)
	rx=$((rx1 - rx0))
	printf '  %-46s sent %9d %9.0f pps  host rx_packets +%d rx_dropped +%d, IP stack +%d\n' \
		"$label" "$sent" "$pps" "$rx" "$((drop1 - drop0))" "$((in1 - in0))"
	# Every frame reaches the host, but those whose random source is one of
	# the router's own addresses (the router drops them as martians).
	if [ "$sent" -gt 0 ] && [ "$rx" -ge $((sent - sent / 1000)) ] && [ "$rx" -le $((sent + 100)) ]; then
		pass "$label: the host received what was sent"
	else
		fail "$label: sent $sent, host received $rx"
	fi
	if [ "$xdp" = drop ]; then
		# XDP dropped them all: the stack saw at most stray control traffic.
		check "$label: XDP took every frame (IP stack +$((in1 - in0)))" test $((in1 - in0)) -lt 100
	fi
}
xdp=none
flood "attacker, single source, routed" attacker "$TB_ATTACKER_IF" "$TB_ATTACKER_GW_MAC" "$TB_HOST_IP4" \
	--src 198.18.200.1
flood "attacker, random IPv4 sources, routed" attacker "$TB_ATTACKER_IF" "$TB_ATTACKER_GW_MAC" "$TB_HOST_IP4" \
	--random-src
flood "attacker, random IPv6 sources, routed" attacker "$TB_ATTACKER_IF" "$TB_ATTACKER_GW_MAC" "$TB_HOST_IP6" \
	--random-src --v6
flood "injected, single source" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP4" --src 198.18.200.1
flood "injected, random IPv4 sources" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP4" --random-src

probe_sink() { # probe_sink LABEL: IPv4 and IPv6 probes into one sink, delivered == sent
	local label=$1 port=5001 sink_pid p4 p6 sink sent4 sent6 got4 got6 received
	rm -f "$work/sink.ready"
	tb_bg host "$traffic" sink --port "$port" --duration 30 --ready-file "$work/sink.ready" >"$work/sink.json"
	sink_pid=$TB_BG_PID
	bg_pids+=("$sink_pid")
	for _ in $(seq 100); do [ -e "$work/sink.ready" ] && break; sleep 0.05; done
	check "$label: sink listening" test -e "$work/sink.ready"
	tb_bg client "$traffic" probe --dst "$TB_HOST_IP4" --port "$port" --pps 2000 --duration 2 >"$work/probe4.json"
	p4=$TB_BG_PID
	tb_bg client "$traffic" probe --dst "$TB_HOST_IP6" --port "$port" --pps 1000 --duration 2 >"$work/probe6.json"
	p6=$TB_BG_PID
	bg_pids+=("$p4" "$p6")
	wait "$p4" || true
	wait "$p6" || true
	sleep 0.3
	kill -TERM "$sink_pid"
	wait "$sink_pid" || true
	sink=$(cat "$work/sink.json")
	sent4=$(jget "$(cat "$work/probe4.json")" sent)
	sent6=$(jget "$(cat "$work/probe6.json")" sent)
	got4=$(jget "$sink" by_source "$TB_CLIENT_IP4")
	got6=$(jget "$sink" by_source "$TB_CLIENT_IP6")
	received=$(jget "$sink" received)
	echo "  $label: probe IPv4 sent $sent4, sink counted $got4; probe IPv6 sent $sent6, sink counted $got6;" \
		"sink received $received, socket drops $(jget "$sink" socket_drops)"
	check "$label: probe IPv4 sent 4000" test "$sent4" = 4000
	check "$label: probe IPv6 sent 2000" test "$sent6" = 2000
	check "$label: IPv4 delivered == sent" test "$got4" = "$sent4"
	check "$label: IPv6 delivered == sent" test "$got6" = "$sent6"
	check "$label: sink received nothing else" test "$received" = $((sent4 + sent6))
}

echo "== probe -> sink (no XDP program)"
probe_sink "no XDP"

echo "== native XDP on $TB_HOST_IF, nothing attached to its peer $TB_ROUTER_HOST_IF"
check "attach xdp_drop (native)" ip -n "$TB_NS_HOST" link set dev "$TB_HOST_IF" xdpdrv obj "$xdp_drop_obj" sec xdp
check "xdp_drop attached in driver mode" test -n "$(ip -n "$TB_NS_HOST" -d link show "$TB_HOST_IF" | grep -w 'prog/xdp')"
xdp=drop
flood "XDP_DROP, injected, single source" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP4" \
	--src 198.18.200.1
flood "XDP_DROP, injected, random IPv4" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP4" \
	--random-src
flood "XDP_DROP, injected, random IPv6" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP6" \
	--random-src --v6
flood "XDP_DROP, injected, random IPv6 in one /64" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP6" \
	--random-src --v6 --v6-same64
flood "XDP_DROP, injected, 1000 sources round-robin" router "$TB_INJECT_IF" "$TB_INJECT_DST_MAC" "$TB_HOST_IP4" \
	--sources 1000 --src-base 198.18.100.0
flood "XDP_DROP, attacker, single source, routed" attacker "$TB_ATTACKER_IF" "$TB_ATTACKER_GW_MAC" "$TB_HOST_IP4" \
	--src 198.18.200.1
flood "XDP_DROP, attacker, random IPv4, routed" attacker "$TB_ATTACKER_IF" "$TB_ATTACKER_GW_MAC" "$TB_HOST_IP4" \
	--random-src
xdp=none
ip -n "$TB_NS_HOST" link set dev "$TB_HOST_IF" xdpdrv off

check "attach xdp_pass (native)" ip -n "$TB_NS_HOST" link set dev "$TB_HOST_IF" xdpdrv obj "$xdp_pass_obj" sec xdp
check "XDP_PASS: client -> host IPv4 ping" tb_exec client ping -q -c 3 -i 0.2 -W 2 "$TB_HOST_IP4"
check "XDP_PASS: client -> host IPv6 ping" tb_exec client ping -q -c 3 -i 0.2 -W 2 "$TB_HOST_IP6"
probe_sink "XDP_PASS"
ip -n "$TB_NS_HOST" link set dev "$TB_HOST_IF" xdpdrv off

echo "== down"
tb_down "$name"
left=$(tb_leftovers "$name")
name=""
check "nothing left (namespaces, mounts, /run dir)" test -z "$left"
check "no namespace of the run in ip netns list" test -z "$(ip netns list | grep -F "$TB_NAME" || true)"
check "no mount of the run" test -z "$(grep -F "/run/$TB_NAME" /proc/self/mounts || true)"
check "root namespace interfaces as before" test "$(ip -o link show | awk -F': ' '{print $2}' | sort)" = "$root_links_before"

echo "testbed-selfcheck: $((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
