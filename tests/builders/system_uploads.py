"""System uploads (image archives, code bundles) through each channel, and what they leave stored."""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import tarfile
import zipfile
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.builders.cast import Cast

CHANNELS = ["api", "web"]


def tar_of(members: dict[str, bytes], *, gz: bool = False) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    return gzip.compress(raw) if gz else raw


def image_archive(*, config: dict | None = None, manifest: object = None, extra: dict[str, bytes] | None = None,
                  gz: bool = False, stored_layer: bytes | None = None) -> tuple[bytes, str]:
    """``stored_layer``: what the archive holds where its layer should be (a forgery's placeholder)."""
    layer = tar_of({"run.py": b"print('hello')\n"})
    layer_name = hashlib.sha256(layer).hexdigest() + "/layer.tar"
    config_bytes = json.dumps(config or {"architecture": "amd64", "os": "linux",
                                         "config": {"Cmd": ["python3", "/run.py"]},
                                         "rootfs": {"type": "layers", "diff_ids": [sha256_id(layer)]}}).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    if manifest is None:
        manifest = [{"Config": config_name, "RepoTags": ["readerboard/python:bookworm"], "Layers": [layer_name]}]
    members = {config_name: config_bytes, layer_name: layer if stored_layer is None else stored_layer,
               "manifest.json": json.dumps(manifest).encode()}
    members.update(extra or {})
    return tar_of(members, gz=gz), "sha256:" + hashlib.sha256(config_bytes).hexdigest()


def sha256_id(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def bundle_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data)
    return buffer.getvalue()


def stored_files() -> set[Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    return {p for p in root.rglob("*") if p.is_file() and "gold" not in p.parts and "inputs" not in p.parts}


def post(cast: Cast, channel: str, content: bytes, *, kind: str, name: str, who: str = "alice") -> tuple[int, str]:
    client = cast.client(who)
    upload = SimpleUploadedFile(name, content)
    if channel == "api":
        response = client.post("/api/v1/challenges/demo/systems/", {"phase": "test", "kind": kind, "file": upload})
        body = response.json()
        return response.status_code, body.get("detail", json.dumps(body))
    response = client.post("/c/demo/submit/system/", {"phase": cast.test.pk, "kind": kind, "file": upload})
    return response.status_code, html.unescape(response.content.decode())
