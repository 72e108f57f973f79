"""Hosts of their own on one machine: network namespaces joined to this one by a veth pair each.

A process started with ``NetHost.command`` sees one network interface besides its own loopback: the
far end of a point-to-point link whose near end (``host_ip``) is this machine.  Whatever listens on
this machine's loopback (Redis, Postgres, a web app bound to 127.0.0.1) is out of its reach; what
listens on ``host_ip`` (or on every address) is reachable, and nothing else is: no route leads
anywhere but the link.  A Unix socket (the container engine's) is a file, not an address, so a host
in a namespace still runs containers on this machine's engine, as a compute host runs them on its own.

Names carry this test process's id, so two test runs on one machine never take each other's
namespaces, and a namespace a killed run left behind is removed by the next run of the same id only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# A /16 per test process (10.64.0.0 to 10.127.0.0, by its pid), a /30 per host in it: two test runs
# (or a benchmark beside the suite) on one machine never route each other's hosts; out of the ranges
# Docker's bridges (172.16/12) use.
_PREFIX = f"10.{64 + os.getpid() % 64}"


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class NetHost:
    name: str  # the namespace's name (``ip netns``)
    link: str  # the near end of the veth pair, in this namespace
    host_ip: str  # this machine, as the host in the namespace reaches it
    own_ip: str  # the host in the namespace, as this machine reaches it

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run in the namespace's network and nothing else of it (as root).

        Not ``ip netns exec``: it also gives the process a mount namespace whose mounts are all
        made slaves, so a run area a compute worker mounts would never reach the engine's view."""
        return ["nsenter", f"--net=/run/netns/{self.name}", "--", *argv]


def _remove(name: str, link: str) -> None:
    # Deleting the namespace deletes its end of the pair, and with it the near end: the second
    # command only matters when the namespace was never made.
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)


def net_host_make(index: int) -> NetHost:
    """Host ``index`` (1..250) of this test process: a namespace, a veth pair, addresses, links up."""
    tag = f"{os.getpid() % 100000}"
    name, link, far = f"rb{tag}-{index}", f"rb{tag}h{index}", f"rb{tag}c{index}"
    subnet = f"{_PREFIX}.{index}"
    host = NetHost(name=name, link=link, host_ip=f"{subnet}.1", own_ip=f"{subnet}.2")
    _remove(name, link)  # a namespace of the same name left behind by a killed run of this pid
    try:
        _ip("netns", "add", name)
        _ip("link", "add", link, "type", "veth", "peer", "name", far)
        _ip("link", "set", far, "netns", name)
        _ip("addr", "add", f"{host.host_ip}/30", "dev", link)
        _ip("link", "set", link, "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{host.own_ip}/30", "dev", far)
        _ip("netns", "exec", name, "ip", "link", "set", far, "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
    except subprocess.CalledProcessError as exc:
        _remove(name, link)
        raise RuntimeError(f"could not make network namespace {name}: {exc.stderr.strip()}") from None
    return host


def net_host_remove(host: NetHost) -> None:
    _remove(host.name, host.link)


@contextlib.contextmanager
def net_hosts(count: int) -> Iterator[list[NetHost]]:
    """``count`` hosts of their own, removed afterwards whatever happened."""
    made: list[NetHost] = []
    try:
        for index in range(1, count + 1):
            made.append(net_host_make(index))
        yield made
    finally:
        for host in made:
            net_host_remove(host)
