"""pumice.api."""
