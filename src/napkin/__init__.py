"""napkin: napkin math for LLM systems.

Every figure napkin prints is computed from a model spec (a Hugging Face ``config.json``), an
accelerator spec (with sources) and assumptions that are inputs with printed defaults.
Layers, top to bottom: ``units`` → ``specs`` → ``accounting`` → ``timing`` → domains
(``inference``) → ``report`` → ``cli``.
"""

__version__ = "0.1.0"


def __getattr__(name: str):  # the simulator loads on first use, not with the CLI
    if name == "sweep":
        from napkin.serving.sweep import sweep_file

        return sweep_file
    if name == "plan":
        from napkin.planning.search import plan_file

        return plan_file
    raise AttributeError(f"module 'napkin' has no attribute {name!r}")
