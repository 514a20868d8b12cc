"""Evaluate a DeviceClass CEL selector at compile time against the modelled DRA devices.

cel-python (celpy) is imported only here and only when called, so the compiler starts light in
device-plugin mode. Kubernetes' quantity and semver libraries (quantity(), semver(), compareTo,
isGreaterThan, …) are not part of CEL's standard library; they are supplied as functions that
compare by value, on quantities or on versions alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuconf.compiler.dra.devices import DRIVER, AttributeValue, DeviceKey, DraDevice
from gpuconf.compiler.dra.semver import SemVer
from gpuconf.formats.quantity import Quantity
from gpuconf.gpus.dra_attributes import qualified


@dataclass(frozen=True)
class CelError:
    """The expression does not compile, or fails or is not a bool on some device."""

    message: str


def _quantity_functions() -> dict[str, Callable[..., Any]]:
    from celpy import celtypes

    def quantity(text: Any) -> Quantity:
        return Quantity.parse(str(text))

    def is_quantity(text: Any) -> Any:
        try:
            Quantity.parse(str(text))
        except ValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    def order(left: Quantity | SemVer, right: Quantity | SemVer) -> int:
        if isinstance(left, Quantity) and isinstance(right, Quantity):
            return left.compare(right)
        if isinstance(left, SemVer) and isinstance(right, SemVer):
            return left.compare(right)
        raise TypeError(f"cannot compare {type(left).__name__} with {type(right).__name__}")

    def compare_to(left: Quantity | SemVer, right: Quantity | SemVer) -> Any:
        return celtypes.IntType(order(left, right))

    def greater(left: Quantity | SemVer, right: Quantity | SemVer) -> Any:
        return celtypes.BoolType(order(left, right) > 0)

    def less(left: Quantity | SemVer, right: Quantity | SemVer) -> Any:
        return celtypes.BoolType(order(left, right) < 0)

    def semver(text: Any) -> SemVer:
        return SemVer.parse(str(text))

    def is_semver(text: Any) -> Any:
        try:
            SemVer.parse(str(text))
        except ValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    def as_integer(value: Quantity) -> Any:
        if value.value.denominator != 1:
            raise ValueError(f"{value.value} is not an integer")
        return celtypes.IntType(value.value.numerator)

    def sign(value: Quantity) -> Any:
        return celtypes.IntType((value.value > 0) - (value.value < 0))

    return {
        "quantity": quantity,
        "isQuantity": is_quantity,
        "semver": semver,
        "isSemver": is_semver,
        "compareTo": compare_to,
        "isGreaterThan": greater,
        "isLessThan": less,
        "asInteger": as_integer,
        "sign": sign,
    }


def _cel_device(device: DraDevice) -> Any:
    from celpy import celtypes

    def value(v: AttributeValue) -> Any:
        if isinstance(v, SemVer):
            return v
        return celtypes.IntType(v) if isinstance(v, int) else celtypes.StringType(v)

    domains: dict[str, dict[Any, Any]] = {}
    for name, v in device.attributes.items():
        domain, attribute = qualified(name)
        domains.setdefault(domain, {})[celtypes.StringType(attribute)] = value(v)
    capacity = celtypes.MapType(
        {celtypes.StringType("memory"): Quantity.of_bytes(device.memory_bytes)}
    )
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(DRIVER),
            celtypes.StringType("attributes"): celtypes.MapType(
                {celtypes.StringType(d): celtypes.MapType(a) for d, a in domains.items()}
            ),
            celtypes.StringType("capacity"): celtypes.MapType(
                {celtypes.StringType(DRIVER): capacity}
            ),
        }
    )


def selected_devices(
    expression: str, devices: Sequence[DraDevice]
) -> frozenset[DeviceKey] | CelError:
    """The devices the expression selects, as the scheduler would evaluate it on each."""
    import celpy
    from celpy import celtypes
    from celpy.celparser import CELParseError
    from celpy.evaluation import CELEvalError

    environment = celpy.Environment()
    try:
        program = environment.program(
            environment.compile(expression), functions=_quantity_functions()
        )
    except CELParseError as error:
        return CelError(f"the CEL selector does not parse: {str(error).splitlines()[0]}")
    chosen: set[DeviceKey] = set()
    outcomes: dict[tuple[tuple[str, AttributeValue], ...], bool] = {}
    for device in devices:
        # Identical devices (the GPUs of undeclared nodes) give identical answers.
        signature = (*sorted(device.attributes.items()), ("memory", device.memory_bytes))
        if signature not in outcomes:
            try:
                result = program.evaluate({"device": _cel_device(device)})
            except CELEvalError as error:
                return CelError(f"the CEL selector fails on {device.describe()}: {error.args[0]}")
            if not isinstance(result, celtypes.BoolType):
                return CelError(
                    f"the CEL selector gives {type(result).__name__}, not a bool, on {device.describe()}"
                )
            outcomes[signature] = bool(result)
        if outcomes[signature]:
            chosen.add(device.key)
    return frozenset(chosen)
