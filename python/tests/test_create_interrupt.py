"""test_create_interrupt.py - Ctrl-C during a long create raises
KeyboardInterrupt (issue 36): a remote source whose scan waits on a server
that stalls every window after the first (tests/fault_server.py
--stall-path, started here on 127.0.0.1), with a remote_timeout_ms of ten
minutes, is interrupted by SIGINT once the server says a window stalled;
the process ends with KeyboardInterrupt within the test's own bound,
instead of waiting out the timeout (create used to run with no look at
signals)."""

import io
import os
import signal
import subprocess
import sys
import tarfile

import pytest

import ringfeed  # noqa: F401  (the package the child imports, from PYTHONPATH)

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                      "fault_server.py")

CHILD = r"""
import sys, ringfeed
print("creating", flush=True)
try:
    ringfeed.Loader(sys.argv[1], raw=True, epochs=1, batch_size=4, remote_timeout_ms=600000)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
except ringfeed.Error as e:
    print("error: %s" % e, flush=True)
    sys.exit(4)
print("created", flush=True)
"""


def test_ctrl_c_during_a_remote_scan_raises_keyboard_interrupt(tmp_path):
    # one shard of 400 KiB: its first window comes, the second stalls
    with tarfile.open(tmp_path / "shard-0.tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for k in range(200):
            body = bytes((k + i) % 251 for i in range(1536))
            info = tarfile.TarInfo(f"{k:06d}.bin")
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    server = subprocess.Popen([sys.executable, SERVER, str(tmp_path), "--p503", "0", "--preset",
                               "0", "--pshort", "0", "--stall-path", "shard-0",
                               "--lifetime", "120"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    child = None
    try:
        line = server.stdout.readline()
        assert line.startswith("port "), line
        url = f"http://127.0.0.1:{int(line.split()[1])}/shard-0.tar"
        child = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        assert child.stdout.readline().strip() == "creating"
        # the scan's second window has stalled: create is waiting on it
        line = server.stdout.readline()
        if not line.startswith("stalled"):
            child.kill()
            out, err = child.communicate(timeout=30)
            if "without libcurl" in out + err:
                pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
            pytest.fail(f"no window stalled: {line!r} {out!r} {err!r}")
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail("create did not see Ctrl-C within 30 s")
        assert child.returncode == 3, (child.returncode, out, err)
        assert "KeyboardInterrupt" in out
    finally:
        if child and child.poll() is None:
            child.kill()
            child.wait()
        server.terminate()
        server.wait(timeout=30)
