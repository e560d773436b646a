"""``napkin web``: a local web app over :mod:`napkin.api` (FastAPI + uvicorn, Plotly shipped).

:func:`napkin.web.app.create_app` builds the ASGI app: JSON endpoints under ``/api/`` that call
the public API and return its results (``data`` as the CLI's ``--format json``, ``tables`` as
it prints them), and four pages — model × GPU, scenario runner, planner, trajectory viewer —
whose scripts and Plotly bundle are served from the installed packages (no CDN).
"""
