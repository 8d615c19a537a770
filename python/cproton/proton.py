"""The ``cproton`` command (also ``python -m cproton``), a superset of
Proton's ``proton`` command:

    cproton [options] script.py [script args]
    cproton [options] pytest [pytest args]
    cproton [options] -- ./native_program [args]

Python targets run in this process inside one session; ``start`` and
``finalize`` calls in the script are ignored (the command owns the session
and finalizes it when the script ends, also on error or sys.exit). Native
programs are profiled through CUDA's injection mechanism: the command sets
``CUDA_INJECTION64_PATH`` to cproton's injection library and passes the
options in ``CPROTON_*`` environment variables (see docs/python.md), then
replaces itself with the program.
"""
import argparse
import os
import runpy
import sys

from . import _config
from .flags import flags
from .profile import DEFAULT_PROFILE_NAME, start, _finalize, _ranks


def _parser():
    parser = argparse.ArgumentParser(
        prog="cproton",
        description="Profile a Python script, pytest, or (after --) a native CUDA program with cproton.",
        usage="""
    cproton [options] script.py [script_args]
    cproton [options] pytest [pytest_args]
    cproton [options] -- ./native_program [args]
    python -m cproton [options] script.py [script_args]
""", formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-n", "--name", type=str, help="Name of the profiling session", default=None)
    parser.add_argument("-b", "--backend", type=str, help="Profiling backend (cupti, instrumentation, none)",
                        default=None)
    parser.add_argument("-c", "--context", type=str, help="Profiling context", default="shadow",
                        choices=_Contexts(["shadow", "python"]))
    parser.add_argument("-m", "--mode", type=str, help="Profiling mode", default=None)
    parser.add_argument("-d", "--data", type=str, help="Profiling data", default="tree", choices=["tree", "trace"])
    parser.add_argument("-k", "--hook", type=str, help="Profiling hook", default=None, choices=[None, "triton"])
    parser.add_argument("--include", type=str, default=None,
                        help="with -k triton: only kernels whose name matches this regular expression")
    parser.add_argument("--exclude", type=str, default=None,
                        help="with -k triton: skip kernels whose name matches this regular expression")
    parser.add_argument("--config", action="store_true",
                        help="print every environment variable and knob cproton reads, "
                             "with its current value and source, then exit")
    parser.add_argument("target_args", nargs=argparse.REMAINDER, help="Subcommand and its arguments")
    return parser


def parse_arguments(argv=None):
    args = _parser().parse_args(argv)
    target = list(args.target_args)
    args.native = bool(target) and target[0] == "--"
    if args.native:
        target = target[1:]
    if not target and not args.config:
        _parser().error("no script, pytest or program to run")
    return args, target


def is_pytest(script):
    return os.path.basename(script) == "pytest"


def execute_as_main(script, args):
    """Runs `script` as __main__ with sys.argv = [script] + args."""
    script_path = os.path.abspath(script)
    if not os.path.isfile(script_path):
        print(f"cproton: error: no such script: {script}", file=sys.stderr)
        return 2
    original_argv, original_path = sys.argv, list(sys.path)
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(script_path))
    try:
        runpy.run_path(script_path, run_name="__main__")
        return 0
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = original_argv, original_path


def do_setup_and_execute(target_args):
    flags.command_line = True
    script, script_args = target_args[0], target_args[1:]
    if is_pytest(script):
        import pytest
        return int(pytest.main(script_args))
    return execute_as_main(script, script_args)


def _injection_library():
    """The shared library exporting InitializeInjection, or None."""
    env = _config.get("CPROTON_INJECTION_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.startswith("libcproton") and ".so" in name:
            return os.path.join(here, name)
    return None


def run_native(args, target):
    lib = _injection_library()
    if lib is None:
        print("cproton: error: no injection library found to profile native programs "
              "(set CPROTON_INJECTION_LIB to libcproton.so)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["CUDA_INJECTION64_PATH"] = lib
    for key, value in (("NAME", args.name), ("CONTEXT", args.context), ("DATA", args.data),
                       ("BACKEND", args.backend), ("MODE", args.mode)):
        if value is not None:
            env["CPROTON_" + key] = value
    try:
        os.execvpe(target[0], target, env)
    except OSError as e:
        print(f"cproton: error: cannot run {target[0]}: {e.strerror}", file=sys.stderr)
        return 127


def _output_directory(name):
    """The directory the profile `name` lands in, with the placeholders the
    library fills ({pid}, {rank}, {local_rank}: src/core/session.c) filled
    the same way."""
    rank, local_rank = _ranks()
    name = name or DEFAULT_PROFILE_NAME
    for key, value in (("{pid}", os.getpid()), ("{rank}", max(rank, 0)), ("{local_rank}", max(local_rank, 0))):
        name = name.replace(key, str(value))
    return os.path.dirname(name) or "."


def preflight(args, target):
    """What must hold before anything runs, or None: the script exists and
    the profile's directory exists and is writable. A run that cannot
    write its profile, or has nothing to run, never starts: it would run
    for nothing, or write a profile of a run that did not happen over the
    last one."""
    if not args.native and not is_pytest(target[0]) and not os.path.isfile(target[0]):
        return f"no such script: {target[0]}"
    directory = _output_directory(args.name)
    if not os.path.isdir(directory):
        return f"cannot write the profile '{args.name or DEFAULT_PROFILE_NAME}': no directory '{directory}'"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write the profile '{args.name or DEFAULT_PROFILE_NAME}': directory '{directory}' is not writable"
    return None


class _Contexts(list):
    """Proton's -c choices, listed as Proton lists them (its usage and error
    text unchanged), also accepting cproton's "python,aten" and "native"."""

    def __contains__(self, value):
        return value in ("python,aten", "native") or list.__contains__(self, value)


def run_profiling(args, target_args):
    if args.include or args.exclude:
        from .hooks.launch import set_filter
        set_filter(args.include, args.exclude)
    flags.command_line = False
    start(args.name, context=args.context, data=args.data, backend=args.backend, mode=args.mode,
          hook=args.hook)
    try:
        code = do_setup_and_execute(target_args)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        flags.command_line = False
        _finalize(None, "")
    return code


def print_config(out=sys.stdout) -> None:
    """The C configuration table (src/core/config_table.c) with each
    variable's current value and where it comes from."""
    from . import _cproton
    for name, kind, default, knob, reader, doc, _role in _cproton.config_table():
        value = _config.get(name)
        source = "environment" if value is not None else "default"
        shown = value if value is not None else default
        extra = f" (knob triton.knobs.proton.{knob})" if knob else ""
        print(f"{name}={shown!r} [{source}; {kind}; read by {reader}]{extra}: {doc}", file=out)


def main(argv=None):
    args, target = parse_arguments(argv)
    if args.config:
        print_config()
        sys.exit(0)
    problem = preflight(args, target)
    if problem:
        print(f"cproton: error: {problem}", file=sys.stderr)
        sys.exit(2)
    if args.native:
        sys.exit(run_native(args, target))
    try:
        code = run_profiling(args, target)
    except (TypeError, ValueError, RuntimeError) as e:  # RuntimeError: Proton's, e.g. an unknown backend
        print(f"cproton: error: {e}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
