"""pumice.controllers.ray."""
