"""MkDocs hooks: the file-format reference page is generated from the pydantic models at build
time (``napkin.report.formats``), so it cannot drift from the code; a ``reference/formats.md``
in ``docs/`` would be replaced."""

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

FORMATS_PAGE = "reference/formats.md"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from napkin.report.formats import formats_markdown

    existing = files.get_file_from_path(FORMATS_PAGE)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, FORMATS_PAGE, content=formats_markdown()))
    return files
