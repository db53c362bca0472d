"""pumice.scheduler.default."""
