"""Safe file handling of the state directory's own files.

State files (``state.json``, ``journal.jsonl``, ``.lock``, ``.lock.info``, ``routes/*.npz``) are opened with
``O_NOFOLLOW`` and must be regular files in a directory the user owns that nobody else can write: a symlink,
a FIFO or a directory in their place is refused (exit 2) rather than followed. Every error the operating system
gives while writing them (no space, quota, file too large, read-only file system, permission) becomes one line
naming the file (exit 1) and never a half-made commit.

Output files the user names are `outputs`' (`check_output_path`, `write_output`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tpufleet.errors import BadInput, Refused
from tpufleet.state.crashpoints import reached
from tpufleet.state.paths import dangling_link, hard_linked
from tpufleet.state.temps import remove_stale_temps

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # with fullmatch: "$" would allow a final newline
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class _Sharing:
    """Who may read the state: the owner only (0600/0700), or also one group (0640/0750, that group's id).

    A process-wide setting made once from `--group` or the config file before any state file is touched;
    writable by the owner alone either way (`check_state_dir` refuses anything else), never world-readable.
    """

    gid: int | None = None

    @property
    def file_mode(self) -> int:
        return 0o600 if self.gid is None else 0o640

    @property
    def dir_mode(self) -> int:
        return 0o700 if self.gid is None else 0o750


SHARING = _Sharing()


class _Guard:
    """The running command's state directory: no output file (`--out`) may land in it, where it would replace
    the state, its journal or its stored tables with a report, a plan or tables never checked."""

    directory: Path | None = None


GUARD = _Guard()


def guard_state_dir(location: Path | str | None) -> None:
    """Keep outputs out of `location` (a state directory; a database URL or None guards nothing)."""
    GUARD.directory = Path(os.path.realpath(location)) if isinstance(location, Path) else None


def refuse_state_dir(path: Path, what: str) -> None:
    """BadInput when `path` is the state directory or inside it (by any name): its files are the state's own."""
    guarded = GUARD.directory
    if guarded is None:
        return
    real = Path(os.path.realpath(path))
    if real == guarded or guarded in real.parents:
        raise BadInput(f"{what}: it is inside the state directory {str(guarded)!r}, whose files are the state's own")


def share_with_group(name: str | None) -> None:
    """Make the state files readable by group `name` (None: by the owner only). Unknown group: BadInput."""
    if name is None:
        SHARING.gid = None
        return
    import grp

    try:
        SHARING.gid = grp.getgrnam(name).gr_gid
    except KeyError:
        raise BadInput(f"bad group {name!r}: no such group on this machine (see `getent group`)") from None


def _share(fd_or_path: int | Path, mode: int) -> None:
    """Give a file or directory the sharing mode and group (best effort for the group: the mode is what guards)."""
    if isinstance(fd_or_path, int):
        os.fchmod(fd_or_path, mode)
        if SHARING.gid is not None:
            with contextlib.suppress(OSError):
                os.fchown(fd_or_path, -1, SHARING.gid)
        return
    os.chmod(fd_or_path, mode)
    if SHARING.gid is not None:
        with contextlib.suppress(OSError):
            os.chown(fd_or_path, -1, SHARING.gid)


def kind_of(mode: int) -> str:
    """What a file is, in words, from its `st_mode`."""
    for test, name in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


def error_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def io_error(action: str, path: Path | str, exc: OSError) -> Refused:
    """The one-line refusal for an operating-system error on a file (exit 1): ``cannot write PATH: REASON``."""
    return Refused(f"cannot {action} {path}: {error_reason(exc)}")


def _not_regular(path: Path | str, mode: int) -> BadInput:
    what = kind_of(mode)
    if what == "symbolic link":
        return BadInput(f"{path} is a symbolic link; state files are never followed out of the state directory")
    return BadInput(f"{path} is a {what}, not a regular file; move it out of the state directory")


# ---- the state directory ---------------------------------------------------------------------------------------


def ensure_private_dir(path: Path) -> None:
    """Create the state directory 0700 (and leave an existing one's mode alone unless we made it)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            path.mkdir(parents=True, mode=0o700)
            _share(path, SHARING.dir_mode)
        except FileExistsError:  # made by a concurrent command: check it as any existing one
            if (dangling := dangling_link(path)) is not None:  # not a race: an unmounted volume behind a link
                raise Refused(f"cannot create state directory {path}: {dangling}") from None
            ensure_private_dir(path)
        except OSError as exc:
            raise io_error("create state directory", path, exc) from None
        return
    except NotADirectoryError:
        raise BadInput(f"state directory {str(path)!r}: a part of the path is not a directory") from None
    except OSError as exc:
        raise io_error("access state directory", path, exc) from None
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"state directory {str(path)!r} is not a directory")
    if SHARING.gid is not None and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o777 == 0o700:
        with contextlib.suppress(OSError):  # a directory made private before the group was set: open it to it
            _share(path, SHARING.dir_mode)


def check_state_dir(path: Path) -> None:
    """Refuse to write into a state directory someone else could change under us (exit 2, saying what is wrong).

    It must be the user's and writable by nobody else: another account could swap a file for a symlink meanwhile.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise io_error("access state directory", path, exc) from None
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"state directory {str(path)!r} is not a directory")
    if SHARING.gid is None and stat.S_IMODE(st.st_mode) & 0o050 == 0o050:
        SHARING.gid = st.st_gid  # a directory opened to a group stays so: files follow it without --group
    _check_own(path, st, "state directory")


def _check_own(path: Path, st: os.stat_result, what: str) -> None:
    """Its owner is the user and nobody else may write it (`routes/`, `cache/`: nor put tables or entries there)."""
    if st.st_uid != (euid := os.geteuid()):
        raise BadInput(
            f"{what} {str(path)!r} is owned by uid {st.st_uid}, not by you (uid {euid}); run tpufleet as its owner"
        )
    if (mode := stat.S_IMODE(st.st_mode)) & 0o022:
        who = " and ".join(w for bit, w in ((0o020, "group"), (0o002, "others")) if mode & bit)
        raise BadInput(f"{what} {str(path)!r} is writable by {who} (mode {mode:04o}); run chmod go-w {str(path)!r}")


def ensure_private_subdir(path: Path) -> None:
    """A directory inside the state directory (``routes/``): made 0700 if missing; never a symlink."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        try:
            os.mkdir(path, 0o700)
            _share(path, SHARING.dir_mode)
        except FileExistsError:
            ensure_private_subdir(path)
        except OSError as exc:
            raise io_error("create directory", path, exc) from None
        return
    except OSError as exc:
        raise io_error("access", path, exc) from None
    check_subdir_mode(path, st.st_mode)
    _check_own(path, st, "directory")
    if SHARING.gid is not None and stat.S_IMODE(st.st_mode) & 0o777 == 0o700:
        with contextlib.suppress(OSError):  # made before the state was shared: open it to the group as well
            _share(path, SHARING.dir_mode)


def check_subdir(path: Path) -> bool:
    """True if the state's subdirectory exists (and is a real directory: else BadInput), False if it is missing."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise io_error("access", path, exc) from None
    check_subdir_mode(path, st.st_mode)
    return True


def check_subdir_mode(path: Path, mode: int) -> None:
    if stat.S_ISLNK(mode):
        raise BadInput(f"{path} is a symbolic link; the state's files are never written outside its directory")
    if not stat.S_ISDIR(mode):
        raise BadInput(f"{path} is a {kind_of(mode)}, not a directory; move it out of the state directory")


def open_state_file(path: Path, flags: int, mode: int | None = None) -> int:
    """Open a state file without following a symlink and make sure it is a regular file; its descriptor.

    A symlink, FIFO, socket, device or directory in its place: BadInput (exit 2). Any other failure is the
    OSError (FileNotFoundError for a missing file without ``O_CREAT``), for the caller to word. ``O_NONBLOCK``
    keeps a FIFO put in its place from hanging the open; it changes nothing for a regular file. Opened to write, it
    must have no other name (a hard link): the journal's append or the lock note's truncation would change the
    file behind that name too, outside the state directory. ``O_TRUNC`` is done only once that is checked.
    """
    truncate = flags & os.O_TRUNC
    try:
        fd = os.open(
            path, (flags & ~os.O_TRUNC) | NOFOLLOW | CLOEXEC | _NONBLOCK, SHARING.file_mode if mode is None else mode
        )
    except FileNotFoundError:
        raise
    except OSError as exc:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode) from None
        if exc.errno == errno.ELOOP:
            raise _not_regular(path, stat.S_IFLNK) from None
        raise
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_regular(path, st.st_mode)
    if flags & (os.O_WRONLY | os.O_RDWR) and st.st_nlink > 1:
        os.close(fd)
        raise hard_linked(path, st.st_nlink)
    if truncate:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            os.close(fd)
            raise
    perms = stat.S_IMODE(st.st_mode)  # world-readable (copied back from a backup), or unreadable (umask 0277)
    to_mend = SHARING.gid is not None or perms & ~SHARING.file_mode or perms & 0o600 != 0o600
    if flags & os.O_CREAT and to_mend and st.st_uid == os.geteuid():
        with contextlib.suppress(OSError):  # made before the group was set, under a tight or a loose umask
            _share(fd, SHARING.file_mode)
    return fd


def read_state_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a state file (FileNotFoundError if missing; see `open_state_file` for the rest); with a
    `limit`, at most one byte more than it (the caller refuses the file as too large), so that a huge or sparse
    file planted there is not read whole into memory.

    A read error is an OSError (the caller says which file could not be read)."""
    fd = open_state_file(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write every byte or raise: `os.write` may take fewer bytes than given (a full disk, ``ulimit -f``)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, f"short write ({len(view)} bytes not written)")
        view = view[written:]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | Callable[[int], None]) -> None:
    """Write to a temp file in the same directory, fsync, rename over `path`, fsync the directory.

    For the state's own files. Readers see either the old file or the new one, never a mix; the file is created
    0600. The temp file is named ``.NAME.PID.RANDOM.tmp``; a writer killed before its rename leaves it behind,
    and the next `atomic_write` of the same file removes it (see `remove_stale_temps`). An operating-system error
    is Refused naming `path`, with `path` unchanged and no temp file left.

    A crash test can stop it at ``atomic_write.before_fsync``, ``atomic_write.before_rename`` and
    ``atomic_write.before_dir_fsync`` (see crashpoints.py).
    """
    install(write_temp(path, data), path)
    sync_parent(path)


@contextlib.contextmanager
def discarded_on_error(tmp: str | Path, target: Path) -> Iterator[None]:
    """Remove the temp file if the block fails; an OS error becomes one line naming `target`."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise io_error("write", target, exc) from None
        raise


def write_temp(path: Path, data: bytes | Callable[[int], None]) -> str:
    """The first half of `atomic_write`: a durable temp file beside `path` holding `data` (or what `data` writes,
    given the file's descriptor); its name."""
    remove_stale_temps(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # mkstemp opens O_EXCL | O_NOFOLLOW: it never follows a planted link
        raise io_error("write", path, exc) from None
    with discarded_on_error(tmp, path):
        try:
            _share(fd, SHARING.file_mode)
            if callable(data):
                data(fd)
            else:
                write_all(fd, data)
            reached("atomic_write.before_fsync")
            os.fsync(fd)
        finally:
            os.close(fd)
    return tmp


def install(tmp: str, path: Path) -> None:
    """The second half: rename the temp file over `path` (the commit point of a state save)."""
    with discarded_on_error(tmp, path):  # a stop signalled at the named point removes the temp file too
        reached("atomic_write.before_rename")
        os.replace(tmp, path)


def sync_parent(path: Path) -> None:
    """After `install`: make the rename durable. The new file is already in place, so a failure says so."""
    reached("atomic_write.before_dir_fsync")
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        raise Refused(
            f"wrote {path}, but could not sync its directory {path.parent}: {error_reason(exc)} "
            "(the change is made; it may not survive a power cut)"
        ) from None


def check_name(name: str, what: str = "name") -> None:
    """Refuse (BadInput, `what` named) a slice or job name that cannot name a file: `allocate` never made one."""
    if not SAFE_NAME.fullmatch(name or "") or name in {".", ".."}:
        raise BadInput(
            f"bad {what} {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )


def safe_child(base: Path, name: str, suffix: str = "") -> Path:
    """A file under `base` named after user input; refuse anything that could escape `base`. The file itself is
    not resolved: a symlink in its place is the opener's to refuse (`open_state_file`), as one."""
    check_name(name)
    path = base.resolve() / f"{name}{suffix}"
    if path.parent != base.resolve():
        raise BadInput(f"bad name {name!r}: it would leave the state directory")
    return path
