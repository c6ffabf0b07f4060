"""``python -m localhand`` runs the command line."""

from localhand.cli import main

raise SystemExit(main())
