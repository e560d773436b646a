"""napkin's public Python API: one function per CLI command, keyword arguments, typed results.

Every function returns a :class:`~napkin.api.result.Result` (``.value`` typed, ``.data`` the
JSON payload in base units, ``.to_table()``/``.to_markdown()``/``.to_json()`` as the CLI prints,
``_repr_html_`` in notebooks, ``.plot(path)`` where the command has ``--plot``). The stable
names are re-exported from :mod:`napkin` (``napkin.__all__``).
"""
