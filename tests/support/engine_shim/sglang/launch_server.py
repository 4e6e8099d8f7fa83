"""``python -m sglang.launch_server`` for the tests: runs fake_launch (see ../README.md)."""

import sys

from support.fake_launch import main

if __name__ == "__main__":
    main(sys.argv[1:])
