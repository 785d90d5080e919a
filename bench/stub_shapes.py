#!/usr/bin/env python3
# pass@k of request shapes for implementing a stub, on the DEV stub cases only
# (never the held-out half): each reply spliced into the stub file and judged
# by the case's own check (docs/results/eval.md, 2026-12-07).
#
#   bench/stub_shapes.py fn|whole|rules|examples K [CASE...]   (llama-server on :8080)
import json, sys, os, re, subprocess, tempfile, shutil, time, urllib.request, yaml
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'eval')
CASES = {  # case: (source file, function, spec file)
 'js-stub-chunk': ('lists.js', 'chunk', 'SPEC.md'),
 'js-stub-pluralize': ('words.js', 'pluralize', 'README.md'),
 'js-stub-title-case': ('headings.js', 'titleCase', 'docs/title-case.md'),
 'js-stub-truncate': ('text.js', 'truncate', 'README.md'),
 'py-stub-initials': ('names.py', 'initials', 'SPEC.md'),
 'py-stub-mask-email': ('privacy.py', 'mask_email', 'SPEC.md'),
}
def ask(system, user, temp, max_tokens=1024):
    body = {'model': 'x', 'messages': [{'role': 'system', 'content': system}, {'role': 'user', 'content': user}],
            'temperature': temp, 'max_tokens': max_tokens, 'stream': False}
    req = urllib.request.Request('http://127.0.0.1:8080/v1/chat/completions', data=json.dumps(body).encode(), headers={'content-type': 'application/json'})
    return json.load(urllib.request.urlopen(req, timeout=900))['choices'][0]['message']['content'] or ''
def block(text):
    m = re.findall(r'```[a-zA-Z]*\n(.*?)```', text, re.S)
    return max(m, key=len) if m else None
def span(src, fn, lang):
    lines = src.split('\n')
    if lang == 'py':
        import ast
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and node.name == fn:
                start = node.lineno - 1 - len(node.decorator_list)
                return start, node.end_lineno
        return None
    for i, l in enumerate(lines):
        if re.match(r'\s*(export\s+)?(async\s+)?function\s+' + fn + r'\s*\(', l) or re.match(r'\s*(const|let)\s+' + fn + r'\s*=', l):
            depth = 0; seen = False
            for j in range(i, len(lines)):
                depth += lines[j].count('{') - lines[j].count('}')
                seen = seen or '{' in lines[j]
                if seen and depth <= 0:
                    return i, j + 1
    return None
def splice(src, fn, code, lang):
    # the reply may hold the whole file or the function alone
    if span(code, fn, lang) is None:
        return None
    s = span(src, fn, lang)
    c = span(code, fn, lang)
    cl = code.split('\n')
    if len(cl) > (c[1] - c[0]) + 3:  # whole file
        return code
    lines = src.split('\n')
    return '\n'.join(lines[:s[0]] + cl[c[0]:c[1]] + lines[s[1]:])
def prompt(variant, case):
    f, fn, spec = CASES[case]
    y = yaml.safe_load(open(f'{ROOT}/{case}/case.yaml'))
    d = f'{ROOT}/{case}/files'
    src = open(f'{d}/{f}').read(); sp = open(f'{d}/{spec}').read()
    lang = 'py' if f.endswith('.py') else 'javascript'
    head = f"The request: {y['prompt']}\n\n{spec}:\n```\n{sp}```\n\n"
    if variant == 'fn':
        return ("You write code. Reply with only the function asked for, in full, in one fenced code block.",
                head + f"{f} before the change:\n```{lang}\n{src}```\nWrite {fn} in full, doing everything the request says. Reply with only that function in one fenced code block.")
    if variant == 'whole':
        return ("You change code as asked. Reply with only the changed file, in full, in one fenced code block.",
                head + f"{f} is now:\n```{lang}\n{src}```\nWrite {f} in full, with the part of the request that is in {f} done. Keep everything else in it as it is.")
    if variant == 'rules':
        return ("You write code. Reply with only the function asked for, in full, in one fenced code block.",
                head + f"{f} before the change:\n```{lang}\n{src}```\nWrite {fn} in full, doing everything the request says. Inside it, before the code for each rule of {spec}, put a comment that quotes the rule. Reply with only that function in one fenced code block.")
    if variant == 'examples':
        return ("You write code. Reply with only the function asked for, in full, in one fenced code block.",
                head + f"{f} before the change:\n```{lang}\n{src}```\nWrite {fn} in full, doing everything the request says; it must give every example's result in {spec} exactly. Reply with only that function in one fenced code block.")
    raise SystemExit('variant?')
def check(case, new_src):
    f, fn, spec = CASES[case]
    y = yaml.safe_load(open(f'{ROOT}/{case}/case.yaml'))
    t = tempfile.mkdtemp()
    shutil.copytree(f'{ROOT}/{case}/files', t, dirs_exist_ok=True)
    open(f'{t}/{f}', 'w').write(new_src)
    r = subprocess.run(['sh', '-c', y['check']], cwd=t, capture_output=True, timeout=60)
    shutil.rmtree(t)
    return r.returncode == 0
variant, k = sys.argv[1], int(sys.argv[2])
temps = [0.2, 0.7, 0.9, 1.0, 0.7, 0.9, 1.0, 0.7]
cases = sys.argv[3:] or list(CASES)
total = 0
for case in cases:
    f, fn, spec = CASES[case]
    src = open(f'{ROOT}/{case}/files/{f}').read()
    lang = 'py' if f.endswith('.py') else 'js'
    sysm, user = prompt(variant, case)
    res = []
    t0 = time.time()
    for i in range(k):
        out = ask(sysm, user, temps[i % len(temps)])
        code = block(out)
        new = splice(src, fn, code, lang) if code else None
        ok = bool(new) and check(case, new)
        res.append('P' if ok else ('-' if new else 'x'))
    total += res.count('P')
    print(f"{variant:9} {case:22} {''.join(res)}  {time.time()-t0:.0f}s", flush=True)
print(f"{variant} total {total}/{k*len(cases)}")
