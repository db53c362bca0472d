"""Pure builders of the objects the KubeRay controllers create: no client, clock or environment.

Mirrors: kuberay ray-operator/controllers/ray/common/.
"""
