"""bench - the driver behind scripts/bench.sh (run that, not this).

scripts/bench.sh installs, builds, brings up a testbed of namespaces
(scripts/testbed.sh) and exports its TB_* variables; this package runs the
thirteen figures of docs/benchmarks.md in it, prints a table, writes the JSON,
renders the chart and, with --update-docs, rewrites the generated part of
docs/benchmarks.md and docs/benchmarks.png. Every flood runs inside the
testbed's namespaces; every daemon, program, ruleset and veth it makes is
removed on the way out (bench.sh's trap removes the testbed itself).

Python 3 standard library only. Every figure is a ratio to a baseline measured
in the same run; repeated measurements are reported as their median.

  __main__      the command line: run the figures asked for, then the report
  procs         child processes: spawn, wait, stop, and kill what is left
  system        CPU time and memory as the kernel counts them
  lab           the testbed, the built tools, traffic, and sluiced through
                the netns tests' harness (tests/netns/sluice_netns.py)
  baselines     what sluice is compared with: XDP_DROP, XDP_PASS, xdp-filter,
                a sluice object without the daemon, nftables, iptables hashlimit
  rows          one result row (a dataclass) and how it is judged
  fig1_cost ... fig13_contention  one module per figure, each returning its rows
                (11 and 12 also run an older sluiced, $SLUICE_BEFORE_BUILD)
  report        the table, results.md, the chart and the docs update
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The netns tests' harness: testbed, daemon, counters, map memory.
sys.path.insert(0, os.path.join(ROOT, "tests", "netns"))
