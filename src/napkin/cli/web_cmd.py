"""``napkin web``: serve the local web app (FastAPI + uvicorn, from the ``web`` extra)."""

import errno
import socket
from typing import Annotated

import typer

from napkin.errors import NapkinError, require


def _check_port(host: str, port: int) -> None:
    """Refuse a port another program holds, as one line (uvicorn would log and exit)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except socket.gaierror:
            raise NapkinError(f"host: {host!r} is not an address of this machine") from None
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                raise NapkinError(f"host: {host!r} is not an address of this machine") from None
            raise NapkinError(f"port: cannot listen on {host}:{port} ({e.strerror}); give "
                              "another --port") from None


def web(
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    data: Annotated[str | None, typer.Option(
        "--data", help="Folder whose files requests may name (besides uploads and the shipped "
                       "examples); no other file of this machine is read.")] = None,
    docs: Annotated[str | None, typer.Option(
        "--docs", help="Built documentation site served at /docs/ (default: the checkout's "
                       "site/ after mkdocs build).")] = None,
) -> None:
    """Serve the web app: model × GPU, scenario runner, load sweep, planner, training,
    trajectory viewer."""
    require(1 <= port <= 65535, f"port: must be in [1, 65535], got {port}")
    try:
        import fastapi  # noqa: F401
        import plotly  # noqa: F401
        import uvicorn
    except ImportError as e:
        raise NapkinError(f"web: needs the web extra ({e.name} is missing): "
                          "pip install 'napkin[web]'") from None
    from napkin.web.app import create_app

    app = create_app(docs_dir=docs, data_dir=data)
    _check_port(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(f"napkin web: http://{shown}:{port}/  (Ctrl-C stops it)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
