import ast, contextlib, io, os, runpy, sys, time, types
tag, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
root = os.getcwd()
sys.dont_write_bytecode = True
start = time.monotonic()
script_abs = os.path.abspath(script)
base = os.path.dirname(script_abs)
sys.path.insert(0, base)

def ours():
    for k, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None) or ""
        if os.path.abspath(f).startswith(root + os.sep):
            del sys.modules[k]

def run(path=None, code=None):
    ours()
    out = io.StringIO()
    sys.argv = [script] + args
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            if path == script_abs:
                exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
            else:
                if path:
                    name = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                    m = types.ModuleType(name)
                    m.__file__ = path
                    sys.modules[name] = m
                    exec(code, m.__dict__)
                runpy.run_path(script, run_name="__main__")
        return None, out.getvalue()
    except SystemExit as e:
        return (None if e.code in (None, 0) else "SystemExit"), out.getvalue()
    except BaseException as e:
        return type(e).__name__, out.getvalue()

failed, _ = run()
if failed != "TypeError":
    sys.exit(0)
files = [script_abs]
for m in list(sys.modules.values()):
    f = os.path.abspath(getattr(m, "__file__", None) or "")
    if f.startswith(base + os.sep) and f.endswith(".py") and f not in files:
        files.append(f)

TEXT_METHODS = {"split", "rsplit", "strip", "lstrip", "rstrip", "readline", "read", "readlines", "splitlines", "partition", "rpartition", "getenv"}
def texty(n):
    while isinstance(n, ast.Subscript):
        if ast.unparse(n.value) in ("sys.argv", "os.environ"):
            return True
        n = n.value
    if not isinstance(n, ast.Call):
        return False
    f = n.func
    if isinstance(f, ast.Name):
        return f.id == "input"
    if isinstance(f, ast.Attribute):
        return f.attr in TEXT_METHODS or ast.unparse(f) == "os.environ.get"
    return False

def names_in(t):
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [x for e in t.elts for x in names_in(e)]
    return []

def scopes(tree):
    yield tree
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n

def own(scope):
    # The nodes of a scope, not those of the functions nested in it.
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))

def edits(src):
    # (line, col, end col, new text) on one line each: text made numbers
    # where it enters the program; argparse options given a type.
    tree = ast.parse(src)
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument" \
                and n.lineno == n.end_lineno and not any(k.arg in ("type", "action") for k in n.keywords):
            for conv in ("int", "float"):
                out.append((n.lineno, n.end_col_offset - 1, n.end_col_offset - 1, ", type=%s" % conv))
    for n in ast.walk(tree):
        # Text used where it comes in: `f(sys.argv[2])`.
        p = parents.get(n)
        if texty(n) and n.lineno == n.end_lineno and not isinstance(p, (ast.Assign, ast.For, ast.Subscript, ast.Attribute)) \
                and not (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in ("int", "float", "str", "len")):
            for conv in ("int", "float"):
                out.append((n.lineno, n.col_offset, n.end_col_offset, conv))
    for scope in scopes(tree):
        bound = set()
        def from_text(v):
            if texty(v):
                return True
            while isinstance(v, ast.Subscript):
                v = v.value
            return isinstance(v, ast.Name) and v.id in bound
        for _ in range(3):
            for n in own(scope):
                if isinstance(n, ast.Assign) and from_text(n.value):
                    for t in n.targets:
                        bound.update(names_in(t))
                elif isinstance(n, ast.For) and from_text(n.iter):
                    bound.update(names_in(n.target))
        for n in sorted(own(scope), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in bound):
                continue
            p = parents.get(n)
            if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in ("int", "float", "str", "len"):
                continue
            if isinstance(p, ast.Call) and p.func is n:
                continue
            for conv in ("int", "float"):
                out.append((n.lineno, n.col_offset, n.end_col_offset, conv))
    return out

tried = 0
for path in files[:6]:
    try:
        src = open(path, encoding="utf-8").read()
    except OSError:
        continue
    lines = src.split("\n")
    if len(lines) > 2000:
        continue
    try:
        found = edits(src)
    except SyntaxError:
        continue
    for line, col, end, new in found:
        if time.monotonic() - start > 8 or tried >= 120:
            sys.exit(0)
        old = lines[line - 1]
        raw = old.encode("utf-8")
        if col == end:
            changed = raw[:col] + new.encode() + raw[end:]
        else:
            changed = raw[:col] + ("%s(" % new).encode() + raw[col:end] + b")" + raw[end:]
        changed = changed.decode("utf-8", "replace")
        text = "\n".join(lines[:line - 1] + [changed] + lines[line:])
        tried += 1
        try:
            code = compile(text, path, "exec")
        except SyntaxError:
            continue
        failed, printed = run(path, code)
        if failed is None:
            rel = os.path.relpath(path, root)
            print("%s %s:%d" % (tag, rel, line))
            print("  was: %s" % old.strip())
            print("  now: %s" % changed.strip())
            for l in printed.splitlines()[:4]:
                print("  out: %s" % l[:160])
            sys.exit(0)
