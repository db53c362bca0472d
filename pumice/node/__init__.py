"""pumice.node."""
