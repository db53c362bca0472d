"""pumice.simulate."""
