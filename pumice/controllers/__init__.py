"""pumice.controllers."""
