"""The type stubs name everything the package exports, as it exports it."""
import ast
import inspect
import os


def stub_names(path):
    names = set()
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_stubs_cover_exports(accel):
    folder = os.path.dirname(accel.__file__)
    top = stub_names(os.path.join(folder, "__init__.pyi"))
    assert set(accel.__all__) <= top, set(accel.__all__) - top
    mem = stub_names(os.path.join(folder, "memory.pyi"))
    assert set(accel.memory.__all__) <= mem, set(accel.memory.__all__) - mem
    assert os.path.exists(os.path.join(folder, "py.typed"))


def test_stub_signatures_match(accel):
    """Positional-only markers and parameter names of the functions agree."""
    folder = os.path.dirname(accel.__file__)
    tree = ast.parse(open(os.path.join(folder, "__init__.pyi")).read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            real = inspect.signature(getattr(accel, node.name))
            stub = [a.arg for a in node.args.posonlyargs + node.args.args]
            assert stub == list(real.parameters), node.name
            posonly = [p.name for p in real.parameters.values()
                       if p.kind is inspect.Parameter.POSITIONAL_ONLY]
            assert [a.arg for a in node.args.posonlyargs] == posonly, node.name
