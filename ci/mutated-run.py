#!/usr/bin/env python3
"""Play mutated scenario files through `check` and `run` and count what breaks (issue 24).

    ci/mutated-run.py BINARY OUT N [SEED] [--jobs J] [--limit SECONDS]

makes N files with ci/mutate-scenarios.py into OUT (same SEED, same files),
runs `BINARY check --offline --scenarios DIR` on each (DIR: a folder beside
it holding only it), then `BINARY run --db sqlite --coverage-min 0 --quiet
--scenarios DIR` on each file check accepted, J processes at once
(default 2), each under a wall limit (default 20 s). Prints two lines:

    files 20000 accepted 1234 refused 18766 panics 0 hangs 0 exit-codes {0: .., 1: .., 2: ..}
    peak-rss-mib 222.5 (OUT/batch-0000/m000000.yaml) slowest-s 4.9 (OUT/...)

A panic is exit code 101 or `panicked at` on stderr; a hang is a process
still running at the limit (killed, counted, and named on stderr). Peak RSS
is the largest `ru_maxrss` of any one process (os.wait4). Exits 1 when there
is a panic, a hang or an exit code outside 0, 1 and 2.
"""

import argparse
import os
import pathlib
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent


class RssPopen(subprocess.Popen):
    """A Popen whose reaping records the child's own peak RSS (KiB) from wait4."""

    maxrss = 0

    def _try_wait(self, wait_flags):
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self.maxrss = usage.ru_maxrss
        return pid, status


def play(argv, limit):
    """Runs argv; returns (exit code, or None past the limit; stderr; seconds; peak RSS in KiB)."""
    started = time.monotonic()
    child = RssPopen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = child.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return None, "", time.monotonic() - started, 0
    return child.returncode, stderr.decode("utf-8", "replace"), time.monotonic() - started, child.maxrss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("out")
    parser.add_argument("n", type=int)
    parser.add_argument("seed", nargs="?", default="24")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=float, default=20.0)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    if not out.exists():
        subprocess.run([sys.executable, str(HERE / "mutate-scenarios.py"), str(out), str(args.n), args.seed], check=True)
    files = sorted(p for p in out.rglob("*.yaml") if not p.parent.name.endswith(".d"))[: args.n]
    codes, panics, hangs = {}, [], []
    peak = (0, None)
    slowest = (0.0, None)
    accepted = []

    def record(path, result):
        nonlocal peak, slowest
        code, stderr, seconds, rss = result
        if code is None:
            hangs.append(path)
            print(f"hang: {path}", file=sys.stderr)
            return
        codes[code] = codes.get(code, 0) + 1
        if code == 101 or "panicked at" in stderr:
            panics.append(path)
            print(f"panic: {path}: {stderr.strip().splitlines()[-1] if stderr.strip() else code}", file=sys.stderr)
        if rss > peak[0]:
            peak = (rss, path)
        if seconds > slowest[0]:
            slowest = (seconds, path)

    def alone(path):
        """A folder holding only `path` (hard-linked): --scenarios takes folders."""
        folder = path.with_suffix(".d")
        folder.mkdir(exist_ok=True)
        if not (folder / path.name).exists():
            os.link(path, folder / path.name)
        return str(folder)

    def check(path):
        result = play([args.binary, "check", "--offline", "--scenarios", alone(path)], args.limit)
        return path, result

    def run(path):
        argv = [args.binary, "run", "--db", "sqlite", "--coverage-min", "0", "--quiet", "--scenarios", alone(path)]
        return path, play(argv, args.limit)

    with ThreadPoolExecutor(args.jobs) as pool:
        for path, result in pool.map(check, files):
            record(path, result)
            if result[0] == 0:
                accepted.append(path)
        for path, result in pool.map(run, accepted):
            record(path, result)
    print(
        f"files {len(files)} accepted {len(accepted)} refused {len(files) - len(accepted)} "
        f"panics {len(panics)} hangs {len(hangs)} exit-codes {dict(sorted(codes.items()))}"
    )
    print(f"peak-rss-mib {peak[0] / 1024:.1f} ({peak[1]}) slowest-s {slowest[0]:.1f} ({slowest[1]})")
    bad = panics or hangs or any(c not in (0, 1, 2) for c in codes)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
