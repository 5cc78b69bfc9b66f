"""The one rule by which every adapter reads the effect a framework's tool declares
(`dex_agents.policy.declared_effect`): its `effect` metadata, else its MCP hints, else none;
an effect that is not one refused by name."""

from __future__ import annotations

import pytest

from dex_agents.errors import DexAgentsError
from dex_agents.policy import EFFECT_TABLE, TOOL_EFFECTS, InvalidToolEffectError, declared_effect
from dex_agents.steps import STEP_HANDLERS


@pytest.mark.parametrize("effect", TOOL_EFFECTS)
def test_a_valid_effect_wins_over_every_hint(effect: str) -> None:
    assert declared_effect("t", effect, read_only_hint=True, idempotent_hint=True) == effect


@pytest.mark.parametrize(
    ("read_only", "idempotent", "expected"),
    [
        (True, None, "read"),
        (True, True, "read"),
        (None, True, "idempotent_write"),
        (False, True, "idempotent_write"),
        (False, False, None),
        (None, None, None),
        ("true", 1, None),  # only a hint that is True counts
    ],
)
def test_without_an_effect_the_mcp_hints_decide(
    read_only: object, idempotent: object, expected: str | None
) -> None:
    assert (
        declared_effect("t", None, read_only_hint=read_only, idempotent_hint=idempotent) == expected
    )


@pytest.mark.parametrize("effect", ["reed", "READ", "", 3, True, ["read"]])
def test_an_effect_that_is_not_one_is_refused_naming_the_tool_and_the_effects(
    effect: object,
) -> None:
    with pytest.raises(InvalidToolEffectError) as raised:
        declared_effect("send_email", effect, read_only_hint=True)
    message = str(raised.value)
    assert "'send_email'" in message
    assert repr(effect) in message
    assert all(valid in message for valid in TOOL_EFFECTS)
    assert isinstance(raised.value, DexAgentsError)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    ("effect", "attempts", "approval"),
    [
        ("read", 3, False),
        ("idempotent_write", 3, False),
        ("non_idempotent_write", 1, True),
        ("unclassified", 1, True),
    ],
)
def test_the_effect_table_is_the_contracts(effect, attempts, approval) -> None:
    rule = EFFECT_TABLE[effect]
    # The attempts are the option of the Step the effect runs in.
    assert STEP_HANDLERS[rule.step_type].options.max_attempts == attempts
    assert rule.default_requires_approval is approval
