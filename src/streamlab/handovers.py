"""How host threads order one another, as the recorder sees it.

``Thread.start`` and ``Thread.join`` order host threads, and so does what one thread
hands another (an asyncio ``call_soon_threadsafe``, a ``threading.Event``, a
``concurrent.futures.Future``, a ``queue.Queue``): :func:`watch_threads` wraps those
calls so that each hand-over becomes a record (``sync "hand over"`` in the sender,
``sync "awaited"`` in the receiver) that :mod:`streamlab.order` reads as ordering, like
a join.

**Only while something needs them** (:func:`needed`). These are the standard library's
methods, and a program that imports streamlab without recording anything should find
them as they were. So they are replaced when the first recorder or race check starts,
and put back when the last one stops; ``import streamlab`` alone changes none of them.
On the simulator, the model GPU that times its work keeps a host clock per thread (a
thread starts at its parent's time; a join waits for the child's): from the first
operation it is fed, the methods stay replaced for the rest of the process. A
session-wide race check (``STREAMLAB_RACE_CHECK=1``) listens from import on, so under
it too they are replaced from the start; and so they are under the grader, whose guard
must find them as the lab's setup left them. What scoping misses, by design: a call that
began before the watching did (a thread already blocked in ``join()`` when a
``record_ops`` block opens) is not seen when it returns.
"""

from __future__ import annotations

import functools
import os
import sys
import threading

from ._patching import Registry
from .ops import (current_host_function, emit, emitted_while_recording, internal,
                  library_dirs, models, observing, on_observing, quietly, recording,
                  stop_observing, timed)

#: the standard library's methods replaced now (empty while nothing observes)
_scoped = Registry()
_scope_lock = threading.Lock()


# --- host threads: what one hands another ---------------------------------------------
def watch_threads() -> None:
    """Let the recorder see how host threads order one another: ``Thread.start`` and
    ``Thread.join``, and what one thread hands another (:func:`_install_signals`),
    whenever something needs them (see the module's text); :func:`stop_watching` ends it."""
    on_observing(_observing_changed)
    _observing_changed()


def stop_watching() -> None:
    """Put the standard library's methods back, and replace them no more
    (``streamlab.uninstall()``)."""
    stop_observing(_observing_changed)
    with _scope_lock:
        _scoped.undo_all()


def replaced() -> list[tuple[object, str]]:
    """The standard library's methods replaced now: (owner, name) pairs."""
    return _scoped.patched()


def needed() -> bool:
    """Must the hand-overs be watched now? While a recorder or race check listens, while
    a model GPU that has been fed work times the host's threads, and always under the
    grader (``STREAMLAB_GRADING=1``), whose guard compares the standard library's methods
    before and after a part runs: they must not change under it by streamlab's doing."""
    return recording() or any(getattr(m, "fed", True) for m in models()) \
        or os.environ.get("STREAMLAB_GRADING", "") == "1"


def _observing_changed() -> None:
    with _scope_lock:
        on = needed()
        if on and not _scoped.patched():
            _watch_threads(_scoped.patch)
            _install_signals(_scoped.patch)
        elif not on and _scoped.patched():
            _scoped.undo_all()


def _watch_threads(patch) -> None:
    """``Thread.start`` and ``Thread.join`` order host threads: what a thread did before
    starting another comes before all the new one does; a join waits for all of it.

    Replaced while something needs them (:func:`needed`; the module's text says why,
    and what that misses)."""

    def learners(frame) -> bool:  # started or joined by the program, not by a library
        return not frame.f_code.co_filename.startswith(library_dirs())

    def start(orig):
        def start(self):
            if observing() and learners(sys._getframe(2)):  # (1: ops.timed)
                with internal():
                    emit("sync", "thread start", detail={"child": self.name})
            return orig(self)
        return start

    def join(orig):
        def join(self, timeout=None):
            out = orig(self, timeout)
            if observing() and not self.is_alive() and learners(sys._getframe(2)):
                with internal():
                    emit("sync", "thread join", detail={"child": self.name})
            return out
        return join

    patch(threading.Thread, "start", timed(start(threading.Thread.start)))
    patch(threading.Thread, "join", timed(join(threading.Thread.join)))


def _hand_over() -> int | None:
    """The record that what the calling thread did so far precedes what a receiving
    thread does next: inside a host function, the host function's own (its place in its
    stream, which the model GPU knows too); elsewhere, while a recorder listens, a new
    ``sync "hand over"`` record (the race check's vector clock of this thread)."""
    uid = current_host_function()
    if uid is not None or not recording() or not emitted_while_recording():
        return uid  # (a thread that recorded nothing, a library's, hands over nothing)
    try:
        with internal(), quietly():
            op = emit("sync", "hand over")
    except Exception:  # noqa: BLE001  (a thread half started or ending: no record, no harm)
        return None
    return op.uid if op is not None else None


#: per thread, the hand-overs it has received lately (each is drawn once per thread)
_handed = threading.local()


def _received(uid: int) -> None:
    seen = getattr(_handed, "uids", None)
    if seen is None:
        seen = _handed.uids = {}
    if uid in seen:
        return
    seen[uid] = None
    if len(seen) > 256:
        del seen[next(iter(seen))]
    try:
        with internal(), quietly():
            emit("sync", "awaited", detail={"after": uid})
    except Exception:  # noqa: BLE001  (as above)
        pass


_THREADING = threading.__file__


def _from_threading(frame) -> bool:
    """Is the caller threading's own code (a Thread starting, a Condition, a Barrier)?"""
    return frame is not None and frame.f_code.co_filename == _THREADING


def _install_signals(patch) -> None:
    """What one thread hands to another orders the receiver after it. Inside a host
    function that is how its news reaches your code; between your own threads it is
    ordering like a join. The hand-overs drawn:

    - ``loop.call_soon_threadsafe(...)``: asyncio's way in from another thread, which
      ``asyncio.to_thread`` and ``run_in_executor`` use too;
    - ``threading.Event``: ``set()``, then a ``wait()`` or an ``is_set()`` that finds it set;
    - ``concurrent.futures.Future``: finished in one thread (``set_result``,
      ``set_exception``), found done by another (``result()``, ``exception()``, or a done
      callback run at once, which is how asyncio chains a worker's future that finished
      first);
    - ``queue.Queue`` (and its ``LifoQueue`` and ``PriorityQueue``): a ``get()``, or an
      ``empty()`` that finds an item, is ordered after every ``put()`` made before it, as
      the queue's own lock orders them.

    A look that finds the news counts whether or not the code then uses what it found (a
    sleep, then an ``is_set()`` whose answer is ignored, passes: lab 05 keeps it as a known
    hole). Not drawn, and so reported as a race though CPython orders them: a plain list
    or flag polled under the GIL, and ``queue.SimpleQueue`` (a C type, which cannot be
    patched). The records are made quietly (:func:`streamlab.ops.quietly`): a race they
    complete is raised at the thread's next ordinary operation, not inside the library's
    call."""
    import asyncio.base_events
    import concurrent.futures
    import queue

    loop_cls = asyncio.base_events.BaseEventLoop
    soon = loop_cls.call_soon_threadsafe

    def call_soon_threadsafe(self, callback, *args, context=None):
        uid = _hand_over() if observing() else None
        if uid is not None:
            inner = callback

            def callback(*a):  # runs on the loop's thread, after what came before
                _received(uid)
                return inner(*a)
        return soon(self, callback, *args, context=context)

    event_set, event_wait, event_is_set = (
        threading.Event.set, threading.Event.wait, threading.Event.is_set)

    def set(self):  # noqa: A001  (the method's name)
        uid = _hand_over() if observing() and not _from_threading(sys._getframe(1)) else None
        if uid is not None:  # (noted before the flag is set, so that a wait it wakes sees it)
            _note(self, uid)
        return event_set(self)

    def _receive_all(obj):
        for uid in dict.fromkeys(obj.__dict__.get("_streamlab_after", ())):
            _received(uid)

    def wait(self, timeout=None):
        out = event_wait(self, timeout)
        if out and "_streamlab_after" in self.__dict__ and observing():
            _receive_all(self)
        return out

    def is_set(self):
        out = event_is_set(self)
        if out and "_streamlab_after" in self.__dict__ and observing():
            _receive_all(self)
        return out

    patch(loop_cls, "call_soon_threadsafe", call_soon_threadsafe)
    patch(threading.Event, "set", set)
    patch(threading.Event, "wait", wait)
    patch(threading.Event, "is_set", is_set)

    future = concurrent.futures.Future
    set_result, set_exception, add_done_callback = (
        future.set_result, future.set_exception, future.add_done_callback)
    result, exception = future.result, future.exception

    def noted(method):
        @functools.wraps(method)
        def finish(self, *args, **kwargs):
            uid = _hand_over() if observing() and not self.done() else None
            if uid is not None:  # noted before the state changes, so a finder sees it
                _note(self, uid)
            return method(self, *args, **kwargs)
        return finish

    @functools.wraps(add_done_callback)
    def when_done(self, fn):
        if observing() and "_streamlab_after" in self.__dict__ and self.done():
            inner, after = fn, list(self.__dict__["_streamlab_after"])

            def fn(done):  # run now, in this thread: it found the future done
                for uid in after:
                    _received(uid)
                return inner(done)
        return add_done_callback(self, fn)

    def looked(method):
        @functools.wraps(method)
        def look(self, *args, **kwargs):
            out = method(self, *args, **kwargs)  # (returns only once the future is done)
            if "_streamlab_after" in self.__dict__ and observing():
                _receive_all(self)
            return out
        return look

    patch(future, "set_result", noted(set_result))
    patch(future, "set_exception", noted(set_exception))
    patch(future, "add_done_callback", when_done)
    patch(future, "result", looked(result))
    patch(future, "exception", looked(exception))

    # A queue: each put notes a hand-over (made before the queue's lock is taken, and
    # noted under it); a get, or an empty() that finds an item, takes under the same lock
    # the notes of every put made before it, and receives them once it returns.
    for cls in (queue.Queue, queue.LifoQueue, queue.PriorityQueue):
        patch(cls, "_put", _queue_put(cls._put))
        patch(cls, "_get", _queue_get(cls._get))
    patch(queue.Queue, "put", _queue_send(queue.Queue.put))
    patch(queue.Queue, "get", _queue_receive(queue.Queue.get))
    patch(queue.Queue, "empty", _queue_empty(queue.Queue.empty))


#: a put's hand-over, made before the queue's lock, noted under it; a get's notes, taken
#: under the lock, received once it returns (per thread)
_handing = threading.local()


def _note(obj, uid: int) -> None:
    after = obj.__dict__.setdefault("_streamlab_after", [])
    after.append(uid)
    del after[:-64]  # set or put again and again: its latest hand-overs


def _queue_send(put):
    @functools.wraps(put)
    def send(self, *args, **kwargs):
        _handing.put_uid = _hand_over() if observing() else None
        try:
            return put(self, *args, **kwargs)
        finally:
            _handing.put_uid = None
    return send


def _queue_put(put):
    @functools.wraps(put)
    def _put(self, item):
        uid = getattr(_handing, "put_uid", None)
        if uid is not None:
            _note(self, uid)
        return put(self, item)
    return _put


def _queue_get(get):
    @functools.wraps(get)
    def _get(self):
        if "_streamlab_after" in self.__dict__ and getattr(_handing, "taking", False):
            _handing.uids = list(self.__dict__["_streamlab_after"])
        return get(self)
    return _get


def _receive_taken() -> None:
    uids, _handing.uids = getattr(_handing, "uids", None), None
    for uid in dict.fromkeys(uids or ()):
        _received(uid)


def _queue_receive(get):
    @functools.wraps(get)
    def receive(self, *args, **kwargs):
        _handing.uids, _handing.taking = None, observing()
        try:
            item = get(self, *args, **kwargs)
        finally:
            _handing.taking = False
        _receive_taken()
        return item
    return receive


def _queue_empty(empty):
    @functools.wraps(empty)
    def looks_empty(self):
        if not observing():
            return empty(self)
        # Whether a put has noted a hand-over is looked at under the queue's lock, with
        # the size: looked at before it, a put could note its first hand-over and add its
        # item in between, and an empty() that found the item would take no note of it
        # (seen once on an H100: a learner's Queue.empty() poll reported as a race)
        with self.mutex:  # (as Queue.empty does, taking the notes under the same lock)
            out = not self._qsize()
            after = self.__dict__.get("_streamlab_after")
            _handing.uids = None if out or not after else list(after)
        _receive_taken()
        return out
    return looks_empty
