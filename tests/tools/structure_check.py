#!/usr/bin/python3
"""structure_check.py - the shape rules of doc/hacking.md, checked.

    structure_check.py SRCDIR [--report]

Product code is every .c/.h under src/, plugins/, sh5merge/ and mpi/.
Checked:
  * no product file directly in src/ (every file lives in its area);
  * no product C file over 800 lines;
  * no function over 80 lines (signature to closing brace), except the
    tables or state machines named in EXCEPTIONS, none over 150;
  * no circle between files: file A includes or calls into file B and B
    (directly or through others) into A (x.c and x.h count as one);
  * areas depend only downwards (ALLOWED below).
Prints every violation and exits 1 if there is any; --report also
prints the sizes it measured.
"""
import os
import re
import sys

AREAS = ['common', 'profile', 'events', 'stream', 'merge', 'sync',
         'export', 'mpi', 'plugins', 'sh5merge']
# area -> the areas it may include or call (besides itself)
ALLOWED = {
    'common': set(),
    'profile': {'common'},
    'events': {'common', 'profile'},
    'stream': {'common', 'profile'},
    'merge': {'common', 'profile', 'events'},
    'sync': {'common', 'profile', 'events', 'merge'},
    'export': {'common', 'profile', 'events', 'merge', 'sync'},
    'mpi': {'common', 'events'},
    'plugins': {'common', 'profile', 'events', 'stream'},
    'sh5merge': {'common', 'profile', 'events', 'stream', 'merge', 'sync',
                 'export'},
}
# At most three tables or state machines may be longer than 80 lines
# (never over 150): "file:function" -> why.
EXCEPTIONS = {
}
MAX_FILE = 800
MAX_FUNC = 80
MAX_EXC = 150

SIG_END = (';', '}', '*/', '{')


def area_of(rel):
    p = rel.split('/')
    if p[0] == 'src':
        return p[1] if len(p) > 2 else 'flat'
    return p[0]


def product_files(root):
    out = []
    for top in ('src', 'plugins', 'sh5merge', 'mpi'):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def functions(lines):
    """(name, first line, length, is_static) of each function body that
    opens with '{' alone in column 0 (the house style)."""
    res = []
    i = 0
    n = len(lines)
    while i < n:
        if lines[i] == '{':
            j = i
            while j > 0 and lines[j - 1].strip() and \
                    not lines[j - 1].rstrip().endswith(SIG_END) and \
                    not lines[j - 1].startswith('#'):
                j -= 1
            k = i + 1
            while k < n and lines[k] != '}':
                k += 1
            sig = ' '.join(lines[j:i])
            m = re.search(r'(\w+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*$',
                          sig.strip())
            name = m.group(1) if m else None
            if name and not re.search(r'=\s*$', sig):
                res.append((name, j + 1, k - j + 1,
                            bool(re.match(r'\s*static\b', sig))))
            i = k
        i += 1
    return res


TOKEN = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
INCL = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(\\.|[^"\\\n])*"')


def circles(edges):
    """The strongly connected components of more than one node (Tarjan,
    iterative)."""
    index, low, onstack, stack, sccs = {}, {}, set(), [], []
    counter = 0
    for v0 in sorted(edges):
        if v0 in index:
            continue
        index[v0] = low[v0] = counter
        counter += 1
        stack.append(v0)
        onstack.add(v0)
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    onstack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in onstack:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))
    return sccs


def main():
    root = sys.argv[1]
    report = '--report' in sys.argv
    files = product_files(root)
    bad = []
    text = {}
    for f in files:
        with open(os.path.join(root, f), errors='replace') as fh:
            text[f] = fh.read()
    module = {f: os.path.splitext(f)[0] for f in files}
    sizes = []
    for f in files:
        lines = text[f].split('\n')
        if area_of(f) == 'flat':
            bad.append('%s: product file directly in src/' % f)
        if f.endswith('.c'):
            if len(lines) - 1 > MAX_FILE:
                bad.append('%s: %d lines (at most %d)'
                           % (f, len(lines) - 1, MAX_FILE))
            sizes.append((len(lines) - 1, f))
        for name, line, length, static in functions(lines):
            key = '%s:%s' % (f, name)
            if length > MAX_FUNC:
                if key in EXCEPTIONS and length <= MAX_EXC:
                    pass
                else:
                    bad.append('%s:%d: %s() is %d lines (at most %d)'
                               % (f, line, name, length, MAX_FUNC))
    if len(EXCEPTIONS) > 3:
        bad.append('more than three exceptions to the function length')
    why = {}
    incl = {}
    for f in files:
        incl[f] = []
        for inc in INCL.findall(text[f]):
            cands = [os.path.normpath(os.path.join(os.path.dirname(f), inc)),
                     os.path.normpath(os.path.join('src', inc)),
                     os.path.normpath(inc)]
            for c in cands:
                if c in text:
                    incl[f].append((c, inc))
                    break
    # The graph: modules (x.c with x.h) and what each uses, by include
    # or by call.  A header without a .c of its name (an internal header)
    # is transparent: what includes it uses what it includes.
    has_c = {module[f] for f in files if f.endswith('.c')}
    cfile = {}
    for f in files:
        if f.endswith('.c'):
            for name, line, length, static in functions(
                    text[f].split('\n')):
                if not static:
                    cfile.setdefault(name, module[f])
    edges = {m: set() for m in has_c}
    for f in files:
        me = module[f]
        if me not in has_c:
            continue
        seen = set()
        todo = [(c, '%s: #include "%s"' % (f, inc)) for c, inc in incl[f]]
        while todo:
            c, w = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            t = module[c]
            if t == me:
                continue
            if t in has_c:
                edges[me].add(t)
                why.setdefault((me, t), w)
            else:
                todo.extend((c2, w) for c2, _ in incl[c])
        if not f.endswith('.c'):
            continue    # a header's prototypes are not calls
        body = STRING.sub('""', COMMENT.sub(' ', text[f]))
        for name in set(TOKEN.findall(body)):
            t = cfile.get(name)
            if t and t != me:
                edges[me].add(t)
                why.setdefault((me, t), '%s calls %s()' % (f, name))
    # Directions.
    for a in sorted(edges):
        for b in sorted(edges[a]):
            aa, ab = area_of(a + '.c'), area_of(b + '.c')
            if aa != ab and aa in ALLOWED and ab not in ALLOWED[aa]:
                bad.append('%s -> %s: %s may not use %s (%s)'
                           % (a, b, aa, ab, why[(a, b)]))
    for comp in circles(edges):
        members = set(comp)
        detail = ['%s -> %s (%s)' % (x, y, why[(x, y)])
                  for x in comp for y in sorted(edges[x]) if y in members]
        bad.append('circle between %s: %s'
                   % (', '.join(comp), '; '.join(detail)))
    if report:
        for n, f in sorted(sizes, reverse=True)[:15]:
            print('size %5d %s' % (n, f))
    for b in bad:
        print(b)
    print('structure: %d files, %d violations' % (len(files), len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
