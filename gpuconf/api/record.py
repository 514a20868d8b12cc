"""The base of the cluster API's types: frozen records that pydantic-core fills in.

A cluster file is validated against a core schema frozen into the package
(`api/frozen/`), so `gpuconf validate` starts pydantic-core alone, without pydantic
building a validator from the classes on every run. The classes stay the one definition:
pydantic reads them, through `Record.__get_pydantic_core_schema__`, when the frozen schema
and the published JSON Schemas are generated, and when a node-side pydantic model holds one.

Constraints are written as `Limits` in `Annotated`: a marker that costs nothing to create and
hands its keywords to pydantic's own `Field` only when pydantic asks."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, ClassVar, Self, dataclass_transform

_NO_DEFAULT: Any = object()


def camel(name: str) -> str:
    """The key a field has in YAML: snake_case as camelCase (`memory_mib` -> `memoryMib`)."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


class _FieldSpec:
    """What `field()` says of a field; the record turns it into a RecordField, its key settled."""

    __slots__ = ("alias", "default", "factory")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, alias: str | None):
        self.default, self.factory, self.alias = default, factory, alias


def field(
    *,
    default: Any = _NO_DEFAULT,
    default_factory: Callable[[], Any] | None = None,
    key: str | None = None,
) -> Any:
    """A field's default made by `default_factory` for each record, or a key other than its
    camelCase name (`key`)."""
    return _FieldSpec(default, default_factory, key)


class RecordField:
    """One field of a record: its YAML key and how it is filled when the key is absent."""

    __slots__ = ("alias", "default", "factory")

    def __init__(self, alias: str, default: Any, factory: Callable[[], Any] | None) -> None:
        self.alias, self.default, self.factory = alias, default, factory


class Limits:
    """Constraints on a value in `Annotated` (`ge`, `le`, `pattern`, `min_length`,
    `max_length`, `discriminator`, `json_schema`), applied through pydantic's `Field`;
    `regex_engine="python-re"` for a pattern with a lookahead, which pydantic-core's default
    engine (Rust's regex) refuses."""

    __slots__ = ("limits",)

    def __init__(self, **limits: Any) -> None:
        self.limits = limits

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field, WithJsonSchema

        limits = dict(self.limits)
        extra: tuple[Any, ...] = ()
        if "json_schema" in limits:
            extra = (WithJsonSchema(limits.pop("json_schema")),)
        engine = limits.pop("regex_engine", None)
        schema = handler(typing.Annotated[(source, Field(**limits), *extra)])
        if engine is not None:
            schema["regex_engine"] = engine
        return schema


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Record:
    """Frozen; compared and hashed by value; unknown keys refused and every scalar strict
    (in the frozen schema); keys are the fields' camelCase names unless `field(key=...)`.

    pydantic-core builds instances without calling `__init__`; `__init__` is for defaults
    and tests (`Images()`), and checks nothing but the field names."""

    __slots__ = (
        "__dict__",
        "__pydantic_extra__",
        "__pydantic_fields_set__",
        "__pydantic_private__",
    )
    __pydantic_fields_set__: set[str]
    __record_fields__: ClassVar[dict[str, RecordField]] = {}
    model_config: ClassVar[dict[str, Any]] = {"extra": "forbid"}
    """What pydantic's JSON Schema generator reads from a class it meets in a core schema."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.__record_fields__)
        # The class's own annotations (strings: `from __future__ import annotations`), as
        # inspect.get_annotations reads them, without importing inspect at start-up.
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
            if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            value = cls.__dict__.get(name, _NO_DEFAULT)
            if isinstance(value, _FieldSpec):
                delattr(cls, name)
                fields[name] = RecordField(value.alias or camel(name), value.default, value.factory)
            else:
                fields[name] = RecordField(camel(name), value, None)
        cls.__record_fields__ = fields

    def __init__(self, **values: Any) -> None:
        fields = type(self).__record_fields__
        if len(values) == len(fields) and values.keys() == fields.keys():
            # Every field given, the common case for records built in code: in field order.
            _fill(self, {name: values[name] for name in fields}, set(values))
            return
        if not values.keys() <= fields.keys():
            unknown = ", ".join(sorted(values.keys() - fields.keys()))
            raise TypeError(f"{type(self).__name__} has no field {unknown}")
        data: dict[str, Any] = {}
        for name, spec in fields.items():
            if name in values:
                data[name] = values[name]
            elif spec.factory is not None:
                data[name] = spec.factory()
            elif spec.default is not _NO_DEFAULT:
                data[name] = spec.default
            else:
                raise TypeError(f"{type(self).__name__} needs {name}")
        _fill(self, data, set(values))

    @property
    def fields_given(self) -> frozenset[str]:
        """The fields the file set, as opposed to those left to their defaults."""
        return frozenset(self.__pydantic_fields_set__)

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`; nothing is checked but the field names."""
        given = self.__pydantic_fields_set__ | changes.keys()
        values = {**self.__dict__, **changes}
        copy = type(self)(**values)
        object.__setattr__(copy, "__pydantic_fields_set__", given)
        return copy

    def as_data(self, *, exclude_none: bool = True) -> dict[str, Any]:
        """The record as plain data under its file keys, nested records and lists included."""
        fields = type(self).__record_fields__
        data = {}
        for name, value in self.__dict__.items():
            if value is None:
                if exclude_none:
                    continue
            elif type(value) not in _PLAIN_TYPES:
                value = _as_data(value, exclude_none)
            data[fields[name].alias] = value
        return data

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__, self.__pydantic_fields_set__))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        hints = typing.get_type_hints(cls, include_extras=True)
        fields = {}
        for name, spec in cls.__record_fields__.items():
            schema = handler.generate_schema(hints[name])
            if spec.factory is not None:
                schema = core_schema.with_default_schema(schema, default_factory=spec.factory)
            elif spec.default is not _NO_DEFAULT:
                schema = core_schema.with_default_schema(schema, default=spec.default)
            fields[name] = core_schema.model_field(schema, validation_alias=spec.alias)
        return core_schema.model_schema(
            cls,
            core_schema.model_fields_schema(
                fields, model_name=cls.__name__, extra_behavior="forbid"
            ),
            config={"title": cls.__name__, "extra_fields_behavior": "forbid", "strict": True},
            ref=f"{cls.__module__}.{cls.__qualname__}",
        )


def _as_data(value: Any, exclude_none: bool) -> Any:
    # Plain items (a node config's thousands of UUIDs and indices) are kept as they are without
    # a call each.
    if isinstance(value, Record):
        return value.as_data(exclude_none=exclude_none)
    if isinstance(value, list):
        return [
            item if type(item) in _PLAIN_TYPES else _as_data(item, exclude_none) for item in value
        ]
    if isinstance(value, dict):
        return {
            key: item if type(item) in _PLAIN_TYPES else _as_data(item, exclude_none)
            for key, item in value.items()
        }
    return value


_PLAIN_TYPES = frozenset({str, int, bool, float})


def _rebuild(cls: type[Record], data: dict[str, Any], given: set[str]) -> Record:
    record = object.__new__(cls)
    _fill(record, dict(data), set(given))
    return record


def _fill(record: Record, data: dict[str, Any], given: set[str]) -> None:
    """Set what pydantic-core sets on a record it builds (the record itself refuses setattr)."""
    _SET_DICT(record, data)
    _SET_FIELDS_SET(record, given)
    _SET_EXTRA(record, None)
    _SET_PRIVATE(record, None)


# The slots' own setters: a record's __setattr__ refuses, and these skip attribute lookup.
_SET_DICT = Record.__dict__["__dict__"].__set__
_SET_FIELDS_SET = Record.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = Record.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = Record.__dict__["__pydantic_private__"].__set__
