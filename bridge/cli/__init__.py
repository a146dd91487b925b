"""The `avatar-bridge` command line: one module per subcommand, wired together in main.py."""
