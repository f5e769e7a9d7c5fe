"""The explorer's web application (Starlette): the page, its local assets, and the JSON,
binary and WebSocket endpoints of the Live, Run and Phase tabs.

Endpoints
---------
``GET /``                             the page; ``/static/...`` its scripts and style (no network needed)
``GET /api/controls``                 the Live controls with their ranges
``WS  /api/live``                     a live session: the server sends ``hello`` (JSON: session id, run
                                      meta) and then binary frames (:mod:`.frames`); the page answers
                                      each frame with ``{"type": "ack"}`` (at most two frames in flight);
                                      ``?kind=network&model=NAME`` trains a registered network instead
                                      (:mod:`.network`; ``GET /api/network/controls`` lists them; the Layers
                                      tab's ``model=sparse-modular`` sends its controls in ``hello``)
``POST /api/live/{sid}/controls``     ``{control: value, ...}``: 200 with the values in force, or 422
                                      naming the control and its range (nothing changed)
``POST /api/live/{sid}/action``       ``{"action": "play" | "pause" | "step" | "reset"}``
``POST /api/live/{sid}/handover``     ``{"from": network sid, "law": "preset" | "fitted", "preset": name}``: the
                                      particle session ``sid`` runs from that network's embedding now
                                      (:mod:`.handover`); 200 with the law (and the fit), 422 naming the
                                      refused field, 404 for a session the server does not have
``GET /api/runs``                     the trajectories the server holds (given on the command line or uploaded)
``POST /api/runs?name=F``             upload a trajectory file (the request body); 422 with the
                                      ``TrajectoryFormatError`` message for a damaged or foreign file
``GET /api/runs/{id}``                binary: the run's summary (thinned signals, scalars)
``GET /api/runs/{id}/frame?step=N&plane=P``   binary: the embedding at step N (the last snapshot at or before
                                      it) in the plane P: ``pca`` or a frequency k (its Fourier plane);
                                      default the summary's ``default_plane``
``GET /api/runs/{id}/metrics``        structure metrics over the snapshots
``GET /api/runs/{id}/layers/meta``    the Layers tab, once per run with layer states (:mod:`.layers`): recorded
                                      steps, probe set, p, curves (thinned); 422 saying how to record them for
                                      a run without
``GET /api/runs/{id}/layers?step=N``  binary: every layer's state at recorded step N; 422 naming ``step`` and
                                      the nearest recorded steps for a step not recorded
``GET /api/runs/{id}/stages``         ``fitting.stages(run).to_dict()`` (the numbers of ``embdyn stages RUN``),
                                      or ``{"stages": null, "error": why}`` for a run it cannot split
``POST /api/runs/{id}/fit``           ``{"start": N, "stop": M}``: an ODE fit of the window, simulated
``GET /api/phases``, ``GET /api/phases/{id}``   the phase files and their grids

Every request must be addressed to this machine (the Host header) and, when it has an
Origin, come from this server's own page (:class:`SameOrigin`).

Only files given on the command line or uploaded are read; nothing takes a path.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from particles.core.controls import ControlError, controls_spec
from particles.core.io import json_loads_bounded, json_safe
from particles.core.limits import load_bytes
from particles.trajectory import TrajectoryFormatError

from .budget import MemoryLedger, OverBudget
from .frames import encode_frame
from .layers import layer_work_bytes, run_layers
from .limits import (BODY_TIMEOUT, MAX_JSON_BYTES, MAX_META_CHARS, MAX_WS_MESSAGE, BodyRefused, log, parse_json,
                     read_body)
from .live import LiveSimulation, control_spec
from .network import live_network_class, live_network_names
from .phases import load_phase_file
from .runs import MAX_UPLOAD_BYTES, RunStore, declared_size

__all__ = ["build_app", "SameOrigin", "STATIC", "MAX_FPS", "FRAMES_IN_FLIGHT", "MAX_SESSIONS", "FRAME_BUDGET",
           "LOCAL_HOSTS"]

STATIC = Path(__file__).with_name("static")
#: the live loop sends at most this many frames a second
MAX_FPS = 60.0
#: frames sent and not yet acknowledged by the page
FRAMES_IN_FLIGHT = 2
#: live sessions (pages with a Live tab) at a time: each one runs its own simulation
MAX_SESSIONS = 8
#: seconds of Euler steps in one live frame: a frame asked for more steps is cut after the chunk that
#: passes it (the header's ``cut`` says so), so a heavy session never holds a page, a control or Ctrl-C
FRAME_BUDGET = 0.25
#: Host headers the server answers by default (the page must be on this machine: no DNS rebinding)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(json_safe(data), status_code=status)


def _error(exc: BaseException, status: int = 422, parameter: str | None = None) -> JSONResponse:
    message = " ".join(str(exc).split())
    return _json({"error": message, "parameter": parameter}, status)


def _binary(payload: bytes) -> Response:
    return Response(payload, media_type="application/octet-stream", headers={"Cache-Control": "no-store"})


async def _body_json(request: Request) -> Any:
    # application/json only: another site's page cannot send it without the browser asking first
    # media types are case-insensitive (RFC 9110)
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise ValueError("the request body must be JSON (Content-Type: application/json)")
    limits = request.app.state.limits
    body, _ = await read_body(request, limits["max_json_bytes"], timeout=limits["body_timeout"])
    try:
        return await parse_json(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError("the request body must be JSON") from None
    except ValueError as exc:  # nested past MAX_JSON_DEPTH
        raise ValueError(f"the request body is refused: {exc}") from None


async def _body_refused(request: Request, exc: BodyRefused) -> Response:
    if exc.status == 408:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
    # the rest of the body is not read: the connection closes after this answer
    return _json({"error": str(exc), "parameter": None}, exc.status)


async def _over_budget(request: Request, exc: OverBudget) -> Response:
    return _json({"error": str(exc), "parameter": None}, exc.status)


async def _client_gone(request: Request, exc: ClientDisconnect) -> Response:
    log.warning("%s %s: the client went away before its request body ended", request.method, request.url.path)
    return Response(status_code=400)  # nobody reads it


class NotFound(Exception):
    """A session, run or grid the server does not have: answered 404 with its message."""


async def _not_found(request: Request, exc: NotFound) -> Response:
    return _json({"error": str(exc), "parameter": None}, 404)


class FramePool:
    """Threads that compute live frames, as daemons: a frame still computing when the server stops
    does not hold the process's exit (a ThreadPoolExecutor's threads are joined at exit). ``submit``
    returns a ``concurrent.futures.Future``, as an executor's does (``loop.run_in_executor`` takes it)."""

    def __init__(self, workers: int, name: str):
        import queue

        self._jobs: Any = queue.SimpleQueue()
        for i in range(workers):
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            future, fn, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the awaiting request
                future.set_exception(exc)
            # the job's session is not kept alive by an idle thread until its next job
            del future, fn, args

    def submit(self, fn: Any, *args: Any) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args))
        return future


class LiveSession:
    """One page's live run: the particle simulation (``kind="particles"``, the
    Live tab) or the network in training (``"network"``, the Network tab),
    whether it plays, and the frames in flight."""

    def __init__(self, sid: str, kind: str = "particles", model: str = "constant-attention"):
        self.sid = sid
        self.kind = kind
        self.sim = LiveSimulation() if kind == "particles" else live_network_class(model)()
        self.playing = False
        self.pending_steps = 0
        self.credits = FRAMES_IN_FLIGHT
        self.wake = asyncio.Event()
        self.force_frame = True
        self.closed = False  # the page has gone: a frame being computed stops after its chunk


class Explorer:
    """The application's state: runs, phase grids and live sessions."""

    def __init__(self, trajectories: Sequence[str | Path] = (), phases: Sequence[str | Path] = (),
                 memory_budget: int | None = None):
        self.runs = RunStore()
        for path in trajectories:
            self.runs.add_path(path)
        # one memory budget for the server: the runs it keeps and the work of the requests in progress
        self.ledger = MemoryLedger(memory_budget, held=self.runs.held_bytes)
        self.phases = [load_phase_file(path) for path in phases]
        self.sessions: dict[str, LiveSession] = {}
        self.opening = 0  # sessions being built (a network's first build takes seconds), counted in the cap
        # live frames in threads of their own: a busy session never takes the threads that answer the run
        # endpoints and control changes (asyncio's default pool)
        self.live_pool = FramePool(MAX_SESSIONS, "embdyn-live")

    @staticmethod
    def warm_up() -> None:
        """Compile the live path (a default session's step and frame) at start-up, in a daemon thread (Ctrl-C
        does not wait for it), so that the first page does not wait for the whole compilation."""
        def compile_live() -> None:
            sim = LiveSimulation()
            sim.advance(1)
            sim.frame()

        threading.Thread(target=compile_live, name="embdyn-live-warmup", daemon=True).start()

    # -- pages -------------------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def controls(self, request: Request) -> Response:
        from particles.presets import preset

        presets = {}
        for name in ("clustering-alignment", "circles", "grids"):
            config = preset(name)
            params = config.params.to_dict()
            presets[name] = {"dt": config.dt, **{k: params[k] for k in control_spec() if k in params},
                             "description": config.description}
        return _json({"controls": control_spec(), "presets": presets})

    async def network_controls(self, request: Request) -> Response:
        """The Network tab's controls, or why there are none (torch missing: how to install it)."""
        try:
            cls = await asyncio.to_thread(live_network_class)
            models = []
            for name in live_network_names():
                model = await asyncio.to_thread(live_network_class, name)
                if getattr(model, "tab", "network") == "network":  # the Layers tab's network is offered there
                    models.append({"name": name, "description": model.description})
        except (RuntimeError, ValueError) as exc:  # torch missing, or no network registered (not installed)
            return _json({"available": False, "error": str(exc)})
        return _json({"available": True, "controls": controls_spec(cls.controls), "models": models})

    # -- live --------------------------------------------------------------------------------------
    def _session(self, request: Request) -> LiveSession:
        sid = request.path_params["sid"]
        if sid not in self.sessions:
            raise NotFound(f"no live session {sid!r}: reload the page")
        return self.sessions[sid]

    async def live_controls(self, request: Request) -> Response:
        session = self._session(request)
        try:
            changes = await _body_json(request)
            checked = session.sim.check(changes)
            restart = any(session.sim.controls[k].restart for k in checked)

            def apply() -> tuple[dict, dict | None]:
                # the change, then a restart's meta, in one worker thread (each waits for a chunk or a step at
                # most: off the loop); pages changing controls at once wait for one worker each, not two
                return session.sim.update(checked), (session.sim.meta() if restart else None)

            values, meta = await asyncio.to_thread(apply)
        except (ValueError, TypeError) as exc:
            return _error(exc, 422, getattr(exc, "parameter", None))
        session.force_frame = True
        session.wake.set()
        return _json({"values": values, "version": session.sim.staged_version, "restart": restart, "meta": meta})

    async def live_action(self, request: Request) -> Response:
        session = self._session(request)
        try:
            body = await _body_json(request)
            action = body.get("action") if isinstance(body, dict) else None
            if action not in ("play", "pause", "step", "reset"):
                raise ValueError(f"action must be one of play, pause, step, reset, got {action!r}")
        except ValueError as exc:
            return _error(exc, 422, "action")
        if action == "play":
            session.playing = True
        elif action == "pause":
            session.playing = False
        elif action == "step":
            session.playing = False
            session.pending_steps += 1
        else:
            await asyncio.to_thread(session.sim.reset)
            session.force_frame = True
        session.wake.set()
        return _json({"playing": session.playing, "step": session.sim.step})

    async def live_handover(self, request: Request) -> Response:
        """The particle session ``sid`` started from a network session's embedding, under a preset's law or
        the law fitted to the network's last steps (:mod:`.handover`)."""
        from .handover import handover_law
        from .live import PRESET_NAMES

        session = self._session(request)
        try:
            body = await _body_json(request)
            if not isinstance(body, dict):
                raise ControlError(None, 'the hand-over needs a JSON object {"from": sid, "law": ..., "preset": ...}')
            if session.kind != "particles":
                raise ControlError(None, f"session {session.sid!r} trains a network: hand over to a particle session")
            source = self.sessions.get(body.get("from")) if isinstance(body.get("from"), str) else None
            if source is None or source.kind != "network":
                raise ControlError("from", f"from must name a live network session of this server, got "
                                           f"{str(body.get('from'))[:40]!r}")
            name = body.get("preset", "clustering-alignment")
            if name not in PRESET_NAMES:
                raise ControlError("preset", f"preset must be one of {', '.join(PRESET_NAMES)}, got {name!r}")
            recorded = await asyncio.to_thread(source.sim.recorded)
            law, fit = await asyncio.to_thread(handover_law, body.get("law", "preset"), name, recorded)
            origin = f"{source.sim.model} step {recorded['step']}, {body.get('law', 'preset')} law"
            values = await asyncio.to_thread(session.sim.start_from, recorded["now"], recorded["train"], law, origin,
                                           name)
        except (ValueError, TypeError) as exc:
            return _error(exc, 422, getattr(exc, "parameter", None))
        session.force_frame = True
        session.wake.set()
        meta = await asyncio.to_thread(session.sim.meta)
        return _json({"values": values, "version": session.sim.staged_version, "meta": meta, "law": law.to_dict(),
                      "fit": fit, "origin": origin})

    async def live_socket(self, websocket: WebSocket) -> None:
        if len(self.sessions) + self.opening >= MAX_SESSIONS:
            # accepted, then closed with the reason: a refusal before the handshake reaches the page as a bare 403
            await websocket.accept()
            await websocket.close(code=1013, reason=f"at most {MAX_SESSIONS} live sessions at a time: close "
                                                    "another explorer page")
            return
        self.opening += 1  # counted from the check on (no await between): pages connecting at once keep the cap
        try:
            await websocket.accept()
            kind = websocket.query_params.get("kind", "particles")
            sid = secrets.token_urlsafe(12)
            if kind not in ("particles", "network"):
                raise ValueError(f"kind must be particles or network, got {kind!r}")
            model = websocket.query_params.get("model", "constant-attention")
            session = await asyncio.to_thread(LiveSession, sid, kind, model)  # a network's first build imports torch
            self.sessions[sid] = session
        except (RuntimeError, ValueError) as exc:  # torch missing (said how to install it), or a bad kind
            try:
                await websocket.send_text(json.dumps({"type": "error", "error": str(exc)}))
                # a close reason holds at most 123 bytes
                await websocket.close(code=1011 if isinstance(exc, RuntimeError) else 1008,
                                      reason=str(exc).encode()[:120].decode(errors="ignore"))
            except (WebSocketDisconnect, RuntimeError, ConnectionError):
                pass  # the page has gone already
            return
        finally:
            self.opening -= 1
        try:
            await websocket.send_text(json.dumps(json_safe({"type": "hello", "session": sid,
                                                            "meta": session.sim.meta()})))
            reader = asyncio.create_task(self._read_acks(websocket, session))
            try:
                await self._frame_loop(websocket, session, reader)
            finally:
                reader.cancel()
        except (WebSocketDisconnect, RuntimeError, ConnectionError):
            pass
        finally:
            self.sessions.pop(sid, None)

    async def _read_acks(self, websocket: WebSocket, session: LiveSession) -> None:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                # the page has gone: its frame stops after the current chunk, and it no longer counts
                # against the session cap while that chunk ends
                session.closed = True
                self.sessions.pop(session.sid, None)
                session.wake.set()
                raise WebSocketDisconnect(message.get("code", 1000))
            text, data = message.get("text"), message.get("bytes")
            size = len(text) if text is not None else len(data or b"")
            cap = websocket.app.state.limits["max_ws_message"]
            if size > cap:  # Uvicorn refuses it from its frame header already (ws_max_size); other servers
                session.closed = True
                self.sessions.pop(session.sid, None)
                session.wake.set()
                await websocket.close(code=1009, reason=f"message over {cap} bytes")
                raise WebSocketDisconnect(1009)
            try:
                kind = json_loads_bounded(text or "").get("type")
            except (ValueError, AttributeError):  # bad or deeply nested JSON
                continue  # anything but {"type": "ack"} is ignored
            if kind == "ack":
                session.credits = min(FRAMES_IN_FLIGHT, session.credits + 1)
                session.wake.set()

    async def _frame_loop(self, websocket: WebSocket, session: LiveSession, reader: asyncio.Task) -> None:
        last = 0.0
        while not reader.done():
            want = session.playing or session.pending_steps > 0 or session.force_frame
            if not want or session.credits <= 0:
                session.wake.clear()
                try:
                    await asyncio.wait_for(session.wake.wait(), timeout=1.0)
                except asyncio.TimeoutError:
                    pass
                continue
            # a network that states the frame rate it aims for (the Layers tab's) is paced to it, on a clock
            # that does not drift (a late frame is not made up by more than one early one)
            rate = getattr(session.sim, "frame_rate", None)
            wait = last + 1.0 / (rate or MAX_FPS) - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            last = time.perf_counter() if rate is None else max(last + 1.0 / rate, time.perf_counter() - 1.0 / rate)
            advance = session.playing or session.pending_steps > 0
            if session.pending_steps > 0:
                session.pending_steps -= 1
            session.force_frame = False
            payload = await asyncio.wrap_future(self.live_pool.submit(self._live_frame, session, advance))
            if session.closed:
                break
            session.credits -= 1
            await websocket.send_bytes(payload)
            if session.sim.error is not None:
                session.playing = False
        reader.result()  # the page went away: re-raise its disconnect

    def _live_frame(self, session: LiveSession, advance: bool) -> bytes:
        began = time.perf_counter()
        if advance:
            # one live page: the engine's own choice (parallel kernels on large runs); several: each session on
            # the serial kernels, which release Python's lock, so that sessions share the cores and the
            # server's other threads keep going (same states either way)
            session.sim.advance(budget=FRAME_BUDGET, stop=lambda: session.closed,
                                parallel=None if len(self.sessions) <= 1 else False)
        stepped = time.perf_counter()
        header, arrays = session.sim.frame()
        # the frame's steps (held to FRAME_BUDGET, a step or chunk at least) and the whole frame with its metrics
        header["steps_ms"] = 1e3 * (stepped - began)
        header["compute_ms"] = 1e3 * (time.perf_counter() - began)
        header["playing"] = session.playing
        header["sent"] = time.time()
        return encode_frame(header, arrays)

    # -- runs --------------------------------------------------------------------------------------
    def _run(self, request: Request):
        raw = request.path_params["rid"]
        if not (raw.isascii() and raw.isdigit()):
            raise NotFound(f"no run {raw!r}")
        try:
            return self.runs.get(int(raw))
        except KeyError as exc:
            raise NotFound(exc.args[0]) from None

    async def run_list(self, request: Request) -> Response:
        return _json({"runs": self.runs.listing()})

    async def run_upload(self, request: Request) -> Response:
        name = request.query_params.get("name", "upload.npz")
        limits = request.app.state.limits
        # streamed to a file of the store's private folder as it arrives: an upload holds one chunk of memory
        # while it is received, whatever its size; 413 from its Content-Length before anything is read
        tmp = None
        try:
            tmp = self.runs.upload_file()
            with open(tmp, "wb") as fh:
                await read_body(request, MAX_UPLOAD_BYTES, timeout=limits["body_timeout"], sink=fh.write)
        except OSError as exc:  # the disk is full, or the private folder went away
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            return _error(OSError(f"the upload could not be stored on the server: {exc.strerror or exc}"), 507,
                          "file")
        except BodyRefused as exc:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            if exc.status == 408:
                log.warning("upload %r dropped: %s", name[:100], exc)
            return _error(ValueError(str(exc).replace("the request body", "the file")), exc.status, "file")
        except ClientDisconnect:  # the page went away mid-upload: one line, no traceback
            Path(tmp).unlink(missing_ok=True)
            log.warning("upload %r abandoned: the client went away before the file ended", name[:100])
            return Response(status_code=400)  # nobody reads it
        except BaseException:  # cancelled (the server stopping)
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise
        try:
            with self.ledger.reserve(load_bytes(declared_size(tmp)), "reading this upload"):
                run_id = await asyncio.to_thread(self.runs.add_upload_file, name, tmp, limits["max_meta_chars"])
        except (TrajectoryFormatError, ValueError, TypeError, OSError) as exc:
            return _error(exc, 422, "file")
        finally:
            Path(tmp).unlink(missing_ok=True)
        return _json({"id": run_id, "runs": self.runs.listing()})

    async def run_summary(self, request: Request) -> Response:
        run = self._run(request)
        with self.ledger.reserve(run.work_bytes("summary"), "this run's summary"):
            header, arrays = await asyncio.to_thread(run.summary)
        return _binary(encode_frame(header, arrays))

    async def run_frame(self, request: Request) -> Response:
        run = self._run(request)
        step = request.query_params.get("step")
        plane = request.query_params.get("plane")
        try:
            if step is None or not (step.isascii() and step.removeprefix("-").isdigit()):
                raise ValueError(f"step must be an int (the query ?step=N), got {step!r}")
            with self.ledger.reserve(run.work_bytes("frame"), "this frame"):
                header, arrays = await asyncio.to_thread(run.frame, int(step), plane)
        except (ValueError, TypeError) as exc:
            return _error(exc, 422, getattr(exc, "parameter", "step"))
        return _binary(encode_frame(header, arrays))

    async def run_layers_meta(self, request: Request) -> Response:
        """The Layers tab's view of a run, once: its recorded steps, probe set, p and curves (:mod:`.layers`)."""
        run = self._run(request)
        try:
            with self.ledger.reserve(layer_work_bytes(run, "meta"), "this run's layer states"):
                meta = await asyncio.to_thread(lambda: run_layers(run).meta())
        except ValueError as exc:  # no layer states (how to record them), or damaged ones
            return _error(exc, 422, "run")
        return _json(meta)

    async def run_layers_frame(self, request: Request) -> Response:
        """Every layer's state at a recorded step, binary (:mod:`.frames`)."""
        run = self._run(request)
        step = request.query_params.get("step")
        if step is None or not (step.isascii() and step.removeprefix("-").isdigit()):
            return _error(ValueError(f"step must be an int (the query ?step=N), got {step!r}"), 422, "step")
        try:  # the view built here when no meta request came first: reserved as the meta's is
            with self.ledger.reserve(layer_work_bytes(run, "meta"), "this run's layer states"):
                view = await asyncio.to_thread(run_layers, run)
        except ValueError as exc:  # no layer states: how to record them
            return _error(exc, 422, "run")

        def frame() -> bytes:
            header, arrays = view.frame(int(step))
            return encode_frame(header, arrays)

        try:
            with self.ledger.reserve(layer_work_bytes(run, "frame"), "this layer frame"):
                payload = await asyncio.to_thread(frame)
        except ValueError as exc:  # a step not recorded: named with the nearest recorded steps
            return _error(exc, 422, "step")
        return _binary(payload)

    async def run_metrics(self, request: Request) -> Response:
        run = self._run(request)
        # the metrics run in a thread of their own after this answer: it holds the reservation until it ends
        return _json(await asyncio.to_thread(run.metrics, reserve=lambda need: self.ledger.hold(
            need, "this run's structure metrics")))

    async def run_stages(self, request: Request) -> Response:
        run = self._run(request)
        with self.ledger.reserve(run.work_bytes("stages"), "this run's stages"):
            return _json(await asyncio.to_thread(run.stages))

    async def run_fit(self, request: Request) -> Response:
        run = self._run(request)
        try:
            body = await _body_json(request)
            if not isinstance(body, dict) or "start" not in body or "stop" not in body:
                raise ValueError('the fit needs a JSON object {"start": N, "stop": M} (steps)')
            with self.ledger.reserve(run.work_bytes("fit", start=body["start"], stop=body["stop"]), "this fit"):
                result = await asyncio.to_thread(run.fit, body["start"], body["stop"])
        except (ValueError, TypeError, FloatingPointError) as exc:
            return _error(exc, 422, getattr(exc, "parameter", None))
        return _json(result)

    # -- phases ------------------------------------------------------------------------------------
    async def phase_list(self, request: Request) -> Response:
        return _json({"phases": [{"id": i, "name": g["name"], "kind": g["kind"]} for i, g in enumerate(self.phases)]})

    async def phase_grid(self, request: Request) -> Response:
        raw = request.path_params["pid"]
        if not (raw.isascii() and raw.isdigit()) or int(raw) >= len(self.phases):
            raise NotFound(f"no phase grid {raw!r}")
        return _json(self.phases[int(raw)])

    def routes(self) -> list:
        return [
            Route("/", self.index),
            Route("/api/controls", self.controls),
            Route("/api/network/controls", self.network_controls),
            WebSocketRoute("/api/live", self.live_socket),
            Route("/api/live/{sid}/controls", self.live_controls, methods=["POST"]),
            Route("/api/live/{sid}/action", self.live_action, methods=["POST"]),
            Route("/api/live/{sid}/handover", self.live_handover, methods=["POST"]),
            Route("/api/runs", self.run_list, methods=["GET"]),
            Route("/api/runs", self.run_upload, methods=["POST"]),
            Route("/api/runs/{rid}", self.run_summary),
            Route("/api/runs/{rid}/frame", self.run_frame),
            Route("/api/runs/{rid}/metrics", self.run_metrics),
            Route("/api/runs/{rid}/layers/meta", self.run_layers_meta),
            Route("/api/runs/{rid}/layers", self.run_layers_frame),
            Route("/api/runs/{rid}/stages", self.run_stages),
            Route("/api/runs/{rid}/fit", self.run_fit, methods=["POST"]),
            Route("/api/phases", self.phase_list),
            Route("/api/phases/{pid}", self.phase_grid),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]


class SameOrigin:
    """ASGI middleware: answer only requests addressed to one of ``hosts`` (the Host header;
    None: any) and coming from this server's own page (an Origin header, when there is one,
    must name the same host and port). Another web site open in the same browser can then
    neither drive the simulation nor read a run, also not through DNS rebinding."""

    def __init__(self, app: Any, hosts: Sequence[str] | None):
        self.app = app
        self.hosts = None if hosts is None else {h.strip("[]").lower() for h in hosts}

    #: a Host header: a name or IPv4 address, or [IPv6], then an optional :port; nothing else (no userinfo, paths)
    HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")

    @classmethod
    def hostname(cls, host: str) -> str | None:
        """The host of a Host header, lower-cased, or None when the header is not a plain host[:port]."""
        match = cls.HOST.match(host)
        if match is None:
            return None
        return match.group(1).strip("[]").lower()

    @staticmethod
    def origin_netloc(origin: str) -> str | None:
        """host[:port] of an Origin header, or None unless it is exactly http(s)://host[:port]."""
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(origin)
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or parts.username is not None or parts.password is not None \
                or parts.path not in ("", "/") or parts.query or parts.fragment:
            return None
        return parts.netloc.lower()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            host = headers.get("host", "")
            origin = headers.get("origin")
            refusal, status = None, 403
            name = self.hostname(host)
            if name is None or (self.hosts is not None and name not in self.hosts):
                served = "any host" if self.hosts is None else ", ".join(sorted(self.hosts))
                refusal, status = (f"bad Host header {host[:80]!r}: this server answers requests to {served} "
                                   "only"), 421
            elif origin is not None and self.origin_netloc(origin) != host.lower():
                refusal = (f"cross-site request refused (Origin {origin[:80]!r} is not this server's page "
                           f"http://{host}): use the explorer's own page")
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008, "reason": refusal[:120]})
                else:
                    await JSONResponse({"error": refusal, "parameter": None}, status_code=status)(scope, receive,
                                                                                                  send)
                return
        await self.app(scope, receive, send)


def build_app(trajectories: Sequence[str | Path], phases: Sequence[str | Path],
              hosts: Sequence[str] | None, limits: dict[str, Any] | None = None) -> Starlette:
    """The application behind :func:`fitting.explore.make_app` (which checks the arguments
    and documents them); ``limits``: :mod:`.limits`'s caps by name (``max_json_bytes``, ``max_ws_message``,
    ``max_meta_chars``, ``body_timeout``; ``memory_budget``, bytes, for :class:`.budget.MemoryLedger`),
    defaults for those not given."""
    explorer = Explorer(trajectories, phases, memory_budget=(limits or {}).get("memory_budget"))
    app = Starlette(routes=explorer.routes(), middleware=[Middleware(SameOrigin, hosts=hosts)],
                    exception_handlers={NotFound: _not_found, BodyRefused: _body_refused, OverBudget: _over_budget,
                                        ClientDisconnect: _client_gone})
    app.state.explorer = explorer
    app.state.limits = {"max_json_bytes": MAX_JSON_BYTES, "max_ws_message": MAX_WS_MESSAGE,
                        "max_meta_chars": MAX_META_CHARS, "body_timeout": BODY_TIMEOUT, **(limits or {})}
    explorer.warm_up()
    return app
