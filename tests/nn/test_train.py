"""Meta-training of a tiny DPConvCNP: the loss decreases, and a resumed run continues exactly."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgp.nn.model import ModelConfig  # noqa: E402
from privgp.nn.tasks import TaskSpec, sample_batch  # noqa: E402
from privgp.nn.train import TrainConfig, Trainer  # noqa: E402

TINY = ModelConfig(window=(-3.0, 3.0), points_per_unit=16, first_channels=8, channels=(16, 16))


def tiny_cfg(steps, **kw):
    return TrainConfig(steps=steps, batch_size=8, n_context=(16, 64), n_target=64, target_range=(-2.0, 2.0),
                       weights={"eq": 1.0}, val_tasks=64, val_every=100, seed=3, **kw)


def test_training_loss_decreases():
    """A few hundred Adam steps on EQ tasks (DP noise inside the forward pass) lower the NLL of the
    fixed validation tasks well beyond their standard error."""
    torch.set_num_threads(1)
    tr = Trainer(TINY, tiny_cfg(400))
    first, se = tr.validate()
    for _ in range(400):
        tr.train_step()
    last, se_last = tr.validate()
    assert tr.skipped == 0
    assert last < first - 0.1, (first, last, se, se_last)
    assert tr.best_step == 400 and tr.best_val == last


def test_resumed_training_continues_exactly():
    torch.set_num_threads(1)
    a = Trainer(TINY, tiny_cfg(6))
    for _ in range(6):
        a.train_step()
    b = Trainer(TINY, tiny_cfg(6))
    for _ in range(3):
        b.train_step()
    c = Trainer.from_state(b.state())
    for _ in range(3):
        c.train_step()
    for k, v in a.model.state_dict().items():
        torch.testing.assert_close(c.model.state_dict()[k], v, rtol=0, atol=0)
    assert torch.equal(a.generator.get_state(), c.generator.get_state())


def test_task_generators_follow_their_specs():
    g = torch.Generator().manual_seed(0)
    b = sample_batch(TaskSpec("sawtooth", frequency=(0.5, 0.5), noise_std=(0.2, 0.2)), 4, 10, 20, g)
    assert b.xc.shape == (4, 10) and b.yt.shape == (4, 20)
    assert float(b.xc.abs().max()) <= 2.0 and 0.9 <= float(b.epsilon.min()) <= float(b.epsilon.max()) <= 4.0
    # the noise-free sawtooth is within the truncated series' range; the rest is N(0, 0.2^2) noise
    assert float(b.yc.abs().max()) < 2 / 3.14159 * 1.5 + 5 * 0.2
    e = sample_batch(TaskSpec("eq", lengthscale=(0.5, 0.5)), 256, 1, 1, g)
    var = float(torch.cat([e.yc, e.yt], 1).var())
    assert abs(var - 1.04) < 0.2  # marginal variance s_v^2 + s_n^2 = 1.04 (SE about 0.07)


def test_the_matern32_noise_range_reaches_the_tasks_and_the_records():
    """TrainConfig's ``matern32_noise`` sets the simulator's s_n range (drawn per task inside it); a schedule with
    the default range is recorded as before the option existed (no key), another one round-trips."""
    from privgp.errors import InvalidParameterError
    from privgp.nn.tasks import MATERN32_NOISE_STD, MATERN32_NOISE_STD_E2

    default = TrainConfig(weights={"matern32": 1.0})
    assert "matern32_noise" not in default.to_dict() and default.matern32_noise == MATERN32_NOISE_STD == (0.2, 0.6)
    e2 = TrainConfig(weights={"matern32": 1.0}, n_context=(8, 8), n_target=8, matern32_noise=MATERN32_NOISE_STD_E2)
    assert TrainConfig.from_dict(e2.to_dict()) == e2 and e2.to_dict()["matern32_noise"] == [0.3, 0.8]
    g = torch.Generator().manual_seed(0)
    noise = np.concatenate([e2.sampler().sample(g).params["noise_std"] for _ in range(8)])
    assert 0.3 <= noise.min() < 0.35 and 0.75 < noise.max() <= 0.8
    for bad in [(0.6, 0.2), (0.0, 0.5), (0.2,), (0.2, np.inf)]:
        with pytest.raises(InvalidParameterError, match="matern32_noise"):
            TrainConfig(matern32_noise=bad)


def _weights_equal(a, b):
    for k, t in a.model.state_dict().items():
        torch.testing.assert_close(b.model.state_dict()[k].cpu(), t.cpu(), rtol=0, atol=0)


def test_indexed_stream_is_the_same_with_any_number_of_workers_and_after_a_resume():
    """A run resumed at step 2 whose next batches are drawn ahead by two spawned worker processes ends
    with the weights, bit for bit, of a run that drew all 5 batches in process."""
    from privgp.nn.train import BatchPrefetcher, indexed_batch

    torch.set_num_threads(1)
    cfg = tiny_cfg(5, stream="indexed")
    a = Trainer(TINY, cfg)
    for _ in range(5):
        a.train_step()
    b = Trainer(TINY, cfg)
    for _ in range(2):
        b.train_step()
    c = Trainer.from_state(b.state())   # steps 3-5 from batches drawn in two spawned processes
    with BatchPrefetcher(cfg, c.step, workers=2, depth=3) as pre:
        for _ in range(3):
            c.train_step(next(pre))
    _weights_equal(a, c)
    # the stream's batches depend on the step and the seed, not on the order they are drawn in
    s = cfg.sampler()
    b4 = indexed_batch(s, cfg.seed, 4)
    indexed_batch(s, cfg.seed, 2)
    assert torch.equal(indexed_batch(s, cfg.seed, 4).yc, b4.yc)
    # and it is another stream than the sequential one
    d = Trainer(TINY, tiny_cfg(5))
    for _ in range(5):
        d.train_step()
    assert any(not torch.equal(d.model.state_dict()[k], t) for k, t in a.model.state_dict().items())


def test_prefetching_and_batches_need_the_indexed_stream():
    from privgp.errors import InvalidParameterError
    from privgp.nn.train import BatchPrefetcher

    with pytest.raises(InvalidParameterError, match="stream"):
        BatchPrefetcher(tiny_cfg(5), 0, workers=1)
    tr = Trainer(TINY, tiny_cfg(5))
    with pytest.raises(InvalidParameterError, match="batch"):
        tr.train_step(tr.next_batch())
    with pytest.raises(InvalidParameterError, match="stream"):
        tiny_cfg(5, stream="shuffled")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_a_step_on_the_gpu_matches_the_cpu(monkeypatch):
    """The same batch and noise draws give the same loss and, after one Adam step, the same weights on
    a GPU as on the CPU, to float32 rounding (tasks and noise are drawn on the CPU either way)."""
    torch.set_num_threads(1)
    cpu, gpu = Trainer(TINY, tiny_cfg(2)), Trainer(TINY, tiny_cfg(2), device="cuda")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)   # float32 arithmetic on both sides
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    for _ in range(2):
        assert cpu.train_step() == pytest.approx(gpu.train_step(), rel=1e-4)
    for k, t in cpu.model.state_dict().items():
        torch.testing.assert_close(gpu.model.state_dict()[k].cpu(), t, rtol=1e-3, atol=1e-3)  # lr 3e-4
    assert cpu.validate()[0] == pytest.approx(gpu.validate()[0], rel=1e-4)
    assert torch.equal(cpu.generator.get_state(), gpu.generator.get_state())
