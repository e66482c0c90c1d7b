"""Child processes: every one bench starts in the background is tracked, so
that kill_all() ends what a failed or interrupted figure left running."""

import json
import os
import subprocess
import sys
import time

PROCS = []


def log(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


def spawn(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    p = subprocess.Popen([str(c) for c in cmd], text=True, **kw)
    PROCS.append(p)
    return p


def forget(p):
    if p in PROCS:
        PROCS.remove(p)


def finish(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    forget(p)
    return p.returncode, out or "", err or ""


def stop(p, sig, timeout=10):
    if p.poll() is None:
        try:
            p.send_signal(sig)
        except ProcessLookupError:
            pass
    return finish(p, timeout)


def wait_rusage(p, timeout):
    """Wait for a child and return (stdout, its user + system CPU seconds).
    The kernel's total for a task is its exact runtime (sum_exec_runtime),
    including the softirq work that ran in its context."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.01)
    p.returncode = os.waitstatus_to_exitcode(status)
    out = p.stdout.read() if p.stdout else ""
    if p.stderr:
        p.stderr.read()
    forget(p)
    return out, ru.ru_utime + ru.ru_stime


def end_with_stdin(p, timeout):
    """End a helper that runs until end of input (sluice-bench netrx, attach)."""
    p.stdin.close()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    forget(p)


def kill_all():
    for p in list(PROCS):
        if p.poll() is None:
            try:
                p.terminate()
                p.wait(timeout=5)
            except Exception:
                p.kill()
        forget(p)


def run(cmd, check=True, timeout=300, **kw):
    cmd = [str(c) for c in cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in: {text!r}")
