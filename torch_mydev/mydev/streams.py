"""Streams and events. They are PyTorch's generic torch.Stream / torch.Event
(which reach the runtime through mydev's DeviceGuardImplInterface), subclassed
so that isinstance checks and the torch.cuda-style API work."""
import torch

from torch_mydev import _C
from torch_mydev.mydev.device import _get_device_index
from torch_mydev.mydev.lazy_init import _lazy_init


class Stream(torch.Stream):
    """A mydev stream: an ordered queue of work run asynchronously by its own worker.

    ``device``: None or a negative index means the current device, as in torch.cuda.
    ``priority`` follows CUDA: 0 is normal, a negative value is high priority.
    """

    def __new__(cls, device=None, priority=0, **kwargs):
        _lazy_init()
        if "stream_id" in kwargs:
            return super().__new__(cls, priority=priority, **kwargs)
        index = _get_device_index(device, optional=True)
        if index < 0:
            index = _C._current_device()
        return super().__new__(cls, torch.device("mydev", index), priority=priority)

    @property
    def priority(self):
        """The priority the stream was created with: 0 (normal) or -1 (high)."""
        return _C._stream_priority(self.device_index, self.stream_id)

    @staticmethod
    def priority_range():
        """(lowest, highest) priority, as torch.cuda.Stream.priority_range: mydev has two levels."""
        return _C._stream_priority_range()

    def record_event(self, event=None):
        """Records ``event`` (a new torch.mydev.Event if None) on this stream and returns it.

        torch.Stream.record_event takes only an exact torch.Event (2.13), not this module's Event."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __repr__(self):
        return f"<torch.mydev.Stream device=mydev:{self.device_index} stream_id={self.stream_id}>"


class Event(torch.Event):
    """A mydev event: marks a point in a stream; supports timing when ``enable_timing``.

    As a CUDA event, it belongs to the device of the stream it is first recorded on."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False, external=False):
        _lazy_init()
        if interprocess:
            raise RuntimeError("mydev events cannot be shared between processes (interprocess=True)")
        if external:
            raise RuntimeError("mydev has no graph capture, so no external events (external=True)")
        return super().__new__(cls, "mydev", enable_timing=enable_timing, blocking=blocking)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event``; both must be timing events that completed."""
        if not isinstance(end_event, torch.Event):
            raise TypeError(f"expected a torch.Event, got {type(end_event).__name__}")
        return _C._event_elapsed_time(self.event_id, end_event.event_id)

    def __repr__(self):
        return f"<torch.mydev.Event device={self.device}>"


def _wrap(stream):
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


def current_stream(device=None):
    """The current stream of a mydev device for this thread."""
    if torch.compiler.is_compiling():
        # Traced as torch.accelerator.current_stream (a torch.Stream), as Dynamo traces torch.cuda.current_stream.
        return torch.accelerator.current_stream(*([] if device is None else [device]))
    _lazy_init()
    return _wrap(torch.accelerator.current_stream(_get_device_index(device, optional=True)))


def default_stream(device=None):
    """The default stream of a mydev device (stream id 0)."""
    current = current_stream(device)
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream):
    """Makes ``stream`` the current stream of its device for this thread."""
    if stream is None:
        return
    _lazy_init()
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager that makes a stream current on its device (and that device current).

    On exit, as torch.cuda's: the stream's device gets back its previous current stream, then the device current on
    entry becomes current again with its own previous stream, whatever the block set meanwhile."""

    def __init__(self, stream):
        self.stream = stream
        self.source_stream = None
        self.destination_stream = None

    def __enter__(self):
        if self.stream is None:
            return
        _lazy_init()
        self.source_stream = torch.accelerator.current_stream()
        if self.stream.device_index != self.source_stream.device_index:
            self.destination_stream = torch.accelerator.current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)

    def __exit__(self, exc_type, exc_value, traceback):
        if self.stream is None:
            return False
        if self.destination_stream is not None:
            torch.accelerator.set_stream(self.destination_stream)
        torch.accelerator.set_stream(self.source_stream)
        return False


def stream(stream):
    """``with torch.mydev.stream(s):`` runs the block's work on ``s``."""
    if torch.compiler.is_compiling() and stream is not None:
        # Dynamo traces a torch.Stream's own context (the stream and its device current inside), not this class.
        return stream
    return StreamContext(stream)


def is_current_stream_capturing():
    """Whether the current stream is capturing a graph, as torch.cuda asks: never, mydev has no graph capture."""
    return False
