"""RunModel's attempts are the only retries of a model call (docs/design/retries.md).

`create_agent`'s model node keeps the chat model in its closure and sends every request through
one innermost function, `_execute_model_async(request)`, which the application's
`wrap_model_call` middleware chain wraps (_compat.py reaches both). The runner's copy of the
graph gets a model node whose innermost function passes the request through a `prepare`
function first: it adds the session's offer (offer.py) and runs the request on a copy of
`request.model` without client retries, so a model that middleware picks per request is
covered too. The application's model is not changed:
an OpenAI chat model's copy shares its HTTP connection pool (`with_options(max_retries=0)`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_openai.chat_models.base import BaseChatOpenAI
from langgraph.pregel import Pregel

from . import _compat
from .deferral import UnsupportedGraphError

MODEL_NODE = "model"


def without_client_retries(model: Any) -> Any:
    """`model`, or a copy of it whose SDK client sends each request once.

    OpenAI chat models (`ChatOpenAI`, `AzureChatOpenAI`, and every other `BaseChatOpenAI`) get a
    copy whose clients have `max_retries=0`. Any other model with a `max_retries` above zero is
    refused: the runner does not know how to turn its client's retries off."""
    if isinstance(model, BaseChatOpenAI):
        return _openai_without_retries(model)
    retries = getattr(model, "max_retries", None)
    if isinstance(retries, int) and retries > 0:
        raise UnsupportedGraphError(
            f"the chat model {type(model).__name__} retries failed requests by itself "
            f"(max_retries={retries}), which multiplies RunModel's attempts, and the LangGraph "
            "runner can turn that off only for OpenAI chat models: give the model "
            "max_retries=0, or pass LangGraphRunner(..., framework_retries=True) to keep them"
        )
    return model


def _openai_without_retries(model: BaseChatOpenAI) -> BaseChatOpenAI:
    if model.max_retries == 0:
        return model
    update: dict[str, Any] = {"max_retries": 0}
    if model.root_client is not None:
        root = model.root_client.with_options(max_retries=0)
        update |= {"root_client": root, "client": root.chat.completions}
    if model.root_async_client is not None:
        root_async = model.root_async_client.with_options(max_retries=0)
        update |= {"root_async_client": root_async, "async_client": root_async.chat.completions}
    return model.model_copy(update=update)


Prepare = Callable[[Any], Any]
"""Changes a `ModelRequest` just before the innermost model call."""


def request_without_retries(request: Any) -> Any:
    return request.override(model=without_client_retries(request.model))


def prepared_model_node(
    graph: Pregel[Any, Any, Any, Any], prepare: Prepare
) -> Pregel[Any, Any, Any, Any] | None:
    """A copy of a `create_agent` graph whose model node passes every request through
    `prepare` before sending it (after the application's `wrap_model_call` middleware); None
    when the graph's model node is not `create_agent`'s."""
    node = graph.nodes.get(MODEL_NODE)
    if node is None:
        return None
    replaced = _compat.with_wrapped_execute(
        node.bound, lambda execute: _prepared_execute(execute, prepare)
    )
    if replaced is None:
        return None
    nodes = dict(graph.nodes)
    nodes[MODEL_NODE] = node.copy({"bound": replaced})
    return graph.copy({"nodes": nodes})


NOT_CREATE_AGENT = (
    "the LangGraph runner turns off the chat model's own retries inside the model node "
    f"of langchain.agents.create_agent ({MODEL_NODE!r}), and this graph has none; give "
    "the model max_retries=0 and pass LangGraphRunner(..., framework_retries=True)"
)


def check_agent_model(graph: Pregel[Any, Any, Any, Any]) -> None:
    """Refuse, when the runner is built, the model `create_agent` was given if its client's
    retries cannot be turned off (a model that middleware picks is checked per request)."""
    model = agent_model(graph)
    if model is not None:
        without_client_retries(model)


def agent_model(graph: Pregel[Any, Any, Any, Any]) -> Any | None:
    """The chat model `create_agent` was given (kept in its model node's closure); None for a
    graph whose model node is not `create_agent`'s."""
    node = graph.nodes.get(MODEL_NODE)
    return _compat.agent_model(node.bound) if node is not None else None


def _prepared_execute(execute: Callable[[Any], Any], prepare: Prepare) -> Callable[[Any], Any]:
    if inspect.iscoroutinefunction(execute):

        async def run_async(request: Any) -> Any:
            result: Awaitable[Any] = execute(prepare(request))
            return await result

        return run_async

    def run(request: Any) -> Any:
        return execute(prepare(request))

    return run
