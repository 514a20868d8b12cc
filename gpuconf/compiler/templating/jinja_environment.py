"""Jinja2's side of the templates: the immutable sandbox that renders a site's templates (and
any of gpuconf's the compiled runtime steps aside from), loads them, follows their chains and
turns a failure into its template file and line.

With printed_values.py (which reads templates' syntax trees), the only module that imports
jinja2 (import-linter holds it to that); engine.py loads it where a render needs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

from gpuconf.compiler.templating.chain_analysis import DERIVABLE_FILTERS, IN_PLACE, ChainAnalysis
from gpuconf.compiler.templating.compiled_index import CompiledIndex
from gpuconf.compiler.templating.failures import (
    ENCODING_HINT,
    NOT_FOUND_HINT,
    TemplateFailed,
    TemplateSource,
    message_of,
    template_line,
)
from gpuconf.compiler.templating.filters import FILTERS, BlockRefused, Encoded
from gpuconf.compiler.templating.printed_values import analyse_chain
from gpuconf.compiler.templating.shipped import SHIPPED_PREFIX
from gpuconf.compiler.templating.skeleton_memo import derivable

if TYPE_CHECKING:
    from gpuconf.compiler.templating.engine import Templates

jinja2_version: str = _jinja2_version

# Filters that pick from values or change them before an encoding filter; none of them
# encodes (`tojson`, for one, escapes for HTML, not YAML).
_KEPT_FILTERS = (
    "default", "dictsort", "first", "indent", "items", "last", "length", "list", "lower",
    "map", "reject", "rejectattr", "replace", "reverse", "select", "selectattr", "sort",
    "trim", "unique", "upper",
)  # fmt: skip


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


class _ShippedLoader(FileSystemLoader):
    """gpuconf's own templates, as Python compiled ahead of time (compiled/) where that code was
    compiled from this very text, by this jinja2 and with this environment's settings; any
    other (a template changed or added since) is compiled here like a site's. The compiled
    code runs exactly as jinja2's own compile of the text would: the same code, executed in a
    namespace of this environment's; only parsing and code generation are skipped."""

    def __init__(self, folder: Path, index: CompiledIndex) -> None:
        super().__init__(folder)
        self.compiled = index
        self._fits: bool | None = None

    def _fits_this_jinja2(self, environment: Environment) -> bool:
        if self._fits is None:
            index = self.compiled.index
            self._fits = index.get("jinja2") == jinja2_version and index.get(
                "settings"
            ) == compile_settings(environment)
        return self._fits

    def load(
        self,
        environment: Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> Template:
        source, filename, uptodate = self.get_source(environment, name)
        if not (self._fits_this_jinja2(environment) and self.compiled.holds(name, source)):
            return super().load(environment, name, globals)
        template = environment.template_class.from_code(
            environment, self.compiled.code(name), {} if globals is None else globals, uptodate
        )
        template.filename = filename  # tracebacks name the template, not the compiled module
        return template


class JinjaTemplates:
    """jinja2's environment for `owner` (engine.Templates): its override folder in front of
    gpuconf's templates, compiled once per process and run in the immutable sandbox."""

    def __init__(self, owner: Templates, encode: Callable[[Any], Encoded]) -> None:
        self.owner = owner
        overrides = owner.overrides
        loaders: list[Any] = [PrefixLoader({SHIPPED_PREFIX: FileSystemLoader(owner.shipped)})]
        if overrides is not None:
            loaders.insert(0, FileSystemLoader(overrides))
        loaders.append(_ShippedLoader(owner.shipped, owner.index))
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
        environment.filters.update((name, derivable(FILTERS[name])) for name in DERIVABLE_FILTERS)
        # pass_context: jinja2 folds a filter of a constant (`{{ "x" | yaml }}`) when it
        # compiles a template, which may happen while a skeleton's tokens are collected (a
        # site's template, loaded by the render that first needs it): a folded token would be
        # baked into its code.
        environment.filters["yaml"] = pass_context(lambda context, value: encode(value))
        self.environment = environment
        self._globals: dict[str, dict[str, Any]] = {}
        """Each template's globals as one dict: jinja2 would copy them out of their ChainMap
        for every render, and they never change (nothing sets a global after this)."""
        self._trees: dict[str, nodes.Template | None] = {}
        self._acyclic: set[str] = set()
        """Templates whose extends, includes and imports were followed and lead back to none."""

    def template(self, name: str) -> Template:
        """The template, loaded once: jinja2's cache keeps it (auto_reload is off)."""
        if self.owner.overrides is not None and name not in self._acyclic:
            self._refuse_a_cycle(name)
            self._acyclic.add(name)
        try:
            return self.environment.get_template(name)
        except TemplateSyntaxError as error:
            raise self._failure(error, name) from None
        except TemplateNotFound as error:
            raise TemplateFailed(
                self.owner.display(name), 1, f"template {error.name!r} not found", NOT_FOUND_HINT
            ) from None

    def render(self, name: str, values: dict[str, Any]) -> str:
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

    def analyse_chain(self, name: str) -> ChainAnalysis:
        """What `name`'s chain does with its values, read from the chain's syntax trees."""
        try:
            trees = [self._tree(source.name, source.text) for source in self.chain(name)]
        except TemplateError:
            return IN_PLACE  # rendering reports it, at its line
        if any(tree is None for tree in trees):
            return IN_PLACE
        return analyse_chain(tree for tree in trees if tree is not None)

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
            sources.append(TemplateSource(current, self.owner.display(filename or current), source))
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
                        if (self.owner.shipped / target).is_file()
                        else ""
                    )
                    raise TemplateFailed(
                        self.owner.display(filename or current),
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
        display = self.owner.display
        if isinstance(error, TemplateSyntaxError):
            file = display(error.filename or error.name or name)
            return TemplateFailed(file, error.lineno, f"template syntax: {error.message}")
        hint = ENCODING_HINT if isinstance(error, Unencoded) else ""
        message = message_of(error)
        if isinstance(error, TemplateNotFound):
            message, hint = f"template {error.name!r} not found", NOT_FOUND_HINT
        if isinstance(error, RecursionError):
            message = "the template never finishes: a macro or block calls itself without end"
        if isinstance(error, BlockRefused):
            file, line = template_line(self.chain(name), error.line)
            return TemplateFailed(file, line, message_of(error), error.hint)
        import traceback

        for frame in reversed(traceback.extract_tb(error.__traceback__)):
            if frame.filename.endswith(".j2"):
                return TemplateFailed(display(frame.filename), frame.lineno or 1, message, hint)
        return TemplateFailed(display(name), 1, message, hint)


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
