"""Figure 10: SYN cookies from XDP. (a) A visitor the host never saw, one new
address and one new TCP connection a request, during a random-source spoofed
SYN flood from every CPU that trips sluiced's breaker: its served share, the
share whose handshake completed on its first SYN and the median connect time,
for sluice with cookies (its defaults, and with no newcomer budget), sluice
with --cookies off, no filter (the kernel's own cookies) and nftables synproxy;
(b) receive-side CPU per spoofed SYN (figure 2's NET_RX clock) for sluice
answering with cookies, the kernel answering with its own, and synproxy;
(c) figure 1's per-packet cost (BPF_PROG_TEST_RUN) of the SYN -> SYN-ACK path
and of a forged ACK's check, against the drop paths, and beside them the other
ways of making the cookie alone (the raw helpers, the listener's helpers
without sluice, and tc's bpf_sk_assign_tcp_reqsk on the ACK); (d) one bulk TCP flow
whose connection a cookie made, against the same flow through XDP_PASS."""

import contextlib
import dataclasses
import json
import os
import signal
import time

from . import baselines
from .fig2_flood import Clocks
from .fig8_standing import HTTP_CLIENT, HTTP_PORT, IPERF_PORT, TRIP, nginx, none_on_exit, wait_listening
from .procs import finish, last_json, log, run, spawn, stop
from .rows import Rows, median
from .system import FLOOD_CPU, NCPU, OTHER_CPU

# (a) The flood: random IPv4 sources over 198.18.0.0/15, TCP SYNs to the HTTP
# port, injected into veth-host from a sending thread on every CPU (on veth a
# frame's XDP runs on the CPU that sent it, as a NIC spreads such a flood over
# its queues). Figure 8's trip settings (50,000 admitted pps over two 0.2 s
# periods) and everything else sluiced's defaults.
FLOOD_PPS = 100000
FLOOD_CPUS = ",".join(str(c) for c in range(NCPU))
CLIENT_RATE = 20          # requests a second, each from a new address
CLIENT_TIMEOUT = 3.0      # a request's connect and answer: the first SYN and its retransmission at 1 s
# (b) One sending thread, on the flood CPU (figure 2's way), paced.
SYN_PPS = 100000

# (a): (key, what it is), in the order they run and are reported.
VISITOR = (("c_cookies", "sluice, cookies at their defaults (newcomer budget at its default)"),
           ("c2_cookies_no_newcomers", "sluice, cookies, --newcomer-pps 0 (only a cookie lets a visitor in)"),
           ("c3_cookies_off", "sluice, --cookies off (the newcomer budget alone, as before cookies)"),
           ("a_none", "no filter (the kernel's own SYN cookies once the SYN queue overflows)"),
           ("d_synproxy", "nftables synproxy with its notrack rule"))
FLOORED = ("c_cookies", "c2_cookies_no_newcomers")
# (b)
CPU = (("c_sluice", "sluice answering with cookies (shedding)"),
       ("a_kernel", "no filter, tcp_syncookies = 2 (the kernel answers every SYN with its cookie)"),
       ("d_synproxy", "nftables synproxy with its notrack rule"),
       ("c2_sluice_off", "sluice shedding with --cookies off and --newcomer-pps 0 (every SYN dropped: drop_shed)"),
       ("b_xdp_drop", "XDP_DROP only (the testbed's cost of bringing a frame to XDP on veth)"),
       ("b2_xdp_tx", "XDP_TX only, the frame sent back unchanged (XDP_DROP's cost and XDP_TX's on veth)"))
# (c): sluice-bench cookie-cost's paths.
PATHS = (("syn", "a SYN to a listener from a source without standing: the SYN-ACK built in its place (XDP_TX)"),
         ("ack", "a forged ACK to a listener from a source that sent no SYN: refused before the kernel's cookie "
                 "check (drop_cookie)"),
         ("ack_stamped", "the forged ACK from the SYN's source (its SYN stamp seen): the kernel's cookie check "
                         "fails (drop_cookie)"),
         ("shed", "the same SYN with --cookies off, shedding, no newcomer budget (drop_shed)"),
         ("syn_spent", "the same SYN past a spent cookie budget (drop_cookie_budget)"),
         ("syn_reflect", "the same SYN past its /24's spent per-destination bound (drop_cookie_reflect)"),
         ("ack_lookup", "the forged ACK as sluiced without its standing feeders checks it: the listener lookup "
                        "first (drop_cookie)"),
         ("drop", "figure 1's drop path: 64-byte UDP over its limit (drop_rate)"))
# (c) The other ways of making the cookie, in the same rounds
# (docs/architecture.md, "SYN cookies"): tests/tools/bench/cookie_alt.bpf.c
# alone (no sluice around it), with the raw helpers and with the listener's
# cookies as sluice makes them, on the same SYN and forged ACK; and the tc
# program cookie_reqsk.bpf.c on an ACK with its own valid cookie and on the
# forged one.
ALT_PATHS = (("raw_syn", "the raw helpers alone: bpf_tcp_raw_gen_syncookie, no listener lookup, the same SYN-ACK"),
             ("raw_ack", "the raw helpers alone: bpf_tcp_raw_check_syncookie on the forged ACK"),
             ("listener_syn", "the listener's cookies alone: bpf_skc_lookup_tcp + bpf_tcp_gen_syncookie, the same "
                              "SYN-ACK, without sluice's judgement around it"),
             ("listener_ack", "the listener's cookies alone: bpf_skc_lookup_tcp + bpf_tcp_check_syncookie on the "
                              "forged ACK"),
             ("reqsk_ack_valid", "tc ingress: an ACK with a valid cookie of its own (SipHash-2-4), "
                                 "bpf_skc_lookup_tcp, then the bpf_sk_assign_tcp_reqsk kfunc"),
             ("reqsk_ack_forged", "tc ingress: the forged ACK, refused by its own cookie check"))
UNWRAPPED = ("reqsk_ack_valid", "reqsk_ack_forged")  # tc: not behind the XDP restore wrapper
FAMILIES = (("v4", "IPv4"), ("v6", "IPv6"))

SYNPROXY_RULES = """table inet sluicebench_synproxy {{
  chain prerouting {{
    type filter hook prerouting priority raw; policy accept;
    tcp dport {port} tcp flags syn notrack
  }}
  chain input {{
    type filter hook input priority filter; policy accept;
    tcp dport {port} ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
    ct state invalid drop
  }}
}}
"""
# What synproxy needs in the host's namespace (nft(8), "SYNPROXY"; the
# netfilter documentation): cookies on, timestamps on, and conntrack not
# picking up a connection from its ACK (so that the ACK is invalid and
# reaches synproxy).
SYNPROXY_SYSCTLS = {"net.ipv4.tcp_syncookies": "1", "net.ipv4.tcp_timestamps": "1",
                    "net.netfilter.nf_conntrack_tcp_loose": "0"}


@dataclasses.dataclass
class Cookies:
    rows: list
    detail: dict | None


# ---------------------------------------------------------------- the testbed's parts

def host_sysctls(lab, *names):
    return {n: run(lab.x("host", "sysctl", "-n", n), check=False).stdout.strip() for n in names}


@contextlib.contextmanager
def sysctls_for(lab, values):
    """Sysctls of the testbed's host namespace set for a scope, put back after."""
    was = host_sysctls(lab, *values)
    try:
        for k, v in values.items():
            run(lab.x("host", "sysctl", "-qw", f"{k}={v}"))
        yield was
    finally:
        for k, v in was.items():
            if v:
                run(lab.x("host", "sysctl", "-qw", f"{k}={v}"), check=False)


@contextlib.contextmanager
def synproxy(lab):
    with sysctls_for(lab, SYNPROXY_SYSCTLS):
        run(lab.x("host", "nft", "-f", "-"), input=SYNPROXY_RULES.format(port=HTTP_PORT))
        try:
            yield None
        finally:
            run(lab.x("host", "nft", "delete", "table", "inet", "sluicebench_synproxy"), check=False)


@contextlib.contextmanager
def xdp_tx_peer(lab, obj=None):
    """A program on the router's veth to the host (XDP_PASS by default):
    what veth-host's program sends back with XDP_TX reaches the router only
    so (scripts/testbed.sh, tb_xdp_tx_peer); removed again on the way out.
    With XDP_DROP (part b) every reply dies there, the wire's end, whoever
    sent it."""
    run(["bash", os.path.join(lab_root(), "scripts", "testbed.sh"), "xdp-tx-peer", lab.tb.name,
         obj or lab.xdp_pass_obj], timeout=30)
    try:
        yield
    finally:
        run(["ip", "-n", lab.tb.ns("router"), "link", "set", "dev", lab.tb.router_host_if, "xdpdrv", "off"],
            check=False)


def lab_root():
    from . import ROOT
    return ROOT


class Visitors:
    """/24s of 198.19.192.0/18 made local in the client namespace (`ip route
    add local NET dev lo`) and routed to it by the router, one for each
    run: every request's address is one the host never saw, and no run
    reuses one another run's daemon could have seen (its sock_diag grants
    see the host's sockets, TIME_WAIT included)."""

    def __init__(self, lab):
        self.lab = lab
        self.base = (os.getpid() * 7919) % 64
        self.used = []

    def next_net(self):
        n = (self.base + len(self.used)) % 64
        net = f"198.19.{192 + n}.0/24"
        tb = self.lab.tb
        run(self.lab.x("client", "ip", "route", "add", "local", net, "dev", "lo"))
        self.used.append(net)
        run(self.lab.x("router", "ip", "route", "add", net, "via", tb.client_ip4))
        return net.split("/")[0].rsplit(".", 1)[0] + ".1"

    def remove(self):
        for net in self.used:
            run(self.lab.x("client", "ip", "route", "del", "local", net, "dev", "lo"), check=False)
            run(self.lab.x("router", "ip", "route", "del", net), check=False)
        self.used = []


def tcp_ext(lab, *names):
    """TcpExt counters of the host namespace (/proc/net/netstat)."""
    lines = run(lab.x("host", "cat", "/proc/net/netstat")).stdout.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            d = dict(zip(head.split()[1:], vals.split()[1:]))
            return {n: int(d.get(n, 0)) for n in names}
    return {n: 0 for n in names}


def rx_packets(lab):
    p = run(["ip", "-n", lab.tb.ns("host"), "-j", "-s", "link", "show", lab.tb.host_if], check=False)
    try:
        return int(json.loads(p.stdout)[0]["stats64"]["rx"]["packets"])
    except (ValueError, KeyError, IndexError):
        return 0


def wait_shedding(lab, d, timeout=15):
    states = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states.append(lab.breaker_state(d))
        if states[-1] == "shedding":
            break
        time.sleep(0.05)
    return states[-1] if states else None


def syn_flood(lab, pps, seconds, threads=1, cpus=FLOOD_CPU, port=HTTP_PORT):
    return lab.flood("--dst", lab.tb.host_ip4, "--random-src", "--syn", "--port", port, "--pps", pps,
                     "--threads", threads, "--duration", seconds, cpus=cpus, background=True)


def delta(c2, c1):
    return {k: sum(c2[k]) - sum(c1[k]) for k in c2 if sum(c2[k]) != sum(c1[k])}


# ---------------------------------------------------------------- (a) the visitor

def visitor_run(lab, visitors, filt, seconds):
    first = visitors.next_net()
    with filt() as d:
        time.sleep(0.3)
        fl = syn_flood(lab, FLOOD_PPS, seconds + CLIENT_TIMEOUT + 30, threads=NCPU, cpus=FLOOD_CPUS)
        try:
            if d:
                before = wait_shedding(lab, d)
            else:
                before = None
                time.sleep(1.0)
            during = host_sysctls(lab, "net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")
            c1 = lab.counters(d) if d else None
            x1 = tcp_ext(lab, "SyncookiesSent", "SyncookiesRecv", "SyncookiesFailed", "ListenOverflows",
                         "TCPReqQFullDoCookies")
            cl = last_json(finish(spawn(lab.x("client", "taskset", "-c", OTHER_CPU, "python3", HTTP_CLIENT,
                                              lab.tb.host_ip4, HTTP_PORT, "--rate", CLIENT_RATE, "--seconds",
                                              seconds, "--timeout", CLIENT_TIMEOUT, "--sources-from", first)),
                                  seconds + CLIENT_TIMEOUT + 60)[1])
            c2 = lab.counters(d) if d else None
            x2 = tcp_ext(lab, *x1)
            after = lab.breaker_state(d) if d else None
            alive = fl.poll() is None
        finally:
            rc, fout, _ = stop(fl, signal.SIGINT, 30)
    fj = last_json(fout)
    return {"visitors_from": first, "attempted": cl["attempted"], "ok": cl["ok"], "connected": cl["connected"],
            "first_syn": cl["first_syn"], "connect_ms_median": cl["connect_ms_median"],
            "latency_ms_median": cl["latency_ms_median"], "breaker_before": before, "breaker_after": after,
            "flood_alive": alive, "flood_sent": fj["sent"], "flood_pps": fj["pps"], "sysctls_during": during,
            "outcomes_during": delta(c2, c1) if d else None,
            "tcp_ext_during": {k: x2[k] - x1[k] for k in x1}}


def measure_visitor(lab, rows, detail, visitors):
    seconds = 3 if lab.quick else 6
    repeats = 1 if lab.quick else 3
    filters = {
        "c_cookies": lambda: lab.daemon(*TRIP),
        "c2_cookies_no_newcomers": lambda: lab.daemon(*TRIP, "--newcomer-pps", 0),
        "c3_cookies_off": lambda: lab.daemon(*TRIP, "--cookies", "off"),
        "a_none": lambda: none_on_exit(contextlib.nullcontext()),
        "d_synproxy": lambda: synproxy(lab),
    }
    res = {k: [] for k, _ in VISITOR}
    host0 = host_sysctls(lab, "net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")
    for rep in range(repeats):
        for key, _ in VISITOR:
            r = visitor_run(lab, visitors, filters[key], seconds)
            res[key].append(r)
            log(f"  visitor {key} rep {rep}: served {r['ok']}/{r['attempted']}, first SYN {r['first_syn']}, "
                f"connect median {r['connect_ms_median'] or 0:.0f} ms, flood {r['flood_pps']:.0f} pps offered, "
                f"breaker {r['breaker_before']} -> {r['breaker_after']}, sysctls {r['sysctls_during']}, "
                f"outcomes {r['outcomes_during']}, TcpExt {r['tcp_ext_during']}")
    detail["visitor"] = {"flood_pps_asked": FLOOD_PPS, "flood_threads": NCPU, "trip": list(TRIP),
                         "client_rate": CLIENT_RATE, "client_timeout_s": CLIENT_TIMEOUT, "seconds": seconds,
                         "host_sysctls_before": host0, "runs": res}
    pct = lambda f: (lambda r: 100.0 * r[f] / r["attempted"] if r["attempted"] else None)
    served = {k: median([pct("ok")(r) for r in rs]) for k, rs in res.items()}
    first = {k: median([pct("first_syn")(r) for r in rs]) for k, rs in res.items()}
    connect = {k: median([r["connect_ms_median"] for r in rs]) for k, rs in res.items()}
    for key, label in VISITOR:
        rs = res[key]
        ok, att = sum(r["ok"] for r in rs), sum(r["attempted"] for r in rs)
        fs = sum(r["first_syn"] for r in rs)
        pps = median([r["flood_pps"] for r in rs])
        note = (f"{label}: {ok} of {att} requests served, {fs} on the first SYN (connect < 0.9 s), each from a "
                f"new address, a new TCP connection each, {CLIENT_RATE}/s, {CLIENT_TIMEOUT:g} s each; during a "
                f"random-source SYN flood ({FLOOD_PPS:,} pps asked from {NCPU} threads, {pps:,.0f} offered)")
        if key.startswith("c"):
            states = sorted({f"{r['breaker_before']} -> {r['breaker_after']}" for r in rs})
            outs = lambda name: median([(r["outcomes_during"] or {}).get(name, 0) for r in rs])
            note += (f"; breaker {' / '.join(states)}; frames meanwhile: cookie_sent {outs('cookie_sent'):.0f}, "
                     f"cookie_proved {outs('cookie_proved'):.0f}, newcomer {outs('newcomer'):.0f}, "
                     f"drop_cookie_budget {outs('drop_cookie_budget'):.0f}, drop_shed {outs('drop_shed'):.0f}")
        else:
            tx = lambda name: median([r["tcp_ext_during"][name] for r in rs])
            note += (f"; host TcpExt meanwhile: SyncookiesSent {tx('SyncookiesSent'):.0f}, SyncookiesRecv "
                     f"{tx('SyncookiesRecv'):.0f}, ListenOverflows {tx('ListenOverflows'):.0f}; "
                     f"sysctls {rs[0]['sysctls_during']}")
        floored = key in FLOORED
        samples = lambda f: [round(pct(f)(r), 2) if r["attempted"] else None for r in rs]
        rows.add(f"cookies_visitor_served_{key}", "% of requests", served[key], 100.0, "every request",
                 floor=(">=", 0.95) if floored else None, note=note, samples=samples("ok"))
        rows.add(f"cookies_visitor_first_syn_{key}", "% of requests", first[key], 100.0, "every request",
                 floor=(">=", 0.90) if floored else None, samples=samples("first_syn"),
                 note=f"{label}: requests whose connect() returned within 0.9 s (before the client's first SYN "
                      f"retransmission, at 1 s)")
        rows.add(f"cookies_visitor_connect_ms_{key}", "ms", connect[key], connect["a_none"],
                 "no filter (the kernel's own cookies)", samples=[r["connect_ms_median"] for r in rs],
                 note=f"{label}: median connect time of the requests that connected")


# ---------------------------------------------------------------- (b) CPU per SYN

def cpu_run(lab, clocks, filt, seconds):
    with filt() as d:
        time.sleep(0.3)
        fl = syn_flood(lab, SYN_PPS, seconds + 30)
        try:
            state = wait_shedding(lab, d) if d else None
            time.sleep(0.5)
            c1 = lab.counters(d) if d else None
            x1 = tcp_ext(lab, "SyncookiesSent")
            r1, n1, t1 = rx_packets(lab), clocks.netrx.ns(), time.monotonic()
            time.sleep(seconds)
            r2, n2, t2 = rx_packets(lab), clocks.netrx.ns(), time.monotonic()
            x2 = tcp_ext(lab, "SyncookiesSent")
            c2 = lab.counters(d) if d else None
            sysctls = host_sysctls(lab, "net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")
        finally:
            rc, fout, _ = stop(fl, signal.SIGINT, 30)
    fj = last_json(fout)
    got = r2 - r1
    netrx = (n2 - n1) - clocks.idle_netrx_rate * (t2 - t1)
    return {"received": got, "received_pps": got / (t2 - t1), "netrx_s": (n2 - n1) / 1e9,
            "netrx_ns_per_syn": netrx / got if got > 0 else None, "offered_pps": fj["pps"],
            "breaker": state, "sysctls": sysctls, "outcomes": delta(c2, c1) if d else None,
            "syncookies_sent": x2["SyncookiesSent"] - x1["SyncookiesSent"]}


def measure_cpu(lab, rows, detail):
    seconds = 2 if lab.quick else 3
    repeats = 1 if lab.quick else 3
    filters = {"c_sluice": lambda: lab.daemon(*TRIP),
               "a_kernel": lambda: none_on_exit(sysctls_for(lab, {"net.ipv4.tcp_syncookies": "2"})),
               "d_synproxy": lambda: synproxy(lab),
               "c2_sluice_off": lambda: lab.daemon(*TRIP, "--cookies", "off", "--newcomer-pps", 0),
               "b_xdp_drop": lambda: none_on_exit(baselines.xdp_drop(lab)),
               "b2_xdp_tx": lambda: none_on_exit(baselines.xdp_attach(lab, lab.tool_obj("xdp_tx_bpf")))}
    clocks = Clocks(lab)
    res = {k: [] for k, _ in CPU}
    try:
        clocks.measure_idle(1 if lab.quick else 2)
        for rep in range(repeats):
            for key, _ in CPU:
                r = cpu_run(lab, clocks, filters[key], seconds)
                res[key].append(r)
                log(f"  cpu {key} rep {rep}: {r['received_pps']:.0f} SYN/s received ({r['offered_pps']:.0f} "
                    f"offered), NET_RX {r['netrx_ns_per_syn'] or 0:.0f} ns/SYN, breaker {r['breaker']}, "
                    f"sysctls {r['sysctls']}, outcomes {r['outcomes']}, SyncookiesSent {r['syncookies_sent']}")
    finally:
        clocks.netrx.close()
    detail["cpu"] = {"syn_pps_asked": SYN_PPS, "seconds": seconds, "runs": res}
    cost = {k: median([r["netrx_ns_per_syn"] for r in rs]) for k, rs in res.items()}
    rate = {k: median([r["received_pps"] for r in rs]) for k, rs in res.items()}
    for key, label in CPU:
        rs = res[key]
        note = (f"{label}: NET_RX softirq time (every CPU, exact, less its rate without the flood) per spoofed "
                f"SYN received on veth-host, {rate[key]:,.0f} SYN/s received ({SYN_PPS:,} asked, random IPv4 "
                f"sources, one sending thread); every SYN-ACK, the program's (XDP_TX) or the stack's, dies in "
                f"XDP_DROP on the router's veth, the wire's end")
        if key.startswith("c"):
            outs = lambda name: median([(r["outcomes"] or {}).get(name, 0) for r in rs])
            note += (f"; breaker {rs[0]['breaker']}; in the window cookie_sent {outs('cookie_sent'):.0f}, "
                     f"drop_cookie_budget {outs('drop_cookie_budget'):.0f}, drop_shed {outs('drop_shed'):.0f}")
        elif not key.startswith("b"):
            note += f"; the host's stack sent {median([r['syncookies_sent'] for r in rs]):.0f} cookies in the window"
        rows.add(f"cookies_cpu_per_syn_{key}", "ns/SYN", cost[key], cost["a_kernel"],
                 "no filter (the kernel's own cookies)", floor=("<=", 0.5) if key == "c_sluice" else None,
                 samples=[r["netrx_ns_per_syn"] for r in rs], note=note)
    rows.add("cookies_cpu_per_syn_sluice_vs_synproxy", "ns/SYN", cost["c_sluice"], cost["d_synproxy"],
             "nftables synproxy", note="the same rows, sluice against synproxy")
    rows.add("cookies_cpu_per_syn_sluice_above_xdp_drop", "ns/SYN", cost["c_sluice"] - cost["b_xdp_drop"],
             cost["a_kernel"], "no filter (the kernel's own cookies)",
             note="sluice's row less XDP_DROP's: what answering adds to the frame's way to XDP on veth "
                  "(which copies each frame into a page before any program runs, a cost a NIC does not have)")
    rows.add("cookies_cpu_per_syn_sluice_above_xdp_tx", "ns/SYN", cost["c_sluice"] - cost["b2_xdp_tx"],
             cost["a_kernel"], "no filter (the kernel's own cookies)",
             note="sluice's row less XDP_TX's: the program's own share (judging the SYN, the cookie, the SYN-ACK "
                  "built in place), without the testbed's way to XDP and back (veth hands an XDP_TX frame to "
                  "its peer's ring, whose NAPI poll runs as NET_RX too; a NIC queues a descriptor)")


# ---------------------------------------------------------------- (c) program cost

def measure_cost(lab, rows, detail):
    rounds = 3 if lab.quick else 7
    repeat = 1000000
    out = last_json(run([lab.bench_tool, "cookie-cost", "--obj", lab.obj("sluice_bpf"), "--drop-obj",
                         lab.obj("xdp_drop_bpf"), "--restore", lab.tool_obj("restore_frame_bpf"),
                         "--raw-obj", lab.tool_obj("cookie_alt_raw_bpf"),
                         "--listener-obj", lab.tool_obj("cookie_alt_listener_bpf"),
                         "--reqsk-obj", lab.tool_obj("cookie_reqsk_bpf"),
                         "--rounds", rounds, "--repeat", repeat, "--calls", 2000 if lab.quick else 10000],
                        timeout=900).stdout)
    detail["cost"] = out
    p = out["paths"]
    for fam, label in FAMILIES:
        med = {n: median(p[n][fam]) for n in p}
        wrapper = med["xdp_drop"] - med["xdp_drop_bare"]
        net = {n: med[n] - wrapper for n, _ in PATHS}
        net["xdp_drop"] = med["xdp_drop_bare"]
        single = {n: median(p[n][f"single_{fam}"]) for n, _ in PATHS}
        outs = out["outcomes"]
        what = dict(PATHS)
        common = (f"{label}; BPF_PROG_TEST_RUN, repeat {repeat:,}, median of {rounds} rounds, in a network namespace "
                  f"of the bench's own (a listener on port 8080, tcp_syncookies = 2 there); behind the "
                  f"restore-frame wrapper, whose own {wrapper:.1f} ns is taken off")
        for n, base in (("syn", "shed"), ("ack", "shed"), ("ack_stamped", "shed"), ("syn_spent", "shed"),
                        ("syn_reflect", "shed"),
                        ("ack_lookup", "shed"), ("syn", "drop"), ("ack", "drop")):
            floor = {"ack": ("<=", 1.5), "syn_spent": ("<=", 1.2)}.get(n) if base == "shed" else None
            rows.add(f"cookies_cost_{fam}_{n}_vs_{base}", "ns/packet", net[n], net[base],
                     f"sluice, {'shed SYN' if base == 'shed' else 'drop path'}", floor=floor,
                     samples=[x - wrapper for x in p[n][fam]],
                     note=f"{what[n]}, against {what[base]}; {common}; outcomes counted "
                          f"{outs.get(n, {})}; one frame a call (cold, with the timer) gives "
                          f"{single[n]:.0f} against {single[base]:.0f} ns")
        for n, _ in PATHS:
            rows.add(f"cookies_cost_{fam}_{n}_vs_xdp_drop", "ns/packet", net[n], net["xdp_drop"], "XDP_DROP only",
                     note=f"{what[n]}; {label}")
        # The alternatives against sluice's own paths (the chosen way), and
        # the raw helpers against the listener's with nothing else around.
        alt = {n: med[n] - (0 if n in UNWRAPPED else wrapper) for n, _ in ALT_PATHS}
        alt_what = dict(ALT_PATHS)
        kernel = out.get("reqsk_last_assign_error", "?")
        for n, base, base_name in (("raw_syn", "syn", "sluice's SYN"), ("listener_syn", "syn", "sluice's SYN"),
                                   ("raw_syn", "listener_syn", "listener's SYN alone"),
                                   ("raw_ack", "ack_stamped", "sluice's checked forged ACK"),
                                   ("listener_ack", "ack_stamped", "sluice's checked forged ACK"),
                                   ("raw_ack", "listener_ack", "listener's ACK alone"),
                                   ("reqsk_ack_valid", "ack_stamped", "sluice's checked forged ACK"),
                                   ("reqsk_ack_forged", "ack_stamped", "sluice's checked forged ACK")):
            b = alt[base] if base in alt else net[base]
            note = (f"{alt_what[n]}, against {alt_what.get(base, what.get(base))}; {common}"
                    f"{'' if n not in UNWRAPPED else ' (this tc path unwrapped: tc does not rewrite an ACK)'}; "
                    f"outcomes counted {outs.get(n, {})}")
            if n == "reqsk_ack_valid":
                note += (f"; the kfunc answered {kernel} under BPF_PROG_TEST_RUN (the test skb is not at tc "
                         f"ingress), so this is the path up to the kfunc's refusal, without the request socket's "
                         f"allocation, and after the skb the SYN and the ACK each cost at tc")
            rows.add(f"cookies_cost_{fam}_{n}_vs_{base}", "ns/packet", alt[n], b, base_name,
                     samples=[x - (0 if n in UNWRAPPED else wrapper) for x in p[n][fam]], note=note)


# ---------------------------------------------------------------- (d) bulk TCP

def iperf_download(lab, visitor, seconds):
    """The visitor (the iperf3 client, bound to its new address) downloads
    from an iperf3 server on the host (-R: the host sends)."""
    tb = lab.tb
    srv = spawn(lab.x("host", "iperf3", "-s", "-1", "-B", tb.host_ip4, "-p", IPERF_PORT))
    try:
        wait_listening(lab, "host", IPERF_PORT, srv, "iperf3 -s")
        p = run(lab.x("client", "iperf3", "-c", tb.host_ip4, "-B", visitor, "-p", IPERF_PORT, "-t", seconds,
                      "-R", "-J", "--connect-timeout", 5000), check=False, timeout=seconds + 60)
        j = json.loads(p.stdout)
        if "error" in j:
            raise RuntimeError(f"iperf3 from {visitor}: {j['error']}")
        end = j["end"]
        return {"gbit_s": end["sum_received"]["bits_per_second"] / 1e9,
                "retransmits": end.get("sum_sent", {}).get("retransmits"),
                "mss": j.get("start", {}).get("tcp_mss_default"), "bytes": end["sum_received"]["bytes"]}
    finally:
        stop(srv, signal.SIGTERM, 10)


def bulk_run(lab, visitors, key, seconds):
    visitor = visitors.next_net()
    flood = key == "c_cookie_flood"
    filt = {"c_cookie_flood": lambda: lab.daemon(*TRIP, "--newcomer-pps", 0),
            "c2_cookie_always": lambda: lab.daemon("--cookies", "always"),
            "b_xdp_pass": lambda: none_on_exit(baselines.xdp_pass(lab))}[key]
    with filt() as d:
        time.sleep(0.3)
        fl = (syn_flood(lab, FLOOD_PPS, seconds + 40, threads=NCPU, cpus=FLOOD_CPUS, port=IPERF_PORT)
              if flood else None)
        try:
            state = wait_shedding(lab, d) if flood else (lab.breaker_state(d) if d else None)
            c1 = lab.counters(d) if d else None
            x1 = tcp_ext(lab, "SyncookiesSent", "SyncookiesRecv")
            r = iperf_download(lab, visitor, seconds)
            x2 = tcp_ext(lab, *x1)
            c2 = lab.counters(d) if d else None
            r["breaker"] = state
            r["outcomes"] = delta(c2, c1) if d else None
            r["tcp_ext"] = {k: x2[k] - x1[k] for k in x1}
            r["sysctls"] = host_sysctls(lab, "net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")
        finally:
            if fl:
                rc, fout, _ = stop(fl, signal.SIGINT, 30)
                r_flood = last_json(fout)
    if flood:
        r["flood_pps"] = r_flood["pps"]
    return r


def measure_bulk(lab, rows, detail, visitors):
    seconds = 2 if lab.quick else 4
    repeats = 1 if lab.quick else 3
    keys = ("b_xdp_pass", "c_cookie_flood", "c2_cookie_always")
    res = {k: [] for k in keys}
    for rep in range(repeats):
        for key in keys[rep % 3:] + keys[:rep % 3]:
            r = bulk_run(lab, visitors, key, seconds)
            res[key].append(r)
            log(f"  bulk {key} rep {rep}: {r['gbit_s']:.3f} Gbit/s, retransmits {r['retransmits']}, breaker "
                f"{r['breaker']}, outcomes {r['outcomes']}, TcpExt {r['tcp_ext']}, sysctls {r['sysctls']}")
    detail["bulk"] = {"seconds": seconds, "runs": res}
    g = {k: median([r["gbit_s"] for r in rs]) for k, rs in res.items()}
    for key, label in (("c_cookie_flood", f"sluice shedding under a {FLOOD_PPS:,} pps random-source SYN flood "
                                          f"to iperf3's port from {NCPU} threads, --newcomer-pps 0"),
                       ("c2_cookie_always", "sluice with --cookies always, no flood")):
        rs = res[key]
        outs = lambda name: median([(r["outcomes"] or {}).get(name, 0) for r in rs])
        recv = median([r["tcp_ext"]["SyncookiesRecv"] for r in rs])
        rows.add(f"cookies_bulk_tcp_{key}", "Gbit/s", g[key], g["b_xdp_pass"], "XDP_PASS only, no flood",
                 samples=[round(r["gbit_s"], 3) for r in rs],
                 note=f"{label}: iperf3 -R, the host sending to a visitor from an address it never saw, one TCP "
                      f"flow for {seconds} s; its control connection's SYN answered by the program "
                      f"(cookie_sent {outs('cookie_sent'):.0f} in all, cookie_proved {outs('cookie_proved'):.0f}), "
                      f"the data connection then passed by standing and, tcp_syncookies armed at 2, answered by "
                      f"the host's own cookie: the host's stack accepted {recv:.0f} cookies (TcpExt "
                      f"SyncookiesRecv); retransmits {median([r['retransmits'] for r in rs])}; reported, no floor")


def measure(lab):
    log("figure 10: SYN cookies (a visitor during a SYN flood, CPU per SYN, program cost, bulk TCP)")
    rows = Rows(10)
    detail = {}
    visitors = Visitors(lab)
    try:
        with nginx(lab):
            with xdp_tx_peer(lab):
                measure_visitor(lab, rows, detail, visitors)
            with xdp_tx_peer(lab, lab.obj("xdp_drop_bpf")):
                measure_cpu(lab, rows, detail)
        measure_cost(lab, rows, detail)
        with xdp_tx_peer(lab):
            measure_bulk(lab, rows, detail, visitors)
    finally:
        visitors.remove()
    return Cookies(rows, detail)
