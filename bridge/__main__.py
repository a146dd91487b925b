"""`python -m bridge`: the avatar-bridge command line."""

from bridge.cli.main import main

raise SystemExit(main())
