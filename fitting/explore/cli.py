"""``embdyn explore [FILE ...]``: start the explorer on this machine and open it in the browser."""

from __future__ import annotations

import argparse
import os
import errno
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any, Mapping, MutableMapping

from particles.core.validation import check_float, check_int

from . import limits as _limits

__all__ = ["register_explore", "check_port_free", "classify_files", "server_environment", "restore_environment",
           "reexec_with_arena_max", "return_freed_memory", "SERVER_ARENA_MAX", "TRIM_PERIOD"]

#: glibc's malloc arenas of the server process (``MALLOC_ARENA_MAX``): with glibc's default (8 a core) the memory
#: that closed live sessions freed stayed with the process (494 -> 3179 MiB over five rounds of sessions at the
#: Network tab's largest controls then, issue 69); with 2 the sessions' threads share two arenas
SERVER_ARENA_MAX = "2"
#: seconds between the server process's looks at its live sessions: after one closes, the memory freed is handed
#: back to the system (glibc's ``malloc_trim``) at this look and the next
TRIM_PERIOD = 1.0
#: set in the server's environment by the re-execution that sets ``MALLOC_ARENA_MAX``: the server then takes both
#: out of its own environment, so that the processes it starts get the user's
_ARENA_MARK = "EMBDYN_EXPLORE_SET_ARENA_MAX"


def classify_files(paths: list[str]) -> tuple[list[Path], list[Path]]:
    """Trajectories (``.npz``) and phase files (``.csv``, ``.json``) among ``paths``."""
    trajectories, phases = [], []
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise FileNotFoundError(f"no file at {text!r}")
        if not path.is_file():
            raise ValueError(f"FILE must be a file, got the folder {text!r}")
        suffix = path.suffix.lower()
        if suffix == ".npz":
            trajectories.append(path)
        elif suffix in (".csv", ".json", ".jsonl"):
            phases.append(path)
        else:
            raise ValueError(f"FILE must be a trajectory (.npz), a sweep table (.csv) or journal (.jsonl), or a "
                             f"toy-phases grid (.json), got {text!r}")
    return trajectories, phases


def check_port_free(host: str, port: int) -> None:
    """A ``ValueError`` in one line when ``host:port`` cannot be listened on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ValueError(f"port {port} on {host} is in use: choose another with --port (or --port 0 "
                                 f"for any free port)") from None
            raise ValueError(f"--host {host!r} cannot be listened on ({exc.strerror or exc})") from None


def server_environment(environ: Mapping[str, str]) -> dict[str, str] | None:
    """The environment to run the explorer's server in: ``environ`` with glibc's
    ``MALLOC_ARENA_MAX`` set to :data:`SERVER_ARENA_MAX` (and a mark saying it was
    set here), or None when ``environ`` will do as it is: the user set
    ``MALLOC_ARENA_MAX`` (or ``glibc.malloc.arena_max`` in ``GLIBC_TUNABLES``), whose
    value is kept, or the mark says this process is the re-executed server already."""
    if _ARENA_MARK in environ or "MALLOC_ARENA_MAX" in environ \
            or "glibc.malloc.arena_max" in environ.get("GLIBC_TUNABLES", ""):
        return None
    return {**environ, "MALLOC_ARENA_MAX": SERVER_ARENA_MAX, _ARENA_MARK: "1"}


def restore_environment(environ: MutableMapping[str, str]) -> None:
    """Take the ``MALLOC_ARENA_MAX`` that :func:`server_environment` set out of
    ``environ`` (glibc read it when the process started): the processes the server
    starts get the user's environment. Nothing changes without its mark."""
    if environ.pop(_ARENA_MARK, None) is not None:
        environ.pop("MALLOC_ARENA_MAX", None)


def _server_is_the_process() -> bool:
    """Whether the server runs as a process of its own on glibc: ``embdyn explore`` in its main
    thread, without ``EMBDYN_EXPLORE_IN_PROCESS`` (which has ``main()`` return to a caller), on
    Linux with glibc. Only then does the command touch the process's allocator."""
    import platform

    return os.environ.get("EMBDYN_EXPLORE_IN_PROCESS") is None and threading.current_thread() \
        is threading.main_thread() and sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def reexec_with_arena_max() -> None:
    """Run this same command again, once, as a server process with glibc's malloc arenas at
    :data:`SERVER_ARENA_MAX` (:func:`server_environment`); returns when that is not to be done:
    the user set them, a process that is not the server alone (:func:`_server_is_the_process`),
    or a command line not known."""
    if not _server_is_the_process() or "explore" not in sys.argv[1:] or not getattr(sys, "orig_argv", None) \
            or not sys.executable:
        return
    env = server_environment(os.environ)
    if env is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, list(sys.orig_argv), env)  # the same process (its pid), the same command
    except OSError:
        return  # the server runs without the setting


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (a ctypes function), or None where there is none."""
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def return_freed_memory(sessions: Mapping[str, Any], stop: threading.Event, trim: Any,
                         period: float = TRIM_PERIOD) -> None:
    """Until ``stop`` is set, look at the live ``sessions`` every ``period`` seconds and, at the look
    after one has closed and the next (its last frame ends meanwhile), hand the memory the process
    has freed back to the system with ``trim(0)`` (glibc's ``malloc_trim``): glibc keeps freed
    memory for the next allocations otherwise, and a server whose pages came and went would keep
    the memory of its busiest moment."""
    known: set = set()
    looks = 0
    while not stop.wait(period):
        now = set(sessions.copy())  # a copy in one step: the server's loop changes the sessions meanwhile
        if known - now:
            looks = 2
        known = now
        if looks:
            looks -= 1
            trim(0)


def _cmd_explore(args: argparse.Namespace) -> int:
    from . import INSTALL_HINT, explore_available

    if not explore_available():
        print(f"embdyn explore: {INSTALL_HINT}", file=sys.stderr)
        return 2
    port = check_int(args.port, "--port", 0, 65535)
    for option in ("max_json_bytes", "max_ws_message", "max_meta_chars", "max_connections"):
        check_int(getattr(args, option), "--" + option.replace("_", "-"), 1)
    for option in ("body_timeout", "header_timeout"):
        check_float(getattr(args, option), "--" + option.replace("_", "-"), 0, strict=True)
    trajectories, phases = classify_files(args.files)
    check_port_free(args.host, port)
    # the server's memory: glibc keeps what closed sessions freed in one of its many arenas unless they are few
    reexec_with_arena_max()  # returns when not re-executed
    restore_environment(os.environ)
    import uvicorn

    from . import make_app

    if args.host in ("127.0.0.1", "localhost", "::1"):
        hosts = ("127.0.0.1", "localhost", "::1")
    elif args.host in ("0.0.0.0", "::", ""):
        hosts = None  # every address of the machine: any Host header (cross-site requests still refused)
    else:
        hosts = ("127.0.0.1", "localhost", "::1", args.host)
    from .limits import server_config

    # every file read and checked before the server starts
    app = make_app(trajectories, phases, hosts=hosts, max_json_bytes=args.max_json_bytes,
                   max_ws_message=args.max_ws_message, max_meta_chars=args.max_meta_chars,
                   body_timeout=args.body_timeout)
    # Ctrl-C: connections get half a second to close (a live frame stops after its chunk), then their tasks
    # are cancelled
    # slow or too many clients: the header and keep-alive timeouts, the connection cap (fitted to the
    # descriptor limit), WebSocket messages over the cap closed with 1009 from their frame header
    config = server_config(app, args.host, port, header_timeout=args.header_timeout,
                           max_connections=args.max_connections, timeout_graceful_shutdown=0.5)
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            threading.Event().wait(0.05)
        bound = port
        for srv in getattr(server, "servers", []):
            for sock in srv.sockets:
                bound = sock.getsockname()[1]
        host = f"[{args.host}]" if ":" in args.host else args.host
        url = f"http://{host}:{bound}/"
        print(f"embdyn explore: serving on {url} (Ctrl-C stops it)", flush=True)
        if not args.no_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    stopped = threading.Event()
    trim = _malloc_trim() if _server_is_the_process() else None
    if trim is not None:  # the server's process only: a caller's process keeps its allocator as it is
        threading.Thread(target=return_freed_memory, args=(app.state.explorer.sessions, stopped, trim),
                         name="embdyn-explore-trim", daemon=True).start()
    try:
        server.run()  # Ctrl-C: Uvicorn closes the connections, then raises the interrupt again
    except KeyboardInterrupt:
        pass  # the way to end a server: a clean stop, exit 0
    stopped.set()
    app.state.explorer.runs.close()  # the uploads' private folder
    print("embdyn explore: stopped", file=sys.stderr)
    if threading.current_thread() is threading.main_thread() and os.environ.get("EMBDYN_EXPLORE_IN_PROCESS") is None:
        # the server is the process: end it now (frames still computing end with it, and the interpreter's
        # teardown of NumPy, SciPy and Numba, about half a second, is skipped); set EMBDYN_EXPLORE_IN_PROCESS
        # to have main() return instead
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def register_explore(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "explore", help="interactive explorer in the browser: live particle runs, training runs, phase grids "
                        "(needs [explore])",
        description="Start a local web application and open it in the browser. Live: the particle engine runs on "
                    "this machine and streams frames under controls. Run: trajectory files (.npz) given here or "
                    "opened in the page. Phase: sweep tables (.csv of embdyn sweep) and toy-phases grids (.json). "
                    "Needs the explore extra: pip install '.[explore]' in the repository root. Memory: on Linux "
                    f"with glibc the server runs with MALLOC_ARENA_MAX={SERVER_ARENA_MAX} (the command starts "
                    "itself again once with it; a MALLOC_ARENA_MAX you set is kept) and hands the memory that "
                    "closed live sessions freed back to the system (malloc_trim) within two seconds; "
                    "EMBDYN_EXPLORE_IN_PROCESS=1 leaves the allocator as it is.")
    p.add_argument("files", nargs="*", metavar="FILE", help="trajectories (.npz), sweep tables (.csv), toy-phases "
                                                            "grids (.json)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8050, help="port (default 8050; 0 for any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    g = p.add_argument_group("limits", "what a client may send, and how long the server waits (docs/explore.md)")
    g.add_argument("--max-json-bytes", type=int, default=_limits.MAX_JSON_BYTES,
                   help=f"largest JSON request body (default {_limits.MAX_JSON_BYTES}; 413 beyond)")
    g.add_argument("--max-ws-message", type=int, default=_limits.MAX_WS_MESSAGE,
                   help=f"largest WebSocket message from a page (default {_limits.MAX_WS_MESSAGE}; closed "
                        f"with 1009 beyond)")
    g.add_argument("--max-meta-chars", type=int, default=_limits.MAX_META_CHARS,
                   help=f"most characters of an upload's meta (default {_limits.MAX_META_CHARS}; 422 beyond)")
    g.add_argument("--body-timeout", type=float, default=_limits.BODY_TIMEOUT,
                   help=f"seconds a request body may stall (default {_limits.BODY_TIMEOUT:g}; 408 beyond)")
    g.add_argument("--header-timeout", type=float, default=_limits.HEADER_TIMEOUT,
                   help=f"seconds for a request's headers (default {_limits.HEADER_TIMEOUT:g})")
    g.add_argument("--max-connections", type=int, default=_limits.MAX_CONNECTIONS,
                   help=f"open connections at a time (default {_limits.MAX_CONNECTIONS}, lowered to the "
                        f"descriptor limit less {_limits.RESERVED_DESCRIPTORS}; 503 beyond)")
    p.set_defaults(func=_cmd_explore)
