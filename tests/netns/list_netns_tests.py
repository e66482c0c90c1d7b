"""list_netns_tests.py MODULE.py... - the netns test ids, one a line, for
tests/netns/CMakeLists.txt to register as CTest tests.

The ids are what unittest's loader finds in each module (module.Class.method),
so a test is registered exactly when `python3 -m unittest` would run it. The
same files are also read as source (ast): every `def test_...` written in them
must be the method of at least one loaded test, or this exits 1 naming it, and
the configure step fails. That catches a test in a class that does not derive
from unittest.TestCase, a test function outside any class, a method replaced by
a later one of the same name, and a module that does not import.

Standard library only; run with -B from tests/netns (the modules import
sluice_netns from there).
"""

import ast
import importlib
import os
import sys
import unittest


def written_tests(path):
    """(qualified name of the enclosing class or '', method name, line) of
    every function named test_* in the file, at any depth."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = []

    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, scope + [child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.name.startswith("test_"):
                    # A function nested in a function is no method of a class.
                    found.append((".".join(scope), child.name, child.lineno))
                walk(child, scope + ["<" + child.name + ">"])
            else:
                walk(child, scope)
    walk(tree, [])
    return found


def loaded_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from loaded_tests(t)
        else:
            yield t


def main(paths):
    ids = []
    errors = []
    for path in paths:
        module_name = os.path.splitext(os.path.basename(path))[0]
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # any failure to import is a test not registered
            errors.append(f"{path}: does not import: {type(e).__name__}: {e}")
            continue
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        # The method each loaded test runs, by the class that defines it
        # (a test inherited from a mixin is defined in the mixin).
        covered = set()
        for test in loaded_tests(suite):
            if isinstance(test, unittest.loader._FailedTest):
                errors.append(f"{path}: unittest could not load {test.id()}")
                continue
            cls = type(test)
            method = test._testMethodName
            owner = next((c for c in cls.__mro__ if method in vars(c)), cls)
            if owner.__module__ == module_name:
                covered.add((owner.__qualname__, method))
            if cls.__module__ != module_name:
                continue  # imported from another module: registered there
            ids.append(f"{module_name}.{cls.__qualname__}.{method}")
        seen = {}
        for scope, method, line in written_tests(path):
            if (scope, method) in seen:
                errors.append(f"{path}:{line}: {scope}.{method} is defined again (first at line "
                              f"{seen[scope, method]}): the later definition replaces the earlier, "
                              f"which never runs")
                continue
            seen[scope, method] = line
            if (scope, method) in covered:
                continue
            where = f"{scope}.{method}" if scope else method
            if not scope or "<" in scope:
                why = "a function, not the method of a class"
            else:
                why = "its class is no unittest.TestCase the loader finds"
            errors.append(f"{path}:{line}: {where} is not registered: {why}")
    if errors:
        for e in errors:
            print(e, file=sys.stderr)
        return 1
    if len(set(ids)) != len(ids):
        print("duplicate test ids: " + ", ".join(sorted({i for i in ids if ids.count(i) > 1})), file=sys.stderr)
        return 1
    for i in ids:
        print(i)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
