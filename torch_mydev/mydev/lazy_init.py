"""Lazy initialisation of the mydev runtime, as for torch.cuda.

Nothing touches the runtime at import. The first use of the device (creating a
tensor, asking for a stream, seeding) runs ``_lazy_init``. Seeding calls made
before that are queued and replayed. A child created by ``fork()`` after the
parent initialised mydev cannot use it: the runtime's worker threads did not
survive the fork.
"""
import threading
import traceback

from torch_mydev import _C

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []


def is_initialized():
    """Whether the mydev runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork():
    return _C._is_in_bad_fork()


def _lazy_call(callable_):
    if is_initialized():
        callable_()
    else:
        # Kept with a traceback so that a failure during replay names its origin.
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
