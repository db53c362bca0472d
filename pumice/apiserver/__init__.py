"""pumice.apiserver."""
