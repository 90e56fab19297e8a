"""Sparse layouts on mydev: COO and compressed (CSR, CSC, BSR) tensors whose
members live in device memory, built and inspected by ATen's device-generic
kernels and computed by ATen's CPU sparse kernels over device memory, equal to
the same operations on the CPU."""
import warnings

import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

from torch_mydev.ops import fallback_counts, reset_fallback_counts

warnings.filterwarnings("ignore", message="Sparse .* tensor support is in beta state")


def dense_with_zeros(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    dense = torch.randn(shape, generator=generator).to(dtype)
    dense[torch.rand(shape, generator=generator) < 0.5] = 0
    return dense


def as_dense_cpu(tensor):
    tensor = tensor.cpu()
    return tensor.to_dense() if tensor.layout != torch.strided else tensor


class TestMydevSparse(TestCase):
    @dtypes(torch.float32, torch.float64, torch.int64, torch.complex64, torch.bool)
    def test_coo_round_trip_keeps_members_on_the_device(self, device, dtype):
        dense = dense_with_zeros(5, 4, dtype=dtype)
        sparse = dense.to(device).to_sparse()
        self.assertEqual(sparse.layout, torch.sparse_coo)
        self.assertEqual(sparse.device, torch.device(device))
        self.assertEqual(sparse._indices().device, torch.device(device))
        self.assertEqual(sparse._values().device, torch.device(device))
        self.assertEqual(sparse._nnz(), int((dense != 0).sum()))
        self.assertTrue(sparse.is_coalesced())
        self.assertEqual(sparse.to_dense().cpu(), dense)
        self.assertEqual(sparse.cpu().to_dense(), dense)
        self.assertEqual(dense.to_sparse().to(device).to_dense().cpu(), dense)

    @parametrize("layout", ["csr", "csc", "bsr"])
    def test_compressed_layouts_round_trip(self, device, layout):
        dense = dense_with_zeros(4, 6)
        convert = {
            "csr": lambda t: t.to_sparse_csr(),
            "csc": lambda t: t.to_sparse_csc(),
            "bsr": lambda t: t.to_sparse_bsr((2, 2)),
        }[layout]
        on_device = convert(dense.to(device))
        reference = convert(dense)
        self.assertEqual(on_device.layout, reference.layout)
        self.assertEqual(on_device.values().device, torch.device(device))
        self.assertEqual(on_device.to_dense().cpu(), dense)
        self.assertEqual(on_device.cpu().values(), reference.values())

    def test_member_accessors_return_the_device_tensors_themselves(self, device):
        sparse = dense_with_zeros(3, 3).to_sparse().to(device)
        values = sparse._values()
        values.mul_(2)
        self.assertEqual(sparse._values().cpu(), values.cpu())
        csr = dense_with_zeros(3, 3).to_sparse_csr().to(device)
        self.assertEqual(csr.crow_indices().data_ptr(), csr.crow_indices().data_ptr())
        self.assertEqual(csr.col_indices().device, torch.device(device))

    def test_arithmetic_and_coalesce_match_the_cpu(self, device):
        a = dense_with_zeros(6, 5, seed=1)
        b = dense_with_zeros(6, 5, seed=2)
        indices = torch.tensor([[0, 1, 0, 2], [1, 1, 1, 0]])
        values = torch.tensor([1.0, 2.0, 3.0, 4.0])
        uncoalesced = torch.sparse_coo_tensor(indices, values, (3, 2))
        on_device = torch.sparse_coo_tensor(indices.to(device), values.to(device), (3, 2))
        self.assertFalse(on_device.is_coalesced())
        coalesced = on_device.coalesce()
        self.assertTrue(coalesced.is_coalesced())
        self.assertEqual(coalesced._indices().cpu(), uncoalesced.coalesce()._indices())
        self.assertEqual(coalesced._values().cpu(), uncoalesced.coalesce()._values())
        sa, sb = a.to_sparse().to(device), b.to_sparse().to(device)
        self.assertEqual(as_dense_cpu(sa + sb), a + b)
        self.assertEqual(as_dense_cpu(sa * sb), a * b)
        self.assertEqual(as_dense_cpu(sa * 3), a * 3)
        self.assertEqual(as_dense_cpu(torch.sparse.sum(sa, dim=1)), a.sum(1))
        dense = b.to(device)
        self.assertEqual((dense + sa).cpu(), a + b)

    def test_in_place_operators_update_the_device_tensor(self, device):
        a = dense_with_zeros(4, 4, seed=3)
        sparse = a.to_sparse().to(device)
        sparse.mul_(2)
        self.assertEqual(sparse.to_dense().cpu(), a * 2)
        sparse.add_(a.to_sparse().to(device))
        self.assertEqual(sparse.to_dense().cpu(), a * 3)
        sparse.zero_()
        self.assertEqual(sparse._nnz(), 0)
        self.assertEqual(sparse.to_dense().cpu(), torch.zeros(4, 4))
        target = torch.sparse_coo_tensor(size=(4, 4), device=device)
        target.copy_(a.to_sparse())
        self.assertEqual(target.to_dense().cpu(), a)

    @parametrize("layout", ["coo", "csr"])
    def test_sparse_dense_products_match_the_cpu(self, device, layout):
        a = dense_with_zeros(5, 7, seed=4)
        w = torch.randn(7, 3, generator=torch.Generator().manual_seed(5))
        sparse = a.to_sparse() if layout == "coo" else a.to_sparse_csr()
        expected = torch.mm(sparse, w)
        on_device = sparse.to(device)
        self.assertEqual(torch.mm(on_device, w.to(device)).cpu(), expected)
        self.assertEqual(torch.sparse.mm(on_device, w.to(device)).cpu(), expected)
        self.assertEqual((on_device @ w.to(device)).cpu(), expected)
        self.assertEqual(torch.addmm(torch.ones(5, 3, device=device), on_device, w.to(device)).cpu(),
                         torch.addmm(torch.ones(5, 3), sparse, w))

    def test_sampled_addmm_forward_and_backward_match_the_cpu(self, device):
        generator = torch.Generator().manual_seed(6)
        mask = dense_with_zeros(4, 5, seed=7).to_sparse_csr()
        m1 = torch.randn(4, 3, generator=generator)
        m2 = torch.randn(3, 5, generator=generator)

        def run(on):
            inputs = [mask.to(on).requires_grad_(), m1.to(on).requires_grad_(), m2.to(on).requires_grad_()]
            out = torch.sparse.sampled_addmm(*inputs, alpha=0.5, beta=0.25)
            grads = torch.autograd.grad(out.to_dense().sum(), inputs)
            return [as_dense_cpu(out.detach())] + [as_dense_cpu(g) for g in grads]

        for got, expected in zip(run(device), run("cpu")):
            self.assertEqual(got, expected)

    @parametrize("reduce", ["sum", "mean", "amax", "amin"])
    def test_reducing_sparse_mm_backward_matches_the_cpu(self, device, reduce):
        # The CPU's amax/amin kernel keeps the argmax for backward only when an
        # input requires grad: the flag has to reach the kernel's CPU aliases.
        sparse = dense_with_zeros(5, 5, seed=8).to_sparse_csr()
        dense = torch.randn(5, 3, generator=torch.Generator().manual_seed(9))

        def run(on):
            inputs = [sparse.to(on).requires_grad_(), dense.to(on).requires_grad_()]
            out = torch.sparse.mm(*inputs, reduce)
            grads = torch.autograd.grad(out.sum(), inputs)
            return [out.detach().cpu()] + [as_dense_cpu(g) for g in grads]

        for got, expected in zip(run(device), run("cpu")):
            self.assertEqual(got, expected)

    def test_sparse_embedding_gradient_matches_the_cpu(self, device):
        def grad_of(on):
            torch.manual_seed(0)
            bag = torch.nn.EmbeddingBag(10, 3, mode="sum", sparse=True).to(on)
            indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9], device=on)
            offsets = torch.tensor([0, 4], device=on)
            bag(indices, offsets).pow(2).sum().backward()
            return bag.weight.grad

        grad = grad_of(device)
        self.assertEqual(grad.layout, torch.sparse_coo)
        self.assertEqual(grad.device, torch.device(device))
        self.assertEqual(grad.coalesce().to_dense().cpu(), grad_of("cpu").coalesce().to_dense())

    def test_sparse_gradient_trains_with_sgd(self, device):
        def weights_after_steps(on):
            torch.manual_seed(0)
            embedding = torch.nn.Embedding(8, 4, sparse=True).to(on)
            optimizer = torch.optim.SGD(embedding.parameters(), lr=0.5)
            for step in range(3):
                optimizer.zero_grad()
                embedding(torch.tensor([[step, 1, 5]], device=on)).sum().backward()
                optimizer.step()
            return embedding.weight.detach().cpu()

        self.assertEqual(weights_after_steps(device), weights_after_steps("cpu"))

    def test_computing_sparse_operators_go_through_the_fallback(self, device):
        sparse = dense_with_zeros(4, 4).to_sparse().to(device)
        reset_fallback_counts()
        sparse._values()
        sparse._nnz()
        self.assertEqual(fallback_counts(), {})
        sparse.coalesce().to_dense()
        self.assertIn("aten::_to_dense", fallback_counts())

    def test_mixing_a_cpu_sparse_tensor_with_a_device_tensor_is_refused(self, device):
        sparse_cpu = dense_with_zeros(3, 3).to_sparse()
        with self.assertRaisesRegex(RuntimeError, "device"):
            torch.mm(sparse_cpu, torch.ones(3, 3, device=device))
        with self.assertRaisesRegex(RuntimeError, "device"):
            sparse_cpu.to(device) + dense_with_zeros(3, 3).to_sparse()


instantiate_device_type_tests(TestMydevSparse, globals(), only_for="mydev")

if __name__ == "__main__":
    run_tests()
