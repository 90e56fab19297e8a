"""What one benchmark case is: a piece of work that can be set up on any device."""
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    # The largest mydev/CPU time ratio that meets the speed target.
    target: float
    # setup(device) builds the inputs on `device` and returns a function that
    # runs the work once; only that function is timed.
    setup: Callable[[str], Callable[[], object]]
    # How many operations one run performs; times are reported per operation.
    operations: int = 1
