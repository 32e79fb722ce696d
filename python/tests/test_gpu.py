"""The CUDA kernels: the CPU ops' bits where the contract fixes the answer (quantized bytes, short
rows, error words and broken rows), the contract's rule elsewhere; DeepGEMM's forms; explicit
and allocator workspaces; CUDA-graph capture and replay over changing metadata."""

import pytest
import torch

import mxi_torch
import reference
from conftest import LAYOUTS, make_batch, run_indexer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rule", ["ceil", "floor"])
def test_quantizer_and_writer_bytes_equal_the_cpu(dtype, rule):
    g = torch.Generator().manual_seed(31)
    q = (torch.randn(5, 32, 128, generator=g) * 100).to(dtype)
    cpu = mxi_torch.quantize_q(q, rule=rule)
    gpu = mxi_torch.quantize_q(q.cuda(), rule=rule)
    assert torch.equal(gpu[0].cpu(), cpu[0]) and torch.equal(gpu[1].cpu(), cpu[1])
    k = torch.randn(100, 128, generator=g).to(dtype)
    slots = torch.randperm(6 * 64, generator=g)[:100]
    for layout in LAYOUTS:
        cache = torch.randint(0, 256, (6, 64, 1, 68), generator=g, dtype=torch.uint8)
        on_gpu = cache.cuda()
        mxi_torch.write_k_cache(k, slots, cache, layout=layout, rule=rule)
        mxi_torch.write_k_cache(k.cuda(), slots.cuda(), on_gpu, layout=layout, rule=rule)
        assert torch.equal(on_gpu.cpu(), cache), layout


@pytest.mark.parametrize("layout", LAYOUTS)
def test_indexer_rows_equal_the_cpu_where_fixed(layout):
    b = make_batch(layout, seq_lens=(900, 40, 300), query_lens=(3, 1, 4), seed=32)
    k = 64
    cpu, _ = run_indexer(b, k)
    gpu, word = run_indexer(b.to("cuda"), k)
    gpu = gpu.cpu()
    assert word == 0
    for t, (_, v) in enumerate(b.rows()):
        if v <= k:  # every position, ascending: fixed by the contract
            assert torch.equal(gpu[t], cpu[t])
        exact, scale = b.exact(t)
        assert reference.check_topk_row(gpu[t, :k], exact, scale, k) == ""
    assert torch.equal(gpu[b.tokens:], cpu[b.tokens:])  # untouched rows and columns


def test_candidate_indexer_on_cuda_meets_the_contract():
    b = make_batch("aiter32", seq_lens=(700, 300), query_lens=(2, 2), seed=33)
    pool = torch.randint(-1, 80, (b.tokens, 12), generator=torch.Generator().manual_seed(34),
                         dtype=torch.int32)
    outs = []
    for dev in ("cpu", "cuda"):
        bd = b.to(dev)
        out = torch.full((b.tokens, 16), -7, dtype=torch.int32, device=dev)
        mxi_torch.candidate_indexer(bd.q_values, bd.q_scales, bd.weights, bd.pages,
                                    bd.query_start_loc, bd.seq_lens, bd.block_table, pool.to(dev),
                                    out, topk=16, max_model_len=b.max_model_len,
                                    candidate_block_size=8, block_size=b.block_size,
                                    layout=b.layout)
        outs.append(out.cpu())
    for t, (_, v) in enumerate(b.rows()):
        members = {p for j in pool[t].tolist() if j >= 0 for p in range(8 * j, 8 * j + 8) if p < v}
        if len(members) <= 16:
            assert torch.equal(outs[1][t], outs[0][t])
        assert set(p for p in outs[1][t].tolist() if p >= 0) <= members


def test_bad_metadata_sets_the_same_bits_and_rows():
    b = make_batch("mfma16", seed=35)
    b.block_table[0, 1] = -3
    b.seq_lens[2] = 0
    cpu, cpu_word = run_indexer(b, 16)
    gpu, gpu_word = run_indexer(b.to("cuda"), 16)
    assert cpu_word == gpu_word == mxi_torch.errors.BLOCK_TABLE | mxi_torch.errors.SEQ_LEN
    broken = (cpu[:, :16] == -1).all(dim=1)
    assert torch.equal((gpu.cpu()[:, :16] == -1).all(dim=1), broken)


def test_deepgemm_forms_and_workspaces_on_cuda():
    b = make_batch("linear", seq_lens=(500, 260), query_lens=(2, 2), block_size=64, seed=36).to("cuda")
    want, _ = run_indexer(b, 32)
    out = torch.full_like(want, -7)
    word = torch.zeros(1, dtype=torch.int32, device="cuda")
    args = (b.q_values.view(2, 2, 16, 64), reference.pack_scales_int32(b.q_scales.cpu()).view(2, 2, 16).cuda(),
            b.weights.view(2, 2, 16), b.cache4d(), b.query_start_loc, b.seq_lens, b.block_table, out, word)
    need = torch.ops.mxi.indexer_workspace_bytes(*args, topk=32, max_model_len=b.max_model_len)
    assert need > 0
    workspace = torch.empty(need, dtype=torch.uint8, device="cuda")
    torch.ops.mxi.indexer(*args, topk=32, max_model_len=b.max_model_len, workspace=workspace)
    assert torch.equal(out, want)
    with pytest.raises(ValueError, match="workspace must hold >= "):
        torch.ops.mxi.indexer(*args, topk=32, max_model_len=b.max_model_len,
                              workspace=workspace[: need // 2])


def test_cuda_graph_replays_over_changing_metadata():
    bs, d, heads, cols = 64, 128, 16, 8
    requests, t = 4, 4  # decode: one token a request
    g = torch.Generator().manual_seed(37)
    num_pages = requests * cols
    cache = torch.zeros(num_pages, bs, 1, 68, dtype=torch.uint8, device="cuda")
    mxi_torch.write_k_cache(torch.randn(num_pages * bs, d, generator=g).cuda(),
                            torch.arange(num_pages * bs, device="cuda"), cache)
    # Persistent step buffers, refreshed in place as an engine does.
    table = torch.arange(num_pages, dtype=torch.int32).view(requests, cols).cuda()
    seq_lens = torch.tensor([100, 7, 300, 64], dtype=torch.int32, device="cuda")
    qsl = torch.arange(requests + 1, dtype=torch.int32, device="cuda")
    slots = torch.zeros(t, dtype=torch.int64, device="cuda")
    q = torch.zeros(t, heads, d, device="cuda")
    k = torch.zeros(t, d, device="cuda")
    w = torch.zeros(t, heads, device="cuda")
    topk = torch.full((t, 48), -7, dtype=torch.int32, device="cuda")
    meta = mxi_torch.IndexerMetadata(table, seq_lens, qsl, slots)
    layer = mxi_torch.SparseAttnIndexer(mxi_torch.KCache(cache), 48, d, cols * bs, topk, meta)

    def new_step(step):
        seq_lens.add_(1 + step)
        last = seq_lens.long() - 1
        slots.copy_(table.gather(1, (last // bs).view(-1, 1)).view(-1).long() * bs + last % bs)
        q.copy_(torch.randn(t, heads, d, generator=g))
        k.copy_(torch.randn(t, d, generator=g))
        w.copy_(torch.randn(t, heads, generator=g))

    new_step(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer(None, q, k, w)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        layer(None, q, k, w)
    for step in range(1, 4):
        new_step(step)
        before = cache.clone()
        graph.replay()
        torch.cuda.synchronize()
        replayed, after = topk.clone(), cache.clone()
        cache.copy_(before)
        topk.fill_(-7)
        layer(None, q, k, w)  # the same step, eagerly
        assert torch.equal(topk, replayed), f"step {step}"
        assert torch.equal(cache, after), f"step {step}"
    layer.raise_on_error()
