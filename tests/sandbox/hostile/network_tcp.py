"""Hostile system: open TCP connections out of the sandbox.

EXPECT: exit:3

Tries the public internet (1.1.1.1:80, an IPv6 address), the cloud metadata address, the docker
bridge gateway 172.17.0.1 (Docker API 2375, Redis 6379, the web app 8000, ...), the default gateway
found in /proc/net/route, loopback (which is the host's loopback under --network host) and any
host addresses the test passes in READERBOARD_TEST_HOST_ADDRS (comma separated). Also tries raw and
packet sockets (need CAP_NET_RAW). Every connection that completes is a breach.

Prints "BLOCKED: <what>" for each attempt the sandbox stopped and "BREACH: <what>" for each that
worked; exits 3 when everything was blocked, 4 when anything got through.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import sys
import time

BREACHES: list[str] = []
PORTS = [2375, 2376, 6379, 8000, 80, 443, 22, 5432]


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def default_gateways() -> list[str]:
    found: list[str] = []
    try:
        with open("/proc/net/route") as f:
            next(f)
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[1] == "00000000":
                    raw = int(fields[2], 16)
                    found.append(socket.inet_ntoa(raw.to_bytes(4, "little")))
    except (OSError, StopIteration, ValueError) as exc:
        note(f"cannot read /proc/net/route: {exc!r}")
    return found


def targets() -> list[tuple[int, str, int]]:
    hosts4 = ["1.1.1.1", "169.254.169.254", "172.17.0.1", "127.0.0.1", "10.0.0.1", "192.168.0.1"]
    hosts4 += default_gateways()
    extra = os.environ.get("READERBOARD_TEST_HOST_ADDRS", "")
    hosts4 += [h.strip() for h in extra.split(",") if h.strip()]
    out: list[tuple[int, str, int]] = []
    for host in dict.fromkeys(hosts4):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        ports = [80] if host == "1.1.1.1" else PORTS
        out += [(family, host, port) for port in ports]
    out.append((socket.AF_INET6, "2606:4700:4700::1111", 80))
    out.append((socket.AF_INET6, "::1", 8000))
    return out


def try_connections(timeout: float = 3.0) -> None:
    pending: dict[socket.socket, str] = {}
    for family, host, port in targets():
        what = f"tcp connect {host}:{port}"
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:
            blocked(f"{what} (socket(): {exc.strerror})")
            continue
        s.setblocking(False)
        rc = s.connect_ex((host, port))
        if rc == 0:
            breach(f"{what} connected immediately")
            s.close()
        elif rc in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            pending[s] = what
        else:
            blocked(f"{what} ({errno.errorcode.get(rc, rc)})")
            s.close()
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], list(pending), [], max(0.0, deadline - time.monotonic()))
        for s in writable:
            what = pending.pop(s)
            rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if rc == 0:
                breach(f"{what} connected (a host or internet service is reachable)")
            else:
                blocked(f"{what} ({errno.errorcode.get(rc, rc)})")
            s.close()
    for s, what in pending.items():
        blocked(f"{what} (no answer within {timeout:.0f} s: dropped)")
        s.close()


def try_raw_sockets() -> None:
    attempts = [
        ("raw ICMP socket", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        ("AF_PACKET socket", getattr(socket, "AF_PACKET", -1), socket.SOCK_RAW, 0x0300),
    ]
    for what, family, kind, proto in attempts:
        try:
            s = socket.socket(family, kind, proto)
        except OSError as exc:
            blocked(f"{what} ({exc.strerror or exc!r})")
            continue
        s.close()
        breach(f"{what} opened (CAP_NET_RAW is available)")


def list_interfaces() -> None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError as exc:
        note(f"if_nameindex failed: {exc!r}")
        return
    note(f"network interfaces: {names}")
    if any(n != "lo" for n in names):
        note("the container has an interface other than lo (not --network none?)")


def main() -> int:
    list_interfaces()
    try_connections()
    try_raw_sockets()
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
