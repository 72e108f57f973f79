"""An image archive stands for an image only if it holds that image's layers (no engine needed).

The engine names an image by its config's hash and skips any layer whose chain it already has,
so ``image_archive_inspect`` hashes every layer as ``docker load`` would (uncompressed) and
compares it with the config's ``rootfs.diff_ids``, position by position.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from leaderboard.sandbox.archives import (
    ArchiveError,
    image_archive_inspect,
    image_archive_untagged,
    run_image_parse,
    run_image_reference,
)

LIMIT = 64 * 1024 * 1024


def layer(*files: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def archive(path: Path, layers: list[bytes], *, stored: dict[int, bytes] | None = None,
            links: dict[int, int] | None = None) -> str:
    """Write a docker save archive of ``layers`` (diff_ids of their uncompressed tars); ``stored``
    replaces what the archive holds for layer i, ``links`` makes layer i a symbolic link to layer j."""
    stored = stored or {}
    links = links or {}
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/true"]},
                         "rootfs": {"type": "layers", "diff_ids": [sha(blob) for blob in layers]}}).encode()
    names = [f"{i:02d}/layer.tar" for i in range(len(layers))]
    with tarfile.open(path, mode="w") as tar:
        for i, name in enumerate(names):
            if i in links:
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, f"../{names[links[i]]}"
                tar.addfile(info)
                continue
            data = stored.get(i, layers[i])
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, data in ((sha(config)[7:] + ".json", config), ("manifest.json", json.dumps(
                [{"Config": sha(config)[7:] + ".json", "RepoTags": ["readerboard/python:bookworm"],
                  "Layers": names}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return sha(config)


BASE = layer(("bin/true", b"\x7fELF..."))
APP = layer(("app/run.py", b"print('hi')\n"))


def test_an_archive_with_its_own_layers_passes(tmp_path: Path) -> None:
    image_id = archive(tmp_path / "a.tar", [BASE, APP])
    assert image_archive_inspect(tmp_path / "a.tar", max_uncompressed=LIMIT).image_id == image_id


def test_placeholder_layers_under_another_images_config_are_refused(tmp_path: Path) -> None:
    archive(tmp_path / "a.tar", [BASE, APP], stored={0: layer(("x", b"")), 1: b""})
    with pytest.raises(ArchiveError) as caught:
        image_archive_inspect(tmp_path / "a.tar", max_uncompressed=LIMIT)
    message = str(caught.value)
    assert "layer 1 of 2 (00/layer.tar) is not the layer the image's config names" in message
    assert f"rootfs.diff_ids[0] is {sha(BASE)}" in message and "docker save" in message


def test_layers_in_the_wrong_order_are_refused(tmp_path: Path) -> None:
    archive(tmp_path / "a.tar", [BASE, APP], stored={0: APP, 1: BASE})
    with pytest.raises(ArchiveError, match="layer 1 of 2"):
        image_archive_inspect(tmp_path / "a.tar", max_uncompressed=LIMIT)


def test_a_gzipped_layer_is_checked_by_its_content(tmp_path: Path) -> None:
    # Newer engines (the containerd store) save layers as they were pulled: gzipped blobs.
    image_id = archive(tmp_path / "a.tar", [BASE, APP], stored={1: gzip.compress(APP)})
    assert image_archive_inspect(tmp_path / "a.tar", max_uncompressed=LIMIT).image_id == image_id
    archive(tmp_path / "b.tar", [BASE, APP], stored={1: gzip.compress(BASE)})
    with pytest.raises(ArchiveError, match=f"its content hashes to {sha(BASE)}"):
        image_archive_inspect(tmp_path / "b.tar", max_uncompressed=LIMIT)


def test_a_gzipped_layer_counts_at_its_expanded_size(tmp_path: Path) -> None:
    big = layer(("zeros", bytes(4 * 1024 * 1024)))
    archive(tmp_path / "a.tar", [big], stored={0: gzip.compress(big)})
    with pytest.raises(ArchiveError, match="expands past"):
        image_archive_inspect(tmp_path / "a.tar", max_uncompressed=1024 * 1024)


def test_a_layer_stored_once_and_linked_is_checked_through_the_link(tmp_path: Path) -> None:
    # docker save stores a layer that occurs twice once, and a symbolic link for the second.
    image_id = archive(tmp_path / "a.tar", [BASE, APP, BASE], links={2: 0})
    assert image_archive_inspect(tmp_path / "a.tar", max_uncompressed=LIMIT).image_id == image_id
    archive(tmp_path / "b.tar", [BASE, APP, BASE], links={2: 1})
    with pytest.raises(ArchiveError, match="layer 3 of 3"):
        image_archive_inspect(tmp_path / "b.tar", max_uncompressed=LIMIT)


def test_the_copy_for_the_engine_carries_only_the_runs_reference(tmp_path: Path) -> None:
    archive(tmp_path / "a.tar", [BASE, APP])
    with open(tmp_path / "copy.tar", "wb") as out:
        image_archive_untagged(tmp_path / "a.tar", out, reference="readerboard-run/7:2")
    with tarfile.open(tmp_path / "copy.tar") as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == ["readerboard-run/7:2"]


def test_run_references_name_the_submission_and_attempt_and_nothing_else() -> None:
    reference = run_image_reference("readerboard-run", 12, 3)
    assert reference == "readerboard-run/12:3"
    assert run_image_parse("readerboard-run", reference) == (12, 3)
    for other in ("readerboard/python:bookworm", "readerboard-run/12:latest", "other-run/12:3",
                  "readerboard-run/x/12:3", "readerboard-run:3"):
        assert run_image_parse("readerboard-run", other) is None, other
