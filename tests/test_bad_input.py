"""Bad input raises at the call, as on the CPU: the same exception class and message, before the call returns and
before anything is queued, never only at the next synchronization nor not at all. Covers the cases a kernel's own
checks used to find only when it ran on the stream: dtypes a CPU kernel has no code for, argument values checked by
the kernel, out= tensors that overlap their inputs."""
import textwrap

import torch
import torch.nn.functional as F
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

from helpers import run_python


def overlapping_view(device, size, dtype=torch.float32):
    """A tensor whose elements all share one memory location."""
    return torch.zeros(1, device=device, dtype=dtype).expand(size)


# name -> call(device): each raises on the CPU.
BAD_CALLS = {
    "bitwise_and of floats": lambda d: torch.bitwise_and(torch.ones(3, device=d), torch.ones(3, device=d)),
    "gcd of floats": lambda d: torch.gcd(torch.ones(3, device=d), torch.ones(3, device=d)),
    "softmax of integers": lambda d: torch.softmax(torch.ones(3, dtype=torch.long, device=d), 0),
    "max of complex": lambda d: torch.ones(3, dtype=torch.complex64, device=d).max(),
    "remainder of complex": lambda d: torch.ones(3, dtype=torch.complex64, device=d) % 2,
    "cholesky of float16": lambda d: torch.linalg.cholesky(torch.eye(3, dtype=torch.half, device=d)),
    "add of uint16": lambda d: torch.ones(3, device=d, dtype=torch.uint16) + 1,
    "complex of mixed dtypes": lambda d: torch.complex(torch.ones(3, device=d), torch.ones(3, device=d, dtype=torch.double)),
    "complex with a wrong out dtype": lambda d: torch.complex(
        torch.ones(3, device=d, dtype=torch.double), torch.ones(3, device=d, dtype=torch.double),
        out=torch.empty(3, device=d, dtype=torch.complex64)),
    "masked_fill with an overflowing value": lambda d: torch.ones(3, device=d).masked_fill(torch.ones(3, device=d) > 0, 1j),
    "masked_fill with an overflowing tensor value": lambda d: torch.ones(3, device=d, dtype=torch.long).masked_fill(
        torch.ones(3, device=d) > 0, torch.tensor(1j)),
    "masked_scatter with a float mask": lambda d: torch.ones(3, device=d).masked_scatter(
        torch.ones(3, device=d), torch.ones(3, device=d)),
    "gelu with a bad approximate": lambda d: F.gelu(torch.ones(3, device=d), approximate="asdf"),
    "masked_select into an overlapping out": lambda d: torch.masked_select(
        torch.ones(6, device=d), torch.ones(6, device=d) > 0, out=overlapping_view(d, 3)),
    "index_select into an overlapping out": lambda d: torch.index_select(
        torch.ones(3, 6, device=d), 1, torch.tensor([0, 1], device=d), out=overlapping_view(d, (2, 6))),
    "take into an out that is its input": lambda d: (lambda x: torch.take(x, torch.tensor([0, 1], device=d), out=x[:2]))(
        torch.ones(6, device=d)),
    "kthvalue into an out that is its input": lambda d: (lambda x: torch.kthvalue(
        x, 2, out=(x, torch.empty(0, device=d, dtype=torch.long))))(torch.ones(10, device=d)),
    "bernoulli into an overlapping out": lambda d: torch.bernoulli(torch.full((6,), 0.5, device=d), out=overlapping_view(d, 6)),
    "multinomial with a float out": lambda d: torch.multinomial(
        torch.ones(3, device=d), 2, out=torch.empty(2, device=d, dtype=torch.double)),
    "multinomial of a negative weight": lambda d: torch.multinomial(torch.tensor([0.5, -1.0], device=d), 1),
    # Operands of different dtypes, which ATen's CPU kernels refuse when they run (their Meta functions do not).
    "mm of mixed dtypes": lambda d: torch.mm(torch.ones(2, 2, device=d), torch.ones(2, 2, device=d, dtype=torch.double)),
    "linear of mixed dtypes": lambda d: F.linear(torch.ones(2, 2, device=d), torch.ones(2, 2, device=d, dtype=torch.double)),
    "bmm of mixed dtypes": lambda d: torch.bmm(torch.ones(1, 2, 2, device=d),
                                               torch.ones(1, 2, 2, device=d, dtype=torch.double)),
    "baddbmm of mixed dtypes": lambda d: torch.baddbmm(torch.ones(1, 2, 2, device=d), torch.ones(1, 2, 2, device=d),
                                                       torch.ones(1, 2, 2, device=d, dtype=torch.double)),
    "conv2d of mixed dtypes": lambda d: F.conv2d(torch.ones(1, 1, 3, 3, device=d),
                                                 torch.ones(1, 1, 2, 2, device=d, dtype=torch.double)),
    "where with a float condition": lambda d: torch.where(torch.ones(3, device=d), torch.ones(3, device=d),
                                                          torch.ones(3, device=d)),
    "cross_entropy with a double weight": lambda d: F.cross_entropy(
        torch.ones(2, 3, device=d), torch.tensor([0, 1], device=d), weight=torch.ones(3, device=d, dtype=torch.double)),
    "masked_fill with a long mask": lambda d: torch.ones(3, device=d).masked_fill_(
        torch.ones(3, device=d, dtype=torch.long), 1.0),
    "var_mean of integers": lambda d: torch.var_mean(torch.ones(3, device=d, dtype=torch.long)),
}


class TestBadInputRaisesAtTheCall(TestCase):
    @parametrize("name", list(BAD_CALLS), name_fn=lambda name: name.replace(" ", "_"))
    def test_raises_at_the_call_like_the_cpu(self, device, name):
        call = BAD_CALLS[name]
        with self.assertRaises(Exception) as on_cpu:
            call("cpu")
        torch.mydev.synchronize()
        for attempt in ("first", "second"):  # the second call raises from what the first learnt
            with self.assertRaises(type(on_cpu.exception), msg=attempt) as on_device:
                call(device)
            self.assertEqual(str(on_device.exception).replace(device, "cpu"), str(on_cpu.exception), msg=attempt)
            torch.mydev.synchronize()  # nothing failing was queued

    def test_a_view_of_a_storage_resized_smaller_is_refused_at_the_launch(self, device):
        # FSDP frees parameters this way; a kernel reading the view would fault past the storage's end.
        base = torch.ones(4, 4, device=device)
        view = base.t()
        base.untyped_storage().resize_(0)
        with self.assertRaisesRegex(RuntimeError, r"needs 64 bytes of its storage, which has 0"):
            view.sum()
        torch.mydev.synchronize()
        self.assertEqual(torch.ones(4, device=device).sum().item(), 4.0)  # the device goes on

    def test_a_missing_dtype_kernel_is_remembered_and_nothing_is_queued(self, device):
        x = torch.ones(3, device=device, dtype=torch.float64)
        with self.assertRaisesRegex(NotImplementedError, "not implemented for 'Double'"):
            torch.lcm(x, x)
        stream = torch.mydev.current_stream(device)
        torch.mydev.synchronize()
        big = torch.ones(800, 800, device=device)
        for _ in range(4):
            big = big @ big / 800  # keep the stream busy: a queued or waited kernel would have to wait behind this
        with self.assertRaisesRegex(NotImplementedError, "not implemented for 'Double'"):
            torch.lcm(x, x)
        self.assertFalse(stream.query())  # the second refusal neither waited for the stream nor queued anything
        torch.mydev.synchronize()

    def test_an_empty_first_call_does_not_hide_a_later_dtype_error(self, device):
        # Some kernels return before their dtype dispatch when there is nothing to compute (the CPU's softmax of an
        # empty integer tensor succeeds): an empty call teaches nothing.
        self.assertEqual(torch.softmax(torch.ones(0, device=device, dtype=torch.int16), 0).numel(), 0)
        with self.assertRaisesRegex(NotImplementedError, "not implemented for 'Short'"):
            torch.softmax(torch.ones(3, device=device, dtype=torch.int16), 0)

    def test_valid_calls_of_a_learnt_signature_stay_asynchronous(self, device):
        x = torch.ones(800, 800, device=device)
        (x + 1).cpu()  # learns add's signature
        stream = torch.mydev.current_stream(device)
        torch.mydev.synchronize()
        for _ in range(4):
            x = x @ x / 800
        y = x + 1
        self.assertFalse(stream.query())  # queued behind the matrix products: the call did not wait
        self.assertEqual(y.cpu(), torch.full((800, 800), 2.0))

    def test_dropout_refuses_complex_inputs_as_cuda_does(self, device):
        # On the CPU, F.dropout takes another path (bernoulli_ then multiplications), which refuses them too.
        with self.assertRaisesRegex(NotImplementedError, "not implemented for 'ComplexFloat'"):
            F.dropout(torch.ones(6, dtype=torch.cfloat), 0.5)
        with self.assertRaisesRegex(NotImplementedError, "\"fused_dropout\" not implemented for 'ComplexFloat'"):
            F.dropout(torch.ones(6, dtype=torch.cfloat, device=device), 0.5)

    def test_dropout_cases_follow_cuda_order(self, device):
        # native_dropout_cuda: out of training a copy and an all-true mask, p = 1 zeros, an empty input a copy, all
        # before its dtype dispatch, which takes floating dtypes only; its backward takes boolean masks only.
        complex_input = torch.ones(2, dtype=torch.cfloat, device=device)
        out, mask = torch.native_dropout(complex_input, 0.5, False)
        self.assertEqual(out.cpu(), complex_input.cpu())
        self.assertEqual(mask.cpu(), torch.ones(2, dtype=torch.bool))
        self.assertEqual(torch.native_dropout(complex_input, 1.0, True)[0].cpu(), torch.zeros(2, dtype=torch.cfloat))
        empty = torch.empty(0, 3, device=device)
        out, mask = torch.native_dropout(empty, 0.5, True)
        self.assertIsNot(out, empty)
        self.assertEqual((out.shape, mask.dtype), (empty.shape, torch.bool))
        with self.assertRaisesRegex(NotImplementedError, "\"fused_dropout\" not implemented for 'Long'"):
            F.dropout(torch.arange(4, device=device), 0.5, training=True)
        with self.assertRaisesRegex(RuntimeError, "Mask should be Bool Scalar Type"):
            torch.ops.aten.native_dropout_backward(torch.ones(2, device=device), torch.ones(2, device=device), 2.0)


class TestFirstLaunchOfASignature(TestCase):
    """Each check runs in a fresh process, where no signature is known yet."""

    def run_fresh(self, code):
        result = run_python(textwrap.dedent(code))
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.split()

    def test_probed_kernels_launch_asynchronously_the_first_time(self):
        # A structured kernel (add, mm), a copy and a fallback operator (flip): their probes vouch for the dtypes on
        # the calling thread, so none of the first launches waits for the busy stream.
        out = self.run_fresh("""
            import torch
            x = torch.ones(800, 800, device="mydev")
            stream = torch.mydev.current_stream()
            torch.mydev.synchronize()
            for _ in range(6):
                x = x @ x / 800
            y = x + 1
            z = y.to(torch.float64)
            w = torch.flip(z, [0])
            print(stream.query(), w[0, 0].item())
            """)
        self.assertEqual(out, ["False", "2.0"])

    def test_a_waited_launch_raises_at_the_call_until_its_signature_runs(self):
        # index_select has no probe: the first launch of a signature waits for its kernel, and what the kernel raises
        # is raised at the call. A signature whose kernel failed is not learnt, so the next launch waits again; once
        # one has run, launches of that signature are asynchronous, and an index out of range is a device-side
        # error, reported at the next synchronization as on CUDA.
        out = self.run_fresh("""
            import torch
            x = torch.arange(5.0, device="mydev")
            def select(index):
                return torch.index_select(x, 0, torch.tensor([index], device="mydev"))
            for attempt in range(2):
                try:
                    select(10)
                except IndexError:
                    print("raised_at_the_call")
            print(select(3).item())
            select(10)
            print("returned")
            try:
                torch.mydev.synchronize()
            except IndexError:
                print("raised_at_synchronize")
            """)
        self.assertEqual(out, ["raised_at_the_call", "raised_at_the_call", "3.0", "returned", "raised_at_synchronize"])

    def test_a_signature_holds_the_choices_that_pick_the_cpu_code(self):
        # A refusal is remembered per signature. A mode string, a flag, a dim or a scalar that makes the CPU run other
        # code makes another signature: a refused call neither refuses a valid one nor lends it its message, in either
        # order, and a valid call does not make a later refused one late.
        program = """
            import torch
            import torch.nn.functional as F
            def scatter_reduce(device, reduce):
                flags = torch.ones(4, dtype=torch.bool, device=device)
                return flags.scatter_reduce(0, torch.zeros(4, dtype=torch.long, device=device), flags, reduce)
            def convolution(device, transposed):
                x = torch.ones(1, 2, 3, 3, 3, dtype=torch.int32, device=device)
                w = torch.ones(2, 2, 1, 1, 1, dtype=torch.int32, device=device)
                return (F.conv_transpose3d if transposed else F.conv3d)(x, w)
            CALLS = {
                "scatter_reduce_mean": lambda d: scatter_reduce(d, "mean"),
                "scatter_reduce_sum": lambda d: scatter_reduce(d, "sum"),
                "conv_transpose3d": lambda d: convolution(d, True),
                "conv3d": lambda d: convolution(d, False),
                "softmax_over_dim_0": lambda d: torch._safe_softmax(torch.ones(3, 4, dtype=torch.cfloat, device=d), 0),
                "softmax_over_dim_1": lambda d: torch._safe_softmax(torch.ones(3, 4, dtype=torch.cfloat, device=d), 1),
                "round_of_bool": lambda d: torch.round(torch.ones(3, dtype=torch.bool, device=d)),
                "round_of_bool_to_decimals": lambda d: torch.round(torch.ones(3, dtype=torch.bool, device=d), decimals=3),
                "uint16_to_the_power_0": lambda d: torch.pow(torch.ones(3, dtype=torch.uint16, device=d), 0),
                "uint16_to_the_power_2": lambda d: torch.pow(torch.ones(3, dtype=torch.uint16, device=d), 2),
            }
            def outcome(call, device):
                try:
                    call(device)
                except Exception as error:
                    return f"{type(error).__name__}: {error}".replace(device, "cpu")
                try:
                    torch.mydev.synchronize()
                except Exception:
                    return "raised late"
                return "ran"
            for name in ORDER:
                on_cpu, on_mydev = outcome(CALLS[name], "cpu"), outcome(CALLS[name], "mydev")
                print(name, "same" if on_cpu == on_mydev else f"differs: {on_mydev!r} where the CPU: {on_cpu!r}")
            """
        names = ["scatter_reduce_mean", "scatter_reduce_sum", "conv_transpose3d", "conv3d", "softmax_over_dim_0",
                 "softmax_over_dim_1", "round_of_bool", "round_of_bool_to_decimals", "uint16_to_the_power_0",
                 "uint16_to_the_power_2"]
        for order in (names, names[::-1]):
            result = run_python(f"ORDER = {order!r}\n" + textwrap.dedent(program))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.splitlines(), [f"{name} same" for name in order])

    def test_a_probe_refused_by_its_stand_ins_does_not_fail_the_call(self):
        # Integer division by the probe's zero stand-ins raises (ZeroDivisionError): the probe proves nothing, and
        # the first launch waits for its kernel instead, which computes the right numbers.
        out = self.run_fresh("""
            import torch
            a = torch.tensor([7, 9], device="mydev")
            print((a // torch.tensor([2, 4], device="mydev")).tolist())
            """)
        self.assertEqual(out, ["[3,", "2]"])


instantiate_device_type_tests(TestBadInputRaisesAtTheCall, globals(), only_for=("privateuse1",))

if __name__ == "__main__":
    run_tests()
