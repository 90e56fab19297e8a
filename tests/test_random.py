"""Random sampling on mydev: a counter-based generator, as on CUDA. Its state
is (seed, offset) in CUDA's layout; each kernel reserves its offsets at launch
and draws from its own Philox stream, so the numbers depend only on the seed
and the launch order, not on which stream's worker runs first, and no state
access waits for the device. The numbers are not the CPU's (nor are CUDA's):
samplers are checked for reproducibility and for their distributions. Bad
arguments raise at the call like the CPU."""
import math
import time
import warnings

import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

from torch_mydev.ops import fallback_policy

# name -> f(device, dtype): a sampling call; each draws from the default generator of its device.
SAMPLERS = {
    "uniform_": lambda d, t: torch.empty(300, device=d, dtype=t).uniform_(-2, 3),
    "normal_": lambda d, t: torch.empty(300, device=d, dtype=t).normal_(1, 2),
    "bernoulli_float": lambda d, t: torch.empty(300, device=d, dtype=t).bernoulli_(0.3),
    "bernoulli_tensor": lambda d, t: torch.empty(3, 100, device=d, dtype=t).bernoulli_(
        torch.linspace(0, 1, 100).to(d)),
    "bernoulli": lambda d, t: torch.bernoulli(torch.full((300,), 0.6, device=d, dtype=t)),
    "random_": lambda d, t: torch.empty(300, device=d, dtype=t).random_(),
    "random_to": lambda d, t: torch.empty(300, device=d, dtype=t).random_(17),
    "random_from_to": lambda d, t: torch.empty(300, device=d, dtype=t).random_(-5, 9),
    "exponential_": lambda d, t: torch.empty(300, device=d, dtype=t).exponential_(2),
    "log_normal_": lambda d, t: torch.empty(300, device=d, dtype=t).log_normal_(0, 0.5),
    "cauchy_": lambda d, t: torch.empty(300, device=d, dtype=t).cauchy_(),
    "geometric_": lambda d, t: torch.empty(300, device=d, dtype=t).geometric_(0.2),
    "rand": lambda d, t: torch.rand(7, 50, device=d, dtype=t),
    "randn_noncontiguous": lambda d, t: torch.empty(50, 7, device=d, dtype=t).t().normal_(),
    "normal_tensor_float": lambda d, t: torch.normal(torch.arange(60., dtype=t).to(d), 2.0),
    "normal_float_tensor": lambda d, t: torch.normal(1.0, torch.linspace(0, 3, 60, dtype=t).to(d)),
    "normal_tensor_tensor": lambda d, t: torch.normal(torch.zeros(4, 1, device=d, dtype=t),
                                                       torch.ones(15, device=d, dtype=t)),
    "normal_out": lambda d, t: torch.normal(torch.zeros(60, device=d, dtype=t), 1.0,
                                            out=torch.empty(1, 60, device=d, dtype=t)),
    "multinomial": lambda d, t: torch.multinomial(torch.rand(6, 40, device=d, dtype=t), 12),
    "multinomial_replacement": lambda d, t: torch.multinomial(torch.rand(40, device=d, dtype=t), 90,
                                                              replacement=True),
    "randperm": lambda d, t: torch.randperm(500, device=d),
    "dropout": lambda d, t: torch.nn.functional.dropout(torch.ones(300, device=d, dtype=t), 0.4),
}


def seeded(sampler, device, dtype, seed=11):
    torch.manual_seed(seed)
    return sampler(device, dtype).cpu()


def slow_kernel(device):
    """Kernels that keep a stream busy for a while (~0.1-1 s on 2 cores) and draw no random numbers."""
    x = torch.full((900, 900), 1.0, device=device)
    for _ in range(6):
        x = x @ x / 900
    return x


# name -> (sampler, statistic, expected value, tolerance): a property of a large sample that any correct generator
# meets (the tolerances are many standard errors wide).
MOMENTS = {
    "uniform mean": (lambda d: torch.empty(200_000, device=d).uniform_(-2, 3), torch.mean, 0.5, 0.02),
    "uniform variance": (lambda d: torch.empty(200_000, device=d).uniform_(-2, 3), torch.var, 25 / 12, 0.03),
    "normal mean": (lambda d: torch.empty(200_000, device=d).normal_(1, 2), torch.mean, 1.0, 0.02),
    "normal std": (lambda d: torch.empty(200_000, device=d).normal_(1, 2), torch.std, 2.0, 0.02),
    "normal double std": (lambda d: torch.randn(200_000, device=d, dtype=torch.float64), torch.std, 1.0, 0.01),
    "bernoulli mean": (lambda d: torch.empty(200_000, device=d).bernoulli_(0.3), torch.mean, 0.3, 0.005),
    "exponential mean": (lambda d: torch.empty(200_000, device=d).exponential_(2), torch.mean, 0.5, 0.01),
    "geometric mean": (lambda d: torch.empty(200_000, device=d).geometric_(0.2), torch.mean, 5.0, 0.05),
    "log_normal log-mean": (lambda d: torch.empty(200_000, device=d).log_normal_(0.5, 0.4).log(), torch.mean, 0.5, 0.01),
    "cauchy median": (lambda d: torch.empty(200_001, device=d).cauchy_(1, 2), torch.median, 1.0, 0.05),
    "randint mean": (lambda d: torch.randint(0, 10, (200_000,), device=d).double(), torch.mean, 4.5, 0.03),
    "random_ of uint8 mean": (lambda d: torch.empty(200_000, device=d, dtype=torch.uint8).random_().double(),
                              torch.mean, 127.5, 0.5),
    "dropout kept fraction": (lambda d: (torch.nn.functional.dropout(torch.ones(200_000, device=d), 0.4) != 0).double(),
                              torch.mean, 0.6, 0.005),
    "multinomial frequency": (lambda d: (torch.multinomial(torch.tensor([1.0, 3.0, 6.0], device=d), 100_000,
                                                           replacement=True) == 2).double(), torch.mean, 0.6, 0.01),
}


class TestMydevRandom(TestCase):
    @parametrize("name", list(SAMPLERS))
    @dtypes(torch.float32, torch.float64)
    def test_sampler_is_native_and_reproducible(self, device, dtype, name):
        sampler = SAMPLERS[name]
        with fallback_policy("error"):
            first = seeded(sampler, device, dtype)
            again = seeded(sampler, device, dtype)
            other_seed = seeded(sampler, device, dtype, seed=12)
        self.assertEqual(again, first, atol=0, rtol=0)
        self.assertEqual(first.shape, seeded(sampler, "cpu", dtype).shape)
        if name not in ("bernoulli", "multinomial", "randperm") or first.numel() > 100:
            self.assertNotEqual(other_seed, first)

    @dtypes(torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.bool)
    def test_samplers_of_other_dtypes_are_reproducible(self, device, dtype):
        samplers = ["random_", "bernoulli_float"] + ([] if dtype is torch.bool else ["random_to"])
        if dtype.is_floating_point:
            samplers += ["uniform_", "normal_", "exponential_", "rand", "dropout"]
        for name in samplers:
            first = seeded(SAMPLERS[name], device, dtype)
            self.assertEqual(first.dtype, dtype, msg=name)
            self.assertEqual(seeded(SAMPLERS[name], device, dtype), first, atol=0, rtol=0, msg=name)

    @parametrize("name", list(MOMENTS))
    def test_distribution_moments(self, device, name):
        sampler, statistic, expected, tolerance = MOMENTS[name]
        torch.manual_seed(0)
        value = statistic(sampler(device).cpu().double()).item()
        self.assertLess(abs(value - expected), tolerance, msg=f"{name}: {value}, expected {expected}")

    def test_samples_lie_in_their_support(self, device):
        torch.manual_seed(1)
        uniform = torch.empty(10_000, device=device).uniform_(-2, 3).cpu()
        self.assertTrue(((uniform >= -2) & (uniform < 3)).all())
        randint = torch.randint(-5, 9, (10_000,), device=device).cpu()
        self.assertEqual(randint.unique().tolist(), list(range(-5, 9)))
        self.assertEqual(torch.randperm(500, device=device).cpu().sort().values, torch.arange(500))
        rows = torch.multinomial(torch.rand(6, 40, device=device), 12).cpu()
        self.assertTrue(all(len(set(row.tolist())) == 12 for row in rows))
        self.assertTrue((torch.empty(10_000, device=device).exponential_(3).cpu() >= 0).all())

    def test_state_is_seed_and_offset_in_cuda_layout(self, device):
        generator = torch.Generator(device=device).manual_seed(0x0102030405060708)
        torch.rand(10, device=device, generator=generator)
        torch.rand(10, device=device, generator=generator)
        state = generator.get_state()
        self.assertEqual(state.dtype, torch.uint8)
        self.assertEqual(state.numel(), 16)
        self.assertEqual(state[:8].view(torch.int64).item(), 0x0102030405060708)
        self.assertEqual(state[8:].view(torch.int64).item(), 8)  # each launch reserves 4 offsets, as on CUDA
        self.assertEqual(generator.get_offset(), 8)
        generator.set_offset(4)
        self.assertEqual(generator.get_state()[8:].view(torch.int64).item(), 4)
        with self.assertRaisesRegex(RuntimeError, "offset must be a multiple of 4"):
            generator.set_offset(6)
        with self.assertRaisesRegex(RuntimeError, "a mydev generator's state is 16 bytes"):
            generator.set_state(torch.zeros(5056, dtype=torch.uint8))

    def test_state_round_trip_and_offsets_replay_draws(self, device):
        generator = torch.Generator(device=device).manual_seed(3)
        torch.rand(100, device=device, generator=generator)
        state = generator.get_state()
        second = torch.rand(1000, device=device, generator=generator).cpu()
        generator.set_state(state)
        self.assertEqual(torch.rand(1000, device=device, generator=generator).cpu(), second)
        generator.manual_seed(3)
        generator.set_offset(4)
        self.assertEqual(torch.rand(1000, device=device, generator=generator).cpu(), second)

    def test_device_offset_accessors_as_on_cuda(self, device):
        torch.mydev.manual_seed(11)
        torch.rand(10, device=device)
        self.assertEqual(torch.mydev._get_rng_state_offset(device), 4)
        first = torch.rand(100, device=device).cpu()
        torch.mydev._set_rng_state_offset(4, device)
        self.assertEqual(torch.mydev._get_rng_state_offset(device), 4)
        self.assertEqual(torch.rand(100, device=device).cpu(), first)

    def test_seeding_and_state_reads_do_not_wait_for_the_device(self, device):
        torch.mydev.synchronize()
        stream = torch.mydev.current_stream(device)
        slow_kernel(device)
        torch.rand(10, device=device)
        torch.mydev.get_rng_state(device)
        torch.mydev.manual_seed(4)
        torch.mydev.default_generators[0].get_offset()
        self.assertFalse(stream.query())  # the slow kernel is still running: nothing above waited for it
        torch.mydev.synchronize()

    def test_draws_depend_on_launch_order_not_on_which_stream_runs_first(self, device):
        def draw(slow_stream):
            torch.mydev.manual_seed(8)
            streams = [torch.mydev.Stream(device=device), torch.mydev.Stream(device=device)]
            results = []
            for index, stream in enumerate(streams):
                with torch.mydev.stream(stream):
                    if index == slow_stream:
                        slow_kernel(device)
                    results.append(torch.randn(1000, device=device))
            torch.mydev.synchronize()
            return [r.cpu() for r in results]

        # The slow kernel on the first stream makes the second stream's draw run first; on the second, last.
        first_runs_last, first_runs_first = draw(slow_stream=0), draw(slow_stream=1)
        self.assertEqual(first_runs_last, first_runs_first, atol=0, rtol=0)
        self.assertNotEqual(first_runs_last[0], first_runs_last[1])

    def test_reseeding_after_queued_draws_affects_only_later_draws(self, device):
        slow_kernel(device)
        torch.mydev.manual_seed(1)
        before = torch.rand(500, device=device)
        torch.mydev.manual_seed(2)
        after = torch.rand(500, device=device)
        torch.mydev.manual_seed(1)
        self.assertEqual(before.cpu(), torch.rand(500, device=device).cpu())
        torch.mydev.manual_seed(2)
        self.assertEqual(after.cpu(), torch.rand(500, device=device).cpu())

    def test_default_generators_are_the_ones_random_operators_use(self, device):
        generators = torch.mydev.default_generators
        self.assertEqual([g.device for g in generators], [torch.device("mydev", i) for i in range(2)])
        generators[1].manual_seed(5)
        with torch.mydev.device(1):
            drawn = torch.rand(4, device="mydev")
        self.assertEqual(generators[1].get_offset(), 4)
        self.assertEqual(drawn.cpu(), torch.rand(4, device=device, generator=torch.Generator(device).manual_seed(5)).cpu())
        self.assertEqual(generators[1].initial_seed(), 5)

    def test_user_generators_are_independent_of_the_default_one(self, device):
        torch.mydev.manual_seed(0)
        default_state = torch.mydev.get_rng_state()
        generator = torch.Generator(device=device).manual_seed(9)
        drawn = torch.randn(200, device=device, generator=generator)
        self.assertEqual(torch.mydev.get_rng_state(), default_state)
        torch.mydev.manual_seed(9)
        self.assertEqual(drawn.cpu(), torch.randn(200, device=device).cpu())
        with self.assertRaisesRegex(RuntimeError, "Expected a 'mydev' device type for generator but found 'cpu'"):
            torch.rand(3, device=device, generator=torch.Generator())

    def test_graph_safe_state_is_shared(self, device):
        generator = torch.Generator(device=device).manual_seed(2)
        shared = generator.graphsafe_get_state()
        torch.rand(3, device=device, generator=generator)
        self.assertEqual(shared.get_offset(), 4)
        other = torch.Generator(device=device).manual_seed(7)
        generator.graphsafe_set_state(other)
        torch.rand(3, device=device, generator=generator)
        self.assertEqual(other.get_offset(), 4)
        self.assertEqual(generator.initial_seed(), 7)

    def test_fallback_random_operators_draw_from_the_device_generator(self, device):
        # poisson runs ATen's CPU kernel through the fallback: its CPU generator is seeded from a reservation.
        rates = torch.full((10_000,), 4.0, device=device)
        torch.mydev.manual_seed(3)
        first = torch.poisson(rates).cpu()
        offset = torch.mydev.default_generators[0].get_offset()
        torch.mydev.manual_seed(3)
        self.assertEqual(torch.poisson(rates).cpu(), first)
        self.assertEqual(offset, 4)
        self.assertLess(abs(first.mean().item() - 4.0), 0.1)

    @parametrize("case", [
        ("uniform_ of int64", lambda d: torch.empty(3, device=d, dtype=torch.int64).uniform_()),
        ("uniform_ from > to", lambda d: torch.empty(3, device=d).uniform_(3, 2)),
        ("uniform_ out of half range", lambda d: torch.empty(3, device=d, dtype=torch.half).uniform_(-1e6, 1)),
        ("normal_ negative std", lambda d: torch.empty(3, device=d).normal_(0, -1)),
        ("normal_ of int64", lambda d: torch.empty(3, device=d, dtype=torch.int64).normal_()),
        ("bernoulli_ p > 1", lambda d: torch.empty(3, device=d).bernoulli_(2.0)),
        ("bernoulli_ p shape", lambda d: torch.empty(3, device=d).bernoulli_(torch.ones(4, device=d))),
        ("random_ bool bounds", lambda d: torch.empty(3, device=d, dtype=torch.bool).random_(0, 5)),
        ("random_ of complex", lambda d: torch.empty(3, device=d, dtype=torch.complex64).random_()),
        ("random_ from >= to", lambda d: torch.empty(3, device=d).random_(5, 2)),
        ("exponential_ lambda", lambda d: torch.empty(3, device=d).exponential_(-1)),
        ("geometric_ p", lambda d: torch.empty(3, device=d).geometric_(2)),
        ("log_normal_ of int64", lambda d: torch.empty(3, device=d, dtype=torch.int64).log_normal_()),
        ("normal of int64 mean", lambda d: torch.normal(torch.ones(3, device=d, dtype=torch.int64), 1.0)),
        ("normal shapes", lambda d: torch.normal(torch.ones(3, device=d), torch.ones(4, device=d))),
        ("multinomial of int64", lambda d: torch.multinomial(torch.ones(3, device=d, dtype=torch.int64), 1)),
        ("multinomial rank", lambda d: torch.multinomial(torch.ones(2, 2, 2, device=d), 1)),
        ("multinomial too many", lambda d: torch.multinomial(torch.ones(3, device=d), 5)),
        ("multinomial out dtype", lambda d: torch.multinomial(torch.ones(3, device=d), 2,
                                                              out=torch.empty(2, device=d, dtype=torch.float64))),
        ("multinomial negative weight", lambda d: torch.multinomial(torch.tensor([0.5, -1.0], device=d), 1)),
        ("multinomial infinite weight", lambda d: torch.multinomial(torch.tensor([0.5, math.inf], device=d), 3,
                                                                    replacement=True)),
        ("multinomial zero row", lambda d: torch.multinomial(torch.zeros(2, 3, device=d), 2, replacement=True)),
        ("randperm overflow", lambda d: torch.randperm(300, device=d, dtype=torch.uint8)),
        ("randperm of bool", lambda d: torch.randperm(4, device=d, dtype=torch.bool)),
        ("randperm of complex64", lambda d: torch.randperm(4, device=d, dtype=torch.complex64)),
        ("randperm of uint32", lambda d: torch.randperm(4, device=d, dtype=torch.uint32)),
        ("uniform_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).uniform_()),
        ("normal_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).normal_()),
        ("bernoulli_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).bernoulli_(0.5)),
        ("bernoulli_ p into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).bernoulli_(
            torch.full((3,), 0.5, device=d))),
        ("bernoulli_ p overlapping", lambda d: (lambda b: b[:4].bernoulli_(b[2:6]))(torch.zeros(6, device=d))),
        ("random_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).random_(5)),
        ("exponential_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).exponential_()),
        ("geometric_ into expanded", lambda d: torch.empty(3, device=d).expand(2, 3).geometric_(0.5)),
        ("normal out overlapping mean", lambda d: (lambda y: torch.normal(y[:4], 1.0, out=y[2:6]))(
            torch.zeros(8, device=d))),
        ("normal out expanded", lambda d: torch.normal(torch.zeros(3, device=d), 1.0,
                                                       out=torch.empty(3, device=d).expand(2, 3))),
    ], name_fn=lambda case: case[0].replace(" ", "_").replace(">", "gt").replace("=", "e"))
    def test_bad_arguments_raise_at_the_call_like_the_cpu(self, device, case):
        _, call = case
        with self.assertRaises(Exception) as on_cpu:
            call("cpu")
        torch.mydev.synchronize()
        with self.assertRaises(type(on_cpu.exception)) as on_device:
            call(device)
        self.assertEqual(str(on_device.exception), str(on_cpu.exception))
        torch.mydev.synchronize()  # nothing was queued: no error is pending

    def test_fallback_launches_draw_from_distinct_cpu_generator_states(self, device):
        # Offsets (in launches) whose first two Philox words, the CPU generator's 64-bit seed before, agreed in the
        # 32 bits mt19937 keeps: the two launches drew the same numbers.
        rates = torch.full((1000,), 5.0, device=device)
        generator = torch.mydev.default_generators[0]

        def poisson_at(launch):
            torch.mydev.manual_seed(0)
            generator.set_offset(4 * launch)
            return torch.poisson(rates).cpu()

        first, second = poisson_at(40969), poisson_at(212445)
        self.assertFalse(torch.equal(first, second))
        self.assertEqual(poisson_at(40969), first)

    def test_a_fallback_call_refused_at_the_launch_reserves_nothing(self, device):
        # The first call of these dtypes runs the CPU kernel to learn that it has none for them (its launch reserves,
        # as any kernel that ran); the calls after it are refused at the launch and reserve nothing.
        generator = torch.mydev.default_generators[0]
        integers = torch.ones(3, device=device, dtype=torch.int64)
        with self.assertRaises(NotImplementedError):
            torch.poisson(integers)
        offset = generator.get_offset()
        for _ in range(3):
            with self.assertRaisesRegex(NotImplementedError, "not implemented for 'Long'"):
                torch.poisson(integers)
        self.assertEqual(generator.get_offset(), offset)

    def test_multinomial_of_no_distributions_is_empty_as_on_the_cpu(self, device):
        for replacement in (False, True):
            result = torch.multinomial(torch.ones(0, 3, device=device), 2, replacement=replacement)
            self.assertEqual((result.shape, result.dtype), (torch.Size([0, 2]), torch.int64))

    def test_bernoulli_probabilities_on_another_device_are_copied_as_on_cuda(self, device):
        probabilities = torch.tensor([0.0, 1.0, 1.0, 0.0])
        for p in (probabilities, probabilities.to("mydev:1")):
            self.assertEqual(torch.empty(4, device=device).bernoulli_(p).cpu(), probabilities)

    def test_data_checks_of_normal_are_reported_at_synchronization(self, device):
        # A valid call first: the first launch of a signature without a probe waits for its kernel, and would raise
        # the kernel's error at the call (tests/test_bad_input.py).
        torch.normal(torch.zeros(3, device=device), torch.ones(3, device=device))
        samples = torch.normal(torch.zeros(3, device=device), torch.tensor([1.0, -1.0, 1.0], device=device))
        with self.assertRaisesRegex(RuntimeError, "kernel 'aten::normal.Tensor_Tensor' failed.*std >= 0"):
            samples.cpu()
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)

    def test_normal_refuses_host_parameters_as_cuda_does(self, device):
        # normal is no TensorIterator operator: CUDA's wrapper refuses a host tensor, a 0-dim one included (mydev
        # used to return a host tensor of uninitialised memory for a 0-dim host mean).
        for mean, std in ((torch.tensor(0.0), torch.ones(3, device=device)),
                          (torch.zeros(3, device=device), torch.tensor(1.0))):
            with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device"):
                torch.normal(mean, std)
        with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device"):
            torch.normal(torch.tensor(0.0), 1.0, out=torch.empty(3, device=device))

    @dtypes(torch.half, torch.bfloat16, torch.float32, torch.float64)
    def test_exponential_draws_keep_cudas_lower_bound(self, device, dtype):
        # CUDA keeps each draw at least eps / 2 / lambda before rounding, eps that of the type it computes in (float,
        # double for double): a half draw at lambda 1 is never 0, so -log(x) (gumbel_softmax's noise) stays finite;
        # sampling in double and rounding gave 0 about once in 3e7 half draws.
        compute_eps = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
        torch.mydev.manual_seed(0)
        for lambd in (1.0, 4.0):
            draws = torch.empty(1 << 22, dtype=dtype, device=device).exponential_(lambd).cpu().double()
            bound = torch.tensor(compute_eps / 2 / lambd, dtype=dtype).double().item()
            self.assertGreaterEqual(draws.min().item(), bound)
            self.assertLess((draws == bound).double().mean().item(), 1e-5)  # the bound moves only the rare tail
            self.assertAlmostEqual(draws.mean().item(), 1 / lambd, delta=0.02 / lambd)
        self.assertGreater(torch.empty(1 << 22, dtype=dtype, device=device).exponential_().min().item(), 0)

    def test_seed_only_state_as_cuda_accepts_it(self, device):
        generator = torch.Generator(device=device)
        generator.set_state(torch.tensor([7, 0, 0, 0, 0, 0, 0, 0], dtype=torch.uint8))
        self.assertEqual((generator.initial_seed(), generator.get_offset()), (7, 0))
        with self.assertRaisesRegex(RuntimeError, "RNG state is wrong size"):
            generator.set_state(torch.zeros(12, dtype=torch.uint8))

    def test_bernoulli_out_takes_the_shape_of_its_probabilities_silently(self, device):
        out = torch.empty(2, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.bernoulli(torch.full((6,), 0.5, device=device), out=out)
        self.assertEqual(out.shape, (6,))
        self.assertTrue(set(out.cpu().tolist()) <= {0.0, 1.0})


instantiate_device_type_tests(TestMydevRandom, globals(), only_for="mydev")

if __name__ == "__main__":
    run_tests()
