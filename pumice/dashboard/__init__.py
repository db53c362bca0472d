"""pumice's web UI: Queues, PodGroups, Volcano Jobs, RayClusters, RayJobs, RayServices, Nodes
and Pods, live from the API's watches, with the ``pumice explain`` answer for anything pending.

Served by ``pumice up`` and by ``pumice dashboard --kubeconfig K``. Server-side Jinja2 templates,
htmx (+ its SSE extension) for live regions, uPlot for charts; every asset is vendored under
``static/vendor`` with its licence, so it works offline.

Entry point: :func:`pumice.dashboard.server.run_dashboard`.
"""
