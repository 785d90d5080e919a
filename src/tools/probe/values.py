import os, runpy, sys, types
tag, sys.argv = sys.argv[1], sys.argv[2:]
root = os.getcwd()
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    raise
except BaseException as e:
    tb, frames = e.__traceback__, []
    while tb:
        f = tb.tb_frame
        if os.path.abspath(f.f_code.co_filename).startswith(root + os.sep):
            frames.append((f, tb.tb_lineno))
        tb = tb.tb_next
    for f, line in reversed(frames[-2:]):
        where = os.path.relpath(f.f_code.co_filename, root)
        shown = []
        for k, v in list(f.f_locals.items()):
            if k.startswith("__") or isinstance(v, (types.ModuleType, types.FunctionType, type)):
                continue
            r = repr(v)
            shown.append("  %s = %s" % (k, r if len(r) <= 160 else r[:160] + "..."))
        if shown and f.f_code.co_name != "<module>":
            print("%s %s at %s:%d" % (tag, f.f_code.co_name, where, line))
            print("\n".join(shown[:12]))
    sys.exit(1)
