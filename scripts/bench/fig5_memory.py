"""Figure 5: memory at 1, 10^3 and 10^6 distinct sources: sluice's maps
(bytes_memlock) and the daemon's resident memory."""

import dataclasses
import time

from .procs import log
from .rows import Rows
from .system import rss_bytes


@dataclasses.dataclass
class Memory:
    rows: list
    detail: dict | None


def measure(lab):
    log("figure 5: memory at 1, 10^3, 10^6 distinct sources")
    res = {}
    with lab.daemon("--ipv6-prefix", 128) as d:
        for n, count in ((1, 1000), (1000, 3000), (1000000, 1000000)):
            if n == 1:
                lab.flood("--dst", lab.tb.host_ip6, "--src", "2001:2:0:fd::1", "--count", count)
            else:
                lab.flood("--dst", lab.tb.host_ip6, "--sources", n, "--src-base", "2001:2:0:fd::1",
                          "--v6-same64", "--count", count)
            time.sleep(1.2)  # a control period: the daemon has seen the traffic
            res[n] = {"maps_memlock": lab.maps_memlock(d), "daemon_rss": rss_bytes(d.proc.pid)}
            log(f"  {n} sources: {res[n]}")
    rows = Rows(5)
    for n in (1000, 1000000):
        rows.add(f"memory_maps_{n}_sources", "bytes", res[n]["maps_memlock"], res[1]["maps_memlock"],
                 "at 1 source", note="bytes_memlock of every sluice map (bpftool map show)")
        rows.add(f"memory_daemon_rss_{n}_sources", "bytes", res[n]["daemon_rss"], res[1]["daemon_rss"],
                 "at 1 source", note="sluiced VmRSS")
    return Memory(rows, res)
