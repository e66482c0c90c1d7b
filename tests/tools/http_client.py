#!/usr/bin/python3
"""A regular client: one HTTP GET per new TCP connection, the way a browser
or a poller without keep-alive meets the host; each handshake is a frame the
data plane sees from a source (and, once completed, standing for it).

The one copy that scripts/demo.sh, tests/netns/test_standing.py and
scripts/bench/fig8_standing.py run (python3 tests/tools/http_client.py ...).

  http_client.py HOST PORT (--count N | --seconds S) [--rate R] [--pause S] [--timeout S]
                 [--source ADDR | --sources-from ADDR]

Sequential (no --rate): each request after the one before ended, with
--pause seconds between; --count N requests, or requests until --seconds
have passed (at least one). Paced (--rate R): requests start R a second
whether or not the ones before were answered, each in a thread of its own,
so that every filter is offered the same requests; --count N of them, or
R x S. Each request may take --timeout seconds (connect and answer
together; 2 s is one SYN retransmission).

--source binds each connection to that local address (a visitor address of
its own, that no other client shares); --sources-from ADDR binds request i
to ADDR + i, so that every request is a visitor the host never saw (the
addresses must be local: `ip route add local NET dev lo` makes a whole
prefix so).

Prints one JSON line: {"attempted", "ok", "fail", "seconds",
"latency_ms_median", "connected", "first_syn", "connect_ms_median"} (ok:
answered 200; latency of the ok ones; null when none was; connected: the
connects that returned; first_syn: those that returned within 0.9 s, before
the client's first SYN retransmission at 1 s, so the handshake completed on
its first SYN; connect_ms_median over the connected ones).
"""
import argparse
import ipaddress
import json
import socket
import threading
import time


# Linux's initial RTO: a SYN not answered is sent again 1 s later.
FIRST_SYN_S = 0.9


def one_request(host, port, timeout, source=None, connects=None):
    """The seconds a GET / on a new connection took to be answered 200, or
    None (refused, reset, timed out, another status). The seconds its
    connect() took are appended to `connects` when it returned."""
    req = b"GET / HTTP/1.1\r\nHost: sluice-test\r\nConnection: close\r\n\r\n"
    t = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout,
                                      source_address=(source, 0) if source else None) as c:
            if connects is not None:
                connects.append(time.monotonic() - t)
            c.settimeout(max(0.05, timeout - (time.monotonic() - t)))
            c.sendall(req)
            data = b""
            while True:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    status = data.split(b"\r\n", 1)[0].split()
    if len(status) >= 2 and status[0].startswith(b"HTTP/1.") and status[1] == b"200":
        return time.monotonic() - t
    return None


def main():
    ap = argparse.ArgumentParser(description="one HTTP request per new TCP connection")
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    how_many = ap.add_mutually_exclusive_group(required=True)
    how_many.add_argument("--count", type=int, help="this many requests")
    how_many.add_argument("--seconds", type=float, help="requests for this long")
    ap.add_argument("--rate", type=float, help="start this many requests a second, concurrently")
    ap.add_argument("--pause", type=float, default=0.0, help="sequential: seconds between requests")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds each request may take")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--source", help="local address to connect from")
    src.add_argument("--sources-from", help="request i connects from this address + i")
    a = ap.parse_args()
    if a.rate is not None and a.rate <= 0:
        ap.error("--rate must be > 0")

    latencies = []
    connects = []
    attempted = 0

    def source(i):
        if a.sources_from:
            return str(ipaddress.ip_address(a.sources_from) + i)
        return a.source
    t0 = time.monotonic()
    if a.rate is not None:
        lock = threading.Lock()

        def run(i):
            s = one_request(a.host, a.port, a.timeout, source(i), connects)
            if s is not None:
                with lock:
                    latencies.append(s)

        attempted = a.count if a.count is not None else int(a.rate * a.seconds)
        threads = []
        for i in range(attempted):
            rest = t0 + i / a.rate - time.monotonic()
            if rest > 0:
                time.sleep(rest)
            th = threading.Thread(target=run, args=(i,))
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
    else:
        end = t0 + (a.seconds or 0)
        while a.count is None or attempted < a.count:
            s = one_request(a.host, a.port, a.timeout, source(attempted), connects)
            attempted += 1
            if s is not None:
                latencies.append(s)
            if a.count is None and time.monotonic() >= end:
                break
            if a.pause > 0 and (a.count is None or attempted < a.count):
                time.sleep(a.pause)
    latencies.sort()
    connects.sort()
    print(json.dumps({"attempted": attempted, "ok": len(latencies), "fail": attempted - len(latencies),
                      "seconds": time.monotonic() - t0,
                      "latency_ms_median": 1000 * latencies[len(latencies) // 2] if latencies else None,
                      "connected": len(connects), "first_syn": sum(1 for c in connects if c < FIRST_SYN_S),
                      "connect_ms_median": 1000 * connects[len(connects) // 2] if connects else None}))


if __name__ == "__main__":
    main()
