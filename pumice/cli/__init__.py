"""pumice.cli."""
