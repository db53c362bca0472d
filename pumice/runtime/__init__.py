"""pumice.runtime."""
