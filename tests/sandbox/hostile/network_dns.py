"""Hostile system: resolve names and talk DNS (a classic exfiltration channel) out of the sandbox.

EXPECT: exit:3

Resolves public names with socket.getaddrinfo (resolv.conf, whatever resolver the container has),
then sends hand-built DNS queries over UDP and TCP to 8.8.8.8:53, 1.1.1.1:53, the docker embedded
resolver 127.0.0.11 and every nameserver listed in /etc/resolv.conf. Any answer is a breach
(a name served from /etc/hosts, like localhost, is not).

Prints "BLOCKED: <what>" / "BREACH: <what>"; exits 3 when everything was blocked, 4 otherwise.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import sys

BREACHES: list[str] = []
NAMES = ["example.com", "readerboard-exfil-test.example.org", "host.docker.internal", "gateway.docker.internal"]


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def resolv_conf_servers() -> list[str]:
    servers: list[str] = []
    try:
        with open("/etc/resolv.conf") as f:
            text = f.read()
    except OSError as exc:
        note(f"no /etc/resolv.conf: {exc!r}")
        return servers
    note(f"/etc/resolv.conf: {' | '.join(line for line in text.splitlines() if line.strip())}")
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            servers.append(fields[1])
    return servers


def query_packet(name: str) -> tuple[int, bytes]:
    qid = random.randrange(1, 0xFFFF)
    header = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return qid, header + labels + struct.pack(">HH", 1, 1)


def try_getaddrinfo() -> None:
    for name in NAMES + [os.environ.get("READERBOARD_TEST_DNS_NAME", "")]:
        if not name:
            continue
        try:
            infos = socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)
        except socket.gaierror as exc:
            blocked(f"getaddrinfo({name!r}) ({exc.strerror})")
            continue
        except OSError as exc:
            blocked(f"getaddrinfo({name!r}) ({exc!r})")
            continue
        breach(f"getaddrinfo({name!r}) resolved to {sorted({i[4][0] for i in infos})}")
    try:
        socket.getaddrinfo("localhost", 80)
        note("localhost resolves (from /etc/hosts: no network involved)")
    except OSError as exc:
        note(f"localhost does not resolve: {exc!r}")


def try_udp(server: str, name: str = "example.com") -> None:
    what = f"raw DNS query over UDP to {server}:53"
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    qid, packet = query_packet(name)
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.settimeout(3)
            s.sendto(packet, (server, 53))
            data, peer = s.recvfrom(4096)
    except TimeoutError:
        blocked(f"{what} (sent, no answer within 3 s)")
        return
    except OSError as exc:
        blocked(f"{what} ({exc.strerror or exc!r})")
        return
    if len(data) >= 2 and struct.unpack(">H", data[:2])[0] == qid:
        breach(f"{what}: got a {len(data)}-byte answer from {peer[0]}")
    else:
        breach(f"{what}: got {len(data)} bytes back from {peer[0]} (not our query id)")


def try_tcp(server: str, name: str = "example.com") -> None:
    what = f"raw DNS query over TCP to {server}:53"
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    _, packet = query_packet(name)
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect((server, 53))
            s.sendall(struct.pack(">H", len(packet)) + packet)
            data = s.recv(4096)
    except TimeoutError:
        blocked(f"{what} (no answer within 3 s)")
        return
    except OSError as exc:
        blocked(f"{what} ({exc.strerror or exc!r})")
        return
    if data:
        breach(f"{what}: got {len(data)} bytes back")
    else:
        blocked(f"{what} (connection closed without data)")


def main() -> int:
    servers = list(dict.fromkeys(["8.8.8.8", "1.1.1.1", "127.0.0.11", *resolv_conf_servers()]))
    try_getaddrinfo()
    for server in servers:
        try_udp(server)
    for server in ["8.8.8.8", *servers[3:]]:
        try_tcp(server)
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
