"""Lazy initialisation of the mydev runtime, as for torch.cuda.

Nothing touches the runtime at import. The first use of the device (creating a
tensor, asking for a stream) runs ``_lazy_init``. Calls that set state before
that (seeds, RNG states) are queued and replayed; of the seeds, only the
latest ``manual_seed`` and ``manual_seed_all`` are kept, as torch.cuda keeps
them (mydev loads with ``import torch``, so every ``torch.manual_seed`` of a
program that never uses the device reaches it). A child created by ``fork()`` after the
parent initialised mydev cannot use it: the runtime's worker threads did not
survive the fork.
"""
import threading
import traceback

from torch._utils import _LazySeedTracker

from torch_mydev import _C

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []
_lazy_seed_tracker = _LazySeedTracker()


def is_initialized():
    """Whether the mydev runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork():
    return _C._is_in_bad_fork()


def _lazy_call(callable_, seed=False, seed_all=False):
    with _initialization_lock:
        if is_initialized():
            callable_()
        # Kept with a traceback so that a failure during replay names its origin.
        elif seed_all:
            _lazy_seed_tracker.queue_seed_all(callable_, traceback.format_stack())
        elif seed:
            _lazy_seed_tracker.queue_seed(callable_, traceback.format_stack())
        else:
            _queued_calls.append((callable_, traceback.format_stack()))


def _lazy_init():
    global _initialized
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize mydev in forked subprocess. To use mydev with multiprocessing, "
                "you must use the 'spawn' start method"
            )
        _C._init()
        _queued_calls.extend(calls for calls in _lazy_seed_tracker.get_calls() if calls)
        _tls.is_initializing = True
        try:
            for queued_call, origin in _queued_calls:
                try:
                    queued_call()
                except Exception as error:
                    raise RuntimeError(
                        f"mydev call failed lazily at initialization with error: {error}\n\n"
                        f"mydev call was originally invoked at:\n\n{''.join(origin)}"
                    ) from error
            _queued_calls.clear()
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def init():
    """Initialises mydev explicitly (it is otherwise initialised on first use)."""
    _lazy_init()
