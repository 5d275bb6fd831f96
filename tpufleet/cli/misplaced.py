"""An option given on the wrong side of the command name: the tool's own (`status --state DIR`) after it, or a
command's (`--dry-run inject-fault ...`) before it. Click says only `No such option '--state'`; the operator, who
typed an option that exists, is told where it goes and given the command line with it there."""

from __future__ import annotations

import shlex
from typing import Any


def misplaced_hint(exc: Any, argv: list[str]) -> str:
    """The message for Click's NoSuchOption when the option is the tool's given after the command, or a command's
    given before it; '' otherwise (a misspelt option: Click's own "Did you mean" says it)."""
    option, ctx = str(getattr(exc, "option_name", "") or ""), getattr(exc, "ctx", None)
    if ctx is None or not option.startswith("--") or "--" in argv:
        return ""
    root = ctx.find_root().command
    if ctx.parent is not None and _option_of(root, option) is not None:
        return _tool_option_hint(root, ctx.command, argv, option)
    at = _position(argv, option)
    if ctx.parent is None and at is not None:
        return _command_option_hint(root, argv, at, option)
    return ""


def takes_no_output(path: str) -> str:
    """The refusal of -o for a command that writes no document (`serve`, whose output is its HTTP answers)."""
    return f"bad option -o/--output: `{path}` takes none; leave -o out"


def no_output_hint(exc: Any) -> str:
    """`takes_no_output` for Click's NoSuchOption of -o given after such a command's name (`serve -o json`), which
    Click calls no such option though the tool has one; '' for any other."""
    option, ctx = str(getattr(exc, "option_name", "") or ""), getattr(exc, "ctx", None)
    if ctx is None or ctx.parent is None or option not in ("-o", "--output"):
        return ""
    return takes_no_output(ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip())


def _tool_option_hint(root: Any, command: Any, argv: list[str], option: str) -> str:
    """The hint for one of the tool's own options given after the command's name; the line given moves every such
    option (`status --state DIR --lock-timeout 5`), not only the first one Click met."""
    command_at = next((i for i, arg in enumerate(argv) if arg in getattr(root, "commands", {})), len(argv))
    at = _position(argv, option, command_at + 1)
    if at is None:
        return ""
    said = f"bad option {option}: an option of tpufleet itself, given after the command"
    if _position(argv, option) != at:  # also before it: moved, it would be given twice
        return f"{said} and before it too; give it once, before the command"
    taken = _taken(argv, at, option, _option_of(root, option))
    if taken == 0:
        return f"{said} without its value; give it, with one, before the command"
    spans = [(at, taken), *_other_tool_options(root, command, argv, command_at, at)]
    moved = [arg for i, n in sorted(spans) for arg in argv[i : i + n]]
    dropped = {j for i, n in spans for j in range(i, i + n)}
    others = sorted({argv[i].split("=", 1)[0] for i, _ in spans} - {option})
    if others:
        said = f"bad option {option} (and {', '.join(others)}): options of tpufleet itself, given after the command"
    return f"{said}; run `{_line([*moved, *(a for j, a in enumerate(argv) if j not in dropped)])}`"


def _other_tool_options(root: Any, command: Any, argv: list[str], command_at: int, skip: int) -> list[tuple[int, int]]:
    """(position, arguments spanned) of the tool's other options after the command that the command does not take
    itself (`-o` is both), each given once and with its value; none if any is given twice or without one, which
    the next run's refusal then says."""
    spans, i = [], command_at + 1
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        param = _option_of(root, name) if name.startswith("--") and i != skip else None
        if param is None or _option_of(command, name) is not None:
            i += 1
            continue
        taken = _taken(argv, i, name, param)
        if taken == 0 or _position(argv, name) != i:
            return []
        spans.append((i, taken))
        i += taken
    return spans


def _command_option_hint(root: Any, argv: list[str], at: int, option: str) -> str:
    """The hint for a command's option given before the command's name (argv[at] is the option)."""
    names = getattr(root, "commands", {})
    after = [i for i, arg in enumerate(argv) if i > at and arg in names]
    if not after:
        return ""
    command, path = names[argv[after[0]]], argv[after[0]]
    param = _option_of(command, option)
    if param is None:
        path, param = _sub_option(command, path, argv[after[0] + 1 :], option)
    if param is None:
        return ""
    said = f"bad option {option}: an option of `{path}`, given before the command"
    taken = _taken(argv, at, option, param, stop=after[0])
    if taken == 0:
        return f"{said} without its value; give it, with one, after the command"
    moved = argv[at : at + taken]
    if _given_after(argv, after[0], moved, getattr(param, "multiple", False)):
        return f"{said} and after it too; give it once, after the command"  # moved, it would be given twice
    return f"{said}; run `{_line([*argv[:at], *argv[at + taken :], *moved])}`"


def _given_after(argv: list[str], start: int, moved: list[str], multiple: bool) -> bool:
    """Whether the option in `moved` is given again after argv[start]: at all, or with the same value when it may
    be given more than once (`--pod pod0 --pod pod0` is refused as a repeat)."""
    again = [i for i in range(start + 1, len(argv)) if _position(argv[i : i + 1], moved[0].split("=", 1)[0]) == 0]
    return any(not multiple or argv[i : i + len(moved)] == moved for i in again)


def _sub_option(group: Any, path: str, rest: list[str], option: str) -> tuple[str, Any]:
    """The name and option of the group's command named first in `rest` (`import k8s`); (path, None) if none."""
    subs = getattr(group, "commands", {})
    named = next((arg for arg in rest if arg in subs), None)
    return (f"{path} {named}", _option_of(subs[named], option)) if named is not None else (path, None)


def _option_of(command: Any, option: str) -> Any:
    for param in getattr(command, "params", []):
        if option in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
            return param
    return None


def _position(argv: list[str], option: str, start: int = 0) -> int | None:
    at = (i for i, arg in enumerate(argv) if i >= start and (arg == option or arg.startswith(option + "=")))
    return next(at, None)


def _taken(argv: list[str], at: int, option: str, param: Any, stop: int | None = None) -> int:
    """How many arguments from `at` the option spans: 1, or 2 when its value is the next argument; 0 when it takes
    a value and none is there before `stop` (the command's name, which is no value to move with it)."""
    flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
    if flag or argv[at] != option:
        return 1
    end = len(argv) if stop is None else stop
    return 2 if at + 1 < end else 0


def _line(argv: list[str]) -> str:
    """The command line to run, a postgresql:// URL in it without its password (never printed)."""
    from tpufleet.state.dburl import redacted_arg

    return shlex.join(["tpufleet", *(redacted_arg(a) if "://" in a else a for a in argv)])


def extra_argument_hint(exc: Any) -> str:
    """`; release takes SLICE|JOB: one command for each` for Click's refusal of an extra argument (`release a b`,
    `inject-fault cube:c10 cube:c11`), naming what the command takes; '' for any other usage error."""
    ctx = getattr(exc, "ctx", None)
    if ctx is None or type(exc).__name__ != "UsageError" or "unexpected extra argument" not in str(exc.message):
        return ""
    taken = [p for p in ctx.command.params if getattr(p, "param_type_name", "") == "argument"]
    path = ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip() or ctx.command_path
    if not taken:
        return f"; `{path}` takes no argument"
    names = " ".join(str(p.make_metavar(ctx)) for p in taken)
    each = ": one command for each" if len(taken) == 1 else ""  # `release a b`: two releases
    return f"; `{path}` takes {names}{each}"


def shape_without_option_hint(exc: Any, argv: list[str]) -> str:
    """`; run tpufleet allocate a --shape 4x4x4` for `allocate a 4x4x4`: --shape missing, a shape typed as an
    argument after the name; '' otherwise (`allocate 4x4x4`, where it is the name, or another option's value)."""
    import re

    param, ctx = getattr(exc, "param", None), getattr(exc, "ctx", None)
    if type(exc).__name__ != "MissingParameter" or "--shape" not in getattr(param, "opts", ()) or ctx is None:
        return ""
    if "--" in argv or ctx.info_name not in argv:
        return ""
    at = next(
        (
            i
            for i in _positionals(ctx.command, argv, argv.index(ctx.info_name))[1:]
            if re.fullmatch(r"[0-9]+x[0-9]+x[0-9]+", argv[i])
        ),
        None,
    )
    return "" if at is None else f"; run `{_line([*argv[:at], '--shape', *argv[at:]])}`"


def _positionals(command: Any, argv: list[str], named_at: int) -> list[int]:
    """Where the command's arguments are in argv (its name at `named_at`): neither an option nor an option's value."""
    found, i = [], named_at + 1
    while i < len(argv):
        if argv[i].startswith("-"):
            param = _option_of(command, argv[i].split("=", 1)[0])
            i += 1 if param is None or "=" in argv[i] else _taken(argv, i, argv[i], param)
            continue
        found.append(i)
        i += 1
    return found


def generation_option_hint(exc: Any, argv: list[str]) -> str:
    """`; allocate works in the generation of the pod it is given: ...` for `--generation` given to a command that
    takes `--pod` instead (a fleet's generation is its pods'), after its name or before it (`tpufleet --generation
    tpu-v4 allocate ...`); '' for any other option."""
    option, ctx = str(getattr(exc, "option_name", "") or ""), getattr(exc, "ctx", None)
    if ctx is None or option != "--generation":
        return ""
    command, path = ctx.command, ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip()
    if ctx.parent is None:  # before the command's name: the first command named after it
        commands = getattr(command, "commands", {})
        path = next((arg for arg in argv[(_position(argv, option) or 0) :] if arg in commands), "")
        command = commands.get(path)
    if _option_of(command, "--pod") is None:
        return ""
    path = path or ctx.command_path
    return (
        f"; `{path}` works in the generation of the pod it is given: choose the pod with --pod POD "
        "(`tpufleet status` names each pod's generation)"
    )
