"""The templates a render runs: gpuconf's shipped ones, with a site's override folder (if any)
in front of them, each value encoded (or, while a skeleton is rendered, a token in its place).

Where no site's file takes part in a template's chain, gpuconf's templates run from their
compiled code on the compiled runtime (compiled_runtime.py), without loading jinja2; jinja2's
immutable sandbox (jinja_environment.py, loaded on first need) renders a site's templates, and
any of gpuconf's the compiled runtime steps aside from, and says where any template failed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuconf.compiler.templating.chain_analysis import DERIVABLE_FILTERS, ChainAnalysis
from gpuconf.compiler.templating.compiled_index import COMPILED, CompiledIndex
from gpuconf.compiler.templating.compiled_runtime import KEPT_FILTERS, CompiledEnvironment, Deferred
from gpuconf.compiler.templating.failures import TemplateFailed, TemplateSource, template_line
from gpuconf.compiler.templating.filters import FILTERS, Encoded, yaml_value
from gpuconf.compiler.templating.shipped import SHIPPED_PREFIX, shipped_folder
from gpuconf.compiler.templating.skeleton_memo import (
    Skeleton,
    SkeletonMemo,
    derivable,
    filled_tokens,
)

if TYPE_CHECKING:
    from jinja2 import Environment, Template

    from gpuconf.compiler.templating.jinja_environment import JinjaTemplates

__all__ = ["COMPILED", "TemplateFailed", "TemplateSource", "Templates", "template_line"]


def _only_encoded(value: Any) -> Encoded:
    """The compiled runtime's `{{ … }}`: what an encoding filter returned is printed; anything
    else jinja2 refuses, at its line."""
    if type(value) is Encoded:
        return value
    raise Deferred("printed without an encoding filter")


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
        self.index = CompiledIndex(self.shipped)
        self._jinja: JinjaTemplates | None = None
        self._compiled: CompiledEnvironment | None = None
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
        self._site_shaped: dict[str, bool] = {}

    @property
    def jinja(self) -> JinjaTemplates:
        """jinja2's environment for these templates, built on first need."""
        if self._jinja is None:
            from gpuconf.compiler.templating.jinja_environment import JinjaTemplates

            self._jinja = JinjaTemplates(self, self._encode)
        return self._jinja

    @property
    def environment(self) -> Environment:
        return self.jinja.environment

    def _encode(self, value: Any) -> Encoded:
        """`| yaml`: the value JSON-encoded, or while tokens are collected, its token."""
        tokens = self._tokens
        if tokens is None:
            return yaml_value(value)
        tokens.append(value)
        return Encoded(f'"{self.token_prefix}{len(tokens) - 1}"')

    def _compiled_environment(self) -> CompiledEnvironment:
        """The compiled runtime, for chains of gpuconf's templates no site's file stands in."""
        if self._compiled is None:
            filters: dict[str, Callable[..., Any]] = {**KEPT_FILTERS, **FILTERS}
            filters.update((name, derivable(FILTERS[name])) for name in DERIVABLE_FILTERS)
            filters["yaml"] = lambda context, value: self._encode(value)
            self._compiled = CompiledEnvironment(
                self.index, filters, _only_encoded, self.overridden
            )
        return self._compiled

    def template(self, name: str) -> Template:
        """The template as jinja2 loads it, once."""
        return self.jinja.template(name)

    def render(self, name: str, values: dict[str, Any]) -> str:
        """The template's output, each value JSON-encoded in place (or tokens collected)."""
        tokens = self._tokens
        try:
            return self._compiled_environment().get_template(name).render(values)
        except Exception:  # jinja2 renders it, and says what failed where
            if tokens is not None:
                del tokens[:]
        return self.jinja.render(name, values)

    def analysis(self, name: str) -> ChainAnalysis:
        """What `name`'s chain does with its values (printed_values.py): from compiled/index.json
        for gpuconf's own chains, read from the templates' trees for any other."""
        found = self._analyses.get(name)
        if found is None:
            found = self.index.analysis(
                name, lambda member: not self.overridden(member) and self.index.holds(member)
            )
            if found is None:
                found = self.jinja.analyse_chain(name)
            self._analyses[name] = found
        return found

    def analyse_chain(self, name: str) -> ChainAnalysis:
        """`analysis` read from the chain's syntax trees."""
        return self.jinja.analyse_chain(name)

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
        key = memo.key(values)
        found = memo.recall(key)
        if found is None:
            found = self._render_skeleton(name, memo.stand_ins(values))
            memo.remember(key, found)
            if not memo.worthwhile:
                self.memos[name] = None
        text, tokens = found
        try:
            return text, filled_tokens(tokens, values)
        except Exception:  # a derived value's filter refuses this artifact's values
            return self._render_skeleton(name, values)

    def _memo(self, name: str) -> SkeletonMemo | None:
        """The memo for `name`: none where its chain prints no value whole."""
        analysis = self.analysis(name)
        if not analysis.printed_only and not analysis.keys_only:
            return None
        return SkeletonMemo(analysis.printed_only, analysis.keys_only)

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
        return self.jinja.chain(name)
