#!/usr/bin/env python3
"""The installed package (cmake/install.cmake) as a program outside the tree uses it.

Installs the build into a fresh prefix, checks what lands there, builds examples/simple against
it with find_package(lazyllm) and once more by hand with `pkg-config --cflags --libs lazyllm`,
and runs both on a tiny model: their answers must agree, the full one must be the installed
CLI's `run` answer to the byte, and its lazy answer (a short prompt, under the
safe preset's context floor) the same. The installed CLI must find its fetch script in
share/lazyllm/ (a stand-in python3 on PATH records the call, so nothing is downloaded).
Run by ctest (Install.PackageBuildsAProgram); exit 0 when every check holds.
"""
import argparse
import os
import shutil
import subprocess
import sys


def run(cmd, **kw):
    """Runs cmd; on failure prints its output and exits 1."""
    p = subprocess.run(cmd, capture_output=True, text=False, **kw)
    if p.returncode != 0:
        sys.stderr.write(f"FAILED ({p.returncode}): {' '.join(cmd)}\n")
        sys.stderr.write(p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        sys.exit(1)
    return p


def check(cond, what):
    if not cond:
        sys.stderr.write(f"FAILED: {what}\n")
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True, help="the configured and built build folder")
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    ap.add_argument("--model", required=True, help="a small GGUF")
    ap.add_argument("--cxx", default="", help="the C++ compiler the build used")
    for d, default in (("libdir", "lib"), ("includedir", "include"), ("bindir", "bin"),
                       ("datadir", "share")):
        ap.add_argument(f"--{d}", default=default, help=f"the build's CMAKE_INSTALL_{d.upper()}")
    a = ap.parse_args()

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    prefix = os.path.join(a.work, "prefix")
    run(["cmake", "--install", a.build, "--prefix", prefix])

    lib = os.path.join(prefix, a.libdir)
    for f in (f"{a.includedir}/lazyllm/engine.h", f"{a.bindir}/lazyllm",
              f"{a.datadir}/lazyllm/fetch_model.py"):
        check(os.path.isfile(os.path.join(prefix, f)), f"{f} not installed")
    for f in ("cmake/lazyllm/lazyllmConfig.cmake", "cmake/lazyllm/lazyllmConfigVersion.cmake",
              "pkgconfig/lazyllm.pc",
              "lazyllm/liblazyllm_runtime.a", "lazyllm/liblazyllm_kernels.a"):
        check(os.path.isfile(os.path.join(lib, f)), f"{a.libdir}/{f} not installed")
    # Consumers get no compile flags of ours (the tree's version macro, -fopenmp: a program's
    # own pragmas must not change meaning with the build method); OpenMP is linked only.
    with open(os.path.join(lib, "cmake/lazyllm/lazyllmTargets.cmake")) as f:
        targets = f.read()
    for leak in ("INTERFACE_COMPILE_DEFINITIONS", "INTERFACE_COMPILE_OPTIONS", "LAZYLLM_VERSION"):
        check(leak not in targets, f"the exported targets carry {leak}")
    check("$<LINK_ONLY:OpenMP::OpenMP_CXX>" in targets, "OpenMP is not link-only")
    # The package's headers are the public ones alone: nothing of src/ goes out.
    check(sorted(os.listdir(os.path.join(prefix, a.includedir))) == ["lazyllm"],
          f"the prefix's {a.includedir}/ holds more than lazyllm/")

    # A program outside the tree, configured against the prefix alone.
    example = os.path.join(a.work, "simple")
    configure = ["cmake", "-S", os.path.join(a.source, "examples", "simple"), "-B", example,
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"]
    if a.cxx:
        configure.append(f"-DCMAKE_CXX_COMPILER={a.cxx}")
    run(configure)
    run(["cmake", "--build", example, "-j2"])
    program = os.path.join(example, "lazyllm-simple")
    prompt = "The quick brown fox jumps over the lazy dog, and then"
    out = run([program, a.model, prompt, "8"]).stdout
    check(out.startswith(b"[full]\n") and out.count(b"\n[lazy]\n") == 1,
          f"unexpected output {out!r}")
    full, lazy = out[len(b"[full]\n"):].split(b"[lazy]\n")  # each answer ends with "\n"
    check(lazy == full, f"lazy answered {lazy!r}, full {full!r}")

    # The same program built by hand with pkg-config's flags.
    pc_env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "lazyllm"], env=pc_env).stdout.split()
    by_hand = os.path.join(a.work, "simple-pkg-config")
    source = os.path.join(a.source, "examples", "simple", "main.cpp")
    run([a.cxx or "c++", "-std=c++20", "-O1", source, "-o", by_hand] + [f.decode() for f in flags])
    check(run([by_hand, a.model, prompt, "8"]).stdout == out,
          "the pkg-config build answered otherwise")

    cli = os.path.join(prefix, a.bindir, "lazyllm")
    answer = run([cli, "run", "-m", a.model, "-p", prompt, "-n", "8", "-t", "2",
                  "--no-parse-special"]).stdout
    check(answer == full, f"the installed CLI answered {answer!r}, the program {full!r}")
    usage = subprocess.run([program, a.model], capture_output=True)
    check(usage.returncode == 2 and b"usage:" in usage.stderr, "no usage error without a prompt")
    missing = subprocess.run([program, os.path.join(a.work, "nothing.gguf"), "hi"],
                             capture_output=True)
    check(missing.returncode == 1 and b"nothing.gguf" in missing.stderr,
          f"a missing model: {missing.returncode} {missing.stderr!r}")

    # The installed CLI fetches the default model with PREFIX/share/lazyllm/fetch_model.py.
    fake_bin = os.path.join(a.work, "fake-bin")
    os.makedirs(fake_bin)
    record = os.path.join(a.work, "fetch-call.txt")
    with open(os.path.join(fake_bin, "python3"), "w") as f:
        f.write(f'#!/bin/sh\necho "$@" > "{record}"\nexit 1\n')
    os.chmod(os.path.join(fake_bin, "python3"), 0o755)
    env = dict(os.environ, PATH=fake_bin + os.pathsep + os.environ.get("PATH", ""),
               LAZYLLM_MODEL_DIR=os.path.join(a.work, "no-models"))
    env.pop("LAZYLLM_FETCH_SCRIPT", None)
    fetch = subprocess.run([cli, "info"], capture_output=True, env=env)
    check(fetch.returncode == 1 and b"could not fetch" in fetch.stderr,
          f"info without the model: {fetch.returncode} {fetch.stderr!r}")
    with open(record) as f:
        called = f.read().split()
    check(called[:1] == [os.path.join(prefix, a.datadir, "lazyllm", "fetch_model.py")],
          f"the fetch ran {called}")
    print("installed package: headers, libraries, CMake config, CLI and fetch script; "
          "examples/simple built against it answers as the CLI")


if __name__ == "__main__":
    main()
