"""Image archives built in Python, in ``docker save`` format, for tests that need an engine to refuse them.

No registry and no ``docker build``: an archive is a tar of ``manifest.json``, the image's config
(``<sha256>.json``) and one tar per layer, whose sha256 is the config's ``rootfs.diff_ids`` entry.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One member of a layer: a file with ``data``, a folder, or a hard link to ``link``."""

    name: str
    data: bytes = b""
    kind: str = "file"  # file, dir or hardlink
    link: str = ""


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def layer_tar(entries: Sequence[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mtime = 0
            if entry.kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif entry.kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, entry.link
                tar.addfile(info)
            else:
                info.size, info.mode = len(entry.data), 0o644
                tar.addfile(info, io.BytesIO(entry.data))
    return buffer.getvalue()


def image_archive(layers: Sequence[Sequence[Entry]], *, cmd: list[str] | None = None,
                  entrypoint: list[str] | None = None, config: dict[str, Any] | None = None) -> bytes:
    """A ``docker save`` archive of one image with these layers (bottom first)."""
    blobs = [layer_tar(entries) for entries in layers]
    diff_ids = ["sha256:" + hashlib.sha256(blob).hexdigest() for blob in blobs]
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": cmd, "Entrypoint": entrypoint, "Env": ["PATH=/usr/bin:/bin"], **(config or {})},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": f"layer {i}"} for i in range(len(blobs))],
    }
    raw_config = json.dumps(image_config, sort_keys=True).encode()
    config_name = hashlib.sha256(raw_config).hexdigest() + ".json"
    layer_names = [f"{diff_id[7:]}/layer.tar" for diff_id in diff_ids]
    manifest = [{"Config": config_name, "RepoTags": None, "Layers": layer_names}]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, config_name, raw_config)
        seen = set()
        for name, blob in zip(layer_names, blobs):
            if name not in seen:  # identical layers are stored once, as docker save does
                seen.add(name)
                _add(tar, name, blob)
        _add(tar, "manifest.json", json.dumps(manifest).encode())
    return buffer.getvalue()


def many_layers(count: int) -> bytes:
    """``count`` layers of one small file each (distinct, so none is stored twice)."""
    return image_archive([[Entry(f"layer-{i}.txt", f"{i}\n".encode())] for i in range(count)], cmd=["/bin/true"])


def hard_link_out_of_layer() -> bytes:
    """A layer whose hard link points outside the layer (at the host's /etc/shadow, were it followed)."""
    return image_archive([[Entry("etc", kind="dir"), Entry("etc/x", kind="hardlink", link="../../../../../../etc/shadow")]],
                         cmd=["/bin/true"])


def no_command() -> bytes:
    """A valid image with neither ENTRYPOINT nor CMD: the engine cannot create a container of it."""
    return image_archive([[Entry("hello.txt", b"hello\n")]])
