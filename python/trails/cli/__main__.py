"""``python -m trails.cli``: the same as the ``trails`` console script."""

from __future__ import annotations

from trails.cli.launch import main

if __name__ == "__main__":
    main()
