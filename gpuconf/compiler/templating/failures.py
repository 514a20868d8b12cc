"""A template's failure as a diagnostic: the template file and line it is at."""

from __future__ import annotations

import re
from typing import NamedTuple

from gpuconf.compiler.templating.shipped import SHIPPED_PREFIX

ENCODING_HINT = (
    "print values through an encoding filter: | yaml (YAML and JSON), | toml, | md, | code"
)
NOT_FOUND_HINT = (
    "`gpuconf templates list` names gpuconf's templates; a site's template extends one as "
    f"{SHIPPED_PREFIX}/<name>"
)


class TemplateFailed(Exception):
    """A template could not be loaded or rendered, or its output was refused."""

    def __init__(self, file: str, line: int, message: str, hint: str = "") -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line
        self.message = message
        self.hint = hint


class TemplateSource(NamedTuple):
    """One template file as a reader finds it: its name and where it lies."""

    name: str
    display: str
    """The path shown in diagnostics: templates/<name> for gpuconf's, the override folder's
    path for a site's."""
    text: str


_EXPRESSION = re.compile(r"\{\{.*?\}\}")


def template_line(chain: list[TemplateSource], output_line: str) -> tuple[str, int]:
    """The template line that wrote `output_line`: the first, override first, with the same
    text, else the first whose text matches it around its `{{ … }}` expressions."""
    wanted = output_line.strip()
    for source in chain:
        for number, line in enumerate(source.text.splitlines(), 1):
            if wanted and line.strip() == wanted:
                return source.display, number
    for source in chain:
        for number, line in enumerate(source.text.splitlines(), 1):
            text = line.strip()
            if not text or text.startswith(("{%", "{#")):
                continue
            parts = _EXPRESSION.split(text)
            if not "".join(parts).strip():
                continue  # an expression alone (a macro's lines) says nothing of where
            if re.fullmatch(".*".join(re.escape(part) for part in parts), wanted):
                return source.display, number
    return chain[0].display, 1


def message_of(error: Exception) -> str:
    text = getattr(error, "message", None) or str(error)
    return " ".join(str(text).split())
