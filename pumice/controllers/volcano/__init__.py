"""pumice.controllers.volcano."""
