"""Getting into a running Python process and out again: the library behind
`pyust attach PID`.

How pyust gets into the process, by the target's interpreter:
- CPython 3.14 and later: sys.remote_exec (PEP 768). The interpreter runs a
  script of ours in its main thread at its next safe point. sys.remote_exec
  must be called by an interpreter of the target's version: this one when it
  is, else the target's own executable.
- CPython 3.10 to 3.13: gdb, which stops the process for a moment (about a
  second, most of it gdb reading symbols), maps one private page in it, writes
  a one-line trampoline there and schedules it with Py_AddPendingCall: the
  main thread runs it at its next safe point, as it runs a signal handler,
  never in the middle of the interpreter's or the C library's work. The page
  is unmapped again at the detach.
Either way the code that runs in the target is the step file of a private
control directory, which imports pyust (the target's own, else this
installation's) and runs pyust._attached; it answers with a result file in
the directory's answers/ (which the step names its control directory). The
main thread runs it when it next runs Python: one blocked in a system call (a
read, a sleep, a lock) takes it when the call returns.

Root attaching to another user's process trusts nothing of that user's:
- the control directory and every file pyust writes are root's (the target
  may read them); the one directory the target writes, answers/, is its
  user's, and root only reads it: each answer opened without following a link,
  a regular file of that user's, at most 64 KiB, read as a literal and checked;
  what the target says (its errors, its back end) reaches the terminal escaped;
- nothing of the process is run: its interpreter's version is read as data
  (pyust/attach_target.py, which checks a process before pyust gets in), and
  sys.remote_exec on 3.14+ comes from this interpreter or from an interpreter
  of the target's version that only root can have written.

Every failure a user can cause or fix raises AttachError with one line.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .args import user_name
from .attach_target import REMOTE_EXEC, AttachError, Target, escaped

# What the target runs first, in __main__'s namespace (gdb's pending call runs
# it with PyRun_SimpleString, sys.remote_exec as the file trampoline.py): it
# binds no name there and lets nothing out, and runs the step file in a
# namespace of its own. The step file is rewritten for each step, so one
# trampoline serves the attach and the detach.
# (The file is closed by hand, in a lambda: a `with` would bind a name, and a file
# left to the garbage collector gives a ResourceWarning, whose registry lands in
# __main__'s namespace.)
# What the trampoline becomes when pyust gives up waiting on 3.14+ (--wait, Ctrl-C):
# sys.remote_exec cannot be taken back, and the interpreter would complain of a missing
# file when its main thread next runs Python. It removes the control directory, and
# binds no name either. (It can only when the directory is its user's: root's, for
# another user's process, stays with the trampoline until /tmp is cleaned.)
_LEFT_BEHIND = ("try:\n"
                "    (lambda os, d: ([os.unlink(os.path.join(d, n)) for n in os.listdir(d)],"
                " os.rmdir(d)))(__import__('os'), {control!r})\n"
                "except BaseException:\n"
                "    pass\n")

_TRAMPOLINE = ("try:\n"
               "    exec(compile((lambda f: [f.read(), f.close()][0])(open({step!r}, 'rb')),"
               " {step!r}, 'exec'), {{'__name__': '__pyust_attach__'}})\n"
               "except BaseException:\n"
               "    pass\n")

# The step file: imports pyust and runs pyust._attached.run(). Any failure,
# including pyust's import, goes into the result file; what the step imported
# for a start that failed is taken out again.
_STEP = '''\
def _pyust_step():
    import sys
    control, action, step, parent = {control!r}, {action!r}, {step!r}, {package_parent!r}
    before = set(sys.modules)
    added = None

    def undo():  # a start that failed leaves nothing of ours imported
        if added in sys.path:
            sys.path.remove(added)
        for name in set(sys.modules) - before:
            del sys.modules[name]

    try:
        try:
            import pyust._attached as attached
        except ImportError:
            if parent in sys.path:
                raise
            undo()
            sys.path.insert(0, parent)
            added = parent
            import pyust._attached as attached
    except BaseException as error:
        undo()
        try:
            import os
            path = control + os.sep + "result-" + action
            with open(path + ".part", "wb") as stream:
                stream.write(repr({{"error": "cannot import pyust: %s: %s"
                                            % (type(error).__name__, error),
                                   "import": True}}).encode())
            os.replace(path + ".part", path)
        except BaseException:
            pass
        return
    if not attached.run(action, control, {options!r}, sys._getframe(), step, added):
        if action == "start":
            undo()


_pyust_step()
'''


def _write_file(path: str, data: bytes) -> None:
    """Writes a file of the control directory whole (a new file renamed into place),
    0644 whatever the umask: the target reads it. The directory is this user's alone;
    still, nothing in it is followed or written again."""
    partial = path + ".part"
    try:
        os.unlink(partial)
    except FileNotFoundError:
        pass
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        os.fchmod(fd, 0o644)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.replace(partial, path)


def _only_root_writes(path: str) -> bool:
    """Whether path (links resolved) and every directory above it are root's and
    writable by no one else: a file that no other user can have put there."""
    try:
        for item in [path, *Path(path).parents]:
            info = os.stat(item)
            if info.st_uid != 0 or info.st_mode & 0o022:
                return False
        return True
    except OSError:
        return False


# The most pyust reads of one answer of the target's (a small dict's repr).
_ANSWER_LIMIT = 64 << 10


class Attachment:
    """pyust inside a running process, from start() to detach(). options: what
    pyust.start() takes (modules, exclude, lines, c_calls, fast).

    The control directory: this user's, readable by the target (0711 when root
    attaches to another user's process), holding what pyust writes (the trampoline,
    the step, gdb's image of the trampoline), and answers/, the target user's, where
    the target writes its results and nothing of pyust's is ever written."""

    def __init__(self, target: Target, options: dict):
        self.target = target
        self.options = options
        self.backend = None
        self.events = None  # what the process handed to LTTng while attached
        self.lost_start = None  # (waited_ns, lost_ns) of a start the session missed
        self._page = None  # gdb's trampoline page in the target
        self._control = tempfile.mkdtemp(prefix="pyust-attach-")
        self._step = os.path.join(self._control, "step.py")
        self._trampoline = os.path.join(self._control, "trampoline.py")
        self._answers = os.path.join(self._control, "answers")
        self._answers_fd = None
        # Who writes the answers: the target's user (when root attaches to another
        # user's process) or this one.
        self._answerer = os.geteuid()
        try:
            os.mkdir(self._answers, 0o700)
            if os.geteuid() == 0 and target.uid != 0:
                os.chown(self._answers, target.uid, -1)
                os.chmod(self._control, 0o711)  # the target opens the step files by name
                self._answerer = target.uid
            self._answers_fd = os.open(self._answers,
                                       os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            _write_file(self._trampoline, _TRAMPOLINE.format(step=self._step).encode())
        except BaseException:
            self._remove_control()
            raise

    # ------------------------------------------------------------- the steps

    def start(self, wait: float, *, cancelled=None, on_wait=None) -> None:
        """Has the target start tracing; returns once it did. wait: seconds to wait
        for its main thread to run Python; cancelled(), if given, is asked meanwhile
        (True: give up); on_wait(), if given, is called once when the wait passes two
        seconds. Raises AttachError."""
        result = self._step_in("start", wait, cancelled, on_wait)
        backend = result.get("backend")
        self.backend = escaped(backend[:100]) if isinstance(backend, str) else "?"
        self.is_attached = True

    def detach(self, wait: float) -> None:
        """Has the target stop tracing and take pyust's hooks off (nothing to do
        when it has exited). Raises AttachError."""
        if not self.is_attached:
            return
        self.is_attached = False
        if self.target.is_alive():
            result = self._step_in("stop", wait, None, None)
            events = result.get("events")
            # A count, or none (the summary then counts the trace).
            self.events = events if type(events) is int and events >= 0 else None
            # (waited ns, lost ns), or none: from the target, so checked like the rest.
            lost = result.get("lost_start")
            self.lost_start = (lost if isinstance(lost, tuple) and len(lost) == 2
                               and all(type(n) is int and n >= 0 for n in lost) else None)

    def close(self) -> None:
        """Detaches if still attached (a failure then is not raised: the caller is
        already failing), then removes what the attach made: gdb's page in the
        target, once the target has run every step given to it, and the control
        directory (a step not run yet then finds no file and does nothing; on 3.14+,
        where the interpreter would say it misses the file, the trampoline stays and
        removes the directory when it runs)."""
        try:
            if self.is_attached:
                try:
                    self.detach(30)
                except AttachError:
                    pass
            if self._page is not None and self._is_taken and self.target.is_alive():
                self._gdb([f"call (int)munmap((void*){self._page}, 4096)"])
                self._page = None
        finally:
            if (not self._is_taken and self.target.version >= REMOTE_EXEC
                    and self.target.is_alive()):
                self._leave_behind()
            else:
                self._remove_control()

    def _take_answers_back(self) -> None:
        """Makes answers/ this user's again, before removing it: the target's user, whose
        processes may run on, can then put nothing more there (and keep it from going)."""
        if self._answers_fd is not None:
            try:
                os.fchown(self._answers_fd, os.geteuid(), -1)
            except OSError:
                pass
            os.close(self._answers_fd)
            self._answers_fd = None

    def _remove_control(self) -> None:
        self._take_answers_back()
        try:
            # answers/ holds whatever the target's user put there: rmtree neither
            # follows its links nor leaves this directory, but recurses.
            shutil.rmtree(self._control, ignore_errors=True)
        except RecursionError:
            pass  # a tree nested deeper than Python recurses stays, for /tmp's cleaning

    def _leave_behind(self) -> None:
        """A step given with sys.remote_exec that the target has not run yet stays
        scheduled: the trampoline then only removes the control directory (and the
        rest of it goes now). When the target is another user's, the directory, which
        then holds the trampoline alone, becomes that user's, so that the trampoline
        can remove it: pyust reads and writes nothing there any more, and what that
        user puts there runs, if at all, in that user's own process."""
        self._take_answers_back()
        try:
            for name in os.listdir(self._control):
                path = os.path.join(self._control, name)
                if name == "answers":
                    shutil.rmtree(path, ignore_errors=True)
                elif name != os.path.basename(self._trampoline):
                    os.unlink(path)
            _write_file(self._trampoline, _LEFT_BEHIND.format(control=self._control).encode())
            if self._answerer != os.geteuid():
                fd = os.open(self._control, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                             | os.O_CLOEXEC)
                try:
                    os.fchown(fd, self._answerer, -1)
                    os.fchmod(fd, 0o700)
                finally:
                    os.close(fd)
        except (OSError, RecursionError):
            self._remove_control()

    is_attached = False
    _is_taken = True  # whether the target has run every step given to it

    def _step_in(self, action: str, wait: float, cancelled, on_wait) -> dict:
        self._write_step(action)
        self._is_taken = False
        if self.target.version >= REMOTE_EXEC:
            self._remote_exec()
        elif action == "start":
            self._pending_start()
        else:
            self._pending_stop()
        result = self._wait_result(action, wait, cancelled, on_wait)
        self._is_taken = True
        if "error" in result:
            raise AttachError(self._explain(result))
        return result

    def _explain(self, result: dict) -> str:
        error = result["error"]
        # The target's words, escaped: they reach a terminal perhaps root's.
        error = escaped(error[:1000]) if isinstance(error, str) else "an unreadable error"
        if result.get("import") or "Cannot load pyust's native hook" in error:
            return (f"process {self.target.pid} (Python {self.target.version_text}) {error}; "
                    f"install pyust for its interpreter: scripts/setup --python "
                    f"{escaped(self.target.exe)}")
        return f"process {self.target.pid}: {error}"

    def _write_step(self, action: str) -> None:
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # The step's control directory is where it answers.
        text = _STEP.format(control=self._answers, action=action, step=self._step,
                            package_parent=package_parent, options=self.options)
        _write_file(self._step, text.encode())
        try:
            os.unlink(f"result-{action}", dir_fd=self._answers_fd)  # unlinks a link itself
        except FileNotFoundError:
            pass

    def _read_answer(self, action: str) -> dict | None:
        """The target's answer to a step, or None while there is none. Raises
        AttachError for what is not an answer the target wrote: a link, anything but
        a regular file of the target's user, more than _ANSWER_LIMIT bytes, anything
        but a dict's literal."""
        name = f"result-{action}"

        def refuse(why: str) -> AttachError:
            return AttachError(f"cannot read the answer of process {self.target.pid}: "
                               f"{self._answers}/{name} {why}")

        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                         | os.O_CLOEXEC, dir_fd=self._answers_fd)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno == getattr(os, "ELOOP", 40):
                raise refuse("is a symbolic link") from None
            raise refuse(f"cannot be opened ({error.strerror})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != self._answerer:
                raise refuse(f"is not a regular file of user {user_name(self._answerer)}'s")
            data = b""
            while len(data) <= _ANSWER_LIMIT:
                chunk = os.read(fd, _ANSWER_LIMIT + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) > _ANSWER_LIMIT:
            raise refuse(f"is larger than {_ANSWER_LIMIT >> 10} KiB")
        try:
            answer = ast.literal_eval(data.decode("utf-8", "replace"))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            answer = None
        if not isinstance(answer, dict):
            raise refuse("is not an answer of pyust's")
        return answer

    def _wait_result(self, action: str, wait: float, cancelled, on_wait) -> dict:
        start = time.monotonic()
        told = False
        while True:
            answer = self._read_answer(action)
            if answer is not None:
                return answer
            if not self.target.is_alive():
                raise AttachError(f"process {self.target.pid} exited before pyust could "
                                  f"{'start' if action == 'start' else 'stop'} in it")
            if cancelled is not None and cancelled():
                raise AttachError(f"interrupted while waiting for process {self.target.pid}'s "
                                  "main thread to run Python: nothing was recorded")
            waited = time.monotonic() - start
            if waited > wait:
                raise AttachError(
                    f"process {self.target.pid}'s main thread ran no Python for {wait:g} s "
                    "(blocked in a system call or in C code), so pyust could not "
                    f"{'start' if action == 'start' else 'stop'} there: try again, or give "
                    "more time (--wait)")
            if not told and waited > 2 and on_wait is not None:
                on_wait()
                told = True
            time.sleep(0.01)


    # ------------------------------------------------------- 3.14+: PEP 768

    def _remote_exec(self) -> None:
        if sys.version_info[:2] == self.target.version:
            try:
                sys.remote_exec(self.target.pid, self._trampoline)
            except (OSError, RuntimeError, ValueError) as error:
                raise AttachError(self._remote_exec_failure(str(error))) from None
            return
        # sys.remote_exec must come from the target's own version.
        result = subprocess.run(
            [self._interpreter(), "-I", "-S", "-c",
             "import sys\ntry:\n    sys.remote_exec(int(sys.argv[1]), sys.argv[2])\n"
             "except Exception as error:\n    sys.exit(str(error))\n",
             str(self.target.pid), self._trampoline],
            capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            raise AttachError(self._remote_exec_failure(escaped(lines[-1]) if lines else
                                                        f"status {result.returncode}"))

    def _interpreter(self) -> str:
        """An interpreter of the target's version to call sys.remote_exec: the
        target's own executable when the target runs as this user; for root and
        another user's process, one that only root can have written (the target's
        executable, else pythonX.Y in /usr/local/bin or /usr/bin). Raises
        AttachError when there is none: root never runs what another user controls."""
        if self.target.uid == os.geteuid():
            return self.target.exe
        name = f"python{self.target.version_text}"
        candidates = [os.path.realpath(self.target.exe)] + [
            os.path.realpath(os.path.join(directory, name))
            for directory in ("/usr/local/bin", "/usr/bin")]
        for candidate in candidates:
            if os.path.basename(candidate).startswith(name) and _only_root_writes(candidate):
                return candidate
        raise AttachError(
            f"process {self.target.pid} runs Python {self.target.version_text} from "
            f"{escaped(self.target.exe)}, which root does not run (another user could have "
            f"written it), and there is no {name} of root's: run pyust attach with a Python "
            f"{self.target.version_text} of root's (python{self.target.version_text} -m pyust "
            "attach), or as the target's user")

    def _remote_exec_failure(self, message: str) -> str:
        text = f"sys.remote_exec into process {self.target.pid} failed: {message}"
        if "disable" in message.lower() or "not enabled" in message.lower():
            text += (" (remote debugging is off in the target: PYTHON_DISABLE_REMOTE_DEBUG, "
                     "-X disable_remote_debug, or an interpreter built without it)")
        elif "permission" in message.lower() or "not permitted" in message.lower():
            text += " (run pyust attach as root, or as the target's user)"
        return text

    # ------------------------------------------------- 3.10 to 3.13: gdb

    def _gdb(self, commands: list) -> str:
        """Runs gdb's commands in the target (stopped meanwhile); its output."""
        # The executable is the file the process runs, whatever its path names now.
        args = ["gdb", "--batch", "--nx", "-q", "-p", str(self.target.pid),
                f"/proc/{self.target.pid}/exe",
                "-iex", "set debuginfod enabled off", "-iex", "set auto-solib-add off",
                # Nothing beside the target's files runs in gdb (root's, perhaps).
                "-iex", "set auto-load off",
                "-ex", r"sharedlibrary libc\.so", "-ex", "sharedlibrary libpython"]
        for command in commands:
            args += ["-ex", command]
        try:
            result = subprocess.run(args, capture_output=True, text=True, timeout=120,
                                    stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise AttachError(f"gdb did not finish with process {self.target.pid} within "
                              "120 s") from None
        output = result.stdout + result.stderr
        if "ptrace: Operation not permitted" in output:
            raise AttachError(f"the kernel refused gdb access to process {self.target.pid} "
                              "(ptrace): run pyust attach as root, or as the target's user "
                              "with kernel.yama.ptrace_scope = 0")
        if "No such process" in output and not self.target.is_alive():
            raise AttachError(f"no process with pid {self.target.pid}")
        return output

    def _pending_start(self) -> None:
        """Maps a page in the target, writes the trampoline there, and schedules it."""
        with open(self._trampoline, "rb") as stream:
            trampoline = stream.read() + b"\0"
        if len(trampoline) > 4096:
            raise AttachError("the control directory's path is too long for gdb's page")
        image = os.path.join(self._control, "trampoline.bin")
        _write_file(image, trampoline)
        output = self._gdb(["set $pyust_page = (void*)mmap(0, 4096, 3, 0x22, -1, 0)",
                            f"restore {image} binary $pyust_page",
                            'printf "PYUST page %lu\\n", (unsigned long)$pyust_page',
                            'printf "PYUST pending %d\\n", (int)Py_AddPendingCall('
                            "(int(*)(void*))PyRun_SimpleString, $pyust_page)"])
        page = re.search(r"^PYUST page (\d+)$", output, re.M)
        if page is None or int(page.group(1)) in (0, 2**64 - 1):
            raise AttachError(f"gdb could not map a page in process {self.target.pid}: "
                              + _gdb_error(output))
        self._page = int(page.group(1))
        self._check_pending(output)

    def _pending_stop(self) -> None:
        """Unmaps the trampoline's page (run long ago) and schedules the native
        module's pyust_attach_stop()."""
        commands = [r"sharedlibrary _native\.", 'printf "PYUST pending %d\\n", (int)'
                    "Py_AddPendingCall((int(*)(void*))pyust_attach_stop, (void*)0)"]
        if self._page is not None:
            commands.insert(0, f"call (int)munmap((void*){self._page}, 4096)")
        output = self._gdb(commands)
        self._page = None
        self._check_pending(output)

    def _check_pending(self, output: str) -> None:
        pending = re.search(r"^PYUST pending (-?\d+)$", output, re.M)
        if pending is None:
            raise AttachError(f"gdb could not schedule pyust in process {self.target.pid}: "
                              + _gdb_error(output))
        if pending.group(1) != "0":
            raise AttachError(f"process {self.target.pid}'s queue of pending calls is full: "
                              "try again in a moment")


def _gdb_error(output: str) -> str:
    """gdb's last line that says what went wrong."""
    lines = [line for line in output.splitlines()
             if line.strip() and not line.startswith(("[", "Reading", "Restoring", "PYUST"))]
    return escaped(lines[-1]) if lines else "no output"  # it may quote the target's files
