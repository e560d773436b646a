"""All worked examples, by id (``§`` may be typed as ``s``: ``s3.2.4-ced``)."""

from napkin.errors import NapkinError
from napkin.examples.agents import EXAMPLES_AGENTS
from napkin.examples.inference import EXAMPLES_INFERENCE
from napkin.examples.media import EXAMPLES_MEDIA
from napkin.examples.row import Example, Row
from napkin.examples.scaling import EXAMPLES_SCALING
from napkin.examples.serving import EXAMPLES_SERVING
from napkin.examples.training import EXAMPLES_TRAINING

EXAMPLES: tuple[Example, ...] = (EXAMPLES_INFERENCE[:1] + EXAMPLES_SERVING[:1]
                                 + EXAMPLES_INFERENCE[1:] + EXAMPLES_SERVING[1:]
                                 + EXAMPLES_AGENTS + EXAMPLES_MEDIA
                                 + EXAMPLES_TRAINING + EXAMPLES_SCALING)

__all__ = ["EXAMPLES", "Example", "Row", "find_example"]


def _key(example_id: str) -> str:
    return example_id.lower().replace("§", "s")


def find_example(example_id: str) -> Example:
    """The example called ``example_id``."""
    by_key = {_key(e.id): e for e in EXAMPLES}
    try:
        return by_key[_key(example_id)]
    except KeyError:
        ids = ", ".join(e.id for e in EXAMPLES)
        raise NapkinError(f"example: unknown id {example_id!r}; known: {ids}") from None
