#!/usr/bin/env bash
# demo.sh - sluice holding floods, end to end: about half a minute once built.
#
# On a fresh Debian 12 machine, as root: installs what is missing
# (scripts/setup.sh), builds (scripts/build.sh, into ${BUILD_DIR:-build}),
# builds a throwaway testbed of namespaces (scripts/testbed.sh), starts
# sluiced on the protected host's interface with demo-sized settings, and
# runs five phases:
#   1. a legitimate client alone: served, no loss;
#   2. one source floods at 20x the limit: held to the limit, the client
#      loses nothing;
#   3. spoofed random sources flood: the breaker trips by itself; a client
#      that used the host over TCP before the flood has standing and keeps
#      being served with no allowlist entry; visitors the host never saw,
#      each from an address of its own, are served too: sluice answers their
#      TCP SYNs with SYN cookies from XDP, and the proof gives them standing;
#      a never-seen UDP source gets no more than the newcomer budget, and the
#      allowlist overrides both;
#   4. the flood stops: admission ramps back and the breaker closes;
#   5. summary.
# scripts/demo.sh --upstream runs another demo instead (docs/upstream.md):
# gobgpd on the protected host, BIRD 2 on the router, an eBGP session between
# them; three sources prove their addresses (a page each from the host's web
# server), then flood; the breaker sheds them, sluiced revokes the standing
# they abuse and announces them as source blackhole routes (only an address
# proved, then abused, is ever announced by itself: a spoofed flood names
# anyone); BIRD installs those, the router's loose uRPF
# drops the flood before the host's link, and after the flood and the hold
# the routes are withdrawn.
# Every number printed comes from this run: sluice's counters
# (`sluicectl -j status`), the generator's, the probe's, the sink's and the
# HTTP client's JSON. The README's transcript ("What the demo shows") is one
# run of it; tests/packaging/test_demo_readme.py checks that its phase titles
# are the ones phase_title is given here.
# Exit 0 when every phase behaved as stated, 1 otherwise (a line says which),
# 2 when not run as root. Everything it makes is removed on every exit path,
# Ctrl-C included.
set -Eeuo pipefail
export LC_ALL=C # "." in $EPOCHREALTIME and in printf's numbers

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
[[ $build == /* ]] || build=$PWD/$build # as build.sh sees it: relative to here

# ------------------------------------------------------------- settings
# Small enough that every phase shows its effect within seconds; the flood
# rates are modest so two shared CPUs keep up (the generator paces itself).
RATE=1000          # tokens/s per source
BURST=1000         # bucket size
PERIOD=0.5         # sluiced control period, s
TRIP_PPS=5000      # admitted pps that trips the breaker: far above one held
                   # source (RATE) plus the client, far below the spoofed flood
TRIP_PERIODS=2
HOLD=3             # least seconds in shedding
RECOVERY=5         # seconds of the admission ramp
RECOVERY_START=10  # percent the ramp starts at
CLIENT_PPS=50      # the legitimate client; under RATE even at RECOVERY_START
FLOOD_PPS=20000    # phase 2, one source: 20x RATE
SPOOF_PPS=20000    # phase 3, random sources: 4x TRIP_PPS
PORT=5001          # the sink's UDP port (the floods go to port 9: nobody
                   # listens, so the sink counts the client only)
HOLD_TOLERANCE=10  # percent: phase 2 passes if the flood gets RATE +- this
P1_SECS=4 P2_SECS=4 P3_SECS=3 # measurement windows
NEWCOMER_PPS=100   # phase 3: what every source without standing shares while shedding
NEWBIE=198.18.3.77 # phase 3: a source that never sent before (the attacker's link)
NEWBIE_PPS=500     # ... and its rate, 5x the whole newcomer budget
OVERRIDE_N=300     # phase 3: its datagrams once the operator allowlists it
HTTP_PORT=8080     # phase 3: a web server on the host, the client's TCP
HTTP_CLIENT=$root/tests/tools/http_client.py # one request per new TCP connection
VISITORS=30        # phase 3: visitors the host never saw, one page each, while shedding
VISITOR_FIRST=198.18.64.1   # ... request i from VISITOR_FIRST + i (a /24 of
VISITOR_NET=198.18.64.0/24  # the spoofed range, local in the client namespace)
VISITOR_RATE=30    # ... requests started a second (each on a new TCP connection)
VISITOR_TIMEOUT=3  # ... seconds each may take (a SYN retransmission at 1 s fits)
VISITORS_MIN=90    # percent: phase 3 fails if fewer visitors are served

# ------------------------------------------------------------- state
DAEMON_PID='' SINK_PID='' PROBE_PID='' FLOOD_PID='' NEWBIE_PID='' HTTPD_PID='' GOBGPD_PID='' BIRD_PID=''
UPSTREAM=0         # --upstream: the upstream demo instead of the five phases
DAEMON_EXTRA=()    # more sluiced flags (the upstream demo's)
T_FLOOD_STOPPED=0 TRIPPED=0
WORK=''            # scratch directory for the build log (before the testbed)
PROGRESS_SHOWN=0 PROGRESS_LAST=0
FAILURES=()        # "phase N: why"
SUMMARY=()         # table rows for phase 5
[ -t 1 ] && IS_TTY=1 || IS_TTY=0
COLUMNS=$( (stty size </dev/tty | cut -d' ' -f2) 2>/dev/null || true)
[[ $COLUMNS =~ ^[0-9]+$ ]] && ((COLUMNS >= 40)) || COLUMNS=80

# ------------------------------------------------------------- output

# A progress line: rewritten in place on a terminal; otherwise a plain line,
# at most one a second.
progress() {
	if ((IS_TTY)); then
		printf '\r\033[K%s' "${1:0:COLUMNS-1}" # one line: \r cannot go back over a wrap
		PROGRESS_SHOWN=1
	elif ((${EPOCHREALTIME/./} - PROGRESS_LAST >= 1000000)); then
		printf '  ... %s\n' "$1"
		PROGRESS_LAST=${EPOCHREALTIME/./}
	fi
}

progress_clear() {
	if ((PROGRESS_SHOWN)); then
		printf '\r\033[K'
		PROGRESS_SHOWN=0
	fi
}

say() {
	progress_clear
	printf '%s\n' "$*"
}

die() {
	say "demo: $*" >&2
	exit 1
}

# fmt_s MICROSECONDS: "4.0"
fmt_s() {
	printf '%d.%d' $(($1 / 1000000)) $(($1 / 100000 % 10))
}

# fmt_ppm PPM: "10.0%"
fmt_ppm() {
	printf '%d.%d%%' $(($1 / 10000)) $(($1 / 1000 % 10))
}

TABLE_FMT='  %-24s %11s %12s %11s  %-10s %s'
# row FORMAT ARGS...: one table line, without trailing blanks.
row() {
	local line fmt=$1
	shift
	# shellcheck disable=SC2059
	printf -v line "$fmt" "$@"
	say "${line%"${line##*[! ]}"}"
}

table_header() {
	row "$TABLE_FMT" window "offered pps" "admitted pps" "dropped pps" breaker "client loss"
}

# table_row LABEL LOSS: the last window() and the last sample's breaker state.
table_row() {
	row "$TABLE_FMT" "$1" "$W_OFFERED" "$W_ADMITTED" "$W_DROPPED" "$W_STATE" "$2"
}

# verdict PASSED_TEXT: the failures, and exit 1, or "demo passed: PASSED_TEXT".
verdict() {
	local f
	if ((${#FAILURES[@]})); then
		for f in "${FAILURES[@]}"; do
			say "demo FAILED: $f"
		done
		exit 1
	fi
	say "demo passed: $1"
}

fail_phase() {
	FAILURES+=("phase $1: $2")
	say "  FAILED: $2"
}

# ------------------------------------------------------------- JSON

# All JSON goes through one python3 (stdlib only), started once and fed
# requests as a coprocess: starting python takes a noticeable part of a
# second on a busy machine, and the demo reads a reply several times a second.
# A request is two lines, "MODE ARGS..." and the JSON document; the answer is
# one line (ERROR: ... if the document is not what was expected).
read -r -d '' PYPROG <<'PY' || true
import json, signal, sys

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the demo's to handle

# The outcomes by their verdict on a source, from the table in bpf/sluice_abi.h
# (argv[1] is bpf/): admitted passed, allowlisted, standing, newcomer; dropped
# drop_rate, _shed, _deny, _valve.
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
from sluice_abi import outcome_names_by_verdict
ADMITTED = outcome_names_by_verdict("admitted")
DROPPED = outcome_names_by_verdict("dropped")

def interface(doc, name):
    for e in doc.get("interfaces", []):
        if e.get("iface") == name:
            if "error" in e:
                raise ValueError("status of %s: %s" % (name, e["error"]))
            return e
    raise ValueError("status has no interface %s" % name)

def total(d, keys):
    return int(sum(d.get(k, 0) for k in keys))

def answer(mode, args, doc):
    if mode == "sample":  # a status reply
        # cumulative frames: incoming admitted passed allowlisted dropped;
        # breaker state, admission ppm, manual; the daemon's pps over its
        # last period: incoming admitted dropped
        e = interface(doc, args[0])
        c = {k: v["packets"] for k, v in e["counters"].items()}
        r = {k: v.get("pps", 0) for k, v in (e.get("rates") or {}).items()}
        return [total(c, ADMITTED + DROPPED), total(c, ADMITTED), c["passed"], c["allowlisted"],
                total(c, DROPPED), e["breaker"]["state"], e["admission_ppm"], int(e["breaker"]["manual"]),
                total(r, ADMITTED + DROPPED), total(r, ADMITTED), total(r, DROPPED), c["standing"], c["newcomer"],
                c["cookie_sent"], c["cookie_proved"]]
    if mode == "config":  # a status reply
        e, d = interface(doc, args[0]), doc["daemon"]
        p = d["policy"]
        s, k = e["standing"], e["cookies"]
        return [e["rate_pps"], e["burst"], e["attach_mode"], d["period_s"], p["trip_pps"], p["trip_periods"],
                p["hold_s"], p["recovery_s"], p["recovery_start_ppm"], e["table_slots"],
                s["rate_pps"], s["burst"], s["newcomer"]["pps"], s["newcomer"]["burst"], k["mode"], k["pps"]]
    if mode == "get":  # top-level fields of a tool's result; "-" if missing ("" for error)
        return [doc.get(k, "" if k == "error" else "-") for k in args]
    if mode == "ms":  # a tool's field in ms, one decimal ("-" if null or missing)
        v = doc.get(args[0])
        return ["-" if v is None else "%.1f" % v]
    if mode == "from":  # the sink's count for one source, and its total
        return [doc.get("by_source", {}).get(args[0], 0), doc.get("received", 0)]
    raise ValueError("unknown mode " + mode)

for request in sys.stdin:
    text = sys.stdin.readline().strip()
    try:
        mode, *args = request.split()
        out = "\t".join(str(v) for v in answer(mode, args, json.loads(text or "{}")))
    except Exception as e:
        out = "ERROR: %s: %r" % (request.strip(), e)
    print(out, flush=True)
PY

# start_json: the coprocess. Debian's python3 (setup.sh installs it) rather
# than the first in PATH, which may be a version manager's slow shim.
start_json() {
	local python=/usr/bin/python3
	[ -x "$python" ] || python=python3
	coproc JSONPY { exec "$python" -c "$PYPROG" "$root/bpf"; }
}

# json MODE ARGS... <DOCUMENT: the answer's tab-separated fields in REPLY.
# (In this shell, not in $(...): the coprocess's pipes are this shell's.)
json() {
	local doc=''
	IFS= read -r -d '' doc || true
	printf '%s\n%s\n' "$*" "${doc//$'\n'/ }" >&"${JSONPY[1]}"
	IFS= read -r REPLY <&"${JSONPY[0]}" || die "the JSON reader (python3) is gone"
	[[ $REPLY != ERROR:* ]] || die "unexpected JSON: $REPLY"
}

# ------------------------------------------------------------- sluice

ctl() {
	tb_exec host "$SLUICECTL" --socket "$SOCK" --pin-dir "$PINS" "$@"
}

# sample: one `sluicectl -j status`, timed (the midpoint of the call). Sets
# S_T (us) S_IN S_ADM S_PASS S_ALLOW S_DROP (cumulative frames) S_STATE S_PPM
# S_MANUAL S_STAND S_NEWC S_CSENT S_CPROVED, and R_IN R_ADM R_DROP (the
# daemon's pps over its last period).
sample() {
	local t0 t1 out
	t0=${EPOCHREALTIME/./}
	out=$(ctl -j status "$IFACE")
	t1=${EPOCHREALTIME/./}
	json sample "$IFACE" <<<"$out"
	IFS=$'\t' read -r S_IN S_ADM S_PASS S_ALLOW S_DROP S_STATE S_PPM S_MANUAL R_IN R_ADM R_DROP S_STAND S_NEWC \
		S_CSENT S_CPROVED <<<"$REPLY"
	S_T=$(((t0 + t1) / 2)) S_DUR=$((t1 - t0))
}

# snap: the last sample as one word list, to keep and hand to window().
snap() {
	echo "$S_T $S_IN $S_ADM $S_PASS $S_ALLOW $S_DROP $S_STATE $S_STAND $S_NEWC $S_DUR $S_CSENT $S_CPROVED"
}

# window A B: rates between two snaps. Sets W_US W_OFFERED W_ADMITTED
# W_DROPPED (pps); W_IN_N W_ADM_N W_PASSED_N
# W_STAND_N W_NEWC_N (frames offered, admitted, passed by the buckets, by
# standing, by the newcomer budget); W_CSENT_N W_CPROVED_N (SYNs answered
# with a cookie, ACKs that proved one); W_SLACK_US; W_STATE (at B).
window() {
	local -a a b
	read -r -a a <<<"$1"
	read -r -a b <<<"$2"
	W_US=$((b[0] - a[0]))
	((W_US > 0)) || W_US=1
	W_OFFERED=$((((b[1] - a[1]) * 1000000 + W_US / 2) / W_US))
	W_ADMITTED=$((((b[2] - a[2]) * 1000000 + W_US / 2) / W_US))
	W_DROPPED=$((((b[5] - a[5]) * 1000000 + W_US / 2) / W_US))
	W_PASSED_N=$((b[3] - a[3]))
	W_IN_N=$((b[1] - a[1]))
	W_ADM_N=$((b[2] - a[2]))
	W_STAND_N=$((b[7] - a[7]))
	W_NEWC_N=$((b[8] - a[8]))
	W_CSENT_N=$((b[10] - a[10]))
	W_CPROVED_N=$((b[11] - a[11]))
	W_SLACK_US=$(((a[9] + b[9]) / 2)) # the counters were read within their calls, not at the midpoints
	W_STATE=${b[6]}
}

start_daemon() {
	# In a session of its own (setsid execs it, same pid): a Ctrl-C at the
	# terminal goes to the demo's process group, and sluiced must still be
	# there for the cleanup to detach through it.
	tb_bg host setsid "$SLUICED" -i "$IFACE" --pin-dir "$PINS" --socket "$SOCK" \
		--rate "$RATE" --burst "$BURST" --period "$PERIOD" \
		--trip-pps "$TRIP_PPS" --trip-periods "$TRIP_PERIODS" \
		--hold "$HOLD" --recovery "$RECOVERY" --recovery-start "$RECOVERY_START" \
		--newcomer-pps "$NEWCOMER_PPS" "${DAEMON_EXTRA[@]}" \
		>"$DAEMON_LOG" 2>&1
	DAEMON_PID=$TB_BG_PID
	# Ready when it answers on its socket: it attaches, then serves. (Until
	# the socket exists, sluicectl status would read the pins instead.)
	local i
	for ((i = 0; i < 200; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG" >&2; DAEMON_PID=''; die "sluiced exited"; }
		if [ -S "$SOCK" ] && ctl -j status "$IFACE" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.05
	done
	die "sluiced did not answer on $SOCK in 10 s"
}

# The daemon's own words for a breaker transition, from its log.
daemon_said() {
	grep -m1 "breaker $1 -> $2" "$DAEMON_LOG" | sed 's/^[a-z]*: /  sluiced: /' || true
}

# ------------------------------------------------------------- traffic

# start_client: a sink on the host, then the probe from the client (the sink
# first, so the first datagram is counted). Both run until stop_client.
start_client() {
	rm -f "$TB_RUNDIR/sink.ready"
	tb_bg host "$TRAFFIC" sink --port "$PORT" --bind "$TB_HOST_IP4" --duration 300 \
		--ready-file "$TB_RUNDIR/sink.ready" >"$TB_RUNDIR/sink.json" 2>"$TB_RUNDIR/sink.err"
	# shellcheck disable=SC2034 # read by name, in stop
	SINK_PID=$TB_BG_PID
	local i
	for ((i = 0; i < 100; i++)); do
		[ -e "$TB_RUNDIR/sink.ready" ] && break
		sleep 0.05
	done
	[ -e "$TB_RUNDIR/sink.ready" ] || die "the sink did not start: $(cat "$TB_RUNDIR/sink.err")"
	tb_bg client "$TRAFFIC" probe --dst "$TB_HOST_IP4" --port "$PORT" --pps "$CLIENT_PPS" --duration 300 \
		>"$TB_RUNDIR/probe.json" 2>"$TB_RUNDIR/probe.err"
	# shellcheck disable=SC2034 # read by name, in stop
	PROBE_PID=$TB_BG_PID
}

# stop PIDVAR: SIGTERM, wait (the tools print their JSON as they stop).
stop() {
	local pid=${!1}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	printf -v "$1" '%s' ''
}

# stop_client: the probe, then (after the last datagram's way) the sink.
# Sets C_SENT C_RECV C_LOST, LOSS ("0.00% (0 of 200)") and C_PPS (the
# probe's own rate).
stop_client() {
	stop PROBE_PID
	sleep 0.2
	stop SINK_PID
	local perr
	json get sent errors pps <"$TB_RUNDIR/probe.json"
	IFS=$'\t' read -r C_SENT perr C_PPS <<<"$REPLY"
	json from "$TB_CLIENT_IP4" <"$TB_RUNDIR/sink.json"
	IFS=$'\t' read -r C_RECV _ <<<"$REPLY"
	if ! [[ $C_SENT =~ ^[0-9]+$ ]] || ((C_SENT == 0)); then
		die "the probe sent nothing: $(cat "$TB_RUNDIR/probe.err")"
	fi
	# Lost = sent but not received (errors on send count as lost too: sent
	# excludes them, so add them back).
	C_SENT=$((C_SENT + perr))
	C_LOST=$((C_SENT - C_RECV))
	((C_LOST >= 0)) || C_LOST=0 # a spoofed frame can carry the client's address
	local x=$(((C_LOST * 10000 + C_SENT - 1) / C_SENT)) # 0.01%, rounded up: never 0.00% if any was lost
	printf -v LOSS '%d.%02d%% (%d of %d)' $((x / 100)) $((x % 100)) "$C_LOST" "$C_SENT"
}

# start_flood ARGS...: sluice-traffic flood from the attacker, routed through
# the router like a real attack, paced (--pps), small batches so a late
# generator catches up smoothly. Runs until stop_flood (300 s at most).
start_flood() {
	tb_bg attacker "$TRAFFIC" flood --iface "$TB_ATTACKER_IF" --dst-mac "$TB_ATTACKER_GW_MAC" \
		--dst "$TB_HOST_IP4" --duration 300 --batch 16 "$@" \
		>"$TB_RUNDIR/flood.json" 2>"$TB_RUNDIR/flood.err"
	# shellcheck disable=SC2034 # read by name, in stop
	FLOOD_PID=$TB_BG_PID
}

# stop_flood: stop the generator; T_FLOOD_STOPPED (us).
stop_flood() {
	stop FLOOD_PID
	T_FLOOD_STOPPED=${EPOCHREALTIME/./}
}

# flood_figures: the stopped generator's own count and rate: F_SENT F_PPS.
flood_figures() {
	local err
	json get sent pps error <"$TB_RUNDIR/flood.json"
	IFS=$'\t' read -r F_SENT F_PPS err <<<"$REPLY"
	[ -z "$err" ] || say "  (the generator reported: $err)"
	[[ $F_SENT =~ ^[0-9]+$ ]] || die "the flood generator failed: $(cat "$TB_RUNDIR/flood.err")"
}

# start_newbie ARGS...: the never-seen source, $NEWBIE, from the attacker's
# link to the sink's port (a routed sluice-traffic flood with one source).
start_newbie() {
	tb_bg attacker "$TRAFFIC" flood --iface "$TB_ATTACKER_IF" --dst-mac "$TB_ATTACKER_GW_MAC" \
		--dst "$TB_HOST_IP4" --src "$NEWBIE" --port "$PORT" --pps "$NEWBIE_PPS" --batch 4 "$@" \
		>"$TB_RUNDIR/newbie.json" 2>"$TB_RUNDIR/newbie.err"
	# shellcheck disable=SC2034 # read by name, in stop
	NEWBIE_PID=$TB_BG_PID
}

# A web server on the host; the client (tests/tools/http_client.py) fetches a
# page with a new TCP connection per request.
start_httpd() {
	tb_bg host /usr/bin/python3 -m http.server --bind "$TB_HOST_IP4" --directory "$WORK" "$HTTP_PORT" \
		>"$TB_RUNDIR/httpd.log" 2>&1
	# shellcheck disable=SC2034 # read by name, in stop
	HTTPD_PID=$TB_BG_PID
	local i
	for ((i = 0; i < 100; i++)); do
		tb_exec host ss -Hltn "sport = :$HTTP_PORT" | grep -q . && return 0
		sleep 0.05
	done
	die "the web server did not listen: $(cat "$TB_RUNDIR/httpd.log")"
}

# http_for SECONDS: the client's requests in the foreground; H_OK H_FAIL,
# H_CONNECT_MS (the median connect, ms).
http_for() {
	local out
	out=$(tb_exec client /usr/bin/python3 "$HTTP_CLIENT" "$TB_HOST_IP4" "$HTTP_PORT" --seconds "$1" --pause 0.02)
	json get ok fail <<<"$out"
	IFS=$'\t' read -r H_OK H_FAIL <<<"$REPLY"
	json ms connect_ms_median <<<"$out"
	H_CONNECT_MS=$REPLY
}

# add_visitors: the visitors' /24 local in the client namespace (so that
# http_client.py --sources-from can bind each request to an address of its
# own) and routed back to it by the router (whose blackhole takes the rest of
# the spoofed range); and an XDP program on the router's veth to the host, so
# that the SYN-ACKs sluice sends back with XDP_TX reach the router
# (scripts/testbed.sh, tb_xdp_tx_peer). All of it goes with the testbed.
add_visitors() {
	tb_xdp_tx_peer "$XDP_PASS_OBJ" || die "could not attach $XDP_PASS_OBJ to the router's $TB_ROUTER_HOST_IF"
	tb_exec client ip route add local "$VISITOR_NET" dev lo
	tb_exec router ip route add "$VISITOR_NET" via "$TB_CLIENT_IP4"
}

# visit: $VISITORS requests in the foreground, request i from
# VISITOR_FIRST + i, each on a new TCP connection, $VISITOR_RATE a second.
# V_N V_OK (answered) V_FIRST (connected within 0.9 s: on the first SYN)
# V_CONNECT_MS (the median connect, ms).
visit() {
	local out
	out=$(tb_exec client /usr/bin/python3 "$HTTP_CLIENT" "$TB_HOST_IP4" "$HTTP_PORT" --count "$VISITORS" \
		--rate "$VISITOR_RATE" --timeout "$VISITOR_TIMEOUT" --sources-from "$VISITOR_FIRST")
	json get attempted ok first_syn <<<"$out"
	IFS=$'\t' read -r V_N V_OK V_FIRST <<<"$REPLY"
	json ms connect_ms_median <<<"$out"
	V_CONNECT_MS=$REPLY
	[[ $V_N =~ ^[1-9][0-9]*$ ]] || die "the visitors' client failed: $out"
}

# pct N OF: "96.7%" (N/OF, rounded down to 0.1%)
pct() {
	fmt_ppm $(($1 * 1000000 / $2))
}

# run_for SECONDS PHASE TEXT: wait, with a progress line of the live rates.
run_for() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000)) left
	while :; do
		left=$((end - ${EPOCHREALTIME/./}))
		((left > 0)) || break
		sample
		progress "phase $2/5 $3 ... $(((left + 999999) / 1000000)) s left: offered $R_IN, admitted $R_ADM pps"
		left=$((end - ${EPOCHREALTIME/./}))
		((left > 0)) || break
		if ((left < 1000000)); then sleep "$(fmt_s "$left")"; else sleep 1; fi
	done
}

# ------------------------------------------------------------- the phases

phase_title() {
	say ""
	say "phase $1/5: $2"
}

# record N LABEL RESULT: the phase's row (the last window) for the summary.
record() {
	SUMMARY+=("$1|$2|$W_OFFERED|$W_ADMITTED|$W_DROPPED|$W_STATE|$LOSS|$3")
}

phase1_client_alone() {
	phase_title 1 "a legitimate client is served"
	say "  The client ($TB_CLIENT_IP4) sends $CLIENT_PPS UDP datagrams/s to a sink on the host; nobody else sends."
	local a b label
	start_client
	sample; a=$(snap)
	run_for "$P1_SECS" 1 "client alone"
	sample; b=$(snap)
	stop_client
	window "$a" "$b"
	label="client alone ($(fmt_s "$W_US") s)"
	table_header
	table_row "$label" "$LOSS"
	if ((C_LOST == 0)); then
		record 1 "client alone" ok
	else
		fail_phase 1 "the client lost $C_LOST of $C_SENT datagrams with nothing else on the wire"
		record 1 "client alone" FAILED
	fi
}

phase2_single_source() {
	phase_title 2 "a single-source flood is held to its limit"
	say "  $TB_ATTACKER_IP4 floods at $FLOOD_PPS pps ($((FLOOD_PPS / RATE))x the $RATE pps limit) while the client keeps sending."
	local a b label flood_adm tol=$((RATE * HOLD_TOLERANCE / 100)) result=ok
	start_client
	start_flood --src "$TB_ATTACKER_IP4" --pps "$FLOOD_PPS"
	# The source starts with a full bucket: let it spend its burst first,
	# so the window shows the steady state.
	run_for 1 2 "the flood spends its burst"
	sample; a=$(snap)
	run_for "$P2_SECS" 2 "single-source flood"
	sample; b=$(snap)
	stop_flood
	flood_figures
	stop_client
	window "$a" "$b"
	label="flooding ($(fmt_s "$W_US") s)"
	table_header
	table_row "$label" "$LOSS"
	# What the flood got, by counting frames rather than timing samples (a
	# status call can take a while on a busy machine): its share of the
	# frames offered in the window that sluice admitted, the client's taken
	# out (all admitted), times the rate the generator sent at.
	local client_n=$((C_PPS * W_US / 1000000)) share=0
	flood_adm=0
	if ((W_IN_N > client_n)); then
		flood_adm=$(((W_ADM_N - client_n) * F_PPS / (W_IN_N - client_n)))
		share=$(((W_ADM_N - client_n) * 1000 / (W_IN_N - client_n)))
	fi
	say "  The generator sent $F_PPS pps; sluice admitted $((share / 10)).$((share % 10))% of its frames: $flood_adm pps"
	say "  (the limit is $RATE pps; +-$HOLD_TOLERANCE% passes)."
	if ((F_PPS < 10 * RATE)); then
		fail_phase 2 "the generator reached only $F_PPS pps, under 10x the limit (is the machine too busy?)"
		result=FAILED
	fi
	if ((flood_adm < RATE - tol || flood_adm > RATE + tol)); then
		fail_phase 2 "the flood source got $flood_adm pps, outside $RATE +- $tol pps"
		result=FAILED
	fi
	if ((C_LOST != 0)); then
		fail_phase 2 "the client lost $C_LOST of $C_SENT datagrams"
		result=FAILED
	fi
	[ "$result" = FAILED ] || result="ok: held at $flood_adm pps"
	record 2 "one source" "$result"
}

phase3_spoofed() {
	phase_title 3 "a spoofed multi-source flood trips the breaker; the regular client and new visitors are served"
	say "  Before the flood, the client fetches a page from the host's web server over TCP (a new connection"
	say "  per request). The host accepted its handshakes, so it has standing; it has no allowlist entry:"
	start_httpd
	http_for 0
	if ((H_OK != 1)); then
		fail_phase 3 "the client's first request failed before any flood"
	fi
	say "  # sluicectl standing $IFACE $TB_CLIENT_IP4"
	ctl standing "$IFACE" "$TB_CLIENT_IP4" | sed 's/^/  /'
	say "  # sluicectl allow list $IFACE"
	ctl allow list "$IFACE" | sed 's/^/  /'
	say "  Now $SPOOF_PPS pps, each frame from a random source in $TB_SPOOF_NET4: every source is under its limit,"
	say "  so the buckets admit them all, and the breaker trips above $TRIP_PPS admitted pps."
	local before='' before_row shed end t_flood deadline trip_us manual result ncpu burst budget n_sent n_recv shed_loss
	local v0 v1 v_us v_state v_sent v_proved
	start_client
	t_flood=${EPOCHREALTIME/./}
	start_flood --random-src --pps "$SPOOF_PPS"
	# Wait for the trip. Before it, the daemon's rates of its busiest
	# control period while still serving: what the breaker judged.
	deadline=$((t_flood + (HOLD + 10) * 1000000))
	while sample; [ "$S_STATE" != shedding ]; do
		if [ "$S_STATE" = serving ] && ((R_ADM > ${before:-0})); then
			before=$R_ADM before_row="$R_IN $R_ADM $R_DROP"
		fi
		((${EPOCHREALTIME/./} < deadline)) || break
		progress "phase 3/5 waiting for the trip ... admitted $R_ADM pps (trips above $TRIP_PPS)"
		sleep 0.1
	done
	if [ "$S_STATE" != shedding ]; then
		stop_flood
		stop_client
		W_OFFERED=- W_ADMITTED=- W_DROPPED=- W_STATE=$S_STATE
		fail_phase 3 "the breaker did not trip in $(fmt_s $((deadline - t_flood))) s (it is $S_STATE)"
		record 3 "random sources" FAILED
		return 0
	fi
	shed=$(snap) TRIPPED=1
	trip_us=$((S_T - t_flood)) manual=$S_MANUAL
	say "  While it sheds, the client keeps fetching pages and sending its datagrams, and $NEWBIE, never seen"
	say "  before, sends $NEWBIE_PPS datagrams/s to the sink. Then $VISITORS visitors the host never saw fetch a page each,"
	say "  each from an address of its own in $VISITOR_NET, on a new TCP connection ($VISITOR_RATE a second)."
	start_newbie --duration 300
	progress "phase 3/5 shedding: the client's pages and datagrams, $NEWBIE's datagrams ... $P3_SECS s"
	http_for "$P3_SECS"
	stop NEWBIE_PID
	sample; end=$(snap)
	# The flood goes on into phase 4, which stops it.
	stop_client
	# The visitors, on their own (the window's standing count is the
	# client's alone); the flood keeps the breaker shedding.
	progress "phase 3/5 shedding: $VISITORS visitors never seen, one page each ..."
	sample; v0=$(snap)
	visit
	sample; v1=$(snap)
	window "$v0" "$v1"
	v_us=$W_US v_state=$W_STATE v_sent=$W_CSENT_N v_proved=$W_CPROVED_N
	json get sent <"$TB_RUNDIR/newbie.json"
	n_sent=$REPLY
	json from "$NEWBIE" <"$TB_RUNDIR/sink.json"
	IFS=$'\t' read -r n_recv _ <<<"$REPLY"
	shed_loss=$LOSS

	table_header
	# (no row when no sample fell in a flooded period before the trip)
	if [ -n "$before" ]; then
		read -r W_OFFERED W_ADMITTED W_DROPPED <<<"$before_row"
		W_STATE=serving
		table_row "before the trip ($PERIOD s)" ""
	fi
	window "$shed" "$end"
	table_row "shedding ($(fmt_s "$W_US") s)" "$LOSS"
	daemon_said serving shedding
	# The newcomer budget's bound over the window: its rate, plus its burst
	# (as the status says it; the data plane keeps at least one token on
	# each possible CPU).
	ncpu=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))
	burst=$((NEWCOMER_BURST > ncpu ? NEWCOMER_BURST : ncpu))
	budget=$((NEWCOMER_ASKED * (W_US + W_SLACK_US) / 1000000 + burst))
	say "  The breaker tripped $(fmt_s "$trip_us") s after the generator started. While shedding, with no allowlist entry:"
	say "    the client: $H_OK of $((H_OK + H_FAIL)) page requests answered (median connect $H_CONNECT_MS ms), $LOSS"
	say "      of its datagrams lost; sluice admitted $W_STAND_N of its frames as \`standing\`;"
	say "    $VISITORS visitors never seen: $V_OK served ($(pct "$V_OK" "$V_N")), $V_FIRST on their first SYN ($(pct "$V_FIRST" "$V_N"): connected in"
	say "      under 0.9 s), median connect $V_CONNECT_MS ms; sluice answered their SYNs with SYN cookies from XDP:"
	say "      cookie_sent $v_sent, cookie_proved $v_proved in $(fmt_s "$v_us") s. The proof gave each standing:"
	say "  # sluicectl standing $IFACE $VISITOR_FIRST"
	ctl standing "$IFACE" "$VISITOR_FIRST" | sed 's/^/  /' || true
	say "    $NEWBIE (never seen, UDP: no handshake to prove): $n_recv of its $n_sent datagrams reached the sink."
	say "      Every source without standing, the flood's included, shares the newcomer budget ($NEWCOMER_ASKED pps,"
	say "      burst $burst): it admitted $W_NEWC_N frames in $(fmt_s "$W_US") s (at most $budget), and the buckets passed $W_PASSED_N."
	result=ok
	if [ "$W_STATE" != shedding ] || ((manual)); then
		fail_phase 3 "the breaker was not shedding on its own at the end (state $W_STATE, manual $manual)"
		result=FAILED
	fi
	if ((W_PASSED_N != 0)); then
		fail_phase 3 "$W_PASSED_N frames passed the buckets outside standing and the newcomer budget while shedding"
		result=FAILED
	fi
	if ((C_LOST != 0 || H_FAIL != 0 || H_OK == 0)); then
		fail_phase 3 "the client with standing lost $C_LOST of $C_SENT datagrams and $H_FAIL of $((H_OK + H_FAIL)) requests"
		result=FAILED
	fi
	if ((W_NEWC_N > budget || n_recv > budget || W_NEWC_N == 0)); then
		fail_phase 3 "the newcomer budget admitted $W_NEWC_N frames ($NEWBIE: $n_recv), not in 1..$budget"
		result=FAILED
	fi
	if ((V_OK * 100 < VISITORS_MIN * V_N)); then
		fail_phase 3 "only $V_OK of $V_N never-seen visitors were served while shedding (under $VISITORS_MIN%)"
		result=FAILED
	fi
	if [ "$v_state" != shedding ]; then
		fail_phase 3 "the breaker was $v_state, not shedding, when the visitors had come"
		result=FAILED
	fi

	say "  The operator's override: the allowlist passes a source whatever its standing."
	say "  # sluicectl allow add $IFACE $NEWBIE/32"
	ctl allow add "$IFACE" "$NEWBIE/32" | sed 's/^/  /'
	start_client
	start_newbie --count "$OVERRIDE_N"
	wait "$NEWBIE_PID" 2>/dev/null || true
	NEWBIE_PID=''
	stop_client
	json from "$NEWBIE" <"$TB_RUNDIR/sink.json"
	IFS=$'\t' read -r n_recv _ <<<"$REPLY"
	say "    $NEWBIE, allowlisted: $n_recv of its $OVERRIDE_N datagrams reached the sink."
	if ((n_recv != OVERRIDE_N)); then
		fail_phase 3 "the allowlisted $NEWBIE got $n_recv of $OVERRIDE_N datagrams through"
		result=FAILED
	fi
	LOSS=$shed_loss # the summary's: the client's while shedding
	[ "$result" = FAILED ] || result="ok: tripped in $(fmt_s "$trip_us") s, client by standing, $V_OK/$V_N visitors by cookies"
	record 3 "random sources" "$result"
}

phase4_recovery() {
	phase_title 4 "the flood stops; admission ramps back and the breaker closes"
	say "  Shedding ends once the incoming rate over each $TRIP_PERIODS-period window has stayed under the clear rate"
	say "  for a whole $HOLD s hold; the breaker then recovers, admitting from"
	say "  $RECOVERY_START% of the refill rate up to 100% over $RECOVERY s, then serves again."
	local a b deadline state='' ppm=-1 printed=0 now since=0 saw_recovering=0 left span result line
	if ((!TRIPPED)); then
		say "  Skipped: the breaker never tripped in phase 3, so there is nothing to recover from."
		W_OFFERED=- W_ADMITTED=- W_DROPPED=- W_STATE=- LOSS=-
		record 4 "flood stopped" skipped
		return 0
	fi
	start_client # (while the flood still runs: the client has standing)
	stop_flood
	sample; a=$(snap) # first, to catch the breaker still shedding
	flood_figures
	say "  The flood stops (the generator sent $F_SENT frames at $F_PPS pps)."
	# The longest it can take: the window to pass, the hold, the ramp.
	deadline=$((T_FLOOD_STOPPED + (HOLD + RECOVERY + 10) * 1000000))
	while :; do
		now=$S_T
		since=$((now - T_FLOOD_STOPPED))
		# A line per state change, and while recovering one a second as the
		# fraction rises.
		if [ "$S_STATE" != "$state" ] || { [ "$S_STATE" = recovering ] && ((S_PPM != ppm && now - printed >= 900000)); }; then
			case $S_STATE in
			shedding) line="standing, newcomer budget, allowlist" ;;
			recovering) line="admission $(fmt_ppm "$S_PPM")" saw_recovering=1 ;;
			*) line="admission $(fmt_ppm "$S_PPM")" ;;
			esac
			say "$(printf '  %5s s  %-10s  %s' "+$(fmt_s "$since")" "$S_STATE" "$line")"
			state=$S_STATE ppm=$S_PPM printed=$now
		fi
		[ "$S_STATE" != serving ] || break
		((now < deadline)) || break
		case $S_STATE in
		shedding) progress "phase 4/5 shedding until its windows have been quiet for the $HOLD s hold ..." ;;
		recovering)
			# (the rest of the ramp, rounded up)
			span=$(((100 - RECOVERY_START) * 10000))
			left=$((((1000000 - S_PPM) * RECOVERY + span - 1) / span))
			progress "phase 4/5 recovering, admission $(fmt_ppm "$S_PPM") ... about $left s left" ;;
		esac
		sleep 0.2
		sample
	done
	b=$(snap)
	stop_client
	window "$a" "$b"
	table_header
	table_row "recovery ($(fmt_s "$W_US") s)" "$LOSS"
	daemon_said shedding recovering
	daemon_said recovering serving
	result="ok: serving again in $(fmt_s "$since") s"
	if [ "$S_STATE" != serving ] || ((!saw_recovering)); then
		fail_phase 4 "the breaker is $S_STATE $(fmt_s "$since") s after the flood stopped, not back to serving by way of recovering"
		result=FAILED
	fi
	record 4 "flood stopped" "$result"
}

phase5_summary() {
	phase_title 5 "summary"
	local fmt='  %-18s %11s %12s %11s  %-10s %-11s %s' entry n what off adm drop state loss result
	row "$fmt" phase "offered pps" "admitted pps" "dropped pps" breaker "client loss" result
	for entry in "${SUMMARY[@]}"; do
		IFS='|' read -r n what off adm drop state loss result <<<"$entry"
		row "$fmt" "$n $what" "$off" "$adm" "$drop" "$state" "${loss%% *}" "$result"
	done
}

# ------------------------------------------------------------- upstream

# The upstream demo's own settings: buckets no flood here empties, so that
# three sources trip the breaker; while it sheds, the standing sources
# together may take UP_STANDING_PPS (a share of a third each, which each
# flooder sends 10x over: revoked within a second; each standing bucket at
# that share, with a small burst, so that the share holds from the first
# period and the standing valve stays open), and over UP_TRIGGER_PPS
# arriving for a second announces the heaviest dropped sources that are
# proved, then abused.
HOST_AS=64500 ROUTER_AS=64501
UP_API=127.0.0.1:50051
UP_FLOOD_SRC=198.18.3.10 # the first of three flooding sources on the attacker's link
UP_FLOOD_N=3
UP_FLOOD_PPS=3000
UP_TRIGGER_PPS=1500
UP_STANDING_PPS=300
UP_STANDING_RATE=100 # UP_STANDING_PPS / UP_FLOOD_N
UP_HOLD=10         # least seconds an automatic announcement stays
UP_STEPS=4

upstream_title() {
	say ""
	say "upstream $1/$UP_STEPS: $2"
}

# upstream_conf NAME: tests/tools/upstream/NAME with the AS numbers filled in
# (the netns tests read the same files).
upstream_conf() {
	sed -e "s/\${HOST_AS}/$HOST_AS/g" -e "s/\${ROUTER_AS}/$ROUTER_AS/g" "$root/tests/tools/upstream/$1"
}

birdc_() {
	birdc -s "$TB_RUNDIR/bird.ctl" "$@"
}

# wait_for SECONDS CMD...: until CMD succeeds (0), or 1 after SECONDS.
wait_for() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# shellcheck disable=SC2317 # (called through wait_for)
bgp_established() {
	birdc_ show protocols host | grep -q Established
}

# blackholed SRC: BIRD holds SRC/32 as a blackhole route.
# shellcheck disable=SC2317 # (called through wait_for)
blackholed() {
	birdc_ show route "$1/32" table master4 | grep -q blackhole
}

# shellcheck disable=SC2317 # (called through wait_for)
all_blackholed() {
	local i
	for ((i = 0; i < UP_FLOOD_N; i++)); do
		blackholed "$(flooder "$i")" || return 1
	done
}

# shellcheck disable=SC2317 # (called through wait_for)
has_signature() {
	birdc_ show route table flowtab4 | grep -q '^flow4'
}

# shellcheck disable=SC2317 # (called through wait_for)
all_in_kernel() {
	local i
	for ((i = 0; i < UP_FLOOD_N; i++)); do
		tb_exec router ip route show "$(flooder "$i")" | grep -q '^blackhole' || return 1
	done
}

# shellcheck disable=SC2317 # (called through wait_for)
none_blackholed() {
	local i
	for ((i = 0; i < UP_FLOOD_N; i++)); do
		! blackholed "$(flooder "$i")" || return 1
	done
}

flooder() {
	local base=${UP_FLOOD_SRC%.*} last=${UP_FLOOD_SRC##*.}
	echo "$base.$((last + $1))"
}

# shellcheck disable=SC2317 # (called through wait_for)
breaker_is() {
	sample
	[ "$S_STATE" = "$1" ]
}

# router_counters: the router's loose-uRPF drops (IPReversePathFilter) and
# what it forwarded to the host; sets RT_RPF RT_TX.
router_counters() {
	# /proc/net/netstat: a line of names, then a line of values, a section at a time.
	# shellcheck disable=SC2016 # awk's own $i
	RT_RPF=$(tb_exec router awk 'NR % 2 { split($0, k); next } { for (i = 2; i <= NF; i++) if (k[i] == "IPReversePathFilter") print $i }' /proc/net/netstat)
	[[ $RT_RPF =~ ^[0-9]+$ ]] || die "no IPReversePathFilter counter in the router's /proc/net/netstat"
	RT_TX=$(tb_stat router "$TB_ROUTER_HOST_IF" tx_packets)
}

upstream_demo() {
	local t_ready i
	for i in gobgpd gobgp bird birdc; do
		command -v "$i" >/dev/null || die "$i is missing (scripts/setup.sh installs gobgpd and bird2)"
	done
	RATE=100000 BURST=100000 PERIOD=0.2 TRIP_PPS=2000 TRIP_PERIODS=2 HOLD=1 RECOVERY=1 NEWCOMER_PPS=0
	DAEMON_EXTRA=(--sample-every 16 --top-window 1 --standing-pps "$UP_STANDING_PPS"
		--standing-rate "$UP_STANDING_RATE" --standing-burst 50 --upstream --upstream-speaker "$UP_API"
		--upstream-peer "$TB_ROUTER_HOST_IP4" --upstream-prefixes "${TB_HOST_IP4%.*}.0/24"
		--upstream-pps "$UP_TRIGGER_PPS" --upstream-after 1 --upstream-top "$UP_FLOOD_N"
		--upstream-mode blackhole --upstream-hold "$UP_HOLD")
	upstream_conf gobgpd.toml.in >"$TB_RUNDIR/gobgpd.toml"
	upstream_conf bird.conf.in >"$TB_RUNDIR/bird.conf"
	tb_exec host ip link set lo up
	tb_bg host gobgpd -f "$TB_RUNDIR/gobgpd.toml" --api-hosts "$UP_API" -p >"$TB_RUNDIR/gobgpd.log" 2>&1
	# shellcheck disable=SC2034 # read by name, in stop
	GOBGPD_PID=$TB_BG_PID
	tb_bg router bird -f -s "$TB_RUNDIR/bird.ctl" -c "$TB_RUNDIR/bird.conf" >"$TB_RUNDIR/bird.log" 2>&1
	# shellcheck disable=SC2034 # read by name, in stop
	BIRD_PID=$TB_BG_PID
	# Loose uRPF on the router's link from the attacker (RFC 5635): a frame
	# whose source has a blackhole route is dropped there.
	tb_exec router sysctl -qw "net.ipv4.conf.r-att.rp_filter=2"
	start_daemon
	t_ready=${EPOCHREALTIME/./}

	upstream_title 1 "the protected host speaks BGP to its router"
	wait_for 30 bgp_established || { tail -5 "$TB_RUNDIR/bird.log" >&2; die "no BGP session between gobgpd and BIRD in 30 s"; }
	say "  gobgpd (AS $HOST_AS, on the host) and BIRD (AS $ROUTER_AS, on the router): session established."
	say "  sluiced --upstream --upstream-mode blackhole: while the breaker sheds and over $UP_TRIGGER_PPS pps"
	say "  arrive for 1 s, it announces the flood's signature and, as blackhole routes, the $UP_FLOOD_N heaviest"
	say "  dropped sources whose addresses are proved, then abused (a handshake, then standing revoked)."

	upstream_title 2 "$UP_FLOOD_N sources prove their addresses, then flood; sluiced revokes their standing and announces them"
	# Each flooder's address on the attacker's link, and a page fetched from
	# it: a completed handshake, which gives it standing (the feeders).
	start_httpd
	local ok=0
	for ((i = 0; i < UP_FLOOD_N; i++)); do
		tb_exec attacker ip addr add "$(flooder "$i")/24" dev "$TB_ATTACKER_IF"
		json get ok <<<"$(tb_exec attacker /usr/bin/python3 "$HTTP_CLIENT" "$TB_HOST_IP4" "$HTTP_PORT" --count 1 \
			--source "$(flooder "$i")")"
		((REPLY == 1)) && ok=$((ok + 1))
	done
	((ok == UP_FLOOD_N)) || fail_phase U2 "$((UP_FLOOD_N - ok)) of the $UP_FLOOD_N flooders could not fetch their page"
	say "  Each flooder fetches a page from the host first: a completed handshake, so its address is proved:"
	say "  # sluicectl standing $IFACE $(flooder 0)"
	ctl standing "$IFACE" "$(flooder 0)" | sed 's/^/  /'
	local t0 t1
	t0=${EPOCHREALTIME/./}
	start_flood --sources "$UP_FLOOD_N" --src-base "$UP_FLOOD_SRC" --pps "$UP_FLOOD_PPS"
	wait_for 15 breaker_is shedding || fail_phase U2 "the breaker did not trip in 15 s"
	say "$(daemon_said serving shedding)"
	if wait_for 30 all_blackholed; then
		t1=${EPOCHREALTIME/./}
		# While it shed, each flooder's standing bucket got its share;
		# sending far over it, each was revoked: proved, then abused.
		grep -m "$UP_FLOOD_N" ') revoked: ' "$DAEMON_LOG" | sed 's/^[a-z]*: /  sluiced: /' || true
		say "  in BIRD $(fmt_s $((t1 - t0))) s after the flood began:"
		for ((i = 0; i < UP_FLOOD_N; i++)); do
			birdc_ show route "$(flooder "$i")/32" table master4 all |
				grep -E 'blackhole|BGP.community' | sed 's/^[[:space:]]*/    /'
		done
		# The flood's signature as a FlowSpec rule (BIRD stores it; a Linux
		# router does not enforce FlowSpec, the upstream's routers do).
		# (It needs 64 drop samples: it may come a moment after the blackholes.)
		wait_for 5 has_signature || true
		birdc_ show route table flowtab4 | grep -E '^flow4' | sed -e 's/^/    /' -e 's/ *\[.*//' || true
		ctl upstream "$IFACE" | sed 's/^/  | /'
	else
		fail_phase U2 "the flooding sources were not blackholed in BIRD within 30 s"
	fi

	upstream_title 3 "the router drops the flood before the host's link"
	local rpf0 tx0 t_a rpf_pps fwd_pps
	wait_for 10 all_in_kernel || fail_phase U3 "BIRD did not install the blackholes in the router's kernel in 10 s"
	router_counters
	rpf0=$RT_RPF tx0=$RT_TX t_a=${EPOCHREALTIME/./}
	sleep 2
	router_counters
	t1=${EPOCHREALTIME/./}
	rpf_pps=$((((RT_RPF - rpf0) * 1000000) / (t1 - t_a)))
	fwd_pps=$((((RT_TX - tx0) * 1000000) / (t1 - t_a)))
	say "  the router over 2 s: $rpf_pps pps dropped by loose uRPF, $fwd_pps pps forwarded to the host"
	say "  (the flood: $UP_FLOOD_PPS pps)."
	((rpf_pps * 2 >= UP_FLOOD_PPS)) || fail_phase U3 "the router dropped $rpf_pps pps, under half the flood"
	((fwd_pps < 100)) || fail_phase U3 "the router still forwarded $fwd_pps pps to the host"
	if wait_for 15 breaker_is serving; then
		say "  nothing reaches the host: the breaker is back to serving."
	else
		fail_phase U3 "the breaker did not leave shedding in 15 s"
	fi
	if tb_exec client ping -c 2 -W 1 -i 0.2 "$TB_HOST_IP4" >/dev/null 2>&1; then
		say "  the client ($TB_CLIENT_IP4) reaches the host: ping answered."
	else
		fail_phase U3 "the client's ping went unanswered"
	fi

	upstream_title 4 "the flood stops; after the hold, sluiced withdraws the routes"
	stop_flood
	if wait_for $((UP_HOLD + 20)) none_blackholed; then
		say "  gone from BIRD $(fmt_s $((${EPOCHREALTIME/./} - T_FLOOD_STOPPED))) s after the flood stopped (hold $UP_HOLD s from the announcement);"
		say "  the router's kernel: $(tb_exec router ip route show "$(flooder 0)" | grep -c blackhole || true) blackhole routes left for $(flooder 0)."
	else
		fail_phase U4 "the blackholes were still in BIRD $((UP_HOLD + 20)) s after the flood"
	fi

	local t_end=${EPOCHREALTIME/./}
	say ""
	say "upstream demo took $(fmt_s $((t_end - t_ready))) s on the testbed."
	verdict "the router dropped the flood upstream and the routes were withdrawn."
}

# ------------------------------------------------------------- setup, teardown

# cleanup: the EXIT trap, on every way out: stops what runs, detaches,
# removes the testbed.
# shellcheck disable=SC2317 # (reached through the trap)
cleanup() {
	local rc=$?
	trap - EXIT INT TERM ERR
	progress_clear
	stop FLOOD_PID
	stop NEWBIE_PID
	stop PROBE_PID
	stop SINK_PID
	stop HTTPD_PID
	if [ -n "$DAEMON_PID" ]; then
		# Detach first: enforcement is fail-static, stopping the daemon
		# alone would leave the program attached.
		ctl detach "$IFACE" >/dev/null 2>&1 || say "demo: sluicectl detach $IFACE failed (the testbed goes anyway)" >&2
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$DAEMON_PID" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
		if ((rc == 1)) && [ -s "${DAEMON_LOG:-}" ]; then
			say "demo: the last lines sluiced logged:" >&2
			tail -n 8 "$DAEMON_LOG" | sed 's/^/  /' >&2
		fi
	fi
	# After sluiced: its clean exit withdraws its paths through gobgpd.
	stop GOBGPD_PID
	stop BIRD_PID
	if [ -n "${TB_NAME:-}" ]; then
		tb_down || { say "demo: the testbed $TB_NAME was not fully removed" >&2; rc=1; }
	fi
	if [ -n "${JSONPY_PID:-}" ]; then
		kill -TERM "$JSONPY_PID" 2>/dev/null || true
		wait "$JSONPY_PID" 2>/dev/null || true
	fi
	[ -z "$WORK" ] || rm -rf "$WORK"
	exit "$rc"
}

require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "demo: run as root (it installs packages, makes network namespaces, loads BPF)" >&2
		exit 2
	fi
}

# build_quietly: setup.sh and build.sh, with a progress line instead of the
# compiler's output, which is kept in a log and shown only if the build fails.
# In the foreground, so Ctrl-C reaches the compilers too.
build_quietly() {
	local log=$WORK/build.log start=${EPOCHREALTIME/./} rc=0
	"$root/scripts/setup.sh"
	BUILD_DIR=$build "$root/scripts/build.sh" 2>&1 | {
		local line last=0 now every=$((IS_TTY ? 1000000 : 15000000))
		while IFS= read -r line; do
			printf '%s\n' "$line" >>"$log"
			now=${EPOCHREALTIME/./}
			if ((now - last >= every)); then
				progress "building ... $(((now - start) / 1000000)) s: $line"
				last=$now
			fi
		done
		((!IS_TTY)) || printf '\r\033[K'
	} || rc=$?
	if ((rc != 0)); then
		tail -n 40 "$log" >&2
		die "the build failed (scripts/build.sh exited $rc)"
	fi
	say "built in $(fmt_s $((${EPOCHREALTIME/./} - start))) s: ${build#"$root"/}"
}

main() {
	case "${1:-}" in
	'') ;;
	--upstream) UPSTREAM=1 ;;
	*)
		echo "demo: unknown argument '$1' (scripts/demo.sh [--upstream])" >&2
		exit 2
		;;
	esac
	require_root
	local t_start=${EPOCHREALTIME/./} t_ready
	trap cleanup EXIT
	trap 'say "demo: interrupted; removing what it made" >&2; exit 130' INT
	trap 'say "demo: terminated; removing what it made" >&2; exit 143' TERM
	trap 'say "demo: failed: $BASH_COMMAND (line $LINENO)" >&2' ERR
	WORK=$(mktemp -d /tmp/sluice-demo.XXXXXX)

	say "sluice demo: installs what is missing, builds, and shows sluice holding floods in a testbed."
	build_quietly
	SLUICED=$build/ctl/sluiced/sluiced
	SLUICECTL=$build/ctl/sluicectl/sluicectl
	TRAFFIC=$build/tests/tools/sluice-traffic
	local f
	XDP_PASS_OBJ=$build/tests/tools/xdp_pass_bpf.bpf.o
	for f in "$SLUICED" "$SLUICECTL" "$TRAFFIC"; do
		[ -x "$f" ] || die "$f is missing after the build"
	done
	[ -f "$XDP_PASS_OBJ" ] || die "$XDP_PASS_OBJ is missing after the build"

	start_json
	# shellcheck source=scripts/testbed.sh
	. "$root/scripts/testbed.sh"
	tb_up demo || die "could not build the testbed"
	add_visitors
	IFACE=$TB_HOST_IF
	PINS=$TB_BPFFS/sluice
	SOCK=$TB_RUNDIR/sluiced.sock
	DAEMON_LOG=$TB_RUNDIR/sluiced.log
	if ((UPSTREAM)); then
		upstream_demo
		return
	fi
	start_daemon
	t_ready=${EPOCHREALTIME/./}

	local rate burst mode period trip periods hold recovery start_ppm slots st_rate st_burst cookies cookie_pps
	json config "$IFACE" <<<"$(ctl -j status "$IFACE")"
	IFS=$'\t' read -r rate burst mode period trip periods hold recovery start_ppm slots st_rate st_burst \
		NEWCOMER_ASKED NEWCOMER_BURST cookies cookie_pps <<<"$REPLY"
	say ""
	say "testbed $TB_NAME: a client ($TB_CLIENT_IP4) and an attacker ($TB_ATTACKER_IP4) reach"
	say "the protected host ($TB_HOST_IP4) through a router. sluiced protects $IFACE ($mode XDP):"
	say "  $rate pps per source, burst $burst, $slots slots; control period $period s; a source with"
	say "  standing has a second bucket of its own ($st_rate pps, burst $st_burst);"
	say "  breaker: trips above $trip admitted pps over $periods periods, sheds at least $hold s, then"
	say "  ramps admission from $(fmt_ppm "$start_ppm") to 100% over $recovery s. While it sheds, the"
	say "  sources without standing share a newcomer budget of $NEWCOMER_ASKED pps (burst $NEWCOMER_BURST); SYN cookies"
	say "  (--cookies $cookies, at most $cookie_pps SYN-ACKs/s): a TCP SYN from one of them to a listening port"
	say "  is answered from XDP, and the ACK that proves the cookie earns its source standing."

	phase1_client_alone
	phase2_single_source
	phase3_spoofed
	phase4_recovery
	phase5_summary

	local t_end=${EPOCHREALTIME/./}
	say ""
	say "demo took $(fmt_s $((t_end - t_start))) s ($(fmt_s $((t_end - t_ready))) s of it on the testbed)."
	verdict "every phase behaved as stated."
}

# (exit on the same line: bash reads a script as it runs it)
main "$@"; exit
