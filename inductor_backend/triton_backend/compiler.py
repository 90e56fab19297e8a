"""The Triton backend object of the ``mydev`` target: its identity for hashing, its options, no compile stages."""
import dataclasses

from triton.backends.compiler import BaseBackend


@dataclasses.dataclass(frozen=True)
class MydevTritonOptions:
    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 1
    warp_size: int = 32
    debug: bool = False
    sanitize_overflow: bool = False
    arch: str = "mydev"
    backend_name: str = "mydev"

    def hash(self):
        return "-".join(f"{field.name}={getattr(self, field.name)}" for field in dataclasses.fields(self))


class MydevTritonBackend(BaseBackend):
    @staticmethod
    def supports_target(target):
        return target.backend == "mydev"

    def hash(self):
        from torch_mydev.inductor import config

        return f"mydev-triton-interpreter-{self.target.arch}-{config.build_identity}"

    def parse_options(self, options):
        known = {field.name for field in dataclasses.fields(MydevTritonOptions)}
        return MydevTritonOptions(**{key: value for key, value in options.items() if key in known})

    def add_stages(self, stages, options, language):
        raise RuntimeError(
            "mydev has no Triton compiler: its Triton kernels run in Triton's interpreter (TRITON_INTERPRET=1), "
            "which torch_mydev's Inductor backend sets when codegen='triton' is selected"
        )

    def load_dialects(self, context):
        pass

    def get_module_map(self):
        return {}
