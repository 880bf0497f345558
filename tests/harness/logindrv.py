#!/usr/bin/python3
"""logindrv: drive a real login program (ssh, su, su -l, login, sudo) on a pty.

Test code for tests/integration/logins_*.sh (through tests/harness/logins.sh).
Run it with /usr/bin/python3 (Debian's python3-pexpect).

The driver spawns the login program on a pseudo-terminal, answers its
prompts -- the token PIN prompt of pam_kubehsm ("PIN for token 'L': ") with
--pin, password prompts (su, login, sshd password auth, sudo) with
--password -- and waits for the interactive shell of the new login.  It
then runs commands in that shell.  A command runs as `( CMD ) </dev/null`
(or with the login's terminal as stdin, for commands that prompt, such as
`su svc -c ...` inside a login); its stdout, stderr and exit status are
written by the login's own shell to files in the control directory, so
nothing depends on parsing terminal output.  Prompts that appear while a
command runs are answered too.

Each prompt kind is answered at most --tries times (default 1) while
logging in, and again at most --tries times by each --tty command: a login
program that asks again means the answer was refused, and answering again
could cost another token attempt.  A command run with stdin from /dev/null
must not prompt at all: a prompt then interrupts it (Ctrl-C) and fails it
with status 204.

Modes
  run [-c CMD]... -- ARGV...
      Log in, run each CMD in turn (stdout/stderr passed through), log out.
      Exit status: the last command's, 0 with no command; 201 when the
      login failed, 202 on a timeout, 203 on a driver error.
  open --ctl DIR -- ARGV...
      Log in and keep the login open (run it in the background).  DIR/state
      says "ready", "failed: REASON" or "closed STATUS".  Commands arrive
      on the FIFO DIR/cmd (use `call`); "exit" there logs out.
  call DIR [--tty] CMD
      Run CMD in the open login DIR; prints its stdout/stderr, exits with
      its status (202 on timeout, 201 when the login is gone, 204 when a
      command without --tty prompted).  --pin/--password given to call
      answer this command's prompts instead of those given to open.
  close DIR
      Log out of the open login DIR; exits with the login program's status.

Common options (before the mode): --pin PIN, --password PW, --tries N,
--timeout SECONDS (default 120), --log FILE (transcript of the terminal,
with one "[logindrv] ..." line per prompt answered), --setenv NAME=VALUE
(in the login program's environment only; repeatable).
"""
import argparse
import base64
import json
import os
import re
import select
import shlex
import signal
import sys
import tempfile
import time

EXIT_LOGIN_FAILED = 201
EXIT_TIMEOUT = 202
EXIT_DRIVER = 203
EXIT_PROMPTED = 204

PIN_RE = re.compile(rb"PIN for token '[^'\r\n]*': ?")
PASSWORD_RE = re.compile(rb"pass(?:word|phrase)[^\r\n:]*: ?", re.I)
PROMPT_RE = re.compile(b"(?P<pin>" + PIN_RE.pattern + b")|(?P<password>" +
                       PASSWORD_RE.pattern + b")", re.I)
# The shell prompt of a fresh login (Debian's default PS1 ends in "$ " or
# "# "), then our own after the set-up line.
SHELL_RE = rb"[$#] $"
READY_RE = rb"kh-ready[$#] "
LOGIN_AGAIN_RE = rb"(?i)login incorrect|\nlogin: $"


class LoginFailed(Exception):
    pass


class Timeout(Exception):
    pass


def die(msg, code=EXIT_DRIVER):
    sys.stderr.write("logindrv: %s\n" % msg)
    sys.exit(code)


def _running(pid):
    """Whether process pid exists and is not a zombie (it is not reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _hangup_tolerant_spawn(pexpect):
    """pexpect.spawn that outlives its program's vhangup().

    util-linux login(1) (Debian 13's) calls vhangup() on its terminal and
    then opens it again: a read of the pty in between fails with EIO, which
    pexpect takes for the end of the program, and the login is lost.  While
    the program still runs that is not its end: read again a moment later."""
    class Spawn(pexpect.spawn):
        def read_nonblocking(self, size=1, timeout=-1):
            try:
                return super().read_nonblocking(size, timeout)
            except pexpect.EOF:
                if not _running(self.pid):
                    raise
                self.flag_eof = False
                time.sleep(0.05)
                return b""
    return Spawn


class Login:
    """One login program on a pty, with the shell it opens."""

    def __init__(self, argv, opts, iodir):
        import pexpect  # only the modes that spawn need it
        self.pexpect = pexpect
        self.opts = opts
        self.iodir = iodir
        self.answered = {"pin": 0, "password": 0}
        self.log = open(opts.log, "ab", buffering=0) if opts.log else None
        env = dict(os.environ)
        env.setdefault("TERM", "xterm")
        for kv in opts.setenv or []:
            name, _, value = kv.partition("=")
            env[name] = value
        self.p = _hangup_tolerant_spawn(pexpect)(argv[0], argv[1:], env=env, timeout=opts.timeout,
                                                  dimensions=(40, 200), echo=False)
        self.p.logfile_read = self.log
        self.seq = 0

    def note(self, text):
        if self.log:
            self.log.write(b"\n[logindrv] " + text.encode() + b"\n")

    def tail(self):
        before = self.p.before if isinstance(self.p.before, bytes) else b""
        return before[-400:].decode("utf-8", "replace").strip()

    def answer(self, kind, prompt, secrets=None):
        """Answer a PIN or password prompt, at most --tries times each."""
        secrets = secrets or {}
        secret = secrets.get(kind) or (self.opts.pin if kind == "pin" else self.opts.password)
        what = "PIN" if kind == "pin" else "password"
        prompt = prompt.decode("utf-8", "replace").strip()
        if secret is None:
            raise LoginFailed("asked for a %s, none given (%s)" % (what, prompt))
        if self.answered[kind] >= self.opts.tries:
            raise LoginFailed("asked for the %s again (%s)" % (what, prompt))
        self.answered[kind] += 1
        self.note("answered %s prompt %r" % (kind, prompt))
        self.p.sendline(secret)

    def login(self):
        """Answer prompts until the login's shell is ready."""
        pexpect = self.pexpect
        deadline = time.monotonic() + self.opts.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no shell after %ds" % self.opts.timeout)
            i = self.p.expect([PIN_RE, PASSWORD_RE, LOGIN_AGAIN_RE, SHELL_RE,
                               pexpect.EOF, pexpect.TIMEOUT], timeout=left)
            if i in (0, 1):
                self.answer("pin" if i == 0 else "password", self.p.after)
            elif i == 2:
                raise LoginFailed("refused: " + (self.tail() or "login incorrect"))
            elif i == 3:
                break
            elif i == 4:
                raise LoginFailed("the login program ended: " + (self.tail() or "(no output)"))
            else:
                raise Timeout("no shell after %ds: %s" % (self.opts.timeout, self.tail()))
        self.note("shell ready")
        # Our own prompt, no history file, no terminal echo.
        self.p.sendline("unset HISTFILE PROMPT_COMMAND; stty -echo; PS1='kh-ready\\$ '; PS2=")
        i = self.p.expect([READY_RE, pexpect.EOF, pexpect.TIMEOUT], timeout=self.opts.timeout)
        if i != 0:
            raise LoginFailed("the shell did not take the set-up line: " + self.tail())

    def command(self, cmd, tty=False, ident=None, secrets=None):
        """Run cmd in the login's shell; (stdout, stderr, status) as bytes/int.

        With tty the command's stdin and stderr are the terminal (PAM's
        text conversation prompts on stderr), and what the terminal showed
        is returned as its stderr."""
        pexpect = self.pexpect
        self.seq += 1
        ident = ident or "c%d" % self.seq
        base = os.path.join(self.iodir, ident)
        out, err, rc = base + ".out", base + ".err", base + ".rc"
        for f in (out, err, rc, rc + ".t"):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass
        b64 = base64.b64encode(cmd.encode()).decode()
        redir = "" if tty else " </dev/null 2>%s" % shlex.quote(err)
        self.note("command %s: %s" % (ident, cmd))
        self.p.sendline('( eval "$(printf %%s %s | base64 -d)" )%s >%s; '
                        'echo $? >%s.t; mv -f %s.t %s'
                        % (b64, redir, shlex.quote(out),
                           shlex.quote(rc), shlex.quote(rc), shlex.quote(rc)))
        deadline = time.monotonic() + self.opts.timeout
        self.answered = {"pin": 0, "password": 0}
        seen, scanned, prompted = b"", 0, None
        while not os.path.exists(rc):
            if time.monotonic() > deadline:
                raise Timeout("command %s did not finish in %ds" % (ident, self.opts.timeout))
            try:
                seen += self.p.read_nonblocking(4096, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                raise LoginFailed("the login ended during command %s" % ident)
            m = PROMPT_RE.search(seen, scanned)
            if m is None:
                continue
            scanned = m.end()
            if not tty:
                # Nothing may prompt a command whose stdin is /dev/null.
                prompted = m.group(0).decode("utf-8", "replace").strip()
                self.note("unexpected prompt %r: interrupting" % prompted)
                self.p.sendcontrol("c")
            else:
                self.answer(m.lastgroup, m.group(0), secrets)
        with open(rc, "rb") as f:
            status = int(f.read().strip() or b"255")
        with open(out, "rb") as f:
            o = f.read()
        if tty:
            e = re.sub(rb"\x1b(\[[0-9;?]*[a-zA-Z]|\][^\x07]*\x07)|\r", b"", seen)
            e = e.replace(b"kh-ready$ ", b"").replace(b"kh-ready# ", b"")
        else:
            with open(err, "rb") as f:
                e = f.read()
            os.unlink(err)
        for f in (out, rc):
            os.unlink(f)
        if prompted is not None:
            return o, e + ("logindrv: the command prompted: %s\n" % prompted).encode(), EXIT_PROMPTED
        return o, e, status

    def logout(self):
        """Leave the shell; the login program's exit status (128+N on signal N)."""
        pexpect = self.pexpect
        self.note("logout")
        if self.p.isalive():
            self.p.sendline("exit")
            i = self.p.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=self.opts.timeout)
            if i != 0:
                self.p.close(force=True)
                raise Timeout("the login did not end after exit")
        return self.close()

    def close(self):
        self.p.close(force=True)
        if self.p.signalstatus is not None:
            return 128 + self.p.signalstatus
        return self.p.exitstatus if self.p.exitstatus is not None else 255


def make_iodir(parent):
    """A directory the login's shell (any uid) can write its results to."""
    d = tempfile.mkdtemp(prefix="io.", dir=parent)
    os.chmod(d, 0o1777)
    return d


def mode_run(opts):
    iodir = make_iodir(opts.iodir or os.environ.get("KH_TMP") or "/tmp")
    status = 0
    try:
        lg = Login(opts.argv, opts, iodir)
        try:
            lg.login()
            for cmd in opts.cmd or []:
                o, e, status = lg.command(cmd)
                sys.stdout.buffer.write(o)
                sys.stdout.flush()
                sys.stderr.buffer.write(e)
                sys.stderr.flush()
            lg.logout()
        except LoginFailed as ex:
            lg.close()
            die("login failed: %s" % ex, EXIT_LOGIN_FAILED)
        except Timeout as ex:
            lg.close()
            die("timeout: %s" % ex, EXIT_TIMEOUT)
    finally:
        for f in os.listdir(iodir):
            os.unlink(os.path.join(iodir, f))
        os.rmdir(iodir)
    sys.exit(status)


def set_state(ctl, text):
    tmp = os.path.join(ctl, "state.t")
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.rename(tmp, os.path.join(ctl, "state"))


def mode_open(opts):
    ctl = opts.ctl
    os.makedirs(ctl, mode=0o755, exist_ok=True)
    iodir = os.path.join(ctl, "io")
    os.makedirs(iodir, exist_ok=True)
    os.chmod(iodir, 0o1777)
    fifo = os.path.join(ctl, "cmd")
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o600)
    # O_RDWR: the FIFO never reports EOF between two clients.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    lg = None

    def on_term(signum, frame):
        if lg is not None:
            lg.close()
        set_state(ctl, "closed 143")
        os._exit(143)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    try:
        lg = Login(opts.argv, opts, iodir)
        lg.login()
    except (LoginFailed, Timeout) as ex:
        if lg is not None:
            lg.close()
        set_state(ctl, "failed: %s" % ex)
        sys.exit(EXIT_LOGIN_FAILED)
    set_state(ctl, "ready")
    buf = b""
    while True:
        r, _, _ = select.select([fd, lg.p.child_fd], [], [], 1.0)
        if lg.p.child_fd in r:
            # Keep the terminal drained; a prompt while idle is unexpected.
            try:
                lg.p.read_nonblocking(4096, 0)
            except lg.pexpect.EOF:
                status = lg.close()
                set_state(ctl, "closed %d" % status)
                sys.exit(0)
            except lg.pexpect.TIMEOUT:
                pass
        if fd not in r:
            continue
        buf += os.read(fd, 65536)
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            line = line.decode().strip()
            if not line:
                continue
            if line == "exit":
                try:
                    status = lg.logout()
                except Timeout:
                    status = 255
                set_state(ctl, "closed %d" % status)
                sys.exit(0)
            req = json.loads(line)
            ident = req["id"]
            try:
                o, e, status = lg.command(req["cmd"], tty=req["tty"], ident=ident + ".run",
                                          secrets={"pin": req.get("pin"),
                                                   "password": req.get("password")})
            except (LoginFailed, Timeout) as ex:
                o, e, status = b"", ("logindrv: %s\n" % ex).encode(), EXIT_TIMEOUT
                if not lg.p.isalive():
                    status = EXIT_LOGIN_FAILED
            base = os.path.join(ctl, ident)
            for suffix, data in ((".out", o), (".err", e)):
                with open(base + suffix, "wb") as f:
                    f.write(data)
            with open(base + ".rc.t", "w") as f:
                f.write("%d\n" % status)
            os.rename(base + ".rc.t", base + ".rc")
            if not lg.p.isalive():
                status = lg.close()
                set_state(ctl, "closed %d" % status)
                sys.exit(0)


def read_state(ctl):
    try:
        with open(os.path.join(ctl, "state")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def send(ctl, line):
    fd = os.open(os.path.join(ctl, "cmd"), os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, line.encode() + b"\n")
    finally:
        os.close(fd)


def mode_call(opts):
    ctl = opts.ctl
    state = read_state(ctl)
    if state != "ready":
        die("login %s is not open (%s)" % (ctl, state or "no state"), EXIT_LOGIN_FAILED)
    ident = "r%d.%d" % (os.getpid(), int(time.monotonic() * 1000))
    send(ctl, json.dumps({"id": ident, "tty": opts.tty, "cmd": opts.command,
                          "pin": opts.pin, "password": opts.password}))
    base = os.path.join(ctl, ident)
    deadline = time.monotonic() + opts.timeout + 10
    while not os.path.exists(base + ".rc"):
        if time.monotonic() > deadline:
            die("timeout waiting for %s" % ctl, EXIT_TIMEOUT)
        if read_state(ctl).startswith("closed"):
            if os.path.exists(base + ".rc"):
                break
            die("login %s ended" % ctl, EXIT_LOGIN_FAILED)
        time.sleep(0.02)
    with open(base + ".rc") as f:
        status = int(f.read().strip())
    for suffix, stream in ((".out", sys.stdout.buffer), (".err", sys.stderr.buffer)):
        with open(base + suffix, "rb") as f:
            stream.write(f.read())
        stream.flush()
        os.unlink(base + suffix)
    os.unlink(base + ".rc")
    sys.exit(status)


def mode_close(opts):
    ctl = opts.ctl
    if read_state(ctl) == "ready":
        send(ctl, "exit")
    deadline = time.monotonic() + opts.timeout + 10
    while not read_state(ctl).startswith("closed"):
        if time.monotonic() > deadline:
            die("timeout waiting for %s to close" % ctl, EXIT_TIMEOUT)
        if read_state(ctl).startswith("failed"):
            die("login %s never opened" % ctl, EXIT_LOGIN_FAILED)
        time.sleep(0.02)
    sys.exit(int(read_state(ctl).split()[1]))


def parse(argv):
    ap = argparse.ArgumentParser(prog="logindrv.py", description=__doc__.split("\n")[0])
    ap.add_argument("--pin")
    ap.add_argument("--password")
    ap.add_argument("--tries", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--log")
    ap.add_argument("--setenv", action="append", metavar="NAME=VALUE")
    ap.add_argument("--iodir", help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("-c", dest="cmd", action="append")
    r.add_argument("argv", nargs="+")
    o = sub.add_parser("open")
    o.add_argument("--ctl", required=True)
    o.add_argument("argv", nargs="+")
    c = sub.add_parser("call")
    c.add_argument("ctl")
    c.add_argument("--tty", action="store_true")
    c.add_argument("command")
    x = sub.add_parser("close")
    x.add_argument("ctl")
    return ap.parse_args(argv)


def main():
    opts = parse(sys.argv[1:])
    {"run": mode_run, "open": mode_open, "call": mode_call, "close": mode_close}[opts.mode](opts)


if __name__ == "__main__":
    main()
