#!/usr/bin/python3
"""measure.py CMD... - runs a command and reports, as one JSON object on
stderr's last line prefixed "measure: ", its wall time, the CPU time of the
process and every descendant it waited for (wait4's rusage), the cores that
makes (cpu / wall), and the peak of the summed RSS of the process tree
(sampled every 20 ms from /proc: a DataLoader's main process plus its
workers). The command's stdout passes through unchanged."""

import json
import os
import sys
import time


def tree_rss_kib(root):
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def main(argv):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    peak = 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        peak = max(peak, tree_rss_kib(pid))
        time.sleep(0.02)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    peak = max(peak, usage.ru_maxrss)
    print("measure: " + json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                                    "cores": round(cpu / wall, 2),
                                    "peak_rss_mib": round(peak / 1024, 1),
                                    "status": os.waitstatus_to_exitcode(status)}),
          file=sys.stderr)
    return 0 if os.waitstatus_to_exitcode(status) == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
