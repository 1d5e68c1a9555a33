"""``python -m hindsight_demo``: the offline two-run demo (same as ``hindsight-demo``)."""

from hindsight_demo.cli import main

raise SystemExit(main())
