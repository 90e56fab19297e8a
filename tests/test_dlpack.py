"""DLPack on mydev: the device maps to kDLExtDev with its index, exchange is zero-copy both ways (legacy and versioned
capsules, and the __dlpack__ protocol), and __dlpack__(stream=...) makes the consumer's stream wait for the producer's,
as on CUDA."""
import torch
from torch.utils import dlpack
from torch.utils.dlpack import DLDeviceType
from torch.testing._internal.common_utils import run_tests, TestCase


def hanging_work_on(stream, x):
    """Queues a kernel on `stream` that does not finish until the caller's inject_fault block exits."""
    with torch.mydev.stream(stream):
        return x.neg()


class TestDLPack(TestCase):
    def test_the_device_is_kDLExtDev_with_its_index(self):
        for index in (0, 1):
            x = torch.ones(2, device=f"mydev:{index}")
            self.assertEqual(x.__dlpack_device__(), (DLDeviceType.kDLExtDev, index))
        self.assertEqual(torch.ones(2).__dlpack_device__(), (DLDeviceType.kDLCPU, 0))

    def test_capsules_share_memory_and_keep_strides(self):
        base = torch.arange(12.0, device="mydev:1").view(3, 4)
        view = base[:, 1:]
        for capsule in (dlpack.to_dlpack(view), view.__dlpack__(max_version=(1, 0))):
            shared = dlpack.from_dlpack(capsule)
            self.assertEqual(shared.device, torch.device("mydev:1"))
            self.assertEqual(shared.data_ptr(), view.data_ptr())
            self.assertEqual(shared.stride(), view.stride())
            self.assertEqual(shared.cpu(), view.cpu())
        shared.fill_(-1.0)
        self.assertEqual(base.cpu()[:, 0], torch.tensor([0.0, 4.0, 8.0]))
        self.assertTrue((base.cpu()[:, 1:] == -1).all())

    def test_from_dlpack_of_a_tensor_uses_the_protocol(self):
        x = torch.randn(5, 3, device="mydev")
        y = torch.from_dlpack(x)
        self.assertEqual(y.device, x.device)
        self.assertEqual(y.data_ptr(), x.data_ptr())
        self.assertEqual(y.cpu(), x.cpu())

    def test_the_memory_outlives_the_producer(self):
        x = torch.arange(6.0, device="mydev")
        expected = x.cpu()
        y = torch.from_dlpack(x)
        del x
        torch.empty(6, device="mydev").fill_(7.0)  # would reuse x's block if the capsule had not kept it
        self.assertEqual(y.cpu(), expected)

    def test_an_imported_tensor_can_be_used_on_another_stream(self):
        x = torch.ones(8, device="mydev")
        imported = torch.from_dlpack(x)
        side = torch.mydev.Stream()
        side.wait_stream(torch.mydev.current_stream())  # x's fill, as on CUDA: streams are not ordered otherwise
        with torch.mydev.stream(side):
            imported.add_(1)
        imported.record_stream(side)  # its memory is the producer's to keep: nothing to record
        side.synchronize()
        self.assertEqual(x.cpu(), torch.full((8,), 2.0))

    def test_subclasses_of_tensor_have_the_device_too(self):
        parameter = torch.nn.Parameter(torch.ones(3, device="mydev:1"))
        self.assertEqual(parameter.__dlpack_device__(), (DLDeviceType.kDLExtDev, 1))

    def test_the_consumer_stream_waits_for_the_producer(self):
        x = torch.ones(1000, device="mydev")
        consumer = torch.mydev.Stream()
        producer = torch.mydev.current_stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = x.neg()  # on the producer's stream, held until the block exits
            y.__dlpack__(stream=consumer.stream_id)
            with torch.mydev.stream(consumer):
                after = y * 2
            self.assertFalse(consumer.query())
            self.assertFalse(producer.query())
        consumer.synchronize()
        self.assertEqual(after.cpu(), torch.full((1000,), -2.0))

    def test_no_stream_means_no_synchronisation(self):
        x = torch.ones(10, device="mydev")
        side = torch.mydev.Stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = hanging_work_on(side, x)
            with torch.mydev.stream(side):
                y.__dlpack__()
            self.assertTrue(torch.mydev.default_stream().query())
        side.synchronize()

    def test_none_means_the_default_stream(self):
        x = torch.ones(10, device="mydev")
        side = torch.mydev.Stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = hanging_work_on(side, x)
            with torch.mydev.stream(side):
                y.__dlpack__(stream=None)
            torch.ones(1, device="mydev")  # queued on the default stream, behind the wait
            self.assertFalse(torch.mydev.default_stream().query())
        torch.mydev.synchronize()

    def test_bad_streams_are_refused(self):
        x = torch.ones(2, device="mydev")
        with self.assertRaisesRegex(TypeError, "stream must be"):
            x.__dlpack__(stream="default")
        with self.assertRaisesRegex(RuntimeError, "Invalid mydev stream id 12345"):
            x.__dlpack__(stream=12345)


if __name__ == "__main__":
    run_tests()
