"""Evaluate a DeviceClass CEL selector at compile time against the modelled DRA devices.

cel-python (celpy) is imported only here and only when called, so the compiler starts light in
device-plugin mode. Kubernetes' quantity library (quantity(), compareTo, isGreaterThan, …) is
not part of CEL's standard library; it is supplied as functions that compare by value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuconf.compiler.dra.devices import DRIVER, DeviceKey, DraDevice
from gpuconf.formats.quantity import Quantity


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

    def compare_to(left: Quantity, right: Quantity) -> Any:
        return celtypes.IntType(left.compare(right))

    def greater(left: Quantity, right: Quantity) -> Any:
        return celtypes.BoolType(left.compare(right) > 0)

    def less(left: Quantity, right: Quantity) -> Any:
        return celtypes.BoolType(left.compare(right) < 0)

    def as_integer(value: Quantity) -> Any:
        if value.value.denominator != 1:
            raise ValueError(f"{value.value} is not an integer")
        return celtypes.IntType(value.value.numerator)

    def sign(value: Quantity) -> Any:
        return celtypes.IntType((value.value > 0) - (value.value < 0))

    return {
        "quantity": quantity,
        "isQuantity": is_quantity,
        "compareTo": compare_to,
        "isGreaterThan": greater,
        "isLessThan": less,
        "asInteger": as_integer,
        "sign": sign,
    }


def _cel_device(device: DraDevice) -> Any:
    from celpy import celtypes

    def value(v: str | int) -> Any:
        return celtypes.IntType(v) if isinstance(v, int) else celtypes.StringType(v)

    attributes = celtypes.MapType(
        {celtypes.StringType(k): value(v) for k, v in device.attributes.items()}
    )
    capacity = celtypes.MapType(
        {celtypes.StringType("memory"): Quantity.of_bytes(device.memory_bytes)}
    )
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(DRIVER),
            celtypes.StringType("attributes"): celtypes.MapType(
                {celtypes.StringType(DRIVER): attributes}
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
    outcomes: dict[tuple[tuple[str, str | int], ...], bool] = {}
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
