"""A step timer around another one (speculative decoding, pipeline stages): it changes the
``inner`` timer's step times and keeps its request latency and its basis as time counts it."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from napkin.serving.engine_spec import StepTimer
    from napkin.timing.frontend import Frontend


class WrappedTimer:
    """The :class:`~napkin.serving.engine_spec.StepTimer` members a wrapper passes through to
    ``inner``: ``request_s``, ``request_token_s``, ``frontend`` and :meth:`effective`."""

    def __init__(self, inner: "StepTimer") -> None:
        self.inner = inner

    @property
    def request_s(self) -> float:
        return self.inner.request_s

    @property
    def request_token_s(self) -> float:
        return self.inner.request_token_s

    @property
    def frontend(self) -> "Frontend | None":
        return self.inner.frontend

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        return self.inner.effective(terms)
