#!/usr/bin/env bash
# testbed.sh - a throwaway four-namespace network for sluice's end-to-end
# tests, the demo and the benchmarks. Sourceable (functions) and runnable.
#
#            client (legitimate)                     attacker (spoofs)
#      veth-client 198.18.2.2                  veth-att 198.18.3.2
#                  2001:2:0:2::2                        2001:2:0:3::2
#                      |                                    |
#            r-client 198.18.2.1     router     r-att 198.18.3.1
#                     2001:2:0:2::1  (forwards) 2001:2:0:3::1
#                                  r-host 198.18.1.1 / 2001:2:0:1::1
#                                      |
#                      veth-host 198.18.1.2 / 2001:2:0:1::2   <- sluice attaches
#                            host (protected)                    here (native XDP)
#
# Every namespace, veth and address exists only inside namespaces this script
# creates: nothing is connected to the machine's interfaces, nothing is added
# to the root network namespace, and no namespace has a default route. The
# addresses come from 198.18.0.0/15 and 2001:2::/48 only. Each end namespace
# routes those two prefixes (and nothing else) to the router; the router has
# the three /24s and /64s connected and a blackhole for the rest of the two
# prefixes, so replies to spoofed sources die in the router. rp_filter is 0 in
# the four namespaces (all, default and every interface), so the attacker can
# send from any address of 198.18.0.0/15 or 2001:2::/48 and the router forwards
# it. Neighbours are permanent entries on every link (no ARP/ND at start, no
# resolution traffic to count), MACs are fixed (below), DAD is off.
#
# Pins: `ip netns exec` gives each command a private /sys, so pins made under
# its /sys/fs/bpf vanish with the command. The testbed mounts its own bpffs at
# /run/<name>/bpffs in the caller's mount namespace; `ip netns exec` children
# see it too (their mount namespace is a slave copy). Use
# `--pin-dir $TB_BPFFS/sluice --socket $TB_RUNDIR/sluiced.sock`.
#
# veth and native XDP on this kernel (6.18; scripts/testbed-selfcheck.sh checks
# the first two points on every run):
#   * Attaching a native XDP program to veth-host needs nothing on the peer
#     (r-host): no XDP program there, no GRO (which would need ethtool). While
#     veth-host has a program, the kernel clears the peer's TSO/GSO features,
#     so every skb the peer transmits -- forwarded by the router or written
#     with AF_PACKET on r-host -- takes veth's NAPI path and runs through the
#     program, and what it XDP_PASSes goes up the host's stack (ping, UDP).
#   * XDP_TX (and XDP_REDIRECT into a veth) is what needs the peer to have
#     an XDP program: frames veth-host sends back with XDP_TX go to r-host's
#     ring, and on this kernel its NAPI is scheduled for them only when r-host
#     has a program (with GRO alone they sit there: measured, ethtool -S shows
#     rx_queue_0_xdp_tx counting and nothing arriving). sluice's SYN cookies
#     are XDP_TX, so the tests and benchmarks of cookies call
#     tb_xdp_tx_peer, which attaches tests/tools/xdp_pass to r-host; the
#     testbed itself attaches nothing there.
#   * veth-host counts the frames its program drops in rx_packets, not in
#     rx_dropped (`ip -s link` shows rx_dropped 0 under an XDP_DROP flood).
#   * veth copies each skb into a page-pool page before running the program
#     when its headroom is under 256 bytes, as the skbs of AF_PACKET and of
#     the router's forwarding have (skb_pp_cow_data in a profile): a
#     per-frame cost a NIC does not have.
#   * The peer's NAPI poll runs in the sender's softirq, on the sender's CPU:
#     generator, router forwarding and XDP share one CPU per sending thread.
#     (Threaded NAPI on veth-host made it slower here, with ENOBUFS
#     backpressure; the testbed keeps the default.)
#   * Without a program on veth-host, frames go through the plain backlog
#     (netif_rx) path: that is what "no XDP attached" baselines measure.
#   * With the peer MTU at 1500 the attach is accepted (veth refuses XDP when
#     the peer's MTU exceeds about 3.5 KB: one page less headroom).
#
# Sourced:
#   . scripts/testbed.sh
#   tb_up e2e || exit 1          # name sluice-e2e-<pid>-<random>; sets TB_* (exported)
#   trap tb_down EXIT            # removes everything, also after a failure
#   tb_exec host  CMD...         # run in a namespace (host|client|attacker|router)
#   tb_bg host CMD... >out; pid=$TB_BG_PID   # the same in the background, by pid
#   tb_exec attacker sluice-traffic flood --iface "$TB_ATTACKER_IF" \
#       --dst-mac "$TB_ATTACKER_GW_MAC" --dst "$TB_HOST_IP4" --random-src --duration 2
#
# Run:
#   eval "$(scripts/testbed.sh up sluice-demo-1)"   # prints TB_*=... assignments
#   scripts/testbed.sh env  sluice-demo-1            # prints them again
#   scripts/testbed.sh down sluice-demo-1
#   scripts/testbed.sh list                          # testbeds present on this machine
#
# Names must start with "sluice-" (letters, digits, '.', '_', '-'; at most 48
# characters). Namespaces are <name>-host, -client, -attacker, -router; the run
# directory is /run/<name>.
#
# Variables (set and exported by tb_up, printed by `up` and `env`):
#   TB_NAME TB_RUNDIR TB_BPFFS
#   TB_NS_HOST TB_NS_CLIENT TB_NS_ATTACKER TB_NS_ROUTER
#   TB_HOST_IF TB_HOST_MAC TB_HOST_IP4 TB_HOST_IP6            (sluice's interface)
#   TB_CLIENT_IF TB_CLIENT_MAC TB_CLIENT_IP4 TB_CLIENT_IP6
#   TB_ATTACKER_IF TB_ATTACKER_MAC TB_ATTACKER_IP4 TB_ATTACKER_IP6
#   TB_ATTACKER_GW_MAC   router MAC on the attacker link: --dst-mac for floods
#                        from the attacker (routed, like a real attack)
#   TB_CLIENT_GW_MAC     router MAC on the client link
#   TB_ROUTER_HOST_IF TB_ROUTER_HOST_MAC TB_ROUTER_HOST_IP4 TB_ROUTER_HOST_IP6
#   TB_INJECT_NS TB_INJECT_IF TB_INJECT_DST_MAC
#                        direct injection: frames sent with AF_PACKET on the
#                        router's host-facing veth go straight to veth-host's
#                        XDP program, skipping the router's forwarding (the
#                        fast path for benchmarks)
#   TB_SPOOF_NET4=198.18.0.0/15 TB_SPOOF_NET6=2001:2::/48
#
# Other functions: tb_new_name PURPOSE, tb_up_name NAME, tb_ns ROLE, tb_bg ROLE CMD...,
# tb_print_env, tb_stat ROLE IFACE COUNTER, tb_wait_udp ROLE PORT [SECONDS],
# tb_list, tb_leftovers NAME.
#
# Needs root, iproute2 and procps (sysctl), as scripts/setup.sh installs.

# File-wide (before the first command): the TB_* variables are for callers.
# shellcheck disable=SC2034
TB_SPOOF_NET4=198.18.0.0/15
TB_SPOOF_NET6=2001:2::/48
TB_ROLES="host client attacker router"
TB_VARS="TB_NAME TB_RUNDIR TB_BPFFS TB_NS_HOST TB_NS_CLIENT TB_NS_ATTACKER TB_NS_ROUTER
TB_HOST_IF TB_HOST_MAC TB_HOST_IP4 TB_HOST_IP6
TB_CLIENT_IF TB_CLIENT_MAC TB_CLIENT_IP4 TB_CLIENT_IP6
TB_ATTACKER_IF TB_ATTACKER_MAC TB_ATTACKER_IP4 TB_ATTACKER_IP6
TB_ATTACKER_GW_MAC TB_CLIENT_GW_MAC
TB_ROUTER_HOST_IF TB_ROUTER_HOST_MAC TB_ROUTER_HOST_IP4 TB_ROUTER_HOST_IP6
TB_INJECT_NS TB_INJECT_IF TB_INJECT_DST_MAC
TB_SPOOF_NET4 TB_SPOOF_NET6"

tb__log() { echo "testbed: $*" >&2; }

tb__valid_name() {
	[[ ${1:-} =~ ^sluice-[A-Za-z0-9._-]+$ ]] && [ ${#1} -le 48 ] && [[ $1 != *..* ]]
}

# tb_new_name PURPOSE: a name no other run uses: sluice-PURPOSE-<pid>-<random>.
tb_new_name() {
	local purpose=${1:-tb} rnd
	purpose=${purpose//[^A-Za-z0-9]/}
	purpose=${purpose:0:16}
	rnd=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	echo "sluice-${purpose:-tb}-$$-$rnd"
}

# tb__set_vars NAME: every TB_* variable of the testbed NAME (all fixed
# by the name: down can rebuild them without any state file).
tb__set_vars() {
	TB_NAME=$1
	TB_RUNDIR=/run/$1
	TB_BPFFS=$TB_RUNDIR/bpffs
	TB_NS_HOST=$1-host
	TB_NS_CLIENT=$1-client
	TB_NS_ATTACKER=$1-attacker
	TB_NS_ROUTER=$1-router

	TB_HOST_IF=veth-host TB_HOST_MAC=02:5c:00:01:00:02
	TB_HOST_IP4=198.18.1.2 TB_HOST_IP6=2001:2:0:1::2
	TB_ROUTER_HOST_IF=r-host TB_ROUTER_HOST_MAC=02:5c:00:01:00:01
	TB_ROUTER_HOST_IP4=198.18.1.1 TB_ROUTER_HOST_IP6=2001:2:0:1::1

	TB_CLIENT_IF=veth-client TB_CLIENT_MAC=02:5c:00:02:00:02
	TB_CLIENT_IP4=198.18.2.2 TB_CLIENT_IP6=2001:2:0:2::2
	TB_CLIENT_GW_MAC=02:5c:00:02:00:01

	TB_ATTACKER_IF=veth-att TB_ATTACKER_MAC=02:5c:00:03:00:02
	TB_ATTACKER_IP4=198.18.3.2 TB_ATTACKER_IP6=2001:2:0:3::2
	TB_ATTACKER_GW_MAC=02:5c:00:03:00:01

	TB_INJECT_NS=$TB_NS_ROUTER TB_INJECT_IF=$TB_ROUTER_HOST_IF TB_INJECT_DST_MAC=$TB_HOST_MAC
	TB_SPOOF_NET4=198.18.0.0/15 TB_SPOOF_NET6=2001:2::/48
	# shellcheck disable=SC2086,SC2163
	export $TB_VARS
}

# tb_print_env: the TB_* variables as shell assignments (eval-able).
tb_print_env() {
	local v
	for v in $TB_VARS; do
		printf '%s=%q\n' "$v" "${!v}"
	done
}

# tb_ns ROLE: the namespace name of host|client|attacker|router.
tb_ns() {
	case ${1:-} in
	host) echo "$TB_NS_HOST" ;;
	client) echo "$TB_NS_CLIENT" ;;
	attacker) echo "$TB_NS_ATTACKER" ;;
	router) echo "$TB_NS_ROUTER" ;;
	*) tb__log "unknown role '${1:-}' (host, client, attacker, router)"; return 2 ;;
	esac
}

# tb_exec ROLE CMD...: run CMD in the role's namespace.
tb_exec() {
	local ns
	ns=$(tb_ns "${1:-}") || return 2
	shift
	ip netns exec "$ns" "$@"
}

# tb_bg ROLE CMD...: start CMD in the role's namespace in the background and
# set TB_BG_PID to its pid (the command's own: `ip netns exec` execs it), to
# wait for or kill by pid. Redirect as usual: `tb_bg host cmd >out; p=$TB_BG_PID`.
# (`tb_exec ROLE CMD &` would give the pid of a subshell instead.)
tb_bg() {
	local ns
	ns=$(tb_ns "${1:-}") || return 2
	shift
	ip netns exec "$ns" "$@" &
	TB_BG_PID=$!
}

# tb_stat ROLE IFACE COUNTER: one of the interface's statistics (rx_packets,
# rx_dropped, tx_packets, ...), read in its namespace.
tb_stat() {
	tb_exec "$1" cat "/sys/class/net/$2/statistics/$3"
}

# tb_wait_udp ROLE PORT [SECONDS]: wait until a UDP socket is bound to PORT
# in the role's namespace (default 5 s). Returns 1 on timeout.
tb_wait_udp() {
	local role=$1 port=$2 limit=${3:-5} i
	for ((i = 0; i < limit * 20; i++)); do
		if tb_exec "$role" ss -Hlun "sport = :$port" 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.05
	done
	tb__log "nothing listens on UDP port $port in $role after ${limit}s"
	return 1
}

# ---------------------------------------------------------------- building

# Building checks every step itself (`tb__do CMD || return 1`): bash ignores
# set -e in anything called from an if or ||, which is how callers call tb_up.
tb__do() {
	"$@" && return 0
	tb__log "failed: $*"
	return 1
}

# tb__sysctls NS: the settings every testbed namespace gets.
tb__sysctls() {
	tb__do ip netns exec "$1" sysctl -qw \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 \
		net.ipv6.conf.all.router_solicitations=0 net.ipv6.conf.default.router_solicitations=0
}

# tb__link NAME ROLE END_IF END_MAC ROUTER_IF ROUTER_MAC LINK (LINK: 1..3):
# a veth pair from the router to the end namespace, both families, permanent
# neighbours both ways, the testbed prefixes routed to the router.
tb__link() {
	local name=$1 role=$2 eif=$3 emac=$4 rif=$5 rmac=$6 n=$7
	local ens=$name-$role rns=$name-router
	local e4=198.18.$n.2 r4=198.18.$n.1 e6=2001:2:0:$n::2 r6=2001:2:0:$n::1
	tb__do ip -n "$rns" link add "$rif" address "$rmac" type veth \
		peer name "$eif" address "$emac" netns "$ens" || return 1
	tb__do ip netns exec "$rns" sysctl -qw "net.ipv4.conf.$rif.rp_filter=0" "net.ipv6.conf.$rif.accept_dad=0" &&
	tb__do ip netns exec "$ens" sysctl -qw "net.ipv4.conf.$eif.rp_filter=0" "net.ipv6.conf.$eif.accept_dad=0" &&
	tb__do ip -n "$rns" addr add "$r4/24" dev "$rif" &&
	tb__do ip -n "$rns" -6 addr add "$r6/64" dev "$rif" nodad &&
	tb__do ip -n "$ens" addr add "$e4/24" dev "$eif" &&
	tb__do ip -n "$ens" -6 addr add "$e6/64" dev "$eif" nodad &&
	tb__do ip -n "$rns" link set "$rif" up &&
	tb__do ip -n "$ens" link set "$eif" up &&
	tb__do ip -n "$rns" neigh replace "$e4" lladdr "$emac" dev "$rif" nud permanent &&
	tb__do ip -n "$rns" neigh replace "$e6" lladdr "$emac" dev "$rif" nud permanent &&
	tb__do ip -n "$ens" neigh replace "$r4" lladdr "$rmac" dev "$eif" nud permanent &&
	tb__do ip -n "$ens" neigh replace "$r6" lladdr "$rmac" dev "$eif" nud permanent &&
	tb__do ip -n "$ens" route add "$TB_SPOOF_NET4" via "$r4" dev "$eif" &&
	tb__do ip -n "$ens" -6 route add "$TB_SPOOF_NET6" via "$r6" dev "$eif"
}

# tb__build NAME: everything (the caller removes what was made on failure).
tb__build() {
	local name=$1 role
	tb__do mkdir -p "/run/$name" || return 1
	: >"/run/$name/.sluice-testbed" || return 1
	tb__do mkdir -p "/run/$name/bpffs" &&
	tb__do mount -t bpf -o mode=0700 bpf "/run/$name/bpffs" || return 1
	for role in $TB_ROLES; do
		tb__do ip netns add "$name-$role" &&
		tb__do ip -n "$name-$role" link set lo up &&
		tb__sysctls "$name-$role" || return 1
	done
	tb__do ip netns exec "$name-router" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 &&
	tb__link "$name" host veth-host 02:5c:00:01:00:02 r-host 02:5c:00:01:00:01 1 &&
	tb__link "$name" client veth-client 02:5c:00:02:00:02 r-client 02:5c:00:02:00:01 2 &&
	tb__link "$name" attacker veth-att 02:5c:00:03:00:02 r-att 02:5c:00:03:00:01 3 || return 1
	# Whatever is not one of the three links (replies to spoofed sources)
	# ends here, silently.
	tb__do ip -n "$name-router" route add blackhole "$TB_SPOOF_NET4" &&
	tb__do ip -n "$name-router" -6 route add blackhole "$TB_SPOOF_NET6" || return 1
	tb_print_env >"/run/$name/testbed.env"
}

# tb_xdp_tx_peer OBJ: attach OBJ (tests/tools/xdp_pass_bpf.bpf.o, XDP_PASS)
# to r-host in native mode, so that what veth-host's program sends back with
# XDP_TX (SYN cookies' SYN-ACKs) reaches the router. Removed with the
# testbed.
tb_xdp_tx_peer() {
	tb__do ip -n "$TB_NS_ROUTER" link set dev "$TB_ROUTER_HOST_IF" xdpdrv obj "$1" sec xdp
}

# tb_up_name NAME: build the testbed NAME and set/export the TB_* variables.
# On failure everything made so far is removed and it returns 1.
tb_up_name() {
	local name=${1:-}
	if ! tb__valid_name "$name"; then
		tb__log "bad testbed name '$name': sluice-[A-Za-z0-9._-]+, at most 48 characters"
		return 2
	fi
	if [ "$(id -u)" -ne 0 ]; then
		tb__log "needs root (network namespaces, veth, bpffs)"
		return 2
	fi
	if [ -e "/run/$name" ] || ip netns list | grep -q "^$name-"; then
		tb__log "testbed $name exists already (scripts/testbed.sh down $name)"
		return 1
	fi
	tb__set_vars "$name"
	if ! tb__build "$name"; then
		tb__log "building testbed $name failed; removing it"
		tb_down "$name"
		return 1
	fi
	return 0
}

# tb_up [PURPOSE]: build a testbed under a fresh unique name.
tb_up() {
	tb_up_name "$(tb_new_name "${1:-tb}")"
}

# tb__kill_ns NS: end the processes a test left in the namespace (they
# keep it alive after `ip netns del`). By pid, TERM then KILL.
tb__kill_ns() (
	set +e +o pipefail
	local pids i
	# Never this shell itself, should it run inside the namespace.
	pids=$(ip netns pids "$1" 2>/dev/null | grep -vx -e "$$" -e "${BASHPID:-$$}") || return 0
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null
	for ((i = 0; i < 40; i++)); do
		pids=$(ip netns pids "$1" 2>/dev/null | grep -vx -e "$$" -e "${BASHPID:-$$}")
		[ -n "$pids" ] || return 0
		sleep 0.05
	done
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
	sleep 0.1
)

# tb_leftovers NAME: print what of the testbed NAME still exists (nothing
# when it is gone).
tb_leftovers() (
	set +e +o pipefail
	local name=$1 role
	for role in $TB_ROLES; do
		[ -e "/run/netns/$name-$role" ] && echo "namespace $name-$role"
	done
	grep -q " /run/$name/" /proc/self/mounts && echo "mount $(grep " /run/$name/" /proc/self/mounts | awk '{print $2}' | tr '\n' ' ')"
	[ -e "/run/$name" ] && echo "directory /run/$name"
	return 0
)

# tb_down [NAME]: remove the testbed NAME (default $TB_NAME): processes left
# in its namespaces, the namespaces (and with them every veth), the bpffs
# mount and /run/NAME. Idempotent; safe in an EXIT trap, whatever the
# caller's set -e/-u/pipefail (it runs in a subshell with them off). Returns
# 1 if something could not be removed.
tb_down() (
	set +e +u +o pipefail
	local name=${1:-${TB_NAME:-}} role m left round
	[ -n "$name" ] || return 0 # nothing was brought up (a trap after a failed start)
	if ! tb__valid_name "$name"; then
		tb__log "tb_down: bad or missing testbed name '$name'"
		return 2
	fi
	# Processes first (a second round for any that were just entering a
	# namespace when the first looked), then the namespaces.
	for round in 1 2; do
		for role in $TB_ROLES; do
			[ -e "/run/netns/$name-$role" ] && tb__kill_ns "$name-$role"
		done
		[ "$round" = 1 ] && sleep 0.1
	done
	for role in $TB_ROLES; do
		[ -e "/run/netns/$name-$role" ] && ip netns del "$name-$role" 2>/dev/null
	done
	# Mounts below the run directory, deepest first (the bpffs, or anything
	# a test mounted in it).
	# (paths without spaces: the name is checked)
	# shellcheck disable=SC2013
	for m in $(awk -v p="/run/$name/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	if [ -e "/run/$name/.sluice-testbed" ]; then
		rm -rf --one-file-system "/run/$name"
	elif [ -d "/run/$name" ]; then
		rmdir "/run/$name" 2>/dev/null
	fi
	left=$(tb_leftovers "$name")
	if [ -n "$left" ]; then
		tb__log "testbed $name not fully removed: $left"
		return 1
	fi
	return 0
)

# tb_list: the testbeds present (by their run directories and namespaces).
tb_list() (
	set +e +o pipefail
	{
		for d in /run/sluice-*/.sluice-testbed; do
			[ -e "$d" ] && basename "$(dirname "$d")"
		done
		ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^\(sluice-.*\)-\(host\|client\|attacker\|router\)$/\1/p'
	} | sort -u
)

tb__main() {
	local cmd=${1:-} name=${2:-}
	case $cmd in
	up)
		[ -n "$name" ] || name=$(tb_new_name manual)
		tb_up_name "$name" || return 1
		tb_print_env
		;;
	down)
		[ -n "$name" ] || { tb__log "usage: testbed.sh down NAME"; return 2; }
		tb_down "$name"
		;;
	env)
		tb__valid_name "$name" || { tb__log "usage: testbed.sh env NAME"; return 2; }
		[ -e "/run/$name/testbed.env" ] || { tb__log "no testbed $name"; return 1; }
		tb__set_vars "$name"
		tb_print_env
		;;
	exec)
		tb__valid_name "$name" || { tb__log "usage: testbed.sh exec NAME ROLE CMD..."; return 2; }
		tb__set_vars "$name"
		shift 2
		tb_exec "$@"
		;;
	xdp-tx-peer)
		tb__valid_name "$name" && [ -f "${3:-}" ] ||
			{ tb__log "usage: testbed.sh xdp-tx-peer NAME XDP_PASS_OBJ"; return 2; }
		tb__set_vars "$name"
		tb_xdp_tx_peer "$3"
		;;
	list) tb_list ;;
	*)
		echo "usage: testbed.sh up [NAME] | down NAME | env NAME | exec NAME ROLE CMD... | xdp-tx-peer NAME OBJ | list" >&2
		echo "       (or source it: . scripts/testbed.sh; tb_up PURPOSE; trap tb_down EXIT)" >&2
		return 2
		;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	tb__main "$@"
	exit $?
fi
