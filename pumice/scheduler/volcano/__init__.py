"""pumice.scheduler.volcano."""
