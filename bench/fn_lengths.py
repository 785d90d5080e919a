#!/usr/bin/env python3
"""Functions and files a reader cannot hold (issue 34): every production
function over LIMIT lines (default 120) and every file over 800 lines
before its test module, largest first.

    bench/fn_lengths.py [LIMIT]

A function runs from its `fn` line to the first line that is its
indentation's closing brace; test modules (`#[cfg(test)]` to the end of
the file) and files under a `tests/` folder are left out.
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
LIM=int(sys.argv[1]) if len(sys.argv)>1 else 120
res=[]; files=[]
for dp,dn,fn in os.walk(os.path.join(ROOT, 'src')):
    for f in fn:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f); lines=open(p).read().split('\n')
        end=len(lines)
        for i,l in enumerate(lines):
            if l.startswith('#[cfg(test)]'):
                end=i; break
        if '/tests/' in p or p.endswith('/tests.rs'):
            continue
        files.append((end,os.path.relpath(p, ROOT)))
        for i in range(end):
            m=re.match(r'^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)',lines[i])
            if not m: continue
            ind=m.group(1)
            # signature may end with ';' (trait decl)
            j=i
            while j<end and '{' not in lines[j] and not lines[j].rstrip().endswith(';'): j+=1
            if j<end and lines[j].rstrip().endswith(';') and '{' not in lines[j]: continue
            if lines[j].rstrip().endswith('}') and lines[j].count('{')==lines[j].count('}'): continue
            k=j+1
            while k<end and lines[k].rstrip()!=ind+'}': k+=1
            n=k-i+1
            if n>LIM: res.append((n,os.path.relpath(p, ROOT),i+1,m.group(7)))
for r in sorted(res,reverse=True): print(*r)
print('fns over',LIM,':',len(res))
big=[f for f in files if f[0]>800]
for f in sorted(big,reverse=True): print('FILE',*f)
print('files over 800:',len(big))
