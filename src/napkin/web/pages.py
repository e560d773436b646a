"""The pages of ``napkin web``: each page's HTML around its fragment (the shared head and
header), the static files and Plotly's bundle they load, and the documentation site."""

import gzip
import html
from functools import cache
from importlib import resources
from pathlib import Path

from fastapi.responses import HTMLResponse

from napkin.errors import NapkinError

PAGES = {"model": "model.html", "scenario": "scenario.html", "sweep": "sweep.html",
         "plan": "plan.html", "train": "train.html", "trajectory": "trajectory.html"}
"""Path → static HTML file of the pages (``/`` is the index)."""
NAV = {"model": "model × GPU", "scenario": "scenario runner", "sweep": "load sweep",
       "plan": "planner", "train": "training", "trajectory": "trajectory viewer"}
"""The header's links, in order."""
DOCS = {"model": "inference", "scenario": "serving", "sweep": "serving", "plan": "planning",
        "train": "training", "trajectory": "agents"}
"""Each page's documentation page (``/docs/<page>/``, the built site's URL of docs/<page>.md)."""


def page_html(static: Path, file: str, active: str | None) -> str:
    """A whole page from its fragment (a ``<title>`` line, then the ``<main>``): the shared
    head (style sheet; Plotly, ``common.js`` and the page's own ``<stem>.js`` when it has one)
    and the shared header (brand and the four links, ``active`` marked)."""
    title, main = (static / file).read_text(encoding="utf-8").split("\n", 1)
    script = Path(file).with_suffix(".js").name
    scripts = ("" if not (static / script).exists() else
               '<script src="/vendor/plotly.min.js"></script>\n'
               '<script src="/static/common.js"></script>\n'
               f'<script src="/static/{script}" defer></script>\n')
    links = []
    for route, label in NAV.items():
        mark = ' class="active"' if route == active else ""
        links.append(f'\n    <a href="/{route}"{mark}>{label}</a>')
    if active in DOCS:
        links.append(f'\n    <a href="/docs/{DOCS[active]}/" class="docs" '
                     f'data-docs="{DOCS[active]}">docs</a>')
    header = ('<header>\n  <span class="brand">napkin</span>\n  <nav>' + "".join(links)
              + "\n  </nav>\n</header>")
    return ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'{title}\n<link rel="icon" href="data:,">\n'
            f'<link rel="stylesheet" href="/static/style.css">\n{scripts}</head>\n<body>\n'
            f'{header}\n{main}</body>\n</html>\n')

def static_dir() -> Path:
    """The folder of the pages, scripts and styles (shipped in the package)."""
    return Path(str(resources.files("napkin.web").joinpath("static")))


def plotly_bundle() -> Path:
    """``plotly.min.js`` of the installed ``plotly`` package (its package data)."""
    try:
        path = Path(str(resources.files("plotly").joinpath("package_data", "plotly.min.js")))
    except ModuleNotFoundError:
        raise NapkinError("web: needs plotly; pip install 'napkin[web]'") from None
    if not path.is_file():
        raise NapkinError(f"web: plotly's bundle is missing ({path}); reinstall plotly")
    return path


@cache
def gzipped(path: Path) -> bytes:
    """A static file gzip-compressed once per process (Plotly's 4.8 MB bundle: about 1.4 MB)."""
    return gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)


def docs_site(given: str | Path | None = None) -> Path | None:
    """The built documentation site (``mkdocs build`` writes ``site/`` in the repository):
    ``given``, else the checkout's ``site/`` when napkin runs from one; None: not built."""
    if given is not None:
        path = Path(given)
        if not (path / "index.html").is_file():
            raise NapkinError(f"docs: {path} holds no built site (index.html); run "
                              "`mkdocs build` in the repository")
        return path
    site = Path(__file__).resolve().parents[3] / "site"
    return site if (site / "index.html").is_file() else None


def docs_missing_page(page: str) -> HTMLResponse:
    """What ``/docs/<page>`` answers when the site is not built: where the page's source is."""
    name = page.strip("/").split("/")[0] or "index"
    e = html.escape
    return HTMLResponse(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>napkin docs · {e(name)}</title>"
        "<link rel=\"stylesheet\" href=\"/static/style.css\"></head><body><main>"
        f"<h1>docs/{e(name)}.md</h1><p>The documentation site is not built on this machine. "
        f"The page is <code>docs/{e(name)}.md</code> in napkin's repository; "
        "<code>pip install '.[docs]' &amp;&amp; mkdocs build</code> there writes "
        "<code>site/</code>, which <code>napkin web</code> serves at <code>/docs/</code> "
        "(or <code>napkin web --docs DIR</code>).</p></main></body></html>")
