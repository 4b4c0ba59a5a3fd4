"""Requests from Python values: generated messages, dicts, datetimes, timedeltas, enum names."""

from __future__ import annotations

import base64
import datetime as _dt
from typing import Any, Mapping, Type, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from ._errors import EngramError

M = TypeVar("M", bound=Message)


def plain(value: Any) -> Any:
    """`value` as the JSON-like data json_format.ParseDict reads.

    Generated messages become dicts with proto field names, a datetime the RFC 3339 text of a
    Timestamp (a naive one is taken as UTC), a timedelta the text of a Duration and bytes base64,
    so that one parser builds every request whatever mix of values the caller passes.
    """
    if isinstance(value, Message):
        return json_format.MessageToDict(value, preserving_proto_field_name=True)
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        return aware.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, _dt.timedelta):
        return f"{value.total_seconds():.9f}s"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def build(message_class: Type[M], fields: Mapping[str, Any]) -> M:
    """A `message_class` from keyword `fields` (proto field names; None values are left unset).

    Raises EngramError INVALID_ARGUMENT (no reason: the SDK refused it before any call) for an
    unknown field or a value of the wrong type, naming the message and the field.
    """
    present = {key: value for key, value in fields.items() if value is not None}
    try:
        return json_format.ParseDict(plain(present), message_class())
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise EngramError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"invalid {message_class.DESCRIPTOR.full_name}: {error}",
        ) from error


def coerce(message_class: Type[M], value: Any) -> M:
    """`value` itself when it is already a `message_class`, else one built from a mapping."""
    if isinstance(value, message_class):
        return value
    if isinstance(value, Mapping):
        return build(message_class, value)
    raise EngramError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"expected a {message_class.DESCRIPTOR.full_name} or a dict, got {type(value).__name__}",
    )
