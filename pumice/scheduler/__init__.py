"""pumice.scheduler."""
