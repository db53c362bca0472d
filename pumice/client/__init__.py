"""pumice.client."""
