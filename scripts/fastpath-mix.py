#!/usr/bin/env python3
"""fastpath-mix.py STRACE_FILE [CWD] -- which trapped calls of a native run
the fast path of docs/fastpath.md could take.

STRACE_FILE is the output of
  strace -f -qq -o FILE -e signal=none \
    -e trace=readlink,readlinkat,openat,newfstatat,statx,access,faccessat,\
faccessat2,stat,lstat,execve,getdents64,unlink,unlinkat,mkdir,rename,\
renameat2,chdir,getcwd,chmod COMMAND
run natively, with the command started in CWD (default: the current
directory; relative paths are taken against it, which holds for the
workloads here: none of their processes changes directory before its path
calls). Run it soon after the trace: the symlink checks look at the file
system as it is now.

Each call is put in one class, in this order:
  other      not a lookup the fast path serves (exec, getcwd, a change, a
             listing, an open for writing)
  fd         by descriptor (fstatat AT_EMPTY_PATH, a dirfd): fast after a
             check of the descriptor's object against the changed set
  changed    a path the run itself creates, writes, removes or renames
             (anywhere in the run, so an upper bound)
  symlink    a directory on the way is a symlink (merged /usr's /lib), or
             the last component is one and the call follows it
  relative   relative to the working directory: fast only with the cwd rule
  fast       absolute, unchanged, no symlink to resolve
and printed as counts per call and class.
"""
import collections
import os
import re
import sys

LINE = re.compile(r'^(\d+)\s+(.*)$')
CALL = re.compile(r'^(\w+)\((.*)\)\s+=\s+(-?\d+|\?)')
LOOKUPS = {'readlink', 'readlinkat', 'openat', 'newfstatat', 'statx', 'access',
           'faccessat', 'faccessat2', 'stat', 'lstat'}
WRITE_FLAGS = ('O_WRONLY', 'O_RDWR', 'O_CREAT', 'O_TRUNC', 'O_TMPFILE')


def calls(path):
    """Yields (pid, name, args, ret) for every completed call."""
    pending = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line.rstrip('\n'))
            if not m:
                continue
            pid, rest = m.groups()
            if rest.endswith('<unfinished ...>'):
                pending[pid] = rest[:-len('<unfinished ...>')].rstrip()
                continue
            r = re.match(r'^<\.\.\. (\w+) resumed>\s?(.*)$', rest)
            if r:
                rest = pending.pop(pid, r.group(1) + '(') + r.group(2)
            c = CALL.match(rest)
            if c:
                yield pid, c.group(1), c.group(2), c.group(3)


def strings(args):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', args)


def first_arg(args):
    return args.split(',', 1)[0].strip()


def absolute(p, cwd):
    return os.path.normpath(os.path.join(cwd, p))


def lexically_plain(p):
    parts = p.split('/')[1:]
    return all(c not in ('', '.', '..') for c in parts)


def follows(name, args):
    if name in ('readlink', 'readlinkat', 'lstat'):
        return False
    if name == 'openat':
        return 'O_NOFOLLOW' not in args
    return 'AT_SYMLINK_NOFOLLOW' not in args


def main():
    trace = sys.argv[1]
    cwd = sys.argv[2] if len(sys.argv) > 2 else os.getcwd()
    all_calls = list(calls(trace))
    changed = set()
    for _, name, args, _ in all_calls:
        s = strings(args)
        if not s:
            continue
        if (name == 'openat' and any(f in args for f in WRITE_FLAGS)) or \
                name in ('unlink', 'unlinkat', 'mkdir', 'rename', 'renameat2', 'chmod'):
            for p in s:
                changed.add(absolute(p, cwd))
    counts = collections.defaultdict(collections.Counter)
    dirs = {}

    def dir_has_symlink(d):
        if d not in dirs:
            dirs[d] = os.path.realpath(d) != d
        return dirs[d]

    for _, name, args, _ in all_calls:
        s = strings(args)
        cls = 'fast'
        if name not in LOOKUPS or (name == 'openat' and any(f in args for f in WRITE_FLAGS)):
            cls = 'other'
        elif not s or s[0] == '' or (name not in ('readlink', 'access', 'stat', 'lstat')
                                     and first_arg(args) != 'AT_FDCWD'):
            cls = 'fd'
        else:
            raw = s[0]
            p = absolute(raw, cwd)
            if p in changed:
                cls = 'changed'
            elif not lexically_plain(raw if raw.startswith('/') else '/' + raw) or \
                    dir_has_symlink(os.path.dirname(p)) or \
                    (follows(name, args) and os.path.islink(p)):
                cls = 'symlink'
            elif not raw.startswith('/'):
                cls = 'relative'
        counts[name][cls] += 1
    classes = ['fast', 'relative', 'symlink', 'changed', 'fd', 'other']
    total = collections.Counter()
    print('| call | ' + ' | '.join(classes) + ' | all |')
    print('|---|' + '--:|' * (len(classes) + 1))
    for name in sorted(counts, key=lambda n: -sum(counts[n].values())):
        c = counts[name]
        total.update(c)
        print(f'| {name} | ' + ' | '.join(str(c[k]) for k in classes) + f' | {sum(c.values())} |')
    print('| all | ' + ' | '.join(str(total[k]) for k in classes) + f' | {sum(total.values())} |')


if __name__ == '__main__':
    main()
