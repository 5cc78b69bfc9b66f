"""What a model call's input gets from the session besides the stored conversation: the
context summary first (after the instructions, which the Responses API sends on their own),
and the plan note as a user message before the turn's messages.

Both go in through the SDK's `RunConfig.call_model_input_filter`, right before each model
call, so they are never part of the run's input items: the run state, the stored messages
and `result.to_input_list()` stay the conversation itself, and each model call sees the
plan and summary as they are at that call. An application's own filter runs after this one
and sees the complete input.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData
from dex_agents.builtins import build_plan_note
from dex_agents.runner import AgentTurnContext

from .compaction import summary_input_item
from .items import InputItem, decode_item, user_message_item


def session_input_filter(
    turn: AgentTurnContext, app_filter: CallModelInputFilter | None
) -> CallModelInputFilter | None:
    """The filter of this turn's model calls, or None when the session adds nothing (the
    application's filter, if any, then stays as it is)."""
    summary = summary_input_item(turn.context_summary) if turn.context_summary else None
    note_text = build_plan_note(turn.plan, turn.interaction_mode)
    if summary is None and note_text is None:
        return None
    note = user_message_item(note_text) if note_text is not None else None
    earlier = [m for m in turn.messages if m.turn_id != turn.turn_id]
    own = [m for m in turn.messages if m.turn_id == turn.turn_id]
    first_of_turn = turn.parsed(own[0], decode_item) if own else None

    async def add_session_items(data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        if note is not None:
            items.insert(_turn_start(items, len(earlier), first_of_turn), note)  # type: ignore[arg-type]
        if summary is not None:
            items.insert(0, summary)  # type: ignore[arg-type]
        updated = ModelInputData(input=items, instructions=data.model_data.instructions)
        if app_filter is None:
            return updated
        result = app_filter(replace(data, model_data=updated))
        return await result if inspect.isawaitable(result) else result

    return add_session_items


def _turn_start(items: Sequence[Any], earlier: int, first: InputItem | None) -> int:
    """Where the turn's own messages start in the input: after the earlier stored messages,
    which the run's input starts with; if something rewrote that input (a handoff's input
    filter), at the last item equal to the turn's first message, else at the input's end."""
    if first is None:
        return min(earlier, len(items))
    if earlier < len(items) and items[earlier] == first:
        return earlier
    matches = [index for index, item in enumerate(items) if item == first]
    return matches[-1] if matches else len(items)
