"""pumice._util."""
