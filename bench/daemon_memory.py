#!/usr/bin/env python3
"""deskd's memory under hostile control clients; run by bench/daemon_memory (see bench/README.md).

Starts a real `deskd serve` on a temporary config with one script-model desk, and measures
deskd's resident memory (VmRSS and VmHWM of /proc/PID/status) before, at the peak of and
after each of three floods:

  a) pipelined:  one client writes --status-requests `status` requests and never reads;
  b) big sends:  a follower that never reads, and --sends `send`s of --send-bytes each;
  c) capped:     the same with texts of the largest size deskd accepts (256 KiB).

Prints key=value lines, then a summary for people on lines starting with '#'. Exits 1 when a
goal is missed: peak growth under --max-growth-mb and, after, back within --settle-mb of
the start (1 MB = 10^6 bytes).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from control_socket import call, connect

MAXIMUM_SEND_TEXT_BYTES = 256 * 1024  # kMaximumSendTextBytes in runner/control/control_protocol.h


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError(f"no {name} in /proc/{pid}/status")


def reset_peak(pid):
    # Writing 5 to clear_refs sets VmHWM back to the current VmRSS (Linux 4.0 and later).
    with open(f"/proc/{pid}/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


class Deskd:
    def __init__(self, binary, folder, sends):
        self.folder = folder
        self.socket_path = os.path.join(folder, "state", "deskd.sock")
        desk = os.path.join(folder, "desks", "one")
        os.makedirs(desk)
        with open(os.path.join(desk, "README.md"), "w") as readme:
            readme.write("A desk for the memory benchmark.\n")
        with open(os.path.join(folder, "one.jsonl"), "w") as script:
            for _ in range(2 * sends + 10):
                script.write('{"text": "noted"}\n')
        with open(os.path.join(folder, "deskd.toml"), "w") as config:
            config.write('[runner]\nstate_folder = "state"\nsocket = "state/deskd.sock"\n'
                         'shutdown_grace_seconds = 1\nlog_level = "warn"\n'
                         '[sandbox]\ndisk_quota_mb = "none"\n'
                         '[[desk]]\nname = "one"\ndirectory = "desks/one"\n'
                         '[desk.model]\nscript = "one.jsonl"\n')
        self.log = open(os.path.join(folder, "deskd.log"), "w")
        self.process = subprocess.Popen([binary, "serve", "--config", os.path.join(folder, "deskd.toml")],
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("deskd exited: " + open(self.log.name).read())
            try:
                with connect(self.socket_path) as client:
                    if call(client, client.makefile("r"), {"id": 1, "op": "desks"})["ok"]:
                        return
            except (OSError, RuntimeError):
                time.sleep(0.05)
        raise RuntimeError("deskd did not answer within 30 s")

    def rss(self):
        return status_field(self.process.pid, "VmRSS")

    def peak(self):
        return status_field(self.process.pid, "VmHWM")

    def desk_status(self):
        with connect(self.socket_path) as client:
            return call(client, client.makefile("r"), {"id": 1, "op": "status", "desk": "one"})["status"]

    def wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.desk_status()
            if status.get("state") == "idle" and status.get("queued") == 0 and status.get("waiting_bytes", 0) == 0:
                return True
            time.sleep(0.1)
        return False

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return -1


def settle(deskd, seconds):
    # deskd trims its heap at most once a second after a large drain: give it that and more.
    time.sleep(seconds)
    return deskd.rss()


def pipelined(deskd, requests, settle_seconds):
    start = deskd.rss()
    reset_peak(deskd.process.pid)
    client = connect(deskd.socket_path)
    payload = "".join(f'{{"id": {n}, "op": "status"}}\n' for n in range(requests)).encode()
    written = 0
    began = time.monotonic()
    try:
        while written < len(payload):
            written += client.send(payload[written:written + 65536])
    except OSError:
        pass  # deskd dropped the client: what the flood is about
    took = time.monotonic() - began
    # Whether deskd said why: the last line it sent, read only now.
    client.settimeout(5)
    last = b""
    try:
        while True:
            chunk = client.recv(1 << 20)
            if not chunk:
                break
            last = (last + chunk)[-4096:]
    except OSError:
        pass
    client.close()
    peak = deskd.peak()
    after = settle(deskd, settle_seconds)
    lines = [line for line in last.split(b"\n") if line]
    told = lines[-1].decode(errors="replace") if lines else ""
    return {"start": start, "peak": peak, "after": after, "written": written, "seconds": took,
            "dropped": "too_slow" in told, "last_line": told[:200]}


def big_sends(deskd, sends, send_bytes, settle_seconds):
    start = deskd.rss()
    reset_peak(deskd.process.pid)
    stuck = connect(deskd.socket_path)
    stuck.sendall(b'{"id": "stuck", "op": "follow", "desk": "one"}\n')  # and never reads
    time.sleep(0.2)
    sender = connect(deskd.socket_path)
    reader = sender.makefile("r")
    text = "x" * send_bytes
    accepted = refused = 0
    codes = {}
    began = time.monotonic()
    for index in range(sends):
        reply = call(sender, reader, {"id": index, "op": "send", "desk": "one", "text": text})
        if reply["ok"]:
            accepted += 1
        else:
            refused += 1
            codes[reply.get("code")] = codes.get(reply.get("code"), 0) + 1
    took = time.monotonic() - began
    idle = deskd.wait_idle(300)
    peak = deskd.peak()
    stuck.close()
    sender.close()
    after = settle(deskd, settle_seconds)
    return {"start": start, "peak": peak, "after": after, "accepted": accepted, "refused": refused,
            "codes": ",".join(f"{code}:{count}" for code, count in sorted(codes.items())) or "-",
            "seconds": took, "idle": idle}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deskd", required=True, help="the deskd binary")
    parser.add_argument("--status-requests", type=int, default=300000)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--send-bytes", type=int, default=1000000)
    parser.add_argument("--settle-seconds", type=float, default=3.0)
    parser.add_argument("--max-growth-mb", type=float, default=64)
    parser.add_argument("--settle-mb", type=float, default=16)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its log)")
    arguments = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="deskd-memory-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    results = {}
    deskd = None
    try:
        deskd = Deskd(arguments.deskd, folder, arguments.sends)
        time.sleep(0.5)
        initial = deskd.rss()
        results["a"] = pipelined(deskd, arguments.status_requests, arguments.settle_seconds)
        results["b"] = big_sends(deskd, arguments.sends, arguments.send_bytes, arguments.settle_seconds)
        results["c"] = big_sends(deskd, arguments.sends, min(arguments.send_bytes, MAXIMUM_SEND_TEXT_BYTES),
                                 arguments.settle_seconds)
        still_running = deskd.process.poll() is None
        exit_status = deskd.stop()
    finally:
        if deskd is not None and deskd.process.poll() is None:
            deskd.process.kill()
        if not arguments.keep:
            shutil.rmtree(folder, ignore_errors=True)

    mb = 1e6
    failed = not still_running or exit_status != 0
    print(f"deskd_initial_rss_mb={initial / mb:.1f}")
    names = {"a": f"{arguments.status_requests} pipelined status requests, never read",
             "b": f"{arguments.sends} sends of {arguments.send_bytes} bytes, a follower that never reads",
             "c": f"{arguments.sends} sends of {min(arguments.send_bytes, MAXIMUM_SEND_TEXT_BYTES)} bytes "
                  "(the largest accepted), a follower that never reads"}
    summary = []
    for key, result in results.items():
        growth = (result["peak"] - result["start"]) / mb
        left = (result["after"] - result["start"]) / mb
        ok = growth < arguments.max_growth_mb and left < arguments.settle_mb
        failed = failed or not ok
        for field, value in result.items():
            if field in ("start", "peak", "after"):
                value = f"{value / mb:.1f}"
            elif isinstance(value, float):
                value = f"{value:.2f}"
            print(f"deskd_{key}_{field}{'_mb' if field in ('start', 'peak', 'after') else ''}={value}")
        print(f"deskd_{key}_growth_mb={growth:.1f}")
        print(f"deskd_{key}_left_after_mb={left:.1f}")
        summary.append(f"# ({key}) {names[key]}: start {result['start'] / mb:.1f} MB, peak +{growth:.1f} MB, "
                       f"after {left:+.1f} MB  {'ok' if ok else 'MISSED'}")
    print(f"deskd_exit_status={exit_status}")
    print("# goals: peak growth < %g MB, after within %g MB of the start (1 MB = 10^6 bytes)"
          % (arguments.max_growth_mb, arguments.settle_mb))
    for line in summary:
        print(line)
    if "b" in results:
        print(f"# (b) accepted {results['b']['accepted']}, refused {results['b']['refused']} ({results['b']['codes']})")
    if "c" in results:
        print(f"# (c) accepted {results['c']['accepted']}, refused {results['c']['refused']} ({results['c']['codes']}), "
              f"desk idle again: {results['c']['idle']}")
    if "a" in results:
        print(f"# (a) the client was {'dropped as too slow' if results['a']['dropped'] else 'NOT told it was too slow'}"
              f" after {results['a']['written']} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
