"""A tiny transformer decoder as numba kernels: the capstone's (notebook 07) decode loop.

One decode step is the shape of a real one: embedding lookup (+ a learned position embedding),
per layer RMSNorm, Q/K/V projections (matrix-vector), a KV-cache write, attention scores,
softmax, the attention-weighted sum of values, the output projection, a residual add, RMSNorm,
an MLP (up projection, SiLU, down projection) and a second residual add; then a final RMSNorm,
the logits projection and a greedy argmax. With 4 layers that is 65 short kernels per token.

Every kernel has a numpy reference (the simulator runs it; ``tests/course/test_decoder.py``
proves it equal to the kernel's own code under numba's CUDA simulator) and a bytes-moved cost.

Why the position lives in device memory: a captured graph freezes every kernel argument,
scalars included. Were the KV-cache position passed as an ``int``, every replay would write
position 0 again. So the kernels read the position from a one-element device array, and the
last kernel of the step increments it; likewise argmax writes the next token id into a device
buffer that the embedding kernel of the next step reads. The graph is then valid for every
token and nothing on the host changes between replays -- what serving engines do with their
static "positions" / "sequence lengths" buffers. The other way, updating the parameters of the
position-dependent nodes before each replay, costs a host call per node per token.

Weights are float64 so that the GPU's summation order cannot flip a near-tie in argmax: the
token sequences of eager, graph and numpy runs must be identical.

The package, by role: `kernels` (the kernels, their numpy references and costs, and the one
block reduction they share), `model` (configuration, weights, buffers, one `step`), `generate`
(eager and graph decoding) and `reference` (numpy ground truth, PyTorch rows). Every public
name is re-exported here, so ``from labkit.course import decoder as dec; dec.step(...)`` works.
"""
from .generate import (DecodeResult, capture_step, generate_eager, generate_graph,
                       generated, prefill, reset)
from .kernels import (EPS, KERNELS, TPB, advance, argmax, attn_out, attn_scores, block_reduce,
                      embed, matvec, residual_add, rmsnorm, silu, softmax, store_kv, load_prompt)
from .model import Config, Model, launches, make_model, prompt_tokens, step, step_to_token
from .reference import reference_generate, torch_generate

__all__ = ["Config", "Model", "make_model", "step", "step_to_token", "reference_generate", "generate_eager",
           "generate_graph", "capture_step", "DecodeResult", "KERNELS", "torch_generate", "TPB",
           "EPS", "block_reduce", "embed", "rmsnorm", "matvec", "store_kv", "attn_scores",
           "softmax", "attn_out", "residual_add", "silu", "argmax", "advance", "load_prompt",
           "prefill", "generated", "reset", "launches", "prompt_tokens"]
