"""The template environment: gpuconf's shipped templates, a site's overrides in front of them,
compiled once per process and run in Jinja2's immutable sandbox.

With printed_values.py (which reads templates' syntax trees), the only module that imports
jinja2 (import-linter holds it to that).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, MutableMapping
from importlib.machinery import SourceFileLoader
from pathlib import Path
from typing import Any, NamedTuple

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PrefixLoader,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
    nodes,
    pass_context,
)
from jinja2 import __version__ as _jinja2_version
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gpuconf.compiler.templating.filters import FILTERS, BlockRefused, Encoded, yaml_value
from gpuconf.compiler.templating.printed_values import IN_PLACE, ChainAnalysis, analyse_chain
from gpuconf.compiler.templating.shipped import SHIPPED_PREFIX, shipped_folder
from gpuconf.compiler.templating.skeleton_memo import Skeleton, SkeletonMemo, filled_tokens

jinja2_version: str = _jinja2_version
COMPILED = Path(__file__).parent / "compiled"
"""gpuconf's templates compiled ahead of time to Python, with compiled/index.json saying from
what: `python -m gpuconf.compiler.templating.compile_shipped` writes them."""

# Filters that pick from values or change them before an encoding filter; none of them
# encodes (`tojson`, for one, escapes for HTML, not YAML).
_KEPT_FILTERS = (
    "default", "dictsort", "first", "indent", "items", "last", "length", "list", "lower",
    "map", "reject", "rejectattr", "replace", "reverse", "select", "selectattr", "sort",
    "trim", "unique", "upper",
)  # fmt: skip
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


class Unencoded(TemplateError):
    """A template printed a value without an encoding filter."""


def _only_encoded(value: Any) -> Encoded:
    """Every `{{ … }}` passes here: what an encoding filter returned is printed, anything else
    (a value, a string joined to an encoded one, a macro's or block's text) is refused."""
    if type(value) is Encoded:
        return value
    raise Unencoded(f"{value!r} printed without an encoding filter")


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, refusing the one statement whose output no hook sees: `{% filter %}`
    applies a filter (say `replace` with a value) to text and prints the result unchecked."""

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for node in tree.find_all(nodes.FilterBlock):
            raise TemplateSyntaxError(
                "{% filter %} blocks are refused: print values through an encoding filter",
                node.lineno,
                name,
                filename,
            )
        return tree


def compile_settings(environment: Environment) -> str:
    """What, besides a template's text and jinja2's version, its compiled code depends on."""
    settings = {
        "class": f"{type(environment).__module__}.{type(environment).__qualname__}",
        "syntax": [
            environment.block_start_string, environment.block_end_string,
            environment.variable_start_string, environment.variable_end_string,
            environment.comment_start_string, environment.comment_end_string,
            environment.line_statement_prefix, environment.line_comment_prefix,
        ],
        "trim_blocks": environment.trim_blocks,
        "lstrip_blocks": environment.lstrip_blocks,
        "newline_sequence": environment.newline_sequence,
        "keep_trailing_newline": environment.keep_trailing_newline,
        "autoescape": bool(environment.autoescape),
        "finalize": environment.finalize is not None,
        "optimized": environment.optimized,
        "extensions": sorted(environment.extensions),
        "is_async": environment.is_async,
    }  # fmt: skip
    return json.dumps(settings, sort_keys=True)


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class _ShippedLoader(FileSystemLoader):
    """gpuconf's own templates, as Python compiled ahead of time (COMPILED) where that code was
    compiled from this very text, by this jinja2 and with this environment's settings; any
    other (a template changed or added since) is compiled here like a site's. The compiled
    code runs exactly as jinja2's own compile of the text would: the same code, executed in a
    namespace of this environment's; only parsing and code generation are skipped."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self._index: dict[str, Any] | None = None
        self._holds: dict[str, bool] = {}

    @property
    def index(self) -> dict[str, Any]:
        if self._index is None:
            try:
                self._index = json.loads((COMPILED / "index.json").read_text(encoding="utf-8"))
            except FileNotFoundError:
                self._index = {}
        return self._index

    def analysis(
        self, environment: Environment, name: str, overridden: Callable[[str], bool]
    ) -> ChainAnalysis | None:
        """compiled/index.json's analysis of `name`'s chain (printed_values.py), where the
        index holds for every template of it and none is overridden; else None."""
        entry = self.index.get("templates", {}).get(name)
        if entry is None or "chain" not in entry:
            return None
        for member in entry["chain"]:
            if overridden(member) or self._compiled(environment, member) is None:
                return None
        paths = frozenset(tuple(path) for path in entry["printedOnly"])
        return ChainAnalysis(skeleton=entry["skeleton"], printed_only=paths)

    def _compiled(
        self, environment: Environment, name: str, source: str | None = None
    ) -> Path | None:
        """The compiled module of `name`, where the index says it was compiled from this
        text, by this jinja2, with these settings."""
        holds = self._holds.get(name)
        if holds is None:
            index = self.index
            entry = index.get("templates", {}).get(name)
            if source is None and entry is not None:
                source = self.get_source(environment, name)[0]
            holds = self._holds[name] = (
                entry is not None
                and index.get("jinja2") == jinja2_version
                and index.get("settings") == compile_settings(environment)
                and entry["sha256"] == source_digest(source or "")
            )
        if not holds:
            return None
        return COMPILED / str(self.index["templates"][name]["module"])

    def load(
        self,
        environment: Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> Template:
        source, filename, uptodate = self.get_source(environment, name)
        compiled = self._compiled(environment, name, source)
        # Python's own cache (__pycache__) keeps the module's bytecode between runs.
        loader = SourceFileLoader(compiled.stem, str(compiled)) if compiled else None
        code = loader.get_code(loader.name) if loader else None
        if code is None:
            return super().load(environment, name, globals)
        template = environment.template_class.from_code(
            environment, code, {} if globals is None else globals, uptodate
        )
        template.filename = filename  # tracebacks name the template, not the compiled module
        return template


class TemplateSource(NamedTuple):
    """One template file as a reader finds it: its name and where it lies."""

    name: str
    display: str
    """The path shown in diagnostics: templates/<name> for gpuconf's, the override folder's
    path for a site's."""
    text: str


class Templates:
    """gpuconf's templates, with a site's override folder (if any) in front of them."""

    def __init__(self, overrides: Path | None = None, overrides_display: str | None = None) -> None:
        self.shipped = shipped_folder()
        self.overrides = overrides
        self.overrides_display = overrides_display or (overrides.as_posix() if overrides else "")
        # jinja2 names a template's file by normpath, and display() matches that name: a folder
        # given as `clusters/../templates` is named so, though read as given (`..` through a
        # symbolic link is the link target's parent, which normpath would not find).
        self._overrides_named = Path(os.path.normpath(overrides)) if overrides else None
        shipped = self._shipped_loader = _ShippedLoader(self.shipped)
        loaders: list[Any] = [PrefixLoader({SHIPPED_PREFIX: FileSystemLoader(self.shipped)})]
        if overrides is not None:
            loaders.insert(0, FileSystemLoader(overrides))
        loaders.append(shipped)
        environment = _Sandbox(
            loader=ChoiceLoader(loaders),
            undefined=StrictUndefined,
            autoescape=False,  # the output is YAML, TOML or Markdown: filters encode, not HTML
            finalize=_only_encoded,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            auto_reload=False,
        )
        kept = {name: environment.filters[name] for name in _KEPT_FILTERS}
        environment.filters.clear()
        environment.filters.update(kept)
        environment.filters.update(FILTERS)
        environment.filters["yaml"] = self._yaml
        self.environment = environment
        self._globals: dict[str, dict[str, Any]] = {}
        """Each template's globals as one dict: jinja2 would copy them out of their ChainMap
        for every render, and they never change (nothing sets a global after this)."""
        self.token_prefix = f"@gpuconf-value-{os.urandom(6).hex()}:"
        """What `| yaml` prints in place of each value while tokens are collected: no value
        can spell it (values are not in that text at all) nor can a template guess it."""
        self._tokens: list[Any] | None = None
        self.skeletons: dict[str, Any] = {}
        """Skeletons parsed back, by their text (compiler/templating/check.py)."""
        self.memos: dict[str, SkeletonMemo | None] = {}
        """Each template's skeletons by the values it reads (skeleton_memo.py); None where
        it prints no value whole, or its artifacts hardly share a skeleton."""
        self._analyses: dict[str, ChainAnalysis] = {}
        self._trees: dict[str, nodes.Template | None] = {}
        self._acyclic: set[str] = set()
        """Templates whose extends, includes and imports were followed and lead back to none."""
        self._site_shaped: dict[str, bool] = {}

    # pass_context: jinja2 folds a filter of a constant (`{{ "x" | yaml }}`) when it compiles a
    # template, which may happen while a skeleton's tokens are collected (a site's template,
    # loaded by the render that first needs it): a folded token would be baked into its code.
    @pass_context
    def _yaml(self, context: Any, value: Any) -> Encoded:
        tokens = self._tokens
        if tokens is None:
            return yaml_value(value)
        tokens.append(value)
        return Encoded(f'"{self.token_prefix}{len(tokens) - 1}"')

    def template(self, name: str) -> Template:
        """The template, loaded once: jinja2's cache keeps it (auto_reload is off)."""
        if self.overrides is not None and name not in self._acyclic:
            self._refuse_a_cycle(name)
            self._acyclic.add(name)
        try:
            return self.environment.get_template(name)
        except TemplateSyntaxError as error:
            raise self._failure(error, name) from None
        except TemplateNotFound as error:
            raise TemplateFailed(
                self.display(name), 1, f"template {error.name!r} not found", NOT_FOUND_HINT
            ) from None

    def render(self, name: str, values: dict[str, Any]) -> str:
        """The template's output, each value JSON-encoded in place."""
        template = self.template(name)
        names = self._globals.get(name)
        if names is None:
            names = self._globals[name] = dict(template.globals)
        # Template.render, less copying the globals: the same context (globals, then values).
        context = template.new_context({**names, **values}, shared=True)
        try:
            try:
                return self.environment.concat(template.root_render_func(context))
            except Exception:
                self.environment.handle_exception()
        except (
            TemplateError, ArithmeticError, LookupError, TypeError, ValueError, RecursionError
        ) as error:  # fmt: skip
            raise self._failure(error, name) from None

    def analysis(self, name: str) -> ChainAnalysis:
        """What `name`'s chain does with its values (printed_values.py): from compiled/index.json
        for gpuconf's own chains, read from the templates' trees for any other."""
        found = self._analyses.get(name)
        if found is None:
            shipped = self._shipped_loader.analysis(self.environment, name, self.overridden)
            found = self._analyses[name] = shipped or self.analyse_chain(name)
        return found

    def analyse_chain(self, name: str) -> ChainAnalysis:
        """`analysis` read from the chain's syntax trees."""
        try:
            trees = [self._tree(source.name, source.text) for source in self.chain(name)]
        except TemplateError:
            return IN_PLACE  # rendering reports it, at its line
        if any(tree is None for tree in trees):
            return IN_PLACE
        return analyse_chain(tree for tree in trees if tree is not None)

    def render_skeleton(self, name: str, values: dict[str, Any]) -> Skeleton:
        """The template's output with a token where each `| yaml` value would stand, and the
        values in token order: parsing it back reads the template's own text, not the values
        (only for a chain whose `analysis` says it may be read so). An artifact whose values
        differ from an earlier one's only where the template prints them whole gets that
        skeleton again, without running the template."""
        if name not in self.memos:
            self.memos[name] = self._memo(name)
        memo = self.memos[name]
        if memo is None:
            return self._render_skeleton(name, values)
        reduced = memo.stand_ins(values)
        key = memo.key(reduced)
        found = memo.recall(key)
        if found is None:
            found = self._render_skeleton(name, reduced)
            memo.remember(key, found)
            if not memo.worthwhile:
                self.memos[name] = None
        text, tokens = found
        return text, filled_tokens(tokens, values)

    def _memo(self, name: str) -> SkeletonMemo | None:
        """The memo for `name`: none where its chain prints no value whole."""
        paths = self.analysis(name).printed_only
        return SkeletonMemo(paths) if paths else None

    def _render_skeleton(self, name: str, values: dict[str, Any]) -> Skeleton:
        tokens: list[Any] = []
        self._tokens = tokens
        try:
            return self.render(name, values), tokens
        finally:
            self._tokens = None

    def display(self, file_or_name: str) -> str:
        """A template's path as diagnostics show it, from its file name or template name."""
        path = Path(file_or_name)
        if (
            self._overrides_named is not None
            and path.is_absolute()
            and path.is_relative_to(self._overrides_named)
        ):
            return f"{self.overrides_display}/{path.relative_to(self._overrides_named).as_posix()}"
        if path.is_absolute() and path.is_relative_to(self.shipped):
            return f"templates/{path.relative_to(self.shipped).as_posix()}"
        name = file_or_name.removeprefix(f"{SHIPPED_PREFIX}/")
        if not file_or_name.startswith(SHIPPED_PREFIX) and self.overridden(name):
            return f"{self.overrides_display}/{name}"
        return f"templates/{name}"

    def overridden(self, name: str) -> bool:
        return self.overrides is not None and (self.overrides / name).is_file()

    def site_shaped(self, name: str) -> bool:
        """Whether a site's file takes part in template `name`: is in its extends chain.
        Templates of built-in kinds include and import nothing, only extend; gpuconf's includes
        stand where a value does (an Argo CD Application's spec), so a site's file reached
        through one, or through a site's include, writes no key beside that value."""
        if self.overrides is None:
            return False
        found = self._site_shaped.get(name)
        if found is None:
            found = self._site_shaped[name] = any(
                self.overridden(source.name) for source in self.chain(name)
            )
        return found

    def chain(self, name: str) -> list[TemplateSource]:
        """The files that make `name`: the override (if any) first, then what it extends."""
        sources = []
        seen = set()
        current: str | None = name
        while current is not None and current not in seen:
            seen.add(current)
            try:
                source, filename, _ = self.environment.loader.get_source(  # type: ignore[union-attr]
                    self.environment, current
                )
            except TemplateNotFound:
                break  # no file of the chain: loading the template says so, at its line
            sources.append(TemplateSource(current, self.display(filename or current), source))
            tree = self._tree(current, source)
            current = None if tree is None else _extended(tree)
        return sources

    def _refuse_a_cycle(self, name: str) -> None:
        """A site's template can extend, include or import a name its own folder answers for
        (its own, say, for gpuconf's of the same name): jinja2 would follow that round until
        Python's recursion limit. TemplateFailed at the statement that closes such a circle."""
        path: list[str] = []

        def follow(current: str) -> None:
            path.append(current)
            try:
                source, filename, _ = self.environment.loader.get_source(  # type: ignore[union-attr]
                    self.environment, current
                )
            except TemplateNotFound:
                return  # rendering reports it, at the statement naming it
            tree = self._tree(current, source)
            for target, line in [] if tree is None else _referenced(tree):
                if target in path:
                    circle = " → ".join([*path[path.index(target) :], target])
                    hint = (
                        f"to build on gpuconf's template of that name, extend "
                        f"'{SHIPPED_PREFIX}/{target}'"
                        if (self.shipped / target).is_file()
                        else ""
                    )
                    raise TemplateFailed(
                        self.display(filename or current),
                        line,
                        f"template {target!r} extends or includes itself: {circle}",
                        hint,
                    )
                follow(target)
            path.pop()

        follow(name)

    def _tree(self, name: str, source: str) -> nodes.Template | None:
        """`source` (template `name`'s text) parsed, once; None where it does not parse."""
        if name not in self._trees:
            try:
                self._trees[name] = self.environment.parse(source)
            except TemplateSyntaxError:
                self._trees[name] = None
        return self._trees[name]

    def _failure(self, error: Exception, name: str) -> TemplateFailed:
        if isinstance(error, TemplateSyntaxError):
            file = self.display(error.filename or error.name or name)
            return TemplateFailed(file, error.lineno, f"template syntax: {error.message}")
        hint = ENCODING_HINT if isinstance(error, Unencoded) else ""
        message = _message(error)
        if isinstance(error, TemplateNotFound):
            message, hint = f"template {error.name!r} not found", NOT_FOUND_HINT
        if isinstance(error, RecursionError):
            message = "the template never finishes: a macro or block calls itself without end"
        if isinstance(error, BlockRefused):
            file, line = template_line(self.chain(name), error.line)
            return TemplateFailed(file, line, _message(error), error.hint)
        import traceback  # only for a failure

        for frame in reversed(traceback.extract_tb(error.__traceback__)):
            if frame.filename.endswith(".j2"):
                return TemplateFailed(
                    self.display(frame.filename), frame.lineno or 1, message, hint
                )
        return TemplateFailed(self.display(name), 1, message, hint)


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


def _message(error: Exception) -> str:
    text = getattr(error, "message", None) or str(error)
    return " ".join(str(text).split())


def _referenced(tree: nodes.Template) -> list[tuple[str, int]]:
    """The templates `tree` extends, includes or imports by a plain name, with the line of each
    statement."""
    statements = tree.find_all((nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport))
    found = []
    for node in statements:
        named = getattr(node, "template", None)  # each of these four names its template so
        if isinstance(named, nodes.Const) and isinstance(named.value, str):
            found.append((named.value, node.lineno))
    return found


def _extended(tree: nodes.Template) -> str | None:
    """The template `tree` extends, where it names one plainly."""
    for node in tree.find_all(nodes.Extends):
        if isinstance(node.template, nodes.Const) and isinstance(node.template.value, str):
            return node.template.value
    return None
