"""``Message``: the hand-written per-event messages keep a dataclass's value semantics."""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil

import pytest

import model
from model.core.errors import Errors
from model.core.message import Message
from model.core.metadata import TopicPartition
from model.core.produce_fetch import ProduceRequest, ProduceResponse
from model.core.share_fetch import ShareFetchResponse
from model.core.share_state import SharePartitionKey


def _messages() -> list[type[Message]]:
    for info in pkgutil.walk_packages(model.__path__, "model."):
        importlib.import_module(info.name)
    found, todo = [], list(Message.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def test_there_are_messages() -> None:
    assert {ProduceRequest, ProduceResponse, ShareFetchResponse} <= set(_messages())


@pytest.mark.parametrize("cls", _messages(), ids=lambda cls: cls.__qualname__)
def test_fields_are_the_init_parameters_in_order(cls: type[Message]) -> None:
    # FIELDS drives equality, hash and repr: a field missing from it would be ignored by all three.
    parameters = list(inspect.signature(cls.__init__).parameters)[1:]
    assert list(cls.FIELDS) == parameters


def test_equality_hash_and_repr_are_by_value() -> None:
    a = ProduceRequest("t", 0, 3, producer_id=7)
    assert a == ProduceRequest("t", 0, 3, producer_id=7)
    assert hash(a) == hash(ProduceRequest("t", 0, 3, producer_id=7))
    assert a != ProduceRequest("t", 0, 3, producer_id=8)
    assert a != ProduceResponse("t", 0)  # another type is never equal, even on shared fields
    assert repr(ProduceResponse("t", 1, Errors.NONE, 5)) == (
        "ProduceResponse(topic='t', partition=1, error_code=<Errors.NONE: 0>, base_offset=5, leader_epoch=-1)")


def test_replace_copies_with_changes() -> None:
    a = ProduceRequest("t", 0, 3, producer_id=7)
    b = a.replace(records=5)
    assert b == ProduceRequest("t", 0, 5, producer_id=7) and a == ProduceRequest("t", 0, 3, producer_id=7)
    with pytest.raises(TypeError):
        a.replace(no_such_field=1)


@pytest.mark.parametrize("value", [
    ProduceRequest("t", 0, 3, producer_id=7, keys=(1, 2, 3)),
    ShareFetchResponse(Errors.NONE, None, ()),
    TopicPartition("t", 2),
    SharePartitionKey("g", "t-id", 1),
], ids=lambda value: type(value).__name__)
def test_pickle_and_copy_keep_the_value(value: object) -> None:
    # By the constructor (__reduce__): a compiled class has no __dict__ for pickle to restore.
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value and copy.copy(value) == value

