#!/usr/bin/env python3
"""Integration tests of `lazyllm serve` with the default model (ctest ModelServer_<suite>).

  run_server_tests.py SUITE --lazyllm build/tools/lazyllm --venv build/server-venv
  SUITE: api (openai package + raw malformed HTTP), cache (multi-turn prefix reuse),
         load (16 clients x 25 requests), browser (headless Chromium on the page)

The venv (openai, selenium from PyPI) is made on first use and cached in the build folder.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suite", choices=["api", "cache", "load", "browser"])
    ap.add_argument("--lazyllm", required=True)
    ap.add_argument("--venv", required=True)
    args = ap.parse_args()
    server_harness.ensure_venv(os.path.abspath(args.venv))
    if args.suite == "api":
        import suite_api as suite
    elif args.suite == "cache":
        import suite_cache as suite
    elif args.suite == "load":
        import suite_load as suite
    else:
        import suite_browser as suite
    checks = server_harness.Checks()
    print(f"== lazyllm serve: {args.suite}", flush=True)
    suite.run(os.path.abspath(args.lazyllm), checks)
    sys.exit(checks.exit_code())


if __name__ == "__main__":
    main()
