"""Rules of thumb, kept beside the itemized accounting they approximate.

``2N`` FLOPs per token is a forward pass that treats every parameter as one multiply-add (the
question bank's napkin convention: embeddings counted, attention pairs not). The itemized
:func:`napkin.accounting.forward` is exact under the chapter's conventions; compare the two to
see what the rule leaves out.
"""


def flops_per_token_2n(params: int) -> float:
    """Forward FLOPs per token by the 2N rule: one multiply-add (2 FLOPs) per parameter."""
    return 2.0 * params
