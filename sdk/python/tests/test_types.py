"""The type hints are real: every public function's and record's annotations resolve
(mypy --strict checks them too: tests/blackbox/test_sdk_python.py), and
the package ships py.typed."""

from __future__ import annotations

import inspect
import os
import typing
import unittest

import coffer
from coffer import models


class TypeHints(unittest.TestCase):
    def test_every_public_callable_is_annotated_and_resolves(self) -> None:
        missing = []
        for mod in (coffer.client, coffer.volumes, coffer.agents, coffer.subjects,
                    coffer.turns, coffer.relay, coffer._files, coffer._http, coffer.errors,
                    coffer.aio, coffer.webhooks):
            for cname, cls in inspect.getmembers(mod, inspect.isclass):
                if cls.__module__ != mod.__name__:
                    continue
                for fname, fn in inspect.getmembers(cls, inspect.isfunction):
                    if fname.startswith("_") and fname != "__init__":
                        continue
                    hints = typing.get_type_hints(fn)
                    params = [p for p in inspect.signature(fn).parameters if p != "self"]
                    for p in params + ["return"]:
                        if p not in hints and not p.startswith("*"):
                            missing.append("%s.%s.%s(%s)" % (mod.__name__, cname, fname, p))
        self.assertEqual(missing, [], "parameters without a type hint")

    def test_record_fields_resolve(self) -> None:
        for _, cls in inspect.getmembers(models, inspect.isclass):
            if issubclass(cls, models.Record):
                typing.get_type_hints(cls)

    def test_py_typed_is_shipped(self) -> None:
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(coffer.__file__), "py.typed")))


if __name__ == "__main__":
    unittest.main()
