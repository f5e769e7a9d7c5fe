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

from particles.core.validation import check_float, check_int

from . import limits as _limits

__all__ = ["register_explore", "check_port_free", "classify_files"]


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
    try:
        server.run()  # Ctrl-C: Uvicorn closes the connections, then raises the interrupt again
    except KeyboardInterrupt:
        pass  # the way to end a server: a clean stop, exit 0
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
                    "Needs the explore extra: pip install '.[explore]' in the repository root.")
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
