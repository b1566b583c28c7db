"""``python3 -m dlcp``: which dlcp this interpreter loads, from where, and with which parts.

    python3 -m dlcp --version     # the version only
    python3 -m dlcp               # version, location, the modules, torch and its backend
"""

import argparse
import os
import sys


def describe() -> str:
    import dlcp

    lines = [f"dlcp {dlcp.__version__}", f"package: {os.path.dirname(dlcp.__file__)}"]
    lines.append(f"core module: {dlcp._core.__file__}")
    try:
        import torch

        lines.append(f"torch: {torch.__version__} (the dlcp backend and hook run on any torch "
                     "from 1.13)")
    except ImportError as error:
        lines.append(f"torch: unavailable ({error}); dlcp.torch needs it, the rest does not")
    lines.append(f"interpreter: {sys.executable}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m dlcp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)
    if args.version:
        import dlcp

        print(f"dlcp {dlcp.__version__}")
        return 0
    print(describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
