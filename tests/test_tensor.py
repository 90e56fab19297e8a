"""Core tensor operations implemented natively in C++: creation, copies in
every direction, views, resize_/set_, fill_/zero_, item(), printing, and the
errors for invalid input."""
import torch
from torch.testing._internal.common_utils import (
    DeterministicGuard,
    instantiate_parametrized_tests,
    parametrize,
    run_tests,
    TestCase,
)

ALL_DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
]


def sample(shape, dtype):
    generator = torch.Generator().manual_seed(7)
    values = torch.randn(shape, generator=generator, dtype=torch.float64) * 20
    if dtype.is_complex:
        return torch.complex(values, values.flip(-1)).to(dtype)
    return values.to(dtype)


class TestCreation(TestCase):
    def test_factories(self):
        self.assertEqual(torch.zeros(3, 2, device="mydev").cpu(), torch.zeros(3, 2))
        self.assertEqual(torch.ones(5, dtype=torch.int32, device="mydev").cpu(), torch.ones(5, dtype=torch.int32))
        self.assertEqual(torch.full((2, 2), 7.5, device="mydev").cpu(), torch.full((2, 2), 7.5))
        self.assertEqual(torch.arange(10, device="mydev").cpu(), torch.arange(10))
        self.assertEqual(torch.eye(4, device="mydev").cpu(), torch.eye(4))
        self.assertEqual(torch.linspace(0, 1, 11, device="mydev").cpu(), torch.linspace(0, 1, 11))
        empty = torch.empty(2, 3, 4, device="mydev", dtype=torch.float16)
        self.assertEqual((empty.shape, empty.dtype, empty.device), ((2, 3, 4), torch.float16, torch.device("mydev:0")))
        self.assertEqual(torch.empty(0, device="mydev").numel(), 0)

    def test_empty_strided_and_memory_format(self):
        strided = torch.empty_strided((2, 3), (1, 2), device="mydev")
        self.assertEqual(strided.stride(), (1, 2))
        channels_last = torch.empty(2, 3, 4, 5, device="mydev", memory_format=torch.channels_last)
        self.assertTrue(channels_last.is_contiguous(memory_format=torch.channels_last))

    def test_invalid_creation_is_a_clear_error(self):
        with self.assertRaisesRegex(RuntimeError, "negative dimension"):
            torch.empty(-1, device="mydev")
        with self.assertRaisesRegex(RuntimeError, "Only dense CPU tensors can be pinned"):
            torch.empty(2, device="mydev", pin_memory=True)
        with self.assertRaisesRegex(NotImplementedError, "'Quantizedmydev' backend"):
            torch.empty(2, device="mydev", dtype=torch.qint8)

    def test_deterministic_mode_fills_uninitialized_memory_as_the_cpu_does(self):
        def created(device):
            float_empty = torch.empty(2, 3, device=device)
            int_empty = torch.empty_strided((2, 2), (1, 2), dtype=torch.int16, device=device)
            grown = torch.zeros(2, dtype=torch.bfloat16, device=device)
            grown.resize_(5)
            return float_empty.cpu(), int_empty.cpu(), grown.cpu()

        with DeterministicGuard(True, fill_uninitialized_memory=True):
            on_device, on_cpu = created("mydev"), created("cpu")
        self.assertEqual(on_device, on_cpu, equal_nan=True)
        self.assertTrue(on_device[0].isnan().all())
        self.assertEqual(on_device[1], torch.full((2, 2), torch.iinfo(torch.int16).max, dtype=torch.int16))
        self.assertEqual(on_device[2][:2], torch.zeros(2, dtype=torch.bfloat16))
        self.assertTrue(on_device[2][2:].isnan().all())

    def test_empty_sparse_tensors_are_device_tensors(self):
        coo = torch.empty(2, 3, device="mydev", layout=torch.sparse_coo)
        self.assertEqual((coo.layout, coo.device, coo._nnz()), (torch.sparse_coo, torch.device("mydev", 0), 0))
        self.assertEqual(coo._values().device, torch.device("mydev", 0))
        self.assertEqual(coo.to_dense().cpu(), torch.zeros(2, 3))


class TestCopies(TestCase):
    @parametrize("dtype", ALL_DTYPES, name_fn=lambda dtype: str(dtype).split(".")[-1])
    def test_round_trip_every_dtype(self, dtype):
        host = sample((3, 5), dtype)
        on_device = host.to("mydev")
        self.assertEqual(on_device.dtype, dtype)
        self.assertEqual(on_device.cpu(), host, atol=0, rtol=0)

    def test_non_contiguous_sources_and_destinations(self):
        host = sample((6, 4), torch.float32)
        self.assertEqual(host.t().to("mydev").cpu(), host.t())
        on_device = host.to("mydev")
        self.assertEqual(on_device.t().cpu(), host.t())
        self.assertEqual(on_device[:, ::2].cpu(), host[:, ::2])
        destination = torch.zeros(4, 6, device="mydev").t()
        destination.copy_(host)
        self.assertEqual(destination.cpu(), host)
        host_destination = torch.zeros(4, 6).t()
        host_destination.copy_(on_device)
        self.assertEqual(host_destination, host)

    def test_dtype_converting_and_broadcasting_copies(self):
        host = sample((3, 4), torch.float64)
        self.assertEqual(host.to("mydev", torch.float32).cpu(), host.float())
        on_device = host.to("mydev")
        self.assertEqual(on_device.to(torch.int32).cpu(), host.to(torch.int32))
        self.assertEqual(on_device.to("cpu", torch.float16), host.half())
        row = torch.arange(4.0)
        destination = torch.empty(3, 4, device="mydev")
        destination.copy_(row)
        self.assertEqual(destination.cpu(), row.expand(3, 4))
        device_row = row.to("mydev")
        host_destination = torch.empty(3, 4, dtype=torch.float64)
        host_destination.copy_(device_row)
        self.assertEqual(host_destination, row.double().expand(3, 4))

    def test_conjugate_and_negative_views_are_resolved(self):
        host = sample((4,), torch.complex64)
        on_device = host.to("mydev")
        self.assertEqual(on_device.conj().cpu(), host.conj())
        self.assertEqual(host.conj().to("mydev").cpu(), host.conj())
        self.assertEqual(torch.conj(on_device).resolve_conj().cpu(), host.conj())

    def test_device_to_device_copies(self):
        host = sample((128, 3), torch.float32)
        first = host.to("mydev:0")
        second = first.to("mydev:1")
        self.assertEqual(second.device, torch.device("mydev:1"))
        self.assertEqual(second.cpu(), host)
        self.assertEqual(first.clone().cpu(), host)
        transposed_on_one = first.t().to("mydev:1", torch.float64)
        self.assertEqual(transposed_on_one.cpu(), host.t().double())


    def test_overlapping_copies_are_refused_at_the_call_as_on_the_cpu(self):
        for device in ("cpu", "mydev"):
            x = torch.arange(6.0, device=device)
            with self.assertRaisesRegex(RuntimeError, "some elements of the input tensor and the written-to tensor"):
                x[1:].copy_(x[:-1])
            with self.assertRaisesRegex(RuntimeError, "some elements of the input tensor and the written-to tensor"):
                x.view(2, 3).t().copy_(x.view(3, 2))
            with self.assertRaisesRegex(RuntimeError, "more than one element of the written-to tensor"):
                x[:1].expand(3).copy_(torch.ones(3, device=device))
            self.assertEqual(x.cpu(), torch.arange(6.0))
        torch.mydev.synchronize()
        y = torch.arange(6.0, device="mydev")
        y.copy_(y)  # the same tensor: nothing to do, as on the CPU
        y[:3].copy_(y[3:])
        self.assertEqual(y.cpu(), torch.tensor([3.0, 4.0, 5.0, 3.0, 4.0, 5.0]))


class TestShallowCopy(TestCase):
    """tensor.data = other across the CPU and mydev, which Module.to() relies on."""

    def test_data_assignment_across_devices(self):
        host = torch.zeros(3)
        host.data = torch.ones(3, device="mydev")
        self.assertEqual(host.device, torch.device("mydev:0"))
        self.assertEqual(host.cpu(), torch.ones(3))
        on_device = torch.zeros(2, device="mydev")
        on_device.data = torch.full((4,), 2.0)
        self.assertEqual(on_device.device, torch.device("cpu"))
        self.assertEqual(on_device, torch.full((4,), 2.0))
        self.assertFalse(torch._has_compatible_shallow_copy_type(torch.zeros(1, device="mydev"),
                                                                 torch.zeros(1).to_sparse()))

    def test_module_to_keeps_parameters_and_ties(self):
        model = torch.nn.Module()
        model.encoder = torch.nn.Embedding(5, 3)
        model.decoder = torch.nn.Linear(3, 5, bias=False)
        model.decoder.weight = model.encoder.weight  # tied, as in GPT-2
        weight = model.encoder.weight
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        model.to("mydev")
        self.assertIs(model.encoder.weight, weight)
        self.assertIs(model.decoder.weight, weight)
        self.assertEqual(weight.device, torch.device("mydev:0"))
        before = weight.detach().cpu()
        tokens = torch.tensor([[1, 2, 3]], device="mydev")
        model.decoder(model.encoder(tokens)).sum().backward()
        optimizer.step()  # built before the move: still updates the model's (only) weight
        self.assertNotEqual(model.encoder.weight.detach().cpu(), before)
        self.assertIs(model.cpu().encoder.weight, weight)
        self.assertEqual(weight.device, torch.device("cpu"))
        self.assertEqual(weight.grad.device, torch.device("cpu"))


class TestViewsAndStorage(TestCase):
    def test_views_share_device_memory(self):
        base = torch.zeros(4, 6, device="mydev")
        base.view(24)[3] = 5
        base.t()[1, 2] = 7
        base.as_strided((2,), (6,), 4).fill_(9)
        base.narrow(1, 5, 1).zero_()
        expected = torch.zeros(4, 6)
        expected.view(24)[3] = 5
        expected.t()[1, 2] = 7
        expected.as_strided((2,), (6,), 4).fill_(9)
        expected.narrow(1, 5, 1).zero_()
        self.assertEqual(base.cpu(), expected)
        self.assertEqual(base.unfold(1, 2, 2).cpu(), expected.unfold(1, 2, 2))
        self.assertEqual(base.reshape(2, 12).cpu(), expected.reshape(2, 12))

    def test_complex_views(self):
        host = sample((3,), torch.complex128)
        on_device = host.to("mydev")
        self.assertEqual(torch.view_as_real(on_device).cpu(), torch.view_as_real(host))
        self.assertEqual(torch.view_as_complex(torch.view_as_real(on_device)).cpu(), host)

    def test_resize_keeps_data_and_grows_storage(self):
        x = torch.arange(6.0, device="mydev")
        x.resize_(3, 4)
        self.assertEqual(x.shape, (3, 4))
        self.assertEqual(x.flatten()[:6].cpu(), torch.arange(6.0))
        x.resize_(2)
        self.assertEqual(x.cpu(), torch.arange(2.0))
        storage = torch.arange(4.0, device="mydev").untyped_storage()
        storage.resize_(64)
        self.assertEqual(storage.nbytes(), 64)

    def test_set_shares_storage(self):
        source = torch.arange(12.0, device="mydev")
        target = torch.empty(0, device="mydev")
        target.set_(source.untyped_storage(), 2, (2, 3), (3, 1))
        self.assertEqual(target.cpu(), torch.arange(12.0)[2:8].view(2, 3))
        target.fill_(-1)
        self.assertEqual(source[2:8].cpu(), torch.full((6,), -1.0))
        other = torch.empty(0, device="mydev")
        other.set_(source)
        self.assertEqual(other.data_ptr(), source.data_ptr())
        with self.assertRaisesRegex(RuntimeError, "different device"):
            target.set_(torch.arange(3.0).untyped_storage(), 0, (3,), (1,))


class TestScalars(TestCase):
    def test_fill_zero_and_item(self):
        x = torch.empty(3, 3, device="mydev", dtype=torch.int16)
        x.fill_(-4)
        self.assertEqual(x.cpu(), torch.full((3, 3), -4, dtype=torch.int16))
        x.zero_()
        self.assertEqual(x.sum().item(), 0)
        y = torch.tensor(2.5, device="mydev")
        z = torch.empty(4, device="mydev").fill_(y)
        self.assertEqual(z.cpu(), torch.full((4,), 2.5))
        self.assertEqual(torch.tensor(3 + 4j, device="mydev").item(), 3 + 4j)
        self.assertIs(torch.tensor(True, device="mydev").item(), True)

    def test_fill_out_of_range_raises_at_the_call(self):
        x = torch.zeros(2, dtype=torch.int8, device="mydev")
        with self.assertRaisesRegex(RuntimeError, "overflow"):
            x.fill_(1000)

    def test_item_of_many_elements_is_refused(self):
        with self.assertRaisesRegex(RuntimeError, "elements cannot be converted to Scalar"):
            torch.ones(2, device="mydev").item()

    def test_printing(self):
        x = torch.tensor([[1.5, -2.0], [3.25, 4.0]], device="mydev")
        text = repr(x)
        self.assertIn("device='mydev:0'", text)
        self.assertIn("3.2500", text)
        self.assertIn("device='mydev:1'", repr(torch.arange(3, device="mydev:1")))
        self.assertIn("tensor([], device='mydev:0')", repr(torch.empty(0, device="mydev")))


class TestDeviceMixing(TestCase):
    def test_two_mydev_devices_are_refused(self):
        with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device.*mydev:0.*mydev:1"):
            torch.ones(2, device="mydev:0") + torch.ones(2, device="mydev:1")

    def test_cpu_tensor_is_refused_but_cpu_scalar_accepted(self):
        on_device = torch.ones(3, device="mydev")
        with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device.*cpu"):
            on_device + torch.ones(3)
        self.assertEqual((on_device + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))

    def test_cpu_index_tensors_are_accepted(self):
        on_device = torch.arange(10.0, device="mydev")
        self.assertEqual(on_device[torch.tensor([1, 3])].cpu(), torch.tensor([1.0, 3.0]))


instantiate_parametrized_tests(TestCopies)

if __name__ == "__main__":
    run_tests()
