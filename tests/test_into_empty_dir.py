"""``standin DIR`` where DIR is an existing empty directory, such as a container's volume
mount point: ``os.replace`` onto a mount point fails with EBUSY, so the bundle is built into
it (simulated: os.replace refuses the directory itself, as the kernel does for a mount)."""

from __future__ import annotations

import errno
import os

from tts_kit.cli import main
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
