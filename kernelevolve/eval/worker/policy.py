"""The kernel policy, static half: a candidate must compute with kernels of its own, not with PyTorch's.

From the candidate's AST, without running it: ModelNew.forward and everything it reaches inside the candidate
file (module functions, methods of the classes defined there; @triton.jit kernel bodies excepted) may allocate,
view, cast and copy tensors, but may not call torch compute ops (torch.softmax, F.*, torch.matmul, `@`, tensor
methods like .sum() or .exp()), PyTorch nn modules, torch.compile, or the reference Model. The dynamic half
(eval.launches) checks that forward does call a kernel compiled from the candidate.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import torch

from kernelevolve.platforms.base import Platform

# torch.<name> calls that allocate, describe or move tensors rather than compute with them.
ALLOWED_TORCH = frozenset(
    f"torch.{n}"
    for n in (
        "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange tensor as_tensor "
        "as_strided from_numpy frombuffer Tensor Size device dtype finfo iinfo is_tensor is_floating_point "
        "is_complex numel no_grad inference_mode enable_grad set_grad_enabled get_default_dtype promote_types "
        "result_type can_cast broadcast_shapes Generator Stream Event get_device _assert nn.Parameter "
        "nn.parameter.Parameter nn.Buffer"
    ).split()
)
ALLOWED_TORCH_PREFIXES = (
    "torch.cuda.",
    "torch.utils.cpp_extension.",
    "torch.library.",
    "torch.backends.",
    "torch.version.",
)
BUILTIN_OPS_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "mkldnn", "mkl", "onednn"}

# Tensor methods that only describe, view, cast, copy or allocate: everything else on torch.Tensor computes.
ALLOWED_METHODS = frozenset(
    (
        "size dim ndimension numel nelement stride storage_offset data_ptr element_size untyped_storage "
        "is_contiguous is_floating_point is_complex get_device type item tolist numpy cpu cuda to type_as "
        "contiguous clone detach detach_ requires_grad_ view view_as reshape reshape_as expand expand_as flatten "
        "unflatten squeeze unsqueeze squeeze_ unsqueeze_ permute transpose t movedim moveaxis swapaxes swapdims "
        "narrow select split chunk unbind tensor_split as_strided unfold copy_ fill_ zero_ new_empty new_zeros "
        "new_ones new_full new_tensor new_empty_strided float double half bfloat16 int long short bool byte char "
        "pin_memory record_stream share_memory_ is_pinned is_shared resize_ resize_as_ set_ values indices "
        "index data_ptr"
    ).split()
)
FORBIDDEN_METHODS = frozenset(n for n in dir(torch.Tensor) if not n.startswith("__")) - ALLOWED_METHODS
DYNAMIC = {"eval", "exec", "compile", "__import__", "vars", "globals", "locals"}
# The same reached through imports, and the standard library's ways to call or fetch by a computed name.
DYNAMIC_RESOLVED = {f"builtins.{n}" for n in DYNAMIC} | {
    "operator.methodcaller",
    "operator.attrgetter",
    "importlib.import_module",
    "sys.modules",
}
DYNAMIC_ATTRS = {"__dict__", "__getattribute__", "__getattr__"}
CONTAINERS = {"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict", "Parameter", "Buffer"}


def policy_default(platform: Platform) -> bool:
    """The target's default (eval/rules.py)."""
    return platform.kernel_policy_default()


@dataclass
class _File:
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted module path
    ext_names: set[str] = field(default_factory=set)  # names bound to load_inline(...) results
    ext_attrs: set[str] = field(default_factory=set)  # self.<attr> bound to load_inline(...) results
    nn_attrs: dict[str, str] = field(default_factory=dict)  # self.<attr> -> torch.nn class it holds
    obj_attrs: dict[str, str] = field(default_factory=dict)  # self.<attr> -> class defined in the file

    def resolve(self, node: ast.expr) -> str | None:
        """Dotted name of an expression made of imported names and attributes, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def violations(source: str) -> list[str]:
    """What in the candidate breaks the policy, each with its line; [] when it complies."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # reported as a compile error when the candidate loads
    f = _index(tree)
    found = _reference_model_uses(tree, f)
    model_new = f.classes.get("ModelNew")
    if model_new is None:
        return found
    forward = _method(f, "ModelNew", "forward")
    if forward is None:
        return [*found, "ModelNew does not define forward in the candidate file"]
    work: list[tuple[str | None, ast.FunctionDef]] = [(forward[0], forward[1])]
    seen: set[int] = set()
    while work:
        cls, fn = work.pop()
        if id(fn) in seen or _is_kernel(fn, f):
            continue
        seen.add(id(fn))
        where = f"{cls}.{fn.name}" if cls else fn.name
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                why = _call_violation(node, f)
                if why:
                    found.append(f"{where} {why} (line {node.lineno})")
                work.extend(_callees(node, cls, f))
            elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                found.append(f"{where} uses the @ operator, i.e. torch.matmul (line {node.lineno})")
        found += [f"{where} {why}" for why in _reference_violations(fn, f)]
    found += [f"module level {why}" for why in _reference_violations(_module_level(tree), f)]
    return list(dict.fromkeys(found))


def _module_level(tree: ast.Module) -> ast.Module:
    """The statements run at import, class bodies included, without the bodies of functions (unreached
    helpers may use torch; forward's reach is checked separately)."""

    def strip(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out += s.decorator_list and [ast.Expr(d) for d in s.decorator_list]
            elif isinstance(s, ast.ClassDef):
                out += strip(s.body)
            else:
                out.append(s)
        return out

    return ast.Module(body=strip(tree.body), type_ignores=[])


def _reference_violations(root: ast.AST, f: _File) -> list[str]:
    """Torch compute functions used as values (stored in a list, passed to functools.partial, ...), where the call
    itself is out of the AST's sight, and attribute lookups that bypass names (`__dict__`, `__getattribute__`)."""
    inner: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
        elif isinstance(node, ast.Call):
            inner.add(id(node.func))
    out = []
    for node in ast.walk(root):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRS:
            out.append(f"looks attributes up dynamically (.{node.attr}) (line {line})")
        elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            name = f.resolve(node)
            if name in DYNAMIC_RESOLVED:
                out.append(f"uses {name} (line {line})")
            elif name and _forbidden_torch_function(name):
                out.append(f"refers to {name}, a torch compute function (line {line})")
    return out


def _forbidden_torch_function(name: str) -> bool:
    """A torch function (not a class, dtype or module) the policy does not allow; unknown names are not."""
    if not name.startswith("torch") or _allowed_torch(name):
        return False
    obj: object = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj) and not isinstance(obj, type)


def _index(tree: ast.Module) -> _File:
    f = _File()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            f.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            f.classes[node.name] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                f.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                f.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):  # second pass: assignments that need the aliases
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            _note_assignment(node.targets[0], node.value, f)
    return f


def _note_assignment(target: ast.expr, value: ast.expr, f: _File) -> None:
    called = f.resolve(value.func) if isinstance(value, ast.Call) else None
    callee = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
    is_ext = bool(called and called.rsplit(".", 1)[-1] in ("load_inline", "load")) or callee in ("load_inline", "load")
    if isinstance(target, ast.Name):
        if is_ext:
            f.ext_names.add(target.id)
        alias = f.resolve(value)
        if alias and alias.startswith("torch"):
            f.aliases[target.id] = alias  # F = torch.nn.functional
        return
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return
    if is_ext:
        f.ext_attrs.add(target.attr)
    if callee in f.classes:
        f.obj_attrs[target.attr] = callee
    for sub in ast.walk(value):
        name = f.resolve(sub.func) if isinstance(sub, ast.Call) else None
        if name and name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] not in CONTAINERS:
            if name.rsplit(".", 1)[-1][:1].isupper():
                f.nn_attrs[target.attr] = name
                break


def _reference_model_uses(tree: ast.Module, f: _File) -> list[str]:
    """The reference Model may not be imported, subclassed or called (a copy defined in the file is checked
    like any other class)."""
    if "Model" in f.classes:
        return []
    for node in ast.walk(tree):
        hit = (
            (isinstance(node, ast.Name) and node.id == "Model")
            or (isinstance(node, ast.Attribute) and node.attr == "Model")
            or (isinstance(node, ast.alias) and "Model" in (node.name, node.asname))
            or (isinstance(node, ast.Constant) and node.value == "Model")
        )
        if hit:
            return [f"the candidate uses the reference Model (line {getattr(node, 'lineno', '?')})"]
    return []


def _method(f: _File, cls: str, name: str, depth: int = 0) -> tuple[str, ast.FunctionDef] | None:
    """A method of a class defined in the file, looked up through bases also defined there."""
    node = f.classes.get(cls)
    if node is None or depth > 10:
        return None
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == name:
            return cls, item
    for base in node.bases:
        if isinstance(base, ast.Name):
            found = _method(f, base.id, name, depth + 1)
            if found:
                return found
    return None


def _is_kernel(fn: ast.FunctionDef, f: _File) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = f.resolve(target) or ""
        if name.startswith("triton"):
            return True
    return False


def _self_attr(node: ast.expr) -> str | None:
    """'attr' for self.attr, self.attr[...] and self.attr.forward."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr in ("forward", "__call__"):
        inner = _self_attr(node.value)
        if inner:
            return inner
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _call_violation(call: ast.Call, f: _File) -> str:
    func = call.func
    attr = _self_attr(func)
    if attr in f.nn_attrs:
        return f"calls self.{attr}, a {f.nn_attrs[attr]} module"
    name = f.resolve(func)
    if (isinstance(func, ast.Name) and func.id == "getattr" and name is None) or name == "builtins.getattr":
        return _getattr_violation(call, f)
    if name in DYNAMIC_RESOLVED:
        return f"runs dynamic code ({name})"
    if name is not None:
        return "" if not name.startswith("torch") or _allowed_torch(name) else f"calls {name}"
    if isinstance(func, ast.Name):
        if func.id in DYNAMIC:
            return f"runs dynamic code ({func.id})"
        return ""
    if isinstance(func, ast.Attribute) and func.attr in FORBIDDEN_METHODS:
        recv = func.value
        if isinstance(recv, ast.Name) and recv.id in f.ext_names:
            return ""
        if isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id == "self":
            if recv.attr in f.ext_attrs:
                return ""
        if isinstance(recv, ast.Name) and recv.id == "self":
            return ""  # the module's own method or attribute, never a tensor
        if isinstance(recv, ast.Name) and recv.id in f.classes:
            return ""
        return f"calls .{func.attr}(), a PyTorch tensor op"
    return ""


def _getattr_violation(call: ast.Call, f: _File) -> str:
    """getattr(obj, "name") is obj.name; a computed name could be anything."""
    if len(call.args) < 2 or not (isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)):
        return "looks up an attribute by a computed name (getattr)"
    attr, base = call.args[1].value, f.resolve(call.args[0])
    if base and base.startswith("torch"):
        full = f"{base}.{attr}"
        return f"looks up {full} (getattr)" if _forbidden_torch_function(full) or attr in DYNAMIC_ATTRS else ""
    if attr in FORBIDDEN_METHODS or attr in DYNAMIC_ATTRS:
        return f"looks up .{attr} (getattr), a PyTorch tensor op"
    return ""


def _allowed_torch(name: str) -> bool:
    if name in ALLOWED_TORCH or name.startswith(ALLOWED_TORCH_PREFIXES):
        return True
    parts = name.split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) > 2:
        return parts[2] not in BUILTIN_OPS_NAMESPACES  # the candidate's own registered ops
    if parts[:2] == ["torch", "Tensor"] and len(parts) == 3:
        return parts[2] in ALLOWED_METHODS
    return False


def _callees(call: ast.Call, cls: str | None, f: _File) -> list[tuple[str | None, ast.FunctionDef]]:
    """Functions of the candidate file this call runs: module functions, own methods, in-file classes."""
    func = call.func
    out: list[tuple[str | None, ast.FunctionDef] | None] = []
    if isinstance(func, ast.Name):
        if func.id in f.functions:
            out.append((None, f.functions[func.id]))
        elif func.id in f.classes:
            out += [_method(f, func.id, m) for m in ("forward", "__call__")]
    elif isinstance(func, ast.Attribute):
        recv = func.value
        if isinstance(recv, ast.Name) and recv.id == "self" and cls:
            out.append(_method(f, cls, func.attr))
            if func.attr in f.obj_attrs:
                out += [_method(f, f.obj_attrs[func.attr], m) for m in ("forward", "__call__")]
        elif isinstance(recv, ast.Name) and recv.id in f.classes:
            out.append(_method(f, recv.id, "forward" if func.attr == "apply" else func.attr))
        elif isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" and cls:
            for base in f.classes[cls].bases:
                if isinstance(base, ast.Name):
                    out.append(_method(f, base.id, func.attr))
    attr = _self_attr(func)
    if attr in f.obj_attrs and not isinstance(func, ast.Attribute):
        out += [_method(f, f.obj_attrs[attr], m) for m in ("forward", "__call__")]
    return [x for x in out if x is not None]
