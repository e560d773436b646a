"""A griffe extension for the API reference: napkin's docstrings use reStructuredText roles
(``:class:`~napkin.api.result.Result```); mkdocstrings renders markdown, so each role becomes
a code span of its target (the last dotted part when written with ``~``)."""

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|obj|exc|const):`(~?)([^`]+)`")


def markdown_roles(text: str) -> str:
    """``:class:`~a.b.C``` → ```C```; ``:mod:`a.b``` → ```a.b```."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`",
                    text)


class RstRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_roles(obj.docstring.value)
