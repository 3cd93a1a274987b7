"""The stateful session machine passes on the real engine (both stores) and finds planted bugs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from learnloop import Engine
from learnloop.testing.machine import SessionMachine

SETTINGS = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


class MemorySessions(SessionMachine):
    pass


class SQLiteSessions(SessionMachine):
    def make_engine(self) -> Engine:
        self._dir = tempfile.TemporaryDirectory()
        return Engine.open(Path(self._dir.name) / "state.db", seed=0)

    def teardown(self) -> None:
        self.engine.close()
        self._dir.cleanup()


TestMemorySessions = MemorySessions.TestCase
TestMemorySessions.settings = SETTINGS
TestSQLiteSessions = SQLiteSessions.TestCase
TestSQLiteSessions.settings = settings(SETTINGS, max_examples=10)


# -- planted bugs: the machine must find each ---------------------------------------------------
class _LosesEvents(Engine):
    """Drops the events of every third step (an acknowledged answer lost)."""

    def adaptive_step(self, session_context: str, events: Any = (), *, app: str = "default") -> Any:
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls % 3 == 0:
            events = []
        return super().adaptive_step(session_context, events, app=app)


class _IgnoresTheFilter(Engine):
    """Recommends from the whole catalog, as if the session had no filter."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import learnloop.engine.sessions.sessions as sessions_module

        real = sessions_module.session_step

        def broken(session: Any, view: Any, mask: Any, *args: Any, **kw: Any) -> Any:
            return real(session, view, mask | True, *args, **kw)

        self._restore = (sessions_module, real)
        sessions_module.session_step = broken  # type: ignore[assignment]

    def close(self) -> None:
        module, real = self._restore
        module.session_step = real  # type: ignore[assignment]
        super().close()


def _machine_for(engine_class: type[Engine]) -> type[SessionMachine]:
    class Planted(SessionMachine):
        def make_engine(self) -> Engine:
            return engine_class(seed=0)

        def teardown(self) -> None:
            self.engine.close()

    return Planted


@pytest.mark.parametrize("engine_class", [_LosesEvents, _IgnoresTheFilter])
def test_the_machine_finds_a_planted_bug(engine_class: type[Engine]) -> None:
    case = _machine_for(engine_class).TestCase
    # found without shrinking (shrinking a stateful failure is slow and proves nothing more here)
    case.settings = settings(
        SETTINGS, max_examples=200, stateful_step_count=30, database=None, phases=[Phase.explicit, Phase.generate]
    )
    with pytest.raises(AssertionError):
        case().runTest()
