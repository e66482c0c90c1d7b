#!/usr/bin/python3
"""A regular client: one HTTP GET per new TCP connection, the way a browser
or a poller without keep-alive meets the host; each handshake is a frame the
data plane sees from a source (and, once completed, standing for it).

The one copy that scripts/demo.sh, tests/netns/test_standing.py and
scripts/bench/fig8_standing.py run (python3 tests/tools/http_client.py ...).

  http_client.py HOST PORT (--count N | --seconds S) [--rate R] [--pause S] [--timeout S]

Sequential (no --rate): each request after the one before ended, with
--pause seconds between; --count N requests, or requests until --seconds
have passed (at least one). Paced (--rate R): requests start R a second
whether or not the ones before were answered, each in a thread of its own,
so that every filter is offered the same requests; --count N of them, or
R x S. Each request may take --timeout seconds (connect and answer
together; 2 s is one SYN retransmission).

Prints one JSON line: {"attempted", "ok", "fail", "seconds",
"latency_ms_median"} (ok: answered 200; latency of the ok ones; null when
none was).
"""
import argparse
import json
import socket
import threading
import time


def one_request(host, port, timeout):
    """The seconds a GET / on a new connection took to be answered 200, or
    None (refused, reset, timed out, another status)."""
    req = b"GET / HTTP/1.1\r\nHost: sluice-test\r\nConnection: close\r\n\r\n"
    t = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as c:
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
    a = ap.parse_args()
    if a.rate is not None and a.rate <= 0:
        ap.error("--rate must be > 0")

    latencies = []
    attempted = 0
    t0 = time.monotonic()
    if a.rate is not None:
        lock = threading.Lock()

        def run():
            s = one_request(a.host, a.port, a.timeout)
            if s is not None:
                with lock:
                    latencies.append(s)

        attempted = a.count if a.count is not None else int(a.rate * a.seconds)
        threads = []
        for i in range(attempted):
            rest = t0 + i / a.rate - time.monotonic()
            if rest > 0:
                time.sleep(rest)
            th = threading.Thread(target=run)
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
    else:
        end = t0 + (a.seconds or 0)
        while a.count is None or attempted < a.count:
            s = one_request(a.host, a.port, a.timeout)
            attempted += 1
            if s is not None:
                latencies.append(s)
            if a.count is None and time.monotonic() >= end:
                break
            if a.pause > 0 and (a.count is None or attempted < a.count):
                time.sleep(a.pause)
    latencies.sort()
    print(json.dumps({"attempted": attempted, "ok": len(latencies), "fail": attempted - len(latencies),
                      "seconds": time.monotonic() - t0,
                      "latency_ms_median": 1000 * latencies[len(latencies) // 2] if latencies else None}))


if __name__ == "__main__":
    main()
