"""Rules of thumb, kept beside the itemized accounting they approximate.

``2N`` FLOPs per token is a forward pass that treats every parameter as one multiply-add (the
question bank's napkin convention: embeddings counted, attention pairs not); ``6ND`` is training
on D tokens (forward 2N, backward 4N per token; q18). The itemized
:func:`napkin.accounting.forward` is exact under the chapter's conventions; compare the two to
see what the rule leaves out.
"""


def train_flops_palm_per_token(params: float, layers: int, heads: int, head_dim: int,
                               seq: int) -> float:
    """Training FLOPs per token in the published MFU convention (Chowdhery et al. 2022, PaLM
    App. B; the Llama 3 paper's and torchtitan's): ``6N + 12·L·H·Q·T`` — 6ND plus QKᵀ and AV
    over all T² pairs (not the causal half), forward and backward."""
    return 6.0 * params + 12.0 * layers * heads * head_dim * seq


def flops_per_token_2n(params: int) -> float:
    """Forward FLOPs per token by the 2N rule: one multiply-add (2 FLOPs) per parameter."""
    return 2.0 * params


def train_flops_6nd(params: float, tokens: float) -> float:
    """Training FLOPs by the 6ND rule: 2N forward + 4N backward per token, times D tokens."""
    return 6.0 * params * tokens


def call_flops_2n(params: float, prompt_tokens: int, gen_tokens: int) -> float:
    """A whole request by the 2N rule: ``2N·[P + (G − 1)]`` (prefill P tokens, G − 1 decodes)."""
    return flops_per_token_2n(params) * (prompt_tokens + gen_tokens - 1)


def tokens_per_parameter(params: float, tokens: float) -> float:
    """D/N: training tokens per parameter (Chinchilla's compute-optimal ≈ 20; §3.6.2)."""
    return tokens / params


def attention_scores_bytes(batch: int, heads: int, seq_len: int, bytes_per_element: float,
                           matrices: int = 1) -> float:
    """Memory of naive attention's materialized score matrix ``QKᵀ``: B·H·T²·bytes per layer
    (``matrices`` = 2 keeps the softmax output beside the scores, as a backward pass needs).
    FlashAttention never materializes it: it streams T×T in tiles held on chip."""
    return float(batch) * heads * seq_len * seq_len * bytes_per_element * matrices
