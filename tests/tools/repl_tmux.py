#!/usr/bin/env python3
"""Drives tsl-repl on a real terminal through tmux: tab completion, history
within a session, and history persisted in ~/.tsl_history across sessions.

usage: repl_tmux.py PATH/TO/tsl-repl WORKDIR
Prints what it checked; exits 1 on the first failure."""
import os
import shutil
import subprocess
import sys
import time

repl, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
session = f'tslrepl{os.getpid()}'


def tmux(*args):
    return subprocess.run(['tmux', *args], check=True, capture_output=True, text=True).stdout


def screen():
    return tmux('capture-pane', '-p', '-t', session)


def wait_for(text, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = screen()
        if text in s:
            return s
        time.sleep(0.1)
    print(f'FAIL: waited for {text!r}; screen was:\n{screen()}')
    tmux('kill-session', '-t', session)
    sys.exit(1)


def start():
    tmux('new-session', '-d', '-s', session, '-x', '120', '-y', '40',
         f'env HOME={work} TERM=xterm {repl}')
    wait_for('tsl>')


KEY_NAMES = {'Enter', 'Tab', 'Up', 'Down', 'C-u'}


def keys(*k):
    for item in k:
        if item in KEY_NAMES:
            tmux('send-keys', '-t', session, item)
        else:  # literal text; a trailing ';' would be a tmux separator
            tmux('send-keys', '-t', session, '-l', item[:-1] + '\\;' if item.endswith(';') else item)
        time.sleep(0.05)


start()
keys('dim SeqLen: dynamic;', 'Enter')
keys('let a: f32[SeqL', 'Tab')
wait_for('let a: f32[SeqLen')
print('ok: tab completed SeqL to SeqLen')
keys('];', 'Enter')
wait_for('a: f32[SeqLen]')
keys('Up')
wait_for('tsl> let a: f32[SeqLen];')
print('ok: up arrow recalls the previous entry')
keys('C-u', ':quit', 'Enter')
time.sleep(0.5)
hist = open(os.path.join(work, '.tsl_history')).read().replace('\\040', ' ')  # libedit's encoding
assert 'dim SeqLen: dynamic;' in hist, hist
print('ok: history saved to ~/.tsl_history')
subprocess.run(['tmux', 'kill-session', '-t', session], capture_output=True)
start()
keys('Up', 'Up', 'Up')  # :quit and the let come first
wait_for('tsl> dim SeqLen: dynamic;')
print('ok: history persists across sessions')
keys('C-u', 'fn f(x: f32[N]) -> f32[N] {', 'Enter')
wait_for('...>')
keys('return x;', 'Enter', '}', 'Enter', 'f(zeros([2]))', 'Enter')
wait_for('[0. 0.]')
print('ok: multi-line entry')
subprocess.run(['tmux', 'kill-session', '-t', session], capture_output=True)
