"""pumice.controllers.kube."""
