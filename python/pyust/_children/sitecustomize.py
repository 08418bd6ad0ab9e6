# The sitecustomize that `pyust run` puts first on the PYTHONPATH of the program it
# traces, so that the program's Python children are traced too: see pyust/children.py.
#
# It lives in pyust's installed package, a directory that exists as long as pyust is
# installed and that only its owner can change: a process that outlives the run still
# has it on its path, and no other user can put a module there. What belongs to one
# run comes from the environment: the hook options (PYUST), the directories where the
# run's processes note themselves (PYUST_RUN_PROCESSES) and count their events
# (PYUST_RUN_TALLY). A process writes in them only while they are the run's: private
# directories of its own user (once the run is over they are gone, and another user
# may make one of that name).
#
# Compiled by whatever interpreter the program starts: no syntax newer than 3.0.
import os
import sys


def _pyust_run_child(module):
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != here]
    # Removed only once the chain is done: under a `pyust run` inside a traced program, the
    # sitecustomize of the outer run's pyust (another installation) may come next, and must
    # see it too.
    first = os.environ.get("PYUST_RUN_FIRST") is not None
    del sys.modules["sitecustomize"]
    try:
        __import__("sitecustomize")  # the interpreter's own, if any
    except ImportError as error:
        sys.modules["sitecustomize"] = module  # the import system takes it back from there
        module.pyust_placeholder = True  # none of the interpreter's: pyust._runner drops it
        if getattr(error, "name", None) != "sitecustomize":
            raise
    finally:
        os.environ.pop("PYUST_RUN_FIRST", None)
        if os.environ.get("PYUST") and not sys.flags.ignore_environment:
            _pyust_start(package, first)


def _pyust_start(package, first):
    try:
        import _imp
        suffixes = _imp.extension_suffixes()
        if not any(os.path.exists(os.path.join(package, "_native" + s)) for s in suffixes):
            return  # another interpreter than pyust's: untraced, silently
        directories = [d for d in os.environ.get("PYUST_RUN_PROCESSES", "").split(os.pathsep)
                       if d]
        # The program's first process is `python -m pyust`, which starts with its options.
        if not first:
            # Traced only while a run of this user's records: a child of another user (the
            # run records its own user's processes only) or one started once the run is over
            # would wait for a session that never records it (PYUST_START_TIMEOUT).
            if not any(_pyust_is_private(d) for d in directories):
                return
            parent = os.path.dirname(package)
            added = parent not in sys.path
            if added:
                sys.path.append(parent)
            try:
                import pyust._activate
            finally:
                if added:
                    sys.path.remove(parent)
            tally = os.environ.get("PYUST_RUN_TALLY")
            if tally:
                pyust._tally_into(tally)  # only into a run's directory, as note()
            pyust._activate.activate_for_run("PYUST")
            if not pyust.is_active():
                return

        def note():
            # One new file per process in each run's directory (runs nest): created, never
            # opened if it exists, so that nothing planted there is written.
            for directory in directories:
                fd = _pyust_private(directory)
                if fd is None:
                    continue  # the run is over: nobody counts any more
                try:
                    name = "%d-%s" % (os.getpid(), os.urandom(6).hex())
                    os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                     | os.O_CLOEXEC, 384, dir_fd=fd))
                except OSError:
                    pass
                finally:
                    os.close(fd)

        note()
        os.register_at_fork(after_in_child=note)
    except Exception:
        pass  # never break the program's child


def _pyust_is_private(directory):
    fd = _pyust_private(directory)
    if fd is None:
        return False
    os.close(fd)
    return True


def _pyust_private(directory):
    """An open descriptor of directory when it is a run's (a directory, not a link,
    of this process's user, 0700), else None."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and not info.st_mode & 0o077:
        return fd
    os.close(fd)
    return None


_pyust_run_child(sys.modules["sitecustomize"])
