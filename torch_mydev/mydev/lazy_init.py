"""Lazy initialisation of the mydev runtime, as for torch.cuda.

Nothing touches the runtime at import. The first use of the device (creating a
tensor, asking for a stream) runs ``_lazy_init``. Calls that set RNG state
before that are queued and replayed in call order. mydev loads with ``import
torch``, so every ``torch.manual_seed`` of a program that never uses the
device reaches it: a seed of every device drops what was queued before it (it
overrides all of it), a seed of the current device the seeds of it before
it, which keeps the queue short. (torch.cuda keeps only the latest seeds too,
but replays them after every other queued call: a ``set_rng_state`` after a
seed then loses to the seed.) A child created by ``fork()`` after the
parent initialised mydev cannot use it: the runtime's worker threads did not
survive the fork.
"""
import threading
import traceback

from torch_mydev import _C

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []  # (call, the stack that made it, what it sets: "every device", "current device" or "state")


def is_initialized():
    """Whether the mydev runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork():
    return _C._is_in_bad_fork()


def _lazy_call(callable_, seed=False, seed_all=False):
    """Runs an RNG-state call now, or queues it until the device is first used; ``seed_all``: it seeds every device
    (overriding all state queued before it), ``seed``: the current device (overriding its earlier seeds)."""
    with _initialization_lock:
        if is_initialized():
            callable_()
            return
        if seed_all:
            _queued_calls.clear()
        elif seed:
            _queued_calls[:] = [queued for queued in _queued_calls if queued[2] != "current device"]
        # Kept with a traceback so that a failure during replay names its origin.
        what = "every device" if seed_all else "current device" if seed else "state"
        _queued_calls.append((callable_, traceback.format_stack(), what))


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
            for queued_call, origin, _ in _queued_calls:
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
