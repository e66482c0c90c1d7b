"""sluiced --multiprog: sluice attached through libxdp's multiprog dispatcher,
beside another XDP program on the same interface (xdp-filter here), listed by
`xdp-loader status`; adopted after SIGKILL; `sluicectl detach` removes sluice
and leaves the other program running.

The dispatcher needs the kernel to load freplace (BPF_PROG_TYPE_EXT) programs.
Kernels that refuse them (lockdown, no BPF trampolines) make libxdp fall back
to one program alone; there the coexistence test skips, naming the reason, and
test_multiprog_attach_or_clean_refusal checks that sluiced refuses with the
reason and leaves the interface as it found it."""

import os
import signal
import unittest

from sluice_netns import (TRAFFIC, Daemon, Testbed, counters, counters_after, ctl, ctl_json, main, require_root, send,
                          xdp_prog_id)

SRC = "198.18.7.7"
XDP_PASS_OBJ = os.path.join(os.path.dirname(os.path.abspath(TRAFFIC)), "xdp_pass_bpf.bpf.o")


def xdp_tool(tb, *args, check=True):
    """xdp-loader / xdp-filter in the host namespace, with libxdp's pins on the testbed's bpffs."""
    return tb.exec("host", ["env", "LIBXDP_BPFFS=" + tb.bpffs] + list(args), check=check)


def loader_status(tb):
    return xdp_tool(tb, "xdp-loader", "status", tb.host_if).stdout


def dispatcher_works(tb):
    """Can libxdp put its dispatcher on this interface? (None, or why not.)"""
    if not os.path.exists(XDP_PASS_OBJ):
        return f"no {XDP_PASS_OBJ} (build tests/tools)"
    p = xdp_tool(tb, "xdp-loader", "load", "-v", "-m", "native", tb.host_if, XDP_PASS_OBJ, check=False)
    try:
        if p.returncode != 0:
            return "xdp-loader load failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        if "xdp_dispatcher" in loader_status(tb):
            return None
        why = [line.strip() for line in p.stderr.splitlines() if "ompatibility check" in line or "ispatcher" in line]
        return "libxdp fell back to a lone program: " + ("; ".join(why) or "no dispatcher on this kernel")
    finally:
        xdp_tool(tb, "xdp-loader", "unload", tb.host_if, "--all", check=False)


class Multiprog(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_multiprog_beside_xdp_filter_or_clean_refusal(self):
        """Where libxdp's dispatcher works: sluice and xdp-filter on one
        interface, both enforcing. Where the kernel refuses it (this CI
        machine: freplace is refused), what sluiced does there: it refuses
        --multiprog with the reason and leaves the interface as it found it.
        One test, so that neither kind of kernel skips it."""
        with Testbed("mp") as tb:
            why_not = dispatcher_works(tb)
            if why_not:
                print("libxdp's dispatcher does not work here (" + why_not + "): checking the refusal", flush=True)
                self.check_clean_refusal(tb)
            else:
                self.check_beside_xdp_filter(tb)

    def check_clean_refusal(self, tb):
        os.environ["LIBXDP_BPFFS"] = tb.bpffs  # sluiced's libxdp, through `ip netns exec`
        try:
            d = Daemon(tb, "--multiprog", "--period", "0.2")
            # libxdp falls back to a lone program: refused, undone
            d.start(wait=False)
            self.assertEqual(d.proc.wait(timeout=30), 1, d.output())
            out = d.output()
            self.assertIn("not through its multiprog dispatcher", out)
            self.assertIn("run sluiced without --multiprog", out)
            self.assertIsNone(xdp_prog_id(tb))
            self.assertFalse(any(os.listdir(os.path.join(tb.pin_dir, tb.host_if))))
            # nothing left behind: the plain bpf_link attach works at once
            with Daemon(tb, "--period", "0.2"):
                i = ctl_json(tb, "status")["interfaces"][0]
                self.assertFalse(i["multiprog"])
                self.assertEqual(i["prog_id"], xdp_prog_id(tb))
        finally:
            os.environ.pop("LIBXDP_BPFFS", None)

    def check_beside_xdp_filter(self, tb):
        os.environ["LIBXDP_BPFFS"] = tb.bpffs
        d = Daemon(tb, "--multiprog", "--rate", "1", "--burst", "20", "--period", "0.2")
        try:
            d.start()
            prog = ctl_json(tb, "status")["interfaces"][0]["prog_id"]
            # xdp-filter joins the dispatcher: deny UDP port 7777
            xdp_tool(tb, "xdp-filter", "load", "-m", "native", tb.host_if)
            xdp_tool(tb, "xdp-filter", "port", "7777")
            status = loader_status(tb)
            self.assertIn("sluice_xdp", status)
            self.assertIn("xdpfilt", status)
            # libxdp rebuilt its dispatcher around both: sluice is the same program
            i = ctl_json(tb, "status")["interfaces"][0]
            self.assertEqual((i["prog_id"], i["attached"], i["multiprog"]), (prog, True, True))

            # port 7777: xdp-filter (priority 10) drops it before sluice sees it
            before = counters(tb)
            send(tb, 30, SRC, extra=("--port", "7777"))
            mid = counters(tb)
            self.assertEqual(mid["passed"] + mid["drop_rate"], before["passed"] + before["drop_rate"])
            # port 9: xdp-filter passes it on, sluice holds the source to its burst
            send(tb, 60, SRC)
            after = counters_after(tb, mid, 60)
            self.assertEqual(after["passed"] - mid["passed"], 20)
            self.assertEqual(after["drop_rate"] - mid["drop_rate"], 40)

            # fail-static and adoption under the dispatcher
            d.kill(signal.SIGKILL)
            self.assertIn("sluice_xdp", loader_status(tb))
            d = Daemon(tb, "--multiprog", "--period", "0.2").start()
            self.assertIn("adopted pins", d.output())
            i = ctl_json(tb, "status")["interfaces"][0]
            self.assertEqual((i["prog_id"], i["attached"]), (prog, True))

            # a new hash key needs the links libxdp holds: refused, saying so,
            # and no schedule (the default --rekey-every is off, logged)
            p = ctl(tb, "rekey", tb.host_if)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("--multiprog", p.stderr)
            self.assertIn("--rekey-every 86400 is off with --multiprog", d.output())
            self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["prog_id"], prog)

            # detach: sluice leaves, xdp-filter stays and still filters
            ctl(tb, "detach", tb.host_if, check=True)
            status = loader_status(tb)
            self.assertNotIn("sluice_xdp", status)
            self.assertIn("xdpfilt", status)
        finally:
            d.kill(signal.SIGTERM)
            xdp_tool(tb, "xdp-filter", "unload", tb.host_if, check=False)
            xdp_tool(tb, "xdp-loader", "unload", tb.host_if, "--all", check=False)
            os.environ.pop("LIBXDP_BPFFS", None)


if __name__ == "__main__":
    main()
