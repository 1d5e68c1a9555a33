"""``python -m langchain_hindsight.cli`` runs the ``hindsight`` command."""

from langchain_hindsight.cli.main import main

raise SystemExit(main())
