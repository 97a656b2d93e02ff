#!/usr/bin/python3
"""remote_fault_server.py - tests/fault_server.py on an address of one's
choosing, for bench/remote.sh.

tests/fault_server.py (the stdlib HTTP server with Range support that
answers a seeded share of requests with a 503, a 429, a reset or a short
body) listens on 127.0.0.1 only, which a server in a network namespace
cannot be reached on from the host. This runs it unchanged, its server
bound to --bind instead (the bind address is swapped as the socket is
bound; every other argument goes to fault_server.py as it is):

    remote_fault_server.py --bind 10.77.25.2 ROOT --port 8081 --p503 0.05 \
        --preset 0.01 --pshort 0 --seed 1 --lifetime 3600

It prints "port N" once it listens, and "faults: {...}" (its counts) on
stderr when it stops (SIGTERM included).
"""

import os
import signal
import sys


def main(argv):
    if len(argv) < 2 or argv[0] != "--bind":
        print(__doc__, file=sys.stderr)
        return 2
    bind, rest = argv[1], argv[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "tests"))
    import http.server
    import fault_server

    real_bind = http.server.HTTPServer.server_bind

    def server_bind(self):
        self.server_address = (bind, self.server_address[1])
        real_bind(self)

    http.server.HTTPServer.server_bind = server_bind
    # SIGTERM ends serve_forever's loop by an exception, so that the server's
    # finally prints its fault counts
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        return fault_server.main(rest)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
