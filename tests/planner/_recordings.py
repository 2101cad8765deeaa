"""A real model's recorded replies, served back to the requests of a replayed run."""

from stepgraph.exceptions import LLMError
from stepgraph.planner._prompt import render
from stepgraph.testing import ScriptedLLM

OWN_PROMPTS = {"program": render("program.md"), "worked": render("worked.md")}


class RecordedModel(ScriptedLLM):
    """The recorded replies, each request answered with the next reply of its kind."""

    def __init__(self, replies: list[dict]) -> None:
        super().__init__([])
        kinds = [r["purpose"] if r["purpose"] in OWN_PROMPTS else "plan" for r in replies]
        self.left = {
            kind: [r["content"] for r, k in zip(replies, kinds, strict=True) if k == kind]
            for kind in [*OWN_PROMPTS, "plan"]
        }

    def complete(self, messages, *, schema=None, attempt=1):
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        kind = next((k for k, prompt in OWN_PROMPTS.items() if system == prompt), "plan")
        if not self.left[kind]:
            raise LLMError(f"the recording holds no more {kind} replies")
        self.responses.append(self.left[kind].pop(0))
        return super().complete(messages, schema=schema, attempt=attempt)
