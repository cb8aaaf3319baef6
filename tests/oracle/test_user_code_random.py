# ruff: noqa: E501  (user code quoted verbatim)
"""User code: ``torch.Generator`` and the reproducibility recipe (``manual_seed``, generator
state, ``fork_rng``, seeded DataLoader shuffling with ``worker_init_fn``, deterministic flags).
ember's random streams are its own; what must match is the API and that the same seed gives the
same numbers."""

from __future__ import annotations

from tests.oracle._user_code import check_snippet

GENERATOR_TOUR = """
        import random
        g = torch.Generator()
        print(g.device, type(g).__name__, isinstance(g, torch.Generator))
        g = torch.Generator(device="cpu"); print(g.device)
        print(g.manual_seed(42) is g, g.initial_seed())
        s = g.seed(); print(type(s).__name__, g.initial_seed() == s)
        st = g.get_state(); print(st.dtype, st.dim(), type(st).__name__)
        g2 = torch.Generator().set_state(st) if False else None
        g.manual_seed(3)
        a = torch.randn(4, generator=g); g.manual_seed(3); b = torch.randn(4, generator=g); print(torch.equal(a, b))
        g.manual_seed(3); c = torch.rand(2, 2, generator=g); d = torch.randint(0, 5, (3,), generator=g); e = torch.randperm(4, generator=g); print(c.shape, d.dtype, e.dtype, sorted(e.tolist()))
        s1 = torch.get_rng_state(); print(s1.dtype, s1.dim())
        torch.manual_seed(1); r1 = torch.rand(3); torch.manual_seed(1); r2 = torch.rand(3); print(torch.equal(r1, r2))
        print(torch.random.initial_seed(), torch.initial_seed())
        print(type(torch.seed()).__name__)
        print(torch.default_generator.initial_seed() == torch.initial_seed(), type(torch.default_generator).__name__)
        torch.random.manual_seed(7); print(torch.initial_seed())
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(100); x = torch.rand(1)
        print(torch.initial_seed())
        def seed_worker(worker_id):
            worker_seed = torch.initial_seed() % 2**32
            np.random.seed(worker_seed)
            random.seed(worker_seed)
        gg = torch.Generator(); gg.manual_seed(0)
        ds = torch.utils.data.TensorDataset(torch.arange(8.))
        dl = torch.utils.data.DataLoader(ds, batch_size=2, shuffle=True, num_workers=2, worker_init_fn=seed_worker, generator=gg)
        o1 = [b[0].tolist() for b in dl]
        gg.manual_seed(0)
        o2 = [b[0].tolist() for b in dl]
        print(o1 == o2, sorted(sum(o1, [])))
        torch.use_deterministic_algorithms(True); print(torch.are_deterministic_algorithms_enabled()); torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.benchmark = False; torch.backends.cudnn.deterministic = True
        print(torch.is_deterministic_algorithms_warn_only_enabled())
        x = torch.empty(3); x.uniform_(generator=torch.Generator().manual_seed(1)); print(x.shape)
        print(torch.normal(0.0, 1.0, size=(2,), generator=torch.Generator().manual_seed(1)).shape, torch.bernoulli(torch.full((3,), 0.5), generator=torch.Generator().manual_seed(0)).shape)
        print(torch.multinomial(torch.ones(4), 2, generator=torch.Generator().manual_seed(0)).shape)
        print(torch.randn(2, generator=torch.Generator().manual_seed(0)).equal(torch.randn(2, generator=torch.Generator().manual_seed(0))))
        gen = torch.Generator().manual_seed(5)
        print(torch.utils.data.random_split(range(10), [5, 5], generator=gen)[0].indices.__class__.__name__)
        gs = torch.Generator().manual_seed(9); st = gs.get_state(); v1 = torch.rand(2, generator=gs); gs.set_state(st); print(torch.equal(v1, torch.rand(2, generator=gs)))
        gc = torch.Generator().manual_seed(9); gcl = gc.clone_state(); print(torch.equal(torch.rand(2, generator=gc), torch.rand(2, generator=gcl)))
        import copy, pickle
        print(torch.equal(torch.rand(2, generator=copy.deepcopy(gs)), torch.rand(2, generator=gs)))
        gp = pickle.loads(pickle.dumps(torch.Generator().manual_seed(3))); print(gp.initial_seed())
        try:
            torch.Generator(device="cuda")
        except RuntimeError as e:
            print("RuntimeError")
        try:
            torch.rand(2, generator=5)
        except TypeError as e:
            print("TypeError")
        try:
            torch.Generator().manual_seed(-1)
        except RuntimeError as e:
            print("RuntimeError", e)
        print(torch.Generator().manual_seed(2**63).initial_seed())
"""


def test_generator_and_reproducibility_tour():
    check_snippet(GENERATOR_TOUR)


def test_poisson_and_binomial_samplers():
    check_snippet("""
        rates = torch.tensor([0.0, 1.0, 2.0])
        g = torch.Generator().manual_seed(3)
        a = torch.poisson(rates * 3, g)
        g.manual_seed(3)
        print(torch.equal(a, torch.poisson(rates * 3, g)), a.dtype, a[0])
        print(torch.poisson(torch.full((20000,), 4.0)).mean().round())
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.poisson(x)
        y.sum().backward()
        print(y.grad_fn.name(), x.grad)
        b = torch.binomial(torch.tensor([10.0, 5.0]), torch.tensor([0.0, 1.0]))
        print(b, torch.binomial(torch.full((20000,), 10.0), torch.full((20000,), 0.5)).mean().round())
        for f in [lambda: torch.poisson(torch.tensor([-1.0])),
                  lambda: torch.poisson(torch.tensor([1, 2])),
                  lambda: torch.binomial(torch.tensor([1.0]), torch.tensor([0.5]).double())]:
            try:
                f()
            except (RuntimeError, NotImplementedError) as e:
                print(type(e).__name__, e)
    """)
