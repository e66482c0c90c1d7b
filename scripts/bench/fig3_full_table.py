"""Figure 3: a full table. 1,000,000 spoofed sources, one frame each; then,
the spoofed flood going on, a new flooder at 100x its limit and a new client
under it: what each gets through, and what the table's memory does."""

import dataclasses
import signal
import time

from . import baselines
from .procs import finish, last_json, log, stop
from .rows import Rows, by_name, median
from .system import OTHER_CPU, meminfo, rss_bytes

LEGIT_PORT = 7002
FLOODER_PORT = 7003

# (key, what it is, its label on the chart), in the order they run.
# sluice twice: as shipped, where a spoofed flood whose admitted rate stays
# over --trip-pps (1,000,000/s) trips the breaker, which then sheds every
# source not allowlisted, the new client too; and with the automatic breaker
# out of reach, for what the table alone does.
CONFIGS = (("c_sluice", "sluice", "sluice"),
           ("c2_sluice_no_breaker", "sluice, automatic breaker out of reach", "sluice, no breaker"),
           ("d_nft", "nftables dynamic set", "nftables"),
           ("e_hashlimit", "iptables hashlimit", "hashlimit"),
           ("f_lru", "LRU-hash XDP limiter (hand-written)", "LRU limiter"))


def spoofed_name(key):
    return f"full_table_spoofed_let_through_{key}"


def new_flooder_name(key):
    return f"full_table_new_flooder_let_through_{key}"


def new_client_name(key):
    return f"full_table_new_client_delivered_{key}"


@dataclasses.dataclass
class Outcome:
    """One filter's three shares (% of frames): the spoofed sources let
    through, the new flooder let through, the new client delivered."""
    label: str
    spoofed_let_through: object
    new_flooder_let_through: object
    new_client_delivered: object


@dataclasses.dataclass
class FullTable:
    rows: list
    detail: dict | None
    outcomes: list      # of Outcome, in CONFIGS' order

    @classmethod
    def from_rows(cls, rows):
        get = by_name(rows)
        return cls(rows, None, [Outcome(short, get.get(spoofed_name(key)), get.get(new_flooder_name(key)),
                                        get.get(new_client_name(key))) for key, _, short in CONFIGS])


def measure(lab):
    log("figure 3: a full table (1,000,000 spoofed sources), then a new flooder, then a new client")
    repeats = 1 if lab.quick else 2
    rate, burst = 1000, 1000
    size = 65536      # nftables' meter default (65535) and hashlimit's htable-max on this machine
    n_sources = 1000000
    flood_s = 1 if lab.quick else 3
    legit_s = 1 if lab.quick else 3
    filters = {
        "c_sluice": lambda: lab.daemon("--rate", rate, "--burst", burst, "--ipv6-prefix", 128),
        "c2_sluice_no_breaker": lambda: lab.daemon("--rate", rate, "--burst", burst, "--ipv6-prefix", 128,
                                                   "--trip-pps", 1_000_000_000_000),
        "d_nft": lambda: baselines.nft(lab, False, rate, burst, size),
        "e_hashlimit": lambda: baselines.hashlimit(lab, 128, rate, burst, size),
        "f_lru": lambda: baselines.lru(lab, rate, burst, size, v6_prefix=128),
    }
    res = {c[0]: [] for c in CONFIGS}
    for rep in range(repeats):
        for key, label, _ in CONFIGS:
            slab0 = meminfo("SUnreclaim")
            with filters[key]() as f:
                # sluiced (a harness Daemon), or a baseline: None, or the
                # LRU limiter's handle (its maps' memory, fixed at load).
                d = f if key.startswith("c") else None
                lru_mem = f.maps_memlock if key == "f_lru" else None
                time.sleep(0.3)
                mem0 = lab.maps_memlock(d) if d else 0
                rss0 = rss_bytes(d.proc.pid) if d else None
                n0 = lab.noports()
                spoof = ["--dst", lab.tb.host_ip6, "--sources", n_sources, "--src-base", "2001:2:0:ff::1",
                         "--v6-same64"]
                # Phase 1: one frame from each of the 1,000,000 sources.
                f1 = lab.flood(*spoof, "--count", n_sources)
                time.sleep(0.3)
                n1 = lab.noports()
                entries = (baselines.nft_elements(lab) if key == "d_nft" else
                           baselines.hashlimit_entries(lab) if key == "e_hashlimit" else None)
                # The spoofed flood goes on (from the same sources) while
                # the new flooder and then the new client arrive: a table
                # whose entries expire stays full only while it does.
                sinks = {port: lab.start_sink(port) for port in (FLOODER_PORT, LEGIT_PORT)}
                bg = lab.flood(*spoof, "--duration", flood_s + legit_s + 5, background=True)
                try:
                    time.sleep(1.0)
                    f2 = lab.flood("--dst", lab.tb.host_ip6, "--src", f"2001:2:0:fe::{rep + 1:x}",
                                   "--pps", 100 * rate, "--duration", flood_s, "--port", FLOODER_PORT,
                                   cpus=OTHER_CPU)
                    cc0 = lab.counters(d) if d else None
                    tx0 = lab.link_tx_dropped()
                    pr = lab.probe(LEGIT_PORT, rate // 2, legit_s)
                    rc, pout, _ = finish(pr, legit_s + 30)
                    time.sleep(0.3)
                    cc1 = lab.counters(d) if d else None
                    breaker = lab.breaker_state(d) if d else None
                    tx1 = lab.link_tx_dropped()
                    slab1 = meminfo("SUnreclaim")
                    mem1 = lab.maps_memlock(d) if d else 0
                    rss1 = rss_bytes(d.proc.pid) if d else None
                finally:
                    stop(bg, signal.SIGINT, 30)
                    sj = {port: lab.end_sink(p) for port, p in sinks.items()}
                pj = last_json(pout)
                delivered = sj[LEGIT_PORT]["by_source"].get(lab.tb.client_ip6, 0)
                # What reached the host: counted, or dropped by a full socket buffer.
                flooder_through = (sum(v for k, v in sj[FLOODER_PORT]["by_source"].items() if k != "other")
                                   + sj[FLOODER_PORT].get("socket_drops", 0))
            ideal2 = burst + rate * f2["seconds"]
            r = {"phase1_sent": f1["sent"], "phase1_through": n1 - n0, "entries_after_phase1": entries,
                 "flooder_sent": f2["sent"], "flooder_through": flooder_through, "flooder_ideal": ideal2,
                 "legit_sent": pj["sent"], "legit_delivered": delivered,
                 # While the client sent: frames sluice dropped by rate (the
                 # spoofed sources are under their limit, the flooder had
                 # stopped) and frames the router's veth dropped on transmit.
                 "client_phase_rate_drops": sum(cc1["drop_rate"]) - sum(cc0["drop_rate"]) if cc0 else None,
                 # ... and frames it shed, had the breaker tripped (its
                 # state as the client finished)
                 "client_phase_shed_drops": sum(cc1["drop_shed"]) - sum(cc0["drop_shed"]) if cc0 else None,
                 "breaker_after": breaker,
                 "client_phase_link_drops": tx1 - tx0,
                 "kernel_slab_delta": slab1 - slab0, "maps_memlock_before": mem0, "maps_memlock_after": mem1,
                 "lru_maps_memlock": lru_mem,
                 "daemon_rss_before": rss0, "daemon_rss_after": rss1}
            res[key].append(r)
            log(f"  {key} rep {rep}: {r}")
    detail = {"limit": [rate, burst], "table": size, "sources": n_sources, "runs": res}
    sl = res["c_sluice"]
    sluice_mem = median([r["maps_memlock_after"] for r in sl])
    rows = Rows(3)
    outcomes = []
    for key, label, short in CONFIGS:
        rs = res[key]
        fl = median([100.0 * r["flooder_through"] / r["flooder_sent"] for r in rs if r["flooder_sent"]])
        ideal = median([100.0 * r["flooder_ideal"] / r["flooder_sent"] for r in rs if r["flooder_sent"]])
        lg = median([100.0 * r["legit_delivered"] / r["legit_sent"] for r in rs if r["legit_sent"]])
        ent = median([r["entries_after_phase1"] for r in rs])
        p1 = median([100.0 * r["phase1_through"] / r["phase1_sent"] for r in rs if r["phase1_sent"]])
        flooder = rows.add(new_flooder_name(key), "% of its frames", fl, ideal, "ideal: burst + rate x t",
                           note=f"{label}: new source at 100x its limit, the spoofed flood going on")
        spoofed = rows.add(spoofed_name(key), "% of their frames", p1, 100.0,
                           "everything (each source is under its limit)",
                           note=f"{label}: the {n_sources:,} spoofed sources, one frame each, while the table filled"
                                + (f"; {ent} entries held after" if ent is not None else ""))
        rd = median([r["client_phase_rate_drops"] for r in rs])
        sd = median([r["client_phase_shed_drops"] for r in rs])
        ld = median([r["client_phase_link_drops"] for r in rs])
        states = sorted({r["breaker_after"] for r in rs if r["breaker_after"]})
        client = rows.add(new_client_name(key), "% of its frames", lg, 100.0, "everything (it is under its limit)",
                          note=f"{label}: new legitimate source at half its limit; while it sent, "
                               + (f"sluice dropped {rd:.0f} frames by rate and shed {sd:.0f} (breaker "
                                  f"{' / '.join(states)} at the end), and " if rd is not None else "")
                               + f"the router's veth dropped {ld:.0f} frames on transmit")
        outcomes.append(Outcome(short, spoofed, flooder, client))
        if key.startswith("c"):
            grow = median([r["maps_memlock_after"] - r["maps_memlock_before"] for r in rs])
            rows.add(f"full_table_memory_growth_{key}", "bytes", grow, sluice_mem, "sluice's maps (bytes_memlock)",
                     note="change in bytes_memlock of every sluice map during the three phases")
        else:
            grow = median([r["kernel_slab_delta"] for r in rs])
            lm = median([r["lru_maps_memlock"] for r in rs if r["lru_maps_memlock"] is not None])
            rows.add(f"full_table_memory_growth_{key}", "bytes", grow, sluice_mem, "sluice's maps (bytes_memlock)",
                     note=f"{label}: growth of the kernel's unreclaimable slab (SUnreclaim) over the three"
                          f" phases, whole machine"
                          + (f"; its maps, preallocated at load: {lm:.0f} bytes" if lm is not None else ""))
    return FullTable(rows, detail, outcomes)
