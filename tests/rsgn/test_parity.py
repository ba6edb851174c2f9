import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.rsgn.parity import RSGNParity, RSGNParityConfig, code_poincare_dist, dense_messages
from hebbnets.rsgn import geometry as G


def _built(n_classes, n_steps=5, **cfg):
    m = RSGNParity(RSGNParityConfig(n_steps=n_steps, **cfg))
    m.spec = DataSpec((64, 32), (), n_classes)
    m._build(m.spec)
    return m


def test_parameter_counts_match_the_paper():
    assert sum(p.numel() for p in _built(20).parameters()) == 41_672
    assert sum(p.numel() for p in _built(10, n_steps=7).parameters()) == 40_382
    # the ablation counts follow from 69 parameters per node
    assert sum(p.numel() for p in _built(20, n_nodes=128).parameters()) == 32_840
    assert sum(p.numel() for p in _built(20, n_nodes=512).parameters()) == 59_336


def test_code_distance_is_the_poincare_distance_away_from_the_boundary():
    p = G.to_ball(0.3 * torch.randn(20, 3, dtype=torch.float64))
    torch.testing.assert_close(code_poincare_dist(p, p).fill_diagonal_(0), G.pairwise_dist(p, p).fill_diagonal_(0),
                               rtol=1e-4, atol=5e-3)


def test_the_authors_network_saturates_and_its_inhibition_raises_activity():
    torch.manual_seed(0)
    m = _built(4, n_steps=2)
    m.eval()
    with torch.no_grad():
        m._forward(0.3 * torch.randn(8, 64, 32), None)
    af = m.last_stats["active_fraction"]
    assert af[-1] == 1.0  # every node above the 0.01 activity threshold (the paper's own "sparsity" = 1.0)
    assert m.last_stats["exact_zero_fraction"][-1] == 0.0


def test_fit_runs_hebbian_and_records_update_sizes():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 64, 32, generator=g), torch.arange(32) % 4
    m = hn.models.make("rsgn_parity", n_nodes=16, d_hidden=8, n_steps=2, epochs=2, batch_size=16, progress=False)
    theta0 = torch.full((16,), 0.5)
    m.fit(hn.Split(x, y))
    assert len(m.stats["hebbian_update"]) == 4 and len(m.stats["gradient_update"]) == 4
    assert all(r < 0 for r in m.stats["reward"])  # the author's R = -loss is always negative
    assert bool((m.thresholds <= 0.99).all()) and not torch.equal(m.thresholds.detach(), theta0)
    with pytest.raises(ValueError, match="reward"):
        RSGNParityConfig(reward="x")


def test_matmul_messages_equal_the_notebooks_einsum_with_gradients():
    g = torch.Generator().manual_seed(0)
    W = torch.rand(40, 40, generator=g, dtype=torch.float64, requires_grad=True)
    send = torch.rand(3, 40, generator=g, dtype=torch.float64) * (torch.rand(3, 40, generator=g) > 0.3)
    h = torch.randn(3, 40, 8, generator=g, dtype=torch.float64, requires_grad=True)
    fast, ref = dense_messages(W, send, h), torch.einsum("ji,bj,bjd->bid", W, send, h)
    torch.testing.assert_close(fast, ref)
    probe = torch.randn_like(ref)
    torch.testing.assert_close(torch.autograd.grad((fast * probe).sum(), (W, h)),
                               torch.autograd.grad((ref * probe).sum(), (W, h)))
    assert not torch.allclose(dense_messages(W.T, send, h), ref)  # the direction W[src, dst] matters


def test_parity_defaults_are_the_notebooks_optimisation():
    cfg = RSGNParityConfig()
    assert (cfg.optimizer, cfg.schedule, cfg.grad_clip, cfg.restore, cfg.weight_decay, cfg.epochs) == \
        ("adamw", "cosine", 1.0, "last", 1e-4, 50)
