"""Random sampling on mydev: native asynchronous kernels that draw from the
device generator in stream order, give the CPU's numbers for the same seed,
and validate their arguments at the call like the CPU."""
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


class TestMydevRandom(TestCase):
    @parametrize("name", list(SAMPLERS))
    @dtypes(torch.float32, torch.float64)
    def test_sampler_is_native_and_draws_the_cpu_numbers(self, device, dtype, name):
        sampler = SAMPLERS[name]
        expected = seeded(sampler, "cpu", dtype)
        with fallback_policy("error"):
            actual = seeded(sampler, device, dtype)
        self.assertEqual(actual, expected, atol=0, rtol=0)

    @dtypes(torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.bool)
    def test_samplers_of_other_dtypes_draw_the_cpu_numbers(self, device, dtype):
        samplers = ["random_", "bernoulli_float"] + ([] if dtype is torch.bool else ["random_to"])
        if dtype.is_floating_point:
            samplers += ["uniform_", "normal_", "exponential_", "rand", "dropout"]
        for name in samplers:
            self.assertEqual(seeded(SAMPLERS[name], device, dtype), seeded(SAMPLERS[name], "cpu", dtype),
                             atol=0, rtol=0, msg=name)

    def test_generator_state_is_read_after_queued_draws(self, device):
        # Queue work ahead of the draws, so that they are still pending when the state is read.
        x = torch.randn(600, 600, device=device)
        for _ in range(4):
            x = x @ x / 600
        generator = torch.Generator(device=device).manual_seed(3)
        first = torch.rand(1000, device=device, generator=generator)
        state = generator.get_state()
        second = torch.rand(1000, device=device, generator=generator)
        generator.set_state(state)
        self.assertEqual(torch.rand(1000, device=device, generator=generator).cpu(), second.cpu())
        host = torch.Generator().manual_seed(3)
        self.assertEqual(first.cpu(), torch.rand(1000, generator=host))
        self.assertEqual(second.cpu(), torch.rand(1000, generator=host))

    def test_reseeding_after_queued_draws_affects_only_later_draws(self, device):
        x = torch.randn(600, 600, device=device)
        for _ in range(4):
            x = x @ x / 600
        torch.mydev.manual_seed(1)
        before = torch.rand(500, device=device)
        torch.mydev.manual_seed(2)
        after = torch.rand(500, device=device)
        self.assertEqual(before.cpu(), torch.rand(500, generator=torch.Generator().manual_seed(1)))
        self.assertEqual(after.cpu(), torch.rand(500, generator=torch.Generator().manual_seed(2)))

    def test_default_generators_are_the_ones_random_operators_use(self, device):
        generators = torch.mydev.default_generators
        self.assertEqual([g.device for g in generators], [torch.device("mydev", i) for i in range(2)])
        generators[1].manual_seed(5)
        with torch.mydev.device(1):
            drawn = torch.rand(4, device="mydev")
        self.assertEqual(drawn.cpu(), torch.rand(4, generator=torch.Generator().manual_seed(5)))
        self.assertEqual(generators[1].initial_seed(), 5)

    def test_user_generators_are_independent_of_the_default_one(self, device):
        torch.mydev.manual_seed(0)
        default_state = torch.mydev.get_rng_state()
        generator = torch.Generator(device=device).manual_seed(9)
        drawn = torch.randn(200, device=device, generator=generator)
        self.assertEqual(torch.mydev.get_rng_state(), default_state)
        self.assertEqual(drawn.cpu(), torch.randn(200, generator=torch.Generator().manual_seed(9)))
        with self.assertRaisesRegex(RuntimeError, "Expected a mydev generator"):
            torch.rand(3, device=device, generator=torch.Generator())

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
        ("randperm overflow", lambda d: torch.randperm(300, device=d, dtype=torch.uint8)),
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

    def test_invalid_probabilities_are_reported_at_synchronization(self, device):
        samples = torch.multinomial(torch.tensor([0.5, -1.0], device=device), 1)
        with self.assertRaisesRegex(RuntimeError, "kernel 'aten::multinomial(.out)?' failed.*element < 0"):
            samples.cpu()
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)


instantiate_device_type_tests(TestMydevRandom, globals(), only_for="mydev")

if __name__ == "__main__":
    run_tests()
