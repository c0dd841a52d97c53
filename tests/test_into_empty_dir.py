"""``standin DIR`` and ``convert SRC DIR`` where DIR is an existing empty directory, such as
a container's volume mount point: ``os.replace`` onto a mount point fails with EBUSY, so the
output is built inside it (simulated: ``os.replace``/``os.rename`` refuse the directory
itself, as the kernel does for a mount; and observed: the directory keeps its inode). A
destination that cannot be built is one line before any work."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tts_kit.cli import main
from tts_kit.core import atomic
from tts_kit.models.supertonic.bundle import Bundle


def test_standin_into_an_empty_mount_point_builds_inside_it(tmp_path, monkeypatch, capsys):
    mount = tmp_path / "volume"
    mount.mkdir()
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if os.path.abspath(dst) == str(mount):
            raise OSError(errno.EBUSY, "Device or resource busy", str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    code = main(["standin", str(mount), "--scale", "tiny"])
    err = capsys.readouterr().err
    assert code == 0 and "internal error" not in err, err
    assert Bundle(mount).is_standin
    assert not [p for p in os.listdir(mount) if p.startswith(".")]  # no build folder left


@pytest.fixture
def mount(tmp_path, monkeypatch):
    """An existing empty directory that no rename can replace, as the kernel answers for a
    mount point (EBUSY); ``os.replace``/``os.rename`` elsewhere work as usual."""
    mount = tmp_path / "volume"
    mount.mkdir()
    for name in ("replace", "rename"):
        real = getattr(os, name)

        def refuse(src, dst, *args, _real=real, **kwargs):
            if os.path.abspath(dst) == str(mount):
                raise OSError(errno.EBUSY, "Device or resource busy", str(dst))
            return _real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, refuse)
    return mount


def test_convert_into_an_empty_mount_point_fills_it_in_place(tiny_bundle_dir, mount, capsys):
    inode = mount.stat().st_ino
    code = main(["convert", str(tiny_bundle_dir), str(mount), "--to", "fp16", "--no-measure"])
    err = capsys.readouterr().err
    assert code == 0 and "internal error" not in err, err
    assert mount.stat().st_ino == inode  # the same directory, filled: not replaced
    assert Bundle(mount).stages["vocoder"].precision == "float16"
    assert not [p for p in os.listdir(mount) if p.startswith(".")]  # no build folder left


def test_an_interrupted_build_into_an_empty_directory_leaves_it_empty(tmp_path):
    volume = tmp_path / "volume"
    volume.mkdir()
    with pytest.raises(KeyboardInterrupt), atomic.atomic_dir(volume) as work:
        (work / "onnx").mkdir()
        (work / "onnx" / "tts.json").write_text("{}")
        raise KeyboardInterrupt  # Ctrl-C halfway through the build
    assert os.listdir(volume) == []
    assert os.listdir(tmp_path) == ["volume"]


def test_a_move_that_fails_halfway_puts_back_what_moved(tmp_path, monkeypatch):
    volume = tmp_path / "volume"
    volume.mkdir()
    real, calls = os.rename, []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst)

    with pytest.raises(OSError, match="Input/output"), atomic.atomic_dir(
            volume, last="onnx") as work:
        for name in ("onnx", "voice_styles", "README"):
            (work / name).mkdir()
        monkeypatch.setattr(os, "rename", second_fails)
    monkeypatch.undo()
    assert os.listdir(volume) == []
    assert calls[:2] == [volume / "README", volume / "voice_styles"]
    assert volume / "onnx" not in calls  # the config's folder, last, never moved


@pytest.mark.parametrize("command", ["convert", "standin"])
@pytest.mark.parametrize(("kind", "says"), [
    ("full", "already exists and is not an empty directory"),
    ("file", "is a file; give a new directory path"),
    ("unwritable", "cannot create a directory there"),
])
def test_a_destination_that_cannot_be_built_is_one_line_before_the_work(
        tiny_bundle_dir, tmp_path, capsys, command, kind, says):
    dst = {"full": tmp_path / "full", "file": tmp_path / "file.txt",
           "unwritable": Path("/proc/tts-kit-no-such/out")}[kind]
    if kind == "full":
        dst.mkdir()
        (dst / "keep.txt").write_text("mine")
    elif kind == "file":
        dst.write_text("mine")
    argv = (["convert", str(tiny_bundle_dir), str(dst), "--to", "fp16", "--no-measure"]
            if command == "convert" else ["standin", str(dst), "--scale", "tiny"])
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert str(dst) in err or str(dst.parent.parent) in err, err
    if kind != "unwritable":
        assert sorted(p.name for p in tmp_path.iterdir()) == [dst.name]
