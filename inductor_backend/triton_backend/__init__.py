"""mydev's Triton backend: the ``BaseBackend`` (``compiler``) and ``DriverBase`` (``driver``) of the ``mydev`` target.

mydev has no Triton compiler: its kernels run in Triton's interpreter (``TRITON_INTERPRET=1``), launched on the
mydev stream by ``torch_mydev.inductor.triton_support``. The compiler here therefore only names the target
(``GPUTarget("mydev", ...)``), hashes it for Inductor's caches, and refuses to compile; the driver says which device
and stream are current. ``triton_support.prepare_triton`` registers them with Triton when mydev's Triton code
generation is selected, and only then is the driver active, so a CUDA machine's Triton keeps its own driver otherwise.
A vendor with a real Triton compiler ships the same two classes, with compile stages and a launcher, through Triton's
``triton.backends`` entry point (docs/extension-points/inductor.md).
"""
