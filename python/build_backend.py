# SPDX-License-Identifier: BSD-3-Clause
"""In-tree PEP 517 backend of the dpumesh package: compiles the extension with the C
compiler and libdpumesh's pkg-config flags, then writes the wheel (a zip with dist-info).
No build requirements, so pip's isolated build environment needs nothing from an index.
Environment: CC (default cc), PKG_CONFIG_PATH (where dpumesh.pc is), DPUMESH_CFLAGS
(extra flags, e.g. sanitizers)."""

import base64
import hashlib
import os
import shlex
import subprocess
import sysconfig
import tempfile
import zipfile

NAME, VERSION = "dpumesh", "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def _pkg(*args):
    out = subprocess.run(["pkg-config", *args, "dpumesh"], check=True, capture_output=True, text=True)
    return shlex.split(out.stdout)


def _compile(out_dir):
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = os.path.join(out_dir, "_dpumesh" + suffix)
    libdir = _pkg("--variable=libdir")[0]
    cmd = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra",
           "-Werror", "-I" + sysconfig.get_paths()["include"],
           *shlex.split(os.environ.get("DPUMESH_CFLAGS", "")),
           os.path.join(HERE, "src", "_dpumesh.c"), "-o", target,
           *_pkg("--cflags", "--libs"), "-Wl,-rpath," + os.path.realpath(libdir)]
    subprocess.run(cmd, check=True)
    return target


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arc, digest, len(data))


def _tag():
    impl = "cp%d%d" % tuple(int(x) for x in sysconfig.get_python_version().split("."))
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, impl, plat)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    tag = _tag()
    wheel_name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        ext = _compile(tmp)
        with open(ext, "rb") as f:
            files["dpumesh/" + os.path.basename(ext)] = f.read()
    for name in sorted(os.listdir(os.path.join(HERE, "dpumesh"))):
        if name.endswith(".py"):
            with open(os.path.join(HERE, "dpumesh", name), "rb") as f:
                files["dpumesh/" + name] = f.read()
    files[dist + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                                 "Summary: asyncio pods for the dpumesh service mesh\n"
                                 "License: BSD-3-Clause\n" % (NAME, VERSION)).encode()
    files[dist + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: dpumesh build_backend\n"
                              "Root-Is-Purelib: false\nTag: %s\n" % tag).encode()
    record = [_record_line(arc, data) for arc, data in files.items()] + [dist + "/RECORD,,"]
    files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files.items():
            z.writestr(arc, data)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []
