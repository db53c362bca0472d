"""pumice.testing."""
