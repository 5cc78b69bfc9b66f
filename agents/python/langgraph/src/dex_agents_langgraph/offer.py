"""What the session offers the model in one model call, besides the application's own tools.

The enabled built-in tools and the tool sources' tools are offered as Chat Completions tool
dicts (which `create_agent` binds as they are and never runs), and a planning turn offers only
`write_todos`, with the plan note (a user message) before the turn's messages.

`create_agent`'s model node builds one `ModelRequest` per call and hands it through the
application's `wrap_model_call` middleware to one innermost function. The runner's copy of the
graph changes the request there (`offered_request`), after the application's middleware, so
what the session offers holds whatever the middleware chose. The RunModel Step sets the turn's
offer in a context variable around the graph's run; the model node and the deferring tool node
read it (the graph's tasks run in copies of that context).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool


@dataclass(frozen=True)
class TurnOffer:
    """One RunModel Step's offer."""

    built_ins: tuple[str, ...]
    """The session's enabled built-in tools; one wins over an agent tool of its name."""
    planning: bool
    plan_note: str | None
    turn_start: int
    """Where the turn's first stored message is in the graph's `messages` state."""
    source_tools: tuple[Mapping[str, Any], ...] = ()
    """The tool sources' definitions, without names the agent or a built-in use."""

    @property
    def runner_tool_names(self) -> frozenset[str]:
        """The names whose calls the runner owns: the application's middleware never sees them."""
        sources = (tool["function"]["name"] for tool in self.source_tools)
        return frozenset((*self.built_ins, *sources))


_CURRENT: ContextVar[TurnOffer | None] = ContextVar("dex_agents_langgraph_offer", default=None)


@contextmanager
def offering(offer: TurnOffer) -> Iterator[None]:
    """Sets the offer that the graph's model and tool nodes read during the graph's run."""
    token = _CURRENT.set(offer)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def runner_owns(name: str) -> bool:
    """Whether a call of `name` is a built-in's or a tool source's in the running turn."""
    offer = _CURRENT.get()
    return offer is not None and name in offer.runner_tool_names


def tool_name(tool: BaseTool | Mapping[str, Any]) -> str | None:
    if isinstance(tool, BaseTool):
        return tool.name
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def offered_request(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """The request with the turn's offer: in a planning turn only write_todos (no response
    format, no forced tool choice); else the application's tools, an enabled built-in's name
    taken by the built-in, then the sources' tools and the built-ins. The plan note goes
    before the turn's messages. Unchanged outside a RunModel Step."""
    offer = _CURRENT.get()
    if offer is None:
        return request
    messages = _with_plan_note(request, offer)
    if offer.planning:
        tools: list[BaseTool | dict[str, Any]] = (
            [_definition("write_todos")] if "write_todos" in offer.built_ins else []
        )
        return request.override(
            tools=tools, messages=messages, response_format=None, tool_choice=None
        )
    own = [tool for tool in request.tools if tool_name(tool) not in offer.built_ins]
    sources = [copy.deepcopy(dict(tool)) for tool in offer.source_tools]
    built_ins = [_definition(name) for name in BUILT_IN_TOOL_NAMES if name in offer.built_ins]
    return request.override(tools=[*own, *sources, *built_ins], messages=messages)


def _definition(name: str) -> dict[str, Any]:
    return copy.deepcopy(BUILT_IN_TOOL_DEFINITIONS[name])  # type: ignore[index]


def _with_plan_note(request: ModelRequest[Any], offer: TurnOffer) -> list[Any]:
    """The request's messages, the plan note before the first one of the turn (found by
    identity in the graph's state, so middleware that trims or rewrites the history keeps it
    right); at the end when middleware left none of the turn's messages."""
    messages = list(request.messages)
    if offer.plan_note is None:
        return messages
    state: Sequence[Any] = request.state.get("messages", ()) if request.state else ()
    turn = {id(message) for message in state[offer.turn_start :]}
    at = next((i for i, message in enumerate(messages) if id(message) in turn), len(messages))
    messages.insert(at, HumanMessage(offer.plan_note))
    return messages
