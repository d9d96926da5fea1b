"""``python -m trails``: the same as the ``trails`` console script (and ``python -m trails.cli``)."""

from __future__ import annotations

from trails.cli.launch import main

if __name__ == "__main__":
    main()
