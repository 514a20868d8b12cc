"""gpuconf's own templates run from their compiled code (compiled/) without loading jinja2.

The code in compiled/ is jinja2's own, generated ahead of time from templates/; it calls a
small runtime (contexts, blocks, loops, the sandbox's attribute and item lookup, undefined
values). This module is that runtime for what gpuconf's templates use, so a render imports
jinja2 (a tenth of its start-up) only where a site's file stands in a template's chain, and
does not pay jinja2's sandbox checks on every lookup.

It is exact or it steps aside: each operation either does what jinja2's immutable sandbox with
StrictUndefined does (jinja2/runtime.py, jinja2/sandbox.py, jinja2/filters.py of 3.1) or
raises `Deferred`, and so does anything it does not know (a filter or global it lacks, a call
other than a block's, an attribute that is a method, any use of an undefined value). The caller
then renders the template with jinja2 itself, which gives the output or the located failure.
What gpuconf's templates do not use steps aside so, costing only time: jinja2's globals
(`range`, `namespace`, …), a top-level `{% set %}`, `super()`, macros and calls, methods,
filters other than the encoding ones and those in KEPT_FILTERS, printing a runtime object.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from gpuconf.compiler.templating.compiled_index import CompiledIndex


class Deferred(Exception):
    """This runtime does not do what the template asks: jinja2 renders it instead."""


# The runtime the compiled code calls, by the names jinja2.runtime gives them.


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "missing"


missing: Any = _Missing()


class Undefined:
    """StrictUndefined: any use but an `is defined` test or the `default` filter fails."""

    __slots__ = ("_name",)

    def __init__(
        self, hint: str | None = None, obj: Any = missing, name: str | None = None, exc: Any = None
    ) -> None:
        self._name = name

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise Deferred(f"{self._name!r} is undefined")

    __str__ = __iter__ = __len__ = __bool__ = __eq__ = __ne__ = __hash__ = _fail
    __contains__ = __getitem__ = __call__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __mul__ = __rmul__ = __int__ = __float__ = __neg__ = __pos__ = _fail
    __repr__ = __format__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise Deferred(f"{self._name!r} is undefined")


def identity(value: Any) -> Any:
    return value


def internalcode(function: Any) -> Any:
    return function


def str_join(seq: Iterable[Any]) -> str:
    return "".join(map(str, seq))


def _not_here(*args: Any, **kwargs: Any) -> Any:
    raise Deferred("a construct gpuconf's templates do not use")


class TemplateRuntimeError(Exception):
    """A filter or test the compiled code names is not one this runtime has."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        raise Deferred(message)


class TemplateNotFound(Exception):
    pass


class _Refused:
    """Stands for a name of jinja2.runtime that gpuconf's templates' code never calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise Deferred("a construct gpuconf's templates do not use")


Macro = Namespace = Markup = _Refused
escape = markup_join = _not_here


class EvalContext:
    __slots__ = ("autoescape", "volatile")

    def __init__(self) -> None:
        self.autoescape = False
        self.volatile = False


_EVAL_CONTEXT = EvalContext()


# jinja2.defaults.DEFAULT_NAMESPACE: names jinja2 resolves where the values have none.
_JINJA2_GLOBALS = frozenset({"range", "dict", "lipsum", "cycler", "joiner", "namespace"})


class Context:
    """jinja2.runtime.Context, less what gpuconf's templates' code does not use."""

    __slots__ = ("blocks", "environment", "eval_ctx", "name", "parent", "vars")

    def __init__(
        self,
        environment: CompiledEnvironment,
        parent: dict[str, Any],
        name: str,
        blocks: Mapping[str, Callable[..., Any]],
    ) -> None:
        self.environment = environment
        self.parent = parent
        self.vars: dict[str, Any] = {}
        self.name = name
        self.blocks = {key: [block] for key, block in blocks.items()}
        self.eval_ctx = _EVAL_CONTEXT

    def resolve_or_missing(self, key: str) -> Any:
        if key in self.vars:
            return self.vars[key]
        found = self.parent.get(key, missing)
        if found is missing and key in _JINJA2_GLOBALS:
            raise Deferred(f"jinja2's global {key}")
        return found

    @property
    def exported_vars(self) -> set[str]:
        raise Deferred("a top-level {% set %} or macro")

    def get_all(self) -> dict[str, Any]:
        if not self.vars:
            return self.parent
        return {**self.parent, **self.vars}

    def derived(self, locals: dict[str, Any] | None = None) -> Context:
        context = _new_context(self.environment, self.name, {}, self.get_all(), True, locals)
        context.blocks.update((key, list(blocks)) for key, blocks in self.blocks.items())
        return context


def _new_context(
    environment: CompiledEnvironment,
    name: str,
    blocks: Mapping[str, Callable[..., Any]],
    variables: dict[str, Any],
    shared: bool,
    locals: dict[str, Any] | None,
) -> Context:
    parent = variables if shared else dict(variables)
    if locals:
        if shared:
            parent = dict(parent)
        for key, value in locals.items():
            if value is not missing:
                parent[key] = value
    return Context(environment, parent, name, blocks)


class _Unprintable:
    """jinja2's runtime objects print as jinja2 writes them (`<LoopContext 1/3>`): printing
    ours is left to jinja2."""

    __slots__ = ()

    def __repr__(self) -> str:
        raise Deferred(f"printing a {type(self).__name__}")

    __str__ = __format__ = __repr__  # type: ignore[assignment]


class BlockReference(_Unprintable):
    __slots__ = ("_context", "_depth", "_name", "_stack")

    def __init__(
        self, name: str, context: Context, stack: list[Callable[..., Any]], depth: int
    ) -> None:
        self._name = name
        self._context = context
        self._stack = stack
        self._depth = depth

    def __call__(self) -> str:
        return "".join(self._stack[self._depth](self._context))


class TemplateReference(_Unprintable):
    __slots__ = ("_context",)

    def __init__(self, context: Context) -> None:
        self._context = context

    def __getitem__(self, name: str) -> BlockReference:
        return BlockReference(name, self._context, self._context.blocks[name], 0)


class LoopContext(_Unprintable):
    """A for loop's items and `loop`; of `loop`'s attributes, those gpuconf's templates read."""

    __slots__ = ("_items", "index0")

    def __init__(
        self, iterable: Iterable[Any], undefined: Any, recurse: Any = None, depth0: int = 0
    ) -> None:
        if recurse is not None or depth0:
            raise Deferred("a recursive loop")
        self._items = list(iterable)
        self.index0 = -1

    def __iter__(self) -> Iterator[tuple[Any, LoopContext]]:
        for index, item in enumerate(self._items):
            self.index0 = index
            yield item, self

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self.index0 == len(self._items) - 1

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def length(self) -> int:
        return len(self._items)


_LOOP_ATTRIBUTES = frozenset({"first", "last", "index", "index0", "length"})


class CompiledTemplate:
    __slots__ = ("blocks", "environment", "name", "root_render_func")

    def __init__(self, environment: CompiledEnvironment, name: str, code: Any) -> None:
        namespace: dict[str, Any] = {"environment": environment, "__file__": code.co_filename}
        exec(code, namespace)
        self.environment = environment
        self.name = name
        self.blocks: dict[str, Callable[..., Any]] = namespace["blocks"]
        self.root_render_func: Callable[[Context], Iterator[str]] = namespace["root"]

    def new_context(
        self, variables: dict[str, Any], shared: bool = False, locals: dict[str, Any] | None = None
    ) -> Context:
        return _new_context(self.environment, self.name, self.blocks, variables, shared, locals)

    def render(self, values: dict[str, Any]) -> str:
        return "".join(self.root_render_func(self.new_context(values, shared=True)))


def _default(value: Any, default_value: Any = "") -> Any:
    return default_value if isinstance(value, Undefined) else value


def _items(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, Undefined):
        return
    if not isinstance(value, Mapping):
        raise Deferred("items of a value that is not a mapping")
    yield from value.items()


def _trim(value: Any) -> str:
    return (value if isinstance(value, str) else str(value)).strip()


def _dictsort(value: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    def key(item: tuple[Any, Any]) -> Any:
        return item[0].lower() if isinstance(item[0], str) else item[0]

    return sorted(value.items(), key=key)


# jinja2's filters of these names (filters.py: do_default, do_items, do_trim, do_dictsort) in
# the forms gpuconf's templates write them; another form fails to bind, and is Deferred.
KEPT_FILTERS: dict[str, Callable[..., Any]] = {
    "default": _default,
    "items": _items,
    "trim": _trim,
    "dictsort": _dictsort,
}
TESTS: dict[str, Callable[[Any], bool]] = {
    "defined": lambda value: not isinstance(value, Undefined),
    "undefined": lambda value: isinstance(value, Undefined),
    "none": lambda value: value is None,
}


class CompiledEnvironment:
    """What the compiled code reads of its `environment`."""

    def __init__(
        self,
        index: CompiledIndex,
        filters: dict[str, Callable[..., Any]],
        finalize: Callable[[Any], Any],
        overridden: Callable[[str], bool],
    ) -> None:
        self.index = index
        self.overridden = overridden
        """Whether a site's file of that name stands in front of gpuconf's template."""
        self.filters = filters
        self.tests = TESTS
        self.finalize = finalize
        self.undefined = Undefined
        self.concat = "".join
        self.is_async = False
        self._templates: dict[str, CompiledTemplate] = {}

    def get_template(self, name: str, parent: str | None = None) -> CompiledTemplate:
        found = self._templates.get(name)
        if found is None:
            if self.overridden(name):
                raise Deferred(f"a site's {name}")
            if not self.index.holds(name):
                raise Deferred(f"{name} has no compiled code for its text")
            found = self._templates[name] = CompiledTemplate(self, name, self.index.code(name))
        return found

    def getattr(self, obj: Any, attribute: str) -> Any:
        """The sandbox's `obj.attribute`: a mapping's entry where the mapping's type has no
        attribute of that name (jinja2 returns that attribute, a method, first)."""
        kind = type(obj)
        if kind is dict:
            if hasattr(dict, attribute):
                raise Deferred(f"{attribute} of a mapping is a method")
            try:
                return obj[attribute]
            except KeyError:
                return Undefined(obj=obj, name=attribute)
        if kind is TemplateReference and not attribute.startswith("_"):
            return obj[attribute]
        if kind is LoopContext and attribute in _LOOP_ATTRIBUTES:
            return getattr(obj, attribute)
        raise Deferred(f"attribute {attribute} of a {kind.__name__}")

    def getitem(self, obj: Any, argument: Any) -> Any:
        """The sandbox's `obj[argument]`: where there is no such item, jinja2 looks for an
        attribute of a string's name (Deferred), else the value is undefined."""
        if isinstance(obj, Undefined):
            raise Deferred("an item of an undefined value")
        try:
            return obj[argument]
        except (TypeError, LookupError):
            if isinstance(argument, str) and hasattr(obj, argument):
                raise Deferred(f"{argument} of a {type(obj).__name__} is an attribute") from None
        return Undefined(obj=obj, name=argument)

    def call(self, context: Context, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A block read as `self.<block>()`; any other call is jinja2's to check."""
        kwargs.pop("_block_vars", None)
        kwargs.pop("_loop_vars", None)
        if type(obj) is not BlockReference or args or kwargs:
            raise Deferred("a call other than a block's")
        return obj()


_NAMES = {
    "LoopContext": LoopContext,
    "Macro": Macro,
    "Markup": Markup,
    "Namespace": Namespace,
    "TemplateNotFound": TemplateNotFound,
    "TemplateReference": TemplateReference,
    "TemplateRuntimeError": TemplateRuntimeError,
    "Undefined": Undefined,
    "escape": escape,
    "identity": identity,
    "internalcode": internalcode,
    "markup_join": markup_join,
    "missing": missing,
    "str_join": str_join,
}


def runtime_names(environment: Any, names: str) -> tuple[Any, ...]:
    """The runtime names (comma separated) compiled code imports: this module's where it runs
    in a CompiledEnvironment, else jinja2's own (jinja2 is then loaded already)."""
    wanted = [name.strip() for name in names.split(",")]
    if isinstance(environment, CompiledEnvironment):
        return tuple(_NAMES[name] for name in wanted)
    runtime = sys.modules["jinja2.runtime"]
    return tuple(getattr(runtime, name) for name in wanted)
