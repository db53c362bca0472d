"""pumice: KubeRay + Volcano in Python, running real Ray.

See DESIGN.md in the shared folder for the layering; the packages are:
``_util`` (clock), ``api`` (wire helpers, scheme), ``client`` (lightkube wiring, transports,
informers), ``runtime`` (controllers, manager), ``apiserver``, ``controllers``, ``scheduler``,
``node``, ``simulate``, ``cli`` and ``testing``.
"""

__version__ = "0.1.0"
