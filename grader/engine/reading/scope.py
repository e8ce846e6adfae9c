"""Which of a student's statements the reading of an answer counts, and what in them a person must see.

An answer depends on the code its tested names reach (:func:`grader.engine.reading.source.reachable`)
and on every student statement that changes state other code shares. Everything else, exploration
that prints ``sys.version``, times a function with ``%timeit`` or defines a helper class with
``self._calls``, is not read for rules: it cannot change what the test observes.

A student statement changes shared state when it (anywhere in it, function bodies included):

- assigns or deletes an attribute, or an item of an attribute or of something imported, of an object
  it did not create (``torch.Tensor.cd_ = torch.cdist``, ``sys.modules["x"] = m``,
  ``os.environ["A"] = "1"``); ``self`` in a method, function parameters, and names bound by
  ``def``/``class`` or to a new object (:func:`own_names`) are the student's own, and a drawing setting
  of matplotlib set by key (``plt.rcParams["figure.figsize"] = ...``, d2l's ``set_figsize``) is no change;
- calls a mutating method on something it did not create (``sys.modules.update``, ``sys.setprofile``);
- patches (``mock.patch``, ``monkeypatch``), writes or removes files (``open(.., "w")``,
  ``torch.save``, ``.write_text``, ``os.remove``, ``shutil``), star-imports (``from m import *``: the
  names it binds cannot be known), or reaches the shell (``!cmd``, magics other than ``%matplotlib``,
  ``%time``, ``%timeit`` and a help request ``name?``, ``os.system``, ``subprocess``).

Some code cannot be resolved from its text at all: ``exec``, ``eval``, ``compile``, ``setattr``,
``delattr``, ``globals``, ``locals``, ``vars``, ``__import__``, ``__builtins__``, ``get_ipython``,
``importlib``, ``ctypes``, ``builtins``, ``gc``, ``operator``, and dunders that open a namespace
(``__dict__``, ``__globals__``, ``__setattr__``, ``__code__``, ...). Anywhere in a student cell it is
a finding: the reader fails towards a person's review, never towards silence.
"""
from __future__ import annotations

import ast

from .source import Statement

__all__ = ["UNRESOLVABLE_NAMES", "UNRESOLVABLE_MODULES", "OPENING_DUNDERS", "own_names", "shared_state",
           "unresolvable"]

UNRESOLVABLE_NAMES = frozenset({"exec", "eval", "compile", "setattr", "delattr", "globals", "locals", "vars",
                                "__import__", "__builtins__", "get_ipython", "breakpoint", "setitem", "delitem"})
UNRESOLVABLE_MODULES = frozenset({"importlib", "builtins", "ctypes", "gc", "operator", "runpy", "pkgutil",
                                  "marshal", "code", "codeop", "dill", "ipykernel", "traitlets"})
OPENING_DUNDERS = frozenset({"__dict__", "__globals__", "__builtins__", "__setattr__", "__delattr__", "__setitem__",
                             "__code__", "__closure__", "__subclasses__", "__getattribute__", "__import__",
                             "__loader__", "__spec__", "__kwdefaults__", "__defaults__", "__bases__", "__mro__",
                             "__class_getitem__", "__init_subclass__", "__set_name__", "__reduce__",
                             "__reduce_ex__", "__self__", "__func__", "__wrapped__", "__getattr__"})
SHELL_NAMES = frozenset({"InteractiveShell", "system", "popen", "subprocess", "spawnv", "execv", "execvp",
                         "startfile", "pty"})
MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove",
                      "add", "discard", "setprofile", "settrace", "addaudithook", "setrecursionlimit",
                      "setswitchinterval", "register", "putenv", "unsetenv", "chdir"})
FILE_WRITERS = frozenset({"save", "savez", "savetxt", "write_text", "write_bytes", "touch", "mkdir", "makedirs",
                          "unlink", "rmdir", "rmtree", "to_csv", "dump", "copyfile", "copytree", "symlink_to",
                          "chmod", "hardlink_to"})
OS_WRITERS = frozenset({"remove", "rename", "replace", "removedirs", "symlink", "link", "truncate", "write", "open"})
FILE_MODULES = frozenset({"shutil", "tempfile"})
PATCHES = frozenset({"patch", "monkeypatch", "mock"})
CONSTRUCTORS = frozenset({"list", "dict", "set", "tuple", "SimpleNamespace", "defaultdict", "OrderedDict",
                          "Counter", "deque", "object"})
TENSOR_FACTORIES = frozenset({"tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange",
                              "linspace", "eye", "clone", "detach", "to", "double", "float", "cuda", "cpu"})


def _root(node: ast.AST) -> ast.AST:
    """The innermost value of an attribute, item or call chain (``a`` of ``a.b[0].c()``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _creates(value: ast.AST, classes: set[str]) -> bool:
    """Whether ``value`` makes a new object: a literal or comprehension, a builtin container, an instance of a
    class (a CamelCase constructor: ``nn.Sequential(...)``, a class the student wrote) or a new tensor."""
    if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                          ast.SetComp, ast.BinOp, ast.JoinedStr)):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return (name in classes | CONSTRUCTORS or name[:1].isupper() or name in TENSOR_FACTORIES
            or name.endswith("_like")) and name not in ("type", "getattr", "vars")


def own_names(statements: list[Statement]) -> set[str]:
    """Names the student's statements bind to objects of their own: by ``def``/``class``, as a function's
    parameters, or by assigning a new object (:func:`_creates`); aliases (``t = torch.Tensor``) are not."""
    classes = {n.name for s in statements for n in ast.walk(s.node) if isinstance(n, ast.ClassDef)}
    own = set(classes)
    for statement in statements:
        for node in ast.walk(statement.node):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(node.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                arguments = node.args
                own |= {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                    and _creates(node.value, classes):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                own |= {t.id for t in targets if isinstance(t, ast.Name)}
    return own


def _selves(node: ast.AST) -> set[int]:
    """ids of the ``self`` Name nodes inside methods (the first argument of a function in a class body)."""
    found = set()
    for cls in (n for n in ast.walk(node) if isinstance(n, ast.ClassDef)):
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if method.args.args:
                first = method.args.args[0].arg
                found |= {id(n) for n in ast.walk(method) if isinstance(n, ast.Name) and n.id == first}
    return found


def _is_own(node: ast.AST, own: set[str], selves: set[int]) -> bool:
    root = _root(node)
    return isinstance(root, ast.Name) and (id(root) in selves or root.id in own)


def _where(statement: Statement, node: ast.AST) -> str:
    return f"cell {statement.cell}, line {getattr(node, 'lineno', 1)}"


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


def _writes_file(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        return mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                                         and not set(mode.value) & set("wax+"))
    return isinstance(func, ast.Attribute) and func.attr in FILE_WRITERS


def _figure_setting(target: ast.AST) -> bool:
    """``plt.rcParams['figure.figsize'] = ...`` (d2l's ``set_figsize``): one of matplotlib's drawing settings,
    set by key; it changes how figures look, nothing a test reads."""
    return (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
            and target.value.attr == "rcParams" and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str))


def shared_state(statement: Statement, own: set[str], modules: set[str] = frozenset()) -> list[str]:
    """Where ``statement`` (a student's) changes state other code shares, as phrases; [] when it does not.

    own: :func:`own_names`; modules: names bound by an ``import`` anywhere before the test."""
    found = []
    selves = _selves(statement.node)
    for sub in ast.walk(statement.node):
        for target in _targets(sub):
            for part in ast.walk(target) if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                shared = isinstance(part, ast.Attribute) or (isinstance(part, ast.Subscript) and (
                    isinstance(part.value, (ast.Attribute, ast.Call))
                    or (isinstance(part.value, ast.Name) and part.value.id in modules)))
                if shared and not _is_own(part, own, selves) and not _figure_setting(part):
                    found.append(f"an assignment to `{ast.unparse(part)}`, not the student's own object "
                                 f"({_where(statement, sub)})")
        if isinstance(sub, ast.ImportFrom) and any(alias.name == "*" for alias in sub.names):
            found.append(f"a star-import `from {sub.module} import *` ({_where(statement, sub)})")
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = {a.name.split(".")[0] for a in sub.names} | {(getattr(sub, "module", None) or "").split(".")[0]}
            if names & (FILE_MODULES | {"subprocess", "pty"}):
                listed = ", ".join(sorted(names & (FILE_MODULES | {"subprocess", "pty"})))
                found.append(f"`{listed}` ({_where(statement, sub)})")
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if _writes_file(sub):
                found.append(f"a file written or removed (`{name}`, {_where(statement, sub)})")
            elif name in PATCHES:
                found.append(f"a patch (`{name}`, {_where(statement, sub)})")
            elif name in SHELL_NAMES:
                found.append(f"the shell (`{name}`, {_where(statement, sub)})")
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules \
                    and name in OS_WRITERS:
                found.append(f"a file written or removed (`{ast.unparse(func)}`, {_where(statement, sub)})")
            elif isinstance(func, ast.Attribute) and name in MUTATORS and not _is_own(func.value, own, selves) and (
                    not isinstance(func.value, ast.Name) or func.value.id in modules):
                found.append(f"`{ast.unparse(func)}()` on an object the student did not create "
                             f"({_where(statement, sub)})")
        elif isinstance(sub, ast.With):
            found += [f"a patch (`{ast.unparse(item.context_expr)[:60]}`, {_where(statement, sub)})"
                      for item in sub.items if any(isinstance(n, (ast.Name, ast.Attribute)) and
                                                   (getattr(n, "id", None) or getattr(n, "attr", None)) in PATCHES
                                                   for n in ast.walk(item.context_expr))]
    return list(dict.fromkeys(found))


def unresolvable(statement: Statement) -> list[str]:
    """Code in a student's statement whose effect cannot be read from its text, as phrases."""
    found = []
    for sub in ast.walk(statement.node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            modules = ({a.name.split(".")[0] for a in sub.names} if isinstance(sub, ast.Import)
                       else {(sub.module or "").split(".")[0]})
            found += [f"`import {m}` ({_where(statement, sub)})" for m in sorted(modules & UNRESOLVABLE_MODULES)]
            if isinstance(sub, ast.ImportFrom):
                found += [f"`{a.name}` ({_where(statement, sub)})" for a in sub.names
                          if a.name in UNRESOLVABLE_NAMES | {"InteractiveShell"}]
        elif isinstance(sub, ast.Name) and sub.id in UNRESOLVABLE_NAMES:
            found.append(f"`{sub.id}` ({_where(statement, sub)})")
        elif isinstance(sub, ast.Attribute) and (sub.attr in OPENING_DUNDERS or sub.attr in ("get_ipython",
                                                                                             "InteractiveShell")):
            found.append(f"`{sub.attr}` ({_where(statement, sub)})")
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("getattr", "hasattr"):
            name = sub.args[1] if len(sub.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in OPENING_DUNDERS:
                found.append(f"`{name.value}` ({_where(statement, sub)})")
    return list(dict.fromkeys(found))
